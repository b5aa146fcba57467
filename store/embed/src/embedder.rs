//! [`BertEmbedder`]: a loaded BERT-class model behind the [`Embedder`] seam. Texts are tokenized
//! (with the model's prefix for their [`TextKind`]), cut at the model's token limit, sorted by
//! length and run in batches of similar length, so padding costs little; batches run side by
//! side, one per core.

use crate::bert::Bert;
use crate::catalog::Format;
use crate::manifest::{self, corrupt};
use crate::{EmbedError, Embedder, TextKind};
use std::path::Path;
use tokenizers::{Tokenizer, TruncationParams};

/// Most texts in one batch.
const MAX_BATCH: usize = 64;
/// Most tokens (texts x padded length) in one batch: bounds the activations (the widest,
/// `[tokens, 4 x hidden]`, is 24 MB for a 384-wide model).
const MAX_BATCH_TOKENS: usize = 4096;
/// Most attention scores (texts x heads x length x length) in one batch: 4M floats, 16 MB.
const MAX_BATCH_SCORES: usize = 4 << 20;
/// A text joins a batch only if it has at least this share of the batch's longest text's tokens:
/// padding stays under a fifth of a batch (on session texts, 7% padding in all, against 35% for
/// batches cut by size alone).
const MIN_LENGTH_SHARE: f64 = 0.8;

/// A BERT-class model loaded from local files.
pub struct BertEmbedder {
    name: String,
    dimension: usize,
    max_tokens: usize,
    query_prefix: String,
    passage_prefix: String,
    tokenizer: Tokenizer,
    bert: Bert,
    /// One-thread pools, one per thread candle would use, made on first use (`run_batches`).
    pools: std::sync::OnceLock<Vec<Result<rayon::ThreadPool, rayon::ThreadPoolBuildError>>>,
}

impl std::fmt::Debug for BertEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BertEmbedder")
            .field("name", &self.name)
            .field("dimension", &self.dimension)
            .field("max_tokens", &self.max_tokens)
            .finish_non_exhaustive()
    }
}

impl BertEmbedder {
    /// Loads `<models_dir>/<name>/` after checking it (see [`crate::load`]).
    pub fn load(name: &str, models_dir: &Path) -> Result<Self, EmbedError> {
        let dir = models_dir.join(name);
        let manifest = manifest::read_and_check(name, &dir)?;
        let marker = dir.join(manifest::MANIFEST_FILE);
        let format = manifest.format(&marker)?;
        let bert = match format {
            Format::BertSafetensors => crate::hf::load(&dir)?,
            Format::E5s1Q4 => crate::e5s1::load(&dir.join(crate::e5s1::FILE))?,
        };
        if bert.shape.hidden != manifest.dimension {
            return Err(corrupt(
                &marker,
                format!(
                    "dimension: {}, but the model's hidden size is {}",
                    manifest.dimension, bert.shape.hidden
                ),
            ));
        }
        if manifest.max_tokens == 0 || manifest.max_tokens > bert.shape.max_positions {
            return Err(corrupt(
                &marker,
                format!(
                    "max_tokens: {}, but the model has {} positions",
                    manifest.max_tokens, bert.shape.max_positions
                ),
            ));
        }
        let tokenizer_path = dir.join("tokenizer.json");
        let mut tokenizer = Tokenizer::from_file(&tokenizer_path)
            .map_err(|e| corrupt(&tokenizer_path, e.to_string()))?;
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: manifest.max_tokens,
                ..TruncationParams::default()
            }))
            .map_err(|e| corrupt(&tokenizer_path, e.to_string()))?;
        tokenizer.with_padding(None);
        let vocabulary = tokenizer.get_vocab_size(true);
        if vocabulary > bert.vocabulary() {
            return Err(corrupt(
                &tokenizer_path,
                format!(
                    "{vocabulary} tokens, but the model's word table has {} rows",
                    bert.vocabulary()
                ),
            ));
        }
        Ok(Self {
            name: manifest.name,
            dimension: manifest.dimension,
            max_tokens: manifest.max_tokens,
            query_prefix: manifest.query_prefix,
            passage_prefix: manifest.passage_prefix,
            tokenizer,
            bert,
            pools: std::sync::OnceLock::new(),
        })
    }

    /// Runs one batch: its token ids padded to `len`, one vector per text.
    fn run_batch(
        &self,
        ids: &[&[u32]],
        batch: &[usize],
        len: usize,
    ) -> Result<Vec<Vec<f32>>, EmbedError> {
        let mut flat = vec![0u32; batch.len() * len];
        let mut lens = Vec::with_capacity(batch.len());
        for (row, &i) in batch.iter().enumerate() {
            flat[row * len..row * len + ids[i].len()].copy_from_slice(ids[i]);
            lens.push(ids[i].len());
        }
        self.bert
            .embed(&flat, &lens, len)
            .map_err(|e| self.inference(e))
    }

    /// Runs every batch, each whole on one thread, `cores` at once ([`crate::side_by_side`]):
    /// a batch's matrix products are too small to gain from being split across cores
    /// (candle's own way, 1.2x on two), whole batches side by side use them all
    /// (docs/benchmarks.md, "Embedding throughput"). One batch, or one core, runs as candle
    /// runs it.
    fn run_batches<'b>(
        &self,
        ids: &[&[u32]],
        batches: &[(&'b [usize], usize)],
        cores: usize,
    ) -> Result<Vec<(&'b [usize], Vec<Vec<f32>>)>, EmbedError> {
        let threads = cores.min(batches.len());
        if threads <= 1 {
            return batches
                .iter()
                .map(|&(b, len)| Ok((b, self.run_batch(ids, b, len)?)))
                .collect();
        }
        let pools = self.pools.get_or_init(|| {
            (0..cores.max(crate::side_by_side()))
                .map(|_| rayon::ThreadPoolBuilder::new().num_threads(1).build())
                .collect()
        });
        let pools: Vec<&rayon::ThreadPool> = pools
            .iter()
            .map(|p| {
                p.as_ref()
                    .map_err(|e| self.inference(format!("a thread: {e}")))
            })
            .collect::<Result<_, _>>()?;
        // Longest batches first (they come so), each taken by the next free thread.
        let next = std::sync::atomic::AtomicUsize::new(0);
        let done = std::thread::scope(|scope| {
            let workers: Vec<_> = pools
                .iter()
                .take(threads)
                .map(|pool| {
                    let next = &next;
                    scope.spawn(move || {
                        // Inside a one-thread pool, candle's and gemm's parallel loops run on
                        // this thread alone.
                        pool.install(|| {
                            let mut out = Vec::new();
                            loop {
                                let k = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                                let Some(&(b, len)) = batches.get(k) else {
                                    return Ok(out);
                                };
                                out.push((k, self.run_batch(ids, b, len)?));
                            }
                        })
                    })
                })
                .collect();
            workers
                .into_iter()
                .map(|w| {
                    w.join()
                        .unwrap_or_else(|_| Err(self.inference("an embedding thread panicked")))
                })
                .collect::<Vec<Result<Vec<_>, EmbedError>>>()
        });
        let mut all = Vec::with_capacity(batches.len());
        for worker in done {
            all.extend(worker?);
        }
        all.sort_by_key(|(k, _)| *k);
        Ok(all
            .into_iter()
            .map(|(k, out)| (batches[k].0, out))
            .collect())
    }

    fn inference(&self, detail: impl std::fmt::Display) -> EmbedError {
        EmbedError::Inference {
            model: self.name.clone(),
            detail: detail.to_string(),
        }
    }
}

impl Embedder for BertEmbedder {
    fn model_id(&self) -> &str {
        &self.name
    }

    fn dimension(&self) -> usize {
        self.dimension
    }

    fn max_tokens(&self) -> usize {
        self.max_tokens
    }

    fn embed(&self, texts: &[&str], kind: TextKind) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.embed_on(texts, kind, crate::side_by_side())
    }
}

impl BertEmbedder {
    /// [`Embedder::embed`] with `cores` batches at once.
    fn embed_on(
        &self,
        texts: &[&str],
        kind: TextKind,
        cores: usize,
    ) -> Result<Vec<Vec<f32>>, EmbedError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let prefix = match kind {
            TextKind::Query => &self.query_prefix,
            TextKind::Passage => &self.passage_prefix,
        };
        let inputs: Vec<String> = texts.iter().map(|t| format!("{prefix}{t}")).collect();
        let encodings = self
            .tokenizer
            .encode_batch(inputs, true)
            .map_err(|e| self.inference(format!("tokenizing: {e}")))?;
        let ids: Vec<&[u32]> = encodings.iter().map(|e| e.get_ids()).collect();

        // Longest first, so each batch holds texts of about one length.
        let mut order: Vec<usize> = (0..ids.len()).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(ids[i].len()));
        let heads = self.bert.shape.heads;
        let mut batches: Vec<(&[usize], usize)> = Vec::new();
        let mut start = 0;
        while start < order.len() {
            let len = ids[order[start]].len().max(1);
            let fits = |b: usize, next: usize| {
                b <= MAX_BATCH
                    && b * len <= MAX_BATCH_TOKENS.max(len)
                    && b * heads * len * len <= MAX_BATCH_SCORES.max(heads * len * len)
                    && next as f64 >= MIN_LENGTH_SHARE * len as f64
            };
            let mut end = start + 1;
            while end < order.len() && fits(end + 1 - start, ids[order[end]].len()) {
                end += 1;
            }
            batches.push((&order[start..end], len));
            start = end;
        }
        let mut vectors: Vec<Vec<f32>> = vec![Vec::new(); ids.len()];
        for (batch, out) in self.run_batches(&ids, &batches, cores)? {
            for (&i, v) in batch.iter().zip(out) {
                vectors[i] = v;
            }
        }
        Ok(vectors)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tiny::TinyModel;

    /// Batches run side by side give each text the vector one thread gives it, in order, for
    /// both weight formats (f32 products through gemm, Q4 products through candle's own pool).
    #[test]
    fn batches_side_by_side_give_the_vectors_of_one_thread() {
        let words = [
            "tide", "pond", "heron", "reed", "stone", "moss", "cedar", "wren",
        ];
        // Lengths from 1 to 90 words: many batches (a batch holds texts of about one length).
        let texts: Vec<String> = (0..150)
            .map(|i| {
                (0..1 + (i * 37) % 90)
                    .map(|w| words[(i + w) % words.len()])
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let dir = tempfile::tempdir().unwrap();
        for (name, format) in [("f32", Format::BertSafetensors), ("q4", Format::E5s1Q4)] {
            TinyModel {
                format,
                ..TinyModel::default()
            }
            .write(dir.path(), name)
            .unwrap();
            let model = BertEmbedder::load(name, dir.path()).unwrap();
            let one = model.embed_on(&refs, TextKind::Passage, 1).unwrap();
            let three = model.embed_on(&refs, TextKind::Passage, 3).unwrap();
            assert_eq!(one.len(), refs.len());
            for (i, (a, b)) in one.iter().zip(&three).enumerate() {
                let cos: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
                assert!(cos > 0.99999, "{name}: text {i}: cosine {cos}");
            }
            // The texts differ, and so do their vectors: the comparison above is not vacuous.
            let cos: f32 = one[0].iter().zip(&one[1]).map(|(x, y)| x * y).sum();
            assert!(cos < 0.9999, "{name}: {cos}");
        }
    }
}

//! [`BertEmbedder`]: a loaded BERT-class model behind the [`Embedder`] seam. Texts are tokenized
//! (with the model's prefix for their [`TextKind`]), cut at the model's token limit, sorted by
//! length and run in batches of similar length, so padding costs little; candle runs each batch
//! on every core.

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
        })
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
        let mut vectors: Vec<Vec<f32>> = vec![Vec::new(); ids.len()];
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
            let batch = &order[start..end];
            let mut flat = vec![0u32; batch.len() * len];
            let mut lens = Vec::with_capacity(batch.len());
            for (row, &i) in batch.iter().enumerate() {
                flat[row * len..row * len + ids[i].len()].copy_from_slice(ids[i]);
                lens.push(ids[i].len());
            }
            let out = self
                .bert
                .embed(&flat, &lens, len)
                .map_err(|e| self.inference(e))?;
            for (&i, v) in batch.iter().zip(out) {
                vectors[i] = v;
            }
            start = end;
        }
        Ok(vectors)
    }
}

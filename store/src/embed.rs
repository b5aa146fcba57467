//! The embed stage of `pond sync` (spec 5.5 and 8): fills `messages.vector` and
//! `messages.embedding_model` from each message's stored `search_text` (session-embed-from-canonical)
//! through the embedding seam, one vector per message.
//!
//! The backlog is every message with text whose vector is null; with `force`, also every message
//! embedded under another model. It is read as a stream at the version current when the stage
//! starts, embedded in batches, and written in chunks, each one commit through the substrate's
//! conditional update (a conditional merge keyed on `embedding_model`: a row already embedded
//! under the model is left alone, so a re-run after a kill never embeds a message twice and
//! never touches another column). A kill loses at most the chunk in flight; the next run's
//! backlog is exactly what is missing.

use crate::sessions::schema::{MESSAGES, VECTOR_DIM, VECTOR_INDEX, VECTOR_INDEX_MODEL_KEY};
use crate::sessions::{SessionStore, sql_quote};
use crate::substrate::{StoreError, str_at};
use arrow_array::{ArrayRef, FixedSizeListArray, Float16Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use futures::StreamExt;
use pond_embed::{EmbedError, Embedder, TextKind};
use serde::Serialize;
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How the stage runs.
#[derive(Debug, Clone, Copy)]
pub struct EmbedOptions {
    /// Also re-embed messages embedded under another model (`pond sync --force-embed`).
    pub force: bool,
    /// Texts per call of the seam.
    pub batch: usize,
    /// Rows per commit; a chunk is also committed once [`EmbedOptions::commit_every`] passed.
    pub chunk: usize,
    pub commit_every: Duration,
}

impl Default for EmbedOptions {
    fn default() -> Self {
        Self {
            force: false,
            batch: 256,
            chunk: 4096,
            commit_every: Duration::from_secs(30),
        }
    }
}

/// What the stage did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct EmbedSummary {
    /// The model's id, as stored in `embedding_model`.
    pub model: String,
    /// Messages to embed when the stage started.
    pub backlog: u64,
    /// Messages this run embedded.
    pub embedded: u64,
    /// Messages embedded under another model and left so (no `--force-embed`).
    pub other_model: u64,
    /// Commits written.
    pub commits: u64,
    /// Whether the vector index was dropped (it was trained on another model's vectors).
    pub index_dropped: bool,
    pub seconds: f64,
}

/// Faults of the stage: the store's, or the model's.
#[derive(Debug)]
pub enum EmbedStageError {
    Store(StoreError),
    Model(EmbedError),
}

impl fmt::Display for EmbedStageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Store(e) => e.fmt(f),
            Self::Model(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for EmbedStageError {}

impl From<StoreError> for EmbedStageError {
    fn from(e: StoreError) -> Self {
        Self::Store(e)
    }
}

impl From<EmbedError> for EmbedStageError {
    fn from(e: EmbedError) -> Self {
        Self::Model(e)
    }
}

/// How much of a message's text is handed to the model: every model pond loads reads at most
/// 512 tokens, and no tokenizer makes fewer than one token per 16 characters of real text, so
/// the cut never changes a vector; it only spares tokenizing a megabyte to keep its start
/// (docs/decisions.md, "Embeddings": text past the token limit is not seen).
pub fn embed_chars(max_tokens: usize) -> usize {
    max_tokens.max(1) * 16
}

/// The predicate of the backlog: messages with text whose vector is missing, or (with `force`)
/// made by another model.
fn backlog_filter(model: &str, force: bool) -> String {
    if force {
        format!(
            "search_text IS NOT NULL AND (embedding_model IS NULL OR embedding_model != {})",
            sql_quote(model)
        )
    } else {
        "search_text IS NOT NULL AND embedding_model IS NULL".to_owned()
    }
}

/// The conditional merge (spec 5.5): a row is written only while it is not yet embedded under
/// the model, so an up-to-date row is left alone whatever the chunk holds.
const UPDATE_CONDITION: &str =
    "target.embedding_model IS NULL OR target.embedding_model != source.embedding_model";

/// Runs the embed stage over `store` with `embedder`. `progress` hears (embedded, backlog).
pub async fn embed(
    store: &SessionStore,
    embedder: Arc<dyn Embedder>,
    options: EmbedOptions,
    progress: &mut (dyn FnMut(u64, u64) + Send),
) -> Result<EmbedSummary, EmbedStageError> {
    let started = Instant::now();
    let model = embedder.model_id().to_owned();
    if embedder.dimension() != VECTOR_DIM as usize {
        return Err(EmbedError::Inference {
            model,
            detail: format!(
                "it makes vectors of {} dimensions; messages.vector holds {VECTOR_DIM}",
                embedder.dimension()
            ),
        }
        .into());
    }
    let substrate = store.substrate();
    let filter = backlog_filter(&model, options.force);
    let backlog = substrate.count(&MESSAGES, Some(&filter)).await?;
    let other_model = if options.force {
        0
    } else {
        let other = format!(
            "embedding_model IS NOT NULL AND embedding_model != {}",
            sql_quote(&model)
        );
        substrate.count(&MESSAGES, Some(&other)).await?
    };
    let mut summary = EmbedSummary {
        model: model.clone(),
        backlog,
        other_model,
        ..EmbedSummary::default()
    };
    progress(0, backlog);
    if backlog == 0 {
        summary.seconds = started.elapsed().as_secs_f64();
        return Ok(summary);
    }
    // Centroids belong to one model's distance space: an index trained on another model's
    // vectors goes before this model's land (spec 5.5); update-indexes trains it again.
    let trained_on = substrate
        .config_value(&MESSAGES, VECTOR_INDEX_MODEL_KEY)
        .await?;
    if trained_on.as_deref().is_some_and(|m| m != model) {
        summary.index_dropped = substrate
            .drop_index(&MESSAGES, VECTOR_INDEX.name, &[VECTOR_INDEX_MODEL_KEY])
            .await?;
    }

    let chars = embed_chars(embedder.max_tokens());
    let text = format!("left(search_text, {chars})");
    let mut stream = substrate
        .scan_stream(&MESSAGES, |s| {
            s.filter(&filter)?;
            s.project_with_transform(&[
                ("session_id", "session_id"),
                ("id", "id"),
                ("text", text.as_str()),
            ])?;
            s.batch_size(options.batch.max(1));
            Ok(())
        })
        .await?;
    let mut pending: Vec<(String, String, String)> = Vec::new();
    let mut chunk = Chunk::default();
    let mut last_commit = Instant::now();
    loop {
        let next = stream.next().await.transpose()?;
        let done = next.is_none();
        if let Some(batch) = next {
            for i in 0..batch.num_rows() {
                let col = |n: &str| batch.column_by_name(n).and_then(|c| str_at(c.as_ref(), i));
                if let (Some(s), Some(id), Some(t)) = (col("session_id"), col("id"), col("text")) {
                    pending.push((s.to_owned(), id.to_owned(), t.to_owned()));
                }
            }
        }
        while pending.len() >= options.batch || (done && !pending.is_empty()) {
            let take = pending.len().min(options.batch.max(1));
            let rows: Vec<_> = pending.drain(..take).collect();
            let vectors = embed_batch(embedder.clone(), &rows).await?;
            for ((session, id, _), v) in rows.into_iter().zip(vectors) {
                chunk.push(session, id, v);
            }
            if chunk.len() >= options.chunk || last_commit.elapsed() >= options.commit_every {
                summary.embedded += commit(store, &model, &mut chunk).await?;
                summary.commits += 1;
                last_commit = Instant::now();
                progress(summary.embedded, backlog);
            }
        }
        if done {
            break;
        }
    }
    if chunk.len() > 0 {
        summary.embedded += commit(store, &model, &mut chunk).await?;
        summary.commits += 1;
        progress(summary.embedded, backlog);
    }
    summary.seconds = started.elapsed().as_secs_f64();
    Ok(summary)
}

/// One call of the seam, off the async runtime (it uses every core: `pond_embed::side_by_side`).
async fn embed_batch(
    embedder: Arc<dyn Embedder>,
    rows: &[(String, String, String)],
) -> Result<Vec<Vec<f32>>, EmbedStageError> {
    let texts: Vec<String> = rows.iter().map(|(_, _, t)| t.clone()).collect();
    let expected = texts.len();
    let model = embedder.model_id().to_owned();
    let vectors = tokio::task::spawn_blocking(move || {
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        embedder.embed(&refs, TextKind::Passage)
    })
    .await
    .map_err(|e| EmbedError::Inference {
        model: model.clone(),
        detail: format!("the embedding thread failed: {e}"),
    })??;
    if vectors.len() != expected {
        return Err(EmbedError::Inference {
            model: model.clone(),
            detail: format!("{} vectors for {expected} texts", vectors.len()),
        }
        .into());
    }
    Ok(vectors)
}

/// Rows embedded and not yet written.
#[derive(Default)]
struct Chunk {
    sessions: Vec<String>,
    ids: Vec<String>,
    values: Vec<half::f16>,
}

impl Chunk {
    fn push(&mut self, session: String, id: String, vector: Vec<f32>) {
        self.sessions.push(session);
        self.ids.push(id);
        self.values
            .extend(vector.into_iter().map(half::f16::from_f32));
    }

    fn len(&self) -> usize {
        self.ids.len()
    }
}

/// Writes a chunk in one commit through the conditional update; returns the rows written.
async fn commit(
    store: &SessionStore,
    model: &str,
    chunk: &mut Chunk,
) -> Result<u64, EmbedStageError> {
    let chunk = std::mem::take(chunk);
    let n = chunk.len();
    let field = |name: &str| {
        MESSAGES
            .schema
            .field_with_name(name)
            .map(|f| f.clone())
            .map_err(|e| StoreError::Invalid {
                table: MESSAGES.name,
                detail: e.to_string(),
            })
    };
    let schema = Arc::new(Schema::new(vec![
        field("session_id")?,
        field("id")?,
        field("vector")?,
        field("embedding_model")?,
    ]));
    let item = Arc::new(Field::new("item", DataType::Float16, true));
    let invalid = |e: arrow_schema::ArrowError| StoreError::Invalid {
        table: MESSAGES.name,
        detail: e.to_string(),
    };
    let vectors = FixedSizeListArray::try_new(
        item,
        VECTOR_DIM,
        Arc::new(Float16Array::from(chunk.values)),
        None,
    )
    .map_err(invalid)?;
    let columns: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from(chunk.sessions)),
        Arc::new(StringArray::from(chunk.ids)),
        Arc::new(vectors),
        Arc::new(StringArray::from(vec![model; n])),
    ];
    let batch = RecordBatch::try_new(schema, columns).map_err(invalid)?;
    let outcome = store
        .substrate()
        .merge_update(&MESSAGES, vec![batch], UPDATE_CONDITION)
        .await?;
    Ok(outcome.inserted)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_backlog_is_missing_vectors_and_with_force_other_models() {
        assert_eq!(
            backlog_filter("m", false),
            "search_text IS NOT NULL AND embedding_model IS NULL"
        );
        assert_eq!(
            backlog_filter("o'k", true),
            "search_text IS NOT NULL AND (embedding_model IS NULL OR embedding_model != 'o''k')"
        );
        assert_eq!(embed_chars(256), 4096);
    }
}

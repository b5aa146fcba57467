//! The configured embedding model as the handlers use it (spec 8): named when the pond opens,
//! loaded at the first search that needs it, a store holding vectors under it, and kept. With
//! no model configured nothing here exists and no model is ever loaded; with one configured, a
//! store without its vectors searches full-text and loads nothing either.

use crate::error::{ErrorCode, PondError};
use pond_embed::{Embedder, TextKind};
use std::path::PathBuf;
use std::sync::Arc;
use tokio::sync::OnceCell;

/// The model `[embedding] model` names, and where it is installed.
pub struct EmbeddingModel {
    name: String,
    dir: PathBuf,
    loaded: OnceCell<Arc<dyn Embedder>>,
}

impl EmbeddingModel {
    /// The model `name`, installed under `dir` (`pond models install`); not loaded yet.
    pub fn new(name: impl Into<String>, dir: impl Into<PathBuf>) -> Self {
        Self {
            name: name.into(),
            dir: dir.into(),
            loaded: OnceCell::new(),
        }
    }

    /// A model already loaded.
    pub fn loaded(embedder: Arc<dyn Embedder>) -> Self {
        Self {
            name: embedder.model_id().to_owned(),
            dir: PathBuf::new(),
            loaded: OnceCell::new_with(Some(embedder)),
        }
    }

    /// The model's id, as `messages.embedding_model` stores it.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The model, loaded (and checked) on first use. A load that fails is not remembered: the
    /// next search tries again, so installing the model mends a running server.
    pub async fn embedder(&self) -> Result<Arc<dyn Embedder>, PondError> {
        self.loaded
            .get_or_try_init(|| async {
                let (name, dir) = (self.name.clone(), self.dir.clone());
                let loaded = tokio::task::spawn_blocking(move || pond_embed::load(&name, &dir))
                    .await
                    .map_err(|e| self.fault(format!("loading it failed: {e}")))?;
                loaded.map(Arc::from).map_err(|e| self.fault(e.to_string()))
            })
            .await
            .cloned()
    }

    /// The embedding of a search query.
    pub async fn embed_query(&self, text: &str) -> Result<Vec<f32>, PondError> {
        let embedder = self.embedder().await?;
        let text = text.to_owned();
        let mut vectors =
            tokio::task::spawn_blocking(move || embedder.embed(&[&text], TextKind::Query))
                .await
                .map_err(|e| self.fault(format!("the embedding thread failed: {e}")))?
                .map_err(|e| self.fault(e.to_string()))?;
        vectors
            .pop()
            .ok_or_else(|| self.fault("no vector for the query".to_owned()))
    }

    fn fault(&self, detail: String) -> PondError {
        PondError::new(
            ErrorCode::Internal,
            format!(
                "the embedding model {} ([embedding] model in config.toml) cannot embed the query: {detail}",
                self.name
            ),
        )
        .with("model", self.name.as_str())
    }
}

//! pond-embed: the embedding seam of spec section 8. Texts go in, vectors come out, from model
//! files on local disk; nothing here knows of sessions, messages or Lance, so a remote provider
//! later is the same shape to everything above.
//!
//! The contract everything above codes against is [`Embedder`]; how a model's files are found,
//! checked and loaded is this crate's business.

use std::fmt;

/// Whether a text is stored (a passage) or asked (a query): some models embed the two with
/// different prefixes (multilingual-e5's `passage: ` / `query: `).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextKind {
    Passage,
    Query,
}

/// One embedding backend: a loaded model, a remote provider later. Texts in, one L2-normalised
/// vector per text out, in order.
pub trait Embedder: Send + Sync {
    /// The model's stable id, stored beside every vector it made (`embedding_model`).
    fn model_id(&self) -> &str;
    /// The length of every vector it returns.
    fn dimension(&self) -> usize;
    /// The most tokens of a text the model reads; the rest of a longer text is not seen.
    fn max_tokens(&self) -> usize;
    /// One vector per text, in order.
    fn embed(&self, texts: &[&str], kind: TextKind) -> Result<Vec<Vec<f32>>, EmbedError>;
}

/// Faults of the embedding seam, each naming what it is about.
#[derive(Debug)]
pub enum EmbedError {
    /// The configured model is not installed (or its install is incomplete).
    NotInstalled { model: String, detail: String },
    /// A model file failed its check (size, SHA-256, format), naming the file.
    Corrupt { path: String, detail: String },
    /// The model ran and failed.
    Inference { model: String, detail: String },
}

impl fmt::Display for EmbedError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotInstalled { model, detail } => {
                write!(
                    f,
                    "model {model} is not installed ({detail}); run `pond models install {model}`"
                )
            }
            Self::Corrupt { path, detail } => write!(f, "{path}: {detail}"),
            Self::Inference { model, detail } => write!(f, "model {model}: {detail}"),
        }
    }
}

impl std::error::Error for EmbedError {}

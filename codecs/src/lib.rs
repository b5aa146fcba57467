//! # pond-codecs
//!
//! One codec per harness format, each a folder (`claude_code/`, `codex/`, ...) with a read face
//! and a write face as separate types (spec 6.1), listed once in [`registry`] (spec 6.7). The
//! driver in [`convert`] joins any read face to any write face; [`jsonl`] is the shared line reader.
//!
//! Codecs build canonical values only through `pond_canonical::seam`, so they cannot synthesize
//! source data or leave a part's provenance unclassified. This crate never depends on the store.

pub mod claude_code;
mod clock;
pub mod codex;
pub mod convert;
mod digest;
mod discover;
pub mod face;
mod hold;
pub mod jsonl;
pub mod opencode;
pub mod output;
pub mod pi;
pub mod registry;

pub use face::{
    CarriedLine, Fidelity, Item, Layout, Loss, Losses, Output, ReadFace, SessionWriter, Sniff,
    Target, WriteError, WriteFace, Written,
};
pub use registry::{CODECS, Codec, Install, find};

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
    CarriedLine, Fidelity, Item, Layout, Loss, Losses, Output, ReadFace, ReasoningLine,
    SessionWriter, Sniff, Target, Wanted, WriteError, WriteFace, Written,
};
pub use registry::{CODECS, Codec, Install, find};

/// A hash map a codec only looks things up in, never iterates (so neither the order nor the
/// per-process seed can show in what it writes): foldhash, not the standard SipHash, which
/// cost several times as much per key for the short ids a reader or writer tracks per call.
pub(crate) type LookupMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;

/// The set of [`LookupMap`].
pub(crate) type LookupSet<K> = std::collections::HashSet<K, foldhash::fast::RandomState>;

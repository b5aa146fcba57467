//! # pond-store
//!
//! The durable half of pond (spec sections 3 and 5): the generic Lance storage [`substrate`] and
//! the [`sessions`] datasets built on it: the import stage of `pond sync` ([`sync`]), its embed
//! stage ([`embed`]), paged reads ([`get`]), hybrid [`search`], restore ([`restore`]) and
//! `.pond` archives ([`archive`]).
//! This is the only crate that depends on Lance.

pub mod archive;
pub mod embed;
pub mod get;
pub mod restore;
pub mod search;
pub mod sessions;
pub mod sources;
pub mod substrate;
pub mod sync;

use std::path::PathBuf;

/// Where the embedded personal pond keeps its data: `$POND_DATA`, else `$XDG_DATA_HOME/pond`, else
/// `~/.local/share/pond` (spec 2.2, personal deployment).
pub fn default_data_dir() -> Option<PathBuf> {
    if let Some(d) = std::env::var_os("POND_DATA").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(d));
    }
    if let Some(d) = std::env::var_os("XDG_DATA_HOME").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(d).join("pond"));
    }
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(|h| PathBuf::from(h).join(".local/share/pond"))
}

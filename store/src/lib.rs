//! # pond-store
//!
//! The durable half of pond (spec sections 3 and 5): the generic Lance storage substrate and the
//! `sessions` / `messages` / `parts` datasets built on it.
//!
//! Not built yet: this crate is the seam the `store` feature of the `pond` binary switches on, so
//! that `cargo build -p pond --no-default-features` already gives a convert-only binary without
//! Lance. The substrate and datasets land with the store issue; until then the crate holds only
//! what the CLI needs to say where data would live.

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

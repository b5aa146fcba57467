//! The codec registry (spec 6.7): every codec is listed here, once. Adding a codec is a new
//! folder under `codecs/src/` plus one line in [`CODECS`]; nothing else dispatches on codec names.

use crate::face::{ReadFace, WriteFace};
use serde::Serialize;
use std::path::PathBuf;

/// A codec: a name, the brand of the sessions it reads, and its faces.
#[derive(Serialize)]
pub struct Codec {
    /// The name used on the command line (`claude-code`).
    pub name: &'static str,
    /// Other names people use for it (`claude`).
    pub aliases: &'static [&'static str],
    /// The `Session.source_agent` brand of what its read face produces; a write by a codec whose
    /// brand equals a session's is native (spec 6.3).
    pub source_agent: &'static str,
    /// One line on the format.
    pub description: &'static str,
    /// The parse face, if the codec reads.
    #[serde(skip)]
    pub read: Option<&'static dyn ReadFace>,
    /// The serialize face, if the codec writes.
    #[serde(skip)]
    pub write: Option<&'static dyn WriteFace>,
    /// Where the harness looks for sessions, for `pond convert --install`.
    #[serde(skip)]
    pub install: Option<Install>,
    /// Where the harness keeps its sessions on this machine (`pond sync`'s default sources),
    /// honouring the harness's own overrides. Paths that do not exist are skipped by the caller.
    #[serde(skip)]
    pub default_sources: fn() -> Vec<PathBuf>,
    /// The structural check of a file in this format (what the harness requires of it), used on
    /// every foreign write by the conformance suite. Returns the problems found.
    #[serde(skip)]
    pub validate: Option<fn(relative: &str, bytes: &[u8]) -> Vec<String>>,
}

/// `$VAR` if set and non-empty, else `$HOME/<fallback>`: how harnesses locate their homes.
pub fn env_or_home(var: &str, fallback: &str) -> Option<PathBuf> {
    let nonempty = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    nonempty(var).or_else(|| nonempty("HOME").map(|h| h.join(fallback)))
}

/// How `--install` places a written session where its harness finds it.
pub struct Install {
    /// The folder the writer's [`Layout::Harness`](crate::face::Layout) paths are relative to,
    /// honouring the harness's own overrides (`CLAUDE_CONFIG_DIR`, `CODEX_HOME`, ...).
    pub root: fn() -> Result<PathBuf, String>,
    /// A step that hands the written files to the harness when writing them is not enough
    /// (`opencode import`); returns what it did, for the user.
    pub finish: Option<fn(written: &[PathBuf]) -> Result<Vec<String>, String>>,
}

impl Codec {
    /// The faces this codec has, for listings: `read`, `write`.
    pub fn faces(&self) -> Vec<&'static str> {
        let mut faces = Vec::new();
        if self.read.is_some() {
            faces.push("read");
        }
        if self.write.is_some() {
            faces.push("write");
        }
        faces
    }
}

/// Every codec pond has.
pub static CODECS: &[&Codec] = &[
    // one line per codec
    &crate::opencode::CODEC,
    &crate::pi::CODEC,
    &crate::codex::CODEC,
    &crate::claude_code::CODEC,
];

/// The codec called `name` or one of its aliases.
pub fn find(name: &str) -> Option<&'static Codec> {
    CODECS
        .iter()
        .copied()
        .find(|c| c.name == name || c.aliases.contains(&name))
}

/// The `source_agent` brand stored sessions of a harness carry, named by the brand itself or by
/// a codec's name or alias (`claude` is `claude-code`): what a filter on it takes.
pub fn source_agent_named(given: &str) -> Option<&'static str> {
    CODECS
        .iter()
        .find(|c| c.source_agent == given)
        .copied()
        .or_else(|| find(given))
        .map(|c| c.source_agent)
}

/// The names of every codec, for error messages.
pub fn names() -> Vec<&'static str> {
    CODECS.iter().map(|c| c.name).collect()
}

//! The Claude Code codec: `~/.claude/projects/<encoded cwd>/<session id>.jsonl` transcripts and
//! their sub-agent transcripts, read into canonical sessions and written back.
//!
//! * [`read`]: the parse face (discovery, the three sub-agent eras, the survey-then-place read);
//! * `records`: where each record and content block goes (spec 6.5 placement);
//! * `provenance`: which spans of user text the harness injected (model-part-provenance);
//! * [`write`]: the serialize face (native write is value-complete, line for line);
//! * [`foreign`]: the write of a session from another harness (spec 6.3);
//! * [`naming`]: the encoded project folder, derived UUIDs, the resume command;
//! * [`validate`]: the structural check of a written transcript.
//!
//! A file none of whose records is Claude Code's (no `uuid`, no `sessionId`, no record type
//! Claude Code writes: another harness's file under a Claude Code source) is refused whole with
//! one `Unrecognized` error at the file, not read as a session of carried records.
//!
//! The format is described, with sources, in `shared/formats/claude-code.md`.

pub mod foreign;
pub mod naming;
mod provenance;
pub mod read;
mod records;
pub mod validate;
pub mod write;

use crate::registry::{Codec, Install};
use std::path::PathBuf;

/// The codec's name on the command line and in errors.
pub const CODEC_NAME: &str = "claude-code";

/// The `Session.source_agent` brand of what the read face produces.
pub const SOURCE_AGENT: &str = "claude-code";

static READER: read::ClaudeCodeReader = read::ClaudeCodeReader;
static WRITER: write::ClaudeCodeWriteFace = write::ClaudeCodeWriteFace;

/// The registry entry.
pub static CODEC: Codec = Codec {
    name: CODEC_NAME,
    aliases: &["claude"],
    source_agent: SOURCE_AGENT,
    description: "Claude Code JSONL transcripts (~/.claude/projects), with sub-agent transcripts",
    read: Some(&READER),
    write: Some(&WRITER),
    install: Some(Install {
        root: install_root,
        finish: None,
    }),
    validate: Some(validate::validate),
    default_sources,
};

/// `pond sync`'s default source: `$CLAUDE_CONFIG_DIR/projects`, else `~/.claude/projects`.
fn default_sources() -> Vec<PathBuf> {
    crate::registry::env_or_home("CLAUDE_CONFIG_DIR", ".claude")
        .map(|d| d.join("projects"))
        .into_iter()
        .collect()
}

/// Where Claude Code reads transcripts: `$CLAUDE_CONFIG_DIR/projects`, else `~/.claude/projects`
/// (format reference §1.1).
pub fn install_root() -> Result<PathBuf, String> {
    if let Some(dir) = std::env::var_os("CLAUDE_CONFIG_DIR").filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(dir).join("projects"));
    }
    match std::env::var_os("HOME").filter(|h| !h.is_empty()) {
        Some(home) => Ok(PathBuf::from(home).join(".claude").join("projects")),
        None => Err("neither CLAUDE_CONFIG_DIR nor HOME is set".into()),
    }
}

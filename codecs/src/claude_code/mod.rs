//! The Claude Code codec: `~/.claude/projects/<encoded cwd>/<session id>.jsonl` transcripts and
//! their sub-agent transcripts, read into canonical sessions and written back.
//!
//! * [`read`]: the parse face (discovery, the three sub-agent eras, the survey-then-place read);
//! * `records`: where each record and content block goes (spec 6.5 placement);
//! * `provenance`: which spans of user text the harness injected (model-part-provenance);
//! * [`write`]: the serialize face (native write is value-complete, line for line).
//!
//! The format is described, with sources, in `shared/formats/claude-code.md`.

mod provenance;
pub mod read;
mod records;
pub mod write;

use crate::registry::Codec;

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
    install: None,
    validate: None,
};

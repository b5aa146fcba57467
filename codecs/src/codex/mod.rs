//! The Codex CLI codec: rollout files (`~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`,
//! `archived_sessions/`, `.jsonl.zst` archives) in all three generations of the format
//! (`/work/shared/formats/codex.md` section 2): the bare-header G0 files, the
//! `{timestamp, type, payload}` envelope (G1), and the paginated envelope with `ordinal` and
//! top-level `metadata` (G2).
//!
//! The mapping is one rollout line to one canonical message, so a native write is a pure,
//! line-by-line inverse (adapter-native-restore-lossless):
//!
//! * `session_meta` (the first one; in G0 the bare header) is the
//!   [`Session`](pond_canonical::Session): id from `payload.id`, `created_at` from
//!   `payload.timestamp`; a fork's `forked_from_id` and `history_base` (or a sub-agent's
//!   `parent_thread_id`) give the parent pointers. The line's other fields go to `options.source`.
//! * The project (model-project-non-empty) is the working directory, from the first of these
//!   places the rollout has: the header's `cwd` (G1, G2, late G0); else, in file order, a
//!   `turn_context` line's `payload.cwd`, the `<cwd>` of an `<environment_context>` block in a user
//!   message (a response item, a bare G0 item, or an `event_msg` `user_message`), or the folder of
//!   an `# AGENTS.md instructions for <cwd>` user message (early G0 headers name no `cwd`; their
//!   first user message carries the environment context). Else the project the person running
//!   pond named (`--project`). A project from anywhere but the header is marked in
//!   `options.pond.project_from` (`turn_context`, `environment_context`, `agents_md`, `user`); a
//!   rollout with none of these is refused with `NoProject` (model-no-synthesis). The native
//!   write puts `cwd` back only where the header had it.
//! * `response_item` (or a bare G0 item) of a kind with content becomes a message with typed parts
//!   ([`items`]); every field not turned into a part stays in `options.source.payload`, the
//!   envelope's leftovers in `options.source.envelope`, and the names of the fields taken in
//!   `options.pond.taken`, which is what the writer re-inserts. A tool's `name` with a
//!   `namespace` beside it (Codex 0.169's MCP tools: `pond_search` in `mcp__pond`) is read as
//!   `<namespace>__<name>` (`mcp__pond__pond_search`, as earlier Codex and Claude Code name it);
//!   the `namespace` stays in the payload and the native write takes it off the name again.
//! * Everything else (`event_msg`, `turn_context`, `compacted`, `world_state`,
//!   `token_usage_record`, G0 `record_type: state`, a second `session_meta`, unknown kinds, items
//!   missing what a typed part needs) is a placement-rule-3 carrier, whole and in order.
//!
//! Message ids are the line's `ordinal` where the paginated format gives one (so a fork's cut-point
//! `history_base.end_ordinal_exclusive - 1` names the parent's message), else the line position
//! `L<n>` (lance-deterministic-pk).

pub mod foreign;
mod items;
mod provenance;
mod read;
mod tape;
pub mod validate;
mod write;

pub use read::CodexReader;
pub use tape::check_line;
pub use write::CodexWriter;

/// zstd archives as Codex writes them (`R-zst`: `.jsonl.zst`, level 3), for the writer and tests.
pub mod archive {
    /// The zstd level Codex compresses rollouts with.
    pub const LEVEL: i32 = 3;

    /// Compresses a rollout's bytes.
    pub fn compress(bytes: &[u8]) -> std::io::Result<Vec<u8>> {
        zstd::encode_all(bytes, LEVEL)
    }

    /// Decompresses a `.jsonl.zst` rollout.
    pub fn decompress(bytes: &[u8]) -> std::io::Result<Vec<u8>> {
        zstd::decode_all(bytes)
    }
}

use crate::registry::{Codec, Install};
use std::path::PathBuf;

/// The codec's name and its sessions' `source_agent` brand.
pub const NAME: &str = "codex";

/// The Codex codec, as listed in the registry.
pub static CODEC: Codec = Codec {
    name: NAME,
    aliases: &["codex-cli"],
    source_agent: NAME,
    description: "OpenAI Codex CLI rollouts (~/.codex/sessions, archived_sessions, .jsonl.zst)",
    read: Some(&CodexReader),
    write: Some(&CodexWriter),
    install: Some(Install {
        root: sessions_root,
        finish: None,
    }),
    validate: Some(validate::rollout),
    default_sources,
};

/// `pond sync`'s default sources: `sessions/` and `archived_sessions/` under `$CODEX_HOME`, else
/// under `~/.codex`.
fn default_sources() -> Vec<PathBuf> {
    crate::registry::env_or_home("CODEX_HOME", ".codex")
        .map(|h| vec![h.join("sessions"), h.join("archived_sessions")])
        .unwrap_or_default()
}

/// Where Codex reads rollouts from: `$CODEX_HOME/sessions`, else `~/.codex/sessions`
/// (codex.md section 1). `--install` writes [`Layout::Harness`](crate::face::Layout) paths
/// (`YYYY/MM/DD/rollout-...jsonl`) below it; each session resumes with `codex resume <uuid>`.
pub fn sessions_root() -> Result<PathBuf, String> {
    if let Some(home) = std::env::var_os("CODEX_HOME").filter(|h| !h.is_empty()) {
        return Ok(PathBuf::from(home).join("sessions"));
    }
    let home = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .ok_or("neither CODEX_HOME nor HOME is set: cannot find ~/.codex/sessions")?;
    Ok(PathBuf::from(home).join(".codex").join("sessions"))
}

/// Keys of the options bags this codec reads and writes.
pub(crate) mod keys {
    /// `options.source.path`: the rollout's path relative to the input root.
    pub const PATH: &str = "path";
    /// `options.source.envelope`: the envelope's fields left once `payload` (and a valid
    /// `timestamp`) were taken. Absent for a bare G0 line.
    pub const ENVELOPE: &str = "envelope";
    /// `options.source.payload`: the payload's fields not turned into typed fields or parts.
    pub const PAYLOAD: &str = "payload";
    /// `options.source.preceding`: on a session, how many lines came before its `session_meta`.
    pub const PRECEDING: &str = "preceding";
    /// `options.source.item`: on a part, the content item's other fields (`type`, `detail`, ...).
    pub const ITEM: &str = "item";
    /// `options.pond.taken`: the payload fields the reader took into typed fields, in order.
    pub const TAKEN: &str = "taken";
    /// `options.pond.timestamp_fallback`: the line had no usable timestamp of its own; the
    /// message is dated with the session anchor (model-no-synthesis permits it) and the writer
    /// must not add one.
    pub const TIMESTAMP_FALLBACK: &str = "timestamp_fallback";
    /// `options.pond.continues`: this text part continues the previous part's content item (a
    /// provenance split, spec 6.5 rule 1); the writer concatenates them.
    pub const CONTINUES: &str = "continues";
    /// `options.pond.injected_kind`: what kind of injection an injected part is.
    pub const INJECTED_KIND: &str = "injected_kind";
    /// `options.pond.reasoning_field`: which reasoning array (`summary`, `content`) a part is from.
    pub const REASONING_FIELD: &str = "reasoning_field";
    /// `options.pond.image_url`: `data_url` when a file part's `media_type` and base64 `data`
    /// were split out of a `data:` URL; `url` when `data` holds the `image_url` as written.
    pub const IMAGE_URL: &str = "image_url";
    /// `options.pond.arguments`: the exact `arguments` string of a function call, when writing
    /// `params` back as compact JSON would not reproduce it.
    pub const ARGUMENTS: &str = "arguments";
    /// `options.pond.arguments_not_json`: `arguments` did not parse as JSON; `params` is the string.
    pub const ARGUMENTS_NOT_JSON: &str = "arguments_not_json";
}

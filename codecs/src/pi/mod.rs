//! The pi codec: sessions of the pi coding agent (`@mariozechner/pi-coding-agent`).
//!
//! A pi session is one JSONL file: a `session` header line, then entries. Versions 2 and 3 make the
//! entries a tree (`id` / `parentId`) inside the file; version 1 (no `version`) is a linear list
//! without ids. Canonical sessions are linear and branch only between sessions, so ([`read`]):
//!
//! * the **main line** — the path from the root to the last entry in file order, which is what pi
//!   resumes — is the session, with the header's id;
//! * every other leaf starts a **side branch**: the entries from below the main-line entry it hangs
//!   off down to that leaf form a forked child session `<header id>#<leaf id>`, with
//!   `parent_session_id` = the main session and `parent_message_id` = that main-line entry (the
//!   cut-point). A branch nested in another branch also hangs off the main line, so it repeats the
//!   entries it shares with its sibling (lineage replays ids unchanged, spec 5.2) and lineage stays
//!   one level deep;
//! * each message keeps its file line in `options.source.line`, so the native write ([`write`])
//!   rebuilds the one file with its exact tree and line order.
//!
//! Entry ids are message ids; a version-1 entry has none and takes its position `L<line>`
//! (lance-deterministic-pk).

mod foreign;
mod read;
mod tape;
mod validate;
mod write;

pub use tape::check_line;

use crate::discover::relative_of;
use crate::face::{Item, ReadFace, Sniff};
use crate::registry::{Codec, Install};
use pond_canonical::{Event, Locator, Origin, ParseError, ParseErrorKind};
use std::io::BufRead;
use std::path::Path;

/// The codec's name and `Session.source_agent` brand.
pub const NAME: &str = "pi";

/// The pi codec.
pub static CODEC: Codec = Codec {
    name: NAME,
    aliases: &["pi-coding-agent"],
    source_agent: NAME,
    description: "pi coding agent: one JSONL file per session (versions 1-3), a tree of entries",
    read: Some(&PiReader),
    write: Some(&write::PiWriter),
    install: Some(Install {
        root: install_root,
        finish: None,
    }),
    validate: Some(validate::validate),
    default_sources,
};

/// `$PI_CODING_AGENT_SESSION_DIR` when set (pi >= 0.73, as `--session-dir`): the one folder pi
/// keeps every session file in, flat, with no per-project folders (pi's `SessionManager` takes a
/// session dir "directly (no cwd encoding)"; `pi --session <id>` and `--continue` look there).
pub(crate) fn session_dir_override() -> Option<std::path::PathBuf> {
    std::env::var_os("PI_CODING_AGENT_SESSION_DIR")
        .filter(|d| !d.is_empty())
        .map(std::path::PathBuf::from)
}

/// `pond sync`'s default source: [`session_dir_override`], else `$PI_CODING_AGENT_DIR/sessions`,
/// else `~/.pi/agent/sessions`.
fn default_sources() -> Vec<std::path::PathBuf> {
    if let Some(dir) = session_dir_override() {
        return vec![dir];
    }
    crate::registry::env_or_home("PI_CODING_AGENT_DIR", ".pi/agent")
        .map(|d| d.join("sessions"))
        .into_iter()
        .collect()
}

/// Where pi reads sessions from (pi.md section 1): [`session_dir_override`], where files go
/// flat (`<time>_<uuid>.jsonl`); else `$PI_CODING_AGENT_DIR/sessions`, else
/// `~/.pi/agent/sessions`, where Layout::Harness paths are `--<cwd>--/<time>_<uuid>.jsonl`.
fn install_root() -> Result<std::path::PathBuf, String> {
    if let Some(dir) = session_dir_override() {
        return Ok(dir);
    }
    let nonempty = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(std::path::PathBuf::from)
    };
    if let Some(d) = nonempty("PI_CODING_AGENT_DIR") {
        return Ok(d.join("sessions"));
    }
    let home = nonempty("HOME").ok_or("neither PI_CODING_AGENT_DIR nor HOME is set")?;
    Ok(home.join(".pi/agent/sessions"))
}

/// The folder a session of `cwd` goes in, relative to the output root: pi's per-project folder
/// ([`foreign::cwd_folder`]), or none when `flat` (an install into [`session_dir_override`]).
pub(crate) fn session_folder(cwd: &str, flat: bool) -> String {
    if flat {
        String::new()
    } else {
        format!("{}/", foreign::cwd_folder(cwd))
    }
}

/// The read face.
pub struct PiReader;

impl ReadFace for PiReader {
    /// Every `*.jsonl` file. One whose first line is not a pi session header is reported by
    /// [`read`](ReadFace::read) as `Unrecognized` rather than skipped unseen.
    fn discover(&self, input: &Path) -> Result<Vec<Origin>, ParseError> {
        let io = |e: &dyn std::fmt::Display| {
            Origin::new(NAME, input, "").error(
                Locator::File,
                ParseErrorKind::Io {
                    detail: e.to_string(),
                },
            )
        };
        let meta = std::fs::metadata(input).map_err(|e| io(&e))?;
        if meta.is_file() {
            let name = input
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            return Ok(vec![Origin::new(NAME, input, name)]);
        }
        let mut found = Vec::new();
        for entry in walkdir::WalkDir::new(input)
            .sort_by_file_name()
            .min_depth(1)
        {
            let entry = entry.map_err(|e| io(&e))?;
            let path = entry.path();
            if entry.file_type().is_file() && path.extension().is_some_and(|e| e == "jsonl") {
                found.push(Origin::new(NAME, path, relative_of(input, path)));
            }
        }
        Ok(found)
    }

    fn sniff(&self, input: &Path) -> Sniff {
        if input.is_dir() {
            return if input.join("sessions").is_dir() {
                Sniff::Maybe
            } else {
                Sniff::No
            };
        }
        let Ok(file) = std::fs::File::open(input) else {
            return Sniff::No;
        };
        let mut first = Vec::new();
        let mut reader = std::io::BufReader::new(file).take_line_prefix(64 * 1024);
        if reader.read_until(b'\n', &mut first).is_err() {
            return Sniff::No;
        }
        match serde_json::from_slice::<serde_json::Value>(
            crate::jsonl::strip_bom(&first).trim_ascii(),
        ) {
            Ok(v) if read::is_header(&v) => Sniff::Yes,
            _ => Sniff::No,
        }
    }

    fn read(&self, source: &Origin, emit: &mut dyn FnMut(Result<Event, ParseError>)) {
        read::read(source, false, None, &mut crate::face::events(source, emit));
    }

    /// [`read`](ReadFace::read)'s events; with `defer`, each main-line entry read whole from its
    /// line is handed over as the line and its mapping ([`Item::Deferred`]).
    fn read_items(
        &self,
        source: &Origin,
        defer: bool,
        emit: &mut dyn FnMut(Result<Item<'_>, ParseError>),
    ) {
        read::read(source, defer, None, emit);
    }

    /// [`read_items`](ReadFace::read_items), the members of each entry's `message` that
    /// neither the mapping nor the writer reads left unbuilt (`usage` and its `cost`, `api`,
    /// `stopReason`, ...: a quarter of a real session's JSON values), and a text, tool call or
    /// file part's leftover block members (its `type`) not put in its options.
    fn read_items_for(
        &self,
        source: &Origin,
        defer: bool,
        wanted: crate::Wanted,
        emit: &mut dyn FnMut(Result<Item<'_>, ParseError>),
    ) {
        read::read(source, defer, Some(wanted.keys), emit);
    }
}

/// A reader limited to its first `limit` bytes.
trait TakeLinePrefix: Sized {
    fn take_line_prefix(self, limit: u64) -> std::io::BufReader<std::io::Take<Self>>;
}

impl<R: std::io::Read> TakeLinePrefix for std::io::BufReader<R> {
    fn take_line_prefix(self, limit: u64) -> std::io::BufReader<std::io::Take<Self>> {
        std::io::BufReader::new(std::io::Read::take(self, limit))
    }
}

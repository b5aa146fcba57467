//! The opencode codec: sessions of the opencode coding agent (<https://opencode.ai>).
//!
//! opencode stores sessions in three shapes, all read here and all normalised to one in-memory
//! shape, the `opencode export` document `{info, messages: [{info, parts}]}`, before they become
//! canonical ([`sources`]):
//!
//! * the SQLite database `opencode.db` (opencode >= 1.2), opened read-only so it is safe to read
//!   while opencode runs; rows are hydrated the way opencode hydrates them (ids back from columns);
//! * the legacy JSON storage tree `storage/{session,message,part,project}/...` (opencode 0.4-1.1),
//!   found by its `message/` and `part/` folders;
//! * the `opencode export` JSON document, one session per file.
//!
//! Mapping ([`read`]): session id, `parentID` (a spawned or forked child: parent only, no cut-point)
//! and `time.created` are typed; the project is the session `directory`, else the project's
//! `worktree`, else an assistant message's `path.root`, else the session is dropped with
//! `NoProject` (model-project-non-empty). Messages are ordered by `time.created`, then id, as
//! opencode orders them. Content parts (`text`, `reasoning`, `file`, `tool`) become canonical parts;
//! the other part types (`step-start`, `step-finish`, `snapshot`, `patch`, `agent`, `subtask`,
//! `retry`, `compaction`, and any type added later) are harness metadata kept whole, in order, in
//! the message's `options.opencode.parts` (placement rule 2).
//!
//! Not ingested (model-lossless-projection's documented non-capture): the database's `todo`,
//! `event`, `event_sequence`, `session_message`, `session_input`, `session_share`, `permission`,
//! account and workspace tables, and the legacy tree's `todo/`, `permission/`, `session_share/`,
//! `session_diff/` folders. They are not part of a session's transcript and `opencode export`
//! leaves them out too.
//!
//! The native write ([`write`]) is always the `opencode export` document that `opencode import`
//! accepts, whatever the source was: opencode >= 1.16 ignores a legacy tree, and writing into a
//! live database from outside opencode would bypass its migrations and event log.

mod foreign;
mod read;
mod sources;
mod validate;
mod write;

use crate::discover::relative_of;
use crate::face::{ReadFace, Sniff};
use crate::registry::{Codec, Install};
use pond_canonical::{Locator, Origin, ParseError, ParseErrorKind};
use std::path::{Path, PathBuf};

/// The codec's name and `Session.source_agent` brand.
pub const NAME: &str = "opencode";

/// The opencode codec.
pub static CODEC: Codec = Codec {
    name: NAME,
    aliases: &["open-code"],
    source_agent: NAME,
    description: "opencode: opencode.db (SQLite), the legacy storage/ JSON tree, `opencode export` JSON",
    read: Some(&OpencodeReader),
    write: Some(&write::OpencodeWriter),
    install: Some(Install {
        root: install_root,
        finish: Some(install_finish),
    }),
    validate: Some(validate::validate),
    default_sources,
};

/// `pond sync`'s default source: opencode's database, `$XDG_DATA_HOME/opencode/opencode.db`, else
/// `~/.local/share/opencode/opencode.db`.
fn default_sources() -> Vec<PathBuf> {
    crate::registry::env_or_home("XDG_DATA_HOME", ".local/share")
        .map(|d| d.join("opencode/opencode.db"))
        .into_iter()
        .collect()
}

/// Where `--install` stages export documents before `opencode import` reads them (decision:
/// opencode has no session files to write into, and writing its SQLite database from outside
/// would bypass its migrations): `$POND_DATA/opencode-import`, else
/// `$XDG_DATA_HOME/pond/opencode-import`, else `~/.local/share/pond/opencode-import`.
fn install_root() -> Result<PathBuf, String> {
    let nonempty = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    if let Some(d) = nonempty("POND_DATA") {
        return Ok(d.join("opencode-import"));
    }
    if let Some(d) = nonempty("XDG_DATA_HOME") {
        return Ok(d.join("pond/opencode-import"));
    }
    let home = nonempty("HOME").ok_or("neither POND_DATA, XDG_DATA_HOME nor HOME is set")?;
    Ok(home.join(".local/share/pond/opencode-import"))
}

/// The `opencode` binary: `$OPENCODE_BIN`, else `opencode` found on `PATH`.
fn opencode_binary() -> Option<PathBuf> {
    if let Some(b) = std::env::var_os("OPENCODE_BIN").filter(|b| !b.is_empty()) {
        return Some(PathBuf::from(b));
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join("opencode"))
        .find(|p| p.is_file())
}

/// Hands each staged document to `opencode import`, run in the session's project directory
/// (import replaces the session's directory with its own working directory, and opencode lists
/// a project's sessions from there), and removes the document once imported. Without
/// `opencode` on PATH, returns the commands to run (the documents stay for them).
fn install_finish(written: &[PathBuf]) -> Result<Vec<String>, String> {
    let binary = opencode_binary();
    let mut notes = Vec::new();
    let mut failed = Vec::new();
    for file in written {
        let project = std::fs::read(file)
            .ok()
            .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
            .and_then(|d| {
                d.pointer("/info/directory")
                    .and_then(|v| v.as_str())
                    .map(PathBuf::from)
            })
            .filter(|d| d.is_dir());
        let command = format!(
            "{}opencode import {}",
            project
                .as_ref()
                .map(|p| format!("cd {} && ", write::shell_quote(&p.to_string_lossy())))
                .unwrap_or_default(),
            write::shell_quote(&file.to_string_lossy())
        );
        let Some(bin) = &binary else {
            notes.push(format!(
                "opencode is not on PATH; to import, run: {command}"
            ));
            continue;
        };
        let mut cmd = std::process::Command::new(bin);
        cmd.arg("import").arg(file);
        if let Some(p) = &project {
            cmd.current_dir(p);
        }
        match cmd.output() {
            Ok(out) if out.status.success() => {
                // The staged document was pond's own copy, now in opencode's database: left
                // behind, it would refuse the next install of the same session (pond never
                // overwrites a file).
                let removed = std::fs::remove_file(file).is_ok();
                notes.push(format!(
                    "imported: {command}{}",
                    if removed {
                        " (staged copy removed)"
                    } else {
                        ""
                    }
                ));
            }
            Ok(out) => failed.push(format!(
                "{command} failed ({}): {}",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            )),
            Err(e) => failed.push(format!("{command} could not run: {e}")),
        }
    }
    if failed.is_empty() {
        Ok(notes)
    } else {
        Err(failed.join("\n"))
    }
}

/// The read face: discovers databases, storage trees and export documents.
pub struct OpencodeReader;

/// Whether `dir` is the root of a legacy JSON storage tree.
fn is_storage_root(dir: &Path) -> bool {
    dir.join("message").is_dir() && dir.join("part").is_dir()
}

fn has_ext(path: &Path, ext: &str) -> bool {
    path.extension().is_some_and(|e| e == ext)
}

impl ReadFace for OpencodeReader {
    /// Every `*.db` file, every `*.json` file outside a storage tree, and every storage tree root.
    /// Other files (SQL dumps, scripts, request logs, `*.example`) are not opencode sessions and
    /// are not listed. A `*.json` or `*.db` that turns out not to be opencode's is reported by
    /// [`read`](ReadFace::read) as `Unrecognized`.
    fn discover(&self, input: &Path) -> Result<Vec<Origin>, ParseError> {
        let meta = std::fs::metadata(input).map_err(|e| {
            Origin::new(NAME, input, "").error(
                Locator::File,
                ParseErrorKind::Io {
                    detail: e.to_string(),
                },
            )
        })?;
        if meta.is_file() {
            let name = input
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            return Ok(vec![Origin::new(NAME, input, name)]);
        }
        if is_storage_root(input) {
            return Ok(vec![Origin::new(NAME, input, ".")]);
        }
        let mut found = Vec::new();
        let mut walk = walkdir::WalkDir::new(input)
            .sort_by_file_name()
            .min_depth(1)
            .into_iter();
        while let Some(entry) = walk.next() {
            let entry = entry.map_err(|e| {
                Origin::new(NAME, input, "").error(
                    Locator::File,
                    ParseErrorKind::Io {
                        detail: e.to_string(),
                    },
                )
            })?;
            let path = entry.path();
            if entry.file_type().is_dir() {
                if is_storage_root(path) {
                    found.push(Origin::new(NAME, path, relative_of(input, path)));
                    walk.skip_current_dir();
                }
            } else if has_ext(path, "db") || has_ext(path, "json") {
                found.push(Origin::new(NAME, path, relative_of(input, path)));
            }
        }
        Ok(found)
    }

    fn sniff(&self, input: &Path) -> Sniff {
        if input.is_dir() {
            if is_storage_root(input) || input.join("storage").is_dir() {
                return Sniff::Yes;
            }
            if input.join("opencode.db").is_file() {
                return Sniff::Yes;
            }
            return Sniff::No;
        }
        if has_ext(input, "db") {
            return if sources::is_opencode_db(input) {
                Sniff::Yes
            } else {
                Sniff::No
            };
        }
        if has_ext(input, "json") {
            return match sources::looks_like_export(input) {
                true => Sniff::Yes,
                false => Sniff::No,
            };
        }
        Sniff::No
    }

    /// Only export documents come back as themselves; a database or a legacy storage tree is
    /// written natively as export documents (see docs/decisions.md).
    fn mirrors(&self, source: &Origin) -> bool {
        source.path().is_file() && has_ext(source.path(), "json")
    }

    fn read(
        &self,
        source: &Origin,
        emit: &mut dyn FnMut(Result<pond_canonical::Event, ParseError>),
    ) {
        for session in sources::load(source, emit) {
            read::emit_session(source, session, emit);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn storage_root_is_recognised_by_its_folders() {
        let dir = std::env::temp_dir().join(format!("pond-oc-sr-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("message")).unwrap();
        assert!(!is_storage_root(&dir));
        std::fs::create_dir_all(dir.join("part")).unwrap();
        assert!(is_storage_root(&dir));
        let _ = std::fs::remove_dir_all(&dir);
    }
}

//! The three opencode storage shapes, each loaded into the shape of an `opencode export`
//! document: one [`SourceSession`] per session, its messages each with their parts.
//!
//! Loading only moves JSON around (ids put back from columns and paths, as opencode itself does
//! when it hydrates rows or migrates a legacy tree); turning it into canonical values through the
//! seam is [`super::read`]'s job. Every fault is reported located and loading goes on
//! (adapter-integrity-no-silent-drops).

use pond_canonical::{Event, Locator, Origin, ParseError, ParseErrorKind};
use rusqlite::types::ValueRef;
use rusqlite::{Connection, OpenFlags};
use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The largest export document or storage file read, in bytes.
const MAX_DOCUMENT_BYTES: u64 = 1 << 30;

/// Which opencode storage shape a session came from (recorded in `options.source.format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    /// An `opencode export` JSON document.
    Export,
    /// The SQLite database.
    Sqlite,
    /// The legacy JSON storage tree.
    Storage,
}

impl Format {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Export => "export",
            Self::Sqlite => "sqlite",
            Self::Storage => "storage",
        }
    }
}

/// One session in export-document shape.
pub(crate) struct SourceSession {
    pub format: Format,
    /// Where the session record is.
    pub locator: Locator,
    /// The document without `messages`: `info` plus any other top-level member.
    pub doc: Value,
    /// The session's project record (`project` row or `project/<id>.json`), if the source has one.
    pub project: Option<(Locator, Value)>,
    pub messages: Vec<SourceMessage>,
}

/// One message in export-document shape.
pub(crate) struct SourceMessage {
    pub locator: Locator,
    /// The `messages[]` entry without `parts`: `info` plus any other member.
    pub entry: Value,
    pub parts: Vec<(Locator, Value)>,
}

type Emit<'a> = &'a mut dyn FnMut(Result<Event, ParseError>);

fn io_error(origin: &Origin, locator: Locator, e: impl std::fmt::Display) -> ParseError {
    origin.error(
        locator,
        ParseErrorKind::Io {
            detail: e.to_string(),
        },
    )
}

/// Loads every session of `source`, reporting faults through `emit`.
pub(crate) fn load(source: &Origin, emit: Emit<'_>) -> Vec<SourceSession> {
    let path = source.path();
    if path.is_dir() {
        return load_storage(source, emit);
    }
    if path.extension().is_some_and(|e| e == "db") {
        return load_db(source, emit);
    }
    load_export(source, emit).into_iter().collect()
}

/// Reads a JSON file whole (bounded), as a typed error if it cannot be.
fn read_json(origin: &Origin, path: &Path, locator: &Locator) -> Result<Value, ParseError> {
    let len = std::fs::metadata(path)
        .map_err(|e| io_error(origin, locator.clone(), e))?
        .len();
    if len > MAX_DOCUMENT_BYTES {
        return Err(origin.error(
            locator.clone(),
            ParseErrorKind::LineTooLong {
                bytes: len,
                limit: MAX_DOCUMENT_BYTES,
            },
        ));
    }
    let bytes = std::fs::read(path).map_err(|e| io_error(origin, locator.clone(), e))?;
    serde_json::from_slice(crate::jsonl::strip_bom(&bytes)).map_err(|e| {
        let detail = e.to_string();
        let kind = if e.is_eof() {
            ParseErrorKind::Truncated { detail }
        } else {
            ParseErrorKind::InvalidJson { detail }
        };
        origin.error(locator.clone(), kind)
    })
}

/// Whether a `.json` file looks like an export document (for sniffing only).
pub(crate) fn looks_like_export(path: &Path) -> bool {
    let Ok(meta) = std::fs::metadata(path) else {
        return false;
    };
    if meta.len() > MAX_DOCUMENT_BYTES {
        return false;
    }
    let Ok(bytes) = std::fs::read(path) else {
        return false;
    };
    serde_json::from_slice::<Value>(crate::jsonl::strip_bom(&bytes))
        .ok()
        .is_some_and(|v| {
            v.get("info").is_some_and(Value::is_object)
                && v.get("messages").is_some_and(Value::is_array)
        })
}

// ---------------------------------------------------------------------------------------------
// export JSON

fn load_export(source: &Origin, emit: Emit<'_>) -> Option<SourceSession> {
    let value = match read_json(source, source.path(), &Locator::File) {
        Ok(v) => v,
        Err(e) => {
            emit(Err(e));
            return None;
        }
    };
    let Value::Object(mut doc) = value else {
        emit(Err(source.error(
            Locator::File,
            ParseErrorKind::Unrecognized {
                detail: "not an `opencode export` document: the top level is not an object".into(),
            },
        )));
        return None;
    };
    if !doc.get("info").is_some_and(Value::is_object) {
        emit(Err(source.error(
            Locator::File,
            ParseErrorKind::Unrecognized {
                detail: "not an `opencode export` document: no `info` object".into(),
            },
        )));
        return None;
    }
    let messages = match doc.remove("messages") {
        Some(Value::Array(items)) => items,
        Some(other) => {
            emit(Err(source.error(
                Locator::Record("/messages".into()),
                ParseErrorKind::InvalidField {
                    field: "messages".into(),
                    reason: format!(
                        "expected an array, found {}",
                        pond_canonical::seam::json_kind(&other)
                    ),
                },
            )));
            return None;
        }
        None => {
            emit(Err(source.error(
                Locator::File,
                ParseErrorKind::MissingField {
                    field: "messages".into(),
                },
            )));
            return None;
        }
    };
    let mut out = Vec::new();
    for (i, item) in messages.into_iter().enumerate() {
        let at = format!("/messages/{i}");
        let Value::Object(mut entry) = item else {
            emit(Err(source.error(
                Locator::Record(at),
                ParseErrorKind::NotAnObject {
                    found: "another JSON value",
                },
            )));
            continue;
        };
        let parts = match entry.remove("parts") {
            Some(Value::Array(parts)) => parts,
            Some(_) => {
                emit(Err(source.error(
                    Locator::Record(format!("{at}/parts")),
                    ParseErrorKind::InvalidField {
                        field: "parts".into(),
                        reason: "expected an array".into(),
                    },
                )));
                continue;
            }
            None => {
                emit(Err(source.error(
                    Locator::Record(at),
                    ParseErrorKind::MissingField {
                        field: "parts".into(),
                    },
                )));
                continue;
            }
        };
        out.push(SourceMessage {
            locator: Locator::Record(format!("{at}/info")),
            entry: Value::Object(entry),
            parts: parts
                .into_iter()
                .enumerate()
                .map(|(j, p)| (Locator::Record(format!("{at}/parts/{j}")), p))
                .collect(),
        });
    }
    Some(SourceSession {
        format: Format::Export,
        locator: Locator::Record("/info".into()),
        doc: Value::Object(doc),
        project: None,
        messages: out,
    })
}

// ---------------------------------------------------------------------------------------------
// SQLite

/// Opens a database read-only: opencode may be running and writing it.
fn open_db(path: &Path) -> rusqlite::Result<Connection> {
    Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
}

fn tables(conn: &Connection) -> rusqlite::Result<BTreeSet<String>> {
    let mut stmt = conn.prepare("SELECT name FROM sqlite_master WHERE type = 'table'")?;
    let names = stmt.query_map([], |r| r.get::<_, String>(0))?;
    names.collect()
}

/// Whether `path` is an SQLite database with opencode's `message` and `part` tables.
pub(crate) fn is_opencode_db(path: &Path) -> bool {
    open_db(path)
        .and_then(|c| tables(&c))
        .is_ok_and(|t| t.contains("message") && t.contains("part"))
}

/// A column value as JSON: integers stay integers, reals that are whole numbers become integers
/// (opencode writes these from JavaScript numbers, which JSON prints without a fraction).
fn column_json(v: ValueRef<'_>) -> Value {
    match v {
        ValueRef::Null => Value::Null,
        ValueRef::Integer(i) => Value::from(i),
        ValueRef::Real(f) => {
            if f.fract() == 0.0 && f.abs() < 9.0e15 {
                Value::from(f as i64)
            } else {
                serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)
            }
        }
        ValueRef::Text(t) => Value::String(String::from_utf8_lossy(t).into_owned()),
        ValueRef::Blob(b) => Value::String(String::from_utf8_lossy(b).into_owned()),
    }
}

/// Rows of `sql` as maps from the names in `columns` (the query's columns, in order) to values.
/// The names are given, never asked of rusqlite: its column names panic on a name that is not
/// UTF-8, which a damaged database can hold (a fuzz finding, `fuzz/regressions/opencode_db`).
fn rows(
    conn: &Connection,
    sql: &str,
    params: &[&dyn rusqlite::ToSql],
    columns: &[String],
) -> rusqlite::Result<Vec<Map<String, Value>>> {
    let mut stmt = conn.prepare(sql)?;
    if stmt.column_count() != columns.len() {
        return Err(rusqlite::Error::InvalidColumnIndex(columns.len()));
    }
    let names = columns;
    let mapped = stmt.query_map(params, |row| {
        let mut map = Map::new();
        for (i, name) in names.iter().enumerate() {
            map.insert(name.clone(), column_json(row.get_ref(i)?));
        }
        Ok(map)
    })?;
    mapped.collect()
}

/// The names of `table`'s columns in their order (the order `SELECT *` gives them), read as
/// values, so a name that is not UTF-8 is read lossily instead of panicking.
fn table_columns(conn: &Connection, table: &str) -> rusqlite::Result<Vec<String>> {
    let mut stmt = conn.prepare("SELECT name FROM pragma_table_info(?1) ORDER BY cid")?;
    let names = stmt.query_map([table], |row| {
        Ok(match column_json(row.get_ref(0)?) {
            Value::String(s) => s,
            other => other.to_string(),
        })
    })?;
    names.collect()
}

/// The fixed column names of a query that lists its columns.
fn named(columns: &[&str]) -> Vec<String> {
    columns.iter().map(|c| (*c).to_owned()).collect()
}

/// A JSON column's text parsed, or the fault.
fn json_column(
    source: &Origin,
    locator: &Locator,
    column: &str,
    value: Value,
) -> Result<Value, ParseError> {
    match value {
        Value::String(s) => serde_json::from_str(&s).map_err(|e| {
            source.error(
                locator.clone(),
                ParseErrorKind::InvalidField {
                    field: column.to_owned(),
                    reason: format!("not JSON: {e}"),
                },
            )
        }),
        other => Ok(other),
    }
}

/// A `session` row as opencode's `Session.Info` (opencode's `fromRow`): null columns are absent,
/// prefixed columns nest (`summary_*`, `tokens_*`, `time_*`), JSON columns are parsed. A column
/// opencode does not define is kept under its own name, so nothing of the row is lost.
fn session_info(
    source: &Origin,
    locator: &Locator,
    row: Map<String, Value>,
    emit: Emit<'_>,
) -> Map<String, Value> {
    let mut info = Map::new();
    let mut summary = Map::new();
    let mut tokens = Map::new();
    let mut cache = Map::new();
    let mut time = Map::new();
    for (column, value) in row {
        if value.is_null() {
            continue;
        }
        let mut parsed = |value| match json_column(source, locator, &column, value) {
            Ok(v) => Some(v),
            Err(e) => {
                emit(Err(e));
                None
            }
        };
        match column.as_str() {
            "project_id" => {
                info.insert("projectID".into(), value);
            }
            "workspace_id" => {
                info.insert("workspaceID".into(), value);
            }
            "parent_id" => {
                info.insert("parentID".into(), value);
            }
            "share_url" => {
                info.insert(
                    "share".into(),
                    Value::Object(Map::from_iter([("url".into(), value)])),
                );
            }
            "summary_additions" | "summary_deletions" | "summary_files" => {
                summary.insert(column["summary_".len()..].to_owned(), value);
            }
            "summary_diffs" => {
                if let Some(v) = parsed(value) {
                    summary.insert("diffs".into(), v);
                }
            }
            "tokens_input" | "tokens_output" | "tokens_reasoning" => {
                tokens.insert(column["tokens_".len()..].to_owned(), value);
            }
            "tokens_cache_read" | "tokens_cache_write" => {
                cache.insert(column["tokens_cache_".len()..].to_owned(), value);
            }
            "time_created" | "time_updated" | "time_compacting" | "time_archived" => {
                time.insert(column["time_".len()..].to_owned(), value);
            }
            "model" | "metadata" | "revert" | "permission" => {
                if let Some(v) = parsed(value) {
                    info.insert(column.clone(), v);
                }
            }
            _ => {
                info.insert(column.clone(), value);
            }
        }
    }
    if !summary.is_empty() {
        info.insert("summary".into(), Value::Object(summary));
    }
    if !tokens.is_empty() || !cache.is_empty() {
        if !cache.is_empty() {
            tokens.insert("cache".into(), Value::Object(cache));
        }
        info.insert("tokens".into(), Value::Object(tokens));
    }
    if !time.is_empty() {
        info.insert("time".into(), Value::Object(time));
    }
    info
}

fn load_db(source: &Origin, emit: Emit<'_>) -> Vec<SourceSession> {
    let db_error = |e: rusqlite::Error| io_error(source, Locator::File, e);
    let conn = match open_db(source.path()) {
        Ok(c) => c,
        Err(e) => {
            emit(Err(db_error(e)));
            return Vec::new();
        }
    };
    let names = match tables(&conn) {
        Ok(t) => t,
        Err(e) => {
            emit(Err(source.error(
                Locator::File,
                ParseErrorKind::Unrecognized {
                    detail: format!("not an SQLite database: {e}"),
                },
            )));
            return Vec::new();
        }
    };
    if !(names.contains("message") && names.contains("part")) {
        emit(Err(source.error(
            Locator::File,
            ParseErrorKind::Unrecognized {
                detail: "not an opencode database: no `message` and `part` tables".into(),
            },
        )));
        return Vec::new();
    }
    let mut projects: BTreeMap<String, (Locator, Value)> = BTreeMap::new();
    if names.contains("project") {
        let found = table_columns(&conn, "project")
            .and_then(|c| rows(&conn, "SELECT * FROM project ORDER BY id", &[], &c));
        match found {
            Ok(found) => {
                for row in found {
                    if let Some(id) = row.get("id").and_then(Value::as_str) {
                        let at = Locator::Record(format!("project {id}"));
                        projects.insert(id.to_owned(), (at, Value::Object(row)));
                    }
                }
            }
            Err(e) => emit(Err(db_error(e))),
        }
    }
    // Sessions with a `session` row, then sessions whose messages have none (a partial database).
    let mut heads: Vec<(Locator, Map<String, Value>)> = Vec::new();
    if names.contains("session") {
        let found = table_columns(&conn, "session").and_then(|c| {
            rows(
                &conn,
                "SELECT * FROM session ORDER BY time_created, id",
                &[],
                &c,
            )
        });
        match found {
            Ok(found) => {
                for row in found {
                    let id = row.get("id").and_then(Value::as_str).unwrap_or_default();
                    let at = Locator::Record(format!("session {id}"));
                    let info = session_info(source, &at, row, emit);
                    heads.push((at, info));
                }
            }
            Err(e) => emit(Err(db_error(e))),
        }
    }
    let orphan_sql = if names.contains("session") {
        "SELECT DISTINCT session_id FROM message WHERE session_id NOT IN (SELECT id FROM session) ORDER BY session_id"
    } else {
        "SELECT DISTINCT session_id FROM message ORDER BY session_id"
    };
    match rows(&conn, orphan_sql, &[], &named(&["session_id"])) {
        Ok(found) => {
            for mut row in found {
                if let Some(id) = row.remove("session_id") {
                    let at = Locator::Record(format!(
                        "message.session_id {}",
                        id.as_str().unwrap_or_default()
                    ));
                    heads.push((at, Map::from_iter([("id".to_owned(), id)])));
                }
            }
        }
        Err(e) => emit(Err(db_error(e))),
    }

    let mut out = Vec::new();
    for (locator, info) in heads {
        let Some(session_id) = info.get("id").cloned() else {
            emit(Err(source.error(
                locator,
                ParseErrorKind::MissingField { field: "id".into() },
            )));
            continue;
        };
        let sid = session_id.as_str().unwrap_or_default().to_owned();
        let project = info
            .get("projectID")
            .and_then(Value::as_str)
            .and_then(|p| projects.get(p).cloned());
        let mut messages = Vec::new();
        let found = rows(
            &conn,
            "SELECT id, session_id, data FROM message WHERE session_id = ?1 ORDER BY time_created, id",
            &[&sid],
            &named(&["id", "session_id", "data"]),
        );
        for row in found.unwrap_or_else(|e| {
            emit(Err(db_error(e)));
            Vec::new()
        }) {
            let mid = row.get("id").cloned().unwrap_or(Value::Null);
            let mid_str = mid.as_str().unwrap_or_default().to_owned();
            let at = Locator::Record(format!("message {mid_str}"));
            let data = row.get("data").cloned().unwrap_or(Value::Null);
            let mut info = match json_column(source, &at, "data", data) {
                Ok(Value::Object(m)) => m,
                Ok(_) => {
                    emit(Err(source.error(
                        at,
                        ParseErrorKind::NotAnObject {
                            found: "another JSON value",
                        },
                    )));
                    continue;
                }
                Err(e) => {
                    emit(Err(e));
                    continue;
                }
            };
            // opencode's hydration: the row's id and session id go back into the object.
            info.insert("id".into(), mid);
            info.insert("sessionID".into(), session_id.clone());
            let mut parts = Vec::new();
            let found = rows(
                &conn,
                "SELECT id, message_id, session_id, data FROM part WHERE message_id = ?1 ORDER BY id",
                &[&mid_str],
                &named(&["id", "message_id", "session_id", "data"]),
            );
            for prow in found.unwrap_or_else(|e| {
                emit(Err(db_error(e)));
                Vec::new()
            }) {
                let pid = prow.get("id").cloned().unwrap_or(Value::Null);
                let pat = Locator::Record(format!("part {}", pid.as_str().unwrap_or_default()));
                let data = prow.get("data").cloned().unwrap_or(Value::Null);
                match json_column(source, &pat, "data", data) {
                    Ok(Value::Object(mut part)) => {
                        part.insert("id".into(), pid);
                        part.insert(
                            "sessionID".into(),
                            prow.get("session_id").cloned().unwrap_or(Value::Null),
                        );
                        part.insert(
                            "messageID".into(),
                            prow.get("message_id").cloned().unwrap_or(Value::Null),
                        );
                        parts.push((pat, Value::Object(part)));
                    }
                    Ok(_) => emit(Err(source.error(
                        pat,
                        ParseErrorKind::NotAnObject {
                            found: "another JSON value",
                        },
                    ))),
                    Err(e) => emit(Err(e)),
                }
            }
            messages.push(SourceMessage {
                locator: at,
                entry: Value::Object(Map::from_iter([("info".to_owned(), Value::Object(info))])),
                parts,
            });
        }
        out.push(SourceSession {
            format: Format::Sqlite,
            locator,
            doc: Value::Object(Map::from_iter([("info".to_owned(), Value::Object(info))])),
            project,
            messages,
        });
    }
    out
}

// ---------------------------------------------------------------------------------------------
// legacy JSON storage tree

/// The `*.json` files directly in `dir`, sorted by name, with their stems.
fn json_files(dir: &Path) -> Vec<(String, std::path::PathBuf)> {
    let Ok(read) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<_> = read
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_file() && p.extension().is_some_and(|e| e == "json"))
        .filter_map(|p| {
            let stem = p.file_stem()?.to_str()?.to_owned();
            Some((stem, p))
        })
        .collect();
    files.sort();
    files
}

/// The subfolders of `dir`, sorted, with their names.
fn subdirs(dir: &Path) -> Vec<(String, std::path::PathBuf)> {
    let Ok(read) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut dirs: Vec<_> = read
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .filter_map(|p| Some((p.file_name()?.to_str()?.to_owned(), p)))
        .collect();
    dirs.sort();
    dirs
}

/// Reads a storage file as an object; ids missing from it are put back from its path, as
/// opencode's JSON-to-SQLite migration did (`id` from the file name, the owner from the folder).
fn storage_object(
    source: &Origin,
    root: &Path,
    path: &Path,
    ids: &[(&str, &str)],
    emit: Emit<'_>,
) -> Option<(Locator, Map<String, Value>)> {
    let at = Locator::Record(super::relative_of(root, path));
    match read_json(source, path, &at) {
        Ok(Value::Object(mut map)) => {
            for (key, value) in ids {
                map.entry(key.to_string())
                    .or_insert_with(|| Value::String(value.to_string()));
            }
            Some((at, map))
        }
        Ok(other) => {
            emit(Err(source.error(
                at,
                ParseErrorKind::NotAnObject {
                    found: pond_canonical::seam::json_kind(&other),
                },
            )));
            None
        }
        Err(e) => {
            emit(Err(e));
            None
        }
    }
}

fn load_storage(source: &Origin, emit: Emit<'_>) -> Vec<SourceSession> {
    let root = source.path();
    let mut projects: BTreeMap<String, (Locator, Value)> = BTreeMap::new();
    for (id, path) in json_files(&root.join("project")) {
        if let Some((at, map)) = storage_object(source, root, &path, &[("id", &id)], emit) {
            projects.insert(id, (at, Value::Object(map)));
        }
    }
    // Session records by id, with their project folder name.
    let mut infos: BTreeMap<String, (Locator, Map<String, Value>, String)> = BTreeMap::new();
    for (project_id, dir) in subdirs(&root.join("session")) {
        for (id, path) in json_files(&dir) {
            if let Some((at, map)) = storage_object(source, root, &path, &[("id", &id)], emit) {
                infos.insert(id, (at, map, project_id.clone()));
            }
        }
    }
    let message_dirs: BTreeMap<String, std::path::PathBuf> =
        subdirs(&root.join("message")).into_iter().collect();
    let ids: BTreeSet<String> = infos
        .keys()
        .cloned()
        .chain(message_dirs.keys().cloned())
        .collect();
    let mut out = Vec::new();
    for sid in ids {
        let (locator, info, project) = match infos.remove(&sid) {
            Some((at, info, project_dir)) => {
                let project_id = info
                    .get("projectID")
                    .and_then(Value::as_str)
                    .unwrap_or(&project_dir)
                    .to_owned();
                (at, info, projects.get(&project_id).cloned())
            }
            None => (
                Locator::Record(format!("message/{sid}")),
                Map::from_iter([("id".to_owned(), Value::String(sid.clone()))]),
                None,
            ),
        };
        let mut messages = Vec::new();
        if let Some(dir) = message_dirs.get(&sid) {
            for (mid, path) in json_files(dir) {
                let Some((at, minfo)) = storage_object(
                    source,
                    root,
                    &path,
                    &[("id", &mid), ("sessionID", &sid)],
                    emit,
                ) else {
                    continue;
                };
                let owner = minfo
                    .get("id")
                    .and_then(Value::as_str)
                    .unwrap_or(&mid)
                    .to_owned();
                let mut parts = Vec::new();
                for (pid, ppath) in json_files(&root.join("part").join(&mid)) {
                    if let Some((pat, part)) = storage_object(
                        source,
                        root,
                        &ppath,
                        &[("id", &pid), ("sessionID", &sid), ("messageID", &owner)],
                        emit,
                    ) {
                        parts.push((pat, Value::Object(part)));
                    }
                }
                messages.push(SourceMessage {
                    locator: at,
                    entry: Value::Object(Map::from_iter([(
                        "info".to_owned(),
                        Value::Object(minfo),
                    )])),
                    parts,
                });
            }
        }
        out.push(SourceSession {
            format: Format::Storage,
            locator,
            doc: Value::Object(Map::from_iter([("info".to_owned(), Value::Object(info))])),
            project,
            messages,
        });
    }
    out
}

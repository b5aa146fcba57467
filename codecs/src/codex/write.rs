//! The Codex write face. A native write (adapter-native-restore-lossless) is the exact inverse of
//! the read face: every message is one rollout line again, its payload rebuilt from
//! `options.source.payload` plus the fields listed in `options.pond.taken`, taken back from the
//! typed parts; carriers are written as the record they carry. The file goes to the relative path
//! it was read from (`options.source.path`), zstd-compressed again when that path ends in `.zst`.
//!
//! With [`Layout::Harness`] (`pond convert --install`) a native rollout goes to
//! `YYYY/MM/DD/<file name>` under the sessions root instead, where Codex looks it up by its UUID
//! (a `.jsonl.zst` archive is written out plain there: same lines, a file Codex appends to).
//!
//! A foreign write (a session another codec read) is [`super::foreign`]'s: an idiomatic rollout
//! in Codex's own layout, whatever the [`Layout`].

use super::foreign::{self, ForeignRollout};
use super::keys;
use super::read::COMPRESSED_SUFFIX;
use crate::face::{Fidelity, Layout, SessionWriter, Target, WriteError, WriteFace, Written};
use pond_canonical::{FileData, Message, Options, PartRef, Session, SessionId};
use serde_json::{Map, Value};

/// Writes Codex rollouts.
pub struct CodexWriter;

impl WriteFace for CodexWriter {
    fn writer(&self, layout: Layout) -> Box<dyn SessionWriter> {
        Box::new(RolloutWriter {
            layout,
            files: Vec::new(),
            foreign: Vec::new(),
        })
    }
}

/// The rollouts of the source being written, held until its end so the header line can be put
/// back where it was and an archive compressed whole.
struct RolloutWriter {
    layout: Layout,
    files: Vec<RolloutFile>,
    foreign: Vec<ForeignRollout>,
}

struct RolloutFile {
    session: SessionId,
    /// The thread id Codex resumes it by, when the session id is a UUID.
    uuid: Option<String>,
    path: String,
    header: Value,
    preceding: usize,
    /// Lines held back: the lines before the header until the header is written, or every line
    /// of a `.zst` archive (compressed whole at the end). A plain file streams: once its header is
    /// out, each line goes straight to the output, so memory stays flat whatever the file's size.
    lines: Vec<Vec<u8>>,
    /// Whether the header (and the lines held before it) has been written.
    streaming: bool,
}

impl RolloutFile {
    fn compressed(&self) -> bool {
        self.path.ends_with(COMPRESSED_SUFFIX)
    }

    /// Writes the header and the lines held before it, once `preceding` lines are in (or at the
    /// end of the source, whatever came).
    fn release(
        &mut self,
        out: &mut dyn crate::face::Output,
        at_end: bool,
    ) -> Result<(), WriteError> {
        if self.streaming || self.compressed() || (!at_end && self.lines.len() < self.preceding) {
            return Ok(());
        }
        let header = serde_json::to_vec(&self.header).map_err(|e| WriteError::Io {
            path: self.path.clone(),
            error: std::io::Error::other(e),
        })?;
        let mut lines = std::mem::take(&mut self.lines);
        lines.insert(self.preceding.min(lines.len()), header);
        out.append(&self.path, &join_lines(&lines))?;
        self.streaming = true;
        Ok(())
    }
}

fn join_lines(lines: &[Vec<u8>]) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(lines.iter().map(|l| l.len() + 1).sum());
    for line in lines {
        bytes.extend_from_slice(line);
        bytes.push(b'\n');
    }
    bytes
}

fn unrepresentable(session: &SessionId, reason: impl Into<String>) -> WriteError {
    WriteError::Unrepresentable {
        session: session.to_string(),
        reason: reason.into(),
    }
}

/// `options.<ns>.<key>`.
fn option<'a>(options: &'a Options, ns: &str, key: &str) -> Option<&'a Value> {
    options.get(ns)?.get(key)
}

/// `options.pond.taken`: the payload fields the reader took into typed fields.
fn taken(options: &Options) -> Vec<&str> {
    option(options, "pond", keys::TAKEN)
        .and_then(Value::as_array)
        .map(|keys| keys.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// A line in the envelope: `timestamp` (when the reader took it), the envelope's other fields,
/// and the payload after `type`, where Codex writes it.
fn wrap(
    envelope: &Map<String, Value>,
    timestamp: Option<&str>,
    payload: Map<String, Value>,
) -> Value {
    let mut line = Map::new();
    if let Some(ts) = timestamp {
        line.insert("timestamp".into(), Value::from(ts));
    }
    let mut payload = Some(payload);
    for (k, v) in envelope {
        line.insert(k.clone(), v.clone());
        if k == "type"
            && let Some(p) = payload.take()
        {
            line.insert("payload".into(), Value::Object(p));
        }
    }
    if let Some(p) = payload {
        line.insert("payload".into(), Value::Object(p));
    }
    Value::Object(line)
}

/// The stored payload leftovers of a session or message.
fn payload(options: &Options, id: &SessionId) -> Result<Map<String, Value>, WriteError> {
    option(options, "source", keys::PAYLOAD)
        .and_then(Value::as_object)
        .cloned()
        .ok_or_else(|| {
            unrepresentable(
                id,
                "no options.source.payload: not read from a Codex rollout",
            )
        })
}

/// The `session_meta` (or G0 header) line of a session.
fn header_line(session: &Session) -> Result<Value, WriteError> {
    let mut payload = payload(&session.options, &session.id)?;
    for key in taken(&session.options) {
        let value = match key {
            "id" => session.id.as_str(),
            "cwd" => session.project.as_str(),
            "timestamp" => session.created_at.as_str(),
            other => {
                return Err(unrepresentable(
                    &session.id,
                    format!("unknown taken field `{other}`"),
                ));
            }
        };
        payload.insert(key.to_owned(), Value::from(value));
    }
    Ok(match option(&session.options, "source", keys::ENVELOPE) {
        Some(Value::Object(envelope)) => wrap(envelope, None, payload),
        _ => Value::Object(payload),
    })
}

/// The content item fields a part kept (`type`, `detail`, `annotations`, ...).
fn source_item(options: &Options) -> Map<String, Value> {
    option(options, "source", keys::ITEM)
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default()
}

fn flag(options: &Options, key: &str) -> bool {
    option(options, "pond", key).and_then(Value::as_bool) == Some(true)
}

/// A `message` content array from text and file parts; split text is joined back
/// (spec 6.5 rule 1: re-concatenated in ordinal order).
fn content_items(parts: &[PartRef<'_>]) -> Value {
    let mut items: Vec<Value> = Vec::new();
    for part in parts {
        match part {
            PartRef::Text(t) => {
                if flag(&t.options, keys::CONTINUES)
                    && let Some(Value::String(text)) = items
                        .last_mut()
                        .and_then(Value::as_object_mut)
                        .and_then(|item| item.get_mut("text"))
                {
                    text.push_str(t.text.as_str());
                    continue;
                }
                let mut item = source_item(&t.options);
                item.insert("text".into(), Value::from(t.text.as_str()));
                items.push(Value::Object(item));
            }
            PartRef::File(f) => {
                let mut item = source_item(&f.options);
                let data_url = option(&f.options, "pond", keys::IMAGE_URL).and_then(Value::as_str)
                    == Some("data_url");
                let url = match &f.data {
                    FileData::Base64(data) if data_url => {
                        format!("data:{};base64,{data}", f.media_type.as_str())
                    }
                    FileData::Base64(data) => data.clone(),
                    FileData::Url(url) => url.clone(),
                };
                item.insert("image_url".into(), Value::from(url));
                items.push(Value::Object(item));
            }
            _ => {}
        }
    }
    Value::Array(items)
}

/// A reasoning `summary` or `content` array from the reasoning parts read from it.
fn reasoning_items(parts: &[PartRef<'_>], field: &str) -> Value {
    let items = parts
        .iter()
        .filter_map(|part| match part {
            PartRef::Reasoning(r)
                if option(&r.options, "pond", keys::REASONING_FIELD).and_then(Value::as_str)
                    == Some(field) =>
            {
                let mut item = source_item(&r.options);
                item.insert("text".into(), Value::from(r.text.as_str()));
                Some(Value::Object(item))
            }
            _ => None,
        })
        .collect();
    Value::Array(items)
}

/// The value of one taken payload field, from the message's parts.
fn taken_value(key: &str, kind: &str, message: &Message, parts: &[PartRef<'_>]) -> Option<Value> {
    let call = parts.iter().find_map(|p| match p {
        PartRef::ToolCall(c) => Some(*c),
        _ => None,
    });
    let result = parts.iter().find_map(|p| match p {
        PartRef::ToolResult(r) => Some(*r),
        _ => None,
    });
    Some(match (key, kind) {
        ("role", _) => Value::from(message.role()),
        ("content", "message") => content_items(parts),
        ("summary" | "content", "reasoning") => reasoning_items(parts, key),
        ("call_id" | "id", _) => match (call, result) {
            (Some(c), _) => Value::from(c.call_id.as_str()),
            (None, Some(r)) => Value::from(r.call_id.as_str()),
            _ => return None,
        },
        ("name", _) => match (call, result) {
            (Some(c), _) => Value::from(c.name.as_str()),
            (None, Some(r)) => Value::from(r.name.as_ref()?.as_str()),
            _ => return None,
        },
        ("arguments", _) => {
            let call = call?;
            match option(&call.options, "source", keys::ARGUMENTS) {
                Some(exact) => exact.clone(),
                None if flag(&call.options, keys::ARGUMENTS_NOT_JSON) => {
                    call.params.as_value().clone()
                }
                None => Value::from(serde_json::to_string(call.params.as_value()).ok()?),
            }
        }
        ("input" | "action", _) => call?.params.as_value().clone(),
        ("output", _) => result?.result.as_value().clone(),
        _ => return None,
    })
}

/// The rollout line of a message.
fn message_line(message: &Message) -> Result<Value, WriteError> {
    let session = message.session_id();
    if let Message::System(system) = message {
        return system
            .carried_record()
            .map(|record| Value::Object(record.clone()))
            .ok_or_else(|| {
                unrepresentable(
                    session,
                    "a system message with text is no Codex rollout line",
                )
            });
    }
    let options = message.options();
    let mut payload = payload(options, session)?;
    let kind = payload
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    // Borrowed: cloning the parts (tool outputs and all) would copy what is written anyway.
    let parts = message.part_refs();
    for key in taken(options) {
        let value = taken_value(key, &kind, message, &parts).ok_or_else(|| {
            unrepresentable(
                session,
                format!(
                    "message {}: no part holds the `{key}` of its `{kind}`",
                    message.id()
                ),
            )
        })?;
        payload.insert(key.to_owned(), value);
    }
    let timestamp =
        (!flag(options, keys::TIMESTAMP_FALLBACK)).then(|| message.timestamp().as_str());
    Ok(match option(options, "source", keys::ENVELOPE) {
        Some(Value::Object(envelope)) => wrap(envelope, timestamp, payload),
        _ => Value::Object(payload),
    })
}

impl SessionWriter for RolloutWriter {
    fn session(
        &mut self,
        session: &Session,
        fidelity: Fidelity,
        target: &mut Target<'_>,
    ) -> Result<(), WriteError> {
        if fidelity == Fidelity::Foreign {
            // adapter-native-restore-lossless does not apply: spec 6.3 foreign restore.
            self.foreign.push(ForeignRollout::start(session, target));
            return Ok(());
        }
        let source_path = option(&session.options, "source", keys::PATH)
            .and_then(Value::as_str)
            .ok_or_else(|| unrepresentable(&session.id, "no options.source.path"))?;
        let id = session.id.as_str();
        let uuid = foreign::is_uuid(id).then(|| id.to_ascii_lowercase());
        let path = match self.layout {
            Layout::Mirror => source_path.to_owned(),
            Layout::Harness => harness_path(session, source_path),
        };
        let preceding = option(&session.options, "source", keys::PRECEDING)
            .and_then(Value::as_u64)
            .and_then(|n| usize::try_from(n).ok())
            .unwrap_or(0);
        self.files.push(RolloutFile {
            session: session.id.clone(),
            uuid,
            path,
            header: header_line(session)?,
            preceding,
            lines: Vec::new(),
            streaming: false,
        });
        Ok(())
    }

    fn message(&mut self, message: &Message, target: &mut Target<'_>) -> Result<(), WriteError> {
        if let Some(rollout) = self
            .foreign
            .iter_mut()
            .rev()
            .find(|f| f.source == message.session_id().as_str())
        {
            rollout.message(message, target);
            return Ok(());
        }
        // A carried record is serialized as it is, without copying it into a new value first.
        let carried = match message {
            Message::System(m) => m.carried_record(),
            _ => None,
        };
        let line = match carried {
            Some(record) => serde_json::to_vec(record),
            None => serde_json::to_vec(&message_line(message)?),
        }
        .map_err(|e| unrepresentable(message.session_id(), e.to_string()))?;
        let file = self
            .files
            .iter_mut()
            .rev()
            .find(|f| &f.session == message.session_id())
            .ok_or_else(|| unrepresentable(message.session_id(), "a message before its session"))?;
        if file.streaming {
            let mut line = line;
            line.push(b'\n');
            return target.out.append(&file.path, &line);
        }
        file.lines.push(line);
        file.release(target.out, false)
    }

    fn end_source(&mut self, target: &mut Target<'_>) -> Result<(), WriteError> {
        for rollout in std::mem::take(&mut self.foreign) {
            rollout.finish(target)?;
        }
        for mut file in std::mem::take(&mut self.files) {
            if file.compressed() {
                let header = serde_json::to_vec(&file.header).map_err(|e| WriteError::Io {
                    path: file.path.clone(),
                    error: std::io::Error::other(e),
                })?;
                let mut lines = std::mem::take(&mut file.lines);
                lines.insert(file.preceding.min(lines.len()), header);
                // Codex compresses archived rollouts with zstd level 3 (`R-zst`).
                let bytes = super::archive::compress(&join_lines(&lines)).map_err(|error| {
                    WriteError::Io {
                        path: file.path.clone(),
                        error,
                    }
                })?;
                target.out.append(&file.path, &bytes)?;
            } else {
                file.release(target.out, true)?;
            }
            target.written.push(Written {
                source_session: file.session.to_string(),
                session: file
                    .uuid
                    .clone()
                    .unwrap_or_else(|| file.session.to_string()),
                file: file.path,
                resume: file.uuid.map(|u| format!("codex resume {u}")),
            });
        }
        Ok(())
    }
}

/// Where Codex looks for a native rollout under its sessions root: `YYYY/MM/DD/<name>`, the
/// source's own file name when it is a `rollout-<time>-<uuid>` name (dated from that time), else
/// `rollout-<created_at>-<id>.jsonl`. A plain `.jsonl` either way: Codex appends to it. An id
/// that is no plain name (a crafted `../../x`) makes a path [`crate::face::check_relative_path`]
/// refuses.
fn harness_path(session: &Session, source_path: &str) -> String {
    let name = source_path
        .rsplit(['/', '\\'])
        .next()
        .unwrap_or(source_path);
    let name = name.strip_suffix(COMPRESSED_SUFFIX).unwrap_or(name);
    if let Some(rest) = name.strip_prefix("rollout-")
        && let Some(stem) = rest.strip_suffix(".jsonl")
        && let (Some(time), Some(id)) = (stem.get(..19), stem.get(20..))
        && foreign::is_uuid(id)
        && time
            .bytes()
            .all(|b| b.is_ascii_digit() || b == b'-' || b == b'T')
        && let Some(date) = time.get(..10)
    {
        return format!("{}/{name}", date.replace('-', "/"));
    }
    let created = &session.created_at;
    format!(
        "{}/rollout-{}-{}.jsonl",
        foreign::date_dirs(created),
        foreign::file_time(created),
        session.id.as_str()
    )
}

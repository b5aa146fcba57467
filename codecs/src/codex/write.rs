//! The Codex write face. A native write (adapter-native-restore-lossless) is the exact inverse of
//! the read face: every message is one rollout line again, its payload rebuilt from
//! `options.source.payload` plus the fields listed in `options.pond.taken`, taken back from the
//! typed parts; carriers are written as the record they carry. The file goes to the relative path
//! it was read from (`options.source.path`), zstd-compressed again when that path ends in `.zst`.
//!
//! A foreign write (a session another codec read) is not implemented yet: such a session is
//! refused whole with [`WriteError::Unrepresentable`], so nothing half-written leaves pond.

use super::keys;
use super::read::COMPRESSED_SUFFIX;
use crate::face::{Fidelity, SessionWriter, Target, WriteError, WriteFace};
use pond_canonical::{FileData, Message, Options, Part, Session, SessionId};
use serde_json::{Map, Value};

/// Writes Codex rollouts.
pub struct CodexWriter;

impl WriteFace for CodexWriter {
    fn writer(&self, _layout: crate::face::Layout) -> Box<dyn SessionWriter> {
        Box::new(RolloutWriter::default())
    }
}

/// The rollouts of the source being written, held until its end so the header line can be put
/// back where it was and an archive compressed whole.
#[derive(Default)]
struct RolloutWriter {
    files: Vec<RolloutFile>,
}

struct RolloutFile {
    session: SessionId,
    path: String,
    header: Value,
    preceding: usize,
    lines: Vec<Value>,
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
fn content_items(parts: &[Part]) -> Value {
    let mut items: Vec<Value> = Vec::new();
    for part in parts {
        match part {
            Part::Text(t) => {
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
            Part::File(f) => {
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
fn reasoning_items(parts: &[Part], field: &str) -> Value {
    let items = parts
        .iter()
        .filter_map(|part| match part {
            Part::Reasoning(r)
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
fn taken_value(key: &str, kind: &str, message: &Message, parts: &[Part]) -> Option<Value> {
    let call = parts.iter().find_map(|p| match p {
        Part::ToolCall(c) => Some(c),
        _ => None,
    });
    let result = parts.iter().find_map(|p| match p {
        Part::ToolResult(r) => Some(r),
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
    let parts = message.parts();
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
        _target: &mut Target<'_>,
    ) -> Result<(), WriteError> {
        if fidelity == Fidelity::Foreign {
            return Err(unrepresentable(
                &session.id,
                format!(
                    "writing a {} session as a Codex rollout (foreign write) is not implemented yet",
                    session.source_agent
                ),
            ));
        }
        let path = option(&session.options, "source", keys::PATH)
            .and_then(Value::as_str)
            .ok_or_else(|| unrepresentable(&session.id, "no options.source.path"))?
            .to_owned();
        let preceding = option(&session.options, "source", keys::PRECEDING)
            .and_then(Value::as_u64)
            .and_then(|n| usize::try_from(n).ok())
            .unwrap_or(0);
        self.files.push(RolloutFile {
            session: session.id.clone(),
            path,
            header: header_line(session)?,
            preceding,
            lines: Vec::new(),
        });
        Ok(())
    }

    fn message(&mut self, message: &Message, _target: &mut Target<'_>) -> Result<(), WriteError> {
        let line = message_line(message)?;
        let file = self
            .files
            .iter_mut()
            .rev()
            .find(|f| &f.session == message.session_id())
            .ok_or_else(|| unrepresentable(message.session_id(), "a message before its session"))?;
        file.lines.push(line);
        Ok(())
    }

    fn end_source(&mut self, target: &mut Target<'_>) -> Result<(), WriteError> {
        for file in std::mem::take(&mut self.files) {
            let mut lines = file.lines;
            lines.insert(file.preceding.min(lines.len()), file.header);
            let mut bytes = Vec::new();
            for line in &lines {
                let text = serde_json::to_string(line).map_err(|e| WriteError::Io {
                    path: file.path.clone(),
                    error: std::io::Error::other(e),
                })?;
                bytes.extend_from_slice(text.as_bytes());
                bytes.push(b'\n');
            }
            if file.path.ends_with(COMPRESSED_SUFFIX) {
                // Codex compresses archived rollouts with zstd level 3 (`R-zst`).
                bytes = super::archive::compress(&bytes).map_err(|error| WriteError::Io {
                    path: file.path.clone(),
                    error,
                })?;
            }
            target.out.append(&file.path, &bytes)?;
        }
        Ok(())
    }
}

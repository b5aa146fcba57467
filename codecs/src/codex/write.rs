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
use crate::face::{
    CarriedLine, Fidelity, Layout, SessionWriter, Target, WriteError, WriteFace, Written,
};
use crate::jsonl;
use pond_canonical::{FileData, Message, Options, PartRef, Session, SessionId};
use serde_json::{Map, Value};
use std::borrow::Cow;

/// Writes Codex rollouts.
pub struct CodexWriter;

impl WriteFace for CodexWriter {
    fn writer(&self, layout: Layout) -> Box<dyn SessionWriter> {
        Box::new(RolloutWriter {
            layout,
            files: Vec::new(),
            foreign: Vec::new(),
            line: Vec::new(),
        })
    }
}

/// The rollouts of the source being written, each streamed once its header line is back where
/// it was.
struct RolloutWriter {
    layout: Layout,
    files: Vec<RolloutFile>,
    foreign: Vec<ForeignRollout>,
    /// The line being written, its allocation kept from message to message.
    line: Vec<u8>,
}

struct RolloutFile {
    session: SessionId,
    /// The thread id Codex resumes it by, when the session id is a UUID.
    uuid: Option<String>,
    path: String,
    /// The header line (no newline), until it is written.
    header: Vec<u8>,
    preceding: usize,
    /// The lines before the header, held until the header is written. After that each line goes
    /// straight to the output, so memory stays flat whatever the file's size.
    lines: Vec<Vec<u8>>,
    /// Whether the header (and the lines held before it) has been written.
    streaming: bool,
    /// A `.zst` archive's zstd stream (Codex uses level 3, `R-zst`): lines are compressed as they
    /// come and the compressed bytes appended as the encoder gives them, so an archive streams
    /// like a plain file.
    encoder: Option<zstd::stream::write::Encoder<'static, Vec<u8>>>,
}

impl RolloutFile {
    fn io_error(&self, error: std::io::Error) -> WriteError {
        WriteError::Io {
            path: self.path.clone(),
            error,
        }
    }

    /// Appends bytes to the file: as they are, or through the archive's encoder.
    fn emit(&mut self, out: &mut dyn crate::face::Output, bytes: &[u8]) -> Result<(), WriteError> {
        let Some(encoder) = &mut self.encoder else {
            return out.append(&self.path, bytes);
        };
        if let Err(e) = std::io::Write::write_all(encoder, bytes) {
            return Err(self.io_error(e));
        }
        let compressed = encoder.get_mut();
        if !compressed.is_empty() {
            out.append(&self.path, compressed)?;
            compressed.clear();
        }
        Ok(())
    }

    /// Writes the header and the lines held before it, once `preceding` lines are in (or at the
    /// end of the source, whatever came).
    fn release(
        &mut self,
        out: &mut dyn crate::face::Output,
        at_end: bool,
    ) -> Result<(), WriteError> {
        if self.streaming || (!at_end && self.lines.len() < self.preceding) {
            return Ok(());
        }
        let mut lines = std::mem::take(&mut self.lines);
        lines.insert(
            self.preceding.min(lines.len()),
            std::mem::take(&mut self.header),
        );
        self.emit(out, &join_lines(&lines))?;
        self.streaming = true;
        Ok(())
    }

    /// Writes one line (`line` ends with its newline), or holds it until the header is out.
    fn line(&mut self, out: &mut dyn crate::face::Output, line: &[u8]) -> Result<(), WriteError> {
        if self.streaming {
            return self.emit(out, line);
        }
        self.lines.push(line[..line.len() - 1].to_vec());
        self.release(out, false)
    }

    /// Writes what is held and ends an archive's zstd stream.
    fn finish(&mut self, out: &mut dyn crate::face::Output) -> Result<(), WriteError> {
        self.release(out, true)?;
        if let Some(encoder) = self.encoder.take() {
            let rest = encoder.finish().map_err(|e| self.io_error(e))?;
            if !rest.is_empty() {
                out.append(&self.path, &rest)?;
            }
        }
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

/// Writes a line in the envelope: `timestamp` (when the reader took it), the envelope's other
/// fields, and the payload after `type`, where Codex writes it; the keys fall as successive
/// `Map::insert`s of those would place them.
fn write_wrapped<E>(
    out: &mut Vec<u8>,
    envelope: &Map<String, Value>,
    timestamp: Option<&str>,
    payload: impl FnOnce(&mut Vec<u8>) -> Result<(), E>,
) -> Result<(), E> {
    enum Slot<'a> {
        Str(&'a str),
        Value(&'a Value),
        Payload,
    }
    fn set<'a>(slots: &mut Vec<(&'a str, Slot<'a>)>, key: &'a str, slot: Slot<'a>) {
        match slots.iter_mut().find(|(k, _)| *k == key) {
            Some(entry) => entry.1 = slot,
            None => slots.push((key, slot)),
        }
    }
    let mut slots: Vec<(&str, Slot<'_>)> = Vec::with_capacity(envelope.len() + 2);
    if let Some(ts) = timestamp {
        set(&mut slots, "timestamp", Slot::Str(ts));
    }
    let mut placed = false;
    for (k, v) in envelope {
        set(&mut slots, k, Slot::Value(v));
        if k == "type" && !std::mem::replace(&mut placed, true) {
            set(&mut slots, "payload", Slot::Payload);
        }
    }
    if !placed {
        set(&mut slots, "payload", Slot::Payload);
    }
    let mut payload = Some(payload);
    out.push(b'{');
    for (i, (k, slot)) in slots.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        jsonl::write_str(out, k);
        out.push(b':');
        match slot {
            Slot::Str(s) => jsonl::write_str(out, s),
            Slot::Value(v) => jsonl::write_value(out, v),
            Slot::Payload => {
                if let Some(write) = payload.take() {
                    write(out)?;
                }
            }
        }
    }
    out.push(b'}');
    Ok(())
}

/// The stored payload leftovers of a session or message.
fn payload<'a>(options: &'a Options, id: &SessionId) -> Result<&'a Map<String, Value>, WriteError> {
    option(options, "source", keys::PAYLOAD)
        .and_then(Value::as_object)
        .ok_or_else(|| {
            unrepresentable(
                id,
                "no options.source.payload: not read from a Codex rollout",
            )
        })
}

/// The `session_meta` (or G0 header) line of a session.
fn header_line(session: &Session) -> Result<Vec<u8>, WriteError> {
    let payload = payload(&session.options, &session.id)?;
    let taken = taken(&session.options);
    let mut values = Vec::with_capacity(taken.len());
    for &key in &taken {
        values.push(match key {
            "id" => session.id.as_str(),
            "cwd" => session.project.as_str(),
            "timestamp" => session.created_at.as_str(),
            other => {
                return Err(unrepresentable(
                    &session.id,
                    format!("unknown taken field `{other}`"),
                ));
            }
        });
    }
    let write_payload = |out: &mut Vec<u8>| {
        jsonl::write_object(out, payload, &taken, |out, i| {
            jsonl::write_str(out, values[i]);
            Ok::<(), WriteError>(())
        })
    };
    let mut line = Vec::new();
    match option(&session.options, "source", keys::ENVELOPE) {
        Some(Value::Object(envelope)) => write_wrapped(&mut line, envelope, None, write_payload)?,
        _ => write_payload(&mut line)?,
    }
    Ok(line)
}

/// The content item fields a part kept (`type`, `detail`, `annotations`, ...).
fn source_item<'a>(options: &'a Options, empty: &'a Map<String, Value>) -> &'a Map<String, Value> {
    option(options, "source", keys::ITEM)
        .and_then(Value::as_object)
        .unwrap_or(empty)
}

fn flag(options: &Options, key: &str) -> bool {
    option(options, "pond", key).and_then(Value::as_bool) == Some(true)
}

/// Writes an item: its kept fields, then `key` with the string `value`.
fn write_item(out: &mut Vec<u8>, fields: &Map<String, Value>, key: &str, value: &str) {
    let _ = jsonl::write_object(out, fields, &[key], |out, _| {
        jsonl::write_str(out, value);
        Ok::<(), ()>(())
    });
}

/// A `message` content array from text and file parts; split text is joined back
/// (spec 6.5 rule 1: re-concatenated in ordinal order).
fn write_content_items(out: &mut Vec<u8>, parts: &[PartRef<'_>]) {
    let empty = Map::new();
    // (kept fields, key, value) of each item.
    let mut items: Vec<(&Map<String, Value>, &str, Cow<'_, str>)> = Vec::new();
    for part in parts {
        match part {
            PartRef::Text(t) => {
                if flag(&t.options, keys::CONTINUES)
                    && let Some((_, "text", text)) = items.last_mut()
                {
                    text.to_mut().push_str(t.text.as_str());
                    continue;
                }
                let fields = source_item(&t.options, &empty);
                items.push((fields, "text", Cow::Borrowed(t.text.as_str())));
            }
            PartRef::File(f) => {
                let fields = source_item(&f.options, &empty);
                let data_url = option(&f.options, "pond", keys::IMAGE_URL).and_then(Value::as_str)
                    == Some("data_url");
                let url = match &f.data {
                    FileData::Base64(data) if data_url => {
                        Cow::Owned(format!("data:{};base64,{data}", f.media_type.as_str()))
                    }
                    FileData::Base64(data) => Cow::Borrowed(data.as_str()),
                    FileData::Url(url) => Cow::Borrowed(url.as_str()),
                };
                items.push((fields, "image_url", url));
            }
            _ => {}
        }
    }
    out.push(b'[');
    for (i, (fields, key, value)) in items.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_item(out, fields, key, value);
    }
    out.push(b']');
}

/// A reasoning `summary` or `content` array from the reasoning parts read from it.
fn write_reasoning_items(out: &mut Vec<u8>, parts: &[PartRef<'_>], field: &str) {
    let empty = Map::new();
    out.push(b'[');
    let mut first = true;
    for part in parts {
        if let PartRef::Reasoning(r) = part
            && option(&r.options, "pond", keys::REASONING_FIELD).and_then(Value::as_str)
                == Some(field)
        {
            if !std::mem::take(&mut first) {
                out.push(b',');
            }
            write_item(
                out,
                source_item(&r.options, &empty),
                "text",
                r.text.as_str(),
            );
        }
    }
    out.push(b']');
}

/// Writes the value of one taken payload field, from the message's parts; `None` (with nothing
/// written) when no part holds it.
fn write_taken(
    out: &mut Vec<u8>,
    key: &str,
    kind: &str,
    payload: &Map<String, Value>,
    message: &Message,
    parts: &[PartRef<'_>],
) -> Option<()> {
    let call = parts.iter().find_map(|p| match p {
        PartRef::ToolCall(c) => Some(*c),
        _ => None,
    });
    let result = parts.iter().find_map(|p| match p {
        PartRef::ToolResult(r) => Some(*r),
        _ => None,
    });
    match (key, kind) {
        ("role", _) => jsonl::write_str(out, message.role()),
        ("content", "message") => write_content_items(out, parts),
        ("summary" | "content", "reasoning") => write_reasoning_items(out, parts, key),
        ("call_id" | "id", _) => match (call, result) {
            (Some(c), _) => jsonl::write_str(out, c.call_id.as_str()),
            (None, Some(r)) => jsonl::write_str(out, r.call_id.as_str()),
            _ => return None,
        },
        ("name", _) => {
            let name = match (call, result) {
                (Some(c), _) => c.name.as_str(),
                (None, Some(r)) => r.name.as_ref()?.as_str(),
                _ => return None,
            };
            // The canonical name carries the item's `namespace`, which the payload still holds.
            let namespace = payload
                .get("namespace")
                .and_then(Value::as_str)
                .filter(|n| !n.is_empty());
            let name = match namespace {
                Some(namespace) => name
                    .strip_prefix(namespace)
                    .and_then(|rest| rest.strip_prefix(super::items::NAMESPACE_JOIN))?,
                None => name,
            };
            jsonl::write_str(out, name)
        }
        ("arguments", _) => {
            let call = call?;
            match option(&call.options, "source", keys::ARGUMENTS) {
                Some(exact) => jsonl::write_value(out, exact),
                None if flag(&call.options, keys::ARGUMENTS_NOT_JSON) => {
                    jsonl::write_value(out, call.params.as_value())
                }
                None => {
                    // The arguments string is the parameters as compact JSON text.
                    let mut text = Vec::new();
                    jsonl::write_value(&mut text, call.params.as_value());
                    jsonl::write_str(out, std::str::from_utf8(&text).ok()?);
                }
            }
        }
        ("input" | "action", _) => jsonl::write_value(out, call?.params.as_value()),
        ("output", _) => jsonl::write_json(out, &result?.result),
        _ => return None,
    }
    Some(())
}

/// Writes the rollout line of a message (no newline).
fn write_message_line(out: &mut Vec<u8>, message: &Message) -> Result<(), WriteError> {
    let session = message.session_id();
    if let Message::System(system) = message {
        let record = system.carried_record().ok_or_else(|| {
            unrepresentable(
                session,
                "a system message with text is no Codex rollout line",
            )
        })?;
        jsonl::write_value_map(out, record);
        return Ok(());
    }
    let options = message.options();
    let payload = payload(options, session)?;
    let kind = payload
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default();
    // Borrowed: cloning the parts (tool outputs and all) would copy what is written anyway.
    let parts = message.part_refs();
    let taken = taken(options);
    let write_payload = |out: &mut Vec<u8>| {
        jsonl::write_object(out, payload, &taken, |out, i| {
            let key = taken[i];
            write_taken(out, key, kind, payload, message, &parts).ok_or_else(|| {
                unrepresentable(
                    session,
                    format!(
                        "message {}: no part holds the `{key}` of its `{kind}`",
                        message.id()
                    ),
                )
            })
        })
    };
    let timestamp =
        (!flag(options, keys::TIMESTAMP_FALLBACK)).then(|| message.timestamp().as_str());
    match option(options, "source", keys::ENVELOPE) {
        Some(Value::Object(envelope)) => write_wrapped(out, envelope, timestamp, write_payload),
        _ => write_payload(out),
    }
}

impl SessionWriter for RolloutWriter {
    fn option_keys(&self) -> Option<&'static [&'static str]> {
        Some(super::foreign::OPTION_KEYS)
    }

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
        let encoder = if path.ends_with(COMPRESSED_SUFFIX) {
            let encoder = zstd::stream::write::Encoder::new(Vec::new(), super::archive::LEVEL)
                .map_err(|error| WriteError::Io {
                    path: path.clone(),
                    error,
                })?;
            Some(encoder)
        } else {
            None
        };
        self.files.push(RolloutFile {
            session: session.id.clone(),
            uuid,
            path,
            header: header_line(session)?,
            preceding,
            lines: Vec::new(),
            streaming: false,
            encoder,
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
        let file = self
            .files
            .iter_mut()
            .rev()
            .find(|f| &f.session == message.session_id())
            .ok_or_else(|| unrepresentable(message.session_id(), "a message before its session"))?;
        let line = &mut self.line;
        line.clear();
        write_message_line(line, message)?;
        line.push(b'\n');
        file.line(target.out, line)
    }

    fn carried(
        &mut self,
        carried: &CarriedLine<'_>,
        target: &mut Target<'_>,
    ) -> Result<(), WriteError> {
        let session = carried.session_id();
        let native = self.files.iter_mut().rev().find(|f| &f.session == session);
        match native {
            // adapter-native-restore-lossless: the carried record is its line, as the source has it.
            Some(file) if !self.foreign.iter().any(|f| f.source == session.as_str()) => {
                self.line.clear();
                self.line.extend_from_slice(carried.line().as_bytes());
                self.line.push(b'\n');
                file.line(target.out, &self.line)
            }
            // A foreign rollout drops a carrier (`harness_record`): once the first is reported,
            // the rest are counted without building their messages.
            _ if self.foreign.iter().any(|f| f.source == session.as_str())
                && target.losses.count_again(foreign::loss::HARNESS_RECORD) =>
            {
                Ok(())
            }
            _ => self.message(&carried.message(), target),
        }
    }

    fn end_source(&mut self, target: &mut Target<'_>) -> Result<(), WriteError> {
        for rollout in std::mem::take(&mut self.foreign) {
            rollout.finish(target)?;
        }
        for mut file in std::mem::take(&mut self.files) {
            file.finish(target.out)?;
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

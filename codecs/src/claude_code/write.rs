//! The Claude Code write face.
//!
//! Native write (adapter-native-restore-lossless) rebuilds each source line from its message:
//! the envelope and `message` leftovers from options, the typed fields (timestamp, text, tool
//! calls and results, reasoning, files) from the message and its parts, opaque blocks at their
//! indices, and a carried record whole. Lines go to the session's `options.source.path` in the
//! order the messages arrive, which is file order, so inline sidechains land back between the
//! trunk's lines. A sub-agent's `.meta.json` sidecar is written from `options.source.sidecar`.
//!
//! With [`Layout::Harness`] a native session goes to `<encoded cwd>/<file name>` (a sub-agent to
//! `<encoded cwd>/<session id>/subagents/<file name>`), where `claude --resume` finds it.
//!
//! Foreign write (a session from another harness) is in [`super::foreign`].

use super::foreign::ForeignWriter;
use super::naming::{encode_cwd, resume_command};
use crate::face::{
    CarriedLine, Fidelity, Layout, ReasoningLine, SessionWriter, Target, WriteError, WriteFace,
    Written,
};
use crate::jsonl;
use pond_canonical::{FileData, Message, Options, PartRef, Session};
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::collections::HashMap;

/// Makes [`ClaudeCodeWriter`]s.
pub struct ClaudeCodeWriteFace;

impl WriteFace for ClaudeCodeWriteFace {
    fn writer(&self, layout: Layout) -> Box<dyn SessionWriter> {
        Box::new(ClaudeCodeWriter {
            layout,
            paths: HashMap::new(),
            foreign: ForeignWriter::default(),
            line: Vec::new(),
        })
    }
}

/// Writes sessions as Claude Code transcript files.
pub struct ClaudeCodeWriter {
    layout: Layout,
    /// The relative file path of every native session announced in the current source.
    paths: HashMap<String, String>,
    /// Foreign sessions, written as their lines become final.
    foreign: ForeignWriter,
    /// The line being written, its allocation kept from message to message.
    line: Vec<u8>,
}

/// Where a native file goes under [`Layout::Harness`]: the project folder Claude Code derives
/// from the cwd, then the file's own name, keeping a nested sub-agent's `<sid>/subagents/` part.
fn harness_path(project: &str, source_path: &str) -> String {
    let parts: Vec<&str> = source_path.split(['/', '\\']).collect();
    let keep = match parts.as_slice() {
        [.., sid, "subagents", _] if !sid.is_empty() => 3,
        _ => 1,
    };
    let tail = parts[parts.len().saturating_sub(keep)..].join("/");
    format!("{}/{tail}", encode_cwd(project))
}

impl SessionWriter for ClaudeCodeWriter {
    fn option_keys(&self) -> Option<&'static [&'static str]> {
        Some(super::foreign::OPTION_KEYS)
    }

    /// Claude Code holds no unsigned reasoning: such a message is only counted
    /// ([`ForeignWriter::reasoning`](super::foreign::ForeignWriter::reasoning)).
    fn takes_reasoning_lines(&self) -> bool {
        true
    }

    fn reasoning(
        &mut self,
        line: &ReasoningLine<'_>,
        target: &mut Target<'_>,
    ) -> Result<(), WriteError> {
        if self.foreign.holds(line.session_id().as_str()) {
            return self.foreign.reasoning(line, target);
        }
        self.message(&line.message(), target)
    }

    fn session(
        &mut self,
        session: &Session,
        fidelity: Fidelity,
        target: &mut Target<'_>,
    ) -> Result<(), WriteError> {
        let refuse = |reason: &str| WriteError::Unrepresentable {
            session: session.id.to_string(),
            reason: reason.to_owned(),
        };
        if fidelity == Fidelity::Foreign {
            // spec 6.3: a foreign restore is a valid, idiomatic Claude Code session.
            self.foreign.session(session);
            return Ok(());
        }
        let source = session.options.get("source");
        let source_path = source
            .and_then(|s| s.get("path"))
            .and_then(Value::as_str)
            .ok_or_else(|| {
                refuse("options.source.path (the transcript's relative path) is missing")
            })?;
        let place = |p: &str| match self.layout {
            Layout::Mirror => p.to_owned(),
            Layout::Harness => harness_path(session.project.as_str(), p),
        };
        let path = place(source_path);
        if let Some(sidecar) = source.and_then(|s| s.get("sidecar")) {
            let sidecar_path = sidecar
                .get("path")
                .and_then(Value::as_str)
                .map(place)
                .ok_or_else(|| refuse("options.source.sidecar has no path"))?;
            let value = sidecar.get("value").cloned().unwrap_or(Value::Null);
            let bytes = serde_json::to_vec(&value).map_err(|e| refuse(&e.to_string()))?;
            target.out.append(&sidecar_path, &bytes)?;
        }
        // A sub-agent is resumed through its trunk session.
        // Inline sidechains share their trunk's file: one entry per file.
        let resumed = session.parent_session_id.as_ref().unwrap_or(&session.id);
        if !target.written.iter().any(|w| w.file == path) {
            target.written.push(Written {
                source_session: session.id.to_string(),
                session: session.id.to_string(),
                file: path.clone(),
                resume: Some(resume_command(session.project.as_str(), resumed.as_str())),
            });
        }
        self.paths.insert(session.id.to_string(), path);
        Ok(())
    }

    fn message(&mut self, message: &Message, target: &mut Target<'_>) -> Result<(), WriteError> {
        if self.foreign.holds(message.session_id().as_str()) {
            return self.foreign.message(message, target);
        }
        let refuse = |reason: String| WriteError::Unrepresentable {
            session: message.session_id().to_string(),
            reason: format!("message {}: {reason}", message.id()),
        };
        let path = self
            .paths
            .get(message.session_id().as_str())
            .ok_or_else(|| refuse("its session was not written".into()))?;
        let line = &mut self.line;
        line.clear();
        write_record(line, message).map_err(refuse)?;
        line.push(b'\n');
        target.out.append(path, line)
    }

    fn carried(
        &mut self,
        carried: &CarriedLine<'_>,
        target: &mut Target<'_>,
    ) -> Result<(), WriteError> {
        let session = carried.session_id().as_str();
        match self.paths.get(session) {
            // adapter-native-restore-lossless: the carried record is its line, as the source has it.
            Some(path) if !self.foreign.holds(session) => {
                self.line.clear();
                self.line.extend_from_slice(carried.line().as_bytes());
                self.line.push(b'\n');
                target.out.append(path, &self.line)
            }
            _ if self.foreign.holds(session) => self.foreign.carried(carried, target),
            _ => self.message(&carried.message(), target),
        }
    }

    fn end_source(&mut self, target: &mut Target<'_>) -> Result<(), WriteError> {
        self.paths.clear();
        self.foreign.flush(target)
    }
}

fn source_of(options: &Options) -> Option<&Map<String, Value>> {
    options.get("source")?.as_object()
}

/// The source line a message was read from, rebuilt, as JSON text (no newline): the carried
/// record, or the envelope with the message's timestamp and content put back. Written straight
/// from the message; nothing of it is copied into a new value first.
pub(crate) fn write_record(out: &mut Vec<u8>, message: &Message) -> Result<(), String> {
    if let Message::System(m) = message
        && let Some(record) = m.carried_record()
    {
        jsonl::write_value_map(out, record);
        return Ok(());
    }
    let options = message.options();
    let source = source_of(options).ok_or("options.source is missing")?;
    let envelope = source
        .get("envelope")
        .and_then(Value::as_object)
        .ok_or("options.source.envelope is missing")?;
    let anchored = options
        .get("pond")
        .and_then(|p| p.get("timestamp"))
        .is_some();
    let body = match message {
        Message::System(_) => "content",
        _ => "message",
    };
    let anthropic = match message {
        Message::System(_) => None,
        _ => Some(
            options
                .get("anthropic")
                .and_then(Value::as_object)
                .ok_or("options.anthropic (the message object) is missing")?,
        ),
    };
    let keys: &[&str] = if anchored {
        &[body]
    } else {
        &["timestamp", body]
    };
    jsonl::write_object(out, envelope, keys, |out, i| {
        match (keys[i], message, anthropic) {
            ("timestamp", _, _) => jsonl::write_str(out, message.timestamp().as_str()),
            (_, Message::System(m), _) => jsonl::write_str(out, m.content.as_str()),
            (_, _, Some(inner)) => {
                return jsonl::write_object(out, inner, &["content"], |out, _| {
                    write_content(out, message, source)
                });
            }
            _ => unreachable!("a message other than a system message has its anthropic object"),
        }
        Ok(())
    })
}

/// The source line of a message as a JSON value (for tests: what [`write_record`] writes).
#[cfg(test)]
pub(crate) fn native_record(message: &Message) -> Result<Value, String> {
    let mut out = Vec::new();
    write_record(&mut out, message)?;
    serde_json::from_slice(&out).map_err(|e| e.to_string())
}

/// One content block to write, borrowed from the message.
enum Block<'a> {
    /// A bare string in the content array (`block_form: "string"`).
    Bare(Cow<'a, str>),
    /// A text block: its other fields, then `text`.
    Text(&'a Map<String, Value>, Cow<'a, str>),
    /// The block of any other part: its other fields, then the part's own.
    Part(&'a Map<String, Value>, &'a Map<String, Value>, PartRef<'a>),
    /// A block no part holds, kept whole.
    Opaque(&'a Value),
}

/// `message.content` rebuilt from the parts and the opaque blocks.
fn write_content(
    out: &mut Vec<u8>,
    message: &Message,
    source: &Map<String, Value>,
) -> Result<(), String> {
    // Borrowed: cloning the parts (tool inputs and results) would copy what is written anyway.
    let parts = message.part_refs();
    let opaque = source
        .get("opaque_blocks")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    match source.get("content").and_then(Value::as_str) {
        Some("string") => {
            // The split parts re-concatenate to the original string (spec 6.5 rule 1).
            let mut text = Cow::Borrowed("");
            for part in &parts {
                match part {
                    PartRef::Text(p) if text.is_empty() => text = Cow::Borrowed(p.text.as_str()),
                    PartRef::Text(p) => text.to_mut().push_str(p.text.as_str()),
                    other => return Err(format!("a {} part in string content", other.kind())),
                }
            }
            jsonl::write_str(out, &text);
            return Ok(());
        }
        Some("value") => {
            let value = opaque
                .first()
                .and_then(|b| b.get(1))
                .ok_or("the content value is missing")?;
            jsonl::write_value(out, value);
            return Ok(());
        }
        _ => {}
    }
    let empty = Map::new();
    let mut blocks: Vec<(u64, Block<'_>)> = Vec::with_capacity(parts.len() + opaque.len());
    for part in &parts {
        let options = source_of(part.options()).unwrap_or(&empty);
        let index = options
            .get("block")
            .and_then(Value::as_u64)
            .ok_or_else(|| format!("part {} has no options.source.block", part.id()))?;
        if let (PartRef::Text(p), Some((last, block))) = (part, blocks.last_mut())
            && *last == index
        {
            // A later span of a split text block.
            match block {
                Block::Bare(s) | Block::Text(_, s) => s.to_mut().push_str(p.text.as_str()),
                _ => return Err(format!("part {} continues no text block", p.id)),
            }
            continue;
        }
        let fields = options
            .get("fields")
            .and_then(Value::as_object)
            .unwrap_or(&empty);
        let block = match part {
            PartRef::Text(p)
                if options.get("block_form").and_then(Value::as_str) == Some("string") =>
            {
                Block::Bare(Cow::Borrowed(p.text.as_str()))
            }
            PartRef::Text(p) => Block::Text(fields, Cow::Borrowed(p.text.as_str())),
            PartRef::Reasoning(_)
            | PartRef::ToolCall(_)
            | PartRef::ToolResult(_)
            | PartRef::File(_) => Block::Part(fields, options, *part),
            other => return Err(format!("a {} part has no Claude Code form", other.kind())),
        };
        blocks.push((index, block));
    }
    for item in opaque {
        let index = item
            .get(0)
            .and_then(Value::as_u64)
            .ok_or("an opaque block has no index")?;
        let block = item.get(1).ok_or("an opaque block is empty")?;
        blocks.push((index, Block::Opaque(block)));
    }
    blocks.sort_by_key(|(i, _)| *i);
    out.push(b'[');
    for (n, (_, block)) in blocks.iter().enumerate() {
        if n > 0 {
            out.push(b',');
        }
        match block {
            Block::Bare(text) => jsonl::write_str(out, text),
            Block::Text(fields, text) => {
                jsonl::write_object(out, fields, &["text"], |out, _| {
                    jsonl::write_str(out, text);
                    Ok::<(), String>(())
                })?;
            }
            Block::Part(fields, options, part) => write_part(out, fields, options, *part)?,
            Block::Opaque(value) => jsonl::write_value(out, value),
        }
    }
    out.push(b']');
    Ok(())
}

/// The content block of a reasoning, tool call, tool result or file part.
fn write_part(
    out: &mut Vec<u8>,
    fields: &Map<String, Value>,
    options: &Map<String, Value>,
    part: PartRef<'_>,
) -> Result<(), String> {
    let keys: &[&str] = match part {
        PartRef::Reasoning(_) => &["thinking"],
        PartRef::ToolCall(_) => &["id", "name", "input"],
        PartRef::ToolResult(_) => &["tool_use_id", "content"],
        PartRef::File(_) => &["source"],
        other => return Err(format!("a {} part has no Claude Code form", other.kind())),
    };
    jsonl::write_object(out, fields, keys, |out, i| {
        match (part, i) {
            (PartRef::Reasoning(p), _) => jsonl::write_str(out, p.text.as_str()),
            (PartRef::ToolCall(p), 0) => jsonl::write_str(out, p.call_id.as_str()),
            (PartRef::ToolCall(p), 1) => jsonl::write_str(out, p.name.as_str()),
            (PartRef::ToolCall(p), _) => jsonl::write_value(out, p.params.as_value()),
            (PartRef::ToolResult(p), 0) => jsonl::write_str(out, p.call_id.as_str()),
            (PartRef::ToolResult(p), _) => jsonl::write_json(out, &p.result),
            (PartRef::File(p), _) => {
                let empty = Map::new();
                let file_source = options
                    .get("block_source")
                    .and_then(Value::as_object)
                    .unwrap_or(&empty);
                let payload = match &p.data {
                    FileData::Base64(data) => ("data", data.as_str()),
                    FileData::Url(url) => ("url", url.as_str()),
                };
                let keys: &[&str] = if options.get("no_media_type").is_none() {
                    &["media_type", payload.0]
                } else {
                    &[payload.0]
                };
                jsonl::write_object(out, file_source, keys, |out, j| {
                    match keys[j] {
                        "media_type" => jsonl::write_str(out, p.media_type.as_str()),
                        _ => jsonl::write_str(out, payload.1),
                    }
                    Ok::<(), String>(())
                })?;
            }
            _ => unreachable!("keys are chosen by part kind above"),
        }
        Ok(())
    })
}

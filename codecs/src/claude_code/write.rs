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
use crate::face::{Fidelity, Layout, SessionWriter, Target, WriteError, WriteFace, Written};
use pond_canonical::{FileData, Message, Options, PartRef, Session};
use serde_json::{Map, Value};
use std::collections::HashMap;

/// Makes [`ClaudeCodeWriter`]s.
pub struct ClaudeCodeWriteFace;

impl WriteFace for ClaudeCodeWriteFace {
    fn writer(&self, layout: Layout) -> Box<dyn SessionWriter> {
        Box::new(ClaudeCodeWriter {
            layout,
            paths: HashMap::new(),
            foreign: ForeignWriter::default(),
        })
    }
}

/// Writes sessions as Claude Code transcript files.
pub struct ClaudeCodeWriter {
    layout: Layout,
    /// The relative file path of every native session announced in the current source.
    paths: HashMap<String, String>,
    /// Foreign sessions, held until the end of their source.
    foreign: ForeignWriter,
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
            self.foreign.message(message);
            return Ok(());
        }
        let refuse = |reason: String| WriteError::Unrepresentable {
            session: message.session_id().to_string(),
            reason: format!("message {}: {reason}", message.id()),
        };
        let path = self
            .paths
            .get(message.session_id().as_str())
            .ok_or_else(|| refuse("its session was not written".into()))?;
        // A carried record is written as it is, without copying it into a new value first.
        let carried = match message {
            Message::System(m) => m.carried_record(),
            _ => None,
        };
        let mut line = match carried {
            Some(record) => serde_json::to_vec(record),
            None => serde_json::to_vec(&native_record(message).map_err(refuse)?),
        }
        .map_err(|e| refuse(e.to_string()))?;
        line.push(b'\n');
        target.out.append(path, &line)
    }

    fn end_source(&mut self, target: &mut Target<'_>) -> Result<(), WriteError> {
        self.paths.clear();
        self.foreign.flush(target)
    }
}

fn source_of(options: &Options) -> Option<&Map<String, Value>> {
    options.get("source")?.as_object()
}

/// The source line a message was read from, rebuilt.
pub(crate) fn native_record(message: &Message) -> Result<Value, String> {
    if let Message::System(m) = message
        && let Some(record) = m.carried_record()
    {
        return Ok(Value::Object(record.clone()));
    }
    let options = message.options();
    let source = source_of(options).ok_or("options.source is missing")?;
    let mut record = source
        .get("envelope")
        .and_then(Value::as_object)
        .cloned()
        .ok_or("options.source.envelope is missing")?;
    let anchored = options
        .get("pond")
        .and_then(|p| p.get("timestamp"))
        .is_some();
    if !anchored {
        record.insert("timestamp".into(), message.timestamp().as_str().into());
    }
    match message {
        Message::System(m) => {
            record.insert("content".into(), m.content.as_str().into());
        }
        _ => {
            let mut inner = options
                .get("anthropic")
                .and_then(Value::as_object)
                .cloned()
                .ok_or("options.anthropic (the message object) is missing")?;
            inner.insert("content".into(), content(message, source)?);
            record.insert("message".into(), Value::Object(inner));
        }
    }
    Ok(Value::Object(record))
}

/// `message.content` rebuilt from the parts and the opaque blocks.
fn content(message: &Message, source: &Map<String, Value>) -> Result<Value, String> {
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
            let mut text = String::new();
            for part in &parts {
                match part {
                    PartRef::Text(p) => text.push_str(p.text.as_str()),
                    other => return Err(format!("a {} part in string content", other.kind())),
                }
            }
            return Ok(Value::String(text));
        }
        Some("value") => {
            return opaque
                .first()
                .and_then(|b| b.get(1))
                .cloned()
                .ok_or_else(|| "the content value is missing".into());
        }
        _ => {}
    }
    let mut blocks: Vec<(u64, Value)> = Vec::new();
    for part in &parts {
        let empty = Map::new();
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
                Value::String(s) => s.push_str(p.text.as_str()),
                Value::Object(b) => match b.get_mut("text") {
                    Some(Value::String(s)) => s.push_str(p.text.as_str()),
                    _ => return Err(format!("part {} continues no text block", p.id)),
                },
                _ => return Err(format!("part {} continues no text block", p.id)),
            }
            continue;
        }
        let mut fields = options
            .get("fields")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let block = match part {
            PartRef::Text(p)
                if options.get("block_form").and_then(Value::as_str) == Some("string") =>
            {
                Value::String(p.text.as_str().to_owned())
            }
            PartRef::Text(p) => {
                fields.insert("text".into(), p.text.as_str().into());
                Value::Object(fields)
            }
            PartRef::Reasoning(p) => {
                fields.insert("thinking".into(), p.text.as_str().into());
                Value::Object(fields)
            }
            PartRef::ToolCall(p) => {
                fields.insert("id".into(), p.call_id.as_str().into());
                fields.insert("name".into(), p.name.as_str().into());
                fields.insert("input".into(), p.params.as_value().clone());
                Value::Object(fields)
            }
            PartRef::ToolResult(p) => {
                fields.insert("tool_use_id".into(), p.call_id.as_str().into());
                fields.insert("content".into(), p.result.as_value().clone());
                Value::Object(fields)
            }
            PartRef::File(p) => {
                let mut file_source = options
                    .get("block_source")
                    .and_then(Value::as_object)
                    .cloned()
                    .unwrap_or_default();
                if options.get("no_media_type").is_none() {
                    file_source.insert("media_type".into(), p.media_type.as_str().into());
                }
                match &p.data {
                    FileData::Base64(data) => {
                        file_source.insert("data".into(), data.clone().into())
                    }
                    FileData::Url(url) => file_source.insert("url".into(), url.clone().into()),
                };
                fields.insert("source".into(), Value::Object(file_source));
                Value::Object(fields)
            }
            other => return Err(format!("a {} part has no Claude Code form", other.kind())),
        };
        blocks.push((index, block));
    }
    for item in opaque {
        let index = item
            .get(0)
            .and_then(Value::as_u64)
            .ok_or("an opaque block has no index")?;
        let block = item.get(1).cloned().ok_or("an opaque block is empty")?;
        blocks.push((index, block));
    }
    blocks.sort_by_key(|(i, _)| *i);
    Ok(Value::Array(blocks.into_iter().map(|(_, b)| b).collect()))
}

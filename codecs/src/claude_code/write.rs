//! The Claude Code write face.
//!
//! Native write (adapter-native-restore-lossless) rebuilds each source line from its message:
//! the envelope and `message` leftovers from options, the typed fields (timestamp, text, tool
//! calls and results, reasoning, files) from the message and its parts, opaque blocks at their
//! indices, and a carried record whole. Lines go to the session's `options.source.path` in the
//! order the messages arrive, which is file order, so inline sidechains land back between the
//! trunk's lines. A sub-agent's `.meta.json` sidecar is written from `options.source.sidecar`.
//!
//! Foreign write (a session from another harness) is not implemented yet: such a session is
//! refused as [`WriteError::Unrepresentable`], with nothing of it written.

use crate::face::{Fidelity, SessionWriter, Target, WriteError, WriteFace};
use pond_canonical::{FileData, Message, Options, Part, Session};
use serde_json::{Map, Value};
use std::collections::HashMap;

/// Makes [`ClaudeCodeWriter`]s.
pub struct ClaudeCodeWriteFace;

impl WriteFace for ClaudeCodeWriteFace {
    fn writer(&self, _layout: crate::face::Layout) -> Box<dyn SessionWriter> {
        Box::new(ClaudeCodeWriter::default())
    }
}

/// Writes sessions as Claude Code transcript files.
#[derive(Debug, Default)]
pub struct ClaudeCodeWriter {
    /// The relative file path of every session announced in the current source.
    paths: HashMap<String, String>,
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
            return Err(refuse(
                "writing a session from another harness as Claude Code is not implemented yet",
            ));
        }
        let source = session.options.get("source");
        let path = source
            .and_then(|s| s.get("path"))
            .and_then(Value::as_str)
            .ok_or_else(|| {
                refuse("options.source.path (the transcript's relative path) is missing")
            })?;
        if let Some(sidecar) = source.and_then(|s| s.get("sidecar")) {
            let sidecar_path = sidecar
                .get("path")
                .and_then(Value::as_str)
                .ok_or_else(|| refuse("options.source.sidecar has no path"))?;
            let value = sidecar.get("value").cloned().unwrap_or(Value::Null);
            let bytes = serde_json::to_vec(&value).map_err(|e| refuse(&e.to_string()))?;
            target.out.append(sidecar_path, &bytes)?;
        }
        self.paths.insert(session.id.to_string(), path.to_owned());
        Ok(())
    }

    fn message(&mut self, message: &Message, target: &mut Target<'_>) -> Result<(), WriteError> {
        let refuse = |reason: String| WriteError::Unrepresentable {
            session: message.session_id().to_string(),
            reason: format!("message {}: {reason}", message.id()),
        };
        let path = self
            .paths
            .get(message.session_id().as_str())
            .ok_or_else(|| refuse("its session was not written".into()))?;
        let record = native_record(message).map_err(refuse)?;
        let mut line = serde_json::to_vec(&record).map_err(|e| refuse(e.to_string()))?;
        line.push(b'\n');
        target.out.append(path, &line)
    }

    fn end_source(&mut self, _target: &mut Target<'_>) -> Result<(), WriteError> {
        self.paths.clear();
        Ok(())
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

fn part_options(part: &Part) -> &Options {
    match part {
        Part::Text(p) => &p.options,
        Part::Reasoning(p) => &p.options,
        Part::File(p) => &p.options,
        Part::ToolCall(p) => &p.options,
        Part::ToolResult(p) => &p.options,
        Part::ToolApprovalRequest(p) => &p.options,
        Part::ToolApprovalResponse(p) => &p.options,
    }
}

/// `message.content` rebuilt from the parts and the opaque blocks.
fn content(message: &Message, source: &Map<String, Value>) -> Result<Value, String> {
    let parts = message.parts();
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
                    Part::Text(p) => text.push_str(p.text.as_str()),
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
        let options = source_of(part_options(part)).cloned().unwrap_or_default();
        let index = options
            .get("block")
            .and_then(Value::as_u64)
            .ok_or_else(|| format!("part {} has no options.source.block", part.id()))?;
        if let (Part::Text(p), Some((last, block))) = (part, blocks.last_mut())
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
            Part::Text(p)
                if options.get("block_form").and_then(Value::as_str) == Some("string") =>
            {
                Value::String(p.text.as_str().to_owned())
            }
            Part::Text(p) => {
                fields.insert("text".into(), p.text.as_str().into());
                Value::Object(fields)
            }
            Part::Reasoning(p) => {
                fields.insert("thinking".into(), p.text.as_str().into());
                Value::Object(fields)
            }
            Part::ToolCall(p) => {
                fields.insert("id".into(), p.call_id.as_str().into());
                fields.insert("name".into(), p.name.as_str().into());
                fields.insert("input".into(), p.params.as_value().clone());
                Value::Object(fields)
            }
            Part::ToolResult(p) => {
                fields.insert("tool_use_id".into(), p.call_id.as_str().into());
                fields.insert("content".into(), p.result.as_value().clone());
                Value::Object(fields)
            }
            Part::File(p) => {
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

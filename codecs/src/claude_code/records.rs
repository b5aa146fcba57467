//! Placement of one Claude Code record (one JSONL line) into one canonical message (spec 6.5).
//!
//! * `user` / `assistant` records whose `message.content` is a string or an array become user,
//!   tool (a user record carrying `tool_result` blocks) or assistant messages: content blocks to
//!   typed parts (rule 1), the Anthropic `message` object's other keys to `options.anthropic`,
//!   the envelope's other keys to `options.source.envelope` (rule 2).
//! * `system` records with a string `content` become system messages with that text; the rest of
//!   the record goes to `options.source.envelope` (rule 2).
//! * Every other record (summary, file-history-snapshot, queue-operation, progress, attachment,
//!   custom-title, ..., unknown kinds, and a user/assistant record without a usable `message`) is
//!   carried whole by an empty system message (rule 3, [`SystemMessage::carrier`]).
//!
//! One line is one message: lines that share `message.id` (one API response streamed as several
//! records) stay separate messages, grouped by `options.anthropic.id`, so a native write gives the
//! lines back one for one. Each message records its line in `options.source.line`.
//!
//! The layout of the options written here is the contract with `write.rs`:
//!
//! | where | key | what |
//! |---|---|---|
//! | message | `source.line` | 1-based line in the source file |
//! | message | `source.record_in_line` | for the 2nd, 3rd ... of several records written on one line (`{...}{...}`) |
//! | message | `source.envelope` | the record's fields not placed elsewhere |
//! | message | `source.content` | `"string"` or `"array"`: the form of `message.content` |
//! | message | `source.opaque_blocks` | `[[index, block], ...]`: blocks no part type holds |
//! | message | `source.duplicate_of_line` | the earlier line with the same `uuid` (adapter-integrity-dedup) |
//! | message | `anthropic` | the `message` object without `content` |
//! | message | `pond.timestamp` | `"session_anchor"` when the record has no usable timestamp |
//! | part | `source.block` | index of the content block the part came from |
//! | part | `source.fields` | that block's keys not held by the part (first part of a block) |
//! | part | `source.block_form` | `"string"` for a bare string inside a content array |

use super::provenance;
use pond_canonical::bounded::bounded_object;
use pond_canonical::{
    AssistantMessage, Extracted, FileData, FilePart, Json, Message, MessageId, Options, ParseError,
    ParseErrorKind, Part, PartKey, Provenance, ReasoningPart, Record, SessionId, SystemMessage,
    Text, Timestamp, ToolCallPart, ToolMessage, ToolResultPart, UserMessage, options_ns,
};
use serde_json::{Map, Value};
use std::collections::HashMap;

/// What a record needs from the file it is in.
pub(crate) struct LineContext<'a> {
    /// The session the record belongs to.
    pub session: &'a SessionId,
    /// The session's anchor timestamp, for records that carry none (model-no-synthesis permits
    /// this fallback; the message says so in `options.pond.timestamp`).
    pub anchor: &'a Timestamp,
    /// The earlier line holding the same `uuid`, if any (adapter-integrity-dedup).
    pub duplicate_of: Option<u64>,
    /// Tool names by `tool_use` id, from calls seen earlier in the file.
    pub tool_names: &'a mut HashMap<String, Extracted<String>>,
    /// A foreign write's option keys (`SessionWriter::option_keys`): a turn's envelope is then
    /// kept only where one of them occurs in it, or where it marks a compaction's summary
    /// (`isCompactSummary`, which `face::compact_summary_text` reads). `None`: kept always.
    pub wanted: Option<&'static [&'static str]>,
}

/// How a record is placed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Placement {
    /// Rule 1 + 2: a conversational turn.
    Turn(Role),
    /// Rule 2: a `system` record with text.
    SystemText,
    /// Rule 3: carried whole.
    Carrier,
}

/// The canonical role a turn takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    User,
    Assistant,
    Tool,
}

/// Decides how `record` is placed, without changing it.
pub(crate) fn placement(record: &Record<'_>) -> Placement {
    let kind = record.str("type").map(|t| *t.get());
    match kind {
        Some(kind @ ("user" | "assistant")) => {
            let Some(message) = record.get("message") else {
                return Placement::Carrier;
            };
            let content = message.field("content");
            let role = match content.as_ref().map(|c| *c.get()) {
                Some(Value::String(_)) if kind == "user" => Role::User,
                Some(Value::Array(items)) if kind == "user" => {
                    let has_result = items
                        .iter()
                        .any(|b| b.get("type").and_then(Value::as_str) == Some("tool_result"));
                    if has_result { Role::Tool } else { Role::User }
                }
                Some(Value::String(_) | Value::Array(_)) => Role::Assistant,
                _ => return Placement::Carrier,
            };
            Placement::Turn(role)
        }
        Some("system") if record.str("content").is_some() => Placement::SystemText,
        _ => Placement::Carrier,
    }
}

/// What [`place`] does with `ctx.tool_names` for `record`, done ahead of it, so that the record's
/// mapping can be left to another thread: the calls of an assistant turn's `tool_use` blocks
/// are learned into `names` (in block order, as [`place_block`] learns them), and the names the
/// `tool_result` blocks of a tool turn look up are returned, for that record's own mapping.
pub(crate) fn tool_names_ahead(
    record: &Record<'_>,
    names: &mut HashMap<String, Extracted<String>>,
) -> HashMap<String, Extracted<String>> {
    let names = std::cell::RefCell::new(names);
    tool_names_via(
        record,
        &mut |id, name| {
            names.borrow_mut().insert(id.to_owned(), name.clone());
        },
        &|id| names.borrow().get(id).cloned(),
    )
}

/// [`tool_names_ahead`] with the names kept elsewhere: `learn` is told each call an assistant
/// turn names, in block order; `look` gives the name a tool result's call has where the record
/// stands; the names the record's own mapping looks up are returned.
pub(crate) fn tool_names_via(
    record: &Record<'_>,
    learn: &mut dyn FnMut(&str, &Extracted<String>),
    look: &dyn Fn(&str) -> Option<Extracted<String>>,
) -> HashMap<String, Extracted<String>> {
    let mut wanted = HashMap::new();
    // A turn's `message` is an object with `content` (`placement`); only an array has blocks.
    let Placement::Turn(role) = placement(record) else {
        return wanted;
    };
    let Some(content) = record.pointer("/message/content") else {
        return wanted;
    };
    let Some(blocks) = content.items() else {
        return wanted;
    };
    for block in blocks {
        // A string block, or any other non-object, is text or opaque: no tool part.
        if !block.get().is_object() {
            continue;
        }
        let text = |key: &str| block.field(key).and_then(|v| v.as_str());
        let kind = text("type");
        match (role, kind.as_ref().map_or("", |k| *k.get())) {
            // As `place_block`: an assistant turn accepts tool calls.
            (Role::Assistant, "tool_use" | "server_tool_use") => {
                if let (Some(id), Some(name)) = (text("id"), text("name"))
                    && block.field("input").is_some()
                {
                    learn(id.get(), &name.to_owned());
                }
            }
            // A tool turn accepts tool results.
            (Role::Tool, "tool_result") => {
                if let Some(call) = text("tool_use_id")
                    && block.field("content").is_some()
                    && let Some(name) = look(call.get())
                {
                    wanted.insert((*call.get()).to_owned(), name);
                }
            }
            _ => {}
        }
    }
    wanted
}

/// The message id of a record: its `uuid`, made unique with the line for a repeated uuid, or
/// its position for a record without one (lance-deterministic-pk).
pub(crate) fn message_id(record: &Record<'_>, duplicate_of: Option<u64>) -> MessageId {
    match record.str("uuid").filter(|u| !u.get().is_empty()) {
        Some(uuid) if duplicate_of.is_none() => MessageId::from(uuid),
        Some(uuid) => {
            let position = record.position();
            MessageId::from(
                uuid.to_owned()
                    .derive(|u| format!("{u}@{}", position.get())),
            )
        }
        None => MessageId::from(record.position()),
    }
}

/// The record's own timestamp, or `None` when it has none or an unusable one (then `errors` says
/// why, unless the field is simply absent).
pub(crate) fn record_timestamp(
    record: &Record<'_>,
    errors: &mut Vec<ParseError>,
) -> Option<Timestamp> {
    let value = record.get("timestamp")?;
    let invalid = |reason: String| {
        record.error(ParseErrorKind::InvalidField {
            field: "timestamp".into(),
            reason,
        })
    };
    match value.as_str() {
        Some(text) => match Timestamp::parse(text) {
            Ok(ts) => Some(ts),
            Err(e) => {
                errors.push(invalid(e.to_string()));
                None
            }
        },
        None => {
            errors.push(invalid(format!(
                "expected a string, found {}",
                pond_canonical::seam::json_kind(value.get())
            )));
            None
        }
    }
}

/// Places one record. Faults found on the way (an unusable timestamp) come back with the message;
/// the message is still complete.
pub(crate) fn place(record: Record<'_>, ctx: &mut LineContext<'_>) -> (Message, Vec<ParseError>) {
    let mut errors = Vec::new();
    let (line, record_in_line) = match record.locator() {
        pond_canonical::Locator::Line(n) => (Some(*n), None),
        pond_canonical::Locator::LineRecord { line, record } => (Some(*line), Some(*record)),
        _ => (None, None),
    };
    let id = message_id(&record, ctx.duplicate_of);
    let own_time = record_timestamp(&record, &mut errors);
    let from_anchor = own_time.is_none();
    let timestamp = own_time.unwrap_or_else(|| ctx.anchor.clone());

    let mut message: Message = match placement(&record) {
        Placement::Carrier => {
            // Rule 3: the record whole, timestamp and all.
            SystemMessage::carrier(ctx.session, id, timestamp, record.into_rest()).into()
        }
        Placement::SystemText => {
            let mut record = record;
            match record.take_str("content") {
                Some(content) => {
                    if !from_anchor {
                        record.take("timestamp");
                    }
                    let envelope = bounded_object(record.into_rest());
                    let mut m = SystemMessage::new(ctx.session, id, timestamp, Text::from(content));
                    options_ns(&mut m.options, "source")
                        .insert("envelope".into(), Value::Object(envelope));
                    m.into()
                }
                // placement() saw a string `content`; should it be gone, carry the record whole.
                None => {
                    SystemMessage::carrier(ctx.session, id, timestamp, record.into_rest()).into()
                }
            }
        }
        Placement::Turn(role) => turn(record, role, id, timestamp, from_anchor, ctx),
    };

    let options = message.options_mut();
    let source = options_ns(options, "source");
    if let Some(line) = line {
        source.insert("line".into(), Value::from(line));
    }
    if let Some(record) = record_in_line {
        // One of several records that shared a line; the native write gives it a line of its own.
        source.insert("record_in_line".into(), Value::from(record));
    }
    if let Some(first) = ctx.duplicate_of {
        // adapter-integrity-dedup: the repeated uuid is kept (native write reproduces the line),
        // marked, and counted in the session's `options.source.duplicate_uuids`.
        source.insert("duplicate_of_line".into(), Value::from(first));
    }
    if from_anchor {
        options_ns(options, "pond").insert("timestamp".into(), "session_anchor".into());
    }
    (message, errors)
}

/// The message being built, by role.
enum Turn {
    User(UserMessage),
    Assistant(AssistantMessage),
    Tool(ToolMessage),
}

impl Turn {
    fn key(&self) -> PartKey {
        match self {
            Turn::User(m) => m.part_key(),
            Turn::Assistant(m) => m.part_key(),
            Turn::Tool(m) => m.part_key(),
        }
    }

    /// Whether this role's allowlist (spec 4.6) admits a part of `kind`.
    fn accepts(&self, kind: &str) -> bool {
        match self {
            Turn::User(_) => matches!(kind, "text" | "file"),
            Turn::Assistant(_) => matches!(kind, "text" | "file" | "reasoning" | "tool_call"),
            Turn::Tool(_) => kind == "tool_result",
        }
    }

    /// Appends a part. Callers check [`accepts`](Self::accepts) first; a part the role still
    /// refuses is kept in `options.source.unplaced_parts` rather than dropped
    /// (adapter-integrity-no-silent-drops).
    fn push(&mut self, part: Part) {
        let refused = match self {
            Turn::User(m) => pond_canonical::UserPart::try_from(part).map(|p| m.push(p)),
            Turn::Assistant(m) => pond_canonical::AssistantPart::try_from(part).map(|p| m.push(p)),
            Turn::Tool(m) => pond_canonical::ToolPart::try_from(part).map(|p| m.push(p)),
        };
        if let Err(part) = refused {
            let value = serde_json::to_value(&part).unwrap_or(Value::Null);
            let source = options_ns(self.options_mut(), "source");
            let slot = source
                .entry("unplaced_parts")
                .or_insert_with(|| Value::Array(Vec::new()));
            if let Value::Array(items) = slot {
                items.push(value);
            }
        }
    }

    fn options_mut(&mut self) -> &mut Options {
        match self {
            Turn::User(m) => &mut m.options,
            Turn::Assistant(m) => &mut m.options,
            Turn::Tool(m) => &mut m.options,
        }
    }

    fn into_message(self) -> Message {
        match self {
            Turn::User(m) => m.into(),
            Turn::Assistant(m) => m.into(),
            Turn::Tool(m) => m.into(),
        }
    }
}

/// Rules 1 and 2 for a user or assistant record.
fn turn(
    mut record: Record<'_>,
    role: Role,
    id: MessageId,
    timestamp: Timestamp,
    from_anchor: bool,
    ctx: &mut LineContext<'_>,
) -> Message {
    let flag = |key: &str| {
        record
            .get(key)
            .and_then(|v| v.as_bool())
            .is_some_and(|b| *b.get())
    };
    // model-part-provenance: what the harness wrote in a turn's slot is injected.
    let meta = flag("isMeta") || flag("isCompactSummary") || flag("isVisibleInTranscriptOnly");
    let synthetic = flag("isApiErrorMessage")
        || record
            .pointer("/message/model")
            .and_then(|m| m.as_str())
            .is_some_and(|m| *m.get() == "<synthetic>");

    if !from_anchor {
        record.take("timestamp");
    }
    let mut built = match role {
        Role::User => Turn::User(UserMessage::new(ctx.session, id, timestamp)),
        Role::Assistant => Turn::Assistant(AssistantMessage::new(ctx.session, id, timestamp)),
        Role::Tool => Turn::Tool(ToolMessage::new(ctx.session, id, timestamp)),
    };
    let text_provenance = |text: &str| -> Vec<provenance::Span> {
        match role {
            Role::User if !meta => provenance::split(text),
            Role::Assistant if !synthetic => whole(text, Provenance::Conversational),
            _ => whole(text, Provenance::Injected),
        }
    };
    let turn_provenance = if meta || synthetic {
        Provenance::Injected
    } else {
        Provenance::Conversational
    };

    let mut opaque: Vec<Value> = Vec::new();
    let mut anthropic = Map::new();
    let mut form = "array";
    if let Some(message) = record.take("message") {
        match message.into_object() {
            Ok(mut message) => {
                match message.take("content").map(Extracted::into_string) {
                    Some(Ok(text)) => {
                        form = "string";
                        push_text(&mut built, &text, None, None, &text_provenance);
                    }
                    Some(Err(items)) => match items.into_items() {
                        Ok(items) => {
                            for (index, block) in items.into_iter().enumerate() {
                                place_block(
                                    &mut built,
                                    index,
                                    block,
                                    &text_provenance,
                                    turn_provenance,
                                    ctx,
                                    &mut opaque,
                                );
                            }
                        }
                        // placement() checked the content is a string or an array; any other
                        // value is kept whole.
                        Err(other) => {
                            form = "value";
                            opaque.push(Value::from(vec![
                                Value::Null,
                                Json::from(other).into_value(),
                            ]));
                        }
                    },
                    None => {}
                }
                anthropic = bounded_object(message);
            }
            Err(other) => {
                // placement() checked `message` is an object; keep it anyway.
                anthropic.insert("pond_not_an_object".into(), Json::from(other).into_value());
            }
        }
    }
    // A foreign writer reads of a turn's envelope only its keys and a summary's mark.
    let keep = ctx.wanted.is_none_or(|keys| {
        record.get("isCompactSummary").is_some() || crate::discover::rest_names_any(&record, keys)
    });
    let options = built.options_mut();
    let source = options_ns(options, "source");
    if keep {
        let envelope = bounded_object(record.into_rest());
        source.insert("envelope".into(), Value::Object(envelope));
    }
    source.insert("content".into(), form.into());
    if !opaque.is_empty() {
        source.insert("opaque_blocks".into(), Value::Array(opaque));
    }
    options.insert("anthropic".into(), Value::Object(anthropic));
    built.into_message()
}

fn whole(text: &str, provenance: Provenance) -> Vec<provenance::Span> {
    vec![provenance::Span {
        range: 0..text.len(),
        provenance,
    }]
}

/// Pushes the text parts of one string, split by provenance. `block` is the content-block index
/// (none for string content), `fields` the block's other keys (given to the first part only).
fn push_text(
    built: &mut Turn,
    text: &Extracted<String>,
    block: Option<(usize, &'static str)>,
    fields: Option<Map<String, Value>>,
    provenance_of: &dyn Fn(&str) -> Vec<provenance::Span>,
) {
    let mut fields = fields;
    for span in provenance_of(text.get()) {
        // model-part-provenance: a split at exact byte boundaries; the spans re-concatenate.
        let piece = text.as_ref().derive(|t| t[span.range.clone()].to_owned());
        let mut part =
            pond_canonical::TextPart::new(built.key(), span.provenance, Text::from(piece));
        mark_block(&mut part.options, block, fields.take());
        built.push(Part::Text(part));
    }
}

fn mark_block(
    options: &mut Options,
    block: Option<(usize, &'static str)>,
    fields: Option<Map<String, Value>>,
) {
    let Some((index, form)) = block else {
        return;
    };
    let source = options_ns(options, "source");
    source.insert("block".into(), Value::from(index));
    if form == "string" {
        source.insert("block_form".into(), "string".into());
    }
    if let Some(fields) = fields {
        source.insert("fields".into(), Value::Object(fields));
    }
}

/// Whether `map` has a string at `key`.
fn has_str(map: &Extracted<Map<String, Value>>, key: &str) -> bool {
    map.field(key).and_then(|v| v.as_str()).is_some()
}

/// Rule 1 for one content block; a block no part type of this role holds goes to
/// `opaque` whole, with its index, so nothing is dropped (model-lossless-projection).
fn place_block(
    built: &mut Turn,
    index: usize,
    block: Extracted<Value>,
    text_provenance: &dyn Fn(&str) -> Vec<provenance::Span>,
    turn_provenance: Provenance,
    ctx: &mut LineContext<'_>,
    opaque: &mut Vec<Value>,
) {
    let block = match block.into_string() {
        Ok(text) if built.accepts("text") => {
            push_text(built, &text, Some((index, "string")), None, text_provenance);
            return;
        }
        Ok(text) => {
            opaque.push(Value::from(vec![
                Value::from(index),
                Value::from(text.into_inner()),
            ]));
            return;
        }
        Err(block) => block,
    };
    let mut map = match block.into_object() {
        Ok(map) => map,
        Err(other) => {
            opaque.push(Value::from(vec![
                Value::from(index),
                Json::from(other).into_value(),
            ]));
            return;
        }
    };
    let kind = map
        .field("type")
        .and_then(|t| t.as_str())
        .map(|t| (*t.get()).to_owned())
        .unwrap_or_default();
    let key = built.key();
    let part: Option<Part> = match kind.as_str() {
        "text" if built.accepts("text") && has_str(&map, "text") => {
            if let Some(Ok(text)) = map.take("text").map(Extracted::into_string) {
                let fields = bounded_object(map);
                push_text(
                    built,
                    &text,
                    Some((index, "object")),
                    Some(fields),
                    text_provenance,
                );
            }
            return;
        }
        "thinking" if built.accepts("reasoning") && has_str(&map, "thinking") => {
            let text = map.take("thinking").and_then(|t| t.into_string().ok());
            text.map(|t| Part::Reasoning(ReasoningPart::new(key, turn_provenance, Text::from(t))))
        }
        "tool_use" | "server_tool_use"
            if built.accepts("tool_call")
                && has_str(&map, "id")
                && has_str(&map, "name")
                && map.field("input").is_some() =>
        {
            let id = map.take("id").and_then(|v| v.into_string().ok());
            let name = map.take("name").and_then(|v| v.into_string().ok());
            let input = map.take("input");
            match (id, name, input) {
                (Some(id), Some(name), Some(input)) => {
                    ctx.tool_names.insert(id.get().clone(), name.clone());
                    let provider_executed = kind == "server_tool_use";
                    Some(Part::ToolCall(ToolCallPart::new(
                        key,
                        turn_provenance,
                        Text::from(id),
                        Text::from(name),
                        Json::from(input),
                        provider_executed,
                    )))
                }
                _ => None,
            }
        }
        "tool_result"
            if built.accepts("tool_result")
                && has_str(&map, "tool_use_id")
                && map.field("content").is_some() =>
        {
            // model-no-synthesis permits a failure flag defaulting to false; `is_error` itself
            // stays in the block's fields, so its absence survives too.
            let is_failure = map
                .field("is_error")
                .and_then(|v| v.as_bool())
                .is_some_and(|b| *b.get());
            let call = map.take("tool_use_id").and_then(|v| v.into_string().ok());
            let content = map.take("content");
            match (call, content) {
                (Some(call), Some(content)) => {
                    let name = ctx.tool_names.get(call.get()).cloned().map(Text::from);
                    // Tool output is harness-produced (model-part-provenance).
                    Some(Part::ToolResult(ToolResultPart::new(
                        key,
                        Provenance::Injected,
                        Text::from(call),
                        name,
                        is_failure,
                        Json::from(content),
                    )))
                }
                _ => None,
            }
        }
        "image" | "document" if built.accepts("file") => {
            file_part(&mut map, key, turn_provenance).map(Part::File)
        }
        _ => None,
    };
    match part {
        Some(mut part) => {
            let fields = bounded_object(map);
            mark_block(
                part_options(&mut part),
                Some((index, "object")),
                Some(fields),
            );
            built.push(part);
        }
        None => {
            let block = map.into_value();
            opaque.push(Value::from(vec![
                Value::from(index),
                Json::from(block).into_value(),
            ]));
        }
    }
}

/// An `image` or `document` block with a base64 or URL source; `None` (and `map` unchanged)
/// for any other shape.
fn file_part(
    map: &mut Extracted<Map<String, Value>>,
    key: PartKey,
    provenance: Provenance,
) -> Option<FilePart> {
    let source = map.field("source")?;
    let kind = source.field("type")?.as_str()?;
    let payload_key = match *kind.get() {
        "base64" => "data",
        "url" => "url",
        _ => return None,
    };
    source.field(payload_key)?.as_str()?;
    let media = source.field("media_type");
    if media.as_ref().is_some_and(|m| m.as_str().is_none())
        || (payload_key == "data" && media.is_none())
    {
        return None;
    }
    let mut source = map.take("source")?;
    let payload = source.take(payload_key)?.into_string().ok()?;
    let (media_type, absent) = match source.take("media_type").map(Extracted::into_string) {
        Some(Ok(m)) => (Text::from(m), false),
        // model-no-synthesis permits a generic MIME type for a source that names none; the
        // absence is recorded in `options.source.no_media_type`. (A non-string was ruled out
        // above.)
        _ => (Text::generic_media_type(), true),
    };
    let data = if payload_key == "data" {
        FileData::base64(payload)
    } else {
        FileData::url(payload)
    };
    let mut part = FilePart::new(key, provenance, media_type, None, data);
    let options = options_ns(&mut part.options, "source");
    options.insert("block_source".into(), Json::from(source).into_value());
    if absent {
        options.insert("no_media_type".into(), true.into());
    }
    Some(part)
}

fn part_options(part: &mut Part) -> &mut Options {
    match part {
        Part::Text(p) => &mut p.options,
        Part::Reasoning(p) => &mut p.options,
        Part::File(p) => &mut p.options,
        Part::ToolCall(p) => &mut p.options,
        Part::ToolResult(p) => &mut p.options,
        Part::ToolApprovalRequest(p) => &mut p.options,
        Part::ToolApprovalResponse(p) => &mut p.options,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pond_canonical::Origin;

    /// Places each line of `lines` into one session and checks it writes back value-equal.
    fn place_lines(lines: &[&str]) -> Vec<Message> {
        let origin = Origin::new("claude-code", "/t/s.jsonl", "s.jsonl");
        let session = SessionId::from(origin.file_stem().expect("stem"));
        let anchor =
            Timestamp::parse(origin.relative().derive(|_| "2026-01-01T00:00:00Z")).expect("anchor");
        let mut tool_names = HashMap::new();
        let mut out = Vec::new();
        for (i, line) in lines.iter().enumerate() {
            let record = Record::from_json_line(&origin, i as u64 + 1, line.as_bytes()).unwrap();
            let mut ctx = LineContext {
                session: &session,
                anchor: &anchor,
                duplicate_of: None,
                tool_names: &mut tool_names,
                wanted: None,
            };
            let (message, errors) = place(record, &mut ctx);
            assert!(errors.is_empty(), "{errors:?}");
            let written = super::super::write::native_record(&message).expect("writes");
            let original: Value = serde_json::from_str(line).unwrap();
            assert_eq!(written, original, "line {} round trip", i + 1);
            out.push(message);
        }
        out
    }

    fn parts(m: &Message) -> Vec<(String, Provenance)> {
        m.parts()
            .iter()
            .map(|p| {
                let what = match p {
                    Part::Text(t) => format!("text:{}", t.text.as_str()),
                    Part::ToolResult(r) => format!(
                        "result:{}:{}",
                        r.call_id.as_str(),
                        r.name.as_ref().map_or("", |n| n.as_str())
                    ),
                    other => other.kind().to_owned(),
                };
                (what, p.provenance())
            })
            .collect()
    }

    #[test]
    fn records_that_are_no_message_are_carried_whole() {
        let m = place_lines(&[
            r#"{"type":"summary","summary":"Fixing","leafUuid":"x"}"#,
            r#"{"type":"progress","data":{"type":"hook_progress"},"uuid":"p1","timestamp":"2026-01-01T00:00:01Z"}"#,
            r#"{"type":"user","message":"error","uuid":"u9"}"#,
            r#"{"type":"brand-new-kind","x":[1,2]}"#,
        ]);
        for message in &m {
            let Message::System(s) = message else {
                panic!("{message:?}")
            };
            assert!(s.carried_record().is_some() && s.content.is_empty());
        }
        assert_eq!(m[0].options()["pond"]["timestamp"], "session_anchor");
        assert_eq!(m[1].timestamp().as_str(), "2026-01-01T00:00:01Z");
        assert_eq!(m[1].id().as_str(), "p1");
        assert_eq!(m[0].id().as_str(), "L1");
    }

    #[test]
    fn fused_user_text_splits_and_tool_results_take_the_call_name() {
        let m = place_lines(&[
            r#"{"type":"user","message":{"role":"user","content":"<system-reminder>r</system-reminder>\nhello"},"uuid":"u1","timestamp":"2026-01-01T00:00:01Z","cwd":"/p"}"#,
            r#"{"type":"assistant","message":{"id":"m1","role":"assistant","model":"x","content":[{"type":"thinking","thinking":"hm","signature":"sig"},{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"},"caller":{"type":"direct"}},{"type":"redacted_thinking","data":"zz"}]},"uuid":"a1","timestamp":"2026-01-01T00:00:02Z"}"#,
            r#"{"type":"user","message":{"role":"user","content":[{"tool_use_id":"t1","type":"tool_result","content":"ok","is_error":false}]},"toolUseResult":{"stdout":"ok"},"uuid":"u2","timestamp":"2026-01-01T00:00:03Z"}"#,
            r#"{"type":"user","isMeta":true,"message":{"role":"user","content":[{"type":"text","text":"Caveat: x"},"bare"]},"uuid":"u3","timestamp":"2026-01-01T00:00:04Z"}"#,
            r#"{"type":"system","subtype":"local_command","content":"<command-name>/model</command-name>","level":"info","uuid":"s1","timestamp":"2026-01-01T00:00:05Z"}"#,
        ]);
        use Provenance::{Conversational as C, Injected as I};
        assert_eq!(m[0].role(), "user");
        assert_eq!(
            parts(&m[0]),
            [
                ("text:<system-reminder>r</system-reminder>\n".into(), I),
                ("text:hello".into(), C)
            ]
        );
        assert_eq!(m[1].role(), "assistant");
        assert_eq!(
            parts(&m[1]),
            [("reasoning".into(), C), ("tool_call".into(), C)]
        );
        assert_eq!(m[1].options()["source"]["opaque_blocks"][0][0], 2);
        assert_eq!(m[1].options()["anthropic"]["id"], "m1");
        assert_eq!(m[2].role(), "tool");
        assert_eq!(parts(&m[2]), [("result:t1:Bash".into(), I)]);
        assert_eq!(m[3].role(), "user");
        assert_eq!(
            parts(&m[3]),
            [("text:Caveat: x".into(), I), ("text:bare".into(), I)]
        );
        assert_eq!(m[4].role(), "system");
    }
}

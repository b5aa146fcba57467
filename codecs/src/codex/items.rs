//! `response_item` payloads to canonical messages (spec 6.5, rules 1 and 2).
//!
//! Each mapped payload gives one message: `message` a user or assistant message with text and file
//! parts, `reasoning` an assistant message with reasoning parts, the call kinds an assistant
//! message with one tool call, the output kinds a tool message with one tool result. Every payload
//! field not taken into a part stays in `options.source.payload`; the names of the taken fields go
//! to `options.pond.taken` so the writer knows exactly what to put back.

use super::keys;
use super::provenance;
use crate::discover::names_any;
use pond_canonical::bounded::bounded_object;
use pond_canonical::seam::member;
use pond_canonical::{
    AssistantMessage, Extracted, FileData, FilePart, Json, Message, MessageId, Options, PartKey,
    Provenance, ReasoningPart, SessionId, Text, TextPart, Timestamp, ToolCallPart, ToolMessage,
    ToolResultPart, UserMessage, options_ns,
};
use serde_json::{Map, Value};

/// Puts `value` at `options.<ns>.<key>`.
pub(crate) fn put(options: &mut Options, ns: &str, key: &str, value: Value) {
    options_ns(options, ns).insert(key.to_owned(), value);
}

/// Whether a `response_item` payload has what its typed parts need. A payload that does not is
/// carried whole instead (placement rule 3), so nothing is taken from it and then lost.
pub(crate) fn mappable(p: &Map<String, Value>) -> bool {
    mappable_by(|k| member(p, k))
}

/// [`mappable`] of an object whose member `k` is `member(k)` (a record's own members).
pub(crate) fn mappable_by<'a>(member: impl Fn(&str) -> Option<&'a Value>) -> bool {
    let is_str = |k: &str| member(k).is_some_and(Value::is_string);
    match member("type").and_then(Value::as_str) {
        Some("message") => is_str("role"),
        Some("reasoning") => true,
        Some("function_call") => is_str("call_id") && is_str("name") && is_str("arguments"),
        Some("custom_tool_call") => is_str("call_id") && is_str("name") && is_str("input"),
        Some("local_shell_call") => is_str("call_id") && member("action").is_some(),
        Some("web_search_call") => {
            (is_str("call_id") || is_str("id")) && member("action").is_some()
        }
        Some("function_call_output" | "custom_tool_call_output") => {
            is_str("call_id") && member("output").is_some()
        }
        _ => false,
    }
}

/// The message for a payload [`mappable`] accepted. With `wanted` (a foreign write's
/// `SessionWriter::option_keys`), the payload's leftovers go to options only when one of those
/// keys occurs in them: the writer would drop them unread.
pub(crate) fn map_item(
    session: &SessionId,
    id: MessageId,
    timestamp: Timestamp,
    mut payload: Extracted<Map<String, Value>>,
    output: Option<Json>,
    wanted: Option<&[&str]>,
) -> Message {
    let mut taken = Taken(wanted.is_none().then(|| Vec::with_capacity(4)));
    let kind = payload
        .field("type")
        .and_then(|t| t.get().as_str())
        .map(str::to_owned);
    let mut message = match kind.as_deref() {
        Some("message") => {
            content_message(session, id, timestamp, &mut payload, &mut taken, wanted)
        }
        Some("reasoning") => reasoning(session, id, timestamp, &mut payload, &mut taken),
        Some("function_call_output" | "custom_tool_call_output") => {
            tool_result(session, id, timestamp, &mut payload, output, &mut taken)
        }
        _ => tool_call(session, id, timestamp, &mut payload, &mut taken, wanted),
    };
    let options = message.options_mut();
    // model-lossless-projection: every field not taken into a part stays in options (but for
    // a foreign write that would not read them; `pond.taken` keeps the options from being
    // empty, as they never are).
    if wanted.is_none_or(|keys| names_any(payload.get(), keys)) {
        put(
            options,
            "source",
            keys::PAYLOAD,
            Value::Object(bounded_object(payload)),
        );
    }
    // The native writer's record of what was taken; no foreign writer reads `options.pond`.
    if let Some(taken) = taken.0 {
        put(options, "pond", keys::TAKEN, Value::from(taken));
    }
    message
}

/// The names of the payload's fields a mapping took, for `options.pond.taken`: kept only for
/// the native writer (`Some`), the one that reads them.
struct Taken(Option<Vec<&'static str>>);

impl Taken {
    fn push(&mut self, field: &'static str) {
        if let Some(names) = &mut self.0 {
            names.push(field);
        }
    }
}

/// Whether leftovers `rest` go to options: always for a native write; for a foreign one
/// (`wanted`: its writer's option keys) only when one of those keys occurs in them.
fn keep(rest: &Map<String, Value>, wanted: Option<&[&str]>) -> bool {
    wanted.is_none_or(|keys| names_any(rest, keys))
}

/// A user or assistant message under construction.
pub(super) enum Draft {
    User(UserMessage),
    Assistant(AssistantMessage),
}

impl Draft {
    /// A draft for `role`: an assistant message for `assistant`, else a user message.
    pub(super) fn new(
        role: &str,
        session: &SessionId,
        id: MessageId,
        timestamp: Timestamp,
    ) -> Self {
        if role == "assistant" {
            Self::Assistant(AssistantMessage::new(session, id, timestamp))
        } else {
            Self::User(UserMessage::new(session, id, timestamp))
        }
    }

    pub(super) fn key(&self) -> PartKey {
        match self {
            Self::User(m) => m.part_key(),
            Self::Assistant(m) => m.part_key(),
        }
    }

    pub(super) fn push_text(&mut self, part: TextPart) {
        match self {
            Self::User(m) => m.push(part),
            Self::Assistant(m) => m.push(part),
        }
    }

    fn push_file(&mut self, part: FilePart) {
        match self {
            Self::User(m) => m.push(part),
            Self::Assistant(m) => m.push(part),
        }
    }

    pub(super) fn into_message(self) -> Message {
        match self {
            Self::User(m) => m.into(),
            Self::Assistant(m) => m.into(),
        }
    }
}

/// Whether every item of a `message` content array can become a part.
fn content_mappable(content: Option<&Value>) -> bool {
    let Some(Value::Array(items)) = content else {
        return false;
    };
    items.iter().all(|item| {
        let field = |k: &str| item.as_object().and_then(|o| member(o, k));
        let text = field("text").is_some_and(Value::is_string);
        match field("type").and_then(Value::as_str) {
            Some("input_text" | "output_text") => text,
            Some("input_image") => field("image_url").is_some_and(Value::is_string),
            _ => false,
        }
    })
}

/// `message`: assistant output to an assistant message; `user`, `developer` and `system` to a
/// user message (the conversational slot), with developer and system text injected.
fn content_message(
    session: &SessionId,
    id: MessageId,
    timestamp: Timestamp,
    payload: &mut Extracted<Map<String, Value>>,
    taken: &mut Taken,
    wanted: Option<&[&str]>,
) -> Message {
    let p = payload.get();
    let role = member(p, "role")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    // Newer Codex labels each content item's provenance; the label decides where present.
    let labels: Vec<Option<String>> = member(p, "internal_chat_message_metadata_passthrough")
        .and_then(|m| m.get("content_item_metadata"))
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .map(|i| {
                    i.pointer("/provenance/type")
                        .and_then(Value::as_str)
                        .map(str::to_owned)
                })
                .collect()
        })
        .unwrap_or_default();
    let mappable = content_mappable(member(p, "content"));
    let mut draft = Draft::new(&role, session, id, timestamp);
    // The role of a user or assistant message is the canonical role; others stay in the payload.
    if matches!(role.as_str(), "user" | "assistant") && payload.take("role").is_some() {
        taken.push("role");
    }
    if mappable && let Some(content) = payload.take("content") {
        taken.push("content");
        if let Ok(items) = content.into_items() {
            for (i, item) in items.into_iter().enumerate() {
                let label = labels.get(i).and_then(Option::as_deref);
                push_content_item(&mut draft, &role, label, item, wanted);
            }
        }
    }
    draft.into_message()
}

/// One content item as one file part or one or more text parts (a provenance split). For a
/// foreign write (`wanted`) the item's leftovers are kept only as [`keep`] says, and pond's
/// own marks (`options.pond`), which only the native writer reads, are not made.
fn push_content_item(
    draft: &mut Draft,
    role: &str,
    label: Option<&str>,
    item: Extracted<Value>,
    wanted: Option<&[&str]>,
) {
    let native = wanted.is_none();
    let Ok(mut item) = item.into_object() else {
        return;
    };
    let is_image = item.field("type").and_then(|t| t.get().as_str()) == Some("input_image");
    if is_image {
        let Some(Ok(url)) = item.take("image_url").map(Extracted::into_string) else {
            return;
        };
        let provenance = match (label, role) {
            (Some(label), _) => provenance::from_label(label),
            (None, "user" | "assistant") => Provenance::Conversational,
            (None, _) => Provenance::Injected,
        };
        let (media_type, data, mode) = match split_data_url(url.get()) {
            Some((media, data)) => (
                Text::from(
                    url.clone()
                        .derive(|s| s.get(media).map(str::to_owned).unwrap_or_default()),
                ),
                FileData::base64(
                    url.derive(|s| s.get(data).map(str::to_owned).unwrap_or_default()),
                ),
                "data_url",
            ),
            // model-no-synthesis: a generic MIME type is permitted; the mode records the absence.
            None => (Text::generic_media_type(), FileData::url(url), "url"),
        };
        let mut part = FilePart::new(draft.key(), provenance, media_type, None, data);
        if keep(item.get(), wanted) {
            put(
                &mut part.options,
                "source",
                keys::ITEM,
                Value::Object(bounded_object(item)),
            );
        }
        if native {
            put(
                &mut part.options,
                "pond",
                keys::IMAGE_URL,
                Value::from(mode),
            );
        }
        draft.push_file(part);
        return;
    }
    let Some(Ok(text)) = item.take("text").map(Extracted::into_string) else {
        return;
    };
    let segments = provenance::split(text.get(), role, label);
    let mut rest = Some(item);
    for (n, segment) in segments.into_iter().enumerate() {
        let range = segment.range;
        // model-part-provenance: one part per provenance-homogeneous span, cut at byte boundaries.
        let piece = text
            .clone()
            .derive(|s| s.get(range).map(str::to_owned).unwrap_or_default());
        let mut part = TextPart::new(draft.key(), segment.provenance, Text::from(piece));
        if let Some(item) = rest.take().filter(|item| keep(item.get(), wanted)) {
            put(
                &mut part.options,
                "source",
                keys::ITEM,
                Value::Object(bounded_object(item)),
            );
        }
        if n > 0 && native {
            put(
                &mut part.options,
                "pond",
                keys::CONTINUES,
                Value::Bool(true),
            );
        }
        if let Some(kind) = segment.kind.filter(|_| native) {
            put(
                &mut part.options,
                "pond",
                keys::INJECTED_KIND,
                Value::from(kind),
            );
        }
        draft.push_text(part);
    }
}

/// The media type and base64 payload ranges of a `data:<type>;base64,<data>` URL, when writing
/// them back in that shape reproduces the URL exactly.
fn split_data_url(url: &str) -> Option<(std::ops::Range<usize>, std::ops::Range<usize>)> {
    const PREFIX: &str = "data:";
    const MARK: &str = ";base64,";
    let rest = url.strip_prefix(PREFIX)?;
    let at = rest.find(MARK)?;
    if at == 0 {
        return None;
    }
    let media = PREFIX.len()..PREFIX.len() + at;
    let data = media.end + MARK.len()..url.len();
    Some((media, data))
}

/// Whether a reasoning array holds only `{text, ...}` objects.
fn reasoning_mappable(items: Option<&Value>) -> bool {
    matches!(items, Some(Value::Array(items))
        if items.iter().all(|i| i.as_object().and_then(|o| member(o, "text")).is_some_and(Value::is_string)))
}

/// `reasoning`: one reasoning part per `summary` and `content` entry. `encrypted_content` is
/// provider-opaque and stays in `options.source.payload`.
fn reasoning(
    session: &SessionId,
    id: MessageId,
    timestamp: Timestamp,
    payload: &mut Extracted<Map<String, Value>>,
    taken: &mut Taken,
) -> Message {
    let mut message = AssistantMessage::new(session, id, timestamp);
    for field in ["summary", "content"] {
        if !reasoning_mappable(payload.get().get(field)) {
            continue;
        }
        let Some(Ok(items)) = payload.take(field).map(Extracted::into_items) else {
            continue;
        };
        taken.push(field);
        for item in items {
            let Ok(mut item) = item.into_object() else {
                continue;
            };
            let Some(Ok(text)) = item.take("text").map(Extracted::into_string) else {
                continue;
            };
            message.push(reasoning_part(message.part_key(), text.into(), item, field));
        }
    }
    message.into()
}

/// The reasoning part of one entry of the reasoning array `field`, its other members `item`
/// kept whole (for any writer: they are an entry's, not the payload's).
pub(super) fn reasoning_part(
    key: PartKey,
    text: Text,
    item: Extracted<Map<String, Value>>,
    field: &'static str,
) -> ReasoningPart {
    let mut part = ReasoningPart::new(key, Provenance::Conversational, text);
    put(
        &mut part.options,
        "source",
        keys::ITEM,
        Value::Object(bounded_object(item)),
    );
    put(
        &mut part.options,
        "pond",
        keys::REASONING_FIELD,
        Value::from(field),
    );
    part
}

/// Takes the string field `key`, recording it as taken.
fn take_string(
    payload: &mut Extracted<Map<String, Value>>,
    key: &'static str,
    taken: &mut Taken,
) -> Option<Extracted<String>> {
    let value = payload.take(key)?.into_string().ok()?;
    taken.push(key);
    Some(value)
}

/// A tool's `name`, qualified by the item's `namespace` when it has one: Codex 0.169 writes an
/// MCP server's tool as `name: "pond_search", namespace: "mcp__pond"` where earlier Codex and
/// Claude Code name it `mcp__pond__pond_search`, so the canonical name is that one for every
/// source (docs/decisions.md, "An MCP tool's name across harnesses"). The `namespace` stays in
/// the payload, and the native writer strips it from the name again ([`NAMESPACE_JOIN`]).
fn take_tool_name(
    payload: &mut Extracted<Map<String, Value>>,
    taken: &mut Taken,
) -> Option<Extracted<String>> {
    let namespace = payload.field("namespace").and_then(|n| {
        n.get()
            .as_str()
            .filter(|n| !n.is_empty())
            .map(str::to_owned)
    });
    let name = take_string(payload, "name", taken)?;
    Some(match namespace {
        Some(namespace) => name.derive(|name| format!("{namespace}{NAMESPACE_JOIN}{name}")),
        None => name,
    })
}

/// What joins a tool's `namespace` and `name` into its canonical name.
pub(crate) const NAMESPACE_JOIN: &str = "__";

/// The call kinds: `function_call`, `custom_tool_call`, `local_shell_call`, `web_search_call`.
fn tool_call(
    session: &SessionId,
    id: MessageId,
    timestamp: Timestamp,
    payload: &mut Extracted<Map<String, Value>>,
    taken: &mut Taken,
    wanted: Option<&[&str]>,
) -> Message {
    let mut message = AssistantMessage::new(session, id, timestamp);
    let kind = payload
        .field("type")
        .and_then(|t| t.as_str().map(|s| s.to_owned()));
    let kind_str = kind.as_ref().map(|k| k.get().clone()).unwrap_or_default();
    let call_id =
        take_string(payload, "call_id", taken).or_else(|| take_string(payload, "id", taken));
    let named = matches!(kind_str.as_str(), "function_call" | "custom_tool_call");
    // A built-in call has no `name`: its kind (`local_shell_call`, `web_search_call`) names it.
    let name = if named {
        take_tool_name(payload, taken)
    } else {
        kind
    };
    let mut extra: Vec<(&str, &str, Value)> = Vec::new();
    let params = match kind_str.as_str() {
        "function_call" => take_string(payload, "arguments", taken).map(|args| {
            match serde_json::from_str::<Value>(args.get()) {
                Ok(parsed) => {
                    // The exact string is kept when compact JSON would not reproduce it (for
                    // the native writer: a foreign one writes the parsed value).
                    if wanted.is_none()
                        && serde_json::to_string(&parsed).ok().as_deref() != Some(args.get())
                    {
                        extra.push(("source", keys::ARGUMENTS, Value::from(args.get().clone())));
                    }
                    Json::from(args.derive(|_| parsed))
                }
                Err(_) => {
                    if wanted.is_none() {
                        extra.push(("pond", keys::ARGUMENTS_NOT_JSON, Value::Bool(true)));
                    }
                    Json::from(args.derive(Value::String))
                }
            }
        }),
        "custom_tool_call" => payload.take("input").map(|v| {
            taken.push("input");
            Json::from(v)
        }),
        _ => payload.take("action").map(|v| {
            taken.push("action");
            Json::from(v)
        }),
    };
    let (Some(call_id), Some(name), Some(params)) = (call_id, name, params) else {
        // Unreachable after `mappable`; what was taken is listed, so nothing is silently lost.
        return message.into();
    };
    // Web searches run on the provider's side.
    let provider_executed = kind_str == "web_search_call";
    let mut part = ToolCallPart::new(
        message.part_key(),
        Provenance::Conversational,
        call_id.into(),
        name.into(),
        params,
        provider_executed,
    );
    for (ns, key, value) in extra {
        put(&mut part.options, ns, key, value);
    }
    message.push(part);
    message.into()
}

/// `function_call_output`, `custom_tool_call_output`: a tool message with one tool result, which
/// is tool output and so injected (model-part-provenance).
fn tool_result(
    session: &SessionId,
    id: MessageId,
    timestamp: Timestamp,
    payload: &mut Extracted<Map<String, Value>>,
    output: Option<Json>,
    taken: &mut Taken,
) -> Message {
    let mut message = ToolMessage::new(session, id, timestamp);
    let call_id = take_string(payload, "call_id", taken);
    let name = take_tool_name(payload, taken).map(Text::from);
    // An output given as its text stands in for the payload's (a stand-in then).
    let result = payload.take("output").map(|v| {
        taken.push("output");
        output.unwrap_or_else(|| Json::from(v))
    });
    if let (Some(call_id), Some(result)) = (call_id, result) {
        // model-no-synthesis: `is_failure` defaults to false; Codex records no success flag on disk.
        let part = ToolResultPart::new(
            message.part_key(),
            Provenance::Injected,
            call_id.into(),
            name,
            false,
            result,
        );
        message.push(part);
    }
    message.into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_urls_split_and_rejoin() {
        let url = "data:image/png;base64,iVBORw0KGgo=";
        let (m, d) = split_data_url(url).unwrap();
        assert_eq!(&url[m.clone()], "image/png");
        assert_eq!(format!("data:{};base64,{}", &url[m], &url[d]), url);
        assert!(split_data_url("https://x/y.png").is_none());
        assert!(split_data_url("data:;base64,AA").is_none());
    }

    #[test]
    fn items_missing_typed_fields_are_not_mappable() {
        let m = |v: Value| mappable(v.as_object().unwrap());
        assert!(m(
            serde_json::json!({"type":"function_call","name":"f","arguments":"{}","call_id":"c"})
        ));
        assert!(!m(
            serde_json::json!({"type":"function_call","name":"f","arguments":{},"call_id":"c"})
        ));
        assert!(!m(
            serde_json::json!({"type":"web_search_call","status":"completed"})
        ));
        assert!(!m(
            serde_json::json!({"type":"ghost_snapshot","ghost_commit":{}})
        ));
        assert!(m(serde_json::json!({"type":"reasoning","summary":[]})));
    }
}

//! A Codex `response_item` line mapped straight from its simd-json tape, in a foreign write.
//!
//! [`place_record`](super::read) builds a line's record into `serde_json` values (the payload a
//! `Map`, each content item another), and [`map_item`](super::items::map_item) then takes them
//! apart again into parts, each key hashed as it goes in and again as it is taken out, only for
//! the leftovers to be dropped: a foreign writer keeps a payload's, an item's or the envelope's
//! leftovers only where one of its option keys occurs in them. For the lines most of a rollout
//! is besides its tool outputs (`message` items of text, `function_call`, `custom_tool_call` and
//! `reasoning` items), [`message`] reads the same members off the tape and makes the parts from
//! them, building a value only where the message keeps one: a call's arguments or input, a
//! reasoning part's item (kept whole). Any other shape gives `None`, and the line is read as
//! before: another kind, an image, a content item of another kind, a member named twice, a value
//! of another type, an `ordinal` (the id then depends on the ordinals read before), a timestamp
//! that is no usable string, and leftovers in which one of the writer's keys may occur (as a
//! member's name or as a string within it), which the record then keeps exactly as it would.
//!
//! The message is the one `place_record` makes of the record ([`check_line`]): test
//! `a_line_mapped_from_its_tape_is_the_message_its_record_makes` (every line of the shared Codex
//! fixtures, with each writer's option keys), and the fuzz targets' property on every line of
//! every input (`pond_conformance::hostile`).

use super::items::{Draft, NAMESPACE_JOIN, reasoning_part};
use super::provenance;
use crate::jsonl::{self, Node};
use pond_canonical::{
    AssistantMessage, Extracted, Json, Message, MessageId, Origin, Provenance, SessionId, Text,
    TextPart, Timestamp, ToolCallPart,
};
use serde_json::{Map, Value};

/// Whether a line may be one [`message`] maps: Codex writes the payload's `type` within the
/// line's first bytes, as one of the kinds it maps.
pub(super) fn may_map(bytes: &[u8]) -> bool {
    static PAYLOAD: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::Finder::new(br#""payload":{"type":""#));
    let head = &bytes[..bytes.len().min(160)];
    PAYLOAD.find(head).is_some_and(|at| {
        let kind = &head[at + PAYLOAD.needle().len()..];
        [
            &b"message\""[..],
            b"function_call\"",
            b"custom_tool_call\"",
            b"reasoning\"",
        ]
        .iter()
        .any(|k| kind.starts_with(k))
    })
}

/// The message `place_record` makes, for a foreign write whose writer looks for `keys`, of
/// line `line` of an open session `session` whose tape is `nodes`; `None` where this reading
/// does not apply (the module doc; a line with no usable timestamp of its own among them, so
/// the session's anchor is never needed).
pub(super) fn message(
    origin: &Origin,
    nodes: &[Node<'_>],
    line: u64,
    session: &SessionId,
    keys: &[&str],
) -> Option<Message> {
    // A line nested deeper than the fast path reads is read by its record (serde_json's limit).
    if !jsonl::within_fast_depth(nodes) {
        return None;
    }
    let top = jsonl::tape_members(nodes, 0)?;
    let (mut at_payload, mut at_time, mut kind) = (None, None, false);
    for &(name, at) in &top {
        match name {
            "payload" => at_payload = Some(at),
            "timestamp" => at_time = Some(at),
            "type" => kind = jsonl::tape_str(nodes, at)? == "response_item",
            // An `ordinal` is the message's id where no earlier line named it.
            "ordinal" => return None,
            // The envelope's leftovers (`type` among them) are dropped unless a key is in them.
            _ => {}
        }
        if name != "payload" && name != "timestamp" && jsonl::tape_wants(keys, nodes, name, at) {
            return None;
        }
    }
    if !kind {
        return None;
    }
    let timestamp = Timestamp::parse(origin.line_text(jsonl::tape_str(nodes, at_time?)?)).ok()?;
    // `Record::position`: `L<line>`.
    let mut position = String::with_capacity(12);
    position.push('L');
    position.push_str(itoa::Buffer::new().format(line));
    let id = MessageId::from(origin.line_text(position.as_str()));
    let payload = Members::of(nodes, at_payload?)?;
    let place = Place {
        origin,
        session,
        id,
        timestamp,
        keys,
    };
    match payload.str("type")? {
        "message" => content_message(place, &payload),
        "reasoning" => reasoning(place, &payload),
        kind @ ("function_call" | "custom_tool_call") => tool_call(place, &payload, kind),
        _ => None,
    }
}

/// What a payload's mapping is given besides the payload: the line's source, the message's
/// session, id and date, and the writer's option keys.
struct Place<'a> {
    origin: &'a Origin,
    session: &'a SessionId,
    id: MessageId,
    timestamp: Timestamp,
    keys: &'a [&'a str],
}

/// `message` (`items::content_message`): text items only, their provenance split as the
/// record's are, by the item's label where the payload gives labels.
fn content_message(place: Place<'_>, payload: &Members<'_, '_>) -> Option<Message> {
    let (origin, keys) = (place.origin, place.keys);
    let role = payload.str("role")?;
    let labels = labels(payload)?;
    let taken: &[&str] = if matches!(role, "user" | "assistant") {
        &["role", "content"]
    } else {
        &["content"]
    };
    if payload.wants(keys, taken) {
        return None;
    }
    let mut draft = Draft::new(role, place.session, place.id, place.timestamp);
    for (i, at) in jsonl::tape_items(payload.nodes, payload.field("content")?)?
        .into_iter()
        .enumerate()
    {
        let item = Members::of(payload.nodes, at)?;
        if !matches!(item.str("type")?, "input_text" | "output_text") || item.wants(keys, &["text"])
        {
            return None;
        }
        let text = item.str("text")?;
        let label = labels.get(i).copied().flatten();
        // model-part-provenance: one part per provenance-homogeneous span.
        for segment in provenance::split(text, role, label) {
            let piece = text.get(segment.range).unwrap_or_default();
            let part = TextPart::new(
                draft.key(),
                segment.provenance,
                Text::from(origin.line_text(piece)),
            );
            draft.push_text(part);
        }
    }
    Some(draft.into_message())
}

/// The provenance labels of a message's content items, as `items::content_message` reads them
/// (`internal_chat_message_metadata_passthrough.content_item_metadata[i].provenance.type`);
/// `None` where an object on the way names a member twice.
fn labels<'n>(payload: &Members<'_, 'n>) -> Option<Vec<Option<&'n str>>> {
    let nodes = payload.nodes;
    let Some(at) = payload.field("internal_chat_message_metadata_passthrough") else {
        return Some(Vec::new());
    };
    let Some(at) = member_at(nodes, at, "content_item_metadata")? else {
        return Some(Vec::new());
    };
    let Some(items) = jsonl::tape_items(nodes, at) else {
        return Some(Vec::new());
    };
    let mut labels = Vec::with_capacity(items.len());
    for item in items {
        let label = match member_at(nodes, item, "provenance")? {
            Some(at) => member_at(nodes, at, "type")?.and_then(|at| jsonl::tape_str(nodes, at)),
            None => None,
        };
        labels.push(label);
    }
    Some(labels)
}

/// `reasoning` (`items::reasoning`): one reasoning part per `summary` and `content` entry, each
/// keeping its entry's other members; an array of another shape stays in the payload.
fn reasoning(place: Place<'_>, payload: &Members<'_, '_>) -> Option<Message> {
    let (origin, keys) = (place.origin, place.keys);
    let nodes = payload.nodes;
    let mut arrays: Vec<(&'static str, Vec<Members<'_, '_>>)> = Vec::with_capacity(2);
    for field in ["summary", "content"] {
        let Some(at) = payload.field(field) else {
            continue;
        };
        // `reasoning_mappable`: an array of objects each with a string `text`.
        let Some(items) = jsonl::tape_items(nodes, at) else {
            continue;
        };
        let count = items.len();
        let mut entries = Vec::with_capacity(count);
        for item in items {
            if !matches!(nodes.get(item)?, Node::Object { .. }) {
                break;
            }
            let entry = Members::of(nodes, item)?;
            if entry.str("text").is_none() {
                break;
            }
            entries.push(entry);
        }
        if entries.len() == count {
            arrays.push((field, entries));
        }
    }
    let taken: Vec<&str> = arrays.iter().map(|(field, _)| *field).collect();
    if payload.wants(keys, &taken) {
        return None;
    }
    let mut message = AssistantMessage::new(place.session, place.id, place.timestamp);
    for (field, entries) in arrays {
        for entry in entries {
            let text = Text::from(origin.line_text(entry.str("text")?));
            let rest = extracted(origin, entry.rest(&["text"], 4)?);
            message.push(reasoning_part(message.part_key(), text, rest, field));
        }
    }
    Some(message.into())
}

/// `function_call` and `custom_tool_call` (`items::tool_call`): one tool call, its name
/// qualified by a `namespace`, a function's `arguments` parsed as the record's are.
fn tool_call(place: Place<'_>, payload: &Members<'_, '_>, kind: &str) -> Option<Message> {
    let (origin, keys) = (place.origin, place.keys);
    let function = kind == "function_call";
    let input = if function { "arguments" } else { "input" };
    let (call, name, input_text) = (
        payload.str("call_id")?,
        payload.str("name")?,
        payload.str(input)?,
    );
    if payload.wants(keys, &["call_id", "name", input]) {
        return None;
    }
    let name = match payload
        .field("namespace")
        .and_then(|at| jsonl::tape_str(payload.nodes, at))
    {
        Some(namespace) if !namespace.is_empty() => {
            Text::from(origin.line_text(&format!("{namespace}{NAMESPACE_JOIN}{name}")))
        }
        _ => Text::from(origin.line_text(name)),
    };
    let params = if function {
        match serde_json::from_str::<Value>(input_text) {
            Ok(parsed) => parsed,
            Err(_) => Value::String(input_text.to_owned()),
        }
    } else {
        Value::String(input_text.to_owned())
    };
    let mut message = AssistantMessage::new(place.session, place.id, place.timestamp);
    message.push(ToolCallPart::new(
        message.part_key(),
        Provenance::Conversational,
        Text::from(origin.line_text(call)),
        name,
        Json::from(extracted(origin, params)),
        false,
    ));
    Some(message.into())
}

/// An object's members, each named once.
struct Members<'t, 'n> {
    nodes: &'t [Node<'n>],
    members: Vec<(&'n str, usize)>,
}

impl<'t, 'n> Members<'t, 'n> {
    fn of(nodes: &'t [Node<'n>], at: usize) -> Option<Self> {
        Some(Self {
            nodes,
            members: jsonl::tape_members(nodes, at)?,
        })
    }

    fn field(&self, key: &str) -> Option<usize> {
        self.members
            .iter()
            .find(|(k, _)| *k == key)
            .map(|&(_, at)| at)
    }

    fn str(&self, key: &str) -> Option<&'n str> {
        jsonl::tape_str(self.nodes, self.field(key)?)
    }

    /// Whether one of `keys` may occur in the members left once those `taken` are out.
    fn wants(&self, keys: &[&str], taken: &[&str]) -> bool {
        self.members
            .iter()
            .any(|&(key, at)| !taken.contains(&key) && jsonl::tape_wants(keys, self.nodes, key, at))
    }

    /// The object left once the members `taken` are taken out of it ([`jsonl::tape_rest`]).
    fn rest(&self, taken: &[&str], depth: usize) -> Option<Map<String, Value>> {
        jsonl::tape_rest(self.nodes, self.members.iter(), taken, depth, |_, _| true)
    }
}

/// The member `key` of the value at `nodes[at]` (`Value::get`): `Some(None)` where the value
/// is no object or has no such member, `None` where the object names a member twice.
fn member_at(nodes: &[Node<'_>], at: usize, key: &str) -> Option<Option<usize>> {
    if !matches!(nodes.get(at)?, Node::Object { .. }) {
        return Some(None);
    }
    let members = jsonl::tape_members(nodes, at)?;
    Some(members.iter().find(|(k, _)| *k == key).map(|&(_, at)| at))
}

/// A value decoded from the line's tape: source data, as the line's record would hold it.
fn extracted<T>(origin: &Origin, value: T) -> Extracted<T> {
    origin.line_text("").derive(|_| value)
}

/// Checks one line of a rollout against [`message`], for the tests and the fuzz targets: for
/// each writer's option keys, where [`message`] maps the line, its message must be the one
/// `place_record` makes of the line's record, with no fault, members and their order included
/// (compared as serialized). Returns how many of the writers' reads it mapped; `Err` names the
/// keys and both messages where they differ. A line that is no whole record is skipped (such
/// a line is read otherwise).
pub fn check_line(origin: &Origin, bytes: &[u8]) -> Result<usize, String> {
    if !may_map(bytes) {
        return Ok(0);
    }
    crate::face::check_shortcut(origin, "a Codex line", |keys, session, anchor| {
        let Some(fast) =
            jsonl::on_tape_here(bytes, |nodes| message(origin, nodes, 1, session, keys))
        else {
            return Ok(None);
        };
        let record = jsonl::record_here(origin, 1, bytes).map_err(|e| e.to_string())?;
        let id = MessageId::from(record.position());
        let mut faults = Vec::new();
        let made =
            super::read::place_record(session, anchor, id, record, None, Some(keys), &mut |e| {
                faults.push(e.to_string())
            })
            .ok_or("the record makes no message")?;
        if !faults.is_empty() {
            return Err(format!(
                "a Codex line mapped from its tape has faults: {faults:?}"
            ));
        }
        Ok(Some((fast, made)))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codex::NAME;

    /// Lines of the shapes [`message`] maps and, next to them, those it leaves: leftovers that
    /// name a writer's key (in the envelope, the payload, a content item, a reasoning entry's
    /// payload), an image, a content item of another kind, an `ordinal`, an unusable timestamp,
    /// a member named twice, labels, a namespace, arguments that are no JSON.
    fn crafted() -> Vec<Vec<u8>> {
        let line = |payload: &str| {
            format!(
                r#"{{"timestamp":"2025-11-21T10:00:01.000Z","type":"response_item","payload":{payload}}}"#
            )
        };
        let mut lines: Vec<String> = [
            // 0-4: messages.
            r##"{"type":"message","role":"user","content":[{"type":"input_text","text":"# AGENTS.md instructions for /w\n\n<INSTRUCTIONS>x</INSTRUCTIONS>"},{"type":"input_text","text":"<environment_context>\n  <cwd>/w</cwd>\n</environment_context>"},{"type":"input_text","text":"hello"}]}"##,
            r#"{"type":"message","role":"assistant","content":[{"type":"output_text","text":"ok \"quoted\" \u0001"}],"id":"msg_1","end_turn":true,"phase":"final"}"#,
            r#"{"type":"message","role":"developer","content":[{"type":"input_text","text":"be brief"}]}"#,
            r#"{"type":"message","role":"user","content":[{"type":"input_text","text":"a"},{"type":"input_text","text":"b"}],"internal_chat_message_metadata_passthrough":{"turn_id":"t","content_item_metadata":[{"provenance":{"type":"harness","hook":false}},{"provenance":{"type":"user"}}]}}"#,
            r#"{"type":"message","role":"user","content":[{"type":"input_text","text":""}],"internal_chat_message_metadata_passthrough":[1]}"#,
            // 5-10: messages left to the record.
            r#"{"type":"message","role":"user","content":[{"type":"input_image","image_url":"data:image/png;base64,AAAA"}]}"#,
            r#"{"type":"message","role":"user","content":[{"type":"input_text","text":"a","note":"model"}]}"#,
            r#"{"type":"message","role":"assistant","content":[{"type":"output_text","text":"a"}],"model":"gpt"}"#,
            r#"{"type":"message","role":"user","content":[{"type":"refusal","refusal":"no"}]}"#,
            r#"{"type":"message","role":"user","content":"plain"}"#,
            r#"{"type":"message","role":"user","content":[{"type":"input_text","text":"a","text":"b"}]}"#,
            // 11-14: reasoning.
            r#"{"type":"reasoning","summary":[{"type":"summary_text","text":"s1"},{"type":"summary_text","text":"s2","extra":[1,2.5]}],"content":null,"encrypted_content":"gAAA"}"#,
            r#"{"type":"reasoning","summary":[],"content":[{"type":"reasoning_text","text":"c"}]}"#,
            r#"{"type":"reasoning","summary":[{"type":"summary_text"}],"content":[{"text":"c"}]}"#,
            r#"{"type":"reasoning","summary":[{"type":"summary_text","text":"s"}],"encrypted_content":"x","provider":"openai"}"#,
            // 15-21: calls.
            r#"{"type":"function_call","name":"shell","arguments":"{\"command\":[\"ls\"],\"n\":1.50}","call_id":"c1"}"#,
            r#"{"type":"function_call","name":"pond_search","namespace":"mcp__pond","arguments":"not json","call_id":"c2","id":"fc_1","status":"completed"}"#,
            r#"{"type":"custom_tool_call","status":"completed","call_id":"c3","name":"apply_patch","input":"*** Begin Patch\n*** End Patch"}"#,
            r#"{"type":"function_call","name":"shell","arguments":{},"call_id":"c1"}"#,
            r#"{"type":"function_call","name":"shell","arguments":"{}","call_id":"c1","model":"m"}"#,
            r#"{"type":"local_shell_call","call_id":"c4","action":{"type":"exec","command":["ls"]}}"#,
            r#"{"type":"function_call_output","call_id":"c1","output":"ok"}"#,
        ]
        .iter()
        .map(|p| line(p))
        .collect();
        lines.extend([
            // 22-26: envelopes: G2's `metadata`, an `ordinal`, an unusable timestamp, a key in
            // the envelope, a line no message.
            r#"{"timestamp":"2025-11-21T10:00:01.000Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]},"metadata":{"history_sequence":4}}"#.to_owned(),
            r#"{"timestamp":"2025-11-21T10:00:01.000Z","type":"response_item","ordinal":7,"payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}}"#.to_owned(),
            r#"{"timestamp":"yesterday","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}}"#.to_owned(),
            r#"{"timestamp":"2025-11-21T10:00:01.000Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]},"metadata":{"model":"gpt"}}"#.to_owned(),
            r#"{"timestamp":"2025-11-21T10:00:01.000Z","type":"event_msg","payload":{"type":"message","role":"user","content":[]}}"#.to_owned(),
        ]);
        // 27-28: nesting the record reads on its fast path, and nesting serde_json refuses
        // (past 128), which the record's read reports and the tape must not map.
        let deep = |n: usize| {
            format!(
                r#"{{"timestamp":"2025-11-21T10:00:01.000Z","type":"response_item","payload":{{"type":"message","role":"user","content":[{{"type":"input_text","text":"hi"}}]}},"metadata":{}{}}}"#,
                "[".repeat(n),
                "]".repeat(n)
            )
        };
        lines.extend([deep(90), deep(130)]);
        lines.into_iter().map(String::into_bytes).collect()
    }

    /// Every line of the shared Codex fixtures and [`crafted`]'s, read with each writer's keys
    /// ([`check_line`]): where [`message`] maps a line, its message is the one `place_record`
    /// makes of the record; it maps the fixtures' lines of every kind it takes; of the crafted
    /// lines, those of the shapes it maps and no other.
    #[test]
    fn a_line_mapped_from_its_tape_is_the_message_its_record_makes() {
        let origin = Origin::new(NAME, "/x/r.jsonl", "r.jsonl");
        let fixtures = jsonl::tests::fixture_lines("codex", &[".jsonl"]);
        let mut kinds = std::collections::BTreeMap::<&str, usize>::new();
        let (mut may, mut mapped) = (0, 0);
        for bytes in &fixtures {
            let n = check_line(&origin, bytes).unwrap_or_else(|e| panic!("{e}"));
            may += usize::from(may_map(bytes));
            mapped += n;
            // Left to the record only for an `ordinal`, an image, or (for Claude Code's read)
            // reasoning's `encrypted_content`.
            let has = |text: &str| memchr::memmem::find(bytes, text.as_bytes()).is_some();
            if may_map(bytes) && !has(r#""ordinal":"#) && !has(r#""input_image""#) {
                let all = if has(r#""encrypted_content":""#) {
                    3
                } else {
                    4
                };
                assert!(n >= all, "{n} reads of {}", String::from_utf8_lossy(bytes));
            }
            if n > 0 {
                for kind in ["message", "reasoning", "function_call", "custom_tool_call"] {
                    let mark = format!(r#""payload":{{"type":"{kind}""#);
                    if memchr::memmem::find(bytes, mark.as_bytes()).is_some() {
                        *kinds.entry(kind).or_default() += 1;
                    }
                }
            }
        }
        assert!(may > 400, "{may} fixture lines of the kinds mapped");
        assert!(
            mapped > 4 * may * 9 / 10,
            "{mapped} reads of {may} lines mapped"
        );
        assert_eq!(kinds.len(), 4, "{kinds:?}");
        let mapped: Vec<usize> = crafted()
            .iter()
            .map(|bytes| check_line(&origin, bytes).unwrap_or_else(|e| panic!("{e}")))
            .collect();
        assert_eq!(
            mapped,
            [
                4, 4, 4, 4, 4, 0, 1, 1, 0, 0, 0, 3, 4, 4, 1, 4, 4, 4, 0, 1, 0, 0, 4, 0, 0, 1, 0, 4,
                0
            ]
        );
    }
}

//! A pi `message` entry mapped straight from its line's simd-json tape, in a foreign write.
//!
//! [`read`](super::read::read) builds an entry's pruned record (`jsonl::Prune`: every member of
//! its `message` the mapping or the writer reads) into `serde_json` values, and
//! [`map_record`](super::read) then takes them apart again into parts: a `Map` for the entry's
//! `message` and one for each content block, each key hashed as it goes in and again as it is
//! taken out, only for most of them to be dropped. For the entries most of a pi file is
//! (`user`, `assistant` and `toolResult` messages whose blocks are text, thinking and tool
//! calls), [`message`] reads the same members off the tape and makes the parts from them,
//! building a value only where the message keeps one: a tool call's arguments, a tool result's
//! content, a thinking block's leftovers (kept whole), and the leftovers of an entry, its
//! `message` or a block where one of the writer's option keys may occur, built then exactly as
//! the record would hold them and taken apart by the same steps, so that their members and
//! their order are the record's. Any other shape (another entry type or role, a block of
//! another kind or with another type of value, a member named twice, a value the fast path of
//! `jsonl::LineParser` leaves) gives `None`, and the entry is read as before.
//!
//! The message is the one `map_entry` makes of the record ([`check_line`]): test
//! `an_entry_mapped_from_its_tape_is_the_message_its_record_makes` (every pi entry of the shared
//! fixtures, with each writer's option keys), and the fuzz targets' property on every line of
//! every input (`pond_conformance::hostile`).

use super::read::{Entry, mark_source, put_leftovers, set_options};
use crate::discover::{names_any, rest_names_any};
use crate::jsonl::{self, Node, Prune};
use pond_canonical::{
    AssistantMessage, Extracted, Json, Locator, Message, Origin, PartKey, Provenance,
    ReasoningPart, Record, SessionId, Text, TextPart, Timestamp, ToolCallPart, ToolMessage,
    ToolResultPart, UserMessage,
};
use serde_json::{Map, Value};
use simd_json::StaticNode;

/// Whether a line may be an entry [`message`] maps: pi writes an entry's `type` first.
pub(super) fn may_map(bytes: &[u8]) -> bool {
    bytes.starts_with(br#"{"type":"message","#)
}

/// Where an entry sits: what `map_entry` is given besides the record.
pub(super) struct Place<'a> {
    pub entry: &'a Entry,
    pub session: &'a SessionId,
    pub anchor: &'a Timestamp,
    pub file: &'a str,
}

/// The message `map_entry` makes of the record pruned by `prune` of the line whose tape is
/// `nodes`; `None` where this reading does not apply (the module doc).
pub(super) fn message(
    origin: &Origin,
    nodes: &[Node<'_>],
    place: &Place<'_>,
    prune: &Prune,
) -> Option<Message> {
    let keys = prune.wanted;
    let top = jsonl::tape_members(nodes, 0)?;
    let mut at_message = None;
    let mut at_time = None;
    for &(name, at) in &top {
        match name {
            "type" => (jsonl::tape_str(nodes, at)? == "message").then_some(())?,
            "message" => at_message = Some(at),
            "timestamp" => at_time = Some(at),
            "id" | "parentId" => {}
            _ => return None,
        }
    }
    let at_message = at_message?;
    let members = jsonl::tape_members(nodes, at_message)?;
    let field = |key: &str| members.iter().find(|(k, _)| *k == key).map(|&(_, at)| at);
    let role = jsonl::tape_str(nodes, field("role")?)?;
    let content = field("content")?;
    // `mappable`: else the entry is carried whole.
    match (role, nodes.get(content)?) {
        ("user", Node::String(_) | Node::Array { .. }) | ("assistant", Node::Array { .. }) => {}
        ("toolResult", _) => {
            jsonl::tape_str(nodes, field("toolCallId")?)?;
        }
        _ => return None,
    }
    // `entry_time`.
    let timestamp = at_time
        .and_then(|at| jsonl::tape_str(nodes, at))
        .and_then(|t| Timestamp::parse(origin.line_text(t)).ok());
    let timestamp = match timestamp {
        Some(t) => t,
        None => {
            let ms = match field("timestamp") {
                Some(at) => value_at(nodes, at, 2)?.as_i64(),
                None => None,
            };
            ms.and_then(|ms| Timestamp::from_unix_millis(extracted(origin, ms)).ok())
                .unwrap_or_else(|| place.anchor.clone())
        }
    };
    let text = |s: &str| Text::from(origin.line_text(s));
    let id = place.entry.id.clone();
    let mut content_string = false;
    // The members of `message` the mapping takes out, in the order it takes them.
    let taken: &[&str];
    let mut message: Message = match role {
        "user" => {
            taken = &["content"];
            let mut m = UserMessage::new(place.session, id, timestamp);
            let prov = Provenance::Conversational;
            match *nodes.get(content)? {
                Node::String(s) => {
                    content_string = true;
                    m.push(TextPart::new(m.part_key(), prov, text(s)));
                }
                _ => {
                    for block in jsonl::tape_items(nodes, content)? {
                        let b = Block::of(nodes, block)?;
                        match b.kind {
                            "text" => m.push(b.text_part(origin, keys, m.part_key())?),
                            _ => return None,
                        }
                    }
                }
            }
            m.into()
        }
        "assistant" => {
            taken = &["content"];
            let mut m = AssistantMessage::new(place.session, id, timestamp);
            let prov = Provenance::Conversational;
            for block in jsonl::tape_items(nodes, content)? {
                let b = Block::of(nodes, block)?;
                match b.kind {
                    "text" => m.push(b.text_part(origin, keys, m.part_key())?),
                    "thinking" => {
                        let mut p =
                            ReasoningPart::new(m.part_key(), prov, text(b.str("thinking")?));
                        // A reasoning part's leftovers are kept whole (`set_options`).
                        set_options(&mut p.options, b.rest(origin, &["thinking"])?);
                        m.push(p);
                    }
                    "toolCall" => {
                        let (call, name) = (b.str("id")?, b.str("name")?);
                        let arguments = value_at(nodes, b.field("arguments")?, 4)?;
                        let mut p = ToolCallPart::new(
                            m.part_key(),
                            prov,
                            text(call),
                            text(name),
                            Json::from(extracted(origin, arguments)),
                            false,
                        );
                        b.leftovers(origin, keys, "", &mut p.options)?;
                        m.push(p);
                    }
                    _ => return None,
                }
            }
            m.into()
        }
        _ => {
            let mut m = ToolMessage::new(place.session, id, timestamp);
            let call = jsonl::tape_str(nodes, field("toolCallId")?)?;
            let name = field("toolName").and_then(|at| jsonl::tape_str(nodes, at));
            taken = if name.is_some() {
                &["toolCallId", "toolName", "content"]
            } else {
                &["toolCallId", "content"]
            };
            let failed = matches!(
                field("isError").and_then(|at| nodes.get(at)),
                Some(Node::Static(StaticNode::Bool(true)))
            );
            // model-part-provenance: tool output is the runtime's.
            m.push(ToolResultPart::new(
                m.part_key(),
                Provenance::Injected,
                text(call),
                name.map(text),
                failed,
                Json::from(extracted(origin, value_at(nodes, content, 2)?)),
            ));
            m.into()
        }
    };
    // The message's leftovers: the members the pruned record holds, less those taken.
    // (A member the pruned read leaves out names none of the keys: `Prune::wants`.)
    let msg = if members
        .iter()
        .any(|&(key, at)| !taken.contains(&key) && wants(prune, nodes, key, at))
    {
        let built = members
            .iter()
            .filter(|&&(key, at)| prune.read.contains(&key) || wants(prune, nodes, key, at));
        // Of the leftovers, only the members the writer can find a key in are kept (as
        // `map_record` keeps them): one where no key may occur is never built.
        let mut map = jsonl::tape_rest(nodes, built, taken, 2, |key, at| {
            wants(prune, nodes, key, at)
        })?;
        crate::discover::keep_named(&mut map, keys);
        (!map.is_empty()).then(|| extracted(origin, map))
    } else {
        None
    };
    // The entry's leftovers: its members less `id` and `message`.
    let entry = if top
        .iter()
        .any(|&(key, at)| !matches!(key, "id" | "message") && wants(prune, nodes, key, at))
    {
        let mut fields = Vec::with_capacity(top.len());
        for &(key, at) in &top {
            let value = if key == "message" {
                jsonl::pruned_object(nodes, &mut at.clone(), prune)?
            } else {
                value_at(nodes, at, 1)?
            };
            fields.push((key.to_owned(), value));
        }
        let mut record = Record::from_members(origin, Locator::Line(place.entry.line), fields);
        record.take("id");
        record.take("message");
        rest_names_any(&record, keys).then(|| record.into_rest())
    } else {
        None
    };
    put_leftovers(&mut message, entry, msg, Vec::new(), content_string);
    mark_source(&mut message, place.file, place.entry, true);
    Some(message)
}

/// Whether one of the writer's option keys may occur in the member `key` at `nodes[at]`
/// ([`jsonl::tape_wants`]; `true` is checked on the built value).
fn wants(prune: &Prune, nodes: &[Node<'_>], key: &str, at: usize) -> bool {
    jsonl::tape_wants(prune.wanted, nodes, key, at)
}

/// A content block: an object naming each member once, with a string `type`.
struct Block<'t, 'n> {
    nodes: &'t [Node<'n>],
    kind: &'n str,
    members: Vec<(&'n str, usize)>,
}

impl<'t, 'n> Block<'t, 'n> {
    fn of(nodes: &'t [Node<'n>], at: usize) -> Option<Self> {
        let members = jsonl::tape_members(nodes, at)?;
        let kind = members
            .iter()
            .find(|(k, _)| *k == "type")
            .and_then(|&(_, at)| jsonl::tape_str(nodes, at))?;
        Some(Self {
            nodes,
            kind,
            members,
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

    /// A text block's part (a user's or an assistant's text is conversational).
    fn text_part(&self, origin: &Origin, keys: &[&str], key: PartKey) -> Option<TextPart> {
        let text = Text::from(origin.line_text(self.str("text")?));
        let mut p = TextPart::new(key, Provenance::Conversational, text);
        self.leftovers(origin, keys, "text", &mut p.options)?;
        Some(p)
    }

    /// What the block, as the record holds it (an item of `message.content`), leaves once
    /// the members `taken` are taken out of it.
    fn rest(&self, origin: &Origin, taken: &[&str]) -> Option<Extracted<Map<String, Value>>> {
        Some(extracted(
            origin,
            jsonl::tape_rest(self.nodes, self.members.iter(), taken, 4, |_, _| true)?,
        ))
    }

    /// A text or tool call part's leftovers (`Kept::part_options`): the block less what the
    /// part took (`text`, or a tool call's `id`, `name` and `arguments` when `taken` is
    /// empty), kept where one of the writer's keys occurs in them.
    fn leftovers(
        &self,
        origin: &Origin,
        keys: &[&str],
        taken: &str,
        options: &mut Map<String, Value>,
    ) -> Option<()> {
        let taken: &[&str] = if taken.is_empty() {
            &["id", "name", "arguments"]
        } else {
            std::slice::from_ref(&taken)
        };
        let maybe = self.members.iter().any(|&(key, at)| {
            !taken.contains(&key) && jsonl::tape_wants(keys, self.nodes, key, at)
        });
        if maybe {
            let rest = self.rest(origin, taken)?;
            if names_any(rest.get(), keys) {
                set_options(options, rest);
            }
        }
        Some(())
    }
}

/// The value at `nodes[at]`, built as the record's fast path builds it at `depth`.
fn value_at(nodes: &[Node<'_>], at: usize, depth: usize) -> Option<Value> {
    jsonl::tape_value(nodes, &mut at.clone(), depth)
}

/// A value decoded from the line's tape: source data, as the line's record would hold it.
fn extracted<T>(origin: &Origin, value: T) -> Extracted<T> {
    origin.line_text("").derive(|_| value)
}

/// Checks one line of a pi file against [`message`], for the tests and the fuzz targets: for
/// each foreign writer's option keys, where [`message`] maps the line, its message must be the
/// one `map_entry` makes of the line's pruned record, members and their order included
/// (compared as serialized). Returns how many of the writers' reads it mapped; `Err` names the
/// keys and both messages where they differ. A line that is no whole record is skipped (the
/// second pass reads such a line otherwise).
pub fn check_line(origin: &Origin, bytes: &[u8]) -> Result<usize, String> {
    use super::read::{MESSAGE_READS, entry_record, map_entry};
    if !may_map(bytes) {
        return Ok(0);
    }
    let Ok(whole) = jsonl::record_here(origin, 1, bytes) else {
        return Ok(0);
    };
    let (entry, _) = Entry::of_record(&whole);
    crate::face::check_shortcut(origin, "a pi entry", |keys, session, anchor| {
        let prune = Prune {
            object: "message",
            read: MESSAGE_READS,
            unread: &[],
            wanted: keys,
        };
        let place = Place {
            entry: &entry,
            session,
            anchor,
            file: "s.jsonl",
        };
        let Some(fast) = jsonl::on_tape_here(bytes, |nodes| message(origin, nodes, &place, &prune))
        else {
            return Ok(None);
        };
        let record = entry_record(Some(&prune), |p| {
            jsonl::record_here_pruned(origin, 1, bytes, p)
        })
        .map_err(|e| e.to_string())?;
        let made = map_entry(record, &entry, session, anchor, "s.jsonl", Some(keys));
        Ok(Some((fast, made)))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pi::NAME;

    /// Entries of the shapes [`message`] maps, and next to them those it leaves (a block of
    /// another kind, a member named twice, another role): leftovers naming a writer's key in a
    /// block, a message and an entry, a message's epoch `timestamp` alone (and `0`, which the
    /// record reads as `-0.0`), a `toolName` that is no string, a string content.
    fn crafted() -> Vec<Vec<u8>> {
        let entry = |message: &str| {
            format!(
                r#"{{"type":"message","id":"e1","parentId":"e0","timestamp":"2025-11-21T10:00:01.000Z","message":{message}}}"#
            )
        };
        let mut lines: Vec<String> = [
            r#"{"role":"user","content":"plain \"quoted\" \u0001","timestamp":1763719201000}"#,
            r#"{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b","model":"m"}]}"#,
            r#"{"role":"user","content":[{"type":"text","text":"a","note":"model"}]}"#,
            r#"{"role":"user","content":[{"type":"image","data":"AAAA","mimeType":"image/png"}]}"#,
            r#"{"role":"user","content":[{"type":"text","text":"a","type":"text"}]}"#,
            r#"{"role":"user","content":[{"type":"text","text":7}]}"#,
            r#"{"role":"user","content":["bare"]}"#,
            r#"{"role":"custom","content":"injected"}"#,
            r#"{"role":"assistant","content":[{"type":"thinking","thinking":"hm","thinkingSignature":"sig"},{"type":"text","text":"ok","textSignature":"t"},{"type":"toolCall","id":"c1","name":"ls","arguments":{"path":".","deep":{"a":[1,2.5,-0,null,true]}}},{"type":"text","text":"by","model":"m-1"}],"api":"openai-responses","provider":"p","model":"m","usage":{"input":1,"cost":{"total":0.5}},"stopReason":"toolUse","timestamp":1763719202000}"#,
            r#"{"role":"assistant","content":[{"type":"toolCall","id":"c2","name":"ls","arguments":"{}","provider":"x"}],"model":{"provider":"nested"}}"#,
            r#"{"role":"assistant","content":[{"type":"mystery","x":1}]}"#,
            r#"{"role":"assistant","content":"not blocks"}"#,
            r#"{"role":"assistant","content":[],"role":"assistant"}"#,
            r#"{"role":"toolResult","toolCallId":"c1","toolName":"ls","content":[{"type":"text","text":"a\nb"}],"details":{"diff":"-a\n+b"},"isError":false,"timestamp":1763719203000}"#,
            r#"{"role":"toolResult","toolCallId":"c1","toolName":7,"content":"text","isError":true}"#,
            r#"{"role":"toolResult","toolCallId":"c1","content":{"model":"in content"},"isError":"yes","extra":"provider"}"#,
            r#"{"role":"toolResult","toolCallId":3,"content":[]}"#,
            r#"{"role":"toolResult","toolCallId":"c1"}"#,
            r#"{"role":"bashExecution","command":"ls","output":"a"}"#,
            // A leftover where a key occurs only in a member named twice, which the built
            // value holds once (the later): the member is not kept.
            r#"{"role":"assistant","content":[],"meta":{"k":{"z":"model"},"k":1},"model":"m"}"#,
        ]
        .iter()
        .map(|m| entry(m))
        .collect();
        lines.extend([
            // The entry's own leftovers name a key; no top-level `timestamp`; an unusable one
            // with an epoch `timestamp` of 0; version 1 (no ids); a member pi does not write.
            r#"{"type":"message","id":"e1","parentId":"model","timestamp":"2025-11-21T10:00:01.000Z","message":{"role":"user","content":"x"}}"#.to_owned(),
            r#"{"type":"message","id":"e1","parentId":"e0","message":{"role":"user","content":"x","timestamp":1763719201000}}"#.to_owned(),
            r#"{"type":"message","id":"e1","parentId":"e0","timestamp":"yesterday","message":{"role":"user","content":"x","timestamp":0}}"#.to_owned(),
            r#"{"type":"message","timestamp":"2025-11-21T10:00:01.000Z","message":{"role":"user","content":"x"}}"#.to_owned(),
            r#"{"type":"message","id":"e1","parentId":"e0","timestamp":"2025-11-21T10:00:01.000Z","message":{"role":"user","content":"x"},"label":"model"}"#.to_owned(),
        ]);
        lines.into_iter().map(String::into_bytes).collect()
    }

    /// Every pi entry of the shared fixtures and [`crafted`]'s, read with each writer's keys
    /// ([`check_line`]): where [`message`] maps an entry, its message is the one `map_entry`
    /// makes of the pruned record; it maps every message line of the fixtures for every writer;
    /// of the crafted lines, those of the shapes it maps and no other.
    #[test]
    fn an_entry_mapped_from_its_tape_is_the_message_its_record_makes() {
        let origin = Origin::new(NAME, "/x/s.jsonl", "s.jsonl");
        let fixtures = jsonl::tests::fixture_lines("pi", &[".jsonl"]);
        let (mut may, mut mapped) = (0, 0);
        for bytes in &fixtures {
            let n = check_line(&origin, bytes).unwrap_or_else(|e| panic!("{e}"));
            may += usize::from(may_map(bytes));
            mapped += n;
        }
        assert!(may > 1000, "{may} fixture message lines");
        assert_eq!(
            mapped,
            4 * may,
            "{mapped} reads of {may} fixture message lines mapped"
        );
        let mapped: Vec<usize> = crafted()
            .iter()
            .map(|bytes| check_line(&origin, bytes).unwrap_or_else(|e| panic!("{e}")))
            .collect();
        assert_eq!(
            mapped,
            [
                4, 4, 4, 0, 0, 0, 0, 0, 4, 4, 0, 0, 0, 4, 4, 4, 0, 0, 0, 4, 4, 4, 4, 4, 0
            ]
        );
    }
}

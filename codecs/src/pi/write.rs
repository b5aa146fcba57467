//! The native write: the main session and its forked children come back together as the one pi
//! file they were read from, header first, entries in their original line order (which keeps the
//! tree: every entry keeps its `id` and `parentId`). An entry shared by two branches is written
//! once.
//!
//! The reader gives a file's main line in line order and its side branches after it, so the
//! entries are written as they come while each is the next line of the file, alone on it (a file
//! with no fork is never held); from the first that is not (a side branch's lines lie between the
//! main line's), the rest are held and written in line order when the source ends.

use super::NAME;
use super::foreign;
use crate::face::{
    CarriedLine, Fidelity, Layout, SessionWriter, Target, WriteError, WriteFace, Written,
};
use crate::hold::Streamed as _;
use crate::jsonl;
use pond_canonical::{FileData, Message, PartRef, Session};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// The write face.
pub struct PiWriter;

impl WriteFace for PiWriter {
    fn writer(&self, layout: Layout) -> Box<dyn SessionWriter> {
        Box::new(FileWriter {
            layout: Some(layout),
            flat: layout == Layout::Harness && super::session_dir_override().is_some(),
            ..FileWriter::default()
        })
    }
}

/// The command that resumes a written session: by its file relative to the output (Mirror), or
/// from its project by its id, which pi looks up in that project's session folder (Harness).
fn resume_command(layout: Layout, file: &str, cwd: &str, id: &str) -> String {
    match layout {
        // `./` so a file under `--<cwd>--/` is not taken for an option.
        Layout::Mirror => format!("pi --session {}", shell_quote(&format!("./{file}"))),
        Layout::Harness => format!("cd {} && pi --session {id}", shell_quote(cwd)),
    }
}

/// `s` quoted for a POSIX shell.
fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-+:@%,=".contains(&b))
    {
        return s.to_owned();
    }
    format!("'{}'", s.replace('\'', "'\\''"))
}

#[derive(Default)]
struct PiFile {
    /// Where it goes when not at its source path (Harness layout).
    out: Option<String>,
    header: Option<Map<String, Value>>,
    /// The entries not written as they came, by source line, each as its JSON line (held as
    /// text, not as values, until the source ends); entries with no line follow, in arrival
    /// order.
    entries: BTreeMap<(u64, u64), Vec<u8>>,
    /// The line the next entry written at once must come from: `Some` while every entry so far
    /// came from the line after the one before, alone on it (the header's on line 1), and was
    /// written as it came; `None` once one did not, or for a file without its main header.
    stream_next: Option<u64>,
    /// The last line written as it came (0: none). Every line from 2 to it was written, each
    /// one record, so an entry from one of them is one already written (a branch's copy).
    written_through: u64,
}

#[derive(Default)]
struct FileWriter {
    layout: Option<Layout>,
    /// Files go in the output root itself, not in per-project folders (an install into pi's
    /// `PI_CODING_AGENT_SESSION_DIR`, [`super::session_dir_override`]).
    flat: bool,
    /// Foreign sessions of the current source, written as their entries become final.
    foreign: Vec<foreign::ForeignFile>,
    foreign_index: crate::LookupMap<String, usize>,
    files: Vec<(String, PiFile)>,
    /// Session id to index in `files`.
    sessions: crate::LookupMap<String, usize>,
    arrivals: u64,
    /// The entry line being made.
    line: Vec<u8>,
}

fn object(v: Option<&Value>) -> Map<String, Value> {
    v.and_then(Value::as_object).cloned().unwrap_or_default()
}

impl SessionWriter for FileWriter {
    fn option_keys(&self) -> Option<&'static [&'static str]> {
        Some(super::foreign::OPTION_KEYS)
    }

    fn carried(
        &mut self,
        carried: &CarriedLine<'_>,
        target: &mut Target<'_>,
    ) -> Result<(), WriteError> {
        match self.foreign_index.get(carried.session_id().as_str()) {
            Some(&i) => self.foreign[i].carried(carried, foreign::SOURCE_RECORD, target),
            None => self.message(&carried.message(), target),
        }
    }

    fn session(
        &mut self,
        session: &Session,
        fidelity: Fidelity,
        target: &mut Target<'_>,
    ) -> Result<(), WriteError> {
        if fidelity == Fidelity::Foreign {
            self.foreign_index
                .insert(session.id.to_string(), self.foreign.len());
            self.foreign.push(foreign::ForeignFile::start(
                session,
                self.flat,
                target.losses,
            ));
            return Ok(());
        }
        let source = object(session.options.get("source"));
        let file = match source.get("file").and_then(Value::as_str) {
            Some(f) if !f.is_empty() => f.to_owned(),
            _ => format!("{}.jsonl", session.id),
        };
        let i = match self.files.iter().position(|(f, _)| *f == file) {
            Some(i) => i,
            None => {
                self.files.push((file, PiFile::default()));
                self.files.len() - 1
            }
        };
        if (session.parent_session_id.is_none() || self.files[i].1.header.is_none())
            && let Some(header) = session.options.get(NAME).and_then(|o| o.get("header"))
        {
            let mut h = Map::new();
            h.extend(object(Some(header)));
            h.insert("id".into(), Value::from(session.id.as_str()));
            if self.layout == Some(Layout::Harness) {
                self.files[i].1.out = harness_path(&h, self.flat);
            }
            let file = &mut self.files[i].1;
            // The main session's header, before any entry: its entries may go out as they come.
            file.stream_next = (session.parent_session_id.is_none()
                && file.entries.is_empty()
                && file.written_through == 0)
                .then_some(2);
            file.header = Some(h);
        }
        self.sessions.insert(session.id.to_string(), i);
        Ok(())
    }

    fn message(&mut self, message: &Message, target: &mut Target<'_>) -> Result<(), WriteError> {
        if let Some(&i) = self.foreign_index.get(message.session_id().as_str()) {
            return self.foreign[i].push(message, target);
        }
        let Some(&i) = self.sessions.get(message.session_id().as_str()) else {
            return Err(WriteError::Unrepresentable {
                session: message.session_id().to_string(),
                reason: format!("message {} arrived before its session", message.id()),
            });
        };
        self.line.clear();
        if !write_entry(&mut self.line, message, target) {
            return Ok(());
        }
        self.arrivals += 1;
        let source = message.options().get("source");
        let line = source.and_then(|s| s.get("line")).and_then(Value::as_u64);
        // Records that shared a line in the source (`{...}{...}`) each get a line of their own.
        let record_in_line = source
            .and_then(|s| s.get("record_in_line"))
            .and_then(Value::as_u64)
            .unwrap_or(0);
        let key = match line {
            Some(l) => (l, record_in_line),
            None => (u64::MAX, self.arrivals),
        };
        let (name, file) = &mut self.files[i];
        // An entry alone on its line (a line of several marks each of its records).
        if let Some(l) = line
            && record_in_line == 0
        {
            if l <= file.written_through {
                // Written already, as another branch's copy of the entry.
                return Ok(());
            }
            if file.stream_next == Some(l)
                && let Some(header) = &file.header
            {
                let path = file.out.as_ref().unwrap_or(name);
                if file.written_through == 0 {
                    let mut first = Vec::new();
                    jsonl::write_value_map(&mut first, header);
                    first.push(b'\n');
                    target.out.append(path, &first)?;
                }
                target.out.append(path, &self.line)?;
                file.written_through = l;
                file.stream_next = Some(l + 1);
                return Ok(());
            }
        }
        file.stream_next = None;
        if let std::collections::btree_map::Entry::Vacant(slot) = file.entries.entry(key) {
            // Held at its length: a line grown in place has up to twice its length allocated.
            slot.insert(self.line.clone());
        }
        Ok(())
    }

    fn end_source(&mut self, target: &mut Target<'_>) -> Result<(), WriteError> {
        self.sessions.clear();
        let layout = self.layout.unwrap_or(Layout::Mirror);
        self.foreign_index.clear();
        for mut file in std::mem::take(&mut self.foreign) {
            // Foreign (spec 6.3): pi's own layout whatever the layout asked.
            file.finish(target)?;
            let session = file.session();
            target.written.push(Written {
                source_session: session.id.to_string(),
                resume: Some(resume_command(
                    layout,
                    &file.path,
                    session.project.as_str(),
                    &file.id,
                )),
                session: file.id.clone(),
                file: file.path.clone(),
            });
        }
        for (path, file) in std::mem::take(&mut self.files) {
            let path = file.out.clone().unwrap_or(path);
            let mut bytes = Vec::new();
            if let Some(header) = file.header {
                let id = header.get("id").and_then(Value::as_str).unwrap_or("");
                let cwd = header.get("cwd").and_then(Value::as_str).unwrap_or("");
                target.written.push(Written {
                    source_session: id.to_owned(),
                    session: id.to_owned(),
                    file: path.clone(),
                    resume: Some(resume_command(layout, &path, cwd, id)),
                });
                // Where entries went out as they came, the header went before them.
                if file.written_through == 0 {
                    push_line(&mut bytes, &Value::Object(header));
                }
            } else {
                target.losses.record(
                    "pi_header",
                    &path,
                    "no main session with a pi header was written to this file",
                );
            }
            target.out.append(&path, &bytes)?;
            for line in file.entries.into_values() {
                target.out.append(&path, &line)?;
            }
        }
        Ok(())
    }
}

/// pi's own place for a native file (Layout::Harness): from its header's cwd, time and id.
fn harness_path(header: &Map<String, Value>, flat: bool) -> Option<String> {
    let cwd = header.get("cwd")?.as_str()?;
    let stamp = header.get("timestamp")?.as_str()?;
    let id = header.get("id")?.as_str()?;
    Some(format!(
        "{}{}_{id}.jsonl",
        super::session_folder(cwd, flat),
        stamp.replace([':', '.'], "-")
    ))
}

fn push_line(bytes: &mut Vec<u8>, v: &Value) {
    jsonl::write_value(bytes, v);
    bytes.push(b'\n');
}

/// The object `v` names, or an empty one: what a missing or non-object option reads as.
fn members(v: Option<&Value>) -> &Map<String, Value> {
    static EMPTY: std::sync::OnceLock<Map<String, Value>> = std::sync::OnceLock::new();
    match v {
        Some(Value::Object(map)) => map,
        _ => EMPTY.get_or_init(Map::new),
    }
}

/// The text of a text or reasoning part.
fn text_of<'a>(p: &PartRef<'a>) -> Option<&'a str> {
    match p {
        PartRef::Text(t) => Some(t.text.as_str()),
        PartRef::Reasoning(r) => Some(r.text.as_str()),
        _ => None,
    }
}

/// Appends the entry line of one message (its JSON and a line break), written from the message
/// and the members its options keep without building it as a value first; `false` (nothing
/// appended) for a message pi has no entry for. Byte for byte the `Map` the entry would be: `id`
/// first (unless the id came from the entry's position), the entry's kept members in their
/// order, then the member the message's parts fill (`summary`, `content` or `message`), each in
/// the place `Map::insert` would give it.
fn write_entry(out: &mut Vec<u8>, m: &Message, target: &mut Target<'_>) -> bool {
    if let Message::System(s) = m {
        if let Some(record) = s.carried_record() {
            jsonl::write_value_map(out, record);
            out.push(b'\n');
            return true;
        }
        target.losses.record(
            "system_message",
            format!("{} {}", m.session_id(), m.id()),
            "pi has no system messages",
        );
        return false;
    }
    let parts = m.part_refs();
    let options = m.options();
    let pi = members(options.get(NAME));
    let source = members(options.get("source"));
    let as_string = source.get("content").and_then(Value::as_str) == Some("string");
    let unmapped = pi
        .get("unmapped")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    let kept = members(pi.get("entry"));
    let id = (source.get("id_from_position") != Some(&Value::Bool(true))).then(|| m.id().as_str());
    let kind = kept.get("type").and_then(Value::as_str).unwrap_or("");
    let filled: Option<&str> = match kind {
        "compaction" | "branch_summary" => parts.first().and_then(text_of).map(|_| "summary"),
        "custom_message" => Some("content"),
        _ => Some("message"),
    };
    write_led_object(out, id, kept, filled, |out| match kind {
        "compaction" | "branch_summary" => {
            jsonl::write_str(out, parts.first().and_then(text_of).unwrap_or(""));
        }
        "custom_message" => write_content(out, &parts, unmapped, as_string),
        _ => write_message(out, members(pi.get("message")), &parts, unmapped, as_string),
    });
    out.push(b'\n');
    true
}

/// Appends the object a `Map` would be that got `id` (when given) inserted first, then every
/// member of `kept`, then the member `filled` (when given) written by `put`: a key already
/// there keeps its place and takes the later value.
fn write_led_object(
    out: &mut Vec<u8>,
    id: Option<&str>,
    kept: &Map<String, Value>,
    filled: Option<&str>,
    put: impl FnOnce(&mut Vec<u8>),
) {
    let mut put = Some(put);
    let mut fill = |out: &mut Vec<u8>| {
        if let Some(put) = put.take() {
            put(out);
        }
    };
    out.push(b'{');
    let mut first = true;
    let mut key = |out: &mut Vec<u8>, k: &str| {
        if !std::mem::take(&mut first) {
            out.push(b',');
        }
        jsonl::write_str(out, k);
        out.push(b':');
    };
    if let Some(id) = id {
        key(out, "id");
        match kept.get("id") {
            _ if filled == Some("id") => fill(out),
            Some(v) => jsonl::write_value(out, v),
            None => jsonl::write_str(out, id),
        }
    }
    let mut filled_in_place = false;
    for (k, v) in kept {
        if id.is_some() && k == "id" {
            continue;
        }
        key(out, k);
        if filled == Some(k.as_str()) {
            filled_in_place = true;
            fill(out);
        } else {
            jsonl::write_value(out, v);
        }
    }
    if let Some(k) = filled
        && !filled_in_place
        && !(id.is_some() && k == "id")
    {
        key(out, k);
        fill(out);
    }
    out.push(b'}');
}

/// Appends an entry's `message`: its kept members with those its parts fill, by its role.
fn write_message(
    out: &mut Vec<u8>,
    kept: &Map<String, Value>,
    parts: &[PartRef<'_>],
    unmapped: &[Value],
    as_string: bool,
) {
    let role = kept.get("role").and_then(Value::as_str).unwrap_or("");
    let none = |_: &mut Vec<u8>, _: usize| Ok::<(), std::convert::Infallible>(());
    let written = match role {
        "user" | "custom" | "hookMessage" | "assistant" => {
            jsonl::write_object(out, kept, &["content"], |out, _| {
                write_content(out, parts, unmapped, as_string);
                Ok(())
            })
        }
        "toolResult" => match parts.first() {
            Some(PartRef::ToolResult(r)) => {
                let keys: &[&str] = match r.name {
                    Some(_) => &["toolCallId", "toolName", "content"],
                    None => &["toolCallId", "content"],
                };
                jsonl::write_object(out, kept, keys, |out, i| {
                    match keys[i] {
                        "toolCallId" => jsonl::write_str(out, r.call_id.as_str()),
                        "toolName" => {
                            jsonl::write_str(out, r.name.as_ref().map_or("", |n| n.as_str()))
                        }
                        _ => jsonl::write_json(out, &r.result),
                    }
                    Ok(())
                })
            }
            _ => jsonl::write_object(out, kept, &[], none),
        },
        "bashExecution" => {
            // `command` and `output` from the first two parts, each where it is text.
            let texts: Vec<(&str, &str)> = ["command", "output"]
                .into_iter()
                .zip(parts)
                .filter_map(|(field, p)| Some((field, text_of(p)?)))
                .collect();
            let keys: Vec<&str> = texts.iter().map(|(k, _)| *k).collect();
            jsonl::write_object(out, kept, &keys, |out, i| {
                jsonl::write_str(out, texts[i].1);
                Ok(())
            })
        }
        _ => match parts.first().and_then(text_of) {
            Some(text) => jsonl::write_object(out, kept, &["summary"], |out, _| {
                jsonl::write_str(out, text);
                Ok(())
            }),
            None => jsonl::write_object(out, kept, &[], none),
        },
    };
    let Ok(()) = written;
}

/// One block of a content array: a part pi has a block for, or a block kept as it was read.
enum Block<'a> {
    Part(&'a PartRef<'a>),
    Kept(&'a Value),
}

/// Appends a content value: the string it was, or the blocks with unmapped ones back at their
/// index.
fn write_content(out: &mut Vec<u8>, parts: &[PartRef<'_>], unmapped: &[Value], as_string: bool) {
    if as_string {
        jsonl::write_str(out, parts.first().and_then(text_of).unwrap_or(""));
        return;
    }
    let mut blocks: Vec<Block<'_>> = parts
        .iter()
        .filter(|p| {
            matches!(
                p,
                PartRef::Text(_) | PartRef::Reasoning(_) | PartRef::ToolCall(_) | PartRef::File(_)
            )
        })
        .map(Block::Part)
        .collect();
    static NULL: Value = Value::Null;
    for u in unmapped {
        let index = u.get("index").and_then(Value::as_u64).unwrap_or(u64::MAX) as usize;
        let b = u.get("block").unwrap_or(&NULL);
        blocks.insert(index.min(blocks.len()), Block::Kept(b));
    }
    out.push(b'[');
    for (i, b) in blocks.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        match b {
            Block::Part(p) => write_block(out, p),
            Block::Kept(v) => jsonl::write_value(out, v),
        }
    }
    out.push(b']');
}

/// Appends the block of a text, reasoning, tool call or file part: its kept members with those
/// the part fills.
fn write_block(out: &mut Vec<u8>, p: &PartRef<'_>) {
    let (options, keys): (_, &[&str]) = match p {
        PartRef::Text(t) => (&t.options, &["text"]),
        PartRef::Reasoning(r) => (&r.options, &["thinking"]),
        PartRef::ToolCall(c) => (&c.options, &["id", "name", "arguments"]),
        PartRef::File(f) => (&f.options, &["data", "mimeType"]),
        _ => return,
    };
    let written = jsonl::write_object(out, members(options.get(NAME)), keys, |out, i| {
        match (p, i) {
            (PartRef::Text(t), _) => jsonl::write_str(out, t.text.as_str()),
            (PartRef::Reasoning(r), _) => jsonl::write_str(out, r.text.as_str()),
            (PartRef::ToolCall(c), 0) => jsonl::write_str(out, c.call_id.as_str()),
            (PartRef::ToolCall(c), 1) => jsonl::write_str(out, c.name.as_str()),
            (PartRef::ToolCall(c), _) => jsonl::write_value(out, c.params.as_value()),
            (PartRef::File(f), 0) => match &f.data {
                FileData::Base64(d) | FileData::Url(d) => jsonl::write_str(out, d),
            },
            (PartRef::File(f), _) => jsonl::write_str(out, f.media_type.as_str()),
            _ => {}
        }
        Ok::<(), std::convert::Infallible>(())
    });
    let Ok(()) = written;
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The object `Map` would make: `id` inserted, then `kept` extended, then `filled` inserted.
    fn as_a_map(id: Option<&str>, kept: &Map<String, Value>, filled: Option<&str>) -> Vec<u8> {
        let mut map = Map::new();
        if let Some(id) = id {
            map.insert("id".into(), Value::from(id));
        }
        map.extend(kept.clone());
        if let Some(k) = filled {
            map.insert(k.into(), json!("FILLED"));
        }
        let mut out = Vec::new();
        jsonl::write_value_map(&mut out, &map);
        out
    }

    #[test]
    fn an_entry_is_written_as_the_map_it_would_be() {
        let kepts = [
            json!({}),
            json!({"type": "message", "parentId": "p", "timestamp": "t"}),
            json!({"type": "message", "message": {"old": 1}, "z": null}),
            json!({"id": "kept-id", "type": "custom_message", "content": "x"}),
            json!({"type": "compaction", "summary": "old", "id": 7}),
        ];
        for kept in &kepts {
            let kept = kept.as_object().unwrap();
            for id in [None, Some("the-id")] {
                for filled in [
                    None,
                    Some("message"),
                    Some("content"),
                    Some("summary"),
                    Some("id"),
                ] {
                    let mut out = Vec::new();
                    write_led_object(&mut out, id, kept, filled, |out| {
                        jsonl::write_str(out, "FILLED")
                    });
                    assert_eq!(
                        String::from_utf8(out).unwrap(),
                        String::from_utf8(as_a_map(id, kept, filled)).unwrap(),
                        "id {id:?}, kept {kept:?}, filled {filled:?}"
                    );
                }
            }
        }
    }
}

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
use pond_canonical::{FileData, Message, Part, Session};
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
        let Some(entry) = entry(message, target) else {
            return Ok(());
        };
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
                self.line.clear();
                if file.written_through == 0 {
                    push_line(&mut self.line, &Value::Object(header.clone()));
                }
                push_line(&mut self.line, &entry);
                target.out.append(path, &self.line)?;
                file.written_through = l;
                file.stream_next = Some(l + 1);
                return Ok(());
            }
        }
        file.stream_next = None;
        if let std::collections::btree_map::Entry::Vacant(slot) = file.entries.entry(key) {
            let line = &mut self.line;
            line.clear();
            push_line(line, &entry);
            // Held at its length: a line grown in place has up to twice its length allocated.
            slot.insert(line.clone());
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

fn text_of(p: &Part) -> Option<Value> {
    match p {
        Part::Text(t) => Some(Value::from(t.text.as_str())),
        Part::Reasoning(r) => Some(Value::from(r.text.as_str())),
        _ => None,
    }
}

/// The entry of one message.
fn entry(m: &Message, target: &mut Target<'_>) -> Option<Value> {
    if let Message::System(s) = m {
        if let Some(record) = s.carried_record() {
            return Some(Value::Object(record.clone()));
        }
        target.losses.record(
            "system_message",
            format!("{} {}", m.session_id(), m.id()),
            "pi has no system messages",
        );
        return None;
    }
    let parts = m.parts();
    let options = m.options();
    let pi = object(options.get(NAME));
    let source = object(options.get("source"));
    let as_string = source.get("content").and_then(Value::as_str) == Some("string");
    let unmapped = pi
        .get("unmapped")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut entry = Map::new();
    if source.get("id_from_position") != Some(&Value::Bool(true)) {
        entry.insert("id".into(), Value::from(m.id().as_str()));
    }
    entry.extend(object(pi.get("entry")));
    let kind = entry
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    match kind.as_str() {
        "compaction" | "branch_summary" => {
            if let Some(t) = parts.first().and_then(text_of) {
                entry.insert("summary".into(), t);
            }
        }
        "custom_message" => {
            entry.insert("content".into(), content(&parts, &unmapped, as_string));
        }
        _ => {
            let mut msg = object(pi.get("message"));
            let role = msg
                .get("role")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned();
            match role.as_str() {
                "user" | "custom" | "hookMessage" | "assistant" => {
                    msg.insert("content".into(), content(&parts, &unmapped, as_string));
                }
                "toolResult" => {
                    if let Some(Part::ToolResult(r)) = parts.first() {
                        msg.insert("toolCallId".into(), Value::from(r.call_id.as_str()));
                        if let Some(name) = &r.name {
                            msg.insert("toolName".into(), Value::from(name.as_str()));
                        }
                        msg.insert("content".into(), r.result.as_value().clone());
                    }
                }
                "bashExecution" => {
                    for (field, p) in ["command", "output"].into_iter().zip(&parts) {
                        if let Some(t) = text_of(p) {
                            msg.insert(field.into(), t);
                        }
                    }
                }
                _ => {
                    if let Some(t) = parts.first().and_then(text_of) {
                        msg.insert("summary".into(), t);
                    }
                }
            }
            entry.insert("message".into(), Value::Object(msg));
        }
    }
    Some(Value::Object(entry))
}

/// A content value: the string it was, or the blocks with unmapped ones back at their index.
fn content(parts: &[Part], unmapped: &[Value], as_string: bool) -> Value {
    if as_string {
        return parts.first().and_then(text_of).unwrap_or(Value::from(""));
    }
    let mut blocks: Vec<Value> = parts.iter().filter_map(block).collect();
    for u in unmapped {
        let index = u.get("index").and_then(Value::as_u64).unwrap_or(u64::MAX) as usize;
        let b = u.get("block").cloned().unwrap_or(Value::Null);
        blocks.insert(index.min(blocks.len()), b);
    }
    Value::Array(blocks)
}

fn block(p: &Part) -> Option<Value> {
    let (options, fields): (_, Vec<(&str, Value)>) = match p {
        Part::Text(t) => (&t.options, vec![("text", Value::from(t.text.as_str()))]),
        Part::Reasoning(r) => (&r.options, vec![("thinking", Value::from(r.text.as_str()))]),
        Part::ToolCall(c) => (
            &c.options,
            vec![
                ("id", Value::from(c.call_id.as_str())),
                ("name", Value::from(c.name.as_str())),
                ("arguments", c.params.as_value().clone()),
            ],
        ),
        Part::File(f) => {
            let data = match &f.data {
                FileData::Base64(d) | FileData::Url(d) => d.clone(),
            };
            (
                &f.options,
                vec![
                    ("data", Value::from(data)),
                    ("mimeType", Value::from(f.media_type.as_str())),
                ],
            )
        }
        _ => return None,
    };
    let mut obj = object(options.get(NAME));
    for (k, v) in fields {
        obj.insert(k.to_owned(), v);
    }
    Some(Value::Object(obj))
}

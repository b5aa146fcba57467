//! The native write: one `opencode export` document per session, which `opencode import` accepts.
//!
//! Decision (for docs/decisions.md): whatever the source (export JSON, `opencode.db`, the legacy
//! storage tree), the opencode codec writes the `opencode export` document. A session read from an
//! export document goes back to the same relative path; one read from a database or a storage
//! tree goes to `<source path>.export/<session id>.json`. Writing SQLite from outside opencode
//! would bypass its schema migrations and event log and could race a running opencode; a legacy
//! tree is ignored by opencode >= 1.16. `opencode import` is opencode's own supported way in.

use super::NAME;
use super::foreign;
use super::read::RESULT_ID_SUFFIX;
use crate::face::{
    CarriedLine, Fidelity, Layout, SessionWriter, Target, WriteError, WriteFace, Written,
};
use crate::hold::Streamed as _;
use crate::jsonl;
use pond_canonical::{FileData, Message, Part, Session};
use serde_json::{Map, Value};

/// The write face.
pub struct OpencodeWriter;

impl WriteFace for OpencodeWriter {
    fn writer(&self, layout: Layout) -> Box<dyn SessionWriter> {
        Box::new(ExportWriter {
            layout,
            docs: Vec::new(),
            index: crate::LookupMap::default(),
            foreign: Vec::new(),
            foreign_index: crate::LookupMap::default(),
        })
    }
}

/// Writes one document per session, each message as it comes: a native session's document
/// begins with its `info` (known from the session), then its messages; a foreign session's as
/// its messages become final (see [`foreign`]).
struct ExportWriter {
    layout: Layout,
    docs: Vec<NativeDoc>,
    index: crate::LookupMap<String, usize>,
    foreign: Vec<foreign::ForeignDoc>,
    foreign_index: crate::LookupMap<String, usize>,
}

/// The command that resumes an imported session: opencode lists and resumes a session from the
/// project directory `opencode import` was run in, which `opencode [project]` names.
pub(crate) fn resume_command(project: &str, id: &str) -> String {
    format!("opencode {} --session {id}", shell_quote(project))
}

/// `s` quoted for a POSIX shell.
pub(crate) fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-+:@%,=".contains(&b))
    {
        return s.to_owned();
    }
    format!("'{}'", s.replace('\'', "'\\''"))
}

impl SessionWriter for ExportWriter {
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
            // Foreign (spec 6.3): an idiomatic document named by its derived id.
            self.foreign_index
                .insert(session.id.to_string(), self.foreign.len());
            self.foreign
                .push(foreign::ForeignDoc::start(session, target.losses));
            return Ok(());
        }
        let path = match self.layout {
            Layout::Mirror => output_path(session),
            Layout::Harness => format!("{}.json", session.id),
        };
        // The document up to its messages: `info`, then any other member the source had.
        let mut kept = object(session.options.get(NAME));
        let mut info = Map::new();
        info.insert("id".into(), Value::from(session.id.as_str()));
        if let Some(parent) = &session.parent_session_id {
            info.insert("parentID".into(), Value::from(parent.as_str()));
        }
        info.extend(object(kept.get("info")));
        kept.remove("info");
        kept.remove("messages");
        let project = info
            .get("directory")
            .and_then(Value::as_str)
            .unwrap_or(session.project.as_str())
            .to_owned();
        let mut head = b"{\n  \"info\": ".to_vec();
        jsonl::write_value_pretty(&mut head, &Value::Object(info), 1);
        for (key, value) in &kept {
            head.extend_from_slice(b",\n  ");
            jsonl::write_str(&mut head, key);
            head.extend_from_slice(b": ");
            jsonl::write_value_pretty(&mut head, value, 1);
        }
        head.extend_from_slice(b",\n  \"messages\": ");
        target.out.append(&path, &head)?;
        self.index.insert(session.id.to_string(), self.docs.len());
        self.docs.push(NativeDoc {
            session: session.id.to_string(),
            resume: resume_command(&project, session.id.as_str()),
            path,
            messages: 0,
            buf: Vec::new(),
        });
        Ok(())
    }

    fn message(&mut self, message: &Message, target: &mut Target<'_>) -> Result<(), WriteError> {
        if let Some(&i) = self.foreign_index.get(message.session_id().as_str()) {
            return self.foreign[i].push(message, target);
        }
        let Some(&i) = self.index.get(message.session_id().as_str()) else {
            return Err(WriteError::Unrepresentable {
                session: message.session_id().to_string(),
                reason: format!("message {} arrived before its session", message.id()),
            });
        };
        let Some(value) = self::message(message, target) else {
            return Ok(());
        };
        let doc = &mut self.docs[i];
        doc.buf.clear();
        doc.buf.extend_from_slice(if doc.messages == 0 {
            b"[\n    "
        } else {
            b",\n    "
        });
        doc.messages += 1;
        jsonl::write_value_pretty(&mut doc.buf, &value, 2);
        target.out.append(&doc.path, &doc.buf)
    }

    fn end_source(&mut self, target: &mut Target<'_>) -> Result<(), WriteError> {
        self.index.clear();
        self.foreign_index.clear();
        for mut doc in std::mem::take(&mut self.foreign) {
            doc.finish(target)?;
            let session = doc.session();
            target.written.push(Written {
                source_session: session.id.to_string(),
                resume: Some(resume_command(session.project.as_str(), &doc.sid)),
                session: doc.sid.clone(),
                file: doc.path.clone(),
            });
        }
        for doc in std::mem::take(&mut self.docs) {
            let end: &[u8] = if doc.messages == 0 {
                b"[]\n}\n"
            } else {
                b"\n  ]\n}\n"
            };
            target.out.append(&doc.path, end)?;
            target.written.push(Written {
                resume: Some(doc.resume),
                session: doc.session.clone(),
                source_session: doc.session,
                file: doc.path,
            });
        }
        Ok(())
    }
}

fn object(v: Option<&Value>) -> Map<String, Value> {
    v.and_then(Value::as_object).cloned().unwrap_or_default()
}

/// A native session's document being written.
struct NativeDoc {
    /// The session's id (the document's `info.id`).
    session: String,
    path: String,
    resume: String,
    /// Messages written so far.
    messages: usize,
    buf: Vec<u8>,
}

/// Where a session's document goes: back to its export file, or next to its database or tree.
fn output_path(session: &Session) -> String {
    let source = object(session.options.get("source"));
    let file = source.get("file").and_then(Value::as_str).unwrap_or("");
    let format = source.get("format").and_then(Value::as_str).unwrap_or("");
    if format == "export" && !file.is_empty() {
        return file.to_owned();
    }
    let base = match file {
        "" | "." => NAME.to_owned(),
        f => f.trim_end_matches('/').to_owned(),
    };
    format!("{base}.export/{}.json", session.id)
}

fn message(m: &Message, target: &mut Target<'_>) -> Option<Value> {
    let parts = match m {
        Message::System(s) => {
            if let Some(record) = s.carried_record() {
                return Some(Value::Object(record.clone()));
            }
            target.losses.record(
                "system_message",
                format!("{} {}", m.session_id(), m.id()),
                "opencode has no system messages",
            );
            return None;
        }
        _ => m.parts(),
    };
    let mut kept = object(m.options().get(NAME));
    let mut info = Map::new();
    info.extend(object(kept.get("info")));
    info.insert("id".into(), Value::from(m.id().as_str()));
    let sequence = kept.remove("parts");
    kept.remove("info");
    let mut out_parts = Vec::new();
    match sequence {
        Some(Value::Array(sequence)) => {
            for item in sequence {
                match item {
                    Value::String(id) => {
                        if let Some(p) = parts.iter().find(|p| p.id().as_str() == id) {
                            out_parts.extend(part(p, &parts));
                        }
                    }
                    other => out_parts.push(other),
                }
            }
        }
        _ => out_parts.extend(parts.iter().filter_map(|p| part(p, &parts))),
    }
    let mut entry = Map::new();
    entry.insert("info".into(), Value::Object(info));
    entry.insert("parts".into(), Value::Array(out_parts));
    entry.extend(kept);
    Some(Value::Object(entry))
}

/// One opencode part from a canonical part (a tool result is written inside its call's part).
fn part(p: &Part, all: &[Part]) -> Option<Value> {
    let (options, fields): (_, Vec<(&str, Value)>) = match p {
        Part::Text(t) => (&t.options, vec![("text", Value::from(t.text.as_str()))]),
        Part::Reasoning(r) => (&r.options, vec![("text", Value::from(r.text.as_str()))]),
        Part::File(f) => {
            let url = match &f.data {
                FileData::Url(u) | FileData::Base64(u) => u.clone(),
            };
            let mut fields = vec![
                ("mime", Value::from(f.media_type.as_str())),
                ("url", Value::from(url)),
            ];
            if let Some(name) = &f.file_name {
                fields.push(("filename", Value::from(name.as_str())));
            }
            (&f.options, fields)
        }
        Part::ToolCall(c) => {
            let mut state = object(c.options.get(NAME).and_then(|o| o.get("state")));
            state.insert("input".into(), c.params.as_value().clone());
            let result_id = format!("{}{RESULT_ID_SUFFIX}", c.id);
            let result = all.iter().find_map(|r| match r {
                Part::ToolResult(r) if r.id.as_str() == result_id => Some(r),
                _ => None,
            });
            if let Some(r) = result {
                let key = if r.is_failure { "error" } else { "output" };
                state.insert(key.into(), r.result.as_value().clone());
            }
            let fields = vec![
                ("callID", Value::from(c.call_id.as_str())),
                ("tool", Value::from(c.name.as_str())),
                ("state", Value::Object(state)),
            ];
            (&c.options, fields)
        }
        _ => return None,
    };
    let mut obj = object(options.get(NAME));
    for (k, v) in fields {
        obj.insert(k.to_owned(), v);
    }
    obj.insert("id".into(), Value::from(p.id().as_str()));
    Some(Value::Object(obj))
}

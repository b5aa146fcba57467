//! The foreign write: a session from another harness as an idiomatic Claude Code transcript
//! (spec 6.3: a valid session of the target, every loss reported).
//!
//! What Claude Code needs (oracle README, "What Claude Code 2.1.197 needs"; format reference §4,
//! §6, §11) and how it is met:
//! * a `uuid`/`parentUuid` chain in file order: the history is the walk back from the last line;
//! * one `message.id` per API response, shared by its lines: a response is a run of consecutive
//!   canonical assistant messages, one line each;
//! * `message.model` on assistant lines: the source's model where its options name one, else
//!   Claude's own `<synthetic>` marker;
//! * each `tool_use` followed by its `tool_result` (Claude drops either one alone, silently): the
//!   result is moved right after its response; a call without a result or a result without a
//!   call is left out and reported;
//! * the file at `<encoded cwd>/<session uuid>.jsonl`; a sub-agent (a child session without a
//!   cut-point) at `<encoded cwd>/<parent uuid>/subagents/agent-<id>.jsonl`.
//!
//! Sessions are held until the end of their source, because pairing needs the whole session.

use super::naming::{encode_cwd, hex_id, is_uuid, resume_command, uuid_v5};
use crate::face::{Losses, Target, WriteError, Written};
use pond_canonical::{
    AssistantPart, FileData, FilePart, Message, Provenance, Session, ToolPart, ToolResultPart,
    UserPart,
};
use serde_json::{Map, Value, json};
use std::collections::{HashMap, HashSet, VecDeque};

/// The Claude Code version whose transcript format the foreign write produces (the `version`
/// field of every line): the version the oracle checks against.
pub const TARGET_VERSION: &str = "2.1.197";

/// Claude Code's marker for an assistant message no Anthropic model produced (format reference §6).
pub const SYNTHETIC_MODEL: &str = "<synthetic>";

/// A foreign session held until the end of its source.
struct Pending {
    session: Session,
    messages: Vec<Message>,
}

/// Holds foreign sessions and writes them as Claude Code transcripts.
#[derive(Default)]
pub struct ForeignWriter {
    pending: Vec<Pending>,
    index: HashMap<String, usize>,
    /// Every session this writer placed: canonical id -> (Claude session uuid, project).
    known: HashMap<String, (String, String)>,
}

impl ForeignWriter {
    /// Whether `session` is a foreign session held here.
    pub fn holds(&self, session: &str) -> bool {
        self.index.contains_key(session)
    }

    /// A foreign session begins.
    pub fn session(&mut self, session: &Session) {
        self.index
            .insert(session.id.to_string(), self.pending.len());
        self.pending.push(Pending {
            session: session.clone(),
            messages: Vec::new(),
        });
    }

    /// A message of a held session.
    pub fn message(&mut self, message: &Message) {
        if let Some(&i) = self.index.get(message.session_id().as_str())
            && let Some(p) = self.pending.get_mut(i)
        {
            p.messages.push(message.clone());
        }
    }

    /// Writes every held session.
    pub fn flush(&mut self, target: &mut Target<'_>) -> Result<(), WriteError> {
        self.index.clear();
        let pending = std::mem::take(&mut self.pending);
        for p in &pending {
            let uuid = session_uuid(&p.session);
            self.known.insert(
                p.session.id.to_string(),
                (uuid, p.session.project.as_str().to_owned()),
            );
        }
        for p in pending {
            self.write(&p, target)?;
        }
        Ok(())
    }

    fn write(&self, p: &Pending, target: &mut Target<'_>) -> Result<(), WriteError> {
        let session = &p.session;
        let project = session.project.as_str();
        let uuid = session_uuid(session);
        let at = format!("session {}", session.id);
        if uuid != session.id.as_str() {
            target.losses.record(
                "session_id_derived",
                &at,
                format!(
                    "Claude Code session ids are UUIDs: `{}` is written as {uuid} (UUID v5 of the source id)",
                    session.id
                ),
            );
        }
        // A child without a cut-point is a sub-agent; a fork (with a cut-point) is a session of
        // its own in Claude Code, which keeps no on-disk parent pointer (format reference §11).
        let subagent = match (&session.parent_session_id, &session.parent_message_id) {
            (Some(parent), None) => Some(parent.as_str().to_owned()),
            (Some(_), Some(_)) => {
                target.losses.record(
                    "fork_parent_link",
                    &at,
                    "Claude Code keeps no parent pointer for a forked session; it is written as a session of its own",
                );
                None
            }
            _ => None,
        };
        let (file, session_field, agent_id, written_id, resume) = match subagent {
            None => (
                format!("{}/{uuid}.jsonl", encode_cwd(project)),
                uuid.clone(),
                None,
                uuid.clone(),
                resume_command(project, &uuid),
            ),
            Some(parent) => {
                let (parent_uuid, parent_project) =
                    self.known.get(&parent).cloned().unwrap_or_else(|| {
                        let derived = if is_uuid(&parent) {
                            parent.clone()
                        } else {
                            uuid_v5(&format!("session:{}:{parent}", session.source_agent))
                        };
                        (derived, project.to_owned())
                    });
                let agent = format!("a{}", hex_id(&format!("agent:{}", session.id), 16));
                (
                    format!(
                        "{}/{parent_uuid}/subagents/agent-{agent}.jsonl",
                        encode_cwd(&parent_project)
                    ),
                    parent_uuid.clone(),
                    Some(agent.clone()),
                    agent,
                    resume_command(&parent_project, &parent_uuid),
                )
            }
        };
        let mut render = Render::new(session, session_field, agent_id, target.losses);
        render.messages(&p.messages);
        let lines = render.lines;
        if lines.is_empty() {
            target.losses.record(
                "empty_session",
                &at,
                "nothing of the session has a Claude Code form, so no file was written",
            );
            return Ok(());
        }
        let mut bytes = Vec::new();
        for line in &lines {
            let text = serde_json::to_vec(line).map_err(|e| WriteError::Unrepresentable {
                session: session.id.to_string(),
                reason: e.to_string(),
            })?;
            bytes.extend_from_slice(&text);
            bytes.push(b'\n');
        }
        target.out.append(&file, &bytes)?;
        target.written.push(Written {
            source_session: session.id.to_string(),
            session: written_id,
            file,
            resume: Some(resume),
        });
        Ok(())
    }
}

/// The session's id if it is a UUID, else a UUID v5 derived from its source and id.
fn session_uuid(session: &Session) -> String {
    let id = session.id.as_str();
    if is_uuid(id) {
        id.to_owned()
    } else {
        uuid_v5(&format!("session:{}:{id}", session.source_agent))
    }
}

/// A tool result found in the session, waiting for its call.
struct Found {
    part: ToolResultPart,
    timestamp: String,
    message: String,
}

/// A response being written: its `message.id` and the results that follow it.
struct Response {
    id: String,
    results: Vec<(String, Found)>,
}

/// One session's lines.
struct Render<'a> {
    canonical: String,
    cwd: String,
    session_field: String,
    agent_id: Option<String>,
    losses: &'a mut Losses,
    lines: Vec<Value>,
    prev: Option<String>,
    model: Option<String>,
    response: Option<Response>,
    /// Results by the call id they answer, in session order.
    results: HashMap<String, VecDeque<Found>>,
    /// Tool call ids written so far (Claude needs them unique).
    call_ids: HashSet<String>,
}

impl<'a> Render<'a> {
    fn new(
        session: &Session,
        session_field: String,
        agent_id: Option<String>,
        losses: &'a mut Losses,
    ) -> Self {
        Self {
            canonical: session.id.to_string(),
            cwd: session.project.as_str().to_owned(),
            session_field,
            agent_id,
            losses,
            lines: Vec::new(),
            prev: None,
            model: find_model(&Value::Object(session.options.clone()), 4),
            response: None,
            results: HashMap::new(),
            call_ids: HashSet::new(),
        }
    }

    fn at(&self, message: &Message) -> String {
        format!("session {} message {}", self.canonical, message.id())
    }

    fn messages(&mut self, messages: &[Message]) {
        for m in messages {
            let found = |part: &ToolResultPart| Found {
                part: part.clone(),
                timestamp: m.timestamp().as_str().to_owned(),
                message: m.id().to_string(),
            };
            let parts: Vec<&ToolResultPart> = match m {
                Message::Tool(t) => t
                    .content
                    .iter()
                    .filter_map(|p| match p {
                        ToolPart::ToolResult(r) => Some(r),
                        _ => None,
                    })
                    .collect(),
                Message::Assistant(a) => a
                    .content
                    .iter()
                    .filter_map(|p| match p {
                        AssistantPart::ToolResult(r) => Some(r),
                        _ => None,
                    })
                    .collect(),
                _ => Vec::new(),
            };
            for r in parts {
                self.results
                    .entry(r.call_id.as_str().to_owned())
                    .or_default()
                    .push_back(found(r));
            }
        }
        for m in messages {
            if let Some(model) = find_model(&Value::Object(m.options().clone()), 4) {
                self.model = Some(model);
            }
            match m {
                Message::Assistant(_) => self.assistant(m),
                // Records written as nothing (carriers, system text) do not end a response.
                Message::System(_) => self.system(m),
                Message::User(_) => {
                    self.close_response();
                    self.user(m);
                }
                Message::Tool(_) => {
                    self.close_response();
                    self.tool(m);
                }
            }
        }
        self.close_response();
        let mut left: Vec<(String, String)> = self
            .results
            .drain()
            .flat_map(|(call, q)| q.into_iter().map(move |f| (f.message, call.clone())))
            .collect();
        left.sort();
        for (message, call) in left {
            self.losses.record(
                "tool_result_unpaired",
                format!("session {} message {message}", self.canonical),
                format!("the result of call `{call}` has no call in the session; Claude Code drops a tool_result without its tool_use"),
            );
        }
    }

    /// Appends one line to the chain.
    fn line(&mut self, kind: &str, message: Value, timestamp: &str, meta: bool) {
        let uuid = uuid_v5(&format!("line:{}:{}", self.canonical, self.lines.len()));
        let mut r = Map::new();
        r.insert(
            "parentUuid".into(),
            self.prev.clone().map_or(Value::Null, Value::String),
        );
        r.insert("isSidechain".into(), Value::Bool(self.agent_id.is_some()));
        r.insert("userType".into(), "external".into());
        r.insert("cwd".into(), self.cwd.clone().into());
        r.insert("sessionId".into(), self.session_field.clone().into());
        r.insert("version".into(), TARGET_VERSION.into());
        if let Some(agent) = &self.agent_id {
            r.insert("agentId".into(), agent.clone().into());
        }
        r.insert("type".into(), kind.into());
        r.insert("message".into(), message);
        if meta {
            r.insert("isMeta".into(), Value::Bool(true));
        }
        r.insert("uuid".into(), uuid.clone().into());
        r.insert("timestamp".into(), timestamp.into());
        self.lines.push(Value::Object(r));
        self.prev = Some(uuid);
    }

    fn system(&mut self, m: &Message) {
        let Message::System(s) = m else {
            return;
        };
        let at = self.at(m);
        if let Some(record) = s.carried_record() {
            let kind = record
                .get("type")
                .or_else(|| record.get("record_type"))
                .and_then(Value::as_str)
                .unwrap_or("untyped");
            self.losses.record(
                "source_record",
                at,
                format!(
                    "a `{kind}` record of the source maps to no message and has no Claude Code form"
                ),
            );
        } else if !s.content.as_str().is_empty() {
            self.losses.record(
                "system_message",
                at,
                "Claude Code transcripts hold no system prompt; the system message is left out",
            );
        }
    }

    /// User text: a conversational run is a prompt line; an injected run (harness scaffolding
    /// such as Codex's `<environment_context>`) is an `isMeta` line with each text wrapped in
    /// `<system-reminder>`, as Claude Code wraps its own harness text (format reference §5).
    fn user(&mut self, m: &Message) {
        let Message::User(u) = m else {
            return;
        };
        let at = self.at(m);
        let mut runs: Vec<(Provenance, Vec<Value>)> = Vec::new();
        for part in &u.content {
            let (provenance, block) = match part {
                UserPart::Text(t) => {
                    if t.text.as_str().trim().is_empty() {
                        self.losses.record(
                            "empty_text",
                            &at,
                            "an empty text block (the API refuses them) is left out",
                        );
                        continue;
                    }
                    let text = match t.provenance {
                        Provenance::Injected => {
                            format!("<system-reminder>\n{}\n</system-reminder>", t.text.as_str())
                        }
                        Provenance::Conversational => t.text.as_str().to_owned(),
                    };
                    (t.provenance, json!({"type": "text", "text": text}))
                }
                UserPart::File(f) => match self.file_block(f, &at) {
                    Some(b) => (f.provenance, b),
                    None => continue,
                },
            };
            match runs.last_mut() {
                Some((p, blocks)) if *p == provenance => blocks.push(block),
                _ => runs.push((provenance, vec![block])),
            }
        }
        let timestamp = m.timestamp().as_str().to_owned();
        for (provenance, blocks) in runs {
            let content = match blocks.as_slice() {
                [one] if one.get("type").and_then(Value::as_str) == Some("text") => {
                    one.get("text").cloned().unwrap_or(Value::Null)
                }
                _ => Value::Array(blocks),
            };
            self.line(
                "user",
                json!({"role": "user", "content": content}),
                &timestamp,
                provenance == Provenance::Injected,
            );
        }
    }

    /// A tool message: its results were placed after their calls (or are reported unpaired at
    /// the end); approval answers have no Claude Code record.
    fn tool(&mut self, m: &Message) {
        let Message::Tool(t) = m else {
            return;
        };
        let at = self.at(m);
        for part in &t.content {
            if let ToolPart::ToolApprovalResponse(_) = part {
                self.losses.record(
                    "tool_approval",
                    &at,
                    "Claude Code transcripts record no tool approval answers",
                );
            }
        }
    }

    fn file_block(&mut self, f: &FilePart, at: &str) -> Option<Value> {
        let media = f.media_type.as_str();
        let image = matches!(
            media,
            "image/png" | "image/jpeg" | "image/gif" | "image/webp"
        );
        match &f.data {
            FileData::Base64(data) if image => Some(json!({
                "type": "image",
                "source": {"type": "base64", "media_type": media, "data": data},
            })),
            FileData::Base64(data) if media == "application/pdf" => Some(json!({
                "type": "document",
                "source": {"type": "base64", "media_type": media, "data": data},
            })),
            FileData::Url(url)
                if media.starts_with("image/")
                    && (url.starts_with("https://") || url.starts_with("http://")) =>
            {
                Some(json!({"type": "image", "source": {"type": "url", "url": url}}))
            }
            _ => {
                self.losses.record(
                    "file_unsupported",
                    at,
                    format!("a `{media}` file has no Claude Code block (images png/jpeg/gif/webp and PDF only)"),
                );
                None
            }
        }
    }

    fn assistant(&mut self, m: &Message) {
        let Message::Assistant(a) = m else {
            return;
        };
        let at = self.at(m);
        if has_key(&Value::Object(m.options().clone()), "encrypted_content", 4) {
            self.losses.record(
                "reasoning_encrypted_content",
                &at,
                "provider-encrypted reasoning (Codex `encrypted_content`) cannot be sent to an Anthropic model; left out",
            );
        }
        let mut blocks = Vec::new();
        for part in &a.content {
            match part {
                AssistantPart::Text(t) => {
                    if t.text.as_str().trim().is_empty() {
                        self.losses.record(
                            "empty_text",
                            &at,
                            "an empty text block (the API refuses them) is left out",
                        );
                    } else {
                        blocks.push(json!({"type": "text", "text": t.text.as_str()}));
                    }
                }
                AssistantPart::Reasoning(r) => {
                    match find_string(&Value::Object(r.options.clone()), &["signature", "thinkingSignature"], 4) {
                        Some(signature) if !r.text.as_str().is_empty() => blocks.push(json!({
                            "type": "thinking",
                            "thinking": r.text.as_str(),
                            "signature": signature,
                        })),
                        _ => self.losses.record(
                            "reasoning_unsigned",
                            &at,
                            "reasoning text without an Anthropic signature cannot be a thinking block (the API refuses a forged or missing signature); left out",
                        ),
                    }
                }
                AssistantPart::ToolCall(c) => {
                    let call = c.call_id.as_str();
                    let Some(found) = self.results.get_mut(call).and_then(VecDeque::pop_front)
                    else {
                        self.losses.record(
                            "tool_call_unpaired",
                            &at,
                            format!("call `{call}` has no result in the session; Claude Code drops a tool_use without its tool_result"),
                        );
                        continue;
                    };
                    let id = self.call_id(call, &at);
                    let input = match c.params.as_value() {
                        Value::Object(o) => Value::Object(o.clone()),
                        other => {
                            self.losses.record(
                                "tool_input_not_object",
                                &at,
                                "tool_use.input must be an object: a non-object input is wrapped as {\"input\": <value>}",
                            );
                            json!({"input": other})
                        }
                    };
                    if c.provider_executed {
                        self.losses.record(
                            "provider_executed_flag",
                            &at,
                            "a provider-executed call is written as an ordinary tool_use",
                        );
                    }
                    blocks.push(json!({
                        "type": "tool_use",
                        "id": id,
                        "name": c.name.as_str(),
                        "input": input,
                    }));
                    self.response_mut(m).results.push((id, found));
                }
                AssistantPart::ToolResult(_) => {} // placed after its call
                AssistantPart::File(_) => self.losses.record(
                    "assistant_file",
                    &at,
                    "Claude Code assistant content holds no files; left out",
                ),
                AssistantPart::ToolApprovalRequest(_) => self.losses.record(
                    "tool_approval",
                    &at,
                    "Claude Code transcripts record no tool approval requests",
                ),
            }
        }
        if blocks.is_empty() {
            return;
        }
        let id = self.response_mut(m).id.clone();
        let model = self
            .model
            .clone()
            .unwrap_or_else(|| SYNTHETIC_MODEL.to_owned());
        let message = json!({
            "model": model,
            "id": id,
            "type": "message",
            "role": "assistant",
            "content": blocks,
            "stop_reason": null,
            "stop_sequence": null,
            "usage": {"input_tokens": 0, "output_tokens": 0},
        });
        self.line("assistant", message, m.timestamp().as_str(), false);
    }

    fn response_mut(&mut self, m: &Message) -> &mut Response {
        let canonical = &self.canonical;
        self.response.get_or_insert_with(|| Response {
            id: format!(
                "msg_{}",
                hex_id(&format!("response:{canonical}:{}", m.id()), 24)
            ),
            results: Vec::new(),
        })
    }

    /// A tool_use id Claude accepts (`[A-Za-z0-9_-]+`, unique in the session).
    fn call_id(&mut self, call: &str, at: &str) -> String {
        let mut id: String = call
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        if id.is_empty() {
            id = format!("toolu_{}", hex_id(call, 24));
        }
        let base = id.clone();
        let mut n = 1;
        while self.call_ids.contains(&id) {
            n += 1;
            id = format!("{base}_{n}");
        }
        if id != call {
            self.losses.record(
                "tool_call_id_rewritten",
                at,
                format!("call id `{call}` is written as `{id}` (Claude needs [A-Za-z0-9_-] ids, unique per session)"),
            );
        }
        self.call_ids.insert(id.clone());
        id
    }

    /// The results of the open response, each on its own user line (as Claude Code 2.x writes
    /// them), right after the response.
    fn close_response(&mut self) {
        let Some(response) = self.response.take() else {
            return;
        };
        for (id, found) in response.results {
            let at = format!("session {} message {}", self.canonical, found.message);
            let content = self.result_content(found.part.result.as_value(), &at);
            let mut block = Map::new();
            block.insert("tool_use_id".into(), id.into());
            block.insert("type".into(), "tool_result".into());
            block.insert("content".into(), content);
            block.insert("is_error".into(), Value::Bool(found.part.is_failure));
            self.line(
                "user",
                json!({"role": "user", "content": [Value::Object(block)]}),
                &found.timestamp,
                false,
            );
        }
    }

    /// `tool_result.content`: a string, or text and image blocks; anything else as JSON text.
    fn result_content(&mut self, result: &Value, at: &str) -> Value {
        match result {
            Value::String(s) => return Value::String(s.clone()),
            Value::Array(items) => {
                let blocks: Option<Vec<Value>> = items.iter().map(result_block).collect();
                if let Some(blocks) = blocks {
                    return Value::Array(blocks);
                }
            }
            _ => {}
        }
        self.losses.record(
            "tool_result_restructured",
            at,
            "a structured tool result is written as its JSON text (Claude tool results are text and image blocks)",
        );
        Value::String(result.to_string())
    }
}

/// One item of a result array as a Claude `tool_result` content block, if it has one.
fn result_block(item: &Value) -> Option<Value> {
    if let Value::String(s) = item {
        return Some(json!({"type": "text", "text": s}));
    }
    let kind = item.get("type")?.as_str()?;
    match kind {
        "text" | "input_text" | "output_text" => {
            Some(json!({"type": "text", "text": item.get("text")?.as_str()?}))
        }
        "input_image" => {
            let url = item.get("image_url")?.as_str()?;
            let rest = url.strip_prefix("data:")?;
            let (media, data) = rest.split_once(";base64,")?;
            Some(
                json!({"type": "image", "source": {"type": "base64", "media_type": media, "data": data}}),
            )
        }
        "image" if item.get("source").is_some() => Some(item.clone()),
        "image" => Some(json!({"type": "image", "source": {
            "type": "base64",
            "media_type": item.get("mimeType")?.as_str()?,
            "data": item.get("data")?.as_str()?,
        }})),
        _ => None,
    }
}

/// The model an options bag names (`model`, `modelID`, `modelId`, or a `model` object holding
/// one), searched to `depth` levels.
fn find_model(v: &Value, depth: usize) -> Option<String> {
    let obj = v.as_object()?;
    for key in ["modelID", "modelId", "model"] {
        match obj.get(key) {
            Some(Value::String(s)) if !s.trim().is_empty() => return Some(s.clone()),
            Some(inner @ Value::Object(_)) => {
                if let Some(m) = find_model(inner, 1) {
                    return Some(m);
                }
            }
            _ => {}
        }
    }
    if depth == 0 {
        return None;
    }
    obj.values().find_map(|v| find_model(v, depth - 1))
}

/// The first non-empty string under one of `keys`, searched to `depth` levels.
fn find_string(v: &Value, keys: &[&str], depth: usize) -> Option<String> {
    let obj = v.as_object()?;
    for key in keys {
        if let Some(Value::String(s)) = obj.get(*key)
            && !s.is_empty()
        {
            return Some(s.clone());
        }
    }
    if depth == 0 {
        return None;
    }
    obj.values().find_map(|v| find_string(v, keys, depth - 1))
}

/// Whether `key` holds a non-null value somewhere to `depth` levels.
fn has_key(v: &Value, key: &str, depth: usize) -> bool {
    let Some(obj) = v.as_object() else {
        return false;
    };
    if obj.get(key).is_some_and(|v| !v.is_null()) {
        return true;
    }
    depth > 0 && obj.values().any(|v| has_key(v, key, depth - 1))
}

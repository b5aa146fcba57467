//! The foreign write: any canonical session as an `opencode export` document that
//! `opencode import` accepts and `opencode run --session` resumes (spec 6.3: a valid, idiomatic
//! session of the target; what it cannot express is dropped and reported).
//!
//! Decisions (for docs/decisions.md):
//! * **Ids.** opencode ids are `<prefix>_<12 hex><14 base62>` (opencode.md section 6). pond derives
//!   them deterministically: the session id (`ses_`) entirely from a hash of the source session
//!   id, so a child's `parentID` is the same string whichever session is written first; message
//!   (`msg_`) and part (`prt_`) ids take opencode's ascending clock form (`ms * 0x1000 + counter`,
//!   low 48 bits) from the message time, with the 14 base62 characters from a hash of the source
//!   session and message/part ids. Writing the same session twice gives the same document.
//! * **Order.** opencode orders messages by `time.created`, then id, and parts by id. The
//!   canonical log order is kept by making `time.created` non-decreasing (a message older than the
//!   one before it takes its predecessor's time: loss `message_time_adjusted`) and the counter
//!   increasing within a millisecond.
//! * **Turns.** A run of consecutive canonical assistant messages (one model response split over
//!   several source records) is one opencode assistant message; tool results, from a tool message
//!   or from the assistant message itself, are folded into the `tool` part of the call they answer
//!   (state `completed`, or `error` for a failure). A call never answered stays `running`, which
//!   opencode replays as "[Tool execution was interrupted]" (loss `tool_call_without_result`); a
//!   result without its call is dropped (loss `unpaired_tool_result`). Each assistant message is
//!   framed by `step-start` / `step-finish`, with a new step after tool calls, as opencode does.
//! * **Required fields pond cannot know** get fixed, documented values: `agent`/`mode` `build`,
//!   `cost` 0 and zero `tokens`, `projectID` `global`, `version` `1.18.33` (the opencode version
//!   the shape was validated against), `slug` `pond-<8 hex>`, the title from the first user text.
//!   The model is the source's where it names one, else `unknown`, with the provider implied by the
//!   source harness.
//! * **Streaming** (docs/decisions.md, "Foreign writers stream"): the document is written message
//!   by message as each is final, and its `info` last, after `messages` (its `time.updated` and
//!   title are known only at the end; `opencode import` reads keys in any order). Held back: the
//!   messages before the session's default model is known (the first an assistant message names;
//!   at most `hold::MAX_PRELUDE`), and an assistant message until its run has ended and no tool
//!   part is `running`, with what comes while it waits behind it. A conversational user message
//!   (or more than `hold::MAX_HELD` held messages) gives up on the results still missing: the part
//!   stays `running` (`tool_call_without_result`) and a result that comes later is dropped
//!   (`unpaired_tool_result`).

use crate::discover::find_str;
use crate::face::{At, Losses, Target, WriteError};
use crate::hold::{Prelude, Streamed};
use crate::jsonl;
use pond_canonical::{AssistantPart, FileData, Message, PartRef, Provenance, Session, ToolPart};
use serde_json::{Map, Value, json};
use std::collections::{HashMap, HashSet, VecDeque};

/// The loss of a source record that maps to no message (a carrier): opencode has no form for it.
pub(crate) const SOURCE_RECORD: &str = "source_record";

/// The opencode version whose `import` schema this writer targets.
const OPENCODE_VERSION: &str = "1.18.33";

/// FNV-1a, 64 bits, with a chosen offset basis (two bases give 128 bits).
fn fnv(seed: u64, s: &str) -> u64 {
    let mut h = seed;
    for b in s.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// A 128-bit hash of `s` (stable across runs and platforms).
pub(crate) fn hash128(s: &str) -> u128 {
    (u128::from(fnv(0xcbf2_9ce4_8422_2325, s)) << 64) | u128::from(fnv(0x6c62_272e_07bb_0142, s))
}

const BASE62: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// An opencode id: `prefix_` + 12 hex digits of the low 48 bits of `n` + 14 base62 characters
/// from a hash of `seed` (opencode.md section 6).
fn oc_id(prefix: &str, n: u128, seed: &str) -> String {
    let mut id = format!("{prefix}_{:012x}", n & ((1u128 << 48) - 1));
    let mut h = hash128(seed);
    for _ in 0..14 {
        id.push(char::from(BASE62[(h % 62) as usize]));
        h /= 62;
    }
    id
}

/// The opencode session id pond derives for a foreign session id (hash only, so a child can name
/// its parent without the parent's data).
pub(crate) fn session_id(source: &str) -> String {
    let seed = format!("pond-session:{source}");
    oc_id("ses", hash128(&seed) >> 80, &seed)
}

fn millis(ts: &pond_canonical::Timestamp) -> i64 {
    ts.unix_micros().div_euclid(1000).max(0)
}

/// Tool output as the string opencode stores: a string as is, text blocks joined, anything else
/// as compact JSON (loss `tool_output_structured` when blocks other than text were flattened).
pub(crate) fn output_text(v: &Value, losses: &mut Losses, at: &str) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(items) => {
            let mut texts = Vec::new();
            for item in items {
                match item {
                    Value::String(s) => texts.push(s.clone()),
                    Value::Object(o) if o.get("text").and_then(Value::as_str).is_some() => texts
                        .push(
                            o.get("text")
                                .and_then(Value::as_str)
                                .unwrap_or("")
                                .to_owned(),
                        ),
                    other => {
                        losses.record(
                            "tool_output_structured",
                            at,
                            "a non-text block of a tool result was written as JSON text",
                        );
                        texts.push(other.to_string());
                    }
                }
            }
            texts.join("\n")
        }
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// One opencode part under construction, with the seed its id derives from.
struct PartOut {
    seed: String,
    body: Map<String, Value>,
}

/// One opencode message under construction.
struct MsgOut {
    seed: String,
    assistant: bool,
    created: i64,
    id: String,
    info: Map<String, Value>,
    parts: Vec<PartOut>,
}

/// One foreign session's export document being written (see the module doc, "Streaming").
pub(crate) struct ForeignDoc {
    /// The opencode session id, and the document's path relative to the output root.
    pub sid: String,
    pub path: String,
    session: Session,
    /// Losses of the messages being processed, added to the target's after each message.
    losses: Losses,
    prelude: Prelude,
    /// The messages not written yet: responses waiting for results, what came after them, and
    /// the open response.
    held: VecDeque<MsgOut>,
    /// How many messages were written (the index in the session of `held[0]`).
    base: usize,
    /// The id of the last message made (an assistant message's parent when no user came yet).
    last_id: Option<String>,
    /// Call id -> (index in the session of its message, part index) of its tool part, for
    /// folding results into held messages.
    calls: HashMap<String, (usize, usize)>,
    /// Every call id answered (a second result is dropped).
    answered: HashSet<String>,
    /// The title (the first user text) and the last time of the messages written so far.
    title: Option<String>,
    updated: i64,
    /// Whether a message was written (the `messages` array is open).
    started: bool,
    /// Bytes made since the last write to the output.
    buf: Vec<u8>,
    last_ms: i64,
    counter: u128,
    /// Whether the last canonical message was an assistant one (a run merges).
    in_assistant_run: bool,
    last_user: Option<String>,
    provider: String,
    model: String,
}

impl ForeignDoc {
    fn at(&self, m: &Message) -> String {
        At::of(self.session.id.as_str(), m).to_string()
    }

    /// The next (time, counter) on the document's clock: never earlier than the last one.
    fn tick(&mut self, ms: i64, at: &str) -> (i64, u128) {
        if ms < self.last_ms {
            self.losses.record(
                "message_time_adjusted",
                at,
                "a message older than the one before it takes its predecessor's time, so opencode keeps the log order",
            );
        }
        if ms > self.last_ms {
            self.last_ms = ms;
            self.counter = 1;
        } else {
            self.counter += 1;
            if self.counter >= 0x1000 {
                self.last_ms += 1;
                self.counter = 1;
            }
        }
        (self.last_ms, self.counter)
    }

    fn new_message(&mut self, m: &Message, assistant: bool) -> usize {
        let at = self.at(m);
        let (created, counter) = self.tick(millis(m.timestamp()), &at);
        let seed = format!("{}/{}", self.session.id, m.id());
        let id = oc_id("msg", (created as u128) * 0x1000 + counter, &seed);
        let mut info = Map::new();
        info.insert("id".into(), Value::from(id.as_str()));
        info.insert("sessionID".into(), Value::from(self.sid.as_str()));
        info.insert(
            "role".into(),
            Value::from(if assistant { "assistant" } else { "user" }),
        );
        let project = self.session.project.as_str();
        if assistant {
            info.insert(
                "time".into(),
                json!({"created": created, "completed": created}),
            );
            let parent = self
                .last_user
                .clone()
                .or_else(|| self.last_id.clone())
                .unwrap_or_else(|| id.clone());
            info.insert("parentID".into(), Value::from(parent));
            let opts = Value::Object(m.options().clone());
            let model = find_str(&opts, &["model", "modelID", "modelId"])
                .unwrap_or(&self.model)
                .to_owned();
            let provider = find_str(&opts, &["providerID", "provider", "model_provider"])
                .unwrap_or(&self.provider)
                .to_owned();
            info.insert("modelID".into(), Value::from(model));
            info.insert("providerID".into(), Value::from(provider));
            info.insert("mode".into(), Value::from("build"));
            info.insert("agent".into(), Value::from("build"));
            info.insert("path".into(), json!({"cwd": project, "root": project}));
            info.insert("cost".into(), Value::from(0));
            info.insert("tokens".into(), zero_tokens());
        } else {
            info.insert("time".into(), json!({"created": created}));
            info.insert("agent".into(), Value::from("build"));
            info.insert(
                "model".into(),
                json!({"providerID": self.provider, "modelID": self.model}),
            );
        }
        self.last_id = Some(id.clone());
        self.held.push_back(MsgOut {
            seed,
            assistant,
            created,
            id,
            info,
            parts: Vec::new(),
        });
        self.held.len() - 1
    }

    fn push_part(&mut self, msg: usize, seed: String, body: Map<String, Value>) -> usize {
        let parts = &mut self.held[msg].parts;
        parts.push(PartOut { seed, body });
        parts.len() - 1
    }

    fn message(&mut self, m: &Message) {
        let at = self.at(m);
        match m {
            // A system message or a carried record does not end a model response: codex
            // interleaves event records between the reasoning, text and calls of one response.
            Message::System(s) => {
                if s.carried_record().is_some() {
                    self.losses.record(
                        SOURCE_RECORD,
                        &at,
                        "a source record that maps to no message has no place in opencode",
                    );
                } else {
                    self.losses.record(
                        "system_message",
                        &at,
                        "opencode sessions have no system messages",
                    );
                }
            }
            Message::User(u) => {
                self.in_assistant_run = false;
                let mut bodies = Vec::new();
                for p in &u.content {
                    let p = p.as_part_ref();
                    if let Some(b) = self.content_part(p, &at) {
                        bodies.push((p.id().to_string(), b));
                    }
                }
                if bodies.is_empty() {
                    return;
                }
                let i = self.new_message(m, false);
                self.last_user = Some(self.held[i].id.clone());
                for (seed, b) in bodies {
                    self.push_part(i, seed, b);
                }
            }
            Message::Assistant(a) => {
                let mut i = None;
                for p in a.content.iter().map(AssistantPart::as_part_ref) {
                    if let PartRef::ToolResult(r) = p {
                        self.fold_result(r, m.timestamp(), &at);
                        continue;
                    }
                    let body = match p {
                        PartRef::ToolCall(c) => {
                            let input = match c.params.as_value() {
                                Value::Object(o) => Value::Object(o.clone()),
                                other => {
                                    self.losses.record(
                                        "tool_input_wrapped",
                                        &at,
                                        "opencode tool input must be an object: a non-object input is kept under `input`",
                                    );
                                    json!({ "input": other })
                                }
                            };
                            let start = millis(m.timestamp());
                            let mut b = Map::new();
                            b.insert("type".into(), Value::from("tool"));
                            b.insert("callID".into(), Value::from(c.call_id.as_str()));
                            b.insert("tool".into(), Value::from(c.name.as_str()));
                            b.insert(
                                "state".into(),
                                json!({"status": "running", "input": input, "time": {"start": start}}),
                            );
                            Some(b)
                        }
                        other => self.content_part(other, &at),
                    };
                    let Some(body) = body else { continue };
                    let msg = match i {
                        Some(i) => i,
                        None if self.in_assistant_run
                            && self.held.back().is_some_and(|m| m.assistant) =>
                        {
                            self.held.len() - 1
                        }
                        None => self.new_message(m, true),
                    };
                    i = Some(msg);
                    let tool = match p {
                        PartRef::ToolCall(c) => Some(c.call_id.as_str().to_owned()),
                        _ => None,
                    };
                    let k = self.push_part(msg, p.id().to_string(), body);
                    if let Some(call) = tool {
                        self.calls.insert(call, (self.base + msg, k));
                    }
                }
                self.in_assistant_run = true;
            }
            Message::Tool(t) => {
                self.in_assistant_run = false;
                for p in &t.content {
                    match p {
                        ToolPart::ToolResult(r) => self.fold_result(r, m.timestamp(), &at),
                        _ => self.losses.record(
                            "tool_approval",
                            &at,
                            "opencode keeps no tool approval requests or answers in a session",
                        ),
                    }
                }
            }
        }
    }

    /// Puts a result into the tool part of the call it answers.
    fn fold_result(
        &mut self,
        r: &pond_canonical::ToolResultPart,
        ts: &pond_canonical::Timestamp,
        at: &str,
    ) {
        let Some(&(mi, pi)) = self.calls.get(r.call_id.as_str()) else {
            if self.answered.contains(r.call_id.as_str()) {
                self.losses.record(
                    "duplicate_tool_result",
                    at,
                    "a second result for one tool call was dropped",
                );
                return;
            }
            self.losses.record(
                "unpaired_tool_result",
                at,
                "a tool result whose call is not in the session has no tool part to go into",
            );
            return;
        };
        let end = millis(ts);
        let output = output_text(r.result.as_value(), &mut self.losses, at);
        let part = &mut self.held[mi - self.base].parts[pi].body;
        let Some(Value::Object(state)) = part.get_mut("state") else {
            return;
        };
        if state.get("status").and_then(Value::as_str) != Some("running") {
            self.losses.record(
                "duplicate_tool_result",
                at,
                "a second result for one tool call was dropped",
            );
            return;
        }
        let input = state.remove("input").unwrap_or(json!({}));
        let start = state
            .get("time")
            .and_then(|t| t.get("start"))
            .and_then(Value::as_i64)
            .unwrap_or(end);
        let name = part
            .get("tool")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        let new_state = if r.is_failure {
            json!({"status": "error", "input": input, "error": output, "time": {"start": start, "end": end.max(start)}})
        } else {
            json!({"status": "completed", "input": input, "output": output, "title": name,
                   "metadata": {}, "time": {"start": start, "end": end.max(start)}})
        };
        part.insert("state".into(), new_state);
        self.answered.insert(r.call_id.as_str().to_owned());
    }

    /// A text, reasoning or file part (tool parts are built by the caller).
    fn content_part(&mut self, p: PartRef<'_>, at: &str) -> Option<Map<String, Value>> {
        let mut b = Map::new();
        match p {
            PartRef::Text(t) => {
                if t.text.as_str().is_empty() {
                    return None;
                }
                b.insert("type".into(), Value::from("text"));
                b.insert("text".into(), Value::from(t.text.as_str()));
                // model-part-provenance: injected text is opencode's `synthetic` text.
                if t.provenance == Provenance::Injected {
                    b.insert("synthetic".into(), Value::Bool(true));
                }
            }
            PartRef::Reasoning(r) => {
                if !r.options.is_empty() {
                    self.losses.record(
                        "reasoning_provider_data",
                        at,
                        "reasoning signatures and encrypted reasoning are provider-bound and not written",
                    );
                }
                if r.text.as_str().is_empty() {
                    return None;
                }
                b.insert("type".into(), Value::from("reasoning"));
                b.insert("text".into(), Value::from(r.text.as_str()));
                // opencode.md 5.2: reasoning needs time{start,end}; set from its message in
                // `finish`.
            }
            PartRef::File(f) => {
                // opencode fetches a file part's URL when it replays it: a data URL must decode.
                let mime = f.media_type.as_str();
                let valid_mime = mime.split_once('/').is_some_and(|(a, b)| {
                    !a.is_empty() && !b.is_empty() && !mime.contains([' ', ';', ','])
                });
                let valid_data = match &f.data {
                    FileData::Base64(d) => d.bytes().all(|c| {
                        c.is_ascii_alphanumeric() || matches!(c, b'+' | b'/' | b'=' | b'\n' | b'\r')
                    }),
                    FileData::Url(u) => !u.starts_with("pond://"),
                };
                if !valid_mime || !valid_data {
                    self.losses.record(
                        "file_unusable",
                        at,
                        "a file whose media type or data opencode cannot fetch (not base64, a pond blob) is dropped",
                    );
                    return None;
                }
                let url = match &f.data {
                    FileData::Base64(d) => format!("data:{};base64,{}", f.media_type.as_str(), d),
                    FileData::Url(u) => u.clone(),
                };
                b.insert("type".into(), Value::from("file"));
                b.insert("mime".into(), Value::from(f.media_type.as_str()));
                if let Some(name) = &f.file_name {
                    b.insert("filename".into(), Value::from(name.as_str()));
                }
                b.insert("url".into(), Value::from(url));
            }
            PartRef::ToolApprovalRequest(_) | PartRef::ToolApprovalResponse(_) => {
                self.losses.record(
                    "tool_approval",
                    at,
                    "opencode keeps no tool approval requests or answers in a session",
                );
                return None;
            }
            PartRef::ToolCall(_) | PartRef::ToolResult(_) => return None,
        }
        Some(b)
    }

    /// Gives every part of a finished message its id, `sessionID`, `messageID`, times and the
    /// step frame, and notes the title and the session's last time.
    fn finish_message(&mut self, mut m: MsgOut) -> Value {
        if self.title.is_none() {
            self.title = title_of(&m);
        }
        let updated = &mut self.updated;
        {
            let mut parts = Vec::new();
            if m.assistant {
                let mut step = 0;
                let frame = |kind: &str, step: usize, reason: &str| PartOut {
                    seed: format!("{}#{kind}{step}", m.seed),
                    body: match kind {
                        "step-start" => {
                            let mut b = Map::new();
                            b.insert("type".into(), Value::from("step-start"));
                            b
                        }
                        _ => {
                            let mut b = Map::new();
                            b.insert("type".into(), Value::from("step-finish"));
                            b.insert("reason".into(), Value::from(reason));
                            b.insert("cost".into(), Value::from(0));
                            b.insert("tokens".into(), zero_tokens());
                            b
                        }
                    },
                };
                parts.push(frame("step-start", step, ""));
                let mut after_tool = false;
                let mut has_tool = false;
                for p in std::mem::take(&mut m.parts) {
                    let is_tool = p.body.get("type").and_then(Value::as_str) == Some("tool");
                    if after_tool && !is_tool {
                        parts.push(frame("step-finish", step, "tool-calls"));
                        step += 1;
                        parts.push(frame("step-start", step, ""));
                    }
                    after_tool = is_tool;
                    has_tool |= is_tool;
                    parts.push(p);
                }
                let reason = if after_tool { "tool-calls" } else { "stop" };
                parts.push(frame("step-finish", step, reason));
                m.info.insert(
                    "finish".into(),
                    Value::from(if has_tool && after_tool {
                        "tool-calls"
                    } else {
                        "stop"
                    }),
                );
                // The message completes when its last tool result arrived.
                let mut completed = m.created;
                for p in &parts {
                    if let Some(end) = p
                        .body
                        .get("state")
                        .and_then(|s| s.pointer("/time/end"))
                        .and_then(Value::as_i64)
                    {
                        completed = completed.max(end);
                    }
                }
                m.info.insert(
                    "time".into(),
                    json!({"created": m.created, "completed": completed}),
                );
                *updated = (*updated).max(completed);
            } else {
                parts = std::mem::take(&mut m.parts);
            }
            *updated = (*updated).max(m.created);
            let mut out = Vec::new();
            for (k, mut p) in parts.into_iter().enumerate() {
                let id = oc_id(
                    "prt",
                    (m.created as u128) * 0x1000 + k as u128 + 1,
                    &format!("{}#{}", m.seed, p.seed),
                );
                if p.body.get("type").and_then(Value::as_str) == Some("reasoning") {
                    p.body
                        .insert("time".into(), json!({"start": m.created, "end": m.created}));
                }
                let mut body = Map::new();
                body.insert("id".into(), Value::from(id));
                body.insert("sessionID".into(), Value::from(self.sid.as_str()));
                body.insert("messageID".into(), Value::from(m.id.as_str()));
                body.extend(p.body);
                out.push(Value::Object(body));
            }
            json!({"info": Value::Object(m.info), "parts": out})
        }
    }

    /// The session's `info`, once every message is written.
    fn info(&self) -> Value {
        let created = millis(&self.session.created_at);
        let mut info = Map::new();
        info.insert("id".into(), Value::from(self.sid.as_str()));
        info.insert(
            "slug".into(),
            Value::from(format!("pond-{:08x}", hash128(&self.sid) as u32)),
        );
        info.insert("projectID".into(), Value::from("global"));
        info.insert(
            "directory".into(),
            Value::from(self.session.project.as_str()),
        );
        if let Some(parent) = &self.session.parent_session_id {
            info.insert("parentID".into(), Value::from(session_id(parent.as_str())));
        }
        let title = self.title.clone().unwrap_or_else(|| {
            format!("{} session {}", self.session.source_agent, self.session.id)
        });
        info.insert("title".into(), Value::from(title));
        info.insert("version".into(), Value::from(OPENCODE_VERSION));
        info.insert(
            "time".into(),
            json!({"created": created, "updated": self.updated.max(created)}),
        );
        Value::Object(info)
    }
}

/// A user message's title: its first non-blank line of non-synthetic text, to 80 characters.
fn title_of(m: &MsgOut) -> Option<String> {
    if m.assistant {
        return None;
    }
    for p in &m.parts {
        if p.body.get("synthetic").is_some() {
            continue;
        }
        if let Some(t) = p.body.get("text").and_then(Value::as_str) {
            let line = t
                .lines()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("")
                .trim();
            if !line.is_empty() {
                return Some(line.chars().take(80).collect());
            }
        }
    }
    None
}

fn zero_tokens() -> Value {
    json!({"input": 0, "output": 0, "reasoning": 0, "cache": {"read": 0, "write": 0}})
}

impl ForeignDoc {
    /// A foreign session begins: its id and file are decided (`<sid>.json`, the same in both
    /// layouts: opencode has no session files of its own; `import` reads it).
    pub(crate) fn start(session: &Session, losses: &mut Losses) -> Self {
        let sid = session_id(session.id.as_str());
        losses.record(
            "session_id_derived",
            format!("session {}", session.id),
            format!(
                "opencode ids are `ses_...`: session {} became {sid} (a hash of the source id)",
                session.id
            ),
        );
        if session.parent_session_id.is_some() && session.parent_message_id.is_some() {
            losses.record(
                "fork_cut_point",
                format!("session {}", session.id),
                "opencode's parentID names the parent session only, not the message a fork was cut at",
            );
        }
        Self {
            path: format!("{sid}.json"),
            sid,
            session: session.clone(),
            losses: Losses::default(),
            prelude: Prelude::new(),
            held: VecDeque::new(),
            base: 0,
            last_id: None,
            calls: HashMap::new(),
            answered: HashSet::new(),
            title: None,
            updated: millis(&session.created_at),
            started: false,
            buf: Vec::new(),
            last_ms: i64::MIN,
            counter: 0,
            in_assistant_run: false,
            last_user: None,
            provider: String::new(),
            model: String::new(),
        }
    }

    /// The session written.
    pub(crate) fn session(&self) -> &Session {
        &self.session
    }

    /// The end of the source: whatever is held is written, then the session's `info`, which
    /// closes the document (after `messages`: its `time.updated` and title are known only now).
    pub(crate) fn finish(&mut self, target: &mut Target<'_>) -> Result<(), WriteError> {
        self.end();
        self.buf.extend_from_slice(if self.started {
            b"\n  ],\n  \"info\": "
        } else {
            b"{\n  \"messages\": [],\n  \"info\": "
        });
        let info = self.info();
        jsonl::write_value_pretty(&mut self.buf, &info, 1);
        self.buf.extend_from_slice(b"\n}\n");
        self.write(target)
    }
}

impl Streamed for ForeignDoc {
    fn prelude(&mut self) -> &mut Prelude {
        &mut self.prelude
    }

    fn source(&self) -> &Session {
        &self.session
    }

    fn set_defaults(&mut self, provider: String, model: String) {
        (self.provider, self.model) = (provider, model);
    }

    fn build(&mut self, m: &Message) {
        self.message(m);
    }

    /// The open response (the last message, an assistant one, while its run goes on) and a
    /// message with a tool part still `running` wait.
    fn front_waits(&self) -> Option<bool> {
        let front = self.held.front()?;
        let open = self.in_assistant_run && self.held.len() == 1 && front.assistant;
        Some(open || front.parts.iter().any(running))
    }

    fn held_len(&self) -> usize {
        self.held.len()
    }

    /// The oldest held message, into the `messages` array. A call never answered stays
    /// `running`, and a result that comes for it later is dropped.
    fn write_front(&mut self) {
        let Some(m) = self.held.pop_front() else {
            return;
        };
        for p in &m.parts {
            if let Some(call) = p.body.get("callID").and_then(Value::as_str)
                && self.calls.get(call).is_some_and(|(i, _)| *i == self.base)
            {
                self.calls.remove(call);
            }
            if running(p) {
                self.losses.record(
                    "tool_call_without_result",
                    format!("session {}", self.session.id),
                    "a tool call with no result stays `running`; opencode replays it as interrupted",
                );
            }
        }
        self.base += 1;
        let value = self.finish_message(m);
        self.buf.extend_from_slice(if self.started {
            b",\n    "
        } else {
            b"{\n  \"messages\": [\n    "
        });
        self.started = true;
        jsonl::write_value_pretty(&mut self.buf, &value, 2);
    }

    fn pending(&mut self) -> (&str, &mut Losses, &mut Vec<u8>) {
        (&self.path, &mut self.losses, &mut self.buf)
    }
}

/// Whether a part is a tool call still waiting for its result.
fn running(p: &PartOut) -> bool {
    p.body
        .get("state")
        .and_then(|s| s.get("status"))
        .and_then(Value::as_str)
        == Some("running")
}

//! The foreign write: any canonical session as a pi v3 session file that `pi --session` resumes
//! (spec 6.3: a valid, idiomatic pi session; what pi cannot express is dropped and reported).
//!
//! Decisions (for docs/decisions.md):
//! * **File.** pi's own layout, in both layouts: `--<encoded cwd>--/<header time>_<uuid>.jsonl`
//!   (pi.md section 1; the cwd is the canonical project, `/`, `\` and `:` become `-`); an
//!   install into `PI_CODING_AGENT_SESSION_DIR` puts it in that folder itself, as pi does.
//! * **Header.** `{"type":"session","version":3,"id","timestamp","cwd"}`. The id is the source
//!   session id when it is a UUID (Claude Code, Codex), else a UUID derived from a hash of it
//!   (version nibble 8, RFC 9562 "custom"), reported as `session_id_derived`.
//! * **Entries.** One `message` entry per message in log order, each `parentId` the entry before
//!   (one chain, so the last line is the leaf pi resumes). Entry ids are 8 hex digits hashed from
//!   the source ids, re-hashed on a collision within the file. `entry.timestamp` is ISO UTC with
//!   milliseconds and `message.timestamp` the same instant in epoch ms.
//! * **Turns.** A run of consecutive canonical assistant messages is one pi assistant message (one
//!   model response); every tool result becomes a `toolResult` message right after the assistant
//!   message that made its call, in result order. A result whose call is not in the session is
//!   dropped (loss `unpaired_tool_result`): no provider accepts a result without its call.
//! * **Thinking.** Reasoning becomes a `thinking` block. A Claude Code reasoning part keeps its
//!   Anthropic `signature` as `thinkingSignature` (the same provider verifies it); any other
//!   provider's opaque reasoning data is dropped (loss `reasoning_provider_data`), and pi then
//!   replays the block as plain text, as it does for its own unsigned thinking.
//! * **Sub-agents.** pi has no sub-agents. A child session (spawned or forked) becomes its own pi
//!   session file beside its parent's; pi's `parentSession` means "forked from this file" and
//!   holds an absolute path the writer does not know, so the link is dropped (loss
//!   `session_parent_link`).
//! * **Required fields pond cannot know**: `api`/`provider`/`model` are the source's where it
//!   names them, else the source harness's provider (`anthropic`, `openai`) and model `unknown`;
//!   `usage` is all zeros; `stopReason` is `toolUse` after tool calls, else `stop`.
//! * **Streaming** (docs/decisions.md, "Foreign writers stream"): the header and each entry are
//!   written as soon as they are final. Held back: the messages before the session's default
//!   model is known (the first an assistant message names; at most `hold::MAX_PRELUDE`), and a pi
//!   assistant message until its run has ended and its calls have their results, with what comes
//!   while it waits behind it. A conversational user message (or more than `hold::MAX_HELD` held
//!   messages) gives up on the results still missing: the call is sent unanswered
//!   (`tool_call_without_result`) and a result that comes later is dropped
//!   (`unpaired_tool_result`). Per session the writer keeps the entry ids used, the last one and
//!   the call ids answered.

use crate::digest::hash128;
use crate::discover::find_str;
use crate::face::{At, Losses, Target, WriteError};
use crate::hold::{Prelude, Streamed};
use crate::jsonl;
use pond_canonical::{AssistantPart, FileData, Message, PartRef, Session, Timestamp, ToolPart};
use serde_json::{Value, json};
use std::collections::VecDeque;

/// The keys a foreign write looks for in a message's options: its provider and model
/// (`SessionWriter::option_keys`).
pub(crate) const OPTION_KEYS: &[&str] = &[
    "providerID",
    "provider",
    "model_provider",
    "model",
    "modelID",
    "modelId",
];

/// The loss of a source record that maps to no message (a carrier): pi has no form for it.
pub(crate) const SOURCE_RECORD: &str = "source_record";

use crate::codex::foreign::is_uuid;

/// The pi session id for a source session id: itself when a UUID, else a derived one.
pub(crate) fn session_uuid(source: &str) -> (String, bool) {
    if is_uuid(source) {
        return (source.to_ascii_lowercase(), false);
    }
    let mut h = hash128(&format!("pond-pi-session:{source}"));
    // RFC 9562: version 8 (custom), variant 10.
    h = (h & !(0xf << 76)) | (0x8 << 76);
    h = (h & !(0x3 << 62)) | (0x2 << 62);
    let x = format!("{h:032x}");
    let id = format!(
        "{}-{}-{}-{}-{}",
        &x[0..8],
        &x[8..12],
        &x[12..16],
        &x[16..20],
        &x[20..32]
    );
    (id, true)
}

/// The loss kind of a Codex compaction written as pi's own (its other fields dropped).
const COMPACTED: &str = "compaction_rewritten";

/// pi's session folder for a cwd: `--<cwd without its leading separator, / \ : as ->--`.
pub(crate) fn cwd_folder(cwd: &str) -> String {
    let trimmed = cwd
        .strip_prefix('/')
        .or_else(|| cwd.strip_prefix('\\'))
        .unwrap_or(cwd);
    format!("--{}--", trimmed.replace(['/', '\\', ':'], "-"))
}

/// The id of an entry, before it is written in hex: the high 32 bits of `hash128` of
/// `<session>/<seed>/<salt>`, hashed piece by piece (one entry id per pi line).
fn entry_id(session: &str, seed: &str, salt: u32) -> u32 {
    // The salt is 0 but after a collision of two 32-bit ids.
    let salted;
    let salt: &[u8] = if salt == 0 {
        b"0"
    } else {
        salted = salt.to_string();
        salted.as_bytes()
    };
    let pieces = [session.as_bytes(), b"/", seed.as_bytes(), b"/", salt];
    (crate::digest::fnv(crate::digest::FNV_BASIS, &pieces) >> 32) as u32
}

fn millis(ts: &Timestamp) -> i64 {
    ts.unix_micros().div_euclid(1000)
}

fn api_of(provider: &str) -> &'static str {
    match provider {
        "anthropic" => "anthropic-messages",
        "openai" => "openai-responses",
        _ => "openai-completions",
    }
}

/// One pi message being built, and the results that follow it.
struct Pending {
    seed: String,
    ms: i64,
    message: PiMessage,
    results: Vec<(String, i64, PiMessage)>,
    /// Its tool calls, and how many of them still wait for their result.
    calls: Vec<String>,
    waiting: usize,
}

/// A pi `message`, typed and written straight to JSON text in pi's field order (no `Map` per
/// message and block: building and hashing those was most of this writer's time).
enum PiMessage {
    User {
        content: Vec<Block>,
    },
    Assistant {
        content: Vec<Block>,
        provider: String,
        model: String,
    },
    ToolResult {
        call_id: String,
        name: String,
        content: Vec<Block>,
        is_error: bool,
    },
}

/// A content block of a pi message.
enum Block {
    Text(String),
    /// A text block whose text is held as the JSON text serde_json writes for it, quotes
    /// included (a tool output read as its text, `Json::json_text`): copied as it is, where
    /// `Text` would be decoded, copied and escaped again to the same bytes.
    TextJson(Box<str>),
    Thinking {
        text: String,
        signature: Option<String>,
    },
    ToolCall {
        id: String,
        name: String,
        /// The arguments, as compact JSON (written when the call came: a held copy of the
        /// value would be built and dropped for nothing).
        arguments: Vec<u8>,
    },
    Image {
        data: String,
        mime: String,
    },
}

impl Block {
    fn write(&self, out: &mut Vec<u8>) {
        match self {
            Block::Text(text) => {
                field(out, b"{\"type\":\"text\",\"text\":", text);
            }
            Block::TextJson(json) => {
                out.extend_from_slice(b"{\"type\":\"text\",\"text\":");
                out.extend_from_slice(json.as_bytes());
            }
            Block::Thinking { text, signature } => {
                field(out, b"{\"type\":\"thinking\",\"thinking\":", text);
                if let Some(s) = signature {
                    field(out, b",\"thinkingSignature\":", s);
                }
            }
            Block::ToolCall {
                id,
                name,
                arguments,
            } => {
                field(out, b"{\"type\":\"toolCall\",\"id\":", id);
                field(out, b",\"name\":", name);
                out.extend_from_slice(b",\"arguments\":");
                out.extend_from_slice(arguments);
            }
            Block::Image { data, mime } => {
                field(out, b"{\"type\":\"image\",\"data\":", data);
                field(out, b",\"mimeType\":", mime);
            }
        }
        out.push(b'}');
    }
}

impl PiMessage {
    fn is_assistant(&self) -> bool {
        matches!(self, PiMessage::Assistant { .. })
    }

    /// Writes the message as compact JSON, timestamped `ms`; an assistant message that made a
    /// call stops for `toolUse`.
    fn write(&self, out: &mut Vec<u8>, ms: i64) {
        let blocks = |out: &mut Vec<u8>, content: &[Block]| {
            out.push(b'[');
            for (i, b) in content.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                b.write(out);
            }
            out.push(b']');
        };
        match self {
            PiMessage::User { content } => {
                out.extend_from_slice(b"{\"role\":\"user\",\"content\":");
                blocks(out, content);
            }
            PiMessage::Assistant {
                content,
                provider,
                model,
            } => {
                out.extend_from_slice(b"{\"role\":\"assistant\",\"content\":");
                blocks(out, content);
                field(out, b",\"api\":", api_of(provider));
                field(out, b",\"provider\":", provider);
                field(out, b",\"model\":", model);
                out.extend_from_slice(b",\"usage\":");
                out.extend_from_slice(ZERO_USAGE);
                let calls = content.iter().any(|b| matches!(b, Block::ToolCall { .. }));
                out.extend_from_slice(if calls {
                    b",\"stopReason\":\"toolUse\""
                } else {
                    b",\"stopReason\":\"stop\""
                });
            }
            PiMessage::ToolResult {
                call_id,
                name,
                content,
                is_error,
            } => {
                field(out, b"{\"role\":\"toolResult\",\"toolCallId\":", call_id);
                field(out, b",\"toolName\":", name);
                out.extend_from_slice(b",\"content\":");
                blocks(out, content);
                out.extend_from_slice(if *is_error {
                    b",\"isError\":true"
                } else {
                    b",\"isError\":false"
                });
            }
        }
        out.extend_from_slice(b",\"timestamp\":");
        out.extend_from_slice(itoa::Buffer::new().format(ms).as_bytes());
        out.push(b'}');
    }
}

/// Appends `key` (the JSON text before a member's value) and the string `value`.
fn field(out: &mut Vec<u8>, key: &[u8], value: &str) {
    out.extend_from_slice(key);
    jsonl::write_str(out, value);
}

/// Zero usage and cost (pond cannot know them), as compact JSON.
const ZERO_USAGE: &[u8] = b"{\"input\":0,\"output\":0,\"cacheRead\":0,\"cacheWrite\":0,\"totalTokens\":0,\"cost\":{\"input\":0,\"output\":0,\"cacheRead\":0,\"cacheWrite\":0,\"total\":0}}";

/// One foreign session's file being written (see the module doc, "Streaming").
pub(crate) struct ForeignFile {
    /// The file, relative to the output root, and the pi session id.
    pub path: String,
    pub id: String,
    session: Session,
    /// Losses of the messages being processed, added to the target's after each message.
    losses: Losses,
    prelude: Prelude,
    /// The pi messages not written yet: responses waiting for results, what came after them,
    /// and the open response.
    held: VecDeque<Pending>,
    /// How many pi messages were written (the index in the session of `held[0]`).
    base: usize,
    /// Call id -> (index in the session of its pi message, tool name), for held messages.
    calls: crate::LookupMap<String, (usize, String)>,
    /// Every call id answered in the session (a second result is dropped).
    answered: crate::LookupSet<String>,
    in_assistant_run: bool,
    provider: String,
    model: String,
    /// Entry ids used so far (re-hashed on a collision) and the last one (the next `parentId`).
    used: crate::LookupSet<u32>,
    parent: Option<String>,
    /// A Claude Code compaction's boundary (its id and time), until the message after it shows
    /// whether it has a summary ([`crate::face::compact_summary_text`]).
    boundary: Option<(String, i64)>,
    /// Lines made since the last write to the output (the header first).
    buf: Vec<u8>,
}

impl ForeignFile {
    fn message(&mut self, m: &Message) {
        // The place of a loss, made into text only for the first of its kind.
        let sid = self.session.id.clone();
        let at = At::of(sid.as_str(), m);
        let ms = millis(m.timestamp());
        if let Some((seed, at_ms)) = self.boundary.take() {
            if let Some(summary) = crate::face::compact_summary_text(m) {
                // A Claude Code compaction: pi's own, the summary in the entry (not a message
                // of its own, which pi would send twice).
                self.compaction(&seed, at_ms, &summary);
                self.losses.record(
                    COMPACTED,
                    At::new(sid.as_str(), &seed),
                    "a Claude Code compaction (a `compact_boundary` line and its \
                     `isCompactSummary` summary line) is written as pi's own `compaction` entry \
                     holding the summary (nothing before it kept), so a resume sends the summary \
                     and what follows, as Claude Code does; the boundary's text and \
                     `compactMetadata` are left out",
                );
                return;
            }
            self.boundary_lost(&seed);
        }
        if let Some(summary) = crate::face::opencode_summary_text(m) {
            // An opencode compaction: pi's own.
            self.compaction(m.id().as_str(), ms, &summary);
            self.losses.record(
                COMPACTED,
                at,
                "an opencode compaction (the summary answering its `compaction` message) is \
                 written as pi's own `compaction` entry (nothing before it kept), so a resume \
                 sends the summary and what follows, as opencode does",
            );
            return;
        }
        match m {
            // A system message or a carried record does not end a model response: codex
            // interleaves event records between the reasoning, text and calls of one response.
            Message::System(s) => {
                let compaction = s
                    .carried_record()
                    .filter(|r| crate::face::is_compaction_record(r));
                if let Some(summary) = compaction.and_then(crate::face::compaction_summary) {
                    self.compaction(m.id().as_str(), ms, summary);
                    self.losses.record(
                        COMPACTED,
                        at,
                        "a Codex `compacted` record is written as pi's own `compaction` entry \
                         (its summary, nothing before it kept), so a resume sends the summary \
                         and what follows, as Codex does; the record's other fields \
                         (`replacement_history`) are left out",
                    );
                } else if compaction.is_some() {
                    self.losses.record(
                        crate::face::COMPACTION_LOSS,
                        at,
                        crate::face::compaction_loss_detail("pi"),
                    );
                } else if crate::face::is_compact_boundary(s) {
                    self.boundary = Some((m.id().to_string(), ms));
                } else if s.carried_record().is_some() {
                    self.losses.record(
                        SOURCE_RECORD,
                        at,
                        "a source record that maps to no message has no place in pi",
                    );
                } else {
                    self.losses
                        .record("system_message", at, "pi sessions have no system messages");
                }
            }
            Message::User(u) => {
                self.in_assistant_run = false;
                let mut blocks = Vec::new();
                for p in &u.content {
                    match p.as_part_ref() {
                        PartRef::Text(t) if t.text.as_str().is_empty() => {}
                        PartRef::Text(t) => blocks.push(Block::Text(t.text.as_str().to_owned())),
                        PartRef::File(f) => blocks.extend(self.image(f, at)),
                        _ => {}
                    }
                }
                if blocks.is_empty() {
                    return;
                }
                self.held.push_back(Pending {
                    seed: m.id().to_string(),
                    ms,
                    message: PiMessage::User { content: blocks },
                    results: Vec::new(),
                    calls: Vec::new(),
                    waiting: 0,
                });
            }
            Message::Assistant(a) => {
                let mut blocks = Vec::new();
                let mut results = Vec::new();
                for p in a.content.iter().map(AssistantPart::as_part_ref) {
                    match p {
                        PartRef::Text(t) if t.text.as_str().is_empty() => {}
                        PartRef::Text(t) => blocks.push(Block::Text(t.text.as_str().to_owned())),
                        PartRef::Reasoning(r) => {
                            let signature = (self.session.source_agent == "claude-code")
                                .then(|| find_str(&r.options, &["signature"]).map(str::to_owned))
                                .flatten();
                            if signature.is_none() && !r.options.is_empty() {
                                self.losses.record(
                                    "reasoning_provider_data",
                                    at,
                                    "opaque reasoning data (encrypted content, another provider's signature) is not written; pi replays unsigned thinking as text",
                                );
                            }
                            if r.text.as_str().is_empty() {
                                continue;
                            }
                            blocks.push(Block::Thinking {
                                text: r.text.as_str().to_owned(),
                                signature,
                            });
                        }
                        PartRef::ToolCall(c) => {
                            // An object as it is; anything else as `{"input": <value>}`
                            // (serde_json's bytes for both).
                            let mut args = Vec::new();
                            match c.params.as_value() {
                                Value::Object(o) => jsonl::write_value_map(&mut args, o),
                                other => {
                                    self.losses.record(
                                        "tool_input_wrapped",
                                        at,
                                        "pi tool arguments are an object: a non-object input is kept under `input`",
                                    );
                                    args.extend_from_slice(br#"{"input":"#);
                                    jsonl::write_value(&mut args, other);
                                    args.push(b'}');
                                }
                            }
                            blocks.push(Block::ToolCall {
                                id: c.call_id.as_str().to_owned(),
                                name: c.name.as_str().to_owned(),
                                arguments: args,
                            });
                        }
                        PartRef::File(f) => {
                            self.losses.record(
                                "assistant_file",
                                at,
                                "pi assistant messages hold no files or images",
                            );
                            let _ = f;
                        }
                        PartRef::ToolResult(r) => results.push(r),
                        PartRef::ToolApprovalRequest(_) | PartRef::ToolApprovalResponse(_) => {
                            self.losses.record(
                                "tool_approval",
                                at,
                                "pi keeps no tool approval requests or answers",
                            );
                        }
                    }
                }
                if !blocks.is_empty() {
                    let merge = self.in_assistant_run
                        && self.held.back().is_some_and(|p| p.message.is_assistant());
                    if !merge {
                        let opts = &a.options;
                        let provider =
                            find_str(opts, &["providerID", "provider", "model_provider"])
                                .unwrap_or(&self.provider)
                                .to_owned();
                        let model = find_str(opts, &["model", "modelID", "modelId"])
                            .unwrap_or(&self.model)
                            .to_owned();
                        self.held.push_back(Pending {
                            seed: m.id().to_string(),
                            ms,
                            message: PiMessage::Assistant {
                                content: Vec::new(),
                                provider,
                                model,
                            },
                            results: Vec::new(),
                            calls: Vec::new(),
                            waiting: 0,
                        });
                    }
                    let i = self.held.len() - 1;
                    for b in &blocks {
                        if let Block::ToolCall { id, name, .. } = b {
                            self.held[i].calls.push(id.clone());
                            self.held[i].waiting += 1;
                            self.calls.insert(id.clone(), (self.base + i, name.clone()));
                        }
                    }
                    if let PiMessage::Assistant { content, .. } = &mut self.held[i].message {
                        content.extend(blocks);
                    }
                    self.in_assistant_run = true;
                }
                for r in results {
                    self.result(r, ms, at);
                }
            }
            Message::Tool(t) => {
                self.in_assistant_run = false;
                for p in t.content.iter().map(ToolPart::as_part_ref) {
                    match p {
                        PartRef::ToolResult(r) => self.result(r, ms, at),
                        _ => self.losses.record(
                            "tool_approval",
                            at,
                            "pi keeps no tool approval requests or answers",
                        ),
                    }
                }
            }
        }
    }

    /// An image block for a user file part, or the loss when pi cannot hold it.
    fn image(&mut self, f: &pond_canonical::FilePart, at: At<'_>) -> Option<Block> {
        match &f.data {
            FileData::Base64(d) if f.media_type.as_str().starts_with("image/") => {
                Some(Block::Image {
                    data: d.clone(),
                    mime: f.media_type.as_str().to_owned(),
                })
            }
            _ => {
                self.losses.record(
                    "file_not_image",
                    at,
                    "pi messages hold base64 images only: other files and URLs are dropped",
                );
                None
            }
        }
    }

    /// A `toolResult` message after the assistant message that made the call.
    fn result(&mut self, r: &pond_canonical::ToolResultPart, ms: i64, at: At<'_>) {
        let Some((i, call_name)) = self.calls.get(r.call_id.as_str()).cloned() else {
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
                "a tool result whose call is not in the session (or no longer waiting for it) is dropped",
            );
            return;
        };
        let i = i - self.base;
        if !self.answered.insert(r.call_id.as_str().to_owned()) {
            self.losses.record(
                "duplicate_tool_result",
                at,
                "a second result for one tool call was dropped",
            );
            return;
        }
        let name = r.name.as_ref().map_or(call_name, |n| n.as_str().to_owned());
        // A string output held as its JSON text is one text block, copied as it is: the block
        // its value would make, to the byte.
        let content = match r.result.json_text() {
            Some(json) => vec![Block::TextJson(json.into())],
            None => self.result_content(r.result.as_value(), at),
        };
        let msg = PiMessage::ToolResult {
            call_id: r.call_id.as_str().to_owned(),
            name,
            content,
            is_error: r.is_failure,
        };
        self.held[i].results.push((r.id.to_string(), ms, msg));
        self.held[i].waiting -= 1;
    }

    /// Tool output as pi's text and image blocks.
    fn result_content(&mut self, v: &Value, at: At<'_>) -> Vec<Block> {
        let text = |s: &str| Block::Text(s.to_owned());
        match v {
            Value::String(s) => vec![text(s)],
            Value::Null => vec![text("")],
            Value::Array(items) => items
                .iter()
                .map(|item| match item {
                    Value::String(s) => text(s),
                    Value::Object(o) if o.get("text").is_some_and(Value::is_string) => {
                        text(o.get("text").and_then(Value::as_str).unwrap_or(""))
                    }
                    Value::Object(o)
                        if o.get("type").and_then(Value::as_str) == Some("image")
                            && let Some(Value::String(data)) = item.pointer("/source/data") =>
                    {
                        Block::Image {
                            data: data.clone(),
                            mime: item
                                .pointer("/source/media_type")
                                .and_then(Value::as_str)
                                .unwrap_or("image/png")
                                .to_owned(),
                        }
                    }
                    other => {
                        self.losses.record(
                            "tool_output_structured",
                            at,
                            "a non-text block of a tool result was written as JSON text",
                        );
                        text(&other.to_string())
                    }
                })
                .collect(),
            other => vec![text(&other.to_string())],
        }
    }
}

impl ForeignFile {
    /// A foreign session begins: its id, file and header are decided.
    /// `flat`: the file goes in the output root, not in its project's folder.
    pub(crate) fn start(session: &Session, flat: bool, losses: &mut Losses) -> Self {
        let (id, derived) = session_uuid(session.id.as_str());
        let where_ = format!("session {}", session.id);
        if derived {
            losses.record(
                "session_id_derived",
                &where_,
                format!(
                    "pi session ids are UUIDs: session {} became {id} (a hash of the source id)",
                    session.id
                ),
            );
        }
        if session.parent_session_id.is_some() {
            losses.record(
                "session_parent_link",
                &where_,
                "pi has no sub-agents: a child session is its own pi file, without a link to its parent",
            );
        }
        // The header (pi.md sections 2-3); its entries follow as one chain.
        let stamp = crate::clock::iso_millis(millis(&session.created_at));
        let cwd = session.project.as_str();
        let mut buf = Vec::new();
        push_line(
            &mut buf,
            &json!({"type": "session", "version": 3, "id": id, "timestamp": stamp, "cwd": cwd}),
        );
        let name = format!("{}_{id}.jsonl", stamp.replace([':', '.'], "-"));
        Self {
            path: format!("{}{name}", super::session_folder(cwd, flat)),
            id,
            session: session.clone(),
            losses: Losses::default(),
            prelude: Prelude::new(),
            held: VecDeque::new(),
            base: 0,
            calls: crate::LookupMap::default(),
            answered: crate::LookupSet::default(),
            in_assistant_run: false,
            provider: String::new(),
            model: String::new(),
            used: crate::LookupSet::default(),
            parent: None,
            boundary: None,
            buf,
        }
    }

    /// Begins an entry of `kind` made from `seed`, chained to the one before: its `type`, a new
    /// id unique in the file (then `self.parent`), `parentId` and `timestamp`, in pi's field
    /// order. The caller writes the entry's own members and closes it.
    fn begin_entry(&mut self, kind: &[u8], seed: &str, ms: i64) {
        let mut salt = 0u32;
        let eid = loop {
            let candidate = entry_id(self.session.id.as_str(), seed, salt);
            if self.used.insert(candidate) {
                break crate::digest::hex(&candidate.to_be_bytes());
            }
            salt += 1;
        };
        let out = &mut self.buf;
        out.extend_from_slice(b"{\"type\":");
        out.extend_from_slice(kind);
        field(out, b",\"id\":", &eid);
        out.extend_from_slice(b",\"parentId\":");
        match self.parent.as_deref() {
            Some(parent) => jsonl::write_str(out, parent),
            None => out.extend_from_slice(b"null"),
        }
        field(out, b",\"timestamp\":", &crate::clock::iso_millis(ms));
        self.parent = Some(eid);
    }

    /// A Claude Code compaction boundary with no summary after it: a system message, which pi
    /// has no place for.
    fn boundary_lost(&mut self, seed: &str) {
        let sid = self.session.id.clone();
        self.losses.record(
            "system_message",
            At::new(sid.as_str(), seed),
            "pi sessions have no system messages",
        );
    }

    /// pi's own `compaction` entry (pi.md section 2), chained to the one before: a resume sends
    /// its summary and the entries after it. `firstKeptEntryId` is its own id, which no entry
    /// before it has, so nothing before it is sent (pi's `buildSessionContext` sends the
    /// entries from that id up to the compaction).
    /// What is held before it is final first: the compaction follows it.
    fn compaction(&mut self, seed: &str, ms: i64, summary: &str) {
        while self.held.front().is_some() {
            self.write_front();
        }
        self.in_assistant_run = false;
        self.begin_entry(b"\"compaction\"", seed, ms);
        let out = &mut self.buf;
        field(out, b",\"summary\":", summary);
        field(
            out,
            b",\"firstKeptEntryId\":",
            self.parent.as_deref().unwrap_or_default(),
        );
        out.extend_from_slice(b",\"tokensBefore\":0}\n");
    }

    /// One `message` entry, chained to the one before.
    fn entry(&mut self, seed: &str, ms: i64, msg: &PiMessage) {
        self.begin_entry(b"\"message\"", seed, ms);
        let out = &mut self.buf;
        out.extend_from_slice(b",\"message\":");
        msg.write(out, ms);
        out.extend_from_slice(b"}\n");
    }

    /// The session written.
    pub(crate) fn session(&self) -> &Session {
        &self.session
    }

    /// The end of the source: whatever is held is written.
    pub(crate) fn finish(&mut self, target: &mut Target<'_>) -> Result<(), WriteError> {
        self.end();
        // After the prelude's messages are built: the last may be a boundary.
        if let Some((seed, _)) = self.boundary.take() {
            self.boundary_lost(&seed);
        }
        self.write(target)
    }
}

impl Streamed for ForeignFile {
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

    /// The open response (the last pi message, an assistant one, while its run goes on) and a
    /// message with a call still unanswered wait.
    fn front_waits(&self) -> Option<bool> {
        let front = self.held.front()?;
        let open = self.in_assistant_run && self.held.len() == 1 && front.message.is_assistant();
        Some(open || front.waiting > 0)
    }

    fn held_len(&self) -> usize {
        self.held.len()
    }

    /// The oldest held pi message, then its results. A call still unanswered is reported (pi
    /// sends it unanswered) and a result that comes for it later is dropped.
    fn write_front(&mut self) {
        let Some(mut p) = self.held.pop_front() else {
            return;
        };
        for call in &p.calls {
            if self.calls.get(call).is_some_and(|(i, _)| *i == self.base) {
                self.calls.remove(call);
            }
            if !self.answered.contains(call) {
                self.losses.record(
                    "tool_call_without_result",
                    format!("session {}", self.session.id),
                    "a tool call has no result in the source; pi sends it unanswered",
                );
            }
        }
        self.base += 1;
        self.entry(&p.seed, p.ms, &p.message);
        for (seed, ms, msg) in std::mem::take(&mut p.results) {
            self.entry(&seed, ms.max(p.ms), &msg);
        }
    }

    fn pending(&mut self) -> (&str, &mut Losses, &mut Vec<u8>) {
        (&self.path, &mut self.losses, &mut self.buf)
    }
}

fn push_line(bytes: &mut Vec<u8>, v: &Value) {
    jsonl::write_value(bytes, v);
    bytes.push(b'\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folder_follows_pi() {
        assert_eq!(cwd_folder("/Users/me/p"), "--Users-me-p--");
        assert_eq!(cwd_folder("C:\\x\\y"), "--C--x-y--");
    }

    #[test]
    fn entry_ids_are_the_ones_written_before() {
        for (session, seed) in [("s", "m"), ("019b-\u{e9}", "L12.0"), ("", "")] {
            for salt in [0u32, 1, 9, 10, 4_294_967_295] {
                let h = hash128(&format!("{session}/{seed}/{salt}"));
                assert_eq!(entry_id(session, seed, salt), (h >> 96) as u32);
            }
        }
    }

    #[test]
    fn uuids_are_kept_or_derived() {
        let u = "0a1b2c3d-4e5f-4061-8071-2a3b4c5d6e7f";
        assert_eq!(session_uuid(u), (u.to_owned(), false));
        let (d, derived) = session_uuid("ses_abc");
        assert!(derived && is_uuid(&d) && d.as_bytes()[14] == b'8', "{d}");
        assert_eq!(session_uuid("ses_abc").0, d);
    }
}

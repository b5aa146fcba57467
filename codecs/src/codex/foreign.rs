//! The foreign write face (spec 6.3, foreign restore): any canonical session (Claude Code,
//! opencode, pi) becomes an idiomatic G1 rollout that Codex 0.169 resumes
//! (`/work/shared/formats/codex.md` section 8):
//!
//! * the file is `YYYY/MM/DD/rollout-YYYY-MM-DDThh-mm-ss-<uuid>.jsonl` from the session's
//!   `created_at` in UTC; `<uuid>` is the session id when it is a UUID, else a name-based UUID
//!   (version 5, SHA-1) derived from `<source_agent>:<id>`, so the same session always gets the
//!   same thread id (loss `session_id` records that the original id is not in the rollout);
//! * line 1 is a complete `session_meta` (`id, timestamp, cwd, originator, cli_version, source,
//!   model_provider`); a sub-agent or fork names its parent (derived the same way) in
//!   `parent_thread_id` / `forked_from_id`;
//! * every line is the `{timestamp, type, payload}` envelope with its message's timestamp;
//! * user text is `input_text`, images `input_image` (data URL or URL), assistant text
//!   `output_text`, reasoning a `reasoning` item with its text as `summary_text` (no
//!   `encrypted_content`: a foreign signature cannot be forged into it), tool calls
//!   `function_call` with `arguments` as a JSON string, results `function_call_output` with a
//!   string or a content-item array; each user and assistant text also gets its `event_msg`
//!   twin (`user_message`, `agent_message`, `agent_reasoning`) that the TUI replays on resume.
//!
//! Everything a rollout cannot hold is a recorded loss (kinds in [`loss`]).
//!
//! The rollout streams: each message's lines go to the output as soon as the message is read
//! (calls and results are written in the order they come, so nothing waits for a later message),
//! and the writer keeps only the session's ids and the call ids it wrote, to drop a result whose
//! call is not before it, and for a pi session the items it wrote last, for the replacement
//! history of a pi compaction ([`Retained`]). A write that fails is reported by
//! [`ForeignRollout::finish`].

use crate::digest;
use crate::face::{At, Target, WriteError, Written};
use crate::jsonl;
use pond_canonical::{FileData, Message, PartRef, Provenance, Session, Timestamp};
use serde_json::{Map, Value};

/// The keys a foreign write looks for in a message's options: none (it asks only whether a
/// message has any, for the `source_options` loss; `SessionWriter::option_keys`). A pi
/// compaction's fields, which it reads ([`crate::face::pi_compaction`]), are kept by any read.
pub(crate) const OPTION_KEYS: &[&str] = &[];

/// At most this many bytes of a pi session's response items are kept for the replacement
/// history of a compaction after them ([`Retained`]); pi keeps about 20,000 tokens
/// (`keepRecentTokens`), a small part of this.
const RETAIN_LIMIT: usize = 4 << 20;

/// The stable loss kinds a foreign Codex write records.
pub mod loss {
    /// The source session id is not a UUID; the rollout uses the UUID derived from it.
    pub const SESSION_ID: &str = "session_id";
    /// A reasoning part carried a provider signature or encrypted payload (Claude `signature`,
    /// pi `thinkingSignature`, ...): Codex's `encrypted_content` is OpenAI's and cannot hold it.
    pub const REASONING_SIGNATURE: &str = "reasoning_signature";
    /// A system message that only carries a source record (placement rule 3).
    pub const HARNESS_RECORD: &str = "harness_record";
    /// A file part that is not an image (Codex content items hold images only), or a file in an
    /// assistant message.
    pub const FILE: &str = "file_attachment";
    /// An inline image whose data is not a whole PNG, JPEG, GIF or WebP image (a trimmed or
    /// truncated fixture): Codex would send "image content omitted because it could not be
    /// processed" in its place, so it is not written.
    pub const IMAGE_UNUSABLE: &str = "image_unusable";
    /// Tool approval requests and responses: a rollout has no such item.
    pub const TOOL_APPROVAL: &str = "tool_approval";
    /// A tool result marked as a failure: `function_call_output` has no failure flag on disk.
    pub const TOOL_FAILURE_FLAG: &str = "tool_failure_flag";
    /// A tool result that is neither text nor a list of text/image blocks: written as JSON text.
    pub const TOOL_RESULT_STRUCTURE: &str = "tool_result_structure";
    /// A tool result whose call is not in the session (a truncated or partial transcript).
    pub const ORPHAN_TOOL_RESULT: &str = "orphan_tool_result";
    /// A provider-executed (server) tool call: written as an ordinary `function_call`.
    pub const PROVIDER_EXECUTED: &str = "provider_executed_tool";
    /// Source metadata in `options` (models, usage, envelope fields, ...): a rollout has no
    /// place for it (unknown fields are stripped by Codex, so pond hides nothing there).
    pub const SOURCE_OPTIONS: &str = "source_options";
    /// A fork's cut-point in its parent: a G1 rollout names the parent only.
    pub const CUT_POINT: &str = "fork_cut_point";
    /// A Claude Code, opencode or pi compaction written as Codex's own `compacted` line (its
    /// text and metadata left out).
    pub const COMPACTION: &str = "compaction_rewritten";
}

/// The `originator` pond writes into `session_meta` (who wrote the rollout).
pub const ORIGINATOR: &str = "pond";
/// The provider id written as `model_provider`: Codex's built-in default, so `codex resume`
/// works with a stock configuration (resume refuses to switch provider, codex.md section 6).
pub const MODEL_PROVIDER: &str = "openai";

/// One foreign rollout being written.
pub(crate) struct ForeignRollout {
    pub source: String,
    pub uuid: String,
    pub path: String,
    /// Lines made since the last write to the output (the header, then one message's lines).
    buf: Vec<u8>,
    /// The first write that failed; nothing more is written after it.
    failed: Option<WriteError>,
    /// The call ids written so far, to pair results with.
    calls: crate::LookupSet<String>,
    /// The `timestamp` of the lines being made: the current message's, in Codex's form.
    ts: String,
    /// A buffer reused for what a line needs made before it is written: a user item's content
    /// items (its event line goes first), a tool call's arguments as JSON text.
    scratch: Vec<u8>,
    /// A pi session's response items, kept for a compaction's replacement history.
    retained: Option<Retained>,
}

/// The `response_item` payloads written for a pi session's messages, most recent last, at most
/// [`RETAIN_LIMIT`] bytes of them: a pi compaction keeps the entries from its
/// `firstKeptEntryId` on, which are written before it, and Codex resumes from a `compacted`
/// line's replacement history, so they are written there again ([`ForeignRollout::pi_compaction`]).
struct Retained {
    /// The payloads, comma-separated.
    items: Vec<u8>,
    /// Each message's id (hashed) with where its first payload begins in `items`, in order.
    starts: Vec<(u128, usize)>,
    /// [`RETAIN_LIMIT`] (smaller in a test).
    limit: usize,
}

impl Default for Retained {
    fn default() -> Self {
        Self {
            items: Vec::new(),
            starts: Vec::new(),
            limit: RETAIN_LIMIT,
        }
    }
}

impl Retained {
    /// Begins message `id`: its payloads, if any, are pushed after this.
    fn begin(&mut self, id: &str) {
        let at = self.items.len() + usize::from(!self.items.is_empty());
        self.starts.push((crate::digest::hash128(id), at));
    }

    /// The payloads from message `id`'s on, if it is still held.
    fn from(&self, id: &str) -> Option<&[u8]> {
        let id = crate::digest::hash128(id);
        let &(_, at) = self.starts.iter().rev().find(|&&(m, _)| m == id)?;
        Some(self.items.get(at..).unwrap_or_default())
    }

    fn push(&mut self, payload: &[u8]) {
        if !self.items.is_empty() {
            self.items.push(b',');
        }
        self.items.extend_from_slice(payload);
        if self.items.len() > self.limit {
            // The older half goes, by whole messages.
            let half = self.items.len() / 2;
            let keep = self.starts.partition_point(|&(_, at)| at < half);
            let cut = self
                .starts
                .get(keep)
                .map_or(self.items.len(), |&(_, at)| at);
            self.items.drain(..cut);
            self.starts.drain(..keep);
            for (_, at) in &mut self.starts {
                *at -= cut;
            }
        }
    }
}

impl ForeignRollout {
    /// Starts the rollout of `session`: derives its thread id and file, writes `session_meta`.
    pub(crate) fn start(session: &Session, target: &mut Target<'_>) -> Self {
        let source = session.id.as_str();
        let (uuid, derived) = thread_id(&session.source_agent, source);
        if derived {
            target.losses.record(
                loss::SESSION_ID,
                format!("session {source}"),
                format!("`{source}` is not a UUID; the rollout's thread id is {uuid}, the UUIDv5 of \"pond:<source_agent>:<id>\" in the RFC 4122 URL namespace"),
            );
        }
        let created = &session.created_at;
        let mut meta = Map::new();
        meta.insert("id".into(), Value::from(uuid.clone()));
        meta.insert("timestamp".into(), Value::from(iso_millis(created)));
        meta.insert("cwd".into(), Value::from(session.project.as_str()));
        meta.insert("originator".into(), Value::from(ORIGINATOR));
        meta.insert("cli_version".into(), Value::from(env!("CARGO_PKG_VERSION")));
        meta.insert("source".into(), Value::from("cli"));
        meta.insert("model_provider".into(), Value::from(MODEL_PROVIDER));
        if let Some(parent) = &session.parent_session_id {
            let (parent_uuid, _) = thread_id(&session.source_agent, parent.as_str());
            if let Some(cut) = &session.parent_message_id {
                // A fork: Codex's own marker for a G1 fork. The cut-point has no G1 field.
                meta.insert("forked_from_id".into(), Value::from(parent_uuid));
                target.losses.record(
                    loss::CUT_POINT,
                    format!("session {source}"),
                    format!("the fork's cut-point {cut} in its parent has no G1 rollout field"),
                );
            } else {
                // A spawned sub-agent: the parent thread, as Codex's sub-agent rollouts name it.
                meta.insert("parent_thread_id".into(), Value::from(parent_uuid));
            }
        }
        if !session.options.is_empty() {
            target.losses.record(
                loss::SOURCE_OPTIONS,
                format!("session {source}"),
                "source metadata in options (paths, sidecars, models, usage, envelope fields)",
            );
        }
        let path = format!(
            "{}/rollout-{}-{uuid}.jsonl",
            date_dirs(created),
            file_time(created)
        );
        let mut rollout = Self {
            source: source.to_owned(),
            uuid,
            path,
            buf: Vec::new(),
            failed: None,
            calls: crate::LookupSet::default(),
            ts: iso_millis(created),
            scratch: Vec::new(),
            retained: (session.source_agent == "pi").then(Retained::default),
        };
        rollout.line("session_meta", |out| jsonl::write_value_map(out, &meta));
        rollout
    }

    /// Writes the lines made so far, keeping the first failure for [`Self::finish`].
    fn write(&mut self, target: &mut Target<'_>) {
        if self.failed.is_none() && !self.buf.is_empty() {
            self.failed = target.out.append(&self.path, &self.buf).err();
        }
        self.buf.clear();
    }

    /// Appends the lines of one message.
    pub(crate) fn message(&mut self, message: &Message, target: &mut Target<'_>) {
        // The session's name is taken out for the call, so that the place of a loss can borrow
        // it while the lines are made.
        let source = std::mem::take(&mut self.source);
        let at = At::of(&source, message);
        self.message_at(message, at, target);
        self.source = source;
        self.write(target);
    }

    fn message_at(&mut self, message: &Message, at: At<'_>, target: &mut Target<'_>) {
        if !message.options().is_empty() && !matches!(message, Message::System(_)) {
            target.losses.record(
                loss::SOURCE_OPTIONS,
                at,
                "source metadata in options (paths, sidecars, models, usage, envelope fields)",
            );
        }
        self.ts = iso_millis(message.timestamp());
        if let Some(retained) = &mut self.retained {
            retained.begin(message.id().as_str());
            if let Some(compaction) = crate::face::pi_compaction(message)
                && self.pi_compaction(&compaction, at, target)
            {
                return;
            }
        }
        if let Message::Assistant(_) = message
            && crate::face::opencode_summary_text(message).is_some()
        {
            // An opencode compaction: Codex's own `compacted` line with an empty replacement
            // history before its summary, so a resume sends the summary and what follows, as
            // opencode does; the summary itself is written as the assistant message it is.
            self.line("compacted", |out| {
                out.extend_from_slice(br#"{"message":"","replacement_history":[]}"#);
            });
            target.losses.record(
                loss::COMPACTION,
                at,
                "an opencode compaction (the summary answering its `compaction` message) is \
                 written as Codex's own: a `compacted` line with an empty replacement history \
                 before the summary, so a resume sends the summary and what follows, as opencode \
                 does",
            );
        }
        match message {
            Message::System(system) => {
                if let Some(record) = system.carried_record() {
                    let kind = record
                        .get("type")
                        .and_then(Value::as_str)
                        .unwrap_or("(untyped)");
                    target.losses.record(
                        loss::HARNESS_RECORD,
                        at,
                        format!("a harness record with no model-visible content (`{kind}`)"),
                    );
                } else if crate::face::is_compact_boundary(system) {
                    // A Claude Code compaction becomes Codex's own: a `compacted` line whose
                    // replacement history is empty, so a resume sends what follows it (Claude
                    // Code's summary line, then the rest), as Claude Code does; the history
                    // before it stays in the file.
                    self.line("compacted", |out| {
                        out.extend_from_slice(br#"{"message":"","replacement_history":[]}"#);
                    });
                    target.losses.record(
                        loss::COMPACTION,
                        at,
                        "a Claude Code compaction (`compact_boundary`) is written as Codex's own: a \
                         `compacted` line with an empty replacement history, so a resume sends the \
                         summary after it and what follows, as Claude Code does; the boundary's \
                         text and `compactMetadata` are left out",
                    );
                } else if !system.content.is_empty() {
                    // A system message is harness instruction: Codex's own is a developer message.
                    self.line("response_item", |out| {
                        out.extend_from_slice(
                            br#"{"type":"message","role":"developer","content":["#,
                        );
                        content_item(out, INPUT_TEXT, system.content.as_str());
                        out.extend_from_slice(b"]}");
                    });
                }
            }
            Message::User(_) => self.user(message, at, target),
            Message::Assistant(_) | Message::Tool(_) => self.assistant(message, at, target),
        }
    }

    fn user(&mut self, message: &Message, at: At<'_>, target: &mut Target<'_>) {
        // The item's content items, written as they are found (the event line goes first).
        let mut content = std::mem::take(&mut self.scratch);
        content.clear();
        let mut typed = String::new();
        let mut images: Vec<String> = Vec::new();
        for part in message.part_refs() {
            match part {
                PartRef::Text(t) => {
                    // Injected text stays in the user item, as Codex keeps its own injected
                    // context (environment, AGENTS.md) in user messages; only the typed text
                    // goes to the `user_message` event, as Codex does.
                    if t.provenance == Provenance::Conversational {
                        typed.push_str(t.text.as_str());
                    }
                    push_item(&mut content, INPUT_TEXT, t.text.as_str());
                }
                PartRef::File(f) => match image_url(f) {
                    Some(url) if !inline_image_usable(&url) => target.losses.record(
                        loss::IMAGE_UNUSABLE,
                        at,
                        format_args!(
                            "a {} image whose data is not a whole image Codex can decode",
                            f.media_type.as_str()
                        ),
                    ),
                    Some(url) => {
                        push_item(&mut content, INPUT_IMAGE, &url);
                        images.push(url);
                    }
                    None => target.losses.record(
                        loss::FILE,
                        at,
                        format_args!(
                            "a {} file: Codex content items hold images only",
                            f.media_type.as_str()
                        ),
                    ),
                },
                other => self.lost_part(other, at, target),
            }
        }
        if !content.is_empty() {
            if !typed.is_empty() || !images.is_empty() {
                self.line("event_msg", |out| {
                    out.extend_from_slice(br#"{"type":"user_message","message":"#);
                    jsonl::write_str(out, &typed);
                    out.extend_from_slice(br#","images":["#);
                    for (i, url) in images.iter().enumerate() {
                        if i > 0 {
                            out.push(b',');
                        }
                        jsonl::write_str(out, url);
                    }
                    out.extend_from_slice(b"]}");
                });
            }
            self.line("response_item", |out| {
                out.extend_from_slice(br#"{"type":"message","role":"user","content":["#);
                out.extend_from_slice(&content);
                out.extend_from_slice(b"]}");
            });
        }
        self.scratch = content;
    }

    fn assistant(&mut self, message: &Message, at: At<'_>, target: &mut Target<'_>) {
        // Assistant text not written yet: consecutive text parts become one message item.
        let mut text: Vec<&str> = Vec::new();
        for part in message.part_refs() {
            match part {
                PartRef::Text(t) => {
                    text.push(t.text.as_str());
                    continue;
                }
                PartRef::File(f) => {
                    target.losses.record(
                        loss::FILE,
                        at,
                        format_args!(
                            "a {} file in an assistant message: Codex assistant content is output_text",
                            f.media_type.as_str()
                        ),
                    );
                    continue;
                }
                _ => {}
            }
            self.flush_text(&mut text);
            match &part {
                PartRef::Reasoning(r) => {
                    if has_signature(&r.options) {
                        target.losses.record(
                            loss::REASONING_SIGNATURE,
                            at,
                            "the reasoning signature (or encrypted payload) cannot become Codex encrypted_content; the reasoning text is kept as summary text",
                        );
                    }
                    if r.text.is_empty() {
                        continue;
                    }
                    let text = r.text.as_str();
                    self.line("event_msg", |out| {
                        out.extend_from_slice(br#"{"type":"agent_reasoning","text":"#);
                        jsonl::write_str(out, text);
                        out.push(b'}');
                    });
                    // The shape Codex itself writes (and rewrites to): both fields null.
                    self.line("response_item", |out| {
                        out.extend_from_slice(
                            br#"{"type":"reasoning","summary":[{"type":"summary_text","text":"#,
                        );
                        jsonl::write_str(out, text);
                        out.extend_from_slice(br#"}],"content":null,"encrypted_content":null}"#);
                    });
                }
                PartRef::ToolCall(c) => {
                    if c.provider_executed {
                        target.losses.record(
                            loss::PROVIDER_EXECUTED,
                            at,
                            format_args!(
                                "`{}` ran on the provider's side; written as a function_call",
                                c.name.as_str()
                            ),
                        );
                    }
                    // codex.md 8.1: `arguments` must be a JSON string, an object is dropped.
                    let mut arguments = std::mem::take(&mut self.scratch);
                    arguments.clear();
                    jsonl::write_value(&mut arguments, c.params.as_value());
                    let arguments_text =
                        std::str::from_utf8(&arguments).expect("JSON text is UTF-8");
                    self.calls.insert(c.call_id.as_str().to_owned());
                    self.line("response_item", |out| {
                        out.extend_from_slice(br#"{"type":"function_call","name":"#);
                        jsonl::write_str(out, c.name.as_str());
                        out.extend_from_slice(br#","arguments":"#);
                        jsonl::write_str(out, arguments_text);
                        out.extend_from_slice(br#","call_id":"#);
                        jsonl::write_str(out, c.call_id.as_str());
                        out.push(b'}');
                    });
                    self.scratch = arguments;
                }
                PartRef::ToolResult(r) if !self.calls.contains(r.call_id.as_str()) => {
                    // Codex never sends an output whose call is not before it (measured with
                    // `codex exec resume`): an orphan result is dropped, as Claude Code does too.
                    target.losses.record(
                        loss::ORPHAN_TOOL_RESULT,
                        at,
                        format_args!(
                            "the result of call {}, which the session does not hold",
                            r.call_id.as_str()
                        ),
                    );
                }
                PartRef::ToolResult(r) => {
                    if r.is_failure {
                        target.losses.record(
                            loss::TOOL_FAILURE_FLAG,
                            at,
                            "function_call_output has no failure flag; the output text is kept",
                        );
                    }
                    let mut structured = false;
                    self.line("response_item", |out| {
                        out.extend_from_slice(br#"{"type":"function_call_output","call_id":"#);
                        jsonl::write_str(out, r.call_id.as_str());
                        out.extend_from_slice(br#","output":"#);
                        structured = write_output(out, r.result.as_value());
                        out.push(b'}');
                    });
                    if structured {
                        target.losses.record(
                            loss::TOOL_RESULT_STRUCTURE,
                            at,
                            "a tool result that is not text or text/image blocks is written as its JSON text",
                        );
                    }
                }
                other => self.lost_part(*other, at, target),
            }
        }
        self.flush_text(&mut text);
    }

    fn lost_part(&self, part: PartRef<'_>, at: At<'_>, target: &mut Target<'_>) {
        match part {
            PartRef::ToolApprovalRequest(_) | PartRef::ToolApprovalResponse(_) => {
                target.losses.record(
                    loss::TOOL_APPROVAL,
                    at,
                    "a tool approval request or answer: a rollout has no such item",
                )
            }
            other => target.losses.record(
                &format!("{}_part", other.kind()),
                at,
                format_args!("a {} part where Codex has no item for it", other.kind()),
            ),
        }
    }

    /// Writes pending assistant text as one `message` item (and its `agent_message` twin).
    fn flush_text(&mut self, text: &mut Vec<&str>) {
        if text.is_empty() {
            return;
        }
        self.line("event_msg", |out| {
            out.extend_from_slice(br#"{"type":"agent_message","message":"#);
            match text.as_slice() {
                [one] => jsonl::write_str(out, one),
                many => jsonl::write_str(out, &many.join("\n")),
            }
            out.push(b'}');
        });
        self.line("response_item", |out| {
            out.extend_from_slice(br#"{"type":"message","role":"assistant","content":["#);
            for (i, t) in text.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                out.extend_from_slice(br#"{"type":"output_text","text":"#);
                jsonl::write_str(out, t);
                out.push(b'}');
            }
            out.extend_from_slice(b"]}");
        });
        text.clear();
    }

    /// Appends the line `{timestamp, type, payload}` with the current timestamp; `payload`
    /// writes the payload's JSON.
    fn line(&mut self, kind: &str, payload: impl FnOnce(&mut Vec<u8>)) {
        let out = &mut self.buf;
        out.extend_from_slice(b"{\"timestamp\":");
        jsonl::write_str(out, &self.ts);
        out.extend_from_slice(b",\"type\":");
        jsonl::write_str(out, kind);
        out.extend_from_slice(b",\"payload\":");
        let start = out.len();
        payload(out);
        if kind == "response_item"
            && let Some(retained) = &mut self.retained
        {
            retained.push(&out[start..]);
        }
        out.extend_from_slice(b"}\n");
    }

    /// A pi compaction ([`crate::face::pi_compaction`]) as Codex's own: a `compacted` line whose
    /// replacement history is what pi sends on resume, the summary (as a user message, in pi's
    /// words) and the items of the entries from `firstKeptEntryId` on, so a resume sends that and
    /// what follows. Those entries were written before it as well, where they stand. False, and
    /// nothing written, when the first kept entry is not among the messages held (not named, not
    /// in the session, or over [`RETAIN_LIMIT`] before it): the compaction is then the user
    /// message it is read as, after the whole history, which a resume sends all of.
    fn pi_compaction(
        &mut self,
        compaction: &crate::face::PiCompaction<'_>,
        at: At<'_>,
        target: &mut Target<'_>,
    ) -> bool {
        let Some(retained) = self.retained.take() else {
            return false;
        };
        // The items written for the messages from the first kept on (the compaction writes none).
        let Some(kept) = compaction.first_kept.and_then(|id| retained.from(id)) else {
            self.retained = Some(retained);
            return false;
        };
        let mut history = std::mem::take(&mut self.scratch);
        history.clear();
        history.extend_from_slice(br#"{"type":"message","role":"user","content":["#);
        let text = [
            crate::face::PI_COMPACTION_PREFIX,
            compaction.summary,
            crate::face::PI_COMPACTION_SUFFIX,
        ]
        .concat();
        content_item(&mut history, INPUT_TEXT, &text);
        history.extend_from_slice(b"]}");
        if !kept.is_empty() {
            history.push(b',');
            history.extend_from_slice(kept);
        }
        self.line("compacted", |out| {
            out.extend_from_slice(br#"{"message":"#);
            jsonl::write_str(out, compaction.summary);
            out.extend_from_slice(br#","replacement_history":["#);
            out.extend_from_slice(&history);
            out.extend_from_slice(b"]}");
        });
        self.scratch = history;
        target.losses.record(
            loss::COMPACTION,
            at,
            "a pi compaction is written as Codex's own: a `compacted` line whose replacement \
             history is what pi sends on resume (its summary, then the entries it keeps from \
             `firstKeptEntryId`), so a resume sends that and what follows, as pi does; \
             `tokensBefore` and `details` are left out",
        );
        self.retained = Some(retained);
        true
    }

    /// Writes what is left (the header of a session without messages), and lists the rollout.
    pub(crate) fn finish(mut self, target: &mut Target<'_>) -> Result<(), WriteError> {
        self.write(target);
        if let Some(e) = self.failed {
            return Err(e);
        }
        target.written.push(Written {
            source_session: self.source,
            session: self.uuid.clone(),
            file: self.path,
            resume: Some(format!("codex resume {}", self.uuid)),
        });
        Ok(())
    }
}

/// A file part's `image_url`, if it is an image.
fn image_url(f: &pond_canonical::FilePart) -> Option<String> {
    let media = f.media_type.as_str();
    match &f.data {
        FileData::Base64(data) if media.starts_with("image/") => {
            Some(format!("data:{media};base64,{data}"))
        }
        FileData::Url(url) if media.starts_with("image/") || url.starts_with("data:image/") => {
            Some(url.clone())
        }
        _ => None,
    }
}

/// Whether Codex can decode an image URL: any non-`data:` URL, or base64 data holding a whole
/// PNG, JPEG, GIF or WebP file (Codex 0.169 decodes inline images before sending them and puts
/// a placeholder text in place of one it cannot).
fn inline_image_usable(url: &str) -> bool {
    let Some(rest) = url.strip_prefix("data:") else {
        return true;
    };
    let Some(bytes) = rest
        .split_once(";base64,")
        .and_then(|(_, data)| decode_base64(data))
    else {
        return false;
    };
    let n = bytes.len();
    let ends = |tail: &[u8]| bytes.ends_with(tail);
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        // Signature, IHDR chunk, ..., IEND chunk (length, type, CRC).
        n >= 8 + 25 + 12
            && bytes.get(12..16) == Some(b"IHDR")
            && bytes.get(n - 8..n - 4) == Some(b"IEND")
    } else if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
        n > 4 && ends(&[0xFF, 0xD9])
    } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        n > 13 && ends(&[0x3B])
    } else if bytes.starts_with(b"RIFF") && bytes.get(8..12) == Some(b"WEBP") {
        bytes
            .get(4..8)
            .and_then(|l| l.try_into().ok())
            .map(u32::from_le_bytes)
            .is_some_and(|l| usize::try_from(l).is_ok_and(|l| l.checked_add(8) == Some(n)))
    } else {
        false
    }
}

/// Standard base64 (padding optional, line breaks skipped), or `None` for any other character.
fn decode_base64(data: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(data.len() / 4 * 3);
    let (mut acc, mut bits) = (0u32, 0u32);
    for c in data.bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            b'=' | b'\n' | b'\r' => continue,
            _ => return None,
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    Some(out)
}

/// Whether a reasoning part's options hold a provider signature or encrypted payload.
fn has_signature(options: &Map<String, Value>) -> bool {
    fn walk(v: &Value) -> bool {
        match v {
            Value::Object(map) => map.iter().any(|(k, v)| {
                let k = k.to_ascii_lowercase();
                ((k.contains("signature") || k.contains("encrypted"))
                    && !v.is_null()
                    && v.as_str() != Some(""))
                    || walk(v)
            }),
            Value::Array(items) => items.iter().any(walk),
            _ => false,
        }
    }
    options.values().any(walk)
}

/// The start of an `input_text` content item, up to its text.
const INPUT_TEXT: &[u8] = br#"{"type":"input_text","text":"#;
/// The start of an `input_image` content item, up to its URL.
const INPUT_IMAGE: &[u8] = br#"{"type":"input_image","image_url":"#;

/// Appends the content item that `head` ([`INPUT_TEXT`], [`INPUT_IMAGE`]) starts, with `value`.
fn content_item(out: &mut Vec<u8>, head: &[u8], value: &str) {
    out.extend_from_slice(head);
    jsonl::write_str(out, value);
    out.push(b'}');
}

/// Appends a content item to the comma-separated items in `out`.
fn push_item(out: &mut Vec<u8>, head: &[u8], value: &str) {
    if !out.is_empty() {
        out.push(b',');
    }
    content_item(out, head, value);
}

/// Appends a tool result as `function_call_output.output`: a string, or a content-item array
/// when it holds images or several blocks (codex.md 8: a string or a content array; an object
/// is dropped by Codex). Returns whether the result had another structure, written as JSON text.
pub(crate) fn write_output(out: &mut Vec<u8>, result: &Value) -> bool {
    match result {
        Value::String(s) => {
            jsonl::write_str(out, s);
            false
        }
        Value::Array(blocks) => {
            let mut structured = false;
            let items: Vec<OutputItem<'_>> = blocks
                .iter()
                .map(|block| {
                    output_item(block).unwrap_or_else(|| {
                        structured = true;
                        OutputItem::Text(std::borrow::Cow::Owned(block.to_string()))
                    })
                })
                .collect();
            match items.as_slice() {
                [] => jsonl::write_str(out, ""),
                [OutputItem::Text(text)] => jsonl::write_str(out, text),
                items => {
                    out.push(b'[');
                    for (i, item) in items.iter().enumerate() {
                        if i > 0 {
                            out.push(b',');
                        }
                        match item {
                            OutputItem::Text(text) => content_item(out, INPUT_TEXT, text),
                            OutputItem::Image(url) => content_item(out, INPUT_IMAGE, url),
                            OutputItem::Verbatim(item) => jsonl::write_value(out, item),
                        }
                    }
                    out.push(b']');
                }
            }
            structured
        }
        Value::Object(map) => {
            // A `{content: [...]}` or `{output: "..."}` wrapper (pi, opencode) is unwrapped.
            for key in ["content", "output"] {
                if map.len() == 1
                    && let Some(inner) = map.get(key)
                    && (inner.is_string() || inner.is_array())
                {
                    return write_output(out, inner);
                }
            }
            jsonl::write_str(out, &result.to_string());
            true
        }
        other => {
            jsonl::write_str(out, &other.to_string());
            true
        }
    }
}

/// One tool-result block as a Codex content item.
enum OutputItem<'a> {
    /// `input_text` with this text.
    Text(std::borrow::Cow<'a, str>),
    /// `input_image` with this URL.
    Image(String),
    /// A Codex `input_image` item already, written as it is.
    Verbatim(&'a Value),
}

/// One tool-result block as a Codex content item (`input_text` or `input_image`).
fn output_item(block: &Value) -> Option<OutputItem<'_>> {
    if let Some(text) = block.as_str() {
        return Some(OutputItem::Text(text.into()));
    }
    let map = block.as_object()?;
    match map.get("type").and_then(Value::as_str)? {
        "text" | "input_text" | "output_text" => {
            Some(OutputItem::Text(map.get("text")?.as_str()?.into()))
        }
        "image" => {
            // Anthropic `{source: {type: base64, media_type, data}}` or pi `{data, mimeType}`.
            let url = if let Some(source) = map.get("source") {
                match source.get("type").and_then(Value::as_str)? {
                    "base64" => format!(
                        "data:{};base64,{}",
                        source.get("media_type")?.as_str()?,
                        source.get("data")?.as_str()?
                    ),
                    "url" => source.get("url")?.as_str()?.to_owned(),
                    _ => return None,
                }
            } else {
                format!(
                    "data:{};base64,{}",
                    map.get("mimeType")?.as_str()?,
                    map.get("data")?.as_str()?
                )
            };
            Some(OutputItem::Image(url))
        }
        "input_image" => Some(OutputItem::Verbatim(block)),
        _ => None,
    }
}

/// The Codex thread id for a session id: the id itself when it is a UUID (lowercased), else a
/// UUIDv5 of `<source_agent>:<id>` in pond's namespace. The flag says it was derived.
pub fn thread_id(source_agent: &str, id: &str) -> (String, bool) {
    if is_uuid(id) {
        let lower = id.to_ascii_lowercase();
        let changed = lower != id;
        return (lower, changed);
    }
    (uuid_v5(format_args!("{source_agent}:{id}")), true)
}

/// pond's UUIDv5 namespace: the RFC 4122 URL namespace, names being `pond:<agent>:<id>`.
const NAMESPACE_URL: [u8; 16] = [
    0x6b, 0xa7, 0xb8, 0x11, 0x9d, 0xad, 0x11, 0xd1, 0x80, 0xb4, 0x00, 0xc0, 0x4f, 0xd4, 0x30, 0xc8,
];

/// A name-based (version 5, SHA-1) UUID of `pond:<name>` in the URL namespace (RFC 4122 4.3).
pub fn uuid_v5(name: impl std::fmt::Display) -> String {
    digest::uuid_v5(&NAMESPACE_URL, format_args!("pond:{name}"))
}

/// Whether `s` is a UUID in its 8-4-4-4-12 hex text form.
pub fn is_uuid(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 36
        && b.iter().enumerate().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => *c == b'-',
            _ => c.is_ascii_hexdigit(),
        })
}

/// Civil UTC date and time of an instant: (year, month, day, hour, minute, second, millis).
fn civil(ts: &Timestamp) -> (i64, u32, u32, u32, u32, u32, u32) {
    let micros = ts.unix_micros();
    let secs = micros.div_euclid(1_000_000);
    let millis = (micros.rem_euclid(1_000_000) / 1000) as u32;
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400) as u32;
    let (year, month, day) = crate::clock::civil(days);
    (
        year,
        month,
        day,
        rem / 3600,
        rem / 60 % 60,
        rem % 60,
        millis,
    )
}

/// `2025-10-21T20:02:50.705Z`, the form Codex writes every `timestamp` in.
pub(crate) fn iso_millis(ts: &Timestamp) -> String {
    crate::clock::iso_millis(ts.unix_micros().div_euclid(1000))
}

/// `YYYY/MM/DD`: the sessions folder of a rollout started at `ts` (UTC).
pub(crate) fn date_dirs(ts: &Timestamp) -> String {
    let (y, mo, d, ..) = civil(ts);
    format!("{y:04}/{mo:02}/{d:02}")
}

/// `YYYY-MM-DDThh-mm-ss`: the time in a rollout's file name.
pub(crate) fn file_time(ts: &Timestamp) -> String {
    let (y, mo, d, h, mi, s, _) = civil(ts);
    format!("{y:04}-{mo:02}-{d:02}T{h:02}-{mi:02}-{s:02}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_whole_inline_images_are_usable() {
        assert_eq!(decode_base64("aGVsbG8=").as_deref(), Some(&b"hello"[..]));
        assert_eq!(decode_base64("a b"), None);
        // The 8-byte PNG signature alone (opencode/pi fixtures): Codex cannot decode it.
        assert!(!inline_image_usable("data:image/png;base64,iVBORw0KGgo="));
        assert!(!inline_image_usable(
            "data:image/png;base64,[trimmed for fixture]"
        ));
        // A 1x1 PNG.
        let png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=";
        assert!(inline_image_usable(&format!("data:image/png;base64,{png}")));
        assert!(inline_image_usable("https://example.com/a.png"));
    }

    /// A pi session's items are kept for a compaction's replacement history by whole messages,
    /// the older half let go when they pass the limit.
    #[test]
    fn retained_items_are_found_by_message_and_bounded() {
        let mut r = Retained {
            limit: 30,
            ..Retained::default()
        };
        r.begin("none");
        assert_eq!(r.from("none"), Some(&b""[..]));
        r.begin("a");
        r.push(b"{\"a\":1}");
        r.push(b"{\"a\":2}");
        r.begin("carrier");
        r.begin("b");
        r.push(b"{\"b\":1}");
        assert_eq!(r.from("a"), Some(&b"{\"a\":1},{\"a\":2},{\"b\":1}"[..]));
        assert_eq!(r.from("carrier"), Some(&b"{\"b\":1}"[..]));
        assert_eq!(r.from("b"), r.from("carrier"));
        assert_eq!(r.from("c"), None);
        // Past 30 bytes: "a"'s items go (a whole message), "b"'s and "c"'s stay.
        r.begin("c");
        r.push(b"{\"c\":1}");
        assert_eq!(r.from("a"), None);
        assert_eq!(r.from("b"), Some(&b"{\"b\":1},{\"c\":1}"[..]));
        assert_eq!(r.from("c"), Some(&b"{\"c\":1}"[..]));
        assert_eq!(r.items, b"{\"b\":1},{\"c\":1}");
    }

    #[test]
    fn uuid_v5_is_stable_and_per_name() {
        let id = uuid_v5("claude-code:short");
        assert!(is_uuid(&id), "{id}");
        assert_eq!(&id[14..15], "5");
        assert_eq!(id, uuid_v5("claude-code:short"));
        assert_ne!(id, uuid_v5("pi:short"));
    }

    #[test]
    fn uuids_are_kept_and_other_ids_derived() {
        let u = "019a085e-04c1-7f81-a09e-9555f6a1fb40";
        assert_eq!(thread_id("claude-code", u), (u.to_owned(), false));
        assert_eq!(
            thread_id("claude-code", &u.to_uppercase()),
            (u.to_owned(), true)
        );
        let (d, derived) = thread_id("claude-code", "../../.bashrc");
        assert!(derived && is_uuid(&d));
    }

    /// A tool result's `output` as JSON text, and the structure flag.
    fn output(result: Value) -> (String, bool) {
        let mut out = Vec::new();
        let structured = write_output(&mut out, &result);
        (String::from_utf8(out).unwrap(), structured)
    }

    #[test]
    fn tool_results_become_strings_or_content_arrays() {
        assert_eq!(output(json!("ok")), (r#""ok""#.into(), false));
        assert_eq!(
            output(json!([{"type": "text", "text": "a"}])),
            (r#""a""#.into(), false)
        );
        assert_eq!(output(json!([])), (r#""""#.into(), false));
        let (v, s) = output(json!([{"type": "text", "text": "a"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AA"}}]));
        assert!(!s);
        assert_eq!(
            v,
            r#"[{"type":"input_text","text":"a"},{"type":"input_image","image_url":"data:image/png;base64,AA"}]"#
        );
        // pi's `{content: [...]}` wrapper is unwrapped; an `input_image` item is kept as it is.
        let (v, s) = output(
            json!({"content": [{"type": "input_image", "image_url": "u", "detail": "high"},
            {"type": "text", "text": "b"}]}),
        );
        assert!(!s);
        assert_eq!(
            v,
            r#"[{"type":"input_image","image_url":"u","detail":"high"},{"type":"input_text","text":"b"}]"#
        );
        // Any other structure is its JSON text, flagged.
        assert_eq!(output(json!({"a": 1})), (r#""{\"a\":1}""#.into(), true));
        assert_eq!(
            output(json!([{"type": "chart", "n": 2}])),
            (r#""{\"type\":\"chart\",\"n\":2}""#.into(), true)
        );
        assert_eq!(output(json!(7)), (r#""7""#.into(), true));
    }
}

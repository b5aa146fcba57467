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

use crate::digest::{Hash128, hash128};
use crate::discover::find_str;
use crate::face::{At, Losses, Target, WriteError};
use crate::hold::{Prelude, Streamed};
use crate::jsonl::{self, PrettyObject};
use pond_canonical::{AssistantPart, FileData, Message, PartRef, Provenance, Session, ToolPart};
use serde_json::{Map, Value, json};
use std::collections::{HashMap, HashSet, VecDeque};

/// The keys a foreign write looks for in a message's options: its model and provider
/// (`SessionWriter::option_keys`).
pub(crate) const OPTION_KEYS: &[&str] = &[
    "model",
    "modelID",
    "modelId",
    "providerID",
    "provider",
    "model_provider",
];

/// The loss of a source record that maps to no message (a carrier): opencode has no form for it.
pub(crate) const SOURCE_RECORD: &str = "source_record";

/// The loss kind of a compaction written as opencode's own (its other fields dropped).
const COMPACTED: &str = "compaction_rewritten";

/// The opencode version whose `import` schema this writer targets.
const OPENCODE_VERSION: &str = "1.18.33";

const BASE62: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// An opencode id: `prefix_` + 12 hex digits of the low 48 bits of `n` + 14 base62 characters
/// from a hash of `seed` (opencode.md section 6): the hash's base-62 digits, lowest first.
fn oc_id(prefix: &str, n: u128, seed: &str) -> String {
    oc_id_of(prefix, n, Hash128::new().update(seed.as_bytes()))
}

/// [`oc_id`] of the seed whose hash state is `seed` (no string made for it; a shared first
/// piece hashed once).
fn oc_id_of(prefix: &str, n: u128, seed: Hash128) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    // 62^7 < 2^42: the hash splits into two 7-digit halves, each worked in 64-bit arithmetic
    // (two 128-bit divisions per id instead of 28; a conversion makes one id per part).
    const HALF: u128 = 62u128.pow(7);
    // The 26 digits made as bytes, then added to the prefix at once.
    let mut digits = [0u8; 26];
    let low = (n & ((1u128 << 48) - 1)) as u64;
    for (i, digit) in digits[..12].iter_mut().enumerate() {
        *digit = HEX[((low >> ((11 - i) * 4)) & 0xf) as usize];
    }
    let h = seed.finish();
    let halves = [(h % HALF) as u64, ((h / HALF) % HALF) as u64];
    for (half, place) in halves.into_iter().zip(digits[12..].chunks_exact_mut(7)) {
        let mut d = half;
        for digit in place {
            *digit = BASE62[(d % 62) as usize];
            d /= 62;
        }
    }
    let mut id = String::with_capacity(prefix.len() + 1 + digits.len());
    id.push_str(prefix);
    id.push('_');
    id.push_str(std::str::from_utf8(&digits).expect("hex and base-62 digits are ASCII"));
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
pub(crate) fn output_text(v: &Value, losses: &mut Losses, at: At<'_>) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(items) => {
            // The texts joined by line breaks, each copied once.
            let mut text = String::new();
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    text.push('\n');
                }
                let block_text = match item {
                    Value::Object(o) => o.get("text").and_then(Value::as_str),
                    _ => None,
                };
                match (item, block_text) {
                    (Value::String(s), _) => text.push_str(s),
                    (_, Some(t)) => text.push_str(t),
                    (other, None) => {
                        losses.record(
                            "tool_output_structured",
                            at,
                            "a non-text block of a tool result was written as JSON text",
                        );
                        text.push_str(&other.to_string());
                    }
                }
            }
            text
        }
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// One opencode part under construction, with the seed its id derives from.
struct PartOut {
    seed: PartSeed,
    body: Body,
}

/// What a part's id derives from, after its message's seed and `#`: the canonical part's id, or
/// for a step frame the message's seed again, `#step-start` or `#step-finish`, and the step.
enum PartSeed {
    Part(String),
    Step { finish: bool, step: usize },
}

/// What a part of the export holds besides `id`, `sessionID` and `messageID`: its members in
/// the order they are written. Typed, and written straight to JSON text (no `Map` per part:
/// building and hashing those took a fifth of a conversion into opencode).
enum Body {
    Text {
        text: String,
        /// Injected text (model-part-provenance): opencode's `synthetic`.
        synthetic: bool,
    },
    /// Timed by its message (opencode.md 5.2: reasoning needs `time{start,end}`).
    Reasoning {
        text: String,
    },
    File {
        mime: String,
        filename: Option<String>,
        url: String,
    },
    Tool {
        call_id: String,
        tool: String,
        state: ToolState,
    },
    StepStart,
    StepFinish {
        reason: &'static str,
    },
    /// A user message's compaction marker: opencode sends a resumed session from the last
    /// such message whose summary (the assistant message answering it, `summary: true`) ended.
    /// With `tail` (`tail_start_id`, a message before it), opencode 1.18.33 sends the
    /// compaction, its summary, the messages from `tail` up to the compaction, then what
    /// follows (its `filterCompacted`): a compaction that keeps recent messages, as pi's does.
    Compaction {
        tail: Option<String>,
    },
}

/// A tool part's `state`.
enum ToolState {
    /// Waiting for its result; opencode replays a call left so as interrupted.
    Running { input: Value, start: i64 },
    Completed {
        input: Value,
        output: Output,
        title: String,
        start: i64,
        end: i64,
    },
    Failed {
        input: Value,
        error: Output,
        start: i64,
        end: i64,
    },
}

/// A tool's output text as written: made by [`output_text`], or held as the JSON text
/// serde_json writes for the string it is (a tool output read as its text,
/// `Json::json_text`), copied as it is where `Text` would be decoded, copied and escaped again
/// to the same bytes.
enum Output {
    Text(String),
    Json(Box<str>),
}

impl Output {
    fn of(result: &pond_canonical::Json, losses: &mut Losses, at: At<'_>) -> Self {
        match result.json_text() {
            Some(json) => Output::Json(json.into()),
            None => Output::Text(output_text(result.as_value(), losses, at)),
        }
    }

    fn write(&self, o: &mut PrettyObject<'_>, key: &str) {
        match self {
            Output::Text(text) => o.str(key, text),
            Output::Json(json) => o.raw(key, json.as_bytes()),
        };
    }
}

impl Body {
    /// Writes the part's members; `created` is its message's time.
    fn write(&self, o: &mut PrettyObject<'_>, created: i64) {
        match self {
            Body::Text { text, synthetic } => {
                o.str("type", "text").str("text", text);
                if *synthetic {
                    o.bool("synthetic", true);
                }
            }
            Body::Reasoning { text } => {
                o.str("type", "reasoning")
                    .str("text", text)
                    .object("time", |t| {
                        t.int("start", created).int("end", created);
                    });
            }
            Body::File {
                mime,
                filename,
                url,
            } => {
                o.str("type", "file").str("mime", mime);
                if let Some(name) = filename {
                    o.str("filename", name);
                }
                o.str("url", url);
            }
            Body::Tool {
                call_id,
                tool,
                state,
            } => {
                o.str("type", "tool")
                    .str("callID", call_id)
                    .str("tool", tool)
                    .object("state", |o| state.write(o));
            }
            Body::StepStart => {
                o.str("type", "step-start");
            }
            Body::StepFinish { reason } => {
                o.str("type", "step-finish")
                    .str("reason", reason)
                    .int("cost", 0);
                zero_tokens(o);
            }
            Body::Compaction { tail } => {
                o.str("type", "compaction").bool("auto", true);
                if let Some(tail) = tail {
                    o.str("tail_start_id", tail);
                }
            }
        }
    }

    /// When a tool part's result came, if it came.
    fn end(&self) -> Option<i64> {
        match self {
            Body::Tool {
                state: ToolState::Completed { end, .. } | ToolState::Failed { end, .. },
                ..
            } => Some(*end),
            _ => None,
        }
    }
}

impl ToolState {
    fn write(&self, o: &mut PrettyObject<'_>) {
        match self {
            ToolState::Running { input, start } => {
                o.str("status", "running")
                    .value("input", input)
                    .object("time", |t| {
                        t.int("start", *start);
                    });
            }
            ToolState::Completed {
                input,
                output,
                title,
                start,
                end,
            } => {
                o.str("status", "completed").value("input", input);
                output.write(o, "output");
                o.str("title", title)
                    .object("metadata", |_| {})
                    .object("time", |t| {
                        t.int("start", *start).int("end", *end);
                    });
            }
            ToolState::Failed {
                input,
                error,
                start,
                end,
            } => {
                o.str("status", "error").value("input", input);
                error.write(o, "error");
                o.object("time", |t| {
                    t.int("start", *start).int("end", *end);
                });
            }
        }
    }
}

/// One opencode message under construction.
struct MsgOut {
    seed: String,
    assistant: bool,
    created: i64,
    id: String,
    /// An assistant message's `parentID` (empty for a user message).
    parent: String,
    provider: String,
    model: String,
    parts: Vec<PartOut>,
    /// An assistant message that is a compaction's summary (opencode's `summary: true`).
    summary: bool,
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
    /// (foldhash: lookups only, never iterated, so no order or seed shows in the output.)
    calls: HashMap<String, (usize, usize), foldhash::fast::RandomState>,
    /// Every call id answered (a second result is dropped).
    answered: HashSet<String, foldhash::fast::RandomState>,
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
    /// A Claude Code compaction's boundary (its message id), until the message after it shows
    /// whether it has a summary ([`crate::face::compact_summary_text`]).
    boundary: Option<String>,
    /// For a pi session, the opencode message each canonical message went into, for a pi
    /// compaction's kept messages ([`ForeignDoc::pi_compaction`]).
    kept: Option<KeptIds>,
}

/// Which opencode message each message of a pi session went into (its id hashed, the opencode
/// message's id; a message that makes none, the last one made before it): a pi compaction keeps
/// the entries from its `firstKeptEntryId` on, written before it, and opencode's compaction
/// names the first message it keeps after its summary (`tail_start_id`). At most
/// [`crate::face::PI_KEPT_LIMIT`], the older half let go.
#[derive(Default)]
struct KeptIds {
    messages: Vec<(u128, InlineId)>,
}

/// An opencode message id (`msg_` and 26 characters) held without an allocation of its own.
#[derive(Clone, Copy)]
struct InlineId {
    len: u8,
    bytes: [u8; 32],
}

impl InlineId {
    /// `id`, if it is at most 32 bytes long (every id [`oc_id`] makes is 30).
    fn new(id: &str) -> Option<Self> {
        let mut bytes = [0; 32];
        bytes.get_mut(..id.len())?.copy_from_slice(id.as_bytes());
        Some(Self {
            len: id.len() as u8,
            bytes,
        })
    }

    fn as_str(&self) -> &str {
        std::str::from_utf8(&self.bytes[..usize::from(self.len)]).unwrap_or_default()
    }
}

impl KeptIds {
    fn push(&mut self, message: &str, into: &str) {
        let Some(into) = InlineId::new(into) else {
            return;
        };
        let kept = (crate::digest::hash128(message), into);
        crate::face::remember_kept(&mut self.messages, kept);
    }

    /// The opencode message the message `first` went into, if it is remembered.
    fn went_into(&self, first: &str) -> Option<&str> {
        let first = crate::digest::hash128(first);
        self.messages
            .iter()
            .rev()
            .find(|(m, _)| *m == first)
            .map(|(_, into)| into.as_str())
    }
}

impl ForeignDoc {
    /// The next (time, counter) on the document's clock: never earlier than the last one.
    fn tick(&mut self, ms: i64, at: At<'_>) -> (i64, u128) {
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
        self.new_message_as(m, assistant, "")
    }

    /// [`Self::new_message`] for one of several opencode messages made from `m`, told apart by
    /// `suffix` (ids and part ids are derived from the seed).
    fn new_message_as(&mut self, m: &Message, assistant: bool, suffix: &str) -> usize {
        // The place of a loss, made into text only for the first of its kind.
        let sid = self.session.id.clone();
        let at = At::of(sid.as_str(), m);
        let (created, counter) = self.tick(millis(m.timestamp()), at);
        let (session, message) = (self.session.id.as_str(), m.id().as_str());
        let mut seed = String::with_capacity(session.len() + 1 + message.len() + suffix.len());
        for piece in [session, "/", message, suffix] {
            seed.push_str(piece);
        }
        let id = oc_id("msg", (created as u128) * 0x1000 + counter, &seed);
        let (parent, provider, model) = if assistant {
            let parent = self
                .last_user
                .clone()
                .or_else(|| self.last_id.clone())
                .unwrap_or_else(|| id.clone());
            let opts = m.options();
            let model = find_str(opts, &["model", "modelID", "modelId"]).unwrap_or(&self.model);
            let provider = find_str(opts, &["providerID", "provider", "model_provider"])
                .unwrap_or(&self.provider);
            (parent, provider.to_owned(), model.to_owned())
        } else {
            (String::new(), self.provider.clone(), self.model.clone())
        };
        self.last_id = Some(id.clone());
        self.held.push_back(MsgOut {
            seed,
            assistant,
            created,
            id,
            parent,
            provider,
            model,
            parts: Vec::new(),
            summary: false,
        });
        self.held.len() - 1
    }

    fn push_part(&mut self, msg: usize, seed: String, body: Body) -> usize {
        let parts = &mut self.held[msg].parts;
        parts.push(PartOut {
            seed: PartSeed::Part(seed),
            body,
        });
        parts.len() - 1
    }

    /// One canonical message, into the messages held; for a pi session, remembered with the
    /// opencode message it went into ([`KeptIds`]), and a pi compaction whose first kept
    /// message is remembered written as opencode's own ([`Self::pi_compaction`]).
    fn message(&mut self, m: &Message) {
        if self.kept.is_none() {
            return self.message_of_any(m);
        }
        // A compaction written as opencode's own is remembered as its `compaction` message.
        let into = match crate::face::pi_compaction(m) {
            Some(compaction) if self.pi_compaction(&compaction, m) => &self.last_user,
            _ => {
                self.message_of_any(m);
                &self.last_id
            }
        };
        if let (Some(kept), Some(into)) = (&mut self.kept, into) {
            kept.push(m.id().as_str(), into);
        }
    }

    /// A pi compaction ([`crate::face::pi_compaction`]) as opencode's own ([`Self::compaction`]),
    /// its `compaction` part naming the opencode message the first kept entry went into as
    /// `tail_start_id`: a resume sends the compaction, the summary, the messages from that one
    /// up to the compaction, then what follows, as pi sends the summary, the entries from
    /// `firstKeptEntryId` on and what follows. False, and nothing made, when the compaction
    /// names no first kept entry or one not remembered ([`KeptIds`]): it is then the user message
    /// it is read as, after the whole history.
    fn pi_compaction(&mut self, compaction: &crate::face::PiCompaction<'_>, m: &Message) -> bool {
        let Some(first) = compaction.first_kept else {
            return false;
        };
        let Some(tail) = self
            .kept
            .as_ref()
            .and_then(|k| k.went_into(first))
            .map(str::to_owned)
        else {
            return false;
        };
        self.compaction_keeping(m, compaction.summary, Some(tail));
        let sid = self.session.id.clone();
        self.losses.record(
            COMPACTED,
            At::of(sid.as_str(), m),
            "a pi compaction is written as opencode's own: a user message with a `compaction` \
             part whose `tail_start_id` names the first message of the entries pi keeps (from \
             `firstKeptEntryId` on), and the summary as the assistant message answering it \
             (`summary: true`), so a resume sends them, those entries and what follows, as pi \
             does; `tokensBefore` and `details` are left out",
        );
        true
    }

    /// What [`Self::message`] makes of a message of any session.
    fn message_of_any(&mut self, m: &Message) {
        // The place of a loss, made into text only for the first of its kind.
        let sid = self.session.id.clone();
        let at = At::of(sid.as_str(), m);
        if let Some(seed) = self.boundary.take() {
            if let Some(summary) = crate::face::compact_summary_text(m) {
                self.compaction(m, &summary);
                self.losses.record(
                    COMPACTED,
                    At::new(sid.as_str(), &seed),
                    "a Claude Code compaction (a `compact_boundary` line and its \
                     `isCompactSummary` summary line) is written as opencode's own: a user \
                     message with a `compaction` part and the summary as the assistant message \
                     answering it (`summary: true`), so a resume sends them and what follows, \
                     as Claude Code sends its summary and what follows; the boundary's text and \
                     `compactMetadata` are left out",
                );
                return;
            }
            self.boundary_lost(&seed);
        }
        match m {
            // A system message or a carried record does not end a model response: codex
            // interleaves event records between the reasoning, text and calls of one response.
            Message::System(s) => {
                let compaction = s
                    .carried_record()
                    .filter(|r| crate::face::is_compaction_record(r));
                if let Some(summary) = compaction.and_then(crate::face::compaction_summary) {
                    self.compaction(m, summary);
                    self.losses.record(
                        COMPACTED,
                        at,
                        "a Codex `compacted` record is written as opencode's own compaction: a \
                         user message with a `compaction` part and the summary as the assistant \
                         message answering it (`summary: true`), so a resume sends them and what \
                         follows, as Codex resumes from its summary; the record's other fields \
                         (`replacement_history`) are left out",
                    );
                } else if compaction.is_some() {
                    self.losses.record(
                        crate::face::COMPACTION_LOSS,
                        at,
                        crate::face::compaction_loss_detail("opencode"),
                    );
                } else if crate::face::is_compact_boundary(s) {
                    self.boundary = Some(m.id().to_string());
                } else if s.carried_record().is_some() {
                    self.losses.record(
                        SOURCE_RECORD,
                        at,
                        "a source record that maps to no message has no place in opencode",
                    );
                } else {
                    self.losses.record(
                        "system_message",
                        at,
                        "opencode sessions have no system messages",
                    );
                }
            }
            Message::User(u) => {
                self.in_assistant_run = false;
                let mut bodies = Vec::new();
                for p in &u.content {
                    let p = p.as_part_ref();
                    if let Some(b) = self.content_part(p, at) {
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
                        self.fold_result(r, m.timestamp(), at);
                        continue;
                    }
                    let body = match p {
                        PartRef::ToolCall(c) => {
                            let input = match c.params.as_value() {
                                Value::Object(o) => Value::Object(o.clone()),
                                other => {
                                    self.losses.record(
                                        "tool_input_wrapped",
                                        at,
                                        "opencode tool input must be an object: a non-object input is kept under `input`",
                                    );
                                    json!({ "input": other })
                                }
                            };
                            Some(Body::Tool {
                                call_id: c.call_id.as_str().to_owned(),
                                tool: c.name.as_str().to_owned(),
                                state: ToolState::Running {
                                    input,
                                    start: millis(m.timestamp()),
                                },
                            })
                        }
                        other => self.content_part(other, at),
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
                        ToolPart::ToolResult(r) => self.fold_result(r, m.timestamp(), at),
                        _ => self.losses.record(
                            "tool_approval",
                            at,
                            "opencode keeps no tool approval requests or answers in a session",
                        ),
                    }
                }
            }
        }
    }

    /// opencode's own compaction at `m`: a user message holding a `compaction` part (sent as
    /// "What did we do so far?") and the assistant message answering it with `summary` as its
    /// text (`summary: true`, finished): a resumed session is sent from that pair on.
    fn compaction(&mut self, m: &Message, summary: &str) {
        self.compaction_keeping(m, summary, None);
    }

    /// [`Self::compaction`], its part naming `tail` (an opencode message before it) as the
    /// first message a resume sends after the summary.
    fn compaction_keeping(&mut self, m: &Message, summary: &str, tail: Option<String>) {
        self.in_assistant_run = false;
        let u = self.new_message_as(m, false, "#compaction");
        self.last_user = Some(self.held[u].id.clone());
        self.push_part(u, "compaction".to_owned(), Body::Compaction { tail });
        let a = self.new_message_as(m, true, "#summary");
        self.held[a].summary = true;
        let text = Body::Text {
            text: summary.to_owned(),
            synthetic: false,
        };
        self.push_part(a, "summary".to_owned(), text);
    }

    /// A Claude Code compaction boundary with no summary after it: a system message, which
    /// opencode has no place for.
    fn boundary_lost(&mut self, seed: &str) {
        let sid = self.session.id.clone();
        self.losses.record(
            "system_message",
            At::new(sid.as_str(), seed),
            "opencode sessions have no system messages",
        );
    }

    /// Puts a result into the tool part of the call it answers.
    fn fold_result(
        &mut self,
        r: &pond_canonical::ToolResultPart,
        ts: &pond_canonical::Timestamp,
        at: At<'_>,
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
        let output = Output::of(&r.result, &mut self.losses, at);
        let Body::Tool { tool, state, .. } = &mut self.held[mi - self.base].parts[pi].body else {
            return;
        };
        let ToolState::Running { input, start } = state else {
            self.losses.record(
                "duplicate_tool_result",
                at,
                "a second result for one tool call was dropped",
            );
            return;
        };
        let (input, start) = (std::mem::take(input), *start);
        let end = end.max(start);
        *state = if r.is_failure {
            ToolState::Failed {
                input,
                error: output,
                start,
                end,
            }
        } else {
            ToolState::Completed {
                input,
                output,
                title: tool.clone(),
                start,
                end,
            }
        };
        self.answered.insert(r.call_id.as_str().to_owned());
    }

    /// A text, reasoning or file part (tool parts are built by the caller).
    fn content_part(&mut self, p: PartRef<'_>, at: At<'_>) -> Option<Body> {
        Some(match p {
            PartRef::Text(t) => {
                if t.text.as_str().is_empty() {
                    return None;
                }
                // model-part-provenance: injected text is opencode's `synthetic` text.
                Body::Text {
                    text: t.text.as_str().to_owned(),
                    synthetic: t.provenance == Provenance::Injected,
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
                Body::Reasoning {
                    text: r.text.as_str().to_owned(),
                }
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
                Body::File {
                    mime: f.media_type.as_str().to_owned(),
                    filename: f.file_name.as_ref().map(|n| n.as_str().to_owned()),
                    url,
                }
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
        })
    }

    /// Writes a finished message into the document at depth 2: every part with its id,
    /// `sessionID`, `messageID` and times, an assistant message's parts framed in steps; and
    /// notes the title and the session's last time.
    fn finish_message(&mut self, m: MsgOut) {
        if self.title.is_none() {
            self.title = title_of(&m);
        }
        let mut finish = "stop";
        let parts = if m.assistant {
            let frame = |step: usize, body: Body| PartOut {
                seed: PartSeed::Step {
                    finish: !matches!(body, Body::StepStart),
                    step,
                },
                body,
            };
            let mut parts = Vec::with_capacity(m.parts.len() + 2);
            let mut step = 0;
            parts.push(frame(step, Body::StepStart));
            let mut after_tool = false;
            for p in m.parts {
                let is_tool = matches!(p.body, Body::Tool { .. });
                if after_tool && !is_tool {
                    parts.push(frame(
                        step,
                        Body::StepFinish {
                            reason: "tool-calls",
                        },
                    ));
                    step += 1;
                    parts.push(frame(step, Body::StepStart));
                }
                after_tool = is_tool;
                parts.push(p);
            }
            if after_tool {
                finish = "tool-calls";
            }
            parts.push(frame(step, Body::StepFinish { reason: finish }));
            parts
        } else {
            m.parts
        };
        // An assistant message completes when its last tool result arrived.
        let completed = parts
            .iter()
            .filter_map(|p| p.body.end())
            .fold(m.created, i64::max);
        self.updated = self.updated.max(m.created);
        if m.assistant {
            self.updated = self.updated.max(completed);
        }
        let project = self.session.project.as_str();
        let (sid, out) = (self.sid.as_str(), &mut self.buf);
        let mut doc = PrettyObject::new(out, 2);
        doc.object("info", |o| {
            o.str("id", &m.id).str("sessionID", sid);
            if m.assistant {
                o.str("role", "assistant")
                    .object("time", |t| {
                        t.int("created", m.created).int("completed", completed);
                    })
                    .str("parentID", &m.parent)
                    .str("modelID", &m.model)
                    .str("providerID", &m.provider)
                    .str("mode", "build")
                    .str("agent", "build")
                    .object("path", |p| {
                        p.str("cwd", project).str("root", project);
                    });
                if m.summary {
                    o.bool("summary", true);
                }
                o.int("cost", 0);
                zero_tokens(o);
                o.str("finish", finish);
            } else {
                o.str("role", "user")
                    .object("time", |t| {
                        t.int("created", m.created);
                    })
                    .str("agent", "build")
                    .object("model", |t| {
                        t.str("providerID", &m.provider).str("modelID", &m.model);
                    });
            }
        });
        // Every part's seed starts with the message's and `#`: hashed once.
        let msg = m.seed.as_bytes();
        let after_msg = Hash128::new().update(msg).update(b"#");
        doc.array("parts", &parts, |out, k, p, depth| {
            let n = (m.created as u128) * 0x1000 + k as u128 + 1;
            let mut digits = itoa::Buffer::new();
            let id = match &p.seed {
                PartSeed::Part(seed) => oc_id_of("prt", n, after_msg.update(seed.as_bytes())),
                PartSeed::Step { finish, step } => {
                    let frame: &[u8] = if *finish {
                        b"#step-finish"
                    } else {
                        b"#step-start"
                    };
                    let step = digits.format(*step).as_bytes();
                    let seed = after_msg.update(msg).update(frame).update(step);
                    oc_id_of("prt", n, seed)
                }
            };
            let mut o = PrettyObject::new(out, depth);
            o.str("id", &id)
                .str("sessionID", sid)
                .str("messageID", &m.id);
            p.body.write(&mut o, m.created);
            o.end();
        });
        doc.end();
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
        if let Body::Text {
            text: t,
            synthetic: false,
        } = &p.body
        {
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

/// The member `tokens` with every count zero (pond cannot know them): the same bytes for every
/// message and step at one depth, written once per depth ([`ZERO_TOKENS`]) and copied.
fn zero_tokens(o: &mut PrettyObject<'_>) {
    match ZERO_TOKENS.get(o.depth() + 1) {
        Some(json) => o.raw("tokens", json),
        None => o.object("tokens", zero_token_counts),
    };
}

/// The value of [`zero_tokens`]'s member, as `PrettyObject::object` writes it at each depth up
/// to 7.
static ZERO_TOKENS: std::sync::LazyLock<Vec<Vec<u8>>> = std::sync::LazyLock::new(|| {
    (0..8)
        .map(|depth| {
            let mut out = Vec::new();
            let mut t = PrettyObject::new(&mut out, depth);
            zero_token_counts(&mut t);
            t.end();
            out
        })
        .collect()
});

/// The members of `tokens`, every count zero.
fn zero_token_counts(t: &mut PrettyObject<'_>) {
    t.int("input", 0)
        .int("output", 0)
        .int("reasoning", 0)
        .object("cache", |c| {
            c.int("read", 0).int("write", 0);
        });
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
            calls: HashMap::default(),
            answered: HashSet::default(),
            title: None,
            updated: millis(&session.created_at),
            started: false,
            buf: Vec::new(),
            last_ms: i64::MIN,
            counter: 0,
            in_assistant_run: false,
            last_user: None,
            boundary: None,
            kept: (session.source_agent == "pi").then(KeptIds::default),
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
        // After the prelude's messages are built: the last may be a boundary.
        if let Some(seed) = self.boundary.take() {
            self.boundary_lost(&seed);
        }
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
            if let Body::Tool { call_id: call, .. } = &p.body
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
        self.buf.extend_from_slice(if self.started {
            b",\n    "
        } else {
            b"{\n  \"messages\": [\n    "
        });
        self.started = true;
        self.finish_message(m);
    }

    fn pending(&mut self) -> (&str, &mut Losses, &mut Vec<u8>) {
        (&self.path, &mut self.losses, &mut self.buf)
    }
}

/// Whether a part is a tool call still waiting for its result.
fn running(p: &PartOut) -> bool {
    matches!(
        p.body,
        Body::Tool {
            state: ToolState::Running { .. },
            ..
        }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tool_output_is_its_texts_joined_by_line_breaks() {
        let mut losses = Losses::default();
        let at = At::new("s", "m");
        let text = |v: Value, losses: &mut Losses| output_text(&v, losses, at);
        assert_eq!(text(json!("one"), &mut losses), "one");
        assert_eq!(text(json!(null), &mut losses), "");
        assert_eq!(text(json!(7), &mut losses), "7");
        assert_eq!(
            text(
                json!(["a", {"type": "text", "text": "b\nc"}, "d"]),
                &mut losses
            ),
            "a\nb\nc\nd"
        );
        assert!(losses.kinds.is_empty(), "{losses:?}");
        // A block with no text is written as its JSON text, in its place, and recorded.
        assert_eq!(
            text(
                json!([{"type": "image", "data": "x"}, {"text": 1}, "e"]),
                &mut losses
            ),
            "{\"type\":\"image\",\"data\":\"x\"}\n{\"text\":1}\ne"
        );
        assert_eq!(losses.kinds["tool_output_structured"].count, 2);
    }

    /// The id as first written: one 128-bit division by 62 per digit.
    fn oc_id_by_division(prefix: &str, n: u128, seed: &str) -> String {
        let mut id = format!("{prefix}_{:012x}", n & ((1u128 << 48) - 1));
        let mut h = hash128(seed);
        for _ in 0..14 {
            id.push(char::from(BASE62[(h % 62) as usize]));
            h /= 62;
        }
        id
    }

    #[test]
    fn zero_tokens_copied_are_the_tokens_written() {
        // Past the table's depths too, where they are written.
        for depth in 0..12 {
            let written = |copied: bool| {
                let mut out = Vec::new();
                let mut o = PrettyObject::new(&mut out, depth);
                o.int("cost", 0);
                if copied {
                    zero_tokens(&mut o);
                } else {
                    o.object("tokens", zero_token_counts);
                }
                o.str("finish", "stop");
                o.end();
                String::from_utf8(out).unwrap()
            };
            let copied = written(true);
            assert_eq!(copied, written(false), "depth {depth}");
            let value: Value = serde_json::from_str(&copied).unwrap();
            assert_eq!(value["tokens"]["cache"]["write"], 0, "depth {depth}");
        }
    }

    #[test]
    fn ids_are_the_ones_written_before() {
        let clock = [0u128, 1, 0xfff, 1_700_000_000_000 * 0x1000 + 7, u128::MAX];
        for (i, n) in clock.into_iter().enumerate() {
            for seed in [
                "",
                "a",
                "pond-session:0198",
                "ses/msg/\u{e9}",
                &"x".repeat(300),
            ] {
                let seed = format!("{seed}{i}");
                assert_eq!(oc_id("msg", n, &seed), oc_id_by_division("msg", n, &seed));
            }
        }
        assert_eq!(session_id("s1").len(), "ses_".len() + 12 + 14);
    }
}

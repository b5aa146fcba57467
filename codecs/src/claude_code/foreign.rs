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
//! Streaming (docs/decisions.md, "Foreign writers stream"): lines are written as soon as they
//! are final, so memory is bounded by the open responses, never by the session. Per session the
//! writer keeps only the previous line's uuid, the line count, the model in force and the tool
//! call ids written so far (and for a pi session which message each line came from, for a pi
//! compaction's preserved messages: [`KeptLines`]). A response (a run of consecutive assistant
//! messages) is held until it is final: the run has ended (a user or tool message came) and every
//! call in it has its result, because a call is written only with its result and the results go
//! right after the response. What comes while it waits (the next responses, harness-only user text
//! such as a Codex `developer` notice) is held behind it, in order. Tool results follow their calls
//! closely; when a conversational user message begins a turn, or more than `hold::MAX_HELD` items
//! are held, the oldest waiting response is written with its unanswered calls left out (loss
//! `tool_call_unpaired`), and a result that arrives for no waiting call (after that, before its
//! call, or never called) is left out at once (loss `tool_result_unpaired`).

use super::naming::{
    encode_cwd, hex_id, is_uuid, prefixed_hex_id_of, resume_command, uuid_v5, uuid_v5_of,
};
use crate::face::{At, CarriedLine, Losses, ReasoningLine, Target, WriteError, Written};
use crate::hold::{MAX_HELD, harness_only};
use crate::jsonl::{self, write_str, write_value, write_value_map};
use pond_canonical::{
    AssistantPart, FileData, FilePart, Message, Provenance, Session, ToolPart, ToolResultPart,
    UserPart,
};
use serde_json::{Map, Value, json};
use std::collections::{HashSet, VecDeque};

/// The Claude Code version whose transcript format the foreign write produces (the `version`
/// field of every line): the version the oracle checks against.
pub const TARGET_VERSION: &str = "2.1.197";

/// The loss of a source record Claude Code has no form for (a carrier).
const SOURCE_RECORD: &str = "source_record";

/// Claude Code's marker for an assistant message no Anthropic model produced (format reference §6).
pub const SYNTHETIC_MODEL: &str = "<synthetic>";

/// Writes foreign sessions as Claude Code transcripts, line by line as they become final.
#[derive(Default)]
pub struct ForeignWriter {
    /// The foreign sessions of the current source, in the order they began.
    streams: Vec<Stream>,
    index: crate::LookupMap<String, usize>,
    /// Every session this writer placed: canonical id -> (Claude session uuid, project).
    known: crate::LookupMap<String, (String, String)>,
}

impl ForeignWriter {
    /// Whether `session` is a foreign session of the current source.
    pub fn holds(&self, session: &str) -> bool {
        self.index.contains_key(session)
    }

    /// A foreign session begins: its file and ids are decided (nothing is written yet).
    pub fn session(&mut self, session: &Session) {
        let project = session.project.as_str();
        let uuid = session_uuid(session);
        self.known
            .insert(session.id.to_string(), (uuid.clone(), project.to_owned()));
        // A child without a cut-point is a sub-agent; a fork (with a cut-point) is a session of
        // its own in Claude Code, which keeps no on-disk parent pointer (format reference §11).
        let subagent = match (&session.parent_session_id, &session.parent_message_id) {
            (Some(parent), None) => Some(parent.as_str().to_owned()),
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
                // The parent is placed before its children in a source; one that is not (or is
                // in another source) is derived the same way, in the child's project.
                let (parent_uuid, parent_project) =
                    self.known.get(&parent).cloned().unwrap_or_else(|| {
                        let derived = if is_uuid(&parent) {
                            parent.clone()
                        } else {
                            uuid_v5(format_args!("session:{}:{parent}", session.source_agent))
                        };
                        (derived, project.to_owned())
                    });
                let agent = format!("a{}", hex_id(format_args!("agent:{}", session.id), 16));
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
        self.index
            .insert(session.id.to_string(), self.streams.len());
        self.streams.push(Stream {
            canonical: session.id.to_string(),
            uuid,
            fork: session.parent_session_id.is_some() && session.parent_message_id.is_some(),
            cwd: project.to_owned(),
            session_field,
            agent_id,
            written: Written {
                source_session: session.id.to_string(),
                session: written_id,
                file,
                resume: Some(resume),
            },
            lines: 0,
            prev: None,
            model: find_model(&session.options, 4).map(str::to_owned),
            queue: VecDeque::new(),
            call_ids: crate::LookupSet::default(),
            buf: Vec::new(),
            started: false,
            kept: (session.source_agent == "pi").then(KeptLines::default),
        });
    }

    /// A message of a foreign session: written at once, or held with its open response.
    pub fn message(
        &mut self,
        message: &Message,
        target: &mut Target<'_>,
    ) -> Result<(), WriteError> {
        let Some(&i) = self.index.get(message.session_id().as_str()) else {
            return Ok(());
        };
        let stream = &mut self.streams[i];
        stream.start(target.losses);
        stream.message(message, target.losses);
        stream.write(target)
    }

    /// A carrier of a foreign session as its source line. Claude Code has no form for it: all it
    /// does to the conversation is count a `source_record` loss and, if its record names one,
    /// set the model in force. So once that loss has its first place and the session has begun,
    /// a line that cannot name a model (none of the keys `find_model` reads, `"model"`,
    /// `"modelID"`, `"modelId"`, in its text: a carried line has no escaped keys) is only
    /// counted, and its message is never built; one that may name a model is looked up on its
    /// tape ([`tape_model`]) and counted, and goes the message's way only where the tape cannot
    /// tell. What is written and reported is the same either way.
    pub fn carried(
        &mut self,
        carried: &CarriedLine<'_>,
        target: &mut Target<'_>,
    ) -> Result<(), WriteError> {
        let Some(&i) = self.index.get(carried.session_id().as_str()) else {
            return Ok(());
        };
        let line = carried.line();
        let may_name_a_model = names_a_model_key(line.as_bytes());
        let counted = self.streams[i].started
            && target.losses.kinds.contains_key(SOURCE_RECORD)
            && !carried.may_be_compaction();
        if !counted {
            return self.message(&carried.message(), target);
        }
        if may_name_a_model {
            // The model its message's options would name (`{"source": {"record": ...}}`, the
            // record two levels down), found on the line's tape; else the message's way.
            let found = jsonl::on_tape_here(line.as_bytes(), |nodes| tape_model(nodes, 0, 2));
            match found {
                Some(Some(model)) => self.streams[i].model = Some(model),
                Some(None) => {}
                None => return self.message(&carried.message(), target),
            }
        }
        // The kind has its first place and text already: this only counts.
        target.losses.record(SOURCE_RECORD, "", "");
        Ok(())
    }

    /// A line of unsigned reasoning alone ([`ReasoningLine`]) of a foreign session. Claude Code
    /// holds no reasoning without an Anthropic signature, so all its message does is open a
    /// response (if none is open), count one `reasoning_unsigned` loss per part and, with
    /// encrypted content, one `reasoning_encrypted_content` loss ([`Stream::assistant`]): the
    /// line names no model, and is no compaction. Once those losses have their first places and
    /// the session has begun (and it is not a pi session, whose messages are remembered for its
    /// compactions), the line does exactly that and its message is never built; before, it goes
    /// the message's way. What is written and reported is the same either way.
    pub fn reasoning(
        &mut self,
        line: &ReasoningLine<'_>,
        target: &mut Target<'_>,
    ) -> Result<(), WriteError> {
        let Some(&i) = self.index.get(line.session_id().as_str()) else {
            return Ok(());
        };
        let stream = &mut self.streams[i];
        let losses = &mut *target.losses;
        let counted = stream.started
            && stream.kept.is_none()
            && (line.parts == 0 || losses.kinds.contains_key(REASONING_UNSIGNED))
            && (!line.encrypted || losses.kinds.contains_key(REASONING_ENCRYPTED));
        if !counted {
            return self.message(&line.message(), target);
        }
        Stream::open_response(&mut stream.queue);
        // Each kind has its first place and text already: these only count.
        if line.encrypted {
            losses.count_again(REASONING_ENCRYPTED);
        }
        for _ in 0..line.parts {
            losses.count_again(REASONING_UNSIGNED);
        }
        stream.release(false, losses);
        stream.write(target)
    }

    /// The end of the source: every held response is written (its unanswered calls left out),
    /// and each session that got lines is listed as written.
    pub fn flush(&mut self, target: &mut Target<'_>) -> Result<(), WriteError> {
        self.index.clear();
        for mut stream in std::mem::take(&mut self.streams) {
            stream.start(target.losses);
            stream.release(true, target.losses);
            stream.write(target)?;
            if stream.lines == 0 {
                target.losses.record(
                    "empty_session",
                    format!("session {}", stream.canonical),
                    "nothing of the session has a Claude Code form, so no file was written",
                );
            } else {
                target.written.push(stream.written);
            }
        }
        Ok(())
    }
}

/// The loss kind of reasoning text without an Anthropic signature, left out.
const REASONING_UNSIGNED: &str = "reasoning_unsigned";

/// The loss kind of provider-encrypted reasoning, left out.
const REASONING_ENCRYPTED: &str = "reasoning_encrypted_content";

/// The loss kind of a Codex compaction written as Claude Code's own (its other fields dropped).
pub(crate) const COMPACTED: &str = "compaction_rewritten";

/// How Claude Code begins a compaction summary (format reference §5, "Compaction summary").
const COMPACT_SUMMARY_PREFIX: &str = "This session is being continued from a previous conversation that ran out of context. The summary below covers the earlier portion of the conversation.\n\n";

/// The session's id if it is a UUID, else a UUID v5 derived from its source and id.
fn session_uuid(session: &Session) -> String {
    let id = session.id.as_str();
    if is_uuid(id) {
        id.to_owned()
    } else {
        uuid_v5(format_args!("session:{}:{id}", session.source_agent))
    }
}

/// A tool result waiting to be written after its call's response.
struct Found {
    /// The `tool_result` block's `content`, as JSON ([`write_result_content`], written when the
    /// result came: a held copy of the result's value would be built and dropped for nothing).
    content: Vec<u8>,
    /// Whether `content` is a structured result written as its JSON text (a loss, recorded
    /// when the line is written).
    restructured: bool,
    is_failure: bool,
    timestamp: String,
    message: String,
}

/// One block of a held assistant line: final, or a tool call written only if it is answered.
enum Block {
    Ready(Out),
    /// The call at this index of the response's calls.
    Call(usize),
}

/// An assistant message of the open response, its blocks not yet final.
struct Held {
    message: String,
    timestamp: String,
    model: Option<String>,
    blocks: Vec<Block>,
}

/// A tool call of the open response and, once it came, its result.
struct Call {
    call: String,
    name: String,
    /// The `tool_use` block's `input`, as JSON: the call's parameters, or a non-object wrapped
    /// as `{"input": ...}` (written when the call came; see [`Found::content`]).
    input: Vec<u8>,
    /// Whether the parameters are an object (else a loss, recorded when the line is written).
    input_object: bool,
    provider_executed: bool,
    result: Option<Found>,
}

/// A response held back: its assistant messages and calls, until every call is answered.
#[derive(Default)]
struct Response {
    held: Vec<Held>,
    calls: Vec<Call>,
    /// Whether the run of assistant messages has ended (a user or tool message came).
    ended: bool,
}

/// What a session holds back, in order: responses, and harness-only user messages after one
/// that waits.
enum Item {
    Response(Response),
    User(Message),
}

impl Response {
    fn answered(&self) -> bool {
        self.calls.iter().all(|c| c.result.is_some())
    }
}

/// One foreign session being written.
struct Stream {
    canonical: String,
    uuid: String,
    fork: bool,
    cwd: String,
    session_field: String,
    agent_id: Option<String>,
    /// Its entry in the written list, pushed at the end of the source if it got any line.
    written: Written,
    /// Lines written so far (each line's uuid derives from its index).
    lines: usize,
    prev: Option<String>,
    model: Option<String>,
    /// What is held back, oldest first; the last may be the open response.
    queue: VecDeque<Item>,
    /// Tool call ids written so far (Claude needs them unique).
    call_ids: crate::LookupSet<String>,
    /// Lines made final since the last write to the output.
    buf: Vec<u8>,
    /// Whether the session-level losses were recorded.
    started: bool,
    /// A pi session's messages and lines, for a pi compaction's preserved messages.
    kept: Option<KeptLines>,
}

/// Which line came from which message, for a pi session: a pi compaction keeps the entries from
/// its `firstKeptEntryId` on, which are written before it, and Claude Code relinks the lines a
/// `compact_boundary` names in `compactMetadata.preservedMessages` under the summary when it
/// loads the file (2.1.197), so a resume sends the summary, those lines and what follows, as pi
/// does ([`Stream::pi_compaction`]). At most [`crate::face::PI_KEPT_LIMIT`] of each, the older
/// half let go.
#[derive(Default)]
struct KeptLines {
    /// The messages in the order they came (their ids, hashed).
    messages: Vec<u128>,
    /// Each user and assistant line written: the message it came from (hashed), its index.
    lines: Vec<(u128, usize)>,
}

impl KeptLines {
    fn push<T>(list: &mut Vec<T>, item: T) {
        crate::face::remember_kept(list, item);
    }

    /// Whether message `first` is remembered.
    fn knows(&self, first: &str) -> bool {
        let first = crate::digest::hash128(first);
        self.messages.contains(&first)
    }

    /// The indices of the lines written for the messages from `first` on (before the last
    /// message, the compaction), if `first` is still remembered.
    fn from(&self, first: &str) -> Option<Vec<usize>> {
        let first = crate::digest::hash128(first);
        let at = self.messages.iter().rposition(|&m| m == first)?;
        let kept: HashSet<u128> = self.messages[at..].iter().copied().collect();
        Some(
            self.lines
                .iter()
                .filter(|(m, _)| kept.contains(m))
                .map(|&(_, n)| n)
                .collect(),
        )
    }
}

/// A block of an assistant line.
enum Out {
    Text {
        text: String,
    },
    Thinking {
        thinking: String,
        signature: String,
    },
    ToolUse {
        id: String,
        name: String,
        /// The input, as JSON ([`Call::input`]).
        input: Vec<u8>,
    },
}

/// A line's `message`, in the field order Claude Code writes.
enum Body<'a> {
    /// A user line's text, or its array of text and file blocks.
    User(&'a Value),
    /// A user line with one `tool_result` block.
    Result {
        tool_use_id: &'a str,
        /// The content, as JSON ([`Found::content`]).
        content: &'a [u8],
        is_error: bool,
    },
    /// An assistant line: one line of API response `id`.
    Assistant {
        model: &'a str,
        id: &'a str,
        content: &'a [Out],
    },
}

impl Out {
    fn write(&self, out: &mut Vec<u8>) {
        match self {
            Out::Text { text } => {
                out.extend_from_slice(br#"{"type":"text","text":"#);
                write_str(out, text);
            }
            Out::Thinking {
                thinking,
                signature,
            } => {
                out.extend_from_slice(br#"{"type":"thinking","thinking":"#);
                write_str(out, thinking);
                out.extend_from_slice(br#","signature":"#);
                write_str(out, signature);
            }
            Out::ToolUse { id, name, input } => {
                out.extend_from_slice(br#"{"type":"tool_use","id":"#);
                write_str(out, id);
                out.extend_from_slice(br#","name":"#);
                write_str(out, name);
                out.extend_from_slice(br#","input":"#);
                out.extend_from_slice(input);
            }
        }
        out.push(b'}');
    }
}

impl Body<'_> {
    /// Appends the body as compact JSON: byte for byte what serde_json writes for the same
    /// object, escaped by pond's own string writer (serde_json's was 8% of a conversion).
    fn write(&self, out: &mut Vec<u8>) {
        match self {
            Body::User(content) => {
                out.extend_from_slice(br#"{"role":"user","content":"#);
                write_value(out, content);
            }
            Body::Result {
                tool_use_id,
                content,
                is_error,
            } => {
                out.extend_from_slice(br#"{"role":"user","content":[{"tool_use_id":"#);
                write_str(out, tool_use_id);
                out.extend_from_slice(br#","type":"tool_result","content":"#);
                out.extend_from_slice(content);
                out.extend_from_slice(if *is_error {
                    br#","is_error":true}]"#
                } else {
                    br#","is_error":false}]"#
                });
            }
            Body::Assistant { model, id, content } => {
                out.extend_from_slice(br#"{"model":"#);
                write_str(out, model);
                out.extend_from_slice(br#","id":"#);
                write_str(out, id);
                out.extend_from_slice(br#","type":"message","role":"assistant","content":["#);
                for (i, block) in content.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    block.write(out);
                }
                out.extend_from_slice(
                    br#"],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":0,"output_tokens":0}"#,
                );
            }
        }
        out.push(b'}');
    }
}

impl Stream {
    fn at<'m>(&'m self, message: &'m Message) -> At<'m> {
        At::of(&self.canonical, message)
    }

    /// The session-level losses, recorded before its first message's.
    fn start(&mut self, losses: &mut Losses) {
        if std::mem::replace(&mut self.started, true) {
            return;
        }
        let at = format!("session {}", self.canonical);
        if self.uuid != self.canonical {
            losses.record(
                "session_id_derived",
                &at,
                format!(
                    "Claude Code session ids are UUIDs: `{}` is written as {} (UUID v5 of the source id)",
                    self.canonical, self.uuid
                ),
            );
        }
        if self.fork {
            losses.record(
                "fork_parent_link",
                &at,
                "Claude Code keeps no parent pointer for a forked session; it is written as a session of its own",
            );
        }
    }

    /// Writes the lines made final so far.
    fn write(&mut self, target: &mut Target<'_>) -> Result<(), WriteError> {
        if self.buf.is_empty() {
            return Ok(());
        }
        target.out.append(&self.written.file, &self.buf)?;
        self.buf.clear();
        Ok(())
    }

    fn message(&mut self, m: &Message, losses: &mut Losses) {
        if let Some(model) = find_model(m.options(), 4)
            && self.model.as_deref() != Some(model)
        {
            self.model = Some(model.to_owned());
        }
        if let Some(kept) = &mut self.kept {
            KeptLines::push(&mut kept.messages, crate::digest::hash128(m.id().as_str()));
            if let Some(compaction) = crate::face::pi_compaction(m)
                && self.pi_compaction(&compaction, m, losses)
            {
                return;
            }
        }
        if let Some(summary) = crate::face::opencode_summary_text(m) {
            // An opencode compaction.
            self.compact(Some(summary.as_str()), m.timestamp().as_str(), losses);
            losses.record(
                COMPACTED,
                self.at(m),
                "an opencode compaction (the summary answering its `compaction` message) is \
                 written as Claude Code's own: a `compact_boundary` line and the summary as an \
                 `isCompactSummary` user line, so a resume sends the summary and what follows, \
                 as opencode does",
            );
            return;
        }
        match m {
            Message::Assistant(_) => self.assistant(m, losses),
            // Records written as nothing (carriers, system text) do not end a response.
            Message::System(_) => self.system(m, losses),
            Message::User(_) => {
                self.end_run();
                if !harness_only(m) {
                    // A user turn: results still awaited will not come.
                    self.release(true, losses);
                }
                if self.queue.is_empty() {
                    self.user(m, losses);
                } else {
                    self.queue.push_back(Item::User(m.clone()));
                }
            }
            Message::Tool(t) => {
                self.end_run();
                for part in &t.content {
                    match part {
                        ToolPart::ToolResult(r) => self.result(r, m, losses),
                        ToolPart::ToolApprovalResponse(_) => losses.record(
                            "tool_approval",
                            self.at(m),
                            "Claude Code transcripts record no tool approval answers",
                        ),
                    }
                }
            }
        }
        self.release(false, losses);
    }

    /// The open response (the last item held, if a response still taking assistant messages)
    /// takes no more.
    fn end_run(&mut self) {
        if let Some(Item::Response(r)) = self.queue.back_mut() {
            r.ended = true;
        }
    }

    /// Writes what is held, oldest first, while it is final (or everything when `all`, or the
    /// oldest while more than `MAX_HELD` items are held).
    fn release(&mut self, all: bool, losses: &mut Losses) {
        while let Some(front) = self.queue.front() {
            let waits = match front {
                Item::Response(r) => !r.ended || !r.answered(),
                Item::User(_) => false,
            };
            if waits && !all && self.queue.len() <= MAX_HELD {
                break;
            }
            match self.queue.pop_front() {
                Some(Item::Response(r)) => self.write_response(r, losses),
                Some(Item::User(m)) => self.user(&m, losses),
                None => break,
            }
        }
    }

    /// A result: to the first waiting call it answers, else left out.
    fn result(&mut self, part: &ToolResultPart, m: &Message, losses: &mut Losses) {
        let call = part.call_id.as_str();
        let slot = self.queue.iter_mut().find_map(|item| match item {
            Item::Response(r) => r
                .calls
                .iter_mut()
                .find(|c| c.result.is_none() && c.call == call),
            Item::User(_) => None,
        });
        match slot {
            Some(slot) => {
                // A result held as its JSON text (a string) is that text.
                let (json, restructured) = match part.result.json_text() {
                    Some(text) => (text.as_bytes().to_vec(), false),
                    None => {
                        let mut json = Vec::new();
                        let restructured = write_result_content(&mut json, part.result.as_value());
                        (json, restructured)
                    }
                };
                slot.result = Some(Found {
                    content: json,
                    restructured,
                    is_failure: part.is_failure,
                    timestamp: m.timestamp().as_str().to_owned(),
                    message: m.id().as_str().to_owned(),
                });
            }
            None => losses.record(
                "tool_result_unpaired",
                self.at(m),
                format_args!("the result of call `{call}` has no call waiting for it in the session; Claude Code drops a tool_result without its tool_use"),
            ),
        }
    }

    /// The uuid of the next line ([`Self::line_uuid`]).
    fn next_uuid(&self) -> String {
        self.line_uuid(self.lines)
    }

    /// The uuid of line `n`: uuid_v5("line:{canonical}:{n}"), without formatting the name.
    fn line_uuid(&self, n: usize) -> String {
        let mut digits = itoa::Buffer::new();
        uuid_v5_of(&[
            b"line:",
            self.canonical.as_bytes(),
            b":",
            digits.format(n).as_bytes(),
        ])
    }

    /// A pi compaction ([`crate::face::pi_compaction`]) as Claude Code's own: the boundary and
    /// the summary line ([`Self::compact`]), the boundary naming the lines of the entries pi
    /// keeps (from `firstKeptEntryId` on, written before it) as its preserved messages, so that
    /// a resume sends the summary, those lines and what follows. False, and nothing written,
    /// when the first kept entry is not among the messages remembered ([`KeptLines`]): the
    /// compaction is then the user message it is read as, after the whole history.
    fn pi_compaction(
        &mut self,
        compaction: &crate::face::PiCompaction<'_>,
        m: &Message,
        losses: &mut Losses,
    ) -> bool {
        let Some(first) = compaction.first_kept else {
            return false;
        };
        if !self.kept.as_ref().is_some_and(|k| k.knows(first)) {
            return false;
        }
        // What is held is written first: the lines the kept messages are written as.
        self.end_run();
        self.release(true, losses);
        let Some(lines) = self.kept.as_ref().and_then(|k| k.from(first)) else {
            return false;
        };
        let preserved: Vec<String> = lines.into_iter().map(|n| self.line_uuid(n)).collect();
        self.compact_preserving(
            Some(compaction.summary),
            &preserved,
            m.timestamp().as_str(),
            losses,
        );
        losses.record(
            COMPACTED,
            self.at(m),
            "a pi compaction is written as Claude Code's own: a `compact_boundary` line whose \
             `compactMetadata.preservedMessages` names the lines of the entries pi keeps (from \
             `firstKeptEntryId` on), then the summary as an `isCompactSummary` user line, so a \
             resume sends the summary, those entries and what follows, as pi does; \
             `tokensBefore` and `details` are left out",
        );
        true
    }

    /// Claude Code's compaction (format reference §11): a `compact_boundary` system line that
    /// starts a new chain (`parentUuid` null, `logicalParentUuid` the line before), then the
    /// summary as a user line marked `isCompactSummary`, which the lines after it follow. A
    /// resume walks back from the last line to the boundary: it sends the summary and what
    /// follows, not the history before (which stays in the file, as Claude Code keeps it).
    /// Without a summary, the boundary alone: a resume sends what follows it.
    /// What is held before it is final first: the boundary follows it.
    fn compact(&mut self, summary: Option<&str>, timestamp: &str, losses: &mut Losses) {
        self.compact_preserving(summary, &[], timestamp, losses);
    }

    /// [`Self::compact`], the boundary naming `preserved` (uuids of lines before it, in order)
    /// in `compactMetadata.preservedMessages` (and `preservedSegment`), anchored at the summary
    /// line, as Claude Code's own partial compaction does: loading the file, it relinks them
    /// after the summary and what followed the summary after them.
    fn compact_preserving(
        &mut self,
        summary: Option<&str>,
        preserved: &[String],
        timestamp: &str,
        losses: &mut Losses,
    ) {
        self.end_run();
        self.release(true, losses);
        let uuid = self.next_uuid();
        // The summary line's uuid: the line after the boundary.
        let anchor = summary.map(|_| self.line_uuid(self.lines + 1));
        let out = &mut self.buf;
        out.extend_from_slice(br#"{"parentUuid":null,"logicalParentUuid":"#);
        match &self.prev {
            Some(prev) => write_str(out, prev),
            None => out.extend_from_slice(b"null"),
        }
        self.envelope();
        let out = &mut self.buf;
        out.extend_from_slice(
            br#","type":"system","subtype":"compact_boundary","content":"Conversation compacted","isMeta":false,"timestamp":"#,
        );
        write_str(out, timestamp);
        out.extend_from_slice(br#","uuid":"#);
        write_str(out, &uuid);
        out.extend_from_slice(
            br#","level":"info","compactMetadata":{"trigger":"auto","preTokens":0"#,
        );
        if let (Some(summary_uuid), [head, .., tail] | [head @ tail]) = (&anchor, preserved) {
            out.extend_from_slice(br#","preservedSegment":{"headUuid":"#);
            write_str(out, head);
            out.extend_from_slice(br#","anchorUuid":"#);
            write_str(out, summary_uuid);
            out.extend_from_slice(br#","tailUuid":"#);
            write_str(out, tail);
            out.extend_from_slice(br#"},"preservedMessages":{"anchorUuid":"#);
            write_str(out, summary_uuid);
            out.extend_from_slice(br#","uuids":["#);
            for (i, u) in preserved.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_str(out, u);
            }
            out.extend_from_slice(b"]}");
        }
        out.extend_from_slice(b"}}\n");
        self.lines += 1;
        self.prev = Some(uuid);
        let Some(summary) = summary else {
            return;
        };
        let text = Value::String(format!("{COMPACT_SUMMARY_PREFIX}{summary}"));
        self.line_with(
            "user",
            Body::User(&text),
            timestamp,
            false,
            br#","isCompactSummary":true,"isVisibleInTranscriptOnly":true"#,
        );
    }

    /// The members every line has after its parent: sidechain, user type, cwd, session,
    /// version, and a sub-agent's id.
    fn envelope(&mut self) {
        let out = &mut self.buf;
        out.extend_from_slice(if self.agent_id.is_some() {
            br#","isSidechain":true"#
        } else {
            br#","isSidechain":false"#
        });
        out.extend_from_slice(br#","userType":"external","cwd":"#);
        write_str(out, &self.cwd);
        out.extend_from_slice(br#","sessionId":"#);
        write_str(out, &self.session_field);
        out.extend_from_slice(br#","version":"#);
        write_str(out, TARGET_VERSION);
        if let Some(agent) = &self.agent_id {
            out.extend_from_slice(br#","agentId":"#);
            write_str(out, agent);
        }
    }

    /// Appends one line to the chain, its members in the order Claude Code writes them.
    /// `source`: the id of the message it is written for (remembered for a pi session,
    /// [`KeptLines`]).
    fn line(&mut self, kind: &str, message: Body<'_>, timestamp: &str, meta: bool, source: &str) {
        if let Some(kept) = &mut self.kept {
            KeptLines::push(
                &mut kept.lines,
                (crate::digest::hash128(source), self.lines),
            );
        }
        self.line_with(kind, message, timestamp, meta, b"");
    }

    /// [`Self::line`], with `extra` members (`,"name":value`...) after its message.
    fn line_with(
        &mut self,
        kind: &str,
        message: Body<'_>,
        timestamp: &str,
        meta: bool,
        extra: &[u8],
    ) {
        let uuid = self.next_uuid();
        let out = &mut self.buf;
        out.extend_from_slice(br#"{"parentUuid":"#);
        match &self.prev {
            Some(prev) => write_str(out, prev),
            None => out.extend_from_slice(b"null"),
        }
        self.envelope();
        let out = &mut self.buf;
        out.extend_from_slice(br#","type":"#);
        write_str(out, kind);
        out.extend_from_slice(br#","message":"#);
        message.write(out);
        if meta {
            out.extend_from_slice(br#","isMeta":true"#);
        }
        out.extend_from_slice(extra);
        out.extend_from_slice(br#","uuid":"#);
        write_str(out, &uuid);
        out.extend_from_slice(br#","timestamp":"#);
        write_str(out, timestamp);
        out.push(b'}');
        self.buf.push(b'\n');
        self.lines += 1;
        self.prev = Some(uuid);
    }

    fn system(&mut self, m: &Message, losses: &mut Losses) {
        let Message::System(s) = m else {
            return;
        };
        let at = self.at(m);
        if let Some(record) = s.carried_record()
            && crate::face::is_compaction_record(record)
        {
            let summary = crate::face::compaction_summary(record);
            match summary {
                None if crate::face::compaction_clears_history(record) => {
                    // Codex keeps nothing before it and says nothing (the `compacted` line
                    // pond writes for a Claude Code compaction): the boundary alone.
                    self.compact(None, m.timestamp().as_str(), losses);
                    losses.record(
                        COMPACTED,
                        self.at(m),
                        "a Codex `compacted` record with an empty replacement history and no \
                         summary is written as Claude Code's own compaction: a \
                         `compact_boundary` line, so a resume sends what follows it, as Codex \
                         does",
                    );
                }
                Some(summary) => {
                    self.compact(Some(summary), m.timestamp().as_str(), losses);
                    losses.record(
                        COMPACTED,
                        self.at(m),
                        "a Codex `compacted` record is written as Claude Code's own compaction: a \
                         `compact_boundary` line and its summary as an `isCompactSummary` user \
                         line, so a resume sends the summary and what follows, as Codex does; \
                         the record's other fields (`replacement_history`) are left out",
                    );
                }
                None => losses.record(
                    crate::face::COMPACTION_LOSS,
                    at,
                    crate::face::compaction_loss_detail("Claude Code"),
                ),
            }
        } else if let Some(record) = s.carried_record() {
            let kind = record
                .get("type")
                .or_else(|| record.get("record_type"))
                .and_then(Value::as_str)
                .unwrap_or("untyped");
            losses.record(
                SOURCE_RECORD,
                at,
                format_args!(
                    "a `{kind}` record of the source maps to no message and has no Claude Code form"
                ),
            );
        } else if !s.content.as_str().is_empty() {
            losses.record(
                "system_message",
                at,
                "Claude Code transcripts hold no system prompt; the system message is left out",
            );
        }
    }

    /// User text: a conversational run is a prompt line; an injected run (harness scaffolding
    /// such as Codex's `<environment_context>`) is an `isMeta` line with each text wrapped in
    /// `<system-reminder>`, as Claude Code wraps its own harness text (format reference §5).
    fn user(&mut self, m: &Message, losses: &mut Losses) {
        let Message::User(u) = m else {
            return;
        };
        let at = self.at(m);
        let mut runs: Vec<(Provenance, Vec<Value>)> = Vec::new();
        for part in &u.content {
            let (provenance, block) = match part {
                UserPart::Text(t) => {
                    if t.text.as_str().trim().is_empty() {
                        losses.record(
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
                UserPart::File(f) => match file_block(f, &at, losses) {
                    Some(b) => (f.provenance, b),
                    None => continue,
                },
            };
            match runs.last_mut() {
                Some((p, blocks)) if *p == provenance => blocks.push(block),
                _ => runs.push((provenance, vec![block])),
            }
        }
        let timestamp = m.timestamp().as_str();
        for (provenance, blocks) in runs {
            let content = match blocks.as_slice() {
                [one] if one.get("type").and_then(Value::as_str) == Some("text") => {
                    one.get("text").cloned().unwrap_or(Value::Null)
                }
                _ => Value::Array(blocks),
            };
            self.line(
                "user",
                Body::User(&content),
                timestamp,
                provenance == Provenance::Injected,
                m.id().as_str(),
            );
        }
    }

    /// A response open to take assistant messages: the last item held, or a new one.
    fn open_response(queue: &mut VecDeque<Item>) {
        if !matches!(queue.back(), Some(Item::Response(r)) if !r.ended) {
            queue.push_back(Item::Response(Response::default()));
        }
    }

    /// An assistant message joins the open response (starting one if none is open); its blocks
    /// are final when the response is.
    fn assistant(&mut self, m: &Message, losses: &mut Losses) {
        let Message::Assistant(a) = m else {
            return;
        };
        let at = At::of(&self.canonical, m);
        if has_key(m.options(), "encrypted_content", 4) {
            losses.record(
                REASONING_ENCRYPTED,
                &at,
                "provider-encrypted reasoning (Codex `encrypted_content`) cannot be sent to an Anthropic model; left out",
            );
        }
        Self::open_response(&mut self.queue);
        let Some(Item::Response(response)) = self.queue.back_mut() else {
            return;
        };
        let mut blocks = Vec::new();
        for part in &a.content {
            match part {
                AssistantPart::Text(t) => {
                    if t.text.as_str().trim().is_empty() {
                        losses.record(
                            "empty_text",
                            &at,
                            "an empty text block (the API refuses them) is left out",
                        );
                    } else {
                        blocks.push(Block::Ready(Out::Text {
                            text: t.text.as_str().to_owned(),
                        }));
                    }
                }
                AssistantPart::Reasoning(r) => {
                    match find_string(&r.options, &["signature", "thinkingSignature"], 4) {
                        Some(signature) if !r.text.as_str().is_empty() => {
                            blocks.push(Block::Ready(Out::Thinking {
                                thinking: r.text.as_str().to_owned(),
                                signature,
                            }))
                        }
                        _ => losses.record(
                            REASONING_UNSIGNED,
                            &at,
                            "reasoning text without an Anthropic signature cannot be a thinking block (the API refuses a forged or missing signature); left out",
                        ),
                    }
                }
                AssistantPart::ToolCall(c) => {
                    blocks.push(Block::Call(response.calls.len()));
                    // What `tool_use.input` will hold: an object as it is, anything else
                    // wrapped, as `{"input": <value>}` (serde_json's bytes for both).
                    let mut input = Vec::new();
                    let input_object = match c.params.as_value() {
                        Value::Object(o) => {
                            write_value_map(&mut input, o);
                            true
                        }
                        other => {
                            input.extend_from_slice(br#"{"input":"#);
                            write_value(&mut input, other);
                            input.push(b'}');
                            false
                        }
                    };
                    response.calls.push(Call {
                        call: c.call_id.as_str().to_owned(),
                        name: c.name.as_str().to_owned(),
                        input,
                        input_object,
                        provider_executed: c.provider_executed,
                        result: None,
                    });
                }
                AssistantPart::ToolResult(_) => {} // placed after its call, below
                AssistantPart::File(_) => losses.record(
                    "assistant_file",
                    &at,
                    "Claude Code assistant content holds no files; left out",
                ),
                AssistantPart::ToolApprovalRequest(_) => losses.record(
                    "tool_approval",
                    &at,
                    "Claude Code transcripts record no tool approval requests",
                ),
            }
        }
        if !blocks.is_empty() {
            response.held.push(Held {
                message: m.id().as_str().to_owned(),
                timestamp: m.timestamp().as_str().to_owned(),
                model: self.model.clone(),
                blocks,
            });
        }
        for part in &a.content {
            if let AssistantPart::ToolResult(r) = part {
                self.result(r, m, losses);
            }
        }
    }

    /// A tool_use id Claude accepts (`[A-Za-z0-9_-]+`, unique in the session).
    /// (`message`: the id of the message the call is in, which a loss names.)
    fn call_id(&mut self, call: &str, message: &str, losses: &mut Losses) -> String {
        // Most ids are already of the letters Claude takes.
        let valid = |c: u8| c.is_ascii_alphanumeric() || c == b'_' || c == b'-';
        let mut id: String = if call.bytes().all(valid) {
            call.to_owned()
        } else {
            call.chars()
                .map(|c| match u8::try_from(c) {
                    Ok(b) if valid(b) => c,
                    _ => '_',
                })
                .collect()
        };
        if id.is_empty() {
            id = format!("toolu_{}", hex_id(call, 24));
        }
        if self.call_ids.contains(&id) {
            let base = id.clone();
            let mut n = 2;
            id = format!("{base}_{n}");
            while self.call_ids.contains(&id) {
                n += 1;
                id = format!("{base}_{n}");
            }
        }
        if id != call {
            losses.record(
                "tool_call_id_rewritten",
                At::new(&self.canonical, message),
                format_args!("call id `{call}` is written as `{id}` (Claude needs [A-Za-z0-9_-] ids, unique per session)"),
            );
        }
        self.call_ids.insert(id.clone());
        id
    }

    /// Writes a held response: its lines with the answered calls, then each result on its own
    /// user line (as Claude Code 2.x writes them). Unanswered calls are left out.
    fn write_response(&mut self, response: Response, losses: &mut Losses) {
        let Response {
            held, mut calls, ..
        } = response;
        let mut ids: Vec<Option<String>> = Vec::with_capacity(calls.len());
        let mut response_id: Option<String> = None;
        for h in held {
            let mut blocks = Vec::with_capacity(h.blocks.len());
            for block in h.blocks {
                let c = match block {
                    Block::Ready(v) => {
                        blocks.push(v);
                        continue;
                    }
                    Block::Call(i) => &mut calls[i],
                };
                if c.result.is_none() {
                    losses.record(
                        "tool_call_unpaired",
                        At::new(&self.canonical, &h.message),
                        format_args!("call `{}` has no result in the session; Claude Code drops a tool_use without its tool_result", c.call),
                    );
                    ids.push(None);
                    continue;
                }
                let id = self.call_id(&c.call, &h.message, losses);
                if !c.input_object {
                    losses.record(
                        "tool_input_not_object",
                        At::new(&self.canonical, &h.message),
                        "tool_use.input must be an object: a non-object input is wrapped as {\"input\": <value>}",
                    );
                }
                let input = std::mem::take(&mut c.input);
                if c.provider_executed {
                    losses.record(
                        "provider_executed_flag",
                        At::new(&self.canonical, &h.message),
                        "a provider-executed call is written as an ordinary tool_use",
                    );
                }
                blocks.push(Out::ToolUse {
                    id: id.clone(),
                    name: std::mem::take(&mut c.name),
                    input,
                });
                ids.push(Some(id));
            }
            if blocks.is_empty() {
                continue;
            }
            let id = response_id
                .get_or_insert_with(|| {
                    let name: [&[u8]; 4] = [
                        b"response:",
                        self.canonical.as_bytes(),
                        b":",
                        h.message.as_bytes(),
                    ];
                    prefixed_hex_id_of("msg_", &name, 24)
                })
                .clone();
            let message = Body::Assistant {
                model: h.model.as_deref().unwrap_or(SYNTHETIC_MODEL),
                id: &id,
                content: &blocks,
            };
            self.line("assistant", message, &h.timestamp, false, &h.message);
        }
        for (c, id) in calls.into_iter().zip(ids) {
            let (Some(found), Some(id)) = (c.result, id) else {
                continue;
            };
            if found.restructured {
                losses.record(
                    "tool_result_restructured",
                    At::new(&self.canonical, &found.message),
                    "a structured tool result is written as its JSON text (Claude tool results are text and image blocks)",
                );
            }
            let message = Body::Result {
                tool_use_id: &id,
                content: &found.content,
                is_error: found.is_failure,
            };
            self.line("user", message, &found.timestamp, false, &found.message);
        }
    }
}

fn file_block(f: &FilePart, at: &At<'_>, losses: &mut Losses) -> Option<Value> {
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
            losses.record(
                "file_unsupported",
                at,
                format_args!("a `{media}` file has no Claude Code block (images png/jpeg/gif/webp and PDF only)"),
            );
            None
        }
    }
}

/// `tool_result.content`, written into `out` as JSON: a string, or text and image blocks;
/// anything else as its JSON text, and then true (a loss, `tool_result_restructured`). Written
/// straight from the result: the blocks built as values, only to be written and dropped, were
/// 2% of a pi conversion's instructions into Claude Code (docs/benchmarks.md, 2026-12-06,
/// 09:53 UTC).
fn write_result_content(out: &mut Vec<u8>, result: &Value) -> bool {
    match result {
        Value::String(s) => {
            write_str(out, s);
            return false;
        }
        Value::Array(items) => {
            let start = out.len();
            out.push(b'[');
            let whole = items.iter().enumerate().all(|(i, item)| {
                if i > 0 {
                    out.push(b',');
                }
                write_result_block(out, item).is_some()
            });
            if whole {
                out.push(b']');
                return false;
            }
            out.truncate(start);
        }
        _ => {}
    }
    write_str(out, &result.to_string());
    true
}

/// One item of a result array written as a Claude `tool_result` content block; `None`, with
/// part of it perhaps written, if it has none.
fn write_result_block(out: &mut Vec<u8>, item: &Value) -> Option<()> {
    if let Value::String(s) = item {
        text_block(out, s);
        return Some(());
    }
    match item.get("type")?.as_str()? {
        "text" | "input_text" | "output_text" => text_block(out, item.get("text")?.as_str()?),
        "input_image" => {
            let url = item.get("image_url")?.as_str()?;
            let rest = url.strip_prefix("data:")?;
            let (media, data) = rest.split_once(";base64,")?;
            image_block(out, media, data);
        }
        "image" if item.get("source").is_some() => write_value(out, item),
        "image" => image_block(
            out,
            item.get("mimeType")?.as_str()?,
            item.get("data")?.as_str()?,
        ),
        _ => return None,
    }
    Some(())
}

/// `{"type":"text","text":TEXT}`.
fn text_block(out: &mut Vec<u8>, text: &str) {
    out.extend_from_slice(br#"{"type":"text","text":"#);
    write_str(out, text);
    out.push(b'}');
}

/// `{"type":"image","source":{"type":"base64","media_type":MEDIA,"data":DATA}}`.
fn image_block(out: &mut Vec<u8>, media: &str, data: &str) {
    out.extend_from_slice(br#"{"type":"image","source":{"type":"base64","media_type":"#);
    write_str(out, media);
    out.extend_from_slice(br#","data":"#);
    write_str(out, data);
    out.extend_from_slice(b"}}");
}

/// The keys a foreign write looks for in a message's options ([`find_model`], and
/// `encrypted_content` with [`has_key`]; `SessionWriter::option_keys`).
pub(crate) const OPTION_KEYS: &[&str] = &["modelID", "modelId", "model", "encrypted_content"];

/// [`find_model`] of the object at `nodes[at]` of a tape, as it would find it in the object
/// built from the tape: `Some(None)` when no model is named; `None` when the tape cannot tell
/// (an object naming a member twice).
fn tape_model(nodes: &[jsonl::Node<'_>], at: usize, depth: usize) -> Option<Option<String>> {
    use jsonl::Node;
    let members = jsonl::tape_members(nodes, at)?;
    let mut named = [None; 3];
    for &(key, value) in &members {
        match key {
            "modelID" => named[0] = Some(value),
            "modelId" => named[1] = Some(value),
            "model" => named[2] = Some(value),
            _ => {}
        }
    }
    for value in named.into_iter().flatten() {
        match nodes.get(value)? {
            Node::String(s) if !s.trim().is_empty() => return Some(Some((*s).to_owned())),
            Node::Object { .. } => {
                if let Some(model) = tape_model(nodes, value, 1)? {
                    return Some(Some(model));
                }
            }
            _ => {}
        }
    }
    if depth == 0 {
        return Some(None);
    }
    for &(_, value) in &members {
        if matches!(nodes.get(value)?, Node::Object { .. })
            && let Some(model) = tape_model(nodes, value, depth - 1)?
        {
            return Some(Some(model));
        }
    }
    Some(None)
}

/// Whether `line` holds `"model"`, `"modelID"` or `"modelId"` (a member a model may be named
/// by), found with one prepared search for their common start: three `str::contains` built a
/// searcher each, per carried line.
fn names_a_model_key(line: &[u8]) -> bool {
    static START: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"\"model"));
    START.find_iter(line).any(|at| {
        let rest = &line[at + b"\"model".len()..];
        rest.starts_with(b"\"") || rest.starts_with(b"ID\"") || rest.starts_with(b"Id\"")
    })
}

/// The model an options bag names (`model`, `modelID`, `modelId`, or a `model` object holding
/// one), searched to `depth` levels.
fn find_model(obj: &Map<String, Value>, depth: usize) -> Option<&str> {
    // One pass over the members (options are small maps; see `discover::find_str`).
    let mut named = [None; 3];
    for (k, v) in obj {
        match k.as_str() {
            "modelID" => named[0] = Some(v),
            "modelId" => named[1] = Some(v),
            "model" => named[2] = Some(v),
            _ => {}
        }
    }
    for value in named {
        match value {
            Some(Value::String(s)) if !s.trim().is_empty() => return Some(s),
            Some(Value::Object(inner)) => {
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
    obj.values()
        .filter_map(Value::as_object)
        .find_map(|v| find_model(v, depth - 1))
}

/// The first non-empty string under one of `keys`, searched to `depth` levels.
fn find_string(obj: &Map<String, Value>, keys: &[&str], depth: usize) -> Option<String> {
    if let Some(s) = crate::discover::first_str(obj, keys) {
        return Some(s.to_owned());
    }
    if depth == 0 {
        return None;
    }
    obj.values()
        .filter_map(Value::as_object)
        .find_map(|v| find_string(v, keys, depth - 1))
}

/// Whether `key` holds a non-null value somewhere to `depth` levels.
fn has_key(obj: &Map<String, Value>, key: &str, depth: usize) -> bool {
    if obj.iter().any(|(k, v)| k == key && !v.is_null()) {
        return true;
    }
    depth > 0
        && obj
            .values()
            .filter_map(Value::as_object)
            .any(|v| has_key(v, key, depth - 1))
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_model_key_is_found_as_the_three_searches_found_it() {
        for line in [
            r#"{"model":"m"}"#,
            r#"{"a":{"modelID":"m"}}"#,
            r#"{"modelId":1}"#,
            r#"{"model_provider":"openai","models":"x"}"#,
            r#"{"modelIDs":"x","\"model":"y"}"#,
            r#"{"text":"the \"model\" said"}"#,
            r#""model"#,
            "",
        ] {
            let three = ["\"model\"", "\"modelID\"", "\"modelId\""]
                .iter()
                .any(|key| line.contains(key));
            assert_eq!(names_a_model_key(line.as_bytes()), three, "{line}");
        }
    }

    use super::*;

    /// What `tape_model` finds in a carried record's line, and what `find_model` finds in the
    /// carrier's options built from it (`{"source": {"record": ...}}`, searched to depth 4).
    fn both(line: &str) -> (Option<Option<String>>, Option<String>) {
        let on_tape = jsonl::on_tape_here(line.as_bytes(), |nodes| tape_model(nodes, 0, 2));
        let record: Value = serde_json::from_str(line).unwrap();
        let options = json!({"source": {"record": record}});
        (
            on_tape,
            find_model(options.as_object().unwrap(), 4).map(str::to_owned),
        )
    }

    #[test]
    fn a_carried_line_names_the_model_its_message_would() {
        for line in [
            r#"{"type":"turn_context","payload":{"cwd":"/w","model":"gpt-5","effort":"high"}}"#,
            r#"{"type":"x","model":"top","payload":{"model":"inner"}}"#,
            r#"{"type":"x","payload":{"model":"  ","modelId":"by-id"}}"#,
            r#"{"type":"x","payload":{"model":{"name":"n","modelID":"in-object"}}}"#,
            r#"{"type":"x","payload":{"a":{"model":"too deep"}}}"#,
            r#"{"type":"x","payload":{"a":{"model":{"model":"deep through a model object"}}}}"#,
            r#"{"type":"x","first":{"b":1},"second":{"model":"second object"}}"#,
            r#"{"type":"x","payload":{"model":7}}"#,
        ] {
            let (on_tape, built) = both(line);
            assert_eq!(on_tape, Some(built), "{line}");
        }
    }

    #[test]
    fn a_member_named_twice_leaves_the_line_to_its_message() {
        let line = r#"{"type":"x","payload":{"model":"a","model":"b"}}"#;
        assert_eq!(both(line), (None, Some("b".to_owned())));
    }

    #[test]
    fn a_tool_result_is_written_as_its_blocks_or_else_as_its_json_text() {
        let written = |result: Value| {
            let mut out = b"[prefix]".to_vec();
            let restructured = write_result_content(&mut out, &result);
            (String::from_utf8(out).unwrap(), restructured)
        };
        let text = |t: &str| format!(r#"{{"type":"text","text":{t}}}"#);
        let image =
            r#"{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AA=="}}"#;
        assert_eq!(
            written(json!("a \"quoted\" line")),
            (r#"[prefix]"a \"quoted\" line""#.to_owned(), false)
        );
        let blocks = json!([
            "plain",
            {"type": "text", "text": "t", "extra": 1},
            {"type": "input_text", "text": "i"},
            {"type": "output_text", "text": "o\n"},
            {"type": "input_image", "image_url": "data:image/png;base64,AA=="},
            {"type": "image", "mimeType": "image/png", "data": "AA=="},
            {"type": "image", "source": {"data": "kept", "type": "url"}},
        ]);
        let expected = [
            text(r#""plain""#),
            text(r#""t""#),
            text(r#""i""#),
            text(r#""o\n""#),
            image.to_owned(),
            image.to_owned(),
            r#"{"type":"image","source":{"data":"kept","type":"url"}}"#.to_owned(),
        ];
        assert_eq!(
            written(blocks),
            (format!("[prefix][{}]", expected.join(",")), false)
        );
        assert_eq!(written(json!([])), ("[prefix][]".to_owned(), false));
        // One item without a block (here the last, after blocks written): the whole result is
        // its JSON text, and nothing of the blocks stays.
        for result in [
            json!([{"type": "text", "text": "t"}, {"type": "input_image", "image_url": "https://x"}]),
            json!([{"type": "text", "text": 1}]),
            json!([{"type": "audio"}]),
            json!({"type": "text", "text": "an object"}),
            json!(7),
        ] {
            let mut json_text = b"[prefix]".to_vec();
            jsonl::write_str(&mut json_text, &result.to_string());
            assert_eq!(
                written(result),
                (String::from_utf8(json_text).unwrap(), true)
            );
        }
    }
}

//! The two faces of a codec (spec 6.1) and what they write into.
//!
//! A [`ReadFace`] is configured against a source and streams canonical [`Event`]s; a
//! [`WriteFace`] makes [`SessionWriter`]s, pure functions of canonical input that hold no source.
//! They are separate traits, implemented by separate types. Whether a write is native or foreign
//! is decided by [`Fidelity::decide`], never by the codec (spec 6.3).

use pond_canonical::{Event, Locator, Message, Origin, ParseError, Session, SessionId, Timestamp};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

/// How sure a read face is that an input is in its format (for `pond convert` without `--from`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Sniff {
    /// Not this format.
    No,
    /// Could be (for example, JSONL of unknown shape).
    Maybe,
    /// This format's own markers were found.
    Yes,
}

/// The parse face: finds sources below an input and streams their canonical events.
pub trait ReadFace: Sync {
    /// The source units (session files, databases) at or below `input`, in a stable order, each
    /// with its path relative to `input` (a file input is relative to its own folder).
    fn discover(&self, input: &Path) -> Result<Vec<Origin>, ParseError>;

    /// How sure this codec is that `input` (a file or folder) holds its format.
    fn sniff(&self, input: &Path) -> Sniff;

    /// Parses one source unit. Every event and every fault goes to `emit` in source order: a
    /// fault never ends the stream early unless the source cannot be read at all
    /// (adapter-integrity-no-silent-drops).
    fn read(&self, source: &Origin, emit: &mut dyn FnMut(Result<Event, ParseError>));

    /// Like [`read`](Self::read), for a conversion whose writer may take a carrier as its source
    /// line ([`Item::Carried`]) instead of as a message. A codec that can tell a carrier line
    /// without building its value hands it over so; the default hands over
    /// [`read`](Self::read)'s events. With `defer` (a conversion on two threads), a codec may
    /// also hand over a message as its line and mapping ([`Item::Deferred`]; as its parsed
    /// record and mapping, [`Item::Parsed`]), for the conversion to make on either thread, in any
    /// order: each makes the same messages and faults whenever it runs. The events and faults are those of
    /// [`read`](Self::read), in the same order, with each carried line standing for the message
    /// [`CarriedLine::message`] gives and each deferred one for what it makes.
    fn read_items(
        &self,
        source: &Origin,
        defer: bool,
        emit: &mut dyn FnMut(Result<Item<'_>, ParseError>),
    ) {
        let _ = defer;
        self.read(source, &mut |item| emit(item.map(Item::Event)));
    }

    /// [`read_items`](Self::read_items) for a foreign write whose writer looks for only the
    /// keys `wanted.keys` in a message's options ([`SessionWriter::option_keys`]) and, with
    /// `wanted.reasoning_lines`, takes a line of unsigned reasoning alone as its line
    /// ([`Item::Reasoning`], [`SessionWriter::takes_reasoning_lines`]): a codec may leave
    /// out of a message's options (unbuilt, `jsonl::Prune`, or not put there) the values in
    /// which none of them occurs, and pond's own marks for its native writer (`options.pond`),
    /// since the writer would drop them unread. What a foreign writer reads besides those keys
    /// stays as `read_items` makes it: whether a message's options are empty (the Codex writer,
    /// which never writes Codex's own sessions foreign) and a reasoning part's options whole
    /// (every writer). What the writer writes and every loss it reports are those of
    /// `read_items`, a reasoning line standing for its message; the default is `read_items`.
    fn read_items_for(
        &self,
        source: &Origin,
        defer: bool,
        wanted: Wanted,
        emit: &mut dyn FnMut(Result<Item<'_>, ParseError>),
    ) {
        let _ = wanted;
        self.read_items(source, defer, emit);
    }

    /// Files read as part of `source` besides the source itself (sidecars such as Claude Code's
    /// `agent-*.meta.json`), with their paths relative to the same input root. A native write
    /// reproduces them too.
    fn companions(&self, source: &Origin) -> Vec<Origin> {
        let _ = source;
        Vec::new()
    }

    /// Whether a native write reproduces `source` as the same file. True for a codec whose
    /// sources are its native files; false for a source read in another form than the codec
    /// writes (opencode's database, which writes back as `opencode export` documents).
    fn mirrors(&self, source: &Origin) -> bool {
        let _ = source;
        true
    }
}

/// One step of [`ReadFace::read_items`]: an event, a carrier still in its source's text, or a
/// message whose making is left to whoever takes it.
pub enum Item<'a> {
    Event(Event),
    Carried(CarriedLine<'a>),
    Deferred(Deferred),
    /// A deferred message whose record the reader has parsed already: what the making moves
    /// into the message was allocated by the reading thread, so a conversion frees the message on
    /// that thread, wherever it was made (docs/decisions.md, "A conversion reads on a thread of
    /// its own"). Otherwise as [`Item::Deferred`].
    Parsed(Deferred),
    /// A line whose message is reasoning alone, handed over as its line and what a writer
    /// that drops such messages needs to know of it ([`ReasoningLine`]); only for a writer
    /// that asked for them ([`Wanted::reasoning_lines`]).
    Reasoning(ReasoningLine<'a>),
}

/// What a foreign writer reads of a source ([`ReadFace::read_items_for`]).
#[derive(Clone, Copy, Debug)]
pub struct Wanted {
    /// The keys it looks for in a message's options ([`SessionWriter::option_keys`]).
    pub keys: &'static [&'static str],
    /// Whether it takes a line of unsigned reasoning alone as its line
    /// ([`SessionWriter::takes_reasoning_lines`]).
    pub reasoning_lines: bool,
}

/// A line whose message is an assistant message of reasoning parts alone (a Codex `reasoning`
/// item), none of them signed (no `signature` or `thinkingSignature` member in a part's
/// options), naming no model (no `model`, `modelID` or `modelId` member anywhere in its
/// options) and holding nothing a writer reads but what is counted here: for a writer that
/// drops such a message whole, reporting it ([`SessionWriter::reasoning`]), which then need not
/// build it. Any writer may still ask for the [`message`](Self::message), which is exactly the
/// one [`ReadFace::read_items_for`] gives for the line without `reasoning_lines`.
pub struct ReasoningLine<'a> {
    line: CarriedLine<'a>,
    /// How many reasoning parts the message has.
    pub parts: usize,
    /// Whether its options hold a non-null `encrypted_content` (provider-encrypted reasoning),
    /// within the depth a writer searches.
    pub encrypted: bool,
}

impl<'a> ReasoningLine<'a> {
    /// The line `parts.line`, whose message `make` makes from `parts`: `reasoning_parts`
    /// reasoning parts, with `encrypted` content or not.
    pub fn new(
        parts: CarrierParts<'a>,
        make: CarrierMessage,
        reasoning_parts: usize,
        encrypted: bool,
    ) -> Self {
        Self {
            line: CarriedLine::new(parts, make),
            parts: reasoning_parts,
            encrypted,
        }
    }

    /// The session the line belongs to.
    pub fn session_id(&self) -> &SessionId {
        self.line.session_id()
    }

    /// The line's message.
    pub fn message(&self) -> Message {
        self.line.message()
    }

    /// The line, owned: to hand it to another thread ([`OwnedReasoning::reasoning`] gives it
    /// back).
    pub fn to_owned(&self) -> OwnedReasoning {
        OwnedReasoning {
            line: self.line.to_owned(),
            parts: self.parts,
            encrypted: self.encrypted,
        }
    }
}

/// A [`ReasoningLine`] that owns its text and places.
pub struct OwnedReasoning {
    line: OwnedCarried,
    parts: usize,
    encrypted: bool,
}

impl OwnedReasoning {
    /// The reasoning line again, read from `source` (the source unit it was read from).
    pub fn reasoning<'a>(&'a self, source: &'a Origin) -> ReasoningLine<'a> {
        ReasoningLine {
            line: self.line.carried(source),
            parts: self.parts,
            encrypted: self.encrypted,
        }
    }
}

/// A message not made yet: its source line (or parsed record), owned, and the codec's mapping of
/// it, to be run on
/// whichever thread takes it. The two-thread conversion runs it on the writing thread when that
/// thread is waiting for work, and on the reading thread otherwise, so that neither thread idles
/// while the other has work it could share (docs/decisions.md, "A conversion's threads share
/// the mapping"). Run with the source unit the item was read from; it gives exactly the message,
/// or the fault, that [`ReadFace::read`] gives at the same place: each message and fault in
/// turn to the sink it is given (a line of several records gives several, a faulty line its
/// fault).
pub type Deferred = Box<dyn FnOnce(&Origin, &mut dyn FnMut(Result<Message, ParseError>)) + Send>;

impl Item<'_> {
    /// The events this item stands for, in order, to `emit`: a carried line becomes its carrier
    /// message, a deferred line is made (`source`: the unit it was read from).
    pub fn into_events(self, source: &Origin, emit: &mut dyn FnMut(Result<Event, ParseError>)) {
        match self {
            Item::Event(event) => emit(Ok(event)),
            Item::Carried(carried) => emit(Ok(Event::Message(carried.message()))),
            Item::Reasoning(line) => emit(Ok(Event::Message(line.message()))),
            Item::Deferred(make) | Item::Parsed(make) => {
                make(source, &mut |made| emit(made.map(Event::Message)))
            }
        }
    }
}

/// The messages `reader` makes of `source` with `read_items_for` (or, with `None`,
/// `read_items`), deferred and carried ones made: for tests of what a foreign read leaves out.
#[cfg(test)]
pub(crate) fn messages_read(
    reader: &dyn ReadFace,
    source: &Origin,
    wanted: Option<&'static [&'static str]>,
) -> Vec<Message> {
    let mut out = Vec::new();
    let mut emit = |item: Result<Item<'_>, ParseError>| {
        item.expect("the test's lines read")
            .into_events(source, &mut |e| {
                if let Ok(Event::Message(m)) = e {
                    out.push(m);
                }
            })
    };
    match wanted {
        Some(keys) => {
            let wanted = Wanted {
                keys,
                reasoning_lines: false,
            };
            reader.read_items_for(source, false, wanted, &mut emit)
        }
        None => reader.read_items(source, false, &mut emit),
    }
    out
}

/// An item sink that passes on the events the items stand for (`source`: the unit read): how
/// a codec that reads through items gives [`ReadFace::read`]'s events.
pub(crate) fn events<'a>(
    source: &'a Origin,
    emit: &'a mut dyn FnMut(Result<Event, ParseError>),
) -> impl FnMut(Result<Item<'_>, ParseError>) + 'a {
    move |item| match item {
        Ok(item) => item.into_events(source, emit),
        Err(e) => emit(Err(e)),
    }
}

/// A placement-rule-3 carrier (spec 6.5) whose record is still the text of its source line: a
/// JSON object that maps to no message and is carried whole. A native write copies the line; any
/// other writer asks for the [`message`](Self::message), which is exactly the carrier message
/// [`ReadFace::read`] gives for the line. Only a conversion sees these: nothing is stored or
/// compared in this form.
pub struct CarriedLine<'a> {
    parts: CarrierParts<'a>,
    make: CarrierMessage,
}

/// What a carried line's message is made from: the line and where it is, its session, the
/// session's anchor time (a record without a usable timestamp of its own is dated by it) and,
/// for a record repeating an earlier one's `uuid`, that earlier line.
#[derive(Clone, Copy)]
pub struct CarrierParts<'a> {
    pub source: &'a Origin,
    pub session: &'a SessionId,
    /// The source line, without its line break.
    pub line: &'a str,
    pub at: &'a Locator,
    pub anchor: &'a Timestamp,
    pub duplicate_of: Option<u64>,
}

/// How a codec makes a carried line's message: through the placing function its
/// [`ReadFace::read`] applies to the same line, so that both give the same message.
pub type CarrierMessage = fn(&CarrierParts<'_>) -> Message;

impl<'a> CarriedLine<'a> {
    /// The carried line `parts.line`, whose message `make` makes from `parts`.
    pub fn new(parts: CarrierParts<'a>, make: CarrierMessage) -> Self {
        Self { parts, make }
    }

    /// The session the line belongs to.
    pub fn session_id(&self) -> &SessionId {
        self.parts.session
    }

    /// The source line, without its line break.
    pub fn line(&self) -> &str {
        self.parts.line
    }

    /// The carrier message of the line.
    pub fn message(&self) -> Message {
        (self.make)(&self.parts)
    }

    /// Whether the line may be a Codex `compacted` record (its envelope's `type`, within the
    /// line's first bytes): a foreign writer that counts carriers without building them builds
    /// this one, to report it as [`COMPACTION_LOSS`] ([`is_compaction_record`] decides).
    pub fn may_be_compaction(&self) -> bool {
        // Built once: a searcher made per line cost 2.5% of a Codex conversion's instructions.
        static TYPE: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
            std::sync::LazyLock::new(|| memchr::memmem::Finder::new(br#""type":"compacted""#));
        let head = &self.parts.line.as_bytes()[..self.parts.line.len().min(160)];
        TYPE.find(head).is_some()
    }
}

/// The loss a foreign write reports for a Codex `compacted` record: the summary Codex resumes
/// from in place of the history before it. The summary is model text no other harness has a
/// form for at that place; the history before it is written whole (docs/decisions.md, "A
/// Codex compaction in a foreign write").
pub const COMPACTION_LOSS: &str = "compaction_summary";

/// Whether a carried record is a Codex `compacted` record.
pub fn is_compaction_record(record: &serde_json::Map<String, serde_json::Value>) -> bool {
    record.get("type").and_then(serde_json::Value::as_str) == Some("compacted")
}

/// The summary of a Codex `compacted` record ([`is_compaction_record`]): its `payload.message`,
/// when it says something. A foreign write into Claude Code writes it as Claude Code's own
/// compaction summary.
pub fn compaction_summary(record: &serde_json::Map<String, serde_json::Value>) -> Option<&str> {
    record
        .get("payload")
        .and_then(|p| p.get("message"))
        .and_then(serde_json::Value::as_str)
        .filter(|s| !s.trim().is_empty())
}

/// Whether `system` is a Claude Code compaction: a `system` record of subtype
/// `compact_boundary` that begins a new chain (`parentUuid` null or absent), so that Claude Code
/// resumes from it (the summary line after it and what follows), not from the history before it.
/// A foreign writer whose harness has a compaction of its own writes it there (Codex: a
/// `compacted` line).
pub fn is_compact_boundary(system: &pond_canonical::SystemMessage) -> bool {
    let Some(envelope) = claude_envelope(&system.options) else {
        return false;
    };
    let str_of = |key: &str| envelope.get(key).and_then(serde_json::Value::as_str);
    str_of("type") == Some("system")
        && str_of("subtype") == Some("compact_boundary")
        && str_of("parentUuid").is_none()
}

/// The summary of a Claude Code compaction: the text of a user message marked
/// `isCompactSummary` (the line after a [`is_compact_boundary`] one), its text parts joined.
pub fn compact_summary_text(message: &Message) -> Option<String> {
    let Message::User(user) = message else {
        return None;
    };
    let marked = claude_envelope(&user.options)
        .and_then(|e| e.get("isCompactSummary"))
        .and_then(serde_json::Value::as_bool)
        == Some(true);
    marked.then(|| summary_text(message)).flatten()
}

/// The envelope members the Claude Code reader keeps in a message's `options.source.envelope`.
fn claude_envelope(
    options: &pond_canonical::Options,
) -> Option<&serde_json::Map<String, serde_json::Value>> {
    options.get("source")?.get("envelope")?.as_object()
}

/// A summary message's text parts joined, unless blank.
fn summary_text(message: &Message) -> Option<String> {
    let text: String = message
        .part_refs()
        .into_iter()
        .filter_map(|p| match p {
            pond_canonical::PartRef::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect();
    (!text.trim().is_empty()).then_some(text)
}

/// Whether a Codex `compacted` record ([`is_compaction_record`]) keeps nothing of the history
/// before it: its `replacement_history` is an empty list (Codex resumes from the items after
/// it alone), as in the line pond writes for a Claude Code compaction.
pub fn compaction_clears_history(record: &serde_json::Map<String, serde_json::Value>) -> bool {
    record
        .get("payload")
        .and_then(|p| p.get("replacement_history"))
        .and_then(serde_json::Value::as_array)
        .is_some_and(Vec::is_empty)
}

/// The summary of an opencode compaction: the text of a finished assistant message marked
/// `summary: true` (the answer to a user message holding a `compaction` part), from which
/// opencode sends a resumed session (opencode.md 5.2), its text parts joined. A foreign writer
/// whose harness has a compaction of its own writes it there.
pub fn opencode_summary_text(message: &Message) -> Option<String> {
    let Message::Assistant(assistant) = message else {
        return None;
    };
    let info = assistant.options.get("opencode")?.get("info")?;
    let finished = info.get("summary").and_then(serde_json::Value::as_bool) == Some(true)
        && info.get("finish").is_some_and(serde_json::Value::is_string)
        && info.get("error").is_none();
    finished.then(|| summary_text(message)).flatten()
}

/// A pi compaction (pi.md section 2.3): the user message the pi reader makes of a `compaction`
/// entry, its summary the injected text. pi resumes from it: the summary (in
/// [`PI_COMPACTION_PREFIX`] and [`PI_COMPACTION_SUFFIX`]), then the entries from
/// `firstKeptEntryId` up to the compaction, then those after it (pi.md section 3). A foreign
/// writer whose harness has a compaction of its own writes it there (Codex: a `compacted` line
/// whose replacement history is that; Claude Code: a `compact_boundary` whose preserved messages
/// are the kept entries' lines; opencode: a compaction message whose `tail_start_id` is the
/// first kept entry's message).
pub struct PiCompaction<'a> {
    /// The summary, as pi wrote it in the entry.
    pub summary: &'a str,
    /// The id of the first entry pi keeps (a message of the same session), when the entry names
    /// one.
    pub first_kept: Option<&'a str>,
}

/// At most this many messages (and lines) a foreign writer remembers of a pi session for its
/// compactions (the Claude Code writer's `KeptLines`, the opencode writer's `KeptIds`); pi keeps
/// about 20,000 tokens (`keepRecentTokens`), a few dozen messages.
pub(crate) const PI_KEPT_LIMIT: usize = 1 << 16;

/// Appends `item` to a list of what is remembered for a pi compaction, the older half of the
/// list let go first when it holds [`PI_KEPT_LIMIT`].
pub(crate) fn remember_kept<T>(list: &mut Vec<T>, item: T) {
    if list.len() >= PI_KEPT_LIMIT {
        list.drain(..PI_KEPT_LIMIT / 2);
    }
    list.push(item);
}

/// The text pi puts before a compaction's summary when it sends it (pi 0.73.1,
/// `COMPACTION_SUMMARY_PREFIX` of its `dist/core/messages.js`).
pub const PI_COMPACTION_PREFIX: &str = "The conversation history before this point was compacted into the following summary:\n\n<summary>\n";
/// The text pi puts after a compaction's summary (`COMPACTION_SUMMARY_SUFFIX`).
pub const PI_COMPACTION_SUFFIX: &str = "\n</summary>";

/// The pi compaction `message` is, if it is one ([`PiCompaction`]): a user message of a pi
/// session whose entry (`options.pi.entry`, which every read of a compaction keeps) is of type
/// `compaction`, with one text part.
pub fn pi_compaction(message: &Message) -> Option<PiCompaction<'_>> {
    let Message::User(user) = message else {
        return None;
    };
    let entry = user.options.get("pi")?.get("entry")?.as_object()?;
    if entry.get("type").and_then(serde_json::Value::as_str) != Some("compaction") {
        return None;
    }
    let [pond_canonical::UserPart::Text(summary)] = user.content.as_slice() else {
        return None;
    };
    Some(PiCompaction {
        summary: summary.text.as_str(),
        first_kept: entry
            .get("firstKeptEntryId")
            .and_then(serde_json::Value::as_str),
    })
}

/// The text of a [`COMPACTION_LOSS`] for a write into `target` (a harness's name).
pub fn compaction_loss_detail(target: &str) -> String {
    format!(
        "a Codex `compacted` record (the summary Codex resumes from instead of the history \
         before it) has no {target} form: its summary text is left out, and the history before \
         it is written whole, so a resume sends all of it"
    )
}

impl<'a> CarriedLine<'a> {
    /// The line with what its message is made from, owned: to hand it to another thread (the
    /// two-thread conversion), where [`OwnedCarried::carried`] gives it back.
    pub fn to_owned(&self) -> OwnedCarried {
        let p = &self.parts;
        OwnedCarried {
            session: p.session.clone(),
            line: p.line.to_owned(),
            at: p.at.clone(),
            anchor: p.anchor.clone(),
            duplicate_of: p.duplicate_of,
            make: self.make,
        }
    }
}

/// A [`CarriedLine`] that owns its text and places (see [`CarriedLine::to_owned`]).
pub struct OwnedCarried {
    session: SessionId,
    line: String,
    at: Locator,
    anchor: Timestamp,
    duplicate_of: Option<u64>,
    make: CarrierMessage,
}

impl OwnedCarried {
    /// The carried line again, read from `source` (the source unit it was read from).
    pub fn carried<'a>(&'a self, source: &'a Origin) -> CarriedLine<'a> {
        CarriedLine::new(
            CarrierParts {
                source,
                session: &self.session,
                line: &self.line,
                at: &self.at,
                anchor: &self.anchor,
                duplicate_of: self.duplicate_of,
            },
            self.make,
        )
    }
}

/// The serialize face: makes writers. Holds no source (spec 6.1).
pub trait WriteFace: Sync {
    /// A writer for one conversion run, laying files out as `layout` says.
    fn writer(&self, layout: Layout) -> Box<dyn SessionWriter>;
}

/// Where a writer puts each session's files, as paths relative to the output root.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Layout {
    /// A native write reproduces the source's own relative paths; a foreign write uses the
    /// target harness's layout. What `pond convert --out DIR` does.
    Mirror,
    /// Always the target harness's own layout, relative to the folder it reads sessions from
    /// (`~/.claude/projects`, `~/.codex/sessions`): what `--install` writes.
    Harness,
}

/// A session a writer wrote, as the target harness will know it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Written {
    /// The canonical session it came from.
    pub source_session: String,
    /// Its id in the target harness (a writer may have to derive one, e.g. a UUID for Codex).
    pub session: String,
    /// The main file, relative to the output root.
    pub file: String,
    /// The command that resumes it in the target harness, where the harness has one.
    pub resume: Option<String>,
}

/// Whether a write reproduces a session in its own format (lossless) or in another (best effort).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Fidelity {
    /// The session's origin is this writer's codec: the write MUST be value-complete
    /// (adapter-native-restore-lossless).
    Native,
    /// Any other writer: a valid, idiomatic session of the target, with every loss reported.
    Foreign,
}

impl Fidelity {
    /// Decided by the system from the session's origin and the writer's (spec 6.3).
    pub fn decide(session: &Session, writer_source_agent: &str) -> Self {
        if session.source_agent == writer_source_agent {
            Self::Native
        } else {
            Self::Foreign
        }
    }
}

/// A streaming writer: sessions and messages arrive in event order and leave as files.
pub trait SessionWriter {
    /// A session begins (its messages follow, possibly interleaved with other sessions').
    fn session(
        &mut self,
        session: &Session,
        fidelity: Fidelity,
        target: &mut Target<'_>,
    ) -> Result<(), WriteError>;

    /// A message of a session already announced.
    fn message(&mut self, message: &Message, target: &mut Target<'_>) -> Result<(), WriteError>;

    /// A carrier of a session already announced, as its source line. A writer that reproduces
    /// the line as it is (a native write of the line's own format) copies it; the default writes
    /// the carrier's message.
    fn carried(
        &mut self,
        carried: &CarriedLine<'_>,
        target: &mut Target<'_>,
    ) -> Result<(), WriteError> {
        self.message(&carried.message(), target)
    }

    /// The keys this writer's foreign write looks for in a message's options (a model, a
    /// provider), searched at any depth: a reader of another codec may leave unbuilt every
    /// option value in which none of them occurs ([`ReadFace::read_items_for`]). Whatever the
    /// keys, a foreign write may still ask whether a message's options are empty. `None`, the
    /// default: the writer reads options whole.
    fn option_keys(&self) -> Option<&'static [&'static str]> {
        None
    }

    /// Whether this writer's foreign write takes a line of unsigned reasoning alone as its
    /// line ([`Item::Reasoning`], written by [`reasoning`](Self::reasoning)): a writer that
    /// drops such messages whole, which a reader then need not build. Asked only with
    /// [`option_keys`](Self::option_keys). `false`, the default.
    fn takes_reasoning_lines(&self) -> bool {
        false
    }

    /// A line of unsigned reasoning alone ([`ReasoningLine`]) of a session already announced.
    /// The default writes its message; a writer that drops such messages may count what it
    /// drops from the line instead, writing and reporting what it would for the message.
    fn reasoning(
        &mut self,
        line: &ReasoningLine<'_>,
        target: &mut Target<'_>,
    ) -> Result<(), WriteError> {
        self.message(&line.message(), target)
    }

    /// The end of one source unit's events: write out anything held back for it.
    fn end_source(&mut self, target: &mut Target<'_>) -> Result<(), WriteError>;
}

/// Where a writer's output goes, and where it reports what it could not express.
pub struct Target<'a> {
    /// The files being written.
    pub out: &'a mut dyn Output,
    /// What the target format could not express.
    pub losses: &'a mut Losses,
    /// The sessions written so far (a writer adds each session it writes, for resume hints).
    pub written: &'a mut Vec<Written>,
}

/// A set of files being written, addressed by relative path.
pub trait Output {
    /// Appends `bytes` to the file at `relative` (created on first use). `relative` must be a
    /// plain relative path: session data never decides where pond writes.
    fn append(&mut self, relative: &str, bytes: &[u8]) -> Result<(), WriteError>;

    /// One source unit's writes are done. A later unit may not append to a file written so far:
    /// two sources that map to one file (the same session in two source files) get
    /// [`WriteError::Exists`] for the second, never a merged file. An error here is the unit's
    /// (a file found to differ only at its end, [`crate::output::DirOutput`]).
    fn end_unit(&mut self) -> Result<(), WriteError> {
        Ok(())
    }
}

/// A write that could not be done.
#[derive(Debug)]
pub enum WriteError {
    /// A path built from session data would leave the output directory, or is not a plain name.
    UnsafePath { path: String, reason: &'static str },
    /// The file exists already; pond never overwrites.
    Exists { path: String },
    /// The file exists already with other content than this write's (an existing file with
    /// the very bytes a write would give is left as it is, and the write counts as done).
    Differs { path: String },
    /// The target format cannot hold this session at all (and so nothing of it was written).
    Unrepresentable { session: String, reason: String },
    /// The filesystem failed.
    Io { path: String, error: std::io::Error },
    /// Output that can hold only one file got a second one.
    SingleFileOnly { first: String, second: String },
}

impl fmt::Display for WriteError {
    /// The message, with every control character quoted from the input escaped.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        pond_canonical::untrusted::write_escaped(f, |f| self.describe(f))
    }
}

impl WriteError {
    /// The message as it is made, before its control characters are escaped.
    fn describe(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::UnsafePath { path, reason } => {
                write!(f, "refusing to write {path:?}: {reason}")
            }
            Self::Exists { path } => {
                write!(f, "{path} exists already; pond does not overwrite files")
            }
            Self::Differs { path } => write!(
                f,
                "{path} exists already with other content; pond does not overwrite files"
            ),
            Self::Unrepresentable { session, reason } => {
                write!(f, "session {session} cannot be written: {reason}")
            }
            Self::Io { path, error } => write!(f, "{path}: {error}"),
            Self::SingleFileOnly { first, second } => write!(
                f,
                "the conversion produces more than one file ({first}, {second}, ...): use --out DIR"
            ),
        }
    }
}

impl std::error::Error for WriteError {}

/// Checks that `relative` is a plain relative path with no way out of the directory it is joined to.
pub fn check_relative_path(relative: &str) -> Result<(), WriteError> {
    let unsafe_path = |reason| {
        Err(WriteError::UnsafePath {
            path: relative.to_owned(),
            reason,
        })
    };
    if relative.is_empty() {
        return unsafe_path("empty path");
    }
    if relative.starts_with('/') || relative.starts_with('\\') || relative.contains('\0') {
        return unsafe_path("not a relative path");
    }
    for part in relative.split(['/', '\\']) {
        match part {
            "" => return unsafe_path("empty path component"),
            "." | ".." => return unsafe_path("path component `.` or `..`"),
            p if p.contains(':') && cfg!(windows) => return unsafe_path("drive or stream name"),
            _ => {}
        }
    }
    Ok(())
}

/// What a conversion could not carry into its target, by kind (spec: the loss report).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Losses {
    /// Per kind of loss: how often, and the first place it happened.
    pub kinds: BTreeMap<String, Loss>,
}

/// One kind of loss.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Loss {
    /// How many times.
    pub count: u64,
    /// The first place: a session and message id, or a source location.
    pub first: String,
    /// What was lost, for a person.
    pub detail: String,
}

/// Where in a session a loss is, `session <id> message <id>`, for [`Losses::record`]: made
/// into text only for the first loss of a kind (formatting one per message was a few percent
/// of a conversion).
#[derive(Debug, Clone, Copy)]
pub struct At<'a> {
    session: &'a str,
    message: &'a str,
}

impl<'a> At<'a> {
    /// Message `message` of session `session`.
    pub fn new(session: &'a str, message: &'a str) -> Self {
        At { session, message }
    }

    /// `message`, of session `session` (a writer's name for the session).
    pub fn of(session: &'a str, message: &'a Message) -> Self {
        At::new(session, message.id().as_str())
    }
}

impl fmt::Display for At<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "session {} message {}", self.session, self.message)
    }
}

impl Losses {
    /// Records one loss of `kind` at `location`.
    /// Only the first of a kind is made into text (a loss may repeat for every message).
    pub fn record(&mut self, kind: &str, location: impl fmt::Display, detail: impl fmt::Display) {
        if let Some(loss) = self.kinds.get_mut(kind) {
            loss.count += 1;
            return;
        }
        let loss = Loss {
            count: 1,
            first: location.to_string(),
            detail: detail.to_string(),
        };
        self.kinds.insert(kind.to_owned(), loss);
    }

    /// Counts one more loss of `kind` if one is recorded already (the first place and text stay
    /// as they are), and says whether it did. A writer that drops every carrier reports each
    /// after the first this way, from its [`CarriedLine`] alone: the carrier's message, which
    /// would give only the first loss's place and text, is never built.
    pub fn count_again(&mut self, kind: &str) -> bool {
        match self.kinds.get_mut(kind) {
            Some(loss) => {
                loss.count += 1;
                true
            }
            None => false,
        }
    }

    /// Whether nothing was lost.
    pub fn is_empty(&self) -> bool {
        self.kinds.is_empty()
    }

    /// Adds another report's counts to this one.
    pub fn merge(&mut self, other: Losses) {
        for (kind, loss) in other.kinds {
            self.kinds
                .entry(kind)
                .and_modify(|l| l.count += loss.count)
                .or_insert(loss);
        }
    }
}

/// The check of a foreign read's shortcut from a line's tape (the codecs' `tape` modules'
/// `check_line`, run by tests and the fuzz targets): for each write face's option keys
/// (`SessionWriter::option_keys`), `pair(keys, session, anchor)` gives the message the
/// shortcut makes of the line, placed in `session` dated by `anchor`, and the one the line's
/// record makes, or `None` where the shortcut does not apply. Returns how many of the reads the
/// shortcut took; `Err` names `what`, the keys and both messages where they differ, compared as
/// values and as serialized (members and their order included).
pub(crate) fn check_shortcut(
    origin: &Origin,
    what: &str,
    mut pair: impl FnMut(
        &'static [&'static str],
        &SessionId,
        &pond_canonical::Timestamp,
    ) -> Result<Option<(Message, Message)>, String>,
) -> Result<usize, String> {
    let session = SessionId::from(origin.line_text("s1"));
    let anchor = pond_canonical::Timestamp::parse(origin.line_text("2025-11-21T10:00:00.000Z"))
        .map_err(|e| e.to_string())?;
    let mut mapped = 0;
    let keys = crate::registry::CODECS
        .iter()
        .filter_map(|codec| codec.write?.writer(Layout::Mirror).option_keys());
    for keys in keys {
        let Some((fast, made)) = pair(keys, &session, &anchor)? else {
            continue;
        };
        let (a, b) = (
            serde_json::to_string(&fast).map_err(|e| e.to_string())?,
            serde_json::to_string(&made).map_err(|e| e.to_string())?,
        );
        if a != b || fast != made {
            return Err(format!(
                "{what} mapped from its tape is not the message its record makes (keys {keys:?}):\n  tape:   {a}\n  record: {b}"
            ));
        }
        mapped += 1;
    }
    Ok(mapped)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crafted_paths_cannot_leave_the_output() {
        for bad in [
            "../../.bashrc",
            "/etc/passwd",
            "a/../../b",
            "",
            "a//b",
            "./a",
            "a\0b",
        ] {
            assert!(check_relative_path(bad).is_err(), "{bad:?} accepted");
        }
        for good in [
            "a.jsonl",
            "-Users-me-proj/4f3e.jsonl",
            "2025/06/02/rollout-x.jsonl",
        ] {
            assert!(check_relative_path(good).is_ok(), "{good:?} refused");
        }
    }
}

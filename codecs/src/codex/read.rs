//! The Codex read face: finds rollouts, reads them line by line (plain or zstd), and places every
//! line by the three rules of spec 6.5.

use super::items::{map_item, mappable, mappable_by, put};
use super::tape;
use super::{NAME, keys};
use crate::face::{CarriedLine, CarrierParts, Item, ReadFace, ReasoningLine, Sniff, Wanted};
use crate::{discover, jsonl};
use pond_canonical::bounded::bounded_object;
use pond_canonical::{
    Event, Extracted, Json, Locator, Message, MessageId, Origin, ParseError, ParseErrorKind,
    Project, Record, Session, SessionId, SystemMessage, Timestamp,
};
use serde_json::Value;
use std::io::Read;
use std::path::{Path, PathBuf};

/// The folders of a Codex home (`~/.codex`) that hold rollouts; the rest of the home
/// (`history.jsonl`, `session_index.jsonl`, the SQLite caches) is not session data.
const ROLLOUT_DIRS: [&str; 2] = ["sessions", "archived_sessions"];

/// JSONL files Codex keeps beside its rollouts that are not rollouts. This codec deliberately does
/// not ingest them (model-lossless-projection: a source not ingested at all is stated here):
/// `history.jsonl` repeats typed prompts, `session_index.jsonl` holds thread names.
const NOT_ROLLOUTS: [&str; 2] = ["history.jsonl", "session_index.jsonl"];

/// The suffix of a zstd-compressed rollout (`R-zst`).
pub(crate) const COMPRESSED_SUFFIX: &str = ".zst";

/// Reads Codex rollouts.
pub struct CodexReader;

/// Whether a file name is a rollout this codec reads.
fn is_rollout_name(name: &str) -> bool {
    (name.ends_with(".jsonl") || name.ends_with(".jsonl.zst")) && !NOT_ROLLOUTS.contains(&name)
}

fn io_error(origin: &Origin, locator: Locator, e: impl std::fmt::Display) -> ParseError {
    origin.error(
        locator,
        ParseErrorKind::Io {
            detail: e.to_string(),
        },
    )
}

impl ReadFace for CodexReader {
    fn discover(&self, input: &Path) -> Result<Vec<Origin>, ParseError> {
        if input.is_file() {
            let name = input
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            return Ok(vec![Origin::new(NAME, input, name)]);
        }
        if !input.is_dir() {
            let origin = Origin::new(NAME, input, "");
            return Err(io_error(&origin, Locator::File, "no such file or folder"));
        }
        // A whole Codex home: only its rollout folders. Any other folder: every rollout below it.
        let mut roots: Vec<PathBuf> = ROLLOUT_DIRS
            .iter()
            .map(|d| input.join(d))
            .filter(|d| d.is_dir())
            .collect();
        if roots.is_empty() {
            roots.push(input.to_owned());
        }
        let mut found = Vec::new();
        for root in roots {
            for entry in walkdir::WalkDir::new(&root).sort_by_file_name() {
                let entry = entry.map_err(|e| {
                    let at = e.path().unwrap_or(&root).to_owned();
                    io_error(&Origin::new(NAME, at, ""), Locator::File, e)
                })?;
                let name = entry.file_name().to_string_lossy();
                if !entry.file_type().is_file() || !is_rollout_name(&name) {
                    continue;
                }
                let path = entry.path();
                // Codex reads the plain rollout when both exist; the archive is a stale copy.
                if let Some(plain) = name.strip_suffix(COMPRESSED_SUFFIX)
                    && path.with_file_name(plain).is_file()
                {
                    continue;
                }
                let relative = path
                    .strip_prefix(input)
                    .unwrap_or(path)
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect::<Vec<_>>()
                    .join("/");
                found.push(Origin::new(NAME, path, relative));
            }
        }
        Ok(found)
    }

    fn sniff(&self, input: &Path) -> Sniff {
        let Ok(sources) = self.discover(input) else {
            return Sniff::No;
        };
        let Some(first) = sources.first() else {
            return Sniff::No;
        };
        let named = first
            .path()
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("rollout-"));
        let mut verdict = if named { Sniff::Yes } else { Sniff::No };
        let Ok(input) = open(first) else {
            return verdict;
        };
        let mut seen = 0;
        jsonl::read_lines(first, input.take(1 << 20), |line, bytes| {
            seen += 1;
            if seen > 16 || verdict == Sniff::Yes {
                return;
            }
            let Ok(record) = bytes.and_then(|b| Record::from_json_line(first, line, b)) else {
                return;
            };
            let envelope = record.get("payload").is_some()
                && record.str("type").is_some_and(|t| {
                    matches!(
                        *t.get(),
                        "session_meta" | "response_item" | "event_msg" | "turn_context"
                    )
                });
            verdict = if envelope || is_header(&record) {
                Sniff::Yes
            } else {
                verdict.max(Sniff::Maybe)
            };
        });
        verdict
    }

    fn read(&self, source: &Origin, emit: &mut dyn FnMut(Result<Event, ParseError>)) {
        read_rollout(
            source,
            false,
            false,
            None,
            &mut crate::face::events(source, emit),
        );
    }

    fn read_items(
        &self,
        source: &Origin,
        defer: bool,
        emit: &mut dyn FnMut(Result<Item<'_>, ParseError>),
    ) {
        read_rollout(source, true, defer, None, emit);
    }

    /// [`read_items`](ReadFace::read_items), a message's payload and envelope leftovers kept in
    /// its options only when one of the writer's keys occurs in them, and, for a writer that
    /// takes them, a `reasoning` item of the plainest shape handed over as its line
    /// ([`plain_reasoning`], [`Item::Reasoning`]).
    fn read_items_for(
        &self,
        source: &Origin,
        defer: bool,
        wanted: Wanted,
        emit: &mut dyn FnMut(Result<Item<'_>, ParseError>),
    ) {
        read_rollout(source, true, defer, Some(wanted), emit);
    }
}

/// Reads one rollout; with `raw_carriers`, the lines of an open session that are carried whole
/// are handed over as their text, and with `defer` the other lines [`survey`] vouches for as
/// their text and mapping ([`ReadFace::read_items`]). With `wanted` (a foreign write's), the
/// options are pruned to its keys, and if it takes them, plain reasoning lines are handed over
/// as their text ([`Item::Reasoning`]).
fn read_rollout(
    source: &Origin,
    raw_carriers: bool,
    defer: bool,
    wanted: Option<Wanted>,
    emit: &mut dyn FnMut(Result<Item<'_>, ParseError>),
) {
    let reasoning_lines = wanted.is_some_and(|w| w.reasoning_lines);
    let wanted = wanted.map(|w| w.keys);
    let input = match open(source) {
        Ok(input) => input,
        Err(e) => return emit(Err(e)),
    };
    let mut rollout = Rollout {
        origin: source,
        state: State::Searching,
        pending: Vec::new(),
        ids: crate::LookupSet::default(),
        records: 0,
        wanted,
    };
    let mut parser = jsonl::LineParser::default();
    jsonl::read_lines(source, input, |line, bytes| {
        // adapter-integrity-no-silent-drops: every faulty line is a located, typed error, and
        // reading goes on.
        let bytes = match bytes {
            Ok(b) => b,
            Err(e) => return emit(Err(e)),
        };
        if raw_carriers && let State::Open { session, anchor } = &rollout.state {
            // The line as its text, once a walk or the tape has found it UTF-8.
            let at = &Locator::Line(line);
            let text = || CarrierParts {
                source,
                session,
                line: jsonl::utf8(bytes).expect("the line was checked to be UTF-8"),
                at,
                anchor,
                duplicate_of: None,
            };
            if reasoning_lines && let Some((parts, encrypted)) = plain_reasoning(bytes) {
                rollout.records += 1;
                let reasoning = ReasoningLine::new(text(), carrier_message, parts, encrypted);
                return emit(Ok(Item::Reasoning(reasoning)));
            }
            match survey(line, bytes, defer) {
                Survey::Carried => {
                    rollout.records += 1;
                    return emit(Ok(Item::Carried(CarriedLine::new(text(), carrier_message))));
                }
                Survey::Deferred => {
                    rollout.records += 1;
                    let made = deferred(line, bytes, session.clone(), anchor.clone(), wanted);
                    return emit(Ok(Item::Deferred(made)));
                }
                Survey::Read => {}
            }
        }
        if let State::Open { .. } = rollout.state
            && let Some((record, output)) = output_record(source, line, bytes)
        {
            rollout.records += 1;
            return rollout.place(record, Some(output), &mut |e| emit(e.map(Item::Event)));
        }
        // A foreign write's message straight from the line's tape, where it applies.
        if let State::Open { session, .. } = &rollout.state
            && let Some(keys) = wanted
            && tape::may_map(bytes)
            && let Some(message) = parser.with_tape(bytes, |nodes| {
                tape::message(source, nodes, line, session, keys)
            })
        {
            rollout.records += 1;
            return emit(Ok(Item::Event(Event::Message(message))));
        }
        // A line of several records (`{...}{...}`) gives each of them, after a warning.
        parser.each_record(source, line, bytes, &mut |record| match record {
            Ok(record) => rollout.record(record, &mut |e| emit(e.map(Item::Event))),
            Err(e) => emit(Err(e)),
        });
    });
    rollout.finish(&mut |e| emit(e.map(Item::Event)));
}

/// The message of a line [`survey`] found carried, or of one [`plain_reasoning`] accepted:
/// what [`place_record`] makes of it, as [`ReadFace::read`] gives it.
fn carrier_message(parts: &CarrierParts<'_>) -> Message {
    let record = jsonl::record_here_at(parts.source, parts.at.clone(), parts.line.as_bytes())
        .expect("the line was checked to be a JSON object");
    let id = MessageId::from(record.position());
    place_record(
        parts.session,
        parts.anchor,
        id,
        record,
        None,
        None,
        &mut |_| {},
    )
    .expect("a carrier is always placed")
}

/// Opens a rollout, decompressing a `.jsonl.zst` archive on the fly.
fn open(origin: &Origin) -> Result<Box<dyn Read>, ParseError> {
    let file = jsonl::open(origin)?;
    if origin.path().to_string_lossy().ends_with(COMPRESSED_SUFFIX) {
        let decoder = zstd::stream::read::Decoder::new(file)
            .map_err(|e| io_error(origin, Locator::File, e))?;
        Ok(Box::new(decoder))
    } else {
        Ok(Box::new(file))
    }
}

/// Whether a record starts a session: a `session_meta` line, or a G0 bare header
/// (`{"id","timestamp",...}` with no `type`).
fn is_header(record: &Record<'_>) -> bool {
    match record.str("type").map(|t| *t.get()) {
        Some("session_meta") => record.get("payload").is_some_and(|p| p.get().is_object()),
        Some(_) => false,
        None => {
            record.get("record_type").is_none()
                && record.get("payload").is_none()
                && record.str("id").is_some()
                && record.str("timestamp").is_some()
        }
    }
}

/// Where reading one rollout stands.
enum State {
    /// No `session_meta` yet; lines are held until it comes (adapter-integrity-event-ordering).
    Searching,
    /// The session is out; `anchor` dates lines that carry no timestamp (G0).
    Open {
        session: SessionId,
        anchor: Timestamp,
    },
    /// The header was unusable and reported; the session is not converted.
    Failed,
}

/// One rollout being read.
struct Rollout<'o> {
    origin: &'o Origin,
    state: State,
    pending: Vec<Record<'o>>,
    ids: crate::LookupSet<String>,
    records: u64,
    /// A foreign write's option keys ([`map_item`]'s `wanted`).
    wanted: Option<&'static [&'static str]>,
}

impl<'o> Rollout<'o> {
    fn record(&mut self, record: Record<'o>, emit: &mut dyn FnMut(Result<Event, ParseError>)) {
        self.records += 1;
        match self.state {
            State::Searching if is_header(&record) => {
                let preceding = self.pending.len();
                match session_from_header(self.origin, record, preceding) {
                    Ok(session) => {
                        self.state = State::Open {
                            session: session.id.clone(),
                            anchor: session.created_at.clone(),
                        };
                        emit(Ok(Event::Session(session)));
                        for held in std::mem::take(&mut self.pending) {
                            self.place(held, None, emit);
                        }
                    }
                    Err(e) => {
                        emit(Err(e));
                        self.state = State::Failed;
                        self.pending.clear();
                    }
                }
            }
            State::Searching => self.pending.push(record),
            State::Open { .. } => self.place(record, None, emit),
            // The header's error covers the whole session.
            State::Failed => {}
        }
    }

    fn finish(self, emit: &mut dyn FnMut(Result<Event, ParseError>)) {
        if !matches!(self.state, State::Searching) {
            return;
        }
        let kind = if self.records == 0 {
            ParseErrorKind::Unrecognized {
                detail: "empty rollout: no records".into(),
            }
        } else {
            // Without a header there is no session id and no cwd (model-project-non-empty).
            ParseErrorKind::MissingField {
                field: "session_meta (no line names the session and its cwd)".into(),
            }
        };
        emit(Err(self.origin.error(Locator::File, kind)));
    }

    /// The id of the message a record becomes: its paginated `ordinal`, else its line
    /// (lance-deterministic-pk). An ordinal seen twice falls back to the line. Only ordinals are
    /// remembered: a line's id `L<n>` is unique and no ordinal (an integer) spells one.
    fn message_id(&mut self, record: &Record<'_>) -> MessageId {
        let ordinal = record
            .get("ordinal")
            .and_then(|o| o.as_i64())
            .map(|n| n.derive(|n| n.to_string()));
        if let Some(ordinal) = ordinal
            && self.ids.insert(ordinal.get().clone())
        {
            return MessageId::from(ordinal);
        }
        MessageId::from(record.position())
    }

    /// Places one record of an open session: a typed message or a carrier. `output`: the
    /// record's tool output as its text, when [`output_record`] made the record.
    fn place(
        &mut self,
        record: Record<'o>,
        output: Option<Json>,
        emit: &mut dyn FnMut(Result<Event, ParseError>),
    ) {
        let State::Open { session, anchor } = &self.state else {
            return;
        };
        let (session, anchor) = (session.clone(), anchor.clone());
        let id = self.message_id(&record);
        let fault = &mut |e| emit(Err(e));
        let wanted = self.wanted;
        if let Some(message) = place_record(&session, &anchor, id, record, output, wanted, fault) {
            emit(Ok(Event::Message(message)));
        }
    }
}

/// How a line of an open session is handed over by [`ReadFace::read_items`].
enum Survey {
    /// As its text, a carrier ([`Item::Carried`]).
    Carried,
    /// As its text and [`place_record`] ([`Item::Deferred`]).
    Deferred,
    /// Read here, as [`ReadFace::read`] reads it.
    Read,
}

/// What the walk of a line of an open session shows, without building its value.
///
/// A `response_item` line is walked only as far as its `type` (a tool output is most of a
/// rollout's bytes, and walking it was a seventh of a two-thread conversion's time): with
/// `defer`, it is deferred there ([`deferred`] reads it as [`ReadFace::read`] does, faults and
/// several records on a line included), unless its text may name an `ordinal`
/// ([`may_name_ordinal`]), whose id depends on the ordinals read before it (the reader's
/// state); without `defer` it is read here.
///
/// Any other line that a form handing it over as its text takes must be a JSON object serde_json
/// reads ([`jsonl::scan_strict`]: one record, no fault in reading it), with no `ordinal` (so its
/// id is its line) and a `timestamp`, if a string, that is usable (so [`place_record`] reports no
/// fault). Such a line is a carrier when it is an envelope whose `type` is not `response_item`,
/// small enough that no value in it meets the per-value bound (placement rule 3); any other is
/// deferred when `defer` asks for it.
fn survey(line: u64, bytes: &[u8], defer: bool) -> Survey {
    let small = jsonl::within_value_bound(bytes);
    if !defer && !small {
        return Survey::Read;
    }
    let item = std::cell::Cell::new(false);
    let give_up = |key: &str, text: Option<&[u8]>| {
        item.set(key == "type" && text == Some(b"response_item"));
        item.get()
    };
    let wanted = ["type", "payload", "ordinal", "timestamp"];
    let scan = jsonl::scan_strict(line, bytes, &wanted, &give_up);
    if item.get() {
        return if defer && !may_name_ordinal(bytes) {
            Survey::Deferred
        } else {
            Survey::Read
        };
    }
    let Some(scan) = scan else {
        return Survey::Read;
    };
    if scan.has("ordinal") || !scan.str("timestamp").is_none_or(Timestamp::is_valid) {
        return Survey::Read;
    }
    let carried_kind = scan.str("type").is_some_and(|k| k != "response_item");
    if small && carried_kind && scan.has("payload") {
        Survey::Carried
    } else if defer {
        Survey::Deferred
    } else {
        Survey::Read
    }
}

/// Whether a line's text may hold a member named `ordinal`: the word itself anywhere, or a `\u`
/// escape of one of its letters (`\u0061`-`\u006f` and `\u0072`), which a key may be spelled
/// with. Errs towards yes: a line it passes has no `ordinal` member at any depth.
fn may_name_ordinal(bytes: &[u8]) -> bool {
    static ORDINAL: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"ordinal"));
    ORDINAL.find(bytes).is_some()
        || jsonl::u_escapes(bytes).any(|i| {
            matches!(
                bytes.get(i + 2..i + 6),
                Some([b'0', b'0', b'6', _] | [b'0', b'0', b'7', b'2'])
            )
        })
}

/// A `reasoning` item line of the plainest shape, as Codex writes every one: `{"timestamp",
/// "type": "response_item", "payload": {"type": "reasoning", "summary": [{"type", "text"}...],
/// "content": null, "encrypted_content"}}`, those members alone, each once (`content` and
/// `encrypted_content` may be absent, `encrypted_content` may be null), every one a string
/// but `summary` and `content`; a usable `timestamp`; the line one JSON object read on the
/// fast path ([`jsonl::on_tape_here`]), within the per-value bound. Its message is then an
/// assistant message of one reasoning part per `summary` entry, none signed, and options naming
/// no model, in which `encrypted_content` is found when it is a string ([`ReasoningLine`]):
/// gives how many parts, and whether it is. `None` for any other line, which is read as it
/// would be otherwise.
fn plain_reasoning(bytes: &[u8]) -> Option<(usize, bool)> {
    use jsonl::Node;
    use simd_json::StaticNode;
    // Where Codex writes it, the payload's `type` is within the line's first bytes: any other
    // line is not parsed for nothing.
    static KIND: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::Finder::new(br#""type":"reasoning""#));
    KIND.find(&bytes[..bytes.len().min(160)])?;
    if !jsonl::within_value_bound(bytes) {
        return None;
    }
    fn string<'n>(nodes: &[Node<'n>], at: usize) -> Option<&'n str> {
        match nodes.get(at) {
            Some(Node::String(s)) => Some(*s),
            _ => None,
        }
    }
    jsonl::on_tape_here(bytes, |nodes| {
        let envelope = jsonl::tape_members(nodes, 0)?;
        let mut payload = None;
        if envelope.len() != 3 {
            return None;
        }
        for (name, at) in envelope {
            match name {
                "timestamp" => string(nodes, at)
                    .filter(|t| Timestamp::is_valid(t))
                    .map(drop)?,
                "type" => (string(nodes, at)? == "response_item").then_some(())?,
                "payload" => payload = Some(at),
                _ => return None,
            }
        }
        let (mut kind, mut parts, mut encrypted) = (false, 0, false);
        for (name, at) in jsonl::tape_members(nodes, payload?)? {
            match (name, nodes.get(at)?) {
                ("type", _) => kind = string(nodes, at)? == "reasoning",
                ("summary", _) => {
                    for item in jsonl::tape_items(nodes, at)? {
                        let members = jsonl::tape_members(nodes, item)?;
                        let text = members
                            .iter()
                            .any(|&(n, at)| n == "text" && string(nodes, at).is_some());
                        let plain = members.iter().all(|&(n, at)| {
                            matches!(n, "type" | "text") && string(nodes, at).is_some()
                        });
                        if !(text && plain) {
                            return None;
                        }
                        parts += 1;
                    }
                }
                ("content", Node::Static(StaticNode::Null)) => {}
                ("encrypted_content", Node::Static(StaticNode::Null)) => {}
                ("encrypted_content", Node::String(_)) => encrypted = true,
                _ => return None,
            }
        }
        kind.then_some((parts, encrypted))
    })
}

/// A line [`survey`] deferred: the line (a copy) and what [`ReadFace::read`] does with it in an
/// open session (each record of it placed, each fault reported, in order), so that what it
/// makes is the same on whichever thread it is made. The reader's state enters only through an
/// `ordinal`, which the survey found the line cannot hold: each record's id is its place.
fn deferred(
    line: u64,
    bytes: &[u8],
    session: SessionId,
    anchor: Timestamp,
    wanted: Option<&'static [&'static str]>,
) -> crate::face::Deferred {
    let bytes = bytes.to_vec();
    Box::new(move |origin: &Origin, emit| {
        let place = |record: Record<'_>,
                     output: Option<Json>,
                     emit: &mut dyn FnMut(Result<Message, ParseError>)| {
            let id = MessageId::from(record.position());
            let fault = &mut |e| emit(Err(e));
            let made = place_record(&session, &anchor, id, record, output, wanted, fault);
            if let Some(message) = made {
                emit(Ok(message));
            }
        };
        if let Some((record, output)) = output_record(origin, line, &bytes) {
            return place(record, Some(output), emit);
        }
        if let Some(keys) = wanted
            && tape::may_map(&bytes)
            && let Some(message) = jsonl::on_tape_here(&bytes, |nodes| {
                tape::message(origin, nodes, line, &session, keys)
            })
        {
            return emit(Ok(message));
        }
        match jsonl::record_here(origin, line, &bytes) {
            Ok(record) => place(record, None, emit),
            // A faulty line, or one of several records: read again as `read` reads it (rare,
            // so by a parser of its own).
            Err(_) => {
                let mut records = Vec::new();
                jsonl::LineParser::default()
                    .each_record(origin, line, &bytes, &mut |r| records.push(r));
                for record in records {
                    match record {
                        Ok(record) => place(record, None, emit),
                        Err(e) => emit(Err(e)),
                    }
                }
            }
        }
    })
}

/// A tool output line as its record, its output not built (the output kinds' lines are most of
/// a rollout's bytes): `{"timestamp", "type": "response_item", "payload": {"type", "call_id",
/// "output"}}`, those members alone, each once, in any order, every one a string; the output a
/// string whose JSON text is serde_json's ([`Json::from_json_text`]), which a writer then copies
/// as it is. The record's `output` is a stand-in (`null`) for the output given beside it, which
/// [`map_item`] takes in its place, so that the message is the one the record with its output
/// would make (test `an_output_line_read_by_its_text_makes_the_message_its_value_makes`). `None`
/// for any other line: it is read as a value.
fn output_record<'o>(origin: &'o Origin, line: u64, bytes: &[u8]) -> Option<(Record<'o>, Json)> {
    use jsonl::Flat;
    // Where Codex writes it, an output line names its kind in its first members: any other line
    // is not walked for nothing.
    static KIND: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"_output\""));
    KIND.find(&bytes[..bytes.len().min(160)])?;
    let text = origin.line_text(jsonl::utf8(bytes)?);
    let whole = *text.get();
    let members = jsonl::flat_object(whole)?;
    let is = |flat: &Flat<'_>, text: &str| match flat {
        Flat::String(t) => jsonl::plain(t) == Some(text),
        Flat::Object(_) => false,
    };
    if members.len() != 3 {
        return None;
    }
    let mut record = Vec::with_capacity(3);
    let mut output = None;
    for (name, value) in members {
        let value = match (name, value) {
            ("type", kind) if is(&kind, "response_item") => Value::from("response_item"),
            ("timestamp", Flat::String(json)) => Value::from(jsonl::plain(json)?),
            ("payload", Flat::Object(payload)) if payload.len() == 3 => {
                let mut map = serde_json::Map::with_capacity(3);
                for (name, json) in payload {
                    let value = match name {
                        "type" => match jsonl::plain(json)? {
                            kind @ ("function_call_output" | "custom_tool_call_output") => {
                                Value::from(kind)
                            }
                            _ => return None,
                        },
                        "call_id" => Value::from(jsonl::plain(json)?),
                        "output" => {
                            let at = json.as_ptr() as usize - whole.as_ptr() as usize;
                            let json = text.clone().derive(|l| &l[at..at + json.len()]);
                            output = Some(Json::from_json_text(json)?);
                            Value::Null
                        }
                        _ => return None,
                    };
                    map.insert(name.to_owned(), value);
                }
                Value::Object(map)
            }
            _ => return None,
        };
        record.push((name.to_owned(), value));
    }
    let record = Record::from_members(origin, Locator::Line(line), record);
    Some((record, output?))
}

/// The message `record` of `session` becomes, with id `id`: a typed message or a carrier. A
/// fault found on the way (an unusable timestamp) goes to `fault`; the message is still made.
/// With `wanted` (a foreign write's option keys), the envelope's leftovers are kept only when
/// one of them occurs there ([`map_item`]). `output`: the record's tool output as its text, when
/// [`output_record`] made the record (its `output` there is a stand-in).
pub(super) fn place_record(
    session: &SessionId,
    anchor: &Timestamp,
    id: MessageId,
    mut record: Record<'_>,
    output: Option<Json>,
    wanted: Option<&[&str]>,
    fault: &mut dyn FnMut(ParseError),
) -> Option<Message> {
    let envelope = record.get("payload").is_some() && record.str("type").is_some();
    let own = if envelope {
        match record.str("timestamp") {
            Some(text) => match Timestamp::parse(text) {
                Ok(ts) => Some(ts),
                Err(e) => {
                    fault(record.error(ParseErrorKind::InvalidField {
                        field: "timestamp".into(),
                        reason: e.to_string(),
                    }));
                    None
                }
            },
            None => None,
        }
    } else {
        None
    };
    let fallback = own.is_none();
    // model-no-synthesis: a line without its own timestamp is dated with the session anchor.
    let timestamp = own.unwrap_or_else(|| anchor.clone());
    let typed = if envelope {
        record
            .str("type")
            .is_some_and(|t| *t.get() == "response_item")
            && record
                .get("payload")
                .and_then(|p| p.get().as_object())
                .is_some_and(mappable)
    } else {
        record.get("record_type").is_none()
            && mappable_by(|k| record.get(k).map(Extracted::into_inner))
    };
    let mut message = if !typed {
        // Placement rule 3: a line that is no message (event_msg, turn_context, compacted,
        // world_state, token_usage_record, a G0 state line, an unknown kind) is carried whole.
        SystemMessage::carrier(session, id, timestamp, record.into_rest()).into()
    } else if envelope {
        let Some(Ok(payload)) = record.take("payload").map(|p| p.into_object()) else {
            return None;
        };
        if !fallback {
            record.take("timestamp");
        }
        let mut message = map_item(session, id, timestamp, payload, output, wanted);
        // The envelope's leftovers are built only when they are kept.
        if wanted.is_none_or(|keys| discover::rest_names_any(&record, keys)) {
            put(
                message.options_mut(),
                "source",
                keys::ENVELOPE,
                Value::Object(bounded_object(record.into_rest())),
            );
        }
        message
    } else {
        map_item(session, id, timestamp, record.into_rest(), None, wanted)
    };
    // Only the native writer reads `options.pond`.
    if fallback && wanted.is_none() {
        put(
            message.options_mut(),
            "pond",
            keys::TIMESTAMP_FALLBACK,
            Value::Bool(true),
        );
    }
    Some(message)
}

/// The session a header line describes.
fn session_from_header(
    origin: &Origin,
    mut record: Record<'_>,
    preceding: usize,
) -> Result<Session, ParseError> {
    let locator = record.locator().clone();
    let err = |kind| origin.error(locator.clone(), kind);
    let enveloped = record.get("payload").is_some();
    let (mut payload, envelope) = if enveloped {
        match record.take("payload").map(|p| p.into_object()) {
            Some(Ok(payload)) => (payload, Some(record.into_rest())),
            _ => {
                return Err(err(ParseErrorKind::InvalidField {
                    field: "payload".into(),
                    reason: "not an object".into(),
                }));
            }
        }
    } else {
        (record.into_rest(), None)
    };
    let field = |name: &str| {
        if enveloped {
            format!("payload.{name}")
        } else {
            name.to_owned()
        }
    };
    let mut taken: Vec<&'static str> = Vec::new();
    if !payload.get().get("id").is_some_and(Value::is_string) {
        return Err(err(ParseErrorKind::MissingField { field: field("id") }));
    }
    let Some(Ok(id)) = payload.take("id").map(|v| v.into_string()) else {
        return Err(err(ParseErrorKind::MissingField { field: field("id") }));
    };
    taken.push("id");
    // model-project-non-empty: the project is the session's cwd where the header names it, else
    // the first other place of the rollout that names it (`project_in_body`), else the one the
    // person running pond named (`--project`); with none of them the session is not converted.
    let has_cwd = payload
        .get()
        .get("cwd")
        .and_then(Value::as_str)
        .is_some_and(|c| !c.trim().is_empty());
    let mut project_from = None;
    let project = if has_cwd {
        taken.push("cwd");
        payload
            .take("cwd")
            .and_then(|v| v.into_string().ok())
            .and_then(Project::from_extracted)
    } else if let Some((cwd, place)) = project_in_body(origin) {
        project_from = Some(place);
        Project::from_extracted(cwd)
    } else {
        project_from = Some("user");
        discover::user_project(origin)
    };
    let Some(project) = project else {
        return Err(err(ParseErrorKind::NoProject));
    };
    let start = payload
        .field("timestamp")
        .and_then(|t| t.as_str())
        .and_then(|t| Timestamp::parse(t).ok());
    let created_at = match start {
        Some(ts) => {
            payload.take("timestamp");
            taken.push("timestamp");
            ts
        }
        None => envelope
            .as_ref()
            .and_then(|e| e.field("timestamp"))
            .and_then(|t| t.as_str())
            .and_then(|t| Timestamp::parse(t).ok())
            .ok_or_else(|| {
                err(ParseErrorKind::InvalidField {
                    field: field("timestamp"),
                    reason: "no RFC 3339 session start".into(),
                })
            })?,
    };
    // A fork names its parent; a paginated fork also its cut-point, the last parent ordinal it
    // keeps (`history_base.end_ordinal_exclusive`), which is that message's id. A sub-agent
    // names its parent thread.
    let forked_from = payload
        .field("forked_from_id")
        .and_then(|v| v.as_str())
        .map(SessionId::from);
    let cut_point = payload
        .field("history_base")
        .and_then(|h| h.field("end_ordinal_exclusive"))
        .or_else(|| payload.field("forked_from_ordinal_exclusive"))
        .and_then(|n| n.as_i64())
        .and_then(|n| n.derive_opt(|n| n.checked_sub(1).filter(|n| *n >= 0)))
        .map(|n| MessageId::from(n.derive(|n| n.to_string())));
    let spawned_by = payload
        .field("parent_thread_id")
        .and_then(|v| v.as_str())
        .or_else(|| {
            payload
                .field("source")
                .and_then(|s| s.pointer("/subagent/thread_spawn/parent_thread_id"))
                .and_then(|v| v.as_str())
        })
        .map(SessionId::from);

    let mut session = Session::new(SessionId::from(id), NAME, created_at, project);
    if let Some(place) = project_from {
        discover::mark_project_from(&mut session, place);
    }
    if let Some(parent) = forked_from {
        session.set_parent(parent, cut_point);
    } else if let Some(parent) = spawned_by {
        session.set_parent(parent, None);
    }
    let options = &mut session.options;
    put(
        options,
        "source",
        keys::PATH,
        Value::from(origin.relative().into_inner()),
    );
    if let Some(envelope) = envelope {
        put(
            options,
            "source",
            keys::ENVELOPE,
            Value::Object(bounded_object(envelope)),
        );
    }
    put(
        options,
        "source",
        keys::PAYLOAD,
        Value::Object(bounded_object(payload)),
    );
    put(options, "source", keys::PRECEDING, Value::from(preceding));
    put(options, "pond", keys::TAKEN, Value::from(taken));
    Ok(session)
}

/// Where a rollout whose header names no `cwd` (the early G0 format's bare header
/// `{"id","timestamp","instructions","git"}`) names its working directory, in file order: the
/// first of
/// * a `turn_context` line's `payload.cwd` (`"turn_context"`);
/// * the `<cwd>` of an `<environment_context>` block in a user message's text, as a response
///   item, a bare G0 item, or an `event_msg` `user_message` (`"environment_context"`);
/// * the folder of an `# AGENTS.md instructions for <cwd>` user message (`"agents_md"`).
///
/// The rollout is read once more for this, line by line (its header has been read, but the
/// session must precede its messages: adapter-integrity-event-ordering), and only when the header
/// names no `cwd`. Faults are left to the reading pass that reports them.
fn project_in_body(origin: &Origin) -> Option<(Extracted<String>, &'static str)> {
    let input = open(origin).ok()?;
    let mut found = None;
    let mut parser = jsonl::LineParser::default();
    jsonl::read_lines(origin, input, |line, bytes| {
        let Ok(bytes) = bytes else { return };
        if found.is_some()
            || (memchr::memmem::find(bytes, b"cwd").is_none()
                && memchr::memmem::find(bytes, AGENTS_MD.as_bytes()).is_none())
        {
            return;
        }
        if let Ok(record) = parser.record(origin, line, bytes) {
            found = project_in_record(&record);
        }
    });
    found
}

/// The heading of the user message that carries AGENTS.md (Codex 0.5x and later).
const AGENTS_MD: &str = "# AGENTS.md instructions for ";

/// The working directory one record names, and where ([`project_in_body`]).
fn project_in_record(record: &Record<'_>) -> Option<(Extracted<String>, &'static str)> {
    let kind = record.str("type").map(|t| *t.get());
    if let Some(payload) = record.get("payload") {
        return match kind {
            Some("turn_context") => payload
                .field("cwd")
                .and_then(|c| c.as_str())
                .filter(|c| !c.get().trim().is_empty())
                .map(|c| (c.to_owned(), "turn_context")),
            Some("response_item") => project_in_message(&payload),
            Some("event_msg") => {
                let user = payload
                    .field("type")
                    .and_then(|t| t.as_str())
                    .is_some_and(|t| *t.get() == "user_message");
                let text = payload.field("message").and_then(|m| m.as_str())?;
                user.then(|| project_in_text(text)).flatten()
            }
            _ => None,
        };
    }
    // A bare G0 item: the record is the item.
    if kind != Some("message") || record.str("role").is_none_or(|r| *r.get() != "user") {
        return None;
    }
    record.get("content")?.items()?.find_map(|c| {
        c.field("text")
            .and_then(|t| t.as_str())
            .and_then(project_in_text)
    })
}

/// [`project_in_record`] for a response item's payload.
fn project_in_message(item: &Extracted<&Value>) -> Option<(Extracted<String>, &'static str)> {
    let is = |key: &str, want: &str| {
        item.field(key)
            .and_then(|v| v.as_str())
            .is_some_and(|v| *v.get() == want)
    };
    if !is("type", "message") || !is("role", "user") {
        return None;
    }
    item.field("content")?.items()?.find_map(|c| {
        c.field("text")
            .and_then(|t| t.as_str())
            .and_then(project_in_text)
    })
}

/// The working directory a user message's text names: the `<cwd>` of its
/// `<environment_context>` block (XML entities decoded), or the folder of an AGENTS.md heading.
fn project_in_text(text: Extracted<&str>) -> Option<(Extracted<String>, &'static str)> {
    let t = *text.get();
    if let Some(start) = t.find("<environment_context>") {
        let rest = &t[start..];
        let open = rest.find("<cwd>")? + "<cwd>".len();
        let close = open + rest[open..].find("</cwd>")?;
        let range = start + open..start + close;
        return text
            .derive_opt(|t| Some(decode_xml_text(t[range].trim())).filter(|c| !c.is_empty()))
            .map(|c| (c, "environment_context"));
    }
    let after = t.strip_prefix(AGENTS_MD)?;
    let len = after.find('\n').unwrap_or(after.len());
    let range = AGENTS_MD.len()..AGENTS_MD.len() + len;
    text.derive_opt(|t| Some(t[range].trim().to_owned()).filter(|c| !c.is_empty()))
        .map(|c| (c, "agents_md"))
}

/// Text with the five XML entities Codex's serializer escapes (`&amp;` ...) decoded.
fn decode_xml_text(text: &str) -> String {
    if !text.contains('&') {
        return text.to_owned();
    }
    text.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&apos;", "'")
        .replace("&amp;", "&")
}

#[cfg(test)]
mod tests {
    use super::*;

    const G0_HEADER: &str = r#"{"id":"0198b2c4-5e1a-7f30-9c2d-4b6e8a0f1d27","timestamp":"2025-08-14T09:12:03.517Z","instructions":null,"git":{"branch":"main"}}"#;
    const ENVELOPE_HEADER: &str = r#"{"timestamp":"2025-10-01T10:00:00.000Z","type":"session_meta","payload":{"id":"0199aaaa-0000-7000-8000-000000000001","timestamp":"2025-10-01T10:00:00.000Z","originator":"codex_cli_rs","cli_version":"0.40.0"}}"#;

    /// Reads a rollout made of `lines` (in a scratch file named `name`), optionally with a
    /// project the person running pond named; returns its session (if any) and its faults.
    fn read(name: &str, lines: &[&str], user: Option<&str>) -> (Option<Session>, Vec<ParseError>) {
        let dir =
            std::env::temp_dir().join(format!("pond-codex-project-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("rollout-2025-08-14T09-12-03-0198b2c4.jsonl");
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
        let mut origin = Origin::new(NAME, &path, "rollout.jsonl");
        if let Some(p) = user {
            origin = origin.with_user_project(p);
        }
        let mut session = None;
        let mut faults = Vec::new();
        CodexReader.read(&origin, &mut |item| match item {
            Ok(Event::Session(s)) => session = Some(s),
            Ok(Event::Message(_)) => {}
            Err(e) => faults.push(e),
        });
        std::fs::remove_dir_all(&dir).unwrap();
        (session, faults)
    }

    fn project_of(session: &Option<Session>) -> (&str, Option<&str>) {
        let s = session.as_ref().expect("a session");
        let from = s
            .options
            .get("pond")
            .and_then(|p| p.get(crate::discover::PROJECT_FROM))
            .and_then(Value::as_str);
        (s.project.as_str(), from)
    }

    fn user_text(text: &str) -> String {
        serde_json::json!({"type":"message","role":"user","content":[{"type":"input_text","text":text}]}).to_string()
    }

    #[test]
    fn the_header_cwd_is_the_project() {
        let header = r#"{"id":"0198aaaa-bbbb-7ccc-8ddd-eeeeffff0003","timestamp":"2025-08-01T10:00:00.000Z","cwd":"/srv/a"}"#;
        let env =
            user_text("<environment_context>\n  <cwd>/srv/other</cwd>\n</environment_context>");
        let (s, faults) = read("header", &[header, &env], None);
        assert!(faults.is_empty(), "{faults:?}");
        assert_eq!(project_of(&s), ("/srv/a", None));
        let taken = s.unwrap().options["pond"][keys::TAKEN].clone();
        assert!(taken.as_array().unwrap().iter().any(|k| k == "cwd"));
    }

    #[test]
    fn an_environment_context_in_a_bare_g0_item_names_the_project() {
        let env = user_text(
            "<environment_context>\n  <cwd>/home/dev/a &amp; b</cwd>\n  <shell>bash</shell>\n</environment_context>",
        );
        let (s, faults) = read(
            "g0-env",
            &[G0_HEADER, r#"{"record_type":"state"}"#, &env],
            None,
        );
        assert!(faults.is_empty(), "{faults:?}");
        assert_eq!(
            project_of(&s),
            ("/home/dev/a & b", Some("environment_context"))
        );
        // The header had no cwd, so the native write must not add one.
        let taken = s.unwrap().options["pond"][keys::TAKEN].clone();
        assert!(!taken.as_array().unwrap().iter().any(|k| k == "cwd"));
    }

    #[test]
    fn an_environment_context_in_a_response_item_names_the_project() {
        let env = serde_json::json!({"timestamp":"2025-10-01T10:00:01.000Z","type":"response_item","payload":serde_json::from_str::<Value>(&user_text("<environment_context>\n  <cwd>/w/r</cwd>\n</environment_context>")).unwrap()}).to_string();
        let (s, faults) = read("g1-env", &[ENVELOPE_HEADER, &env], None);
        assert!(faults.is_empty(), "{faults:?}");
        assert_eq!(project_of(&s), ("/w/r", Some("environment_context")));
    }

    #[test]
    fn an_environment_context_in_a_user_message_event_names_the_project() {
        let event = r#"{"timestamp":"2025-10-01T10:00:01.000Z","type":"event_msg","payload":{"type":"user_message","message":"<environment_context>\n  <cwd>/w/ev</cwd>\n</environment_context>","kind":"environment_context"}}"#;
        let (s, faults) = read("event", &[ENVELOPE_HEADER, event], None);
        assert!(faults.is_empty(), "{faults:?}");
        assert_eq!(project_of(&s), ("/w/ev", Some("environment_context")));
    }

    #[test]
    fn a_turn_context_names_the_project() {
        let turn = r#"{"timestamp":"2025-10-01T10:00:01.000Z","type":"turn_context","payload":{"cwd":"/w/turn","model":"gpt-5"}}"#;
        let env = user_text("<environment_context>\n  <cwd>/w/later</cwd>\n</environment_context>");
        let (s, faults) = read("turn", &[ENVELOPE_HEADER, turn, &env], None);
        assert!(faults.is_empty(), "{faults:?}");
        // The first place in file order.
        assert_eq!(project_of(&s), ("/w/turn", Some("turn_context")));
    }

    #[test]
    fn an_agents_md_heading_names_the_project() {
        let agents = user_text(
            "# AGENTS.md instructions for /w/agents\n\n<INSTRUCTIONS>\nbe brief\n</INSTRUCTIONS>",
        );
        let (s, faults) = read("agents", &[G0_HEADER, &agents], None);
        assert!(faults.is_empty(), "{faults:?}");
        assert_eq!(project_of(&s), ("/w/agents", Some("agents_md")));
    }

    #[test]
    fn a_project_the_user_names_is_used_only_where_the_rollout_names_none() {
        let plain = user_text("hello");
        let (s, faults) = read("user", &[G0_HEADER, &plain], Some("/home/me/proj"));
        assert!(faults.is_empty(), "{faults:?}");
        assert_eq!(project_of(&s), ("/home/me/proj", Some("user")));
        // The rollout's own project wins over the user's.
        let env = user_text("<environment_context>\n  <cwd>/w/own</cwd>\n</environment_context>");
        let (s, _) = read("user-loses", &[G0_HEADER, &env], Some("/home/me/proj"));
        assert_eq!(project_of(&s), ("/w/own", Some("environment_context")));
    }

    #[test]
    fn a_rollout_naming_no_project_anywhere_is_refused() {
        // model-no-synthesis: pond never picks one itself.
        let plain = user_text("hello, <cwd>not in an environment context</cwd>");
        let empty = user_text("<environment_context>\n  <cwd>  </cwd>\n</environment_context>");
        let (s, faults) = read("none", &[G0_HEADER, &plain, &empty], None);
        assert!(s.is_none());
        assert_eq!(faults.len(), 1, "{faults:?}");
        assert_eq!(faults[0].kind, ParseErrorKind::NoProject);
        assert_eq!(faults[0].locator, Locator::Line(1));
    }

    /// The messages `read_items_for` (or, with `None`, `read_items`) makes of a rollout.
    fn messages(lines: &[&str], wanted: Option<&'static [&'static str]>) -> Vec<Message> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir
            .path()
            .join("rollout-2025-10-01T10-00-00-0199aaaa.jsonl");
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
        let origin = Origin::new(NAME, &path, "rollout.jsonl");
        crate::face::messages_read(&CodexReader, &origin, wanted)
    }

    #[test]
    fn a_foreign_read_makes_no_marks_only_the_native_writer_reads() {
        let header = ENVELOPE_HEADER.replace(r#""originator""#, r#""cwd":"/w","originator""#);
        let user = r#"{"timestamp":"2025-10-01T10:00:01.000Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"<user_instructions>\nbe brief\n</user_instructions>\nhello"}]}}"#;
        let call = r#"{"timestamp":"2025-10-01T10:00:02.000Z","type":"response_item","payload":{"type":"function_call","name":"shell","arguments":"not json","call_id":"c1"}}"#;
        let lines = [header.as_str(), user, call];
        let whole = messages(&lines, None);
        let pruned = messages(&lines, Some(&["model"]));
        assert_eq!(whole.len(), 2);
        assert_eq!(pruned.len(), 2);
        // The native writer's marks: what was taken, where a split text continues, a call's
        // arguments that are not JSON; and each content item's leftovers.
        assert!(whole[0].options()["pond"][keys::TAKEN].is_array());
        let text_options = |m: &Message| {
            m.part_refs()
                .iter()
                .map(|p| p.options().clone())
                .collect::<Vec<_>>()
        };
        let native = text_options(&whole[0]);
        assert!(native.len() > 1, "a provenance split: {native:?}");
        assert!(native[0]["source"].get(keys::ITEM).is_some());
        assert_eq!(native[1]["pond"][keys::CONTINUES], true);
        assert_eq!(
            text_options(&whole[1])[0]["pond"][keys::ARGUMENTS_NOT_JSON],
            true
        );
        // None of them for a foreign write whose writer looks for `model` alone; the parts are
        // the same.
        for m in &pruned {
            assert!(m.options().get("pond").is_none(), "{:?}", m.options());
            assert!(text_options(m).iter().all(|o| o.is_empty()), "{m:?}");
        }
        for (a, b) in whole.iter().zip(&pruned) {
            let strip = |m: &Message| {
                m.parts()
                    .into_iter()
                    .map(|p| {
                        let mut v = serde_json::to_value(p).unwrap();
                        v.as_object_mut().unwrap().remove("options");
                        v
                    })
                    .collect::<Vec<_>>()
            };
            assert_eq!(strip(a), strip(b));
        }
    }

    /// Every non-blank line of the shared Codex fixtures, and output lines of every shape
    /// `output_record` must take or refuse.
    fn output_lines() -> Vec<Vec<u8>> {
        let mut lines: Vec<Vec<u8>> = [
            r#"{"timestamp":"2025-10-01T10:00:02.000Z","type":"response_item","payload":{"type":"function_call_output","call_id":"c1","output":"line\nnext \"q\" \\ \u001b[0m \t é 漢 🙂"}}"#,
            r#"{"payload":{"output":"","call_id":"c1","type":"custom_tool_call_output"},"type":"response_item","timestamp":"2025-10-01T10:00:02Z"}"#,
            r#"  {"timestamp" : "2025-10-01T10:00:02Z" , "type":"response_item","payload":{ "type":"function_call_output","call_id":"c1","output":"x"} }  "#,
            // Off the path: not serde_json's escapes, a member more or twice, an escape where a
            // plain string is taken, another value, a timestamp that is no timestamp (the same
            // fault either way), two records.
            r#"{"timestamp":"2025-10-01T10:00:02Z","type":"response_item","payload":{"type":"function_call_output","call_id":"c1","output":"a\/b \u0041"}}"#,
            r#"{"timestamp":"2025-10-01T10:00:02Z","type":"response_item","payload":{"type":"function_call_output","call_id":"c1","output":"\ud83d\ude00"}}"#,
            r#"{"timestamp":"2025-10-01T10:00:02Z","type":"response_item","payload":{"type":"function_call_output","call_id":"c1","output":"x","status":"completed"}}"#,
            r#"{"timestamp":"2025-10-01T10:00:02Z","type":"response_item","payload":{"type":"function_call_output","call_id":"c1","output":"x"},"ordinal":"7"}"#,
            r#"{"timestamp":"2025-10-01T10:00:02Z","type":"response_item","payload":{"type":"function_call_output","call_id":"c1","call_id":"c2","output":"x"}}"#,
            r#"{"timestamp":"2025-10-01T10:00:02Z","type":"response_item","payload":{"type":"function_call_output","call_id":"c\u0031","output":"x"}}"#,
            r#"{"timestamp":"2025-10-01T10:00:02Z","type":"response_item","payload":{"type":"function_call_output","call_id":"c1","output":{"content":"x"}}}"#,
            r#"{"timestamp":"2025-10-01T10:00:02Z","type":"response_item","payload":{"type":"function_call","call_id":"c1","output":"x"}}"#,
            r#"{"timestamp":"2025-10-01T10:00:02Z","type":"event_msg","payload":{"type":"function_call_output","call_id":"c1","output":"x"}}"#,
            r#"{"timestamp":"yesterday","type":"response_item","payload":{"type":"function_call_output","call_id":"c1","output":"x"}}"#,
            r#"{"timestamp":"2025-10-01T10:00:02Z","type":"response_item","payload":{"type":"function_call_output","call_id":"c1","output":"x"}}{"a":1}"#,
        ]
        .iter()
        .map(|l| l.as_bytes().to_vec())
        .collect();
        lines.push(
            b"{\"timestamp\":\"2025-10-01T10:00:02Z\",\"type\":\"response_item\",\"payload\":{\"type\":\"function_call_output\",\"call_id\":\"c1\",\"output\":\"a\tb\"}}"
                .to_vec(),
        );
        lines.extend(crate::jsonl::tests::fixture_lines("codex", &[".jsonl"]));
        lines
    }

    #[test]
    fn an_output_line_read_by_its_text_makes_the_message_its_value_makes() {
        let origin = Origin::new(NAME, "/x/rollout.jsonl", "rollout.jsonl");
        let mut head = jsonl::record_here(
            &origin,
            1,
            br#"{"id":"0199aaaa","timestamp":"2025-10-01T10:00:00Z"}"#,
        )
        .unwrap();
        let session = SessionId::from(head.take_str("id").unwrap());
        let anchor = Timestamp::parse(head.str("timestamp").unwrap()).unwrap();
        let (mut taken, mut outputs) = (0, 0);
        for (i, bytes) in output_lines().iter().enumerate() {
            let line = i as u64 + 1;
            let Some((record, output)) = output_record(&origin, line, bytes) else {
                continue;
            };
            taken += 1;
            for wanted in [None, Some(&["model"][..]), Some(&[][..])] {
                let place = |record: Record<'_>, output: Option<Json>| {
                    let mut faults = Vec::new();
                    let id = MessageId::from(record.position());
                    let made =
                        place_record(&session, &anchor, id, record, output, wanted, &mut |e| {
                            faults.push(e.to_string())
                        });
                    (made, faults)
                };
                let by_text = place(record.clone(), Some(output.clone()));
                let by_value = place(jsonl::record_here(&origin, line, bytes).unwrap(), None);
                let text = String::from_utf8_lossy(bytes);
                assert_eq!(by_text, by_value, "{text}");
                let message = by_text.0.unwrap();
                let held = message.part_refs().into_iter().find_map(|p| match p {
                    pond_canonical::PartRef::ToolResult(r) => r.result.json_text(),
                    _ => None,
                });
                assert!(held.is_some(), "the output is held as its text: {text}");
                outputs += usize::from(wanted.is_none());
            }
        }
        // The three shapes above, and the real rollouts' outputs.
        assert!(taken > 100, "{taken} lines taken by their text");
        assert_eq!(taken, outputs);
        // Each line off the path is refused.
        for bytes in &output_lines()[3..15] {
            assert!(
                output_record(&origin, 1, bytes).is_none()
                    || bytes.starts_with(br#"{"timestamp":"yesterday""#),
                "{}",
                String::from_utf8_lossy(bytes)
            );
        }
    }

    /// The reasoning lines [`plain_reasoning`] hands over, and those it leaves to be read: each
    /// accepted line's counts are those of the message `read` makes of it (parts, and whether
    /// its options hold `encrypted_content`), and every shape a writer would read otherwise
    /// (a signature, a model, another member, an unusable timestamp, an `ordinal`, a member
    /// named twice, two records on one line) is refused.
    #[test]
    fn a_plain_reasoning_line_is_counted_as_its_message_is_made() {
        let line = |payload: &str| {
            format!(
                r#"{{"timestamp":"2025-10-01T10:00:01.000Z","type":"response_item","payload":{payload}}}"#
            )
        };
        let summary = r#"[{"type":"summary_text","text":"**Looking**"},{"type":"summary_text","text":"tw\u00f6"}]"#;
        let accepted = [
            (
                line(&format!(
                    r#"{{"type":"reasoning","summary":{summary},"content":null,"encrypted_content":"gAAA"}}"#
                )),
                (2, true),
            ),
            (
                line(r#"{"type":"reasoning","summary":[],"encrypted_content":null}"#),
                (0, false),
            ),
            (
                line(r#"{"summary":[{"text":"","type":"summary_text"}],"type":"reasoning"}"#),
                (1, false),
            ),
        ];
        let refused = [
            line(
                r#"{"type":"reasoning","summary":[{"type":"summary_text","text":"a","signature":"s"}]}"#,
            ),
            line(r#"{"type":"reasoning","summary":[],"model":"gpt-5"}"#),
            line(r#"{"type":"reasoning","summary":[],"id":"rs_1"}"#),
            line(r#"{"type":"reasoning","summary":[{"type":"summary_text"}]}"#),
            line(
                r#"{"type":"reasoning","summary":[],"content":[{"type":"reasoning_text","text":"a"}]}"#,
            ),
            line(r#"{"type":"reasoning","summary":[],"encrypted_content":1}"#),
            line(r#"{"type":"reasoning","type":"reasoning","summary":[]}"#),
            line(r#"{"type":"message","note":"\"type\":\"reasoning\"","summary":[]}"#),
            line(r#"{"type":"reasoning","summary":[]}"#).replace("2025-10-01T10", "yesterday"),
            line(r#"{"type":"reasoning","summary":[]}"#).replace(
                r#""type":"response_item""#,
                r#""type":"response_item","ordinal":3"#,
            ),
            format!(
                "{}{}",
                line(r#"{"type":"reasoning","summary":[]}"#),
                line(r#"{"type":"reasoning","summary":[]}"#)
            ),
            line(r#"{"type":"reasoning","summary":[]"#),
        ];
        let header = ENVELOPE_HEADER.replace(r#""originator""#, r#""cwd":"/w","originator""#);
        for (text, counts) in &accepted {
            assert_eq!(plain_reasoning(text.as_bytes()), Some(*counts), "{text}");
            let read = messages(&[header.as_str(), text], None);
            let [Message::Assistant(message)] = read.as_slice() else {
                panic!("{text}: one assistant message, not {read:?}");
            };
            assert_eq!(message.content.len(), counts.0, "{text}");
            let encrypted = message.options["source"]["payload"]
                .get("encrypted_content")
                .is_some_and(|v| !v.is_null());
            assert_eq!(encrypted, counts.1, "{text}");
        }
        for text in &refused {
            assert_eq!(plain_reasoning(text.as_bytes()), None, "{text}");
        }
    }
}

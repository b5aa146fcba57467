//! The Codex read face: finds rollouts, reads them line by line (plain or zstd), and places every
//! line by the three rules of spec 6.5.

use super::items::{map_item, mappable, put};
use super::{NAME, keys};
use crate::face::{CarriedLine, Item, ReadFace, Sniff};
use crate::jsonl;
use pond_canonical::bounded::bounded_object;
use pond_canonical::{
    Event, Locator, Message, MessageId, Origin, ParseError, ParseErrorKind, Project, Record,
    Session, SessionId, SystemMessage, Timestamp,
};
use serde_json::Value;
use std::collections::HashSet;
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
        read_rollout(source, false, &mut |item| emit(item.map(Item::into_event)));
    }

    fn read_items(&self, source: &Origin, emit: &mut dyn FnMut(Result<Item<'_>, ParseError>)) {
        read_rollout(source, true, emit);
    }
}

/// Reads one rollout; with `raw_carriers`, the lines of an open session that are carried whole
/// are handed over as their text ([`ReadFace::read_items`]).
fn read_rollout(
    source: &Origin,
    raw_carriers: bool,
    emit: &mut dyn FnMut(Result<Item<'_>, ParseError>),
) {
    let input = match open(source) {
        Ok(input) => input,
        Err(e) => return emit(Err(e)),
    };
    let mut rollout = Rollout {
        origin: source,
        state: State::Searching,
        pending: Vec::new(),
        ids: HashSet::new(),
        records: 0,
    };
    let mut parser = jsonl::LineParser::default();
    jsonl::read_lines(source, input, |line, bytes| {
        // adapter-integrity-no-silent-drops: every faulty line is a located, typed error, and
        // reading goes on.
        let bytes = match bytes {
            Ok(b) => b,
            Err(e) => return emit(Err(e)),
        };
        if raw_carriers
            && let State::Open { session, anchor } = &rollout.state
            && carried_whole(line, bytes)
        {
            rollout.records += 1;
            let message = || {
                let record = Record::from_json_line(source, line, bytes)
                    .expect("the line was checked to be a JSON object");
                let id = MessageId::from(record.position());
                place_record(session, anchor, id, record, &mut |_| {})
                    .expect("a carrier is always placed")
            };
            let text = std::str::from_utf8(bytes).expect("the line was checked to be UTF-8");
            return emit(Ok(Item::Carried(CarriedLine::new(session, text, &message))));
        }
        match parser.record(source, line, bytes) {
            Ok(record) => rollout.record(record, &mut |e| emit(e.map(Item::Event))),
            Err(e) => emit(Err(e)),
        }
    });
    rollout.finish(&mut |e| emit(e.map(Item::Event)));
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
    ids: HashSet<String>,
    records: u64,
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
                            self.place(held, emit);
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
            State::Open { .. } => self.place(record, emit),
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

    /// Places one record of an open session: a typed message or a carrier.
    fn place(&mut self, record: Record<'o>, emit: &mut dyn FnMut(Result<Event, ParseError>)) {
        let State::Open { session, anchor } = &self.state else {
            return;
        };
        let (session, anchor) = (session.clone(), anchor.clone());
        let id = self.message_id(&record);
        if let Some(message) = place_record(&session, &anchor, id, record, &mut |e| emit(Err(e))) {
            emit(Ok(Event::Message(message)));
        }
    }
}

/// Whether a line of an open session is one [`place_record`] carries whole (placement rule 3)
/// with no fault to report and with its line as its id, known without building its value: a JSON
/// object serde_json reads ([`jsonl::scan_strict`]), an envelope whose `type` is not
/// `response_item`, with no `ordinal`, whose `timestamp` (if a string) is usable, and small
/// enough that no value in it meets the per-value bound.
fn carried_whole(line: u64, bytes: &[u8]) -> bool {
    if !jsonl::within_value_bound(bytes) {
        return false;
    }
    // A `response_item` is read as a message: its line is not walked further.
    let give_up = |key: &str, text: Option<&str>| key == "type" && text == Some("response_item");
    let wanted = ["type", "payload", "ordinal", "timestamp"];
    let Some(scan) = jsonl::scan_strict(line, bytes, &wanted, &give_up) else {
        return false;
    };
    let carried_kind = scan.str("type").is_some_and(|k| k != "response_item");
    let usable_time = scan.str("timestamp").is_none_or(Timestamp::is_valid);
    carried_kind && scan.has("payload") && !scan.has("ordinal") && usable_time
}

/// The message `record` of `session` becomes, with id `id`: a typed message or a carrier. A
/// fault found on the way (an unusable timestamp) goes to `fault`; the message is still made.
fn place_record(
    session: &SessionId,
    anchor: &Timestamp,
    id: MessageId,
    mut record: Record<'_>,
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
        record.get("record_type").is_none() && mappable(record.whole().get())
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
        let rest = record.into_rest();
        let mut message = map_item(session, id, timestamp, payload);
        put(
            message.options_mut(),
            "source",
            keys::ENVELOPE,
            Value::Object(bounded_object(rest)),
        );
        message
    } else {
        map_item(session, id, timestamp, record.into_rest())
    };
    if fallback {
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
    // model-project-non-empty: the project is the session's cwd, or the session is not converted.
    let has_cwd = payload
        .get()
        .get("cwd")
        .and_then(Value::as_str)
        .is_some_and(|c| !c.trim().is_empty());
    let project = if has_cwd {
        payload
            .take("cwd")
            .and_then(|v| v.into_string().ok())
            .and_then(Project::from_extracted)
    } else {
        None
    };
    let Some(project) = project else {
        return Err(err(ParseErrorKind::NoProject));
    };
    taken.push("cwd");
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

//! pi JSONL to canonical events: the tree split into a main session and forked children (see the
//! module docs of [`super`]), each entry placed by spec 6.5:
//!
//! * `message` entries become messages by `message.role`: `user` (conversational), `assistant`
//!   (text, `thinking` as reasoning, `toolCall`), `toolResult` (a tool message, injected: tool
//!   output), `bashExecution` (a user message: the command conversational, its output injected),
//!   `custom` / `hookMessage` (extension-injected user content), `branchSummary` /
//!   `compactionSummary` (injected summaries).
//! * `compaction` and `branch_summary` entries become user messages whose summary text is injected
//!   (pi sends them to the model as user text); `custom_message` entries become user messages with
//!   injected content.
//! * every other entry (`model_change`, `thinking_level_change`, `custom`, `label`,
//!   `session_info`, types added later) maps to no message and is carried whole (rule 3).
//!
//! Leftover fields go to `options.pi`: `entry` (the entry without `id` and `message`), `message`
//! (the agent message without its content), `unmapped` (content blocks of an unknown type, with
//! their index); a block's own leftovers go to its part's `options.pi`.

use super::NAME;
use super::tape;
use crate::discover::names_any;
use crate::face::Item;
use crate::jsonl::{self, LineParser};
use pond_canonical::bounded::bounded_object;
use pond_canonical::{
    AssistantMessage, Event, Extracted, FileData, FilePart, Json, Locator, Message, MessageId,
    Origin, ParseError, ParseErrorKind, Project, Provenance, ReasoningPart, Record, Session,
    SessionId, SystemMessage, Text, TextPart, Timestamp, ToolCallPart, ToolMessage, ToolResultPart,
    UserMessage, options_ns,
};
use serde_json::{Map, Value};
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

type Emit<'a, 'i> = &'a mut dyn FnMut(Result<Item<'i>, ParseError>);

/// Whether a JSON value is a pi session header.
pub(crate) fn is_header(v: &Value) -> bool {
    v.get("type").and_then(Value::as_str) == Some("session")
        && v.get("id").is_some_and(Value::is_string)
}

/// What the first pass learns of one entry: where it is and how it hangs in the tree, without
/// its value.
#[derive(Clone)]
pub(super) struct Entry {
    pub(super) line: u64,
    /// Which record of its line the entry is: 1 but for a line of several records.
    record_in_line: u64,
    /// The entry's `id`, or its position for an entry without one (version 1).
    pub(super) id: MessageId,
    /// Whether the entry has an `id` of its own.
    has_id: bool,
    /// Index of the parent entry (`parentId`, or the previous entry for a version-1 file).
    parent: Option<usize>,
    /// The entry is its line's one record, and the first pass's walk showed the line a JSON
    /// object serde_json reads: the second pass reads the line as one record.
    whole_line: bool,
    /// Another entry follows it on its line (`{...}{...}`): its message says which record of
    /// the line it is, the first too, so a native write that writes lines as they come knows
    /// the line may hold more.
    shares_line: bool,
}

/// An entry's `parentId` as the first pass found it.
pub(super) enum ParentRef {
    /// No `parentId` member: a version-1 entry, whose parent is the entry before it.
    Absent,
    /// `null` (or any other value that is not a string): a root.
    Root,
    /// The `id` of another entry.
    Named(String),
}

/// The entry fields the first pass reads.
const TREE_FIELDS: [&str; 2] = ["id", "parentId"];

impl Entry {
    /// An entry from the first pass's walk of its line (which built none of it).
    fn surveyed(origin: &Origin, scan: &jsonl::SurveyLine<'_>) -> (Self, ParentRef) {
        let parent = match scan.str("parentId") {
            Some(id) => ParentRef::Named(id.to_owned()),
            None if scan.has("parentId") => ParentRef::Root,
            None => ParentRef::Absent,
        };
        let id = scan.extract(origin, "id");
        let entry = Entry {
            line: scan.line(),
            record_in_line: 1,
            has_id: id.is_some(),
            id: MessageId::from(id.unwrap_or_else(|| scan.position(origin))),
            parent: None,
            whole_line: true,
            shares_line: false,
        };
        (entry, parent)
    }

    /// An entry from a record the first pass had to read whole.
    pub(super) fn of_record(record: &Record<'_>) -> (Self, ParentRef) {
        let parent = match record.get("parentId") {
            None => ParentRef::Absent,
            Some(v) => match v.as_str() {
                Some(id) => ParentRef::Named(id.get().to_string()),
                None => ParentRef::Root,
            },
        };
        let (line, record_in_line) = match record.locator() {
            Locator::Line(n) => (*n, 1),
            Locator::LineRecord { line, record } => (*line, *record),
            _ => (0, 1),
        };
        let id = record.str("id");
        let entry = Entry {
            line,
            record_in_line,
            has_id: id.is_some(),
            id: match id {
                Some(id) => MessageId::from(id),
                None => MessageId::from(record.position()),
            },
            parent: None,
            whole_line: false,
            shares_line: false,
        };
        (entry, parent)
    }

    fn locator(&self) -> Locator {
        jsonl::record_locator(self.line, self.record_in_line)
    }
}

/// Reads one pi file in two passes, so that only the tree is held, never the entries: the first
/// pass reads each entry's `id` and `parentId` (walking the line without building it, when it
/// can) and reports every fault of the file; the tree then says which entries are the main line
/// and which belong to side branches; the second pass reads the file again and emits each
/// main-line entry's message as it comes, holding only the entries of side branches, whose
/// sessions follow the main one.
///
/// `defer`: a main-line entry read whole from its line is handed over as that line with its
/// mapping ([`Item::Deferred`]) rather than as its message, for a conversion to make on either
/// of its threads; and, the conversion's other thread being idle until the first message, the
/// first pass walks the lines on two threads ([`jsonl::each_line_surveyed`]).
///
/// `wanted` (a foreign write's [`SessionWriter::option_keys`]): the members of each entry's
/// `message` that neither the mapping nor the writer reads are left unbuilt
/// ([`jsonl::Prune`]), and the leftovers none of the keys occurs in stay out of options; an
/// entry that maps to no message is read whole.
///
/// [`SessionWriter::option_keys`]: crate::face::SessionWriter::option_keys
pub(crate) fn read<'o>(
    origin: &'o Origin,
    defer: bool,
    wanted: Option<&'static [&'static str]>,
    emit: Emit<'_, '_>,
) {
    let prune = wanted.map(|wanted| jsonl::Prune {
        object: "message",
        read: MESSAGE_READS,
        unread: &[],
        wanted,
    });
    // Both passes read a file of up to jsonl::HOLD_LIMIT bytes from one read into memory.
    let held = match jsonl::hold(origin) {
        Ok(h) => h,
        Err(e) => return emit(Err(e)),
    };
    let mut header: Option<Record<'o>> = None;
    let mut entries: Vec<Entry> = Vec::new();
    let mut parent_refs: Vec<ParentRef> = Vec::new();
    let mut unrecognized = false;
    let mut parser = LineParser::default();
    // An entry line the walk alone shows to be a JSON object: only its tree fields are read. The
    // walk is the pass's work; in a conversion (`defer`) the writing thread has nothing to do
    // until the first message, so the walk runs on two threads.
    let walk = |line: u64, bytes: &[u8]| {
        jsonl::scan_strict(line, bytes, &TREE_FIELDS, &|_, _| false)
            .map(|scan| Entry::surveyed(origin, &scan))
    };
    let first_pass = jsonl::each_line_surveyed(
        origin,
        held.as_deref(),
        defer,
        walk,
        |line, bytes, walked| {
            let bytes = match bytes {
                Ok(b) => b,
                Err(e) => return emit(Err(e)),
            };
            if unrecognized {
                return;
            }
            // (The header, the first record, is read whole whatever the walk made of it.)
            if header.is_some()
                && let Some((entry, parent)) = walked
            {
                entries.push(entry);
                parent_refs.push(parent);
                return;
            }
            // A line of several records (`{...}{...}`) gives each of them, after a warning.
            parser.each_record(origin, line, bytes, &mut |item| {
            if unrecognized {
                return;
            }
            match item {
                Err(e) => emit(Err(e)),
                Ok(record) => {
                    if header.is_none() {
                        let whole = Value::Object(record.whole().into_inner());
                        if is_header(&whole) {
                            header = Some(record);
                        } else {
                            unrecognized = true;
                            emit(Err(record.error(ParseErrorKind::Unrecognized {
                                detail:
                                    "not a pi session file: the first record is not a `session` header"
                                        .into(),
                            })));
                        }
                        return;
                    }
                    let (entry, parent) = Entry::of_record(&record);
                    entries.push(entry);
                    parent_refs.push(parent);
                }
            }
        });
        },
    );
    if let Err(e) = first_pass {
        return emit(Err(e));
    }
    for i in 1..entries.len() {
        if entries[i].line == entries[i - 1].line {
            entries[i - 1].shares_line = true;
        }
    }
    let Some(mut header) = header else {
        if !unrecognized {
            emit(Err(origin.error(
                Locator::File,
                ParseErrorKind::Unrecognized {
                    detail: "not a pi session file: no `session` header".into(),
                },
            )));
        }
        return;
    };

    // The tree: `parentId` where the entry has one (null: a root); the previous entry otherwise.
    let mut by_id: crate::LookupMap<&str, usize> = crate::LookupMap::default();
    for (i, e) in entries.iter().enumerate() {
        if e.has_id {
            by_id.entry(e.id.as_str()).or_insert(i);
        }
    }
    let parents: Vec<Option<usize>> = parent_refs
        .iter()
        .enumerate()
        .map(|(i, parent)| match parent {
            ParentRef::Absent => i.checked_sub(1),
            ParentRef::Root => None,
            ParentRef::Named(pid) => match by_id.get(pid.as_str()) {
                Some(&p) if p != i => Some(p),
                _ => {
                    emit(Err(origin.error(
                        entries[i].locator(),
                        ParseErrorKind::InvalidField {
                            field: "parentId".into(),
                            reason: format!(
                                "names no other entry of the file ({pid:?}); read as a root"
                            ),
                        },
                    )));
                    None
                }
            },
        })
        .collect();
    drop(by_id);
    drop(parent_refs);
    for (entry, parent) in entries.iter_mut().zip(parents) {
        entry.parent = parent;
    }
    let path_to_root = |from: usize| {
        let mut path = vec![from];
        let mut seen = BTreeSet::from([from]);
        let mut at = from;
        while let Some(p) = entries[at].parent {
            if !seen.insert(p) {
                break; // a cycle: stop rather than loop
            }
            path.push(p);
            at = p;
        }
        path
    };

    // Session: the header.
    let Some(Ok(sid)) = header.take("id").map(Extracted::into_string) else {
        return emit(Err(
            header.error(ParseErrorKind::MissingField { field: "id".into() })
        ));
    };
    let from_header = header
        .str("cwd")
        .and_then(|c| Project::from_extracted(c.to_owned()));
    // Else the project the person running pond named (`--project`), marked as theirs.
    let user_project = from_header.is_none();
    let Some(project) = from_header.or_else(|| crate::discover::user_project(origin)) else {
        return emit(Err(header.error(ParseErrorKind::NoProject)));
    };
    let created = match header.str("timestamp").map(Timestamp::parse) {
        Some(Ok(t)) => t,
        Some(Err(e)) => {
            return emit(Err(header.error(ParseErrorKind::InvalidField {
                field: "timestamp".into(),
                reason: e.to_string(),
            })));
        }
        None => {
            return emit(Err(header.error(ParseErrorKind::MissingField {
                field: "timestamp".into(),
            })));
        }
    };
    let file = origin.relative().into_inner().to_owned();
    let mut session = Session::new(
        SessionId::from(sid.clone()),
        NAME,
        created.clone(),
        project.clone(),
    );
    options_ns(&mut session.options, NAME).insert(
        "header".into(),
        Value::Object(bounded_object(header.into_rest())),
    );
    options_ns(&mut session.options, "source").insert("file".into(), Value::from(file.as_str()));
    if user_project {
        crate::discover::mark_project_from(&mut session, "user");
    }
    let main_id = session.id.clone();

    let mut main = vec![false; entries.len()];
    if let Some(last) = entries.len().checked_sub(1) {
        for i in path_to_root(last) {
            main[i] = true;
        }
    }
    // Side branches: one per leaf off the main line, in file order.
    let mut has_child = vec![false; entries.len()];
    for e in &entries {
        if let Some(p) = e.parent {
            has_child[p] = true;
        }
    }
    let mut branches: Vec<(usize, Vec<usize>, Option<usize>)> = Vec::new();
    for leaf in (0..entries.len()).filter(|i| !has_child[*i] && !main[*i]) {
        let path = path_to_root(leaf);
        let cut = path.iter().position(|i| main[*i]);
        let (own, cut) = match cut {
            Some(k) => (path[..k].to_vec(), Some(path[k])),
            None => (path, None),
        };
        branches.push((leaf, own.into_iter().rev().collect(), cut));
    }
    // How many side branches each entry is in: the second pass holds those entries' records.
    let mut uses = vec![0usize; entries.len()];
    for (_, own, _) in &branches {
        for &i in own {
            uses[i] += 1;
        }
    }

    emit(Ok(Item::Event(Event::Session(session))));
    let context = Arc::new(Context {
        session: main_id.clone(),
        anchor: created.clone(),
        file: file.clone(),
    });
    // The second pass: each main-line entry's message as it comes, in file order.
    let mut held_records: HashMap<usize, Record<'o>> = HashMap::new();
    let mut next = 0;
    let mut take = |i: usize, record: Result<Record<'o>, ParseError>, emit: Emit<'_, '_>| {
        let record = match record {
            Ok(record) => record,
            Err(_) => return emit(Err(changed(origin, entries[i].locator()))),
        };
        if main[i] {
            let m = map_entry(record, &entries[i], &main_id, &created, &file, wanted);
            emit(Ok(Item::Event(Event::Message(m))));
        } else if uses[i] > 0 {
            held_records.insert(i, record);
        }
    };
    let second_pass = jsonl::each_line(origin, held.as_deref(), |line, bytes| {
        let Ok(bytes) = bytes else { return };
        // Entries whose line did not come again: the file changed between the passes.
        while next < entries.len() && entries[next].line < line {
            emit(Err(changed(origin, entries[next].locator())));
            next += 1;
        }
        if entries.get(next).is_none_or(|e| e.line != line) {
            return;
        }
        if entries[next].whole_line {
            if defer && main[next] {
                emit(Ok(Item::Deferred(deferred(
                    bytes,
                    entries[next].clone(),
                    context.clone(),
                    prune,
                ))));
            } else {
                // A main-line entry of a foreign write, mapped from its tape where it can be.
                let made = match &prune {
                    Some(prune) if main[next] && tape::may_map(bytes) => {
                        let place = tape::Place {
                            entry: &entries[next],
                            session: &main_id,
                            anchor: &created,
                            file: &file,
                        };
                        parser.with_tape(bytes, |nodes| tape::message(origin, nodes, &place, prune))
                    }
                    _ => None,
                };
                match made {
                    Some(message) => emit(Ok(Item::Event(Event::Message(message)))),
                    None => {
                        let record = entry_record(prune.as_ref(), |p| {
                            parser.record_pruned(origin, line, bytes, p)
                        });
                        take(next, record, emit);
                    }
                }
            }
            next += 1;
            return;
        }
        parser.each_record(origin, line, bytes, &mut |item| {
            let Ok(record) = item else { return };
            let at = entries.get(next).map(Entry::locator);
            if at.as_ref() == Some(record.locator()) {
                take(next, Ok(record), emit);
                next += 1;
            }
        });
    });
    if let Err(e) = second_pass {
        return emit(Err(e));
    }
    for entry in &entries[next..] {
        emit(Err(changed(origin, entry.locator())));
    }

    for (leaf, own, cut) in branches {
        let Some(&first) = own.first() else { continue };
        let leaf_id = entries[leaf].id.to_string();
        let child_id = SessionId::from(sid.clone().derive(|s| format!("{s}#{leaf_id}")));
        let started = held_records
            .get(&first)
            .and_then(|r| r.str("timestamp"))
            .and_then(|t| Timestamp::parse(t).ok())
            .unwrap_or_else(|| created.clone());
        let mut child = Session::new(child_id.clone(), NAME, started, project.clone());
        child.set_parent(main_id.clone(), cut.map(|c| entries[c].id.clone()));
        options_ns(&mut child.options, "source").insert("file".into(), Value::from(file.as_str()));
        if user_project {
            crate::discover::mark_project_from(&mut child, "user");
        }
        emit(Ok(Item::Event(Event::Session(child))));
        for i in own {
            // An entry in several branches is cloned for all but its last.
            uses[i] -= 1;
            let record = if uses[i] == 0 {
                held_records.remove(&i)
            } else {
                held_records.get(&i).cloned()
            };
            if let Some(record) = record {
                let m = map_entry(record, &entries[i], &child_id, &created, &file, wanted);
                emit(Ok(Item::Event(Event::Message(m))));
            }
        }
    }
}

/// What every deferred message of a file is made from besides its line and entry.
struct Context {
    session: SessionId,
    anchor: Timestamp,
    file: String,
}

/// A main-line entry's message, deferred: the line (a copy) and the mapping the second pass
/// applies to it, so the message, or the fault, is the same on whichever thread it is made.
fn deferred(
    bytes: &[u8],
    entry: Entry,
    context: Arc<Context>,
    prune: Option<jsonl::Prune>,
) -> crate::face::Deferred {
    let bytes = bytes.to_vec();
    Box::new(move |origin: &Origin, emit| {
        if let Some(prune) = prune.as_ref()
            && tape::may_map(&bytes)
        {
            let place = tape::Place {
                entry: &entry,
                session: &context.session,
                anchor: &context.anchor,
                file: &context.file,
            };
            let made =
                jsonl::on_tape_here(&bytes, |nodes| tape::message(origin, nodes, &place, prune));
            if let Some(message) = made {
                return emit(Ok(message));
            }
        }
        let record = entry_record(prune.as_ref(), |p| {
            jsonl::record_here_pruned(origin, entry.line, &bytes, p)
        });
        emit(match record {
            Ok(record) => Ok(map_entry(
                record,
                &entry,
                &context.session,
                &context.anchor,
                &context.file,
                prune.as_ref().map(|p| p.wanted),
            )),
            Err(_) => Err(changed(origin, entry.locator())),
        })
    })
}

/// The members of an entry's `message` its mapping reads ([`map_record`], [`mappable`],
/// [`entry_time`]): a pruned read ([`read`]'s `wanted`) builds them whatever the writer wants.
pub(super) const MESSAGE_READS: &[&str] = &[
    "role",
    "content",
    "toolCallId",
    "toolName",
    "isError",
    "command",
    "output",
    "summary",
    "timestamp",
];

/// An entry's record, read by `read` with `prune` (`None`: whole); read again whole when the
/// entry maps to no message (its record is carried whole, placement rule 3).
pub(super) fn entry_record<'o>(
    prune: Option<&jsonl::Prune>,
    mut read: impl FnMut(Option<&jsonl::Prune>) -> Result<Record<'o>, ParseError>,
) -> Result<Record<'o>, ParseError> {
    let record = read(prune)?;
    if prune.is_none() {
        return Ok(record);
    }
    let kind = record.str("type").map(|t| *t.get()).unwrap_or_default();
    let role = record
        .pointer("/message/role")
        .and_then(|r| r.as_str())
        .map(|r| *r.get())
        .unwrap_or_default();
    if mappable(&record, kind, role) {
        Ok(record)
    } else {
        read(None)
    }
}

/// The fault of an entry the second pass did not find as the first pass saw it.
fn changed(origin: &Origin, at: Locator) -> ParseError {
    origin.error(
        at,
        ParseErrorKind::Unrecognized {
            detail: "the file changed while it was being read".into(),
        },
    )
}

/// The entry's time: its ISO `timestamp`, else its message's epoch-ms `timestamp`, else the
/// session anchor (the fallback model-no-synthesis permits).
fn entry_time(record: &Record<'_>, anchor: &Timestamp) -> Timestamp {
    record
        .str("timestamp")
        .and_then(|t| Timestamp::parse(t).ok())
        .or_else(|| {
            let ms = record.pointer("/message/timestamp")?.as_i64()?;
            Timestamp::from_unix_millis(ms).ok()
        })
        .unwrap_or_else(|| anchor.clone())
}

/// Marks where the message sits in its file, for the native write. A foreign write
/// (`foreign`: a writer's option keys given) reads no place, as none of its keys occurs in one;
/// it asks only whether the options are empty (the Codex writer's `source_options` loss), and
/// the place makes them never so. There an empty `source` stands in for it where nothing else
/// is in the options: building the place was 5% of a pi conversion into Claude Code
/// (docs/benchmarks.md, 2026-12-06, 09:53 UTC).
pub(super) fn mark_source(message: &mut Message, file: &str, entry: &Entry, foreign: bool) {
    if foreign {
        let options = message.options_mut();
        if options.is_empty() {
            options.insert("source".into(), Value::Object(Map::new()));
        }
        return;
    }
    let source = options_ns(message.options_mut(), "source");
    source.insert("file".into(), Value::from(file));
    source.insert("line".into(), Value::from(entry.line));
    if entry.record_in_line > 1 || entry.shares_line {
        // A record of a line that held several: the native write puts each on a line of its
        // own, in their order.
        source.insert("record_in_line".into(), Value::from(entry.record_in_line));
    }
    if !entry.has_id {
        source.insert("id_from_position".into(), Value::from(true));
    }
}

/// An entry's message. With `wanted` (a foreign write's option keys), the entry's and its
/// message's leftovers go to options only when one of those keys occurs in them; the source
/// place ([`mark_source`]) keeps the options from being empty, as they never are.
pub(super) fn map_entry(
    record: Record<'_>,
    entry: &Entry,
    session: &SessionId,
    anchor: &Timestamp,
    file: &str,
    wanted: Option<&[&str]>,
) -> Message {
    let timestamp = entry_time(&record, anchor);
    let mut message = map_record(record, &entry.id, session, timestamp, wanted);
    mark_source(&mut message, file, entry, wanted.is_some());
    message
}

/// What a mapping needs to keep besides the parts, and which option keys a foreign writer
/// looks for (`wanted`, as [`map_record`] is given it).
#[derive(Default)]
struct Kept<'w> {
    message: Option<Extracted<Map<String, Value>>>,
    unmapped: Vec<Value>,
    content_string: bool,
    wanted: Option<&'w [&'w str]>,
}

impl Kept<'_> {
    /// A text, tool call or file part's leftover block members (its `type`, ...) go to its
    /// options for the native write; a foreign writer reads no such part's options, so for one
    /// (`wanted`) they are kept only where one of its keys occurs ([`ReadFace::read_items_for`]:
    /// a reasoning part's options stay whole, [`set_options`]).
    ///
    /// [`ReadFace::read_items_for`]: crate::face::ReadFace::read_items_for
    fn part_options(&self, options: &mut Map<String, Value>, rest: Extracted<Map<String, Value>>) {
        if self.wanted.is_none_or(|keys| names_any(rest.get(), keys)) {
            set_options(options, rest);
        }
    }
}

fn map_record(
    mut rec: Record<'_>,
    id: &MessageId,
    session: &SessionId,
    ts: Timestamp,
    wanted: Option<&[&str]>,
) -> Message {
    let kind = rec
        .str("type")
        .map(|t| t.get().to_string())
        .unwrap_or_default();
    let carrier = |rec: Record<'_>, ts: Timestamp| -> Message {
        SystemMessage::carrier(session, id.clone(), ts, rec.into_rest()).into()
    };
    let role = rec
        .pointer("/message/role")
        .and_then(|r| r.as_str())
        .map(|r| r.get().to_string())
        .unwrap_or_default();
    if !mappable(&rec, &kind, &role) {
        // Placement rule 3: a record that maps to no message is carried whole.
        return carrier(rec, ts);
    }
    rec.take("id");
    let mut kept = Kept {
        wanted,
        ..Kept::default()
    };
    let mut message: Message = match kind.as_str() {
        "compaction" | "branch_summary" => {
            let mut m = UserMessage::new(session, id.clone(), ts);
            if let Some(summary) = rec.take_str("summary") {
                m.push(TextPart::new(
                    m.part_key(),
                    Provenance::Injected,
                    Text::from(summary),
                ));
            }
            m.into()
        }
        "custom_message" => {
            let mut m = UserMessage::new(session, id.clone(), ts);
            if let Some(content) = rec.take("content") {
                user_content(&mut m, content, Provenance::Injected, &mut kept);
            }
            m.into()
        }
        _ => {
            let Some(Ok(mut msg)) = rec.take("message").map(Extracted::into_object) else {
                // `mappable` checked the message is an object; nothing was lost by the take.
                return SystemMessage::carrier(session, id.clone(), ts, rec.into_rest()).into();
            };
            let m: Message = match role.as_str() {
                "user" | "custom" | "hookMessage" => {
                    let prov = if role == "user" {
                        Provenance::Conversational
                    } else {
                        Provenance::Injected
                    };
                    let mut m = UserMessage::new(session, id.clone(), ts);
                    if let Some(content) = msg.take("content") {
                        user_content(&mut m, content, prov, &mut kept);
                    }
                    m.into()
                }
                "assistant" => {
                    let mut m = AssistantMessage::new(session, id.clone(), ts);
                    if let Some(Ok(blocks)) = msg.take("content").map(Extracted::into_items) {
                        for (i, block) in blocks.into_iter().enumerate() {
                            assistant_block(&mut m, i, block, &mut kept);
                        }
                    }
                    m.into()
                }
                "toolResult" => {
                    let mut m = ToolMessage::new(session, id.clone(), ts);
                    let call = msg.take("toolCallId").and_then(|c| c.into_string().ok());
                    let name = match msg.field("toolName").and_then(|n| n.as_str()) {
                        Some(_) => msg.take("toolName").and_then(|n| n.into_string().ok()),
                        None => None,
                    };
                    let failed = msg
                        .field("isError")
                        .and_then(|b| b.as_bool())
                        .is_some_and(|b| b.into_inner());
                    if let (Some(call), Some(content)) = (call, msg.take("content")) {
                        // model-part-provenance: tool output is the runtime's.
                        m.push(ToolResultPart::new(
                            m.part_key(),
                            Provenance::Injected,
                            Text::from(call),
                            name.map(Text::from),
                            failed,
                            Json::from(content),
                        ));
                    }
                    m.into()
                }
                "bashExecution" => {
                    // `!cmd`: the command is the user's, its output the shell's.
                    let mut m = UserMessage::new(session, id.clone(), ts);
                    for (field, prov) in [
                        ("command", Provenance::Conversational),
                        ("output", Provenance::Injected),
                    ] {
                        if let Some(Ok(text)) = msg.take(field).map(Extracted::into_string) {
                            m.push(TextPart::new(m.part_key(), prov, Text::from(text)));
                        }
                    }
                    m.into()
                }
                _ => {
                    let mut m = UserMessage::new(session, id.clone(), ts);
                    if let Some(Ok(text)) = msg.take("summary").map(Extracted::into_string) {
                        m.push(TextPart::new(
                            m.part_key(),
                            Provenance::Injected,
                            Text::from(text),
                        ));
                    }
                    m.into()
                }
            };
            kept.message = Some(msg);
            m
        }
    };
    let wants = |map: &Map<String, Value>| wanted.is_none_or(|keys| names_any(map, keys));
    // A compaction's fields (`firstKeptEntryId`, ...) are kept whatever the writer wants: a
    // foreign writer whose harness has a compaction of its own reads them
    // (`crate::face::pi_compaction`), and the entry is rare. The leftovers are built only when
    // they are kept.
    let entry = (kind == "compaction"
        || wanted.is_none_or(|keys| crate::discover::rest_names_any(&rec, keys)))
    .then(|| rec.into_rest());
    let msg = kept
        .message
        .filter(|msg| wants(msg.get()))
        .map(|msg| match wanted {
            // Of a foreign write's leftovers, only the members its writer can find a key in.
            Some(keys) => msg.derive(|mut msg| {
                crate::discover::keep_named(&mut msg, keys);
                msg
            }),
            None => msg,
        });
    put_leftovers(&mut message, entry, msg, kept.unmapped, kept.content_string);
    message
}

/// What a mapping keeps besides the parts, into the message's options: the entry's and its
/// message's leftovers and the unmapped blocks (`options.pi`), and whether the content was a
/// string (`options.source.content`).
pub(super) fn put_leftovers(
    message: &mut Message,
    entry: Option<Extracted<Map<String, Value>>>,
    msg: Option<Extracted<Map<String, Value>>>,
    unmapped: Vec<Value>,
    content_string: bool,
) {
    if entry.is_some() || msg.is_some() || !unmapped.is_empty() {
        let pi = options_ns(message.options_mut(), NAME);
        if let Some(rest) = entry {
            pi.insert("entry".into(), Value::Object(bounded_object(rest)));
        }
        if let Some(msg) = msg {
            pi.insert("message".into(), Value::Object(bounded_object(msg)));
        }
        if !unmapped.is_empty() {
            pi.insert("unmapped".into(), Value::Array(unmapped));
        }
    }
    if content_string {
        options_ns(message.options_mut(), "source").insert("content".into(), Value::from("string"));
    }
}

/// Whether an entry maps to a message (else it is carried whole), from its `type` and its
/// message's `role`: it reads only members of `message` named in [`MESSAGE_READS`].
fn mappable(rec: &Record<'_>, kind: &str, role: &str) -> bool {
    match kind {
        "message" => match role {
            "user" | "custom" | "hookMessage" => rec
                .pointer("/message/content")
                .is_some_and(|c| is_content(c.get())),
            "assistant" => rec
                .pointer("/message/content")
                .is_some_and(|c| c.get().is_array()),
            "toolResult" => {
                rec.pointer("/message/toolCallId")
                    .is_some_and(|c| c.get().is_string())
                    && rec.pointer("/message/content").is_some()
            }
            "bashExecution" => {
                rec.pointer("/message/command")
                    .is_some_and(|c| c.get().is_string())
                    && rec
                        .pointer("/message/output")
                        .is_some_and(|c| c.get().is_string())
            }
            "branchSummary" | "compactionSummary" => rec
                .pointer("/message/summary")
                .is_some_and(|c| c.get().is_string()),
            _ => false,
        },
        "compaction" | "branch_summary" => rec.str("summary").is_some(),
        "custom_message" => rec.get("content").is_some_and(|c| is_content(c.get())),
        _ => false,
    }
}

fn is_content(v: &Value) -> bool {
    v.is_string() || v.is_array()
}

/// Keeps a block that maps to no part, with its index (placement rule 2).
fn unmapped(kept: &mut Kept, index: usize, block: Extracted<Value>) {
    let block = Json::from(block).into_value();
    kept.unmapped.push(Value::Object(Map::from_iter([
        ("index".to_owned(), Value::from(index)),
        ("block".to_owned(), block),
    ])));
}

pub(super) fn set_options(options: &mut Map<String, Value>, rest: Extracted<Map<String, Value>>) {
    options.insert(NAME.into(), Value::Object(bounded_object(rest)));
}

/// User-slot content: a string, or text and image blocks.
fn user_content(m: &mut UserMessage, content: Extracted<Value>, prov: Provenance, kept: &mut Kept) {
    let blocks = match content.into_string() {
        Ok(text) => {
            kept.content_string = true;
            m.push(TextPart::new(m.part_key(), prov, Text::from(text)));
            return;
        }
        Err(other) => match other.into_items() {
            Ok(items) => items,
            Err(_) => return,
        },
    };
    for (i, block) in blocks.into_iter().enumerate() {
        let ty = block
            .view()
            .field("type")
            .and_then(|t| t.as_str())
            .map(|t| t.get().to_string());
        let Ok(mut b) = block.into_object() else {
            continue;
        };
        match ty.as_deref() {
            Some("text") if b.field("text").is_some_and(|t| t.get().is_string()) => {
                let Some(Ok(text)) = b.take("text").map(Extracted::into_string) else {
                    continue;
                };
                let mut p = TextPart::new(m.part_key(), prov, Text::from(text));
                kept.part_options(&mut p.options, b);
                m.push(p);
            }
            Some("image") if image_ok(&b) => {
                if let Some(mut p) = image(m.part_key(), prov, &mut b) {
                    kept.part_options(&mut p.options, b);
                    m.push(p);
                }
            }
            _ => unmapped(kept, i, b.into_value()),
        }
    }
}

fn image_ok(b: &Extracted<Map<String, Value>>) -> bool {
    b.field("data").is_some_and(|d| d.get().is_string())
        && b.field("mimeType").is_some_and(|d| d.get().is_string())
}

/// An image block as a file part; `image_ok` has checked both fields are strings.
fn image(
    key: pond_canonical::PartKey,
    prov: Provenance,
    b: &mut Extracted<Map<String, Value>>,
) -> Option<FilePart> {
    let data = b.take("data")?.into_string().ok()?;
    let mime = b.take("mimeType")?.into_string().ok()?;
    Some(FilePart::new(
        key,
        prov,
        Text::from(mime),
        None,
        FileData::base64(data),
    ))
}

fn assistant_block(m: &mut AssistantMessage, i: usize, block: Extracted<Value>, kept: &mut Kept) {
    let ty = block
        .view()
        .field("type")
        .and_then(|t| t.as_str())
        .map(|t| t.get().to_string());
    let Ok(mut b) = block.into_object() else {
        return;
    };
    let has_str = |b: &Extracted<Map<String, Value>>, k: &str| {
        b.field(k).is_some_and(|v| v.get().is_string())
    };
    match ty.as_deref() {
        Some("text") if has_str(&b, "text") => {
            let Some(Ok(text)) = b.take("text").map(Extracted::into_string) else {
                return;
            };
            let mut p = TextPart::new(m.part_key(), Provenance::Conversational, Text::from(text));
            kept.part_options(&mut p.options, b);
            m.push(p);
        }
        Some("thinking") if has_str(&b, "thinking") => {
            let Some(Ok(text)) = b.take("thinking").map(Extracted::into_string) else {
                return;
            };
            let mut p =
                ReasoningPart::new(m.part_key(), Provenance::Conversational, Text::from(text));
            set_options(&mut p.options, b);
            m.push(p);
        }
        Some("toolCall")
            if has_str(&b, "id") && has_str(&b, "name") && b.field("arguments").is_some() =>
        {
            let (Some(Ok(call)), Some(Ok(name)), Some(args)) = (
                b.take("id").map(Extracted::into_string),
                b.take("name").map(Extracted::into_string),
                b.take("arguments"),
            ) else {
                return;
            };
            let mut p = ToolCallPart::new(
                m.part_key(),
                Provenance::Conversational,
                Text::from(call),
                Text::from(name),
                Json::from(args),
                false,
            );
            kept.part_options(&mut p.options, b);
            m.push(p);
        }
        Some("image") if image_ok(&b) => {
            if let Some(mut p) = image(m.part_key(), Provenance::Conversational, &mut b) {
                kept.part_options(&mut p.options, b);
                m.push(p);
            }
        }
        _ => unmapped(kept, i, b.into_value()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pi::PiReader;
    use pond_canonical::PartRef;

    const HEADER: &str = r#"{"type":"session","version":3,"id":"0f5e3c2a-1111-4222-8333-444455556666","timestamp":"2025-11-21T10:00:00.000Z","cwd":"/w"}"#;
    const USER: &str = r#"{"type":"message","id":"a1","parentId":null,"timestamp":"2025-11-21T10:00:01.000Z","message":{"role":"user","content":[{"type":"text","text":"hello"}],"timestamp":1763719201000}}"#;
    const ASSISTANT: &str = r#"{"type":"message","id":"a2","parentId":"a1","timestamp":"2025-11-21T10:00:02.000Z","message":{"role":"assistant","content":[{"type":"thinking","thinking":"hm","thinkingSignature":"sig"},{"type":"text","text":"ok","textSignature":"t"},{"type":"toolCall","id":"c1","name":"ls","arguments":{"path":"."}},{"type":"text","text":"by","model":"m-1"}],"provider":"p","model":"m"}}"#;

    fn messages(wanted: Option<&'static [&'static str]>) -> Vec<Message> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        std::fs::write(&path, [HEADER, USER, ASSISTANT].join("\n") + "\n").unwrap();
        let origin = Origin::new(NAME, &path, "s.jsonl");
        crate::face::messages_read(&PiReader, &origin, wanted)
    }

    fn part_options(m: &Message) -> Vec<Option<Value>> {
        m.part_refs()
            .iter()
            .map(|p| p.options().get(NAME).cloned())
            .collect()
    }

    #[test]
    fn a_foreign_read_puts_in_part_options_only_what_a_foreign_writer_reads() {
        let whole = messages(None);
        let pruned = messages(Some(&["model"]));
        assert_eq!(whole.len(), 2);
        assert_eq!(pruned.len(), 2);
        // The native read keeps each block's leftovers, in its order, for the native write.
        assert_eq!(
            part_options(&whole[0]),
            [Some(serde_json::json!({"type": "text"}))]
        );
        assert_eq!(
            part_options(&whole[1]),
            [
                Some(serde_json::json!({"type": "thinking", "thinkingSignature": "sig"})),
                Some(serde_json::json!({"type": "text", "textSignature": "t"})),
                Some(serde_json::json!({"type": "toolCall"})),
                Some(serde_json::json!({"type": "text", "model": "m-1"})),
            ]
        );
        // A foreign read: a reasoning part's options whole, another part's only where a key
        // the writer looks for occurs.
        assert_eq!(part_options(&pruned[0]), [None]);
        assert_eq!(
            part_options(&pruned[1]),
            [
                Some(serde_json::json!({"type": "thinking", "thinkingSignature": "sig"})),
                None,
                None,
                Some(serde_json::json!({"type": "text", "model": "m-1"})),
            ]
        );
        // The parts themselves are the same.
        for (a, b) in whole.iter().zip(&pruned) {
            let kinds = |m: &Message| {
                m.part_refs()
                    .iter()
                    .map(|p| match p {
                        PartRef::Text(t) => format!("text {}", t.text.as_str()),
                        PartRef::Reasoning(r) => format!("reasoning {}", r.text.as_str()),
                        PartRef::ToolCall(c) => {
                            format!("call {} {}", c.name.as_str(), c.params.as_value())
                        }
                        other => other.kind().to_owned(),
                    })
                    .collect::<Vec<_>>()
            };
            assert_eq!(kinds(a), kinds(b));
        }
    }

    #[test]
    fn a_foreign_read_keeps_of_a_message_only_the_members_its_writer_finds_a_key_in() {
        let whole = messages(None);
        let pruned = messages(Some(&["model"]));
        let options = |m: &Message| Value::Object(m.options().clone());
        // The native read: the message's leftovers and the entry's place in its file.
        assert_eq!(
            options(&whole[1])[NAME]["message"],
            serde_json::json!({"role": "assistant", "model": "m", "provider": "p"})
        );
        assert_eq!(options(&whole[1])["source"]["line"], 3);
        assert_eq!(options(&whole[0])["source"]["file"], "s.jsonl");
        // A foreign read: of the leftovers, only the member the writer can find its key in; no
        // place, which no foreign writer reads; and the options of a message with nothing
        // else still not empty (the Codex writer's `source_options` loss asks only that).
        assert_eq!(
            options(&pruned[1]),
            serde_json::json!({NAME: {"message": {"model": "m"}}})
        );
        assert_eq!(options(&pruned[0]), serde_json::json!({"source": {}}));
        // A member that holds the key deeper is kept whole, beside it the others are not.
        let nested = ASSISTANT.replace(
            r#""provider":"p""#,
            r#""provider":"p","usage":{"input":1},"meta":{"by":{"model":"x"},"n":2}"#,
        );
        assert_ne!(nested, ASSISTANT);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        std::fs::write(&path, [HEADER, USER, &nested].join("\n") + "\n").unwrap();
        let origin = Origin::new(NAME, &path, "s.jsonl");
        let read = crate::face::messages_read(&PiReader, &origin, Some(&["model"]));
        assert_eq!(
            options(&read[1])[NAME]["message"],
            serde_json::json!({"model": "m", "meta": {"by": {"model": "x"}, "n": 2}})
        );
    }
}

//! The Claude Code read face: finds transcripts below an input and streams their sessions.
//!
//! Layout (format reference §1): `~/.claude/projects/<encoded cwd>/<session id>.jsonl`, with
//! sub-agent transcripts in three eras:
//!
//! 1. inline: `isSidechain: true` records inside the main file. Each chain (a root with
//!    `parentUuid: null` and the records hanging off it), or each `agentId`, becomes a child
//!    session `<session id>/sidechain-<root uuid>` or `<session id>/agent-<agentId>`;
//! 2. flat: `<project>/agent-<id>.jsonl` beside the main file;
//! 3. nested: `<project>/<session id>/subagents/agent-<id>.jsonl`, with an optional
//!    `agent-<id>.meta.json` sidecar (a [`companion`](ReadFace::companions), carried in the
//!    session's `options.source.sidecar` so a native write re-creates it).
//!
//! An `agent-*.jsonl` file is one child session `<parent session id>/agent-<id>`, its parent the
//! `sessionId` its records carry. Every session records its file's path relative to the input in
//! `options.source.path`, which is where a native write puts it again.
//!
//! A file is read twice: a survey pass (which decodes only the envelope fields it needs, see
//! [`jsonl::survey_fields`]) assigns each line to its session and finds each session's
//! project (`cwd`, model-project-non-empty) and creation time, so that the `Session` event can
//! precede its messages (adapter-integrity-event-ordering) without holding the file in memory;
//! the second pass places every record and reports every fault. In a two-thread conversion
//! (`read_items` with `defer`) a record's mapping may cross to the writing thread: the record
//! goes parsed, with the tool names its results need, taken in line order here.

use super::CODEC_NAME;
use super::records::{self, LineContext};
use crate::face::{CarriedLine, CarrierParts, Item, ReadFace, Sniff};
use crate::jsonl;
use pond_canonical::bounded::bounded_object;
use pond_canonical::{
    Event, Extracted, Locator, Origin, ParseError, ParseErrorKind, Project, Record, Session,
    SessionId, Timestamp, options_ns,
};
use serde_json::Value;
use std::collections::HashMap;
use std::io::BufRead;
use std::path::Path;
use std::sync::{Arc, Mutex};

/// Reads Claude Code transcripts: one file, a project folder, or a whole projects tree.
pub struct ClaudeCodeReader;

impl ReadFace for ClaudeCodeReader {
    fn discover(&self, input: &Path) -> Result<Vec<Origin>, ParseError> {
        let io_error = |path: &Path, detail: String| {
            Origin::new(CODEC_NAME, path, "").error(Locator::File, ParseErrorKind::Io { detail })
        };
        let meta = std::fs::metadata(input).map_err(|e| io_error(input, e.to_string()))?;
        if meta.is_file() {
            let name = input
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            return Ok(vec![Origin::new(CODEC_NAME, input, name)]);
        }
        let mut found = Vec::new();
        for entry in walkdir::WalkDir::new(input).sort_by_file_name() {
            let entry = entry.map_err(|e| {
                let path = e.path().unwrap_or(input).to_owned();
                io_error(&path, e.to_string())
            })?;
            if !entry.file_type().is_file() || !is_transcript(entry.path()) {
                continue;
            }
            let Ok(relative) = entry.path().strip_prefix(input) else {
                continue;
            };
            let relative: Vec<String> = relative
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            found.push(Origin::new(CODEC_NAME, entry.path(), relative.join("/")));
        }
        // A session's file before its `<sid>/subagents/` folder, so parents come first.
        found.sort_by_cached_key(|o| {
            let rel = o.relative().into_inner();
            rel.strip_suffix(".jsonl").unwrap_or(rel).to_owned()
        });
        Ok(found)
    }

    fn sniff(&self, input: &Path) -> Sniff {
        if input.is_dir() {
            let files = walkdir::WalkDir::new(input)
                .max_depth(3)
                .sort_by_file_name()
                .into_iter()
                .filter_map(Result::ok)
                .filter(|e| e.file_type().is_file() && is_transcript(e.path()))
                .take(4);
            return files
                .map(|e| sniff_file(e.path()))
                .max()
                .unwrap_or(Sniff::No);
        }
        if is_transcript(input) {
            sniff_file(input)
        } else {
            Sniff::No
        }
    }

    fn read(&self, source: &Origin, emit: &mut dyn FnMut(Result<Event, ParseError>)) {
        read_source(
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
        read_source(source, true, defer, None, emit);
    }

    /// [`read_items`](ReadFace::read_items), a turn's `toolUseResult` and the members of its
    /// `message` the mapping does not read (`usage`, `id`, `stop_reason`, ...) left unbuilt
    /// where none of the writer's keys occurs in them ([`jsonl::Prune`]).
    fn read_items_for(
        &self,
        source: &Origin,
        defer: bool,
        wanted: crate::Wanted,
        emit: &mut dyn FnMut(Result<Item<'_>, ParseError>),
    ) {
        let prune = jsonl::Prune {
            object: "message",
            read: MESSAGE_READS,
            unread: &["toolUseResult"],
            wanted: wanted.keys,
        };
        read_source(source, true, defer, Some(&prune), emit);
    }

    fn companions(&self, source: &Origin) -> Vec<Origin> {
        sidecar_of(source)
            .filter(|s| s.path().is_file())
            .into_iter()
            .collect()
    }
}

/// Whether `path` names a JSONL transcript.
fn is_transcript(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "jsonl")
}

/// Whether the file's name marks a sub-agent transcript (eras 2 and 3).
fn is_agent_file(source: &Origin) -> bool {
    source
        .path()
        .file_name()
        .is_some_and(|n| n.to_string_lossy().starts_with("agent-"))
}

/// `agent-<id>.meta.json` beside `agent-<id>.jsonl`.
fn sidecar_of(source: &Origin) -> Option<Origin> {
    if !is_agent_file(source) {
        return None;
    }
    let relative = source.relative().into_inner().strip_suffix(".jsonl")?;
    let path = source.path().to_string_lossy();
    let path = path.strip_suffix(".jsonl")?;
    Some(Origin::new(
        CODEC_NAME,
        format!("{path}.meta.json"),
        format!("{relative}.meta.json"),
    ))
}

/// Looks at the first lines of a file for Claude Code's own markers.
fn sniff_file(path: &Path) -> Sniff {
    let Ok(file) = std::fs::File::open(path) else {
        return Sniff::No;
    };
    let mut verdict = Sniff::No;
    let reader = std::io::BufReader::new(std::io::Read::take(file, 1 << 20));
    for line in reader.lines().take(8) {
        let Ok(line) = line else { break };
        let line = line.strip_prefix('\u{feff}').unwrap_or(&line);
        let Ok(Value::Object(map)) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        let typed = map.get("type").and_then(Value::as_str).is_some();
        if typed && (map.contains_key("sessionId") || map.contains_key("leafUuid")) {
            return Sniff::Yes;
        }
        if typed {
            verdict = Sniff::Maybe;
        }
    }
    verdict
}

/// What the survey learns about one session of a file.
struct Group {
    /// What makes the group a session of its own.
    kind: GroupKind,
    /// The first `cwd` among its records.
    project: Option<Extracted<String>>,
    /// The first usable `timestamp` among its records.
    created_at: Option<Timestamp>,
    /// The first `sessionId` among its records (an agent file's parent).
    session_ref: Option<Extracted<String>>,
    /// Records repeating a `uuid` seen earlier in the file (adapter-integrity-dedup).
    duplicates: u64,
    /// The first line of the group.
    first_line: u64,
}

enum GroupKind {
    /// The file's own session (the trunk, or the agent of an agent file).
    File,
    /// Inline sidechain records of one `agentId`.
    Agent(Extracted<String>),
    /// An inline sidechain chain without `agentId`, named by its root's uuid or position.
    Chain(Extracted<String>),
}

impl Group {
    fn new(kind: GroupKind, first_line: u64) -> Self {
        Self {
            kind,
            project: None,
            created_at: None,
            session_ref: None,
            duplicates: 0,
            first_line,
        }
    }
}

/// The survey of a file: its groups, and for each record line its group and, for a repeated
/// uuid, the line that had it first.
struct Survey {
    groups: Vec<Group>,
    /// By line number less one; `None` for a line the survey could not read.
    lines: Vec<Option<SurveyedLine>>,
    /// The records of each line that holds several (`{...}{...}`), in order; `None` for one the
    /// survey could not read.
    several: HashMap<u64, Vec<Option<SurveyedLine>>>,
    /// Records the survey read, and the first of them that is Claude Code's: one with a `uuid` or
    /// a `sessionId`, or of a record type Claude Code writes ([`CLAUDE_CODE_TYPES`]).
    records: u64,
    claude_code: bool,
    /// The first record's `type`, for the error when none is Claude Code's.
    first_type: Option<String>,
    /// For a streamed file: the (randomly seeded) hash of each line's bytes
    /// ([`SurveyedLine::digest`]). A line the second pass reads with the same hash is taken to
    /// be the line walked (a file changed between the passes into a line of the same hash under
    /// a seed it cannot know: a chance of 2^-64); any other is walked again.
    digest: Option<foldhash::quality::RandomState>,
}

/// The record types Claude Code writes (the union the claude-code-viewer schema accepts,
/// ../shared/formats/claude-code.md). A file none of whose records is of one of these or carries
/// a `uuid` or `sessionId` is some other harness's (a pi session, a Codex rollout), refused
/// whole rather than stored as a session of carried records.
const CLAUDE_CODE_TYPES: &[&str] = &[
    "user",
    "assistant",
    "summary",
    "system",
    "file-history-snapshot",
    "queue-operation",
    "progress",
    "custom-title",
    "ai-title",
    "agent-name",
    "agent-setting",
    "permission-mode",
    "mode",
    "pr-link",
    "last-prompt",
    "bridge-session",
    "attachment",
];

/// What the survey learned about one line.
#[derive(Clone, Copy)]
struct SurveyedLine {
    group: usize,
    /// The earlier line with the same `uuid` (adapter-integrity-dedup).
    duplicate_of: Option<u64>,
    /// Whether the line is carried whole as it is (see [`carried_as_is`]).
    carried: bool,
    /// Of a line of a streamed file (read again by the second pass): a hash of its bytes
    /// ([`Survey::digest`]), by which the second pass knows it is the line that was walked
    /// without walking it again.
    digest: Option<u64>,
    /// Whether its `type` is `user`: a turn that names no call, so its mapping needs nothing
    /// of the lines after it and may be made from its line on either thread ([`raw_user_turn`]).
    user: bool,
}

/// The envelope fields the survey reads.
const SURVEY_FIELDS: [&str; 8] = [
    "type",
    "isSidechain",
    "agentId",
    "parentUuid",
    "uuid",
    "cwd",
    "timestamp",
    "sessionId",
];

/// The first pass over a file: its groups (sessions) and what each line is. With `two_threads`
/// (a conversion, whose writing thread has nothing to do until the first message) the walk of
/// the lines, the pass's work, runs on two threads ([`jsonl::each_line_surveyed`]).
fn survey(source: &Origin, held: Option<&[u8]>, two_threads: bool) -> Result<Survey, ParseError> {
    // A held file's second pass reads the bytes the first walked; a streamed one reads it again.
    let digest = held.is_none().then(foldhash::quality::RandomState::default);
    let agent_file = is_agent_file(source);
    let mut groups = vec![Group::new(GroupKind::File, 1)];
    let mut lines = Vec::new();
    let mut several = HashMap::new();
    let mut uuid_group: HashMap<String, (usize, u64), foldhash::fast::RandomState> =
        HashMap::default();
    let mut agent_group: HashMap<String, usize> = HashMap::new();
    let (mut records, mut claude_code, mut first_type) = (0u64, false, None);
    // What the survey learns from one record (a line, or one of several records on a line).
    let mut one = |line: u64, scan: &jsonl::SurveyLine<'_>, carried: bool, digest: Option<u64>| {
        records += 1;
        if !claude_code {
            let kind = scan.str("type");
            claude_code = scan.has("uuid")
                || scan.has("sessionId")
                || kind.is_some_and(|t| CLAUDE_CODE_TYPES.contains(&t));
            if records == 1 {
                first_type = kind.map(str::to_owned);
            }
        }
        let sidechain = scan.bool("isSidechain") == Some(true);
        let group = if agent_file || !sidechain {
            0
        } else if let Some(agent) = scan.str("agentId") {
            let next = groups.len();
            let g = *agent_group.entry(agent.to_owned()).or_insert(next);
            if g == next {
                let name = scan.extract(source, "agentId").expect("read above");
                groups.push(Group::new(GroupKind::Agent(name), line));
            }
            g
        } else {
            let parent = scan
                .str("parentUuid")
                .and_then(|p| uuid_group.get(p))
                .map(|(g, _)| *g)
                .filter(|g| *g != 0);
            match parent {
                Some(g) => g,
                None => {
                    let name = scan
                        .extract(source, "uuid")
                        .unwrap_or_else(|| scan.position(source));
                    groups.push(Group::new(GroupKind::Chain(name), line));
                    groups.len() - 1
                }
            }
        };
        let mut duplicate_of = None;
        if let Some(uuid) = scan.str("uuid").filter(|u| !u.is_empty()) {
            match uuid_group.get(uuid) {
                Some((_, first)) => duplicate_of = Some(*first),
                None => {
                    uuid_group.insert(uuid.to_owned(), (group, line));
                }
            }
        }
        let g = &mut groups[group];
        if duplicate_of.is_some() {
            g.duplicates += 1;
        }
        if g.project.is_none() && scan.str("cwd").is_some_and(|c| !c.trim().is_empty()) {
            g.project = scan.extract(source, "cwd");
        }
        if g.created_at.is_none()
            && let Some(text) = scan.extract(source, "timestamp")
        {
            g.created_at = Timestamp::parse(text.as_ref().derive(|t| t.as_str())).ok();
        }
        if g.session_ref.is_none() {
            g.session_ref = scan.extract(source, "sessionId");
        }
        SurveyedLine {
            group,
            duplicate_of,
            carried,
            digest,
            user: scan.str("type") == Some("user"),
        }
    };
    // Only the envelope fields the survey needs are decoded; the rest is skipped unbuilt.
    // Whether the line is carried as its text is a reading of the line alone: made by the walk,
    // on whichever thread walks it.
    // (For a line of a streamed file, the hash of its bytes too.)
    let walk = |line: u64, bytes: &[u8]| {
        let scan = jsonl::survey_fields(line, bytes, &SURVEY_FIELDS)?;
        let carried = carried_as_is(&scan, bytes);
        let hash = digest
            .as_ref()
            .map(|d| std::hash::BuildHasher::hash_one(d, bytes));
        Some((carried, hash, scan.detach(bytes)))
    };
    jsonl::each_line_surveyed(source, held, two_threads, walk, |line, bytes, walked| {
        // A line the second pass will reject (not JSON, not an object) is skipped here too.
        let Ok(bytes) = bytes else { return };
        let Some((carried, hash, scan)) = walked.map(|(c, h, w)| (c, h, w.attach(bytes))) else {
            // A line of several records (`{...}{...}`): each is a record of its own, and none
            // is carried as its text (the line is not one record).
            if let Some(pieces) = jsonl::records_on_line(bytes) {
                let records = pieces
                    .iter()
                    .enumerate()
                    .map(|(i, piece)| {
                        let scan = jsonl::survey_fields(line, piece, &SURVEY_FIELDS)?;
                        Some(one(line, &scan.of_record(i as u64 + 1), false, None))
                    })
                    .collect();
                several.insert(line, records);
            }
            return;
        };
        let surveyed = one(line, &scan, carried, hash);
        let at = usize::try_from(line - 1).expect("a line number fits in memory");
        if lines.len() <= at {
            lines.resize(at + 1, None);
        }
        lines[at] = Some(surveyed);
    })?;
    Ok(Survey {
        groups,
        lines,
        several,
        records,
        claude_code,
        first_type,
        digest,
    })
}

impl Survey {
    /// Whether the second pass carries line `line` (`bytes`, surveyed as `surveyed`) as its
    /// text. A held file's lines are the bytes the survey saw, so its verdict stands; a streamed
    /// file is read again: the survey's verdict on a line stands if its bytes hash as they did
    /// ([`Survey::digest`]); a line that hashes otherwise is walked again.
    fn carried(&self, line: u64, surveyed: Option<SurveyedLine>, bytes: &[u8], held: bool) -> bool {
        if held {
            return surveyed.is_some_and(|s| s.carried);
        }
        if let Some(s) = surveyed
            && let (Some(digest), Some(hasher)) = (s.digest, &self.digest)
            && std::hash::BuildHasher::hash_one(hasher, bytes) == digest
        {
            return s.carried;
        }
        // A turn is never carried: its line is not walked past its `type`.
        jsonl::scan_strict(line, bytes, &["type", "timestamp"], &turn_type)
            .is_some_and(|scan| carried_as_is(&scan, bytes))
    }
}

/// One session being read: made once its first record comes, or refused with an error.
enum Slot {
    Pending,
    Open { id: SessionId, anchor: Timestamp },
    Refused,
}

/// The members of a turn's `message` the mapping reads ([`records::placement`], `turn`).
const MESSAGE_READS: &[&str] = &["content", "model"];

fn read_source(
    source: &Origin,
    raw_carriers: bool,
    defer: bool,
    prune: Option<&jsonl::Prune>,
    emit: &mut dyn FnMut(Result<Item<'_>, ParseError>),
) {
    // Both passes read a file of up to jsonl::HOLD_LIMIT bytes from one read into memory.
    let held = match jsonl::hold(source) {
        Ok(h) => h,
        Err(e) => return emit(Err(e)),
    };
    let survey = match survey(source, held.as_deref(), defer) {
        Ok(s) => s,
        Err(e) => return emit(Err(e)),
    };
    if survey.records > 0 && !survey.claude_code {
        let detail = format!(
            "no record is Claude Code's: none has a `uuid` or `sessionId` or a Claude Code record \
             type (the first record's type: {}); name the file's harness with --from",
            survey
                .first_type
                .as_deref()
                .map_or_else(|| "none".to_owned(), |t| format!("`{t}`"))
        );
        return emit(Err(
            source.error(Locator::File, ParseErrorKind::Unrecognized { detail })
        ));
    }
    let mut slots: Vec<Slot> = survey.groups.iter().map(|_| Slot::Pending).collect();
    let mut tool_names = HashMap::new();
    // With `defer`, the calls the assistant turns name, each with the record that named it, for
    // the user turns handed over as their lines ([`raw_user_turn`]).
    let log: Option<Arc<NameLog>> = defer.then(Default::default);
    let mut seq = 0u64;
    let mut parser = jsonl::LineParser::default();
    // Places one record: `record` is `None` for a line carried as its text (`bytes`), or, with
    // `raw`, for a user turn handed over as its line.
    let mut place = |at: Locator,
                     bytes: &[u8],
                     surveyed: Option<SurveyedLine>,
                     record: Option<pond_canonical::Record<'_>>,
                     raw: bool,
                     emit: &mut dyn FnMut(Result<Item<'_>, ParseError>)| {
        seq += 1;
        let Some(SurveyedLine {
            group,
            duplicate_of,
            ..
        }) = surveyed
        else {
            // The file changed between the two passes.
            let kind = ParseErrorKind::Unrecognized {
                detail: "the file changed while it was being read".into(),
            };
            return emit(Err(source.error(at, kind)));
        };
        if let Slot::Pending = slots[group] {
            let mut emit_event = |item: Result<Event, ParseError>| emit(item.map(Item::Event));
            slots[group] = open_session(source, &survey.groups, group, &mut emit_event);
        }
        let Slot::Open { id, anchor } = &slots[group] else {
            return;
        };
        if raw
            && let Some(log) = &log
            && let Locator::Line(number) = at
        {
            return emit(Ok(Item::Deferred(raw_user_turn(
                RawTurn {
                    number,
                    line: bytes.to_vec(),
                    session: id.clone(),
                    anchor: anchor.clone(),
                    duplicate_of,
                    seq,
                    prune: prune.copied(),
                },
                log.clone(),
            ))));
        }
        let Some(record) = record else {
            // Checked by `carried_as_is` to be a JSON object placed whole: the message is what the
            // record path below gives, built only if a writer asks for it.
            let parts = CarrierParts {
                source,
                session: id,
                line: jsonl::utf8(bytes).expect("the line was checked to be UTF-8"),
                at: &at,
                anchor,
                duplicate_of,
            };
            return emit(Ok(Item::Carried(CarriedLine::new(parts, carrier_message))));
        };
        if let Some(log) = &log {
            log.learn(&record, seq);
        }
        if defer && timestamp_faultless(&record) {
            // `defer`: the mapping is handed over with the parsed record, for a conversion to
            // make on either thread. What it needs of the lines before it (the names of the calls
            // its results answer) is taken here, in line order; its timestamp gives no fault.
            let wanted = records::tool_names_ahead(&record, &mut tool_names);
            let (session, anchor) = (id.clone(), anchor.clone());
            return emit(Ok(Item::Parsed(deferred(
                record,
                session,
                anchor,
                duplicate_of,
                wanted,
                prune.map(|p| p.wanted),
            ))));
        }
        let mut ctx = LineContext {
            session: id,
            anchor,
            duplicate_of,
            tool_names: &mut tool_names,
            wanted: prune.map(|p| p.wanted),
        };
        let (message, errors) = records::place(record, &mut ctx);
        for e in errors {
            emit(Err(e));
        }
        emit(Ok(Item::Event(Event::Message(message))));
    };
    let read = jsonl::each_line(source, held.as_deref(), |line, bytes| {
        // adapter-integrity-no-silent-drops: every bad line is a located, typed error.
        let bytes = match bytes {
            Ok(b) => b,
            Err(e) => return emit(Err(e)),
        };
        let surveyed = usize::try_from(line - 1)
            .ok()
            .and_then(|at| survey.lines.get(at).copied().flatten());
        let carrier = raw_carriers && survey.carried(line, surveyed, bytes, held.is_some());
        if carrier {
            return place(Locator::Line(line), bytes, surveyed, None, false, emit);
        }
        // A user turn is parsed where it is mapped, on either thread.
        if defer && surveyed.is_some_and(|s| s.user) {
            return place(Locator::Line(line), bytes, surveyed, None, true, emit);
        }
        let fault = match parser.record_pruned(source, line, bytes, prune) {
            Ok(record) => {
                return place(
                    Locator::Line(line),
                    bytes,
                    surveyed,
                    Some(record),
                    false,
                    emit,
                );
            }
            Err(fault) => fault,
        };
        // A line of several records (`{...}{...}`): a warning, then each record in order, as
        // the survey saw them.
        let Some(pieces) = jsonl::records_on_line(bytes) else {
            return emit(Err(fault));
        };
        emit(Err(jsonl::several_records(source, line, pieces.len())));
        let surveyed = survey.several.get(&line);
        for (i, piece) in pieces.into_iter().enumerate() {
            let at = jsonl::record_locator(line, i as u64 + 1);
            match parser.record_at(source, at.clone(), piece) {
                Ok(record) => {
                    let s = surveyed.and_then(|s| s.get(i).copied().flatten());
                    place(at, piece, s, Some(record), false, emit);
                }
                Err(e) => emit(Err(e)),
            }
        }
    });
    if let Err(e) = read {
        emit(Err(e));
    }
}

/// The calls assistant turns name, each with the place (a count of the records before it) of
/// the turn that named it: what a user turn handed over as its line looks its tool results'
/// calls up in, as they stood at its own place, whenever it is made.
#[derive(Default)]
struct NameLog(Mutex<HashMap<String, Namings>>);

/// Each naming of one call id: the place of the turn that named it, and the name.
type Namings = Vec<(u64, Extracted<String>)>;

impl NameLog {
    /// Learns the calls `record` (the `seq`th record) names, as [`records::tool_names_ahead`]
    /// learns them.
    fn learn(&self, record: &Record<'_>, seq: u64) {
        let mut names = self.0.lock().expect("no panic holds the log");
        records::tool_names_via(
            record,
            &mut |id, name| {
                names
                    .entry(id.to_owned())
                    .or_default()
                    .push((seq, name.clone()))
            },
            &|_| None,
        );
    }

    /// The name the call `id` had before the `seq`th record.
    fn before(&self, id: &str, seq: u64) -> Option<Extracted<String>> {
        let names = self.0.lock().expect("no panic holds the log");
        let named = names.get(id)?;
        named
            .iter()
            .rev()
            .find(|(at, _)| *at < seq)
            .map(|(_, name)| name.clone())
    }
}

/// A user turn handed over as its line ([`raw_user_turn`]): the line alone on its line number.
struct RawTurn {
    number: u64,
    line: Vec<u8>,
    session: SessionId,
    anchor: Timestamp,
    duplicate_of: Option<u64>,
    seq: u64,
    prune: Option<jsonl::Prune>,
}

/// A user turn's message, deferred as its line (`read_items` with `defer`, as an
/// [`Item::Deferred`]): the line is parsed and mapped on whichever thread makes it, its tool
/// results named from `log` as the calls stood at its place, its faults given before it as
/// [`ReadFace::read`] gives them. A line that is no longer a user turn when it is parsed (the
/// file changed since the survey) is a fault, not a turn placed without the names it names.
fn raw_user_turn(turn: RawTurn, log: Arc<NameLog>) -> crate::face::Deferred {
    Box::new(move |origin: &Origin, emit| {
        let RawTurn {
            number,
            line,
            session,
            anchor,
            duplicate_of,
            seq,
            prune,
        } = turn;
        let record = match jsonl::record_here_pruned(origin, number, &line, prune.as_ref()) {
            Ok(record) => record,
            Err(e) => return emit(Err(e)),
        };
        if record.str("type").map(|t| *t.get()) != Some("user") {
            let kind = ParseErrorKind::Unrecognized {
                detail: "the file changed while it was being read".into(),
            };
            return emit(Err(origin.error(Locator::Line(number), kind)));
        }
        let mut tool_names =
            records::tool_names_via(&record, &mut |_, _| {}, &|id| log.before(id, seq));
        let mut ctx = LineContext {
            session: &session,
            anchor: &anchor,
            duplicate_of,
            tool_names: &mut tool_names,
            wanted: prune.map(|p| p.wanted),
        };
        let (message, errors) = records::place(record, &mut ctx);
        for e in errors {
            emit(Err(e));
        }
        emit(Ok(message));
    })
}

/// Whether placing `record` reports no fault: its timestamp, the one thing
/// [`records::place`] can find at fault, is absent or usable.
fn timestamp_faultless(record: &Record<'_>) -> bool {
    let mut faults = Vec::new();
    records::record_timestamp(record, &mut faults);
    faults.is_empty()
}

/// A record's message, deferred (`read_items` with `defer`, as an [`Item::Parsed`]): the record
/// as parsed, and the
/// names of the calls its results answer ([`records::tool_names_ahead`]), so the message is the
/// one [`ReadFace::read`] gives on whichever thread, and in whichever order, it is made.
fn deferred(
    record: Record<'_>,
    session: SessionId,
    anchor: Timestamp,
    duplicate_of: Option<u64>,
    mut tool_names: HashMap<String, Extracted<String>>,
    keys: Option<&'static [&'static str]>,
) -> crate::face::Deferred {
    let record = record.detach();
    Box::new(move |origin: &Origin, emit| {
        let record = record.attach(origin);
        let mut ctx = LineContext {
            session: &session,
            anchor: &anchor,
            duplicate_of,
            tool_names: &mut tool_names,
            wanted: keys,
        };
        // `timestamp_faultless` held: no fault to report.
        emit(Ok(records::place(record, &mut ctx).0))
    })
}

/// The message of a line [`carried_as_is`] passed: what [`records::place`] makes of it, as
/// [`ReadFace::read`] gives it.
fn carrier_message(parts: &CarrierParts<'_>) -> pond_canonical::Message {
    let record = jsonl::record_here_at(parts.source, parts.at.clone(), parts.line.as_bytes())
        .expect("the line was checked to be a JSON object");
    let mut ctx = LineContext {
        session: parts.session,
        anchor: parts.anchor,
        duplicate_of: parts.duplicate_of,
        tool_names: &mut HashMap::new(),
        wanted: None,
    };
    records::place(record, &mut ctx).0
}

/// Whether a record's `type` makes it a turn, which [`carried_as_is`] never carries.
fn is_turn(kind: Option<&[u8]>) -> bool {
    matches!(kind, Some(b"user" | b"assistant" | b"system"))
}

/// For the walk of a line: a turn's `type` ends it (the line is not carried whole).
fn turn_type(key: &str, text: Option<&[u8]>) -> bool {
    key == "type" && is_turn(text)
}

/// Whether a line whose top-level `type` and `timestamp` the non-building walk read is a record
/// [`records::place`] carries whole (placement rule 3) with no fault to report: a JSON object the
/// walk alone proves, of a `type` that is no turn, whose `timestamp` (if any) is usable, within
/// the per-value bound.
fn carried_as_is(scan: &jsonl::SurveyLine<'_>, bytes: &[u8]) -> bool {
    let turn = is_turn(scan.str("type").map(str::as_bytes));
    let usable_time = match scan.str("timestamp") {
        Some(t) => Timestamp::is_valid(t),
        None => !scan.has("timestamp"),
    };
    scan.is_strict() && jsonl::within_value_bound(bytes) && !turn && usable_time
}

/// Emits the `Session` of `group`, or the error that refuses it.
fn open_session(
    source: &Origin,
    groups: &[Group],
    group: usize,
    emit: &mut dyn FnMut(Result<Event, ParseError>),
) -> Slot {
    let g = &groups[group];
    let trunk = &groups[0];
    let at = Locator::Line(g.first_line);
    // model-project-non-empty: the project is the records' `cwd`; an inline sidechain without
    // one belongs to its file's trunk, whose `cwd` is real data of the same file.
    let project = g
        .project
        .clone()
        .or_else(|| match g.kind {
            GroupKind::File => None,
            _ => trunk.project.clone(),
        })
        .and_then(Project::from_extracted);
    // Else the project the person running pond named (`--project`), marked as theirs.
    let user_project = project.is_none();
    let Some(project) = project.or_else(|| crate::discover::user_project(source)) else {
        emit(Err(source.error(at, ParseErrorKind::NoProject)));
        return Slot::Refused;
    };
    let Some(created_at) = g.created_at.clone() else {
        emit(Err(source.error(
            at,
            ParseErrorKind::MissingField {
                field: "timestamp (no record of the session has one)".into(),
            },
        )));
        return Slot::Refused;
    };
    let Some(stem) = source.file_stem() else {
        emit(Err(source.error(
            Locator::File,
            ParseErrorKind::Unrecognized {
                detail: "the file name has no stem to name the session by".into(),
            },
        )));
        return Slot::Refused;
    };
    let (id, parent, kind): (Extracted<String>, Option<Extracted<String>>, &str) = match &g.kind {
        GroupKind::File if is_agent_file(source) => {
            // The parent is the `<sid>` of a `<sid>/subagents/` folder (the layout is the
            // structural link), else the trunk `sessionId` the records carry (flat era).
            let parent = nested_parent(source).or_else(|| g.session_ref.clone());
            let id = match &parent {
                Some(p) => p.as_ref().derive(|p| format!("{p}/{}", stem.get())),
                None => stem.clone(),
            };
            (id, parent, "subagent")
        }
        GroupKind::File => (stem.clone(), None, "main"),
        GroupKind::Agent(agent) => (
            stem.as_ref()
                .derive(|s| format!("{s}/agent-{}", agent.get())),
            Some(stem.clone()),
            "inline_agent",
        ),
        GroupKind::Chain(root) => (
            stem.as_ref()
                .derive(|s| format!("{s}/sidechain-{}", root.get())),
            Some(stem.clone()),
            "inline_sidechain",
        ),
    };
    let id = SessionId::from(id);
    let mut session = Session::new(id.clone(), super::SOURCE_AGENT, created_at.clone(), project);
    if let Some(parent) = parent {
        // A plain spawn: parent session only, no cut-point (spec 4.5).
        session.set_parent(SessionId::from(parent), None);
    }
    if user_project {
        crate::discover::mark_project_from(&mut session, "user");
    }
    let options = options_ns(&mut session.options, "source");
    options.insert(
        "path".into(),
        Value::from(source.relative().into_inner().to_owned()),
    );
    options.insert("kind".into(), kind.into());
    if g.duplicates > 0 {
        // adapter-integrity-dedup: visible in the session, the lines themselves kept.
        options.insert("duplicate_uuids".into(), Value::from(g.duplicates));
    }
    if matches!(g.kind, GroupKind::File)
        && let Some(sidecar) = sidecar_of(source)
        && sidecar.path().is_file()
    {
        match read_sidecar(&sidecar) {
            Ok(value) => {
                options.insert(
                    "sidecar".into(),
                    serde_json::json!({
                        "path": sidecar.relative().into_inner(),
                        "value": value,
                    }),
                );
            }
            Err(e) => emit(Err(e)),
        }
    }
    emit(Ok(Event::Session(session)));
    Slot::Open {
        id,
        anchor: created_at,
    }
}

/// `<sid>` of `<sid>/subagents/agent-<id>.jsonl`, from the relative path.
fn nested_parent(source: &Origin) -> Option<Extracted<String>> {
    source.relative().derive_opt(|r| {
        let mut parts = r.rsplit('/');
        let _file = parts.next()?;
        (parts.next()? == "subagents").then_some(())?;
        parts.next().map(str::to_owned)
    })
}

/// The sidecar's JSON object, bounded like any options value.
fn read_sidecar(sidecar: &Origin) -> Result<Value, ParseError> {
    let bytes = std::fs::read(sidecar.path()).map_err(|e| {
        sidecar.error(
            Locator::File,
            ParseErrorKind::Io {
                detail: e.to_string(),
            },
        )
    })?;
    let value: Value = serde_json::from_slice(&bytes).map_err(|e| {
        sidecar.error(
            Locator::File,
            ParseErrorKind::InvalidJson {
                detail: e.to_string(),
            },
        )
    })?;
    let record = Record::from_value(sidecar, Locator::File, value)?;
    Ok(Value::Object(bounded_object(record.into_rest())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pond_canonical::Message;

    /// The messages `read_items_for` (or, with `None`, `read_items`) makes of `lines`.
    fn messages(lines: &str, wanted: Option<&'static [&'static str]>) -> Vec<Message> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        std::fs::write(&path, lines).unwrap();
        let origin = Origin::new(CODEC_NAME, &path, "s.jsonl");
        crate::face::messages_read(&ClaudeCodeReader, &origin, wanted)
    }

    #[test]
    fn a_streamed_line_is_carried_unwalked_only_as_the_survey_walked_it() {
        let carried = r#"{"type":"progress","data":{"n":1},"uuid":"p1","sessionId":"s","cwd":"/p","timestamp":"2026-01-01T00:00:01Z"}"#;
        let turn = r#"{"type":"user","message":{"role":"user","content":"hi"},"uuid":"u1","sessionId":"s","cwd":"/p","timestamp":"2026-01-01T00:00:02Z"}"#;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        std::fs::write(&path, format!("{carried}\n{turn}\n")).unwrap();
        let origin = Origin::new(CODEC_NAME, &path, "s.jsonl");
        for two_threads in [false, true] {
            // Streamed (nothing held): every line's bytes are hashed.
            let survey = survey(&origin, None, two_threads).unwrap();
            let line = |n: usize| survey.lines[n - 1];
            assert!(line(1).is_some_and(|l| l.carried && l.digest.is_some()));
            assert!(line(2).is_some_and(|l| !l.carried && l.digest.is_some()));
            assert!(survey.carried(1, line(1), carried.as_bytes(), false));
            assert!(!survey.carried(2, line(2), turn.as_bytes(), false));
            // The file changed between the passes: the line read again is walked again.
            let changed = [
                // Not JSON (the same length).
                carried.replacen("{\"n\":1}", "{\"n\":}}", 1),
                // A turn now.
                carried.replacen("progress", "user\",\"x\":\"", 1),
            ];
            for text in &changed {
                assert!(
                    !survey.carried(1, line(1), text.as_bytes(), false),
                    "{text}"
                );
            }
            // Another record the walk shows carried is carried, in place of a turn too.
            let other = carried.replacen("\"n\":1", "\"n\":2", 1);
            assert!(survey.carried(1, line(1), other.as_bytes(), false));
            assert!(survey.carried(2, line(2), other.as_bytes(), false));
            // Held, the survey's verdict stands, and nothing was hashed.
            let held = std::fs::read(&path).unwrap();
            let survey = super::survey(&origin, Some(&held), two_threads).unwrap();
            assert!(survey.digest.is_none());
            assert!(survey.lines[0].is_some_and(|l| l.carried && l.digest.is_none()));
            assert!(survey.carried(1, survey.lines[0], b"", true));
        }
    }

    #[test]
    fn a_foreign_read_leaves_unbuilt_what_the_writer_never_reads() {
        let lines = concat!(
            r#"{"type":"assistant","sessionId":"s","cwd":"/p","message":{"id":"m1","role":"assistant","model":"opus","usage":{"input_tokens":3},"content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}}]},"uuid":"a1","timestamp":"2026-01-01T00:00:01Z"}"#,
            "\n",
            r#"{"type":"user","sessionId":"s","cwd":"/p","message":{"role":"user","content":[{"tool_use_id":"t1","type":"tool_result","content":"ok"}]},"toolUseResult":{"stdout":"ok","stderr":""},"uuid":"u1","parentUuid":"a1","timestamp":"2026-01-01T00:00:02Z"}"#,
            "\n",
        );
        let whole = messages(lines, None);
        let pruned = messages(lines, Some(&["model"]));
        assert_eq!(whole.len(), 2);
        assert_eq!(pruned.len(), 2);
        let envelope = |m: &Message| m.options()["source"]["envelope"].clone();
        // `toolUseResult` and `usage`, which no writer reads, are built only for a whole read;
        // so is a turn's envelope that names no key the writer looks for.
        assert_eq!(envelope(&whole[1])["toolUseResult"]["stdout"], "ok");
        assert_eq!(envelope(&whole[1])["cwd"], "/p");
        assert!(envelope(&pruned[1]).is_null());
        assert!(envelope(&pruned[0]).is_null());
        assert_eq!(whole[0].options()["anthropic"]["usage"]["input_tokens"], 3);
        assert!(pruned[0].options()["anthropic"].get("usage").is_none());
        // What the writer looks for, and what the mapping reads, are there.
        assert_eq!(pruned[0].options()["anthropic"]["model"], "opus");
        assert_eq!(whole[0].parts(), pruned[0].parts());
        assert_eq!(whole[1].parts(), pruned[1].parts());
        // A `toolUseResult` that names a wanted key is kept.
        let named = lines.replace(r#""stderr":"""#, r#""model":"haiku""#);
        let kept = messages(&named, Some(&["model"]));
        assert_eq!(envelope(&kept[1])["toolUseResult"]["model"], "haiku");
        assert_eq!(envelope(&kept[1])["cwd"], "/p");
        // So is the envelope of a compaction's summary, which a writer looks for.
        let summary = lines.replace(
            r#""cwd":"/p","message":{"role":"user""#,
            r#""cwd":"/p","isCompactSummary":true,"message":{"role":"user""#,
        );
        assert_ne!(summary, lines);
        let kept = messages(&summary, Some(&["model"]));
        assert_eq!(envelope(&kept[1])["isCompactSummary"], true);
    }

    /// A user turn handed over as its line is made after every later line was read, and still
    /// names its tool results as the calls stood at its place: a call id an assistant turn names
    /// again later does not rename an earlier result.
    #[test]
    fn a_user_turn_made_late_names_its_results_as_they_stood_at_its_place() {
        let call = |uuid: &str, name: &str| {
            format!(
                r#"{{"type":"assistant","sessionId":"s","cwd":"/p","message":{{"role":"assistant","content":[{{"type":"tool_use","id":"t1","name":"{name}","input":{{}}}}]}},"uuid":"{uuid}","timestamp":"2026-01-01T00:00:01Z"}}"#
            )
        };
        let result = |uuid: &str| {
            format!(
                r#"{{"type":"user","sessionId":"s","cwd":"/p","message":{{"role":"user","content":[{{"tool_use_id":"t1","type":"tool_result","content":"ok"}}]}},"uuid":"{uuid}","timestamp":"2026-01-01T00:00:02Z"}}"#
            )
        };
        let lines = [
            call("a1", "Bash"),
            result("u1"),
            call("a2", "Read"),
            result("u2"),
        ];
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
        let origin = Origin::new(CODEC_NAME, &path, "s.jsonl");
        let mut late = Vec::new();
        ClaudeCodeReader.read_items(&origin, true, &mut |item| {
            if let Ok(Item::Deferred(make)) = item {
                late.push(make);
            }
        });
        assert_eq!(
            late.len(),
            2,
            "both user turns are handed over as their lines"
        );
        let mut names = Vec::new();
        for make in late {
            make(&origin, &mut |m| {
                for part in m.unwrap().parts() {
                    if let pond_canonical::Part::ToolResult(r) = part {
                        names.push(r.name.map(|n| n.as_str().to_owned()));
                    }
                }
            });
        }
        assert_eq!(names, [Some("Bash".to_owned()), Some("Read".to_owned())]);
    }
}

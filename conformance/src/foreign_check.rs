//! Foreign-write checks shared by the per-target tests (`opencode_foreign`, `pi_foreign`) and
//! the oracle tests: convert one source unit into a target, validate every written file with
//! the target's `validate`, read it back with the target's read face, and count what a
//! conversation is made of on both sides.

use pond_canonical::{Event, Message, Origin, Part, Provenance, Session};
use pond_codecs::convert::{Summary, convert_sources};
use pond_codecs::face::{Fidelity, Losses, Target, WriteError};
use pond_codecs::output::MemoryOutput;
use pond_codecs::{CODECS, Codec, Layout};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

/// What a conversation is made of, counted over every session of a source or an output.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    /// Non-empty text parts of user messages.
    pub user_texts: usize,
    /// Of those, the conversational ones.
    pub user_conversational: usize,
    /// Conversational user texts with more than white space.
    pub user_conversational_nonblank: usize,
    /// Conversational user text parts that are empty.
    pub user_conversational_empty: usize,
    /// User messages holding a text or a file part (one request item each in Codex).
    pub user_messages: usize,
    /// Non-empty text parts of assistant messages.
    pub assistant_texts: usize,
    /// Non-empty user / assistant texts with more than white space (providers drop blank blocks).
    pub user_texts_nonblank: usize,
    pub assistant_texts_nonblank: usize,
    /// Assistant text parts that are empty.
    pub assistant_empty: usize,
    /// Tool calls.
    pub tool_calls: usize,
    /// Tool results, paired or not.
    pub tool_results: usize,
    /// Tool results whose call is in the same session (one per call at most).
    pub paired_results: usize,
    /// Tool calls that a result of the same session answers, wherever it stands (each result
    /// answers one call of its id).
    pub answered_calls: usize,
    /// Codex `compacted` records with a summary: the targets that resume from their own
    /// compaction ([`WRITES_COMPACTION`]) write each as one more (injected) user text.
    pub compactions: usize,
    /// Claude Code compactions with a summary: a `compact_boundary` beginning a new chain
    /// followed by its `isCompactSummary` line ([`CLAUDE_COMPACTION_INTO`]).
    pub claude_compactions: usize,
    /// opencode compactions: finished summary messages ([`OPENCODE_COMPACTION_INTO`]).
    pub opencode_compactions: usize,
    /// pi compactions whose first kept entry is a message before them in their session: the
    /// targets of [`PI_COMPACTION_INTO`] write these as their own.
    pub pi_compactions: usize,
}

/// The targets that write a Codex `compacted` record with a summary as their own compaction
/// (Claude Code's `compact_boundary` and summary line, pi's `compaction` entry): a resume sends
/// the summary and what follows, not the history before.
pub const WRITES_COMPACTION: &[&str] = &["claude-code", "pi", "opencode"];

/// The targets that write a Claude Code compaction (`pond_codecs::face::is_compact_boundary`)
/// as their own (Codex: a `compacted` line; pi: a `compaction` entry holding the summary line
/// after it; opencode: a `compaction` user message answered by the summary): a resume sends
/// the summary and what follows, as Claude Code does.
pub const CLAUDE_COMPACTION_INTO: &[&str] = &["codex", "pi", "opencode"];

/// The targets that write an opencode compaction (`pond_codecs::face::opencode_summary_text`)
/// as their own (Claude Code: a boundary and summary line; pi: a `compaction` entry; Codex: a
/// `compacted` line before the summary): a resume sends the summary (as a user text; into Codex
/// the assistant text it is) and what follows.
pub const OPENCODE_COMPACTION_INTO: &[&str] = &["claude-code", "pi", "codex"];

/// The targets that write a pi compaction (`pond_codecs::face::pi_compaction`) as their own
/// (Codex: a `compacted` line whose replacement history is the summary, then the entries pi keeps
/// from `firstKeptEntryId`; Claude Code: a `compact_boundary` naming the lines of those entries
/// as its preserved messages, then the summary line; opencode: a `compaction` message whose
/// `tail_start_id` names the first of those entries' messages, answered by the summary): a
/// resume sends the summary, the kept entries and what follows, as pi does.
pub const PI_COMPACTION_INTO: &[&str] = &["codex", "claude-code", "opencode"];

/// Whether `m` is a Codex `compacted` record without a summary that keeps no history
/// (`pond_codecs::face::compaction_clears_history`): Claude Code's writer makes it a boundary.
fn clears_history(m: &Message) -> bool {
    match m {
        Message::System(s) => s.carried_record().is_some_and(|r| {
            pond_codecs::face::is_compaction_record(r)
                && pond_codecs::face::compaction_summary(r).is_none()
                && pond_codecs::face::compaction_clears_history(r)
        }),
        _ => false,
    }
}

/// Whether `m` is a Codex `compacted` record with a summary.
fn is_summarised_compaction(m: &Message) -> bool {
    match m {
        Message::System(s) => s.carried_record().is_some_and(|r| {
            pond_codecs::face::is_compaction_record(r)
                && pond_codecs::face::compaction_summary(r).is_some()
        }),
        _ => false,
    }
}

/// The events of `session` among `events`.
pub fn session_events(events: &[Event], session: &str) -> Vec<Event> {
    events
        .iter()
        .filter(|e| match e {
            Event::Session(s) => s.id.as_str() == session,
            Event::Message(m) => m.session_id().as_str() == session,
        })
        .cloned()
        .collect()
}

impl Counts {
    /// Counts the events of one session of a read.
    pub fn of_session(events: &[Event], session: &str) -> Self {
        Self::of(&session_events(events, session))
    }

    /// What a resume of `session` written into `target` sends, counted: [`Self::of_session`],
    /// except into a harness that resumes from its own compaction: into Claude Code and pi
    /// ([`WRITES_COMPACTION`]) only the messages after the session's last Codex compaction
    /// count, and its summary as one more user text (conversational, as the harness sends it);
    /// into Codex and pi ([`CLAUDE_COMPACTION_INTO`]) only the messages after the last Claude
    /// Code compaction ([`pond_codecs::face::is_compact_boundary`]), whose summary is the
    /// message after it; into Claude Code, pi and Codex ([`OPENCODE_COMPACTION_INTO`]) only
    /// what follows the last opencode summary, the summary counted as a user text (into Codex
    /// as the assistant text it stays); into Codex, Claude Code and opencode
    /// ([`PI_COMPACTION_INTO`]) the last pi compaction's summary, the messages from its first
    /// kept entry and those after it (into Claude Code the summary counted as a conversational
    /// user text, as Claude Code sends its summary line; into opencode as the assistant text
    /// answering its compaction's user text), unless that entry is not in the session.
    pub fn as_resumed(events: &[Event], session: &str, target: &str) -> Self {
        if PI_COMPACTION_INTO.contains(&target) {
            // After the last pi compaction: its summary, the messages from the first it keeps
            // (before it: the same messages, counted once) and those after it.
            let mine = session_events(events, session);
            let last = mine.iter().enumerate().rev().find_map(|(i, e)| match e {
                Event::Message(m) => pond_codecs::face::pi_compaction(m).map(|c| (i, c)),
                Event::Session(_) => None,
            });
            // One whose first kept entry is not in the session stays the user message it is.
            let first_kept = last.and_then(|(at, compaction)| {
                let id = compaction.first_kept?;
                mine[..=at]
                    .iter()
                    .position(|e| matches!(e, Event::Message(m) if m.id().as_str() == id))
            });
            if let Some(first_kept) = first_kept {
                let mut c = Self::of(&mine[first_kept..]);
                if target == "claude-code" {
                    // The summary (injected in pi's entry) is Claude Code's own summary line, a
                    // user text like any other.
                    c.user_conversational += 1;
                    c.user_conversational_nonblank += 1;
                }
                if target == "opencode" {
                    // opencode sends its compaction as a user text ("What did we do so far?")
                    // in place of the summary's, answered by the summary.
                    c.user_conversational += 1;
                    c.user_conversational_nonblank += 1;
                    c.assistant_texts += 1;
                    c.assistant_texts_nonblank += 1;
                }
                return c;
            }
        }
        let codex_summaries = WRITES_COMPACTION.contains(&target);
        let claude_boundaries = CLAUDE_COMPACTION_INTO.contains(&target);
        let opencode_summaries = OPENCODE_COMPACTION_INTO.contains(&target);
        if !codex_summaries && !claude_boundaries && !opencode_summaries {
            return Self::of_session(events, session);
        }
        let mine = session_events(events, session);
        // The last compaction the target resumes from: a Codex summary (written as one more
        // user text) or a Claude Code boundary (its summary is the message after it; pi writes
        // one only with that summary).
        let message = |i: usize| match mine.get(i) {
            Some(Event::Message(m)) => Some(m),
            _ => None,
        };
        let compacted = (0..mine.len()).rev().find(|&i| {
            let Some(m) = message(i) else { return false };
            let boundary =
                matches!(m, Message::System(s) if pond_codecs::face::is_compact_boundary(s));
            (codex_summaries && is_summarised_compaction(m))
                || (opencode_summaries && pond_codecs::face::opencode_summary_text(m).is_some())
                || (target == "claude-code" && clears_history(m))
                || (claude_boundaries
                    && boundary
                    && (target == "codex"
                        || message(i + 1)
                            .and_then(pond_codecs::face::compact_summary_text)
                            .is_some()))
        });
        let Some(at) = compacted else {
            return Self::of(&mine);
        };
        if target == "codex"
            && matches!(&mine[at], Event::Message(m)
                if pond_codecs::face::opencode_summary_text(m).is_some())
        {
            // The `compacted` line goes before the summary, which stays an assistant message.
            return Self::of(&mine[at..]);
        }
        let mut c = Self::of(&mine[at + 1..]);
        if target == "opencode" {
            // opencode sends its compaction as a user text ("What did we do so far?") answered
            // by the summary: a Claude Code summary line is that user text, a Codex compaction
            // adds it.
            c.assistant_texts += 1;
            c.assistant_texts_nonblank += 1;
        }
        // A Codex or opencode summary is written as one more user text (an opencode one in
        // place of its assistant text, which is before the cut).
        if !matches!(&mine[at], Event::Message(m) if is_summarised_compaction(m)
            || pond_codecs::face::opencode_summary_text(m).is_some())
        {
            return c;
        }
        c.user_messages += 1;
        c.user_texts += 1;
        c.user_texts_nonblank += 1;
        c.user_conversational += 1;
        c.user_conversational_nonblank += 1;
        c
    }

    /// Counts the events of a read.
    pub fn of(events: &[Event]) -> Self {
        let mut c = Counts::default();
        let mut calls: HashSet<(String, String)> = HashSet::new();
        let mut answered: HashSet<(String, String)> = HashSet::new();
        // Results per (session, call id), for `answered_calls`.
        let mut results: HashMap<(String, String), usize> = HashMap::new();
        for e in events {
            let Event::Message(m) = e else { continue };
            for p in m.parts() {
                if let Part::ToolResult(r) = p {
                    let key = (
                        m.session_id().as_str().to_owned(),
                        r.call_id.as_str().to_owned(),
                    );
                    *results.entry(key).or_default() += 1;
                }
            }
        }
        // The sessions whose last message was a Claude Code compaction boundary: a writer
        // takes the next message of that session as its summary line.
        let mut boundaries: HashSet<String> = HashSet::new();
        // Every (session, message id) so far, for a pi compaction's first kept entry.
        let mut seen: HashSet<(String, String)> = HashSet::new();
        for e in events {
            let Event::Message(m) = e else { continue };
            if let Some(first) = pond_codecs::face::pi_compaction(m).and_then(|p| p.first_kept) {
                let key = (m.session_id().as_str().to_owned(), first.to_owned());
                c.pi_compactions += usize::from(seen.contains(&key));
            }
            seen.insert((
                m.session_id().as_str().to_owned(),
                m.id().as_str().to_owned(),
            ));
            c.compactions += usize::from(is_summarised_compaction(m));
            c.opencode_compactions +=
                usize::from(pond_codecs::face::opencode_summary_text(m).is_some());
            let after_boundary = boundaries.remove(m.session_id().as_str());
            c.claude_compactions +=
                usize::from(after_boundary && pond_codecs::face::compact_summary_text(m).is_some());
            if matches!(m, Message::System(s) if pond_codecs::face::is_compact_boundary(s)) {
                boundaries.insert(m.session_id().as_str().to_owned());
            }
            let session = m.session_id().as_str().to_owned();
            let parts = m.parts();
            if matches!(m, Message::User(_))
                && parts
                    .iter()
                    .any(|p| matches!(p, Part::Text(_) | Part::File(_)))
            {
                c.user_messages += 1;
            }
            for p in parts {
                match (&m, &p) {
                    (Message::User(_), Part::Text(t)) => {
                        let text = t.text.as_str();
                        let conversational = t.provenance == Provenance::Conversational;
                        if text.is_empty() {
                            c.user_conversational_empty += usize::from(conversational);
                            continue;
                        }
                        c.user_texts += 1;
                        let nonblank = !text.trim().is_empty();
                        c.user_texts_nonblank += usize::from(nonblank);
                        c.user_conversational += usize::from(conversational);
                        c.user_conversational_nonblank += usize::from(conversational && nonblank);
                    }
                    (Message::Assistant(_), Part::Text(t)) => {
                        let text = t.text.as_str();
                        if text.is_empty() {
                            c.assistant_empty += 1;
                            continue;
                        }
                        c.assistant_texts += 1;
                        c.assistant_texts_nonblank += usize::from(!text.trim().is_empty());
                    }
                    (_, Part::ToolCall(call)) => {
                        c.tool_calls += 1;
                        let key = (session.clone(), call.call_id.as_str().to_owned());
                        if let Some(n) = results.get_mut(&key)
                            && *n > 0
                        {
                            *n -= 1;
                            c.answered_calls += 1;
                        }
                        calls.insert(key);
                    }
                    (_, Part::ToolResult(r)) => {
                        c.tool_results += 1;
                        let key = (session.clone(), r.call_id.as_str().to_owned());
                        if calls.contains(&key) && answered.insert(key) {
                            c.paired_results += 1;
                        }
                    }
                    _ => {}
                }
            }
        }
        c
    }
}

/// One source unit converted into a target and read back.
#[derive(Debug)]
pub struct Converted {
    /// The source unit.
    pub source: PathBuf,
    /// The events the source codec reads from it; for a write into another harness, with each
    /// branch's history replayed in it (`pond_codecs::convert::with_fork_histories`).
    pub source_events: Vec<Event>,
    /// The faults the source codec reports reading it (a malformed fixture has some).
    pub source_faults: Vec<String>,
    /// Counts of the canonical source (as the source codec reads it).
    pub source_counts: Counts,
    /// Sessions the source holds.
    pub source_sessions: usize,
    /// The conversion summary (losses, written sessions).
    pub summary: Summary,
    /// The written files.
    pub out: MemoryOutput,
    /// Problems `validate` found, per file.
    pub invalid: Vec<String>,
    /// Faults the target's read face reported reading the output back.
    pub read_faults: Vec<String>,
    /// The events the target's read face reads from the output.
    pub target_events: Vec<Event>,
    /// Counts of the output as the target reads it.
    pub target_counts: Counts,
    /// Sessions the target reads from the output.
    pub target_sessions: usize,
}

/// The fixture folders of `codec`: `../shared/fixtures/<name>` (which must exist: a missing one
/// fails loudly) and the repository's own `fixtures/<name>` where present.
pub fn fixture_dirs(codec: &Codec) -> Vec<PathBuf> {
    let shared = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/fixtures")
        .join(codec.name);
    assert!(
        shared.is_dir(),
        "shared fixtures missing at {} (expected /work/shared beside the repo)",
        shared.display()
    );
    let mut dirs = vec![shared];
    let own = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fixtures")
        .join(codec.name);
    if own.is_dir() {
        dirs.push(own);
    }
    dirs
}

/// Every source unit `codec` discovers in its fixture folders.
pub fn fixture_sources(codec: &Codec) -> Vec<Origin> {
    let Some(reader) = codec.read else {
        return Vec::new();
    };
    let mut all = Vec::new();
    for dir in fixture_dirs(codec) {
        match reader.discover(&dir) {
            Ok(found) => all.extend(found),
            Err(e) => panic!("{} cannot list {}: {e}", codec.name, dir.display()),
        }
    }
    all
}

/// Every source unit of every codec other than `target` that reads, as `(codec, origin)`.
pub fn foreign_sources(target: &str) -> Vec<(&'static Codec, Origin)> {
    CODECS
        .iter()
        .copied()
        .filter(|codec| codec.name != target)
        .flat_map(|codec| fixture_sources(codec).into_iter().map(move |o| (codec, o)))
        .collect()
}

/// The events `codec` reads from `origin` (faults left out).
pub fn read_origin(codec: &Codec, origin: &Origin) -> Vec<Event> {
    read_with_faults(codec, origin).0
}

/// The events `codec` reads from `origin`, and its faults, located.
pub fn read_with_faults(codec: &Codec, origin: &Origin) -> (Vec<Event>, Vec<String>) {
    let mut events = Vec::new();
    let mut faults = Vec::new();
    if let Some(reader) = codec.read {
        reader.read(origin, &mut |item| match item {
            Ok(e) => events.push(e),
            Err(f) => faults.push(f.to_string()),
        });
    }
    (events, faults)
}

/// Converts `origin` (read by `from`) into `to` in memory, validates and reads it back.
pub fn convert_one(
    from: &'static Codec,
    to: &'static Codec,
    origin: &Origin,
    layout: Layout,
) -> Result<Converted, String> {
    let (events, source_faults) = read_with_faults(from, origin);
    // A write into another harness carries a branch's history too (a pi side branch).
    let events = if from.source_agent == to.source_agent {
        events
    } else {
        pond_codecs::convert::with_fork_histories(&events)
    };
    let source_counts = Counts::of(&events);
    let source_sessions = events
        .iter()
        .filter(|e| matches!(e, Event::Session(_)))
        .count();
    let mut out = MemoryOutput::default();
    let summary = convert_sources(
        from,
        to,
        layout,
        std::slice::from_ref(origin),
        &mut out,
        &mut |_, _| {},
    )
    .map_err(|e| e.to_string())?;
    let mut invalid = Vec::new();
    if let Some(validate) = to.validate {
        for (rel, bytes) in &out.files {
            invalid.extend(
                validate(rel, bytes)
                    .into_iter()
                    .map(|p| format!("{rel}: {p}")),
            );
        }
    }
    let mut read_faults = Vec::new();
    let mut back = Vec::new();
    if !out.files.is_empty() {
        let dir = crate::roundtrip::tempdir_for(&format!("foreign-{}-{}", from.name, to.name))?;
        out.write_to(&dir).map_err(|e| e.to_string())?;
        match pond_codecs::convert::read_all(to, &dir) {
            Ok((events, faults)) => {
                back = events;
                read_faults = faults.iter().map(|f| f.to_string()).collect();
            }
            Err(e) => read_faults.push(e.to_string()),
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
    let target_sessions = back
        .iter()
        .filter(|e| matches!(e, Event::Session(_)))
        .count();
    Ok(Converted {
        source: origin.path().to_owned(),
        source_events: events,
        source_faults,
        source_counts,
        source_sessions,
        summary,
        out,
        invalid,
        read_faults,
        target_counts: Counts::of(&back),
        target_events: back,
        target_sessions,
    })
}

/// One oracle run on a foreign write, for the printed table.
#[derive(Debug)]
pub struct OracleRow {
    /// `<source codec> -> <target>`.
    pub pair: String,
    /// The fixture, relative to its fixture folder.
    pub fixture: String,
    /// `resume` or `offline`.
    pub mode: &'static str,
    /// Whether the harness accepted the session.
    pub accepted: bool,
    /// History counts: user turns, assistant turns, tool_use blocks, tool_result blocks.
    pub history: (usize, usize, usize, usize),
    /// The canonical source's counts for the session.
    pub source: Counts,
    /// What was wrong (empty when the row passed).
    pub problems: Vec<String>,
}

/// How many blocks of `kind` the turns of `role` hold.
pub fn count_role(report: &crate::oracle::Report, role: &str, kind: &str) -> usize {
    report
        .history
        .iter()
        .filter(|t| t.role == role)
        .flat_map(|t| &t.kinds)
        .filter(|k| *k == kind)
        .count()
}

/// Runs the `target` oracle on the main session (the first written without a parent) of every
/// fixture of every other codec that has at least `min_user_turns` conversational user texts
/// (2: the multi-turn ones), resume mode, plus one offline check per source codec where the
/// harness has one; `check` compares a resume report with the source's counts. Sources that
/// write nothing (malformed ones, located faults) are listed on stderr.
pub fn oracle_rows(
    oracle: &crate::oracle::Oracle,
    target: &'static str,
    min_user_turns: usize,
    check: &dyn Fn(&Counts, &crate::oracle::Report) -> Vec<String>,
) -> Vec<OracleRow> {
    let Some(to) = pond_codecs::find(target) else {
        panic!("no codec {target}");
    };
    let mut rows = Vec::new();
    let mut offline_done = HashSet::new();
    let mut fewer_turns = 0;
    for (from, origin) in foreign_sources(target) {
        let c = match convert_one(from, to, &origin, Layout::Mirror) {
            Ok(c) => c,
            Err(e) => panic!("{}: {e}", origin.path().display()),
        };
        let events = &c.source_events;
        // The main session: the first one written that has no parent.
        let parents: HashSet<String> = events
            .iter()
            .filter_map(|e| match e {
                Event::Session(s) if s.parent_session_id.is_some() => {
                    Some(s.id.as_str().to_owned())
                }
                _ => None,
            })
            .collect();
        let main = c
            .summary
            .written
            .iter()
            .find(|w| !parents.contains(&w.source_session));
        let (Some(w), Some(bytes)) = (main, main.and_then(|w| c.out.files.get(&w.file))) else {
            eprintln!(
                "not run, no main session written: {} {}{}",
                from.name,
                origin.relative().into_inner(),
                c.source_faults
                    .first()
                    .map(|f| format!(" (malformed: {f})"))
                    .unwrap_or_default()
            );
            continue;
        };
        let counts = Counts::as_resumed(events, &w.source_session, target);
        if counts.user_conversational < min_user_turns {
            fewer_turns += 1;
            continue;
        }
        let dir = match crate::roundtrip::tempdir_for(&format!("oracle-{}-{target}", from.name)) {
            Ok(d) => d,
            Err(e) => panic!("{e}"),
        };
        let name = w.file.rsplit('/').next().unwrap_or("session");
        let file = dir.join(name);
        if let Err(e) = std::fs::write(&file, bytes) {
            panic!("{}: {e}", file.display());
        }
        let fixture = origin.relative().into_inner().to_owned();
        let mut modes = vec![("resume", false)];
        if crate::oracle::Oracle::has_offline(target) && offline_done.insert(from.name) {
            modes.push(("offline", true));
        }
        let mut keep = false;
        for (mode, offline) in modes {
            let out = dir.join(format!("artifacts-{mode}"));
            let mut row = OracleRow {
                pair: format!("{} -> {target}", from.name),
                fixture: fixture.clone(),
                mode,
                accepted: false,
                history: (0, 0, 0, 0),
                source: counts,
                problems: Vec::new(),
            };
            match oracle.run(target, &file, offline, &out) {
                Err(e) => row.problems.push(e),
                Ok(r) => {
                    row.accepted = r.accepted;
                    row.history = (
                        r.history.iter().filter(|t| t.role == "user").count(),
                        r.history.iter().filter(|t| t.role == "assistant").count(),
                        r.count("tool_use"),
                        r.count("tool_result"),
                    );
                    if !r.accepted {
                        row.problems.push(format!(
                            "rejected (exit {}): {:?}; artifacts in {}",
                            r.exit_code,
                            r.reasons,
                            out.display()
                        ));
                    } else if !offline {
                        row.problems.extend(check(&counts, &r));
                    }
                }
            }
            eprintln!(
                "| {:<22} | {:<70} | {:<7} | {:<5} | hist u{} a{} tu{} tr{} | src u{} a{} tc{} tr{} | {}",
                row.pair,
                row.fixture,
                row.mode,
                row.accepted,
                row.history.0,
                row.history.1,
                row.history.2,
                row.history.3,
                counts.user_texts_nonblank,
                counts.assistant_texts_nonblank,
                counts.tool_calls,
                counts.paired_results,
                if row.problems.is_empty() {
                    "ok".to_owned()
                } else {
                    row.problems.join("; ")
                }
            );
            keep |= !row.problems.is_empty();
            rows.push(row);
        }
        if !keep {
            // A failure's artifacts stay to be read; a pass leaves nothing in /tmp.
            let _ = std::fs::remove_dir_all(&dir);
        }
    }
    if min_user_turns > 0 {
        eprintln!(
            "{fewer_turns} sources not run: fewer than {min_user_turns} conversational user texts"
        );
    }
    rows
}

/// Fails with every problem row listed; passes when every row passed and at least one ran.
pub fn assert_rows(rows: &[OracleRow]) {
    assert!(!rows.is_empty(), "no multi-turn fixture was run");
    let bad: Vec<String> = rows
        .iter()
        .filter(|r| !r.accepted || !r.problems.is_empty())
        .map(|r| {
            format!(
                "{} {} {}: {}",
                r.pair,
                r.fixture,
                r.mode,
                r.problems.join("; ")
            )
        })
        .collect();
    assert!(
        bad.is_empty(),
        "{} of {} oracle runs failed:\n{}",
        bad.len(),
        rows.len(),
        bad.join("\n")
    );
}

/// Converts every readable fixture of every other codec into `target` and checks each: no write
/// error, every file valid, read back without a fault, as many sessions as written, and the same
/// user texts, assistant texts, tool calls and paired results (and conversational user texts
/// when `conversational` is set). Panics listing every failure.
pub fn assert_every_foreign_write_is_faithful(target: &'static Codec, conversational: bool) {
    let sources = foreign_sources(target.name);
    assert!(sources.len() > 50, "too few sources: {}", sources.len());
    let mut failures = Vec::new();
    let mut converted = 0;
    for (from, origin) in &sources {
        let c = match convert_one(from, target, origin, Layout::Mirror) {
            Ok(c) => c,
            Err(e) => {
                failures.push(format!("{}: {e}", origin.path().display()));
                continue;
            }
        };
        let at = format!("{} {}", from.name, c.source.display());
        if c.source_sessions == 0 {
            continue;
        }
        converted += 1;
        for e in &c.summary.write_errors {
            failures.push(format!("{at}: write error {e}"));
        }
        for p in c.invalid.iter().take(3) {
            failures.push(format!("{at}: invalid {p}"));
        }
        for f in c.read_faults.iter().take(3) {
            failures.push(format!("{at}: read back with a fault {f}"));
        }
        if c.target_sessions != c.summary.written.len() {
            failures.push(format!(
                "{at}: {} sessions written, {} read back",
                c.summary.written.len(),
                c.target_sessions
            ));
        }
        let (s, t) = (c.source_counts, c.target_counts);
        // A compaction written as the target's own reads back as its summary: into Claude Code
        // and pi a user text (a Codex compaction adds one; a Claude Code summary line is one;
        // an opencode summary moves there from the assistant texts), into opencode the
        // assistant text answering a compaction message without text (a Claude Code or pi
        // summary, a user text, moves there). Source counts plus these, target counts plus
        // those.
        let (s_user, t_user, s_assistant, t_assistant) = match target.name {
            "claude-code" | "pi" => (
                s.compactions + s.opencode_compactions,
                0,
                0,
                s.opencode_compactions,
            ),
            "opencode" => (
                0,
                s.claude_compactions + s.pi_compactions,
                s.compactions + s.claude_compactions + s.pi_compactions,
                0,
            ),
            _ => (0, 0, 0, 0),
        };
        let same = s.user_texts + s_user == t.user_texts + t_user
            && s.assistant_texts + s_assistant == t.assistant_texts + t_assistant
            && s.tool_calls == t.tool_calls
            && s.paired_results == t.paired_results
            && (!conversational || s.user_conversational == t.user_conversational);
        if !same {
            failures.push(format!("{at}: source {s:?} != target {t:?}"));
        }
    }
    assert!(converted > 40, "only {converted} sources held sessions");
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// A session whose id and project try to leave the output.
fn crafted_session(agent: &str) -> (Session, Vec<Message>) {
    let session: Session = serde_json::from_value(serde_json::json!({
        "id": "../../.bashrc", "source_agent": agent,
        "created_at": "2026-01-01T00:00:00Z", "project": "/../../etc",
        "options": {"source": {"file": "../../.bashrc"}}
    }))
    .expect("session json");
    let message: Message = serde_json::from_value(serde_json::json!({
        "role": "user", "id": "../x", "session_id": "../../.bashrc",
        "timestamp": "2026-01-01T00:00:01Z",
        "content": [{"type": "text", "id": "../x.0", "session_id": "../../.bashrc",
            "message_id": "../x", "provenance": "conversational", "text": "hi"}]
    }))
    .expect("message json");
    (session, vec![message])
}

fn write_crafted(
    target: &Codec,
    session: &Session,
    messages: &[Message],
    layout: Layout,
) -> (
    Result<(), WriteError>,
    MemoryOutput,
    Vec<pond_codecs::Written>,
) {
    let face = target.write.expect("writes");
    let mut w = face.writer(layout);
    let mut out = MemoryOutput::default();
    let mut losses = Losses::default();
    let mut written = Vec::new();
    let fidelity = Fidelity::decide(session, target.source_agent);
    let result = (|| {
        let mut t = Target {
            out: &mut out,
            losses: &mut losses,
            written: &mut written,
        };
        w.session(session, fidelity, &mut t)?;
        for m in messages {
            w.message(m, &mut t)?;
        }
        w.end_source(&mut t)
    })();
    (result, out, written)
}

/// A session whose id and project try to leave the output stays inside it when written into
/// `target`: foreign, under derived ids; native, refused as a typed error.
pub fn assert_crafted_ids_never_leave_the_output(target: &'static Codec) {
    // Foreign: the target's ids are derived, so the path is pond's, not the session's.
    let (s, m) = crafted_session("claude-code");
    for layout in [Layout::Mirror, Layout::Harness] {
        let (r, out, written) = write_crafted(target, &s, &m, layout);
        assert!(r.is_ok(), "{r:?}");
        for path in out.files.keys() {
            assert!(
                pond_codecs::face::check_relative_path(path).is_ok(),
                "{path}"
            );
            assert!(!path.contains(".bashrc"), "{path}");
        }
        assert_eq!(written.len(), 1);
        assert_ne!(written[0].session, "../../.bashrc");
    }
    // Native: the id is the path, so the write is a typed refusal, never a file outside.
    let (s, m) = crafted_session(target.source_agent);
    let (r, out, _) = write_crafted(target, &s, &m, Layout::Harness);
    assert!(matches!(r, Err(WriteError::UnsafePath { .. })), "{r:?}");
    assert!(
        out.files.keys().all(|p| !p.contains("..")),
        "{:?}",
        out.files.keys()
    );
}

/// The written files (JSON, or JSON lines) and losses of the conversion of one shared fixture
/// (`relative` to `../shared/fixtures`) read by `from` into `target`, for a golden snapshot.
pub fn golden_document(from: &str, target: &'static Codec, relative: &str) -> serde_json::Value {
    let from = pond_codecs::find(from).expect("codec");
    let path = std::path::Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../shared/fixtures"
    ))
    .join(relative);
    assert!(path.exists(), "shared fixture missing: {}", path.display());
    let origin = from
        .read
        .expect("reads")
        .discover(&path)
        .expect("discovers")
        .remove(0);
    let c = convert_one(from, target, &origin, Layout::Mirror).expect("converts");
    assert!(
        c.invalid.is_empty() && c.read_faults.is_empty(),
        "{:?} {:?}",
        c.invalid,
        c.read_faults
    );
    let files: serde_json::Map<String, serde_json::Value> = c
        .out
        .files
        .iter()
        .map(|(k, v)| {
            let text = String::from_utf8_lossy(v);
            let value = match serde_json::from_str::<serde_json::Value>(&text) {
                Ok(v) => v,
                Err(_) => serde_json::Value::Array(
                    text.lines()
                        .map(|l| serde_json::from_str(l).unwrap_or(serde_json::Value::from(l)))
                        .collect(),
                ),
            };
            (k.clone(), value)
        })
        .collect();
    serde_json::json!({
        "files": files,
        "written": c.summary.written,
        "losses": c.summary.losses,
    })
}

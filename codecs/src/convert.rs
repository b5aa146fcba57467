//! The conversion driver: a read face's events into a write face's writer, with the system (not
//! the codec) deciding native or foreign per session (spec 6.3), and a summary of what happened.

use crate::face::ReadFace;
use crate::face::{
    CarriedLine, Deferred, Fidelity, Item, Layout, Losses, Output, OwnedCarried, OwnedReasoning,
    ReasoningLine, SessionWriter, Target, Wanted, WriteError, Written,
};
use crate::registry::Codec;
use pond_canonical::{Event, Message, Origin, ParseError, Provenance, Session, SessionId};
use serde::Serialize;
use std::collections::HashSet;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

/// What a conversion did.
#[derive(Debug, Default, Serialize)]
pub struct Summary {
    /// Source units read (files, databases).
    pub sources: u64,
    /// Sessions read.
    pub sessions: u64,
    /// Messages read.
    pub messages: u64,
    /// Parts read.
    pub parts: u64,
    /// Parts marked injected (model-part-provenance).
    pub injected_parts: u64,
    /// Placement-rule-3 carriers: records that map to no message, kept whole.
    pub carriers: u64,
    /// Sessions written natively / foreign.
    pub native_sessions: u64,
    pub foreign_sessions: u64,
    /// Faults in the source, located.
    pub errors: Vec<ParseError>,
    /// Writes that failed (the source named, then what failed).
    pub write_errors: Vec<String>,
    /// What the target could not express.
    pub losses: Losses,
    /// The sessions written, with their resume commands.
    pub written: Vec<Written>,
    /// Files that existed already with exactly the bytes this run would have written: left as
    /// they were, their sessions counted in `written` (the same session converted or restored
    /// again). Relative paths.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unchanged: Vec<String>,
    /// Files that existed already holding the start of what this run writes, ending at a
    /// line's end (the source grew since they were written): the rest was appended, their
    /// sessions counted in `written`. Relative paths.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub extended: Vec<String>,
}

impl Summary {
    /// Whether every source was read and written without a fault.
    pub fn is_clean(&self) -> bool {
        self.errors.is_empty() && self.write_errors.is_empty()
    }

    /// Keeps in [`Summary::written`] only the sessions whose main file `out` delivered: created
    /// by this run, found holding exactly what it would write ([`Summary::unchanged`]), or
    /// holding its start and extended ([`Summary::extended`]). A
    /// writer names a session when it starts it; a write refused because the file exists
    /// already with other content (pond never overwrites) leaves it named but unwritten.
    pub fn keep_delivered(&mut self, out: &crate::output::DirOutput) {
        let delivered = out.delivered();
        let delivered: HashSet<&str> = delivered.iter().map(String::as_str).collect();
        self.written.retain(|w| delivered.contains(w.file.as_str()));
        self.unchanged = out.unchanged().to_vec();
        self.extended = out.extended().to_vec();
    }

    /// Counts one carrier handed over as its source line: a message with no parts.
    fn count_carried(&mut self) {
        self.messages += 1;
        self.carriers += 1;
    }

    /// Counts one event.
    pub fn count(&mut self, event: &Event) {
        match event {
            Event::Session(_) => self.sessions += 1,
            Event::Message(m) => {
                self.messages += 1;
                // Borrowed: cloning every part (tool results and all) just to count them
                // cost as much as the parse.
                self.parts += m.part_count() as u64;
                self.injected_parts += m
                    .part_provenances()
                    .filter(|p| *p == Provenance::Injected)
                    .count() as u64;
                if let Message::System(s) = m
                    && s.carried_record().is_some()
                {
                    self.carriers += 1;
                }
            }
        }
    }
}

/// Why a conversion could not start.
#[derive(Debug)]
pub enum ConvertError {
    /// The source codec cannot read, or the target cannot write.
    MissingFace {
        codec: &'static str,
        face: &'static str,
    },
    /// The input could not be listed.
    Discover(ParseError),
}

impl std::fmt::Display for ConvertError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::MissingFace { codec, face } => write!(f, "codec {codec} has no {face} face"),
            Self::Discover(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for ConvertError {}

/// Converts every session found at `input` from `from` to `to`, writing into `out`.
/// `progress` is told (sources done, sources total) as the work goes.
pub fn convert(
    from: &Codec,
    to: &Codec,
    layout: Layout,
    input: &Path,
    out: &mut dyn Output,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<Summary, ConvertError> {
    convert_with_project(from, to, layout, input, None, out, progress)
}

/// [`convert`], with the project the person converting names for sessions whose source names
/// none (`pond convert --project`; see [`Origin::with_user_project`]).
pub fn convert_with_project(
    from: &Codec,
    to: &Codec,
    layout: Layout,
    input: &Path,
    user_project: Option<&str>,
    out: &mut dyn Output,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<Summary, ConvertError> {
    let reader = from.read.ok_or(ConvertError::MissingFace {
        codec: from.name,
        face: "read",
    })?;
    let mut sources = reader.discover(input).map_err(ConvertError::Discover)?;
    if let Some(project) = user_project {
        sources = sources
            .into_iter()
            .map(|o| o.with_user_project(project))
            .collect();
    }
    convert_sources(from, to, layout, &sources, out, progress)
}

/// Converts the given source units (already discovered). A conversion reads on a thread of its
/// own on a machine with a second processor, unless `POND_THREADS=1`; what it writes and
/// reports is the same either way.
pub fn convert_sources(
    from: &Codec,
    to: &Codec,
    layout: Layout,
    sources: &[Origin],
    out: &mut dyn Output,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<Summary, ConvertError> {
    convert_on(from, to, layout, sources, out, progress, pipelined(), true)
}

/// [`convert_sources`], reading on a thread of its own when `pipelined`, and, when `prune` and
/// the write is foreign, leaving unbuilt what the writer never reads
/// ([`ReadFace::read_items_for`]).
#[allow(clippy::too_many_arguments)]
fn convert_on(
    from: &Codec,
    to: &Codec,
    layout: Layout,
    sources: &[Origin],
    out: &mut dyn Output,
    progress: &mut dyn FnMut(usize, usize),
    pipelined: bool,
    prune: bool,
) -> Result<Summary, ConvertError> {
    let reader = from.read.ok_or(ConvertError::MissingFace {
        codec: from.name,
        face: "read",
    })?;
    let face = to.write.ok_or(ConvertError::MissingFace {
        codec: to.name,
        face: "write",
    })?;
    let mut writer = face.writer(layout);
    let mut summary = Summary::default();
    // Every session a codec reads is of its own brand: a writer of another brand writes them
    // all foreign, and reads of their options only the keys it names.
    let wanted = (prune && from.source_agent != to.source_agent)
        .then(|| writer.option_keys())
        .flatten()
        .map(|keys| Wanted {
            keys,
            reasoning_lines: writer.takes_reasoning_lines(),
        });
    let read =
        |source: &Origin, defer: bool, emit: &mut dyn FnMut(Result<Item<'_>, ParseError>)| {
            match wanted {
                Some(wanted) => reader.read_items_for(source, defer, wanted, emit),
                None => reader.read_items(source, defer, emit),
            }
        };
    // Carriers travel as their source lines (`ReadFace::read_items`): a native writer copies
    // them, a foreign one builds their messages only if it needs them. On one thread the lines
    // are borrowed from the reader's buffer; across threads, copied (`OwnedCarried`).
    // Two threads unless asked for one, or unless the system will not start a second (a
    // process at its thread limit): then the conversion runs on this one, from its start.
    let mut one_thread = !pipelined;
    if pipelined {
        // A conversion in two stages on two threads: the read face (parsing and mapping) runs
        // ahead on its own thread while this one writes, so the conversion takes about as long
        // as the slower stage, not the sum of both. Events are owned, and cross in batches over
        // a bounded channel and come back to be dropped where they were made: at most
        // `PIPELINE_DEPTH + 3` batches of `PIPELINE_BATCH` events exist, whatever the input.
        // A deferred message is made, written and dropped by this thread when it takes it
        // (`Item::Deferred`), which it does while `queued` is zero: it would wait otherwise.
        // Batches sent and not yet taken by the writing thread.
        let queued = &AtomicUsize::new(0);
        one_thread = !std::thread::scope(|scope| {
            let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<Piece>>(PIPELINE_DEPTH);
            let (recycle, reuse) = std::sync::mpsc::channel::<Vec<Piece>>();
            let reading = std::thread::Builder::new().name("pond-read".into());
            let started = reading.spawn_scoped(scope, move || {
                // A written batch comes back with its events, which are dropped here: memory
                // is freed by the thread that allocated it, the allocator's fast path.
                let fresh = || match reuse.try_recv() {
                    Ok(mut done) => {
                        done.clear();
                        done
                    }
                    Err(_) => Vec::with_capacity(PIPELINE_BATCH),
                };
                let mut batch = fresh();
                for source in sources {
                    let mut closed = false;
                    read(source, true, &mut |item| {
                        if closed {
                            return;
                        }
                        // A carrier crosses as its line (a copy of its text): the writer builds
                        // its message only if it needs it, as on one thread.
                        match item {
                            Ok(Item::Carried(carried)) => {
                                batch.push(Piece::Carried(carried.to_owned()))
                            }
                            Ok(Item::Reasoning(line)) => {
                                batch.push(Piece::Reasoning(line.to_owned()))
                            }
                            Ok(Item::Event(event)) => batch.push(Piece::Item(Ok(event))),
                            Err(e) => batch.push(Piece::Item(Err(e))),
                            // The writing thread makes the message while it has nothing queued
                            // (it would wait otherwise); this one, while it has.
                            Ok(Item::Deferred(make) | Item::Parsed(make))
                                if queued.load(Ordering::Relaxed) > 0 =>
                            {
                                make(source, &mut |made| {
                                    batch.push(Piece::Item(made.map(Event::Message)))
                                })
                            }
                            Ok(Item::Deferred(make)) => batch.push(Piece::Deferred(make)),
                            Ok(Item::Parsed(make)) => batch.push(Piece::Parsed(make)),
                        }
                        if batch.len() >= PIPELINE_BATCH {
                            queued.fetch_add(1, Ordering::Relaxed);
                            closed = tx.send(std::mem::replace(&mut batch, fresh())).is_err();
                        }
                    });
                    batch.push(Piece::End);
                    queued.fetch_add(1, Ordering::Relaxed);
                    // The writer gone (it panicked) ends the reading too.
                    if closed || tx.send(std::mem::replace(&mut batch, fresh())).is_err() {
                        return;
                    }
                }
            });
            if started.is_err() {
                return false;
            }
            let mut batches = rx.into_iter();
            let mut batch = Vec::new();
            let mut at = 0;
            for (i, source) in sources.iter().enumerate() {
                progress(i, sources.len());
                summary.sources += 1;
                let mut feed =
                    Feed::of_unit(to, writer.as_mut(), &mut *out, &mut summary, reader, source);
                loop {
                    let Some(piece) = batch.get_mut(at) else {
                        let _ = recycle.send(std::mem::take(&mut batch));
                        at = 0;
                        match batches.next() {
                            Some(next) => {
                                queued.fetch_sub(1, Ordering::Relaxed);
                                batch = next;
                                continue;
                            }
                            None => break,
                        }
                    };
                    at += 1;
                    match piece {
                        Piece::Item(Ok(event)) => feed.event(event),
                        Piece::Item(Err(e)) => feed.summary.errors.push(e.clone()),
                        Piece::Carried(carried) => feed.carried(&carried.carried(source)),
                        Piece::Reasoning(line) => feed.reasoning(&line.reasoning(source)),
                        Piece::Deferred(_) => {
                            // Taken out to be run; an `End` is left in its place.
                            if let Piece::Deferred(make) = std::mem::replace(piece, Piece::End) {
                                make(source, &mut |made| feed.made(made));
                            }
                        }
                        Piece::Parsed(_) => {
                            // Taken out to be run; what it made is left in its place, to be
                            // freed with the batch on the reading thread.
                            if let Piece::Parsed(make) = std::mem::replace(piece, Piece::End) {
                                let mut made = Vec::new();
                                make(source, &mut |m| match m {
                                    Ok(message) => {
                                        let event = Event::Message(message);
                                        feed.event(&event);
                                        made.push(event);
                                    }
                                    Err(e) => feed.summary.errors.push(e),
                                });
                                *piece = Piece::Made(made);
                            }
                        }
                        Piece::Made(_) => {}
                        Piece::End => break,
                    }
                }
                feed.end(&source.path().display().to_string());
            }
            true
        });
    }
    if one_thread {
        for (i, source) in sources.iter().enumerate() {
            progress(i, sources.len());
            summary.sources += 1;
            let mut feed =
                Feed::of_unit(to, writer.as_mut(), &mut *out, &mut summary, reader, source);
            // On one thread, carriers travel as their lines to a foreign writer too: one that
            // drops them need not build their messages (the Claude Code writer).
            read(source, false, &mut |item| feed.item(item, source));
            feed.end(&source.path().display().to_string());
        }
    }
    progress(sources.len(), sources.len());
    Ok(summary)
}

/// Whether a conversion reads on a thread of its own: on a machine with a second processor,
/// unless `POND_THREADS=1` asks for one thread. Measured on the 2-core machine against the
/// naive round trip, since carriers cross threads as their lines: two threads took 6-32% less
/// wall time for every pair on a quiet machine, within 5% of one thread with another process
/// busy on one core, and with both cores busy 15-24% less for two pairs of three and 6% more
/// for the third (docs/benchmarks.md, "Conversions against a naive round trip built outside
/// the workspace").
fn pipelined() -> bool {
    let asked = std::env::var("POND_THREADS")
        .ok()
        .and_then(|n| n.parse::<usize>().ok())
        .unwrap_or(2);
    let cores = std::thread::available_parallelism()
        .map(usize::from)
        .unwrap_or(1);
    asked > 1 && cores > 1
}

/// Events per batch handed from the reading thread to the writing one, and batches queued.
const PIPELINE_BATCH: usize = 256;
const PIPELINE_DEPTH: usize = 2;

/// What the reading thread of [`convert_sources`] hands over: one event or fault of the
/// current source unit, a carrier as its line, a message for the writing thread to make, or
/// the unit's end; and what the writing thread leaves in a batch for the reading thread to free
/// (`Made`).
enum Piece {
    Item(Result<Event, ParseError>),
    Carried(OwnedCarried),
    Reasoning(OwnedReasoning),
    Deferred(Deferred),
    /// A message to make from a record the reading thread parsed ([`Item::Parsed`]).
    Parsed(Deferred),
    /// What the writing thread made of a `Parsed`, written, and left in its place to be freed
    /// on the reading thread with the batch.
    Made(#[allow(dead_code, reason = "held only to be dropped where it was allocated")] Vec<Event>),
    End,
}

/// Writes canonical events (a stored session and its children, say) with `to`, as one source
/// unit: the path a conversion takes from a read face, minus the reading. Each session's
/// `Session` event must come before its messages (adapter-integrity-event-ordering).
pub fn write_events(
    to: &Codec,
    layout: Layout,
    unit: &str,
    events: impl IntoIterator<Item = Event>,
    out: &mut dyn Output,
) -> Result<Summary, ConvertError> {
    let face = to.write.ok_or(ConvertError::MissingFace {
        codec: to.name,
        face: "write",
    })?;
    let mut writer = face.writer(layout);
    let mut summary = Summary {
        sources: 1,
        ..Summary::default()
    };
    let mut feed = Feed::new(to, writer.as_mut(), out, &mut summary);
    for event in events {
        feed.event(&event);
    }
    feed.end(unit);
    Ok(summary)
}

/// Feeds one source unit's events into a writer: counts them, lets the system decide native or
/// foreign per session (spec 6.3), and stops writing (not counting) after a write fails.
struct Feed<'a> {
    to: &'a Codec,
    writer: &'a mut dyn SessionWriter,
    out: &'a mut dyn Output,
    summary: &'a mut Summary,
    losses: Losses,
    failed: Option<WriteError>,
    /// The unit being read and its reader, to read a parent's history again for a fork written
    /// foreign ([`Self::replay_history`]); `None` for events that come from no reader.
    unit: Option<(&'a dyn ReadFace, &'a Origin)>,
    /// The sessions of the unit so far.
    seen: HashSet<SessionId>,
}

impl<'a> Feed<'a> {
    fn new(
        to: &'a Codec,
        writer: &'a mut dyn SessionWriter,
        out: &'a mut dyn Output,
        summary: &'a mut Summary,
    ) -> Self {
        Self {
            to,
            writer,
            out,
            summary,
            losses: Losses::default(),
            failed: None,
            unit: None,
            seen: HashSet::new(),
        }
    }

    /// A feed of the unit `source`, read by `reader`.
    fn of_unit(
        to: &'a Codec,
        writer: &'a mut dyn SessionWriter,
        out: &'a mut dyn Output,
        summary: &'a mut Summary,
        reader: &'a dyn ReadFace,
        source: &'a Origin,
    ) -> Self {
        Self {
            unit: Some((reader, source)),
            ..Self::new(to, writer, out, summary)
        }
    }

    /// A fork with a cut-point whose parent is earlier in this unit (a pi side branch), written
    /// into another harness: its parent's messages through the cut-point are read again and
    /// written in it first, as `restore::lineage` replays them from the store. Canonically a
    /// branch holds only what follows its cut-point; the other harness resumes a session from
    /// its own lines alone, and without them it began with the answer to a prompt it did not
    /// hold (issue 22's user trial). The unit is read again, once per such fork, and each
    /// message is written as it is read: nothing of the parent is held.
    fn replay_history(&mut self, fork: &Session) {
        let (Some((reader, source)), Some(parent), Some(cut)) = (
            self.unit,
            fork.parent_session_id.as_ref(),
            fork.parent_message_id.as_ref(),
        ) else {
            return;
        };
        if !self.seen.contains(parent) {
            return;
        }
        let mut through = false;
        reader.read(source, &mut |item| {
            // The unit's faults were reported on its first reading.
            if let (false, Ok(Event::Message(m))) = (through, item)
                && m.session_id() == parent
            {
                through = m.id() == cut;
                let replayed = m.replayed_in(&fork.id);
                self.write(|writer, target| writer.message(&replayed, target));
            }
        });
    }

    /// One item of `source`, the unit being read.
    fn item(&mut self, item: Result<Item<'_>, ParseError>, source: &Origin) {
        match item {
            Err(e) => self.summary.errors.push(e),
            Ok(Item::Event(event)) => self.event(&event),
            Ok(Item::Carried(carried)) => self.carried(&carried),
            Ok(Item::Reasoning(line)) => self.reasoning(&line),
            Ok(Item::Deferred(make) | Item::Parsed(make)) => {
                make(source, &mut |made| self.made(made))
            }
        }
    }

    /// A deferred message, made: the message, or the fault its making met.
    fn made(&mut self, made: Result<Message, ParseError>) {
        match made {
            Ok(message) => self.event(&Event::Message(message)),
            Err(e) => self.summary.errors.push(e),
        }
    }

    /// A carrier still in its source line's text.
    fn carried(&mut self, carried: &CarriedLine<'_>) {
        self.summary.count_carried();
        self.write(|writer, target| writer.carried(carried, target));
    }

    /// A line of unsigned reasoning alone, counted as the message it stands for.
    fn reasoning(&mut self, line: &ReasoningLine<'_>) {
        self.summary.messages += 1;
        self.summary.parts += line.parts as u64;
        self.write(|writer, target| writer.reasoning(line, target));
    }

    /// One event, borrowed: the writer clones what it keeps.
    fn event(&mut self, event: &Event) {
        self.summary.count(event);
        match event {
            Event::Session(s) => {
                let fidelity = Fidelity::decide(s, self.to.source_agent);
                if self.failed.is_none() {
                    match fidelity {
                        Fidelity::Native => self.summary.native_sessions += 1,
                        Fidelity::Foreign => self.summary.foreign_sessions += 1,
                    }
                }
                self.write(|writer, target| writer.session(s, fidelity, target));
                if fidelity == Fidelity::Foreign && s.parent_message_id.is_some() {
                    self.replay_history(s);
                }
                if self.unit.is_some() {
                    self.seen.insert(s.id.clone());
                }
            }
            Event::Message(m) => self.write(|writer, target| writer.message(m, target)),
        }
    }

    /// One step of the writer, unless an earlier one failed (then nothing more is written).
    fn write(
        &mut self,
        step: impl FnOnce(&mut dyn SessionWriter, &mut Target<'_>) -> Result<(), WriteError>,
    ) {
        if self.failed.is_some() {
            return;
        }
        let mut target = Target {
            out: &mut *self.out,
            losses: &mut self.losses,
            written: &mut self.summary.written,
        };
        self.failed = step(&mut *self.writer, &mut target).err();
    }

    fn end(mut self, unit: &str) {
        if self.failed.is_none() {
            self.write(|writer, target| writer.end_source(target));
        } else {
            // The writer still ends the unit, so nothing it holds (a streaming writer's open
            // sessions) leaks into the next one; what it would write now is dropped.
            let mut target = Target {
                out: &mut Discard,
                losses: &mut Losses::default(),
                written: &mut Vec::new(),
            };
            let _ = self.writer.end_source(&mut target);
        }
        if let Err(e) = self.out.end_unit() {
            self.failed.get_or_insert(e);
        }
        if let Some(e) = self.failed.take() {
            self.summary.write_errors.push(format!("{unit}: {e}"));
        }
        let losses = std::mem::take(&mut self.losses);
        self.summary.losses.merge(losses);
    }
}

/// An output that keeps nothing: where a unit's writer ends after one of its writes failed.
struct Discard;

impl Output for Discard {
    fn append(&mut self, _relative: &str, _bytes: &[u8]) -> Result<(), WriteError> {
        Ok(())
    }
}

/// The events of one source unit as a write into another harness carries them: each fork with
/// a cut-point whose parent comes earlier in the unit (a pi side branch) also holds its
/// parent's messages through the cut-point, replayed in it right after its `Session`, as
/// [`convert`] writes them (`Feed::replay_history`). For checks that compare a foreign write
/// with its source.
pub fn with_fork_histories(events: &[Event]) -> Vec<Event> {
    let mut out = Vec::with_capacity(events.len());
    let mut seen: HashSet<&SessionId> = HashSet::new();
    for event in events {
        out.push(event.clone());
        let Event::Session(fork) = event else {
            continue;
        };
        if let (Some(parent), Some(cut)) = (&fork.parent_session_id, &fork.parent_message_id)
            && seen.contains(parent)
        {
            let history = events.iter().filter_map(|e| match e {
                Event::Message(m) if m.session_id() == parent => Some(m),
                _ => None,
            });
            for m in history {
                out.push(Event::Message(m.replayed_in(&fork.id)));
                if m.id() == cut {
                    break;
                }
            }
        }
        seen.insert(&fork.id);
    }
    out
}

/// Reads every session at `input` with `codec`, collecting events and faults (for tests, the
/// conformance suite, and small inputs; large inputs should stream through [`convert`]).
pub fn read_all(
    codec: &Codec,
    input: &Path,
) -> Result<(Vec<Event>, Vec<ParseError>), ConvertError> {
    let reader = codec.read.ok_or(ConvertError::MissingFace {
        codec: codec.name,
        face: "read",
    })?;
    let mut events = Vec::new();
    let mut errors = Vec::new();
    for source in reader.discover(input).map_err(ConvertError::Discover)? {
        reader.read(&source, &mut |item| match item {
            Ok(e) => events.push(e),
            Err(e) => errors.push(e),
        });
    }
    Ok((events, errors))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::MemoryOutput;
    use crate::registry::CODECS;
    use std::path::PathBuf;

    /// Converts `sources` serially and pipelined, each with and without leaving unbuilt what
    /// the writer never reads: the written files and the whole summary (counts, faults in
    /// order, losses, written sessions) must be the same all four ways.
    fn both_ways(from: &Codec, to: &Codec, sources: &[Origin]) -> Summary {
        both_ways_written(from, to, sources).1
    }

    /// [`both_ways`], with the files written.
    fn both_ways_written(
        from: &Codec,
        to: &Codec,
        sources: &[Origin],
    ) -> (std::collections::BTreeMap<String, Vec<u8>>, Summary) {
        let run = |pipelined, prune| {
            let mut out = MemoryOutput::default();
            let summary = convert_on(
                from,
                to,
                Layout::Mirror,
                sources,
                &mut out,
                &mut |_, _| {},
                pipelined,
                prune,
            )
            .expect("both faces exist");
            (out.files, summary)
        };
        let (serial_files, serial) = run(false, false);
        let label = format!("{} -> {}", from.name, to.name);
        for (pipelined, prune) in [(true, false), (false, true), (true, true)] {
            let (files, summary) = run(pipelined, prune);
            let way = format!("{label} (pipelined {pipelined}, pruned {prune})");
            assert_eq!(serial_files, files, "{way}: written files");
            assert_eq!(
                serde_json::to_value(&serial).unwrap(),
                serde_json::to_value(&summary).unwrap(),
                "{way}: summary"
            );
        }
        (serial_files, serial)
    }

    /// Every pair, native ones too: carriers cross the threads as copies of their lines, and a
    /// writer that needs one's message (a Codex `turn_context` naming the model, for Claude
    /// Code) makes it on the writing thread.
    #[test]
    fn a_pipelined_conversion_writes_and_reports_what_a_serial_one_does() {
        let shared = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/fixtures");
        let (mut pairs, mut carriers) = (0, 0);
        for from in CODECS {
            let reader = from.read.expect("every codec reads");
            let sources = reader
                .discover(&shared.join(from.name))
                .expect("the shared fixtures are beside the checkout");
            assert!(sources.len() > 1, "{}: several sources", from.name);
            for to in CODECS {
                let summary = both_ways(from, to, &sources);
                assert_eq!(summary.sources, sources.len() as u64);
                let sessions = if to.name == from.name {
                    summary.native_sessions
                } else {
                    summary.foreign_sessions
                };
                assert!(sessions > 0, "{} -> {}", from.name, to.name);
                carriers += summary.carriers;
                pairs += 1;
            }
        }
        assert_eq!(pairs, CODECS.len() * CODECS.len());
        assert!(carriers > 0, "the fixtures hold carriers");
    }

    #[test]
    fn faults_keep_their_place_across_the_threads() {
        // More events than one batch, a bad line in the middle, then a source that cannot be
        // read and one without a session.
        let dir = std::env::temp_dir().join(format!("pond-convert-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut rollout = String::from(
            r#"{"timestamp":"2026-01-01T00:00:00Z","type":"session_meta","payload":{"id":"019c8a4c-ed82-79a1-aa28-7738fc5ab61a","timestamp":"2026-01-01T00:00:00Z","cwd":"/w"}}"#,
        );
        rollout.push('\n');
        for i in 0..(PIPELINE_BATCH * 3) {
            if i == PIPELINE_BATCH + 7 {
                rollout.push_str("{not json\n");
            }
            rollout.push_str(&format!(
                r#"{{"timestamp":"2026-01-01T00:00:01Z","type":"response_item","payload":{{"type":"message","role":"user","content":[{{"type":"input_text","text":"turn {i}"}}]}}}}"#
            ));
            rollout.push('\n');
        }
        std::fs::write(dir.join("a.jsonl"), rollout).unwrap();
        std::fs::write(
            dir.join("c.jsonl"),
            "{\"type\":\"event_msg\",\"payload\":{}}\n",
        )
        .unwrap();
        let codex = crate::registry::find("codex").unwrap();
        let claude = crate::registry::find("claude-code").unwrap();
        let mut sources = codex.read.unwrap().discover(&dir).unwrap();
        sources.insert(
            1,
            Origin::new("codex", dir.join("b-missing.jsonl"), "b-missing.jsonl"),
        );
        let summary = both_ways(codex, claude, &sources);
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(summary.messages, (PIPELINE_BATCH * 3) as u64);
        let lines: Vec<String> = summary.errors.iter().map(|e| e.to_string()).collect();
        assert_eq!(lines.len(), 3, "{lines:#?}");
        assert!(
            lines[0].contains(&format!("a.jsonl:{}: invalid JSON", PIPELINE_BATCH + 9)),
            "{lines:#?}"
        );
        assert!(lines[1].contains("b-missing.jsonl"), "{lines:#?}");
        assert!(lines[2].contains("c.jsonl"), "{lines:#?}");
    }

    /// A `response_item` line whose fault comes after its `type` (bytes that are not UTF-8, a
    /// raw control byte in a string, a cut-off tail) is handed over at its `type`, before the
    /// survey's walk would have found the fault: made on either thread, it is reported as the
    /// serial reading reports it, at its line, and every other line is converted.
    #[test]
    fn a_fault_after_a_response_items_type_is_reported_at_its_line_either_way() {
        let dir = std::env::temp_dir().join(format!("pond-late-fault-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut rollout = br#"{"timestamp":"2026-01-01T00:00:00Z","type":"session_meta","payload":{"id":"019c8a4c-ed82-79a1-aa28-7738fc5ab61a","timestamp":"2026-01-01T00:00:00Z","cwd":"/w"}}"#.to_vec();
        rollout.push(b'\n');
        let item = |text: &[u8]| {
            let mut line = br#"{"timestamp":"2026-01-01T00:00:01Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":""#.to_vec();
            line.extend_from_slice(text);
            line.extend_from_slice(b"\"}]}}\n");
            line
        };
        let faulty: [&[u8]; 3] = [b"not \xff UTF-8", b"a raw \x01 byte", b"cut off"];
        let mut at = Vec::new();
        for i in 0..(PIPELINE_BATCH * 3) {
            if i % PIPELINE_BATCH == 5 {
                let fault = faulty[i / PIPELINE_BATCH];
                at.push(rollout.iter().filter(|&&b| b == b'\n').count() + 1);
                let mut line = item(fault);
                if i / PIPELINE_BATCH == 2 {
                    // The line ends inside its payload's text.
                    line.truncate(line.len() - "\"}]}}\n".len());
                    line.push(b'\n');
                }
                rollout.extend(line);
            }
            rollout.extend(item(format!("turn {i}").as_bytes()));
        }
        std::fs::write(dir.join("a.jsonl"), rollout).unwrap();
        let codex = crate::registry::find("codex").unwrap();
        let claude = crate::registry::find("claude-code").unwrap();
        let sources = codex.read.unwrap().discover(&dir).unwrap();
        let summary = both_ways(codex, claude, &sources);
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(summary.messages, (PIPELINE_BATCH * 3) as u64);
        let lines: Vec<String> = summary.errors.iter().map(|e| e.to_string()).collect();
        assert_eq!(lines.len(), 3, "{lines:#?}");
        for (line, n) in lines.iter().zip(&at) {
            assert!(line.contains(&format!("a.jsonl:{n}:")), "{n}: {lines:#?}");
        }
    }

    /// Codex reasoning lines written into Claude Code, which holds no unsigned reasoning: the
    /// first of each loss kind is made into its message, every later one only counted from its
    /// line (`Item::Reasoning`), and the file and summary are those of the serial, unpruned
    /// conversion ([`both_ways_written`]): a reasoning line between a prompt and the answer
    /// opens the response the answer's call joins, one after a result or at the end of a turn
    /// opens one that holds nothing, and one of another shape is read as before.
    #[test]
    fn codex_reasoning_lines_are_counted_into_claude_code_as_their_messages_are() {
        let header = r#"{"timestamp":"2026-01-01T00:00:00Z","type":"session_meta","payload":{"id":"019c8a4c-ed82-79a1-aa28-7738fc5ab61a","timestamp":"2026-01-01T00:00:00Z","cwd":"/w"}}"#;
        let item = |n: usize, payload: &str| {
            format!(
                r#"{{"timestamp":"2026-01-01T00:00:{n:02}Z","type":"response_item","payload":{payload}}}"#
            )
        };
        let reasoning = |texts: &[&str], encrypted: &str| {
            let summary: Vec<String> = texts
                .iter()
                .map(|t| format!(r#"{{"type":"summary_text","text":"{t}"}}"#))
                .collect();
            format!(
                r#"{{"type":"reasoning","summary":[{}],"content":null,"encrypted_content":{encrypted}}}"#,
                summary.join(",")
            )
        };
        let user = |t: &str| {
            format!(
                r#"{{"type":"message","role":"user","content":[{{"type":"input_text","text":"{t}"}}]}}"#
            )
        };
        let call = |id: &str| {
            format!(
                r#"{{"type":"function_call","name":"shell","arguments":"{{\"cmd\":[\"ls\"]}}","call_id":"{id}"}}"#
            )
        };
        let output = |id: &str| {
            format!(r#"{{"type":"function_call_output","call_id":"{id}","output":"a\nb"}}"#)
        };
        let answer = |t: &str| {
            format!(
                r#"{{"type":"message","role":"assistant","content":[{{"type":"output_text","text":"{t}"}}]}}"#
            )
        };
        let payloads = [
            user("first"),
            reasoning(&["**Planning**", "look first"], r#""gAAA1""#),
            call("c1"),
            output("c1"),
            reasoning(&["**Reading**"], r#""gAAA2""#),
            answer("done"),
            user("second"),
            reasoning(&[], "null"),
            reasoning(&["**Again**"], r#""gAAA3""#),
            call("c2"),
            reasoning(&["**Between**"], r#""gAAA4""#),
            output("c2"),
            // Read as before: a member the shape does not have.
            r#"{"type":"reasoning","id":"rs_9","summary":[{"type":"summary_text","text":"x"}]}"#
                .to_owned(),
            answer("done again"),
            reasoning(&["**Trailing**"], r#""gAAA5""#),
        ];
        let mut rollout = format!("{header}\n");
        for (n, payload) in payloads.iter().enumerate() {
            rollout.push_str(&item(n + 1, payload));
            rollout.push('\n');
        }
        let (text, lines, summary) = jsonl_converted(
            "codex",
            "claude-code",
            "rollout-2026-01-01T00-00-00-019c8a4c-ed82-79a1-aa28-7738fc5ab61a.jsonl",
            rollout.as_bytes(),
        );
        assert_eq!(summary.messages, payloads.len() as u64);
        let loss = |kind: &str| summary.losses.kinds.get(kind).map(|l| l.count);
        // One per part: 2 + 1 + 1 + 1 + 1 (the odd one) + 1.
        assert_eq!(loss("reasoning_unsigned"), Some(7), "{:?}", summary.losses);
        assert_eq!(loss("reasoning_encrypted_content"), Some(5));
        assert!(
            !text.contains("Planning") && !text.contains("gAAA"),
            "{text}"
        );
        // Two prompts, two calls with their results, two answers.
        let kinds: Vec<&str> = lines.iter().filter_map(|l| l["type"].as_str()).collect();
        assert_eq!(
            kinds.iter().filter(|k| **k == "assistant").count(),
            4,
            "{kinds:?}"
        );
        assert_eq!(
            kinds.iter().filter(|k| **k == "user").count(),
            4,
            "{kinds:?}"
        );
    }

    /// A Codex tool output read as its JSON text (`Json::from_json_text`) is written by every
    /// foreign writer as the same output read as its value is, to the byte: the Claude Code, pi
    /// and opencode writers copy the text. The two rollouts differ only in how their outputs
    /// are spelled: serde_json's escapes (held as text), or one character as a `\u` escape
    /// serde_json does not write (read as a value).
    #[test]
    fn a_tool_output_held_as_its_text_is_written_as_its_value_is() {
        let header = r#"{"timestamp":"2026-01-01T00:00:00Z","type":"session_meta","payload":{"id":"019c8a4c-ed82-79a1-aa28-7738fc5ab61a","timestamp":"2026-01-01T00:00:00Z","cwd":"/w"}}"#;
        let rollout = |spelled: &dyn Fn(&str) -> String| {
            let item = |n: usize, payload: &str| {
                format!(
                    r#"{{"timestamp":"2026-01-01T00:00:{n:02}Z","type":"response_item","payload":{payload}}}"#
                )
            };
            let outputs = [
                r#"plain"#,
                r#"tab\tline\nquote \" back \\ ctl \u0001 \u001f"#,
                "unicode é 😀 </tag> \\b\\f\\r",
                "",
            ];
            let mut text = format!("{header}\n");
            let mut n = 0;
            for (i, output) in outputs.iter().enumerate() {
                let payloads = [
                    format!(
                        r#"{{"type":"message","role":"user","content":[{{"type":"input_text","text":"do {i}"}}]}}"#
                    ),
                    format!(
                        r#"{{"type":"function_call","name":"shell","arguments":"{{\"cmd\":[\"ls\"]}}","call_id":"c{i}"}}"#
                    ),
                    format!(
                        r#"{{"type":"function_call_output","call_id":"c{i}","output":"{}"}}"#,
                        spelled(output)
                    ),
                    format!(
                        r#"{{"type":"message","role":"assistant","content":[{{"type":"output_text","text":"done {i}"}}]}}"#
                    ),
                ];
                for payload in payloads {
                    n += 1;
                    text.push_str(&item(n, &payload));
                    text.push('\n');
                }
            }
            text
        };
        let held = rollout(&|o| o.to_owned());
        // `a` as `\u0061`: the same value, in a text serde_json would not write.
        let as_value = rollout(&|o| o.replacen('a', "\\u0061", 1));
        assert_ne!(held, as_value);
        let name = "rollout-2026-01-01T00-00-00-019c8a4c-ed82-79a1-aa28-7738fc5ab61a.jsonl";
        for to in ["claude-code", "pi", "opencode"] {
            let (by_text, summary) = converted("codex", to, name, held.as_bytes());
            let (by_value, _) = converted("codex", to, name, as_value.as_bytes());
            assert_eq!(summary.messages, 16, "{to}");
            assert!(by_text.contains("ctl \\u0001 \\u001f"), "{to}: {by_text}");
            assert_eq!(by_text, by_value, "{to}");
        }
    }

    /// Where `what` first occurs in a written file; the test fails naming it if it does not.
    /// The one file `from` (a JSONL codec) converts `session` (a file named `name`) into, `to`
    /// (a JSONL target) both ways ([`both_ways_written`]): its text, its lines, the summary.
    fn jsonl_converted(
        from: &str,
        to: &str,
        name: &str,
        session: &[u8],
    ) -> (String, Vec<serde_json::Value>, Summary) {
        let (text, summary) = converted(from, to, name, session);
        let lines = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        (text, lines, summary)
    }

    /// `session` (a file named `name` of `from`) converted into `to`, both ways
    /// ([`both_ways_written`]): the one file written and the summary.
    fn converted(from: &str, to: &str, name: &str, session: &[u8]) -> (String, Summary) {
        let dir = std::env::temp_dir().join(format!(
            "pond-convert-{from}-{to}-{name}-{}",
            std::process::id()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(name), session).unwrap();
        let from = crate::registry::find(from).unwrap();
        let to = crate::registry::find(to).unwrap();
        let sources = from.read.unwrap().discover(&dir).unwrap();
        let (files, summary) = both_ways_written(from, to, &sources);
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(files.len(), 1, "{:?}", files.keys());
        let text = String::from_utf8_lossy(files.values().next().unwrap()).into_owned();
        (text, summary)
    }

    fn place_in(text: &str, what: &str) -> usize {
        text.find(what)
            .unwrap_or_else(|| panic!("no {what}: {text}"))
    }

    /// A Claude Code session with a compaction (a `compact_boundary` beginning a new chain and
    /// its `isCompactSummary` line) between an early and a later turn, then a boundary that
    /// continues its chain (`NOT A CUT`), converted into `to`: the file written and the summary.
    fn claude_compaction_into(to: &str) -> (String, Summary) {
        let dir = std::env::temp_dir().join(format!("pond-compact-{to}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let line = |uuid: &str, parent: &str, rest: &str| {
            format!(
                r#"{{"uuid":"{uuid}","parentUuid":{parent},"sessionId":"5e0c5d6e-1f4a-4c3b-9a0d-6f1e2d3c4b5a","cwd":"/w","timestamp":"2026-01-01T00:00:0{}Z",{rest}}}"#,
                uuid.len() % 10
            ) + "\n"
        };
        let user =
            |text: &str| format!(r#""type":"user","message":{{"role":"user","content":"{text}"}}"#);
        let session = [
            line("u1", "null", &user("EARLY PROMPT")),
            line("a1", r#""u1""#, r#""type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"EARLY ANSWER"}]}"#),
            line("b1", "null", r#""type":"system","subtype":"compact_boundary","content":"Conversation compacted","logicalParentUuid":"a1","compactMetadata":{"trigger":"auto","preTokens":9}"#),
            line("s1", r#""b1""#, &(user("SUMMARY OF EARLIER") + r#","isCompactSummary":true"#)),
            line("u2", r#""s1""#, &user("LATER PROMPT")),
            line("a2", r#""u2""#, r#""type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"LATER ANSWER"}]}"#),
            line("b2", r#""a2""#, r#""type":"system","subtype":"compact_boundary","content":"NOT A CUT""#),
        ]
        .concat();
        std::fs::write(dir.join("s.jsonl"), session).unwrap();
        let claude = crate::registry::find("claude-code").unwrap();
        let to = crate::registry::find(to).unwrap();
        let sources = claude.read.unwrap().discover(&dir).unwrap();
        let (files, summary) = both_ways_written(claude, to, &sources);
        std::fs::remove_dir_all(&dir).unwrap();
        let text = String::from_utf8_lossy(files.values().next().unwrap()).into_owned();
        (text, summary)
    }

    /// A Claude Code compaction written into Codex is Codex's own: a `compacted` line with an
    /// empty replacement history where the boundary was (Codex resumes from there), the summary
    /// right after it as a user message, the history before it kept, the loss reported. A
    /// `compact_boundary` that continues its chain (a `parentUuid`) is not a compaction Claude
    /// Code resumes from, and stays a developer message.
    #[test]
    fn a_claude_code_compaction_is_written_as_codexs_own() {
        let (text, summary) = claude_compaction_into("codex");
        let at = |what: &str| place_in(&text, what);
        let compacted = r#""type":"compacted","payload":{"message":"","replacement_history":[]}"#;
        assert_eq!(text.matches(r#""type":"compacted""#).count(), 1, "{text}");
        assert!(at("EARLY ANSWER") < at(compacted), "{text}");
        assert!(at(compacted) < at("SUMMARY OF EARLIER"), "{text}");
        assert!(at("SUMMARY OF EARLIER") < at("LATER PROMPT"), "{text}");
        assert!(!text.contains("Conversation compacted"), "{text}");
        assert!(
            text.contains(
                r#""role":"developer","content":[{"type":"input_text","text":"NOT A CUT"}]"#
            ),
            "{text}"
        );
        let compaction = &summary.losses.kinds["compaction_rewritten"];
        assert_eq!(compaction.count, 1, "{compaction:?}");
        assert!(compaction.first.contains("b1"), "{compaction:?}");
    }

    /// Back from Codex into Claude Code, the `compacted` line pond wrote (no summary, an empty
    /// replacement history) is a `compact_boundary` line beginning a new chain: `claude
    /// --resume` sends the summary and what follows, as before the round trip.
    #[test]
    fn a_claude_code_compaction_survives_a_round_trip_through_codex() {
        let (rollout, _) = claude_compaction_into("codex");
        let (text, lines, summary) =
            jsonl_converted("codex", "claude-code", "rollout.jsonl", rollout.as_bytes());
        let boundaries: Vec<usize> = (0..lines.len())
            .filter(|&i| lines[i]["subtype"] == "compact_boundary")
            .collect();
        assert_eq!(boundaries.len(), 1, "{text}");
        let b = boundaries[0];
        assert!(lines[b]["parentUuid"].is_null(), "{}", lines[b]);
        let at = |what: &str| place_in(&text, what);
        let boundary = at("compact_boundary");
        assert!(
            at("EARLY ANSWER") < boundary && boundary < at("SUMMARY OF EARLIER"),
            "{text}"
        );
        assert!(!text.contains("isCompactSummary"), "{text}");
        assert_eq!(summary.losses.kinds["compaction_rewritten"].count, 1);
        assert!(!summary.losses.kinds.contains_key("compaction_summary"));
    }

    /// The same into pi: one `compaction` entry holding the summary (not also a message of its
    /// own: pi would send it twice), after the early turn and before the later one.
    #[test]
    fn a_claude_code_compaction_is_written_as_pis_own() {
        let (text, summary) = claude_compaction_into("pi");
        let at = |what: &str| place_in(&text, what);
        assert_eq!(text.matches(r#""type":"compaction""#).count(), 1, "{text}");
        assert_eq!(text.matches("SUMMARY OF EARLIER").count(), 1, "{text}");
        assert!(at("EARLY ANSWER") < at(r#""type":"compaction""#), "{text}");
        assert!(
            at(r#""summary":"SUMMARY OF EARLIER""#) < at("LATER PROMPT"),
            "{text}"
        );
        assert!(!text.contains("NOT A CUT"), "{text}");
        let compaction = &summary.losses.kinds["compaction_rewritten"];
        assert_eq!(compaction.count, 1, "{compaction:?}");
        assert!(compaction.first.contains("b1"), "{compaction:?}");
        assert_eq!(summary.losses.kinds["system_message"].count, 1);
    }

    /// A pi compaction written by the real pi 0.73.1 (fixtures/pi/compaction-*.jsonl) into
    /// Codex: one `compacted` line, after every entry before it, whose replacement history is
    /// what pi sends on resume: the summary in pi's words as a user message, then the items of
    /// the entries from `firstKeptEntryId` on, the same items as written before it.
    #[test]
    fn a_pi_compaction_is_written_as_codexs_own_with_the_entries_pi_keeps() {
        let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/pi");
        // (fixture, the texts of the kept entries' items, a text summarized away)
        let cases = [
            (
                "compaction-after-turn.jsonl",
                &["BIG-USAGE: thanks, now just reply with ok please", "ok"][..],
                "USE-READ-TOOL",
            ),
            (
                "compaction-split-turn.jsonl",
                &["Reading the file.", "hello from notes.txt\n"][..],
                "hello, first turn",
            ),
        ];
        for (name, kept, summarized) in cases {
            let session = std::fs::read(fixtures.join(name)).unwrap();
            let (text, lines, summary) = jsonl_converted("pi", "codex", name, &session);
            let compacted: Vec<usize> = (0..lines.len())
                .filter(|&i| lines[i]["type"] == "compacted")
                .collect();
            assert_eq!(compacted.len(), 1, "{name}: {text}");
            let c = compacted[0];
            assert_eq!(
                c,
                lines.len() - 1,
                "{name}: the compaction is the last entry"
            );
            let payload = &lines[c]["payload"];
            let summary_text = payload["message"].as_str().unwrap();
            assert!(summary_text.contains("MOCK-COMPACTION-SUMMARY"), "{name}");
            let history = payload["replacement_history"].as_array().unwrap();
            assert_eq!(history[0]["role"], "user", "{name}");
            assert_eq!(
                history[0]["content"][0]["text"],
                format!(
                    "{}{summary_text}{}",
                    crate::face::PI_COMPACTION_PREFIX,
                    crate::face::PI_COMPACTION_SUFFIX
                ),
                "{name}"
            );
            // The kept items are those written before, from the first kept entry's on.
            let written: Vec<&serde_json::Value> = lines[..c]
                .iter()
                .filter(|l| l["type"] == "response_item")
                .map(|l| &l["payload"])
                .collect();
            let tail = &written[written.len() - (history.len() - 1)..];
            assert_eq!(tail, history[1..].iter().collect::<Vec<_>>(), "{name}");
            let kept_text = serde_json::to_string(&history[1..]).unwrap();
            for k in kept {
                let k = serde_json::to_string(k).unwrap();
                assert!(
                    kept_text.contains(&k[1..k.len() - 1]),
                    "{name}: {k} in {kept_text}"
                );
            }
            assert!(!kept_text.contains(summarized), "{name}: {kept_text}");
            assert!(text[..text.rfind("compacted").unwrap()].contains(summarized));
            let loss = &summary.losses.kinds["compaction_rewritten"];
            assert_eq!(loss.count, 1, "{name}: {loss:?}");
            assert!(loss.detail.contains("what pi sends"), "{name}: {loss:?}");
            assert!(
                loss.first.contains("message 30ddc62c") || loss.first.contains("message 039608be"),
                "{name}: {loss:?}"
            );
        }
    }

    /// The two sessions the real pi 0.73.1 wrote with an auto-compaction
    /// (fixtures/pi/compaction-*.jsonl): each file's name, its bytes, the text of the first
    /// entry the compaction keeps, and a text it summarized away.
    fn pi_compactions() -> [(&'static str, Vec<u8>, &'static str, &'static str); 2] {
        let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/pi");
        let read = |name| std::fs::read(fixtures.join(name)).unwrap();
        [
            (
                "compaction-after-turn.jsonl",
                read("compaction-after-turn.jsonl"),
                "BIG-USAGE: thanks, now just reply with ok please",
                "USE-READ-TOOL",
            ),
            (
                "compaction-split-turn.jsonl",
                read("compaction-split-turn.jsonl"),
                "Reading the file.",
                "hello, first turn",
            ),
        ]
    }

    /// The same pi sessions into Claude Code: one `compact_boundary` (a new chain) after every
    /// line before it, then the summary line; the boundary's `preservedMessages` names, anchored
    /// at the summary line, the lines written for the entries from `firstKeptEntryId` on, in
    /// order, which Claude Code 2.1.197 relinks after the summary when it loads the file.
    #[test]
    fn a_pi_compaction_is_written_as_claude_codes_own_preserving_the_entries_pi_keeps() {
        for (name, session, first_kept, summarized) in pi_compactions() {
            let (text, lines, summary) = jsonl_converted("pi", "claude-code", name, &session);
            let boundaries: Vec<usize> = (0..lines.len())
                .filter(|&i| lines[i]["subtype"] == "compact_boundary")
                .collect();
            assert_eq!(boundaries.len(), 1, "{name}: {text}");
            let b = boundaries[0];
            assert!(lines[b]["parentUuid"].is_null(), "{name}");
            let summary_line = &lines[b + 1];
            assert_eq!(summary_line["isCompactSummary"], true, "{name}");
            assert_eq!(summary_line["parentUuid"], lines[b]["uuid"], "{name}");
            assert!(
                summary_line["message"]["content"]
                    .as_str()
                    .unwrap()
                    .contains("MOCK-COMPACTION-SUMMARY"),
                "{name}"
            );
            let meta = &lines[b]["compactMetadata"];
            let preserved = &meta["preservedMessages"];
            assert_eq!(preserved["anchorUuid"], summary_line["uuid"], "{name}");
            let uuids: Vec<&serde_json::Value> =
                preserved["uuids"].as_array().unwrap().iter().collect();
            // The lines from the first kept one to the boundary, in order.
            let first = (0..b)
                .find(|&i| {
                    serde_json::to_string(&lines[i]["message"])
                        .unwrap()
                        .contains(first_kept)
                })
                .unwrap_or_else(|| panic!("{name}: no line holds {first_kept}"));
            let expected: Vec<&serde_json::Value> =
                lines[first..b].iter().map(|l| &l["uuid"]).collect();
            assert_eq!(uuids, expected, "{name}");
            assert_eq!(meta["preservedSegment"]["headUuid"], *expected[0], "{name}");
            assert_eq!(
                meta["preservedSegment"]["tailUuid"],
                *expected[expected.len() - 1]
            );
            assert_eq!(meta["preservedSegment"]["anchorUuid"], summary_line["uuid"]);
            let kept = serde_json::to_string(&lines[first..b]).unwrap();
            assert!(!kept.contains(summarized), "{name}: {kept}");
            let loss = &summary.losses.kinds["compaction_rewritten"];
            assert_eq!(loss.count, 1, "{name}: {loss:?}");
            assert!(
                loss.detail.contains("preservedMessages"),
                "{name}: {loss:?}"
            );
        }
    }

    /// The same pi sessions into opencode: after every message before it, a user message
    /// holding a `compaction` part whose `tail_start_id` names the message written for the first
    /// kept entry, answered by the summary (`summary: true`); opencode 1.18.33 resumes from the
    /// compaction, the summary, the messages from that one up to the compaction, then what
    /// follows.
    #[test]
    fn a_pi_compaction_is_written_as_opencodes_own_keeping_the_entries_pi_keeps() {
        for (name, session, first_kept, summarized) in pi_compactions() {
            let (text, summary) = converted("pi", "opencode", name, &session);
            let doc: serde_json::Value = serde_json::from_str(&text).expect("one JSON document");
            let messages = doc["messages"].as_array().expect("messages");
            let text_of = |m: &serde_json::Value| serde_json::to_string(&m["parts"]).unwrap();
            let compactions: Vec<usize> = (0..messages.len())
                .filter(|&i| text_of(&messages[i]).contains(r#""type":"compaction""#))
                .collect();
            assert_eq!(compactions.len(), 1, "{name}: {text}");
            let c = compactions[0];
            assert_eq!(
                c,
                messages.len() - 2,
                "{name}: the compaction is the last entry"
            );
            assert_eq!(messages[c]["info"]["role"], "user", "{name}");
            let part = messages[c]["parts"]
                .as_array()
                .unwrap()
                .iter()
                .find(|p| p["type"] == "compaction")
                .unwrap();
            let answer = &messages[c + 1];
            assert_eq!(answer["info"]["summary"], true, "{name}");
            assert_eq!(
                answer["info"]["parentID"], messages[c]["info"]["id"],
                "{name}"
            );
            assert!(
                text_of(answer).contains("MOCK-COMPACTION-SUMMARY"),
                "{name}"
            );
            // The tail: the message written for the first kept entry, before the compaction.
            let tail = part["tail_start_id"]
                .as_str()
                .unwrap_or_else(|| panic!("{name}: {part}"));
            let t = (0..c)
                .find(|&i| messages[i]["info"]["id"] == tail)
                .unwrap_or_else(|| panic!("{name}: {tail} is no message before the compaction"));
            assert!(
                text_of(&messages[t]).contains(first_kept),
                "{name}: {}",
                messages[t]
            );
            let kept: String = messages[t..c].iter().map(text_of).collect();
            assert!(!kept.contains(summarized), "{name}: {kept}");
            assert!(
                messages[..t]
                    .iter()
                    .map(text_of)
                    .any(|m| m.contains(summarized))
            );
            let loss = &summary.losses.kinds["compaction_rewritten"];
            assert_eq!(loss.count, 1, "{name}: {loss:?}");
            assert!(loss.detail.contains("tail_start_id"), "{name}: {loss:?}");
        }
    }

    /// A pi compaction whose first kept entry is not in the session is written as the user
    /// message it is read as (a resume sends the whole history, then the summary), not as a
    /// `compacted` line that would leave the kept entries out.
    #[test]
    fn a_pi_compaction_keeping_an_unknown_entry_stays_a_user_message() {
        let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../fixtures/pi/compaction-after-turn.jsonl");
        let session = std::fs::read_to_string(fixture).unwrap();
        let renamed = session.replace(
            r#""firstKeptEntryId":"993a54a5""#,
            r#""firstKeptEntryId":"nowhere""#,
        );
        assert_ne!(renamed, session);
        let (text, lines, summary) = jsonl_converted("pi", "codex", "s.jsonl", renamed.as_bytes());
        assert!(!text.contains(r#""type":"compacted""#), "{text}");
        let last = &lines[lines.len() - 1]["payload"];
        assert_eq!(last["role"], "user", "{text}");
        assert!(
            last["content"][0]["text"]
                .as_str()
                .unwrap()
                .contains("MOCK-COMPACTION-SUMMARY"),
            "{text}"
        );
        assert!(!summary.losses.kinds.contains_key("compaction_rewritten"));
        let (text, _, summary) =
            jsonl_converted("pi", "claude-code", "s.jsonl", renamed.as_bytes());
        assert!(!text.contains("compact_boundary"), "{text}");
        assert!(text.contains("MOCK-COMPACTION-SUMMARY"), "{text}");
        assert!(!summary.losses.kinds.contains_key("compaction_rewritten"));
        let (text, summary) = converted("pi", "opencode", "s.jsonl", renamed.as_bytes());
        assert!(!text.contains(r#""type": "compaction""#), "{text}");
        assert!(text.contains("MOCK-COMPACTION-SUMMARY"), "{text}");
        assert!(!summary.losses.kinds.contains_key("compaction_rewritten"));
    }

    /// The same into opencode: a user message holding a `compaction` part, answered by an
    /// assistant message (`summary: true`) whose text is the summary, after the early turn and
    /// before the later one; the summary line is not also a user message.
    #[test]
    fn a_claude_code_compaction_is_written_as_opencodes_own() {
        let (text, summary) = claude_compaction_into("opencode");
        let doc: serde_json::Value = serde_json::from_str(&text).expect("one JSON document");
        let messages = doc["messages"].as_array().expect("messages");
        let kinds: Vec<(&str, Vec<&str>, String)> = messages
            .iter()
            .map(|m| {
                let parts = m["parts"].as_array().unwrap();
                let texts = parts
                    .iter()
                    .filter_map(|p| p["text"].as_str())
                    .collect::<Vec<_>>()
                    .join("");
                let types = parts.iter().filter_map(|p| p["type"].as_str()).collect();
                (m["info"]["role"].as_str().unwrap(), types, texts)
            })
            .collect();
        let at = kinds
            .iter()
            .position(|(_, types, _)| types.contains(&"compaction"))
            .unwrap_or_else(|| panic!("no compaction message: {kinds:?}"));
        assert_eq!(kinds[at].0, "user", "{kinds:?}");
        assert_eq!(kinds[at + 1].0, "assistant", "{kinds:?}");
        assert_eq!(kinds[at + 1].2, "SUMMARY OF EARLIER", "{kinds:?}");
        let info = &messages[at + 1]["info"];
        assert_eq!(info["summary"], true, "{info}");
        assert_eq!(info["parentID"], messages[at]["info"]["id"], "{info}");
        assert_eq!(info["finish"], "stop", "{info}");
        assert!(
            kinds[..at].iter().any(|k| k.2 == "EARLY ANSWER"),
            "{kinds:?}"
        );
        assert!(
            kinds[at + 2..].iter().any(|k| k.2 == "LATER PROMPT"),
            "{kinds:?}"
        );
        assert_eq!(text.matches("SUMMARY OF EARLIER").count(), 1, "{text}");
        let compaction = &summary.losses.kinds["compaction_rewritten"];
        assert_eq!(compaction.count, 1, "{compaction:?}");
        assert!(compaction.first.contains("b1"), "{compaction:?}");
    }

    /// An opencode compaction (a user message holding a `compaction` part and the finished
    /// summary answering it, as the real opencode exported it) written into Claude Code is a
    /// `compact_boundary` and the summary as an `isCompactSummary` user line, and into pi one
    /// `compaction` entry holding it; in neither is the summary an assistant text any more.
    #[test]
    fn an_opencode_compaction_is_written_as_the_targets_own() {
        let file = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(
            "../../shared/fixtures/opencode/harness-generated/import-input-all-part-types.json",
        );
        let opencode = crate::registry::find("opencode").unwrap();
        let sources = opencode.read.unwrap().discover(&file).unwrap();
        for to in ["claude-code", "pi", "codex"] {
            let (files, summary) =
                both_ways_written(opencode, crate::registry::find(to).unwrap(), &sources);
            let text = String::from_utf8_lossy(files.values().next().unwrap()).into_owned();
            let lines: Vec<serde_json::Value> = text
                .lines()
                .map(|l| serde_json::from_str(l).unwrap())
                .collect();
            let [.., before, last] = lines.as_slice() else {
                panic!("{to}: {text}");
            };
            // Codex writes an assistant message twice: its item and its `agent_message` event.
            assert_eq!(
                text.matches("Summary of conversation so far.").count(),
                if to == "codex" { 2 } else { 1 },
                "{to}: {text}"
            );
            if to == "codex" {
                // A `compacted` line that keeps nothing before it, then the summary, an
                // assistant message.
                let place = |what: &dyn Fn(&serde_json::Value) -> bool| {
                    lines
                        .iter()
                        .position(what)
                        .unwrap_or_else(|| panic!("{text}"))
                };
                let compacted = place(&|l| l["type"] == "compacted");
                assert_eq!(
                    lines[compacted]["payload"],
                    serde_json::json!({"message": "", "replacement_history": []})
                );
                let item = place(&|l| {
                    l["type"] == "response_item"
                        && l.to_string().contains("Summary of conversation so far.")
                });
                assert!(compacted < item, "{text}");
                assert_eq!(lines[item]["payload"]["role"], "assistant");
            } else if to == "claude-code" {
                assert_eq!(before["subtype"], "compact_boundary", "{before}");
                assert_eq!(last["isCompactSummary"], true, "{last}");
                assert!(
                    last.to_string().contains("Summary of conversation so far."),
                    "{last}"
                );
            } else {
                assert_eq!(last["type"], "compaction", "{last}");
                assert_eq!(last["summary"], "Summary of conversation so far.", "{last}");
            }
            assert_eq!(
                summary.losses.kinds["compaction_rewritten"].count, 1,
                "{to}"
            );
        }
    }

    /// A pi side branch written into another harness begins with its parent's history through
    /// the cut-point (the user's "List files"), and the main session keeps its own: without it,
    /// the branch began with the assistant's answer.
    #[test]
    fn a_branch_written_foreign_begins_with_its_parents_history() {
        let file = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../shared/fixtures/pi/harness-generated/v3-branching-input.jsonl");
        let pi = crate::registry::find("pi").unwrap();
        let sources = pi.read.unwrap().discover(&file).unwrap();
        for to in ["claude-code", "codex", "opencode"] {
            let to = crate::registry::find(to).unwrap();
            let (files, summary) = both_ways_written(pi, to, &sources);
            let text_of = |branch: bool| {
                let w = summary
                    .written
                    .iter()
                    .find(|w| w.source_session.contains('#') == branch)
                    .unwrap_or_else(|| panic!("{}: {:?}", to.name, summary.written));
                String::from_utf8_lossy(&files[&w.file]).into_owned()
            };
            let (branch, main) = (text_of(true), text_of(false));
            let at = |text: &str, what: &str| text.find(what);
            assert!(
                at(&branch, "List files")
                    .is_some_and(|p| at(&branch, "BRANCH-A").is_some_and(|a| p < a)),
                "{}: the branch lacks its parent's history: {branch}",
                to.name
            );
            assert!(!branch.contains("BRANCH-B"), "{}: {branch}", to.name);
            assert!(
                main.contains("List files")
                    && main.contains("BRANCH-B")
                    && !main.contains("BRANCH-A"),
                "{}: {main}",
                to.name
            );
            // The replayed messages are written, not read: the counts are the source's.
            assert_eq!(summary.errors.len(), 0, "{}", to.name);
        }
    }
}

//! The conversion driver: a read face's events into a write face's writer, with the system (not
//! the codec) deciding native or foreign per session (spec 6.3), and a summary of what happened.

use crate::face::{
    Fidelity, Item, Layout, Losses, Output, SessionWriter, Target, WriteError, Written,
};
use crate::registry::Codec;
use pond_canonical::{Event, Message, Origin, ParseError, Provenance};
use serde::Serialize;
use std::path::Path;

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
}

impl Summary {
    /// Whether every source was read and written without a fault.
    pub fn is_clean(&self) -> bool {
        self.errors.is_empty() && self.write_errors.is_empty()
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
    let reader = from.read.ok_or(ConvertError::MissingFace {
        codec: from.name,
        face: "read",
    })?;
    let sources = reader.discover(input).map_err(ConvertError::Discover)?;
    convert_sources(from, to, layout, &sources, out, progress)
}

/// Converts the given source units (already discovered).
pub fn convert_sources(
    from: &Codec,
    to: &Codec,
    layout: Layout,
    sources: &[Origin],
    out: &mut dyn Output,
    progress: &mut dyn FnMut(usize, usize),
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
    // Within one codec every session is written natively, so carriers may travel as their
    // source lines and be copied (`ReadFace::read_items`); a foreign writer would only have to
    // build each carrier's message from its text again.
    let same_codec = from.name == to.name;
    for (i, source) in sources.iter().enumerate() {
        progress(i, sources.len());
        summary.sources += 1;
        let mut feed = Feed::new(to, writer.as_mut(), &mut *out, &mut summary);
        if same_codec {
            reader.read_items(source, &mut |item| feed.item(item));
        } else {
            reader.read(source, &mut |item| feed.item(item.map(Item::Event)));
        }
        feed.end(&source.path().display().to_string());
    }
    progress(sources.len(), sources.len());
    Ok(summary)
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
        feed.item(Ok(Item::Event(event)));
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
        }
    }

    fn item(&mut self, item: Result<Item<'_>, ParseError>) {
        let item = match item {
            Err(e) => return self.summary.errors.push(e),
            Ok(item) => item,
        };
        match &item {
            Item::Event(event) => self.summary.count(event),
            Item::Carried(_) => self.summary.count_carried(),
        }
        if self.failed.is_some() {
            return;
        }
        let mut target = Target {
            out: &mut *self.out,
            losses: &mut self.losses,
            written: &mut self.summary.written,
        };
        let event = match &item {
            Item::Event(event) => event,
            Item::Carried(carried) => {
                self.failed = self.writer.carried(carried, &mut target).err();
                return;
            }
        };
        let result = match event {
            Event::Session(s) => {
                let fidelity = Fidelity::decide(s, self.to.source_agent);
                match fidelity {
                    Fidelity::Native => self.summary.native_sessions += 1,
                    Fidelity::Foreign => self.summary.foreign_sessions += 1,
                }
                self.writer.session(s, fidelity, &mut target)
            }
            Event::Message(m) => self.writer.message(m, &mut target),
        };
        self.failed = result.err();
    }

    fn end(mut self, unit: &str) {
        if self.failed.is_none() {
            let mut target = Target {
                out: &mut *self.out,
                losses: &mut self.losses,
                written: &mut self.summary.written,
            };
            self.failed = self.writer.end_source(&mut target).err();
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
        self.out.end_unit();
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

//! The shared JSONL reader and writer: one [`Record`](pond_canonical::Record) per line, with
//! bounded memory, and JSON text written straight from borrowed values.
//!
//! A line longer than [`MAX_LINE_BYTES`] is reported as a typed error and skipped without being
//! held in memory, so a corrupt or hostile file cannot exhaust memory. Blank lines carry no data
//! and are passed over. Every other fault is reported with its file and line, and reading goes on.
//!
//! [`LineParser`] reads a line with simd-json's tape when it can and with serde_json otherwise
//! (see docs/decisions.md, "simd-json for the line parser"); either way the record is the
//! `serde_json::Value` serde_json would read, and every fault is serde_json's own typed error.

use pond_canonical::{Extracted, LineFields, Locator, Origin, ParseError, ParseErrorKind, Record};
use serde_json::{Map, Number, Value};
pub use simd_json::Node;
use simd_json::StaticNode;
use std::borrow::Cow;
use std::io::{BufRead, Read};

/// The longest line read, in bytes. See docs/decisions.md ("The per-value bound").
pub const MAX_LINE_BYTES: u64 = 128 * 1024 * 1024;

/// The UTF-8 byte order mark: Windows editors and some tools start a text file with it. It is
/// no part of any JSON value (RFC 8259 8.1: a parser may ignore it), so a file's reading skips
/// it; a native write does not put it back (the values are the same without it).
pub const BOM: &[u8] = b"\xEF\xBB\xBF";

/// `bytes` without a leading [`BOM`].
pub fn strip_bom(bytes: &[u8]) -> &[u8] {
    bytes.strip_prefix(BOM).unwrap_or(bytes)
}

/// Reads `input` line by line, calling `each` with every line's record or fault, in order.
/// Returns the number of lines seen. An I/O failure ends the read with one error.
pub fn read_records<'o, R: Read>(
    origin: &'o Origin,
    input: R,
    mut each: impl FnMut(Result<Record<'o>, ParseError>),
) -> u64 {
    let mut parser = LineParser::default();
    read_lines(origin, input, |line, bytes| match bytes {
        Ok(bytes) => each(parser.record(origin, line, bytes)),
        Err(e) => each(Err(e)),
    })
}

/// Like [`read_records`], for codecs that need the raw bytes of each line. A line that ends in
/// the reader's buffer (1 MiB) is handed over as a slice of it; only one that straddles two
/// fills of the buffer is copied.
pub fn read_lines<R: Read>(
    origin: &Origin,
    input: R,
    mut each: impl FnMut(u64, Result<&[u8], ParseError>),
) -> u64 {
    let mut reader = std::io::BufReader::with_capacity(1 << 20, input);
    // A leading byte order mark is skipped (see [`BOM`]); a file shorter than it has none.
    loop {
        match reader.fill_buf() {
            Ok(chunk) => {
                if chunk.starts_with(BOM) {
                    reader.consume(BOM.len());
                }
                break;
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            // Reported by the first line's read, which meets it again.
            Err(_) => break,
        }
    }
    let mut buf = Vec::new();
    let mut line = 0u64;
    loop {
        line += 1;
        // A line whose end is in the reader's buffer is handed over from it, not copied.
        let whole = loop {
            match reader.fill_buf() {
                Ok(chunk) => break memchr::memchr(b'\n', chunk),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                // Reported by the read below, which meets it again.
                Err(_) => break None,
            }
        };
        if let Some(i) = whole {
            let chunk = &reader.buffer()[..i];
            let mut end = chunk.len();
            while end > 0 && chunk[end - 1] == b'\r' {
                end -= 1;
            }
            if !chunk[..end].iter().all(u8::is_ascii_whitespace) {
                each(line, Ok(&chunk[..end]));
            }
            reader.consume(i + 1);
            continue;
        }
        buf.clear();
        let mut limited = (&mut reader).take(MAX_LINE_BYTES + 1);
        match limited.read_until(b'\n', &mut buf) {
            Ok(0) => return line - 1,
            Ok(_) => {}
            Err(e) => {
                each(
                    line,
                    Err(origin.error(
                        Locator::Line(line),
                        ParseErrorKind::Io {
                            detail: e.to_string(),
                        },
                    )),
                );
                return line;
            }
        }
        if buf.last() != Some(&b'\n') && buf.len() as u64 > MAX_LINE_BYTES {
            // Skip the rest of the over-long line without keeping it.
            let mut total = buf.len() as u64;
            buf.clear();
            loop {
                match reader.fill_buf() {
                    Ok([]) => break,
                    Ok(chunk) => {
                        let (n, done) = match chunk.iter().position(|&b| b == b'\n') {
                            Some(i) => (i + 1, true),
                            None => (chunk.len(), false),
                        };
                        total += n as u64;
                        reader.consume(n);
                        if done {
                            total -= 1;
                            break;
                        }
                    }
                    Err(e) => {
                        each(
                            line,
                            Err(origin.error(
                                Locator::Line(line),
                                ParseErrorKind::Io {
                                    detail: e.to_string(),
                                },
                            )),
                        );
                        return line;
                    }
                }
            }
            let kind = ParseErrorKind::LineTooLong {
                bytes: total,
                limit: MAX_LINE_BYTES,
            };
            each(line, Err(origin.error(Locator::Line(line), kind)));
            continue;
        }
        let mut end = buf.len();
        while end > 0 && matches!(buf[end - 1], b'\n' | b'\r') {
            end -= 1;
        }
        if buf[..end].iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        each(line, Ok(&buf[..end]));
    }
}

/// Like [`read_lines`], over bytes already in memory: the same lines, numbers and faults, each
/// line a slice of `bytes` (nothing is copied).
pub fn split_lines(
    origin: &Origin,
    bytes: &[u8],
    mut each: impl FnMut(u64, Result<&[u8], ParseError>),
) -> u64 {
    let mut line = 0u64;
    let mut rest = strip_bom(bytes);
    while !rest.is_empty() {
        line += 1;
        let (this, next) = match memchr::memchr(b'\n', rest) {
            Some(i) => (&rest[..i], &rest[i + 1..]),
            None => (rest, &rest[rest.len()..]),
        };
        rest = next;
        if this.len() as u64 > MAX_LINE_BYTES {
            let kind = ParseErrorKind::LineTooLong {
                bytes: this.len() as u64,
                limit: MAX_LINE_BYTES,
            };
            each(line, Err(origin.error(Locator::Line(line), kind)));
            continue;
        }
        let mut end = this.len();
        while end > 0 && this[end - 1] == b'\r' {
            end -= 1;
        }
        if this[..end].iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        each(line, Ok(&this[..end]));
    }
    line
}

/// The largest file [`hold`] keeps in memory.
pub const HOLD_LIMIT: u64 = 64 * 1024 * 1024;

/// [`HOLD_LIMIT`], unless `POND_HOLD_LIMIT` names another size in bytes: so that the tests
/// read small files through the streamed path of the two-pass readers too (and compare what
/// both paths give), and a machine short of memory can hold less.
fn hold_limit() -> u64 {
    static LIMIT: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *LIMIT.get_or_init(|| {
        std::env::var("POND_HOLD_LIMIT")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(HOLD_LIMIT)
    })
}

/// The whole file of `origin` when it is at most [`HOLD_LIMIT`] bytes long (see
/// [`hold_limit`]), for a reader that passes over it twice (one read instead of two); `None`
/// for a larger file, which is streamed.
pub fn hold(origin: &Origin) -> Result<Option<Vec<u8>>, ParseError> {
    let limit = hold_limit();
    let mut file = open(origin)?;
    let io = |e: std::io::Error| {
        origin.error(
            Locator::File,
            ParseErrorKind::Io {
                detail: e.to_string(),
            },
        )
    };
    let len = file.metadata().map_err(io)?.len();
    if len > limit {
        return Ok(None);
    }
    // One byte over the limit is read at most, should the file grow meanwhile.
    let mut bytes = Vec::with_capacity(len as usize + 1);
    (&mut file)
        .take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(io)?;
    Ok((bytes.len() as u64 <= limit).then_some(bytes))
}

/// Every line of `source`, from `held` (the whole file, see [`hold`]) when given, else from the
/// file itself: for a reader that passes over a file twice.
pub fn each_line(
    source: &Origin,
    held: Option<&[u8]>,
    each: impl FnMut(u64, Result<&[u8], ParseError>),
) -> Result<(), ParseError> {
    match held {
        Some(bytes) => split_lines(source, bytes, each),
        None => read_lines(source, open(source)?, each),
    };
    Ok(())
}

/// How many bytes of lines [`each_line_surveyed`] gathers into one block.
const SURVEY_BLOCK: usize = 2 << 20;

/// A held file smaller than this is surveyed on the calling thread alone: a thread costs more.
const SURVEY_ALONE: usize = 64 << 10;

/// How many runs a block's lines are cut into: the share one thread claims at a time.
const SURVEY_RUNS: usize = 32;

/// [`each_line`] with `survey` run over every line first: `each` gets every line, in order, with
/// what `survey` made of it. `survey` must be a pure reading of the line (it sees no other
/// state), so that on `two_threads` it can run on two threads at once: the lines are gathered in
/// blocks of about [`SURVEY_BLOCK`] bytes, each cut into runs that a helper thread and the
/// calling thread claim in turn; the calling thread gathers the next block and hands the lines
/// of the last one to `each` (in line order) while the helper surveys, and surveys what is left
/// of a block before handing it over. For a reader's first pass when a conversion's other thread
/// has nothing to do yet (pi's tree pass: its writer waits for the first message).
pub fn each_line_surveyed<T: Send>(
    source: &Origin,
    held: Option<&[u8]>,
    two_threads: bool,
    survey: impl Fn(u64, &[u8]) -> Option<T> + Sync,
    mut each: impl FnMut(u64, Result<&[u8], ParseError>, Option<T>),
) -> Result<(), ParseError> {
    if !two_threads {
        return each_line(source, held, |line, bytes| {
            let surveyed = bytes.as_ref().ok().and_then(|b| survey(line, b));
            each(line, bytes, surveyed)
        });
    }
    let sizes = (SURVEY_BLOCK, SURVEY_ALONE);
    surveyed_in_blocks(source, held, sizes, &survey, &mut each)
}

/// Lines gathered for a block: each line's number and its bytes' range in the block (or its fault).
type Gathered = Vec<(u64, Result<std::ops::Range<usize>, ParseError>)>;

/// A line's survey, as [`each_line_surveyed`] is given it.
type Survey<'s, T> = &'s (dyn Fn(u64, &[u8]) -> Option<T> + Sync);

/// What a first pass does with each line and its survey, as [`each_line_surveyed`] is given it.
type Each<'e, T> = &'e mut dyn FnMut(u64, Result<&[u8], ParseError>, Option<T>);

/// [`each_line_surveyed`] on two threads, in blocks of `block` bytes (`alone`: see
/// [`SURVEY_ALONE`]).
fn surveyed_in_blocks<'a, T: Send>(
    source: &Origin,
    held: Option<&'a [u8]>,
    (block, alone): (usize, usize),
    survey: Survey<'_, T>,
    each: Each<'_, T>,
) -> Result<(), ParseError> {
    if held.is_some_and(|all| all.len() < alone) {
        return each_line(source, held, |line, bytes| {
            let surveyed = bytes.as_ref().ok().and_then(|b| survey(line, b));
            each(line, bytes, surveyed)
        });
    }
    let file = match held {
        Some(_) => None,
        None => Some(open(source)?),
    };
    std::thread::scope(|scope| {
        let (give, blocks) = std::sync::mpsc::channel::<std::sync::Arc<Block<'a, T>>>();
        // A helper the system will not start (a process at its thread limit) leaves every run
        // to the calling thread, which claims what no one has in `finish`.
        let helper = std::thread::Builder::new()
            .name("pond-survey".into())
            .spawn_scoped(scope, move || {
                for b in blocks {
                    b.survey_runs(survey);
                }
            })
            .ok();
        // The block handed to the helper last, whose lines go to `each` once the next one is.
        let mut last: Option<std::sync::Arc<Block<'a, T>>> = None;
        // The buffers of the block before it, to gather the next one in (a streamed file's
        // lines are copied).
        let mut spare: Option<(Vec<u8>, Gathered)> = None;
        let mut hand_over = |b: Block<'a, T>, spare: &mut Option<(Vec<u8>, Gathered)>| {
            let b = std::sync::Arc::new(b);
            // Should there be no helper, the calling thread surveys the block itself in
            // `finish`.
            let _ = give.send(b.clone());
            if let Some(before) = last.replace(b) {
                before.finish(survey, each);
                *spare = before.into_buffers();
            }
        };
        let mut lines: Gathered = Vec::new();
        match (held, file) {
            (Some(all), _) => {
                // Ranges into the held file: nothing is copied.
                let mut gathered = 0;
                split_lines(source, all, |line, bytes| {
                    let range = bytes.map(|b| {
                        let at = b.as_ptr() as usize - all.as_ptr() as usize;
                        at..at + b.len()
                    });
                    gathered += range.as_ref().map_or(0, |r| r.len());
                    lines.push((line, range));
                    if gathered >= block {
                        let next = spare.take().map(|(_, l)| l).unwrap_or_default();
                        let full = std::mem::replace(&mut lines, next);
                        hand_over(Block::new(Cow::Borrowed(all), full), &mut spare);
                        gathered = 0;
                    }
                });
                hand_over(Block::new(Cow::Borrowed(all), lines), &mut spare);
            }
            (None, Some(file)) => {
                // Lines are copied into one buffer of `block` bytes (more only for a longer
                // line): a block is handed over before a line that would overflow it.
                let mut bytes = Vec::with_capacity(block);
                read_lines(source, file, |line, got| {
                    if let Ok(b) = &got
                        && !lines.is_empty()
                        && bytes.len() + b.len() > block
                    {
                        let (next_bytes, next_lines) = spare
                            .take()
                            .unwrap_or_else(|| (Vec::with_capacity(block), Vec::new()));
                        let full = std::mem::replace(&mut bytes, next_bytes);
                        let gathered = std::mem::replace(&mut lines, next_lines);
                        hand_over(Block::new(Cow::Owned(full), gathered), &mut spare);
                    }
                    let range = got.map(|b| {
                        let at = bytes.len();
                        bytes.extend_from_slice(b);
                        at..bytes.len()
                    });
                    lines.push((line, range));
                });
                hand_over(Block::new(Cow::Owned(bytes), lines), &mut spare);
            }
            (None, None) => unreachable!("a file is opened when none is held"),
        }
        if let Some(b) = last.take() {
            b.finish(survey, each);
        }
        drop(give);
        if let Some(Err(panic)) = helper.map(|h| h.join()) {
            std::panic::resume_unwind(panic);
        }
    });
    Ok(())
}

/// One block of lines being surveyed on two threads: its runs of lines are claimed in turn by
/// whichever thread comes first ([`Block::survey_runs`]).
struct Block<'a, T> {
    bytes: Cow<'a, [u8]>,
    lines: Gathered,
    /// Runs of `lines` (index ranges) of about a [`SURVEY_RUNS`]th of the block's bytes each.
    runs: Vec<std::ops::Range<usize>>,
    /// The next run to claim.
    next: std::sync::atomic::AtomicUsize,
    /// Each run's surveys, once made.
    surveys: Vec<std::sync::Mutex<Vec<Option<T>>>>,
    /// How many runs are surveyed, and a survey that panicked on the helper (given to the
    /// calling thread to resume).
    done: std::sync::Mutex<(usize, Option<Box<dyn std::any::Any + Send>>)>,
    finished: std::sync::Condvar,
}

impl<'a, T: Send> Block<'a, T> {
    fn new(bytes: Cow<'a, [u8]>, lines: Gathered) -> Self {
        let len =
            |r: &Result<std::ops::Range<usize>, ParseError>| r.as_ref().map_or(0, |r| r.len());
        let total: usize = lines.iter().map(|(_, r)| len(r)).sum();
        let share = (total / SURVEY_RUNS).max(1);
        let mut runs = Vec::with_capacity(SURVEY_RUNS + 1);
        let (mut start, mut size) = (0, 0);
        for (i, (_, r)) in lines.iter().enumerate() {
            size += len(r);
            if size >= share {
                runs.push(start..i + 1);
                (start, size) = (i + 1, 0);
            }
        }
        if start < lines.len() {
            runs.push(start..lines.len());
        }
        Block {
            surveys: runs.iter().map(|_| Default::default()).collect(),
            runs,
            bytes,
            lines,
            next: Default::default(),
            done: Default::default(),
            finished: Default::default(),
        }
    }

    /// Surveys runs not yet claimed until none is left.
    fn survey_runs(&self, survey: Survey<'_, T>) {
        use std::sync::atomic::Ordering;
        loop {
            let r = self.next.fetch_add(1, Ordering::Relaxed);
            let Some(run) = self.runs.get(r) else { return };
            let made = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                self.lines[run.clone()]
                    .iter()
                    .map(|(line, range)| {
                        let bytes = range.as_ref().ok()?;
                        survey(*line, &self.bytes[bytes.clone()])
                    })
                    .collect()
            }));
            let panicked = match made {
                Ok(made) => {
                    *lock(&self.surveys[r]) = made;
                    None
                }
                Err(panic) => Some(panic),
            };
            let mut done = lock(&self.done);
            done.0 += 1;
            if done.1.is_none() {
                done.1 = panicked;
            }
            if done.0 == self.runs.len() {
                self.finished.notify_all();
            }
        }
    }

    /// Surveys what is left of the block, waits for the runs the helper claimed, and hands every
    /// line to `each` in order.
    fn finish(&self, survey: Survey<'_, T>, each: Each<'_, T>) {
        self.survey_runs(survey);
        let mut done = lock(&self.done);
        while done.0 < self.runs.len() {
            done = self
                .finished
                .wait(done)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
        if let Some(panic) = done.1.take() {
            std::panic::resume_unwind(panic);
        }
        drop(done);
        for (run, surveys) in self.runs.iter().zip(&self.surveys) {
            let surveys = std::mem::take(&mut *lock(surveys));
            for ((line, range), surveyed) in self.lines[run.clone()].iter().zip(surveys) {
                let bytes = range.clone().map(|r| &self.bytes[r]);
                each(*line, bytes, surveyed);
            }
        }
    }
}

impl<T> Block<'_, T> {
    /// The block's buffers, emptied, if the helper has let it go (it does as soon as it finds
    /// no run left to claim; if it has not yet, the next block is gathered in new ones): a
    /// borrowed block gives its lines' list alone.
    fn into_buffers(self: std::sync::Arc<Self>) -> Option<(Vec<u8>, Gathered)> {
        let block = std::sync::Arc::into_inner(self)?;
        let mut lines = block.lines;
        lines.clear();
        let mut bytes = match block.bytes {
            Cow::Owned(bytes) => bytes,
            Cow::Borrowed(_) => Vec::new(),
        };
        bytes.clear();
        Some((bytes, lines))
    }
}

/// The value behind a lock, whether or not a thread panicked holding it (what it guards is
/// whole either way: a run's surveys are set at once).
fn lock<V>(m: &std::sync::Mutex<V>) -> std::sync::MutexGuard<'_, V> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Nesting at which a line leaves the fast path; serde_json's own limit (128) then decides.
const MAX_FAST_DEPTH: usize = 100;

/// Parses JSON lines, reusing its buffers from line to line.
///
/// The fast path is simd-json's tape, turned into the `serde_json::Value` serde_json reads
/// (floats parse to the same bits; `-0` becomes the float serde_json makes of it; repeated keys
/// keep the last value in the first one's place). A line simd-json refuses, or one where the two
/// parsers could disagree (a `\u` surrogate escape, nesting near serde_json's limit), is parsed
/// by serde_json alone, so what it accepts and every fault it reports are exactly serde_json's.
#[derive(Default)]
pub struct LineParser {
    /// The line, copied: simd-json decodes strings in place.
    scratch: Vec<u8>,
    buffers: simd_json::Buffers,
    /// The tape's allocation, kept between lines.
    nodes: Vec<Node<'static>>,
}

thread_local! {
    /// The parser of [`record_here`], one per thread.
    static HERE: std::cell::RefCell<LineParser> = std::cell::RefCell::new(LineParser::default());
}

/// [`LineParser::record`] with the calling thread's own parser: for a line made into a message
/// away from the reader that read it (a deferred message, `face::Deferred`, made on whichever
/// thread of a conversion takes it), where the reader's parser is not at hand.
pub fn record_here<'o>(
    origin: &'o Origin,
    line: u64,
    bytes: &[u8],
) -> Result<Record<'o>, ParseError> {
    record_here_at(origin, Locator::Line(line), bytes)
}

/// `f` of the simd-json tape of `bytes`, read by the calling thread's own parser
/// ([`record_here`]); `None` when the line is not for the fast path (then it is read as
/// serde_json reads it, by whoever asked).
pub fn on_tape_here<T>(bytes: &[u8], f: impl FnOnce(&[Node<'_>]) -> Option<T>) -> Option<T> {
    HERE.with_borrow_mut(|p| p.with_tape(bytes, f))
}

/// The members of the object at `nodes[at]`, each as its name and the index of its value;
/// `None` if there is no object there, or it names a member twice (a built `Map` keeps the
/// first place and the last value, which a walk of the tape would not see).
pub fn tape_members<'n>(nodes: &[Node<'n>], at: usize) -> Option<Vec<(&'n str, usize)>> {
    let Node::Object { len, .. } = *nodes.get(at)? else {
        return None;
    };
    let mut members: Vec<(&str, usize)> = Vec::with_capacity(len);
    let mut i = at + 1;
    for _ in 0..len {
        let Node::String(key) = *nodes.get(i)? else {
            return None;
        };
        if members.iter().any(|(k, _)| *k == key) {
            return None;
        }
        members.push((key, i + 1));
        i += 1 + span(nodes, i + 1)?;
    }
    Some(members)
}

/// The indexes of the items of the array at `nodes[at]`, in order; `None` if there is no array
/// there.
pub fn tape_items(nodes: &[Node<'_>], at: usize) -> Option<Vec<usize>> {
    let Node::Array { len, .. } = *nodes.get(at)? else {
        return None;
    };
    let mut items = Vec::with_capacity(len);
    let mut i = at + 1;
    for _ in 0..len {
        items.push(i);
        i += span(nodes, i)?;
    }
    Some(items)
}

/// [`LineParser::record_pruned`] with the calling thread's own parser ([`record_here`]).
pub fn record_here_pruned<'o>(
    origin: &'o Origin,
    line: u64,
    bytes: &[u8],
    prune: Option<&Prune>,
) -> Result<Record<'o>, ParseError> {
    HERE.with_borrow_mut(|p| p.record_pruned(origin, line, bytes, prune))
}

/// [`record_here`] of a record at any place of a line ([`LineParser::record_at`]): for a
/// carrier's message, made from its line only when a writer asks for it.
pub fn record_here_at<'o>(
    origin: &'o Origin,
    at: Locator,
    bytes: &[u8],
) -> Result<Record<'o>, ParseError> {
    HERE.with_borrow_mut(|p| p.record_at(origin, at, bytes))
}

impl LineParser {
    /// The record of one line: what [`Record::from_json_line`] gives, faults included.
    pub fn record<'o>(
        &mut self,
        origin: &'o Origin,
        line: u64,
        bytes: &[u8],
    ) -> Result<Record<'o>, ParseError> {
        self.record_at(origin, Locator::Line(line), bytes)
    }

    /// The record of one line, or of one record of a line ([`records_on_line`]), at `at`.
    pub fn record_at<'o>(
        &mut self,
        origin: &'o Origin,
        at: Locator,
        bytes: &[u8],
    ) -> Result<Record<'o>, ParseError> {
        match self.with_tape(bytes, tape_record) {
            Some(built) => built.record(origin, at),
            None => Record::from_json_at(origin, at, bytes),
        }
    }

    /// [`record`](Self::record), with members of `prune.object` a conversion's writer never
    /// reads left unbuilt ([`Prune`]; `None`: `record`). A line off the fast path is read
    /// whole, as `record` reads it.
    pub fn record_pruned<'o>(
        &mut self,
        origin: &'o Origin,
        line: u64,
        bytes: &[u8],
        prune: Option<&Prune>,
    ) -> Result<Record<'o>, ParseError> {
        let Some(prune) = prune else {
            return self.record(origin, line, bytes);
        };
        match self.with_tape(bytes, |nodes| tape_record_pruned(nodes, prune)) {
            Some(built) => built.record(origin, Locator::Line(line)),
            None => Record::from_json_line(origin, line, bytes),
        }
    }

    /// Every record of one line, in order: the line's own record (or fault); or, for a line that
    /// holds several JSON records with no newline between them ([`records_on_line`]), a located
    /// warning and then each of them, at [`record_locator`] (adapter-integrity-no-silent-drops:
    /// none is dropped, and the fault of an incomplete last one is its own).
    pub fn each_record<'o>(
        &mut self,
        origin: &'o Origin,
        line: u64,
        bytes: &[u8],
        each: &mut dyn FnMut(Result<Record<'o>, ParseError>),
    ) {
        let fault = match self.record(origin, line, bytes) {
            Ok(record) => return each(Ok(record)),
            Err(fault) => fault,
        };
        let Some(pieces) = records_on_line(bytes) else {
            return each(Err(fault));
        };
        each(Err(several_records(origin, line, pieces.len())));
        for (i, piece) in pieces.into_iter().enumerate() {
            each(self.record_at(origin, record_locator(line, i as u64 + 1), piece));
        }
    }

    /// Runs `f` on the line's simd-json tape; `None` when the line is not for the fast path.
    pub(crate) fn with_tape<T>(
        &mut self,
        bytes: &[u8],
        f: impl FnOnce(&[Node<'_>]) -> Option<T>,
    ) -> Option<T> {
        if has_surrogate_escape(bytes) {
            return None;
        }
        self.scratch.clear();
        self.scratch.extend_from_slice(bytes);
        let mut tape = simd_json::Tape(std::mem::take(&mut self.nodes));
        let result = match simd_json::fill_tape(&mut self.scratch, &mut self.buffers, &mut tape) {
            Ok(()) => f(&tape.0),
            Err(_) => None,
        };
        let mut nodes = tape.0;
        nodes.clear();
        // Empty, so nothing is converted; the collect reuses the allocation.
        self.nodes = nodes
            .into_iter()
            .map(|_| -> Node<'static> { unreachable!("the tape was cleared") })
            .collect();
        result
    }
}

/// The records of a line that holds several JSON objects written with no newline between them
/// (`{...}{...}`, seen in real Claude Code and pi transcripts where a write lost its line
/// break): each complete object, in order, and then whatever follows the last complete one (an
/// incomplete record, whose parse reports its own fault). `None` for any other line: one that
/// parses as one value, or whose first value is not a complete object followed by another `{`.
/// Only called for a line that did not parse, so it costs nothing on good lines.
pub fn records_on_line(bytes: &[u8]) -> Option<Vec<&[u8]>> {
    let skip_space = |mut at: usize| {
        while bytes.get(at).is_some_and(u8::is_ascii_whitespace) {
            at += 1;
        }
        at
    };
    let mut stream =
        serde_json::Deserializer::from_slice(bytes).into_iter::<serde::de::IgnoredAny>();
    let mut pieces = Vec::new();
    let mut start = skip_space(0);
    loop {
        if bytes.get(start) != Some(&b'{') {
            // Not an object where the next record would start: trailing text, not a record.
            return None;
        }
        match stream.next() {
            Some(Ok(_)) => {
                let end = stream.byte_offset();
                pieces.push(&bytes[start..end]);
                start = skip_space(end);
                if start == bytes.len() {
                    break;
                }
            }
            Some(Err(_)) if !pieces.is_empty() => {
                pieces.push(&bytes[start..]);
                break;
            }
            _ => return None,
        }
    }
    (pieces.len() > 1).then_some(pieces)
}

/// Where the `record`-th (1-based) of several records on line `line` is: the first at the line
/// itself, each later one at [`Locator::LineRecord`] (whose id material is `L<line>.<record>`).
pub fn record_locator(line: u64, record: u64) -> Locator {
    if record <= 1 {
        Locator::Line(line)
    } else {
        Locator::LineRecord { line, record }
    }
}

/// The warning that line `line` holds `records` records ([`records_on_line`]).
pub fn several_records(origin: &Origin, line: u64, records: usize) -> ParseError {
    origin.error(
        Locator::Line(line),
        ParseErrorKind::SeveralRecordsOnOneLine {
            records: records as u64,
        },
    )
}

/// Whether no value of a line can meet the per-value bound (adapter-bounded-values), so that the
/// line may be carried as its text: re-encoded, a value takes at most a few bytes more than its
/// source text (a number such as `1E2` becomes `100.0`), and half the bound leaves room for that.
pub fn within_value_bound(bytes: &[u8]) -> bool {
    bytes.len() <= pond_canonical::bounded::MAX_VALUE_BYTES / 2
}

/// The top-level members named in `wanted` of one line (a string or a boolean as it is, any
/// other value as neither), without building the rest of the line; `None` where
/// [`LineFields::parse`] gives none (not UTF-8, not JSON, not an object). For a survey pass:
/// values are borrowed from the line, and made source data only when they are kept.
pub fn survey_fields<'b>(
    line: u64,
    bytes: &'b [u8],
    wanted: &[&'static str],
) -> Option<SurveyLine<'b>> {
    let mut fields = Vec::with_capacity(wanted.len());
    let strict = match scan_fields(bytes, wanted, &mut fields, &|_, _| false) {
        Some(Strict::Yes) => true,
        Some(Strict::No) => false,
        None => {
            let scan = LineFields::parse(line, bytes, wanted)?;
            fields.clear();
            for &key in wanted {
                if let Some(s) = scan.str(key) {
                    fields.push((key, Scalar::Str(Cow::Owned((*s.get()).to_owned()))));
                } else if let Some(b) = scan.bool(key) {
                    fields.push((key, Scalar::Bool(*b.get())));
                }
            }
            false
        }
    };
    Some(SurveyLine {
        line,
        record_in_line: 1,
        fields,
        strict,
    })
}

/// The top-level members named in `wanted` of a line the walk alone shows to be a JSON object
/// serde_json reads ([`SurveyLine::is_strict`]), without building or decoding any of it; `None`
/// for any other line, or when the walk is unsure (then read the line with [`LineParser`]).
/// `give_up` is asked about each wanted member as it is found (with its text if a string): when
/// it answers true, the walk stops there and gives `None`, so a line the caller has no use for
/// is not walked to its end. The line is checked whole (UTF-8, no control byte) only when the
/// walk reaches its end: `give_up` may be asked about a member of a line that the walk would
/// have refused, so what it decides must hold for a faulty line too.
pub fn scan_strict<'b>(
    line: u64,
    bytes: &'b [u8],
    wanted: &[&'static str],
    give_up: &dyn Fn(&str, Option<&[u8]>) -> bool,
) -> Option<SurveyLine<'b>> {
    let mut fields = Vec::with_capacity(wanted.len());
    match scan_fields(bytes, wanted, &mut fields, give_up)? {
        Strict::Yes => Some(SurveyLine {
            line,
            record_in_line: 1,
            fields,
            strict: true,
        }),
        _ => None,
    }
}

/// What [`survey_fields`] read from one line.
#[derive(Debug)]
pub struct SurveyLine<'b> {
    line: u64,
    /// Which record of its line this is (1 but for a line of several records).
    record_in_line: u64,
    fields: Vec<(&'static str, Scalar<'b>)>,
    /// Whether the walk alone showed the line to be a JSON object that serde_json reads.
    strict: bool,
}

/// One member a survey reads.
#[derive(Debug)]
enum Scalar<'b> {
    Str(Cow<'b, str>),
    Bool(bool),
    Other,
    /// A string as its place in the line, while [`scan_fields`] walks it (not yet checked as
    /// UTF-8); made a `Str` before the walk gives its members, so no survey holds one.
    At(std::ops::Range<usize>),
}

impl SurveyLine<'_> {
    /// Whether the survey's walk alone showed the line to be a JSON object serde_json reads into
    /// a value, the same value [`LineParser::record`] reads: every token checked by JSON's grammar
    /// as serde_json checks it, no number whose range serde_json would have to check (one with an
    /// exponent or of over 300 digits), no `\u` surrogate escape, no nesting near the limit. A
    /// reader may then carry the line as its text without parsing it again.
    pub fn is_strict(&self) -> bool {
        self.strict
    }

    fn scalar(&self, key: &str) -> Option<&Scalar<'_>> {
        self.fields.iter().find(|(k, _)| *k == key).map(|(_, v)| v)
    }

    /// The line's number.
    pub fn line(&self) -> u64 {
        self.line
    }

    /// Whether the line has the member `key`, of any type.
    pub fn has(&self, key: &str) -> bool {
        self.scalar(key).is_some()
    }

    /// The member `key` if it is a string.
    pub fn str(&self, key: &str) -> Option<&str> {
        match self.scalar(key)? {
            Scalar::Str(s) => Some(s),
            _ => None,
        }
    }

    /// The member `key` if it is a boolean.
    pub fn bool(&self, key: &str) -> Option<bool> {
        match self.scalar(key)? {
            Scalar::Bool(b) => Some(*b),
            _ => None,
        }
    }

    /// The member `key` if it is a string, as a value read from `origin`'s line.
    pub fn extract(&self, origin: &Origin, key: &str) -> Option<Extracted<String>> {
        let value = Value::from(self.str(key)?);
        let mut record = self.record(origin, Map::from_iter([(key.to_owned(), value)]));
        record.take_str(key)
    }

    /// The line's position as id material, as [`Record::position`] gives it.
    pub fn position(&self, origin: &Origin) -> Extracted<String> {
        self.record(origin, Map::new()).position()
    }

    /// The same survey, of the `record`-th of several records on its line ([`records_on_line`]).
    pub fn of_record(mut self, record: u64) -> Self {
        self.record_in_line = record;
        self
    }

    fn record<'o>(&self, origin: &'o Origin, fields: Map<String, Value>) -> Record<'o> {
        let at = record_locator(self.line, self.record_in_line);
        Record::from_value(origin, at, Value::Object(fields)).expect("an object is a record")
    }
}

/// A [`SurveyLine`] apart from the bytes it was read from: each string it borrowed kept as its
/// place in them, so that a survey made on one thread ([`each_line_surveyed`]) is used on another
/// with the same bytes, and nothing is copied.
#[derive(Debug)]
pub struct DetachedSurvey {
    line: u64,
    record_in_line: u64,
    fields: Vec<(&'static str, Detached)>,
    strict: bool,
}

/// A [`Scalar`] apart from its line.
#[derive(Debug)]
enum Detached {
    At(std::ops::Range<usize>),
    Owned(String),
    Bool(bool),
    Other,
}

impl SurveyLine<'_> {
    /// This survey of `bytes`, apart from them ([`DetachedSurvey::attach`] gives it back).
    pub fn detach(self, bytes: &[u8]) -> DetachedSurvey {
        let base = bytes.as_ptr() as usize;
        let fields = self
            .fields
            .into_iter()
            .map(|(key, value)| {
                let value = match value {
                    Scalar::Str(Cow::Borrowed(s)) => {
                        match (s.as_ptr() as usize).checked_sub(base) {
                            Some(at) if at + s.len() <= bytes.len() => {
                                Detached::At(at..at + s.len())
                            }
                            _ => Detached::Owned(s.to_owned()),
                        }
                    }
                    Scalar::Str(Cow::Owned(s)) => Detached::Owned(s),
                    Scalar::Bool(b) => Detached::Bool(b),
                    Scalar::Other | Scalar::At(_) => Detached::Other,
                };
                (key, value)
            })
            .collect();
        DetachedSurvey {
            line: self.line,
            record_in_line: self.record_in_line,
            fields,
            strict: self.strict,
        }
    }
}

impl DetachedSurvey {
    /// The survey again, of `bytes`: the bytes it was detached from. Each string is checked as
    /// UTF-8 again (the walk checked the line, but nothing here proves these are its bytes); with
    /// the detaching, 5% more instructions for the Claude Code survey that crosses threads.
    pub fn attach(self, bytes: &[u8]) -> SurveyLine<'_> {
        let fields = self
            .fields
            .into_iter()
            .map(|(key, value)| {
                let value = match value {
                    Detached::At(range) => match bytes.get(range).map(std::str::from_utf8) {
                        Some(Ok(s)) => Scalar::Str(Cow::Borrowed(s)),
                        // Not the bytes it was read from: nothing to borrow.
                        _ => Scalar::Other,
                    },
                    Detached::Owned(s) => Scalar::Str(Cow::Owned(s)),
                    Detached::Bool(b) => Scalar::Bool(b),
                    Detached::Other => Scalar::Other,
                };
                (key, value)
            })
            .collect();
        SurveyLine {
            line: self.line,
            record_in_line: self.record_in_line,
            fields,
            strict: self.strict,
        }
    }
}

/// Whether `bytes` hold a `\u` escape of a UTF-16 surrogate (`\uD800`-`\uDFFF`), which
/// serde_json and simd-json do not treat alike when unpaired.
fn has_surrogate_escape(bytes: &[u8]) -> bool {
    u_escapes(bytes).any(|i| {
        matches!(bytes.get(i + 2), Some(b'd' | b'D'))
            && matches!(
                bytes.get(i + 3),
                Some(b'8'..=b'9' | b'a'..=b'f' | b'A'..=b'F')
            )
    })
}

/// Where each `\u` of `bytes` is (a `\u` escape, or text such as `\\u`), by a searcher built
/// once: built for every line, its set-up was 1.6% of a conversion's samples.
pub(crate) fn u_escapes(bytes: &[u8]) -> impl Iterator<Item = usize> + '_ {
    static FINDER: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"\\u"));
    FINDER.find_iter(bytes)
}

/// Whether `bytes` hold a byte below 0x20 (a control character; whitespace between tokens too).
/// Tested 16 bytes at a time with no early exit: the loop the compiler made of a byte-wise fold
/// counted 70% more instructions (13.9 M against 8.2 M over a 20 MB Claude Code file). Not
/// inlined: inlined, the walk before it in [`scan_fields`] counted 1.3 M more.
#[cfg(target_arch = "x86_64")]
#[inline(never)]
fn has_control_byte(bytes: &[u8]) -> bool {
    use std::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_max_epu8, _mm_movemask_epi8, _mm_or_si128,
        _mm_set1_epi8, _mm_setzero_si128,
    };
    let mut chunks = bytes.chunks_exact(16);
    // SAFETY: SSE2 is part of every x86_64 target, and each load reads one 16-byte chunk of
    // `bytes` (with no alignment requirement).
    let hit = unsafe {
        let below = _mm_set1_epi8(0x1f);
        let mut hit = _mm_setzero_si128();
        for chunk in &mut chunks {
            let v = _mm_loadu_si128(chunk.as_ptr().cast::<__m128i>());
            // A byte is at most 0x1f when the larger of it and 0x1f is 0x1f.
            hit = _mm_or_si128(hit, _mm_cmpeq_epi8(_mm_max_epu8(v, below), below));
        }
        _mm_movemask_epi8(hit) != 0
    };
    hit || chunks.remainder().iter().any(|&b| b < 0x20)
}

#[cfg(not(target_arch = "x86_64"))]
fn has_control_byte(bytes: &[u8]) -> bool {
    bytes
        .chunks(64)
        .any(|chunk| chunk.iter().fold(false, |seen, &b| seen | (b < 0x20)))
}

/// Reads the top-level members named in `wanted` of one line into `found` (a string or a
/// boolean as it is, any other value as `null`; a repeated member keeps its last value), walking
/// the rest of the line as serde_json skips a value it ignores, and building none of it.
/// `None` when the walk is unsure what [`LineFields::parse`] would give: any fault, an escape in
/// a key or a wanted string, a number in a wanted member (serde_json checks its range), deep
/// nesting. The caller then asks `LineFields` itself, and drops what `found` holds.
fn scan_fields<'b>(
    bytes: &'b [u8],
    wanted: &[&'static str],
    found: &mut Vec<(&'static str, Scalar<'b>)>,
    give_up: &dyn Fn(&str, Option<&[u8]>) -> bool,
) -> Option<Strict> {
    // The line is checked as UTF-8 and for control bytes after the walk, not before: a walk
    // that gives up (the Codex survey, at a `response_item`'s `type`, a few dozen bytes in)
    // spent two passes over the whole line for nothing. The walk reads structure from ASCII
    // bytes alone and keeps each wanted string as its place, taken as text once the whole line
    // is checked; whatever a control byte or a byte that is not UTF-8 would have refused, the
    // check at the end refuses.
    let first = found.len();
    let mut scan = Scan {
        bytes,
        at: 0,
        risky: false,
    };
    scan.space();
    scan.eat(b'{')?;
    scan.space();
    if scan.peek() == Some(b'}') {
        scan.at += 1;
    } else {
        loop {
            scan.space();
            let key = &bytes[scan.plain_string()?];
            scan.space();
            scan.eat(b':')?;
            scan.space();
            match wanted.iter().find(|w| w.as_bytes() == key) {
                Some(&name) => {
                    let value = match scan.peek()? {
                        b'"' => Scalar::At(scan.plain_string()?),
                        b't' => scan.literal("true").map(|()| Scalar::Bool(true))?,
                        b'f' => scan.literal("false").map(|()| Scalar::Bool(false))?,
                        b'n' => scan.literal("null").map(|()| Scalar::Other)?,
                        b'{' | b'[' => scan.value(1).map(|()| Scalar::Other)?,
                        _ => return None,
                    };
                    let text = match &value {
                        Scalar::At(at) => Some(&bytes[at.clone()]),
                        _ => None,
                    };
                    if give_up(name, text) {
                        return None;
                    }
                    match found[first..].iter_mut().find(|(k, _)| *k == name) {
                        Some(slot) => slot.1 = value,
                        None => found.push((name, value)),
                    }
                }
                None => scan.value(1)?,
            }
            scan.space();
            match scan.next()? {
                b',' => {}
                b'}' => break,
                _ => return None,
            }
        }
    }
    scan.space();
    (scan.at == bytes.len()).then_some(())?;
    // Strings were skipped by their quotes and backslashes alone (see `Scan::skip_string`): a
    // control byte in one is a fault serde_json finds.
    if has_control_byte(bytes) {
        return None;
    }
    let text = utf8(bytes)?;
    for (_, value) in &mut found[first..] {
        if let Scalar::At(at) = value {
            // Its ends are quotes, so on character boundaries.
            *value = Scalar::Str(Cow::Borrowed(text.get(at.clone())?));
        }
    }
    Some(if scan.risky { Strict::No } else { Strict::Yes })
}

/// A member's value as [`flat_object`] gives it.
#[derive(Debug, PartialEq)]
pub enum Flat<'b> {
    /// A string, as its JSON text in the line (quotes and escapes included).
    String(&'b str),
    /// An object of strings, each member as its name and its string's JSON text.
    Object(Vec<(&'b str, &'b str)>),
}

/// The text of a string whose JSON text [`Flat::String`] gives, when it has no escape.
pub fn plain(json: &str) -> Option<&str> {
    let inner = json.strip_prefix('"')?.strip_suffix('"')?;
    (!inner.contains('\\')).then_some(inner)
}

/// The members of a line that is one JSON object whose every member is a string or an object
/// of strings (at most 16 members each), each name without an escape and given once in its
/// object, taken as the walk
/// finds them and none decoded: for a reader that copies such a line's strings as their JSON
/// text (a Codex tool output, most of a rollout's bytes). `None` for any other line, a fault
/// (as serde_json would find it), a `\u` escape of a surrogate or a line of several records
/// included: read that line with [`LineParser`]. Every member is then what serde_json reads,
/// each string's value the one its text encodes.
pub fn flat_object(text: &str) -> Option<Vec<(&str, Flat<'_>)>> {
    let bytes = text.as_bytes();
    type At = std::ops::Range<usize>;
    enum FlatAt {
        String(At),
        Object(Vec<(At, At)>),
    }
    // Whether `name` is none of `names` (a built `Map` keeps a repeated name's first place and
    // last value).
    fn once<'a>(bytes: &[u8], mut names: impl Iterator<Item = &'a At>, name: &At) -> bool {
        !names.any(|n| bytes[n.clone()] == bytes[name.clone()])
    }
    let mut scan = Scan {
        bytes,
        at: 0,
        risky: false,
    };
    let string = |scan: &mut Scan<'_>| {
        let start = scan.at;
        scan.skip_string().map(|()| start..scan.at)
    };
    // `{`, then members by `member` until `}`.
    fn members(
        scan: &mut Scan<'_>,
        member: &mut dyn FnMut(&mut Scan<'_>, At) -> Option<()>,
    ) -> Option<()> {
        scan.space();
        scan.eat(b'{')?;
        scan.space();
        if scan.peek() == Some(b'}') {
            scan.at += 1;
            return Some(());
        }
        loop {
            scan.space();
            let name = scan.plain_string()?;
            scan.space();
            scan.eat(b':')?;
            scan.space();
            member(scan, name)?;
            scan.space();
            match scan.next()? {
                b',' => {}
                b'}' => return Some(()),
                _ => return None,
            }
        }
    }
    // Each name is compared with those before it: past a few members, which no record this is
    // for has, the line is left to the parser (a hostile line of many would take quadratic time).
    const MEMBERS: usize = 16;
    let mut found: Vec<(At, FlatAt)> = Vec::with_capacity(4);
    members(&mut scan, &mut |scan, name| {
        (found.len() < MEMBERS).then_some(())?;
        once(bytes, found.iter().map(|(n, _)| n), &name).then_some(())?;
        let value = match scan.peek()? {
            b'"' => FlatAt::String(string(scan)?),
            b'{' => {
                let mut inner: Vec<(At, At)> = Vec::with_capacity(4);
                members(scan, &mut |scan, name| {
                    (inner.len() < MEMBERS).then_some(())?;
                    once(bytes, inner.iter().map(|(n, _)| n), &name).then_some(())?;
                    (scan.peek()? == b'"').then_some(())?;
                    inner.push((name, string(scan)?));
                    Some(())
                })?;
                FlatAt::Object(inner)
            }
            _ => return None,
        };
        found.push((name, value));
        Some(())
    })?;
    scan.space();
    // One record, and no surrogate escape (serde_json and simd-json differ on an unpaired one).
    (scan.at == bytes.len() && !scan.risky).then_some(())?;
    // Strings were skipped by their quotes and backslashes alone (see `Scan::skip_string`): a
    // control byte in one is a fault serde_json finds.
    if has_control_byte(bytes) {
        return None;
    }
    // Every range ends at quotes, so on character boundaries.
    let at = |r: At| text.get(r);
    found
        .into_iter()
        .map(|(name, value)| {
            let value = match value {
                FlatAt::String(r) => Flat::String(at(r)?),
                FlatAt::Object(inner) => Flat::Object(
                    inner
                        .into_iter()
                        .map(|(n, v)| Some((at(n)?, at(v)?)))
                        .collect::<Option<_>>()?,
                ),
            };
            Some((at(name)?, value))
        })
        .collect()
}

/// Whether a walk that succeeded checked everything serde_json checks reading a value (see
/// [`SurveyLine::is_strict`]).
enum Strict {
    Yes,
    /// A number was skipped whose range serde_json would check, or a surrogate escape.
    No,
}

/// A position in one line being walked by [`scan_fields`].
struct Scan<'b> {
    /// The line, not yet checked as UTF-8 or for control bytes ([`scan_fields`] checks both
    /// once the walk is done).
    bytes: &'b [u8],
    at: usize,
    /// A number was skipped that serde_json, reading it into a value, could find out of range,
    /// or a `\u` escape of a UTF-16 surrogate, which serde_json and simd-json do not treat alike.
    risky: bool,
}

impl<'b> Scan<'b> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn next(&mut self) -> Option<u8> {
        let b = self.peek()?;
        self.at += 1;
        Some(b)
    }

    fn eat(&mut self, b: u8) -> Option<()> {
        (self.next()? == b).then_some(())
    }

    /// JSON whitespace, as serde_json takes it.
    fn space(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\n' | b'\t' | b'\r')) {
            self.at += 1;
        }
    }

    fn literal(&mut self, word: &str) -> Option<()> {
        let end = self.at + word.len();
        (self.bytes.get(self.at..end)? == word.as_bytes()).then_some(())?;
        self.at = end;
        Some(())
    }

    /// A string without escapes, as its place in the line (its text between the quotes).
    fn plain_string(&mut self) -> Option<std::ops::Range<usize>> {
        self.eat(b'"')?;
        // A control byte is refused after the walk: here a quote or a backslash ends the string.
        let end = next_quote_or_backslash(self.bytes, self.at)?;
        (self.bytes[end] == b'"').then_some(())?;
        let at = self.at..end;
        self.at = end + 1;
        Some(at)
    }

    /// Skips a string as serde_json's `ignore_str` does: escapes checked, not decoded. A control
    /// byte is refused after the walk ([`scan_fields`]), so only quotes and backslashes matter
    /// here: they are found 64 bytes at a time as a mask ([`marks`]), and each is taken from the
    /// mask in turn, so a text with an escape every few dozen bytes (a tool's output) costs a few
    /// operations per escape, not a new search.
    fn skip_string(&mut self) -> Option<()> {
        self.eat(b'"')?;
        let bytes = self.bytes;
        // Most strings of a record are short (a key, an id, a timestamp): their first 16 bytes
        // are looked at alone first, and one that ends there, before any backslash, is passed
        // without a block of 64 (a pi line has a hundred such strings).
        if let Some(head) = bytes.get(self.at..self.at + 16) {
            let hits = marks16::<false>(head.try_into().expect("16 bytes"));
            if hits != 0 {
                let at = self.at + hits.trailing_zeros() as usize;
                if bytes[at] == b'"' {
                    self.at = at + 1;
                    return Some(());
                }
            }
        }
        // Whether the byte after the last block is escaped: the block ended in a run of an odd
        // number of backslashes.
        let mut odd_run_before = 0u64;
        while let Some(block) = bytes.get(self.at..self.at + 64) {
            let base = self.at;
            let (quotes, backslashes) = quotes_and_backslashes(block.try_into().expect("64 bytes"));
            let escaped = if backslashes | odd_run_before == 0 {
                0
            } else {
                escaped_by_runs(backslashes, &mut odd_run_before)
            };
            let end = quotes & !escaped;
            // The escaped bytes of the string (before its closing quote) but for backslashes,
            // which are always escaped right: each must name an escape.
            let mut codes = escaped & end.wrapping_sub(1) & !end;
            while codes != 0 {
                let at = base + codes.trailing_zeros() as usize;
                codes &= codes - 1;
                self.code_at(at)?;
            }
            if end != 0 {
                self.at = base + end.trailing_zeros() as usize + 1;
                return Some(());
            }
            self.at = base + 64;
        }
        if odd_run_before != 0 {
            // The string goes on past the last block at an escaped byte: the loop below takes
            // the escape from its backslash, the last byte of the block.
            self.at -= 1;
        }
        loop {
            // A control byte is refused after the walk: the string ends at a quote or goes on at
            // a backslash.
            self.at = next_quote_or_backslash(bytes, self.at)?;
            match self.next()? {
                b'"' => return Some(()),
                b'\\' => self.escape()?,
                _ => return None,
            }
        }
    }

    /// Checks the byte at `at` as the code of an escape (the byte after its backslash) as
    /// [`Self::escape`] does, without moving: four hex digits must follow a `u`.
    #[inline(always)]
    fn code_at(&mut self, at: usize) -> Option<()> {
        let bytes = self.bytes;
        match bytes[at] {
            b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => Some(()),
            b'u' => {
                let hex = bytes.get(at + 1..at + 5)?;
                hex.iter().all(u8::is_ascii_hexdigit).then_some(())?;
                self.risky |= matches!(hex[0], b'd' | b'D')
                    && matches!(hex[1], b'8'..=b'9' | b'a'..=b'f' | b'A'..=b'F');
                Some(())
            }
            _ => None,
        }
    }

    /// Checks the escape after a backslash (the backslash passed), as serde_json does, and passes
    /// it.
    fn escape(&mut self) -> Option<()> {
        let bytes = self.bytes;
        match self.next()? {
            b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => {}
            b'u' => {
                let hex = bytes.get(self.at..self.at + 4)?;
                hex.iter().all(u8::is_ascii_hexdigit).then_some(())?;
                // As `has_surrogate_escape` finds them: \uD800 to \uDFFF.
                self.risky |= matches!(hex[0], b'd' | b'D')
                    && matches!(hex[1], b'8'..=b'9' | b'a'..=b'f' | b'A'..=b'F');
                self.at += 4;
            }
            _ => return None,
        }
        Some(())
    }

    fn digits(&mut self) -> usize {
        let start = self.at;
        while self.peek().is_some_and(|b| b.is_ascii_digit()) {
            self.at += 1;
        }
        self.at - start
    }

    /// Skips a number by JSON's grammar (serde_json checks no range for a number it ignores).
    fn number(&mut self) -> Option<()> {
        if self.peek() == Some(b'-') {
            self.at += 1;
        }
        let mut digits = 1;
        match self.next()? {
            b'0' => {}
            b'1'..=b'9' => {
                digits += self.digits();
            }
            _ => return None,
        }
        if self.peek() == Some(b'.') {
            self.at += 1;
            let fraction = self.digits();
            (fraction > 0).then_some(())?;
            digits += fraction;
        }
        // Only a number with hundreds of digits, or with a large positive exponent, can leave
        // f64's range (serde_json's only check): one of at most `digits` digits and exponent
        // `e` is under 10^(digits + e), so no more than 10^280 when `digits + e <= 280`, far
        // from f64's largest (1.8 x 10^308). A negative exponent only makes it smaller (serde_json
        // reads one below f64's least as zero, no fault). Small exponents are common: JavaScript
        // writes 0.00000055 as `5.5e-7`, as pi's token costs are written.
        self.risky |= digits > 300;
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.at += 1;
            let positive = match self.peek() {
                Some(b'-') => {
                    self.at += 1;
                    false
                }
                Some(b'+') => {
                    self.at += 1;
                    true
                }
                _ => true,
            };
            let start = self.at;
            (self.digits() > 0).then_some(())?;
            if positive {
                let exponent = &self.bytes[start..self.at];
                // Past four digits the exponent alone is out of any bound checked here.
                let e = if exponent.len() > 4 {
                    usize::MAX
                } else {
                    exponent
                        .iter()
                        .fold(0usize, |e, d| e * 10 + usize::from(d - b'0'))
                };
                self.risky |= digits.saturating_add(e) > 280;
            }
        }
        Some(())
    }

    /// Skips one value nested `depth` deep.
    fn value(&mut self, depth: usize) -> Option<()> {
        if depth >= MAX_FAST_DEPTH {
            return None;
        }
        match self.peek()? {
            b'"' => self.skip_string(),
            b't' => self.literal("true"),
            b'f' => self.literal("false"),
            b'n' => self.literal("null"),
            b'-' | b'0'..=b'9' => self.number(),
            open @ (b'{' | b'[') => {
                self.at += 1;
                let close = if open == b'{' { b'}' } else { b']' };
                self.space();
                if self.peek() == Some(close) {
                    self.at += 1;
                    return Some(());
                }
                loop {
                    self.space();
                    if open == b'{' {
                        self.skip_string()?;
                        self.space();
                        self.eat(b':')?;
                        self.space();
                    }
                    self.value(depth + 1)?;
                    self.space();
                    match self.next()? {
                        b',' => {}
                        b if b == close => return Some(()),
                        _ => return None,
                    }
                }
            }
            _ => None,
        }
    }
}

/// What a record read for a foreign write may leave unbuilt: the members of its object member
/// `object` (pi's `message`) that its reader does not read (`read`) and in which none of the
/// option keys the writer looks for occurs (`wanted`, from `SessionWriter::option_keys`),
/// neither as the member's name nor as any string within it. Such a member would only have gone
/// into the message's options, where the writer's searches (for a model, a provider, a
/// signature) could not have found anything in it: what is written and every loss reported
/// stay the same, and building the values is most of the cost of a pi assistant line (its
/// `usage` with `cost`: a quarter of a real session's JSON values). The same holds of the
/// record's own members its reader never reads (`unread`: Claude Code's `toolUseResult`, the
/// structured copy of a tool's output, a quarter of a real transcript's bytes), which are left
/// out whole under the same condition.
#[derive(Debug, Clone, Copy)]
pub struct Prune {
    /// The record's member whose own members may be left unbuilt.
    pub object: &'static str,
    /// The members of `object` its reader reads: always built.
    pub read: &'static [&'static str],
    /// Members of the record itself that its reader never reads.
    pub unread: &'static [&'static str],
    /// The option keys the writer looks for.
    pub wanted: &'static [&'static str],
}

impl Prune {
    /// Whether the value spanning `nodes[value..end]`, the member `key`, holds a wanted key,
    /// as the member's name or as any string within it.
    pub(crate) fn wants(&self, key: &str, nodes: &[Node<'_>]) -> bool {
        names_key(self.wanted, key, nodes)
    }
}

/// A line's value as the fast path builds it: an object as its members, in order (a
/// [`Record`]'s own form, with no `Map` hashing their keys), anything else as the value.
enum Built {
    Members(Vec<(String, Value)>),
    Other(Value),
}

impl Built {
    fn record<'o>(self, origin: &'o Origin, at: Locator) -> Result<Record<'o>, ParseError> {
        match self {
            Built::Members(members) => Ok(Record::from_members(origin, at, members)),
            Built::Other(value) => Record::from_value(origin, at, value),
        }
    }
}

/// The record at `nodes[0]`; `None` to leave the fast path.
fn tape_record(nodes: &[Node<'_>]) -> Option<Built> {
    tape_record_with(nodes, |_, at| tape_value(nodes, at, 1).map(Some))
}

/// The record at `nodes[0]` with [`Prune`]'s members left out; `None` to leave the fast path.
fn tape_record_pruned(nodes: &[Node<'_>], prune: &Prune) -> Option<Built> {
    // A record naming a member twice is built whole (see `tape_members`), the members of
    // `object` left out as `pruned_object` leaves them.
    let unread = if prune.unread.is_empty() || tape_members(nodes, 0).is_some() {
        prune.unread
    } else {
        &[]
    };
    tape_record_with(nodes, |key, at| {
        if unread.contains(&key) {
            let end = *at + span(nodes, *at)?;
            if !prune.wants(key, nodes.get(*at..end)?) {
                *at = end;
                return Some(None);
            }
        }
        if key == prune.object {
            pruned_object(nodes, at, prune).map(Some)
        } else {
            tape_value(nodes, at, 1).map(Some)
        }
    })
}

/// The record at `nodes[0]`, each member's value as `value(key, at)` builds it from
/// `nodes[*at]` on (passing what it takes; `Some(None)`: the member is left out); a value that
/// is no object is built whole. `None` to leave the fast path.
fn tape_record_with(
    nodes: &[Node<'_>],
    mut value: impl FnMut(&str, &mut usize) -> Option<Option<Value>>,
) -> Option<Built> {
    let Node::Object { len, .. } = *nodes.first()? else {
        return tape_value(nodes, &mut 0, 0).map(Built::Other);
    };
    let mut at = 1;
    let mut members = Vec::with_capacity(len);
    for _ in 0..len {
        let Node::String(key) = *nodes.get(at)? else {
            return None;
        };
        at += 1;
        if let Some(v) = value(key, &mut at)? {
            members.push((key.to_owned(), v));
        }
    }
    Some(Built::Members(members))
}

/// The string at `nodes[at]`.
pub(crate) fn tape_str<'n>(nodes: &[Node<'n>], at: usize) -> Option<&'n str> {
    match *nodes.get(at)? {
        Node::String(s) => Some(s),
        _ => None,
    }
}

/// Whether one of `keys` (a foreign writer's option keys) may occur in the member `key` whose
/// value is at `nodes[at]`: as its name, or as any string within its value (an object's member
/// names among them). `false` means that a `Map` built of it names none of the keys
/// (`discover::names_any`).
pub(crate) fn tape_wants(keys: &[&str], nodes: &[Node<'_>], key: &str, at: usize) -> bool {
    let end = span(nodes, at).map_or(at, |n| at + n);
    names_key(keys, key, nodes.get(at..end).unwrap_or_default())
}

/// Whether `key` is one of `keys`, or any string of the value spanning `value` is.
fn names_key(keys: &[&str], key: &str, value: &[Node<'_>]) -> bool {
    keys.contains(&key)
        || value
            .iter()
            .any(|n| matches!(n, Node::String(s) if keys.contains(s)))
}

/// The object of the members `members` (each a name and where its value is, in order), as it
/// is left once the members `taken` are taken out of it one by one (`Map::remove`, which moves
/// the last member into the place of the one it removes), its values built at `depth`; the
/// taken members' values are never built. Of what is left, only the members `keep` (given a
/// member's name and where its value is) are built, in that order. `None` to leave the fast
/// path.
pub(crate) fn tape_rest<'a>(
    nodes: &[Node<'_>],
    members: impl Iterator<Item = &'a (&'a str, usize)>,
    taken: &[&str],
    depth: usize,
    keep: impl Fn(&str, usize) -> bool,
) -> Option<Map<String, Value>> {
    let mut left: Vec<(&str, usize)> = members.copied().collect();
    for key in taken {
        if let Some(i) = left.iter().position(|(k, _)| k == key) {
            left.swap_remove(i);
        }
    }
    left.retain(|&(key, at)| keep(key, at));
    let mut map = Map::with_capacity(left.len());
    for (key, at) in left {
        map.insert(key.to_owned(), tape_value(nodes, &mut at.clone(), depth)?);
    }
    Some(map)
}

/// Whether no array or object of the tape `nodes` nests as deep as the fast path leaves to
/// serde_json ([`tape_value`]'s depth, `MAX_FAST_DEPTH`): a mapping that reads a line off its
/// tape without building all of it must leave such a line to be read by its record, which
/// serde_json may refuse (its own limit is 128) where the tape would map it.
pub(crate) fn within_fast_depth(nodes: &[Node<'_>]) -> bool {
    // Each level of nesting is a node of its own: a short tape (most lines') is shallow.
    if nodes.len() < MAX_FAST_DEPTH {
        return true;
    }
    // The end of each open array or object, innermost last.
    let mut open = [0usize; MAX_FAST_DEPTH];
    let mut depth = 0;
    for (i, node) in nodes.iter().enumerate() {
        while depth > 0 && open[depth - 1] <= i {
            depth -= 1;
        }
        if let Node::Array { count, .. } | Node::Object { count, .. } = *node {
            // The record itself is depth 0 (`tape_record_with`); a value at depth d is refused
            // from d + 1 = MAX_FAST_DEPTH on.
            if depth + 1 >= MAX_FAST_DEPTH {
                return false;
            }
            open[depth] = i + count + 1;
            depth += 1;
        }
    }
    true
}

/// How many nodes the value at `nodes[at]` spans, itself included.
pub(crate) fn span(nodes: &[Node<'_>], at: usize) -> Option<usize> {
    Some(match nodes.get(at)? {
        Node::Object { count, .. } | Node::Array { count, .. } => count + 1,
        _ => 1,
    })
}

/// The object at `nodes[*at]` (a member of the record) without the members [`Prune`] leaves
/// out; any other value, or an object naming a member twice (which of two a search meets
/// first depends on where the first stood), is built whole.
pub(crate) fn pruned_object(nodes: &[Node<'_>], at: &mut usize, prune: &Prune) -> Option<Value> {
    let start = *at;
    let Some(members) = tape_members(nodes, start) else {
        return tape_value(nodes, at, 1);
    };
    *at = start + 1;
    let mut map = Map::with_capacity(members.len());
    for (key, value) in members {
        let end = value + span(nodes, value)?;
        if prune.read.contains(&key) || prune.wants(key, nodes.get(value..end)?) {
            *at = value;
            map.insert(key.to_owned(), tape_value(nodes, at, 2)?);
        }
        *at = end;
    }
    Some(Value::Object(map))
}

/// The value starting at `nodes[*at]`, as serde_json reads it; `None` to leave the fast path.
pub(crate) fn tape_value(nodes: &[Node<'_>], at: &mut usize, depth: usize) -> Option<Value> {
    let node = *nodes.get(*at)?;
    *at += 1;
    if matches!(node, Node::Array { .. } | Node::Object { .. }) && depth + 1 >= MAX_FAST_DEPTH {
        return None;
    }
    #[allow(unreachable_patterns)] // 128-bit numbers, should a feature turn them on
    Some(match node {
        Node::String(s) => Value::String(s.to_owned()),
        Node::Static(StaticNode::Null) => Value::Null,
        Node::Static(StaticNode::Bool(b)) => Value::Bool(b),
        // simd-json reads `-0` as the integer 0; serde_json as the float -0.0.
        Node::Static(StaticNode::I64(0)) => Value::Number(Number::from_f64(-0.0)?),
        Node::Static(StaticNode::I64(n)) => Value::Number(n.into()),
        Node::Static(StaticNode::U64(n)) => Value::Number(n.into()),
        Node::Static(StaticNode::F64(f)) => Value::Number(Number::from_f64(f)?),
        Node::Array { len, .. } => {
            let mut items = Vec::with_capacity(len);
            for _ in 0..len {
                items.push(tape_value(nodes, at, depth + 1)?);
            }
            Value::Array(items)
        }
        Node::Object { len, .. } => {
            let mut map = Map::with_capacity(len);
            for _ in 0..len {
                let Node::String(key) = *nodes.get(*at)? else {
                    return None;
                };
                *at += 1;
                let value = tape_value(nodes, at, depth + 1)?;
                map.insert(key.to_owned(), value);
            }
            Value::Object(map)
        }
        _ => return None,
    })
}

/// What [`write_str`] writes for each byte: 0 for itself, else the escape letter.
const ESCAPE: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut b = 0;
    while b < 0x20 {
        table[b] = b'u';
        b += 1;
    }
    table[0x08] = b'b';
    table[0x09] = b't';
    table[0x0a] = b'n';
    table[0x0c] = b'f';
    table[0x0d] = b'r';
    table[b'"' as usize] = b'"';
    table[b'\\' as usize] = b'\\';
    table
};

const ONES: u64 = 0x0101_0101_0101_0101;

/// The eight bytes of `bytes` from `at`, as one little-endian word, if there are eight.
#[inline(always)]
fn word_at(bytes: &[u8], at: usize) -> Option<u64> {
    let chunk = bytes.get(at..at.checked_add(8)?)?;
    Some(u64::from_le_bytes(chunk.try_into().expect("eight bytes")))
}

/// The high bit of the first byte lane of `w` that is `"` or `\\`, with maybe others above it
/// (a lane's borrow reaches only the lanes above it), or 0 for none: for text known to hold no
/// control byte.
#[inline(always)]
fn quote_lanes(w: u64) -> u64 {
    let quote = w ^ (ONES * u64::from(b'"'));
    let slash = w ^ (ONES * u64::from(b'\\'));
    (quote.wrapping_sub(ONES) | slash.wrapping_sub(ONES)) & !w & (ONES * 0x80)
}

/// The index of the first `"` or `\\` of `bytes` at or after `from`. Most strings of a record
/// are short, so the word at `from` is looked at alone first; when it holds neither (or fewer
/// than eight bytes are left), memchr searches from `from`.
fn next_quote_or_backslash(bytes: &[u8], from: usize) -> Option<usize> {
    match word_at(bytes, from).map_or(0, quote_lanes) {
        0 => memchr::memchr2(b'"', b'\\', bytes.get(from..)?).map(|i| from + i),
        hit => Some(from + (hit.trailing_zeros() / 8) as usize),
    }
}

/// The places of `"` and `\\` in 16 bytes, and with `CONTROL` of the control bytes too, as the
/// bits of a mask (bit i: byte i).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn marks16<const CONTROL: bool>(chunk: &[u8; 16]) -> u32 {
    use std::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_max_epu8, _mm_movemask_epi8, _mm_or_si128,
        _mm_set1_epi8,
    };
    // SAFETY: SSE2 is part of every x86_64 target, and `chunk` is 16 readable bytes (the load
    // has no alignment requirement).
    let hits = unsafe {
        let v = _mm_loadu_si128(chunk.as_ptr().cast::<__m128i>());
        let quote = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'"' as i8));
        let backslash = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'\\' as i8));
        let mut hit = _mm_or_si128(quote, backslash);
        if CONTROL {
            // A byte is at most 0x1f when the larger of it and 0x1f is 0x1f.
            let below = _mm_set1_epi8(0x1f);
            hit = _mm_or_si128(hit, _mm_cmpeq_epi8(_mm_max_epu8(v, below), below));
        }
        _mm_movemask_epi8(hit)
    };
    u32::from(hits as u16)
}

/// The places of `"` and `\\` in 16 bytes, and with `CONTROL` of the control bytes too, as the
/// bits of a mask (bit i: byte i).
#[cfg(not(target_arch = "x86_64"))]
fn marks16<const CONTROL: bool>(chunk: &[u8; 16]) -> u32 {
    chunk.iter().enumerate().fold(0, |mask, (i, &b)| {
        let hit = b == b'"' || b == b'\\' || (CONTROL && b < 0x20);
        mask | (u32::from(hit) << i)
    })
}

/// The places of `"`, `\\` and the control bytes (the bytes a JSON string escapes) in 64 bytes,
/// as the bits of a mask (bit i: byte i): [`marks16`] of each 16, for the writer (the walk
/// takes quotes and backslashes apart, [`quotes_and_backslashes`]).
#[inline(always)]
fn marks(block: &[u8; 64]) -> u64 {
    let mut mask = 0u64;
    for (i, chunk) in block.chunks_exact(16).enumerate() {
        let chunk: &[u8; 16] = chunk.try_into().expect("16 bytes");
        mask |= u64::from(marks16::<true>(chunk)) << (16 * i);
    }
    mask
}

/// The places of `"` and of `\\` in 64 bytes, as the bits of two masks (bit i: byte i).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn quotes_and_backslashes(block: &[u8; 64]) -> (u64, u64) {
    use std::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_set1_epi8,
    };
    let (mut quotes, mut backslashes) = (0u64, 0u64);
    for (i, chunk) in block.chunks_exact(16).enumerate() {
        // SAFETY: SSE2 is part of every x86_64 target, and `chunk` is 16 readable bytes (the
        // load has no alignment requirement).
        let (q, b) = unsafe {
            let v = _mm_loadu_si128(chunk.as_ptr().cast::<__m128i>());
            let q = _mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8(b'"' as i8)));
            let b = _mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8(b'\\' as i8)));
            (q, b)
        };
        quotes |= u64::from(q as u16) << (16 * i);
        backslashes |= u64::from(b as u16) << (16 * i);
    }
    (quotes, backslashes)
}

/// The places of `"` and of `\\` in 64 bytes, as the bits of two masks (bit i: byte i).
#[cfg(not(target_arch = "x86_64"))]
fn quotes_and_backslashes(block: &[u8; 64]) -> (u64, u64) {
    block.iter().enumerate().fold((0, 0), |(q, b), (i, &byte)| {
        (
            q | (u64::from(byte == b'"') << i),
            b | (u64::from(byte == b'\\') << i),
        )
    })
}

/// The bytes of a block escaped by the runs of backslashes before them, but for backslashes
/// themselves (a run of an even number escapes its own every other byte, and none after it), as
/// a mask; from the mask of the block's backslashes and whether the byte before the block ended
/// a run of an odd number (`odd_run_before`, 1 or 0), which it sets for the next block. simdjson's
/// `find_odd_backslash_sequences` (Langdale and Lemire, "Parsing Gigabytes of JSON per Second",
/// 2019): an odd run is one that starts at an even place and ends at an odd one, or the other
/// way round, found with one addition per parity for all runs at once.
#[inline(always)]
fn escaped_by_runs(backslashes: u64, odd_run_before: &mut u64) -> u64 {
    const EVEN: u64 = 0x5555_5555_5555_5555;
    const ODD: u64 = !EVEN;
    let starts = backslashes & !(backslashes << 1);
    // A run that goes on from the block before starts at an odd place when that run was odd.
    let even_start_mask = EVEN ^ *odd_run_before;
    let even_starts = starts & even_start_mask;
    let odd_starts = starts & !even_start_mask;
    let even_carries = backslashes.wrapping_add(even_starts);
    let (mut odd_carries, overflow) = backslashes.overflowing_add(odd_starts);
    odd_carries |= *odd_run_before;
    *odd_run_before = u64::from(overflow);
    let even_start_odd_end = even_carries & !backslashes & ODD;
    let odd_start_even_end = odd_carries & !backslashes & EVEN;
    even_start_odd_end | odd_start_even_end
}

/// `bytes` as text if they are UTF-8: what `std::str::from_utf8` gives, checked many bytes at a
/// time.
pub(crate) fn utf8(bytes: &[u8]) -> Option<&str> {
    simdutf8::basic::from_utf8(bytes).ok()
}

/// Appends `s` as a JSON string, escaped as serde_json escapes it. The bytes to escape are found
/// 64 bytes at a time as a mask ([`marks`]) and the block is written from it in turn: each run
/// before an escape is copied as 64 bytes, whatever its length, and each escape as 8 (what passes
/// the run's or the escape's end is written over next), so that text with an escape every few
/// bytes (code in a tool's output: quotes, line breaks) costs a few stores per escape rather than
/// two copies of a length known only then (9% of a pi→codex conversion's instructions before).
pub(crate) fn write_str(out: &mut Vec<u8>, s: &str) {
    let bytes = s.as_bytes();
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    // A short string with nothing to escape (a uuid, a timestamp, a key: most of a line's
    // strings) is copied as it is, without the padded block its end would take.
    if bytes.len() < 64 && !short_needs_escape(bytes) {
        out.extend_from_slice(bytes);
        out.push(b'"');
        return;
    }
    let mut at = 0;
    // Blocks with 64 bytes after them are read in place; the last one or two from a copy padded
    // with a byte that needs no escape, so that a block's runs may be read as 64 bytes too.
    while bytes.len() - at >= 128 {
        let block: &[u8; 128] = bytes[at..at + 128].try_into().expect("128 bytes");
        escape_block(out, block, 64);
        at += 64;
    }
    let rest = &bytes[at..];
    let mut padded = [b' '; 192];
    padded[..rest.len()].copy_from_slice(rest);
    let mut from = 0;
    while from < rest.len() {
        let block: &[u8; 128] = padded[from..from + 128].try_into().expect("128 bytes");
        escape_block(out, block, (rest.len() - from).min(64));
        from += 64;
    }
    out.push(b'"');
}

/// Whether any of `bytes` (fewer than 64) is one a JSON string escapes: looked at 16 bytes at a
/// time and the last 16 (overlapping those before), or as the first and last 8, so that no byte
/// past them is read and no copy is made.
#[inline(always)]
fn short_needs_escape(bytes: &[u8]) -> bool {
    let n = bytes.len();
    if n >= 16 {
        let chunk = |at: usize| -> &[u8; 16] { bytes[at..at + 16].try_into().expect("16 bytes") };
        let mut hits = marks16::<true>(chunk(n - 16));
        let mut at = 0;
        while at + 16 <= n {
            hits |= marks16::<true>(chunk(at));
            at += 16;
        }
        hits != 0
    } else if n >= 8 {
        let word = |at: usize| word_at(bytes, at).expect("eight bytes");
        (escape_lanes(word(0)) | escape_lanes(word(n - 8))) != 0
    } else {
        bytes.iter().any(|&b| ESCAPE[usize::from(b)] != 0)
    }
}

/// Nonzero when a byte lane of `w` is `"`, `\\` or a control byte (each borrow reaches only the
/// lanes above one that is).
#[inline(always)]
fn escape_lanes(w: u64) -> u64 {
    let quote = w ^ (ONES * u64::from(b'"'));
    let slash = w ^ (ONES * u64::from(b'\\'));
    (quote.wrapping_sub(ONES) | slash.wrapping_sub(ONES) | w.wrapping_sub(ONES * 0x20))
        & !w
        & (ONES * 0x80)
}

/// Appends the first `n` (at most 64) bytes of `block`, escaped: [`write_str`]'s step. The 64
/// bytes after them are read only as the tail of a run's 64-byte copy, which writes past the run
/// into space reserved here and then written over (or left past the end).
#[inline(always)]
fn escape_block(out: &mut Vec<u8>, block: &[u8; 128], n: usize) {
    debug_assert!(n <= 64);
    let head: &[u8; 64] = block[..64].try_into().expect("64 bytes");
    let first_n = if n >= 64 { u64::MAX } else { (1 << n) - 1 };
    let mut hits = marks(head) & first_n;
    // An escape is at most 6 bytes, and a copy writes at most 64 past where it starts.
    out.reserve(n * 6 + 64);
    let mut len = out.len();
    let dst = out.as_mut_ptr();
    let src = block.as_ptr();
    let mut start = 0;
    // SAFETY: every read is of `block` (a run's copy starts at `start` <= 64 and reads 64 of its
    // 128 bytes; an escape is read from `ESCAPES`), and every write is within the capacity just
    // reserved: the bytes written before the last copy are at most 6 per byte of the first `start`
    // and that copy writes 64, so nothing passes `out.len() + n * 6 + 64` (runs and escapes
    // together write at most 6 bytes for each of the `n`). `len` counts only what is final:
    // the bytes of every run and escape, each written before `len` moves past them, so
    // `set_len` covers initialized bytes.
    unsafe {
        while hits != 0 {
            let i = hits.trailing_zeros() as usize;
            std::ptr::copy_nonoverlapping(src.add(start), dst.add(len), 64);
            len += i - start;
            let (escape, escaped) = ESCAPES[usize::from(block[i])];
            std::ptr::copy_nonoverlapping(escape.as_ptr(), dst.add(len), 8);
            len += usize::from(escaped);
            start = i + 1;
            hits &= hits - 1;
        }
        std::ptr::copy_nonoverlapping(src.add(start), dst.add(len), 64);
        len += n - start;
        out.set_len(len);
    }
}

/// How serde_json writes each byte that it escapes, padded to 8 bytes, and the escape's length
/// (`\n` is 2, `\u001f` is 6; 0 for a byte written as itself).
const ESCAPES: [([u8; 8], u8); 256] = {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut table = [([0u8; 8], 0u8); 256];
    let mut b = 0;
    while b < 256 {
        table[b] = match ESCAPE[b] {
            0 => ([0; 8], 0),
            b'u' => (
                [b'\\', b'u', b'0', b'0', HEX[b >> 4], HEX[b & 0xf], 0, 0],
                6,
            ),
            letter => ([b'\\', letter, 0, 0, 0, 0, 0, 0], 2),
        };
        b += 1;
    }
    table
};

/// Appends `json` as compact JSON: the text it holds as it is (`Json::json_text`, the text
/// serde_json writes for its value), else its value by [`write_value`].
pub(crate) fn write_json(out: &mut Vec<u8>, json: &pond_canonical::Json) {
    match json.json_text() {
        Some(text) => out.extend_from_slice(text.as_bytes()),
        None => write_value(out, json.as_value()),
    }
}

/// Appends `value` as compact JSON, byte for byte what `serde_json::to_writer` writes.
pub(crate) fn write_value(out: &mut Vec<u8>, value: &Value) {
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        // serde_json's own number formatting (itoa, ryu); writing into a `Vec` cannot fail.
        Value::Number(n) => serde_json::to_writer(&mut *out, n).expect("writes into memory"),
        Value::String(s) => write_str(out, s),
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_value(out, item);
            }
            out.push(b']');
        }
        Value::Object(map) => write_value_map(out, map),
    }
}

/// Appends the object `map` as compact JSON.
pub(crate) fn write_value_map(out: &mut Vec<u8>, map: &Map<String, Value>) {
    out.push(b'{');
    for (i, (k, v)) in map.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_str(out, k);
        out.push(b':');
        write_value(out, v);
    }
    out.push(b'}');
}

/// Appends `value` pretty-printed with two-space indents, byte for byte what serde_json's
/// `PrettyFormatter::with_indent(b"  ")` writes, as if nested `depth` levels deep (every line
/// after the first is indented by `depth` more levels).
pub(crate) fn write_value_pretty(out: &mut Vec<u8>, value: &Value, depth: usize) {
    match value {
        Value::Array(items) if !items.is_empty() => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                newline(out, depth + 1);
                write_value_pretty(out, item, depth + 1);
            }
            newline(out, depth);
            out.push(b']');
        }
        Value::Object(map) if !map.is_empty() => {
            out.push(b'{');
            for (i, (k, v)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                newline(out, depth + 1);
                write_str(out, k);
                out.extend_from_slice(b": ");
                write_value_pretty(out, v, depth + 1);
            }
            newline(out, depth);
            out.push(b'}');
        }
        // Scalars, `[]` and `{}` are written as compact JSON writes them.
        other => write_value(out, other),
    }
}

/// A line break and the indent of `depth` levels, as serde_json's pretty printer writes them.
fn newline(out: &mut Vec<u8>, depth: usize) {
    // A ready line break and indent (16 levels), copied whole and cut to its length: a copy of
    // a fixed size is a few moves, where one of the indent's own length was a call to memcpy.
    const INDENT: &[u8; 33] = b"\n                                ";
    let len = out.len() + 1 + 2 * depth;
    if depth <= 16 {
        out.extend_from_slice(INDENT);
        out.truncate(len);
    } else {
        out.push(b'\n');
        out.resize(len, b' ');
    }
}

/// An object written pretty-printed member by member, byte for byte what [`write_value_pretty`]
/// writes for the `Map` of the same members in the same order (`{}` for none): for a document
/// of a fixed shape, written without building a `Map` (and hashing its keys) to write it once.
pub(crate) struct PrettyObject<'a> {
    out: &'a mut Vec<u8>,
    depth: usize,
    empty: bool,
}

impl<'a> PrettyObject<'a> {
    /// Opens an object nested `depth` levels deep.
    pub(crate) fn new(out: &'a mut Vec<u8>, depth: usize) -> Self {
        out.push(b'{');
        Self {
            out,
            depth,
            empty: true,
        }
    }

    /// Starts the member `key`; its value goes into what this returns, at `depth + 1`.
    pub(crate) fn key(&mut self, key: &str) -> &mut Vec<u8> {
        let comma = !std::mem::take(&mut self.empty);
        let (depth, k) = (self.depth + 1, key.as_bytes());
        // The usual member (a writer's literal key, at most 16 levels deep): the comma, the line
        // break and indent, and the quoted key are put together on the stack, then copied in
        // one piece; written piece by piece, each with its own check of room, a key took 145
        // instructions, now 117 (docs/benchmarks.md, 2026-12-06, 09:53 UTC).
        const ROOM: usize = 96;
        if depth <= 16 && k.len() <= ROOM - 38 && !short_needs_escape(k) {
            let mut piece = [b' '; ROOM];
            let mut n = usize::from(comma);
            piece[0] = b',';
            piece[n] = b'\n';
            n += 1 + 2 * depth;
            piece[n] = b'"';
            n += 1;
            piece[n..n + k.len()].copy_from_slice(k);
            n += k.len();
            piece[n..n + 3].copy_from_slice(b"\": ");
            // Copied whole and cut to its length, as `newline` does.
            let len = self.out.len() + n + 3;
            self.out.extend_from_slice(&piece);
            self.out.truncate(len);
            return self.out;
        }
        // Room for the comma, the line break and indent (copied whole, see `newline`), the key
        // and its quotes: one reserve for all of it.
        self.out.reserve(key.len() + 40);
        if comma {
            self.out.push(b',');
        }
        newline(self.out, depth);
        // The writers' keys are literals that need no escape: copied as they are.
        if key.bytes().all(|b| ESCAPE[b as usize] == 0) {
            self.out.push(b'"');
            self.out.extend_from_slice(key.as_bytes());
            self.out.extend_from_slice(b"\": ");
        } else {
            write_str(self.out, key);
            self.out.extend_from_slice(b": ");
        }
        self.out
    }

    pub(crate) fn str(&mut self, key: &str, value: &str) -> &mut Self {
        write_str(self.key(key), value);
        self
    }

    pub(crate) fn int(&mut self, key: &str, value: i64) -> &mut Self {
        // serde_json writes integers with itoa too.
        let mut digits = itoa::Buffer::new();
        self.key(key)
            .extend_from_slice(digits.format(value).as_bytes());
        self
    }

    pub(crate) fn bool(&mut self, key: &str, value: bool) -> &mut Self {
        let text: &[u8] = if value { b"true" } else { b"false" };
        self.key(key).extend_from_slice(text);
        self
    }

    /// A member whose value is `json`, already written as it would be at this object's
    /// depth + 1.
    pub(crate) fn raw(&mut self, key: &str, json: &[u8]) -> &mut Self {
        self.key(key).extend_from_slice(json);
        self
    }

    /// This object's depth.
    pub(crate) fn depth(&self) -> usize {
        self.depth
    }

    /// A member whose value is a `Value`, pretty-printed.
    pub(crate) fn value(&mut self, key: &str, value: &Value) -> &mut Self {
        let depth = self.depth + 1;
        write_value_pretty(self.key(key), value, depth);
        self
    }

    /// A member whose value is an object, its members written by `members`.
    pub(crate) fn object(
        &mut self,
        key: &str,
        members: impl FnOnce(&mut PrettyObject<'_>),
    ) -> &mut Self {
        let depth = self.depth + 1;
        let mut inner = PrettyObject::new(self.key(key), depth);
        members(&mut inner);
        inner.end();
        self
    }

    /// A member whose value is an array of `items`, each written by `item` (given its index
    /// and its depth).
    pub(crate) fn array<T>(
        &mut self,
        key: &str,
        items: &[T],
        mut item: impl FnMut(&mut Vec<u8>, usize, &T, usize),
    ) -> &mut Self {
        let depth = self.depth + 1;
        let out = self.key(key);
        out.push(b'[');
        for (i, x) in items.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            newline(out, depth + 1);
            item(out, i, x, depth + 1);
        }
        if !items.is_empty() {
            newline(out, depth);
        }
        out.push(b']');
        self
    }

    /// Closes the object.
    pub(crate) fn end(self) {
        if !self.empty {
            newline(self.out, self.depth);
        }
        self.out.push(b'}');
    }
}

/// Appends the object `base` would be after `Map::insert` of each of `keys` in order: a key
/// `base` has keeps its place, the others follow in order. `put` writes the value of `keys[i]`.
/// Writing it this way copies nothing from `base`.
pub(crate) fn write_object<E>(
    out: &mut Vec<u8>,
    base: &Map<String, Value>,
    keys: &[&str],
    mut put: impl FnMut(&mut Vec<u8>, usize) -> Result<(), E>,
) -> Result<(), E> {
    assert!(keys.len() <= 64, "write_object takes at most 64 keys");
    out.push(b'{');
    let mut done = 0u64;
    let mut first = true;
    let mut key = |out: &mut Vec<u8>, k: &str| {
        if !std::mem::take(&mut first) {
            out.push(b',');
        }
        write_str(out, k);
        out.push(b':');
    };
    for (k, v) in base {
        key(out, k);
        match keys.iter().position(|w| w == k) {
            Some(i) => {
                done |= 1 << i;
                put(out, i)?;
            }
            None => write_value(out, v),
        }
    }
    for (i, k) in keys.iter().enumerate() {
        // A key given twice is written once, where `Map::insert` would leave it.
        if done & (1 << i) == 0 && !keys[..i].contains(k) {
            key(out, k);
            put(out, i)?;
        }
    }
    out.push(b'}');
    Ok(())
}

/// Opens a source file for reading, as a typed error if it cannot be.
pub fn open(origin: &Origin) -> Result<std::fs::File, ParseError> {
    std::fs::File::open(origin.path()).map_err(|e| {
        origin.error(
            Locator::File,
            ParseErrorKind::Io {
                detail: e.to_string(),
            },
        )
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    #[test]
    fn faults_are_located_and_reading_goes_on() {
        let origin = Origin::new("test", "/x.jsonl", "x.jsonl");
        let input = b"{\"a\":1}\n\nnot json\n[1]\n{\"b\":2}\r\n{\"c\":";
        let mut seen = Vec::new();
        read_records(&origin, &input[..], |r| {
            seen.push(match r {
                Ok(rec) => format!("ok {:?}", rec.locator()),
                Err(e) => format!("err {:?} {}", e.locator, e.kind),
            })
        });
        assert_eq!(seen.len(), 5, "{seen:?}");
        assert_eq!(seen[0], "ok Line(1)");
        assert!(
            seen[1].starts_with("err Line(3) invalid JSON"),
            "{}",
            seen[1]
        );
        assert!(
            seen[2].starts_with("err Line(4) expected a JSON object"),
            "{}",
            seen[2]
        );
        assert_eq!(seen[3], "ok Line(5)");
        assert!(seen[4].starts_with("err Line(6) truncated"), "{}", seen[4]);
    }

    /// Every non-blank line of every shared fixture under `dir` whose name ends with one of
    /// `suffixes`, as bytes, in the order of their paths.
    pub(crate) fn fixture_lines(dir: &str, suffixes: &[&str]) -> Vec<Vec<u8>> {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../shared/fixtures")
            .join(dir);
        let mut lines = Vec::new();
        for entry in walkdir::WalkDir::new(root).sort_by_file_name() {
            let Ok(entry) = entry else { continue };
            let name = entry.file_name().to_string_lossy();
            if entry.file_type().is_file() && suffixes.iter().any(|s| name.ends_with(s)) {
                let bytes = std::fs::read(entry.path()).unwrap();
                lines.extend(
                    bytes
                        .split(|&b| b == b'\n')
                        .filter(|l| !l.iter().all(u8::is_ascii_whitespace))
                        .map(<[u8]>::to_vec),
                );
            }
        }
        lines
    }

    /// Every non-blank line of every shared fixture (and some edge cases), as bytes.
    fn sample_lines() -> Vec<Vec<u8>> {
        let mut lines: Vec<Vec<u8>> = [
            r#"{"a":-0,"b":-0.0,"c":1e-400,"d":0.1,"e":1E5,"f":-1.5e-3,"g":2.2250738585072011e-308}"#,
            r#"{"a":18446744073709551615,"b":18446744073709551616,"c":-9223372036854775809}"#,
            r#"{"a":1,"a":{"x":[1,2]},"b":2,"a":3}"#,
            r#"{"a":"\ud83d\ude00 \u00e9\u0000\"\\\/\b\f\n\r\t","b":"\u007f\u001f"}"#,
            r#"{"lone":"\ud800"}"#,
            r#"{"lone":"\udc00x"}"#,
            r#"{"a":1e400}"#,
            "{\"a\":\"x\u{1}y\"}",
            "{\"a\":\"\u{7f}é漢字🙂\"}",
            r#"{"a":1} x"#,
            r#"{"a":[1,]}"#,
            r#"[1,2]"#,
            r#"{"k":tru}"#,
            r#"  {"a":{"b":[[[[{}]]]]}}  "#,
        ]
        .iter()
        .map(|l| l.as_bytes().to_vec())
        .collect();
        lines.push(b"{\"a\":\"\xff\"}".to_vec());
        // Faults the walk meets only at its end, since it checks the line whole after it:
        // bytes that are not UTF-8 in a key and in a skipped value, control bytes in a skipped
        // string and in a key, a raw tab in a wanted string.
        lines.push(b"{\"\xff\":1,\"a\":\"x\"}".to_vec());
        lines.push(b"{\"a\":\"x\",\"z\":[\"\xc3\"]}".to_vec());
        lines.push(b"{\"z\":\"a\x02b\",\"a\":\"x\"}".to_vec());
        lines.push(b"{\"a\x1f\":1,\"cwd\":\"x\"}".to_vec());
        lines.push(b"{\"uuid\":\"x\ty\"}".to_vec());
        for depth in [98, 99, 100, 101, 127, 128, 200] {
            let mut line = b"{\"a\":".to_vec();
            line.extend(std::iter::repeat_n(b'[', depth));
            line.extend(std::iter::repeat_n(b']', depth));
            line.push(b'}');
            lines.push(line);
        }
        lines.extend(fixture_lines("", &[".jsonl", ".json"]));
        assert!(lines.len() > 1000, "the shared fixtures are found");
        lines
    }

    #[test]
    fn a_flat_object_is_what_serde_json_reads_of_its_line() {
        let mut lines = sample_lines();
        lines.extend(
            [
                r#"{"a":"x","b":{"c":"\n\"\\ \u001b","d":""},"e":"\/"}"#,
                r#" { "a" : "x" , "b" : { } } "#,
                r#"{}"#,
                // Off the path: a repeated name (in the line, in its object), deeper nesting,
                // another value, an escaped name, a surrogate escape, two records.
                r#"{"a":"x","a":"y"}"#,
                r#"{"b":{"c":"x","c":"y"}}"#,
                r#"{"b":{"c":{"d":"x"}}}"#,
                r#"{"a":1}"#,
                r#"{"b":{"c":null}}"#,
                r#"{"\u0061":"x"}"#,
                r#"{"a":"\ud83d\ude00"}"#,
                r#"{"a":"x"}{"a":"y"}"#,
            ]
            .iter()
            .map(|l| l.as_bytes().to_vec()),
        );
        // More members than the walk compares, in the line and in its object.
        let many = |n: usize| {
            (0..n)
                .map(|i| format!("\"k{i}\":\"v\""))
                .collect::<Vec<_>>()
        };
        let line = format!("{{{}}}", many(17).join(","));
        lines.push(line.into_bytes());
        let line = format!("{{\"o\":{{{}}}}}", many(17).join(","));
        lines.push(line.into_bytes());
        let mut taken = 0;
        for bytes in &lines {
            let Ok(text) = std::str::from_utf8(bytes) else {
                continue;
            };
            let Some(members) = flat_object(text) else {
                continue;
            };
            taken += 1;
            let map: Map<String, Value> = serde_json::from_str(text)
                .unwrap_or_else(|e| panic!("{text}: serde_json refuses a flat object: {e}"));
            let decode = |json: &str| serde_json::from_str::<String>(json).unwrap();
            let read: Vec<(String, Value)> = members
                .iter()
                .map(|(name, flat)| {
                    let value = match flat {
                        Flat::String(json) => Value::String(decode(json)),
                        Flat::Object(inner) => Value::Object(
                            inner
                                .iter()
                                .map(|(n, json)| (n.to_string(), Value::String(decode(json))))
                                .collect(),
                        ),
                    };
                    (name.to_string(), value)
                })
                .collect();
            let parsed: Vec<(String, Value)> = map.into_iter().collect();
            assert_eq!(read, parsed, "{text}");
            for (_, flat) in &members {
                if let Flat::String(json) = flat {
                    assert_eq!(
                        plain(json),
                        (!json.contains('\\')).then(|| &json[1..json.len() - 1])
                    );
                }
            }
        }
        assert!(taken > 100, "{taken} lines are flat objects");
        let sixteen = format!("{{\"o\":{{{}}}}}", many(16).join(","));
        assert!(flat_object(&sixteen).is_some(), "{sixteen}");
        for refused in &lines[lines.len() - 10..] {
            let text = std::str::from_utf8(refused).unwrap();
            assert_eq!(flat_object(text), None, "{text}");
        }
    }

    /// What a pruned read keeps of one line's `message`, as JSON text.
    fn pruned(line: &str, wanted: &'static [&'static str]) -> String {
        let origin = Origin::new("test", "/x.jsonl", "x.jsonl");
        let prune = Prune {
            object: "message",
            read: &["role", "content"],
            unread: &["toolUseResult"],
            wanted,
        };
        let record = LineParser::default()
            .record_pruned(&origin, 1, line.as_bytes(), Some(&prune))
            .unwrap();
        serde_json::to_string(&record.into_rest().into_inner()).unwrap()
    }

    #[test]
    fn a_pruned_read_leaves_out_only_what_no_wanted_key_is_in() {
        let line = r#"{"type":"message","id":"a","message":{"role":"assistant","content":[{"type":"text","text":"hi"}],"api":"x","usage":{"input":1,"cost":{"total":0.5}},"model":"m","meta":{"deep":{"modelId":"n"}},"note":"model"}}"#;
        // Read members and those naming a wanted key stay, in their order; `api` and `usage`
        // go; `meta` holds `modelId` two levels down; `note` holds it as a value (kept, to be
        // safe: the check looks at every string).
        assert_eq!(
            pruned(line, &["model", "modelId"]),
            r#"{"type":"message","id":"a","message":{"role":"assistant","content":[{"type":"text","text":"hi"}],"model":"m","meta":{"deep":{"modelId":"n"}},"note":"model"}}"#
        );
        // A writer that wants no key keeps only what the reader reads.
        assert_eq!(
            pruned(line, &[]),
            r#"{"type":"message","id":"a","message":{"role":"assistant","content":[{"type":"text","text":"hi"}]}}"#
        );
        // Members outside `message` are all built; an empty `message` stays, and what follows
        // it is read in its place.
        let other = r#"{"usage":{"input":1},"message":"text"}"#;
        assert_eq!(pruned(other, &[]), other);
        let empty = r#"{"message":{},"after":[1,{"b":null}]}"#;
        assert_eq!(pruned(empty, &[]), empty);
        // A member of the record the reader never reads goes whole, unless a wanted key is in
        // it; what follows it is read in its place.
        let result =
            r#"{"type":"user","toolUseResult":{"stdout":"ok","n":[1,{"x":2}]},"uuid":"u"}"#;
        assert_eq!(pruned(result, &[]), r#"{"type":"user","uuid":"u"}"#);
        let named = r#"{"toolUseResult":{"agent":{"model":"m"}},"uuid":"u"}"#;
        assert_eq!(pruned(named, &["model"]), named);
        let scalar = r#"{"toolUseResult":"Error: no","uuid":"u"}"#;
        assert_eq!(pruned(scalar, &["model"]), r#"{"uuid":"u"}"#);
        // A record naming a member twice keeps it, as a whole read does (first place, last
        // value).
        let twice = r#"{"toolUseResult":1,"uuid":"u","toolUseResult":{"a":2}}"#;
        assert_eq!(
            pruned(twice, &[]),
            r#"{"toolUseResult":{"a":2},"uuid":"u"}"#
        );
    }

    #[test]
    fn a_pruned_read_builds_a_message_naming_a_member_twice_whole() {
        let line = r#"{"message":{"role":"user","usage":{"a":1},"usage":{"model":"m"},"x":2}}"#;
        let origin = Origin::new("test", "/x.jsonl", "x.jsonl");
        let whole = LineParser::default()
            .record(&origin, 1, line.as_bytes())
            .unwrap();
        assert_eq!(
            pruned(line, &["model"]),
            serde_json::to_string(&whole.into_rest().into_inner()).unwrap()
        );
    }

    #[test]
    fn the_line_parser_reads_what_serde_json_reads() {
        let origin = Origin::new("test", "/x.jsonl", "x.jsonl");
        let mut parser = LineParser::default();
        for (i, line) in sample_lines().iter().enumerate() {
            let ours = parser.record(&origin, 1, line);
            let theirs = Record::from_json_line(&origin, 1, line);
            match (ours, theirs) {
                (Ok(a), Ok(b)) => {
                    let (a, b) = (a.into_rest().into_inner(), b.into_rest().into_inner());
                    assert_eq!(a, b, "line {i}");
                    // Same keys in the same order, floats to the same bits.
                    assert_eq!(
                        serde_json::to_string(&a).unwrap(),
                        serde_json::to_string(&b).unwrap(),
                        "line {i}"
                    );
                }
                (Err(a), Err(b)) => assert_eq!(a, b, "line {i}"),
                (a, b) => panic!(
                    "line {i} {:?}: {a:?} vs {b:?}",
                    String::from_utf8_lossy(line)
                ),
            }
        }
    }

    /// A source that gives at most `.1` bytes per read.
    struct Trickle<'a>(&'a [u8], usize);

    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = self.1.min(buf.len()).min(self.0.len());
            buf[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    #[test]
    fn split_lines_gives_what_read_lines_gives() {
        let origin = Origin::new("test", "/x.jsonl", "x.jsonl");
        for input in [
            &b"{\"a\":1}\n\n  \nnot json\r\r\n[1]\n{\"b\":2}\r\n{\"c\":"[..],
            b"",
            b"\n",
            b"{}",
            b"{}\n",
            b"\r\n{}\r",
        ] {
            // 0: split; 1: read, each line whole in the reader's buffer; 2 and 3: read from a
            // source that gives a few bytes at a time, so lines straddle the buffer's fills.
            let collect = |how: usize| {
                let mut seen = Vec::new();
                let each = |line, bytes: Result<&[u8], ParseError>| {
                    seen.push((line, bytes.map(<[u8]>::to_vec).map_err(|e| e.to_string())));
                };
                let count = match how {
                    0 => split_lines(&origin, input, each),
                    1 => read_lines(&origin, input, each),
                    n => read_lines(&origin, Trickle(input, n), each),
                };
                (count, seen)
            };
            for how in 1..4 {
                assert_eq!(
                    collect(0),
                    collect(how),
                    "{how}: {:?}",
                    String::from_utf8_lossy(input)
                );
            }
        }
    }

    #[test]
    fn a_survey_on_two_threads_gives_each_line_in_order_with_its_own_survey() {
        let dir = std::env::temp_dir().join(format!("pond-survey-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut input = Vec::new();
        for i in 0..300u32 {
            match i % 7 {
                0 => input.extend_from_slice(b"\n"),
                1 => input.extend_from_slice(b"  \r\n"),
                2 => input.extend_from_slice(format!("not json {i}\r\n").as_bytes()),
                _ => input.extend_from_slice(
                    format!("{{\"i\":{i},\"pad\":\"{}\"}}\n", "x".repeat(i as usize)).as_bytes(),
                ),
            }
        }
        input.extend_from_slice(b"{\"last\":");
        let path = dir.join("lines.jsonl");
        std::fs::write(&path, &input).unwrap();
        let origin = Origin::new("test", &path, "lines.jsonl");
        // A survey that depends on the line alone, and says which thread made it. In the runs on
        // two threads, until a line has been surveyed on another thread, the calling thread
        // waits in its survey (ten seconds in all at most): the helper then claims the runs it
        // does not hold, however late it starts.
        let caller = std::thread::current().id();
        let elsewhere = std::sync::atomic::AtomicBool::new(false);
        let deadline = std::sync::OnceLock::new();
        let survey = |line: u64, bytes: &[u8]| {
            use std::sync::atomic::Ordering;
            if std::thread::current().id() != caller {
                elsewhere.store(true, Ordering::SeqCst);
            } else if let Some(deadline) = deadline.get() {
                while !elsewhere.load(Ordering::SeqCst) && std::time::Instant::now() < *deadline {
                    std::thread::yield_now();
                }
            }
            (bytes.first() == Some(&b'{')).then(|| (line, bytes.len(), std::thread::current().id()))
        };
        type Seen = Vec<(u64, Result<Vec<u8>, String>, Option<(u64, usize)>)>;
        let threads = std::cell::RefCell::new(std::collections::HashSet::new());
        let run = |held: Option<&[u8]>, sizes: Option<(usize, usize)>| -> Seen {
            let mut seen = Vec::new();
            let mut each = |line, bytes: Result<&[u8], ParseError>, s: Option<(u64, usize, _)>| {
                if let Some((_, _, thread)) = s {
                    threads.borrow_mut().insert(thread);
                }
                let bytes = bytes.map(<[u8]>::to_vec).map_err(|e| e.to_string());
                seen.push((line, bytes, s.map(|(l, n, _)| (l, n))));
            };
            match sizes {
                None => each_line_surveyed(&origin, held, false, survey, each).unwrap(),
                Some(sizes) => {
                    surveyed_in_blocks(&origin, held, sizes, &survey, &mut each).unwrap()
                }
            }
            seen
        };
        let alone = run(None, None);
        let lines = (0..300).filter(|i| i % 7 >= 2).count() + 1;
        assert_eq!(alone.len(), lines, "blank lines are not lines");
        assert!(
            alone
                .iter()
                .all(|(line, _, s)| s.is_none_or(|(l, _)| l == *line))
        );
        let one_thread = threads.borrow().len();
        assert_eq!(one_thread, 1);
        deadline.get_or_init(|| std::time::Instant::now() + std::time::Duration::from_secs(10));
        for held in [None, Some(&input[..])] {
            for sizes in [
                (1, 0),
                (100, 0),
                (5_000, 0),
                (1 << 20, 0),
                (1 << 20, 1 << 20),
            ] {
                assert_eq!(
                    run(held, Some(sizes)),
                    alone,
                    "held {}, {sizes:?}",
                    held.is_some()
                );
            }
        }
        assert!(
            threads.borrow().len() > one_thread,
            "some lines were surveyed on another thread"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_survey_that_panics_on_either_thread_ends_the_pass_with_its_panic() {
        let mut input = Vec::new();
        for i in 0..400u32 {
            input.extend_from_slice(format!("{{\"i\":{i}}}\n").as_bytes());
        }
        let origin = Origin::new("test", "/held.jsonl", "held.jsonl");
        for bad in [1, 200, 400] {
            let survey = |line: u64, _: &[u8]| {
                assert_ne!(line, bad, "a survey's fault");
                Some(line)
            };
            let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                let mut seen = 0;
                surveyed_in_blocks(&origin, Some(&input), (64, 0), &survey, &mut |_, _, _| {
                    seen += 1
                })
                .map(|()| seen)
            }));
            assert!(
                outcome.is_err(),
                "line {bad}: the pass ended with the panic"
            );
        }
    }

    #[test]
    fn a_detached_survey_attached_to_its_bytes_is_the_survey() {
        let wanted = ["type", "uuid", "isSidechain", "n", "cwd"];
        let lines: [&[u8]; 4] = [
            br#"{"type":"user","message":{"content":"x","k":3},"uuid":"u-1","isSidechain":false}"#,
            // An escape in a wanted string: read by the slow path, owned.
            br#"{"type":"us\u0065r","cwd":"/a\"b","uuid":"u-2","isSidechain":true}"#,
            br#"{"type":"summary","n":{"deep":[1,2]},"cwd":null}"#,
            br#"{}"#,
        ];
        let mut borrowed = 0;
        for (i, bytes) in lines.iter().enumerate() {
            let direct = survey_fields(i as u64 + 1, bytes, &wanted).unwrap();
            let detached = survey_fields(i as u64 + 1, bytes, &wanted)
                .unwrap()
                .detach(bytes);
            borrowed += detached
                .fields
                .iter()
                .filter(|(_, v)| matches!(v, Detached::At(_)))
                .count();
            // Across a thread, as `each_line_surveyed` takes it.
            let detached = std::thread::spawn(move || detached).join().unwrap();
            let again = detached.attach(bytes);
            assert_eq!(format!("{again:?}"), format!("{direct:?}"), "line {i}");
            for key in wanted {
                assert_eq!(again.str(key), direct.str(key), "{key} of line {i}");
                assert_eq!(again.bool(key), direct.bool(key), "{key} of line {i}");
                assert_eq!(again.has(key), direct.has(key), "{key} of line {i}");
            }
            assert_eq!(again.is_strict(), direct.is_strict());
        }
        assert!(
            borrowed >= 3,
            "{borrowed} strings kept as places in their line"
        );
        // Strings from elsewhere than the bytes given are kept as their own copies.
        let other = br#"{"type":"user"}"#;
        let survey = survey_fields(1, other, &wanted).unwrap();
        let detached = survey.detach(b"{}");
        assert!(matches!(detached.fields[0].1, Detached::Owned(_)));
        assert_eq!(detached.attach(b"{}").str("type"), Some("user"));
    }

    #[test]
    fn a_strict_survey_line_is_an_object_serde_json_reads() {
        let origin = Origin::new("test", "/x.jsonl", "x.jsonl");
        let mut strict = 0;
        let mut lines = sample_lines();
        let big = format!("{{\"a\":{}}}", "9".repeat(400));
        lines.extend([
            big.into_bytes(),
            br#"{"a":[1e400]}"#.to_vec(),
            br#"{"a":{"b":"\ud800"}}"#.to_vec(),
            br#"{"a":1.5,"b":[-0,0.25,12345678901234567890123]}"#.to_vec(),
        ]);
        for (i, line) in lines.iter().enumerate() {
            let Some(survey) = survey_fields(1, line, &["a"]) else {
                continue;
            };
            if survey.is_strict() {
                strict += 1;
                Record::from_json_line(&origin, 1, line).unwrap_or_else(|e| {
                    panic!(
                        "line {i} {:?}: strict, but {e}",
                        String::from_utf8_lossy(line)
                    )
                });
            }
        }
        assert!(strict > 1000, "{strict} strict lines");
        for line in [
            format!("{{\"a\":{}}}", "9".repeat(400)),
            r#"{"a":[1e400]}"#.to_owned(),
            r#"{"a":[1E+281]}"#.to_owned(),
            r#"{"a":[1.5e280]}"#.to_owned(),
            r#"{"a":[1e99999999999]}"#.to_owned(),
            r#"{"a":{"b":"\ud800"}}"#.to_owned(),
        ] {
            let survey = survey_fields(1, line.as_bytes(), &["z"]).expect("an object");
            assert!(!survey.is_strict(), "{line}");
        }
        // Exponents a walk can vouch for: small ones (JavaScript writes 0.00000055 as 5.5e-7)
        // and any negative one (serde_json reads a number below f64's least as zero).
        for line in [
            r#"{"a":[5.5e-7,1E2,-2.5E+10,1e279,1e-400,1e-99999999999]}"#,
            r#"{"cost":{"input":3.3e-7,"output":1.65e-6,"total":0}}"#,
        ] {
            let survey = survey_fields(1, line.as_bytes(), &["z"]).expect("an object");
            assert!(survey.is_strict(), "{line}");
        }
        // The bound, swept: whatever a walk calls strict, serde_json reads.
        for digits in 1..=22 {
            for exponent in (0..=330).step_by(7).chain(270..=300) {
                let line = format!("{{\"a\":{}e{exponent}}}", "9".repeat(digits));
                let survey = survey_fields(1, line.as_bytes(), &["z"]).expect("an object");
                if survey.is_strict() {
                    serde_json::from_str::<serde_json::Value>(&line)
                        .unwrap_or_else(|e| panic!("{line}: strict, but {e}"));
                }
            }
        }
        let plain = br#"{"a":1.5,"b":[-0,0.25,12345678901234567890123],"c":"x\"\\y"}"#;
        assert!(survey_fields(1, plain, &["z"]).unwrap().is_strict());
    }

    #[test]
    fn a_control_byte_is_found_wherever_it_is() {
        for len in 0..140 {
            let clean: Vec<u8> = (0..len).map(|i| b' ' + (i % 95) as u8).collect();
            assert!(!has_control_byte(&clean), "{len}");
            let high: Vec<u8> = (0..len).map(|i| 0x80 + (i % 128) as u8).collect();
            assert!(!has_control_byte(&high), "{len}");
            for at in 0..len {
                for b in [0x00, 0x09, 0x0a, 0x1f] {
                    let mut line = clean.clone();
                    line[at] = b;
                    assert!(has_control_byte(&line), "{len} {at} {b:#x}");
                }
            }
        }
    }

    #[test]
    fn a_walk_that_gives_up_is_asked_before_the_line_is_checked() {
        // The member the caller gives up at comes first; the fault, later.
        let asked = std::cell::Cell::new(0);
        let give_up = |key: &str, text: Option<&[u8]>| {
            asked.set(asked.get() + 1);
            key == "type" && text == Some(b"response_item")
        };
        for tail in [&b"\"\xff\""[..], b"\"a\x01b\"", b"\"cut"] {
            let mut line = br#"{"type":"response_item","payload":"#.to_vec();
            line.extend_from_slice(tail);
            line.push(b'}');
            asked.set(0);
            assert!(scan_strict(1, &line, &["type"], &give_up).is_none());
            assert_eq!(asked.get(), 1, "{:?}", String::from_utf8_lossy(&line));
            // Not given up, the same line is refused whole.
            assert!(scan_strict(1, &line, &["type"], &|_, _| false).is_none());
        }
        let line = br#"{"type":"other","payload":"fine"}"#;
        let scan = scan_strict(1, line, &["type"], &give_up).expect("a clean line");
        assert_eq!(scan.str("type"), Some("other"));
    }

    /// A string skipped byte by byte, as `Scan::skip_string` did before it took 64 bytes at a
    /// time: where the walk ends (`None`: refused) and whether it met a surrogate escape.
    fn skip_string_bytewise(text: &str) -> (Option<usize>, bool) {
        let bytes = text.as_bytes();
        let mut risky = false;
        let mut at = 1; // past the opening quote
        let end = loop {
            let Some(&b) = bytes.get(at) else { break None };
            at += 1;
            match b {
                b'"' => break Some(at),
                b'\\' => match bytes.get(at) {
                    Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => at += 1,
                    Some(b'u') => {
                        let Some(hex) = bytes.get(at + 1..at + 5) else {
                            break None;
                        };
                        if !hex.iter().all(u8::is_ascii_hexdigit) {
                            break None;
                        }
                        risky |= matches!(hex[0], b'd' | b'D')
                            && matches!(hex[1], b'8'..=b'9' | b'a'..=b'f' | b'A'..=b'F');
                        at += 5;
                    }
                    _ => break None,
                },
                _ => {}
            }
        };
        (end, risky)
    }

    /// Asserts that `text` is skipped by blocks as by bytes: where the walk ends, and for a
    /// string that ends, whether it met a surrogate escape (which it returns).
    fn skipped_alike(text: &str) -> bool {
        let mut scan = Scan {
            bytes: text.as_bytes(),
            at: 0,
            risky: false,
        };
        let ours = scan.skip_string().map(|()| scan.at);
        let (theirs, theirs_risky) = skip_string_bytewise(text);
        assert_eq!(ours, theirs, "{text:?}");
        if theirs.is_some() {
            assert_eq!(scan.risky, theirs_risky, "{text:?}");
        }
        theirs_risky
    }

    #[test]
    fn a_string_skipped_by_blocks_ends_where_one_skipped_by_bytes_does() {
        // Pieces that matter to the walk, at every place of strings of up to three blocks:
        // escapes of each kind, runs of backslashes, an escape cut by the end of a block or of
        // the text, a bad escape, multi-byte UTF-8.
        const PIECES: [&str; 16] = [
            "a", "a", "a", "a", "\"", "\\\\", "\\\"", "\\n", "\\u00e9", "\\uD83D", "\\udc00",
            "\\u12", "\\x", "\\", "é", "/",
        ];
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = |n: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % n as u64) as usize
        };
        let (mut ended, mut refused, mut risky) = (0, 0, 0);
        for _ in 0..20_000 {
            let mut text = String::from("\"");
            let len = next(200);
            while text.len() < len {
                text.push_str(PIECES[next(PIECES.len())]);
            }
            // Most strings are closed, and followed by more of the line.
            if next(8) != 0 {
                text.push('"');
            }
            for _ in 0..next(80) {
                text.push(if next(3) == 0 { '"' } else { 'z' });
            }
            let theirs_risky = skipped_alike(&text);
            let theirs = skip_string_bytewise(&text).0;
            if theirs.is_some() {
                ended += 1;
                risky += usize::from(theirs_risky);
            } else {
                refused += 1;
            }
        }
        assert!(
            ended > 2_000 && refused > 2_000 && risky > 500,
            "{ended} {refused} {risky}"
        );
        // Every run of up to four backslashes ending at every place around the end of the
        // first and second block (a run of an odd number escapes the first byte of the next
        // block, or of the bytes after the last block), before each kind of byte.
        let mut cases = 0;
        for before in 40..150 {
            for run in 1..=4 {
                for code in ["\"", "n", "x", "\\", "u00e9", "uD83D", "u1"] {
                    for after in [0, 1, 30, 70] {
                        let text = format!(
                            "\"{}{}{code}{}\"{}",
                            "a".repeat(before),
                            "\\".repeat(run),
                            "b".repeat(after),
                            "z".repeat(after)
                        );
                        skipped_alike(&text);
                        cases += 1;
                    }
                }
            }
        }
        assert_eq!(cases, 110 * 4 * 7 * 4);
    }

    #[test]
    fn survey_fields_are_what_line_fields_reads() {
        const WANTED: [&str; 4] = ["a", "uuid", "isSidechain", "cwd"];
        let origin = Origin::new("test", "/x.jsonl", "x.jsonl");
        let mut lines = sample_lines();
        lines.push(br#"{"a":"x","a":1,"uuid":"u","isSidechain":true,"cwd":{"x":"y"}}"#.to_vec());
        lines.push(br#"{"a":1,"a":"x","uuid":[1,{"uuid":"no"}],"isSidechain":false}"#.to_vec());
        lines.push(br#"{"n":1e400,"a":"big numbers are skipped, not read"}"#.to_vec());
        let (mut walked, mut objects) = (0, 0);
        for (i, line) in lines.iter().enumerate() {
            walked +=
                usize::from(scan_fields(line, &WANTED, &mut Vec::new(), &|_, _| false).is_some());
            let ours = survey_fields(3, line, &WANTED);
            let theirs = LineFields::parse(3, line, &WANTED);
            objects += usize::from(theirs.is_some());
            match (ours, theirs) {
                (Some(ours), Some(theirs)) => {
                    for key in WANTED {
                        assert_eq!(ours.str(key), theirs.str(key).map(|s| *s.get()));
                        assert_eq!(
                            ours.extract(&origin, key),
                            theirs.str(key).map(|s| s.to_owned()),
                            "line {i} {key}"
                        );
                        assert_eq!(
                            ours.bool(key),
                            theirs.bool(key).map(|b| *b.get()),
                            "line {i} {key}"
                        );
                    }
                    assert_eq!(ours.position(&origin).get(), theirs.position().get());
                }
                (None, None) => {}
                (a, b) => panic!(
                    "line {i} {:?}: {a:?} vs {b:?}",
                    String::from_utf8_lossy(line)
                ),
            }
        }
        assert!(
            walked * 10 > objects * 9,
            "the walk reads most lines itself"
        );
    }

    #[test]
    fn the_writer_writes_what_serde_json_writes() {
        let mut out = Vec::new();
        for line in sample_lines() {
            let Ok(value) = serde_json::from_slice::<Value>(&line) else {
                continue;
            };
            out.clear();
            write_value(&mut out, &value);
            assert_eq!(
                String::from_utf8_lossy(&out),
                serde_json::to_string(&value).unwrap()
            );
        }
        let every_byte: String = (0u8..0x80).map(char::from).collect::<String>() + "é\u{2028}🙂";
        for s in [
            every_byte.as_str(),
            "",
            "\"",
            "abcdefg\\",
            "12345678\n",
            "x\u{1f}",
        ] {
            out.clear();
            write_str(&mut out, s);
            assert_eq!(out, serde_json::to_vec(s).unwrap());
        }
    }

    #[test]
    fn strings_of_any_length_and_density_of_escapes_are_written_as_serde_json_writes_them() {
        // Lengths across several blocks and the padded rest, from no escape to nearly all.
        let alphabet = [
            'a', ' ', '"', '\\', '\n', '\t', '\u{0}', '\u{1f}', '\u{7f}', 'é', '🙂',
        ];
        let mut seed = 0x9e37_79b9_u64;
        let mut next = |m: usize| {
            seed = seed
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) as usize % m
        };
        let mut out = b"prefix".to_vec();
        for _ in 0..3000 {
            let len = next(600);
            let density = next(11);
            let s: String = (0..len)
                .map(|_| {
                    if next(10) < density {
                        alphabet[2 + next(6)]
                    } else {
                        alphabet[[0, 1, 8, 9, 10][next(5)]]
                    }
                })
                .collect();
            out.truncate(6);
            write_str(&mut out, &s);
            assert_eq!(&out[..6], b"prefix");
            assert_eq!(
                &out[6..],
                serde_json::to_vec(&s).unwrap().as_slice(),
                "{s:?}"
            );
        }
    }

    #[test]
    fn escapes_are_found_and_written_in_every_lane_and_chunk() {
        // Strings of every length to 70 and from 120 to 140 (across 64-byte blocks and the padded
        // rest) with one or two bytes needing an escape at every place, beside bytes that do not
        // (0x20 and 0x7f, next to the control bytes; 0x80 and above, which a signed compare would
        // take for control bytes; a quote's neighbours).
        let specials = ['"', '\\', '\n', '\u{0}', '\u{1f}'];
        let plain = ['a', ' ', '\u{7f}', '!', '#', '[', ']', 'é'];
        let naive = |b: &[u8]| b.iter().position(|&b| b == b'"' || b == b'\\');
        let mut out = Vec::new();
        let mut check = |s: String| {
            out.clear();
            write_str(&mut out, &s);
            assert_eq!(out, serde_json::to_vec(&s).unwrap(), "{s:?}");
            for from in 0..=s.len() {
                let found = next_quote_or_backslash(s.as_bytes(), from);
                let expected = naive(&s.as_bytes()[from..]).map(|i| from + i);
                assert_eq!(found, expected, "{s:?} from {from}");
            }
        };
        for len in (0..70).chain(120..140) {
            for filler in plain {
                let base: Vec<char> = std::iter::repeat_n(filler, len).collect();
                check(base.iter().collect());
                for p in 0..len {
                    for c in specials {
                        let mut one = base.clone();
                        one[p] = c;
                        check(one.iter().collect());
                        for q in (p + 1..len).step_by(3) {
                            let mut two = one.clone();
                            two[q] = specials[(p + q) % specials.len()];
                            check(two.iter().collect());
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn the_pretty_writer_writes_what_serde_json_writes() {
        let mut out = Vec::new();
        let mut values: Vec<Value> = sample_lines()
            .iter()
            .filter_map(|line| serde_json::from_slice(line).ok())
            .collect();
        values.push(
            serde_json::json!({"a": [], "b": {}, "c": [[], {}, [1, {"d": null}]], "e": "x\ny"}),
        );
        values.push(serde_json::json!([]));
        values.push(serde_json::json!("top"));
        for value in &values {
            for depth in [0, 2] {
                out.clear();
                write_value_pretty(&mut out, value, depth);
                let mut expected = Vec::new();
                let formatter = serde_json::ser::PrettyFormatter::with_indent(b"  ");
                serde::Serialize::serialize(
                    value,
                    &mut serde_json::Serializer::with_formatter(&mut expected, formatter),
                )
                .unwrap();
                let indent = format!("\n{}", " ".repeat(2 * depth));
                let expected = String::from_utf8(expected).unwrap().replace('\n', &indent);
                assert_eq!(String::from_utf8_lossy(&out), expected);
            }
        }
    }

    #[test]
    fn an_object_written_member_by_member_is_the_pretty_map() {
        let expected = serde_json::json!({
            "s": "a\"b\n", "n": -17, "t": true, "f": false, "empty": {}, "none": [],
            "v": {"x": [1, "two", {"three": null}], "y": {}},
            "inner": {"deep": {"k": 0}},
            "list": [{"i": 0}, {}, {"i": 2}],
            "q\"k\u{1}": i64::MIN,
        });
        // Depth 20: past the ready-made indents.
        for depth in [0, 2, 20] {
            let mut want = Vec::new();
            write_value_pretty(&mut want, &expected, depth);
            let mut got = Vec::new();
            let mut o = PrettyObject::new(&mut got, depth);
            o.str("s", "a\"b\n")
                .int("n", -17)
                .bool("t", true)
                .bool("f", false);
            o.object("empty", |_| {})
                .array::<u8>("none", &[], |_, _, _, _| {});
            o.value("v", &expected["v"]);
            o.object("inner", |i| {
                i.object("deep", |d| {
                    d.int("k", 0);
                });
            });
            o.array("list", &[Some(0), None, Some(2)], |out, at, item, depth| {
                let mut e = PrettyObject::new(out, depth);
                if let Some(i) = item {
                    assert_eq!(at as i64, *i);
                    e.int("i", *i);
                }
                e.end();
            });
            // A key that needs escapes is escaped.
            o.int("q\"k\u{1}", i64::MIN);
            o.end();
            assert_eq!(
                String::from_utf8_lossy(&got),
                String::from_utf8_lossy(&want)
            );
        }
        let mut none = Vec::new();
        PrettyObject::new(&mut none, 3).end();
        assert_eq!(none, b"{}");
    }

    #[test]
    fn write_object_places_keys_as_map_insert_does() {
        let base: Map<String, Value> = serde_json::from_str(r#"{"a":1,"t":2,"b":3}"#).unwrap();
        let mut out = Vec::new();
        let keys = ["t", "z", "t", "y"];
        write_object(&mut out, &base, &keys, |out, i| {
            write_str(out, keys[i]);
            Ok::<(), ()>(())
        })
        .unwrap();
        let mut expected = base.clone();
        for k in keys {
            expected.insert(k.into(), k.into());
        }
        assert_eq!(out, serde_json::to_vec(&expected).unwrap());
    }
}

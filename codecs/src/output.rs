//! [`Output`] implementations: a directory, memory, and a single stream.

use crate::face::{Output, WriteError, check_relative_path};
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::path::PathBuf;

/// Files under a directory. Every path is checked to stay inside it, and a file that exists
/// before this run is never overwritten: it is opened for writing only to append to it what
/// follows the bytes it was found to hold (below). Appends stream: each open file has one
/// bounded buffer (at most [`MAX_OPEN_FILES`] of them), so no file written anew is ever held
/// whole in memory.
///
/// A file that exists already is compared with what would be written instead, a buffer at a
/// time: when it holds exactly those bytes (the same session converted or restored again), it
/// is left as it is and the write counts as done ([`Self::unchanged`]); when it holds their
/// start, ending at a line's end (the source grew since), the rest is appended when the unit
/// ends ([`Self::extended`]); at the first byte that differs, or at the end of a unit when the
/// file is longer, the write is refused ([`WriteError::Differs`]), and with it every existing
/// file of the unit (none is extended).
pub struct DirOutput {
    root: PathBuf,
    open: BTreeMap<String, BufWriter<File>>,
    written: Vec<String>,
    /// The same paths, for the lookup on every (re)open.
    created: HashSet<String>,
    /// Files of finished source units: closed to further appends.
    sealed: BTreeSet<String>,
    /// Files that existed before this run and so far hold what was appended, each read up to
    /// there.
    comparing: BTreeMap<String, Compared>,
    /// Files that existed and were found to hold exactly what this run would write.
    unchanged: Vec<String>,
    /// Files that existed holding the start of what this run would write, extended.
    extended: Vec<String>,
    /// Files that existed with other content.
    refused: HashSet<String>,
    /// Whether a file of the unit being written was refused for its content: then no file of
    /// the unit is unchanged (the unit's sessions are one write, done or not).
    unit_differs: bool,
}

/// How many files a [`DirOutput`] keeps open at once; older ones are flushed and closed.
const MAX_OPEN_FILES: usize = 64;

impl DirOutput {
    /// Output below `root` (created if missing).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self {
            root: root.into(),
            open: BTreeMap::new(),
            written: Vec::new(),
            created: HashSet::new(),
            sealed: BTreeSet::new(),
            comparing: BTreeMap::new(),
            unchanged: Vec::new(),
            extended: Vec::new(),
            refused: HashSet::new(),
            unit_differs: false,
        }
    }

    /// The relative paths written, in the order first written.
    pub fn written(&self) -> &[String] {
        &self.written
    }

    /// The relative paths that existed already with exactly the bytes this run would have
    /// written, in the order their units ended.
    pub fn unchanged(&self) -> &[String] {
        &self.unchanged
    }

    /// The relative paths that existed already holding the start of what this run would
    /// write, and were extended with the rest, in the order their units ended.
    pub fn extended(&self) -> &[String] {
        &self.extended
    }

    /// The files this run wrote, found written as it would write them, or extended: the
    /// sessions it delivered.
    pub fn delivered(&self) -> Vec<String> {
        self.written
            .iter()
            .chain(&self.unchanged)
            .chain(&self.extended)
            .cloned()
            .collect()
    }

    /// Flushes and closes every file, and ends every comparison (as [`Output::end_unit`]).
    pub fn finish(&mut self) -> Result<(), WriteError> {
        let compared = self.end_comparisons();
        for (path, mut w) in std::mem::take(&mut self.open) {
            w.flush().map_err(|error| WriteError::Io { path, error })?;
        }
        compared
    }

    fn path_of(&self, relative: &str) -> String {
        self.root.join(relative).display().to_string()
    }

    /// Compares `bytes` with the next bytes of the existing file at `relative`.
    fn compare(&mut self, relative: &str, bytes: &[u8]) -> Result<(), WriteError> {
        let compared = self.comparing.get_mut(relative).expect("comparing");
        let Err(m) = compared.next_are(bytes) else {
            return Ok(());
        };
        // A difference, a shorter file, or a read that failed: refused, and with it every
        // file of the unit.
        let e = compared.write_error(m);
        self.comparing.remove(relative);
        self.refused.insert(relative.to_owned());
        self.unit_differs = true;
        Err(e)
    }

    /// Ends the unit's comparisons: a file read to its end held what was written; one with
    /// more bytes did not. When every file of the unit compared holds what was written, or its
    /// start (and none was refused before), they are unchanged or extended; otherwise all are
    /// refused, none extended, and the first difference is returned.
    fn end_comparisons(&mut self) -> Result<(), WriteError> {
        let mut compared = std::mem::take(&mut self.comparing);
        let mut first = compared
            .values_mut()
            .find_map(|c| c.ends_here().err().map(|m| c.write_error(m)));
        let differs = std::mem::take(&mut self.unit_differs) || first.is_some();
        for (relative, mut c) in compared {
            if differs {
                self.refused.insert(relative);
                continue;
            }
            match c.extend() {
                Ok(Delivered::Unchanged) => self.unchanged.push(relative.clone()),
                Ok(Delivered::Extended(_)) => self.extended.push(relative.clone()),
                Err(m) => {
                    first.get_or_insert(c.write_error(m));
                    self.refused.insert(relative);
                    continue;
                }
            }
            self.sealed.insert(relative);
        }
        first.map_or(Ok(()), Err)
    }
}

impl Output for DirOutput {
    fn end_unit(&mut self) -> Result<(), WriteError> {
        self.sealed.extend(self.written.iter().cloned());
        self.end_comparisons()
    }

    fn append(&mut self, relative: &str, bytes: &[u8]) -> Result<(), WriteError> {
        if self.sealed.contains(relative) {
            return Err(WriteError::Exists {
                path: self.path_of(relative),
            });
        }
        if self.refused.contains(relative) {
            return Err(WriteError::Differs {
                path: self.path_of(relative),
            });
        }
        if self.comparing.contains_key(relative) {
            return self.compare(relative, bytes);
        }
        if !self.open.contains_key(relative) {
            check_relative_path(relative)?;
            let path = self.root.join(relative);
            let io = |error| WriteError::Io {
                path: path.display().to_string(),
                error,
            };
            let first_time = !self.created.contains(relative);
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir).map_err(io)?;
            }
            let file = if first_time {
                match OpenOptions::new().write(true).create_new(true).open(&path) {
                    Ok(f) => f,
                    Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                        // Compared, never written: a regular file only (not a directory, a
                        // FIFO or a device, which a read could block on or never end).
                        let meta = std::fs::symlink_metadata(&path).map_err(io)?;
                        if !meta.is_file() {
                            return Err(WriteError::Exists {
                                path: path.display().to_string(),
                            });
                        }
                        let existing = Compared::open(&path).map_err(io)?;
                        self.comparing.insert(relative.to_owned(), existing);
                        return self.compare(relative, bytes);
                    }
                    Err(e) => return Err(io(e)),
                }
            } else {
                OpenOptions::new().append(true).open(&path).map_err(io)?
            };
            if first_time {
                self.written.push(relative.to_owned());
                self.created.insert(relative.to_owned());
            }
            if self.open.len() >= MAX_OPEN_FILES
                && let Some((old, mut w)) = self.open.pop_first()
            {
                w.flush()
                    .map_err(|error| WriteError::Io { path: old, error })?;
            }
            self.open.insert(
                relative.to_owned(),
                BufWriter::with_capacity(256 * 1024, file),
            );
        }
        let w = self.open.get_mut(relative).expect("opened above");
        w.write_all(bytes).map_err(|error| WriteError::Io {
            path: relative.to_owned(),
            error,
        })
    }
}

impl Drop for DirOutput {
    fn drop(&mut self) {
        let _ = self.finish();
    }
}

/// Files in memory, for tests and for comparing a write with its source.
#[derive(Debug, Default)]
pub struct MemoryOutput {
    /// Relative path to contents.
    pub files: BTreeMap<String, Vec<u8>>,
    /// Files of finished source units: closed to further appends.
    sealed: BTreeSet<String>,
}

impl MemoryOutput {
    /// Writes every file below `root` (for reading a write back with a read face).
    pub fn write_to(&self, root: &std::path::Path) -> std::io::Result<()> {
        for (rel, bytes) in &self.files {
            let path = root.join(rel);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent)?;
            }
            std::fs::write(&path, bytes)?;
        }
        Ok(())
    }
}

impl Output for MemoryOutput {
    fn end_unit(&mut self) -> Result<(), WriteError> {
        self.sealed.extend(self.files.keys().cloned());
        Ok(())
    }

    fn append(&mut self, relative: &str, bytes: &[u8]) -> Result<(), WriteError> {
        check_relative_path(relative)?;
        if self.sealed.contains(relative) {
            return Err(WriteError::Exists {
                path: relative.to_owned(),
            });
        }
        self.files
            .entry(relative.to_owned())
            .or_default()
            .extend_from_slice(bytes);
        Ok(())
    }
}

/// One file's contents to a stream (stdout, or `-o FILE`); a second file is an error.
pub struct SingleFileOutput<W: Write> {
    sink: W,
    name: Option<String>,
}

impl<W: Write> SingleFileOutput<W> {
    /// Output to `sink`.
    pub fn new(sink: W) -> Self {
        Self { sink, name: None }
    }

    /// The relative path the writer gave the file, once one was written.
    pub fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }

    /// The stream.
    pub fn sink_mut(&mut self) -> &mut W {
        &mut self.sink
    }

    /// Flushes the stream.
    pub fn finish(&mut self) -> Result<(), WriteError> {
        self.sink.flush().map_err(|error| WriteError::Io {
            path: "-".into(),
            error,
        })
    }
}

impl<W: Write> Output for SingleFileOutput<W> {
    fn append(&mut self, relative: &str, bytes: &[u8]) -> Result<(), WriteError> {
        match &self.name {
            // Checked when it was first written (a writer appends to its file thousands of times).
            Some(first) if first == relative => {}
            Some(first) => {
                check_relative_path(relative)?;
                return Err(WriteError::SingleFileOnly {
                    first: first.clone(),
                    second: relative.to_owned(),
                });
            }
            None => {
                check_relative_path(relative)?;
                self.name = Some(relative.to_owned());
            }
        }
        self.sink.write_all(bytes).map_err(|error| WriteError::Io {
            path: relative.to_owned(),
            error,
        })
    }
}

/// A file there already, read as what would be written is compared with it, never written:
/// [`DirOutput`]'s comparisons, and a sink of its own for a single output file (`convert -o
/// FILE`) that exists.
///
/// A file that ends, at the end of a line, before what would be written does, every byte of
/// it the same (the source grew since it was written): the rest is kept, in memory, and
/// appended when the write ends ([`Compared::extend`]), so that a refusal found later (in
/// another file of the same unit) leaves the file as it was.
pub struct Compared {
    reader: BufReader<File>,
    path: PathBuf,
    scratch: Vec<u8>,
    /// How many bytes of the file were compared equal.
    matched: u64,
    /// The last of them.
    last: Option<u8>,
    /// What follows the file's end, once it ended at a line's end with every byte equal.
    rest: Option<Vec<u8>>,
}

/// Why a write could not be taken for what a [`Compared`] file holds.
enum Mismatch {
    /// The file holds other bytes, or more, or fewer where it does not end a line.
    Differs,
    /// Reading it failed.
    Io(std::io::Error),
}

/// What a [`Compared`] file was found to be, the write ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delivered {
    /// Exactly what was written: left as it was.
    Unchanged,
    /// The start of what was written: the rest was appended (this many bytes).
    Extended(u64),
}

impl Compared {
    /// Compares with the file at `path`, which exists.
    pub fn open(path: &std::path::Path) -> std::io::Result<Self> {
        Ok(Self {
            reader: BufReader::with_capacity(256 * 1024, File::open(path)?),
            path: path.to_owned(),
            scratch: Vec::new(),
            matched: 0,
            last: None,
            rest: None,
        })
    }

    /// Whether the file's next bytes are `bytes` (read past them either way), or the file
    /// ended at a line's end before them (they are kept, to be appended).
    fn next_are(&mut self, bytes: &[u8]) -> Result<(), Mismatch> {
        if let Some(rest) = &mut self.rest {
            rest.extend_from_slice(bytes);
            return Ok(());
        }
        for (i, chunk) in bytes.chunks(64 * 1024).enumerate() {
            self.scratch.resize(chunk.len(), 0);
            let got = read_up_to(&mut self.reader, &mut self.scratch).map_err(Mismatch::Io)?;
            if self.scratch[..got] != chunk[..got] {
                return Err(Mismatch::Differs);
            }
            self.matched += got as u64;
            if got > 0 {
                self.last = Some(chunk[got - 1]);
            }
            if got < chunk.len() {
                // The file ended: at a line's end, what follows is kept to be appended.
                if self.last != Some(b'\n') {
                    return Err(Mismatch::Differs);
                }
                let at = i * 64 * 1024 + got;
                self.rest = Some(bytes[at..].to_vec());
                return Ok(());
            }
        }
        Ok(())
    }

    /// Whether the file ends where what was compared did (or before it, to be extended).
    fn ends_here(&mut self) -> Result<(), Mismatch> {
        if self.rest.is_some() {
            return Ok(());
        }
        match self.reader.fill_buf() {
            Ok([]) => Ok(()),
            Ok(_) => Err(Mismatch::Differs),
            Err(e) => Err(Mismatch::Io(e)),
        }
    }

    /// The write ended and the file held its start: appends the rest, unless the file is no
    /// longer the one compared (another process wrote to it since), which refuses it.
    fn extend(&mut self) -> Result<Delivered, Mismatch> {
        let Some(rest) = self.rest.take() else {
            return Ok(Delivered::Unchanged);
        };
        let mut file = OpenOptions::new()
            .append(true)
            .open(&self.path)
            .map_err(Mismatch::Io)?;
        if file.metadata().map_err(Mismatch::Io)?.len() != self.matched {
            return Err(Mismatch::Differs);
        }
        file.write_all(&rest).map_err(Mismatch::Io)?;
        file.flush().map_err(Mismatch::Io)?;
        Ok(Delivered::Extended(rest.len() as u64))
    }

    fn io_error(&self, m: Mismatch) -> std::io::Error {
        match m {
            Mismatch::Differs => std::io::Error::other(format!(
                "{} exists already with other content; pond does not overwrite files",
                self.path.display()
            )),
            Mismatch::Io(e) => e,
        }
    }

    fn write_error(&self, m: Mismatch) -> WriteError {
        let path = self.path.display().to_string();
        match m {
            Mismatch::Differs => WriteError::Differs { path },
            Mismatch::Io(error) => WriteError::Io { path, error },
        }
    }

    /// Everything was written: the file must end here, or have ended at a line's end before
    /// it (then the rest is appended).
    pub fn end(&mut self) -> std::io::Result<Delivered> {
        self.ends_here()
            .and_then(|()| self.extend())
            .map_err(|m| self.io_error(m))
    }
}

/// Reads into `buf` until it is full or the reader ends; how many bytes were read.
fn read_up_to(reader: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match reader.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

impl Write for Compared {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.next_are(buf).map_err(|m| self.io_error(m))?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file that exists already is compared, never written: the same bytes leave it as it
    /// was and count as delivered; other bytes (a difference, a shorter or a longer file) are
    /// refused, and the file keeps its content.
    #[test]
    fn an_existing_file_is_compared_never_written() {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, content: &[u8]| std::fs::write(dir.path().join(name), content);
        write("same.jsonl", b"line one\nline two\n").unwrap();
        write("same-too.jsonl", b"line one\nline two\n").unwrap();
        write("differs.jsonl", b"line one\nline 2\n").unwrap();
        write("longer.jsonl", b"line one\nline two\nline three\n").unwrap();
        write("shorter.jsonl", b"line one\n").unwrap();
        std::fs::create_dir(dir.path().join("dir.jsonl")).unwrap();
        let mut out = DirOutput::new(dir.path());
        let body: [&[u8]; 2] = [b"line one\n", b"line two\n"];
        let mut results = BTreeMap::new();
        // A unit of its own first: a unit with a file refused has none unchanged.
        let mut ends = Vec::new();
        for unit in [
            &["same.jsonl"][..],
            &[
                "differs.jsonl",
                "longer.jsonl",
                "shorter.jsonl",
                "dir.jsonl",
                "new.jsonl",
                "same-too.jsonl",
            ],
        ] {
            for name in unit {
                let r = body.iter().try_for_each(|b| out.append(name, b));
                results.insert(*name, r);
            }
            ends.push(out.end_unit());
        }
        out.finish().unwrap();
        assert!(ends[0].is_ok(), "{:?}", ends[0]);
        let ended = ends.pop().unwrap();
        let kind = |r: &Result<(), WriteError>| match r {
            Ok(()) => "ok",
            Err(WriteError::Differs { .. }) => "differs",
            Err(WriteError::Exists { .. }) => "exists",
            Err(_) => "other",
        };
        let got: Vec<(&str, &str)> = results.iter().map(|(n, r)| (*n, kind(r))).collect();
        assert_eq!(
            got,
            [
                ("differs.jsonl", "differs"),
                ("dir.jsonl", "exists"),
                ("longer.jsonl", "ok"),
                ("new.jsonl", "ok"),
                ("same-too.jsonl", "ok"),
                ("same.jsonl", "ok"),
                // Its start, to be extended when the unit ends, which it does refused.
                ("shorter.jsonl", "ok"),
            ]
        );
        // The longer file differs only at its end: the unit's error.
        assert!(
            matches!(&ended, Err(WriteError::Differs { path }) if path.ends_with("longer.jsonl")),
            "{ended:?}"
        );
        // same-too.jsonl holds what was written, but its unit's other files do not.
        assert_eq!(out.unchanged(), ["same.jsonl"]);
        assert_eq!(out.written(), ["new.jsonl"]);
        assert_eq!(out.delivered(), ["new.jsonl", "same.jsonl"]);
        let read = |name: &str| std::fs::read(dir.path().join(name)).unwrap();
        assert_eq!(read("differs.jsonl"), b"line one\nline 2\n");
        assert_eq!(read("longer.jsonl"), b"line one\nline two\nline three\n");
        assert_eq!(read("shorter.jsonl"), b"line one\n");
        assert_eq!(read("new.jsonl"), b"line one\nline two\n");
        // A later unit may not append to a file an earlier one delivered.
        assert!(matches!(
            out.append("same.jsonl", b"x"),
            Err(WriteError::Exists { .. })
        ));
        assert!(matches!(
            out.append("differs.jsonl", b"line one\n"),
            Err(WriteError::Differs { .. })
        ));
    }

    /// A file that holds the start of what would be written, up to a line's end, is extended
    /// with the rest when its unit ends, and only then; one that ends inside a line, or that
    /// another process changed meanwhile, is refused and keeps its content.
    #[test]
    fn an_existing_file_holding_the_start_is_extended_when_its_unit_ends() {
        let dir = tempfile::tempdir().unwrap();
        let path = |name: &str| dir.path().join(name);
        let write = |name: &str, content: &[u8]| std::fs::write(path(name), content).unwrap();
        let read = |name: &str| std::fs::read(path(name)).unwrap();
        write("grew.jsonl", b"line one\n");
        write("cut.jsonl", b"line one\nline t");
        write("raced.jsonl", b"line one\n");
        write("empty.jsonl", b"");
        let body: [&[u8]; 3] = [b"line one\n", b"line two\n", b"line three\n"];
        let mut out = DirOutput::new(dir.path());
        let unit = |out: &mut DirOutput, name: &str| {
            let r = body.iter().try_for_each(|b| out.append(name, b));
            (r, out.end_unit())
        };
        // Nothing is appended before the unit ends.
        body.iter()
            .try_for_each(|b| out.append("grew.jsonl", b))
            .unwrap();
        assert_eq!(read("grew.jsonl"), b"line one\n");
        out.end_unit().unwrap();
        assert_eq!(read("grew.jsonl"), b"line one\nline two\nline three\n");
        let (r, end) = unit(&mut out, "cut.jsonl");
        assert!(matches!(r, Err(WriteError::Differs { .. })), "{r:?}");
        assert!(end.is_ok(), "said once: {end:?}");
        assert_eq!(read("cut.jsonl"), b"line one\nline t");
        let (r, end) = unit(&mut out, "empty.jsonl");
        assert!(matches!(r, Err(WriteError::Differs { .. })), "{r:?}");
        assert!(end.is_ok(), "{end:?}");
        // Another process appends between the comparison and the unit's end.
        body.iter()
            .try_for_each(|b| out.append("raced.jsonl", b))
            .unwrap();
        write("raced.jsonl", b"line one\nline 2\n");
        let end = out.end_unit();
        assert!(
            matches!(&end, Err(WriteError::Differs { path }) if path.ends_with("raced.jsonl")),
            "{end:?}"
        );
        assert_eq!(read("raced.jsonl"), b"line one\nline 2\n");
        out.finish().unwrap();
        assert_eq!(out.extended(), ["grew.jsonl"]);
        assert!(out.unchanged().is_empty());
        assert_eq!(out.delivered(), ["grew.jsonl"]);
        // Extended, it is sealed as a written file is.
        assert!(matches!(
            out.append("grew.jsonl", b"x"),
            Err(WriteError::Exists { .. })
        ));
    }

    #[test]
    fn a_single_file_output_takes_one_safe_name() {
        let mut out = SingleFileOutput::new(Vec::new());
        assert!(matches!(
            out.append("../x.jsonl", b"a"),
            Err(WriteError::UnsafePath { .. })
        ));
        assert_eq!(out.name(), None);
        out.append("s/x.jsonl", b"a").unwrap();
        out.append("s/x.jsonl", b"b").unwrap();
        assert!(matches!(
            out.append("s/y.jsonl", b"c"),
            Err(WriteError::SingleFileOnly { .. })
        ));
        assert!(matches!(
            out.append("/etc/y", b"c"),
            Err(WriteError::UnsafePath { .. })
        ));
        assert_eq!(out.name(), Some("s/x.jsonl"));
        assert_eq!(out.sink, b"ab");
    }
}

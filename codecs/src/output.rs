//! [`Output`] implementations: a directory, memory, and a single stream.

use crate::face::{Output, WriteError, check_relative_path};
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::PathBuf;

/// Files under a directory. Every path is checked to stay inside it, and a file that exists
/// before this run is never opened for writing. Appends stream: each open file has one bounded
/// buffer (at most [`MAX_OPEN_FILES`] of them), so no file is ever held whole in memory.
pub struct DirOutput {
    root: PathBuf,
    open: BTreeMap<String, BufWriter<File>>,
    written: Vec<String>,
    /// The same paths, for the lookup on every (re)open.
    created: HashSet<String>,
    /// Files of finished source units: closed to further appends.
    sealed: BTreeSet<String>,
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
        }
    }

    /// The relative paths written, in the order first written.
    pub fn written(&self) -> &[String] {
        &self.written
    }

    /// Flushes and closes every file.
    pub fn finish(&mut self) -> Result<(), WriteError> {
        for (path, mut w) in std::mem::take(&mut self.open) {
            w.flush().map_err(|error| WriteError::Io { path, error })?;
        }
        Ok(())
    }
}

impl Output for DirOutput {
    fn end_unit(&mut self) {
        self.sealed.extend(self.written.iter().cloned());
    }

    fn append(&mut self, relative: &str, bytes: &[u8]) -> Result<(), WriteError> {
        if self.sealed.contains(relative) {
            return Err(WriteError::Exists {
                path: self.root.join(relative).display().to_string(),
            });
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
                OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .open(&path)
                    .map_err(|e| {
                        if e.kind() == std::io::ErrorKind::AlreadyExists {
                            WriteError::Exists {
                                path: path.display().to_string(),
                            }
                        } else {
                            io(e)
                        }
                    })?
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
    fn end_unit(&mut self) {
        self.sealed.extend(self.files.keys().cloned());
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

#[cfg(test)]
mod tests {
    use super::*;

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

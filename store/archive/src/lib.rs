//! The container of a `.pond` archive (spec 7.8): an uncompressed tar whose first entry is
//! `manifest.json`, then the files of the store's datasets, each listed in the manifest with its
//! length and SHA-256 (docs/decisions.md, "Archives").
//!
//! This crate writes that container from files on disk and reads an untrusted one back into a
//! private directory, refusing any entry that is not a regular file at a plain relative path
//! listed in the manifest with the listed length and digest, and checking that every listed
//! file arrived and the archive did not end early. What the files hold (Lance datasets) is the
//! store's to open and check (`pond_store::archive`); nothing here knows of Lance, so the reader
//! builds and is fuzzed on its own (`fuzz/`, target `archive`).

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, HashSet};
use std::fmt;
use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// The `format` a manifest names.
pub const FORMAT: &str = "pond-archive";
/// The archive layout this pond writes and reads.
pub const FORMAT_VERSION: u32 = 1;
/// The first entry of every archive.
pub const MANIFEST: &str = "manifest.json";
/// The largest manifest an archive may hold (a corpus of a million files lists in well under
/// this).
pub const MAX_MANIFEST_BYTES: u64 = 64 << 20;
/// The most files an archive may list.
pub const MAX_FILES: usize = 200_000;

/// The manifest: `manifest.json`, the archive's first entry.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// Always [`FORMAT`].
    pub format: String,
    /// [`FORMAT_VERSION`] of the pond that wrote it.
    pub format_version: u32,
    /// The version of the pond that wrote it.
    pub pond_version: String,
    /// The session datasets' schema version (lance-dataset-schema-version).
    pub schema_version: u32,
    /// When it was written (RFC 3339, UTC).
    pub created_at: String,
    /// `sessions`, `messages`, `parts`.
    pub tables: Vec<TableEntry>,
}

/// One table of an archive.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct TableEntry {
    pub name: String,
    pub rows: u64,
    /// The dataset's files, each under `<name>.lance/`.
    pub files: Vec<FileEntry>,
}

/// One file of an archive.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct FileEntry {
    /// Relative, `/`-separated.
    pub path: String,
    pub bytes: u64,
    /// Lower-case hex.
    pub sha256: String,
}

/// What the reading pond expects a manifest to name.
#[derive(Debug, Clone, Copy)]
pub struct Expected<'a> {
    /// The schema version of the datasets this pond reads.
    pub schema_version: u32,
    /// The tables, in the order the manifest lists them.
    pub tables: &'a [&'a str],
}

/// Why an archive's container was not written or not read. Raised before anything is written to
/// a store.
#[derive(Debug)]
pub enum ContainerError {
    /// A local file could not be read or written.
    Io { path: PathBuf, detail: String },
    /// Not a tar archive, or a damaged tar header.
    Malformed { detail: String },
    /// The manifest is missing, unreadable, of another format or version, or inconsistent.
    Manifest { detail: String },
    /// An entry's path is absolute, climbs out (`..`), or is otherwise not a plain relative path.
    UnsafePath { entry: String, reason: &'static str },
    /// An entry is not a regular file (a symlink, a hard link, a device, a directory, ...).
    UnsupportedEntry { entry: String, kind: String },
    /// An entry the manifest does not list.
    Unlisted { entry: String },
    /// An entry that occurs twice.
    Duplicate { entry: String },
    /// An entry's length differs from the manifest's.
    SizeMismatch {
        entry: String,
        manifest: u64,
        found: u64,
    },
    /// An entry's SHA-256 differs from the manifest's.
    DigestMismatch {
        entry: String,
        manifest: String,
        found: String,
    },
    /// The archive ended before its end: inside `entry`, or between entries.
    Truncated { entry: Option<String> },
    /// A file the manifest lists is not in the (complete) archive.
    Missing { entry: String },
}

impl fmt::Display for ContainerError {
    /// The message, with every control character quoted from the input escaped.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        pond_canonical::untrusted::write_escaped(f, |f| self.describe(f))
    }
}

impl ContainerError {
    /// The message as it is made, before its control characters are escaped.
    fn describe(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Io { path, detail } => write!(f, "{}: {detail}", path.display()),
            Self::Malformed { detail } => {
                write!(f, "not a readable .pond archive: {detail}")
            }
            Self::Manifest { detail } => write!(f, "archive manifest: {detail}"),
            Self::UnsafePath { entry, reason } => {
                write!(f, "archive entry {entry:?}: unsafe path ({reason})")
            }
            Self::UnsupportedEntry { entry, kind } => write!(
                f,
                "archive entry {entry:?} is a {kind}; an archive holds regular files only"
            ),
            Self::Unlisted { entry } => {
                write!(f, "archive entry {entry:?} is not listed in the manifest")
            }
            Self::Duplicate { entry } => write!(f, "archive entry {entry:?} occurs twice"),
            Self::SizeMismatch {
                entry,
                manifest,
                found,
            } => write!(
                f,
                "archive entry {entry:?} has {found} bytes; the manifest says {manifest}"
            ),
            Self::DigestMismatch {
                entry,
                manifest,
                found,
            } => write!(
                f,
                "archive entry {entry:?} has SHA-256 {found}; the manifest says {manifest}"
            ),
            Self::Truncated { entry: Some(e) } => {
                write!(f, "the archive is truncated: entry {e:?} ends early")
            }
            Self::Truncated { entry: None } => {
                write!(f, "the archive is truncated: it ends before its end marker")
            }
            Self::Missing { entry } => {
                write!(
                    f,
                    "the manifest lists {entry:?}, which the archive does not hold"
                )
            }
        }
    }
}

impl std::error::Error for ContainerError {}

/// Maps an I/O error on `path` to [`ContainerError::Io`].
pub fn io_error(path: &Path) -> impl Fn(std::io::Error) -> ContainerError + '_ {
    move |e| ContainerError::Io {
        path: path.to_owned(),
        detail: e.to_string(),
    }
}

/// Lower-case hex.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A file's length and SHA-256 (lower-case hex).
pub fn digest_file(path: &Path) -> Result<(u64, String), ContainerError> {
    let mut file = BufReader::new(File::open(path).map_err(io_error(path))?);
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    let mut bytes = 0u64;
    loop {
        let n = file.read(&mut buf).map_err(io_error(path))?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
        bytes += n as u64;
    }
    Ok((bytes, hex(&hasher.finalize())))
}

/// Writes the container into `file` (at `file_path`, for errors): the manifest, then every file
/// it lists, read from under `root`; `progress(done, total)` hears the bytes written.
pub fn write_tar(
    manifest: &Manifest,
    root: &Path,
    file: &File,
    file_path: &Path,
    mtime: u64,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<(), ContainerError> {
    let total: u64 = manifest
        .tables
        .iter()
        .flat_map(|t| &t.files)
        .map(|f| f.bytes)
        .sum();
    let io = io_error(file_path);
    let mut tar = tar::Builder::new(BufWriter::new(file));
    let mut append = |path: &str, bytes: u64, data: &mut dyn Read| {
        let mut header = tar::Header::new_gnu();
        header.set_entry_type(tar::EntryType::Regular);
        header.set_size(bytes);
        header.set_mode(0o644);
        header.set_mtime(mtime);
        tar.append_data(&mut header, path, data).map_err(&io)
    };
    let text = serde_json::to_vec_pretty(manifest).expect("a manifest serializes");
    append(MANIFEST, text.len() as u64, &mut text.as_slice())?;
    let mut done = 0;
    for f in manifest.tables.iter().flat_map(|t| &t.files) {
        let path = root.join(&f.path);
        let source = File::open(&path).map_err(io_error(&path))?;
        append(&f.path, f.bytes, &mut BufReader::new(source).take(f.bytes))?;
        done += f.bytes;
        progress(done, total);
    }
    let mut writer = tar.into_inner().map_err(&io)?;
    writer.flush().map_err(&io)
}

/// Why `path` is not a plain relative path (`a/b/c`, each part a name), if it is not.
pub fn unsafe_path(path: &str) -> Option<&'static str> {
    if path.is_empty() {
        return Some("empty");
    }
    if path.starts_with('/') {
        return Some("absolute");
    }
    if path.contains('\\') || path.contains('\0') {
        return Some("a backslash or NUL byte");
    }
    for part in path.split('/') {
        match part {
            "" => return Some("an empty component"),
            "." => return Some("a `.` component"),
            ".." => return Some("climbs out with `..`"),
            _ => {}
        }
    }
    None
}

/// The manifest's promises that can be checked before any entry is read.
pub fn check_manifest(manifest: &Manifest, expected: &Expected<'_>) -> Result<(), ContainerError> {
    let bad = |detail: String| Err(ContainerError::Manifest { detail });
    if manifest.format != FORMAT {
        return bad(format!("format {:?} is not {FORMAT:?}", manifest.format));
    }
    if manifest.format_version != FORMAT_VERSION {
        return bad(format!(
            "format version {} (this pond reads {FORMAT_VERSION})",
            manifest.format_version
        ));
    }
    if manifest.schema_version != expected.schema_version {
        return bad(format!(
            "schema version {} (this pond reads {}; import with the pond that wrote it)",
            manifest.schema_version, expected.schema_version
        ));
    }
    let names: Vec<&str> = manifest.tables.iter().map(|t| t.name.as_str()).collect();
    if names != expected.tables {
        return bad(format!("tables {names:?}, expected {:?}", expected.tables));
    }
    let mut seen = HashSet::new();
    for t in &manifest.tables {
        let prefix = format!("{}.lance/", t.name);
        for f in &t.files {
            if let Some(reason) = unsafe_path(&f.path) {
                return bad(format!("lists {:?}: unsafe path ({reason})", f.path));
            }
            if !f.path.starts_with(&prefix) {
                return bad(format!("lists {:?} under table {}", f.path, t.name));
            }
            if !seen.insert(f.path.as_str()) {
                return bad(format!("lists {:?} twice", f.path));
            }
            if f.sha256.len() != 64
                || !f
                    .sha256
                    .bytes()
                    .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
            {
                return bad(format!("{:?} has no SHA-256 ({:?})", f.path, f.sha256));
            }
        }
    }
    if seen.len() > MAX_FILES {
        return bad(format!("lists {} files (at most {MAX_FILES})", seen.len()));
    }
    Ok(())
}

/// A reader that remembers whether it hit the end of its input.
struct EofTracking<R> {
    inner: R,
    eof: Arc<AtomicBool>,
}

impl<R: Read> Read for EofTracking<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        if n == 0 && !buf.is_empty() {
            self.eof.store(true, Ordering::Relaxed);
        }
        Ok(n)
    }
}

fn kind_name(kind: tar::EntryType) -> String {
    match kind {
        tar::EntryType::Symlink => "symlink".into(),
        tar::EntryType::Link => "hard link".into(),
        tar::EntryType::Char => "character device".into(),
        tar::EntryType::Block => "block device".into(),
        tar::EntryType::Directory => "directory".into(),
        tar::EntryType::Fifo => "FIFO".into(),
        other => format!("tar entry of type {:?}", other.as_byte() as char),
    }
}

/// Unpacks `archive` into the empty directory `dest`, checking every entry against the manifest
/// (module docs); `progress(done, total)` hears the bytes unpacked. Returns the manifest.
pub fn unpack(
    archive: &Path,
    dest: &Path,
    expected: &Expected<'_>,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<Manifest, ContainerError> {
    let file = File::open(archive).map_err(io_error(archive))?;
    let archive_bytes = file.metadata().map_err(io_error(archive))?.len();
    let eof = Arc::new(AtomicBool::new(false));
    let ended = || eof.load(Ordering::Relaxed);
    let mut tar = tar::Archive::new(EofTracking {
        inner: BufReader::new(file),
        eof: eof.clone(),
    });
    let damaged = |e: std::io::Error, entry: Option<&str>| {
        if ended() {
            ContainerError::Truncated {
                entry: entry.map(str::to_owned),
            }
        } else {
            ContainerError::Malformed {
                detail: e.to_string(),
            }
        }
    };
    let mut entries = tar.entries().map_err(|e| damaged(e, None))?;

    // The manifest comes first.
    let mut first = match entries.next() {
        Some(Ok(e)) => e,
        Some(Err(e)) => return Err(damaged(e, None)),
        None if ended() && archive_bytes > 0 => {
            return Err(ContainerError::Truncated { entry: None });
        }
        None => {
            return Err(ContainerError::Manifest {
                detail: "the archive is empty".into(),
            });
        }
    };
    let first_path = String::from_utf8_lossy(&first.path_bytes()).into_owned();
    if first_path != MANIFEST || first.header().entry_type() != tar::EntryType::Regular {
        return Err(ContainerError::Manifest {
            detail: format!("the first entry is {first_path:?}, not the file {MANIFEST}"),
        });
    }
    if first.size() > MAX_MANIFEST_BYTES {
        return Err(ContainerError::Manifest {
            detail: format!("{} bytes (at most {MAX_MANIFEST_BYTES})", first.size()),
        });
    }
    let mut text = Vec::new();
    first
        .read_to_end(&mut text)
        .map_err(|e| damaged(e, Some(MANIFEST)))?;
    if (text.len() as u64) < first.size() {
        return Err(ContainerError::Truncated {
            entry: Some(MANIFEST.into()),
        });
    }
    drop(first);
    let manifest: Manifest =
        serde_json::from_slice(&text).map_err(|e| ContainerError::Manifest {
            detail: e.to_string(),
        })?;
    check_manifest(&manifest, expected)?;
    let mut listed: BTreeMap<&str, &FileEntry> = manifest
        .tables
        .iter()
        .flat_map(|t| &t.files)
        .map(|f| (f.path.as_str(), f))
        .collect();
    let total: u64 = listed
        .values()
        .map(|f| f.bytes)
        .fold(0, u64::saturating_add);
    let mut seen = HashSet::new();
    let mut done = 0u64;
    let mut buf = vec![0u8; 1 << 16];

    for entry in entries {
        let mut entry = entry.map_err(|e| damaged(e, None))?;
        let path = String::from_utf8(entry.path_bytes().into_owned()).map_err(|e| {
            ContainerError::UnsafePath {
                entry: String::from_utf8_lossy(e.as_bytes()).into_owned(),
                reason: "not UTF-8",
            }
        })?;
        if let Some(reason) = unsafe_path(&path) {
            return Err(ContainerError::UnsafePath {
                entry: path,
                reason,
            });
        }
        let kind = entry.header().entry_type();
        if kind != tar::EntryType::Regular {
            return Err(ContainerError::UnsupportedEntry {
                entry: path,
                kind: kind_name(kind),
            });
        }
        let Some(want) = listed.remove(path.as_str()) else {
            return Err(if seen.contains(&path) || path == MANIFEST {
                ContainerError::Duplicate { entry: path }
            } else {
                ContainerError::Unlisted { entry: path }
            });
        };
        if entry.size() != want.bytes {
            return Err(ContainerError::SizeMismatch {
                entry: path,
                manifest: want.bytes,
                found: entry.size(),
            });
        }
        // Every component of `path` is a plain name and `dest` is a fresh private directory,
        // so this stays inside it.
        let target = dest.join(&path);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent).map_err(io_error(parent))?;
        }
        let mut out = BufWriter::new(
            std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&target)
                .map_err(io_error(&target))?,
        );
        let mut hasher = Sha256::new();
        let mut got = 0u64;
        loop {
            let n = entry.read(&mut buf).map_err(|e| damaged(e, Some(&path)))?;
            if n == 0 {
                break;
            }
            hasher.update(&buf[..n]);
            out.write_all(&buf[..n]).map_err(io_error(&target))?;
            got += n as u64;
            done += n as u64;
            progress(done, total);
        }
        out.flush().map_err(io_error(&target))?;
        if got < want.bytes {
            return Err(ContainerError::Truncated { entry: Some(path) });
        }
        let found = hex(&hasher.finalize());
        if found != want.sha256 {
            return Err(ContainerError::DigestMismatch {
                entry: path,
                manifest: want.sha256.clone(),
                found,
            });
        }
        seen.insert(path);
    }
    if ended() {
        return Err(ContainerError::Truncated { entry: None });
    }
    if let Some(path) = listed.keys().next() {
        return Err(ContainerError::Missing {
            entry: (*path).to_owned(),
        });
    }
    Ok(manifest)
}

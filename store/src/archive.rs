//! `.pond` archives (spec 7.8): `pond export` writes the corpus as one compact file, `pond import`
//! (and `pond sync --import-from`) feeds one back through the same merge-insert as adapter import.
//!
//! An archive is an uncompressed tar (see docs/decisions.md, "Archives"):
//! `manifest.json` first, then the files of three clean Lance datasets, `sessions.lance/...`,
//! `messages.lance/...`, `parts.lance/...`, each written fresh from a scan of the store (one
//! version, no index). The manifest names the format and its version, the pond and schema
//! versions, the time, and per table its row count and per file its path, length and SHA-256.
//!
//! An archive is untrusted input. Import unpacks it into a private temporary directory, refusing
//! any entry that is not a regular file at a plain relative path listed in the manifest with the
//! listed length and digest, checks every listed file arrived and the archive did not end early,
//! opens the datasets with Lance and checks they read nothing outside themselves, that every row
//! fits the table's schema and decodes, and that the row counts are the manifest's; only then
//! does it write to the store. A fault before that point writes nothing and is an
//! [`ArchiveError`] naming the entry and what is wrong.

use crate::sessions::rows;
use crate::sessions::schema::{self, SCHEMA_VERSION};
use crate::sessions::{SessionStore, Written};
use crate::substrate::{BatchStream, StoreError, Substrate, TableSpec};
use arrow_array::cast::AsArray;
use arrow_array::types::UInt8Type;
use arrow_array::{Array, RecordBatch};
use arrow_schema::DataType;
use futures::StreamExt;
use lance::datatypes::BlobHandling;
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
/// The largest manifest import reads (a corpus of a million files lists in well under this).
const MAX_MANIFEST_BYTES: u64 = 64 << 20;
/// The most files an archive may list.
const MAX_FILES: usize = 200_000;
/// Rows and bytes per merge on import: a commit's fixed cost is small against it, and memory
/// stays bounded.
const MERGE_ROWS: usize = 20_000;
const MERGE_BYTES: usize = 128 << 20;

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

/// Why an archive was not written or not imported. Every variant before [`Store`](Self::Store)
/// is raised before anything is written to the store.
#[derive(Debug)]
pub enum ArchiveError {
    /// A local file could not be read or written.
    Io { path: PathBuf, detail: String },
    /// Export refuses to overwrite.
    Exists(PathBuf),
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
    /// A table's dataset does not open, does not fit the table's schema, or reads outside itself.
    Dataset { table: String, detail: String },
    /// A table holds another number of rows than the manifest says.
    RowCount {
        table: String,
        manifest: u64,
        found: u64,
    },
    /// The store failed (reading it for export, or the merge of an import).
    Store(StoreError),
}

impl fmt::Display for ArchiveError {
    /// The message, with every control character quoted from the input escaped.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        pond_canonical::untrusted::write_escaped(f, |f| self.describe(f))
    }
}

impl ArchiveError {
    /// The message as it is made, before its control characters are escaped.
    fn describe(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Io { path, detail } => write!(f, "{}: {detail}", path.display()),
            Self::Exists(p) => write!(
                f,
                "{} exists; pond never overwrites an archive",
                p.display()
            ),
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
            Self::Dataset { table, detail } => write!(f, "archive table {table}: {detail}"),
            Self::RowCount {
                table,
                manifest,
                found,
            } => write!(
                f,
                "archive table {table} holds {found} rows; the manifest says {manifest}"
            ),
            Self::Store(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for ArchiveError {}

impl From<StoreError> for ArchiveError {
    fn from(e: StoreError) -> Self {
        Self::Store(e)
    }
}

fn io_error(path: &Path) -> impl Fn(std::io::Error) -> ArchiveError + '_ {
    move |e| ArchiveError::Io {
        path: path.to_owned(),
        detail: e.to_string(),
    }
}

/// What a long archive operation is doing, for a progress display.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Phase {
    /// Export: scanning a table into the staging dataset (rows).
    Reading,
    /// Export: writing the archive file (bytes).
    Packing,
    /// Import: unpacking and verifying entries (bytes).
    Unpacking,
    /// Import: reading every row of a table to check it (rows).
    Checking,
    /// Import: merge-inserting a table into the store (rows).
    Merging,
}

impl fmt::Display for Phase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Reading => "reading",
            Self::Packing => "packing",
            Self::Unpacking => "unpacking",
            Self::Checking => "checking",
            Self::Merging => "merging",
        })
    }
}

/// One progress report: `done` of `total` rows (or bytes, for packing and unpacking).
#[derive(Debug, Clone, Copy)]
pub struct Step {
    pub phase: Phase,
    /// The table, or `"archive"`.
    pub table: &'static str,
    pub done: u64,
    pub total: u64,
}

/// Hears progress reports.
pub type Progress<'a> = &'a mut (dyn FnMut(Step) + Send);

/// Rows per table, as an export wrote them.
#[derive(Debug, Clone, Serialize)]
pub struct ExportSummary {
    pub archive: PathBuf,
    pub bytes: u64,
    pub created_at: String,
    /// (table, rows).
    pub tables: BTreeMap<String, u64>,
}

/// One table of an import: rows the archive held, rows inserted, rows already present.
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
pub struct TableImport {
    pub table: &'static str,
    pub rows: u64,
    pub inserted: u64,
    pub present: u64,
}

/// What an import did.
#[derive(Debug, Clone, Serialize)]
pub struct ImportSummary {
    pub archive: PathBuf,
    pub pond_version: String,
    pub created_at: String,
    pub tables: Vec<TableImport>,
    pub written: Written,
}

/// `pond-<UTC time>.pond`: the default archive name.
pub fn default_name() -> String {
    format!("pond-{}.pond", chrono::Utc::now().format("%Y%m%dT%H%M%SZ"))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Fits a scanned batch to `spec`'s schema: the same columns (no more, no fewer), each of the
/// declared type (Lance may hand text back as another string width), nulls only where allowed.
fn conform(spec: &TableSpec, batch: &RecordBatch) -> Result<RecordBatch, String> {
    if let Some(extra) = batch
        .schema()
        .fields()
        .iter()
        .find(|f| spec.schema.field_with_name(f.name()).is_err())
    {
        return Err(format!("unknown column {}", extra.name()));
    }
    let mut columns = Vec::with_capacity(spec.schema.fields().len());
    for field in spec.schema.fields() {
        let col = batch
            .column_by_name(field.name())
            .ok_or_else(|| format!("column {} is missing", field.name()))?;
        let same_family = |a: &DataType, b: &DataType| {
            use DataType::*;
            matches!(
                (a, b),
                (Utf8 | LargeUtf8 | Utf8View, Utf8 | LargeUtf8)
                    | (Binary | LargeBinary | BinaryView, Binary | LargeBinary)
            )
        };
        let col = if col.data_type() == field.data_type() {
            col.clone()
        } else if same_family(col.data_type(), field.data_type()) {
            lance::deps::datafusion::arrow::compute::cast(col, field.data_type())
                .map_err(|e| format!("column {}: {e}", field.name()))?
        } else {
            return Err(format!(
                "column {} is {}, not {}",
                field.name(),
                col.data_type(),
                field.data_type()
            ));
        };
        columns.push(col);
    }
    RecordBatch::try_new(spec.schema.clone(), columns).map_err(|e| e.to_string())
}

/// Reads every blob as bytes (an archive carries the payloads, not descriptions of them).
fn all_binary(s: &mut lance::dataset::scanner::Scanner) -> lance::Result<()> {
    s.blob_handling(BlobHandling::AllBinary);
    Ok(())
}

/// Drives `work` while reporting the rows `rows` hears, as `phase` of `table`.
async fn with_row_progress<T>(
    work: impl std::future::Future<Output = T>,
    rows: &mut tokio::sync::mpsc::UnboundedReceiver<u64>,
    phase: Phase,
    table: &'static str,
    total: u64,
    progress: Progress<'_>,
) -> T {
    let mut work = std::pin::pin!(work);
    let mut done = 0;
    loop {
        tokio::select! {
            out = &mut work => return out,
            Some(n) = rows.recv() => {
                done += n;
                progress(Step { phase, table, done, total });
            }
        }
    }
}

/// Writes the whole store as a new archive at `out`, which must not exist.
///
/// Tables are copied into a staging directory beside `out` (children first: `parts`, then
/// `messages`, then `sessions`, so that, while a sync commits parents before children, every
/// exported row's parent is exported too), then packed into a temporary file there, which is
/// renamed to `out` only when complete.
pub async fn export(
    store: &SessionStore,
    out: &Path,
    progress: Progress<'_>,
) -> Result<ExportSummary, ArchiveError> {
    if out.symlink_metadata().is_ok() {
        return Err(ArchiveError::Exists(out.to_owned()));
    }
    let dir = match out.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_owned(),
        _ => PathBuf::from("."),
    };
    let staging = tempfile::Builder::new()
        .prefix(".pond-export-")
        .tempdir_in(&dir)
        .map_err(io_error(&dir))?;
    let snapshot = Substrate::new(&staging.path().display().to_string(), Default::default());
    let mut tables = BTreeMap::new();
    for spec in schema::all().into_iter().rev() {
        let (total, _) = store.substrate().stats(spec).await?;
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let batches: BatchStream = store
            .substrate()
            .scan_stream(spec, all_binary)
            .await?
            .map(move |b| {
                let b = conform(spec, &b?).map_err(|detail| StoreError::Invalid {
                    table: spec.name,
                    detail,
                })?;
                let _ = tx.send(b.num_rows() as u64);
                Ok(b)
            })
            .boxed();
        let write = snapshot.write_snapshot(spec, batches);
        let rows =
            with_row_progress(write, &mut rx, Phase::Reading, spec.name, total, progress).await?;
        tables.insert(spec.name, rows);
    }
    let created_at = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    tokio::task::block_in_place(|| {
        let mut manifest = Manifest {
            format: FORMAT.to_owned(),
            format_version: FORMAT_VERSION,
            pond_version: env!("CARGO_PKG_VERSION").to_owned(),
            schema_version: SCHEMA_VERSION,
            created_at: created_at.clone(),
            tables: Vec::new(),
        };
        for spec in schema::all() {
            let root = staging.path().join(format!("{}.lance", spec.name));
            let mut files = Vec::new();
            for path in files_under(&root)? {
                let rel = path
                    .strip_prefix(staging.path())
                    .expect("a staged file is under the staging directory");
                let rel = rel
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy())
                    .collect::<Vec<_>>()
                    .join("/");
                let (bytes, sha256) = digest_file(&path)?;
                files.push(FileEntry {
                    path: rel,
                    bytes,
                    sha256,
                });
            }
            files.sort_by(|a, b| a.path.cmp(&b.path));
            manifest.tables.push(TableEntry {
                name: spec.name.to_owned(),
                rows: tables[spec.name],
                files,
            });
        }
        let bytes = pack(&manifest, staging.path(), &dir, out, progress)?;
        Ok(ExportSummary {
            archive: out.to_owned(),
            bytes,
            created_at,
            tables: tables.iter().map(|(k, v)| ((*k).to_owned(), *v)).collect(),
        })
    })
}

/// Every regular file under `root`, recursively (a staging dataset pond itself just wrote).
fn files_under(root: &Path) -> Result<Vec<PathBuf>, ArchiveError> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_owned()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).map_err(io_error(&dir))? {
            let entry = entry.map_err(io_error(&dir))?;
            let kind = entry.file_type().map_err(io_error(&entry.path()))?;
            if kind.is_dir() {
                stack.push(entry.path());
            } else if kind.is_file() {
                out.push(entry.path());
            }
        }
    }
    Ok(out)
}

fn digest_file(path: &Path) -> Result<(u64, String), ArchiveError> {
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

/// Writes the tar: the manifest, then every file it lists, into a temporary file in `dir` that
/// becomes `out` only when complete (and only if `out` still does not exist).
fn pack(
    manifest: &Manifest,
    staging: &Path,
    dir: &Path,
    out: &Path,
    progress: Progress<'_>,
) -> Result<u64, ArchiveError> {
    let tmp = tempfile::Builder::new()
        .prefix(".pond-export-")
        .suffix(".partial")
        .tempfile_in(dir)
        .map_err(io_error(dir))?;
    let total: u64 = manifest
        .tables
        .iter()
        .flat_map(|t| &t.files)
        .map(|f| f.bytes)
        .sum();
    let mtime = chrono::Utc::now().timestamp().max(0) as u64;
    let tmp_path = tmp.path().to_owned();
    let io = io_error(&tmp_path);
    let mut tar = tar::Builder::new(BufWriter::new(tmp.as_file()));
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
        let path = staging.join(&f.path);
        let file = File::open(&path).map_err(io_error(&path))?;
        append(&f.path, f.bytes, &mut BufReader::new(file).take(f.bytes))?;
        done += f.bytes;
        progress(Step {
            phase: Phase::Packing,
            table: "archive",
            done,
            total,
        });
    }
    let mut writer = tar.into_inner().map_err(&io)?;
    writer.flush().map_err(&io)?;
    drop(writer);
    tmp.as_file().sync_all().map_err(&io)?;
    let bytes = tmp.as_file().metadata().map_err(&io)?.len();
    tmp.persist_noclobber(out).map_err(|e| {
        if e.error.kind() == std::io::ErrorKind::AlreadyExists {
            ArchiveError::Exists(out.to_owned())
        } else {
            io_error(out)(e.error)
        }
    })?;
    Ok(bytes)
}

/// Why `path` is not a plain relative path (`a/b/c`, each part a name), if it is not.
fn unsafe_path(path: &str) -> Option<&'static str> {
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
fn check_manifest(manifest: &Manifest) -> Result<(), ArchiveError> {
    let bad = |detail: String| Err(ArchiveError::Manifest { detail });
    if manifest.format != FORMAT {
        return bad(format!("format {:?} is not {FORMAT:?}", manifest.format));
    }
    if manifest.format_version != FORMAT_VERSION {
        return bad(format!(
            "format version {} (this pond reads {FORMAT_VERSION})",
            manifest.format_version
        ));
    }
    if manifest.schema_version != SCHEMA_VERSION {
        return bad(format!(
            "schema version {} (this pond reads {SCHEMA_VERSION}; import with the pond that wrote it)",
            manifest.schema_version
        ));
    }
    let names: Vec<&str> = manifest.tables.iter().map(|t| t.name.as_str()).collect();
    let expected: Vec<&str> = schema::all().iter().map(|s| s.name).collect();
    if names != expected {
        return bad(format!("tables {names:?}, expected {expected:?}"));
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

/// Unpacks `archive` into the empty directory `dest`, checking every entry against the
/// manifest (module docs). Returns the manifest.
fn unpack(archive: &Path, dest: &Path, progress: Progress<'_>) -> Result<Manifest, ArchiveError> {
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
            ArchiveError::Truncated {
                entry: entry.map(str::to_owned),
            }
        } else {
            ArchiveError::Malformed {
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
            return Err(ArchiveError::Truncated { entry: None });
        }
        None => {
            return Err(ArchiveError::Manifest {
                detail: "the archive is empty".into(),
            });
        }
    };
    let first_path = String::from_utf8_lossy(&first.path_bytes()).into_owned();
    if first_path != MANIFEST || first.header().entry_type() != tar::EntryType::Regular {
        return Err(ArchiveError::Manifest {
            detail: format!("the first entry is {first_path:?}, not the file {MANIFEST}"),
        });
    }
    if first.size() > MAX_MANIFEST_BYTES {
        return Err(ArchiveError::Manifest {
            detail: format!("{} bytes (at most {MAX_MANIFEST_BYTES})", first.size()),
        });
    }
    let mut text = Vec::new();
    first
        .read_to_end(&mut text)
        .map_err(|e| damaged(e, Some(MANIFEST)))?;
    if (text.len() as u64) < first.size() {
        return Err(ArchiveError::Truncated {
            entry: Some(MANIFEST.into()),
        });
    }
    drop(first);
    let manifest: Manifest = serde_json::from_slice(&text).map_err(|e| ArchiveError::Manifest {
        detail: e.to_string(),
    })?;
    check_manifest(&manifest)?;
    let mut listed: BTreeMap<&str, &FileEntry> = manifest
        .tables
        .iter()
        .flat_map(|t| &t.files)
        .map(|f| (f.path.as_str(), f))
        .collect();
    let total: u64 = listed.values().map(|f| f.bytes).sum();
    let mut seen = HashSet::new();
    let mut done = 0;
    let mut buf = vec![0u8; 1 << 16];

    for entry in entries {
        let mut entry = entry.map_err(|e| damaged(e, None))?;
        let path = String::from_utf8(entry.path_bytes().into_owned()).map_err(|e| {
            ArchiveError::UnsafePath {
                entry: String::from_utf8_lossy(e.as_bytes()).into_owned(),
                reason: "not UTF-8",
            }
        })?;
        if let Some(reason) = unsafe_path(&path) {
            return Err(ArchiveError::UnsafePath {
                entry: path,
                reason,
            });
        }
        let kind = entry.header().entry_type();
        if kind != tar::EntryType::Regular {
            return Err(ArchiveError::UnsupportedEntry {
                entry: path,
                kind: kind_name(kind),
            });
        }
        let Some(want) = listed.remove(path.as_str()) else {
            return Err(if seen.contains(&path) || path == MANIFEST {
                ArchiveError::Duplicate { entry: path }
            } else {
                ArchiveError::Unlisted { entry: path }
            });
        };
        if entry.size() != want.bytes {
            return Err(ArchiveError::SizeMismatch {
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
            progress(Step {
                phase: Phase::Unpacking,
                table: "archive",
                done,
                total,
            });
        }
        out.flush().map_err(io_error(&target))?;
        if got < want.bytes {
            return Err(ArchiveError::Truncated { entry: Some(path) });
        }
        let found = hex(&hasher.finalize());
        if found != want.sha256 {
            return Err(ArchiveError::DigestMismatch {
                entry: path,
                manifest: want.sha256.clone(),
                found,
            });
        }
        seen.insert(path);
    }
    if ended() {
        return Err(ArchiveError::Truncated { entry: None });
    }
    if let Some(path) = listed.keys().next() {
        return Err(ArchiveError::Missing {
            entry: (*path).to_owned(),
        });
    }
    Ok(manifest)
}

/// Why a table's blob column may point outside the dataset (external or managed blobs), if so.
async fn foreign_blobs(
    snapshot: &Substrate,
    spec: &TableSpec,
) -> Result<Option<String>, StoreError> {
    let blobs: Vec<&str> = spec
        .schema
        .fields()
        .iter()
        .filter(|f| f.metadata().contains_key("lance-encoding:blob"))
        .map(|f| f.name().as_str())
        .collect();
    if blobs.is_empty() {
        return Ok(None);
    }
    // Descriptions, not bytes: an external blob is never fetched.
    let mut stream = snapshot
        .scan_stream(spec, |s| {
            s.project(&blobs)?;
            Ok(())
        })
        .await?;
    while let Some(batch) = stream.next().await {
        let batch = batch?;
        for (col, name) in batch.columns().iter().zip(&blobs) {
            let Some(desc) = col.as_struct_opt() else {
                continue;
            };
            let kinds = desc
                .column_by_name("kind")
                .and_then(|k| k.as_primitive_opt::<UInt8Type>().cloned());
            let uris = desc.column_by_name("blob_uri").cloned();
            for i in 0..batch.num_rows() {
                let kind = kinds.as_ref().map_or(0, |k| k.value(i));
                let uri = uris
                    .as_ref()
                    .and_then(|u| rows::string_at(u.as_ref(), i))
                    .unwrap_or_default();
                // Inline (0), packed (1) and dedicated (2) blobs live in the dataset's own files.
                if kind > 2 || !uri.is_empty() {
                    return Ok(Some(format!(
                        "column {name} holds a blob stored outside the dataset (kind {kind}, uri {uri:?})"
                    )));
                }
            }
        }
    }
    Ok(None)
}

/// Opens the unpacked datasets and reads every row: they must be self-contained, fit the
/// tables' schemas, decode, and number what the manifest says.
async fn check_datasets(
    snapshot: &Substrate,
    manifest: &Manifest,
    progress: Progress<'_>,
) -> Result<(), ArchiveError> {
    for (spec, entry) in schema::all().into_iter().zip(&manifest.tables) {
        let bad = |detail: String| ArchiveError::Dataset {
            table: spec.name.to_owned(),
            detail,
        };
        let store = |e: StoreError| bad(e.to_string());
        match snapshot.dataset(spec).await.map_err(store)? {
            Some(_) => {}
            None => return Err(bad("the archive holds no dataset for it".into())),
        }
        if let Some(why) = snapshot.foreign_references(spec).await.map_err(store)? {
            return Err(bad(why));
        }
        if let Some(why) = foreign_blobs(snapshot, spec).await.map_err(store)? {
            return Err(bad(why));
        }
        let mut stream = snapshot
            .scan_stream(spec, all_binary)
            .await
            .map_err(store)?;
        let mut found = 0u64;
        while let Some(batch) = stream.next().await {
            let batch = conform(spec, &batch.map_err(store)?).map_err(bad)?;
            let decoded = if spec.name == schema::SESSIONS.name {
                rows::sessions_from(&batch).map(|_| ())
            } else if spec.name == schema::MESSAGES.name {
                rows::message_rows(&batch).map(|_| ())
            } else {
                rows::part_rows(&batch).map(|_| ())
            };
            decoded.map_err(bad)?;
            found += batch.num_rows() as u64;
            progress(Step {
                phase: Phase::Checking,
                table: spec.name,
                done: found,
                total: entry.rows,
            });
        }
        if found != entry.rows {
            return Err(ArchiveError::RowCount {
                table: spec.name.to_owned(),
                manifest: entry.rows,
                found,
            });
        }
    }
    Ok(())
}

/// Imports the archive at `path` into `store`: unpacked and checked in full first (nothing is
/// written on any fault found there), then merged table by table, sessions first, through the
/// substrate's merge-insert, so rows already stored are left alone and a second import of the
/// same archive inserts nothing. Unpacks under the system temporary directory (`TMPDIR`).
pub async fn import(
    store: &SessionStore,
    path: &Path,
    progress: Progress<'_>,
) -> Result<ImportSummary, ArchiveError> {
    let tmp = std::env::temp_dir();
    let work = tempfile::Builder::new()
        .prefix("pond-import-")
        .tempdir_in(&tmp)
        .map_err(io_error(&tmp))?;
    let manifest = tokio::task::block_in_place(|| unpack(path, work.path(), progress))?;
    let snapshot = Substrate::new(&work.path().display().to_string(), Default::default());
    check_datasets(&snapshot, &manifest, progress).await?;

    let mut summary = ImportSummary {
        archive: path.to_owned(),
        pond_version: manifest.pond_version.clone(),
        created_at: manifest.created_at.clone(),
        tables: Vec::new(),
        written: Written::default(),
    };
    for (spec, entry) in schema::all().into_iter().zip(&manifest.tables) {
        let mut stream = snapshot.scan_stream(spec, all_binary).await?;
        let mut table = TableImport {
            table: spec.name,
            rows: entry.rows,
            inserted: 0,
            present: 0,
        };
        let mut pending: Vec<RecordBatch> = Vec::new();
        let (mut rows, mut bytes) = (0usize, 0usize);
        loop {
            let next = stream.next().await;
            let end = next.is_none();
            if let Some(batch) = next {
                let batch = conform(spec, &batch?).map_err(|detail| ArchiveError::Dataset {
                    table: spec.name.to_owned(),
                    detail,
                })?;
                rows += batch.num_rows();
                bytes += batch.get_array_memory_size();
                pending.push(batch);
            }
            if (end && !pending.is_empty()) || rows >= MERGE_ROWS || bytes >= MERGE_BYTES {
                let outcome = store
                    .substrate()
                    .merge_insert(spec, std::mem::take(&mut pending))
                    .await?;
                summary.written.add(spec.name, outcome);
                table.inserted += outcome.inserted;
                table.present += outcome.present;
                (rows, bytes) = (0, 0);
                progress(Step {
                    phase: Phase::Merging,
                    table: spec.name,
                    done: table.inserted + table.present,
                    total: entry.rows,
                });
            }
            if end {
                break;
            }
        }
        summary.tables.push(table);
    }
    Ok(summary)
}

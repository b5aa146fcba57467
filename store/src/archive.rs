//! `.pond` archives (spec 7.8): `pond export` writes the corpus as one compact file, `pond import`
//! (and `pond sync --import-from`) feeds one back through the same merge-insert as adapter import.
//!
//! An archive is an uncompressed tar (see docs/decisions.md, "Archives"):
//! `manifest.json` first, then the files of three clean Lance datasets, `sessions.lance/...`,
//! `messages.lance/...`, `parts.lance/...`, each written fresh from a scan of the store (one
//! version, no index). The manifest names the format and its version, the pond and schema
//! versions, the time, and per table its row count and per file its path, length and SHA-256.
//!
//! An archive is untrusted input. Import unpacks it into a private temporary directory
//! (`pond_archive::unpack`, the container: it refuses any entry that is not a regular file at a
//! plain relative path listed in the manifest with the listed length and digest, and checks every
//! listed file arrived and the archive did not end early), then opens the datasets with Lance and checks they read nothing outside themselves, that every row
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
pub use pond_archive::{
    ContainerError, FORMAT, FORMAT_VERSION, FileEntry, MANIFEST, Manifest, TableEntry,
};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

/// Rows and bytes per merge on import: a commit's fixed cost is small against it, and memory
/// stays bounded.
const MERGE_ROWS: usize = 20_000;
const MERGE_BYTES: usize = 128 << 20;

/// Why an archive was not written or not imported. Every variant before
/// [`Dataset`](Self::Dataset) is raised before anything is written to the store, and so is
/// `Dataset` itself and [`RowCount`](Self::RowCount) on import.
#[derive(Debug)]
pub enum ArchiveError {
    /// A local file could not be read or written.
    Io { path: PathBuf, detail: String },
    /// Export refuses to overwrite.
    Exists(PathBuf),
    /// The container is damaged or not what its manifest says (`pond_archive`).
    Container(ContainerError),
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
            // Already escaped; escaping is idempotent (it leaves no control character).
            Self::Container(e) => write!(f, "{e}"),
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

impl From<ContainerError> for ArchiveError {
    fn from(e: ContainerError) -> Self {
        Self::Container(e)
    }
}

fn io_error(path: &Path) -> impl Fn(std::io::Error) -> ArchiveError + '_ {
    move |e| ArchiveError::Io {
        path: path.to_owned(),
        detail: e.to_string(),
    }
}

/// What this pond expects an archive's manifest to name.
fn expected() -> pond_archive::Expected<'static> {
    static TABLES: std::sync::LazyLock<[&str; 3]> =
        std::sync::LazyLock::new(|| schema::all().map(|s| s.name));
    pond_archive::Expected {
        schema_version: SCHEMA_VERSION,
        tables: &*TABLES,
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
                let (bytes, sha256) = pond_archive::digest_file(&path)?;
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
    let mtime = chrono::Utc::now().timestamp().max(0) as u64;
    let tmp_path = tmp.path().to_owned();
    let io = io_error(&tmp_path);
    pond_archive::write_tar(
        manifest,
        staging,
        tmp.as_file(),
        &tmp_path,
        mtime,
        &mut |done, total| {
            progress(Step {
                phase: Phase::Packing,
                table: "archive",
                done,
                total,
            })
        },
    )?;
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
    let manifest = tokio::task::block_in_place(|| {
        pond_archive::unpack(path, work.path(), &expected(), &mut |done, total| {
            progress(Step {
                phase: Phase::Unpacking,
                table: "archive",
                done,
                total,
            })
        })
    })?;
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

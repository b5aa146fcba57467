//! The storage substrate (spec section 3): how pond uses Lance, knowing nothing of sessions.
//!
//! A consumer declares its tables ([`TableSpec`]) and stores and queries rows through the four
//! chokepoints of lance-chokepoints, each one code path in this module:
//! - catalog: [`Substrate::location`] is the only place a table's URI is made;
//! - read: [`Substrate::scan`] (through [`ReadView`], one version of a table) is the only place
//!   scans are built (filters pushed down), [`ReadView::full_text_search`] and
//!   [`ReadView::vector_search`] the only places searches are (filters as prefilters), and
//!   [`ReadView::take_rows`] the only read of rows by row id;
//! - write: [`Substrate::merge_insert`] is the only insert and [`Substrate::merge_update`] the
//!   only update (a conditional merge of derived columns); neither folds indexes;
//! - storage: every byte goes through Lance's object-store layer (URIs, never local paths).
//!
//! Around every Lance call: bounded retry with backoff and jitter (lance-retry-jitter); before
//! every read, a handle freshness check keyed to the backend (lance-handle-freshness). All tables
//! share one Lance session (cache and object-store registry).

mod catalog;
mod dedup;
mod grams;
mod index;
mod location;
mod retry;
mod search;
mod snapshot;
mod vector;

pub use catalog::{Catalog, DEFAULT_NAMESPACE, NamespaceError, NamespaceInfo};
pub use grams::{TermCounter, ngram_count};
pub use index::{IndexAction, IndexKind, IndexSpec, IndexStatus};
pub use location::{
    Location, StorageOptions, StorageSettings, is_stray_storage_variable,
    remove_stray_storage_variables,
};
use retry::Retry;
pub use retry::RetryPolicy;
pub use search::{FullTextRequest, ReadView, TermStats, TextAnalyzer, str_at};
pub use snapshot::BatchStream;
pub use vector::VectorRequest;

use arrow_array::{RecordBatch, RecordBatchIterator};
use arrow_schema::{ArrowError, SchemaRef};
use lance::dataset::builder::DatasetBuilder;
use lance::dataset::scanner::Scanner;
use lance::dataset::transaction::Transaction;
use lance::dataset::{
    CommitBuilder, Dataset, InsertBuilder, MergeInsertBuilder, WhenMatched, WhenNotMatched,
};
use lance::session::Session;
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::Mutex;

/// The fewest rows a write that lost a commit race is split at (see `Substrate::merge_unique`):
/// below it a write is quick, and tried again whole.
pub const SPLIT_FLOOR: usize = 512;

/// `batches` cut in two halves of (about) the same number of rows, without copying them.
fn halves(batches: &[RecordBatch]) -> Result<(Vec<RecordBatch>, Vec<RecordBatch>), ArrowError> {
    let schema = batches[0].schema();
    let all = arrow_select::concat::concat_batches(&schema, batches)?;
    let mid = all.num_rows() / 2;
    Ok((
        vec![all.slice(0, mid)],
        vec![all.slice(mid, all.num_rows() - mid)],
    ))
}

/// The shared Lance session's caches. Lance's defaults (6 GiB of index pages, 1 GiB of file
/// metadata) exceed pond's whole budget (peak RSS under 1 GiB for a sync of any size). Everything
/// else a write holds is bounded by the consumer's batch; the metadata cache instead grows with
/// every committed version (manifest, transaction, row-id sequences, file metadata), so its cap
/// is what keeps memory flat as the store grows. No index is read while importing; search and
/// key lookups keep the larger cap. Measured in docs/benchmarks.md ("Lance's caches capped, and
/// 32M messages"); the choice in docs/decisions.md ("Store writes").
const INDEX_CACHE_BYTES: usize = 128 << 20;
const METADATA_CACHE_BYTES: usize = 32 << 20;

/// The index cache a server keeps unless told otherwise: a search reads posting lists of the
/// n-gram index (half a gigabyte on disk at 1M messages), and with 128 MiB a server under load
/// read them again and again (docs/benchmarks.md, "HTTP load ...: the index cache").
pub const SERVE_INDEX_CACHE_BYTES: usize = 1 << 30;

/// The index cache of the Lance sessions this process opens from now on ([`set_index_cache`]).
static INDEX_CACHE: std::sync::atomic::AtomicUsize =
    std::sync::atomic::AtomicUsize::new(INDEX_CACHE_BYTES);

/// Sets the index cache (bytes) of every Lance session this process opens from now on: a
/// process that serves searches keeps more of the index than one that imports (which reads
/// none). A process-wide setting, like the allocator: chosen once, at the start of a verb.
pub fn set_index_cache(bytes: usize) {
    INDEX_CACHE.store(bytes, std::sync::atomic::Ordering::Relaxed);
}

/// The dataset-level metadata key holding a table's schema version (lance-dataset-schema-version).
pub const SCHEMA_VERSION_KEY: &str = "pond.schema_version";

/// The Arrow field metadata that marks a primary-key column (lance-table-creation-unenforced-pk).
pub const PK_KEY: &str = "lance-schema:unenforced-primary-key";
/// Its position within a composite key, "1", "2", ...
pub const PK_POSITION_KEY: &str = "lance-schema:unenforced-primary-key:position";

/// A table a consumer declares: its name, its Arrow schema (primary-key columns marked with
/// [`PK_KEY`]/[`PK_POSITION_KEY`]), and the version of that schema.
#[derive(Debug, Clone)]
pub struct TableSpec {
    /// The table's name in the catalog.
    pub name: &'static str,
    /// Its columns.
    pub schema: SchemaRef,
    /// The schema version this code writes (lance-dataset-schema-version).
    pub schema_version: u32,
}

/// Faults the substrate reports.
#[derive(Debug)]
pub enum StoreError {
    /// A write lost every optimistic-concurrency race it was retried through (spec 3.6).
    Conflict {
        table: &'static str,
        attempts: u32,
        detail: String,
    },
    /// Lance or the object store failed, and retry did not help.
    Unavailable {
        table: String,
        attempts: u32,
        detail: String,
    },
    /// The table was written by a pond whose schema this one does not know.
    SchemaVersion {
        table: &'static str,
        found: String,
        expected: u32,
    },
    /// A batch did not fit the table (a bug in the consumer, not a storage fault).
    Invalid { table: &'static str, detail: String },
    /// A file of the table is not what its manifest promised (cut short, corrupt), or Lance
    /// panicked reading it: reading again will not help. `files`: those of a local table that
    /// do not end as Lance's files do.
    Damaged {
        table: String,
        detail: String,
        files: Vec<String>,
    },
}

impl fmt::Display for StoreError {
    /// The message, with every control character quoted from the input escaped.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        pond_canonical::untrusted::write_escaped(f, |f| self.describe(f))
    }
}

impl StoreError {
    /// The message as it is made, before its control characters are escaped.
    fn describe(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Conflict {
                table,
                attempts,
                detail,
            } => {
                write!(
                    f,
                    "write to {table} lost to concurrent writers after {attempts} attempts: {detail}"
                )
            }
            Self::Unavailable {
                table,
                attempts,
                detail,
            } => {
                write!(
                    f,
                    "storage unavailable for {table} after {attempts} attempts: {detail}"
                )
            }
            Self::SchemaVersion {
                table,
                found,
                expected,
            } => write!(
                f,
                "{table} has schema version {found}; this pond writes version {expected} (no migrations before 1.0: export with the pond that wrote it)"
            ),
            Self::Invalid { table, detail } => write!(f, "{table}: {detail}"),
            Self::Damaged {
                table,
                detail,
                files,
            } => {
                write!(f, "the {table} table is damaged: {detail}")?;
                // A write stops at the first damaged table it reaches: tables written before
                // it keep their rows (a sync run again stores what is missing).
                write!(f, "; pond wrote nothing to it")?;
                if !files.is_empty() {
                    write!(f, ". Files that are not whole: {}", files.join(", "))?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for StoreError {}

/// What one merge-insert did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MergeOutcome {
    /// Rows inserted.
    pub inserted: u64,
    /// Rows already present under their primary key (left alone: adapter-integrity-additive-sync).
    pub present: u64,
    /// Attempts it took (1 when no concurrent writer interfered).
    pub attempts: u32,
}

/// Where the tables live: a local directory or an object store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// `file://` or a plain path.
    Local,
    /// `s3://`, `gs://`, `az://`, ...
    ObjectStore,
}

impl Backend {
    /// The backend a URI names: a plain path or `file://` is local, any other scheme an object
    /// store.
    pub fn of(uri: &str) -> Self {
        if uri.contains("://") && !uri.starts_with("file://") {
            Self::ObjectStore
        } else {
            Self::Local
        }
    }

    /// How long a cached handle may serve reads before it is checked again (lance-handle-freshness):
    /// zero locally, where a manifest re-read costs microseconds; a few seconds on object stores.
    pub fn staleness_window(self) -> Duration {
        match self {
            Self::Local => Duration::ZERO,
            Self::ObjectStore => Duration::from_secs(5),
        }
    }
}

struct Handle {
    dataset: Arc<Dataset>,
    checked: Instant,
}

/// A Lance session with pond's cache bounds and an object-store registry of its own: what every
/// table of one process shares (spec 3.4: one cache, one object-store client per store).
pub fn lance_session() -> Arc<Session> {
    Arc::new(Session::new(
        INDEX_CACHE.load(std::sync::atomic::Ordering::Relaxed),
        METADATA_CACHE_BYTES,
        Arc::new(lance::io::ObjectStoreRegistry::default()),
    ))
}

/// The storage substrate over one root (one namespace).
pub struct Substrate {
    root_location: Location,
    backend: Backend,
    session: Arc<Session>,
    handles: Mutex<HashMap<&'static str, Handle>>,
    /// The handles reads go through when they differ from the writers' (local reads through
    /// io_uring, [`uring_reads`]).
    reads: Mutex<HashMap<&'static str, Handle>>,
    /// The masks of the filters searches pushed down, per version of each table
    /// ([`search::MaskMemo`]).
    masks: Arc<std::sync::Mutex<search::MaskMemo>>,
    retry: Retry,
}

/// Whether local reads go through io_uring: on Linux, when the kernel lets this process set up
/// a ring (a container's seccomp profile may not), unless `POND_IO_URING=0`. Lance's local
/// reader hands every read to a blocking thread and waits for it, which was a third of a
/// search's CPU in the kernel; its io_uring reader (the `file+uring://` scheme) does not
/// (docs/decisions.md, "Local reads through io_uring"). Only reads: Lance commits through a
/// `file+uring://` URI without its conflict check, so writes keep `file://`.
pub fn uring_reads() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| {
        if std::env::var("POND_IO_URING").is_ok_and(|v| v.trim() == "0") {
            return false;
        }
        #[cfg(target_os = "linux")]
        {
            io_uring::IoUring::new(8).is_ok()
        }
        #[cfg(not(target_os = "linux"))]
        {
            false
        }
    })
}

impl Substrate {
    /// The substrate rooted at `uri` (a local path, `file://...`, or an object-store URI), with
    /// no storage options and a Lance session of its own.
    pub fn new(uri: &str, retry: RetryPolicy) -> Self {
        Self::open(Location::local(uri), lance_session(), retry)
    }

    /// The substrate at `location`, sharing `session` (its caches and object-store clients)
    /// with every other substrate given the same one.
    pub fn open(location: Location, session: Arc<Session>, retry: RetryPolicy) -> Self {
        let retry = Retry::new(retry, location.local_path().as_deref());
        Self {
            backend: location.backend(),
            root_location: location,
            session,
            handles: Mutex::new(HashMap::new()),
            reads: Mutex::new(HashMap::new()),
            masks: Arc::default(),
            retry,
        }
    }

    /// The root URI.
    pub fn root(&self) -> &str {
        self.root_location.uri()
    }

    /// Where the root is, with its storage options.
    pub fn root_location(&self) -> &Location {
        &self.root_location
    }

    /// The shared Lance session.
    pub fn session(&self) -> &Arc<Session> {
        &self.session
    }

    /// The backend kind.
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// lance-chokepoints-catalog: the one place a table's location is resolved (a namespace's
    /// root is resolved by [`Catalog::namespace`]).
    pub fn location(&self, table: &str) -> String {
        format!("{}/{table}.lance", self.root())
    }

    /// The latest dataset of `spec`, or `None` when the table was never written: the handle
    /// writes go through.
    pub async fn dataset(&self, spec: &TableSpec) -> Result<Option<Arc<Dataset>>, StoreError> {
        self.cached(spec, &self.handles, &self.location(spec.name))
            .await
    }

    /// The latest dataset of `spec` for reading: on a local store where [`uring_reads`], one
    /// opened through `file+uring://` (its own handle, checked for freshness as the writers'
    /// is), else the writers' handle.
    pub async fn read_dataset(&self, spec: &TableSpec) -> Result<Option<Arc<Dataset>>, StoreError> {
        match self.uring_location(spec.name) {
            Some(uri) => self.cached(spec, &self.reads, &uri).await,
            None => self.dataset(spec).await,
        }
    }

    /// The `file+uring://` URI of a local table, when local reads go through io_uring.
    /// The table's place is still [`Self::location`]'s (lance-chokepoints-catalog); only the
    /// scheme differs, and the path is made absolute as the URI form needs.
    fn uring_location(&self, table: &str) -> Option<String> {
        if self.backend != Backend::Local || !uring_reads() {
            return None;
        }
        let uri = self.location(table);
        let path = uri.strip_prefix("file://").unwrap_or(&uri);
        let absolute = std::path::absolute(path).ok()?;
        Some(format!("file+uring://{}", absolute.to_str()?))
    }

    /// The cached handle of `spec` in `handles`, opened from `uri` the first time.
    /// lance-handle-freshness: a cached handle is re-checked once older than the backend's window.
    async fn cached(
        &self,
        spec: &TableSpec,
        handles: &Mutex<HashMap<&'static str, Handle>>,
        uri: &str,
    ) -> Result<Option<Arc<Dataset>>, StoreError> {
        let mut handles = handles.lock().await;
        if let Some(h) = handles.get_mut(spec.name) {
            if h.checked.elapsed() >= self.backend.staleness_window() {
                let latest = self
                    .retry
                    .run(spec.name, || h.dataset.latest_version_id())
                    .await?;
                if latest != h.dataset.version().version {
                    let current = h.dataset.clone();
                    let ds = self
                        .retry
                        .run(spec.name, || {
                            let mut ds = (*current).clone();
                            async move { ds.checkout_latest().await.map(|()| ds) }
                        })
                        .await?;
                    h.dataset = Arc::new(ds);
                }
                h.checked = Instant::now();
            }
            return Ok(Some(h.dataset.clone()));
        }
        let opened = self
            .retry
            .run_opt(spec.name, || {
                // lance-chokepoints-storage: the storage options, always explicit.
                DatasetBuilder::from_uri(uri)
                    .with_session(self.session.clone())
                    .with_storage_options(self.root_location.options().to_lance())
                    .load()
            })
            .await?;
        let Some(ds) = opened else { return Ok(None) };
        check_schema_version(spec, &ds)?;
        let ds = Arc::new(ds);
        handles.insert(
            spec.name,
            Handle {
                dataset: ds.clone(),
                checked: Instant::now(),
            },
        );
        Ok(Some(ds))
    }

    /// lance-chokepoints-read: runs a scan of `spec` configured by `configure` (projection,
    /// filters with prefilter, limits) and returns its batches. A table never written reads empty.
    pub async fn scan(
        &self,
        spec: &TableSpec,
        configure: impl Fn(&mut Scanner) -> lance::Result<()>,
    ) -> Result<Vec<RecordBatch>, StoreError> {
        match self.read_view(spec).await? {
            Some(view) => view.scan(configure).await,
            None => Ok(Vec::new()),
        }
    }

    /// The plan Lance runs for a scan of `spec` configured by `configure`, run, with its metrics
    /// (`analyze_plan`: `pond search --explain`). A table never written says so.
    pub async fn analyze(
        &self,
        spec: &TableSpec,
        configure: impl Fn(&mut Scanner) -> lance::Result<()>,
    ) -> Result<String, StoreError> {
        let Some(ds) = self.read_dataset(spec).await? else {
            return Ok(format!(
                "{} has never been written: nothing is searched",
                spec.name
            ));
        };
        self.retry
            .run(spec.name, || async {
                let mut scanner = ds.scan();
                configure(&mut scanner)?;
                scanner.analyze_plan().await
            })
            .await
    }

    /// lance-chokepoints-read, streaming: folds every batch of a scan of `spec` into a state
    /// made by `init`, holding one batch at a time. A retried attempt starts again from `init()`,
    /// so nothing is counted twice.
    pub async fn scan_fold<S>(
        &self,
        spec: &TableSpec,
        configure: impl Fn(&mut Scanner) -> lance::Result<()>,
        init: impl Fn() -> S,
        mut fold: impl FnMut(&mut S, &RecordBatch),
    ) -> Result<S, StoreError> {
        use futures::StreamExt;
        let Some(ds) = self.read_dataset(spec).await? else {
            return Ok(init());
        };
        let mut attempt = 0;
        loop {
            attempt += 1;
            let mut state = init();
            let run = async {
                let mut scanner = ds.scan();
                configure(&mut scanner)?;
                let mut stream = scanner.try_into_stream().await?;
                while let Some(batch) = stream.next().await {
                    fold(&mut state, &batch?);
                }
                lance::Result::Ok(())
            };
            match retry::guarded(run).await {
                Err(panic) => return Err(self.retry.damaged(spec.name, panic)),
                Ok(Ok(())) => return Ok(state),
                Ok(Err(e)) if self.retry.transient(&e) && attempt < self.retry.attempts => {
                    self.retry.pause(attempt).await
                }
                Ok(Err(e)) => return Err(self.retry.failed(spec.name, attempt, &e)),
            }
        }
    }

    /// lance-chokepoints-write: merge-inserts `batches` into `spec` on its primary key; rows whose
    /// key is present are left alone (adapter-integrity-additive-sync, lance-append-only), and
    /// duplicate keys within the batches keep their first row (adapter-integrity-dedup, the floor).
    /// The table is created on first write, per lance-table-creation. Indexes are never folded here
    /// (lance-index-maintenance).
    pub async fn merge_insert(
        &self,
        spec: &TableSpec,
        batches: Vec<RecordBatch>,
    ) -> Result<MergeOutcome, StoreError> {
        let rows: u64 = batches.iter().map(|b| b.num_rows() as u64).sum();
        if rows == 0 {
            return Ok(MergeOutcome::default());
        }
        // adapter-integrity-dedup, the floor: duplicate keys keep their first row. Done here rather
        // than by Lance's `SourceDedupeBehavior::FirstSeen`, which turns the source into a stream
        // without statistics, so the join buffers every row of the target instead of the batch:
        // memory and time per write grew with the table (docs/decisions.md, "Store writes").
        // The batches' own schema: a source may leave out nullable columns it has no value for.
        let (stats, attempts) = self
            .merge(spec, batches, true, |b, _| {
                b.when_matched(WhenMatched::DoNothing)
                    .when_not_matched(WhenNotMatched::InsertAll);
                Ok(())
            })
            .await?;
        Ok(MergeOutcome {
            inserted: stats.num_inserted_rows,
            present: rows - stats.num_inserted_rows.min(rows),
            attempts,
        })
    }

    /// The one merge loop under both writes: `batches` deduplicated on the primary key (first
    /// seen wins), then merged on it as `configure` says, retried through lost commit races and
    /// transient faults (lance-retry-jitter), the new version kept as the table's handle.
    /// `create`: make the table when it was never written (an update has nothing to do then,
    /// and returns empty statistics). Returns Lance's statistics and the attempts taken.
    async fn merge(
        &self,
        spec: &TableSpec,
        batches: Vec<RecordBatch>,
        create: bool,
        configure: impl Fn(&mut MergeInsertBuilder, &Dataset) -> lance::Result<()> + Sync,
    ) -> Result<(lance::dataset::MergeStats, u32), StoreError> {
        // adapter-integrity-dedup, the floor: duplicate keys keep their first row. Done here rather
        // than by Lance's `SourceDedupeBehavior::FirstSeen`, which turns the source into a stream
        // without statistics, so the join buffers every row of the target instead of the batch:
        // memory and time per write grew with the table (docs/decisions.md, "Store writes").
        // The batches' own schema: a source may leave out nullable columns it has no value for.
        let schema = batches[0].schema();
        let batches = dedup::first_seen(&schema, batches).map_err(|e| StoreError::Invalid {
            table: spec.name,
            detail: e.to_string(),
        })?;
        self.merge_unique(spec, batches, create, &configure).await
    }

    /// [`Self::merge`] of rows whose keys are unique. A write of more than [`SPLIT_FLOOR`] rows
    /// that loses a commit race is split in two halves merged one after the other: Lance's
    /// inserted-key filter is a bloom filter sized for 8,192 keys and compared byte by byte,
    /// so a large batch "intersects" any other write and loses to every commit made while it
    /// writes; against a steady stream of small writes (a server's ingests) it never won. Its
    /// halves are shorter, and so fit between the other writer's commits (docs/decisions.md,
    /// "A large write against a stream of small ones"). The rows are the same, keyed; only the
    /// commits are more (a batch was never atomic across tables, lance-forward-compat-no-cross-
    /// shard-atomic-write).
    fn merge_unique<'a>(
        &'a self,
        spec: &'a TableSpec,
        batches: Vec<RecordBatch>,
        create: bool,
        configure: &'a (dyn Fn(&mut MergeInsertBuilder, &Dataset) -> lance::Result<()> + Sync),
    ) -> std::pin::Pin<
        Box<
            dyn std::future::Future<Output = Result<(lance::dataset::MergeStats, u32), StoreError>>
                + Send
                + 'a,
        >,
    > {
        Box::pin(async move {
            let rows: usize = batches.iter().map(RecordBatch::num_rows).sum();
            let splittable = rows > SPLIT_FLOOR;
            let mut attempts = 0u32;
            // When this write first lost a commit race (lance-retry-jitter: its retries are bounded
            // in time from then, RetryPolicy::conflict_budget).
            let mut lost_since: Option<Instant> = None;
            loop {
                attempts += 1;
                let ds = match self.dataset(spec).await? {
                    Some(ds) => ds,
                    None if !create => return Ok((Default::default(), attempts)),
                    None => match self.create(spec).await {
                        Ok(ds) => ds,
                        // Another writer created it first: use theirs.
                        Err(_) if attempts < self.retry.attempts => continue,
                        Err(e) => return Err(e),
                    },
                };
                let job = MergeInsertBuilder::try_new(ds.clone(), Vec::new())
                    .and_then(|mut b| {
                        configure(&mut b, &ds)?;
                        // The indexed merge path records no inserted-key filter, so concurrent
                        // inserts of one new key could both commit (lance-14-notes, surprise 3).
                        // Lance's own retries of a lost race stop at the budget; the attempts of
                        // this loop are bounded by it too (below).
                        b.use_index(false)
                            .skip_auto_cleanup(true)
                            .retry_timeout(self.retry.conflict_budget);
                        if splittable {
                            // A large write that lost is split (above) rather than tried again
                            // whole: Lance gives it one more try of its own.
                            b.conflict_retries(1);
                        }
                        b.try_build()
                    })
                    .map_err(|e| StoreError::Invalid {
                        table: spec.name,
                        detail: e.to_string(),
                    })?;
                let executed = match retry::guarded(job.execute_batches(batches.clone())).await {
                    Ok(executed) => executed,
                    Err(panic) => return Err(self.retry.damaged(spec.name, panic)),
                };
                match executed {
                    Ok((new_ds, stats)) => {
                        self.handles.lock().await.insert(
                            spec.name,
                            Handle {
                                dataset: new_ds,
                                checked: Instant::now(),
                            },
                        );
                        let taken = attempts.max(stats.num_attempts);
                        return Ok((stats, taken));
                    }
                    Err(e) if splittable && retry::is_conflict(&e) => {
                        self.forget(spec.name).await;
                        let (first, second) =
                            halves(&batches).map_err(|e| StoreError::Invalid {
                                table: spec.name,
                                detail: e.to_string(),
                            })?;
                        let (a, a_attempts) =
                            self.merge_unique(spec, first, create, configure).await?;
                        let (b, b_attempts) =
                            self.merge_unique(spec, second, create, configure).await?;
                        let stats = lance::dataset::MergeStats {
                            num_inserted_rows: a.num_inserted_rows + b.num_inserted_rows,
                            num_updated_rows: a.num_updated_rows + b.num_updated_rows,
                            num_deleted_rows: a.num_deleted_rows + b.num_deleted_rows,
                            num_attempts: a.num_attempts + b.num_attempts,
                            bytes_written: a.bytes_written + b.bytes_written,
                            num_files_written: a.num_files_written + b.num_files_written,
                            num_skipped_duplicates: a.num_skipped_duplicates
                                + b.num_skipped_duplicates,
                        };
                        return Ok((stats, attempts + a_attempts + b_attempts));
                    }
                    Err(e) if self.retry.damage(&e) => {
                        return Err(self.retry.failed(spec.name, attempts, &e));
                    }
                    Err(e) if self.retry.write_goes_on(&e, attempts, lost_since) => {
                        if retry::is_conflict(&e) {
                            lost_since.get_or_insert_with(Instant::now);
                        }
                        self.retry.pause(attempts).await;
                        self.forget(spec.name).await;
                    }
                    Err(e) if retry::is_conflict(&e) => {
                        return Err(StoreError::Conflict {
                            table: spec.name,
                            attempts,
                            detail: e.to_string(),
                        });
                    }
                    Err(e) if retry::is_transient(&e) => {
                        return Err(self.retry.failed(spec.name, attempts, &e));
                    }
                    Err(e) => {
                        return Err(StoreError::Invalid {
                            table: spec.name,
                            detail: e.to_string(),
                        });
                    }
                }
            }
        })
    }

    /// Runs `op` on the latest version of `spec` (a commit: index and configuration changes),
    /// retried as every Lance call is, and keeps the version it made as the table's handle.
    /// `None` when the table was never written.
    pub(crate) async fn commit_on_latest<T>(
        &self,
        spec: &TableSpec,
        op: impl AsyncFn(&mut Dataset) -> lance::Result<T>,
    ) -> Result<Option<T>, StoreError> {
        let Some(ds) = self.dataset(spec).await? else {
            return Ok(None);
        };
        let (updated, out) = self
            .retry
            .run(spec.name, || async {
                let mut d = (*ds).clone();
                // The latest version: another writer may have committed since `ds` was read.
                d.checkout_latest().await?;
                let out = op(&mut d).await?;
                Ok((d, out))
            })
            .await?;
        self.handles.lock().await.insert(
            spec.name,
            Handle {
                dataset: Arc::new(updated),
                checked: Instant::now(),
            },
        );
        Ok(Some(out))
    }

    async fn forget(&self, table: &'static str) {
        self.handles.lock().await.remove(table);
        self.reads.lock().await.remove(table);
    }

    /// lance-table-creation: stable row ids, the primary key marked in the schema, the current
    /// stable file format, and the schema version in the dataset's metadata. Created empty: rows
    /// arrive only through [`merge_insert`](Self::merge_insert).
    async fn create(&self, spec: &TableSpec) -> Result<Arc<Dataset>, StoreError> {
        let ds = self
            .retry
            .run(spec.name, || async {
                let creation = self.creation(spec).await?;
                self.commit_creation(spec, creation).await
            })
            .await?;
        let ds = Arc::new(ds);
        self.handles.lock().await.insert(
            spec.name,
            Handle {
                dataset: ds.clone(),
                checked: Instant::now(),
            },
        );
        Ok(ds)
    }

    /// The commit that creates `spec` empty, its files written but not committed.
    async fn creation(&self, spec: &TableSpec) -> lance::Result<Transaction> {
        let params = self.creation_params();
        let empty = RecordBatchIterator::new(
            Vec::<Result<RecordBatch, ArrowError>>::new(),
            snapshot::versioned_schema(spec),
        );
        InsertBuilder::new(self.location(spec.name).as_str())
            .with_params(&params)
            .execute_uncommitted_stream(empty)
            .await
    }

    /// Commits a [`creation`](Self::creation) only where no table is. A creation is an
    /// overwrite to Lance, which looks for the table again as it commits and, finding one
    /// (another writer created it meanwhile, and may have written to it), commits the empty
    /// table over it as its next version: every row written before was gone from the latest
    /// version. With no commit retries Lance takes the overwrite as strict: it commits it only
    /// as the first version, and fails where the table is, so the writer uses that table
    /// (`merge`). docs/decisions.md, "Creating a table another writer may be creating".
    async fn commit_creation(
        &self,
        spec: &TableSpec,
        creation: Transaction,
    ) -> lance::Result<Dataset> {
        let params = self.creation_params();
        let uri = self.location(spec.name);
        let mut commit = CommitBuilder::new(uri.as_str())
            .use_stable_row_ids(params.enable_stable_row_ids)
            .enable_v2_manifest_paths(params.enable_v2_manifest_paths)
            .with_session(self.session.clone())
            .with_max_retries(0);
        if let Some(format) = params.data_storage_version {
            commit = commit.with_storage_format(format);
        }
        if let Some(store) = params.store_params {
            commit = commit.with_store_params(store);
        }
        commit.execute(creation).await
    }

    /// Row count and version of `spec` (zero and `None` for a table never written).
    pub async fn stats(&self, spec: &TableSpec) -> Result<(u64, Option<u64>), StoreError> {
        let Some(ds) = self.read_dataset(spec).await? else {
            return Ok((0, None));
        };
        let rows = self.retry.run(spec.name, || ds.count_rows(None)).await?;
        Ok((rows as u64, Some(ds.version().version)))
    }
}

fn check_schema_version(spec: &TableSpec, ds: &Dataset) -> Result<(), StoreError> {
    let found = ds
        .schema()
        .metadata
        .get(SCHEMA_VERSION_KEY)
        .cloned()
        .unwrap_or_else(|| "none".to_owned());
    if found != spec.schema_version.to_string() {
        return Err(StoreError::SchemaVersion {
            table: spec.name,
            found,
            expected: spec.schema_version,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::StringArray;
    use arrow_schema::{DataType, Field, Schema};

    fn spec() -> TableSpec {
        let key = Field::new("id", DataType::Utf8, false).with_metadata(HashMap::from([
            (PK_KEY.to_owned(), "true".to_owned()),
            (PK_POSITION_KEY.to_owned(), "1".to_owned()),
        ]));
        TableSpec {
            name: "t",
            schema: Arc::new(Schema::new(vec![key])),
            schema_version: 1,
        }
    }

    fn keys(spec: &TableSpec, writer: usize, n: usize) -> RecordBatch {
        let ids: Vec<String> = (0..n).map(|i| format!("w{writer}-{i}")).collect();
        RecordBatch::try_new(spec.schema.clone(), vec![Arc::new(StringArray::from(ids))]).unwrap()
    }

    /// lance-table-creation with concurrent first writers (the hosted deployment's new
    /// namespace; `pond serve` and `pond sync` started on an empty store): a writer that found
    /// no table makes its creation, another creates the table and writes to it, and then the
    /// first commits. Lance's plain create committed its empty table over the other's as the
    /// next version (with Lance's default commit retries this test fails): rows every writer
    /// had been told were stored were gone in 5 of 400 races of three `pond sync` processes on
    /// an empty store (`scripts/race-first-writers.sh`; docs/decisions.md, "Creating a table
    /// another writer may be creating").
    #[tokio::test]
    async fn a_creation_committed_after_another_writers_creation_and_write_fails() {
        let spec = spec();
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().display().to_string();
        // Each with a Lance session of its own, as separate processes have.
        let (late, first) = (
            Substrate::new(&root, RetryPolicy::default()),
            Substrate::new(&root, RetryPolicy::default()),
        );
        let creation = late.creation(&spec).await.unwrap();
        first
            .merge_insert(&spec, vec![keys(&spec, 0, 5)])
            .await
            .unwrap();
        assert!(late.commit_creation(&spec, creation).await.is_err());
        let fresh = Substrate::new(&root, RetryPolicy::default());
        assert_eq!(
            fresh.stats(&spec).await.unwrap().0,
            5,
            "the rows written first are gone"
        );
        // The late writer writes into the table the other made.
        late.merge_insert(&spec, vec![keys(&spec, 1, 3)])
            .await
            .unwrap();
        assert_eq!(fresh.stats(&spec).await.unwrap().0, 8);
    }

    #[test]
    fn halves_keep_every_row_in_order() {
        use arrow_array::Array;
        let spec = spec();
        let (a, b) = halves(&[keys(&spec, 0, 3), keys(&spec, 1, 4)]).unwrap();
        let ids = |bs: &[RecordBatch]| -> Vec<String> {
            bs.iter()
                .flat_map(|b| {
                    let col = b.column(0).as_any().downcast_ref::<StringArray>().unwrap();
                    (0..col.len())
                        .map(|i| col.value(i).to_owned())
                        .collect::<Vec<_>>()
                })
                .collect()
        };
        assert_eq!(ids(&a), ["w0-0", "w0-1", "w0-2"]);
        assert_eq!(ids(&b), ["w1-0", "w1-1", "w1-2", "w1-3"]);
    }

    /// A table of a key and a text body, for writes that take a while, as a sync's do.
    fn wide() -> TableSpec {
        let mut spec = spec();
        let mut fields: Vec<Field> = spec.schema.fields().iter().map(|f| (**f).clone()).collect();
        fields.push(Field::new("body", DataType::Utf8, false));
        spec.schema = Arc::new(Schema::new(fields));
        spec
    }

    fn wide_rows(spec: &TableSpec, prefix: &str, n: usize) -> RecordBatch {
        let ids: Vec<String> = (0..n).map(|i| format!("{prefix}-{i}")).collect();
        let body = "x".repeat(2048);
        let bodies: Vec<&str> = (0..n).map(|_| body.as_str()).collect();
        RecordBatch::try_new(
            spec.schema.clone(),
            vec![
                Arc::new(StringArray::from(ids)),
                Arc::new(StringArray::from(bodies)),
            ],
        )
        .unwrap()
    }

    /// A large write against a steady stream of small ones (a sync beside a server taking
    /// ingests): Lance's inserted-key filters make the large one lose to every commit made while
    /// it writes, so whole it did not commit until the stream stopped (issue 22's user trial);
    /// split on a lost race, it commits while the stream goes on, and every row of both writers
    /// is stored once (docs/decisions.md, "A large write against a stream of small ones").
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_large_write_commits_between_a_stream_of_small_ones() {
        let spec = wide();
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().display().to_string();
        let small = Substrate::new(&root, RetryPolicy::default());
        small
            .merge_insert(&spec, vec![wide_rows(&spec, "first", 1)])
            .await
            .unwrap();
        let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
        // Bounded: at most 400 small writes, one every 25 ms.
        const STREAM: usize = 400;
        let stream = {
            let (done, spec) = (done.clone(), spec.clone());
            tokio::spawn(async move {
                let mut n = 0;
                while !done.load(std::sync::atomic::Ordering::Relaxed) && n < STREAM {
                    n += 1;
                    let one = wide_rows(&spec, &format!("small{n}"), 1);
                    small.merge_insert(&spec, vec![one]).await.unwrap();
                    tokio::time::sleep(Duration::from_millis(25)).await;
                }
                n
            })
        };
        tokio::time::sleep(Duration::from_millis(100)).await;
        let large = Substrate::new(&root, RetryPolicy::default());
        let outcome = large
            .merge_insert(&spec, vec![wide_rows(&spec, "large", 20_000)])
            .await;
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        let streamed = stream.await.unwrap();
        let outcome = outcome.expect("the large write commits");
        assert_eq!(outcome.inserted, 20_000);
        // It lost at least once, and committed early in the stream: whole, it lost to the
        // stream until the stream ended in 2 of 3 runs, and took three quarters of it in the
        // third (SPLIT_FLOOR set past its size); split, it commits within the first few dozen
        // small writes.
        assert!(outcome.attempts >= 2, "{outcome:?}");
        assert!(
            streamed < STREAM / 4,
            "the large write committed only after {streamed} small writes"
        );
        let fresh = Substrate::new(&root, RetryPolicy::default());
        assert_eq!(
            fresh.stats(&spec).await.unwrap().0,
            20_000 + 1 + streamed as u64
        );
    }
}

//! lance-retry-jitter: every call into Lance runs under bounded retry with exponential backoff
//! and jitter, so transient object-store faults and lost races become latency, not errors.

use super::StoreError;
use std::future::Future;
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

/// How many times, and how patiently, a Lance call is retried.
#[derive(Debug, Clone, Copy)]
pub struct RetryPolicy {
    /// Attempts in all (the first try included).
    pub attempts: u32,
    /// The pause before the second attempt; it doubles each time, up to `max_pause`.
    pub first_pause: Duration,
    /// The longest pause.
    pub max_pause: Duration,
    /// Attempts in all for a write that keeps losing commit races: more than for faults, since
    /// each is a fresh read of the latest version and many writers on one bucket is the hosted
    /// deployment's normal state (spec 2.2), while a fault that outlasts `attempts` is an outage.
    pub conflict_attempts: u32,
    /// How long a write goes on retrying after it first lost a commit race: Lance's own retries
    /// inside one attempt stop at it (its `retry_timeout`), and no attempt of pond's starts past
    /// it. A writer that keeps losing hears of it (the typed conflict: 409 on the wire, to be
    /// sent again) in about twice this, not after minutes (docs/decisions.md, "A losing writer's
    /// retry budget").
    pub conflict_budget: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            attempts: 8,
            first_pause: Duration::from_millis(20),
            max_pause: Duration::from_secs(2),
            conflict_attempts: 24,
            conflict_budget: Duration::from_secs(20),
        }
    }
}

/// Whether a Lance error may go away on retry: lost commit races and I/O faults, but not an
/// object store refusing the credentials (a wrong secret stays wrong; retrying it only delays
/// the error).
pub(crate) fn is_transient(e: &lance::Error) -> bool {
    is_conflict(e) || (is_fault(e) && !is_denied(e) && !is_permanent_os(e))
}

/// Whether a Lance error says a file of the table is not what its manifest promised: a file
/// that ends early (`UnexpectedEof`, which io_uring's reader words "unexpected EOF" and the
/// local file system "failed to fill whole buffer") or one Lance calls corrupt. Read again, a
/// damaged local file stays damaged: it was retried eight times (3 s) and then reported as the
/// storage being unavailable, naming no file (issue 22's user trial). Only a local store's
/// errors are taken as damage ([`Retry::damage`]): from an object store, an early end is as
/// likely a connection cut mid-body, which a retry mends.
pub(crate) fn is_damage(e: &lance::Error) -> bool {
    if matches!(e.find_root(), lance::Error::CorruptFile { .. }) {
        return true;
    }
    causes(e).any(|s| {
        if let Some(io) = s.downcast_ref::<std::io::Error>()
            && io.kind() == std::io::ErrorKind::UnexpectedEof
        {
            return true;
        }
        // Lance's own check of a read past a file's end ("file size is too small", lance-io
        // `read_message`): what a release build meets on a cut manifest, where a debug build
        // panics on the overflow before it.
        let text = s.to_string();
        text.contains("unexpected EOF")
            || text.contains("failed to fill whole buffer")
            || text.contains("file size is too small")
    })
}

/// The local file system's answers that stay the same however often they are asked: the
/// store's path is a file, or pond may not write there (`EACCES`, `EPERM`, `ENOTDIR`,
/// `EISDIR`, `EROFS`). Retried, they only delayed the error by 20 s and more (issue 22's user
/// trial). Lance passes most of them on as text, so the OS's own wording is matched too.
fn is_permanent_os(e: &lance::Error) -> bool {
    use std::io::ErrorKind::{IsADirectory, NotADirectory, PermissionDenied, ReadOnlyFilesystem};
    causes(e).any(|s| {
        if let Some(io) = s.downcast_ref::<std::io::Error>()
            && matches!(
                io.kind(),
                PermissionDenied | NotADirectory | IsADirectory | ReadOnlyFilesystem
            )
        {
            return true;
        }
        let text = s.to_string();
        [
            "(os error 1)",
            "(os error 13)",
            "(os error 20)",
            "(os error 21)",
            "(os error 30)",
        ]
        .iter()
        .any(|code| text.contains(code))
    })
}

/// Whether a Lance error is the object store failing: Lance's own I/O and timeout errors, an
/// I/O or object-store error anywhere in its source chain (Lance wraps some in `Wrapped` or
/// `External`, and shares others behind `Shared`), and a commit whose outcome Lance could not
/// read back because the store went away while it was committing ("commit status unknown").
/// The last is safe to retry for the writes pond makes: a merge leaves rows already present
/// alone (or sets them to the values they already have), so a commit that did land is not
/// applied twice; an index or configuration commit is done again on the latest version.
fn is_fault(e: &lance::Error) -> bool {
    let root = e.find_root();
    if matches!(root, lance::Error::IO { .. } | lance::Error::Timeout { .. })
        || root.is_commit_status_unknown()
    {
        return true;
    }
    for s in causes(root) {
        if s.downcast_ref::<std::io::Error>().is_some() {
            return true;
        }
        if let Some(os) = s.downcast_ref::<object_store::Error>() {
            // What the store answered about a path or a request (missing, already there, a
            // failed precondition) is no fault of the store; anything else (a refused
            // connection, a reset, a 5xx after the client's own retries) is.
            return !matches!(
                os,
                object_store::Error::NotFound { .. }
                    | object_store::Error::AlreadyExists { .. }
                    | object_store::Error::Precondition { .. }
                    | object_store::Error::NotModified { .. }
                    | object_store::Error::NotSupported { .. }
                    | object_store::Error::NotImplemented { .. }
                    | object_store::Error::InvalidPath { .. }
                    | object_store::Error::UnknownConfigurationKey { .. }
            );
        }
    }
    false
}

/// `e` and the errors under it, outermost first. `External` is transparent (its `source()` is
/// its inner error's, skipping the inner error itself), so for it the walk starts inside.
fn causes(e: &lance::Error) -> impl Iterator<Item = &(dyn std::error::Error + 'static)> {
    let root = e.find_root();
    let first: &(dyn std::error::Error + 'static) = match root.external_source() {
        Some(inner) => inner.as_ref(),
        None => root,
    };
    std::iter::successors(Some(first), |s| s.source())
}

/// Whether the object store refused the request's credentials (HTTP 401 or 403).
pub(crate) fn is_denied(e: &lance::Error) -> bool {
    for s in causes(e) {
        if let Some(os) = s.downcast_ref::<object_store::Error>()
            && matches!(
                os,
                object_store::Error::PermissionDenied { .. }
                    | object_store::Error::Unauthenticated { .. }
            )
        {
            return true;
        }
        // A refused list request reaches Lance as object_store's `Generic` error around its
        // (crate-private) retry error, which says the status only in its text.
        let text = s.to_string();
        if text.contains("status code: 403 Forbidden")
            || text.contains("status code: 401 Unauthorized")
        {
            return true;
        }
    }
    false
}

/// Whether a Lance error is an optimistic-concurrency conflict.
pub(crate) fn is_conflict(e: &lance::Error) -> bool {
    matches!(
        e,
        lance::Error::CommitConflict { .. }
            | lance::Error::RetryableCommitConflict { .. }
            | lance::Error::TooMuchWriteContention { .. }
            | lance::Error::IncompatibleTransaction { .. }
    )
}

fn is_not_found(e: &lance::Error) -> bool {
    matches!(
        e,
        lance::Error::DatasetNotFound { .. } | lance::Error::NotFound { .. }
    )
}

impl RetryPolicy {
    /// The attempts a write may take when it failed with `e`.
    pub(crate) fn write_attempts(&self, e: &lance::Error) -> u32 {
        if is_conflict(e) {
            self.conflict_attempts.max(self.attempts)
        } else {
            self.attempts
        }
    }

    /// Whether a write that failed with `e` after `attempts` attempts goes on: a transient
    /// failure with attempts left, and for a lost race only while `lost_since` (when it first
    /// lost one) is less than [`conflict_budget`](Self::conflict_budget) ago.
    pub(crate) fn write_goes_on(
        &self,
        e: &lance::Error,
        attempts: u32,
        lost_since: Option<std::time::Instant>,
    ) -> bool {
        is_transient(e)
            && attempts < self.write_attempts(e)
            && !(is_conflict(e) && lost_since.is_some_and(|t| t.elapsed() >= self.conflict_budget))
    }

    /// Sleeps before attempt `attempt + 1`: exponential backoff with full jitter.
    pub(crate) async fn pause(&self, attempt: u32) {
        let base = self
            .first_pause
            .saturating_mul(1u32 << attempt.min(16))
            .min(self.max_pause);
        let jitter = jitter_fraction();
        tokio::time::sleep(base.mul_f64(0.5 + jitter / 2.0)).await;
    }
}

/// A store's [`RetryPolicy`], and where its tables are when they are local: every Lance call of
/// a substrate runs through it ([`Self::run`]), each attempt guarded against a panic inside
/// Lance ([`guarded`]), and a table found damaged is reported with the files that look it
/// ([`damaged_files`]).
#[derive(Debug, Clone)]
pub(crate) struct Retry {
    policy: RetryPolicy,
    /// The store's root directory, for a local store.
    local_root: Option<Arc<Path>>,
}

impl std::ops::Deref for Retry {
    type Target = RetryPolicy;
    fn deref(&self) -> &RetryPolicy {
        &self.policy
    }
}

impl Retry {
    pub(crate) fn new(policy: RetryPolicy, local_root: Option<&Path>) -> Self {
        Self {
            policy,
            local_root: local_root.map(Arc::from),
        }
    }

    /// Whether `e` says a file of this (local) store's table is damaged ([`is_damage`]).
    pub(crate) fn damage(&self, e: &lance::Error) -> bool {
        self.local_root.is_some() && is_damage(e)
    }

    /// Whether `e` may go away on retry ([`is_transient`]), damage to a local file excepted.
    pub(crate) fn transient(&self, e: &lance::Error) -> bool {
        is_transient(e) && !self.damage(e)
    }

    /// What a Lance call that failed for good with `e` after `attempts` attempts reports: the
    /// table damaged ([`Self::damage`]), else the storage unavailable.
    pub(crate) fn failed(&self, table: &str, attempts: u32, e: &lance::Error) -> StoreError {
        if self.damage(e) {
            self.damaged(table, e.to_string())
        } else {
            StoreError::Unavailable {
                table: table.to_owned(),
                attempts,
                detail: e.to_string(),
            }
        }
    }

    /// The table `table` damaged, for `detail`; on a local store, with the files that do not end
    /// as Lance ends its files.
    pub(crate) fn damaged(&self, table: &str, detail: String) -> StoreError {
        let files = match &self.local_root {
            Some(root) => damaged_files(&root.join(format!("{table}.lance"))),
            None => Vec::new(),
        };
        StoreError::Damaged {
            table: table.to_owned(),
            detail,
            files,
        }
    }

    /// Runs `call` until it succeeds, fails for good, or the attempts run out.
    pub(crate) async fn run<T, F, Fut>(&self, table: &str, mut call: F) -> Result<T, StoreError>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = lance::Result<T>>,
    {
        let mut attempt = 0;
        loop {
            attempt += 1;
            match guarded(call()).await {
                Err(panic) => return Err(self.damaged(table, panic)),
                Ok(Ok(v)) => return Ok(v),
                Ok(Err(e)) if self.transient(&e) && attempt < self.attempts => {
                    self.pause(attempt).await
                }
                Ok(Err(e)) => return Err(self.failed(table, attempt, &e)),
            }
        }
    }

    /// Like [`run`](Self::run), but a missing dataset is `None`, not an error.
    pub(crate) async fn run_opt<T, F, Fut>(
        &self,
        table: &str,
        mut call: F,
    ) -> Result<Option<T>, StoreError>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = lance::Result<T>>,
    {
        let mut attempt = 0;
        loop {
            attempt += 1;
            match guarded(call()).await {
                Err(panic) => return Err(self.damaged(table, panic)),
                Ok(Ok(v)) => return Ok(Some(v)),
                Ok(Err(e)) if is_not_found(&e) => return Ok(None),
                Ok(Err(e)) if self.transient(&e) && attempt < self.attempts => {
                    self.pause(attempt).await
                }
                Ok(Err(e)) => return Err(self.failed(table, attempt, &e)),
            }
        }
    }
}

/// The magic every file Lance writes for a table ends with: manifests, data files and index
/// files (`lance_table::format::MAGIC`, and the Lance file format's footer).
const LANCE_MAGIC: &[u8; 4] = b"LANC";

/// The files of the local table at `table_dir` that are not whole: a manifest (`_versions/`),
/// data file (`data/`) or index file (`_indices/`) that does not end with Lance's magic, as a
/// file cut short does. Read only when a table has been found damaged; at most 10 are named.
pub(crate) fn damaged_files(table_dir: &Path) -> Vec<String> {
    use std::io::{Read, Seek, SeekFrom};
    fn walk(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            match entry.file_type() {
                Ok(t) if t.is_dir() => walk(&path, out),
                Ok(t) if t.is_file() => {
                    if path
                        .extension()
                        .is_some_and(|x| x == "manifest" || x == "lance")
                    {
                        out.push(path);
                    }
                }
                _ => {}
            }
        }
    }
    let mut files = Vec::new();
    for sub in ["_versions", "data", "_indices"] {
        walk(&table_dir.join(sub), &mut files);
    }
    files.sort();
    let mut found = Vec::new();
    for path in files {
        let whole = std::fs::File::open(&path).and_then(|mut f| {
            let len = f.metadata()?.len();
            if len < LANCE_MAGIC.len() as u64 {
                return Ok((len, false));
            }
            f.seek(SeekFrom::End(-(LANCE_MAGIC.len() as i64)))?;
            let mut tail = [0u8; 4];
            f.read_exact(&mut tail)?;
            Ok((len, &tail == LANCE_MAGIC))
        });
        match whole {
            Ok((_, true)) => {}
            Ok((len, false)) => found.push(format!(
                "{} ({len} bytes; it does not end as a Lance file does: cut short?)",
                path.display()
            )),
            Err(e) => found.push(format!("{} (unreadable: {e})", path.display())),
        }
    }
    const NAMED: usize = 10;
    if found.len() > NAMED {
        let more = found.len() - NAMED;
        found.truncate(NAMED);
        found.push(format!("and {more} more"));
    }
    found
}

thread_local! {
    /// How many [`Guarded`] polls are running on this thread (nested calls count each).
    static GUARDED: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
    /// What the last panic inside a guarded poll on this thread said, and where.
    static CAUGHT: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
}

/// `call`, with a panic while it is polled returned as `Err` (what it said, and where) instead
/// of unwinding through pond. Lance panics on some damaged files (a truncated manifest: an
/// integer overflow in `Dataset::load_manifest`, lance 14.0.2 `dataset.rs:800`); it ended
/// `pond status` with a backtrace (issue 22's user trial). The panic is not printed: the hook
/// [`quiet_hook`] installs keeps it for the error instead. Panics of Lance's own tasks on other
/// threads reach pond as Lance's errors, or as a panic here when Lance unwraps them.
pub(crate) fn guarded<F: Future>(call: F) -> Guarded<F> {
    quiet_hook();
    Guarded {
        inner: Some(Box::pin(call)),
    }
}

pub(crate) struct Guarded<F> {
    inner: Option<Pin<Box<F>>>,
}

impl<F: Future> Future for Guarded<F> {
    type Output = Result<F::Output, String>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let Some(inner) = self.inner.as_mut() else {
            return Poll::Ready(Err("polled again after it panicked".to_owned()));
        };
        GUARDED.with(|g| g.set(g.get() + 1));
        let polled =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| inner.as_mut().poll(cx)));
        GUARDED.with(|g| g.set(g.get() - 1));
        match polled {
            Ok(Poll::Ready(v)) => Poll::Ready(Ok(v)),
            Ok(Poll::Pending) => Poll::Pending,
            Err(payload) => {
                // The future is left half-run: dropped, never polled again.
                self.inner = None;
                Poll::Ready(Err(caught(payload.as_ref())))
            }
        }
    }
}

/// `stream`, with a panic while it is polled ending it with `Err` (as [`guarded`] does for a
/// future): a scan's batches are decoded as they are polled.
pub(crate) fn guarded_stream<S: futures::Stream>(stream: S) -> GuardedStream<S> {
    quiet_hook();
    GuardedStream {
        inner: Some(Box::pin(stream)),
    }
}

pub(crate) struct GuardedStream<S> {
    inner: Option<Pin<Box<S>>>,
}

impl<S: futures::Stream> futures::Stream for GuardedStream<S> {
    type Item = Result<S::Item, String>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let Some(inner) = self.inner.as_mut() else {
            return Poll::Ready(None);
        };
        GUARDED.with(|g| g.set(g.get() + 1));
        let polled = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            inner.as_mut().poll_next(cx)
        }));
        GUARDED.with(|g| g.set(g.get() - 1));
        match polled {
            Ok(Poll::Ready(item)) => Poll::Ready(item.map(Ok)),
            Ok(Poll::Pending) => Poll::Pending,
            Err(payload) => {
                self.inner = None;
                Poll::Ready(Some(Err(caught(payload.as_ref()))))
            }
        }
    }
}

/// The error of a panic caught in a guarded poll: what the hook kept, else the payload's text.
fn caught(payload: &(dyn std::any::Any + Send)) -> String {
    let said = CAUGHT
        .with(|c| c.borrow_mut().take())
        .unwrap_or_else(|| panic_text(payload).to_owned());
    format!("Lance panicked: {said}")
}

/// What a panic's payload says, when it is text.
fn panic_text(payload: &(dyn std::any::Any + Send)) -> &str {
    payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("a panic without a message")
}

/// Installs, once, a panic hook that keeps a panic inside a [`Guarded`] poll for its error
/// (the message, and the place in Lance's source, from the crate's folder on) and prints
/// nothing; any other panic goes to the hook that was there before.
fn quiet_hook() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let before = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if GUARDED.with(|g| g.get()) == 0 {
                return before(info);
            }
            let mut said = panic_text(info.payload()).to_owned();
            if let Some(at) = info.location() {
                // `.../registry/src/index.crates.io-…/lance-14.0.2/src/dataset.rs`: from the
                // crate's folder on.
                let file = at.file();
                let short = file
                    .rsplitn(4, '/')
                    .collect::<Vec<_>>()
                    .into_iter()
                    .rev()
                    .skip(1)
                    .collect::<Vec<_>>()
                    .join("/");
                let short = if short.is_empty() { file } else { &short };
                said.push_str(&format!(" (at {short}:{})", at.line()));
            }
            CAUGHT.with(|c| *c.borrow_mut() = Some(said));
        }));
    });
}

/// A number in [0, 1) that differs between calls and processes (no RNG dependency needed).
fn jitter_fraction() -> f64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0),
    );
    (h.finish() >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused() -> lance::Error {
        lance::Error::io_source(Box::new(std::io::Error::from(
            std::io::ErrorKind::ConnectionRefused,
        )))
    }

    #[test]
    fn a_lost_race_is_retried_only_within_the_budget_and_a_fault_by_attempts() {
        let policy = RetryPolicy::default();
        let lost = lance::Error::too_much_write_contention("Attempted 10 retries.");
        let now = std::time::Instant::now();
        let long_ago = now.checked_sub(policy.conflict_budget + Duration::from_secs(1));
        assert!(policy.write_goes_on(&lost, 1, None));
        assert!(policy.write_goes_on(&lost, 2, Some(now)));
        assert!(!policy.write_goes_on(&lost, 2, long_ago));
        assert!(!policy.write_goes_on(&lost, policy.conflict_attempts, Some(now)));
        // A fault is bounded by its attempts, whatever the races before it.
        assert!(policy.write_goes_on(&refused(), 2, long_ago));
        assert!(!policy.write_goes_on(&refused(), policy.attempts, None));
        assert!(!policy.write_goes_on(&lance::Error::invalid_input("a bad batch"), 1, None));
    }

    #[test]
    fn a_commit_whose_outcome_could_not_be_read_back_is_a_fault_to_retry() {
        // What Lance returns when the store dies between writing a manifest and reading it
        // back: a `Wrapped` error, not `IO`. It was reported as a bad batch ("invalid"), at once.
        let e = lance::Error::commit_status_unknown_source(7, Box::new(refused()));
        assert!(!matches!(e, lance::Error::IO { .. }));
        assert!(is_transient(&e));
    }

    #[test]
    fn an_io_error_wrapped_or_external_is_a_fault() {
        let wrapped = lance::Error::wrapped(Box::new(std::io::Error::from(
            std::io::ErrorKind::ConnectionReset,
        )));
        assert!(is_transient(&wrapped));
        let external = lance::Error::External {
            source: Box::new(object_store::Error::Generic {
                store: "S3",
                source: "error sending request".into(),
            }),
        };
        assert!(is_transient(&external));
    }

    #[test]
    fn bad_input_a_missing_path_and_a_refused_secret_are_not_faults() {
        assert!(!is_transient(&lance::Error::invalid_input("a bad batch")));
        let missing = lance::Error::External {
            source: Box::new(object_store::Error::NotFound {
                path: "t/_versions/1.manifest".into(),
                source: "404".into(),
            }),
        };
        assert!(!is_transient(&missing));
        let denied = lance::Error::io_source(Box::new(object_store::Error::PermissionDenied {
            path: "t".into(),
            source: "403".into(),
        }));
        assert!(!is_transient(&denied));
    }

    #[test]
    fn a_local_path_pond_may_not_write_or_that_is_a_file_is_not_a_fault() {
        // As std::io::Error, and as the text Lance keeps of object_store's local errors.
        let denied = lance::Error::io_source(Box::new(std::io::Error::from(
            std::io::ErrorKind::PermissionDenied,
        )));
        assert!(!is_transient(&denied));
        let not_a_dir = lance::Error::External {
            source: Box::new(object_store::Error::Generic {
                store: "LocalFileSystem",
                source: "Unable to walk dir: IO error for operation on /s/afile/sessions.lance/_versions: Not a directory (os error 20)".into(),
            }),
        };
        assert!(!is_transient(&not_a_dir));
        let as_text = lance::Error::io_source("Permission denied (os error 13)".into());
        assert!(!is_transient(&as_text));
        // A refused connection stays a fault.
        assert!(is_transient(&refused()));
    }

    #[test]
    fn a_panic_inside_a_guarded_call_is_its_error() {
        use futures::StreamExt;
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let caught = rt.block_on(guarded(async {
            let v: Vec<u32> = Vec::new();
            #[allow(clippy::out_of_bounds_indexing)]
            v[3]
        }));
        let said = caught.unwrap_err();
        assert!(
            said.starts_with("Lance panicked: index out of bounds"),
            "{said}"
        );
        assert!(said.contains("retry.rs:"), "{said}");
        // An answer is passed on as it is, and the thread is guarded no more.
        assert_eq!(rt.block_on(guarded(async { 7 })), Ok(7));
        assert_eq!(GUARDED.with(|g| g.get()), 0);
        let streamed: Vec<_> = rt.block_on(
            guarded_stream(futures::stream::iter([1, 0, 2]).map(|d: u32| 6 / d)).collect(),
        );
        assert_eq!(streamed.len(), 2, "{streamed:?}");
        assert_eq!(streamed[0], Ok(6));
        assert!(streamed[1].as_ref().unwrap_err().contains("divide by zero"));
    }

    #[test]
    fn a_file_cut_short_is_damage_not_a_fault_to_retry() {
        let eof = lance::Error::io_source(Box::new(std::io::Error::from(
            std::io::ErrorKind::UnexpectedEof,
        )));
        // io_uring's reader says it in text only.
        let uring =
            lance::Error::io("Generic io_uring error: unexpected EOF: read 0 of 4096 bytes");
        // A release build reading a cut manifest (checked with one: retried 8 times, 3.8 s).
        let cut = lance::Error::io("file size is too small");
        let local = Retry::new(RetryPolicy::default(), Some(Path::new("/store")));
        for e in [&eof, &uring, &cut] {
            assert!(local.damage(e) && !local.transient(e), "{e}");
        }
        assert!(!local.damage(&refused()) && local.transient(&refused()));
        // From an object store an early end is retried: a connection cut mid-body.
        let remote = Retry::new(RetryPolicy::default(), None);
        assert!(!remote.damage(&eof) && remote.transient(&eof));
    }

    #[test]
    fn the_files_not_ending_as_lance_files_do_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let table = dir.path().join("t.lance");
        for sub in ["_versions", "data", "_indices/u"] {
            std::fs::create_dir_all(table.join(sub)).unwrap();
        }
        let whole = [b"body".as_slice(), LANCE_MAGIC].concat();
        std::fs::write(table.join("_versions/1.manifest"), &whole).unwrap();
        std::fs::write(table.join("_versions/2.manifest"), b"bod").unwrap();
        std::fs::write(table.join("data/a.lance"), &whole).unwrap();
        std::fs::write(table.join("data/b.lance"), &whole[..6]).unwrap();
        std::fs::write(table.join("_indices/u/page.lance"), &whole).unwrap();
        std::fs::write(table.join("_versions/latest_version_hint.json"), b"{}").unwrap();
        let named = damaged_files(&table);
        assert_eq!(named.len(), 2, "{named:?}");
        assert!(
            named[0].contains("_versions/2.manifest (3 bytes"),
            "{named:?}"
        );
        assert!(named[1].contains("data/b.lance (6 bytes"), "{named:?}");
        assert!(damaged_files(&dir.path().join("missing")).is_empty());
    }
}

//! lance-retry-jitter: every call into Lance runs under bounded retry with exponential backoff
//! and jitter, so transient object-store faults and lost races become latency, not errors.

use super::StoreError;
use std::future::Future;
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

    /// Runs `call` until it succeeds, fails for good, or the attempts run out.
    pub(crate) async fn run<T, F, Fut>(&self, table: &str, mut call: F) -> Result<T, StoreError>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = lance::Result<T>>,
    {
        let mut attempt = 0;
        loop {
            attempt += 1;
            match call().await {
                Ok(v) => return Ok(v),
                Err(e) if is_transient(&e) && attempt < self.attempts => self.pause(attempt).await,
                Err(e) => {
                    return Err(StoreError::Unavailable {
                        table: table.to_owned(),
                        attempts: attempt,
                        detail: e.to_string(),
                    });
                }
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
            match call().await {
                Ok(v) => return Ok(Some(v)),
                Err(e) if is_not_found(&e) => return Ok(None),
                Err(e) if is_transient(&e) && attempt < self.attempts => self.pause(attempt).await,
                Err(e) => {
                    return Err(StoreError::Unavailable {
                        table: table.to_owned(),
                        attempts: attempt,
                        detail: e.to_string(),
                    });
                }
            }
        }
    }
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
}

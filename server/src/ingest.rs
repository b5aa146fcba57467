//! `pond_ingest` (spec 7.5, 7.6): a batch of canonical events (Session, Message, Part, each tagged
//! by `kind`), grouped by session and applied per session. Each session's substream is checked by
//! the rules the read faces obey (adapter-integrity-event-ordering, the role allowlists, the model
//! validator); a session whose `source_agent` or `project` differs from the stored one is refused
//! (both are denormalized onto its messages, spec 7.6). Those checks need no store and live in
//! `pond_canonical::ingest`; this handler looks the stored sessions up and writes. The sessions that pass are written through
//! the write chokepoint, where rows already stored are left alone: a batch sent twice is a no-op.
//! Partial success across sessions is normal and reported per session.

use crate::envelope::{Pond, check_version};
use crate::error::PondError;
use pond_canonical::event::WireEvent;
use pond_canonical::{SessionLog, ingest};
pub use pond_store::sessions::Written;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicI64, Ordering};

/// The most events one request may carry.
pub const MAX_EVENTS: usize = 10_000;
/// The largest request body a transport accepts, in bytes.
pub const MAX_BODY_BYTES: usize = 64 << 20;

/// A `pond_ingest` request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct IngestRequest {
    /// The protocol version; this pond speaks 1.
    pub protocol_version: u32,
    /// The tenant namespace; omit it for the personal pond.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Canonical events, at most 10,000. Within a session: the session first (it may be left out
    /// when the session is already stored), then each message followed by its parts.
    pub events: Vec<WireEvent>,
}

/// What became of one session of the batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum IngestStatus {
    /// Its rows are stored (new ones written, ones already there left alone).
    Stored,
    /// Refused: nothing of it was written; `error` says why.
    Rejected,
}

/// One session's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct IngestResult {
    pub session_id: String,
    pub status: IngestStatus,
    /// Events of this session in the batch.
    pub events: u64,
    /// Why it was refused: a `validation_failed` error naming the rule.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<PondError>,
}

/// What `pond_ingest` answers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct IngestResponse {
    pub protocol_version: u32,
    /// One result per session, in the order each first appeared in the batch.
    pub results: Vec<IngestResult>,
    pub stored: u64,
    pub rejected: u64,
    /// Rows written and rows found already stored, over the whole batch.
    pub rows: Written,
}

/// `pond_ingest`: checks every session of the batch and stores those that pass.
pub async fn pond_ingest(pond: &Pond, request: IngestRequest) -> Result<IngestResponse, PondError> {
    check_version(request.protocol_version)?;
    let store = pond.namespace(request.namespace.as_deref()).await?;
    if request.events.len() > MAX_EVENTS {
        return Err(PondError::invalid(
            "events",
            format!(
                "{} events in one request; the most is {MAX_EVENTS}: send the rest in further requests (a session may continue in the next one)",
                request.events.len()
            ),
        ));
    }
    // Each session's substream, in batch order, with each event's position in the batch.
    let groups = ingest::by_session(request.events);
    let order: Vec<String> = groups.iter().map(|(sid, _)| sid.clone()).collect();
    let stored = store.sessions_by_id(&order).await?;
    let base = seq_base();
    let mut results = Vec::with_capacity(groups.len());
    let mut accepted: Vec<(SessionLog, Vec<i64>)> = Vec::new();
    for (sid, events) in groups {
        let count = events.len() as u64;
        match ingest::check_session(events, stored.get(&sid)) {
            Ok((log, positions)) => {
                accepted.push((log, positions.iter().map(|p| base + *p as i64).collect()));
                results.push(IngestResult {
                    session_id: sid,
                    status: IngestStatus::Stored,
                    events: count,
                    error: None,
                });
            }
            Err(refusal) => {
                let mut error = PondError::invalid("events", refusal.message)
                    .with("rule", refusal.rule.to_owned());
                if let Some(field) = refusal.field {
                    error = error.with("field", field.to_owned());
                }
                results.push(IngestResult {
                    session_id: sid,
                    status: IngestStatus::Rejected,
                    events: count,
                    error: Some(error),
                });
            }
        }
    }
    let written = if accepted.is_empty() {
        Default::default()
    } else {
        store.write_logs(&accepted).await?
    };
    let stored_n = results
        .iter()
        .filter(|r| r.status == IngestStatus::Stored)
        .count() as u64;
    Ok(IngestResponse {
        protocol_version: crate::PROTOCOL_VERSION,
        rejected: results.len() as u64 - stored_n,
        stored: stored_n,
        results,
        rows: written,
    })
}

/// The first `seq` of a batch: later batches get larger ones, so messages keep the order they
/// were sent in across batches (a restore orders a session and its sub-agents by `seq`), and
/// within a batch the event's position adds to it. Microseconds since 2020, times 2^15 (more
/// than [`MAX_EVENTS`]), strictly increasing within this process.
fn seq_base() -> i64 {
    static LAST: AtomicI64 = AtomicI64::new(0);
    const EPOCH_2020_MICROS: i64 = 1_577_836_800_000_000;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_micros() as i64)
        .unwrap_or(0)
        - EPOCH_2020_MICROS;
    let mut prev = LAST.load(Ordering::Relaxed);
    loop {
        let next = now.max(prev + 1);
        match LAST.compare_exchange(prev, next, Ordering::Relaxed, Ordering::Relaxed) {
            Ok(_) => return next << 15,
            Err(p) => prev = p,
        }
    }
}

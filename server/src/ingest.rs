//! `pond_ingest` (spec 7.5, 7.6): a batch of canonical events (Session, Message, Part, each tagged
//! by `kind`), grouped by session and applied per session. Each session's substream is checked by
//! the rules the read faces obey (adapter-integrity-event-ordering, the role allowlists, the model
//! validator); a session whose `source_agent` or `project` differs from the stored one is refused
//! (both are denormalized onto its messages, spec 7.6). The sessions that pass are written through
//! the write chokepoint, where rows already stored are left alone: a batch sent twice is a no-op.
//! Partial success across sessions is normal and reported per session.

use crate::envelope::{Pond, check_version};
use crate::error::PondError;
use pond_canonical::event::WireEvent;
use pond_canonical::{SessionLog, validate};
pub use pond_store::sessions::Written;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
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
    let mut order: Vec<String> = Vec::new();
    let mut groups: HashMap<String, Vec<(usize, WireEvent)>> = HashMap::new();
    for (i, event) in request.events.into_iter().enumerate() {
        let sid = match &event {
            WireEvent::Session(s) => s.id.to_string(),
            WireEvent::Message(m) => m.session_id.to_string(),
            WireEvent::Part(p) => p.owner().0.to_string(),
        };
        groups
            .entry(sid.clone())
            .or_insert_with(|| {
                order.push(sid);
                Vec::new()
            })
            .push((i, event));
    }
    let stored = store.sessions_by_id(&order).await?;
    let base = seq_base();
    let mut results = Vec::with_capacity(order.len());
    let mut accepted: Vec<(SessionLog, Vec<i64>)> = Vec::new();
    for sid in &order {
        let events = groups.remove(sid).unwrap_or_default();
        let count = events.len() as u64;
        let reject = |e: PondError| IngestResult {
            session_id: sid.clone(),
            status: IngestStatus::Rejected,
            events: count,
            error: Some(e),
        };
        match check_session(events, stored.get(sid), base) {
            Ok(entry) => {
                accepted.push(entry);
                results.push(IngestResult {
                    session_id: sid.clone(),
                    status: IngestStatus::Stored,
                    events: count,
                    error: None,
                });
            }
            Err(e) => results.push(reject(e)),
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

/// One session's events as a log ready to write, each message with its `seq`; or why not.
fn check_session(
    mut events: Vec<(usize, WireEvent)>,
    stored: Option<&pond_canonical::Session>,
    base: i64,
) -> Result<(SessionLog, Vec<i64>), PondError> {
    let refused = |rule: &str, message: String| {
        PondError::invalid("events", message).with("rule", rule.to_owned())
    };
    match (events.first(), stored) {
        (Some((_, WireEvent::Session(sent))), Some(stored)) => {
            // spec 7.6: source_agent and project are immutable once stored.
            for (field, was, now) in [
                (
                    "source_agent",
                    stored.source_agent.as_str(),
                    sent.source_agent.as_str(),
                ),
                ("project", stored.project.as_str(), sent.project.as_str()),
            ] {
                if was != now {
                    return Err(refused(
                        "session-immutable-fields",
                        format!(
                            "session {}: {field} is {now:?} here but {was:?} in the store; it cannot change once stored (spec 7.6)",
                            sent.id
                        ),
                    )
                    .with("field", format!("events[].{field}")));
                }
            }
        }
        (Some((_, WireEvent::Session(_))), None) => {}
        (_, Some(stored)) => {
            // A continuation: the session was stored by an earlier batch.
            events.insert(0, (usize::MAX, WireEvent::Session(stored.clone())));
        }
        (Some((i, _)), None) => {
            return Err(refused(
                "adapter-integrity-event-ordering",
                format!("event #{i}: its session is neither in this batch before it nor stored"),
            ));
        }
        (None, None) => unreachable!("a group has at least one event"),
    }
    let positions: Vec<usize> = events
        .iter()
        .filter(|(_, e)| matches!(e, WireEvent::Message(_)))
        .map(|(i, _)| *i)
        .collect();
    let mut logs = validate::assemble(events.into_iter().map(|(_, e)| e))
        .map_err(|v| refused(v.rule, v.to_string()))?;
    let log = logs
        .pop()
        .expect("one session's events assemble into one log");
    if let Some(v) = validate::check_log(&log).into_iter().next() {
        return Err(refused(v.rule, v.to_string()));
    }
    let seqs = positions.iter().map(|p| base + *p as i64).collect();
    Ok((log, seqs))
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

//! The import stage of `pond sync`: every configured source, read by its codec, written to the
//! session datasets. Reading and writing overlap: a reader thread turns canonical events into
//! row batches while the store writes the previous batch; at most two batches are in flight, so
//! memory stays bounded whatever the corpus.

use crate::sessions::rows::RowBuffer;
use crate::sessions::{SessionStore, Written};
use crate::substrate::StoreError;
use pond_canonical::{Event, Session, SessionId};
use pond_codecs::Codec;
use serde::Serialize;
use std::collections::HashMap;
use std::path::PathBuf;

/// What importing one codec's sources did.
#[derive(Debug, Default, Serialize)]
pub struct ImportSummary {
    pub codec: &'static str,
    pub sources: u64,
    pub sessions_read: u64,
    pub messages_read: u64,
    pub parts_read: u64,
    pub written: Written,
    /// Source faults, each naming codec, file and line.
    pub errors: Vec<String>,
}

/// What one write batch may hold. Every merge scans the target's keys once, so the total cost of a
/// sync grows with (corpus / batch) x store: fewer, larger batches cost less, and more so the
/// larger the store (docs/benchmarks.md: at 8M messages, batches bound at 50,000 messages took
/// 164 s, the same corpus bound by bytes 150 s). The byte bound is what holds a batch's memory
/// (a batch being built, one queued, one being written), whatever the messages carry; the counts
/// only stop a batch of very many tiny rows, whose fixed per-row cost the byte count misses.
const FLUSH_MESSAGES: usize = 200_000;
const FLUSH_PARTS: usize = 600_000;
const FLUSH_BYTES: usize = 64 << 20;

enum Chunk {
    Rows(RowBuffer),
    Progress { done: usize, total: usize },
}

/// Imports every source of one codec. `progress` hears (sources done, sources total).
pub async fn import(
    store: &SessionStore,
    codec: &'static Codec,
    paths: &[PathBuf],
    progress: &mut (dyn FnMut(usize, usize) + Send),
) -> Result<ImportSummary, StoreError> {
    import_with_project(store, codec, paths, None, progress).await
}

/// [`import`], with the project the person running pond names for sessions whose source names
/// none (`pond sync --project`; see `Origin::with_user_project`).
pub async fn import_with_project(
    store: &SessionStore,
    codec: &'static Codec,
    paths: &[PathBuf],
    user_project: Option<&str>,
    progress: &mut (dyn FnMut(usize, usize) + Send),
) -> Result<ImportSummary, StoreError> {
    let mut summary = ImportSummary {
        codec: codec.name,
        ..Default::default()
    };
    let Some(reader) = codec.read else {
        return Ok(summary);
    };
    // What the last sync read of each file, to tell a file changed other than by appending.
    let known = crate::sources::latest(store.substrate(), codec.name).await?;
    let (tx, rx) = std::sync::mpsc::sync_channel::<Chunk>(1);
    let paths = paths.to_vec();
    let user_project = user_project.map(str::to_owned);
    // A process at its thread limit gets an error naming it, not a panic (retrying may help: the
    // limit counts every thread of the user's).
    let refused = |e: std::io::Error| StoreError::Unavailable {
        table: "sessions".to_owned(),
        attempts: 1,
        detail: format!(
            "the system will not start the {} reader's thread: {e}",
            codec.name
        ),
    };
    let reading = std::thread::Builder::new().name(format!("pond-read-{}", codec.name));
    let producer = reading.spawn(move || {
        let mut tally = ImportSummary {
            codec: codec.name,
            ..Default::default()
        };
        let mut sources = Vec::new();
        for path in &paths {
            match reader.discover(path) {
                Ok(found) => sources.extend(found.into_iter().map(|o| match &user_project {
                    Some(p) => o.with_user_project(p.as_str()),
                    None => o,
                })),
                Err(e) => tally.errors.push(e.to_string()),
            }
        }
        let total = sources.len();
        let ingested_at = now_micros();
        let mut fingerprints = Vec::new();
        let mut buffer = RowBuffer::default();
        let mut sessions: HashMap<SessionId, Session> = HashMap::new();
        for (i, source) in sources.iter().enumerate() {
            if tx.send(Chunk::Progress { done: i, total }).is_err() {
                break;
            }
            tally.sources += 1;
            if let Some(found) = fingerprint(codec.name, source.path(), &known, &mut tally.errors) {
                fingerprints.push(found);
            }
            // `seq` counts the unit's messages across all its sessions, so a restore can put
            // sessions that shared a file back in their original interleaving.
            let mut seq = 0i64;
            reader.read(source, &mut |item| match item {
                Err(e) => tally.errors.push(e.to_string()),
                Ok(Event::Session(s)) => {
                    tally.sessions_read += 1;
                    buffer.push_session(&s, ingested_at);
                    sessions.insert(s.id.clone(), s);
                }
                Ok(Event::Message(m)) => {
                    tally.messages_read += 1;
                    tally.parts_read += m.part_count() as u64;
                    match sessions.get_mut(m.session_id()) {
                        Some(s) => {
                            buffer.push_message(s, seq, &m);
                            seq += 1;
                        }
                        None => tally.errors.push(format!(
                            "{}: {}: message {} arrived before its session {} (adapter-integrity-event-ordering)",
                            codec.name,
                            source.path().display(),
                            m.id(),
                            m.session_id()
                        )),
                    }
                    let (_, msgs, parts) = buffer.len();
                    if msgs >= FLUSH_MESSAGES
                        || parts >= FLUSH_PARTS
                        || buffer.payload_bytes() >= FLUSH_BYTES
                    {
                        let full = std::mem::take(&mut buffer);
                        let _ = tx.send(Chunk::Rows(full));
                    }
                }
            });
            // Sessions never span sources: forget finished ones so memory stays flat.
            sessions.clear();
        }
        if !buffer.is_empty() {
            let _ = tx.send(Chunk::Rows(buffer));
        }
        let _ = tx.send(Chunk::Progress { done: total, total });
        (tally, fingerprints, ingested_at)
    }).map_err(refused)?;
    let mut failure = None;
    loop {
        let next = tokio::task::block_in_place(|| rx.recv());
        match next {
            Err(_) => break,
            Ok(Chunk::Progress { done, total }) => progress(done, total),
            Ok(Chunk::Rows(mut rows)) => {
                if failure.is_some() {
                    continue;
                }
                match store.write(&mut rows).await {
                    Ok(w) => summary.written.merge(w),
                    Err(e) => failure = Some(e),
                }
            }
        }
    }
    let (tally, fingerprints, read_at) = producer.join().map_err(|_| StoreError::Invalid {
        table: "sessions",
        detail: format!("the {} reader panicked", codec.name),
    })?;
    if let Some(e) = failure {
        return Err(e);
    }
    // Recorded once the files' rows are: a sync that failed compares with the last records again.
    crate::sources::record(store.substrate(), codec.name, read_at, &fingerprints).await?;
    summary.sources = tally.sources;
    summary.sessions_read = tally.sessions_read;
    summary.messages_read = tally.messages_read;
    summary.parts_read = tally.parts_read;
    summary.errors = tally.errors;
    Ok(summary)
}

/// The record to add for the source file `path` of `codec`, checked against `known` (the last
/// records): a file changed other than by appending is reported in `errors` (see
/// [`crate::sources`]). `None` for a file as recorded, or one not fingerprinted.
fn fingerprint(
    codec: &str,
    path: &std::path::Path,
    known: &HashMap<String, crate::sources::Fingerprint>,
    errors: &mut Vec<String>,
) -> Option<(String, crate::sources::Fingerprint)> {
    use crate::sources::{Found, check, fingerprinted, key_of};
    if !fingerprinted(path) || !path.is_file() {
        return None;
    }
    let key = key_of(path);
    match check(path, known.get(&key)) {
        Ok(Found::Same) => None,
        Ok(Found::New(now)) => Some((key, now)),
        Ok(Found::Changed { why, now, .. }) => {
            errors.push(format!(
                "{codec}: {}: changed since pond last read it, other than by appending: {why}. \
                 The rows stored from it are kept as they were (adapter-integrity-additive-sync): \
                 what it holds now under ids already stored is not stored",
                path.display()
            ));
            Some((key, now))
        }
        // The read below reports the file (it cannot be read, or went away).
        Err(_) => None,
    }
}

fn now_micros() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_micros() as i64)
        .unwrap_or(0)
}

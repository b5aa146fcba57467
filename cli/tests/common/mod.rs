//! What the binary's end-to-end tests share: the shared fixtures, `pond serve` processes on
//! loopback and a plain HTTP client for them, canonical wire events read from the fixtures, and
//! comparisons of whole stores (rows with unique keys, every session's restore). Used by
//! `serve.rs` (local stores) and `s3.rs` (the same on an S3-compatible server, `seaweed.rs`).
#![allow(dead_code)]

pub mod seaweed;

use pond_codecs::registry;
use pond_store::sessions::SessionStore;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The response header naming a request (spec 7.2).
pub const REQUEST_ID_HEADER: &str = "x-pond-request-id";

pub fn fixtures() -> PathBuf {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/fixtures");
    assert!(p.exists(), "missing shared fixtures {}", p.display());
    p
}

pub fn open(data: &Path) -> SessionStore {
    SessionStore::open(&data.display().to_string())
}

/// A `pond serve` process on 127.0.0.1 (any free port), killed when dropped.
pub struct Server {
    pub child: Child,
    pub addr: SocketAddr,
    pub log: std::sync::mpsc::Receiver<String>,
}

impl Server {
    /// `pond serve` over the local store at `data`.
    pub fn start(data: &Path) -> Self {
        Self::start_with(|c| {
            c.arg("--data").arg(data);
        })
    }

    /// `pond serve` with the arguments and environment `configure` adds (the store).
    pub fn start_with(configure: impl FnOnce(&mut Command)) -> Self {
        let mut command = Command::new(env!("CARGO_BIN_EXE_pond"));
        command.args(["serve", "--bind", "127.0.0.1:0"]);
        configure(&mut command);
        let mut child = command
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = BufReader::new(child.stderr.take().unwrap());
        let (tx, log) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in stderr.lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let started = Instant::now();
        loop {
            let line =
                match log.recv_timeout(Duration::from_secs(60).saturating_sub(started.elapsed())) {
                    Ok(line) => line,
                    Err(_) => {
                        let _ = child.kill();
                        let _ = child.wait();
                        panic!("pond serve did not say where it listens");
                    }
                };
            if let Some(at) = line.split("listening on http://").nth(1) {
                let addr = at.trim().parse().unwrap();
                return Self { child, addr, log };
            }
        }
    }

    /// The log lines written so far.
    pub fn lines(&self) -> Vec<String> {
        self.log.try_iter().collect()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub struct Answer {
    pub status: u16,
    pub request_id: Option<String>,
    pub body: Value,
}

/// One HTTP/1.1 request on its own connection (a plain client: what any tool sends).
pub async fn call(addr: SocketAddr, method: &str, path: &str, body: Option<Vec<u8>>) -> Answer {
    let (method, path) = (method.to_owned(), path.to_owned());
    tokio::task::spawn_blocking(move || {
        let mut s = TcpStream::connect(addr).unwrap();
        let body = body.unwrap_or_default();
        let head = format!(
            "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        );
        s.write_all(head.as_bytes()).unwrap();
        // A server may answer (and close) before reading all of an over-cap body.
        let _ = s.write_all(&body);
        let mut raw = Vec::new();
        let _ = s.read_to_end(&mut raw);
        let split = raw
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .unwrap_or_else(|| panic!("no HTTP head in {:?}", String::from_utf8_lossy(&raw)));
        let head = String::from_utf8_lossy(&raw[..split]).into_owned();
        let status: u16 = head.split(' ').nth(1).unwrap().parse().unwrap();
        let request_id = head.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case(REQUEST_ID_HEADER)
                .then(|| v.trim().to_owned())
        });
        let body = serde_json::from_slice(&raw[split + 4..]).unwrap_or_else(|e| {
            panic!(
                "{method} {path}: body is not JSON ({e}): {:?}",
                String::from_utf8_lossy(&raw[split + 4..])
            )
        });
        Answer {
            status,
            request_id,
            body,
        }
    })
    .await
    .unwrap()
}

pub async fn post(addr: SocketAddr, path: &str, body: &Value) -> Answer {
    call(addr, "POST", path, Some(serde_json::to_vec(body).unwrap())).await
}

/// Asserts an answer is the error body of spec 7.4 with `code` and its status.
pub fn assert_error(a: &Answer, status: u16, code: &str) {
    assert_eq!(a.status, status, "{}", a.body);
    assert!(
        a.request_id.as_deref().is_some_and(|id| !id.is_empty()),
        "no request id"
    );
    let e = &a.body["error"];
    assert_eq!(e["code"], code, "{}", a.body);
    assert!(
        e["message"].as_str().is_some_and(|m| !m.is_empty()),
        "{}",
        a.body
    );
    assert!(e["details"].is_object(), "{}", a.body);
    assert_eq!(a.body.as_object().unwrap().len(), 1, "{}", a.body);
}

pub async fn sync(store: &SessionStore, codec: &str, rel: &str) {
    sync_path(store, codec, &fixtures().join(rel)).await
}

pub async fn sync_path(store: &SessionStore, codec: &str, path: &Path) {
    let codec = registry::find(codec).unwrap();
    pond_store::sync::import(store, codec, &[path.to_owned()], &mut |_, _| {})
        .await
        .unwrap();
}

/// Every source under `root`, read by `codec` into batches of canonical wire events, each
/// source's events in order and cut at the ingest cap (a session may continue in the next
/// batch).
pub fn event_batches(codec: &str, root: &Path) -> Vec<Vec<Value>> {
    let reader = registry::find(codec).unwrap().read.unwrap();
    let mut batches = Vec::new();
    for source in reader.discover(root).unwrap() {
        let mut events = Vec::new();
        reader.read(&source, &mut |item| {
            if let Ok(e) = item {
                events.extend(
                    e.to_wire()
                        .into_iter()
                        .map(|w| serde_json::to_value(w).unwrap()),
                );
            }
        });
        for chunk in events.chunks(pond_server::ingest::MAX_EVENTS) {
            batches.push(chunk.to_vec());
        }
    }
    batches
}

pub fn ingest_body(events: Vec<Value>) -> Value {
    json!({"protocol_version": 1, "events": events})
}

/// Every session as the store restores it: the session and its messages, in the order a
/// restore writes them.
pub async fn restores(store: &SessionStore) -> Vec<(String, Vec<String>)> {
    use pond_canonical::Event;
    let mut out = Vec::new();
    for s in store.list(None, None, None).await.unwrap() {
        let own: Vec<String> = match pond_store::restore::lineage(store, &s.id, None).await {
            Ok(events) => events
                .into_iter()
                .filter(|e| match e {
                    Event::Session(x) => x.id.as_str() == s.id,
                    Event::Message(m) => m.session_id().as_str() == s.id,
                })
                .map(|e| format!("{e:?}"))
                .collect(),
            Err(e) => panic!("{}: {e}", s.id),
        };
        out.push((s.id.clone(), own));
    }
    out.sort();
    out
}

/// How many source units hold each session id, over every source of `codecs`.
pub fn sources_per_session(codecs: &[&str]) -> std::collections::HashMap<String, usize> {
    let mut n = std::collections::HashMap::new();
    for codec in codecs {
        let reader = registry::find(codec).unwrap().read.unwrap();
        for source in reader.discover(&fixtures().join(codec)).unwrap() {
            let mut ids = std::collections::HashSet::new();
            reader.read(&source, &mut |item| {
                if let Ok(pond_canonical::Event::Session(s)) = item {
                    ids.insert(s.id.to_string());
                }
            });
            for id in ids {
                *n.entry(id).or_insert(0) += 1;
            }
        }
    }
    n
}

/// Asserts two stores restore every session the same, naming the first difference. A session
/// whose messages come from one source is compared in order. One that several sources hold (a
/// pi session whose branches are files of their own) is compared as a set of messages: `seq`
/// orders messages within a source, and sync numbers each file's from 0 while ingest numbers a
/// later batch after an earlier one, so the two interleave different files differently.
pub fn assert_same_restores(
    got: &[(String, Vec<String>)],
    want: &[(String, Vec<String>)],
    sources: &std::collections::HashMap<String, usize>,
) {
    let ids = |v: &[(String, Vec<String>)]| v.iter().map(|(id, _)| id.clone()).collect::<Vec<_>>();
    assert_eq!(ids(got), ids(want), "different sessions");
    for ((id, a), (_, b)) in got.iter().zip(want) {
        let (mut a, mut b) = (a.clone(), b.clone());
        if sources.get(id).copied().unwrap_or(1) > 1 {
            a.sort();
            b.sort();
        }
        if let Some(i) = (0..a.len().max(b.len())).find(|&i| a.get(i) != b.get(i)) {
            let cut = |e: Option<&String>| {
                e.map(|e| e[..e.floor_char_boundary(600)].to_owned())
                    .unwrap_or_else(|| "(nothing)".into())
            };
            panic!(
                "session {id} restores differently at event {i}:\n got: {}\nwant: {}",
                cut(a.get(i)),
                cut(b.get(i))
            );
        }
    }
}

pub async fn rows(store: &SessionStore) -> Vec<(&'static str, u64)> {
    let mut out = Vec::new();
    for (table, rows, unique) in store.key_check().await.unwrap() {
        assert_eq!(rows, unique, "{table}: duplicated primary keys");
        out.push((table, rows));
    }
    out
}

/// Posts a batch, sending it again while the answer is a retryable error (spec 7.4: conflict
/// and storage_unavailable may succeed when sent again), as a client should.
pub async fn post_until_done(addr: SocketAddr, body: &Value) -> Answer {
    let mut tries = 0;
    loop {
        let a = post(addr, "/v1/ingest", body).await;
        tries += 1;
        if !matches!(a.status, 409 | 503) || tries == 5 {
            return a;
        }
        println!("ingest answered {} (try {tries}); sending again", a.status);
    }
}

/// Several writers on one store at once: each server in `servers` ingests the fixtures of its
/// codecs in batches (sending again on a retryable answer), while each `syncs` process runs.
/// Returns when every writer is done; panics if any failed.
pub async fn race_writers(servers: &[(&Server, &'static [&'static str])], syncs: Vec<Command>) {
    let mut syncs = syncs;
    let running: Vec<Child> = syncs
        .iter_mut()
        .map(|c| {
            c.stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let ingest = |addr: SocketAddr, codecs: &'static [&'static str]| async move {
        for codec in codecs {
            for batch in event_batches(codec, &fixtures().join(codec)) {
                let r = post_until_done(addr, &ingest_body(batch)).await;
                assert_eq!(r.status, 200, "{codec}: {}", r.body);
            }
        }
    };
    let tasks: Vec<_> = servers
        .iter()
        .map(|(s, codecs)| tokio::spawn(ingest(s.addr, codecs)))
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    for (child, command) in running.into_iter().zip(&mut syncs) {
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        println!("a racing sync exited {:?}:\n{err}", out.status.code());
        assert!(
            out.status.code().is_some_and(|c| c <= 1),
            "a sync failed: {err}"
        );
        // A sync stopped by a store fault ("pond sync: ...", e.g. a write that lost its commit
        // race every time) wrote a prefix of its sources and said so; as a person would, the
        // test runs it again, which must complete what is missing.
        if err.contains("pond sync: ") {
            let again = command.output().unwrap();
            println!(
                "the sync stopped on a store fault; run again: {:?}\n{}",
                again.status.code(),
                String::from_utf8_lossy(&again.stderr)
            );
            assert!(again.status.code().is_some_and(|c| c <= 1));
            assert!(!String::from_utf8_lossy(&again.stderr).contains("pond sync: "));
        }
    }
}

/// Asserts `store` holds exactly what syncing every codec's fixtures one after another into a
/// fresh local store under `scratch` holds: the same rows, every key once, every session
/// restoring the same.
pub async fn assert_same_as_one_by_one(store: &SessionStore, scratch: &Path) {
    let codecs = ["claude-code", "codex", "opencode", "pi"];
    let one_by_one = open(&scratch.join("one-by-one"));
    for codec in codecs {
        sync_path(&one_by_one, codec, &fixtures().join(codec)).await;
    }
    let (got, want) = (rows(store).await, rows(&one_by_one).await);
    if got != want {
        // Say what differs before failing: whether the rows are missing or were only not seen
        // yet (counted again past the backend's staleness window), and in which session.
        tokio::time::sleep(std::time::Duration::from_secs(6)).await;
        println!(
            "rows {got:?}, a clean sync {want:?}; counted again 6 s later: {:?}",
            rows(store).await
        );
        assert_same_restores(
            &restores(store).await,
            &restores(&one_by_one).await,
            &sources_per_session(&codecs),
        );
    }
    assert_eq!(got, want);
    assert_same_restores(
        &restores(store).await,
        &restores(&one_by_one).await,
        &sources_per_session(&codecs),
    );
}

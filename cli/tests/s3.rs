//! The same `pond` against object storage: every test here runs the real binary and real Lance
//! against SeaweedFS on 127.0.0.1 (`common/seaweed.rs`; skipped, saying why, when SeaweedFS is
//! not installed). The shared fixtures synced into `s3://` equal a local sync (status, restores,
//! a native restore's file, export then import, search); two syncs and two ingesting servers on
//! one S3 namespace lose and duplicate nothing; tenants never see each other and an
//! unprovisioned namespace is `namespace_unknown`; a server killed mid-sync is a bounded
//! `storage unavailable` with nothing torn, and a re-run completes; a wrong secret names the
//! endpoint at once; a long-lived reader sees another process's commits within the object
//! store's staleness window; `pond mcp install` registers an `s3://` store without writing a
//! secret, and the harness's command serves it.
#![cfg(feature = "store")]

mod common;

use common::seaweed::{self, ACCESS_KEY, REGION, SECRET_KEY, Seaweed, text};
use common::*;
use pond_server::Pond;
use pond_store::sessions::SessionStore;
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

const CODECS: [&str; 4] = ["claude-code", "codex", "opencode", "pi"];

/// `pond` with the server's settings in its environment.
fn pond(s3: &Seaweed) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_pond"));
    s3.env(&mut c);
    c
}

/// `--source codec=<fixtures>/codec` for each of `codecs`.
fn sources(codecs: &[&str]) -> Vec<String> {
    codecs
        .iter()
        .flat_map(|c| {
            [
                "--source".to_owned(),
                format!("{c}={}", fixtures().join(c).display()),
            ]
        })
        .collect()
}

/// Runs `command`; asserts it exits 0 (or 1, "done with located faults", when `faults_ok`).
fn run(command: &mut Command, faults_ok: bool) -> Output {
    let o = command.output().unwrap();
    let fine = o
        .status
        .code()
        .is_some_and(|c| c == 0 || (faults_ok && c == 1));
    assert!(fine, "{command:?}\n{}", text(&o));
    o
}

fn json_of(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("not JSON ({e}):\n{}", text(o)))
}

/// What `pond status --json` says of a store, without what depends on its history (versions).
fn status_of(command: &mut Command) -> Value {
    let v = json_of(&run(command.args(["status", "--json"]), false));
    let rows: Vec<Value> = v["tables"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| json!([t["table"], t["rows"]]))
        .collect();
    json!({
        "rows": rows,
        "messages_per_source_agent": v["messages_per_source_agent"],
        "primary_keys": v["primary_keys"],
        "embedding": v["embedding"],
    })
}

/// The store of `namespace` under `root`, opened as a request's namespace is resolved.
async fn namespace_store(s3: &Seaweed, root: &str, namespace: Option<&str>) -> Arc<SessionStore> {
    Pond::open(s3.location(root))
        .namespace(namespace)
        .await
        .unwrap_or_else(|e| panic!("{e}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fixtures_in_s3_equal_a_local_sync() {
    let Some(s3) = Seaweed::start("fixtures_in_s3_equal_a_local_sync") else {
        return;
    };
    let scratch = tempfile::tempdir().unwrap();
    let local = scratch.path().join("local");
    let uri = s3.uri("fixtures");
    let all = sources(&CODECS);
    run(
        pond(&s3)
            .args(["sync", "--only", "import", "--data", &uri])
            .args(&all),
        true,
    );
    run(
        pond(&s3)
            .args(["sync", "--only", "import", "--data"])
            .arg(&local)
            .args(&all),
        true,
    );
    let remote_status = status_of(pond(&s3).args(["--data", &uri]));
    assert_eq!(
        remote_status,
        status_of(pond(&s3).arg("--data").arg(&local))
    );
    assert!(
        remote_status["rows"][1][1].as_u64().unwrap() > 100,
        "{remote_status}"
    );

    // Every session restores from S3 as it does from the local store (whose native restores
    // store/tests/sync_restore.rs compares with the fixture files).
    let remote = SessionStore::at(s3.location("fixtures"));
    let here = open(&local);
    assert_same_restores(
        &restores(&remote).await,
        &restores(&here).await,
        &sources_per_session(&CODECS),
    );
    // And one native restore through the binary, compared with its source file as values.
    let source = fixtures().join("codex/localpush-2026-02-23/rollout-2026-02-23T13-19-38-019c8a70-dda7-7f33-98ea-f30553347322.jsonl");
    let id = {
        let reader = pond_codecs::registry::find("codex").unwrap().read.unwrap();
        let unit = reader
            .discover(&source)
            .unwrap()
            .into_iter()
            .next()
            .unwrap();
        let mut id = None;
        reader.read(&unit, &mut |e| {
            if let Ok(pond_canonical::Event::Session(s)) = e {
                id.get_or_insert(s.id.to_string());
            }
        });
        id.unwrap()
    };
    let out = scratch.path().join("restored");
    run(
        pond(&s3)
            .args(["restore", &id, "--to", "codex", "--data", &uri, "--out"])
            .arg(&out),
        false,
    );
    let written: Vec<_> = walk(&out);
    assert_eq!(written.len(), 1, "{written:?}");
    let bytes = std::fs::read(&written[0]).unwrap();
    assert_eq!(
        pond_conformance::roundtrip::compare_file(&source, &bytes),
        None,
        "the restore from S3 differs from {}",
        source.display()
    );
    // pond get answers the same from both.
    let get = |data: &dyn Fn(&mut Command) -> &mut Command| {
        json_of(&run(
            data(pond(&s3).args(["get", &id, "--mode", "verbatim", "--json"])),
            false,
        ))
    };
    assert_eq!(
        get(&|c| c.args(["--data", &uri])),
        get(&|c| c.arg("--data").arg(&local))
    );

    // Export from S3, import into a fresh local store: the same counts.
    let archive = scratch.path().join("s3.pond");
    run(
        pond(&s3)
            .args(["export", "--data", &uri, "--out"])
            .arg(&archive),
        false,
    );
    let imported = scratch.path().join("imported");
    run(
        pond(&s3)
            .arg("import")
            .arg(&archive)
            .arg("--data")
            .arg(&imported),
        false,
    );
    assert_eq!(
        status_of(pond(&s3).arg("--data").arg(&imported)),
        remote_status
    );

    // Search answers the same, before the indexes exist and after they are built on S3.
    let queries = ["session", "parse the file", "error handling", "tool result"];
    let search = |data: &dyn Fn(&mut Command) -> &mut Command, q: &str| {
        let v = json_of(&run(
            data(pond(&s3).args(["search", "--json", "--limit", "20", q])),
            false,
        ));
        v["results"].clone()
    };
    for stage in ["before update-indexes", "after update-indexes"] {
        for q in queries {
            let there = search(&|c| c.args(["--data", &uri]), q);
            let here = search(&|c| c.arg("--data").arg(&local), q);
            assert_eq!(there, here, "{stage}: {q:?}");
            assert!(
                !there.as_array().unwrap().is_empty(),
                "{stage}: {q:?} found nothing"
            );
        }
        if stage.starts_with("before") {
            for data in [uri.clone(), local.display().to_string()] {
                run(
                    pond(&s3).args(["sync", "--only", "update-indexes", "--data", &data]),
                    false,
                );
            }
        }
    }
    let indexes = json_of(&run(
        pond(&s3).args(["status", "--json", "--data", &uri]),
        false,
    ))["indexes"]
        .clone();
    assert!(
        indexes
            .as_array()
            .unwrap()
            .iter()
            .all(|i| i["exists"] == true && i["unindexed_rows"] == 0),
        "{indexes}"
    );
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_syncs_and_two_servers_on_one_s3_namespace_lose_and_duplicate_nothing() {
    let Some(s3) = Seaweed::start("two_syncs_and_two_servers_on_one_s3_namespace") else {
        return;
    };
    let scratch = tempfile::tempdir().unwrap();
    let uri = s3.uri("hosted");
    run(
        pond(&s3).args(["namespace", "create", "team", "--data", &uri]),
        false,
    );
    // Both servers take ingest for namespace `team` (an omitted namespace selects it).
    let serve = || {
        Server::start_with(|c| {
            s3.env(c).args(["--data", &uri, "--namespace", "team"]);
        })
    };
    let (a, b) = (serve(), serve());
    // Two syncs of the same sources: they race on every key.
    let sync = || {
        let mut c = pond(&s3);
        c.args([
            "sync",
            "--only",
            "import",
            "--namespace",
            "team",
            "--data",
            &uri,
        ])
        .args(sources(&["codex"]));
        c
    };
    race_writers(
        &[(&a, &["claude-code"]), (&b, &["pi", "opencode"])],
        vec![sync(), sync()],
    )
    .await;
    let team = namespace_store(&s3, "hosted", Some("team")).await;
    assert_same_as_one_by_one(&team, scratch.path()).await;
    // Nothing reached the root's own namespace.
    let default = namespace_store(&s3, "hosted", None).await;
    assert!(rows(&default).await.iter().all(|(_, n)| *n == 0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tenants_never_see_each_other() {
    let Some(s3) = Seaweed::start("tenants_never_see_each_other") else {
        return;
    };
    let scratch = tempfile::tempdir().unwrap();
    // The settings from config.toml's [storage] this time, none from the environment.
    let config = scratch.path().join("config.toml");
    std::fs::write(
        &config,
        format!(
            "data = \"{}\"\n[storage]\nendpoint = \"{}\"\nregion = \"{REGION}\"\naccess_key_id = \"{ACCESS_KEY}\"\nsecret_access_key = \"{SECRET_KEY}\"\n",
            s3.uri("tenants"),
            s3.endpoint()
        ),
    )
    .unwrap();
    let pond = || {
        let mut c = Command::new(env!("CARGO_BIN_EXE_pond"));
        seaweed::clear_storage_env(&mut c).env("POND_CONFIG", &config);
        c
    };
    for ns in ["tenant-a", "tenant-b"] {
        let o = run(pond().args(["namespace", "create", ns]), false);
        assert!(String::from_utf8_lossy(&o.stdout).contains("created"));
    }
    let o = run(pond().args(["namespace", "create", "tenant-a"]), false);
    assert!(String::from_utf8_lossy(&o.stdout).contains("already"));
    let listed = json_of(&run(pond().args(["namespace", "list", "--json"]), false));
    let names: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["default", "tenant-a", "tenant-b"]);
    let bad = pond()
        .args(["namespace", "create", "Tenant/C"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(1), "{}", text(&bad));

    run(
        pond()
            .args(["sync", "--only", "import", "--namespace", "tenant-a"])
            .args(sources(&["codex"])),
        true,
    );
    run(
        pond()
            .args(["sync", "--only", "import", "--namespace", "tenant-b"])
            .args(sources(&["pi"])),
        true,
    );
    let listed = |ns: &str| -> BTreeSet<String> {
        let v = json_of(&run(
            pond().args(["sessions", "--json", "--namespace", ns]),
            false,
        ));
        v.as_array()
            .unwrap()
            .iter()
            .map(|s| s["id"].as_str().unwrap().to_owned())
            .collect()
    };
    let (a_ids, b_ids) = (listed("tenant-a"), listed("tenant-b"));
    assert!(!a_ids.is_empty() && !b_ids.is_empty());
    assert!(a_ids.is_disjoint(&b_ids), "sessions crossed tenants");
    assert!(
        listed("default").is_empty(),
        "the root's namespace got rows"
    );

    let server = Server::start_with(|c| {
        seaweed::clear_storage_env(c).env("POND_CONFIG", &config);
    });
    let addr = server.addr;
    let search = |ns: &'static str, q: &'static str| async move {
        let a = post(
            addr,
            "/v1/search",
            &json!({"protocol_version": 1, "namespace": ns, "query": q, "limit": 100}),
        )
        .await;
        assert_eq!(a.status, 200, "{}", a.body);
        a.body["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["session_id"].as_str().unwrap().to_owned())
            .collect::<BTreeSet<String>>()
    };
    let mut found = (0, 0);
    for q in ["the", "session", "file", "error", "test"] {
        let (in_a, in_b) = (search("tenant-a", q).await, search("tenant-b", q).await);
        assert!(in_a.is_subset(&a_ids), "{q}: tenant-a answered {in_a:?}");
        assert!(in_b.is_subset(&b_ids), "{q}: tenant-b answered {in_b:?}");
        found.0 += in_a.len();
        found.1 += in_b.len();
    }
    assert!(
        found.0 > 0 && found.1 > 0,
        "searches found nothing: {found:?}"
    );
    // get: a tenant's session is not found from the other.
    let a_id = a_ids.iter().next().unwrap().clone();
    let get = |ns: &'static str| {
        let body = json!({"protocol_version": 1, "namespace": ns, "session_id": a_id});
        async move { post(addr, "/v1/get", &body).await }
    };
    assert_eq!(get("tenant-a").await.status, 200);
    assert_error(&get("tenant-b").await, 404, "not_found");
    // stats: each tenant counts only its own.
    let stats = |ns: &str| {
        let path = format!("/v1/stats?namespace={ns}");
        async move { call(addr, "GET", &path, None).await }
    };
    let a_stats = stats("tenant-a").await.body;
    let b_stats = stats("tenant-b").await.body;
    assert_eq!(
        a_stats["messages_per_source_agent"]
            .as_object()
            .unwrap()
            .keys()
            .collect::<Vec<_>>(),
        ["codex"],
        "{a_stats}"
    );
    assert_eq!(
        b_stats["messages_per_source_agent"]
            .as_object()
            .unwrap()
            .keys()
            .collect::<Vec<_>>(),
        ["pi"],
        "{b_stats}"
    );
    // Ingest into one tenant leaves the other as it was.
    let before_a = stats("tenant-a").await.body["tables"].clone();
    for batch in event_batches("opencode", &fixtures().join("opencode")) {
        let mut body = ingest_body(batch);
        body["namespace"] = json!("tenant-b");
        let r = post_until_done(addr, &body).await;
        assert_eq!(r.status, 200, "{}", r.body);
    }
    assert_eq!(stats("tenant-a").await.body["tables"], before_a);
    assert!(
        stats("tenant-b").await.body["messages_per_source_agent"]["opencode"]
            .as_u64()
            .is_some_and(|n| n > 0)
    );

    // An unprovisioned namespace: 403 namespace_unknown on every operation, and from the CLI.
    for ns in ["tenant-c", "Tenant-A", "../tenant-a", "ns/tenant-a"] {
        for (path, body) in [
            (
                "/v1/search",
                json!({"protocol_version": 1, "namespace": ns, "query": "the"}),
            ),
            (
                "/v1/get",
                json!({"protocol_version": 1, "namespace": ns, "session_id": a_id}),
            ),
            (
                "/v1/ingest",
                json!({"protocol_version": 1, "namespace": ns, "events": []}),
            ),
        ] {
            assert_error(&post(addr, path, &body).await, 403, "namespace_unknown");
        }
        let q: String = ns.bytes().map(|b| format!("%{b:02X}")).collect();
        let a = call(addr, "GET", &format!("/v1/stats?namespace={q}"), None).await;
        assert_error(&a, 403, "namespace_unknown");
    }
    let o = pond()
        .args(["sessions", "--namespace", "tenant-c"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("not provisioned"),
        "{}",
        text(&o)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_killed_mid_sync_is_storage_unavailable_and_a_rerun_completes() {
    // Two places, one after the other (one test, so the binary's other tests share the
    // machine with one SeaweedFS killed at a time, as before). First, killed as the first
    // write commits: its three tables' merges are under way at once, and the probe sees the
    // first of them land.
    killed_mid_sync("a_server_killed_mid_sync", |t| t.iter().any(|t| t.rows > 0)).await;
    // Then killed once the first write is whole: the sync's next write meets the dead store
    // with every table open, mid-commit (CI's run of bd02b7f met it there and failed fast,
    // as a bad batch, not as storage unavailable).
    killed_mid_sync("a_server_killed_between_writes", |t| {
        t.iter().all(|t| t.rows > 0)
    })
    .await;
}

/// Starts a sync of every fixture into a fresh S3 namespace, kills the server once
/// `committed(table statuses)` holds, and checks the sync fails as storage unavailable naming
/// the endpoint, that what it committed is a part of what a clean sync stores, and that a re-run
/// after the server is back makes the store a clean sync makes.
async fn killed_mid_sync(
    name: &str,
    committed: impl Fn(&[pond_store::sessions::TableStatus]) -> bool,
) {
    let Some(mut s3) = Seaweed::start(name) else {
        return;
    };
    let scratch = tempfile::tempdir().unwrap();
    let uri = s3.uri("fault");
    let mut sync = pond(&s3);
    sync.args(["sync", "--only", "import", "--data", &uri])
        .args(sources(&CODECS));
    let mut child = sync
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = seaweed::collect_lines(child.stderr.take().unwrap());
    // Wait for the first commit (claude-code's sessions), then freeze the sync, kill the
    // server, and let the sync go on against nothing: the rest of its writes must fail.
    let started = Instant::now();
    loop {
        let probe = SessionStore::at(s3.location("fault"));
        let committed = probe
            .table_status()
            .await
            .map(|t| committed(&t))
            .unwrap_or(false);
        if committed {
            break;
        }
        assert!(
            child.try_wait().unwrap().is_none(),
            "the sync ended before its first commit was seen"
        );
        assert!(started.elapsed() < Duration::from_secs(120), "no commit");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let pid = child.id() as i32;
    // SAFETY: plain kill(2) calls on the child this test started and has not reaped.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGSTOP) }, 0);
    s3.kill();
    assert_eq!(unsafe { libc::kill(pid, libc::SIGCONT) }, 0);
    let killed_at = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if killed_at.elapsed() > Duration::from_secs(300) {
            let _ = child.kill();
            panic!("pond sync still running 300 s after its store went away");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let took = killed_at.elapsed();
    // The sources' own faults (fixtures with trimmed timestamps, say) are many and expected;
    // what matters is what pond said about the store, so only those lines are shown.
    let all = stderr.join().unwrap();
    let source_faults = all
        .iter()
        .filter(|l| {
            CODECS
                .iter()
                .any(|c| l.starts_with(&format!("error: {c}: ")))
        })
        .count();
    let lines = all
        .iter()
        .filter(|l| {
            !CODECS
                .iter()
                .any(|c| l.starts_with(&format!("error: {c}: ")))
        })
        .cloned()
        .collect::<Vec<_>>()
        .join("\n");
    println!(
        "the sync ended ({status}) {took:?} after the server was killed; \
         {source_faults} source faults, and:\n{lines}"
    );
    assert_eq!(status.code(), Some(1), "{lines}");
    assert!(lines.contains("storage unavailable"), "{lines}");
    assert!(
        lines.contains(&s3.endpoint()),
        "the error names no endpoint: {lines}"
    );

    // Back up: whatever was committed reads whole, and every row is one a clean sync stores.
    s3.restart();
    let after = SessionStore::at(s3.location("fault"));
    let partial = restores(&after).await;
    let clean = open(&scratch.path().join("clean"));
    for codec in CODECS {
        sync_path(&clean, codec, &fixtures().join(codec)).await;
    }
    let complete = restores(&clean).await;
    let stored_rows = rows(&after).await; // asserts every key is stored once
    assert!(
        stored_rows
            .iter()
            .zip(rows(&clean).await)
            .all(|((_, got), (_, all))| *got <= all),
        "{stored_rows:?}"
    );
    for (id, events) in &partial {
        let whole = &complete
            .iter()
            .find(|(c, _)| c == id)
            .unwrap_or_else(|| panic!("session {id} is not one the sources hold"))
            .1;
        for e in events {
            assert!(
                whole.contains(e),
                "session {id}: a stored event no clean sync has"
            );
        }
    }
    // A re-run finishes, and the store is what a clean sync makes.
    let mut rerun = pond(&s3);
    run(
        rerun
            .args(["sync", "--only", "import", "--data", &uri])
            .args(sources(&CODECS)),
        true,
    );
    let fresh = SessionStore::at(s3.location("fault"));
    assert_same_as_one_by_one(&fresh, scratch.path()).await;
}

#[test]
fn a_wrong_secret_is_refused_at_once_naming_the_endpoint() {
    let Some(s3) = Seaweed::start("a_wrong_secret_is_refused_at_once") else {
        return;
    };
    let uri = s3.uri("secret");
    // A store to read: one sync with the right secret.
    run(
        pond(&s3)
            .args(["sync", "--only", "import", "--data", &uri])
            .args(sources(&["pi"])),
        true,
    );
    for verb in [
        vec!["status"],
        vec!["sync", "--only", "import", "--source"],
        vec!["search", "session"],
    ] {
        let mut c = pond(&s3);
        c.args(&verb);
        if verb[0] == "sync" {
            c.arg(format!("codex={}", fixtures().join("codex").display()));
        }
        c.args(["--data", &uri])
            .env("AWS_SECRET_ACCESS_KEY", "not-the-secret");
        let started = Instant::now();
        let o = c.output().unwrap();
        let took = started.elapsed();
        let err = String::from_utf8_lossy(&o.stderr);
        println!("pond {verb:?} with a wrong secret: {took:?}: {err}");
        assert_eq!(o.status.code(), Some(1), "{}", text(&o));
        assert!(err.contains(&s3.endpoint()), "no endpoint named: {err}");
        assert!(
            err.contains("403") || err.contains("SignatureDoesNotMatch"),
            "not said to be refused: {err}"
        );
        assert!(!err.contains("not-the-secret") && !err.contains(SECRET_KEY));
        // Refused, not retried: far below the retry policy's ~5 s of pauses.
        assert!(took < Duration::from_secs(30), "{verb:?} took {took:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reader_sees_other_writers_within_the_backends_window() {
    // Local files: at once (the window is zero).
    let scratch = tempfile::tempdir().unwrap();
    let dir = scratch.path().join("local");
    let (writer, reader) = (open(&dir), open(&dir));
    sync(&writer, "pi", "pi/harness-generated").await;
    let first = reader.table_status().await.unwrap()[1].rows;
    sync(&writer, "codex", "codex/localpush-2026-02-23").await;
    let now = writer.table_status().await.unwrap()[1].rows;
    assert!(now > first);
    assert_eq!(reader.table_status().await.unwrap()[1].rows, now);

    let Some(s3) = Seaweed::start("a_reader_sees_other_writers_within_the_backends_window") else {
        return;
    };
    let location = s3.location("fresh");
    let window = location.backend().staleness_window();
    assert!(window >= Duration::from_secs(1) && window <= Duration::from_secs(10));
    let (writer, reader) = (
        SessionStore::at(location.clone()),
        SessionStore::at(location),
    );
    sync(&writer, "pi", "pi/harness-generated").await;
    let checked = Instant::now();
    let first = reader.table_status().await.unwrap()[1].rows;
    sync(&writer, "codex", "codex/localpush-2026-02-23").await;
    let now = writer.table_status().await.unwrap()[1].rows;
    assert!(now > first);
    let seen = reader.table_status().await.unwrap()[1].rows;
    if checked.elapsed() < window {
        // Within the window the reader serves its handle as it was: no manifest fetch.
        assert_eq!(seen, first, "re-read within the window");
    }
    tokio::time::sleep(window.saturating_sub(checked.elapsed()) + Duration::from_millis(100)).await;
    assert_eq!(reader.table_status().await.unwrap()[1].rows, now);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_install_registers_an_s3_store_without_writing_its_secret() {
    let Some(s3) = Seaweed::start("mcp_install_registers_an_s3_store") else {
        return;
    };
    let scratch = tempfile::tempdir().unwrap();
    let home = scratch.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let uri = s3.uri("mcp");
    run(
        pond(&s3)
            .args(["sync", "--only", "import", "--data", &uri])
            .args(sources(&["codex"])),
        true,
    );
    let install = |extra: &[&str]| {
        run(
            pond(&s3)
                .env("HOME", &home)
                .env_remove("CLAUDE_CONFIG_DIR")
                .current_dir(scratch.path())
                .args(["mcp", "install", "--for", "claude-code", "--data", &uri])
                .args(extra),
            false,
        )
    };
    install(&[]);
    let file = std::fs::read_to_string(home.join(".claude.json")).unwrap();
    assert!(
        !file.contains(SECRET_KEY),
        "the secret was written:\n{file}"
    );
    let entry: Value = serde_json::from_str::<Value>(&file).unwrap()["mcpServers"]["pond"].clone();
    assert_eq!(entry["args"], json!(["mcp", "--data", uri]));
    assert_eq!(entry["env"]["AWS_ENDPOINT_URL"], s3.endpoint());
    assert_eq!(
        entry["env"]["AWS_SECRET_ACCESS_KEY"],
        "${AWS_SECRET_ACCESS_KEY}"
    );

    // Started as Claude Code starts it: the entry's command, its environment with `${VAR}`
    // taken from the harness's own (which has the credentials), and nothing else of ours.
    let mut server = Command::new(entry["command"].as_str().unwrap());
    server
        .args(
            entry["args"]
                .as_array()
                .unwrap()
                .iter()
                .map(|a| a.as_str().unwrap()),
        )
        .env_clear()
        .env("HOME", &home)
        .env("PATH", std::env::var_os("PATH").unwrap_or_default());
    for (k, v) in entry["env"].as_object().unwrap() {
        let v = v.as_str().unwrap();
        let v = match v.strip_prefix("${").and_then(|r| r.strip_suffix('}')) {
            Some("AWS_SECRET_ACCESS_KEY") => SECRET_KEY.to_owned(),
            Some("AWS_ACCESS_KEY_ID") => ACCESS_KEY.to_owned(),
            Some(other) => panic!("an unexpected reference {other}"),
            None => v.to_owned(),
        };
        server.env(k, v);
    }
    let hits = mcp_search(&mut server, "session");
    assert!(hits > 0, "pond mcp on S3 found nothing");

    // Asked to, it writes the values.
    install(&["--write-secrets"]);
    let file = std::fs::read_to_string(home.join(".claude.json")).unwrap();
    assert!(file.contains(SECRET_KEY));
}

/// Starts `server` (a `pond mcp`), speaks MCP over its stdio as a client does (initialize, then
/// a pond_search tool call), and returns how many sessions the search found.
fn mcp_search(server: &mut Command, query: &str) -> usize {
    let mut child = server
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = seaweed::collect_lines(child.stderr.take().unwrap());
    let mut input = child.stdin.take().unwrap();
    let mut output = BufReader::new(child.stdout.take().unwrap());
    let mut send = |v: Value| {
        writeln!(input, "{v}").unwrap();
        input.flush().unwrap();
    };
    send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "pond-test", "version": "0"}}}),
    );
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    send(
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "pond_search", "arguments": {"protocol_version": 1, "query": query}}}),
    );
    let mut answer = None;
    let mut line = String::new();
    while output.read_line(&mut line).unwrap_or(0) > 0 {
        let v: Value = serde_json::from_str(line.trim()).unwrap_or(Value::Null);
        if v["id"] == 2 {
            answer = Some(v);
            break;
        }
        line.clear();
    }
    drop(send);
    let _ = child.kill();
    let _ = child.wait();
    let errors = stderr.join().unwrap().join("\n");
    let answer = answer.unwrap_or_else(|| panic!("no answer to tools/call; stderr:\n{errors}"));
    let result = &answer["result"];
    assert_ne!(result["isError"], true, "{answer}\n{errors}");
    result["structuredContent"]["results"]
        .as_array()
        .unwrap_or_else(|| panic!("{answer}"))
        .len()
}

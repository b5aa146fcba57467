//! The store under abuse: `pond sync` killed with SIGKILL at random moments and re-run ends
//! equal to a clean sync; two syncs at once both finish (or one reports the typed conflict and
//! succeeds on retry) with no row lost or duplicated.
#![cfg(feature = "store")]

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn shared(codec: &str) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/fixtures")
        .join(codec);
    assert!(p.is_dir(), "missing shared fixtures {}", p.display());
    format!("{codec}={}", p.display())
}

fn sync(data: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_pond"));
    c.args(["sync", "--only", "import", "--data"]).arg(data);
    for codec in ["claude-code", "codex", "pi", "opencode"] {
        c.arg("--source").arg(shared(codec));
    }
    c.stdout(Stdio::null()).stderr(Stdio::piped());
    c
}

/// Syncs into `data` and requires it to finish (exit 1 only reports the malformed fixtures).
fn clean_sync(data: &Path) {
    let o = sync(data).output().unwrap();
    assert!(
        o.status.code().is_some_and(|c| c <= 1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// (table, rows, unique keys?) from `pond status --json`.
fn status(data: &Path) -> Vec<(String, u64, bool)> {
    let o = Command::new(env!("CARGO_BIN_EXE_pond"))
        .args(["status", "--json", "--data"])
        .arg(data)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    v["primary_keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| {
            (
                k["table"].as_str().unwrap().to_owned(),
                k["rows"].as_u64().unwrap(),
                k["unique"].as_bool().unwrap(),
            )
        })
        .collect()
}

/// A deterministic sequence of delays in [0, max) (no RNG dependency; varied enough).
fn delays(n: usize, max: Duration) -> Vec<Duration> {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            max.mul_f64((x % 10_000) as f64 / 10_000.0)
        })
        .collect()
}

#[test]
fn sync_killed_at_random_moments_then_rerun_equals_a_clean_sync() {
    let dir = tempfile::tempdir().unwrap();
    let clean = dir.path().join("clean");
    let t = Instant::now();
    clean_sync(&clean);
    let clean_run = t.elapsed();
    let expected = status(&clean);
    assert!(
        expected
            .iter()
            .all(|(_, rows, unique)| *rows > 0 && *unique),
        "{expected:?}"
    );

    let abused = dir.path().join("abused");
    let mut killed_mid_run = 0;
    for delay in delays(20, clean_run) {
        let mut child = sync(&abused).spawn().unwrap();
        std::thread::sleep(delay);
        if child.try_wait().unwrap().is_none() {
            killed_mid_run += 1;
        }
        let _ = child.kill(); // SIGKILL
        let _ = child.wait();
        let rerun = sync(&abused).output().unwrap();
        assert!(
            rerun.status.code().is_some_and(|c| c <= 1),
            "{}",
            String::from_utf8_lossy(&rerun.stderr)
        );
        assert_eq!(status(&abused), expected, "after a kill at {delay:?}");
    }
    assert!(
        killed_mid_run >= 5,
        "only {killed_mid_run} of 20 kills landed mid-run"
    );
}

#[test]
fn two_syncs_at_once_lose_and_duplicate_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let clean = dir.path().join("clean");
    clean_sync(&clean);
    let expected = status(&clean);

    let shared_store = dir.path().join("shared");
    for _ in 0..3 {
        let a = sync(&shared_store).spawn().unwrap();
        let b = sync(&shared_store).spawn().unwrap();
        for child in [a, b] {
            let o = child.wait_with_output().unwrap();
            let err = String::from_utf8_lossy(&o.stderr);
            if o.status.code() != Some(0) && o.status.code() != Some(1)
                || err.contains("lost to concurrent writers")
            {
                // The typed conflict: a retry must succeed.
                assert!(err.contains("lost to concurrent writers"), "{err}");
                let retry = sync(&shared_store).output().unwrap();
                assert!(
                    retry.status.code().is_some_and(|c| c <= 1),
                    "{}",
                    String::from_utf8_lossy(&retry.stderr)
                );
            }
        }
        assert_eq!(status(&shared_store), expected);
    }
}

/// Cuts every file with extension `ext` under `dir` to `keep(len)` bytes; returns how many.
fn cut_short(dir: &Path, ext: &str, keep: impl Fn(u64) -> u64) -> usize {
    let mut cut = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|x| x == ext) {
            let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
            let len = f.metadata().unwrap().len();
            f.set_len(keep(len)).unwrap();
            cut += 1;
        }
    }
    cut
}

/// Runs `pond VERB... --data data` and returns (exit code, stderr).
fn pond_on(data: &Path, verb: &[&str]) -> (Option<i32>, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_pond"))
        .args(verb)
        .arg("--data")
        .arg(data)
        .env_remove("RUST_BACKTRACE")
        .output()
        .unwrap();
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn a_damaged_file_is_reported_by_name_never_a_panic_or_a_retry() {
    let dir = tempfile::tempdir().unwrap();
    let clean = dir.path().join("clean");
    clean_sync(&clean);
    let copy = |name: &str| {
        let to = dir.path().join(name);
        let status = Command::new("cp")
            .arg("-a")
            .arg(&clean)
            .arg(&to)
            .status()
            .unwrap();
        assert!(status.success());
        to
    };

    // Every manifest of the sessions table cut to 100 bytes: Lance 14.0.2 panicked reading the
    // latest (an overflow in Dataset::load_manifest), and pond ended with a backtrace.
    let manifests = copy("manifests");
    assert!(
        cut_short(
            &manifests.join("sessions.lance/_versions"),
            "manifest",
            |_| 100
        ) > 0
    );
    let pi = shared("pi");
    for verb in [
        &["status"][..],
        &["sessions"],
        &["search", "hello"],
        &["sync", "--only", "import", "--source", &pi],
    ] {
        let (code, err) = pond_on(&manifests, verb);
        assert_eq!(code, Some(1), "{verb:?}: {err}");
        assert!(
            err.contains("the sessions table is damaged"),
            "{verb:?}: {err}"
        );
        assert!(
            err.contains("sessions.lance/_versions/"),
            "{verb:?} names no manifest: {err}"
        );
        assert!(
            !err.contains("panicked at") && !err.contains("RUST_BACKTRACE"),
            "{verb:?}: {err}"
        );
    }

    // Every data file of the messages table cut to half: retried eight times (3 s), then
    // reported as the storage being unavailable, naming no file.
    let data = copy("data");
    assert!(cut_short(&data.join("messages.lance/data"), "lance", |len| len / 2) > 0);
    for verb in [&["sessions"][..], &["search", "hello"]] {
        let (code, err) = pond_on(&data, verb);
        assert_eq!(code, Some(1), "{verb:?}: {err}");
        assert!(
            err.contains("the messages table is damaged"),
            "{verb:?}: {err}"
        );
        assert!(
            err.contains("messages.lance/data/"),
            "{verb:?} names no file: {err}"
        );
        assert!(!err.contains("attempts"), "{verb:?} was retried: {err}");
    }
}

/// A Codex rollout rewritten (cut and changed where it was cut) reuses its line ids `L<n>` for
/// other content: the sync used to call those rows "present" and say nothing. It now names the
/// file once, keeps the stored rows, and an appended file is still only new rows.
#[test]
fn a_source_file_changed_other_than_by_appending_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/fixtures/codex/generated-codex-0.169.0/exec-image-toolcall-resume-compaction.jsonl");
    let text = std::fs::read_to_string(&fixture).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines.len() > 6, "{}", fixture.display());
    let sources = dir.path().join("sessions");
    std::fs::create_dir(&sources).unwrap();
    let rollout =
        sources.join("rollout-2026-01-01T00-00-00-019c8a4c-ed82-79a1-aa28-7738fc5ab61a.jsonl");
    let store = dir.path().join("store");
    let sync = || {
        let o = Command::new(env!("CARGO_BIN_EXE_pond"))
            .args(["sync", "--only", "import", "--data"])
            .arg(&store)
            .arg("--source")
            .arg(format!("codex={}", sources.display()))
            .output()
            .unwrap();
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    let half = lines.len() / 2;
    std::fs::write(&rollout, lines[..half].join("\n") + "\n").unwrap();
    let (code, err) = sync();
    assert_eq!(code, Some(0), "{err}");
    // Appended: new rows only, nothing said.
    std::fs::write(&rollout, lines.join("\n") + "\n").unwrap();
    let (code, err) = sync();
    assert_eq!(code, Some(0), "{err}");
    assert!(!err.contains("changed since"), "{err}");
    let before = status(&store);
    // Unchanged: nothing said.
    let (code, err) = sync();
    assert_eq!(
        (code, err.contains("changed since")),
        (Some(0), false),
        "{err}"
    );
    // Cut, with its last line's text changed: named, stored rows kept.
    let mut cut: Vec<String> = lines[..half].iter().map(|l| l.to_string()).collect();
    let last = cut.pop().unwrap();
    let changed = last.replacen("\"timestamp\":\"2026", "\"timestamp\":\"2025", 1);
    assert_ne!(changed, last);
    cut.push(changed);
    std::fs::write(&rollout, cut.join("\n") + "\n").unwrap();
    let (code, err) = sync();
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("changed since pond last read it") && err.contains("shorter"),
        "{err}"
    );
    assert!(err.contains(&rollout.display().to_string()), "{err}");
    assert_eq!(status(&store), before, "stored rows were changed");
    // Said once: the next sync compares with what it read this time.
    let (code, err) = sync();
    assert_eq!(
        (code, err.contains("changed since")),
        (Some(0), false),
        "{err}"
    );
}

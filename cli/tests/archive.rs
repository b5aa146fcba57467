//! `pond export`, `pond import` and `pond sync --import-from` end to end through the binary, and
//! `pond restore --install` of a stored session into the harnesses' own homes.
#![cfg(feature = "store")]

mod real_harness;

use std::path::Path;
use std::process::{Command, Output};

fn pond(args: &[&str], data: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pond"))
        .args(args)
        .arg("--data")
        .arg(data)
        .output()
        .unwrap()
}

fn ok(o: &Output) -> serde_json::Value {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap_or(serde_json::Value::Null)
}

/// (table, rows) from `pond status --json`.
fn counts(data: &Path) -> Vec<(String, u64)> {
    let v = ok(&pond(&["status", "--json"], data));
    v["tables"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["table"].as_str().unwrap().to_owned(),
                t["rows"].as_u64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn export_import_and_sync_import_from() {
    let scratch = tempfile::tempdir().unwrap();
    let a = scratch.path().join("a");
    let fixtures =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/fixtures/codex/ai-sessions");
    let source = format!("codex={}", fixtures.display());
    let o = pond(&["sync", "--only", "import", "--source", &source], &a);
    assert!(
        o.status.code().is_some_and(|c| c <= 1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let want = counts(&a);
    assert!(want.iter().all(|(_, n)| *n > 0), "{want:?}");

    let archive = scratch.path().join("x.pond");
    let archive_arg = archive.display().to_string();
    let v = ok(&pond(&["export", "--json", "--out", &archive_arg], &a));
    assert_eq!(v["tables"]["messages"].as_u64(), Some(want[1].1));
    // `--out -` is no file name: refused, nothing written as `-`.
    let dash = Command::new(env!("CARGO_BIN_EXE_pond"))
        .args(["export", "--out", "-", "--data"])
        .arg(&a)
        .current_dir(scratch.path())
        .output()
        .unwrap();
    assert!(!dash.status.success(), "{dash:?}");
    assert!(String::from_utf8_lossy(&dash.stderr).contains("--out -"));
    assert!(!scratch.path().join("-").exists());
    // Never overwritten.
    let again = pond(&["export", "--out", &archive_arg], &a);
    assert_eq!(again.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&again.stderr).contains("exists"));

    let b = scratch.path().join("b");
    let v = ok(&pond(&["import", "--json", &archive_arg], &b));
    assert_eq!(v["tables"][1]["inserted"].as_u64(), Some(want[1].1));
    assert_eq!(counts(&b), want);
    let v = ok(&pond(&["import", "--json", &archive_arg], &b));
    assert!(
        v["tables"]
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t["inserted"] == 0)
    );

    let c = scratch.path().join("c");
    let v = ok(&pond(
        &[
            "sync",
            "--json",
            "--skip",
            "update-indexes",
            "--import-from",
            &archive_arg,
        ],
        &c,
    ));
    assert_eq!(
        v["archive"]["tables"][0]["inserted"].as_u64(),
        Some(want[0].1)
    );
    assert_eq!(counts(&c), want);

    // A damaged archive is refused, naming the problem, and writes nothing.
    let bytes = std::fs::read(&archive).unwrap();
    let half = scratch.path().join("half.pond");
    std::fs::write(&half, &bytes[..bytes.len() / 2]).unwrap();
    let d = scratch.path().join("d");
    let o = pond(&["import", &half.display().to_string()], &d);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("truncated"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(!d.exists());
}

/// A store holding the Claude Code session `5c0375b4-...` (three sidechain sub-agents) and its
/// folder's other sessions.
fn claude_store(scratch: &Path) -> std::path::PathBuf {
    let data = scratch.join("store");
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/fixtures/claude-code/claude-code-viewer");
    let source = format!("claude-code={}", fixtures.display());
    let o = pond(&["sync", "--only", "import", "--source", &source], &data);
    assert!(
        o.status.code().is_some_and(|c| c <= 1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    data
}

const WITH_SUBAGENTS: &str = "5c0375b4-57a5-4f26-b12d-d022ee4e51b7";

#[test]
fn a_second_restore_into_a_harness_is_done_or_says_it_wrote_nothing() {
    let scratch = tempfile::tempdir().unwrap();
    let data = claude_store(scratch.path());
    let config = scratch.path().join("claude");
    let restore = |json: bool| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_pond"));
        if json {
            c.arg("--json");
        }
        c.args([
            "restore",
            WITH_SUBAGENTS,
            "--to",
            "claude-code",
            "--install",
            "--data",
        ])
        .arg(&data)
        .env("CLAUDE_CONFIG_DIR", &config)
        .output()
        .unwrap()
    };
    let first = restore(false);
    assert!(first.status.success(), "{first:?}");
    let stdout = String::from_utf8_lossy(&first.stdout);
    // The session and its three sub-agents share one resume command, said once.
    assert_eq!(
        stdout
            .lines()
            .filter(|l| l.contains("claude --resume"))
            .count(),
        1,
        "{stdout}"
    );

    // Restored again unchanged: the files are there as this restore writes them, so it is done,
    // the files left as they were, the one resume command said again.
    // <config>/projects/<the project's folder>/<id>.jsonl
    let main_file = std::fs::read_dir(config.join("projects"))
        .unwrap()
        .map(|e| e.unwrap().path().join(format!("{WITH_SUBAGENTS}.jsonl")))
        .find(|f| f.is_file())
        .expect("the session's file");
    let bytes = std::fs::read(&main_file).unwrap();
    let same = restore(false);
    assert!(same.status.success(), "{same:?}");
    let (out, err) = (
        String::from_utf8_lossy(&same.stdout),
        String::from_utf8_lossy(&same.stderr),
    );
    assert_eq!(
        out.lines()
            .filter(|l| l.contains("claude --resume"))
            .count(),
        1,
        "{out}"
    );
    // One line per file (a sidechain sub-agent shares its parent's file).
    let files = std::fs::read_dir(main_file.parent().unwrap())
        .unwrap()
        .count();
    assert_eq!(err.matches("unchanged: ").count(), files, "{err}");
    assert_eq!(std::fs::read(&main_file).unwrap(), bytes);

    // Resumed in Claude Code (its file grew): nothing is overwritten, and nothing is claimed,
    // the sub-agents' files that did not change included: no resume command, no "restored".
    let mut resumed = bytes.clone();
    resumed.extend_from_slice(b"{\"type\":\"summary\",\"summary\":\"resumed\"}\n");
    std::fs::write(&main_file, &resumed).unwrap();
    let again = restore(false);
    assert_eq!(again.status.code(), Some(1), "{again:?}");
    assert_eq!(std::fs::read(&main_file).unwrap(), resumed);
    let (out, err) = (
        String::from_utf8_lossy(&again.stdout),
        String::from_utf8_lossy(&again.stderr),
    );
    assert!(!out.contains("claude --resume"), "{out}");
    assert!(err.contains("pond does not overwrite"), "{err}");
    assert!(!err.contains("restored"), "{err}");
    assert!(err.contains("0 of 4 sessions written"), "{err}");
    let v: serde_json::Value = serde_json::from_slice(&restore(true).stdout).unwrap();
    assert_eq!(v["written"], serde_json::json!([]), "{v}");
    assert!(!v["write_errors"].as_array().unwrap().is_empty(), "{v}");

    // `sessions --agent` takes a harness as `search --agent` does (`claude` too), and the old
    // `--source-agent`; another name is refused with the known ones.
    let all = ok(&pond(&["sessions", "--json"], &data));
    for flags in [
        ["--agent", "claude"],
        ["--agent", "claude-code"],
        ["--source-agent", "claude-code"],
    ] {
        let args = ["sessions", "--json", flags[0], flags[1]];
        assert_eq!(ok(&pond(&args, &data)), all, "{flags:?}");
    }
    assert_eq!(
        ok(&pond(&["sessions", "--json", "--agent", "pi"], &data)),
        serde_json::json!([])
    );
    let o = pond(&["sessions", "--agent", "cursor"], &data);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("known: claude-code, codex, opencode, pi"),
        "{o:?}"
    );

    // One of its sub-agents restored alone, elsewhere: no resume command naming a parent that
    // was not written, but what to restore instead.
    let sessions = ok(&pond(&["sessions", "--json"], &data));
    // `pond sessions --json` is an array of sessions.
    let rows = sessions.as_array().unwrap().clone();
    let sub = rows
        .iter()
        .find(|s| s["parent_session_id"] == WITH_SUBAGENTS)
        .and_then(|s| s["id"].as_str())
        .expect("a sub-agent of the session")
        .to_owned();
    let alone = Command::new(env!("CARGO_BIN_EXE_pond"))
        .args([
            "restore",
            &sub,
            "--to",
            "claude-code",
            "--install",
            "--data",
        ])
        .arg(&data)
        .env("CLAUDE_CONFIG_DIR", scratch.path().join("elsewhere"))
        .output()
        .unwrap();
    assert!(alone.status.success(), "{alone:?}");
    assert!(
        !String::from_utf8_lossy(&alone.stdout).contains("--resume"),
        "{alone:?}"
    );
    assert!(
        String::from_utf8_lossy(&alone.stderr).contains("is a sub-agent of"),
        "{alone:?}"
    );
}

/// `restore --to opencode --install` hands the session to the real opencode (its pinned CLI from
/// ../shared/oracle, run in a loopback-only network namespace), which then holds it, and can do
/// it again: the document pond staged for `opencode import` is removed once imported.
#[test]
fn restore_to_opencode_imports_into_the_real_opencode() {
    let Some(opencode) = real_harness::cli_or_skip("opencode") else {
        return;
    };
    let scratch = tempfile::tempdir().unwrap();
    let data = claude_store(scratch.path());
    let xdg = scratch.path().join("xdg");
    // The real binary, offline: pond runs `$OPENCODE_BIN import FILE`.
    let wrapper = scratch.path().join("opencode");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\nexec unshare -rn {} \"$@\"\n",
            opencode.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(
        &wrapper,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let with_env = |c: &mut Command| {
        c.env("HOME", scratch.path())
            .env("XDG_DATA_HOME", xdg.join("data"))
            .env("XDG_CONFIG_HOME", xdg.join("config"))
            .env("XDG_CACHE_HOME", xdg.join("cache"))
            .env("XDG_STATE_HOME", xdg.join("state"))
            .env("OPENCODE_BIN", &wrapper)
            .env("OPENCODE_DISABLE_AUTOUPDATE", "1")
            .env("OPENCODE_DISABLE_MODELS_FETCH", "1")
            .env("OPENCODE_DISABLE_SHARE", "1")
            .env("OPENCODE_DISABLE_DEFAULT_PLUGINS", "1")
            .env_remove("POND_DATA");
    };
    let restore = || {
        let mut c = Command::new(env!("CARGO_BIN_EXE_pond"));
        c.args([
            "restore",
            WITH_SUBAGENTS,
            "--to",
            "opencode",
            "--install",
            "--data",
        ])
        .arg(&data);
        with_env(&mut c);
        c.output().unwrap()
    };
    let o = restore();
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(o.status.success(), "{text}");
    assert!(text.contains("imported: "), "{text}");
    let resume = String::from_utf8_lossy(&o.stdout)
        .lines()
        .find(|l| l.contains("--session "))
        .unwrap_or_else(|| panic!("no resume command: {text}"))
        .to_owned();
    let id = resume.rsplit(' ').next().unwrap().to_owned();
    let staged = xdg.join("data/pond/opencode-import");
    let left: Vec<_> = std::fs::read_dir(&staged)
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "staged documents left behind: {left:?}");

    // opencode itself now holds the session, with its messages.
    let mut export = Command::new(&wrapper);
    export.args(["export", &id]).current_dir(scratch.path());
    with_env(&mut export);
    let e = export.output().unwrap();
    let stdout = String::from_utf8_lossy(&e.stdout);
    let json = &stdout[stdout.find('{').unwrap_or_else(|| {
        panic!(
            "opencode export {id} printed no document: {stdout}\n{}",
            String::from_utf8_lossy(&e.stderr)
        )
    })..];
    let doc: serde_json::Value = serde_json::from_str(json).unwrap();
    assert_eq!(doc["info"]["id"], id.as_str(), "{doc}");
    assert!(
        doc["messages"].as_array().is_some_and(|m| !m.is_empty()),
        "{doc}"
    );

    // A second restore is handed over again; nothing of pond's own blocks it.
    let again = restore();
    assert!(again.status.success(), "{again:?}");
}

/// With no sources configured, `pond sync` reads each harness where that harness keeps its
/// sessions, by the harness's own variables: pi's `PI_CODING_AGENT_SESSION_DIR` (pi 0.73) too.
#[test]
fn sync_finds_pi_sessions_where_pi_session_dir_puts_them() {
    let scratch = tempfile::tempdir().unwrap();
    let sessions = scratch.path().join("pi-sessions");
    std::fs::create_dir(&sessions).unwrap();
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../shared/fixtures/pi/harness-generated/v3-branching-input.jsonl"),
        sessions.join("2026-01-01T00-00-00-000Z_v3.jsonl"),
    )
    .unwrap();
    let empty = scratch.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_pond"))
        .args(["--json", "sync", "--only", "import", "--data"])
        .arg(scratch.path().join("store"))
        .env("HOME", &empty)
        .env("POND_CONFIG", empty.join("none.toml"))
        .env("XDG_DATA_HOME", &empty)
        .env("CLAUDE_CONFIG_DIR", &empty)
        .env("CODEX_HOME", &empty)
        .env("PI_CODING_AGENT_DIR", &empty)
        .env("PI_CODING_AGENT_SESSION_DIR", &sessions)
        .output()
        .unwrap();
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(o.status.success(), "{text}");
    let sessions = pond(&["sessions", "--json"], &scratch.path().join("store"));
    let listed = ok(&sessions);
    // `pond sessions --json` is an array of sessions.
    let rows = listed.as_array().cloned();
    assert!(
        rows.is_some_and(|r| !r.is_empty() && r.iter().all(|s| s["source_agent"] == "pi")),
        "{listed}\n{text}"
    );
}

/// A reading verb pointed at a local store that is not there (a typo in `--data`) says so,
/// rather than looking like an empty store; it creates nothing.
#[test]
fn reading_verbs_say_when_no_store_is_there() {
    let scratch = tempfile::tempdir().unwrap();
    let typo = scratch.path().join("no-such-store");
    for verb in [&["sessions"][..], &["status"], &["search", "anything"]] {
        let o = pond(verb, &typo);
        assert!(o.status.success(), "{verb:?}: {o:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains("no store at") && err.contains("no-such-store"),
            "{verb:?}: {err}"
        );
    }
    assert!(!typo.exists(), "a reading verb made the store");
    // Once synced, the store is there and nothing is said.
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/fixtures/claude-code/claude-code-viewer");
    let source = format!("claude-code={}", fixtures.display());
    let o = pond(&["sync", "--only", "import", "--source", &source], &typo);
    assert!(o.status.code().is_some_and(|c| c <= 1), "{o:?}");
    let o = pond(&["sessions"], &typo);
    assert!(
        !String::from_utf8_lossy(&o.stderr).contains("no store at"),
        "{o:?}"
    );
}

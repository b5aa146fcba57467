//! What a first week of real users trips on: a closed pipe (`pond sessions | head -1`) ends pond
//! quietly for every verb; `--data` is global; no control character of untrusted input (a
//! garbage `.pond` archive, a garbage session file, a file name) reaches an error message
//! unescaped.

use std::ffi::OsString;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn pond() -> Command {
    Command::new(env!("CARGO_BIN_EXE_pond"))
}

fn fixture(relative: &str) -> PathBuf {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/fixtures")
        .join(relative);
    assert!(p.exists(), "missing shared fixture {}", p.display());
    p
}

/// Runs `pond ARGS | head -1`: reads at most one line of its output, closes the pipe, and waits.
/// With `at_once`, the pipe is closed before pond writes anything, so its first write meets it
/// closed whatever the timing. Fails on a panic (exit 101, or "panicked" on stderr); a verb
/// killed by SIGPIPE, as any Unix tool is, passes.
fn into_head(args: &[OsString], at_once: bool, scratch: &Path) {
    let err_path = scratch.join(format!("stderr-{}", args.len()));
    let err = std::fs::File::create(&err_path).unwrap();
    let mut child = pond()
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(err)
        .spawn()
        .unwrap();
    let out = child.stdout.take().unwrap();
    if !at_once {
        let mut first = String::new();
        let _ = BufReader::new(out).read_line(&mut first);
    } else {
        drop(out);
    }
    let status = child.wait().unwrap();
    let stderr = std::fs::read_to_string(&err_path).unwrap();
    assert!(
        status.code() != Some(101) && !stderr.contains("panicked"),
        "pond {args:?} | head -1: {status}\n{stderr}"
    );
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(signal) = status.signal() {
            assert_eq!(
                signal, 13,
                "pond {args:?}: killed by signal {signal}, not SIGPIPE"
            );
        }
    }
}

fn args(list: &[&str]) -> Vec<OsString> {
    list.iter().map(OsString::from).collect()
}

#[test]
fn every_verb_piped_into_head_ends_quietly() {
    let scratch = tempfile::tempdir().unwrap();
    let rollout = fixture("codex/ai-sessions/codex-pomodor-timer.jsonl");
    let mut verbs: Vec<Vec<OsString>> = vec![
        args(&["--help"]),
        args(&["codecs"]),
        args(&["codecs", "--json"]),
        args(&["schema"]),
        args(&["schema", "event"]),
        args(&["completions", "bash"]),
        args(&["conformance", "--fixtures"]),
    ];
    verbs[6].push(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../fixtures")
            .into(),
    );
    let mut convert = args(&["convert", "codex:claude"]);
    convert.push(rollout.clone().into());
    verbs.push(convert);
    #[cfg(feature = "store")]
    {
        let data = scratch.path().join("store");
        let mut sync = args(&["sync", "--json", "--only", "import", "--source"]);
        sync.push(format!("codex={}", rollout.display()).into());
        sync.extend(["--data".into(), data.clone().into()]);
        let o = pond().args(&sync).output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let o = pond()
            .args(["sessions", "--json", "--data"])
            .arg(&data)
            .output()
            .unwrap();
        let listed: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let id = listed
            .as_array()
            .and_then(|a| a.first())
            .and_then(|s| s["id"].as_str())
            .unwrap_or_else(|| panic!("no session listed: {listed}"))
            .to_owned();
        let with_data = |list: &[&str]| {
            let mut a = args(list);
            a.extend(["--data".into(), data.clone().into()]);
            a
        };
        verbs.push(sync);
        verbs.push(with_data(&["sessions"]));
        verbs.push(with_data(&["sessions", "--json"]));
        verbs.push(with_data(&["status"]));
        verbs.push(with_data(&["status", "--json"]));
        verbs.push(with_data(&["get", &id]));
        verbs.push(with_data(&["get", &id, "--json"]));
        let archive = scratch.path().join("a.pond");
        let mut export = with_data(&["export", "--json", "--out"]);
        export.push(archive.clone().into());
        verbs.push(export);
        let mut restore = with_data(&["restore", &id, "--to", "claude-code", "--json", "--out"]);
        restore.push(scratch.path().join("restored").into());
        verbs.push(restore);
    }
    for verb in &verbs {
        into_head(verb, true, scratch.path());
        into_head(verb, false, scratch.path());
    }
}

#[cfg(feature = "store")]
#[test]
fn data_is_accepted_before_and_after_the_verb() {
    let scratch = tempfile::tempdir().unwrap();
    let data = scratch.path().join("store");
    let rollout = fixture("codex/ai-sessions/codex-pomodor-timer.jsonl");
    let o = pond()
        .arg("--data")
        .arg(&data)
        .args(["sync", "--only", "import", "--source"])
        .arg(format!("codex={}", rollout.display()))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let count = |before: bool| {
        let mut c = pond();
        if before {
            c.arg("--data").arg(&data).args(["sessions", "--json"]);
        } else {
            c.args(["sessions", "--json", "--data"]).arg(&data);
        }
        let o = c.output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        v.as_array().map(Vec::len).unwrap_or(0)
    };
    assert_eq!(count(true), 1);
    assert_eq!(count(false), 1);
}

/// Whether `bytes` hold a control character other than a line break, or a C1 control, or an
/// ESC-introduced sequence: what could drive a terminal.
fn control_chars(bytes: &[u8]) -> Vec<char> {
    String::from_utf8_lossy(bytes)
        .chars()
        .filter(|c| c.is_control() && *c != '\n')
        .collect()
}

#[cfg(feature = "store")]
/// A tar header block whose name and checksum fields are escape sequences, then garbage: what
/// the archive reader's error quotes.
fn garbage_archive() -> Vec<u8> {
    let mut block = vec![0u8; 512];
    let name = b"\x1b]0;pwned\x07\x1b[2J\x1b[31mmanifest.json";
    block[..name.len()].copy_from_slice(name);
    block[100..108].copy_from_slice(b"\x1b[31m\x07\x9b\x00");
    block[124..136].copy_from_slice(b"\x1b[5m\x07zzzzzzz");
    block[148..156].copy_from_slice(b"\x1b[2J\x07\x08\x7f!");
    block.extend_from_slice(b"\x1b[31mnot an archive\x07\r\x1b[K\x00\x9b2J");
    block.resize(2048, 0x1b);
    block
}

#[cfg(feature = "store")]
#[test]
fn a_garbage_archive_error_escapes_every_control_character() {
    let scratch = tempfile::tempdir().unwrap();
    let archive = scratch.path().join("garbage.pond");
    std::fs::write(&archive, garbage_archive()).unwrap();
    for verb in [&["import"][..], &["import", "--json"]] {
        let o = pond()
            .args(verb)
            .arg(&archive)
            .arg("--data")
            .arg(scratch.path().join("store"))
            .output()
            .unwrap();
        assert!(!o.status.success());
        assert!(!o.stderr.is_empty(), "no error at all");
        assert_eq!(
            control_chars(&o.stderr),
            Vec::<char>::new(),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert_eq!(control_chars(&o.stdout), Vec::<char>::new());
        // The escapes are shown, not dropped: a user can see what the file held.
        assert!(
            String::from_utf8_lossy(&o.stderr).contains("\\x1b"),
            "{o:?}"
        );
    }
}

#[test]
fn a_garbage_session_file_error_escapes_every_control_character() {
    let scratch = tempfile::tempdir().unwrap();
    // The file's name is input too.
    let dir = scratch.path().join("in");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("evil-\x1b[31m-\x07.jsonl");
    std::fs::write(
        &file,
        b"{\"type\":\"user\",\"x\":\"\x1b[31m red\"}\n\x1b[2J\x1b[H garbage \x07\x08\x9b\n{\"a\":\x01}\n{\"timestamp\":\"\x1b]0;t\x07\"}\n",
    )
    .unwrap();
    for from in ["claude-code", "codex", "pi"] {
        for json in [false, true] {
            let mut c = pond();
            c.args(["convert", "--from", from, "--to", "opencode"])
                .arg(&file)
                .arg("--out")
                .arg(scratch.path().join(format!("out-{from}-{json}")));
            if json {
                c.arg("--json");
            }
            let o = c.output().unwrap();
            // With --json and --out, the summary and its errors go to stdout.
            let shown = if json { &o.stdout } else { &o.stderr };
            let text = String::from_utf8_lossy(shown);
            assert!(text.contains("error"), "{from}: no error at all: {text}");
            // The file name's escape is shown, not dropped.
            assert!(text.contains("x1b[31m"), "{from}: {text}");
            assert_eq!(
                control_chars(&o.stderr),
                Vec::<char>::new(),
                "{from}: {}",
                String::from_utf8_lossy(&o.stderr)
            );
            assert_eq!(control_chars(&o.stdout), Vec::<char>::new(), "{from}");
        }
    }
}

/// A listing quotes what sources say (ids, projects): a project holding an escape sequence is
/// listed with it escaped, and the columns still line up.
#[cfg(feature = "store")]
#[test]
fn a_session_listing_escapes_what_its_sources_say() {
    let scratch = tempfile::tempdir().unwrap();
    let dir = scratch.path().join("in");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("rollout-2026-01-01T00-00-00-019c8a4c-ed82-79a1-aa28-7738fc5ab61a.jsonl"),
        concat!(
            r#"{"timestamp":"2026-01-01T00:00:00Z","type":"session_meta","payload":{"id":"019c8a4c-ed82-79a1-aa28-7738fc5ab61a","timestamp":"2026-01-01T00:00:00Z","cwd":"/w/\u001b]0;pwned\u0007\u001b[31mred"}}"#,
            "\n",
            r#"{"timestamp":"2026-01-01T00:00:01Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}}"#,
            "\n"
        ),
    )
    .unwrap();
    let data = scratch.path().join("store");
    let o = pond()
        .args(["sync", "--only", "import", "--data"])
        .arg(&data)
        .arg("--source")
        .arg(format!("codex={}", dir.display()))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = pond()
        .args(["sessions", "--data"])
        .arg(&data)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let listing = String::from_utf8_lossy(&o.stdout);
    assert_eq!(control_chars(&o.stdout), Vec::<char>::new(), "{listing}");
    assert!(listing.contains("\\x1b[31mred"), "{listing}");
    let lines: Vec<&str> = listing.lines().collect();
    assert_eq!(lines.len(), 2, "{listing}");
    assert_eq!(lines[0].find("PROJECT"), lines[1].find("/w/"), "{listing}");
}

//! `pond convert` across harnesses, as a user runs it: the pair written as people say it, stdin,
//! `--install` into a harness home (never overwriting, printing the resume command), the loss
//! report, and `--strict`.

mod limited;
mod real_harness;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn pond() -> Command {
    Command::new(env!("CARGO_BIN_EXE_pond"))
}

fn codex_fixture() -> PathBuf {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/fixtures/codex/generated-codex-0.169.0/exec-image-toolcall-resume-compaction.jsonl");
    assert!(p.is_file(), "missing shared fixture {}", p.display());
    p
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn pair_syntax_and_stdin_write_a_claude_transcript_to_stdout() {
    for pair in ["codex→claude", "codex->claude", "codex:claude-code"] {
        let o = pond()
            .args(["convert", pair])
            .arg(codex_fixture())
            .output()
            .unwrap();
        assert!(o.status.success(), "{pair}: {}", text(&o));
        let first: serde_json::Value =
            serde_json::from_slice(o.stdout.split(|b| *b == b'\n').next().unwrap()).unwrap();
        assert!(
            first["sessionId"].is_string() && first["uuid"].is_string(),
            "{pair}: {first}"
        );
    }
    let mut child = pond()
        .args(["convert", "codex:claude", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(&std::fs::read(codex_fixture()).unwrap())
        .unwrap();
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    assert!(o.stdout.ends_with(b"\n") && o.stdout.len() > 100);
}

/// Runs `pond ARGS -` with `input` on stdin and `env` set.
fn piped(args: &[&str], input: &Path, env: &[(&str, &Path)]) -> Output {
    let mut c = pond();
    c.args(args)
        .arg("-")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        c.env(k, v);
    }
    let mut child = c.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(&std::fs::read(input).unwrap()).unwrap();
    drop(stdin);
    child.wait_with_output().unwrap()
}

/// What comes on stdin is named as its harness names its file: a Claude Code transcript by the
/// `sessionId` its lines carry (Claude Code resumes a session by its file name, a UUID), an
/// opencode export as the JSON document it is (so it is detected).
#[test]
fn stdin_keeps_what_its_harness_names_by_the_file() {
    let shared = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/fixtures");
    let transcript =
        shared.join("claude-code/claude-code-viewer/1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl");
    let home = tempfile::tempdir().unwrap();
    let o = piped(
        &["convert", "claude:claude", "--install"],
        &transcript,
        &[("CLAUDE_CONFIG_DIR", home.path())],
    );
    assert!(o.status.success(), "{}", text(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains("claude --resume 1af7fc5e-8455-4414-9ccd-011d40f70b2a"),
        "{}",
        text(&o)
    );
    let files = walk(&home.path().join("projects"));
    assert!(
        files.iter().any(|f| f
            .file_name()
            .is_some_and(|n| n == "1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl")),
        "{files:?}"
    );

    let export = shared.join("opencode/harness-generated/import-input-basic.json");
    let o = piped(&["convert", "--to", "claude"], &export, &[]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("opencode -> claude-code"),
        "{}",
        text(&o)
    );
}

#[test]
fn from_is_detected_when_omitted() {
    let o = pond()
        .args(["convert", "--to", "claude-code"])
        .arg(codex_fixture())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("codex -> claude-code"),
        "{}",
        text(&o)
    );
}

/// With `PI_CODING_AGENT_SESSION_DIR` set (pi 0.73's `--session-dir`), pi keeps every session in
/// that one folder, flat, and looks for `pi --session <id>` and `--continue` there: an install
/// writes the file there, not under `PI_CODING_AGENT_DIR`'s per-project folders.
#[test]
fn install_into_pi_writes_where_pi_session_dir_points() {
    let scratch = tempfile::tempdir().unwrap();
    let sessions = scratch.path().join("pi-sessions");
    let agent = scratch.path().join("agent");
    let o = pond()
        .args(["convert", "codex→pi", "--install"])
        .arg(codex_fixture())
        .env("PI_CODING_AGENT_SESSION_DIR", &sessions)
        .env("PI_CODING_AGENT_DIR", &agent)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let written: Vec<_> = std::fs::read_dir(&sessions)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(written.len(), 1, "{written:?}");
    assert!(written[0].is_file(), "{written:?}");
    assert!(!agent.exists(), "written under PI_CODING_AGENT_DIR too");
    let name = written[0]
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let id = name
        .strip_suffix(".jsonl")
        .and_then(|n| n.rsplit_once('_'))
        .map(|(_, id)| id.to_owned())
        .unwrap_or_else(|| panic!("not <time>_<id>.jsonl: {name}"));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains(&format!("pi --session {id}")),
        "{}",
        text(&o)
    );
    // pi's own lookup (`SessionManager.list(cwd, sessionDir)`, what `pi --session <id>` reads
    // first) finds it there.
    let Some(cli) = real_harness::cli("pi")
        .inspect_err(|reason| println!("SKIP (pi's lookup): {reason}"))
        .ok()
    else {
        return;
    };
    let manager = cli.with_file_name("core").join("session-manager.js");
    let listed = Command::new("node")
        .args([
            "--input-type=module",
            "-e",
            "const {SessionManager} = await import(process.argv[1]); \
             const found = await SessionManager.list(process.cwd(), process.argv[2]); \
             console.log(JSON.stringify(found.map(s => s.id)));",
        ])
        .arg(&manager)
        .arg(&sessions)
        .output()
        .unwrap();
    assert!(listed.status.success(), "{}", text(&listed));
    let ids: Vec<String> = serde_json::from_slice(&listed.stdout).unwrap();
    assert_eq!(ids, [id]);
}

#[test]
fn install_writes_where_claude_looks_prints_resume_extends_and_never_overwrites_what_differs() {
    let home = tempfile::tempdir().unwrap();
    let run = || {
        pond()
            .args(["convert", "codex→claude", "--install"])
            .arg(codex_fixture())
            .env("CLAUDE_CONFIG_DIR", home.path())
            .output()
            .unwrap()
    };
    let o = run();
    assert!(o.status.success(), "{}", text(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    let resume = stdout
        .lines()
        .find(|l| l.contains("claude --resume"))
        .unwrap_or_else(|| panic!("{}", text(&o)));
    let id = resume.rsplit(' ').next().unwrap();
    let files: Vec<_> = walk(&home.path().join("projects"));
    assert!(
        files
            .iter()
            .any(|f| f.file_name().unwrap().to_string_lossy() == format!("{id}.jsonl")),
        "{files:?}"
    );
    let installed = files
        .iter()
        .find(|f| f.file_name().unwrap().to_string_lossy() == format!("{id}.jsonl"))
        .unwrap();
    let bytes = std::fs::read(installed).unwrap();
    // A second install of the same session finds it there as it would write it: done, the file
    // left as it was, the same resume command.
    let again = run();
    assert_eq!(again.status.code(), Some(0), "{}", text(&again));
    assert!(text(&again).contains("unchanged: "), "{}", text(&again));
    assert!(
        String::from_utf8_lossy(&again.stdout).contains(resume),
        "{}",
        text(&again)
    );
    assert_eq!(std::fs::read(installed).unwrap(), bytes);
    // Installed when the source was shorter (its first lines): extended with the rest, the
    // session resumable.
    let first_lines = bytes[..bytes.len() - 1]
        .iter()
        .rposition(|&b| b == b'\n')
        .unwrap();
    std::fs::write(installed, &bytes[..=first_lines]).unwrap();
    let grown = run();
    assert_eq!(grown.status.code(), Some(0), "{}", text(&grown));
    assert!(text(&grown).contains("extended: "), "{}", text(&grown));
    assert!(
        String::from_utf8_lossy(&grown.stdout).contains(resume),
        "{}",
        text(&grown)
    );
    assert_eq!(std::fs::read(installed).unwrap(), bytes);
    // Once the harness has written to it, an install refuses to overwrite it ...
    let mut resumed = bytes.clone();
    resumed.extend_from_slice(b"{\"type\":\"summary\",\"summary\":\"resumed\"}\n");
    std::fs::write(installed, &resumed).unwrap();
    let refused = run();
    assert_eq!(refused.status.code(), Some(1), "{}", text(&refused));
    assert!(
        text(&refused).contains("exists already with other content; pond does not overwrite"),
        "{}",
        text(&refused)
    );
    assert_eq!(std::fs::read(installed).unwrap(), resumed);
    // ... and names no session to resume: it wrote none.
    assert!(
        !String::from_utf8_lossy(&refused.stdout).contains("claude --resume"),
        "{}",
        text(&refused)
    );
}

/// `-o FILE` there already: compared, never overwritten. The same bytes are done (unchanged,
/// exit 0); its first lines (the source grew since) are extended with the rest (exit 0); a file
/// that differs, is longer or ends inside a line is refused (exit 1) and left as it was.
#[test]
fn an_output_file_there_already_is_compared_never_written() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("session.jsonl");
    let run = || {
        pond()
            .args(["convert", "codex→claude", "-o"])
            .arg(&file)
            .arg(codex_fixture())
            .output()
            .unwrap()
    };
    let first = run();
    assert!(first.status.success(), "{}", text(&first));
    let bytes = std::fs::read(&file).unwrap();
    assert!(!bytes.is_empty());
    let again = run();
    assert_eq!(again.status.code(), Some(0), "{}", text(&again));
    assert!(text(&again).contains("unchanged: "), "{}", text(&again));
    assert_eq!(std::fs::read(&file).unwrap(), bytes);
    // The first lines: the rest is appended, and said.
    let line_end = bytes[..bytes.len() / 2]
        .iter()
        .rposition(|&b| b == b'\n')
        .unwrap();
    std::fs::write(&file, &bytes[..=line_end]).unwrap();
    let extended = run();
    assert_eq!(extended.status.code(), Some(0), "{}", text(&extended));
    assert!(
        text(&extended).contains("extended: "),
        "{}",
        text(&extended)
    );
    assert_eq!(std::fs::read(&file).unwrap(), bytes);
    let mut longer = bytes.clone();
    longer.extend_from_slice(b"{}\n");
    let mut changed = bytes.clone();
    let last = changed.len() - 3;
    changed[last] ^= 1;
    let inside_a_line = bytes[..=line_end + 2].to_vec();
    for other in [longer, inside_a_line, changed] {
        std::fs::write(&file, &other).unwrap();
        let refused = run();
        assert_eq!(refused.status.code(), Some(1), "{}", text(&refused));
        let said = text(&refused);
        assert_eq!(
            said.matches("exists already with other content; pond does not overwrite")
                .count(),
            1,
            "{said}"
        );
        assert!(!said.contains("unchanged: "), "{said}");
        assert_eq!(std::fs::read(&file).unwrap(), other);
    }
}

#[test]
fn the_loss_report_lists_what_claude_cannot_hold_and_strict_refuses_it() {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("losses.json");
    let o = pond()
        .args(["convert", "codex→claude", "--out"])
        .arg(dir.path().join("out"))
        .arg("--report")
        .arg(&report)
        .arg(codex_fixture())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let losses: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    let kinds = losses["kinds"].as_object().unwrap();
    assert!(
        kinds.contains_key("reasoning_encrypted_content"),
        "{losses}"
    );
    assert!(
        kinds
            .values()
            .all(|l| l["count"].as_u64().unwrap() > 0 && l["first"].is_string())
    );

    let strict = pond()
        .args(["convert", "codex→claude", "--strict", "--out"])
        .arg(dir.path().join("strict"))
        .arg(codex_fixture())
        .output()
        .unwrap();
    assert_eq!(strict.status.code(), Some(3), "{}", text(&strict));
    assert!(String::from_utf8_lossy(&strict.stderr).contains("lost: reasoning_encrypted_content"));

    // A native conversion loses nothing, so --strict passes.
    let native = pond()
        .args(["convert", "codex:codex", "--strict", "--out"])
        .arg(dir.path().join("native"))
        .arg(codex_fixture())
        .output()
        .unwrap();
    assert_eq!(native.status.code(), Some(0), "{}", text(&native));
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p))
        } else {
            out.push(p)
        }
    }
    out
}

/// A conversion where the system will start no second thread (a process at its thread limit, as
/// in a container with a small pids limit) runs on the one it has and writes what one thread
/// writes; a failed spawn was a panic. The limit is set for an unprivileged user (root is exempt
/// from RLIMIT_NPROC), so this runs as root with util-linux's `setpriv` and `prlimit`, and skips,
/// saying why, elsewhere.
#[test]
fn a_conversion_that_can_start_no_second_thread_runs_on_one() {
    use std::os::unix::fs::PermissionsExt;
    // Everything the unprivileged user runs and reads, where it may.
    let Some((dir, bin)) = limited::pond_for_nobody(0o755) else {
        return;
    };
    let shared = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/fixtures");
    let inputs = [
        ("pi→codex", "pi/large-session.jsonl"),
        (
            "claude→pi",
            "claude-code/marot-spotter/258c7280-ae70-4798-800f-63464d01a85d.jsonl",
        ),
    ];
    for (pair, fixture) in inputs {
        let from = shared.join(fixture);
        assert!(from.is_file(), "missing shared fixture {}", from.display());
        let input = dir.path().join(from.file_name().unwrap());
        std::fs::copy(&from, &input).unwrap();
        std::fs::set_permissions(&input, std::fs::Permissions::from_mode(0o644)).unwrap();
        let limited = limited::limited(&bin)
            .args(["convert", pair])
            .arg(&input)
            .output()
            .unwrap();
        let one = Command::new(&bin)
            .env("POND_THREADS", "1")
            .args(["convert", pair])
            .arg(&input)
            .output()
            .unwrap();
        assert!(
            limited.status.success() && !text(&limited).contains("panicked"),
            "{pair}: {}",
            text(&limited)
        );
        assert!(one.status.success(), "{pair}: {}", text(&one));
        assert!(!one.stdout.is_empty());
        assert!(
            limited.stdout == one.stdout,
            "{pair}: not what one thread writes"
        );
        assert_eq!(limited.stderr, one.stderr, "{pair}: the same report");
    }
}

//! `pond mcp` driven by real MCP clients over stdio against a store synced from the shared
//! fixtures: the official Python SDK (`mcp` from PyPI) and the MCP Inspector's CLI (npm). Both
//! are installed by `scripts/test` into ~/.cache/pond (POND_TEST_PYTHON and
//! POND_TEST_INSPECTOR name other copies); without them the tests say why they skip.
#![cfg(feature = "store")]

mod real_harness;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn tool(var: &str, default: &str) -> Option<PathBuf> {
    let p = match std::env::var_os(var) {
        Some(p) => PathBuf::from(p),
        None => PathBuf::from(std::env::var_os("HOME")?).join(default),
    };
    p.exists().then_some(p)
}

fn synced_store(scratch: &Path) -> PathBuf {
    let data = scratch.join("store");
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/fixtures/claude-code/marot-spotter");
    let o = Command::new(env!("CARGO_BIN_EXE_pond"))
        .args(["sync", "--source"])
        .arg(format!("claude-code={}", fixtures.display()))
        .arg("--data")
        .arg(&data)
        .output()
        .unwrap();
    assert!(
        o.status.code().is_some_and(|c| c <= 1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    data
}

fn text(o: &Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn the_python_sdk_lists_calls_and_reads() {
    let Some(python) = tool("POND_TEST_PYTHON", ".cache/pond/pytools/bin/python") else {
        println!(
            "SKIP: no Python with the MCP SDK (scripts/test installs `mcp` into ~/.cache/pond/pytools; or set POND_TEST_PYTHON)"
        );
        return;
    };
    let scratch = tempfile::tempdir().unwrap();
    let data = synced_store(scratch.path());
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp_client.py");
    let o = Command::new(python)
        .arg(script)
        .arg(env!("CARGO_BIN_EXE_pond"))
        .arg(&data)
        .arg("test")
        .output()
        .unwrap();
    let out = text(&o);
    println!("{out}");
    assert!(o.status.success(), "{out}");
    assert!(out.contains(" passed, 0 failed"), "{out}");
    assert!(!out.contains("FAIL "), "{out}");
    // Nothing but the protocol went to the client: pond's own lines are on its stderr, which
    // the SDK passes through; a stray line on stdout would have broken the session above.
}

#[test]
fn the_inspector_cli_lists_and_calls() {
    let Some(inspector) = tool(
        "POND_TEST_INSPECTOR",
        ".cache/pond/npm-tools/node_modules/.bin/mcp-inspector",
    ) else {
        println!(
            "SKIP: no MCP Inspector (scripts/test installs @modelcontextprotocol/inspector into ~/.cache/pond/npm-tools; or set POND_TEST_INSPECTOR)"
        );
        return;
    };
    let scratch = tempfile::tempdir().unwrap();
    let data = synced_store(scratch.path());
    let run = |args: &[&str]| {
        Command::new(&inspector)
            .env("MCP_CATALOG_PATH", scratch.path().join("catalog.json"))
            .arg("--cli")
            .arg(env!("CARGO_BIN_EXE_pond"))
            .arg("mcp")
            .arg("--data")
            .arg(&data)
            .args(args)
            .output()
            .unwrap()
    };
    let o = run(&["--method", "tools/list"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains("pond_search") && stdout.contains("pond_get"),
        "{}",
        text(&o)
    );
    assert!(!stdout.contains("pond_ingest"), "{}", text(&o));

    // The tool schemas are portable (the Inspector's --strict exits 6 when they are not).
    let o = run(&["--method", "tools/list", "--strict"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));

    let o = run(&[
        "--method",
        "tools/call",
        "--tool-name",
        "pond_search",
        "--tool-arg",
        "protocol_version=1",
        "--tool-arg",
        "query=test",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("session_id"),
        "{}",
        text(&o)
    );

    // A tool error result: exit 5.
    let o = run(&[
        "--method",
        "tools/call",
        "--tool-name",
        "pond_get",
        "--tool-arg",
        "protocol_version=1",
        "--tool-arg",
        "session_id=no-such-session",
    ]);
    assert_eq!(o.status.code(), Some(5), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("not_found"),
        "{}",
        text(&o)
    );

    let o = run(&["--method", "resources/read", "--uri", "stats://pond"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("messages_per_source_agent"),
        "{}",
        text(&o)
    );
}

/// The real harness CLIs (../shared/oracle's pinned installs, `POND_ORACLE_HOME` or
/// ~/.cache/pond-oracle) with pond registered by `pond mcp install`: the harness starts
/// `pond mcp`, offers its tools to the model, runs the model's call of `pond_search` and sends
/// pond's answer back. The model is tests/mcp_model.py on 127.0.0.1, in a network namespace
/// that has only loopback (tests/mcp_harness.sh); nothing leaves the machine.
fn harness_journey(harness: &str) {
    let Some(cli) = real_harness::cli_or_skip(harness) else {
        return;
    };
    if Command::new("python3").arg("--version").output().is_err() {
        println!("SKIP: python3 is not on PATH (it runs the scripted model)");
        return;
    }

    let scratch = tempfile::tempdir().unwrap();
    let data = synced_store(scratch.path());
    // What pond itself answers for the query: the harness must hand the model the same session.
    let o = Command::new(env!("CARGO_BIN_EXE_pond"))
        .args(["--json", "search", "spotter", "--data"])
        .arg(&data)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let answer: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let session = answer["results"][0]["session_id"]
        .as_str()
        .unwrap_or_else(|| panic!("pond found nothing for the query: {answer}"))
        .to_owned();

    let work = scratch.path().join("journey");
    std::fs::create_dir(&work).unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp_harness.sh");
    let o = Command::new("unshare")
        .arg("-rn")
        .arg("bash")
        .arg(&script)
        .arg(harness)
        .arg(env!("CARGO_BIN_EXE_pond"))
        .arg(&data)
        .arg(&work)
        .arg(&cli)
        .arg("spotter")
        .output()
        .unwrap();
    let read = |name: &str| std::fs::read_to_string(work.join(name)).unwrap_or_default();
    let report = format!(
        "{}\nharness stdout:\n{}\nharness stderr:\n{}\ninstall:\n{}",
        text(&o),
        read("harness.out"),
        read("harness.err"),
        read("install.out")
    );
    assert_eq!(o.status.code(), Some(0), "{report}");

    let requests: Vec<serde_json::Value> = read("model.jsonl")
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // The harness offered both of pond's tools, under its own names for an MCP server's tools.
    let offered = |r: &serde_json::Value| {
        let tools = r["body"]["tools"].to_string();
        tools.contains("pond_search") && tools.contains("pond_get")
    };
    assert!(
        requests.iter().any(offered),
        "no request offered pond's tools ({} requests)\n{report}",
        requests.len()
    );
    // It ran the call and sent pond's answer back: a later request carries the session pond
    // found, which the model's first request could not have held.
    let answered = requests
        .iter()
        .position(|r| r["body"].to_string().contains(&session));
    let first_offer = requests.iter().position(offered).unwrap();
    assert!(
        answered.is_some_and(|i| i > first_offer),
        "no request after the call carried pond's answer (session {session})\n{report}"
    );
}

#[test]
fn claude_code_calls_pond_registered_by_mcp_install() {
    harness_journey("claude-code");
}

#[test]
fn codex_calls_pond_registered_by_mcp_install() {
    harness_journey("codex");
}

#[test]
fn opencode_calls_pond_registered_by_mcp_install() {
    harness_journey("opencode");
}

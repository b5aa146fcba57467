//! `pond mcp` driven by real MCP clients over stdio against a store synced from the shared
//! fixtures: the official Python SDK (`mcp` from PyPI) and the MCP Inspector's CLI (npm). Both
//! are installed by `scripts/test` into ~/.cache/pond (POND_TEST_PYTHON and
//! POND_TEST_INSPECTOR name other copies); without them the tests say why they skip.
#![cfg(feature = "store")]

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

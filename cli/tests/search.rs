//! `pond search` through the binary: text and JSON results from a synced store, `--explain`,
//! and bad input refused with a message a person can act on (exit 2), never a panic.
#![cfg(feature = "store")]

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

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn search_prints_sessions_with_marked_matches_and_explains_itself() {
    let scratch = tempfile::tempdir().unwrap();
    let data = scratch.path().join("store");
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/fixtures/claude-code/marot-spotter");
    let source = format!("claude-code={}", fixtures.display());
    let o = pond(&["sync", "--source", &source], &data);
    assert!(o.status.code().is_some_and(|c| c <= 1), "{}", stderr(&o));

    let o = pond(&["search", "--json", "--limit", "3", "test"], &data);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["protocol_version"], 1);
    assert_eq!(v["mode"], "full_text");
    let results = v["results"].as_array().unwrap();
    assert!(!results.is_empty() && results.len() <= 3, "{v}");
    for r in results {
        assert!(r["session_id"].as_str().is_some_and(|s| !s.is_empty()));
        assert!(r["project"].as_str().is_some());
        let m = &r["matches"][0];
        assert!(m["score"].as_f64().unwrap() > 0.0);
        if m["role"] == "user" {
            assert!(m["parts_summary"]["kinds"].is_object(), "{m}");
        }
    }
    let scores: Vec<f64> = results
        .iter()
        .map(|r| r["score"].as_f64().unwrap())
        .collect();
    assert!(scores.windows(2).all(|w| w[0] >= w[1]), "{scores:?}");

    // Text: one line per session, the match marked (« » when not a terminal).
    let o = pond(&["search", "test"], &data);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.starts_with(" 1. "), "{text}");
    assert!(text.to_lowercase().contains("«test"), "{text}");

    // --explain: the plan and each hit's retriever, instead of results.
    let o = pond(
        &["search", "--explain", "--project", "/nowhere", "test"],
        &data,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("Lance analyze_plan"), "{text}");
    assert!(text.contains("project = '/nowhere'"), "{text}");
    let o = pond(&["search", "--explain", "test"], &data);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("full_text  recall"), "{text}");
}

#[test]
fn bad_input_is_refused_with_the_reason() {
    let scratch = tempfile::tempdir().unwrap();
    let data = scratch.path().join("store");
    // A command-line argument is capped at 128 KiB by the kernel; the handler's own test sends 1 MB.
    let huge = "x".repeat(100_000);
    for (args, says) in [
        (vec!["search", ""], "empty"),
        (vec!["search", "?!?!"], "no letter or digit"),
        (vec!["search", &huge], "bytes"),
        (vec!["search", "--agent", "emacs", "query"], "claude-code"),
        (vec!["search", "--since", "yesterday", "query"], "RFC 3339"),
        (vec!["search", "--limit", "0", "query"], "limit"),
    ] {
        let o = pond(&args, &data);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        let err = stderr(&o);
        assert!(
            err.contains(says),
            "{:?}: {err}",
            &args[..args.len().min(3)]
        );
        assert!(!err.contains("panicked"), "{err}");
        assert!(
            err.len() < 1000,
            "the error echoes the whole query: {} bytes",
            err.len()
        );
    }
}

//! `pond export`, `pond import` and `pond sync --import-from` end to end through the binary.
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

//! The two-pass readers (Claude Code, pi) hold a file of up to 64 MiB in memory and read a
//! larger one from disk twice. The shared fixtures are all small, so `POND_HOLD_LIMIT=0` sends
//! them through the streamed path: every conversion of every fixture must write the same files,
//! byte for byte, and report the same summary either way, on one thread and on two.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

/// Every file under `dir`, by relative path.
fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, found: &mut BTreeMap<String, Vec<u8>>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(root, &path, found);
            } else {
                let relative = path
                    .strip_prefix(root)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                found.insert(relative, std::fs::read(&path).unwrap());
            }
        }
    }
    let mut found = BTreeMap::new();
    walk(dir, dir, &mut found);
    found
}

/// `pond convert FROM:TO INPUT --out DIR --json` with `env`: the files written and the summary.
fn convert(
    from: &str,
    to: &str,
    input: &Path,
    env: &[(&str, &str)],
) -> (BTreeMap<String, Vec<u8>>, serde_json::Value) {
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().join("out");
    let o = Command::new(env!("CARGO_BIN_EXE_pond"))
        .args(["convert", &format!("{from}:{to}"), "--json"])
        .arg(input)
        .arg("--out")
        .arg(&dir)
        .envs(env.iter().copied())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        matches!(o.status.code(), Some(0 | 1)),
        "{from} -> {to} {env:?}: {stderr}"
    );
    // Where the files went differs from run to run; what was written may not.
    let stdout = String::from_utf8_lossy(&o.stdout).replace(&*dir.to_string_lossy(), "OUT");
    let mut report: serde_json::Value =
        serde_json::from_str(&stdout).expect("--json summary on stdout");
    if let Some(written) = report["summary"]["written"].as_array_mut() {
        for w in written {
            if let Some(w) = w.as_object_mut() {
                w.retain(|k, _| k != "path" && k != "resume");
            }
        }
    }
    (files(&dir), report)
}

#[test]
fn a_streamed_file_converts_as_a_held_one() {
    let shared = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/fixtures");
    assert!(shared.is_dir(), "the shared fixtures are missing");
    let mut compared = 0;
    for from in ["claude-code", "pi"] {
        let input = shared.join(from);
        for to in ["claude-code", "codex", "opencode", "pi"] {
            let (held, held_report) = convert(from, to, &input, &[]);
            assert!(!held.is_empty(), "{from} -> {to}: nothing written");
            for env in [
                &[("POND_HOLD_LIMIT", "0")][..],
                &[("POND_HOLD_LIMIT", "0"), ("POND_THREADS", "1")][..],
            ] {
                let (streamed, streamed_report) = convert(from, to, &input, env);
                assert_eq!(
                    held.keys().collect::<Vec<_>>(),
                    streamed.keys().collect::<Vec<_>>(),
                    "{from} -> {to} {env:?}: files written"
                );
                for (path, bytes) in &held {
                    assert!(
                        streamed[path] == *bytes,
                        "{from} -> {to} {env:?}: {path} differs"
                    );
                }
                assert_eq!(held_report, streamed_report, "{from} -> {to} {env:?}");
                compared += held.len();
            }
        }
    }
    assert!(compared > 16, "{compared} files compared");
}

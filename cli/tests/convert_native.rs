//! `pond convert --from X --to X <fixtures> --out DIR` reproduces every well-formed fixture file at
//! its relative path, line for line as equal JSON values, for every registered codec
//! (adapter-native-restore-lossless), through the real binary and the real filesystem.

use pond_conformance::roundtrip::{compare_file, native_round_trip};
use std::path::Path;
use std::process::Command;

#[test]
fn native_convert_reproduces_every_fixture_file() {
    let shared = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/fixtures");
    assert!(
        shared.is_dir(),
        "the shared fixtures are missing at {}",
        shared.display()
    );
    for codec in pond_codecs::CODECS
        .iter()
        .filter(|c| c.read.is_some() && c.write.is_some())
    {
        let input = shared.join(codec.name);
        assert!(
            input.is_dir(),
            "no shared fixtures for codec {} at {}",
            codec.name,
            input.display()
        );
        let expected = native_round_trip(codec, &input).unwrap();
        assert!(expected.passed(), "{}: {}", codec.name, expected.report());

        let out = tempfile::tempdir().unwrap();
        let dir = out.path().join("out");
        let o = Command::new(env!("CARGO_BIN_EXE_pond"))
            .args([
                "convert", "--from", codec.name, "--to", codec.name, "--json",
            ])
            .arg(&input)
            .arg("--out")
            .arg(&dir)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&o.stderr);
        let want_code = if expected.faults.is_empty() { 0 } else { 1 };
        assert_eq!(o.status.code(), Some(want_code), "{}: {stderr}", codec.name);
        let report: serde_json::Value =
            serde_json::from_slice(&o.stdout).expect("--json summary on stdout");
        assert_eq!(
            report["summary"]["errors"].as_array().map(Vec::len),
            Some(expected.faults.len())
        );
        assert_eq!(report["summary"]["foreign_sessions"], 0);

        assert!(
            !expected.files.is_empty(),
            "{}: no files compared",
            codec.name
        );
        for file in &expected.files {
            let written = std::fs::read(dir.join(&file.path))
                .unwrap_or_else(|e| panic!("{}: {} not written: {e}", codec.name, file.path));
            let diff = compare_file(&input.join(&file.path), &written);
            assert_eq!(diff, None, "{}: {}", codec.name, file.path);
        }
    }
}

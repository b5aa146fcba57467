//! The hand-written canonical examples in `fixtures/canonical/`: `valid-*` must deserialize and
//! pass the validator; `invalid-*` must be refused by one of the two, naming the broken rule.

use pond_canonical::SessionLog;
use pond_canonical::validate::check_log;
use std::path::PathBuf;

fn examples(prefix: &str) -> Vec<(String, String)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../fixtures/canonical");
    let mut found: Vec<_> = std::fs::read_dir(&dir)
        .expect("fixtures/canonical exists")
        .map(|e| e.expect("readable").path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with(prefix))
        .map(|p| {
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                std::fs::read_to_string(&p).unwrap(),
            )
        })
        .collect();
    found.sort();
    assert!(
        !found.is_empty(),
        "no {prefix}* examples in {}",
        dir.display()
    );
    found
}

#[test]
fn valid_examples_deserialize_validate_and_round_trip() {
    for (name, text) in examples("valid-") {
        let log: SessionLog = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(check_log(&log), vec![], "{name}");
        let again: SessionLog =
            serde_json::from_value(serde_json::to_value(&log).unwrap()).unwrap();
        assert_eq!(again, log, "{name} does not survive serialize/deserialize");
        // Full timestamp precision is kept.
        let original: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            serde_json::to_value(&log).unwrap()["session"]["created_at"],
            original["session"]["created_at"]
        );
    }
}

#[test]
fn invalid_examples_are_refused_with_the_rule() {
    let expected = [
        (
            "invalid-cut-point-without-parent.json",
            "model-parent-pointer-coherence",
        ),
        ("invalid-empty-project.json", "model-project-non-empty"),
        (
            "invalid-part-without-provenance.json",
            "missing field `provenance`",
        ),
        (
            "invalid-tool-result-in-user-message.json",
            "unknown variant `tool_result`, expected `text` or `file`",
        ),
    ];
    let found = examples("invalid-");
    assert_eq!(
        found.len(),
        expected.len(),
        "every invalid example has an expectation"
    );
    for ((name, text), (want_name, want)) in found.iter().zip(expected) {
        assert_eq!(name, want_name);
        let why = match serde_json::from_str::<SessionLog>(text) {
            Err(e) => e.to_string(),
            Ok(log) => check_log(&log)
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("; "),
        };
        assert!(
            why.contains(want),
            "{name}: refused for {why:?}, expected {want:?}"
        );
    }
}

//! `pond schema` (spec 7.2): the generated JSON Schema accepts the canonical examples in
//! `fixtures/canonical/valid-*`, refuses the broken ones, and matches the copies in `docs/schema/`.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn pond_schema(kind: &str) -> Value {
    let out = Command::new(env!("CARGO_BIN_EXE_pond"))
        .args(["schema", kind])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("pond schema prints JSON")
}

fn example(name: &str) -> Value {
    serde_json::from_str(
        &std::fs::read_to_string(root().join("fixtures/canonical").join(name)).unwrap(),
    )
    .unwrap()
}

#[test]
fn schema_accepts_valid_sessions_and_refuses_broken_ones() {
    let schema = pond_schema("session");
    let validator = jsonschema::validator_for(&schema).expect("the schema compiles");
    for name in ["valid-tool-round.json", "valid-fork-with-file.json"] {
        let errors: Vec<String> = validator
            .iter_errors(&example(name))
            .map(|e| e.to_string())
            .collect();
        assert!(errors.is_empty(), "{name}: {errors:?}");
    }
    for name in [
        "invalid-tool-result-in-user-message.json",
        "invalid-cut-point-without-parent.json",
        "invalid-empty-project.json",
        "invalid-part-without-provenance.json",
    ] {
        assert!(
            !validator.is_valid(&example(name)),
            "{name} passed the schema"
        );
    }
}

#[test]
fn docs_schema_copies_are_current() {
    let mut kinds = vec![
        ("session", "session-log.schema.json"),
        ("event", "wire-event.schema.json"),
    ];
    if cfg!(feature = "store") {
        kinds.extend([
            ("search-request", "search-request.schema.json"),
            ("search-response", "search-response.schema.json"),
            ("error", "error.schema.json"),
            ("get-request", "get-request.schema.json"),
            ("get-response", "get-response.schema.json"),
            ("ingest-request", "ingest-request.schema.json"),
            ("ingest-response", "ingest-response.schema.json"),
            ("stats", "stats.schema.json"),
            ("openapi", "openapi.json"),
        ]);
    }
    for (kind, file) in kinds {
        let path = root().join("docs/schema").join(file);
        let generated = pond_schema(kind);
        let stored: Value = std::fs::read_to_string(&path)
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or(Value::Null);
        assert!(
            stored == generated,
            "{} is stale: regenerate with `cargo run -p pond -- schema {kind} > {}`",
            path.display(),
            Path::new("docs/schema").join(file).display()
        );
    }
}

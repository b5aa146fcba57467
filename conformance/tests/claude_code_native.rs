//! Native round trip of every Claude Code fixture (spec 6.8, adapter-native-restore-lossless),
//! and the faults malformed input must raise (adapter-integrity-no-silent-drops).

use pond_codecs::claude_code::CODEC;
use pond_conformance::roundtrip::native_round_trip;
use std::path::PathBuf;

/// The shared Claude Code fixtures; a missing folder fails the test rather than passing it.
fn fixtures() -> PathBuf {
    let dir = PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../shared/fixtures/claude-code"
    ));
    assert!(
        dir.is_dir(),
        "the shared Claude Code fixtures are missing: expected them at {}",
        dir.display()
    );
    dir
}

/// Files that are not well-formed transcripts, and why.
const MALFORMED: &[(&str, &str)] = &[
    // Three non-object lines (a string, a number, an array) among the records.
    (
        "claude-code-log/test_data/edge_cases.jsonl",
        "not_an_object",
    ),
    // A shape catalogue whose values are "[trimmed for fixture]", timestamps included: 45 lines
    // have a `timestamp` that is not RFC 3339 (the records are still kept, see below).
    ("agent-sessions/small.jsonl", "invalid_timestamp"),
    // Envelope-trimmed 2.1.198 shape probes: no `cwd`, so no project (model-project-non-empty).
    (
        "claude-code-log/dev-docs-messages/tools/Artifact-tool_result.jsonl",
        "no_project",
    ),
    (
        "claude-code-log/dev-docs-messages/tools/Artifact-tool_use.jsonl",
        "no_project",
    ),
    // Single metadata records with no `cwd` anywhere in the file.
    (
        "claude-code-log/dev-docs-messages/system/file_history_snapshot.jsonl",
        "no_project",
    ),
    (
        "claude-code-log/dev-docs-messages/system/queue_operation.jsonl",
        "no_project",
    ),
    (
        "claude-code-log/dev-docs-messages/system/summary.jsonl",
        "no_project",
    ),
];

#[test]
fn every_well_formed_fixture_round_trips_natively() {
    let result = native_round_trip(&CODEC, &fixtures()).expect("round trip runs");
    assert!(result.passed(), "{}", result.report());
    let mut malformed = result.malformed.clone();
    malformed.sort();
    let mut expected: Vec<String> = MALFORMED.iter().map(|(p, _)| p.to_string()).collect();
    expected.sort();
    assert_eq!(malformed, expected, "faults: {:#?}", result.faults);
    let paths: Vec<&str> = result.files.iter().map(|f| f.path.as_str()).collect();
    for needed in [
        "marot-spotter/258c7280-ae70-4798-800f-63464d01a85d/subagents/agent-a881341.jsonl",
        "agent-sessions/subagent/0a1b2c3d-4e5f-4061-8071-2a3b4c5d6e7f/subagents/agent-a0ad4f44468bdf20d.meta.json",
        "claude-code-viewer/agent-test-hash-123.jsonl",
    ] {
        assert!(
            paths.contains(&needed),
            "{needed} was not compared: {paths:#?}"
        );
    }
    for fault in &result.faults {
        assert!(fault.starts_with("claude-code: "), "{fault}");
    }
}

/// A file with located faults is still converted record by record: every object line of the
/// shape catalogue comes back value-equal, invalid timestamps and all.
#[test]
fn faulty_timestamps_do_not_lose_records() {
    use pond_codecs::convert::convert_sources;
    use pond_codecs::output::MemoryOutput;
    let dir = fixtures().join("agent-sessions");
    let reader = CODEC.read.expect("read face");
    let sources = reader.discover(&dir.join("small.jsonl")).expect("discover");
    let mut out = MemoryOutput::default();
    let summary = convert_sources(
        &CODEC,
        &CODEC,
        pond_codecs::Layout::Mirror,
        &sources,
        &mut out,
        &mut |_, _| {},
    )
    .expect("convert");
    assert_eq!(summary.errors.len(), 45, "{:#?}", summary.errors);
    assert!(
        summary.write_errors.is_empty(),
        "{:?}",
        summary.write_errors
    );
    let written = out.files.get("small.jsonl").expect("small.jsonl written");
    let difference = pond_conformance::roundtrip::compare_file(&dir.join("small.jsonl"), written);
    assert_eq!(difference, None);
}

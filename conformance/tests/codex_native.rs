//! Codex native round trips (spec 6.8, adapter-native-restore-lossless) over the shared Codex
//! fixtures, the repo's hand-written ones, a `.jsonl.zst` archive and a `~/.codex` home layout,
//! plus the typed errors of malformed input (adapter-integrity-no-silent-drops).

use pond_canonical::{Event, Locator, ParseErrorKind, PartRef};
use pond_codecs::codex::{CODEC, archive};
use pond_codecs::convert::{convert_sources, read_all};
use pond_codecs::output::MemoryOutput;
use pond_conformance::roundtrip::{compare_file, native_round_trip};
use std::path::{Path, PathBuf};

/// The shared Codex fixtures. Their absence is a failure, never a silent pass.
fn shared_fixtures() -> PathBuf {
    let dir = Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../shared/fixtures/codex"
    ));
    assert!(
        dir.is_dir(),
        "the shared Codex fixtures are missing: expected a folder at {}",
        dir.display()
    );
    dir.to_owned()
}

/// The repo's hand-written Codex fixtures.
fn repo_fixtures() -> PathBuf {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../fixtures/codex")).to_owned()
}

/// A fresh, empty scratch folder for one test.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("pond-codex-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch folder");
    dir
}

#[test]
fn every_well_formed_shared_fixture_round_trips() {
    let rt = native_round_trip(&CODEC, &shared_fixtures()).expect("round trip runs");
    assert!(rt.passed(), "{}", rt.report());
    // Exactly these are malformed for pond: the G0 files have no cwd (NoProject) and the ccusage
    // file has no session_meta at all.
    assert_eq!(
        rt.malformed,
        [
            "ai-sessions/DERIVED-codexOlderFormat-extracted-from-ts.jsonl",
            "ai-sessions/DERIVED-codexOlderFormat-uuid-id.jsonl",
            "ccusage-synthetic/session-alpha.jsonl",
        ],
        "faults: {:#?}",
        rt.faults
    );
    assert_eq!(rt.faults.len(), 3, "{:#?}", rt.faults);
    assert_eq!(rt.files.len(), 12, "{:#?}", rt.files);
}

#[test]
fn the_shared_fixture_faults_are_the_expected_typed_errors() {
    let (_, errors) = read_all(&CODEC, &shared_fixtures()).expect("reads");
    let kinds: Vec<(String, &Locator, &ParseErrorKind)> = errors
        .iter()
        .map(|e| {
            let name = e.file.file_name().unwrap().to_string_lossy().into_owned();
            (name, &e.locator, &e.kind)
        })
        .collect();
    assert!(errors.iter().all(|e| e.codec == "codex"));
    assert_eq!(
        kinds[0].0,
        "DERIVED-codexOlderFormat-extracted-from-ts.jsonl"
    );
    assert_eq!(
        (kinds[0].1, kinds[0].2),
        (&Locator::Line(1), &ParseErrorKind::NoProject)
    );
    assert_eq!(
        (kinds[1].1, kinds[1].2),
        (&Locator::Line(1), &ParseErrorKind::NoProject)
    );
    assert_eq!(kinds[2].0, "session-alpha.jsonl");
    assert!(matches!(kinds[2].2, ParseErrorKind::MissingField { .. }));
}

#[test]
fn the_hand_written_fixtures_round_trip() {
    let rt = native_round_trip(&CODEC, &repo_fixtures()).expect("round trip runs");
    assert!(rt.passed(), "{}", rt.report());
    assert!(rt.malformed.is_empty(), "{:#?}", rt.faults);
    // g0-with-cwd, g0-environment-context (whose project is its environment context's cwd)
    // and mcp-namespace (its tool names carry a `namespace` that the native write takes off).
    assert_eq!(rt.files.len(), 3);
}

/// Codex 0.169 writes an MCP server's tool as `name` + `namespace` (`pond_search` in
/// `mcp__pond`); the canonical name is the qualified one earlier Codex and Claude Code use, so a
/// conversion names the tool as the target harness does.
#[test]
fn an_mcp_tools_namespace_qualifies_its_canonical_name() {
    let input = repo_fixtures().join("mcp-namespace");
    let (events, errors) = read_all(&CODEC, &input).expect("reads");
    assert!(errors.is_empty(), "{errors:?}");
    let parts: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            Event::Message(m) => Some(m.part_refs()),
            _ => None,
        })
        .flatten()
        .collect();
    let call = parts
        .iter()
        .find_map(|p| match p {
            PartRef::ToolCall(c) => Some(c.name.as_str()),
            _ => None,
        })
        .expect("a tool call");
    assert_eq!(call, "mcp__pond__pond_search");
    let result = parts
        .iter()
        .find_map(|p| match p {
            PartRef::ToolResult(r) => r.name.as_ref().map(|n| n.as_str()),
            _ => None,
        })
        .expect("a named tool result");
    assert_eq!(result, "mcp__pond__pond_search");

    // To Claude Code: the name Claude Code gives the same server's tool.
    let sources = CODEC.read.unwrap().discover(&input).expect("discovers");
    let mut out = MemoryOutput::default();
    let summary = convert_sources(
        &CODEC,
        &pond_codecs::claude_code::CODEC,
        pond_codecs::Layout::Harness,
        &sources,
        &mut out,
        &mut |_, _| {},
    )
    .unwrap();
    assert!(summary.errors.is_empty() && summary.write_errors.is_empty());
    let written = String::from_utf8(out.files.values().next().unwrap().clone()).unwrap();
    assert!(
        written.contains(r#""name":"mcp__pond__pond_search""#),
        "{written}"
    );
    assert!(!written.contains(r#""name":"pond_search""#), "{written}");
}

/// Writes back natively into memory what `input` holds, then checks every written file against
/// its plain-JSONL original (decompressing `.zst` files first).
fn round_trip_with_archives(input: &Path, originals: &[(&str, &Path)]) {
    let sources = CODEC.read.unwrap().discover(input).expect("discovers");
    let mut out = MemoryOutput::default();
    let summary = convert_sources(
        &CODEC,
        &CODEC,
        pond_codecs::Layout::Mirror,
        &sources,
        &mut out,
        &mut |_, _| {},
    )
    .unwrap();
    assert!(
        summary.is_clean(),
        "{:?} {:?}",
        summary.errors,
        summary.write_errors
    );
    assert!(summary.losses.is_empty());
    assert_eq!(out.files.len(), originals.len(), "{:?}", out.files.keys());
    for (relative, original) in originals {
        let written = out
            .files
            .get(*relative)
            .unwrap_or_else(|| panic!("{relative} not written: {:?}", out.files.keys()));
        let plain = if relative.ends_with(".zst") {
            archive::decompress(written).expect("the written archive is zstd")
        } else {
            written.clone()
        };
        assert_eq!(compare_file(original, &plain), None, "{relative}");
    }
}

#[test]
fn a_zstd_archive_round_trips_compressed_under_the_same_name() {
    let fixture = shared_fixtures()
        .join("generated-codex-0.169.0/exec-image-toolcall-resume-compaction.jsonl");
    let dir = scratch("zst");
    let name = "rollout-2026-11-21T23-36-23-01a20077-d769-7d42-ab97-09ee2a8f6747.jsonl.zst";
    let bytes = std::fs::read(&fixture).unwrap();
    std::fs::write(dir.join(name), archive::compress(&bytes).unwrap()).unwrap();
    round_trip_with_archives(&dir, &[(name, &fixture)]);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_codex_home_round_trips_its_rollout_folders_only() {
    let shared = shared_fixtures();
    let live = shared.join("generated-codex-0.169.0/minimal-3-line-accepted.jsonl");
    let archived = shared.join("generated-codex-0.169.0/exec-with-agents-md.jsonl");
    let home = scratch("home");
    let day = home.join("sessions/2026/01/02");
    std::fs::create_dir_all(&day).unwrap();
    std::fs::create_dir_all(home.join("archived_sessions")).unwrap();
    let live_name = "rollout-2026-01-02T03-04-05-0199aaaa-bbbb-7ccc-8ddd-eeeeffff0001.jsonl";
    std::fs::copy(&live, day.join(live_name)).unwrap();
    let archived_name =
        "rollout-2026-11-21T23-37-39-01a20078-ff22-73e2-a357-e5f4b0755102.jsonl.zst";
    let bytes = archive::compress(&std::fs::read(&archived).unwrap()).unwrap();
    std::fs::write(home.join("archived_sessions").join(archived_name), bytes).unwrap();
    // Not rollouts: prompt history and the thread-name index stay out of the conversion.
    std::fs::write(
        home.join("history.jsonl"),
        "{\"session_id\":\"x\",\"ts\":1,\"text\":\"hi\"}\n",
    )
    .unwrap();
    std::fs::write(home.join("session_index.jsonl"), "{\"id\":\"x\"}\n").unwrap();
    let live_rel = format!("sessions/2026/01/02/{live_name}");
    let archived_rel = format!("archived_sessions/{archived_name}");
    round_trip_with_archives(&home, &[(&live_rel, &live), (&archived_rel, &archived)]);
    let _ = std::fs::remove_dir_all(&home);
}

#[test]
fn malformed_lines_get_located_typed_errors_and_the_rest_converts() {
    let dir = scratch("malformed");
    let good = shared_fixtures().join("generated-codex-0.169.0/minimal-3-line-accepted.jsonl");
    std::fs::copy(&good, dir.join("a-good.jsonl")).unwrap();
    let header = br#"{"timestamp":"2026-01-02T03:04:05.000Z","type":"session_meta","payload":{"id":"0199aaaa-bbbb-7ccc-8ddd-eeeeffff0009","timestamp":"2026-01-02T03:04:05.000Z","cwd":"/w","originator":"pond","cli_version":"0.0.0"}}"#;
    let item = br#"{"timestamp":"2026-01-02T03:04:06.000Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}}"#;
    let mut bad = Vec::new();
    for line in [
        &header[..],
        b"{\"timestamp\":\"2026-01-02T03:04:06.000Z\",\"type\":",
        &item[..],
        b"[1,2,3]",
        b"{\"text\":\"\xff\xfe\"}",
        &item[..],
        b"{\"timestamp\":\"2026-01-02T03:04:07.000Z\",\"type\":\"event_msg\",\"payl",
    ] {
        bad.extend_from_slice(line);
        bad.push(b'\n');
    }
    bad.pop(); // the last line is truncated: no newline, as a crashed writer leaves it
    std::fs::write(dir.join("b-bad.jsonl"), &bad).unwrap();

    let (events, errors) = read_all(&CODEC, &dir).expect("reads");
    let located: Vec<(String, Locator, String)> = errors
        .iter()
        .map(|e| {
            let name = e.file.file_name().unwrap().to_string_lossy().into_owned();
            let kind = serde_json::to_value(&e.kind).unwrap()["kind"]
                .as_str()
                .unwrap()
                .to_owned();
            (name, e.locator.clone(), kind)
        })
        .collect();
    let at = |line, kind: &str| {
        (
            "b-bad.jsonl".to_owned(),
            Locator::Line(line),
            kind.to_owned(),
        )
    };
    assert_eq!(
        located,
        [
            at(2, "truncated"),
            at(4, "not_an_object"),
            at(5, "invalid_utf8"),
            at(7, "truncated"),
        ]
    );
    assert!(errors.iter().all(|e| e.codec == "codex"));
    assert!(
        errors[1].to_string().starts_with("codex: "),
        "{}",
        errors[1]
    );
    // Invalid JSON that is not merely cut short is its own kind.
    std::fs::write(dir.join("c-invalid.jsonl"), b"{\"a\":}\n").unwrap();
    let (_, errors) = read_all(&CODEC, &dir.join("c-invalid.jsonl")).unwrap();
    assert!(
        matches!(errors[0].kind, ParseErrorKind::InvalidJson { .. }),
        "{errors:?}"
    );
    assert_eq!(errors[0].locator, Locator::Line(1));

    // Both sessions convert: the good file whole, the bad file's valid lines.
    let sessions: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            Event::Session(s) => Some(s.id.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(
        sessions,
        [
            "0199aaaa-bbbb-7ccc-8ddd-eeeeffff0001",
            "0199aaaa-bbbb-7ccc-8ddd-eeeeffff0009"
        ]
    );
    let messages = events
        .iter()
        .filter(|e| matches!(e, Event::Message(_)))
        .count();
    assert_eq!(messages, 2 + 2);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_session_without_cwd_is_no_project_never_an_invented_one() {
    let dir = scratch("nocwd");
    std::fs::write(
        dir.join("rollout.jsonl"),
        br#"{"timestamp":"2026-01-02T03:04:05.000Z","type":"session_meta","payload":{"id":"0199aaaa-bbbb-7ccc-8ddd-eeeeffff000a","timestamp":"2026-01-02T03:04:05.000Z","originator":"pond","cli_version":"0.0.0"}}
{"timestamp":"2026-01-02T03:04:06.000Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}}
"#,
    )
    .unwrap();
    let (events, errors) = read_all(&CODEC, &dir).unwrap();
    assert!(events.is_empty(), "{events:?}");
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0].kind, ParseErrorKind::NoProject);
    assert_eq!(errors[0].locator, Locator::Line(1));
    let _ = std::fs::remove_dir_all(&dir);
}

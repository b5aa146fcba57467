//! pi codec: native round trip of every pi session file, the tree-to-sessions mapping, and golden
//! snapshots.

use pond_canonical::{Event, Message, ParseErrorKind, Provenance, SessionLog};
use pond_codecs::convert::read_all;
use pond_codecs::pi::CODEC;
use pond_conformance::roundtrip::native_round_trip;
use std::path::PathBuf;

const SHARED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/fixtures/pi");
const LOCAL: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../fixtures/pi");

/// A fixture folder; a missing one fails the test, never skips it.
fn dir(root: &str) -> PathBuf {
    let dir = PathBuf::from(root);
    assert!(dir.is_dir(), "pi fixtures missing at {}", dir.display());
    dir
}

#[test]
fn every_pi_session_file_round_trips_value_equal() {
    let rt = native_round_trip(&CODEC, &dir(SHARED)).expect("round trip runs");
    assert!(rt.passed(), "{}", rt.report());
    let compared: Vec<&str> = rt.files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(
        compared,
        [
            "git-ai/pi-session-ignorable.jsonl",
            "git-ai/pi-session-simple.jsonl",
            "git-ai/pi-session-tool.jsonl",
            "harness-generated/large-session.migrated-v3-by-pi-0.73.1.jsonl",
            "harness-generated/v3-branch-a-after-mock-run-anthropic.jsonl",
            "harness-generated/v3-branching-after-mock-run.jsonl",
            "harness-generated/v3-branching-input.jsonl",
            "large-session.jsonl",
        ]
    );
    // Not sessions: the HTTP requests pi sent to the mock model. They are JSONL, so discovery
    // lists them, and reading reports each with one typed `Unrecognized` fault at line 1.
    // (`*.json` files — one AssistantMessage object, the HTML export's decoded payload — and
    // `mk_pi.py`, `models.json.example` are not listed at all.)
    assert_eq!(
        rt.malformed,
        [
            "harness-generated/mock-request-resume-branch-a-anthropic-api.jsonl",
            "harness-generated/mock-request-resume-branch-b.jsonl",
        ]
    );
    assert_eq!(rt.faults.len(), 2, "{:?}", rt.faults);
    assert!(
        rt.faults
            .iter()
            .all(|f| f.starts_with("pi: ") && f.contains(".jsonl:1: not recognised")),
        "{:?}",
        rt.faults
    );
}

/// pond's own pi fixtures: the hand-made branches and the two sessions the real pi wrote with a
/// compaction (fixtures/pi/README.md).
#[test]
fn hand_made_nested_branches_and_real_compactions_round_trip() {
    let rt = native_round_trip(&CODEC, &dir(LOCAL)).expect("round trip runs");
    assert!(rt.faults.is_empty(), "{:?}", rt.faults);
    assert_eq!(rt.files.len(), 3);
    assert!(rt.passed(), "{}", rt.report());
}

fn logs(events: Vec<Event>) -> Vec<SessionLog> {
    let mut out: Vec<SessionLog> = Vec::new();
    for e in events {
        match e {
            Event::Session(s) => out.push(SessionLog::new(s, Vec::new())),
            Event::Message(m) => {
                let log = out
                    .iter_mut()
                    .find(|l| &l.session.id == m.session_id())
                    .expect("session before its messages");
                log.messages.push(m);
            }
        }
    }
    out
}

fn ids(log: &SessionLog) -> Vec<&str> {
    log.messages.iter().map(|m| m.id().as_str()).collect()
}

#[test]
fn main_line_is_the_session_and_side_branches_are_forks() {
    let (events, faults) = read_all(
        &CODEC,
        &dir(SHARED).join("harness-generated/v3-branching-input.jsonl"),
    )
    .unwrap();
    assert!(faults.is_empty(), "{faults:?}");
    let logs = logs(events);
    assert_eq!(logs.len(), 2);
    let (main, side) = (&logs[0], &logs[1]);
    assert_eq!(
        main.session.id.as_str(),
        "0f5e3c2a-1111-4222-8333-444455556666"
    );
    assert_eq!(main.session.parent_session_id, None);
    assert_eq!(
        ids(main),
        [
            "a0000001", "a0000002", "a0000003", "b0000001", "b0000002", "b0000003", "b0000004"
        ]
    );
    assert_eq!(
        side.session.id.as_str(),
        "0f5e3c2a-1111-4222-8333-444455556666#a0000006"
    );
    assert_eq!(
        side.session.parent_session_id.as_ref(),
        Some(&main.session.id)
    );
    assert_eq!(
        side.session.parent_message_id.as_ref().unwrap().as_str(),
        "a0000003"
    );
    assert_eq!(ids(side), ["a0000004", "a0000005", "a0000006"]);
    let roles: Vec<&str> = main.messages.iter().map(Message::role).collect();
    // model_change, thinking_level_change, label, session_info: carried whole (rule 3); the
    // branch summary is injected user text.
    assert_eq!(
        roles,
        [
            "system",
            "system",
            "user",
            "user",
            "assistant",
            "system",
            "system"
        ]
    );
    let summary = main.messages[3].parts();
    assert_eq!(summary.len(), 1);
    assert_eq!(summary[0].provenance(), Provenance::Injected);
}

#[test]
fn nested_branch_repeats_shared_entries_and_hangs_off_the_main_line() {
    let (events, faults) = read_all(&CODEC, &dir(LOCAL).join("nested-branches.jsonl")).unwrap();
    assert!(faults.is_empty(), "{faults:?}");
    let logs = logs(events);
    let got: Vec<(&str, Option<&str>, Vec<&str>)> = logs
        .iter()
        .map(|l| {
            (
                l.session.id.as_str(),
                l.session.parent_message_id.as_ref().map(|m| m.as_str()),
                ids(l),
            )
        })
        .collect();
    let root = "7c1e2d3f-0000-4000-8000-00000000beef";
    assert_eq!(
        got,
        [
            (
                root,
                None,
                vec![
                    "u0000001", "a0000001", "t0000001", "y0000001", "y0000002", "y0000003",
                    "y0000004", "y0000005"
                ]
            ),
            (
                &*format!("{root}#x0000002"),
                Some("t0000001"),
                vec!["x0000001", "x0000002"]
            ),
            (
                &*format!("{root}#x0000003"),
                Some("t0000001"),
                vec!["x0000001", "x0000003"]
            ),
        ]
    );
    // bashExecution: the command is the user's, the output injected.
    let bash = logs[2].messages[1].parts();
    let prov: Vec<Provenance> = bash.iter().map(|p| p.provenance()).collect();
    assert_eq!(prov, [Provenance::Conversational, Provenance::Injected]);
    insta::with_settings!({snapshot_path => "../../golden/pi", prepend_module_to_snapshot => false}, {
        insta::assert_json_snapshot!("nested_branches", logs);
    });
}

#[test]
fn golden_branching_session() {
    let (events, _) = read_all(
        &CODEC,
        &dir(SHARED).join("harness-generated/v3-branching-input.jsonl"),
    )
    .unwrap();
    insta::with_settings!({snapshot_path => "../../golden/pi", prepend_module_to_snapshot => false}, {
        insta::assert_json_snapshot!("v3_branching_input", logs(events));
    });
}

#[test]
fn malformed_input_gives_located_typed_faults() {
    let tmp = std::env::temp_dir().join(format!("pond-pi-bad-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    std::fs::write(
        tmp.join("s.jsonl"),
        "{\"type\":\"session\",\"version\":3,\"id\":\"s\",\"timestamp\":\"2026-01-01T00:00:00Z\",\"cwd\":\"/p\"}\n\
         {\"type\":\"message\",\"id\":\"m1\",\"parentId\":null,\"timestamp\":\"2026-01-01T00:00:01Z\",\"message\":{\"role\":\"user\",\"content\":\"hi\"}}\n\
         not json\n\
         {\"type\":\"message\",\"id\":\"m2\",\"parentId\":\"zzz\",\"timestamp\":\"2026-01-01T00:00:02Z\",\"message\":{\"role\":\"user\",\"content\":\"x\"}}\n\
         {\"type\":\"message\",\"id\":\"m3\",\"parentId\":\"m1\"",
    )
    .unwrap();
    std::fs::write(
        tmp.join("nocwd.jsonl"),
        "{\"type\":\"session\",\"id\":\"s2\",\"timestamp\":\"2026-01-01T00:00:00Z\"}\n",
    )
    .unwrap();
    let (_, faults) = read_all(&CODEC, &tmp).unwrap();
    let _ = std::fs::remove_dir_all(&tmp);
    let text: Vec<String> = faults.iter().map(ToString::to_string).collect();
    assert!(
        text.iter().any(|t| t.contains("s.jsonl:3: invalid JSON")),
        "{text:?}"
    );
    assert!(
        text.iter()
            .any(|t| t.contains("s.jsonl:4: field `parentId`")),
        "{text:?}"
    );
    assert!(
        text.iter().any(|t| t.contains("s.jsonl:5: truncated")),
        "{text:?}"
    );
    assert!(
        faults.iter().any(|f| f.kind == ParseErrorKind::NoProject),
        "{text:?}"
    );
}

//! Golden canonical forms of one Codex rollout per format generation (and a paginated fork), as
//! insta snapshots in `golden/codex/`. Review roles, part types and provenance when they change.

use pond_canonical::{Event, Message, Session, SessionLog};
use pond_codecs::codex::CODEC;
use pond_codecs::convert::read_all;
use std::path::Path;

/// The shared Codex fixtures. Their absence is a failure, never a silent pass.
fn shared(relative: &str) -> std::path::PathBuf {
    let dir = Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../shared/fixtures/codex"
    ));
    assert!(
        dir.is_dir(),
        "the shared Codex fixtures are missing: expected a folder at {}",
        dir.display()
    );
    dir.join(relative)
}

/// The canonical form of the one session in `file`.
fn canonical(file: &Path) -> SessionLog {
    let (events, errors) = read_all(&CODEC, file).expect("reads");
    assert!(errors.is_empty(), "{errors:?}");
    let mut session: Option<Session> = None;
    let mut messages: Vec<Message> = Vec::new();
    for event in events {
        match event {
            Event::Session(s) => session = Some(s),
            Event::Message(m) => messages.push(m),
        }
    }
    SessionLog::new(session.expect("one session"), messages)
}

fn snapshot(name: &str, file: &Path) {
    let log = canonical(file);
    insta::with_settings!({
        snapshot_path => "../../golden/codex",
        prepend_module_to_snapshot => false,
        description => file.file_name().unwrap().to_string_lossy().into_owned(),
        omit_expression => true,
    }, {
        insta::assert_json_snapshot!(name, log);
    });
}

#[test]
fn g0_bare_header() {
    let file = Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../fixtures/codex/g0-with-cwd"
    ))
    .join("rollout-2025-08-01T10-00-00-0198aaaa-bbbb-7ccc-8ddd-eeeeffff0003.jsonl");
    snapshot("g0_bare_header", &file);
}

#[test]
fn g1_envelope() {
    snapshot(
        "g1_envelope",
        &shared(
            "localpush-2026-02-23/rollout-2026-02-23T13-19-38-019c8a70-dda7-7f33-98ea-f30553347322.jsonl",
        ),
    );
}

#[test]
fn g2_paginated() {
    snapshot(
        "g2_paginated",
        &shared("generated-codex-0.169.0/exec-with-agents-md.jsonl"),
    );
}

#[test]
fn g2_paginated_fork() {
    snapshot(
        "g2_paginated_fork",
        &shared("generated-codex-0.169.0/fork-of-above-paginated.jsonl"),
    );
}

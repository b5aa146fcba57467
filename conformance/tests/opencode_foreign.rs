//! Foreign writes into opencode: every readable fixture of every other codec (shared and the
//! repository's own) converts into opencode, passes opencode's `validate`, reads back with the
//! opencode read face without a fault, and keeps every user text, assistant text, tool call and
//! paired tool result (spec 6.3). Crafted ids cannot steer a write out of its folder. Golden
//! snapshots of representative conversions live in `golden/foreign-opencode/` (reviewed).

use pond_canonical::{Event, Message, Session};
use pond_codecs::face::{Fidelity, Layout, Losses, Target, WriteError};
use pond_codecs::opencode::CODEC;
use pond_codecs::output::MemoryOutput;
use pond_conformance::foreign_check::{convert_one, foreign_sources};

#[test]
fn every_foreign_fixture_becomes_a_valid_faithful_opencode_session() {
    let sources = foreign_sources(CODEC.name);
    assert!(sources.len() > 50, "too few sources: {}", sources.len());
    let mut failures = Vec::new();
    let mut converted = 0;
    for (from, origin) in &sources {
        let c = match convert_one(from, &CODEC, origin, Layout::Mirror) {
            Ok(c) => c,
            Err(e) => {
                failures.push(format!("{}: {e}", origin.path().display()));
                continue;
            }
        };
        let at = format!("{} {}", from.name, c.source.display());
        if c.source_sessions == 0 {
            continue;
        }
        converted += 1;
        for e in &c.summary.write_errors {
            failures.push(format!("{at}: write error {e}"));
        }
        for p in c.invalid.iter().take(3) {
            failures.push(format!("{at}: invalid {p}"));
        }
        for f in c.read_faults.iter().take(3) {
            failures.push(format!("{at}: read back with a fault {f}"));
        }
        if c.target_sessions != c.summary.written.len() {
            failures.push(format!(
                "{at}: {} sessions written, {} read back",
                c.summary.written.len(),
                c.target_sessions
            ));
        }
        let (s, t) = (c.source_counts, c.target_counts);
        let same = s.user_texts == t.user_texts
            && s.assistant_texts == t.assistant_texts
            && s.tool_calls == t.tool_calls
            && s.paired_results == t.paired_results
            && (true == false || s.user_conversational == t.user_conversational);
        if !same {
            failures.push(format!("{at}: source {s:?} != target {t:?}"));
        }
    }
    assert!(converted > 40, "only {converted} sources held sessions");
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// A session whose id and project try to leave the output.
fn crafted(agent: &str) -> (Session, Vec<Message>) {
    let session: Session = serde_json::from_value(serde_json::json!({
        "id": "../../.bashrc", "source_agent": agent,
        "created_at": "2026-01-01T00:00:00Z", "project": "/../../etc",
        "options": {"source": {"file": "../../.bashrc"}}
    }))
    .expect("session json");
    let message: Message = serde_json::from_value(serde_json::json!({
        "role": "user", "id": "../x", "session_id": "../../.bashrc",
        "timestamp": "2026-01-01T00:00:01Z",
        "content": [{"type": "text", "id": "../x.0", "session_id": "../../.bashrc",
            "message_id": "../x", "provenance": "conversational", "text": "hi"}]
    }))
    .expect("message json");
    (session, vec![message])
}

fn write(
    session: &Session,
    messages: &[Message],
    layout: Layout,
) -> (
    Result<(), WriteError>,
    MemoryOutput,
    Vec<pond_codecs::Written>,
) {
    let face = CODEC.write.expect("writes");
    let mut w = face.writer(layout);
    let mut out = MemoryOutput::default();
    let mut losses = Losses::default();
    let mut written = Vec::new();
    let fidelity = Fidelity::decide(session, CODEC.source_agent);
    let result = (|| {
        let mut t = Target {
            out: &mut out,
            losses: &mut losses,
            written: &mut written,
        };
        w.session(session, fidelity, &mut t)?;
        for m in messages {
            w.message(m, &mut t)?;
        }
        w.end_source(&mut t)
    })();
    (result, out, written)
}

#[test]
fn crafted_ids_never_leave_the_output() {
    // Foreign: the target's ids are derived, so the path is pond's, not the session's.
    let (s, m) = crafted("claude-code");
    for layout in [Layout::Mirror, Layout::Harness] {
        let (r, out, written) = write(&s, &m, layout);
        assert!(r.is_ok(), "{r:?}");
        for path in out.files.keys() {
            assert!(
                pond_codecs::face::check_relative_path(path).is_ok(),
                "{path}"
            );
            assert!(!path.contains(".bashrc"), "{path}");
        }
        assert_eq!(written.len(), 1);
        assert_ne!(written[0].session, "../../.bashrc");
    }
    // Native: the id is the path, so the write is a typed refusal, never a file outside.
    let (s, m) = crafted(CODEC.source_agent);
    let (r, out, _) = write(&s, &m, Layout::Harness);
    assert!(matches!(r, Err(WriteError::UnsafePath { .. })), "{r:?}");
    assert!(
        out.files.keys().all(|p| !p.contains("..")),
        "{:?}",
        out.files.keys()
    );
}

/// The written files and losses of one fixture's conversion, for review.
fn golden(name: &str, from: &str, relative: &str) {
    let from = pond_codecs::find(from).expect("codec");
    let path = std::path::Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../shared/fixtures"
    ))
    .join(relative);
    assert!(path.exists(), "shared fixture missing: {}", path.display());
    let origin = from
        .read
        .expect("reads")
        .discover(&path)
        .expect("discovers")
        .remove(0);
    let c = convert_one(from, &CODEC, &origin, Layout::Mirror).expect("converts");
    assert!(
        c.invalid.is_empty() && c.read_faults.is_empty(),
        "{:?} {:?}",
        c.invalid,
        c.read_faults
    );
    let files: serde_json::Map<String, serde_json::Value> = c
        .out
        .files
        .iter()
        .map(|(k, v)| {
            let text = String::from_utf8_lossy(v);
            let value = match serde_json::from_str::<serde_json::Value>(&text) {
                Ok(v) => v,
                Err(_) => serde_json::Value::Array(
                    text.lines()
                        .map(|l| serde_json::from_str(l).unwrap_or(serde_json::Value::from(l)))
                        .collect(),
                ),
            };
            (k.clone(), value)
        })
        .collect();
    let snapshot = serde_json::json!({
        "files": files,
        "written": c.summary.written,
        "losses": c.summary.losses,
    });
    insta::with_settings!({
        snapshot_path => "../../golden/foreign-opencode",
        prepend_module_to_snapshot => false,
        description => relative.to_owned(),
        omit_expression => true,
    }, {
        insta::assert_json_snapshot!(name, snapshot);
    });
}

#[test]
fn golden_from_claude_code() {
    golden(
        "from_claude_code_short",
        "claude-code",
        "claude-code/marot-spotter/short.jsonl",
    );
}

#[test]
fn golden_from_claude_code_thinking() {
    golden(
        "from_claude_code_thinking",
        "claude-code",
        "claude-code/claude-code-log/dev-docs-messages/assistant/thinking.jsonl",
    );
}

#[test]
fn golden_from_codex() {
    golden(
        "from_codex_exec_image_toolcall",
        "codex",
        "codex/generated-codex-0.169.0/exec-image-toolcall-resume-compaction.jsonl",
    );
}

#[test]
fn golden_from_pi() {
    golden("from_pi_tool", "pi", "pi/git-ai/pi-session-tool.jsonl");
}

/// Only to keep unused-import lint quiet when a target keeps no provenance.
#[allow(dead_code)]
fn _events(_: &[Event]) {}

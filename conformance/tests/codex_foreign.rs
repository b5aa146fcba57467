//! Foreign restore into Codex (spec 6.3): every Claude Code fixture that reads cleanly becomes
//! rollouts that pass the Codex validator, read back with the Codex read face without a fault,
//! and keep every user text, assistant text, tool call and tool result of the canonical source.
//! Plus: crafted ids never leave the output, losses are reported, golden snapshots of two reviewed
//! conversions (`golden/foreign-codex/`).

use pond_canonical::{Event, Message, Part, Session, SessionLog};
use pond_codecs::convert::{convert_sources, read_all};
use pond_codecs::face::{self, Fidelity, Layout, Losses, Target, WriteError};
use pond_codecs::output::MemoryOutput;
use pond_codecs::{claude_code, codex};
use pond_conformance::foreign_check::{Converted, convert_one, fixture_dirs, fixture_sources};
use serde_json::{Value, json};
use std::path::PathBuf;

/// The shared Claude Code fixtures.
fn shared() -> PathBuf {
    fixture_dirs(&claude_code::CODEC).swap_remove(0)
}

/// What the comparison looks at, in order.
#[derive(Debug, Default, PartialEq)]
struct Content {
    /// One entry per user-slot message: its text (system text lands here too, as developer).
    user: Vec<String>,
    /// Every assistant text, in order.
    assistant: Vec<String>,
    /// (call id, name, params) of every tool call.
    calls: Vec<(String, String, Value)>,
    /// The call id of every tool result.
    results: Vec<String>,
    /// Compactions: Claude Code `compact_boundary` records in a source, Codex `compacted`
    /// lines read back.
    compactions: usize,
}

fn content(messages: &[Message]) -> Content {
    let mut c = Content::default();
    for m in messages {
        let parts = m.parts();
        match m {
            // A compaction is written as Codex's own `compacted` line, its text left out.
            Message::System(s) if pond_codecs::face::is_compact_boundary(s) => c.compactions += 1,
            Message::System(s) if s.carried_record().is_some_and(face::is_compaction_record) => {
                c.compactions += 1
            }
            Message::System(s) if s.carried_record().is_none() && !s.content.is_empty() => {
                c.user.push(s.content.as_str().to_owned());
            }
            Message::User(_) => {
                let text: String = parts
                    .iter()
                    .filter_map(|p| match p {
                        Part::Text(t) => Some(t.text.as_str()),
                        _ => None,
                    })
                    .collect();
                let images = parts.iter().any(|p| matches!(p, Part::File(_)));
                if !text.is_empty() || images || parts.iter().any(|p| matches!(p, Part::Text(_))) {
                    c.user.push(text);
                }
            }
            _ => {}
        }
        for p in &parts {
            match (m, p) {
                (Message::Assistant(_), Part::Text(t)) => {
                    c.assistant.push(t.text.as_str().to_owned())
                }
                (_, Part::ToolCall(t)) => c.calls.push((
                    t.call_id.as_str().to_owned(),
                    t.name.as_str().to_owned(),
                    t.params.as_value().clone(),
                )),
                (_, Part::ToolResult(r)) => c.results.push(r.call_id.as_str().to_owned()),
                _ => {}
            }
        }
    }
    c
}

/// Sessions with their messages, in event order.
fn logs(events: Vec<Event>) -> Vec<SessionLog> {
    let mut logs: Vec<(Session, Vec<Message>)> = Vec::new();
    for e in events {
        match e {
            Event::Session(s) => logs.push((s, Vec::new())),
            Event::Message(m) => {
                if let Some(log) = logs.iter_mut().rev().find(|(s, _)| &s.id == m.session_id()) {
                    log.1.push(m);
                }
            }
        }
    }
    logs.into_iter()
        .map(|(s, m)| SessionLog::new(s, m))
        .collect()
}

/// Every Claude Code fixture that reads without a fault, converted to Codex and read back.
fn convert_clean() -> Vec<(String, Converted)> {
    fixture_sources(&claude_code::CODEC)
        .iter()
        .filter_map(|source| {
            let c = convert_one(&claude_code::CODEC, &codex::CODEC, source, Layout::Mirror)
                .expect("converts");
            let name = source.relative().into_inner().to_owned();
            c.source_faults.is_empty().then_some((name, c))
        })
        .collect()
}

#[test]
fn every_clean_claude_code_fixture_becomes_valid_codex_rollouts_that_keep_the_conversation() {
    let mut checked = 0;
    let mut sessions = 0;
    let mut compactions = 0;
    for (name, c) in convert_clean() {
        let source = logs(c.source_events);
        assert!(
            c.summary.write_errors.is_empty(),
            "{name}: {:?}",
            c.summary.write_errors
        );
        assert_eq!(c.summary.foreign_sessions as usize, source.len(), "{name}");
        if source.is_empty() {
            continue;
        }
        // One rollout per session, each with its resume command.
        assert_eq!(
            c.out.files.len(),
            source.len(),
            "{name}: {:?}",
            c.out.files.keys()
        );
        assert_eq!(c.summary.written.len(), source.len(), "{name}");
        for w in &c.summary.written {
            assert_eq!(
                w.resume.as_deref(),
                Some(format!("codex resume {}", w.session).as_str())
            );
            assert!(w.file.ends_with(&format!("-{}.jsonl", w.session)), "{w:?}");
        }
        assert!(c.invalid.is_empty(), "{name}:\n{}", c.invalid.join("\n"));
        // Read back with the Codex read face: no fault, and the same conversation.
        assert!(c.read_faults.is_empty(), "{name}: {:#?}", c.read_faults);
        let back = logs(c.target_events);
        assert_eq!(
            back.len(),
            c.summary.written.len(),
            "{name}: sessions read back"
        );
        for w in &c.summary.written {
            let mut mine = back.iter().filter(|b| b.session.id.as_str() == w.session);
            let (Some(back), None) = (mine.next(), mine.next()) else {
                panic!(
                    "{name} -> {}: not exactly one session {}",
                    w.file, w.session
                );
            };
            let source = source
                .iter()
                .find(|s| s.session.id.as_str() == w.source_session)
                .expect("the written session is a source session");
            let (want, got) = (content(&source.messages), content(&back.messages));
            assert_eq!(got.user, want.user, "{name}: user texts");
            assert_eq!(got.assistant, want.assistant, "{name}: assistant texts");
            assert_eq!(got.calls, want.calls, "{name}: tool calls");
            // Orphan results (no call before them) are dropped and reported.
            let paired: Vec<String> = want
                .results
                .iter()
                .filter(|id| want.calls.iter().any(|(c, _, _)| c == *id))
                .cloned()
                .collect();
            assert_eq!(got.results, paired, "{name}: tool results");
            assert_eq!(got.compactions, want.compactions, "{name}: compactions");
            compactions += got.compactions;
            assert_eq!(back.session.project, source.session.project, "{name}: cwd");
            // A sub-agent names its parent thread.
            assert_eq!(
                back.session.parent_session_id.is_some(),
                source.session.parent_session_id.is_some(),
                "{name}: parent"
            );
            sessions += 1;
        }
        checked += 1;
    }
    eprintln!(
        "{checked} Claude Code sources, {sessions} sessions converted to Codex and read back"
    );
    assert!(
        checked >= 40,
        "only {checked} clean Claude Code sources were found"
    );
    // marot-spotter's real session holds one compaction (agent-sessions/small.jsonl, two, is
    // not clean).
    assert!(compactions >= 1, "no compaction was converted");
}

#[test]
fn thinking_signatures_are_reported_lost() {
    let file = shared().join("marot-spotter/tool_heavy.jsonl");
    let (events, _) = read_all(&claude_code::CODEC, &file).expect("reads");
    let signed = events.iter().any(|e| {
        match e {
        Event::Message(m) => m.parts().iter().any(|p| {
            matches!(p, Part::Reasoning(r) if r.options.to_string_lossy().contains("signature"))
        }),
        _ => false,
    }
    });
    let mut found = false;
    for (name, c) in convert_clean() {
        if let Some(loss) = c.summary.losses.kinds.get("reasoning_signature") {
            assert!(
                loss.count > 0 && loss.first.contains("message"),
                "{name}: {loss:?}"
            );
            found = true;
        }
    }
    assert!(found || !signed, "no reasoning_signature loss was reported");
    assert!(found, "no Claude Code fixture has a signed thinking block");
}

/// `Options` printed, for a quick search.
trait Lossy {
    fn to_string_lossy(&self) -> String;
}
impl Lossy for serde_json::Map<String, Value> {
    fn to_string_lossy(&self) -> String {
        Value::Object(self.clone()).to_string()
    }
}

/// A canonical session from JSON (the wire path), as a crafted input would arrive.
fn crafted(id: &str, agent: &str, path: &str) -> (Session, Message) {
    let session: Session = serde_json::from_value(json!({
        "id": id, "source_agent": agent, "created_at": "2026-03-04T05:06:07.089Z",
        "project": "/home/me/proj",
        "options": {"source": {"path": path, "payload": {}}, "pond": {"taken": ["id", "cwd", "timestamp"]}}
    }))
    .expect("session");
    let message: Message = serde_json::from_value(json!({
        "role": "user", "id": "m1", "session_id": id, "timestamp": "2026-03-04T05:06:08Z",
        "options": {"source": {"payload": {"type": "message"}}, "pond": {"taken": ["role", "content"]}},
        "content": [{"type": "text", "id": "m1.0", "session_id": id, "message_id": "m1",
                     "provenance": "conversational", "text": "hello"}]
    }))
    .expect("message");
    (session, message)
}

fn write_one(
    session: &Session,
    message: &Message,
    fidelity: Fidelity,
    layout: Layout,
) -> (Result<(), WriteError>, MemoryOutput, Losses) {
    let face = codex::CODEC.write.expect("writes");
    let mut writer = face.writer(layout);
    let mut out = MemoryOutput::default();
    let mut losses = Losses::default();
    let mut written = Vec::new();
    let mut target = Target {
        out: &mut out,
        losses: &mut losses,
        written: &mut written,
    };
    let result = writer
        .session(session, fidelity, &mut target)
        .and_then(|()| writer.message(message, &mut target))
        .and_then(|()| writer.end_source(&mut target));
    (result, out, losses)
}

#[test]
fn crafted_ids_never_leave_the_output() {
    // Foreign: the id never reaches a path; it becomes a derived UUID (and a recorded loss).
    let (session, message) = crafted("../../.bashrc", "claude-code", "../../.bashrc");
    let (result, out, losses) = write_one(&session, &message, Fidelity::Foreign, Layout::Harness);
    result.expect("a foreign write derives a UUID");
    let (uuid, derived) = codex::foreign::thread_id("claude-code", "../../.bashrc");
    assert!(derived);
    let path = format!("2026/03/04/rollout-2026-03-04T05-06-07-{uuid}.jsonl");
    assert_eq!(out.files.keys().collect::<Vec<_>>(), [&path]);
    assert!(losses.kinds.contains_key("session_id"), "{losses:?}");
    // Native, mirrored: the source path is refused as a typed error.
    let (session, message) = crafted("../../.bashrc", "codex", "../../.bashrc");
    let (result, out, _) = write_one(&session, &message, Fidelity::Native, Layout::Mirror);
    assert!(
        matches!(result, Err(WriteError::UnsafePath { .. })),
        "{result:?}"
    );
    assert!(out.files.is_empty());
    // Native, harness layout: the id in the file name is refused as a typed error.
    let (result, out, _) = write_one(&session, &message, Fidelity::Native, Layout::Harness);
    assert!(
        matches!(result, Err(WriteError::UnsafePath { .. })),
        "{result:?}"
    );
    assert!(out.files.is_empty());
}

#[test]
fn native_rollouts_install_under_their_date_folders() {
    let source = fixture_dirs(&codex::CODEC)[0].join("localpush-2026-02-23");
    let reader = codex::CODEC.read.expect("reads");
    let sources = reader.discover(&source).expect("discovers");
    let mut out = MemoryOutput::default();
    let summary = convert_sources(
        &codex::CODEC,
        &codex::CODEC,
        Layout::Harness,
        &sources,
        &mut out,
        &mut |_, _| {},
    )
    .expect("converts");
    assert!(summary.is_clean(), "{:?}", summary.write_errors);
    for (path, bytes) in &out.files {
        assert!(path.starts_with("2026/02/23/rollout-2026-02-23T"), "{path}");
        let problems = (codex::CODEC.validate.expect("validator"))(path, bytes);
        // These 0.104 files are Codex's own; only their redacted turn_context lines may differ.
        assert!(
            problems.iter().all(|p| p.contains("turn_context")),
            "{path}: {problems:?}"
        );
    }
    for w in &summary.written {
        assert_eq!(
            w.resume.as_deref(),
            Some(format!("codex resume {}", w.session).as_str())
        );
    }
    assert_eq!(out.files.len(), sources.len());
}

/// The written rollout of one conversion, as JSON lines, for a golden snapshot.
fn golden(name: &str, relative: &str) {
    let file = shared().join(relative);
    let mut out = MemoryOutput::default();
    let reader = claude_code::CODEC.read.expect("reads");
    let sources = reader.discover(&file).expect("discovers");
    let summary = convert_sources(
        &claude_code::CODEC,
        &codex::CODEC,
        Layout::Mirror,
        &sources,
        &mut out,
        &mut |_, _| {},
    )
    .expect("converts");
    assert!(
        summary.is_clean(),
        "{:?} {:?}",
        summary.errors,
        summary.write_errors
    );
    let files: Vec<Value> = out
        .files
        .iter()
        .map(|(path, bytes)| {
            let lines: Vec<Value> = String::from_utf8_lossy(bytes)
                .lines()
                .map(|l| serde_json::from_str(l).expect("JSON line"))
                .collect();
            json!({"path": path, "lines": lines})
        })
        .collect();
    let doc = json!({"files": files, "written": summary.written, "losses": summary.losses});
    insta::with_settings!({
        snapshot_path => "../../golden/foreign-codex",
        prepend_module_to_snapshot => false,
        description => relative.to_owned(),
        omit_expression => true,
    }, {
        insta::assert_json_snapshot!(name, doc);
    });
}

#[test]
fn golden_tool_heavy() {
    golden("claude_code_tool_heavy", "marot-spotter/tool_heavy.jsonl");
}

#[test]
fn golden_sample_session() {
    golden(
        "claude_code_sample_session",
        "claude-code-transcripts/sample_session.jsonl",
    );
}

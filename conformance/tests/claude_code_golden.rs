//! Golden snapshots of the canonical form of three Claude Code fixtures, one per sub-agent era
//! (inline sidechains, flat `agent-*.jsonl`, nested `subagents/` with a `.meta.json` sidecar).
//! Each snapshot lists the sessions whole and, per message, its role, id, line and parts (type,
//! provenance, and the first 80 characters of text or the tool name), which is what review needs:
//! roles, part types and provenance. Update with `INSTA_UPDATE=always` after reviewing the diff.

use pond_canonical::{Event, Message, Part};
use pond_codecs::claude_code::CODEC;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

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

fn short(text: &str) -> String {
    let mut end = text.len().min(80);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    if end < text.len() {
        format!("{}…", &text[..end])
    } else {
        text.to_owned()
    }
}

fn part_view(part: &Part) -> Value {
    let what = match part {
        Part::Text(p) => json!({"text": short(p.text.as_str())}),
        Part::Reasoning(p) => json!({"text": short(p.text.as_str())}),
        Part::File(p) => json!({"media_type": p.media_type.as_str()}),
        Part::ToolCall(p) => json!({"name": p.name.as_str(), "call_id": p.call_id.as_str()}),
        Part::ToolResult(p) => json!({
            "name": p.name.as_ref().map(|n| n.as_str()),
            "call_id": p.call_id.as_str(),
            "is_failure": p.is_failure,
        }),
        other => json!({"kind": other.kind()}),
    };
    json!({"type": part.kind(), "provenance": part.provenance(), "what": what})
}

fn message_view(m: &Message) -> Value {
    let source = &m.options()["source"];
    let mut view = json!({
        "session": m.session_id().as_str(),
        "role": m.role(),
        "id": m.id().as_str(),
        "line": source["line"],
    });
    match m {
        Message::System(s) => match s.carried_record() {
            Some(r) => view["carried"] = r.get("type").cloned().unwrap_or(Value::Null),
            None => view["text"] = short(s.content.as_str()).into(),
        },
        _ => view["parts"] = m.parts().iter().map(part_view).collect(),
    }
    if let Some(opaque) = source.get("opaque_blocks") {
        view["opaque_blocks"] = opaque.as_array().map_or(0, Vec::len).into();
    }
    view
}

fn canonical_view(input: &Path) -> Value {
    let (events, errors) = pond_codecs::convert::read_all(&CODEC, input).expect("read");
    assert!(errors.is_empty(), "{errors:#?}");
    let view: Vec<Value> = events
        .iter()
        .map(|e| match e {
            Event::Session(s) => json!({"session": s}),
            Event::Message(m) => message_view(m),
        })
        .collect();
    Value::Array(view)
}

fn snapshot(name: &str, input: &Path) {
    let view = canonical_view(input);
    insta::with_settings!({
        snapshot_path => concat!(env!("CARGO_MANIFEST_DIR"), "/../golden/claude-code"),
        prepend_module_to_snapshot => false,
        omit_expression => true,
    }, {
        insta::assert_json_snapshot!(name, view);
    });
}

#[test]
fn era1_inline_sidechains() {
    snapshot(
        "era1_inline_sidechains",
        &fixtures().join("claude-code-viewer/5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl"),
    );
}

#[test]
fn era2_flat_agent_file() {
    snapshot(
        "era2_flat_agent_file",
        &fixtures().join("claude-code-viewer/agent-test-hash-123.jsonl"),
    );
}

#[test]
fn era3_nested_subagents_with_sidecar() {
    snapshot(
        "era3_nested_subagents_with_sidecar",
        &fixtures().join("agent-sessions/subagent"),
    );
}

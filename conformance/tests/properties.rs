//! Property tests (spec 6.8): for generated sessions, native write then read gives back an equal
//! canonical session. Sessions are generated in their source form (random Claude Code transcripts
//! and Codex rollouts: texts with harness tags spliced in, tool calls with arbitrary JSON inputs,
//! results, records that are no message, unicode everywhere), read into canonical, written back
//! natively, and read again: the two canonical streams must be equal, event for event.

use pond_canonical::Event;
use pond_codecs::convert::{convert_sources, read_all};
use pond_codecs::output::MemoryOutput;
use pond_codecs::{Codec, Layout};
use proptest::prelude::*;
use serde_json::{Value, json};

fn text() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        "[a-zA-Z0-9 .,!?é漢字🙂\n]{0,40}",
        Just("<system-reminder>be brief</system-reminder>".to_owned()),
        Just("<command-name>/clear</command-name>".to_owned()),
        Just("<environment_context>\n  <cwd>/x</cwd>\n</environment_context>".to_owned()),
        Just("<user_instructions>do it</user_instructions>".to_owned()),
    ];
    prop::collection::vec(piece, 1..4).prop_map(|p| p.concat())
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        "[a-z \"\\\\]{0,12}".prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
            prop::collection::btree_map("[a-z]{1,6}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

#[derive(Debug, Clone)]
enum Turn {
    User(String),
    Assistant(String),
    Tool {
        input: Value,
        output: String,
        failed: bool,
    },
    Summary(String),
}

/// A session opens with a user turn (a transcript of records that are no message has no `cwd`,
/// so no project: the codec rightly refuses it), then anything.
fn turns() -> impl Strategy<Value = Vec<Turn>> {
    (text(), rest()).prop_map(|(first, mut rest)| {
        rest.insert(0, Turn::User(first));
        rest
    })
}

fn rest() -> impl Strategy<Value = Vec<Turn>> {
    prop::collection::vec(
        prop_oneof![
            text().prop_map(Turn::User),
            text().prop_map(Turn::Assistant),
            (
                prop::collection::btree_map("[a-z]{1,6}", json_value(), 0..3),
                text(),
                any::<bool>()
            )
                .prop_map(|(input, output, failed)| Turn::Tool {
                    input: Value::Object(input.into_iter().collect()),
                    output,
                    failed
                }),
            text().prop_map(Turn::Summary),
        ],
        0..12,
    )
}

fn ts(i: usize) -> String {
    format!(
        "2025-06-02T18:{:02}:{:02}.{:03}Z",
        (i / 60) % 60,
        i % 60,
        i % 1000
    )
}

fn claude_file(turns: &[Turn]) -> String {
    let sid = "4f3e2d1c-0000-4000-8000-000000000001";
    let mut lines = Vec::new();
    let mut parent: Option<String> = None;
    let mut push = |mut v: Value, lines: &mut Vec<String>, n: usize| {
        let uuid = format!("00000000-0000-4000-8000-{n:012}");
        if v["type"] != "summary" {
            v["uuid"] = json!(uuid);
            v["parentUuid"] = json!(parent);
            v["sessionId"] = json!(sid);
            v["cwd"] = json!("/home/dev/proj");
            v["timestamp"] = json!(ts(n));
            v["isSidechain"] = json!(false);
            v["userType"] = json!("external");
            v["version"] = json!("2.1.0");
            parent = Some(uuid);
        }
        lines.push(v.to_string());
    };
    for (i, t) in turns.iter().enumerate() {
        let n = i * 2;
        match t {
            Turn::User(s) => push(
                json!({"type": "user", "message": {"role": "user", "content": s}}),
                &mut lines,
                n,
            ),
            Turn::Assistant(s) => push(
                json!({"type": "assistant", "message": {"id": format!("msg_{n}"), "role": "assistant", "model": "claude-x",
                    "content": [{"type": "text", "text": s}]}}),
                &mut lines,
                n,
            ),
            Turn::Tool {
                input,
                output,
                failed,
            } => {
                let id = format!("toolu_{n}");
                push(
                    json!({"type": "assistant", "message": {"id": format!("msg_{n}"), "role": "assistant", "model": "claude-x",
                        "content": [{"type": "tool_use", "id": id, "name": "Bash", "input": input}]}}),
                    &mut lines,
                    n,
                );
                push(
                    json!({"type": "user", "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": id,
                        "content": output, "is_error": failed}]}}),
                    &mut lines,
                    n + 1,
                );
            }
            Turn::Summary(s) => push(
                json!({"type": "summary", "summary": s, "leafUuid": "x"}),
                &mut lines,
                n,
            ),
        }
    }
    lines.join("\n") + "\n"
}

fn codex_file(turns: &[Turn]) -> String {
    let mut lines = vec![
        json!({"timestamp": ts(0), "type": "session_meta", "payload": {
        "id": "0199aaaa-bbbb-7ccc-8ddd-eeeeffff0009", "timestamp": ts(0), "cwd": "/home/dev/proj",
        "originator": "codex_cli_rs", "cli_version": "0.104.0", "model_provider": "openai"}})
        .to_string(),
    ];
    for (i, t) in turns.iter().enumerate() {
        let item = |payload: Value| {
            json!({"timestamp": ts(i + 1), "type": "response_item", "payload": payload}).to_string()
        };
        match t {
            Turn::User(s) => lines.push(item(json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": s}]}))),
            Turn::Assistant(s) => lines.push(item(json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": s}]}))),
            Turn::Tool { input, output, .. } => {
                let call = format!("call_{i}");
                lines.push(item(json!({"type": "function_call", "name": "shell", "call_id": call, "arguments": input.to_string()})));
                lines.push(item(json!({"type": "function_call_output", "call_id": call, "output": output})));
            }
            Turn::Summary(s) => lines.push(json!({"timestamp": ts(i + 1), "type": "event_msg", "payload": {"type": "agent_reasoning", "text": s}}).to_string()),
        }
    }
    lines.join("\n") + "\n"
}

/// Reads `file` (named `name`) with `codec`, writes it back natively, reads that again.
fn read_write_read(codec: &'static Codec, name: &str, file: &str) -> (Vec<Event>, Vec<Event>) {
    let dir = tempfile::tempdir().unwrap();
    let first = dir.path().join("first");
    std::fs::create_dir_all(&first).unwrap();
    std::fs::write(first.join(name), file).unwrap();
    let (events, faults) = read_all(codec, &first).unwrap();
    assert!(
        faults.is_empty(),
        "generated source does not read cleanly: {faults:?}\n{file}"
    );
    let reader = codec.read.unwrap();
    let sources = reader.discover(&first).unwrap();
    let mut out = MemoryOutput::default();
    let summary = convert_sources(
        codec,
        codec,
        Layout::Mirror,
        &sources,
        &mut out,
        &mut |_, _| {},
    )
    .unwrap();
    assert!(
        summary.write_errors.is_empty() && summary.losses.is_empty(),
        "{summary:?}"
    );
    let second = dir.path().join("second");
    out.write_to(&second).unwrap();
    let (again, faults) = read_all(codec, &second).unwrap();
    assert!(
        faults.is_empty(),
        "the native write does not read cleanly: {faults:?}"
    );
    (events, again)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, failure_persistence: None, .. ProptestConfig::default() })]

    #[test]
    fn claude_code_native_write_then_read_is_the_identity(turns in turns()) {
        let (first, second) = read_write_read(&pond_codecs::claude_code::CODEC, "4f3e2d1c-0000-4000-8000-000000000001.jsonl", &claude_file(&turns));
        prop_assert!(first.iter().any(|e| matches!(e, Event::Message(_))));
        prop_assert_eq!(first, second);
    }

    #[test]
    fn codex_native_write_then_read_is_the_identity(turns in turns()) {
        let (first, second) = read_write_read(&pond_codecs::codex::CODEC, "rollout-2025-06-02T18-00-00-0199aaaa-bbbb-7ccc-8ddd-eeeeffff0009.jsonl", &codex_file(&turns));
        prop_assert!(first.iter().any(|e| matches!(e, Event::Message(_))));
        prop_assert_eq!(first, second);
    }
}

//! The foreign writers stream (docs/decisions.md, "Foreign writers stream"): a long session is
//! written while it is read, not held to its end, and a call whose result never comes (or comes
//! only after the next user turn) does not hold the rest of the session back. Each target's output
//! stays valid and reads back, and the loss report names what was left out.

use pond_codecs::convert::convert_sources;
use pond_codecs::face::{Layout, Output, WriteError};
use pond_codecs::output::MemoryOutput;
use pond_codecs::registry::Codec;
use pond_codecs::{claude_code, codex, opencode, pi};
use pond_conformance::foreign_check::convert_one;
use pond_conformance::roundtrip::tempdir_for;
use serde_json::{Value, json};
use std::path::PathBuf;

const TURNS: usize = 300;

/// A Codex rollout of `TURNS` turns, each a prompt, a call, its output and an answer; turn 0's
/// call is never answered, and turn 2's output comes only after turn 3's prompt. Its folder is
/// removed when the guard is dropped.
fn rollout() -> (Scratch, PathBuf) {
    let dir = tempdir_for("streaming").expect("temp dir");
    let mut lines = Vec::new();
    let mut second = 0;
    let mut line = |kind: &str, payload: Value| {
        second += 1;
        let ts = format!(
            "2026-01-01T{:02}:{:02}:{:02}.000Z",
            second / 3600,
            second / 60 % 60,
            second % 60
        );
        lines.push(json!({"timestamp": ts, "type": kind, "payload": payload}).to_string());
    };
    line(
        "session_meta",
        json!({"id": "019c8a4c-ed82-79a1-aa28-7738fc5ab61a", "timestamp": "2026-01-01T00:00:00.000Z",
               "cwd": "/work/app", "originator": "codex_cli_rs", "cli_version": "0.104.0",
               "source": "cli", "model_provider": "openai"}),
    );
    let output = |call: &str| json!({"type": "function_call_output", "call_id": call, "output": format!("output of {call}")});
    for turn in 0..TURNS {
        let call = format!("call_{turn:04}");
        line(
            "response_item",
            json!({"type": "message", "role": "user",
                   "content": [{"type": "input_text", "text": format!("prompt {turn}")}]}),
        );
        if turn == 3 {
            line("response_item", output("call_0002"));
        }
        line(
            "response_item",
            json!({"type": "function_call", "name": "shell", "call_id": call,
                   "arguments": "{\"command\":[\"ls\"]}"}),
        );
        if turn != 0 && turn != 2 {
            line("response_item", output(&call));
        }
        line(
            "response_item",
            json!({"type": "message", "role": "assistant",
                   "content": [{"type": "output_text", "text": format!("answer {turn}")}]}),
        );
    }
    let file = dir.join("rollout-2026-01-01T00-00-00-019c8a4c-ed82-79a1-aa28-7738fc5ab61a.jsonl");
    std::fs::write(&file, lines.join("\n") + "\n").expect("writes the rollout");
    (Scratch(dir), file)
}

/// A scratch folder, removed on drop (each run of this file left three behind).
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Counts the appends that reach the output before the source ends.
#[derive(Default)]
struct Counting {
    appends: usize,
    ended: bool,
    inner: MemoryOutput,
}

impl Output for Counting {
    fn append(&mut self, relative: &str, bytes: &[u8]) -> Result<(), WriteError> {
        if !self.ended {
            self.appends += 1;
        }
        self.inner.append(relative, bytes)
    }

    fn end_unit(&mut self) -> Result<(), WriteError> {
        self.ended = true;
        self.inner.end_unit()
    }
}

/// Converts the rollout to `to`; the writes stream, the output is valid and reads back, and the
/// report holds each `(loss kind, count)` of `expected`.
fn streams_into(to: &'static Codec, expected: &[(&str, u64)]) {
    let (_scratch, file) = rollout();
    let reader = codex::CODEC.read.expect("codex reads");
    let sources = reader.discover(&file).expect("discovers");
    let mut out = Counting::default();
    let summary = convert_sources(
        &codex::CODEC,
        to,
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
    // Held to the end, the session would be one append; streamed, it is about one per turn.
    assert!(
        out.appends >= TURNS / 2,
        "{}: {} appends for {TURNS} turns: the session was held, not streamed",
        to.name,
        out.appends
    );
    for (kind, count) in expected {
        let got = summary.losses.kinds.get(*kind).map_or(0, |l| l.count);
        assert_eq!(
            got, *count,
            "{}: loss {kind}: {:#?}",
            to.name, summary.losses
        );
    }
    let c = convert_one(&codex::CODEC, to, &sources[0], Layout::Mirror).expect("converts");
    assert!(c.invalid.is_empty(), "{}: {:#?}", to.name, c.invalid);
    assert!(
        c.read_faults.is_empty(),
        "{}: {:#?}",
        to.name,
        c.read_faults
    );
    // Every call answered in its turn is kept with its result.
    assert_eq!(c.target_counts.tool_results, TURNS - 2, "{}", to.name);
}

#[test]
fn codex_to_claude_code_streams_and_leaves_out_what_is_unanswered() {
    streams_into(
        &claude_code::CODEC,
        &[("tool_call_unpaired", 2), ("tool_result_unpaired", 1)],
    );
}

#[test]
fn codex_to_pi_streams_and_sends_the_unanswered_calls_unanswered() {
    streams_into(
        &pi::CODEC,
        &[("tool_call_without_result", 2), ("unpaired_tool_result", 1)],
    );
}

#[test]
fn codex_to_opencode_streams_and_leaves_the_unanswered_calls_running() {
    streams_into(
        &opencode::CODEC,
        &[("tool_call_without_result", 2), ("unpaired_tool_result", 1)],
    );
}

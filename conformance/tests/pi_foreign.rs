//! Foreign writes into pi: every readable fixture of every other codec (shared and the
//! repository's own) converts into pi, passes pi's `validate`, reads back with the
//! pi read face without a fault, and keeps every user text, assistant text, tool call and
//! paired tool result (spec 6.3). Crafted ids cannot steer a write out of its folder. Golden
//! snapshots of representative conversions live in `golden/foreign-pi/` (reviewed).

use pond_codecs::pi::CODEC;
use pond_conformance::foreign_check::{
    assert_crafted_ids_never_leave_the_output, assert_every_foreign_write_is_faithful,
    golden_document,
};

#[test]
fn every_foreign_fixture_becomes_a_valid_faithful_pi_session() {
    assert_every_foreign_write_is_faithful(&CODEC, false);
}

#[test]
fn crafted_ids_never_leave_the_output() {
    assert_crafted_ids_never_leave_the_output(&CODEC);
}

/// The written files and losses of one fixture's conversion, for review.
fn golden(name: &str, from: &str, relative: &str) {
    let snapshot = golden_document(from, &CODEC, relative);
    insta::with_settings!({
        snapshot_path => "../../golden/foreign-pi",
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
fn golden_from_opencode() {
    golden(
        "from_opencode_basic",
        "opencode",
        "opencode/harness-generated/import-input-basic.json",
    );
}

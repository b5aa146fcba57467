//! The real `claude` (2.1.197, oracle in `../shared/oracle`) resumes every fixture of the other
//! codecs (Codex, opencode, pi) that pond converted to Claude Code: the main session of each
//! source that writes a transcript (malformed ones that write nothing are listed) is resumed
//! against the (mock, loopback-only) model. Claude must accept it, and the history it sends must
//! carry every conversational user text, every assistant text and every tool call paired with
//! its result, counted against the canonical source. Claude Code has no offline mode. Skipped,
//! with the reason printed, when the oracle is not installed. One oracle run per fixture.

use pond_conformance::foreign_check::{assert_rows, count_role, oracle_rows};
use pond_conformance::oracle::Oracle;

const TARGET: &str = "claude-code";

#[test]
fn real_claude_resumes_every_converted_foreign_fixture() {
    let Some(oracle) = Oracle::locate_or_skip(TARGET) else {
        return;
    };
    let rows = oracle_rows(&oracle, TARGET, 0, &|c, r| {
        // Claude Code inserts its own texts when a transcript ends on an interrupted turn or an
        // unanswered prompt (see `claude_injected`); they are not session data.
        let sent = |role| {
            let n = count_role(r, role, "text");
            n - r.claude_injected(role).min(n)
        };
        let got = [
            ("user texts", sent("user")),
            ("assistant texts", sent("assistant")),
            ("tool_use", r.count("tool_use")),
            ("tool_result", r.count("tool_result")),
        ];
        let want = [
            c.user_conversational_nonblank,
            c.assistant_texts_nonblank,
            c.answered_calls,
            c.answered_calls,
        ];
        got.iter()
            .zip(want)
            .filter(|((_, g), w)| g != w)
            .map(|((what, g), w)| format!("{what}: claude sent {g}, the source has {w}"))
            .collect()
    });
    assert!(
        rows.iter().any(|r| r.pair.starts_with("codex")),
        "no Codex fixture reached the oracle"
    );
    assert_rows(&rows);
}

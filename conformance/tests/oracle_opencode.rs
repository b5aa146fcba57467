//! The real opencode (1.18.33, `../shared/oracle/opencode.sh`) on pond's foreign writes: every
//! multi-turn fixture of claude-code, codex and pi (a session with at least two conversational
//! user texts; the table printed names each one) is converted into an `opencode export`
//! document, imported and resumed against the loopback mock model. opencode must accept it and
//! send every user text, every tool call, and a result for each call (chat-completions `tool`
//! messages). One offline `import` -> `export` check runs per source codec. Skips, with the
//! reason printed, when the oracle is not installed.

use pond_conformance::foreign_check::{assert_rows, count_role, oracle_rows};
use pond_conformance::oracle::Oracle;

const TARGET: &str = "opencode";

#[test]
fn real_opencode_accepts_and_resumes_foreign_sessions() {
    let Some(oracle) = Oracle::locate_or_skip(TARGET) else {
        return;
    };
    let rows = oracle_rows(&oracle, TARGET, 2, &|c, r| {
        let mut problems = Vec::new();
        let (u, a, tu, tr) = (
            count_role(r, "user", "text"),
            count_role(r, "assistant", "text"),
            r.count("tool_use"),
            r.count("tool_result"),
        );
        if u < c.user_texts_nonblank {
            problems.push(format!("user texts sent {u} < {}", c.user_texts_nonblank));
        }
        if c.assistant_texts_nonblank > 0 && a == 0 {
            problems.push("no assistant text sent".to_owned());
        }
        if tu != c.tool_calls {
            problems.push(format!("tool calls sent {tu} != {}", c.tool_calls));
        }
        // opencode answers a call that has no result as interrupted, so every call is paired.
        if tr != c.tool_calls {
            problems.push(format!("tool results sent {tr} != calls {}", c.tool_calls));
        }
        problems
    });
    assert_rows(&rows);
}

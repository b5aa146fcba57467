//! The real pi (0.73.1, `../shared/oracle/pi.sh`) on pond's foreign writes: every multi-turn
//! fixture of claude-code, codex and opencode (a session with at least two conversational user
//! texts; the table printed names each one) is converted into a pi v3 session file and resumed
//! against the loopback mock model (Anthropic Messages). pi must accept it and send every user
//! text, every assistant text (unsigned thinking goes as text), every tool call, and every paired
//! result. One offline (`pi --export`) check runs per source codec. Skips, with the reason
//! printed, when the oracle is not installed.

use pond_conformance::foreign_check::{assert_rows, count_role, oracle_rows};
use pond_conformance::oracle::Oracle;

const TARGET: &str = "pi";

#[test]
fn real_pi_accepts_and_resumes_foreign_sessions() {
    let Some(oracle) = Oracle::locate_or_skip(TARGET) else {
        return;
    };
    let rows = oracle_rows(&oracle, TARGET, 2, &|c, r| {
        let mut problems = Vec::new();
        let u = count_role(r, "user", "text");
        let a = count_role(r, "assistant", "text") + count_role(r, "assistant", "thinking");
        let (tu, tr) = (r.count("tool_use"), r.count("tool_result"));
        if u < c.user_texts_nonblank {
            problems.push(format!("user texts sent {u} < {}", c.user_texts_nonblank));
        }
        if a < c.assistant_texts_nonblank {
            problems.push(format!(
                "assistant texts sent {a} < {}",
                c.assistant_texts_nonblank
            ));
        }
        if tu != c.tool_calls {
            problems.push(format!("tool calls sent {tu} != {}", c.tool_calls));
        }
        if tr < c.paired_results {
            problems.push(format!(
                "tool results sent {tr} < paired {}",
                c.paired_results
            ));
        }
        problems
    });
    assert_rows(&rows);
}

//! Real-Codex acceptance of foreign rollouts (spec 6.3, 6.8): every fixture of the other codecs
//! (Claude Code, opencode, pi) that reads cleanly and converts to Codex passes Codex 0.169's
//! offline check (`codex migrate-rollouts --apply`, every `response_item` re-read by Codex's own
//! types), and `codex exec resume` against the loopback mock model sends its whole history
//! (after a Claude Code compaction, written as Codex's own, what follows it): accepted, no
//! `session_items_not_sent`, every user and assistant turn, every tool call with its result
//! (counted against the canonical source).
//!
//! Resume runs on every multi-record fixture (and its sub-agent rollouts) and on a handful of the
//! single-record ones; the offline check on all. When the oracle is not installed the test prints
//! `SKIP: <reason>` and returns. One oracle run per rollout and mode; two run at a time.

use pond_canonical::Event;
use pond_codecs::codex;
use pond_codecs::face::Layout;
use pond_conformance::foreign_check::{Counts, convert_one, count_role, foreign_sources};
use pond_conformance::oracle::{Oracle, Report};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Single-record Claude Code fixtures resumed besides the multi-record ones: a typed prompt, an
/// image, a thinking block, an unpaired tool call, an unpaired failed tool result.
const SINGLE_RECORD_RESUMED: &[&str] = &[
    "claude-code-log/dev-docs-messages/user/user.jsonl",
    "claude-code-log/dev-docs-messages/user/image.jsonl",
    "claude-code-log/dev-docs-messages/assistant/thinking.jsonl",
    "claude-code-log/dev-docs-messages/tools/Bash-tool_use.jsonl",
    "claude-code-log/dev-docs-messages/tools/Bash-tool_result_error.jsonl",
];

/// What the canonical source says Codex must send: one user item per user message with a text
/// or a file, every assistant text, every call, and one output per call (its own, or an
/// "aborted" one Codex adds for a call left unanswered; orphan results are not written, loss
/// `orphan_tool_result`).
#[derive(Debug, Default, Clone, Copy)]
struct Expected {
    user: usize,
    assistant_text: usize,
    calls: usize,
    results: usize,
}

impl From<Counts> for Expected {
    fn from(c: Counts) -> Self {
        Self {
            user: c.user_messages,
            assistant_text: c.assistant_texts + c.assistant_empty,
            calls: c.tool_calls,
            results: c.tool_calls,
        }
    }
}

/// One rollout to check.
struct Job {
    fixture: String,
    file: PathBuf,
    resume: bool,
    expected: Expected,
}

/// Converts every clean foreign source to rollouts under `out`, one job per rollout.
fn jobs(out: &Path) -> Vec<Job> {
    let mut jobs = Vec::new();
    for (i, (from, source)) in foreign_sources(codex::CODEC.name).iter().enumerate() {
        let relative = source.relative().into_inner().to_owned();
        let fixture = format!("{} {relative}", from.name);
        let c = convert_one(from, &codex::CODEC, source, Layout::Mirror).expect("converts");
        if let Some(fault) = c.source_faults.first() {
            eprintln!("not run, malformed: {fixture}: {fault}");
            continue;
        }
        assert!(
            c.summary.is_clean(),
            "{fixture}: {:?}",
            c.summary.write_errors
        );
        let dir = out.join(format!("{i:03}"));
        c.out.write_to(&dir).expect("writes the rollouts");
        let records = c
            .source_events
            .iter()
            .filter(|e| matches!(e, Event::Message(_)))
            .count();
        let resume = records > 1 || SINGLE_RECORD_RESUMED.contains(&relative.as_str());
        for w in &c.summary.written {
            let label = if c.summary.written.len() > 1 {
                format!("{fixture} [{}]", w.source_session)
            } else {
                fixture.clone()
            };
            jobs.push(Job {
                fixture: label,
                file: dir.join(&w.file),
                resume,
                // After a Claude Code compaction (written as a `compacted` line) Codex sends
                // what follows it, as Claude Code does.
                expected: Counts::as_resumed(&c.source_events, &w.source_session, "codex").into(),
            });
        }
    }
    jobs
}

/// The outcome of one job, as a table row and its failures.
struct Outcome {
    row: String,
    failures: Vec<String>,
}

fn check(oracle: &Oracle, job: &Job, artifacts: &Path) -> Outcome {
    let mut failures = Vec::new();
    let offline = oracle.run("codex", &job.file, true, &artifacts.join("offline"));
    let offline_cell = match &offline {
        Ok(r) if r.accepted => format!("yes ({} items)", r.history.len()),
        Ok(r) => {
            failures.push(format!(
                "{}: offline check rejected: {:?}",
                job.fixture, r.reasons
            ));
            format!("NO {:?}", r.reasons)
        }
        Err(e) => {
            failures.push(format!("{}: offline check did not run: {e}", job.fixture));
            "ERROR".to_owned()
        }
    };
    let mut resume_cell = "-".to_owned();
    if job.resume {
        match oracle.run("codex", &job.file, false, &artifacts.join("resume")) {
            Ok(r) => {
                resume_cell = summary(&r);
                failures.extend(resume_failures(job, &r));
            }
            Err(e) => {
                resume_cell = "ERROR".to_owned();
                failures.push(format!("{}: resume did not run: {e}", job.fixture));
            }
        }
    }
    let e = job.expected;
    Outcome {
        row: format!(
            "| {} | {} | {} | user {} / asst text {} / calls {} / results {} |",
            job.fixture, offline_cell, resume_cell, e.user, e.assistant_text, e.calls, e.results
        ),
        failures,
    }
}

fn summary(r: &Report) -> String {
    let users = r.history.iter().filter(|t| t.role == "user").count();
    format!(
        "{} user {} / asst text {} / thinking {} / tool_use {} / tool_result {} / not sent {}",
        if r.accepted { "yes:" } else { "NO:" },
        users,
        count_role(r, "assistant", "text"),
        r.count("thinking"),
        r.count("tool_use"),
        r.count("tool_result"),
        r.raw
            .get("session_items_not_sent")
            .map_or_else(|| "?".to_owned(), |v| v.to_string())
    )
}

fn resume_failures(job: &Job, r: &Report) -> Vec<String> {
    let mut f = Vec::new();
    let name = &job.fixture;
    let only_truncation = r
        .reasons
        .iter()
        .all(|x| x.contains("were not sent to the model"))
        && not_sent(job, r).is_empty();
    if !r.accepted && !only_truncation {
        f.push(format!(
            "{name}: resume rejected (exit {}): {:?}",
            r.exit_code, r.reasons
        ));
        return f;
    }
    if r.raw.get("session_items_not_sent").and_then(|v| v.as_u64()) != Some(0) {
        // Only outputs Codex truncated may be "not sent"; anything else fails.
        f.extend(not_sent(job, r));
    }
    let e = job.expected;
    let users = r.history.iter().filter(|t| t.role == "user").count();
    let checks = [
        ("user turns", users, e.user),
        (
            "assistant texts",
            count_role(r, "assistant", "text"),
            e.assistant_text,
        ),
        ("tool_use", r.count("tool_use"), e.calls),
        ("tool_result", r.count("tool_result"), e.results),
    ];
    for (what, got, want) in checks {
        if got != want {
            f.push(format!(
                "{name}: {what}: Codex sent {got}, the source has {want}"
            ));
        }
    }
    f
}

/// The rollout's response items Codex did not send, matching a `function_call_output` by call id
/// only: Codex truncates long tool outputs in the request it sends (a 36 844-character Claude
/// WebFetch result went out as 12 023 characters), which the oracle counts as "not sent".
fn not_sent(job: &Job, r: &Report) -> Vec<String> {
    let name = &job.fixture;
    let Some(request) = r.raw.get("request_path").and_then(|p| p.as_str()) else {
        return vec![format!("{name}: no request_path in the report")];
    };
    let Ok(body) = std::fs::read(request)
        .map_err(|e| e.to_string())
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).map_err(|e| e.to_string()))
    else {
        return vec![format!("{name}: cannot read {request}")];
    };
    let body = body.get("body").unwrap_or(&body);
    let sent: Vec<String> = body
        .get("input")
        .and_then(|i| i.as_array())
        .map(|items| items.iter().map(signature).collect())
        .unwrap_or_default();
    let mut pool = sent;
    let mut missing = Vec::new();
    let text = std::fs::read_to_string(&job.file).unwrap_or_default();
    // The history a resume rebuilds: the response items, each `compacted` line replacing those
    // before it with its replacement history.
    let mut history = Vec::new();
    for line in text.lines() {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        match v.get("type").and_then(|t| t.as_str()) {
            Some("response_item") => history.push(v["payload"].clone()),
            Some("compacted") => {
                if let Some(items) = v["payload"]["replacement_history"].as_array() {
                    history = items.clone();
                }
            }
            _ => {}
        }
    }
    for item in &history {
        let sig = signature(item);
        match pool.iter().position(|s| *s == sig) {
            Some(i) => {
                pool.swap_remove(i);
            }
            None => missing.push(format!("{name}: not sent: {}", &sig[..sig.len().min(160)])),
        }
    }
    missing
}

/// What identifies an item in the request: outputs by call id (Codex may truncate them).
fn signature(p: &serde_json::Value) -> String {
    let t = p.get("type").and_then(|t| t.as_str()).unwrap_or("");
    match t {
        "function_call_output" => format!("{t} {}", p["call_id"]),
        "message" => format!("{t} {} {}", p["role"], p["content"]),
        "reasoning" => format!("{t} {}", p["summary"]),
        _ => format!("{t} {} {} {}", p["call_id"], p["name"], p["arguments"]),
    }
}

#[test]
fn claude_code_fixtures_converted_to_codex_load_and_resume_in_real_codex() {
    let Some(oracle) = Oracle::locate_or_skip("codex") else {
        return;
    };
    let base = std::env::temp_dir().join(format!("pond-oracle-codex-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    let jobs = jobs(&base.join("rollouts"));
    assert!(jobs.len() >= 40, "only {} rollouts to check", jobs.len());
    let next = Mutex::new(0usize);
    let outcomes: Mutex<Vec<(usize, Outcome)>> = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..2 {
            scope.spawn(|| {
                loop {
                    let i = {
                        let Ok(mut n) = next.lock() else { return };
                        let i = *n;
                        *n += 1;
                        i
                    };
                    let Some(job) = jobs.get(i) else { return };
                    let outcome = check(&oracle, job, &base.join(format!("artifacts/{i:03}")));
                    if let Ok(mut o) = outcomes.lock() {
                        o.push((i, outcome));
                    }
                }
            });
        }
    });
    let mut outcomes = outcomes.into_inner().expect("no worker panicked");
    outcomes.sort_by_key(|(i, _)| *i);
    eprintln!("| fixture | offline check | resume: history sent | canonical source |");
    eprintln!("|---|---|---|---|");
    let mut failures = Vec::new();
    for (_, o) in &outcomes {
        eprintln!("{}", o.row);
        failures.extend(o.failures.iter().cloned());
    }
    let resumed = jobs.iter().filter(|j| j.resume).count();
    if failures.is_empty() {
        // Artifacts are kept for a failure to be read; a passing run leaves nothing in /tmp.
        let _ = std::fs::remove_dir_all(&base);
        eprintln!("{} rollouts offline-checked, {resumed} resumed", jobs.len());
    } else {
        eprintln!(
            "{} rollouts offline-checked, {resumed} resumed; artifacts in {}",
            jobs.len(),
            base.display()
        );
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

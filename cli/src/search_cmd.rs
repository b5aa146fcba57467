//! `pond search` (spec 7.8): the `pond_search` handler from the command line. The handler (in
//! `pond-server`, shared with the HTTP API and MCP) checks and answers; this file prints.

use crate::store_cmd::{DataArgs, fail, runtime};
use pond_server::search::{MessageMatch, SearchRequest, SearchResponse, SearchRole};
use pond_server::{ErrorCode, PondError};
use std::io::IsTerminal;
use std::process::ExitCode;

/// Search the stored sessions' messages: BM25 over character 3- to 5-grams, in any language,
/// fused with vector search once messages are embedded (`[embedding] model` in config.toml and
/// `pond sync`; the results say `mode: hybrid`).
///
/// Prints one result per session, best first, with its best matches and the match marked.
/// Words match inside identifiers and paths too (`parse_session` finds `parse_session_id`).
/// Filters narrow what is searched before ranking.
///
/// Examples:
///   pond search "merge conflict" --project ~/src/pond --since 2026-03-01
///   pond search parse_session_id --agent codex --role user --limit 5
///   pond search 数据库 --json
#[derive(clap::Args)]
#[command(verbatim_doc_comment)]
pub struct SearchArgs {
    #[command(flatten)]
    data: DataArgs,
    /// What to search for (several words are one query).
    #[arg(required = true, num_args = 1.., value_name = "QUERY")]
    query: Vec<String>,
    /// Only sessions of exactly this project (the directory the session ran in).
    #[arg(long, value_name = "P")]
    project: Option<String>,
    /// Only sessions whose project starts with this.
    #[arg(long, value_name = "P")]
    project_prefix: Option<String>,
    /// Only this session and the sub-agent sessions it spawned (its id, or the first
    /// characters of it, at least 4, when no other stored id begins with them).
    #[arg(long, value_name = "ID")]
    session: Option<String>,
    /// Only sessions from this harness (claude-code, codex, opencode, pi).
    #[arg(long, value_name = "A")]
    agent: Option<String>,
    /// Only messages of this role.
    #[arg(long, value_enum, value_name = "R")]
    role: Option<Role>,
    /// Only messages at or after this time (RFC 3339, or YYYY-MM-DD).
    #[arg(long, value_name = "T")]
    since: Option<String>,
    /// Only messages before this time (RFC 3339, or YYYY-MM-DD: up to the end of that day).
    #[arg(long, value_name = "T")]
    until: Option<String>,
    /// Only matches scoring at least this.
    #[arg(long, value_name = "X")]
    min_score: Option<f32>,
    /// How many sessions to show (1 to 100).
    #[arg(long, value_name = "N", default_value_t = 10)]
    limit: u32,
    /// Instead of results: the query's grams, the prefilter, Lance's plan (analyze_plan) and
    /// which retriever produced each hit with its scores.
    #[arg(long)]
    explain: bool,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum Role {
    User,
    Assistant,
}

pub fn run(args: SearchArgs, json: bool) -> ExitCode {
    let (pond, location) = match args.data.pond() {
        Ok(p) => p,
        Err(e) => return fail("search", e),
    };
    crate::store_cmd::say_if_absent("search", &location);
    let failed = |e: PondError| failed(e, &location);
    let mut request = SearchRequest::new(args.query.join(" "));
    request.limit = Some(args.limit);
    request.project = args.project.clone();
    request.project_prefix = args.project_prefix.clone();
    request.session_id = args.session.clone();
    request.source_agent = args.agent.clone();
    request.role = args.role.map(|r| match r {
        Role::User => SearchRole::User,
        Role::Assistant => SearchRole::Assistant,
    });
    request.since = args.since.clone();
    request.until = args.until.clone();
    request.min_score = args.min_score;
    let rt = match runtime() {
        Ok(rt) => rt,
        Err(e) => return fail("search", e),
    };
    if args.explain {
        return match rt.block_on(pond_server::search::pond_search_explained(&pond, request)) {
            Ok((_, trace)) => {
                explain(&trace, json);
                ExitCode::SUCCESS
            }
            Err(e) => failed(e),
        };
    }
    let response = match rt.block_on(pond_server::search::pond_search(&pond, request)) {
        Ok(r) => r,
        Err(e) => return failed(e),
    };
    if json {
        println!("{}", serde_json::to_string_pretty(&response).expect("JSON"));
    } else {
        print_results(&response, std::io::stdout().is_terminal());
    }
    ExitCode::SUCCESS
}

/// A handler's error: a bad request is a usage error (exit 2), anything else a failure (1),
/// naming the store (never a secret).
fn failed(e: PondError, location: &pond_store::substrate::Location) -> ExitCode {
    if e.code == ErrorCode::ValidationFailed {
        fail("search", &e.message);
        return ExitCode::from(2);
    }
    fail(
        "search",
        format!("{} (store {})", e.message, location.describe()),
    )
}

fn print_results(r: &SearchResponse, tty: bool) {
    if r.results.is_empty() {
        println!("no matches");
        return;
    }
    let (on, off) = if tty {
        ("\x1b[1;33m", "\x1b[0m")
    } else {
        ("«", "»")
    };
    for (i, s) in r.results.iter().enumerate() {
        let day = s.created_at.get(..10).unwrap_or(&s.created_at);
        println!(
            "{:>2}. {}  {}  {}  {}  score {:.2}",
            i + 1,
            s.session_id,
            s.source_agent,
            s.project,
            day,
            s.score
        );
        for m in &s.matches {
            let when = m
                .timestamp
                .get(..16)
                .unwrap_or(&m.timestamp)
                .replace('T', " ");
            let sub = if m.session_id == s.session_id {
                String::new()
            } else {
                format!(" (sub-agent {})", m.session_id)
            };
            println!("    {:<9} {when}{sub}  {}", m.role, excerpt(m, on, off));
        }
    }
}

/// One line of a match: around its first highlight, the matches marked.
fn excerpt(m: &MessageMatch, on: &str, off: &str) -> String {
    const WIDTH: usize = 160;
    let (text, marks, offset) = match &m.snippet {
        Some(s) if !s.highlights.is_empty() || m.highlights.is_empty() => {
            (s.text.as_str(), s.highlights.as_slice(), s.start)
        }
        _ => (m.text.as_str(), m.highlights.as_slice(), 0),
    };
    let chars: Vec<char> = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let first = marks.first().map_or(0, |h| h[0] as usize);
    let start = first.saturating_sub(WIDTH / 4);
    let end = (start + WIDTH).min(chars.len());
    let mut out = String::new();
    if start > 0 || offset > 0 {
        out.push('…');
    }
    for (i, c) in chars.iter().enumerate().take(end).skip(start) {
        if marks.iter().any(|h| h[0] as usize == i) {
            out.push_str(on);
        }
        out.push(*c);
        if marks.iter().any(|h| h[1] as usize == i + 1) {
            out.push_str(off);
        }
    }
    if end < chars.len() || (offset as usize + end) < m.text_chars as usize {
        out.push('…');
    }
    out
}

fn explain(t: &pond_store::search::SearchTrace, json: bool) {
    let budget = pond_store::search::query::RECALL_POSTINGS_BUDGET;
    if json {
        let out = serde_json::json!({
            "terms": t.terms.iter().map(|(g, df)| serde_json::json!({"term": g, "document_frequency": df})).collect::<Vec<_>>(),
            "documents": t.documents,
            "average_length": t.average_length,
            "recall_terms": t.recall.iter().map(|c| serde_json::json!({"term": c.window.term, "document_frequency": c.document_frequency})).collect::<Vec<_>>(),
            "postings_budget": budget,
            "prefilter": t.filter,
            "rounds": t.rounds.iter().map(|(asked, got)| serde_json::json!({"pool": asked, "candidates": got})).collect::<Vec<_>>(),
            "plan": t.plan,
            "hits": t.hits.iter().map(|h| serde_json::json!({
                "session_id": h.session_id, "message_id": h.message_id, "retriever": h.retriever,
                "recall_score": h.recall_score, "score": h.score,
                "arms": h.arms.iter().map(|a| serde_json::json!({"arm": a.arm, "raw": a.raw, "normalized": a.normalized})).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
            "arms": t.arms.iter().map(|a| serde_json::json!({
                "arm": a.name, "weight": a.weight, "min": a.min, "max": a.max,
                "sessions": a.sessions.iter().map(|(id, raw)| serde_json::json!({"session_id": id, "raw": raw})).collect::<Vec<_>>(),
                "rounds": a.rounds.iter().map(|(asked, got)| serde_json::json!({"pool": asked, "candidates": got})).collect::<Vec<_>>(),
                "plan": a.plan,
            })).collect::<Vec<_>>(),
        });
        println!("{}", serde_json::to_string_pretty(&out).expect("JSON"));
        return;
    }
    println!(
        "query grams: {} (3 to 5 characters); rows with text: {}, {:.1} grams on average",
        t.terms.len(),
        t.documents,
        t.average_length
    );
    let recall: Vec<String> = t
        .recall
        .iter()
        .map(|c| format!("{:?} {}", c.window.term, c.document_frequency))
        .collect();
    println!(
        "recall step: Lance BM25 over these grams (rows holding each; budget {budget} postings): {}",
        if recall.is_empty() {
            "none: no stored row holds any".to_owned()
        } else {
            recall.join(", ")
        }
    );
    println!(
        "prefilter (through scalar indexes, before ranking): {}",
        t.filter.as_deref().unwrap_or("none")
    );
    for (asked, got) in &t.rounds {
        println!("candidate pool: asked {asked}, got {got}");
    }
    println!("ranking step: BM25 over every gram of the query, for each candidate");
    println!("Lance analyze_plan of the recall query:");
    for line in t.plan.as_deref().unwrap_or("(none)").lines() {
        println!("  {line}");
    }
    if t.arms.is_empty() {
        println!("hits: retriever, Lance's recall score, BM25 over every gram");
        for h in &t.hits {
            println!(
                "  {} {}  {}  recall {:.3}  bm25 {:.3}",
                h.session_id, h.message_id, h.retriever, h.recall_score, h.score
            );
        }
        return;
    }
    println!("hybrid: each arm's session scores divided by its best, summed with weights");
    for a in &t.arms {
        println!(
            "arm {}: weight {:.2}, {} sessions, raw scores {:.4} to {:.4}",
            a.name,
            a.weight,
            a.sessions.len(),
            a.min,
            a.max
        );
        for (asked, got) in &a.rounds {
            println!("  candidate pool: asked {asked}, got {got}");
        }
        if a.name == pond_store::search::VECTOR {
            println!("Lance analyze_plan of the vector query:");
            for line in a.plan.as_deref().unwrap_or("(none)").lines() {
                println!("  {line}");
            }
        }
    }
    println!("hits: fused score, then each arm's raw and normalized score");
    for h in &t.hits {
        let arms: Vec<String> = h
            .arms
            .iter()
            .map(|a| format!("{} {:.4} -> {:.3}", a.arm, a.raw, a.normalized))
            .collect();
        println!(
            "  {} {}  fused {:.3}  {}",
            h.session_id,
            h.message_id,
            h.score,
            arms.join(", ")
        );
    }
}

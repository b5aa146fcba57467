//! `pond get`: a stored session in size-bounded pages, or one message with its neighbours.
//! The paging is `pond_store::get`'s (shared with the HTTP API and MCP); this file prints it.

use crate::store_cmd::{DataArgs, fail, runtime};
use pond_store::get::{
    DEFAULT_BUDGET_BYTES, GetRequest, GetResponse, MessagePage, MessageView, ResponseMode,
    SessionPage,
};
use std::process::ExitCode;

/// How much of each message to show.
#[derive(Clone, Copy, clap::ValueEnum)]
pub enum Mode {
    /// What the user and the model said, with a one-line summary of each message's parts.
    Conversational,
    /// Every message (system text, tool results, carried records), each with its text and
    /// parts summary.
    Complete,
    /// Every message with all of its parts, as the canonical model holds them.
    Verbatim,
}

/// Show a stored session, a page at a time, or one message with the messages around it.
///
/// Pages are bounded by --budget (bytes of JSON) and never cut a message in two; when more
/// remain, the last line says how to get the next page (`--after-id`).
#[derive(clap::Args)]
pub struct GetArgs {
    #[command(flatten)]
    data: DataArgs,
    /// The session id (as `pond sessions` lists it), or its first characters (at least 4)
    /// when no other stored id begins with them.
    session: String,
    /// How much of each message to show (session mode).
    #[arg(long, value_enum, default_value_t = Mode::Conversational)]
    mode: Mode,
    /// Show this message with all of its parts (message mode).
    #[arg(long, value_name = "ID")]
    message: Option<String>,
    /// In message mode, how many messages to show on each side of it.
    #[arg(long, value_name = "N", default_value_t = 0, requires = "message")]
    context: usize,
    /// Continue after this id (the message id, or in message mode the part id, a page ended on).
    #[arg(long, value_name = "ID")]
    after_id: Option<String>,
    /// The page's size budget in bytes of JSON.
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_BUDGET_BYTES)]
    budget: usize,
}

pub fn run(args: GetArgs, json: bool) -> ExitCode {
    let request = GetRequest {
        session_id: args.session.clone(),
        response_mode: match args.mode {
            Mode::Conversational => ResponseMode::Conversational,
            Mode::Complete => ResponseMode::Complete,
            Mode::Verbatim => ResponseMode::Verbatim,
        },
        message_id: args.message.clone(),
        context_depth: args.context,
        after_id: args.after_id.clone(),
        budget_bytes: args.budget,
    };
    let rt = match runtime() {
        Ok(rt) => rt,
        Err(e) => return fail("get", e),
    };
    let opened = match args.data.open_to_read(&rt, "get") {
        Ok(o) => o,
        Err(e) => return fail("get", e),
    };
    let response = match rt.block_on(pond_store::get::get(&opened.store, &request)) {
        Ok(r) => r,
        Err(e) => return opened.fail("get", e),
    };
    if json {
        println!("{}", serde_json::to_string_pretty(&response).expect("JSON"));
        return ExitCode::SUCCESS;
    }
    match response {
        GetResponse::Session(page) => print_session(&page, &args),
        GetResponse::Message(page) => print_message(&page),
    }
    ExitCode::SUCCESS
}

fn print_session(page: &SessionPage, args: &GetArgs) {
    let s = &page.session;
    println!(
        "session {} ({}, {}) created {}, {} messages",
        s.id, s.source_agent, s.project, s.created_at, s.message_count
    );
    if let Some(parent) = &s.parent_session_id {
        println!("child of {parent}");
    }
    for m in &page.messages {
        print_view(m);
    }
    if let Some(next) = &page.next_after_id {
        println!(
            "\n... {} more: pond get {} --mode {} --after-id {next}",
            page.messages_remaining,
            s.id,
            mode_name(args.mode)
        );
    }
}

fn print_message(page: &MessagePage) {
    for m in &page.before {
        print_view(m);
    }
    println!("\n>>> target message");
    print_view(&page.target);
    for p in &page.target_parts {
        println!(
            "{}",
            serde_json::to_string_pretty(p).expect("a part is JSON")
        );
    }
    if let Some(next) = &page.next_after_id {
        println!(
            "... {} more parts: pond get {} --message {} --after-id {next}",
            page.target_parts_remaining, page.session.id, page.target.id
        );
    }
    println!("<<<");
    for m in &page.after {
        print_view(m);
    }
}

fn print_view(m: &MessageView) {
    println!("\n── {} · {} · {}", m.role, m.timestamp, m.id);
    if let Some(text) = &m.text {
        println!("{text}");
    }
    if let Some(s) = &m.parts_summary {
        let mut kinds: Vec<String> = s.kinds.iter().map(|(k, n)| format!("{k} {n}")).collect();
        if s.injected > 0 {
            kinds.push(format!("{} injected", s.injected));
        }
        if !kinds.is_empty() {
            let tools = if s.tools.is_empty() {
                String::new()
            } else {
                format!("; tools: {}", s.tools.join(", "))
            };
            println!("  [{}{tools}]", kinds.join(", "));
        }
    }
    if let Some(message) = &m.message {
        println!(
            "{}",
            serde_json::to_string_pretty(message).expect("a message is JSON")
        );
    }
}

fn mode_name(mode: Mode) -> &'static str {
    match mode {
        Mode::Conversational => "conversational",
        Mode::Complete => "complete",
        Mode::Verbatim => "verbatim",
    }
}

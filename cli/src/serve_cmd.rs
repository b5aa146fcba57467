//! `pond serve`, `pond mcp` and `pond mcp install` (spec 7.8): the transports of `pond-server`
//! started from the command line, and pond's MCP server registered with a harness.

use crate::store_cmd::{DataArgs, fail, runtime};
use pond_server::Pond;
use pond_server::mcp_install::{self, EnvValue, Harness, Scope, ServerCommand};
use pond_store::substrate::{Backend, SERVE_INDEX_CACHE_BYTES};
use std::net::SocketAddr;
use std::process::ExitCode;

/// The transport.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Transport {
    /// HTTP+JSON: POST /v1/search, /v1/get, /v1/ingest; GET /v1/schema, /v1/stats.
    Http,
    /// MCP over stdin/stdout (what `pond mcp` runs).
    Stdio,
}

/// Serve the store over HTTP (the default) or MCP.
///
/// HTTP binds 127.0.0.1:7433 unless told otherwise; every response carries X-Pond-Request-Id,
/// which the log line of the request (on stderr) carries too. SIGTERM or Ctrl-C stops taking
/// requests and lets those in flight finish. HTTP runs one serving thread per core
/// (TOKIO_WORKER_THREADS=N for another number); each connection stays on one of them.
#[derive(clap::Args)]
pub struct ServeArgs {
    #[command(flatten)]
    data: DataArgs,
    /// The transport.
    #[arg(long, value_enum, default_value_t = Transport::Http)]
    transport: Transport,
    /// Where HTTP listens (port 0: any free port, printed at start).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:7433")]
    bind: SocketAddr,
    /// How many HTTP requests run at once (the rest wait).
    #[arg(long, value_name = "N", default_value_t = pond_server::http::DEFAULT_CONCURRENCY)]
    concurrency: usize,
    #[command(flatten)]
    cache: CacheArgs,
}

/// The memory a server gives to the search index.
#[derive(clap::Args)]
pub struct CacheArgs {
    /// MiB of search-index pages kept in memory (posting lists read once, reused by every
    /// search); the rest of the process takes about 500 MiB under load at 1M messages.
    #[arg(long, value_name = "MIB", default_value_t = SERVE_INDEX_CACHE_BYTES >> 20)]
    index_cache: usize,
}

impl CacheArgs {
    /// Applies the setting to every store this process opens from now on.
    fn apply(&self) {
        pond_store::substrate::set_index_cache(self.index_cache.saturating_mul(1 << 20));
    }
}

/// Serve the store over MCP on stdin/stdout (the same as `pond serve --transport stdio`), or
/// register that server with a harness.
///
/// The tools are pond_search and pond_get; the resources schema://pond and stats://pond.
#[derive(clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct McpArgs {
    #[command(flatten)]
    data: DataArgs,
    #[command(flatten)]
    cache: CacheArgs,
    #[command(subcommand)]
    command: Option<McpCommand>,
}

#[derive(clap::Subcommand)]
pub enum McpCommand {
    /// Register `pond mcp` with a harness, in its configuration file (idempotent).
    ///
    /// The entry names this pond binary and the store by absolute path: a harness does not pass
    /// its environment to the servers it starts. Every other setting in the file is kept.
    ///
    /// Examples:
    ///   pond mcp install --for claude-code
    ///   pond mcp install --for codex --scope project --print
    #[command(verbatim_doc_comment)]
    Install(InstallArgs),
}

#[derive(clap::Args)]
pub struct InstallArgs {
    #[command(flatten)]
    data: DataArgs,
    /// The harness to register with.
    #[arg(long = "for", value_enum, value_name = "HARNESS")]
    harness: HarnessArg,
    /// The user's configuration (all projects), or this directory's project.
    #[arg(long, value_enum, default_value_t = ScopeArg::User)]
    scope: ScopeArg,
    /// Show the file as it would be, and write nothing.
    #[arg(long)]
    print: bool,
    /// For an object store whose credentials are in the environment: write their values into
    /// the harness's file. Without it the entry names the variables, and the harness passes
    /// them on from its own environment.
    #[arg(long)]
    write_secrets: bool,
}

#[derive(Clone, Copy, clap::ValueEnum)]
pub enum HarnessArg {
    #[value(alias = "claude")]
    ClaudeCode,
    Codex,
    Opencode,
}

#[derive(Clone, Copy, clap::ValueEnum)]
pub enum ScopeArg {
    User,
    Project,
}

/// A server outlives its peers: a client that hangs up must cost that client's request, not the
/// process. `main` gives SIGPIPE its default action (a closed pipe ends a CLI verb quietly); a
/// server sets it back to "ignore", so that a write to a closed socket or stdout fails with
/// `BrokenPipe`, which the transport handles.
fn survive_closed_peers() {
    #[cfg(unix)]
    // SAFETY: called before the server's runtime starts, while `main`'s thread is the only one.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
    }
}

/// `pond serve`'s HTTP threads each run their own requests from start to end (one
/// single-threaded runtime per thread: `pond_server::http::serve`), so a store read through
/// Lance's io_uring reader can be submitted and completed by the thread that needs it instead
/// of a ring thread woken for each read (docs/decisions.md, "One runtime per serving thread").
/// Lance reads the switch from the environment as it opens each file; set here, before the
/// store is opened, unless the person running pond set it either way.
fn reads_completed_by_their_thread() {
    const SWITCH: &str = "LANCE_URING_CURRENT_THREAD";
    if std::env::var_os(SWITCH).is_none() {
        // SAFETY: called first thing in the verb, while `main`'s thread is the only one.
        unsafe { std::env::set_var(SWITCH, "1") }
    }
}

pub fn serve(args: ServeArgs, _json: bool) -> ExitCode {
    survive_closed_peers();
    if matches!(args.transport, Transport::Http) {
        reads_completed_by_their_thread();
    }
    args.cache.apply();
    let (pond, location) = match args.data.pond() {
        Ok(p) => p,
        Err(e) => return fail("serve", e),
    };
    match args.transport {
        Transport::Stdio => mcp_stdio(pond),
        Transport::Http => http(pond, &location.describe(), args.bind, args.concurrency),
    }
}

pub fn mcp(args: McpArgs, json: bool) -> ExitCode {
    match args.command {
        Some(McpCommand::Install(a)) => install(a, json),
        None => {
            args.cache.apply();
            match args.data.pond() {
                Ok((pond, _)) => {
                    survive_closed_peers();
                    mcp_stdio(pond)
                }
                Err(e) => fail("mcp", e),
            }
        }
    }
}

fn mcp_stdio(pond: Pond) -> ExitCode {
    let rt = match runtime() {
        Ok(rt) => rt,
        Err(e) => return fail("mcp", e),
    };
    match rt.block_on(pond_server::mcp::serve_stdio(pond)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail("mcp", e),
    }
}

fn http(pond: Pond, store: &str, bind: SocketAddr, concurrency: usize) -> ExitCode {
    let listener = match std::net::TcpListener::bind(bind) {
        Ok(l) => l,
        Err(e) => return fail("serve", format!("cannot listen on {bind}: {e}")),
    };
    let local = listener
        .local_addr()
        .map_or(bind.to_string(), |a| a.to_string());
    let workers = serving_threads();
    eprintln!(
        "pond serve: store {store}, {workers} serving thread{}, listening on http://{local}",
        if workers == 1 { "" } else { "s" }
    );
    let router = pond_server::http::router(pond, concurrency);
    let shutdown = async {
        use tokio::signal::unix::{SignalKind, signal};
        let mut term = match signal(SignalKind::terminate()) {
            Ok(s) => s,
            Err(_) => return std::future::pending().await,
        };
        tokio::select! {
            _ = term.recv() => {}
            _ = tokio::signal::ctrl_c() => {}
        }
        eprintln!("pond serve: stopping; letting requests in flight finish");
    };
    match pond_server::http::serve(listener, router, workers, shutdown) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail("serve", e),
    }
}

/// How many threads serve HTTP: `TOKIO_WORKER_THREADS` where set (tokio's own name for it), else
/// one per core.
fn serving_threads() -> usize {
    std::env::var("TOKIO_WORKER_THREADS")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .filter(|&n: &usize| n > 0)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

fn install(args: InstallArgs, json: bool) -> ExitCode {
    let location = match args.data.location() {
        Ok(l) => l,
        Err(e) => return fail("mcp install", e),
    };
    let uri = location.uri().to_owned();
    // The store by absolute path: the harness starts pond from wherever it runs.
    let uri = if uri.contains("://") {
        uri
    } else {
        std::path::absolute(&uri).map_or(uri, |p| p.display().to_string())
    };
    let mut server_args = vec!["mcp".into(), "--data".into(), uri];
    if let Some(ns) = args.data.namespace() {
        server_args.extend(["--namespace".into(), ns.to_owned()]);
    }
    let env = if location.backend() == Backend::ObjectStore {
        object_store_env(args.write_secrets)
    } else {
        Vec::new()
    };
    let program = match std::env::current_exe() {
        Ok(p) => p.display().to_string(),
        Err(e) => {
            return fail(
                "mcp install",
                format!("cannot tell where this pond binary is: {e}"),
            );
        }
    };
    let inherited: Vec<String> = env
        .iter()
        .filter(|(_, v)| *v == EnvValue::Inherit)
        .map(|(k, _)| k.clone())
        .collect();
    let command = ServerCommand {
        program,
        args: server_args,
        env,
    };
    let Some(home) = std::env::var_os("HOME").filter(|h| !h.is_empty()) else {
        return fail("mcp install", mcp_install::InstallError::NoHome);
    };
    let cwd = match std::env::current_dir() {
        Ok(d) => d,
        Err(e) => return fail("mcp install", format!("no current directory: {e}")),
    };
    let harness = match args.harness {
        HarnessArg::ClaudeCode => Harness::ClaudeCode,
        HarnessArg::Codex => Harness::Codex,
        HarnessArg::Opencode => Harness::Opencode,
    };
    let scope = match args.scope {
        ScopeArg::User => Scope::User,
        ScopeArg::Project => Scope::Project,
    };
    let env_dir = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(std::path::PathBuf::from)
    };
    let file = mcp_install::config_file(
        harness,
        scope,
        std::path::Path::new(&home),
        &cwd,
        mcp_install::HarnessDirs {
            claude_config_dir: env_dir("CLAUDE_CONFIG_DIR").as_deref(),
            codex_home: env_dir("CODEX_HOME").as_deref(),
            xdg_config_home: env_dir("XDG_CONFIG_HOME").as_deref(),
        },
    );
    let existing = match std::fs::read_to_string(&file) {
        Ok(t) => Some(t),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return fail("mcp install", format!("{}: {e}", file.display())),
    };
    let plan = match mcp_install::plan(harness, &file, existing.as_deref(), &command) {
        Ok(p) => p,
        Err(e) => {
            // Say what to add by hand when pond cannot rewrite the file.
            let hint = mcp_install::plan(harness, &file, None, &command)
                .map(|p| format!("\nthe entry:\n{}", p.entry))
                .unwrap_or_default();
            return fail("mcp install", format!("{e}{hint}"));
        }
    };
    let done = if args.print || plan.unchanged {
        Ok(())
    } else {
        mcp_install::apply(&plan)
    };
    if let Err(e) = done {
        return fail("mcp install", e);
    }
    let what = if plan.unchanged {
        "already registered; nothing changed"
    } else if args.print {
        "would be written (--print: nothing written)"
    } else if plan.creates {
        "created"
    } else {
        "updated"
    };
    if json {
        println!(
            "{}",
            serde_json::json!({"file": plan.file, "status": what, "entry": plan.entry, "written": !args.print && !plan.unchanged})
        );
    } else {
        println!("{}: {what}", plan.file.display());
        println!("{}", plan.entry);
        if !inherited.is_empty() {
            println!(
                "the harness passes {} on from its own environment (nothing secret is written; --write-secrets writes the values)",
                inherited.join(", ")
            );
        }
        if args.print && !plan.unchanged {
            println!("--- the whole file would be:\n{}", plan.text);
        }
    }
    ExitCode::SUCCESS
}

/// What a harness must give `pond mcp` to reach an object store, since a harness does not pass
/// its whole environment on: every standard storage variable set here (the endpoint and region
/// by value; the credentials by name, or by value with `write_secrets`), and the configuration
/// file when it is not where `pond mcp` would look from the home folder alone.
fn object_store_env(write_secrets: bool) -> Vec<(String, EnvValue)> {
    let mut env = Vec::new();
    for (name, secret) in crate::storage::VARIABLES {
        let Some(value) = std::env::var(name).ok().filter(|v| !v.is_empty()) else {
            continue;
        };
        let value = if *secret && !write_secrets {
            EnvValue::Inherit
        } else {
            EnvValue::Value(value)
        };
        env.push(((*name).to_owned(), value));
    }
    let home_default = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(|h| std::path::PathBuf::from(h).join(".config/pond/config.toml"));
    if let Some(path) = crate::config::config_path().filter(|p| p.is_file())
        && Some(&path) != home_default.as_ref()
    {
        let path = std::path::absolute(&path).unwrap_or(path);
        env.push((
            "POND_CONFIG".into(),
            EnvValue::Value(path.display().to_string()),
        ));
    }
    env
}

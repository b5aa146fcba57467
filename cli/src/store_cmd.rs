//! The store verbs (spec 7.8): `pond sync`, `pond sessions`, `pond status`, `pond restore`.
//! Flags in, `pond_store` calls out; built only with the `store` feature.

use indicatif::{ProgressBar, ProgressStyle};
use pond_codecs::output::DirOutput;
use pond_codecs::{Codec, Layout, registry};
use pond_server::Pond;
use pond_store::sessions::SessionStore;
use pond_store::substrate::Location;
use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

/// Where the store is: `--data URI`, else `POND_DATA`, else `$XDG_DATA_HOME/pond`; and which
/// namespace under it.
#[derive(clap::Args, Clone)]
pub struct DataArgs {
    /// The store: a directory, `file://...`, or an object-store URI (`s3://bucket/prefix`,
    /// `gs://...`, `az://...`; settings from the AWS variables or `[storage]` in config.toml).
    /// On Linux a local store is read through io_uring where the kernel allows it
    /// (POND_IO_URING=0 turns that off).
    #[arg(long = "data", value_name = "URI", env = "POND_DATA", global = true)]
    data: Option<String>,
    /// The namespace under the store (`pond namespace list`); the store's own (`default`)
    /// when left out.
    #[arg(
        long = "namespace",
        value_name = "NAME",
        env = "POND_NAMESPACE",
        global = true
    )]
    namespace: Option<String>,
}

/// A store opened for a verb: the namespace's store, and where it is (for messages).
pub(crate) struct Opened {
    pub store: std::sync::Arc<SessionStore>,
    pub location: Location,
}

impl Opened {
    /// A store fault, naming the store (and its endpoint: never a secret).
    pub fn fail(&self, verb: &str, e: impl std::fmt::Display) -> ExitCode {
        fail(verb, format!("{e} (store {})", self.location.describe()))
    }
}

impl DataArgs {
    /// `--data`/`POND_DATA`, else `data` in config.toml, else the embedded default.
    fn uri_in(&self, config: &crate::config::Config) -> Result<String, String> {
        if let Some(d) = self.data.as_ref().filter(|d| !d.is_empty()) {
            return Ok(d.clone());
        }
        if let Some(d) = config.data.as_ref().filter(|d| !d.is_empty()) {
            return Ok(crate::config::expand_home(d).display().to_string());
        }
        pond_store::default_data_dir()
            .map(|p| p.display().to_string())
            .ok_or_else(|| "no data directory: set --data, POND_DATA or XDG_DATA_HOME".to_owned())
    }

    /// The store's location, with the storage options its scheme takes from the environment and
    /// `[storage]` in config.toml.
    pub(crate) fn location(&self) -> Result<Location, String> {
        let config = crate::config::load()?;
        let uri = self.uri_in(&config)?;
        let settings = crate::storage::settings(&config.storage, |k| std::env::var(k).ok())?;
        crate::storage::location(&uri, &settings)
    }

    /// `--namespace`, when given.
    pub(crate) fn namespace(&self) -> Option<&str> {
        self.namespace.as_deref().filter(|n| !n.is_empty())
    }

    /// The pond at the store, where an omitted namespace selects `--namespace`.
    pub(crate) fn pond(&self) -> Result<(Pond, Location), String> {
        let location = self.location()?;
        let config = crate::config::load()?;
        let mut pond = Pond::open(location.clone()).with_vector_settings(config.vector_settings());
        // The model is named here and loaded only by a search that needs it (spec 8).
        if let Some((model, dir)) = config.embedding_model()? {
            pond = pond.with_embedding(pond_server::embedding::EmbeddingModel::new(model, dir));
        }
        if let Some(ns) = self.namespace() {
            pond = pond.with_default_namespace(ns);
        }
        Ok((pond, location))
    }

    /// [`DataArgs::open`] for a verb that only reads: a local store that does not exist is
    /// read as empty, as it should be before the first sync, but a path given by mistake must
    /// not look like an empty store, so the verb says so on stderr.
    pub(crate) fn open_to_read(
        &self,
        rt: &tokio::runtime::Runtime,
        verb: &str,
    ) -> Result<Opened, String> {
        let opened = self.open(rt)?;
        say_if_absent(verb, &opened.location);
        Ok(opened)
    }

    /// The store of `--namespace` (else the default), resolved as a request's namespace is
    /// (wire-namespace-resolution): a namespace not provisioned is refused.
    pub(crate) fn open(&self, rt: &tokio::runtime::Runtime) -> Result<Opened, String> {
        let (pond, location) = self.pond()?;
        let store = rt
            .block_on(pond.namespace(None))
            .map_err(|e| format!("{} (store {})", e.message, location.describe()))?;
        Ok(Opened { store, location })
    }
}

/// Says on stderr that a local store does not exist (yet), for the verbs that only read it.
pub(crate) fn say_if_absent(verb: &str, location: &Location) {
    if location.backend() != pond_store::substrate::Backend::Local {
        return;
    }
    let path = location.uri();
    let path = std::path::Path::new(path.strip_prefix("file://").unwrap_or(path));
    if !path.exists() {
        eprintln!(
            "pond {verb}: no store at {} (`pond sync` makes one there; --data, POND_DATA or config.toml name another)",
            pond_canonical::escape_controls(&path.display().to_string())
        );
    }
}

/// The stages of `pond sync`, in order.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug, clap::ValueEnum)]
pub enum Stage {
    /// Read every configured source into the store.
    Import,
    /// Fill message embeddings (off unless a model is configured).
    Embed,
    /// Fold new rows into the search indexes.
    UpdateIndexes,
}

/// Import sessions from every configured source into the store, then embed and index.
///
/// Sources default to each harness's standard location (~/.claude/projects, ~/.codex/sessions
/// and archived_sessions, opencode's database, ~/.pi/agent/sessions); `--source codec=path`
/// replaces them. A second sync of unchanged sources inserts nothing, and nothing stored is
/// ever overwritten by a source that changed.
#[derive(clap::Args)]
pub struct SyncArgs {
    #[command(flatten)]
    data: DataArgs,
    /// Run only this stage.
    #[arg(long, value_enum, conflicts_with = "skip")]
    only: Option<Stage>,
    /// Skip this stage (repeatable).
    #[arg(long, value_enum)]
    skip: Vec<Stage>,
    /// A source as `codec=path` (repeatable); replaces the configured sources.
    #[arg(long = "source", value_name = "CODEC=PATH")]
    sources: Vec<String>,
    /// Feed a `.pond` archive (from `pond export`) into the import stage; like `--source`, it
    /// replaces the configured sources (with `--source`, both are imported).
    #[arg(long = "import-from", value_name = "ARCHIVE")]
    import_from: Option<PathBuf>,
    /// The project (working directory) of sessions whose source names none anywhere; recorded
    /// as user-supplied (`options.pond.project_from`). A source's own project always wins.
    #[arg(long, value_name = "DIR")]
    project: Option<String>,
    /// In the embed stage, also re-embed messages embedded under a model other than the
    /// configured one (`[embedding] model`); without it they keep their vectors and are left
    /// out of hybrid search.
    #[arg(long)]
    force_embed: bool,
    /// Messages per commit of the embed stage (default 4096): what a kill can lose.
    #[arg(long, hide = true, value_name = "ROWS")]
    embed_chunk: Option<usize>,
}

/// List stored sessions.
#[derive(clap::Args)]
pub struct SessionsArgs {
    #[command(flatten)]
    data: DataArgs,
    /// Only sessions from this harness (claude-code, codex, opencode, pi; `claude` too), as
    /// `pond search --agent` takes it.
    #[arg(long, visible_alias = "source-agent", value_name = "A")]
    agent: Option<String>,
    /// Only sessions whose project starts with this.
    #[arg(long)]
    project: Option<String>,
    /// Only sessions created at or after this RFC 3339 time (or date, YYYY-MM-DD).
    #[arg(long)]
    since: Option<String>,
}

/// Row counts per table and per source agent, dataset versions, embedding coverage.
#[derive(clap::Args)]
pub struct StatusArgs {
    #[command(flatten)]
    data: DataArgs,
}

/// Write a stored session (and its child sessions) out in any harness's format.
#[derive(clap::Args)]
pub struct RestoreArgs {
    #[command(flatten)]
    data: DataArgs,
    /// The session id (as `pond sessions` lists it), or its first characters (at least 4)
    /// when no other stored id begins with them.
    session: String,
    /// The codec to write with.
    #[arg(long, value_name = "CODEC")]
    to: String,
    /// Write under DIR (files there are never overwritten; one there already with exactly the
    /// bytes this restore writes is left as it is and counts as restored; one holding their
    /// first lines, restored before the session grew, gets the rest appended).
    #[arg(
        long,
        value_name = "DIR",
        conflicts_with = "install",
        required_unless_present = "install"
    )]
    out: Option<PathBuf>,
    /// Write where the target harness looks for sessions, and print how to resume.
    #[arg(long)]
    install: bool,
}

/// The runtime a store verb runs on, or why there is none. tokio starts its worker threads
/// when it is first given work and panics when the system will not start one (a process at its
/// thread limit: `ulimit -u`, a container's pids limit), so a thread is started here first and
/// its refusal is the verb's error.
pub(crate) fn runtime() -> Result<tokio::runtime::Runtime, String> {
    let refused = |e: std::io::Error| {
        format!(
            "the system will not start a thread ({e}); the store needs a few: raise the process limit (ulimit -u, or the container's pids limit)"
        )
    };
    std::thread::Builder::new()
        .name("pond-probe".into())
        .spawn(|| ())
        .map_err(refused)?
        .join()
        .map_err(|_| "a thread started to check the limit panicked".to_owned())?;
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(refused)
}

pub(crate) fn fail(verb: &str, msg: impl std::fmt::Display) -> ExitCode {
    // Messages quote paths and input; none may drive the terminal.
    let msg = msg.to_string();
    eprintln!("pond {verb}: {}", pond_canonical::escape_controls(&msg));
    ExitCode::from(1)
}

fn configured_sources(args: &SyncArgs) -> Result<Vec<(&'static Codec, Vec<PathBuf>)>, String> {
    let mut by_codec: BTreeMap<&'static str, (&'static Codec, Vec<PathBuf>)> = BTreeMap::new();
    if !args.sources.is_empty() {
        for s in &args.sources {
            let (name, path) = s
                .split_once('=')
                .ok_or_else(|| format!("`{s}` is not CODEC=PATH"))?;
            let codec = registry::find(name).ok_or_else(|| {
                format!(
                    "unknown codec `{name}`; known: {}",
                    registry::names().join(", ")
                )
            })?;
            by_codec
                .entry(codec.name)
                .or_insert((codec, Vec::new()))
                .1
                .push(PathBuf::from(path));
        }
    } else {
        let config = crate::config::load()?;
        for codec in registry::CODECS
            .iter()
            .copied()
            .filter(|c| c.read.is_some())
        {
            let paths: Vec<PathBuf> = match config.sources.get(codec.name) {
                // Configured paths are used as written: one that is missing is reported by the
                // import (a typed discover error), never skipped silently.
                Some(paths) => paths
                    .iter()
                    .map(|p| crate::config::expand_home(p))
                    .collect(),
                None => (codec.default_sources)()
                    .into_iter()
                    .filter(|p| p.exists())
                    .collect(),
            };
            if !paths.is_empty() {
                by_codec.insert(codec.name, (codec, paths));
            }
        }
    }
    Ok(by_codec.into_values().collect())
}

pub fn sync(args: SyncArgs, json: bool) -> ExitCode {
    let runs = |stage: Stage| match args.only {
        Some(only) => only == stage,
        None => !args.skip.contains(&stage),
    };
    let sources = if args.import_from.is_some() && args.sources.is_empty() {
        Ok(Vec::new())
    } else {
        configured_sources(&args)
    };
    let sources = match sources {
        Ok(s) => s,
        Err(e) => return fail("sync", e),
    };
    let rt = match runtime() {
        Ok(rt) => rt,
        Err(e) => return fail("sync", e),
    };
    let opened = match args.data.open(&rt) {
        Ok(o) => o,
        Err(e) => return fail("sync", e),
    };
    let store = &*opened.store;
    let mut report = serde_json::Map::new();
    let mut errors = 0usize;
    if runs(Stage::Import) {
        if let Some(path) = &args.import_from {
            match crate::archive_cmd::import_into(store, &rt, path, json) {
                Ok(s) => {
                    report.insert("archive".into(), serde_json::to_value(&s).expect("JSON"));
                }
                Err(e) => return opened.fail("sync", e),
            }
        }
        if sources.is_empty() && args.import_from.is_none() {
            eprintln!(
                "pond sync: no sources found (none of the standard locations exist); add --source CODEC=PATH"
            );
        }
        let mut imports = Vec::new();
        for (codec, paths) in &sources {
            let bar = bar(codec.name);
            let mut tick = |done: usize, total: usize| {
                if let Some(b) = &bar {
                    b.set_length(total as u64);
                    b.set_position(done as u64);
                }
            };
            let result = rt.block_on(pond_store::sync::import_with_project(
                store,
                codec,
                paths,
                args.project.as_deref(),
                &mut tick,
            ));
            if let Some(b) = bar {
                b.finish_and_clear();
            }
            match result {
                Ok(s) => {
                    errors += s.errors.len();
                    if !json {
                        for e in &s.errors {
                            eprintln!("error: {}", pond_canonical::escape_controls(e));
                        }
                        let w = &s.written;
                        eprintln!(
                            "import {}: {} sources; sessions {} new, {} present; messages {} new, {} present; parts {} new, {} present; {} errors",
                            s.codec,
                            s.sources,
                            w.sessions_inserted,
                            w.sessions_present,
                            w.messages_inserted,
                            w.messages_present,
                            w.parts_inserted,
                            w.parts_present,
                            s.errors.len()
                        );
                    }
                    imports.push(serde_json::to_value(&s).expect("JSON"));
                }
                Err(e) => return opened.fail("sync", e),
            }
        }
        report.insert("import".into(), serde_json::Value::Array(imports));
    }
    if runs(Stage::Embed) {
        let mut options = pond_store::embed::EmbedOptions {
            force: args.force_embed,
            ..Default::default()
        };
        if let Some(n) = args.embed_chunk {
            options.chunk = n.max(1);
            options.batch = options.batch.min(options.chunk);
        }
        match embed_stage(store, &rt, options, json) {
            Ok(value) => {
                report.insert("embed".into(), value);
            }
            Err(e) => return opened.fail("sync", e),
        }
    }
    if runs(Stage::UpdateIndexes) {
        let spinner = spinner("update-indexes: building and folding indexes");
        let updates = rt.block_on(store.update_indexes());
        if let Some(s) = spinner {
            s.finish_and_clear();
        }
        match updates {
            Ok(updates) => {
                if !json {
                    for u in &updates {
                        eprintln!(
                            "update-indexes: {}.{} {} ({:.1} s)",
                            u.table,
                            u.index,
                            serde_json::to_value(u.action)
                                .expect("JSON")
                                .as_str()
                                .unwrap_or("?"),
                            u.seconds
                        );
                    }
                }
                report.insert(
                    "update_indexes".into(),
                    serde_json::json!({ "indexes": updates }),
                );
            }
            Err(e) => return opened.fail("sync", e),
        }
    }
    if json {
        println!("{}", serde_json::to_string_pretty(&report).expect("JSON"));
    }
    if errors > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// The embed stage (spec 8): off unless `[embedding] model` names a model; then every message
/// with text and no vector (with `force`, or a vector of another model) is embedded, with a
/// progress bar showing rate and time left.
fn embed_stage(
    store: &SessionStore,
    rt: &tokio::runtime::Runtime,
    options: pond_store::embed::EmbedOptions,
    json: bool,
) -> Result<serde_json::Value, String> {
    let config = crate::config::load()?;
    let Some((model, dir)) = config.embedding_model()? else {
        let n = rt
            .block_on(store.message_breakdown())
            .map(|(per, embedded)| per.values().sum::<u64>() - embedded)
            .map_err(|e| e.to_string())?;
        if !json {
            eprintln!(
                "embed: embedding is off (no [embedding] model in config.toml); {n} messages not embedded"
            );
        }
        return Ok(serde_json::json!({"enabled": false, "backlog": n}));
    };
    let loading = spinner("embed: loading the model");
    let loaded = pond_embed::load(&model, &dir);
    if let Some(s) = loading {
        s.finish_and_clear();
    }
    let embedder: std::sync::Arc<dyn pond_embed::Embedder> = loaded
        .map(std::sync::Arc::from)
        .map_err(|e| format!("embed: {e} (models folder {})", dir.display()))?;
    let bar = if std::io::stderr().is_terminal() {
        let b = ProgressBar::new(0);
        if let Ok(style) = ProgressStyle::with_template(
            "{spinner} embedding {pos}/{len} messages {wide_bar} {per_sec} {eta}",
        ) {
            b.set_style(style);
        }
        Some(b)
    } else {
        None
    };
    let mut tick = |done: u64, total: u64| {
        if let Some(b) = &bar {
            b.set_length(total);
            b.set_position(done);
        }
    };
    let result = rt.block_on(pond_store::embed::embed(
        store, embedder, options, &mut tick,
    ));
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    let summary = result.map_err(|e| e.to_string())?;
    if !json {
        eprintln!(
            "embed {}: {} of {} messages embedded in {:.1} s ({} commits){}{}",
            summary.model,
            summary.embedded,
            summary.backlog,
            summary.seconds,
            summary.commits,
            if summary.other_model > 0 {
                format!(
                    "; {} messages keep vectors of another model (--force-embed re-embeds them)",
                    summary.other_model
                )
            } else {
                String::new()
            },
            if summary.index_dropped {
                "; the vector index of the previous model was dropped (update-indexes trains it again)"
            } else {
                ""
            }
        );
    }
    let mut value = serde_json::to_value(&summary).expect("JSON");
    value["enabled"] = serde_json::Value::Bool(true);
    Ok(value)
}

fn bar(name: &str) -> Option<ProgressBar> {
    if !std::io::stderr().is_terminal() {
        return None;
    }
    let b = ProgressBar::new(0);
    b.set_style(
        ProgressStyle::with_template(&format!(
            "{{spinner}} importing {name} {{pos}}/{{len}} sources {{wide_bar}} {{eta}}"
        ))
        .ok()?,
    );
    Some(b)
}

fn spinner(message: &'static str) -> Option<ProgressBar> {
    if !std::io::stderr().is_terminal() {
        return None;
    }
    let s = ProgressBar::new_spinner().with_message(message);
    s.enable_steady_tick(std::time::Duration::from_millis(120));
    Some(s)
}

fn since_micros(s: &str) -> Result<i64, String> {
    let text = if s.len() == 10 {
        format!("{s}T00:00:00Z")
    } else {
        s.to_owned()
    };
    serde_json::from_value::<pond_canonical::Timestamp>(serde_json::Value::String(text))
        .map(|t| t.unix_micros())
        .map_err(|e| format!("--since: {e}"))
}

pub fn sessions(args: SessionsArgs, json: bool) -> ExitCode {
    let since = match args.since.as_deref().map(since_micros).transpose() {
        Ok(s) => s,
        Err(e) => return fail("sessions", e),
    };
    let agent = match args.agent.as_deref() {
        None => None,
        Some(given) => match pond_codecs::registry::source_agent_named(given) {
            Some(brand) => Some(brand),
            None => {
                let mut known = registry::names();
                known.sort_unstable();
                return fail(
                    "sessions",
                    format!(
                        "--agent {given:?} is not a harness pond stores sessions from; known: {}",
                        known.join(", ")
                    ),
                );
            }
        },
    };
    let rt = match runtime() {
        Ok(rt) => rt,
        Err(e) => return fail("sessions", e),
    };
    let opened = match args.data.open_to_read(&rt, "sessions") {
        Ok(o) => o,
        Err(e) => return fail("sessions", e),
    };
    let list = match rt.block_on(opened.store.list(agent, args.project.as_deref(), since)) {
        Ok(l) => l,
        Err(e) => return opened.fail("sessions", e),
    };
    if json {
        println!("{}", serde_json::to_string_pretty(&list).expect("JSON"));
    } else {
        // Columns as wide as their longest value (ids run from 8 characters to over 60: a
        // Claude Code sub-agent's); every value from a source, escaped.
        let esc = |v: &str| pond_canonical::escape_controls(v).into_owned();
        let rows: Vec<[String; 6]> = list
            .iter()
            .map(|s| {
                [
                    esc(s.id.as_str()),
                    esc(s.source_agent.as_str()),
                    esc(&s.created_at),
                    s.messages.to_string(),
                    esc(s.parent_session_id.as_deref().unwrap_or("-")),
                    esc(s.project.as_str()),
                ]
            })
            .collect();
        let header = ["ID", "SOURCE", "CREATED", "MESSAGES", "PARENT", "PROJECT"].map(String::from);
        let mut width = header.clone().map(|h| h.chars().count());
        for row in &rows {
            for (w, v) in width.iter_mut().zip(row) {
                *w = (*w).max(v.chars().count());
            }
        }
        for row in std::iter::once(&header).chain(&rows) {
            println!(
                "{:<w0$} {:<w1$} {:<w2$} {:>w3$} {:<w4$} {}",
                row[0],
                row[1],
                row[2],
                row[3],
                row[4],
                row[5],
                w0 = width[0],
                w1 = width[1],
                w2 = width[2],
                w3 = width[3],
                w4 = width[4],
            );
        }
    }
    ExitCode::SUCCESS
}

pub fn status(args: StatusArgs, json: bool) -> ExitCode {
    let rt = match runtime() {
        Ok(rt) => rt,
        Err(e) => return fail("status", e),
    };
    let opened = match args.data.open_to_read(&rt, "status") {
        Ok(o) => o,
        Err(e) => return fail("status", e),
    };
    let store = &*opened.store;
    let uri = store.substrate().root().to_owned();
    // The cheap summary first: row counts and versions from the manifests.
    let tables = match rt.block_on(store.table_status()) {
        Ok(t) => t,
        Err(e) => return opened.fail("status", e),
    };
    if !json {
        println!("store {}", opened.location.describe());
        if let Some(ns) = args.data.namespace() {
            println!("namespace {ns} ({uri})");
        }
        for t in &tables {
            println!(
                "  {:<9} {:>10} rows  version {}",
                t.table,
                t.rows,
                t.version.map_or("-".into(), |v| v.to_string())
            );
        }
    }
    let (per_agent, embedded) = match rt.block_on(store.message_breakdown()) {
        Ok(b) => b,
        Err(e) => return opened.fail("status", e),
    };
    let total: u64 = per_agent.values().sum();
    let keys = match rt.block_on(store.key_check()) {
        Ok(k) => k,
        Err(e) => return opened.fail("status", e),
    };
    let keys_json: Vec<_> = keys
        .iter()
        .map(|(t, rows, distinct)| serde_json::json!({"table": t, "rows": rows, "distinct_keys": distinct, "unique": rows == distinct}))
        .collect();
    let indexes = match rt.block_on(store.index_status()) {
        Ok(i) => i,
        Err(e) => return opened.fail("status", e),
    };
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "data": uri,
                "namespace": args.data.namespace().unwrap_or(pond_store::substrate::DEFAULT_NAMESPACE),
                "tables": tables,
                "messages_per_source_agent": per_agent,
                "embedding": {"embedded": embedded, "messages": total},
                "primary_keys": keys_json,
                "indexes": indexes,
            }))
            .expect("JSON")
        );
    } else {
        println!("messages per source agent:");
        for (agent, n) in &per_agent {
            println!("  {agent:<12} {n:>10}");
        }
        println!("embedding coverage: {embedded} of {total} messages");
        for (t, rows, distinct) in &keys {
            let verdict = if rows == distinct {
                "unique"
            } else {
                "DUPLICATES"
            };
            println!("primary keys of {t}: {distinct} distinct in {rows} rows ({verdict})");
        }
        println!("indexes:");
        for i in &indexes {
            let health = if !i.exists {
                "not built yet: run `pond sync --only update-indexes`".to_owned()
            } else if i.unindexed_rows == 0 {
                "current".to_owned()
            } else {
                format!(
                    "{} rows not yet folded in (found by a flat scan until `pond sync --only update-indexes`)",
                    i.unindexed_rows
                )
            };
            println!(
                "  {}.{} ({} on {}): {} rows indexed, {health}",
                i.table, i.name, i.kind, i.column, i.indexed_rows
            );
        }
    }
    ExitCode::SUCCESS
}

pub fn restore(args: RestoreArgs, json: bool) -> ExitCode {
    let Some(to) = registry::find(&args.to) else {
        return fail(
            "restore",
            format!(
                "unknown codec `{}`; known: {}",
                args.to,
                registry::names().join(", ")
            ),
        );
    };
    let rt = match runtime() {
        Ok(rt) => rt,
        Err(e) => return fail("restore", e),
    };
    let opened = match args.data.open_to_read(&rt, "restore") {
        Ok(o) => o,
        Err(e) => return fail("restore", e),
    };
    // A fork written into another harness carries its parent's history (restore::lineage).
    let events = match rt.block_on(pond_store::restore::lineage(
        &opened.store,
        &args.session,
        Some(to.name),
    )) {
        Ok(l) => l,
        Err(e) => return opened.fail("restore", e),
    };
    // The session the argument names (it may be the start of the id): lineage's first event.
    let session = match events.first() {
        Some(pond_canonical::Event::Session(s)) => s.id.to_string(),
        _ => args.session.clone(),
    };
    // A sub-agent restored on its own: the harness resumes its parent, which is not written.
    let spawned_by = events.iter().find_map(|e| match e {
        pond_canonical::Event::Session(s)
            if s.id.as_str() == session && s.parent_message_id.is_none() =>
        {
            s.parent_session_id.clone()
        }
        _ => None,
    });
    let (root, layout) = if args.install {
        match to.install.as_ref().map(|i| (i.root)()) {
            Some(Ok(r)) => (r, Layout::Harness),
            Some(Err(e)) => {
                return fail("restore", format!("cannot install into {}: {e}", to.name));
            }
            None => {
                return fail(
                    "restore",
                    format!("{} has no install location; use --out DIR", to.name),
                );
            }
        }
    } else {
        (
            args.out
                .clone()
                .expect("clap requires --out without --install"),
            Layout::Mirror,
        )
    };
    if root.exists() && !root.is_dir() {
        return fail(
            "restore",
            format!(
                "{}: not a folder (sessions are written as files under it)",
                root.display()
            ),
        );
    }
    let mut out = DirOutput::new(&root);
    let unit = format!("session {session}");
    let mut summary = match pond_codecs::convert::write_events(to, layout, &unit, events, &mut out)
    {
        Ok(s) => s,
        Err(e) => return fail("restore", e),
    };
    if let Err(e) = out.finish() {
        return fail("restore", e);
    }
    summary.keep_delivered(&out);
    // opencode's sessions are imported, not written where it reads (`convert --install` too).
    let installed = if args.install {
        crate::convert::hand_to_harness(to, &root, &mut summary)
    } else {
        Vec::new()
    };
    if json {
        println!("{}", serde_json::to_string_pretty(&summary).expect("JSON"));
    } else {
        let escape = pond_canonical::escape_controls;
        for e in &summary.write_errors {
            eprintln!("write error: {}", escape(e));
        }
        for (kind, loss) in &summary.losses.kinds {
            eprintln!(
                "  lost: {kind} x{} (first at {}): {}",
                loss.count,
                escape(&loss.first),
                escape(&loss.detail)
            );
        }
        crate::convert::print_unchanged(&summary);
        if summary.write_errors.is_empty() {
            eprintln!(
                "restored {} sessions ({} native, {} foreign), {} messages into {}",
                summary.sessions,
                summary.native_sessions,
                summary.foreign_sessions,
                summary.messages,
                root.display()
            );
        } else {
            // Not "restored": a session whose file was refused (it exists already) is not.
            eprintln!(
                "pond restore: {} of {} sessions written into {}; {} failed (above)",
                summary.written.len(),
                summary.sessions,
                root.display(),
                summary.write_errors.len()
            );
        }
        for line in &installed {
            eprintln!("{}", escape(line));
        }
        if let Some(parent) = spawned_by.filter(|_| args.install) {
            // Its resume command would name the parent session, which this restore did not
            // write: restoring the parent writes both, and resumes.
            eprintln!(
                "pond restore: {} is a sub-agent of {}; restore {} to resume it with its parent",
                escape(&session),
                escape(parent.as_str()),
                escape(parent.as_str())
            );
        } else if args.install {
            // A session's sub-agents share its resume command: each command once.
            let mut said = std::collections::HashSet::new();
            for cmd in summary.written.iter().filter_map(|w| w.resume.as_ref()) {
                if said.insert(cmd) {
                    println!("{cmd}");
                }
            }
        }
    }
    if summary.write_errors.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

//! `pond export` and `pond import` (spec 7.8), and the archive half of `pond sync --import-from`.
//! Flags in, `pond_store::archive` calls out; built only with the `store` feature.

use crate::store_cmd::{DataArgs, fail, runtime};
use indicatif::{ProgressBar, ProgressStyle};
use pond_store::archive::{self, ImportSummary, Step};
use pond_store::sessions::SessionStore;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Write the whole store as one compact `.pond` archive: clean, index-free Lance datasets and a
/// manifest of their files' lengths and SHA-256 digests (embeddings are kept as data).
#[derive(clap::Args)]
pub struct ExportArgs {
    #[command(flatten)]
    data: DataArgs,
    /// The archive to write; an existing file is never overwritten.
    /// Default: `pond-<UTC time>.pond` in the current directory.
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
}

/// Import a `.pond` archive into the store. It is checked in full first (paths, lengths,
/// digests, schemas, row counts) and nothing is written if any check fails; rows already stored
/// are left alone, so importing the same archive twice inserts nothing.
#[derive(clap::Args)]
pub struct ImportArgs {
    #[command(flatten)]
    data: DataArgs,
    /// The archive.
    archive: PathBuf,
}

/// A progress bar on stderr when it is a terminal, fed by archive steps.
fn progress_bar() -> Option<ProgressBar> {
    if !std::io::stderr().is_terminal() {
        return None;
    }
    let b = ProgressBar::new(0);
    b.set_style(ProgressStyle::with_template("{spinner} {msg} {wide_bar} {percent}% {eta}").ok()?);
    Some(b)
}

fn tick(bar: &Option<ProgressBar>) -> impl FnMut(Step) + Send + '_ {
    move |s: Step| {
        if let Some(b) = bar {
            b.set_message(format!("{} {}", s.phase, s.table));
            b.set_length(s.total.max(s.done));
            b.set_position(s.done);
        }
    }
}

pub fn export(args: ExportArgs, json: bool) -> ExitCode {
    let out = args
        .out
        .unwrap_or_else(|| PathBuf::from(archive::default_name()));
    if out == Path::new("-") {
        // `convert` takes `-` for stdout; an archive is a file read back by seeking (`import`
        // checks it whole first), so `-` is refused rather than written as a file named `-`.
        return fail(
            "export",
            "--out -: an archive is written to a file, not to stdout; name the file (`--out pond.pond`)",
        );
    }
    let rt = match runtime() {
        Ok(rt) => rt,
        Err(e) => return fail("export", e),
    };
    let opened = match args.data.open_to_read(&rt, "export") {
        Ok(o) => o,
        Err(e) => return fail("export", e),
    };
    let bar = progress_bar();
    let result = rt.block_on(archive::export(&opened.store, &out, &mut tick(&bar)));
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    let summary = match result {
        Ok(s) => s,
        Err(e) => return opened.fail("export", e),
    };
    if json {
        println!("{}", serde_json::to_string_pretty(&summary).expect("JSON"));
    } else {
        let count = |t: &str| summary.tables.get(t).copied().unwrap_or(0);
        eprintln!(
            "exported {} sessions, {} messages, {} parts to {} ({} bytes)",
            count("sessions"),
            count("messages"),
            count("parts"),
            summary.archive.display(),
            summary.bytes
        );
    }
    ExitCode::SUCCESS
}

pub fn import(args: ImportArgs, json: bool) -> ExitCode {
    let rt = match runtime() {
        Ok(rt) => rt,
        Err(e) => return fail("import", e),
    };
    let opened = match args.data.open(&rt) {
        Ok(o) => o,
        Err(e) => return fail("import", e),
    };
    match import_into(&opened.store, &rt, &args.archive, json) {
        Ok(summary) => {
            if json {
                println!("{}", serde_json::to_string_pretty(&summary).expect("JSON"));
            }
            ExitCode::SUCCESS
        }
        Err(e) => opened.fail("import", e),
    }
}

/// Imports `path` into `store` with a progress bar, printing the summary unless `json`
/// (for `pond import` and the import stage of `pond sync --import-from`).
pub(crate) fn import_into(
    store: &SessionStore,
    rt: &tokio::runtime::Runtime,
    path: &Path,
    json: bool,
) -> Result<ImportSummary, archive::ArchiveError> {
    let bar = progress_bar();
    let result = rt.block_on(archive::import(store, path, &mut tick(&bar)));
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    let summary = result?;
    if !json {
        let tables: Vec<String> = summary
            .tables
            .iter()
            .map(|t| format!("{} {} new, {} present", t.table, t.inserted, t.present))
            .collect();
        let line = format!(
            "import {} (written by pond {} at {}): {}",
            path.display(),
            summary.pond_version,
            summary.created_at,
            tables.join("; ")
        );
        eprintln!("{}", pond_canonical::escape_controls(&line));
    }
    Ok(summary)
}

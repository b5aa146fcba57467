//! One conversion to stdout with the codecs alone: `pond convert FROM:TO INPUT` without the CLI,
//! the store or its dependencies, so that a release build for counting a conversion's
//! instructions takes under a minute instead of the half hour the `pond` binary's link takes.
//! The allocator is mimalloc, as the `pond` binary's conversions use; the loss report is left
//! out.
//!
//!     cargo build --release -p pond-codecs --example convert
//!     POND_THREADS=1 valgrind --tool=callgrind target/release/examples/convert codex claude-code r20.jsonl > /dev/null

use std::process::ExitCode;

#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [from, to, input] = args.as_slice() else {
        eprintln!(
            "usage: convert FROM TO INPUT (codec names: {})",
            pond_codecs::registry::names().join(", ")
        );
        return ExitCode::from(2);
    };
    let codec = |name: &str| {
        pond_codecs::registry::find(name).ok_or_else(|| format!("no codec named {name:?}"))
    };
    let (from, to) = match (codec(from), codec(to)) {
        (Ok(f), Ok(t)) => (f, t),
        (Err(e), _) | (_, Err(e)) => {
            eprintln!("convert: {e}");
            return ExitCode::from(2);
        }
    };
    let mut out = pond_codecs::output::SingleFileOutput::new(std::io::BufWriter::with_capacity(
        1 << 20,
        std::io::stdout().lock(),
    ));
    let converted = pond_codecs::convert::convert(
        from,
        to,
        pond_codecs::face::Layout::Mirror,
        std::path::Path::new(input),
        &mut out,
        &mut |_, _| {},
    );
    let flushed = out.finish();
    match converted {
        Ok(_) if flushed.is_err() => {
            eprintln!(
                "convert: stdout: {}",
                flushed.err().map(|e| e.to_string()).unwrap_or_default()
            );
            ExitCode::FAILURE
        }
        Ok(summary) => {
            eprintln!(
                "{} messages, {} errors",
                summary.messages,
                summary.errors.len()
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("convert: {e}");
            ExitCode::FAILURE
        }
    }
}

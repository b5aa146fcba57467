//! Parse + native write throughput of each codec against the untyped baseline, measured in one run.
//!
//!     cargo bench -p pond-codecs --bench throughput                  # every codec, largest shared fixture
//!     cargo bench -p pond-codecs --bench throughput -- codex FILE [ROUNDS]
//!
//! The baseline is what any tool does at least: read the same file, parse every line into a
//! `serde_json::Value`, and write each back as JSON. pond does that plus the canonical mapping.
//! Runs alternate (baseline, pond, baseline, ...) so both see the same machine state; the
//! figures are MB/s over the source file's bytes, min / median / max of the rounds. Both run
//! under mimalloc, the `pond` binary's allocator.

/// The same allocator as the `pond` binary; it serves the baseline and pond alike.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use pond_codecs::convert::convert_sources;
use pond_codecs::face::{Output, WriteError};
use pond_codecs::{CODECS, Codec};
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Counts bytes written and keeps none of them.
#[derive(Default)]
struct Discard(u64);

impl Output for Discard {
    fn append(&mut self, _: &str, bytes: &[u8]) -> Result<(), WriteError> {
        self.0 += bytes.len() as u64;
        Ok(())
    }
}

fn baseline(path: &Path) -> u64 {
    let file = std::io::BufReader::with_capacity(1 << 20, std::fs::File::open(path).unwrap());
    let mut out = Vec::with_capacity(1 << 20);
    let mut written = 0u64;
    for line in file.split(b'\n') {
        let line = line.unwrap();
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let Ok(v) = serde_json::from_slice::<serde_json::Value>(&line) else {
            continue;
        };
        out.clear();
        serde_json::to_writer(&mut out, &v).unwrap();
        out.push(b'\n');
        written += out.len() as u64;
        std::hint::black_box(&out);
    }
    written
}

fn pond(codec: &Codec, path: &Path) -> u64 {
    let reader = codec.read.unwrap();
    let sources = reader.discover(path).unwrap();
    let mut out = Discard::default();
    let summary = convert_sources(
        codec,
        codec,
        pond_codecs::Layout::Mirror,
        &sources,
        &mut out,
        &mut |_, _| {},
    )
    .unwrap();
    std::hint::black_box(&summary);
    out.0
}

fn largest_fixture(codec: &Codec) -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/fixtures")
        .join(codec.name);
    let reader = codec.read?;
    let sources = reader.discover(&dir).ok()?;
    sources
        .iter()
        .map(|s| s.path().to_owned())
        .max_by_key(|p| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0))
}

fn stats(mut xs: Vec<f64>) -> (f64, f64, f64) {
    xs.sort_by(f64::total_cmp);
    (xs[0], xs[xs.len() / 2], xs[xs.len() - 1])
}

fn bench(codec: &Codec, path: &Path, rounds: usize) {
    let bytes = std::fs::metadata(path).unwrap().len() as f64;
    let per_round = ((64.0 * 1024.0 * 1024.0 / bytes).ceil() as usize).max(1); // ~64 MB of input per timing
    let (mut base, mut ours) = (Vec::new(), Vec::new());
    baseline(path);
    pond(codec, path);
    for _ in 0..rounds {
        let t = Instant::now();
        for _ in 0..per_round {
            baseline(path);
        }
        base.push(bytes * per_round as f64 / t.elapsed().as_secs_f64() / 1e6);
        let t = Instant::now();
        for _ in 0..per_round {
            pond(codec, path);
        }
        ours.push(bytes * per_round as f64 / t.elapsed().as_secs_f64() / 1e6);
    }
    let (bmin, bmed, bmax) = stats(base);
    let (pmin, pmed, pmax) = stats(ours);
    let mut o = std::io::stdout().lock();
    writeln!(
        o,
        "{} on {} ({:.0} KB, {rounds} rounds x {per_round} passes)",
        codec.name,
        path.display(),
        bytes / 1e3
    )
    .unwrap();
    writeln!(o, "  baseline serde_json::Value parse+write  MB/s min {bmin:8.1}  median {bmed:8.1}  max {bmax:8.1}").unwrap();
    writeln!(o, "  pond parse + native write              MB/s min {pmin:8.1}  median {pmed:8.1}  max {pmax:8.1}").unwrap();
    writeln!(
        o,
        "  pond / baseline (median)               {:.2}x",
        pmed / bmed
    )
    .unwrap();
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    match args.as_slice() {
        [name, file, rest @ ..] => {
            let codec = pond_codecs::find(name).unwrap_or_else(|| panic!("unknown codec {name}"));
            let rounds = rest.first().and_then(|r| r.parse().ok()).unwrap_or(7);
            bench(codec, Path::new(file), rounds);
        }
        _ => {
            for codec in CODECS
                .iter()
                .filter(|c| c.read.is_some() && c.write.is_some())
            {
                match largest_fixture(codec) {
                    Some(path) => bench(codec, &path, 7),
                    None => println!("{}: no shared fixture found; skipped", codec.name),
                }
            }
        }
    }
}

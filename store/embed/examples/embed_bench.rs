//! The embedding throughput benchmark's pond side (docs/benchmarks.md, "Embedding throughput"):
//! loads an installed model, embeds a JSON array of texts in calls of `--chunk` texts (as the
//! embed stage calls the seam), `--repeat` times, and prints one JSON line per pass: texts/s
//! (wall), CPU seconds, and the process's peak RSS so far.
//!
//!     cargo build --release -p pond-embed --example embed_bench
//!     target/release/examples/embed_bench MODEL MODELS_DIR CORPUS.json [--repeat N] [--chunk N]
//!
//! Threads: whole batches side by side, one per core, as `pond sync` runs them; all cores
//! unless RAYON_NUM_THREADS says.

use pond_embed::{TextKind, load};

/// The allocator of the `pond` binary, so the figures are the binary's.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;
use std::path::PathBuf;
use std::time::Instant;

fn cpu_seconds() -> f64 {
    // /proc/self/stat fields 14 and 15: user and system time in clock ticks (100 per second).
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<&str> = after.split_whitespace().collect();
    let tick = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    (tick(11) + tick(12)) / 100.0
}

fn peak_rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

fn main() {
    // SAFETY: first thing in `main`, before any other thread exists; as `pond sync` runs it.
    unsafe { pond_embed::batches_side_by_side() };
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 3 {
        eprintln!("usage: embed_bench MODEL MODELS_DIR CORPUS.json [--repeat N] [--chunk N]");
        std::process::exit(2);
    }
    let flag = |name: &str, default: usize| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let (repeat, chunk) = (flag("--repeat", 3), flag("--chunk", 256));
    let corpus: Vec<String> = match std::fs::read(&args[2])
        .map_err(|e| e.to_string())
        .and_then(|b| serde_json::from_slice(&b).map_err(|e| e.to_string()))
    {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{}: {e}", args[2]);
            std::process::exit(2);
        }
    };
    let texts: Vec<&str> = corpus.iter().map(String::as_str).collect();
    let started = Instant::now();
    let model = match load(&args[0], &PathBuf::from(&args[1])) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    };
    eprintln!(
        "loaded {} in {:.2} s, peak RSS {:.0} MiB",
        model.model_id(),
        started.elapsed().as_secs_f64(),
        peak_rss_mib()
    );
    for pass in 0..repeat {
        let (t0, c0) = (Instant::now(), cpu_seconds());
        let mut n = 0;
        for c in texts.chunks(chunk) {
            n += model.embed(c, TextKind::Passage).expect("embeds").len();
        }
        let (wall, cpu) = (t0.elapsed().as_secs_f64(), cpu_seconds() - c0);
        println!(
            "{}",
            serde_json::json!({
                "runtime": "pond (candle)", "model": model.model_id(), "pass": pass,
                "texts": n, "wall_s": wall, "cpu_s": cpu, "texts_per_s": n as f64 / wall,
                "peak_rss_mib": peak_rss_mib(),
            })
        );
    }
}

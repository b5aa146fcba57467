//! The naive baseline of docs/benchmarks.md: parse every line of a JSONL file into a
//! `serde_json::Value` and write it back to stdout, streaming: the least a tool that reads and
//! writes such a file does. A `.json` file (an `opencode export` document) is one value: it is
//! read whole and written back with two-space indentation, as `opencode export` writes it. A
//! folder: each file in it, in name order, one after the other.
//!
//!     cargo build --release --manifest-path bench/json-baseline/Cargo.toml
//!     bench/json-baseline/target/release/json-baseline FILE|FOLDER > OUT

use std::io::{BufRead, BufWriter, Read, Write};
use std::path::Path;

fn main() -> std::io::Result<()> {
    let path = std::env::args().nth(1).expect("usage: json-baseline FILE|FOLDER");
    let mut out = BufWriter::with_capacity(1 << 20, std::io::stdout().lock());
    let path = Path::new(&path);
    if path.is_dir() {
        let mut files: Vec<_> = std::fs::read_dir(path)?
            .map(|e| e.map(|e| e.path()))
            .collect::<Result<_, _>>()?;
        files.sort();
        for file in files {
            round_trip(&file, &mut out)?;
        }
    } else {
        round_trip(path, &mut out)?;
    }
    out.flush()
}

/// Reads `path` into values and writes them to `out`.
fn round_trip(path: &Path, out: &mut impl Write) -> std::io::Result<()> {
    let mut input = std::io::BufReader::with_capacity(1 << 20, std::fs::File::open(path)?);
    if path.extension().is_some_and(|e| e == "json") {
        let mut bytes = Vec::new();
        input.read_to_end(&mut bytes)?;
        let value: serde_json::Value =
            serde_json::from_slice(&bytes).map_err(std::io::Error::other)?;
        drop(bytes);
        serde_json::to_writer_pretty(&mut *out, &value)?;
        return out.write_all(b"\n");
    }
    for line in input.split(b'\n') {
        let line = line?;
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let value: serde_json::Value =
            serde_json::from_slice(&line).map_err(std::io::Error::other)?;
        serde_json::to_writer(&mut *out, &value)?;
        out.write_all(b"\n")?;
    }
    Ok(())
}

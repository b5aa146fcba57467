//! Native round trip (spec 6.8, adapter-native-restore-lossless): read a source with its own
//! codec, write it back natively, and require every file to come back at the same relative path
//! with every line an equal JSON value.

use pond_codecs::Codec;
use pond_codecs::convert::convert_sources;
use pond_codecs::output::MemoryOutput;
use serde::Serialize;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The outcome for one file of a round trip.
#[derive(Debug, Serialize)]
pub struct FileResult {
    /// The file's path relative to the input root.
    pub path: String,
    /// `None` when the written file is value-equal to the source; the first difference otherwise.
    pub difference: Option<String>,
}

/// The outcome of a native round trip over one input.
#[derive(Debug, Serialize)]
pub struct RoundTrip {
    /// The codec.
    pub codec: &'static str,
    /// Files compared.
    pub files: Vec<FileResult>,
    /// Sources skipped because reading them reported faults (they are not well-formed).
    pub malformed: Vec<String>,
    /// Sources in another form than the codec writes (a database): converted natively, read back
    /// by the same codec with the same number of sessions, but not compared byte-for-value.
    pub derived: Vec<String>,
    /// Parse faults, as text.
    pub faults: Vec<String>,
    /// Write failures, as text.
    pub write_errors: Vec<String>,
    /// Losses the writer reported; a native write must report none.
    pub losses: Vec<String>,
}

impl RoundTrip {
    /// Whether every well-formed file came back equal and the write lost nothing.
    pub fn passed(&self) -> bool {
        self.files.iter().all(|f| f.difference.is_none())
            && self.write_errors.is_empty()
            && self.losses.is_empty()
    }

    /// The differences, one per line, for assertion messages.
    pub fn report(&self) -> String {
        let mut lines: Vec<String> = self
            .files
            .iter()
            .filter_map(|f| f.difference.as_ref().map(|d| format!("{}: {d}", f.path)))
            .collect();
        lines.extend(self.write_errors.iter().cloned());
        lines.extend(
            self.losses
                .iter()
                .map(|l| format!("native write reported a loss: {l}")),
        );
        lines.join("\n")
    }
}

/// Reads `input` with `codec`, writes it back natively in memory, and compares file by file.
pub fn native_round_trip(codec: &'static Codec, input: &Path) -> Result<RoundTrip, String> {
    let reader = codec
        .read
        .ok_or_else(|| format!("{} has no read face", codec.name))?;
    let (sources, others): (Vec<_>, Vec<_>) = reader
        .discover(input)
        .map_err(|e| e.to_string())?
        .into_iter()
        .partition(|s| reader.mirrors(s));
    let mut out = MemoryOutput::default();
    let mut summary = convert_sources(
        codec,
        codec,
        pond_codecs::Layout::Mirror,
        &sources,
        &mut out,
        &mut |_, _| {},
    )
    .map_err(|e| e.to_string())?;
    let mut derived = Vec::new();
    let mut derived_malformed = Vec::new();
    for source in &others {
        let rel = source.relative().into_inner().to_owned();
        match derived_round_trip(codec, source) {
            Ok(faults) if faults.is_empty() => derived.push(rel),
            Ok(faults) => {
                summary.errors.extend(faults);
                derived_malformed.push(rel);
            }
            Err(e) => summary.write_errors.push(format!("{rel}: {e}")),
        }
    }

    // A warning (several records on one line) loses nothing: such a file is still compared.
    let faulty: BTreeSet<&Path> = summary
        .errors
        .iter()
        .filter(|e| !e.kind.is_warning())
        .map(|e| e.file.as_path())
        .collect();
    let mut expected: BTreeMap<String, std::path::PathBuf> = BTreeMap::new();
    let mut malformed = derived_malformed;
    for source in &sources {
        let rel = source.relative().into_inner().to_owned();
        if faulty.contains(source.path()) {
            malformed.push(rel);
            continue;
        }
        expected.insert(rel, source.path().to_owned());
        for companion in reader.companions(source) {
            expected.insert(
                companion.relative().into_inner().to_owned(),
                companion.path().to_owned(),
            );
        }
    }
    let mut files = Vec::new();
    for (rel, path) in &expected {
        let difference = match out.files.get(rel) {
            None => Some("not written".to_owned()),
            Some(written) => compare_file(path, written),
        };
        files.push(FileResult {
            path: rel.clone(),
            difference,
        });
    }
    for rel in out.files.keys().filter(|k| !expected.contains_key(*k)) {
        if malformed.contains(rel) {
            continue;
        }
        files.push(FileResult {
            path: rel.clone(),
            difference: Some("written, but there is no such source file".into()),
        });
    }
    Ok(RoundTrip {
        codec: codec.name,
        files,
        malformed,
        derived,
        faults: summary.errors.iter().map(ToString::to_string).collect(),
        write_errors: summary.write_errors,
        losses: summary
            .losses
            .kinds
            .iter()
            .map(|(k, l)| format!("{k} x{} (first at {})", l.count, l.first))
            .collect(),
    })
}

/// A source the codec writes in another form: its native write must read back, with the same
/// codec, into as many sessions as the source held, without a fault. A source that does not read
/// cleanly is malformed (its faults are returned), not a failure of the write.
fn derived_round_trip(
    codec: &'static Codec,
    source: &pond_canonical::Origin,
) -> Result<Vec<pond_canonical::ParseError>, String> {
    let mut out = MemoryOutput::default();
    let summary = convert_sources(
        codec,
        codec,
        pond_codecs::Layout::Mirror,
        std::slice::from_ref(source),
        &mut out,
        &mut |_, _| {},
    )
    .map_err(|e| e.to_string())?;
    if !summary.errors.is_empty() {
        return Ok(summary.errors);
    }
    if !summary.write_errors.is_empty() {
        return Err(summary.write_errors.join("; "));
    }
    let scratch = tempdir_for(codec.name)?;
    out.write_to(&scratch).map_err(|e| e.to_string())?;
    let back = pond_codecs::convert::read_all(codec, &scratch).map_err(|e| e.to_string());
    let _ = std::fs::remove_dir_all(&scratch);
    let (events, faults) = back?;
    if let Some(f) = faults.first() {
        return Err(format!("the native write does not read back cleanly: {f}"));
    }
    let sessions = events
        .iter()
        .filter(|e| matches!(e, pond_canonical::Event::Session(_)))
        .count() as u64;
    if sessions != summary.sessions {
        return Err(format!(
            "{} sessions read, {sessions} read back from the native write",
            summary.sessions
        ));
    }
    Ok(Vec::new())
}

/// A fresh scratch folder under the system temp dir.
pub fn tempdir_for(tag: &str) -> Result<std::path::PathBuf, String> {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("pond-{tag}-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    Ok(dir)
}

/// Compares a source file with what was written for it: line by line for JSONL, whole for JSON.
pub fn compare_file(source: &Path, written: &[u8]) -> Option<String> {
    let original = match std::fs::read(source) {
        Ok(b) => b,
        Err(e) => return Some(format!("cannot read source: {e}")),
    };
    let name = source.to_string_lossy();
    if let Some(plain) = name.strip_suffix(".zst") {
        let decode = |b: &[u8]| zstd::decode_all(b).map_err(|e| e.to_string());
        return match (decode(&original), decode(written)) {
            (Ok(o), Ok(w)) => compare_text(plain, &o, &w),
            (Err(e), _) => Some(format!("source is not zstd: {e}")),
            (_, Err(e)) => Some(format!("written file is not zstd: {e}")),
        };
    }
    compare_text(&name, &original, written)
}

fn compare_text(name: &str, original: &[u8], written: &[u8]) -> Option<String> {
    if name.ends_with(".json") {
        return compare_values(original, written).map(|d| format!("document differs: {d}"));
    }
    // Record for record: a source line holding several records (`{...}{...}`) is each of them,
    // which the native write puts on lines of their own.
    let left: Vec<&[u8]> = json_lines(original)
        .into_iter()
        .flat_map(
            |line| match serde_json::from_slice::<serde::de::IgnoredAny>(line) {
                Ok(_) => vec![line],
                Err(_) => pond_codecs::jsonl::records_on_line(line).unwrap_or_else(|| vec![line]),
            },
        )
        .collect();
    let right: Vec<&[u8]> = json_lines(written);
    for (i, (l, r)) in left.iter().zip(&right).enumerate() {
        if let Some(d) = compare_values(l, r) {
            return Some(format!("record {} differs: {d}", i + 1));
        }
    }
    if left.len() != right.len() {
        return Some(format!(
            "{} records in the source, {} written",
            left.len(),
            right.len()
        ));
    }
    None
}

fn json_lines(bytes: &[u8]) -> Vec<&[u8]> {
    bytes
        .split(|&b| b == b'\n')
        .filter(|l| !l.iter().all(u8::is_ascii_whitespace))
        .collect()
}

fn compare_values(left: &[u8], right: &[u8]) -> Option<String> {
    let l: Value = match serde_json::from_slice(left) {
        Ok(v) => v,
        Err(e) => return Some(format!("source is not JSON: {e}")),
    };
    let r: Value = match serde_json::from_slice(right) {
        Ok(v) => v,
        Err(e) => return Some(format!("written text is not JSON: {e}")),
    };
    if l == r {
        return None;
    }
    Some(first_difference(&l, &r, String::new()))
}

/// The JSON pointer of the first place two values differ, with both sides.
pub fn first_difference(l: &Value, r: &Value, at: String) -> String {
    match (l, r) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in a {
                match b.get(k) {
                    None => {
                        return format!(
                            "{at}/{k}: missing in the written record (source has {})",
                            short(v)
                        );
                    }
                    Some(w) if w != v => return first_difference(v, w, format!("{at}/{k}")),
                    _ => {}
                }
            }
            if let Some((k, v)) = b.iter().find(|(k, _)| !a.contains_key(*k)) {
                return format!("{at}/{k}: added in the written record ({})", short(v));
            }
            format!("{at}: differs")
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            let i = a.iter().zip(b).position(|(x, y)| x != y).unwrap_or(0);
            first_difference(&a[i], &b[i], format!("{at}/{i}"))
        }
        _ => format!("{at}: source {} but written {}", short(l), short(r)),
    }
}

fn short(v: &Value) -> String {
    let s = v.to_string();
    if s.len() > 120 {
        format!("{}...", &s[..s.floor_char_boundary(117)])
    } else {
        s
    }
}

//! The whole conformance suite over fixture roots: every codec's native round trip over its
//! fixtures, and every ordered pair of codecs' foreign conversion, read back by the target codec.
//! `pond conformance` prints its table; CI runs it over `../shared/fixtures` and `fixtures/`.

use crate::roundtrip::native_round_trip;
use pond_codecs::convert::{convert_sources, read_all};
use pond_codecs::output::MemoryOutput;
use pond_codecs::{CODECS, Codec};
use serde::Serialize;
use std::path::{Path, PathBuf};

/// One row of the result table.
#[derive(Debug, Serialize)]
pub struct Check {
    /// `native` or `foreign`.
    pub kind: &'static str,
    /// The source codec.
    pub from: &'static str,
    /// The target codec.
    pub to: &'static str,
    /// The fixture folder.
    pub fixtures: PathBuf,
    /// Files (native) or sessions (foreign) checked.
    pub checked: usize,
    /// Sources skipped as malformed (their faults are expected and listed).
    pub malformed: usize,
    /// Failures; empty when the check passed.
    pub failures: Vec<String>,
    /// Kinds of loss a foreign conversion reported (expected, and listed for review).
    pub losses: Vec<String>,
}

impl Check {
    /// Whether the check passed.
    pub fn passed(&self) -> bool {
        self.failures.is_empty()
    }
}

/// The codec folders found under the fixture roots: `(codec, <root>/<codec name>)`.
pub fn fixture_sets(roots: &[PathBuf]) -> Vec<(&'static Codec, PathBuf)> {
    let mut sets = Vec::new();
    for root in roots {
        for codec in CODECS.iter().copied() {
            let dir = root.join(codec.name);
            if dir.is_dir() {
                sets.push((codec, dir));
            }
        }
    }
    sets
}

/// Runs every check over the fixture roots.
pub fn run(roots: &[PathBuf]) -> Vec<Check> {
    let sets = fixture_sets(roots);
    let mut checks = Vec::new();
    for (codec, dir) in &sets {
        if codec.read.is_some() && codec.write.is_some() {
            checks.push(native(codec, dir));
        }
    }
    for (from, dir) in &sets {
        for to in CODECS
            .iter()
            .copied()
            .filter(|t| t.name != from.name && t.write.is_some())
        {
            if from.read.is_some() {
                checks.push(foreign(from, to, dir));
            }
        }
    }
    checks
}

fn native(codec: &'static Codec, dir: &Path) -> Check {
    let mut check = Check {
        kind: "native",
        from: codec.name,
        to: codec.name,
        fixtures: dir.to_owned(),
        checked: 0,
        malformed: 0,
        failures: Vec::new(),
        losses: Vec::new(),
    };
    match native_round_trip(codec, dir) {
        Err(e) => check.failures.push(e),
        Ok(rt) => {
            check.checked = rt.files.len();
            check.malformed = rt.malformed.len();
            if !rt.passed() {
                check
                    .failures
                    .extend(rt.report().lines().map(str::to_owned));
            }
        }
    }
    check
}

/// Converts every fixture of `from` into `to`, one source unit at a time (two fixtures may hold
/// the same session, which would map to one target file), checks every written file with `to`'s
/// structural validator, then reads each unit's output back with `to`'s own read face: it must
/// parse with no fault and hold at least one session.
fn foreign(from: &'static Codec, to: &'static Codec, dir: &Path) -> Check {
    let mut check = Check {
        kind: "foreign",
        from: from.name,
        to: to.name,
        fixtures: dir.to_owned(),
        checked: 0,
        malformed: 0,
        failures: Vec::new(),
        losses: Vec::new(),
    };
    let Some(reader) = from.read else {
        return check;
    };
    let sources = match reader.discover(dir) {
        Ok(s) => s,
        Err(e) => {
            check.failures.push(e.to_string());
            return check;
        }
    };
    let mut losses = pond_codecs::Losses::default();
    for source in &sources {
        let mut out = MemoryOutput::default();
        let layout = pond_codecs::Layout::Mirror;
        let summary = match convert_sources(
            from,
            to,
            layout,
            std::slice::from_ref(source),
            &mut out,
            &mut |_, _| {},
        ) {
            Ok(s) => s,
            Err(e) => {
                check.failures.push(e.to_string());
                continue;
            }
        };
        if !summary.errors.is_empty() {
            check.malformed += 1;
        }
        check.failures.extend(summary.write_errors.iter().cloned());
        check.checked += summary.foreign_sessions as usize;
        losses.merge(summary.losses);
        if let Err(e) = read_back(to, &out) {
            let unit = source.relative().into_inner().to_owned();
            check
                .failures
                .extend(e.into_iter().map(|f| format!("{unit}: {f}")));
        }
    }
    check.losses = losses
        .kinds
        .iter()
        .map(|(k, l)| format!("{k} x{}", l.count))
        .collect();
    check
}

/// Validates every file of a foreign write with the target's structural check and reads the
/// files back with the target's read face.
fn read_back(to: &'static Codec, out: &MemoryOutput) -> Result<(), Vec<String>> {
    let mut failures = Vec::new();
    if out.files.is_empty() {
        return Ok(());
    }
    // The target's own structural check of every file written (what the harness requires).
    if let Some(validate) = to.validate {
        for (rel, bytes) in &out.files {
            failures.extend(
                validate(rel, bytes)
                    .into_iter()
                    .map(|p| format!("{rel}: {p}")),
            );
        }
    }
    if to.read.is_some() {
        let scratch = crate::roundtrip::tempdir_for(to.name).map_err(|e| vec![e])?;
        if let Err(e) = out.write_to(&scratch) {
            failures.push(format!("{}: {e}", scratch.display()));
        }
        match read_all(to, &scratch) {
            Err(e) => failures.push(format!("{} cannot read the output back: {e}", to.name)),
            Ok((events, faults)) => {
                failures.extend(
                    faults
                        .iter()
                        .map(|f| format!("{} reads its own output with a fault: {f}", to.name)),
                );
                if !events
                    .iter()
                    .any(|e| matches!(e, pond_canonical::Event::Session(_)))
                {
                    failures.push(format!("{} found no session in the output", to.name));
                }
            }
        }
        let _ = std::fs::remove_dir_all(&scratch);
    }
    if failures.is_empty() {
        Ok(())
    } else {
        Err(failures)
    }
}

/// The result table for people.
pub fn table(checks: &[Check]) -> String {
    let mut s = format!(
        "{:<8} {:<12} {:<12} {:>7} {:>9}  {:<6} FIXTURES\n",
        "KIND", "FROM", "TO", "CHECKED", "MALFORMED", "RESULT"
    );
    for c in checks {
        s.push_str(&format!(
            "{:<8} {:<12} {:<12} {:>7} {:>9}  {:<6} {}\n",
            c.kind,
            c.from,
            c.to,
            c.checked,
            c.malformed,
            if c.passed() { "ok" } else { "FAIL" },
            c.fixtures.display()
        ));
        for f in c.failures.iter().take(10) {
            s.push_str(&format!("    {f}\n"));
        }
        if c.failures.len() > 10 {
            s.push_str(&format!("    ... and {} more\n", c.failures.len() - 10));
        }
    }
    let failed = checks.iter().filter(|c| !c.passed()).count();
    s.push_str(&format!(
        "{} passed, {} failed\n",
        checks.len() - failed,
        failed
    ));
    s
}

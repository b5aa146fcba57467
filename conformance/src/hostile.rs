//! What every fuzz target (`fuzz/`) does with its input, and what the regression test replays:
//! the bytes become one source file of a codec, which is read both ways a read face streams
//! (`read`, and `read_items` through a native conversion), and whatever it yields is written by
//! every write face, native and foreign; a native write is read back. Nothing here may panic,
//! hang or allocate without bound, whatever the bytes; faults are expected and ignored.

use pond_canonical::{Event, WireEvent};
use pond_codecs::convert::{convert_sources, read_all, write_events};
use pond_codecs::output::MemoryOutput;
use pond_codecs::{CODECS, Codec, Layout};
use std::path::{Path, PathBuf};

/// Which input a fuzz target makes of its bytes.
#[derive(Clone, Copy, Debug)]
pub enum Target {
    ClaudeCode,
    /// The first byte picks a plain rollout (0), the rest as a `.jsonl.zst` archive (1), or the
    /// rest compressed into a valid archive (2).
    Codex,
    OpencodeExport,
    OpencodeDb,
    Pi,
    /// A JSON array of `pond_ingest` wire events.
    WireEvents,
}

impl Target {
    /// Every target, by the name of its fuzz binary and its regression folder.
    pub const ALL: [(&'static str, Target); 6] = [
        ("claude_code", Target::ClaudeCode),
        ("codex", Target::Codex),
        ("opencode_export", Target::OpencodeExport),
        ("opencode_db", Target::OpencodeDb),
        ("pi", Target::Pi),
        ("wire_events", Target::WireEvents),
    ];

    /// Runs one input in the scratch folder `scratch` (emptied first).
    pub fn run(self, data: &[u8], scratch: &Path) {
        const ROLLOUT: &str =
            "rollout-2025-01-01T00-00-00-00000000-0000-4000-8000-000000000001.jsonl";
        let (codec, name, bytes) = match self {
            Target::ClaudeCode => (
                "claude-code",
                "6f1d1a9e-0000-4000-8000-000000000001.jsonl".to_owned(),
                data.to_vec(),
            ),
            Target::Codex => {
                let Some((&mode, rest)) = data.split_first() else {
                    return;
                };
                match mode % 3 {
                    0 => ("codex", ROLLOUT.to_owned(), rest.to_vec()),
                    1 => ("codex", format!("{ROLLOUT}.zst"), rest.to_vec()),
                    _ => match pond_codecs::codex::archive::compress(rest) {
                        Ok(z) => ("codex", format!("{ROLLOUT}.zst"), z),
                        Err(_) => return,
                    },
                }
            }
            Target::OpencodeExport => ("opencode", "ses_fuzz.json".to_owned(), data.to_vec()),
            Target::OpencodeDb => ("opencode", "opencode.db".to_owned(), data.to_vec()),
            Target::Pi => (
                "pi",
                "2025-01-01T00-00-00-000Z_fuzz.jsonl".to_owned(),
                data.to_vec(),
            ),
            Target::WireEvents => return wire_events(data),
        };
        let codec = pond_codecs::find(codec).expect("a registered codec");
        let input = scratch.join("in");
        let _ = std::fs::remove_dir_all(scratch);
        std::fs::create_dir_all(&input).expect("scratch folder");
        std::fs::write(input.join(name), bytes).expect("scratch write");
        exercise(codec, &input, &scratch.join("back"));
    }
}

/// Reads every source `codec` finds at `input` both ways, writes what it read with every write
/// face, and reads a native write back from `back`.
pub fn exercise(codec: &'static Codec, input: &Path, back: &Path) {
    let Some(reader) = codec.read else { return };
    let _ = reader.sniff(input);
    let Ok(sources) = reader.discover(input) else {
        return;
    };
    let mut native = MemoryOutput::default();
    let _ = convert_sources(
        codec,
        codec,
        Layout::Mirror,
        &sources,
        &mut native,
        &mut |_, _| {},
    );
    let Ok((events, _faults)) = read_all(codec, input) else {
        return;
    };
    write_all(&events);
    if native.write_to(back).is_ok() {
        let _ = read_all(codec, back);
    }
}

/// The canonical half of a `pond_ingest` body: deserialized, assembled (ordering and role
/// allowlists checked), then written by every writer.
fn wire_events(data: &[u8]) {
    let Ok(events) = serde_json::from_slice::<Vec<WireEvent>>(data) else {
        return;
    };
    let Ok(logs) = pond_canonical::validate::assemble(events) else {
        return;
    };
    let events: Vec<Event> = logs
        .into_iter()
        .flat_map(|log| {
            std::iter::once(Event::Session(log.session))
                .chain(log.messages.into_iter().map(Event::Message))
        })
        .collect();
    write_all(&events);
}

/// Writes `events` with every write face, into memory.
fn write_all(events: &[Event]) {
    for target in CODECS.iter().filter(|c| c.write.is_some()) {
        let mut out = MemoryOutput::default();
        let _ = write_events(
            target,
            Layout::Mirror,
            "unit",
            events.iter().cloned(),
            &mut out,
        );
    }
}

/// The committed regression inputs of each fuzz target: `fuzz/regressions/<target>/*`.
pub fn regressions() -> Vec<(Target, PathBuf)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/regressions");
    let mut found = Vec::new();
    for (name, target) in Target::ALL {
        let Ok(dir) = std::fs::read_dir(root.join(name)) else {
            continue;
        };
        let mut files: Vec<PathBuf> = dir.filter_map(|e| e.ok().map(|e| e.path())).collect();
        files.sort();
        found.extend(files.into_iter().map(|f| (target, f)));
    }
    found
}

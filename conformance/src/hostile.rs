//! What every fuzz target (`fuzz/`) does with its input, and what the regression test replays:
//! the bytes become one source file of a codec, which is read both ways a read face streams
//! (`read`, and `read_items` through a native conversion), and whatever it yields is written by
//! every write face, native and foreign; a native write is read back. The `.pond` archive's
//! container is unpacked the way `pond import` unpacks it. Nothing here may panic, hang or
//! allocate without bound, whatever the bytes; faults are expected and ignored. Two properties
//! are checked besides: a two-thread conversion's reading stands for what `read` gives
//! ([`deferred_is_read`]), so does every reasoning line a foreign read hands over as its
//! line ([`reasoning_lines_are_read`]), and a pi entry or a Codex line a foreign read maps from
//! its line's tape is the message its record makes ([`pi_entries_map_as_their_records`],
//! [`codex_lines_map_as_their_records`]); a difference panics, so the fuzzer reports it.

use pond_canonical::{Event, Origin, Session, WireEvent, ingest};
use pond_codecs::convert::{convert_sources, read_all, write_events};
use pond_codecs::output::MemoryOutput;
use pond_codecs::{CODECS, Codec, Item, Layout, ReadFace};
use std::collections::HashMap;
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
    /// A `.pond` archive: its container unpacked and checked (`pond_archive::unpack`); the Lance
    /// datasets inside are the store's to open.
    Archive,
}

impl Target {
    /// Every target, by the name of its fuzz binary and its regression folder.
    pub const ALL: [(&'static str, Target); 7] = [
        ("claude_code", Target::ClaudeCode),
        ("codex", Target::Codex),
        ("opencode_export", Target::OpencodeExport),
        ("opencode_db", Target::OpencodeDb),
        ("pi", Target::Pi),
        ("wire_events", Target::WireEvents),
        ("archive", Target::Archive),
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
            Target::Archive => return archive(data, scratch),
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
    for source in &sources {
        deferred_is_read(reader, source);
        reasoning_lines_are_read(reader, source);
        if codec.name == pond_codecs::pi::NAME {
            pi_entries_map_as_their_records(source);
        }
        if codec.name == pond_codecs::codex::NAME {
            codex_lines_map_as_their_records(source);
        }
    }
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

/// A two-thread conversion's reading (`read_items` with `defer`: messages cross unmade, pi's
/// first pass walks on two threads) stands for exactly what `read` gives, each deferred message
/// made after every later one (a conversion makes them on whichever thread is free).
fn deferred_is_read(reader: &dyn ReadFace, source: &Origin) {
    type Stream = Vec<Result<Event, String>>;
    let mut plain: Stream = Vec::new();
    reader.read(source, &mut |item| {
        plain.push(item.map_err(|e| e.to_string()))
    });
    let mut items: Stream = Vec::new();
    let mut later = Vec::new();
    reader.read_items(source, true, &mut |item| match item {
        Ok(Item::Event(event)) => items.push(Ok(event)),
        Ok(Item::Carried(line)) => items.push(Ok(Event::Message(line.message()))),
        Ok(Item::Reasoning(line)) => items.push(Ok(Event::Message(line.message()))),
        Ok(Item::Deferred(make) | Item::Parsed(make)) => {
            later.push((items.len(), make));
            items.push(Err(String::new()));
        }
        Err(e) => items.push(Err(e.to_string())),
    });
    for (at, make) in later.into_iter().rev() {
        let mut made: Stream = Vec::new();
        make(source, &mut |m| {
            made.push(m.map(Event::Message).map_err(|e| e.to_string()))
        });
        items.splice(at..=at, made);
    }
    assert!(
        plain == items,
        "{}: read_items with defer does not stand for what read gives",
        source.path().display()
    );
}

/// Every line of the pi file `source` that a foreign read maps from its simd-json tape
/// (`pond_codecs::pi::check_line`, for each foreign writer's option keys) makes the message its
/// pruned record makes. Returns how many reads of its lines were so mapped.
pub fn pi_entries_map_as_their_records(source: &Origin) -> usize {
    each_line_checked(source, pond_codecs::pi::check_line)
}

/// The sum of `check` over every line of the file `source`; a line it finds wrong panics.
fn each_line_checked(source: &Origin, check: fn(&Origin, &[u8]) -> Result<usize, String>) -> usize {
    let Ok(bytes) = std::fs::read(source.path()) else {
        return 0;
    };
    bytes
        .split(|&b| b == b'\n')
        .map(|line| {
            check(source, line).unwrap_or_else(|e| panic!("{}: {e}", source.path().display()))
        })
        .sum()
}

/// Every line of the rollout `source` that a foreign read maps from its simd-json tape
/// (`pond_codecs::codex::check_line`, for each writer's option keys) makes the message its
/// record makes. Returns how many reads of its lines were so mapped (none of a `.zst` archive,
/// whose lines are compressed).
pub fn codex_lines_map_as_their_records(source: &Origin) -> usize {
    each_line_checked(source, pond_codecs::codex::check_line)
}

/// A foreign read for a writer that takes reasoning lines (`Item::Reasoning`, as Claude Code's
/// does) hands over only lines whose message is what the line says: the message `read` gives
/// at the same place (the same id), an assistant message of as many reasoning parts as the line
/// counts, none signed, naming no model, holding encrypted content just when the line says so.
/// Returns how many reasoning lines `source` gave.
pub fn reasoning_lines_are_read(reader: &dyn ReadFace, source: &Origin) -> usize {
    use pond_canonical::{AssistantPart, Message};
    use serde_json::{Map, Value};
    /// Whether any member named one of `keys`, non-null, is found to `depth` levels down.
    fn has(obj: &Map<String, Value>, keys: &[&str], depth: usize) -> bool {
        obj.iter()
            .any(|(k, v)| keys.contains(&k.as_str()) && !v.is_null())
            || depth > 0
                && obj
                    .values()
                    .filter_map(Value::as_object)
                    .any(|v| has(v, keys, depth - 1))
    }
    let mut plain = HashMap::new();
    reader.read(source, &mut |item| {
        if let Ok(Event::Message(m)) = item {
            plain.insert((m.session_id().clone(), m.id().clone()), m);
        }
    });
    let wanted = pond_codecs::Wanted {
        keys: &["model", "encrypted_content"],
        reasoning_lines: true,
    };
    let mut lines = 0;
    let at = source.path().display();
    reader.read_items_for(source, false, wanted, &mut |item| {
        let Ok(Item::Reasoning(line)) = item else {
            return;
        };
        lines += 1;
        let message = line.message();
        assert_eq!(line.session_id(), message.session_id(), "{at}");
        let key = (message.session_id().clone(), message.id().clone());
        assert_eq!(
            plain.get(&key),
            Some(&message),
            "{at}: a reasoning line's message is not the one read gives"
        );
        let Message::Assistant(assistant) = &message else {
            panic!("{at}: a reasoning line's message is no assistant message");
        };
        assert_eq!(line.parts, assistant.content.len(), "{at}: parts");
        for part in &assistant.content {
            let AssistantPart::Reasoning(r) = part else {
                panic!("{at}: a reasoning line's message holds a part of another kind");
            };
            assert!(
                !has(&r.options, &["signature", "thinkingSignature"], 8),
                "{at}: a signed part"
            );
        }
        let options = message.options();
        assert!(
            !has(options, &["model", "modelID", "modelId"], 8),
            "{at}: a reasoning line's message names a model"
        );
        assert_eq!(
            line.encrypted,
            has(options, &["encrypted_content"], 4),
            "{at}: encrypted content"
        );
    });
    lines
}

/// The canonical half of a `pond_ingest` body: deserialized, grouped by session and checked as
/// the handler checks a batch (`pond_canonical::ingest`: ordering, role allowlists, the model
/// validator), once with nothing stored and once with every session of the batch as if stored
/// (continuations, immutable fields); what passes is written by every writer.
fn wire_events(data: &[u8]) {
    let Ok(events) = serde_json::from_slice::<Vec<WireEvent>>(data) else {
        return;
    };
    let stored: HashMap<String, Session> = events
        .iter()
        .filter_map(|e| match e {
            WireEvent::Session(s) => Some((s.id.to_string(), s.clone())),
            _ => None,
        })
        .collect();
    let mut logs = Vec::new();
    for (sid, substream) in ingest::by_session(events) {
        if let Ok((log, positions)) = ingest::check_session(substream.clone(), None) {
            assert_eq!(positions.len(), log.messages.len(), "a seq per message");
            logs.push(log);
        }
        if let Ok((log, positions)) = ingest::check_session(substream, stored.get(&sid)) {
            assert_eq!(positions.len(), log.messages.len(), "a seq per message");
        }
    }
    let events: Vec<Event> = logs
        .into_iter()
        .flat_map(|log| {
            std::iter::once(Event::Session(log.session))
                .chain(log.messages.into_iter().map(Event::Message))
        })
        .collect();
    write_all(&events);
}

/// A `.pond` archive unpacked as `pond import` does (the expectations of schema version 1, whose
/// manifests `fuzz/seed.sh` writes). Whatever the bytes, nothing may be written outside the
/// destination: the scratch folder holds the archive and the destination only, after.
fn archive(data: &[u8], scratch: &Path) {
    const TABLES: [&str; 3] = ["sessions", "messages", "parts"];
    let _ = std::fs::remove_dir_all(scratch);
    let dest = scratch.join("out");
    std::fs::create_dir_all(&dest).expect("scratch folder");
    let input = scratch.join("in.pond");
    std::fs::write(&input, data).expect("scratch write");
    let expected = pond_archive::Expected {
        schema_version: 1,
        tables: &TABLES,
    };
    let _ = pond_archive::unpack(&input, &dest, &expected, &mut |done, total| {
        assert!(done <= total, "unpacked {done} of {total} bytes");
    });
    let mut names: Vec<String> = std::fs::read_dir(scratch)
        .expect("scratch folder")
        .map(|e| {
            e.expect("an entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    names.sort();
    assert_eq!(
        names,
        ["in.pond", "out"],
        "the archive wrote outside its destination"
    );
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

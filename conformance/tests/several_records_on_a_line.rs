//! Two records on one line (`{...}{...}`): real Claude Code and pi files hold lines where two
//! JSON objects were written with no newline between them. Every record of such a line is read,
//! in order, after a warning located at its file and line; a native write puts each on a line of
//! its own, so the round trip is value-equal record for record (to the joined file, and to the
//! file before its newline was lost).

use pond_canonical::{Event, Locator, ParseError, ParseErrorKind};
use pond_codecs::Codec;
use pond_codecs::convert::read_all;
use pond_conformance::roundtrip::{compare_file, native_round_trip};
use std::path::{Path, PathBuf};

fn shared(relative: &str) -> PathBuf {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/fixtures")
        .join(relative);
    assert!(p.is_file(), "missing shared fixture {}", p.display());
    p
}

/// A copy of `source` under `dir/name` with the newline after line `line` removed (so lines
/// `line` and `line + 1` share a line), and a copy of it unchanged under `dir/whole/name`.
fn join_lines(source: &Path, line: usize, dir: &Path, name: &str) -> (PathBuf, PathBuf) {
    let text = std::fs::read_to_string(source).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    assert!(lines.len() > line, "{} is too short", source.display());
    let second = lines.remove(line);
    let first = lines[line - 1].to_owned() + second;
    lines[line - 1] = &first;
    let joined = dir.join("joined").join(name);
    std::fs::create_dir_all(joined.parent().unwrap()).unwrap();
    std::fs::write(&joined, lines.join("\n") + "\n").unwrap();
    let whole = dir.join("whole").join(name);
    std::fs::create_dir_all(whole.parent().unwrap()).unwrap();
    std::fs::copy(source, &whole).unwrap();
    (joined, whole)
}

fn message_ids(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Message(m) => Some(m.id().to_string()),
            Event::Session(_) => None,
        })
        .collect()
}

/// Reads the joined file and its unjoined original: the same messages in the same order, and
/// one warning at the joined line, which the round trip does not count as a fault.
fn check(codec: &'static Codec, source: &str, line: usize, name: &str) -> Vec<Event> {
    let dir = tempfile::tempdir().unwrap();
    let (joined, whole) = join_lines(&shared(source), line, dir.path(), name);
    let (events, faults) = read_all(codec, &joined).unwrap();
    let (original, original_faults) = read_all(codec, &whole).unwrap();
    assert!(original_faults.is_empty(), "{original_faults:?}");
    let warnings: Vec<&ParseError> = faults.iter().filter(|f| f.kind.is_warning()).collect();
    assert_eq!(warnings.len(), 1, "{faults:?}");
    assert_eq!(warnings[0].file, joined);
    assert_eq!(warnings[0].locator, Locator::Line(line as u64));
    assert_eq!(
        warnings[0].kind,
        ParseErrorKind::SeveralRecordsOnOneLine { records: 2 }
    );
    assert!(
        warnings[0]
            .to_string()
            .contains(&format!(":{line}: warning"))
    );
    assert_eq!(faults.len(), 1, "only the warning: {faults:?}");
    assert_eq!(events.len(), original.len(), "every record read");
    // Both records, in order: where ids come from the records (uuids, pi ids) they are the
    // original's; where from positions, the second record is `L<line>.2`.
    let ids = message_ids(&events);
    let want = message_ids(&original);
    for (got, want) in ids.iter().zip(&want) {
        assert!(
            got == want || got.starts_with('L'),
            "{got} where the original has {want}"
        );
    }
    // Native: value-equal record for record to the joined source and to the original.
    let rt = native_round_trip(codec, joined.parent().unwrap()).unwrap();
    assert!(rt.passed(), "{}", rt.report());
    assert!(rt.malformed.is_empty(), "{:?}", rt.malformed);
    assert_eq!(rt.files.len(), 1);
    let written = written_file(codec, &joined);
    assert_eq!(compare_file(&whole, &written), None);
    assert_eq!(compare_file(&joined, &written), None);
    events
}

/// The native write of the one source in `file`'s folder.
fn written_file(codec: &'static Codec, file: &Path) -> Vec<u8> {
    let mut out = pond_codecs::output::MemoryOutput::default();
    let mirror = pond_codecs::Layout::Mirror;
    let root = file.parent().unwrap();
    pond_codecs::convert::convert(codec, codec, mirror, root, &mut out, &mut |_, _| {}).unwrap();
    let name = file.file_name().unwrap().to_string_lossy();
    out.files
        .into_iter()
        .find(|(rel, _)| rel.ends_with(name.as_ref()))
        .map(|(_, bytes)| bytes)
        .expect("the file is written")
}

#[test]
fn claude_code_reads_both_records_of_a_line() {
    let events = check(
        &pond_codecs::claude_code::CODEC,
        "claude-code/marot-spotter/258c7280-ae70-4798-800f-63464d01a85d.jsonl",
        2,
        "4b1f0a0e-0d6f-4a43-9d35-1f3c2b8d5a11.jsonl",
    );
    let second = events
        .iter()
        .filter_map(|e| match e {
            Event::Message(m) => Some(m),
            _ => None,
        })
        .nth(2)
        .unwrap();
    assert_eq!(second.options()["source"]["line"], 2);
    assert_eq!(second.options()["source"]["record_in_line"], 2);
}

#[test]
fn pi_reads_both_records_of_a_line() {
    check(
        &pond_codecs::pi::CODEC,
        "pi/large-session.jsonl",
        3,
        "2025-01-01T00-00-00-000Z_joined.jsonl",
    );
}

#[test]
fn codex_reads_both_records_of_a_line() {
    let events = check(
        &pond_codecs::codex::CODEC,
        "codex/localpush-2026-02-23/rollout-2026-02-23T20-34-25-019c8bfe-ec25-79e0-97d7-bda6a9c575ff.jsonl",
        4,
        "rollout-2026-02-23T20-34-25-019c8bfe-ec25-79e0-97d7-bda6a9c575ff.jsonl",
    );
    let ids = message_ids(&events);
    assert!(ids.contains(&"L4.2".to_owned()), "{ids:?}");
}

#[test]
fn a_line_with_a_complete_record_and_a_broken_one_reads_the_complete_one() {
    let dir = tempfile::tempdir().unwrap();
    let source = shared("pi/large-session.jsonl");
    let text = std::fs::read_to_string(&source).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    let cut = lines[3].len() / 2;
    let broken = lines[3][..cut].to_owned();
    lines[2].push_str(&broken);
    lines.remove(3);
    let file = dir.path().join("2025-01-01T00-00-00-000Z_broken.jsonl");
    std::fs::write(&file, lines.join("\n") + "\n").unwrap();
    let (events, faults) = read_all(&pond_codecs::pi::CODEC, &file).unwrap();
    assert!(!events.is_empty());
    assert_eq!(faults.len(), 2, "{faults:?}");
    assert!(faults[0].kind.is_warning());
    assert_eq!(faults[0].locator, Locator::Line(3));
    assert_eq!(
        faults[1].locator,
        Locator::LineRecord { line: 3, record: 2 }
    );
    assert!(
        matches!(faults[1].kind, ParseErrorKind::Truncated { .. }),
        "{faults:?}"
    );
    assert!(
        faults[1]
            .to_string()
            .contains(":3 (record 2 of the line): truncated")
    );
}

/// A fork whose side branch is one entry written on a main-line entry's line (`{main}{side}`),
/// the main line going on at the next lines: the native write, which writes a file's entries
/// as they come while each is the next line alone on it, puts the side entry back right after
/// its line-mate, not after the main line, because the reader marks every record of a shared
/// line, the first too.
#[test]
fn pi_writes_a_side_entry_sharing_a_main_line_back_in_line_order() {
    let codec = &pond_codecs::pi::CODEC;
    let dir = tempfile::tempdir().unwrap();
    let header = serde_json::json!({"type": "session", "version": 3,
        "id": "7c1e2d3f-0000-4000-8000-00000000cafe",
        "timestamp": "2026-01-10T09:00:00.000Z", "cwd": "/home/me/proj"});
    let entry = |id: &str, parent: Option<&str>, second: u32| {
        serde_json::json!({"type": "message", "id": id, "parentId": parent,
            "timestamp": format!("2026-01-10T09:00:{second:02}.000Z"),
            "message": {"role": "user", "content": format!("entry {id}")}})
        .to_string()
    };
    // u1 - u2 - u4 - u5 is the main line (its leaf is the last entry); s3 forks off u1.
    let lines = [
        header.to_string(),
        entry("u1", None, 1),
        entry("u2", Some("u1"), 2) + &entry("s3", Some("u1"), 3),
        entry("u4", Some("u2"), 4),
        entry("u5", Some("u4"), 5),
    ];
    let file = dir.path().join("2026-01-10T09-00-00-000Z_fork.jsonl");
    std::fs::write(&file, lines.join("\n") + "\n").unwrap();
    let (events, _) = read_all(codec, &file).unwrap();
    let record_in_line = |id: &str| {
        events.iter().find_map(|e| match e {
            Event::Message(m) if m.id().as_str() == id => {
                Some(m.options()["source"]["record_in_line"].clone())
            }
            _ => None,
        })
    };
    assert_eq!(record_in_line("u2"), Some(serde_json::json!(1)));
    assert_eq!(record_in_line("s3"), Some(serde_json::json!(2)));
    assert_eq!(record_in_line("u4"), Some(serde_json::Value::Null));
    let written = String::from_utf8(written_file(codec, &file)).unwrap();
    let ids: Vec<String> = written
        .lines()
        .skip(1)
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            v["id"].as_str().unwrap().to_owned()
        })
        .collect();
    assert_eq!(ids, ["u1", "u2", "s3", "u4", "u5"], "{written}");
}

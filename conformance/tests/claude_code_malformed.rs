//! Malformed Claude Code input gives typed errors naming the codec, file and line, and a valid
//! session beside it still converts (adapter-integrity-no-silent-drops).

use pond_canonical::ParseErrorKind;
use pond_codecs::claude_code::CODEC;
use pond_codecs::convert::convert_sources;
use pond_codecs::output::MemoryOutput;
use std::io::Write;
use std::path::{Path, PathBuf};

const GOOD: &str = concat!(
    r#"{"parentUuid":null,"isSidechain":false,"userType":"external","cwd":"/p","sessionId":"s","version":"2.1.39","type":"user","message":{"role":"user","content":"hi"},"uuid":"u1","timestamp":"2026-01-01T00:00:00.000Z"}"#,
    "\n",
    r#"{"parentUuid":"u1","isSidechain":false,"userType":"external","cwd":"/p","sessionId":"s","version":"2.1.39","message":{"id":"m","type":"message","role":"assistant","model":"claude-opus-4-6","content":[{"type":"text","text":"hello"}]},"type":"assistant","uuid":"u2","timestamp":"2026-01-01T00:00:01.000Z"}"#,
    "\n",
);

/// A fresh folder under the system temp dir, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("pond-cc-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("temp dir");
        Self(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn write(dir: &Path, name: &str, bytes: &[u8]) {
    std::fs::write(dir.join(name), bytes).expect("write fixture");
}

/// A line of `bytes` bytes written in chunks, never held in memory whole.
fn write_long_line(path: &Path, bytes: usize) {
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).expect("create"));
    f.write_all(GOOD.lines().next().unwrap().as_bytes())
        .unwrap();
    f.write_all(b"\n{\"type\":\"user\",\"pad\":\"").unwrap();
    let chunk = vec![b'a'; 1 << 20];
    let mut left = bytes;
    while left > 0 {
        let n = left.min(chunk.len());
        f.write_all(&chunk[..n]).unwrap();
        left -= n;
    }
    f.write_all(b"\"}\n").unwrap();
    f.write_all(GOOD.lines().nth(1).unwrap().as_bytes())
        .unwrap();
    f.write_all(b"\n").unwrap();
    f.flush().unwrap();
}

#[test]
fn each_fault_is_typed_and_located_and_the_good_session_converts() {
    let tmp = TempDir::new("malformed");
    let dir = &tmp.0;
    let first = GOOD.lines().next().unwrap();
    write(dir, "good.jsonl", GOOD.as_bytes());
    write(
        dir,
        "truncated.jsonl",
        format!("{first}\n{{\"type\":\"user\",\"message\":{{\"role\"").as_bytes(),
    );
    write(
        dir,
        "invalid_json.jsonl",
        format!("{first}\n{{\"type\": }}\n").as_bytes(),
    );
    let mut utf8 = format!("{first}\n").into_bytes();
    utf8.extend_from_slice(b"{\"type\":\"user\",\"x\":\"\xff\xfe\"}\n");
    write(dir, "invalid_utf8.jsonl", &utf8);
    write(
        dir,
        "not_object.jsonl",
        format!("{first}\n[1,2,3]\n").as_bytes(),
    );
    write_long_line(&dir.join("long_line.jsonl"), 200 * 1000 * 1000);

    let reader = CODEC.read.expect("read face");
    let sources = reader.discover(dir).expect("discover");
    assert_eq!(sources.len(), 6);
    let mut out = MemoryOutput::default();
    let summary = convert_sources(
        &CODEC,
        &CODEC,
        pond_codecs::Layout::Mirror,
        &sources,
        &mut out,
        &mut |_, _| {},
    )
    .expect("convert");
    assert!(
        summary.write_errors.is_empty(),
        "{:?}",
        summary.write_errors
    );

    let fault = |file: &str| {
        let found: Vec<_> = summary
            .errors
            .iter()
            .filter(|e| e.file.file_name().is_some_and(|n| n == file))
            .collect();
        assert_eq!(found.len(), 1, "{file}: {:#?}", summary.errors);
        let e = found[0];
        assert_eq!(e.codec, "claude-code");
        let text = e.to_string();
        assert!(text.starts_with("claude-code: "), "{text}");
        assert!(text.contains(file), "{text}");
        (e.locator.clone(), e.kind.clone())
    };
    use pond_canonical::Locator::Line;
    assert!(matches!(
        fault("truncated.jsonl"),
        (Line(2), ParseErrorKind::Truncated { .. })
    ));
    assert!(matches!(
        fault("invalid_json.jsonl"),
        (Line(2), ParseErrorKind::InvalidJson { .. })
    ));
    assert!(matches!(
        fault("invalid_utf8.jsonl"),
        (Line(2), ParseErrorKind::InvalidUtf8 { .. })
    ));
    assert!(matches!(
        fault("not_object.jsonl"),
        (Line(2), ParseErrorKind::NotAnObject { .. })
    ));
    match fault("long_line.jsonl") {
        (Line(2), ParseErrorKind::LineTooLong { bytes, .. }) => {
            assert!(bytes > 200_000_000, "{bytes}")
        }
        other => panic!("long line: {other:?}"),
    }
    assert_eq!(summary.errors.len(), 5, "{:#?}", summary.errors);

    // The valid session converts whole, and the good lines around each fault are kept.
    let good = out.files.get("good.jsonl").expect("good.jsonl written");
    assert_eq!(
        pond_conformance::roundtrip::compare_file(&dir.join("good.jsonl"), good),
        None
    );
    for file in [
        "truncated.jsonl",
        "invalid_json.jsonl",
        "invalid_utf8.jsonl",
        "not_object.jsonl",
    ] {
        let written = String::from_utf8(out.files.get(file).cloned().unwrap_or_default()).unwrap();
        assert_eq!(written.lines().count(), 1, "{file}: {written}");
    }
    let long = String::from_utf8(out.files["long_line.jsonl"].clone()).unwrap();
    assert_eq!(
        long.lines().count(),
        2,
        "the lines around the long one are kept"
    );
}

#[test]
fn a_session_without_cwd_is_refused_with_no_project() {
    let tmp = TempDir::new("noproject");
    let dir = &tmp.0;
    write(
        dir,
        "s.jsonl",
        br#"{"type":"user","message":{"role":"user","content":"hi"},"uuid":"u1","timestamp":"2026-01-01T00:00:00Z"}
"#,
    );
    write(dir, "good.jsonl", GOOD.as_bytes());
    let reader = CODEC.read.expect("read face");
    let sources = reader.discover(dir).expect("discover");
    let mut out = MemoryOutput::default();
    let summary = convert_sources(
        &CODEC,
        &CODEC,
        pond_codecs::Layout::Mirror,
        &sources,
        &mut out,
        &mut |_, _| {},
    )
    .expect("convert");
    assert_eq!(summary.errors.len(), 1, "{:#?}", summary.errors);
    assert_eq!(summary.errors[0].kind, ParseErrorKind::NoProject);
    assert!(summary.errors[0].file.ends_with("s.jsonl"));
    assert_eq!(summary.sessions, 1);
    assert!(out.files.contains_key("good.jsonl") && !out.files.contains_key("s.jsonl"));
}

#[test]
fn duplicate_uuids_are_counted_and_kept() {
    let tmp = TempDir::new("dups");
    let dir = &tmp.0;
    let first = GOOD.lines().next().unwrap();
    write(dir, "d.jsonl", format!("{GOOD}{first}\n").as_bytes());
    let (events, errors) = pond_codecs::convert::read_all(&CODEC, dir).expect("read");
    assert!(errors.is_empty(), "{errors:?}");
    let pond_canonical::Event::Session(session) = &events[0] else {
        panic!("session first")
    };
    assert_eq!(session.options["source"]["duplicate_uuids"], 1);
    let ids: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            pond_canonical::Event::Message(m) => Some(m.id().to_string()),
            _ => None,
        })
        .collect();
    assert_eq!(ids, ["u1", "u2", "u1@L3"]);
    let result = pond_conformance::roundtrip::native_round_trip(&CODEC, dir).expect("round trip");
    assert!(
        result.passed() && result.malformed.is_empty(),
        "{}",
        result.report()
    );
}

/// Another harness's file named as Claude Code's (a pi session, a Codex rollout, with a project
/// of their own) is refused whole with one located error, not stored as a session of carried
/// records, while a real Claude Code file beside it converts.
#[test]
fn another_harness_file_is_refused_not_read_as_carriers() {
    let dir = TempDir::new("foreign");
    let shared = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/fixtures");
    for (name, fixture) in [
        ("pi.jsonl", "pi/harness-generated/v3-branching-input.jsonl"),
        (
            "codex.jsonl",
            "codex/generated-codex-0.169.0/exec-with-agents-md.jsonl",
        ),
    ] {
        std::fs::copy(shared.join(fixture), dir.0.join(name)).expect("copy");
    }
    write(&dir.0, "good.jsonl", GOOD.as_bytes());
    let sources = CODEC.read.unwrap().discover(&dir.0).unwrap();
    let mut out = MemoryOutput::default();
    let summary = convert_sources(
        &CODEC,
        &pond_codecs::pi::CODEC,
        pond_codecs::Layout::Mirror,
        &sources,
        &mut out,
        &mut |_, _| {},
    )
    .unwrap();
    let mut refused: Vec<String> = summary
        .errors
        .iter()
        .map(|e| {
            assert!(
                matches!(&e.kind, ParseErrorKind::Unrecognized { detail } if detail.contains("no record is Claude Code's")),
                "{e}"
            );
            assert_eq!(e.locator, pond_canonical::Locator::File, "{e}");
            e.file.file_name().unwrap().to_string_lossy().into_owned()
        })
        .collect();
    refused.sort();
    assert_eq!(refused, ["codex.jsonl", "pi.jsonl"]);
    // Only the Claude Code file became a session.
    assert_eq!(summary.sessions, 1, "{summary:?}");
}

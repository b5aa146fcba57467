//! A file that starts with a UTF-8 byte order mark (as Windows editors save text) reads as the
//! same file without it, in every codec, and is detected as its harness's: the mark is no part
//! of a JSON value (docs/decisions.md, "A byte order mark").

use pond_codecs::convert::read_all;
use pond_codecs::face::Sniff;
use std::path::{Path, PathBuf};

fn shared(relative: &str) -> PathBuf {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/fixtures")
        .join(relative);
    assert!(p.is_file(), "missing shared fixture {}", p.display());
    p
}

#[test]
fn a_leading_byte_order_mark_changes_nothing_read() {
    let cases = [
        (
            &pond_codecs::claude_code::CODEC,
            "claude-code/claude-code-viewer/1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl",
        ),
        (
            &pond_codecs::codex::CODEC,
            "codex/generated-codex-0.169.0/exec-image-toolcall-resume-compaction.jsonl",
        ),
        (
            &pond_codecs::pi::CODEC,
            "pi/harness-generated/v3-branching-input.jsonl",
        ),
        (
            &pond_codecs::opencode::CODEC,
            "opencode/harness-generated/import-input-basic.json",
        ),
    ];
    let scratch = tempfile::tempdir().unwrap();
    for (codec, relative) in cases {
        let source = shared(relative);
        let name = source.file_name().unwrap();
        let plain = scratch.path().join("plain").join(codec.name).join(name);
        let marked = scratch.path().join("marked").join(codec.name).join(name);
        for p in [&plain, &marked] {
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        }
        let bytes = std::fs::read(&source).unwrap();
        std::fs::write(&plain, &bytes).unwrap();
        std::fs::write(&marked, [b"\xEF\xBB\xBF".as_slice(), &bytes].concat()).unwrap();

        let reader = codec.read.unwrap();
        assert_eq!(reader.sniff(&marked), reader.sniff(&plain), "{relative}");
        assert_eq!(reader.sniff(&marked), Sniff::Yes, "{relative}");
        let (want, want_faults) = read_all(codec, &plain).unwrap();
        let (got, got_faults) = read_all(codec, &marked).unwrap();
        assert!(!want.is_empty(), "{relative}");
        assert_eq!(
            format!("{got_faults:?}"),
            format!("{want_faults:?}").replace("/plain/", "/marked/"),
            "{relative}"
        );
        assert_eq!(
            format!("{got:?}"),
            format!("{want:?}").replace("/plain/", "/marked/"),
            "{relative}"
        );
    }
}

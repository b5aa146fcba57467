//! Every input a fuzz run found to crash, hang or allocate without bound (committed, minimized,
//! under `fuzz/regressions/<target>/`), replayed through the same harness the fuzz targets run
//! (`pond_conformance::hostile`): none may panic now. The fixtures' own bytes are replayed too,
//! so the harness is exercised even while no crasher is committed.

use pond_conformance::hostile::{Target, regressions};
use std::path::Path;

#[test]
fn every_committed_fuzz_finding_runs_clean() {
    let scratch = tempfile::tempdir().unwrap();
    let found = regressions();
    for (target, file) in &found {
        let data = std::fs::read(file).unwrap();
        eprintln!("replaying {target:?} {}", file.display());
        target.run(&data, &scratch.path().join("run"));
    }
    eprintln!("{} committed fuzz findings replayed", found.len());
}

#[test]
fn the_harness_runs_every_target_on_real_and_broken_input() {
    let scratch = tempfile::tempdir().unwrap();
    let fixture = |p: &str| {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../shared/fixtures")
            .join(p);
        std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    };
    let claude = fixture("claude-code/agent-sessions/small.jsonl");
    let codex = fixture("codex/ai-sessions/codex-pomodor-timer.jsonl");
    let pi = fixture("pi/harness-generated/v3-branching-input.jsonl");
    let export = fixture("opencode/harness-generated/export-output-basic.json");
    let db = fixture("opencode/git-ai/opencode-sqlite/opencode.db");
    let mut zst = vec![1u8];
    zst.extend(pond_codecs::codex::archive::compress(&codex).unwrap());
    let inputs: Vec<(Target, Vec<u8>)> = vec![
        (Target::ClaudeCode, claude.clone()),
        (Target::Codex, [&[0u8][..], &codex].concat()),
        (Target::Codex, [&[2u8][..], &codex].concat()),
        (Target::Codex, zst),
        (Target::Pi, pi.clone()),
        (Target::OpencodeExport, export.clone()),
        (Target::OpencodeDb, db.clone()),
        (Target::WireEvents, b"[{\"kind\":\"session\"}]".to_vec()),
        (
            Target::Archive,
            small_archive(&scratch.path().join("archive")),
        ),
    ];
    // The valid archive unpacks whole (the harness ignores the outcome; this checks the input).
    let archive = &inputs.last().unwrap().1;
    let check = scratch.path().join("check");
    std::fs::create_dir_all(check.join("out")).unwrap();
    std::fs::write(check.join("in.pond"), archive).unwrap();
    pond_archive::unpack(
        &check.join("in.pond"),
        &check.join("out"),
        &pond_archive::Expected {
            schema_version: 1,
            tables: &["sessions", "messages", "parts"],
        },
        &mut |_, _| {},
    )
    .unwrap();
    for (target, data) in inputs {
        target.run(&data, &scratch.path().join("run"));
        // Cut in half, and with a byte flipped: broken input, located faults, no panic.
        target.run(&data[..data.len() / 2], &scratch.path().join("run"));
        let mut flipped = data.clone();
        let at = flipped.len() / 3;
        flipped[at] ^= 0x5a;
        target.run(&flipped, &scratch.path().join("run"));
    }
}

/// A valid archive of three tables, one small file each, as `write_tar` writes it.
fn small_archive(root: &Path) -> Vec<u8> {
    let mut tables = Vec::new();
    for t in ["sessions", "messages", "parts"] {
        let rel = format!("{t}.lance/data/0.lance");
        std::fs::create_dir_all(root.join(&rel).parent().unwrap()).unwrap();
        std::fs::write(root.join(&rel), format!("{t} ").repeat(300)).unwrap();
        let (bytes, sha256) = pond_archive::digest_file(&root.join(&rel)).unwrap();
        tables.push(pond_archive::TableEntry {
            name: t.to_owned(),
            rows: 1,
            files: vec![pond_archive::FileEntry {
                path: rel,
                bytes,
                sha256,
            }],
        });
    }
    let manifest = pond_archive::Manifest {
        format: pond_archive::FORMAT.to_owned(),
        format_version: pond_archive::FORMAT_VERSION,
        pond_version: "test".to_owned(),
        schema_version: 1,
        created_at: "2026-11-25T00:00:00Z".to_owned(),
        tables,
    };
    let out = root.join("small.pond");
    let file = std::fs::File::create(&out).unwrap();
    pond_archive::write_tar(&manifest, root, &file, &out, 0, &mut |_, _| {}).unwrap();
    std::fs::read(out).unwrap()
}

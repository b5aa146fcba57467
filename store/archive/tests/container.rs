//! The container on its own: what `write_tar` writes, `unpack` reads back byte for byte; a
//! hostile manifest's numbers and paths are typed errors, never a panic or a write outside.

use pond_archive::{
    ContainerError, Expected, FORMAT, FORMAT_VERSION, FileEntry, MANIFEST, Manifest, TableEntry,
    digest_file, unpack, unsafe_path, write_tar,
};
use std::path::Path;

const TABLES: [&str; 3] = ["sessions", "messages", "parts"];
const EXPECTED: Expected<'static> = Expected {
    schema_version: 1,
    tables: &TABLES,
};

/// A manifest over the files under `root` (each table one or two small files).
fn layout(root: &Path) -> Manifest {
    let mut tables = Vec::new();
    for (i, t) in TABLES.iter().enumerate() {
        let mut files = Vec::new();
        for j in 0..=i % 2 {
            let rel = format!("{t}.lance/data/{j}.lance");
            let path = root.join(&rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, format!("{t} file {j}\n").repeat(100 + 37 * j)).unwrap();
            let (bytes, sha256) = digest_file(&path).unwrap();
            files.push(FileEntry {
                path: rel,
                bytes,
                sha256,
            });
        }
        tables.push(TableEntry {
            name: (*t).to_owned(),
            rows: 1,
            files,
        });
    }
    Manifest {
        format: FORMAT.to_owned(),
        format_version: FORMAT_VERSION,
        pond_version: "test".to_owned(),
        schema_version: 1,
        created_at: "2026-11-25T00:00:00Z".to_owned(),
        tables,
    }
}

fn pack(manifest: &Manifest, root: &Path, out: &Path) {
    let file = std::fs::File::create(out).unwrap();
    let mut ticks = 0;
    write_tar(manifest, root, &file, out, 0, &mut |_, _| ticks += 1).unwrap();
    assert_eq!(ticks, 4, "one progress report per file");
}

#[test]
fn what_is_written_unpacks_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    let manifest = layout(&root);
    let archive = dir.path().join("a.pond");
    pack(&manifest, &root, &archive);
    let dest = dir.path().join("dest");
    std::fs::create_dir(&dest).unwrap();
    let mut last = (0, 0);
    let read = unpack(&archive, &dest, &EXPECTED, &mut |d, t| last = (d, t)).unwrap();
    assert_eq!(read, manifest);
    let total: u64 = manifest
        .tables
        .iter()
        .flat_map(|t| &t.files)
        .map(|f| f.bytes)
        .sum();
    assert_eq!(last, (total, total));
    for f in manifest.tables.iter().flat_map(|t| &t.files) {
        assert_eq!(
            std::fs::read(dest.join(&f.path)).unwrap(),
            std::fs::read(root.join(&f.path)).unwrap(),
            "{}",
            f.path
        );
    }
    // Another schema version or table list is refused before any entry is read.
    let fresh = dir.path().join("fresh");
    std::fs::create_dir(&fresh).unwrap();
    let other = Expected {
        schema_version: 2,
        tables: &TABLES,
    };
    let err = unpack(&archive, &fresh, &other, &mut |_, _| {}).unwrap_err();
    assert!(
        matches!(&err, ContainerError::Manifest { detail } if detail.contains("schema version 1")),
        "{err}"
    );
    assert_eq!(std::fs::read_dir(&fresh).unwrap().count(), 0);
}

/// A manifest whose byte counts sum past u64::MAX (the total is only a progress figure): the
/// entry's real size is a mismatch, not an overflow.
#[test]
fn byte_counts_that_overflow_are_a_size_mismatch() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    let honest = layout(&root);
    let archive = dir.path().join("a.pond");
    pack(&honest, &root, &archive);
    let mut lying = honest.clone();
    lying.tables[0].files[0].bytes = u64::MAX;
    lying.tables[1].files[0].bytes = u64::MAX - 1;
    // Swap the manifest entry for the lying one: rewrite the archive with its text.
    let mut bytes = Vec::new();
    {
        let mut tar = tar_builder(&mut bytes);
        let text = serde_json::to_vec(&lying).unwrap();
        append(&mut tar, MANIFEST, &text);
        let f = &honest.tables[0].files[0];
        append(
            &mut tar,
            &f.path,
            &std::fs::read(root.join(&f.path)).unwrap(),
        );
        tar.finish().unwrap();
    }
    let lying_path = dir.path().join("lying.pond");
    std::fs::write(&lying_path, bytes).unwrap();
    let dest = dir.path().join("dest");
    std::fs::create_dir(&dest).unwrap();
    let err = unpack(&lying_path, &dest, &EXPECTED, &mut |_, _| {}).unwrap_err();
    assert!(
        matches!(&err, ContainerError::SizeMismatch { manifest, .. } if *manifest == u64::MAX),
        "{err:?}"
    );
}

fn tar_builder(out: &mut Vec<u8>) -> tar::Builder<&mut Vec<u8>> {
    tar::Builder::new(out)
}

fn append(tar: &mut tar::Builder<&mut Vec<u8>>, path: &str, data: &[u8]) {
    let mut header = tar::Header::new_gnu();
    header.set_entry_type(tar::EntryType::Regular);
    header.set_size(data.len() as u64);
    header.set_mode(0o644);
    tar.append_data(&mut header, path, data).unwrap();
}

#[test]
fn only_plain_relative_paths_are_safe() {
    for (path, reason) in [
        ("", Some("empty")),
        ("/etc/passwd", Some("absolute")),
        ("a\\b", Some("a backslash or NUL byte")),
        ("a\0b", Some("a backslash or NUL byte")),
        ("a//b", Some("an empty component")),
        ("a/", Some("an empty component")),
        ("./a", Some("a `.` component")),
        ("a/../../b", Some("climbs out with `..`")),
        ("sessions.lance/data/0.lance", None),
        ("..a/b..", None),
    ] {
        assert_eq!(unsafe_path(path), reason, "{path:?}");
    }
}

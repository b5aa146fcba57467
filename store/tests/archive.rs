//! `.pond` archives end to end on real Lance stores filled from the shared fixtures: export then
//! import into an empty store gives the same counts and the same restores, a second import
//! inserts nothing, and every kind of bad archive is its typed error with the target untouched.

use pond_codecs::registry;
use pond_store::archive::{self, ArchiveError, ContainerError, Manifest};
use pond_store::sessions::SessionStore;
use std::path::{Path, PathBuf};

fn fixture(rel: &str) -> PathBuf {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/fixtures")
        .join(rel);
    assert!(p.exists(), "missing shared fixtures {}", p.display());
    p
}

async fn fill(store: &SessionStore, sources: &[(&str, &str)]) {
    for (codec, rel) in sources {
        let codec = registry::find(codec).unwrap();
        let s = pond_store::sync::import(store, codec, &[fixture(rel)], &mut |_, _| {})
            .await
            .unwrap();
        assert!(s.written.messages_inserted > 0, "{rel}: nothing stored");
    }
}

fn open(dir: &Path) -> SessionStore {
    SessionStore::open(&dir.display().to_string())
}

/// (table, rows, version) of every table.
async fn status(store: &SessionStore) -> Vec<(&'static str, u64, Option<u64>)> {
    store
        .table_status()
        .await
        .unwrap()
        .into_iter()
        .map(|t| (t.table, t.rows, t.version))
        .collect()
}

fn rows(status: &[(&'static str, u64, Option<u64>)]) -> Vec<u64> {
    status.iter().map(|t| t.1).collect()
}

async fn export(store: &SessionStore, out: &Path) -> archive::ExportSummary {
    archive::export(store, out, &mut |_| {}).await.unwrap()
}

async fn import(store: &SessionStore, path: &Path) -> Result<archive::ImportSummary, ArchiveError> {
    archive::import(store, path, &mut |_| {}).await
}

/// Every session's lineage as the store restores it (or why it cannot).
async fn restores(store: &SessionStore) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for s in store.list(None, None, None).await.unwrap() {
        let events = pond_store::restore::lineage(store, &s.id, None).await;
        out.push((s.id.clone(), format!("{events:?}")));
    }
    out
}

/// The entries of a tar, in order: (path, data).
fn entries(path: &Path) -> Vec<(String, Vec<u8>)> {
    let mut tar = tar::Archive::new(std::fs::File::open(path).unwrap());
    tar.entries()
        .unwrap()
        .map(|e| {
            let mut e = e.unwrap();
            let p = String::from_utf8(e.path_bytes().into_owned()).unwrap();
            let mut data = Vec::new();
            std::io::Read::read_to_end(&mut e, &mut data).unwrap();
            (p, data)
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn export_import_round_trip_is_equal_and_idempotent() {
    let scratch = tempfile::tempdir().unwrap();
    let a = open(&scratch.path().join("a"));
    fill(
        &a,
        &[
            ("codex", "codex/generated-codex-0.169.0"),
            ("claude-code", "claude-code/claude-code-log"),
        ],
    )
    .await;
    let out = scratch.path().join("snap.pond");
    let mut steps = 0;
    let summary = archive::export(&a, &out, &mut |_| steps += 1)
        .await
        .unwrap();
    assert!(steps > 0, "export reports progress");
    let a_status = status(&a).await;
    assert_eq!(
        summary.tables.values().copied().collect::<Vec<_>>().len(),
        3
    );
    assert_eq!(summary.tables["sessions"], a_status[0].1);
    assert_eq!(summary.tables["messages"], a_status[1].1);
    assert_eq!(summary.tables["parts"], a_status[2].1);

    // Compact and index-free: the manifest first, one version per table, no index, no temp files.
    let list = entries(&out);
    assert_eq!(list[0].0, archive::MANIFEST);
    let manifest: Manifest = serde_json::from_slice(&list[0].1).unwrap();
    assert_eq!(manifest.format, archive::FORMAT);
    for t in &manifest.tables {
        let versions = t
            .files
            .iter()
            .filter(|f| f.path.contains("/_versions/") && f.path.ends_with(".manifest"))
            .count();
        assert_eq!(versions, 1, "{}: one version", t.name);
        assert!(
            t.files.iter().all(|f| !f.path.contains("/_indices/")),
            "{}: no index",
            t.name
        );
    }
    assert_eq!(
        list.len() - 1,
        manifest.tables.iter().map(|t| t.files.len()).sum::<usize>()
    );
    let leftovers: Vec<_> = std::fs::read_dir(scratch.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".pond-export-"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");

    // Never overwrites.
    assert!(matches!(
        archive::export(&a, &out, &mut |_| {}).await,
        Err(ArchiveError::Exists(_))
    ));

    // Into an empty store: same counts, same restores.
    let b = open(&scratch.path().join("b"));
    let first = import(&b, &out).await.unwrap();
    assert_eq!(rows(&status(&b).await), rows(&a_status));
    assert_eq!(
        first.tables.iter().map(|t| t.inserted).collect::<Vec<_>>(),
        rows(&a_status)
    );
    assert!(first.tables.iter().all(|t| t.present == 0));
    assert_eq!(b.key_check().await.unwrap(), a.key_check().await.unwrap());
    assert_eq!(
        b.message_breakdown().await.unwrap(),
        a.message_breakdown().await.unwrap()
    );
    let restored = restores(&b).await;
    assert!(!restored.is_empty());
    assert_eq!(restored, restores(&a).await);

    // A second import inserts nothing; nor does importing into the store it came from.
    for store in [&b, &a] {
        let again = import(store, &out).await.unwrap();
        assert!(
            again
                .tables
                .iter()
                .all(|t| t.inserted == 0 && t.present == t.rows),
            "{:?}",
            again.tables
        );
    }
    assert_eq!(rows(&status(&b).await), rows(&a_status));

    // An archive of the imported store holds the same rows.
    let out2 = scratch.path().join("again.pond");
    let s2 = export(&b, &out2).await;
    assert_eq!(s2.tables, summary.tables);
}

/// Writes a tar of `list`: entries with plain names through the tar crate, others with the raw
/// name bytes in the header (what a hostile archive can hold).
fn write_tar(path: &Path, list: &[(String, Vec<u8>, tar::EntryType)]) {
    let mut b = tar::Builder::new(std::fs::File::create(path).unwrap());
    for (name, data, kind) in list {
        let mut h = tar::Header::new_gnu();
        h.set_size(data.len() as u64);
        h.set_mode(0o644);
        h.set_entry_type(*kind);
        if *kind == tar::EntryType::Regular && !name.starts_with('/') && !name.contains("..") {
            b.append_data(&mut h, name, data.as_slice()).unwrap();
        } else {
            let raw = &mut h.as_old_mut().name;
            raw.fill(0);
            raw[..name.len()].copy_from_slice(name.as_bytes());
            if *kind == tar::EntryType::Symlink {
                h.set_link_name("../../../../etc/passwd").unwrap();
            }
            h.set_cksum();
            b.append(&h, data.as_slice()).unwrap();
        }
    }
    b.finish().unwrap();
}

fn with_manifest(
    list: &[(String, Vec<u8>)],
    edit: impl FnOnce(&mut Manifest),
) -> Vec<(String, Vec<u8>, tar::EntryType)> {
    let mut m: Manifest = serde_json::from_slice(&list[0].1).unwrap();
    edit(&mut m);
    let mut out = vec![(
        archive::MANIFEST.to_owned(),
        serde_json::to_vec(&m).unwrap(),
        tar::EntryType::Regular,
    )];
    out.extend(
        list[1..]
            .iter()
            .map(|(p, d)| (p.clone(), d.clone(), tar::EntryType::Regular)),
    );
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_archives_are_typed_errors_and_write_nothing() {
    let scratch = tempfile::tempdir().unwrap();
    let a = open(&scratch.path().join("a"));
    fill(&a, &[("codex", "codex/ai-sessions")]).await;
    let good = scratch.path().join("good.pond");
    export(&a, &good).await;
    let list = entries(&good);
    let plain = with_manifest(&list, |_| {});
    let add = |name: &str, kind: tar::EntryType| {
        let mut l = plain.clone();
        l.insert(2, (name.to_owned(), b"evil".to_vec(), kind));
        l
    };

    let mut cases: Vec<(&str, Vec<(String, Vec<u8>, tar::EntryType)>)> = vec![
        ("dotdot", add("../evil", tar::EntryType::Regular)),
        (
            "nested-dotdot",
            add("sessions.lance/../../evil", tar::EntryType::Regular),
        ),
        ("absolute", add("/tmp/pond-evil", tar::EntryType::Regular)),
        (
            "symlink",
            add("sessions.lance/link", tar::EntryType::Symlink),
        ),
        ("hardlink", add("sessions.lance/hard", tar::EntryType::Link)),
        ("device", add("sessions.lance/dev", tar::EntryType::Char)),
        (
            "unlisted",
            add("sessions.lance/extra.bin", tar::EntryType::Regular),
        ),
        ("row-count", with_manifest(&list, |m| m.tables[1].rows += 1)),
        (
            "digest",
            with_manifest(&list, |m| {
                let f = &mut m.tables[2].files[0];
                f.sha256 = if f.sha256.starts_with('0') { "1" } else { "0" }.repeat(64);
            }),
        ),
        (
            "size",
            with_manifest(&list, |m| m.tables[0].files[0].bytes += 1),
        ),
        (
            "missing",
            with_manifest(&list, |m| {
                m.tables[0].files.push(archive::FileEntry {
                    path: "sessions.lance/data/ghost.lance".into(),
                    bytes: 1,
                    sha256: "0".repeat(64),
                })
            }),
        ),
        (
            "manifest-path",
            with_manifest(&list, |m| m.tables[0].files[0].path = "../x".into()),
        ),
        (
            "schema-version",
            with_manifest(&list, |m| m.schema_version += 1),
        ),
    ];
    // A listed file left out of a complete archive.
    let mut dropped = plain.clone();
    dropped.remove(1);
    cases.push(("dropped", dropped));
    // The first entry is not the manifest.
    let mut swapped = plain.clone();
    swapped.swap(0, 1);
    cases.push(("manifest-not-first", swapped));

    let before = status(&a).await;
    let empty_dir = scratch.path().join("empty");
    let empty = open(&empty_dir);
    for (name, entries) in &cases {
        let path = scratch.path().join(format!("{name}.pond"));
        write_tar(&path, entries);
        for target in [&a, &empty] {
            let err = import(target, &path)
                .await
                .expect_err(&format!("{name}: accepted"));
            let ok = match *name {
                "dotdot" | "nested-dotdot" | "absolute" => {
                    matches!(
                        &err,
                        ArchiveError::Container(ContainerError::UnsafePath { .. })
                    )
                }
                "symlink" | "hardlink" | "device" => {
                    matches!(
                        &err,
                        ArchiveError::Container(ContainerError::UnsupportedEntry { .. })
                    )
                }
                "unlisted" => {
                    matches!(&err, ArchiveError::Container(ContainerError::Unlisted { entry }) if entry == "sessions.lance/extra.bin")
                }
                "row-count" => {
                    matches!(&err, ArchiveError::RowCount { table, .. } if table == "messages")
                }
                "digest" => matches!(
                    &err,
                    ArchiveError::Container(ContainerError::DigestMismatch { .. })
                ),
                "size" => matches!(
                    &err,
                    ArchiveError::Container(ContainerError::SizeMismatch { .. })
                ),
                "missing" => {
                    matches!(&err, ArchiveError::Container(ContainerError::Missing { entry }) if entry.ends_with("ghost.lance"))
                }
                "dropped" => matches!(
                    &err,
                    ArchiveError::Container(ContainerError::Missing { .. })
                ),
                "manifest-path" | "schema-version" | "manifest-not-first" => {
                    matches!(
                        &err,
                        ArchiveError::Container(ContainerError::Manifest { .. })
                    )
                }
                _ => unreachable!(),
            };
            assert!(ok, "{name}: {err:?}");
            assert!(!err.to_string().is_empty());
        }
        assert_eq!(status(&a).await, before, "{name}: the store changed");
        assert!(!empty_dir.exists(), "{name}: the empty store was created");
    }
    assert!(!Path::new("/tmp/pond-evil").exists());
    assert!(!scratch.path().join("evil").exists());

    // Truncated: cut in half, and cut at an entry boundary (no end marker).
    let bytes = std::fs::read(&good).unwrap();
    let half = scratch.path().join("half.pond");
    std::fs::write(&half, &bytes[..bytes.len() / 2]).unwrap();
    let boundary = scratch.path().join("boundary.pond");
    std::fs::write(&boundary, &bytes[..bytes.len() - 1024]).unwrap();
    let empty_file = scratch.path().join("zero.pond");
    std::fs::write(&empty_file, b"").unwrap();
    let garbage = scratch.path().join("garbage.pond");
    std::fs::write(&garbage, vec![7u8; 4096]).unwrap();
    for (path, want) in [
        (&half, "truncated"),
        (&boundary, "truncated"),
        (&empty_file, "manifest"),
        (&garbage, "malformed"),
    ] {
        let err = import(&a, path).await.expect_err("accepted");
        let ok = match want {
            "truncated" => matches!(
                err,
                ArchiveError::Container(ContainerError::Truncated { .. })
            ),
            "manifest" => matches!(
                err,
                ArchiveError::Container(ContainerError::Manifest { .. })
            ),
            _ => matches!(
                err,
                ArchiveError::Container(ContainerError::Malformed { .. })
            ),
        };
        assert!(ok, "{}: {err:?}", path.display());
    }
    assert_eq!(status(&a).await, before, "the store changed");

    // The untouched archive still imports.
    import(&empty, &good).await.unwrap();
    assert_eq!(rows(&status(&empty).await), rows(&before));
}

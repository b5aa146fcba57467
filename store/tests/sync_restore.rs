//! The store end to end on the shared fixtures: a sync stores exactly the distinct rows the codecs
//! parse, a second sync inserts nothing (idempotent, additive), and every stored session restores
//! natively to files value-equal to its sources after the sources are gone (session-durable-copy).

use pond_canonical::Event;
use pond_codecs::{CODECS, Layout};
use pond_conformance::roundtrip::{compare_file, native_round_trip};
use pond_store::sessions::SessionStore;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn shared() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/fixtures");
    assert!(
        dir.is_dir(),
        "the shared fixtures are missing at {}",
        dir.display()
    );
    dir
}

fn copy_tree(from: &Path, to: &Path) {
    for entry in walkdir(from) {
        let rel = entry.strip_prefix(from).unwrap();
        let dest = to.join(rel);
        std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
        std::fs::copy(&entry, &dest).unwrap();
    }
}

fn walkdir(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_owned()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p)
            } else {
                out.push(p)
            }
        }
    }
    out
}

/// The session ids each source unit under `dir` holds, by relative path.
fn sessions_by_file(
    dir: &Path,
    codec: &'static pond_codecs::Codec,
) -> BTreeMap<String, BTreeSet<String>> {
    let reader = codec.read.unwrap();
    let mut by_file = BTreeMap::new();
    for source in reader.discover(dir).unwrap() {
        let mut ids = BTreeSet::new();
        reader.read(&source, &mut |e| {
            if let Ok(Event::Session(s)) = e {
                ids.insert(s.id.to_string());
            }
        });
        by_file.insert(source.relative().into_inner().to_owned(), ids);
    }
    by_file
}

/// Distinct primary keys of what the codec parses under `dir`: (sessions, messages, parts).
fn distinct_keys(dir: &Path, codec: &'static pond_codecs::Codec, keys: &mut [BTreeSet<String>; 3]) {
    let (events, _) = pond_codecs::convert::read_all(codec, dir).unwrap();
    for e in events {
        match e {
            Event::Session(s) => {
                keys[0].insert(s.id.to_string());
            }
            Event::Message(m) => {
                keys[1].insert(format!("{}\u{0}{}", m.session_id(), m.id()));
                for p in m.parts() {
                    let (s, mid) = p.owner();
                    keys[2].insert(format!("{s}\u{0}{mid}\u{0}{}", p.id()));
                }
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sync_counts_idempotence_and_durable_native_restore() {
    let fixtures = shared();
    let scratch = tempfile::tempdir().unwrap();
    let sources = scratch.path().join("sources");
    copy_tree(&fixtures, &sources);
    let store = SessionStore::open(&scratch.path().join("store").display().to_string());

    let mut keys: [BTreeSet<String>; 3] = Default::default();
    let codecs: Vec<_> = CODECS
        .iter()
        .copied()
        .filter(|c| sources.join(c.name).is_dir())
        .collect();
    assert_eq!(codecs.len(), 4, "fixtures for every codec");
    for codec in &codecs {
        let dir = sources.join(codec.name);
        distinct_keys(&dir, codec, &mut keys);
        let s = pond_store::sync::import(&store, codec, &[dir], &mut |_, _| {})
            .await
            .unwrap();
        assert!(
            s.written.messages_inserted > 0,
            "{}: nothing stored",
            codec.name
        );
    }
    let status = store.table_status().await.unwrap();
    let rows: Vec<u64> = status.iter().map(|t| t.rows).collect();
    assert_eq!(
        rows,
        keys.iter().map(|k| k.len() as u64).collect::<Vec<_>>(),
        "rows == distinct parsed keys"
    );

    // A second sync of unchanged sources inserts nothing.
    for codec in &codecs {
        let s =
            pond_store::sync::import(&store, codec, &[sources.join(codec.name)], &mut |_, _| {})
                .await
                .unwrap();
        let w = s.written;
        assert_eq!(
            (w.sessions_inserted, w.messages_inserted, w.parts_inserted),
            (0, 0, 0),
            "{}",
            codec.name
        );
    }

    // session-durable-copy: the sources are gone; every session still restores natively.
    std::fs::remove_dir_all(&sources).unwrap();
    let mut compared = 0;
    for codec in &codecs {
        let reference = fixtures.join(codec.name);
        let rt = native_round_trip(codec, &reference).unwrap();
        let well_formed: BTreeSet<String> = rt
            .files
            .iter()
            .filter(|f| f.difference.is_none())
            .map(|f| f.path.clone())
            .collect();
        // A session held by two source units (the same session in two files, or in a database
        // and its export) is stored as the union of their rows: restoring it reproduces neither
        // file alone, so those files are not compared.
        let by_file = sessions_by_file(&reference, codec);
        let mut seen = BTreeSet::new();
        let ambiguous: BTreeSet<String> = by_file
            .values()
            .flatten()
            .filter(|id| !seen.insert((*id).clone()))
            .cloned()
            .collect();
        let expected: BTreeSet<&String> = well_formed
            .iter()
            .filter(|f| {
                by_file
                    .get(*f)
                    .is_none_or(|ids| ids.is_disjoint(&ambiguous))
            })
            .collect();
        let mut restored = BTreeSet::new();
        // Roots: sessions whose parent is not stored (none, or a parent no source holds, like the
        // trunk of a file that holds only a sidechain).
        let stored = store
            .list(Some(codec.source_agent), None, None)
            .await
            .unwrap();
        let ids: BTreeSet<String> = stored.iter().map(|s| s.id.clone()).collect();
        let roots: Vec<_> = stored
            .into_iter()
            .filter(|s| {
                s.parent_session_id
                    .as_ref()
                    .is_none_or(|p| !ids.contains(p))
                    && !ambiguous.contains(&s.id)
            })
            .collect();
        for root in roots {
            let events = pond_store::restore::lineage(&store, &root.id, None)
                .await
                .unwrap();
            let mut out = pond_codecs::output::MemoryOutput::default();
            let summary = pond_codecs::convert::write_events(
                codec,
                Layout::Mirror,
                &root.id,
                events,
                &mut out,
            )
            .unwrap();
            assert!(
                summary.write_errors.is_empty(),
                "{}: {:?}",
                root.id,
                summary.write_errors
            );
            assert!(
                summary.losses.is_empty(),
                "native restore lost {:?}",
                summary.losses
            );
            for (rel, bytes) in &out.files {
                if well_formed.contains(rel) {
                    assert_eq!(
                        compare_file(&reference.join(rel), bytes),
                        None,
                        "{}: {rel}",
                        codec.name
                    );
                    restored.insert(rel.clone());
                    compared += 1;
                }
            }
        }
        let missing: Vec<_> = expected
            .iter()
            .filter(|f| !restored.contains(**f))
            .collect();
        assert!(
            missing.is_empty(),
            "{}: not restored: {missing:?}",
            codec.name
        );
    }
    assert!(compared > 0);
    eprintln!("{compared} files restored value-equal to their sources");
}

/// A pi branch is stored as the entries after the point it branched at (its cut-point names the
/// main-line entry). Restored into another harness, where it is a session of its own, it also
/// carries its parent's history up to and including the cut-point, replayed under the same
/// ids; restored into pi (native) it is left as stored (issue 22's user trial: the branch began
/// with an answer, its prompt missing).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fork_restored_into_another_harness_carries_its_parents_history() {
    let scratch = tempfile::tempdir().unwrap();
    let sources = scratch.path().join("pi");
    std::fs::create_dir(&sources).unwrap();
    std::fs::copy(
        shared().join("pi/harness-generated/v3-branching-input.jsonl"),
        sources.join("v3-branching-input.jsonl"),
    )
    .unwrap();
    let store = SessionStore::open(&scratch.path().join("store").display().to_string());
    pond_store::sync::import(&store, &pond_codecs::pi::CODEC, &[sources], &mut |_, _| {})
        .await
        .unwrap();
    let main = store
        .list(None, None, None)
        .await
        .unwrap()
        .into_iter()
        .find(|s| s.parent_session_id.is_none())
        .expect("the main line");
    let messages_of = |events: &[Event], session: &str| -> Vec<String> {
        events
            .iter()
            .filter_map(|e| match e {
                Event::Message(m) if m.session_id().as_str() == session => Some(m.id().to_string()),
                _ => None,
            })
            .collect()
    };
    let native = pond_store::restore::lineage(&store, &main.id, Some("pi"))
        .await
        .unwrap();
    let forks: Vec<_> = native
        .iter()
        .filter_map(|e| match e {
            Event::Session(s) if s.parent_message_id.is_some() => Some(s.clone()),
            _ => None,
        })
        .collect();
    assert!(!forks.is_empty(), "the fixture has a branch");
    // Named by the start of its id: the same lineage (the forks' ids, which begin with the main
    // line's, do not make the start ambiguous).
    assert!(forks.iter().all(|f| f.id.as_str().starts_with(&main.id)));
    let by_start = pond_store::restore::lineage(&store, &main.id[..6], Some("pi"))
        .await
        .unwrap();
    assert_eq!(by_start, native);
    let foreign = pond_store::restore::lineage(&store, &main.id, Some("claude-code"))
        .await
        .unwrap();
    let main_ids = messages_of(&native, &main.id);
    for fork in &forks {
        let cut = fork.parent_message_id.as_ref().unwrap().to_string();
        let own = messages_of(&native, fork.id.as_str());
        let replayed = messages_of(&foreign, fork.id.as_str());
        let through_cut = &main_ids[..=main_ids.iter().position(|m| *m == cut).unwrap()];
        // The parent's history through the cut-point, then the branch's own entries.
        assert_eq!(&replayed[..through_cut.len()], through_cut, "{}", fork.id);
        assert_eq!(
            &replayed[through_cut.len()..],
            own.as_slice(),
            "{}",
            fork.id
        );
        assert!(!own.contains(&main_ids[0]), "stored as it was: {own:?}");
    }
    // The main session itself is the same either way.
    assert_eq!(messages_of(&foreign, &main.id), main_ids);
}

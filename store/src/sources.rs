//! What `pond sync` last read of each source file, so that a file changed other than by
//! appending is reported rather than silently taken as already stored.
//!
//! A re-read file's rows are merged on their keys, and rows already present are left alone
//! (adapter-integrity-additive-sync): the source is not authoritative against the store. Where a
//! codec's ids are positions in the file (a Codex rollout's `L<n>`), a file rewritten shorter or
//! differently reuses ids for other content, and that content was dropped with nothing said:
//! the sync reported it "present" (issue 22's user trial). Harnesses append to their session
//! files; what rewrites one is a migration (pi rewrites a v1 or v2 file in place when it opens
//! it), an edit, or a restore from elsewhere.
//!
//! So each sync records, per JSONL source file, its size and SHA-256 digests of two stretches:
//! its first [`STRETCH`] bytes and the [`STRETCH`] bytes before its end. The next sync reads the
//! same stretches at the recorded size: a file now shorter, or whose bytes there differ, has
//! changed other than by appending, and the sync says so for that file (an error naming it,
//! exit 1), still storing what has new ids and leaving stored rows as they are. Two stretches,
//! not the whole file, keep the check at two small reads per file whatever the history's size;
//! a rewrite that leaves both stretches byte for byte as they were is not seen.
//!
//! The records are the sync's own bookkeeping, in a table of their own (`sources`), not one of
//! the session datasets (spec 5.1): archives do not carry them, and `pond status` does not list
//! them. Rows are only added: a record is never changed (lance-append-only); the latest one per
//! file is the one compared.

use crate::sessions::schema::pk;
use crate::sessions::sql_quote;
use crate::substrate::{StoreError, Substrate, TableSpec};
use arrow_array::{Array, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;
use std::sync::{Arc, LazyLock};

/// The bytes of each stretch digested.
pub const STRETCH: u64 = 64 * 1024;

/// `sources`: one row per source file each time a sync found it new or grown.
pub static SOURCES: LazyLock<TableSpec> = LazyLock::new(|| TableSpec {
    name: "sources",
    schema: Arc::new(Schema::new(vec![
        pk("codec", 1),
        pk("path", 2),
        // Microseconds since the Unix epoch, as text so it can lead a key with the others.
        pk("recorded_at", 3),
        Field::new("size", DataType::Int64, false),
        Field::new("head", DataType::Utf8, false),
        Field::new("tail", DataType::Utf8, false),
    ])),
    schema_version: 1,
});

/// What a sync read of one file: its size then, and the digests of its stretches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fingerprint {
    pub size: u64,
    pub head: String,
    pub tail: String,
}

/// Whether the checked file is one a sync fingerprints: a JSONL session file (compressed or
/// not). A database (opencode's) and an export document are rewritten by their harness as a
/// matter of course, under ids of their own.
pub fn fingerprinted(path: &Path) -> bool {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy())
        .unwrap_or_default();
    name.ends_with(".jsonl") || name.ends_with(".jsonl.zst")
}

/// The key a file is recorded under: its canonical path, so that a file named two ways is one.
pub fn key_of(path: &Path) -> String {
    std::fs::canonicalize(path)
        .unwrap_or_else(|_| path.to_owned())
        .display()
        .to_string()
}

fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The fingerprint of `file` with its stretches taken as if it were `size` bytes long (`size` at
/// most its length). A file of at most [`STRETCH`] bytes is one stretch, read and digested once.
fn read_fingerprint(file: &mut std::fs::File, size: u64) -> std::io::Result<Fingerprint> {
    let mut stretch = |start: u64, len: u64| -> std::io::Result<String> {
        let mut buf = vec![0u8; len as usize];
        file.seek(SeekFrom::Start(start))?;
        file.read_exact(&mut buf)?;
        Ok(sha256_hex(&buf))
    };
    let len = size.min(STRETCH);
    let head = stretch(0, len)?;
    let tail = if size <= STRETCH {
        head.clone()
    } else {
        stretch(size - len, len)?
    };
    Ok(Fingerprint { size, head, tail })
}

/// What a sync finds of a file against its last record.
#[derive(Debug, PartialEq, Eq)]
pub enum Found {
    /// Never recorded, or grown by appending: `now` is to be recorded.
    New(Fingerprint),
    /// As recorded: nothing to record.
    Same,
    /// Changed other than by appending since `was`: why, and `now`, to be recorded.
    Changed {
        why: String,
        was: Fingerprint,
        now: Fingerprint,
    },
}

/// Checks `path` against `last` (its latest record, if any). A file as recorded costs the two
/// stretches at its size, read once.
pub fn check(path: &Path, last: Option<&Fingerprint>) -> std::io::Result<Found> {
    let mut file = std::fs::File::open(path)?;
    let size = file.metadata()?.len();
    let Some(last) = last else {
        return Ok(Found::New(read_fingerprint(&mut file, size)?));
    };
    if size < last.size {
        return Ok(Found::Changed {
            why: format!("it is shorter: {size} bytes, {} when last read", last.size),
            was: last.clone(),
            now: read_fingerprint(&mut file, size)?,
        });
    }
    let then = read_fingerprint(&mut file, last.size)?;
    let (head, tail) = (then.head != last.head, then.tail != last.tail);
    if head || tail {
        let which = match (head, tail) {
            (true, true) => "its first and its last bytes",
            (true, false) => "its first bytes",
            _ => "its last bytes",
        };
        let now = if size == last.size {
            then
        } else {
            read_fingerprint(&mut file, size)?
        };
        return Ok(Found::Changed {
            why: format!(
                "{which} when last read ({} bytes) are not what they were",
                last.size
            ),
            was: last.clone(),
            now,
        });
    }
    Ok(if size == last.size {
        Found::Same
    } else {
        Found::New(read_fingerprint(&mut file, size)?)
    })
}

/// The latest record of every file of `codec`, by [`key_of`].
pub async fn latest(
    substrate: &Substrate,
    codec: &str,
) -> Result<HashMap<String, Fingerprint>, StoreError> {
    let filter = format!("codec = {}", sql_quote(codec));
    let batches = substrate
        .scan(&SOURCES, |s| {
            s.filter(&filter)?;
            s.project(&["path", "recorded_at", "size", "head", "tail"])?;
            Ok(())
        })
        .await?;
    let mut out: HashMap<String, (i64, Fingerprint)> = HashMap::new();
    for b in &batches {
        let text = |name: &str| {
            b.column_by_name(name)
                .and_then(|a| a.as_any().downcast_ref::<StringArray>())
        };
        let (Some(path), Some(at), Some(head), Some(tail), Some(size)) = (
            text("path"),
            text("recorded_at"),
            text("head"),
            text("tail"),
            b.column_by_name("size")
                .and_then(|a| a.as_any().downcast_ref::<Int64Array>()),
        ) else {
            return Err(StoreError::Invalid {
                table: SOURCES.name,
                detail: "a scan of sources lacks a column it asked for".to_owned(),
            });
        };
        for i in 0..b.num_rows() {
            let at_i = at.value(i).parse::<i64>().unwrap_or(0);
            let record = Fingerprint {
                size: size.value(i).max(0) as u64,
                head: head.value(i).to_owned(),
                tail: tail.value(i).to_owned(),
            };
            match out.get(path.value(i)) {
                Some((t, _)) if *t >= at_i => {}
                _ => {
                    out.insert(path.value(i).to_owned(), (at_i, record));
                }
            }
        }
    }
    Ok(out.into_iter().map(|(k, (_, f))| (k, f)).collect())
}

/// Adds the records `found` (file key and fingerprint) of `codec`, made at `at` (microseconds).
pub async fn record(
    substrate: &Substrate,
    codec: &str,
    at: i64,
    found: &[(String, Fingerprint)],
) -> Result<(), StoreError> {
    if found.is_empty() {
        return Ok(());
    }
    let strings = |f: &dyn Fn(&(String, Fingerprint)) -> String| -> Arc<dyn Array> {
        Arc::new(StringArray::from_iter_values(found.iter().map(f)))
    };
    let batch = RecordBatch::try_new(
        SOURCES.schema.clone(),
        vec![
            strings(&|_| codec.to_owned()),
            strings(&|(k, _)| k.clone()),
            strings(&|_| at.to_string()),
            Arc::new(Int64Array::from_iter_values(
                found.iter().map(|(_, f)| f.size as i64),
            )),
            strings(&|(_, f)| f.head.clone()),
            strings(&|(_, f)| f.tail.clone()),
        ],
    )
    .map_err(|e| StoreError::Invalid {
        table: SOURCES.name,
        detail: e.to_string(),
    })?;
    substrate.merge_insert(&SOURCES, vec![batch]).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn appending_is_new_rewriting_or_cutting_is_a_change() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("r.jsonl");
        let line = |i: usize| format!("{{\"n\":{i},\"pad\":\"{}\"}}\n", "x".repeat(100));
        let lines: String = (0..2000).map(line).collect();
        std::fs::write(&f, &lines).unwrap();
        let Found::New(first) = check(&f, None).unwrap() else {
            panic!("a file never recorded is new")
        };
        assert_eq!(first.size, lines.len() as u64);
        assert_eq!(check(&f, Some(&first)).unwrap(), Found::Same);
        // Appended: new, with its new size.
        let more: String = (2000..2100).map(line).collect();
        std::fs::write(&f, format!("{lines}{more}")).unwrap();
        let Found::New(grown) = check(&f, Some(&first)).unwrap() else {
            panic!("an appended file is new")
        };
        assert_eq!(grown.size, (lines.len() + more.len()) as u64);
        // Cut short: changed.
        std::fs::write(&f, &lines[..lines.len() / 2]).unwrap();
        let Found::Changed { why, .. } = check(&f, Some(&grown)).unwrap() else {
            panic!("a shorter file changed")
        };
        assert!(why.contains("shorter"), "{why}");
        // The same length, a line near the end rewritten: changed (its last bytes).
        let mut rewritten = lines.clone().into_bytes();
        let at = rewritten.len() - 50;
        rewritten[at] = b'y';
        std::fs::write(&f, &rewritten).unwrap();
        let Found::Changed { why, .. } = check(&f, Some(&first)).unwrap() else {
            panic!("a rewritten file changed")
        };
        assert!(why.contains("last bytes"), "{why}");
        // Its first line rewritten, then appended to: changed (its first bytes).
        let mut head = lines.clone().into_bytes();
        head[3] = b'9';
        head.extend_from_slice(more.as_bytes());
        std::fs::write(&f, &head).unwrap();
        let Found::Changed { why, .. } = check(&f, Some(&first)).unwrap() else {
            panic!("a file rewritten at its start changed")
        };
        assert!(why.contains("first bytes"), "{why}");
        // A file smaller than a stretch: its one stretch is both.
        std::fs::write(&f, "{}\n").unwrap();
        let Found::New(small) = check(&f, None).unwrap() else {
            panic!()
        };
        assert_eq!(small.head, small.tail);
        std::fs::write(&f, "{}\n{}\n").unwrap();
        assert!(matches!(check(&f, Some(&small)).unwrap(), Found::New(_)));
        std::fs::write(&f, "[]\n{}\n").unwrap();
        assert!(matches!(
            check(&f, Some(&small)).unwrap(),
            Found::Changed { .. }
        ));
    }
}

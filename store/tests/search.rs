//! Full-text search over a real Lance store (spec 8): the two-step search scores each hit
//! exactly as Lance's BM25 scores the whole query; filters are prefilters that still return
//! `limit` results when better-scoring rows lie outside them; words of every script and code
//! identifiers are found; results are the same before and after `update-indexes`; sub-agent
//! hits group under the session that spawned them.

use lance::dataset::Dataset;
use lance_index::scalar::FullTextSearchQuery;
use pond_store::search::{Filters, SearchOutcome, SearchQuery};
use pond_store::sessions::SessionStore;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Claude Code session files written for a test: one file per session, lines alternating user
/// and assistant, a timestamp a minute apart from `start`.
struct Corpus {
    root: PathBuf,
}

impl Corpus {
    fn new(root: &Path) -> Self {
        std::fs::create_dir_all(root).unwrap();
        Self {
            root: root.to_owned(),
        }
    }

    /// Writes a session (`parent`: a sub-agent of that session) and returns its id.
    fn session(&self, project: &str, id: &str, parent: Option<&str>, start: &str, texts: &[&str]) {
        let dir = self.root.join(project.replace('/', "-"));
        let file = match parent {
            None => dir.join(format!("{id}.jsonl")),
            Some(p) => dir
                .join(p)
                .join("subagents")
                .join(format!("agent-{id}.jsonl")),
        };
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        let session_field = parent.unwrap_or(id);
        let t0 = chrono::DateTime::parse_from_rfc3339(start).unwrap();
        let mut lines = Vec::new();
        let mut prev: Option<String> = None;
        for (i, text) in texts.iter().enumerate() {
            let uuid = format!("{id}-m{i:03}");
            let ts = (t0 + chrono::Duration::minutes(i as i64))
                .to_utc()
                .format("%Y-%m-%dT%H:%M:%S%.3fZ")
                .to_string();
            let mut line = serde_json::json!({
                "parentUuid": prev, "isSidechain": parent.is_some(), "userType": "external",
                "cwd": project, "sessionId": session_field, "version": "2.1.80", "gitBranch": "",
                "uuid": uuid, "timestamp": ts,
            });
            if i % 2 == 0 {
                line["type"] = "user".into();
                line["message"] = serde_json::json!({"role": "user", "content": text});
            } else {
                line["type"] = "assistant".into();
                line["message"] = serde_json::json!({
                    "id": format!("msg_{id}_{i}"), "type": "message", "role": "assistant",
                    "model": "claude-test", "content": [{"type": "text", "text": text}],
                    "stop_reason": "end_turn", "stop_sequence": null,
                    "usage": {"input_tokens": 1, "output_tokens": 1}
                });
            }
            if let Some(a) = parent {
                line["agentId"] = a.into();
            }
            lines.push(line.to_string());
            prev = Some(uuid);
        }
        std::fs::write(file, lines.join("\n") + "\n").unwrap();
    }

    async fn sync(&self, store: &SessionStore) {
        let codec = pond_codecs::registry::find("claude-code").unwrap();
        let summary = pond_store::sync::import(store, codec, &[self.root.clone()], &mut |_, _| {})
            .await
            .unwrap();
        assert!(summary.errors.is_empty(), "{:?}", summary.errors);
    }
}

fn query(text: &str, limit: usize) -> SearchQuery<'_> {
    SearchQuery {
        text,
        filters: Filters::default(),
        limit,
        min_score: None,
        explain: false,
    }
}

/// (session, message, score) of every hit, in rank order.
fn hits(o: &SearchOutcome) -> Vec<(String, String, f32)> {
    o.groups
        .iter()
        .flat_map(|g| g.hits.iter())
        .map(|h| (h.session_id.clone(), h.message_id.clone(), h.score))
        .collect()
}

/// Lance's own BM25 for the whole query string (every 3-5-gram, one MatchQuery), by row.
async fn lance_scores(store_dir: &Path, text: &str) -> BTreeMap<(String, String), f32> {
    let ds = Dataset::open(store_dir.join("messages.lance").to_str().unwrap())
        .await
        .unwrap();
    let mut scan = ds.scan();
    scan.full_text_search(
        FullTextSearchQuery::new(text.to_owned())
            .with_column("search_text".to_owned())
            .unwrap(),
    )
    .unwrap();
    scan.project(&["session_id", "id", "_score"]).unwrap();
    scan.limit(Some(10_000), None).unwrap();
    let batch = scan.try_into_batch().await.unwrap();
    use arrow_array::cast::AsArray;
    let s = batch
        .column_by_name("session_id")
        .unwrap()
        .as_string::<i32>();
    let m = batch.column_by_name("id").unwrap().as_string::<i32>();
    let score = batch
        .column_by_name("_score")
        .unwrap()
        .as_primitive::<arrow_array::types::Float32Type>();
    (0..batch.num_rows())
        .map(|i| {
            (
                (s.value(i).to_owned(), m.value(i).to_owned()),
                score.value(i),
            )
        })
        .collect()
}

const TEXTS: [&str; 12] = [
    "The kestrel hovered over the meadow before it dove.",
    "We fixed the merge conflict in store/src/search/mod.rs by rebasing on main.",
    "parse_session_id returns None when the file name has no stem.",
    "A kestrel and a falcon: the kestrel is smaller, the falcon faster.",
    "HandleRequestTimeout fires after thirty seconds; raise it for slow disks.",
    "Nothing here but ordinary words about lunch and the weather.",
    "数据库连接池已满，请稍后重试。",
    "データベースの接続がタイムアウトしました。",
    "Не удалось подключиться к базе данных: превышено время ожидания.",
    "Die Datenbankverbindung zur Straßenbahn-Leitstelle ist unterbrochen.",
    "kestrel kestrel kestrel, said the birdwatcher, counting the kestrels.",
    "abcabcabc repeats one gram thrice: abc abc abc.",
];

async fn small_store(dir: &Path) -> SessionStore {
    let corpus = Corpus::new(&dir.join("src"));
    for (i, chunk) in TEXTS.chunks(3).enumerate() {
        corpus.session(
            &format!("/work/p{}", i % 2),
            &format!("s{i}"),
            None,
            &format!("2026-03-0{}T10:00:00Z", i + 1),
            chunk,
        );
    }
    let store = SessionStore::open(dir.join("store").to_str().unwrap());
    corpus.sync(&store).await;
    store
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_hit_scores_what_lance_scores_for_the_whole_query() {
    let dir = tempfile::tempdir().unwrap();
    let store = small_store(dir.path()).await;
    let queries = [
        "kestrel",
        "the falcon",
        "merge conflict",
        "session_id",
        "abcabc",
        "数据库",
        "данных",
    ];
    // Lance's own search of a column with no index cuts text with its default word tokenizer,
    // not the n-grams (which is why pond reads an unindexed store itself): compare once indexed.
    store.update_indexes().await.unwrap();
    {
        let indexed = true;
        for q in queries {
            let ours = store.search(&query(q, 100)).await.unwrap();
            let lance = lance_scores(&dir.path().join("store"), q).await;
            let got = hits(&ours);
            assert!(!got.is_empty(), "{q}: no hits (indexed: {indexed})");
            for (s, m, score) in &got {
                let theirs = lance.get(&(s.clone(), m.clone())).unwrap_or_else(|| {
                    panic!("{q}: pond's hit {s}/{m} is not one of Lance's {lance:?}")
                });
                assert!(
                    (score - theirs).abs() <= 1e-3 * theirs.abs().max(1.0),
                    "{q} ({s}/{m}, indexed: {indexed}): pond {score}, Lance {theirs}"
                );
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn words_of_every_script_and_code_identifiers_are_found() {
    let dir = tempfile::tempdir().unwrap();
    let store = small_store(dir.path()).await;
    store.update_indexes().await.unwrap();
    let cases = [
        ("数据库", "数据库连接池"),                      // Chinese
        ("データベース", "データベースの接続"),          // Japanese
        ("базе данных", "подключиться к базе данных"),   // Russian
        ("Datenbank", "Datenbankverbindung"),            // German, inside a compound
        ("strassenbahn", "Straßenbahn"),                 // ß folds to ss, alike in text and query
        ("session_id", "parse_session_id"),              // snake_case, a part of it
        ("store/src/search", "store/src/search/mod.rs"), // a path
        ("RequestTimeout", "HandleRequestTimeout"),      // CamelCase, a part of it
    ];
    for (q, expected) in cases {
        let o = store.search(&query(q, 3)).await.unwrap();
        let top = &o
            .groups
            .first()
            .unwrap_or_else(|| panic!("{q}: nothing found"))
            .hits[0];
        assert!(
            top.text.contains(expected),
            "{q}: the best match is {:?}, not the message with {expected:?}",
            top.text
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn filters_apply_before_ranking_and_still_fill_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = Corpus::new(&dir.path().join("src"));
    // 150 sessions in /loud mention the word four times each: every one outscores the quiet ones.
    let loud = "osprey osprey osprey osprey, the osprey again";
    for i in 0..150 {
        corpus.session(
            "/loud",
            &format!("loud{i:03}"),
            None,
            "2026-01-05T08:00:00Z",
            &[loud, "ok"],
        );
    }
    // Six sessions in /quiet mention it once, in long messages.
    let quiet = "on the way home I believe I saw an osprey near the river, though it was far and the light was poor";
    for i in 0..6 {
        corpus.session(
            "/quiet",
            &format!("quiet{i}"),
            None,
            &format!("2026-02-0{}T08:00:00Z", i + 1),
            &["hello", quiet],
        );
    }
    let store = SessionStore::open(dir.path().join("store").to_str().unwrap());
    corpus.sync(&store).await;
    for indexed in [false, true] {
        if indexed {
            store.update_indexes().await.unwrap();
        }
        let mut q = query("osprey", 4);
        q.filters.project = Some("/quiet".into());
        let o = store.search(&q).await.unwrap();
        assert_eq!(
            o.groups.len(),
            4,
            "limit results from the filtered rows (indexed: {indexed})"
        );
        assert!(
            o.groups
                .iter()
                .all(|g| g.session.project.as_str() == "/quiet")
        );
        // Unfiltered, the loud sessions win.
        let o = store.search(&query("osprey", 4)).await.unwrap();
        assert!(
            o.groups
                .iter()
                .all(|g| g.session.project.as_str() == "/loud")
        );
        // Each filter alike.
        let mut q = query("osprey", 10);
        q.filters.project_prefix = Some("/qu".into());
        assert_eq!(store.search(&q).await.unwrap().groups.len(), 6);
        let mut q = query("osprey", 10);
        q.filters.role = Some("assistant".into());
        q.filters.since_micros = Some(1_769_990_400_000_000); // 2026-02-02T00:00:00Z
        q.filters.until_micros = Some(1_770_249_600_000_000); // 2026-02-05T00:00:00Z
        let o = store.search(&q).await.unwrap();
        let ids: Vec<_> = o.groups.iter().map(|g| g.session.id.to_string()).collect();
        assert_eq!(ids.len(), 3, "{ids:?}");
        assert!(
            ids.iter()
                .all(|i| ["quiet1", "quiet2", "quiet3"].contains(&i.as_str())),
            "{ids:?}"
        );
        let mut q = query("osprey", 10);
        q.filters.session_id = Some("quiet4".into());
        let o = store.search(&q).await.unwrap();
        assert_eq!(o.groups.len(), 1);
        assert_eq!(o.groups[0].session.id.as_str(), "quiet4");
        let mut q = query("osprey", 10);
        q.filters.source_agent = Some("codex".into());
        assert!(store.search(&q).await.unwrap().groups.is_empty());
    }
    // The plan shows the prefilter answered by the scalar index, before the full-text search.
    let mut q = query("osprey", 4);
    q.filters.project = Some("/quiet".into());
    q.explain = true;
    let o = store.search(&q).await.unwrap();
    let plan = o.trace.plan.unwrap();
    assert!(
        plan.contains("ScalarIndexQuery") && plan.contains("messages_project"),
        "no scalar index in the plan:\n{plan}"
    );
    assert_eq!(o.trace.filter.as_deref(), Some("project = '/quiet'"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn results_are_the_same_before_and_after_update_indexes() {
    let dir = tempfile::tempdir().unwrap();
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/fixtures/claude-code");
    assert!(
        fixtures.is_dir(),
        "shared fixtures missing: {}",
        fixtures.display()
    );
    let store = SessionStore::open(dir.path().join("store").to_str().unwrap());
    let codec = pond_codecs::registry::find("claude-code").unwrap();
    let first = fixtures.join("marot-spotter");
    pond_store::sync::import(&store, codec, &[first], &mut |_, _| {})
        .await
        .unwrap();
    async fn run(store: &SessionStore) -> Vec<Vec<(String, String, f32)>> {
        let mut out = Vec::new();
        for q in ["test", "error handling", "the file", "function", "README"] {
            out.push(hits(&store.search(&query(q, 10)).await.unwrap()));
        }
        out
    }
    let before = run(&store).await;
    assert!(before.iter().any(|h| !h.is_empty()));
    store.update_indexes().await.unwrap();
    assert_eq!(run(&store).await, before, "indexing changed the results");
    // More rows after the fold: part indexed, part not, the same as all indexed.
    pond_store::sync::import(&store, codec, &[fixtures.clone()], &mut |_, _| {})
        .await
        .unwrap();
    let partly = run(&store).await;
    store.update_indexes().await.unwrap();
    assert_eq!(run(&store).await, partly, "folding changed the results");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sub_agent_hits_are_grouped_under_their_root_session() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = Corpus::new(&dir.path().join("src"));
    let root = "11111111-1111-4111-8111-111111111111";
    corpus.session(
        "/p",
        root,
        None,
        "2026-01-01T00:00:00Z",
        &["find the heron nest", "searching"],
    );
    corpus.session(
        "/p",
        "a1",
        Some(root),
        "2026-01-01T00:01:00Z",
        &["look for heron", "the heron nest is by the lake"],
    );
    corpus.session(
        "/p",
        "other",
        None,
        "2026-01-02T00:00:00Z",
        &["unrelated", "a heron flew by"],
    );
    let store = SessionStore::open(dir.path().join("store").to_str().unwrap());
    corpus.sync(&store).await;
    let o = store.search(&query("heron nest", 10)).await.unwrap();
    let groups: Vec<_> = o.groups.iter().map(|g| g.session.id.to_string()).collect();
    assert_eq!(groups.len(), 2, "{groups:?}");
    assert_eq!(groups[0], root);
    let sessions: Vec<&str> = o.groups[0]
        .hits
        .iter()
        .map(|h| h.session_id.as_str())
        .collect();
    assert!(
        sessions.iter().any(|s| *s != root),
        "the sub-agent's hit is in its root's group: {sessions:?}"
    );
    assert!(o.groups[0].hits.len() <= pond_store::search::MATCHES_PER_SESSION);
    // Best first, within and across groups.
    let scores: Vec<f32> = o.groups[0].hits.iter().map(|h| h.score).collect();
    assert!(scores.windows(2).all(|w| w[0] >= w[1]), "{scores:?}");
    assert!(o.groups[0].score >= o.groups[1].score);
}

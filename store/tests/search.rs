//! Full-text search over a real Lance store (spec 8): the two-step search scores each hit
//! exactly as Lance's BM25 scores the whole query; filters are prefilters that still return
//! `limit` results when better-scoring rows lie outside them; words of every script and code
//! identifiers are found; results are the same before and after `update-indexes`; sub-agent
//! hits group under the session that spawned them, and under a parent synced after them.

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
        vector: None,
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

/// Every hit with everything it shows: its ids, score, role, timestamp, text and length.
fn shown(o: &SearchOutcome) -> Vec<(String, String, f32, String, String, String, u64)> {
    o.groups
        .iter()
        .flat_map(|g| g.hits.iter())
        .map(|h| {
            (
                h.session_id.clone(),
                h.message_id.clone(),
                h.score,
                h.role.clone(),
                h.timestamp.clone(),
                h.text.clone(),
                h.text_chars,
            )
        })
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

/// The latest version of `messages`, held for reading.
async fn messages_view(store: &SessionStore) -> pond_store::substrate::ReadView {
    use pond_store::sessions::schema::MESSAGES;
    store
        .substrate()
        .read_view(&MESSAGES)
        .await
        .unwrap()
        .expect("messages has rows")
}

/// A store in `dir` synced from one project of the shared Claude Code fixtures, and the
/// fixtures' directory (the other projects, for a later sync).
async fn one_claude_project(dir: &Path) -> (SessionStore, PathBuf) {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/fixtures/claude-code");
    assert!(
        fixtures.is_dir(),
        "shared fixtures missing: {}",
        fixtures.display()
    );
    let store = SessionStore::open(dir.join("store").to_str().unwrap());
    let codec = pond_codecs::registry::find("claude-code").unwrap();
    pond_store::sync::import(
        &store,
        codec,
        &[fixtures.join("marot-spotter")],
        &mut |_, _| {},
    )
    .await
    .unwrap();
    (store, fixtures)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn results_are_the_same_before_and_after_update_indexes() {
    let dir = tempfile::tempdir().unwrap();
    let (store, fixtures) = one_claude_project(dir.path()).await;
    let codec = pond_codecs::registry::find("claude-code").unwrap();
    // Before the index, every column of a candidate is read in one scan; after it, the
    // details of the hits kept are read by row id: what a hit shows must be the same.
    async fn run(
        store: &SessionStore,
    ) -> Vec<Vec<(String, String, f32, String, String, String, u64)>> {
        let mut out = Vec::new();
        for q in ["test", "error handling", "the file", "function", "README"] {
            out.push(shown(&store.search(&query(q, 10)).await.unwrap()));
        }
        out
    }
    let before = run(&store).await;
    assert!(before.iter().any(|h| !h.is_empty()));
    for h in before.iter().flatten() {
        assert!(
            !h.3.is_empty() && !h.4.is_empty() && !h.5.is_empty() && h.6 > 0,
            "a hit shows nothing: {h:?}"
        );
    }
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

/// Hits with the same score in one session are ordered by message id, and a session shows the
/// first of them in that order, whether or not the full-text index is built (the indexed search
/// reads a candidate's id only where a tie needs it, and the ids of the hits kept after): the
/// message ids here run against the order of the rows, so an order by row would show others.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tied_hits_are_ordered_by_message_id_not_by_row() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = Corpus::new(&dir.path().join("src"));
    let same = ["the kestrel hovered over the meadow"; 8];
    corpus.session("/work/p", "tied", None, "2026-03-01T10:00:00Z", &same);
    corpus.session(
        "/work/p",
        "other",
        None,
        "2026-03-02T10:00:00Z",
        &["a kestrel", "nothing", "kestrel kestrel over the hill"],
    );
    // Message ids descending as the rows ascend.
    let file = dir.path().join("src/-work-p/tied.jsonl");
    let mut text = std::fs::read_to_string(&file).unwrap();
    for i in 0..same.len() {
        text = text.replace(
            &format!("\"tied-m{i:03}\""),
            &format!("\"tied-r{:03}\"", same.len() - 1 - i),
        );
    }
    std::fs::write(&file, text).unwrap();
    let store = SessionStore::open(dir.path().join("store").to_str().unwrap());
    corpus.sync(&store).await;
    let shown_for = |o: &SearchOutcome| {
        let tied: Vec<_> = shown(o).into_iter().filter(|h| h.0 == "tied").collect();
        tied
    };
    let before = store.search(&query("kestrel", 10)).await.unwrap();
    let tied = shown_for(&before);
    let ids: Vec<&str> = tied.iter().map(|h| h.1.as_str()).collect();
    assert_eq!(ids, ["tied-r000", "tied-r001", "tied-r002"], "{tied:?}");
    assert!(tied.iter().all(|h| h.2 == tied[0].2), "one score: {tied:?}");
    for h in &tied {
        assert!(!h.3.is_empty() && !h.4.is_empty() && h.6 > 0, "{h:?}");
    }
    store.update_indexes().await.unwrap();
    let after = store.search(&query("kestrel", 10)).await.unwrap();
    assert_eq!(
        shown(&after),
        shown(&before),
        "indexing changed the results"
    );
}

/// The recall step's answer from the inverted index's own search is the query plan's answer:
/// the same rows with the same scores, on a store whose index covers every row, with no filter
/// and with each filter a search builds (the scalar indexes' mask as its prefilter); and the
/// index alone is not asked where it would not answer alike (a filter no scalar index answers
/// exactly, rows written since the fold).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_index_alone_answers_the_recall_as_the_query_plan_does() {
    use pond_store::sessions::schema::SEARCH_TEXT_INDEX;
    use pond_store::substrate::FullTextRequest;
    let dir = tempfile::tempdir().unwrap();
    let (store, fixtures) = one_claude_project(dir.path()).await;
    let codec = pond_codecs::registry::find("claude-code").unwrap();
    store.update_indexes().await.unwrap();
    let request = |terms: &[&str], filter: Option<&str>| FullTextRequest {
        column: SEARCH_TEXT_INDEX.column,
        index: SEARCH_TEXT_INDEX.name,
        terms: terms.iter().map(|t| t.to_string()).collect(),
        filter: filter.map(str::to_owned),
        // More than any of these terms' rows: no tie at the edge of the pool decides a row.
        limit: 100_000,
        projection: vec![("_score".to_owned(), "_score".to_owned())],
    };
    fn rows(batches: &[arrow_array::RecordBatch]) -> BTreeMap<u64, f32> {
        use arrow_array::cast::AsArray;
        use arrow_array::types::{Float32Type, UInt64Type};
        let mut out = BTreeMap::new();
        for b in batches {
            let ids = b["_rowid"].as_primitive::<UInt64Type>();
            let scores = b["_score"].as_primitive::<Float32Type>();
            out.extend(
                ids.values()
                    .iter()
                    .copied()
                    .zip(scores.values().iter().copied()),
            );
        }
        out
    }
    let view = messages_view(&store).await;
    // One stored row's project and session, for the filters a search builds over them.
    let first = view
        .scan(|s| {
            s.project(&["project", "session_id"])?;
            s.limit(Some(1), None)?;
            Ok(())
        })
        .await
        .unwrap();
    let text = |column: &str| {
        use arrow_array::cast::AsArray;
        let value = first[0][column].as_string::<i32>().value(0).to_owned();
        value.replace('\'', "''")
    };
    let (project, session) = (text("project"), text("session_id"));
    let prefix: String = project.chars().take(project.len() / 2).collect();
    // The filters as `filter_predicate` writes them (search-prefilter-pushdown): each clause on
    // a column with a scalar index that answers it exactly.
    let instant = "arrow_cast(1704067200000000, 'Timestamp(Microsecond, Some(\"UTC\"))')";
    let filters: Vec<Option<String>> = vec![
        None,
        Some("role = 'user'".to_owned()),
        Some(format!("project = '{project}'")),
        Some(format!("starts_with(project, '{prefix}')")),
        Some("source_agent = 'claude-code'".to_owned()),
        Some(format!("session_id IN ('{session}', 'no-such-session')")),
        Some(format!("timestamp >= {instant}")),
        Some(format!(
            "project = '{project}' AND role = 'assistant' AND timestamp >= {instant}"
        )),
        Some("project = '/no/such/project'".to_owned()),
    ];
    let cases: [&[&str]; 5] = [
        &["tes"],
        &["Fil", "ile", "le "],
        &["fun", "unc", "nct", "REA", "ADM"],
        &["err", "han", "dli"],
        &["zqx"],
    ];
    for filter in &filters {
        let mut matched = 0;
        for terms in cases {
            let req = request(terms, filter.as_deref());
            let alone =
                view.index_search(&req).await.unwrap().unwrap_or_else(|| {
                    panic!("{terms:?}, {filter:?}: the index did not answer alone")
                });
            let planned = rows(&view.planned_full_text_search(&req).await.unwrap());
            let alone = rows(&[alone]);
            assert_eq!(
                alone.keys().collect::<Vec<_>>(),
                planned.keys().collect::<Vec<_>>(),
                "{terms:?}, {filter:?}: other rows"
            );
            for (row, score) in &alone {
                let theirs = planned[row];
                assert!(
                    (score - theirs).abs() <= 1e-4 * theirs.abs().max(1.0),
                    "{terms:?}, {filter:?}, row {row}: alone {score}, planned {theirs}"
                );
            }
            matched += alone.len();
        }
        let none_expected = filter.as_deref().is_some_and(|f| f.contains("no/such"));
        assert_eq!(
            matched == 0,
            none_expected,
            "{filter:?}: {matched} rows matched"
        );
    }
    // A filter no scalar index answers exactly (a column without one, a computed value) is the
    // plan's to refine over the rows it reads.
    for filter in [
        "id = 'x'",
        "character_length(search_text) > 5",
        "role = 'user' OR id = 'x'",
    ] {
        let req = request(&["tes"], Some(filter));
        assert!(
            view.index_search(&req).await.unwrap().is_none(),
            "{filter}: answered without the plan"
        );
        assert!(
            !rows(&view.full_text_search(&req).await.unwrap()).is_empty() || filter == "id = 'x'"
        );
    }
    // Rows written since the fold are the plan's to search flat: the index is not asked alone,
    // and the new rows are found.
    let before = rows(
        &view
            .full_text_search(&request(&["tes"], None))
            .await
            .unwrap(),
    );
    pond_store::sync::import(&store, codec, &[fixtures.clone()], &mut |_, _| {})
        .await
        .unwrap();
    let view = messages_view(&store).await;
    assert!(
        view.index_search(&request(&["tes"], None))
            .await
            .unwrap()
            .is_none()
    );
    let after = rows(
        &view
            .full_text_search(&request(&["tes"], None))
            .await
            .unwrap(),
    );
    assert!(
        after.len() > before.len(),
        "{} rows, then {}",
        before.len(),
        after.len()
    );
}

/// A search hit's parts are read by row id where the session index answers alone, and by a scan
/// where it does not (before the index is built, after a sync adds rows it does not cover, after
/// a fragment it covers is gone): the same parts either way, in ordinal order, for exactly the
/// messages asked for, and none that was deleted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hits_parts_are_the_same_read_by_row_id_as_by_a_scan() {
    use pond_store::sessions::schema::PARTS;
    let dir = tempfile::tempdir().unwrap();
    let (store, fixtures) = one_claude_project(dir.path()).await;
    let codec = pond_codecs::registry::find("claude-code").unwrap();
    let keys = messages_view(&store)
        .await
        .scan(|s| {
            s.project(&["session_id", "id"])?;
            Ok(())
        })
        .await
        .unwrap();
    let mut asked: Vec<(String, String)> = Vec::new();
    for b in &keys {
        use arrow_array::cast::AsArray;
        let (s, m) = (
            b["session_id"].as_string::<i32>(),
            b["id"].as_string::<i32>(),
        );
        // Every seventh message: some sessions' parts are read, most of theirs left out.
        for i in (0..b.num_rows()).step_by(7) {
            asked.push((s.value(i).to_owned(), m.value(i).to_owned()));
        }
    }
    asked.push((asked[0].0.clone(), "no-such-message".to_owned()));
    assert!(asked.len() > 10, "{} messages asked for", asked.len());
    let sessions: Vec<String> = {
        let mut s: Vec<String> = asked.iter().map(|(s, _)| format!("'{s}'")).collect();
        s.sort();
        s.dedup();
        s
    };
    let session_filter = format!("session_id IN ({})", sessions.join(", "));
    let message_filter = {
        let mut m: Vec<String> = asked.iter().map(|(_, m)| format!("'{m}'")).collect();
        m.sort();
        m.dedup();
        format!("message_id IN ({})", m.join(", "))
    };
    // The rows of the sessions' parts (of the messages' parts) as the session index (the
    // message index) alone names them, if it does.
    let rows_of = |filter: String| {
        let store = &store;
        async move {
            let view = store.substrate().read_view(&PARTS).await.unwrap();
            let view = view.expect("parts written");
            view.index_rows(&filter).await.unwrap()
        }
    };
    let index_rows = || rows_of(session_filter.clone());
    let message_rows = || rows_of(message_filter.clone());
    // The same rows asked of the message index one id at a time (what `parts_of` asks).
    let message_ids: Vec<&str> = {
        let mut m: Vec<&str> = asked.iter().map(|(_, m)| m.as_str()).collect();
        m.sort();
        m.dedup();
        m
    };
    let rows_equal_to = || {
        let (store, ids) = (&store, &message_ids);
        async move {
            let view = store.substrate().read_view(&PARTS).await.unwrap();
            let view = view.expect("parts written");
            view.index_rows_equal_to("message_id", ids).await.unwrap()
        }
    };
    assert!(
        index_rows().await.is_none(),
        "no session index yet: the scan reads"
    );
    let scanned = store.parts_of(&asked).await.unwrap();
    store.update_indexes().await.unwrap();
    let rows = index_rows().await.expect("the session index answers alone");
    let named = message_rows()
        .await
        .expect("the message index answers alone");
    assert_eq!(rows_equal_to().await.as_ref(), Some(&named));
    let by_row_id = store.parts_of(&asked).await.unwrap();
    assert_eq!(by_row_id, scanned);
    let read: usize = by_row_id.values().map(Vec::len).sum();
    assert!(
        read > 0 && read == named.len() && named.len() < rows.len(),
        "{read} parts read; the message index named {}, the session index {}",
        named.len(),
        rows.len()
    );
    assert!(!by_row_id.contains_key(asked.last().unwrap()));
    // A store indexed before the message index existed: the session index names the rows.
    let parts_table = dir.path().join("store/parts.lance");
    {
        use lance::index::DatasetIndexExt;
        let mut ds = Dataset::open(parts_table.to_str().unwrap()).await.unwrap();
        ds.drop_index("parts_message_id").await.unwrap();
    }
    assert!(message_rows().await.is_none(), "no message index");
    assert!(rows_equal_to().await.is_none(), "no message index");
    assert!(index_rows().await.is_some());
    assert_eq!(store.parts_of(&asked).await.unwrap(), scanned);
    pond_store::sync::import(&store, codec, &[fixtures], &mut |_, _| {})
        .await
        .unwrap();
    assert!(
        index_rows().await.is_none(),
        "rows the index does not cover: the scan reads"
    );
    assert_eq!(store.parts_of(&asked).await.unwrap(), scanned);
    // Deleted rows: those of a fragment that keeps others are left out of the index's answer
    // (the deletion mask); a fragment gone whole sends the read back to the scan.
    store.update_indexes().await.unwrap();
    assert!(index_rows().await.is_some());
    assert!(
        message_rows().await.is_some(),
        "the message index built again"
    );
    let gone = asked[0].0.clone();
    let mut ds = Dataset::open(parts_table.to_str().unwrap()).await.unwrap();
    ds.delete(&format!("session_id = '{gone}'")).await.unwrap();
    assert!(
        index_rows().await.is_some(),
        "rows deleted from a fragment: the index still answers, less them"
    );
    let less = message_rows().await.expect("the message index answers");
    assert!(less.len() < named.len());
    assert_eq!(rows_equal_to().await, Some(less));
    let kept: std::collections::HashMap<_, _> = scanned
        .iter()
        .filter(|(k, _)| k.0 != gone)
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    assert!(kept.len() < scanned.len() && !kept.is_empty());
    assert_eq!(store.parts_of(&asked).await.unwrap(), kept);
    ds.delete("true").await.unwrap();
    assert!(
        index_rows().await.is_none(),
        "fragments the index covers are gone: the scan reads"
    );
    assert!(store.parts_of(&asked).await.unwrap().is_empty());
}

/// Reads go through a handle of their own (io_uring where the kernel allows it, docs/decisions.md
/// "Local reads through io_uring") and still see each write the moment it commits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_through_their_own_handle_see_each_write_at_once() {
    use pond_store::sessions::schema::MESSAGES;
    use pond_store::substrate::uring_reads;
    let dir = tempfile::tempdir().unwrap();
    let corpus = Corpus::new(&dir.path().join("src"));
    corpus.session(
        "/work/u",
        "u001",
        None,
        "2026-04-01T10:00:00Z",
        &["the heron lands"],
    );
    let store = SessionStore::open(dir.path().join("store").to_str().unwrap());
    corpus.sync(&store).await;
    let read = store
        .substrate()
        .read_dataset(&MESSAGES)
        .await
        .unwrap()
        .unwrap();
    let write = store.substrate().dataset(&MESSAGES).await.unwrap().unwrap();
    if uring_reads() {
        assert!(read.uri().starts_with("file+uring:///"), "{}", read.uri());
    } else {
        eprintln!(
            "io_uring is not available here (or POND_IO_URING=0): reads share the writers' handle"
        );
        assert_eq!(read.uri(), write.uri());
    }
    assert!(!write.uri().starts_with("file+uring"), "{}", write.uri());
    let found = |o: &SearchOutcome| -> Vec<String> {
        o.groups.iter().map(|g| g.session.id.to_string()).collect()
    };
    assert_eq!(
        found(&store.search(&query("heron", 10)).await.unwrap()),
        ["u001"]
    );
    // A second session, written after the read handle was opened: the next read sees it.
    corpus.session(
        "/work/u",
        "u002",
        None,
        "2026-04-02T10:00:00Z",
        &["a heron again"],
    );
    corpus.sync(&store).await;
    let mut both = found(&store.search(&query("heron", 10)).await.unwrap());
    both.sort();
    assert_eq!(both, ["u001", "u002"]);
    let (rows, version) = store.substrate().stats(&MESSAGES).await.unwrap();
    assert_eq!(rows, 2);
    let latest = store.substrate().dataset(&MESSAGES).await.unwrap().unwrap();
    assert_eq!(version, Some(latest.version().version));
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

/// A search remembers the sessions it read by id, at the version of `sessions` it read them
/// from (and the ids it found no session for): a parent synced after its sub-agent was found
/// is its root from the next search on, and nothing an earlier search read is shown stale.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parent_synced_after_its_sub_agent_was_found_becomes_its_root() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = Corpus::new(&dir.path().join("src"));
    let root = "22222222-2222-4222-8222-222222222222";
    // The sub-agent's file only: its parent is named but not stored.
    corpus.session(
        "/p",
        "a1",
        Some(root),
        "2026-01-01T00:01:00Z",
        &["look for the kestrel", "the kestrel hovers"],
    );
    // Claude Code names a sub-agent's session after its parent's.
    let sub = format!("{root}/agent-a1");
    let store = SessionStore::open(dir.path().join("store").to_str().unwrap());
    corpus.sync(&store).await;
    let roots = |o: &SearchOutcome| -> Vec<String> {
        o.groups.iter().map(|g| g.session.id.to_string()).collect()
    };
    for _ in 0..2 {
        // The second search finds what the first read in the memo: the same answer.
        let o = store.search(&query("kestrel", 10)).await.unwrap();
        assert_eq!(
            roots(&o),
            [sub.clone()],
            "no stored parent: the sub-agent is its own root"
        );
    }
    assert!(
        store
            .sessions_by_id(&[root.to_owned()])
            .await
            .unwrap()
            .is_empty(),
        "the parent is not stored yet"
    );
    corpus.session(
        "/p",
        root,
        None,
        "2026-01-01T00:00:00Z",
        &["find the kestrel", "searching"],
    );
    corpus.sync(&store).await;
    let o = store.search(&query("kestrel", 10)).await.unwrap();
    assert_eq!(roots(&o), [root], "the parent, stored now, is the root");
    let found = store
        .sessions_by_id(&[root.to_owned(), sub.clone()])
        .await
        .unwrap();
    assert_eq!(found.keys().collect::<Vec<_>>(), [root, sub.as_str()]);
    assert_eq!(
        found[&sub]
            .parent_session_id
            .as_ref()
            .map(ToString::to_string)
            .as_deref(),
        Some(root)
    );
}

// ---------------------------------------------------------------------------------------------
// Hybrid search (spec 8): the embed stage, the vector arm and the fusion, with tiny random
// models written on the spot (no download): their vectors mean nothing, but the same text
// always gives the same vector, and two seeds give two models.

use pond_embed::Embedder;
use pond_store::embed::{EmbedOptions, embed};
use pond_store::search::{QueryVector, SearchMode};
use pond_store::sessions::VectorSettings;
use std::sync::Arc;

/// A tiny BERT of the store's vector width, written under `dir` as `name`, loaded.
fn tiny_model(dir: &Path, name: &str, seed: u64) -> Arc<dyn Embedder> {
    pond_embed::tiny::TinyModel {
        dimension: pond_store::sessions::schema::VECTOR_DIM as usize,
        heads: 4,
        layers: 1,
        seed,
        ..Default::default()
    }
    .write(dir, name)
    .unwrap();
    Arc::from(pond_embed::load(name, dir).unwrap())
}

/// The text of message `m` of hybrid session `s`: three words and a note, every one different.
fn hybrid_text(s: usize, m: usize) -> String {
    let words = [
        "kestrel", "merge", "lance", "vector", "timeout", "parser", "falcon", "index", "rebase",
        "socket", "meadow", "schema",
    ];
    let w = |k: usize| words[(s * 7 + m * 3 + k) % words.len()];
    format!("{} {} {} note {s}-{m}", w(0), w(1), w(5))
}

/// `n` sessions of 10 messages over three projects.
async fn hybrid_store(dir: &Path, sessions: usize, settings: VectorSettings) -> SessionStore {
    let corpus = Corpus::new(&dir.join("src"));
    for s in 0..sessions {
        let texts: Vec<String> = (0..10).map(|m| hybrid_text(s, m)).collect();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        corpus.session(
            &format!("/work/h{}", s % 3),
            &format!("h{s:03}"),
            None,
            "2026-04-01T10:00:00Z",
            &refs,
        );
    }
    let store =
        SessionStore::open(dir.join("store").to_str().unwrap()).with_vector_settings(settings);
    corpus.sync(&store).await;
    store
}

/// Every stored message, canonical, by session: what the embed stage must never change.
async fn canonical(store: &SessionStore) -> Vec<String> {
    let mut out = Vec::new();
    for s in store.list(None, None, None).await.unwrap() {
        for (seq, m) in store.load_messages(&s.id).await.unwrap() {
            out.push(format!("{seq} {}", serde_json::to_string(&m).unwrap()));
        }
    }
    out.sort();
    out
}

async fn vector_of(model: &Arc<dyn Embedder>, text: &str) -> QueryVector {
    QueryVector {
        model: model.model_id().to_owned(),
        values: model
            .embed(&[text], pond_embed::TextKind::Query)
            .unwrap()
            .remove(0),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_embed_stage_fills_each_text_once_and_hybrid_search_fuses_both_arms() {
    let dir = tempfile::tempdir().unwrap();
    let store = hybrid_store(dir.path(), 12, VectorSettings::default()).await;
    let models = dir.path().join("models");
    let a = tiny_model(&models, "tiny-a", 1);
    let before = canonical(&store).await;
    assert_eq!(before.len(), 120);
    store.update_indexes().await.unwrap();
    let coverage = async || {
        let mut c: Vec<(String, u64, u64)> = store
            .index_status()
            .await
            .unwrap()
            .into_iter()
            .map(|s| (s.name.to_owned(), s.indexed_rows, s.unindexed_rows))
            .collect();
        c.sort();
        c
    };
    let indexed = coverage().await;

    // Before any vector, a query with a vector searches full-text.
    let text = hybrid_text(4, 3);
    let mut q = query(&text, 5);
    q.vector = Some(vector_of(&a, &text).await);
    assert_eq!(store.search(&q).await.unwrap().mode, SearchMode::FullText);

    let small = EmbedOptions {
        chunk: 30,
        batch: 10,
        ..Default::default()
    };
    let mut calls = Vec::new();
    let done = embed(&store, a.clone(), small, &mut |d, t| calls.push((d, t)))
        .await
        .unwrap();
    assert_eq!((done.backlog, done.embedded), (120, 120), "{done:?}");
    assert_eq!(done.commits, 4, "{done:?}");
    assert_eq!(calls.last(), Some(&(120, 120)));
    assert_eq!(
        store.embedding_models().await.unwrap(),
        BTreeMap::from([("tiny-a".to_owned(), 120)])
    );
    assert_eq!(
        canonical(&store).await,
        before,
        "the embed stage changed a message"
    );
    // The vectors were patched into the rows where they are: every index of another column
    // still covers every message (a rewrite of whole rows would leave them covering none).
    let after: Vec<_> = coverage()
        .await
        .into_iter()
        .filter(|(name, ..)| !name.contains("embedding_model"))
        .collect();
    let before_embed: Vec<_> = indexed
        .iter()
        .filter(|(name, ..)| !name.contains("embedding_model"))
        .cloned()
        .collect();
    assert_eq!(
        after, before_embed,
        "the embed stage moved rows out of the indexes"
    );
    assert!(
        after
            .iter()
            .any(|(n, i, u)| n.contains("fts") && *i == 120 && *u == 0),
        "{after:?}"
    );
    let again = embed(&store, a.clone(), small, &mut |_, _| {})
        .await
        .unwrap();
    assert_eq!((again.backlog, again.embedded), (0, 0), "{again:?}");

    // Hybrid now: the vector arm finds the message whose text is the query first (the same
    // text, the same vector), and the fusion credits each hit to the arms that found it.
    q.explain = true;
    let o = store.search(&q).await.unwrap();
    assert_eq!(o.mode, SearchMode::Hybrid);
    let arms: Vec<&str> = o.trace.arms.iter().map(|a| a.name).collect();
    // The full-text index built before the embed stage still covers every row: the indexed arm.
    assert_eq!(arms, ["full_text", "vector"]);
    let vector_arm = &o.trace.arms[1];
    assert_eq!(vector_arm.sessions[0].0, "h004", "{vector_arm:?}");
    assert!((vector_arm.max - 1.0).abs() < 1e-3, "{vector_arm:?}");
    assert!(
        vector_arm.plan.as_deref().unwrap_or("").contains("KNN"),
        "{vector_arm:?}"
    );
    assert_eq!(o.groups[0].session.id.to_string(), "h004");
    assert_eq!(o.groups[0].hits[0].message_id, "h004-m003");
    let top = &o.trace.hits[0];
    assert_eq!(top.retriever, "full_text+vector");
    assert!(top.arms.iter().all(|p| (0.0..=1.0).contains(&p.normalized)));
    assert!(o.groups.windows(2).all(|w| w[0].score >= w[1].score));
    // Every hit shows its own message, those only the vector arm found too (read for the hits
    // kept, by row id).
    let vector_only = o
        .trace
        .hits
        .iter()
        .filter(|h| h.retriever == "vector")
        .count();
    assert!(vector_only > 0, "{:?}", o.trace.hits);
    for h in o.groups.iter().flat_map(|g| &g.hits) {
        let (s, m) = h.message_id.split_once("-m").unwrap();
        let (s, m): (usize, usize) = (s[1..].parse().unwrap(), m.parse().unwrap());
        assert_eq!(h.text, hybrid_text(s, m), "{h:?}");
        assert_eq!(h.text_chars, h.text.chars().count() as u64, "{h:?}");
        let stored = store.load_messages(&h.session_id).await.unwrap();
        let message = stored
            .iter()
            .map(|(_, m)| serde_json::to_value(m).unwrap())
            .find(|m| m["id"] == h.message_id.as_str())
            .unwrap();
        assert_eq!(message["role"], h.role.as_str(), "{h:?}");
        assert!(!h.timestamp.is_empty(), "{h:?}");
    }

    // The vector arm's filter is a prefilter: a project filter still fills the arm.
    q.filters.project = Some("/work/h1".to_owned());
    let o = store.search(&q).await.unwrap();
    assert_eq!(o.trace.arms[1].sessions.len(), 4, "{:?}", o.trace.arms[1]);
    for g in &o.groups {
        assert_eq!(g.session.project.as_str(), "/work/h1");
    }
    q.filters.project = None;

    // Another model: its vectors are not comparable, so without --force-embed nothing is
    // re-embedded and a query in its space searches full-text; with it, every row is.
    let b = tiny_model(&models, "tiny-b", 2);
    let kept = embed(&store, b.clone(), small, &mut |_, _| {})
        .await
        .unwrap();
    assert_eq!((kept.backlog, kept.other_model), (0, 120), "{kept:?}");
    q.vector = Some(vector_of(&b, &text).await);
    assert_eq!(store.search(&q).await.unwrap().mode, SearchMode::FullText);
    let forced = embed(
        &store,
        b.clone(),
        EmbedOptions {
            force: true,
            ..small
        },
        &mut |_, _| {},
    )
    .await
    .unwrap();
    assert_eq!((forced.backlog, forced.embedded), (120, 120), "{forced:?}");
    assert_eq!(
        store.embedding_models().await.unwrap(),
        BTreeMap::from([("tiny-b".to_owned(), 120)])
    );
    assert_eq!(canonical(&store).await, before);
    assert_eq!(store.search(&q).await.unwrap().mode, SearchMode::Hybrid);
    for (table, rows, keys) in store.key_check().await.unwrap() {
        assert_eq!(rows, keys, "{table}");
    }
}

/// The vector arm asks for a small pool first and a larger one when the first falls in fewer
/// sessions than the arm brings: its sessions are then the nearest ones, as a flat scan of
/// every vector ranks them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_vector_arm_grows_its_pool_until_it_fills_its_sessions() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = Corpus::new(&dir.path().join("src"));
    // Every message of a session says the same: the nearest 100 messages are whole sessions,
    // ten of them, half the twenty the arm brings for a limit of 10.
    let words = [
        "kestrel", "merge", "lance", "vector", "timeout", "parser", "falcon", "index",
    ];
    let text = |s: usize| format!("{} {} ticket {s}", words[s % 8], words[(s / 8 + 3) % 8]);
    for s in 0..30 {
        let texts = vec![text(s); 10];
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        corpus.session(
            "/work/g",
            &format!("g{s:03}"),
            None,
            "2026-04-01T10:00:00Z",
            &refs,
        );
    }
    let store = SessionStore::open(dir.path().join("store").to_str().unwrap());
    corpus.sync(&store).await;
    let model = tiny_model(&dir.path().join("models"), "tiny-g", 3);
    let done = embed(
        &store,
        model.clone(),
        EmbedOptions::default(),
        &mut |_, _| {},
    )
    .await
    .unwrap();
    assert_eq!(done.embedded, 300, "{done:?}");

    let q_text = text(0);
    let mut q = query(&q_text, 10);
    q.explain = true;
    q.vector = Some(vector_of(&model, &q_text).await);
    let o = store.search(&q).await.unwrap();
    assert_eq!(o.mode, SearchMode::Hybrid);
    let arm = &o.trace.arms[1];
    assert_eq!(arm.rounds, [(100, 100), (400, 300)], "{arm:?}");
    assert_eq!(arm.sessions.len(), 20, "{arm:?}");
    assert_eq!(arm.sessions[0].0, "g000", "{arm:?}");

    // The flat ranking: every session's text embedded here, by cosine to the query.
    let texts: Vec<String> = (0..30).map(text).collect();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let vectors = model.embed(&refs, pond_embed::TextKind::Passage).unwrap();
    let query_vector = &q.vector.as_ref().unwrap().values;
    let mut flat: Vec<(String, f32)> = vectors
        .iter()
        .enumerate()
        .map(|(s, v)| {
            let dot: f32 = v.iter().zip(query_vector).map(|(a, b)| a * b).sum();
            (format!("g{s:03}"), dot)
        })
        .collect();
    flat.sort_by(|a, b| b.1.total_cmp(&a.1));
    // Stored vectors are Float16: sessions closer than that to the cut may trade places.
    let cut = flat[19].1;
    let certain: Vec<&String> = flat
        .iter()
        .filter(|(_, d)| (d - cut).abs() > 1e-2)
        .take_while(|(_, d)| *d > cut)
        .map(|(id, _)| id)
        .collect();
    assert!(certain.len() >= 15, "{flat:?}");
    for id in certain {
        assert!(
            arm.sessions.iter().any(|(s, _)| s == id),
            "{id} is among the 20 nearest sessions, not in the arm: {arm:?}"
        );
    }
    for (id, raw) in &arm.sessions {
        assert!(
            *raw >= cut - 1e-2,
            "{id} ({raw}) is farther than the cut ({cut})"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_vector_index_is_trained_at_its_threshold_and_dropped_on_a_model_swap() {
    use pond_store::sessions::schema::{VECTOR_INDEX, VECTOR_INDEX_MODEL_KEY};
    use pond_store::substrate::IndexAction;
    let dir = tempfile::tempdir().unwrap();
    let settings = VectorSettings {
        index_threshold: 300,
        ..VectorSettings::default()
    };
    let store = hybrid_store(dir.path(), 36, settings).await;
    let models = dir.path().join("models");
    let a = tiny_model(&models, "tiny-a", 1);
    let vector_update = |updates: Vec<pond_store::sessions::IndexUpdate>| {
        updates.into_iter().find(|u| u.index == VECTOR_INDEX.name)
    };
    // Embeddings off: the vector index is not part of maintenance. The scalar indexes exist
    // before the first vector, as in a store synced before embeddings were configured.
    assert!(vector_update(store.update_indexes().await.unwrap()).is_none());

    embed(&store, a.clone(), EmbedOptions::default(), &mut |_, _| {})
        .await
        .unwrap();
    // Every vector is counted under its model, before and after the fold of the bitmap on
    // embedding_model (Lance 14's bitmap answered `IS NOT NULL` with no row after that fold).
    let all = BTreeMap::from([("tiny-a".to_owned(), 360)]);
    assert_eq!(store.embedding_models().await.unwrap(), all);
    let built = vector_update(store.update_indexes().await.unwrap()).unwrap();
    assert_eq!(store.embedding_models().await.unwrap(), all);
    assert_eq!(built.action, IndexAction::Created, "{built:?}");
    let config = |k| {
        store
            .substrate()
            .config_value(&pond_store::sessions::schema::MESSAGES, k)
    };
    assert_eq!(
        config(VECTOR_INDEX_MODEL_KEY).await.unwrap().as_deref(),
        Some("tiny-a")
    );
    let status = store.index_status().await.unwrap();
    let ivf = status.iter().find(|s| s.name == VECTOR_INDEX.name).unwrap();
    assert_eq!((ivf.indexed_rows, ivf.unindexed_rows), (360, 0), "{ivf:?}");

    // Searched through the index: the exact text is still found first (one partition, every
    // candidate re-ranked by its exact distance).
    let text = hybrid_text(30, 5);
    let mut q = query(&text, 5);
    q.vector = Some(vector_of(&a, &text).await);
    q.explain = true;
    let o = store.search(&q).await.unwrap();
    assert_eq!(o.mode, SearchMode::Hybrid);
    assert_eq!(o.trace.arms[1].sessions[0].0, "h030");
    let plan = o.trace.arms[1].plan.clone().unwrap_or_default();
    assert!(
        plan.contains("ANNSubIndex") || plan.contains("ANNIvf"),
        "{plan}"
    );
    // `exact`, the reference the index's recall is measured against, compares every vector:
    // no ANN step in its plan, and the same session first.
    let exact = SessionStore::open(dir.path().join("store").to_str().unwrap())
        .with_vector_settings(VectorSettings {
            exact: true,
            ..settings
        });
    let o = exact.search(&q).await.unwrap();
    assert_eq!(o.trace.arms[1].sessions[0].0, "h030");
    let plan = o.trace.arms[1].plan.clone().unwrap_or_default();
    assert!(
        !plan.contains("ANNSubIndex") && !plan.contains("ANNIvf") && plan.contains("KNN"),
        "{plan}"
    );

    // A model swap drops the index before the new vectors land; update-indexes trains it again.
    let b = tiny_model(&models, "tiny-b", 2);
    let swapped = embed(
        &store,
        b.clone(),
        EmbedOptions {
            force: true,
            ..Default::default()
        },
        &mut |_, _| {},
    )
    .await
    .unwrap();
    assert!(swapped.index_dropped, "{swapped:?}");
    assert!(
        !store
            .index_status()
            .await
            .unwrap()
            .iter()
            .any(|s| s.name == VECTOR_INDEX.name),
        "the old model's index outlived the swap"
    );
    assert_eq!(config(VECTOR_INDEX_MODEL_KEY).await.unwrap(), None);
    let rebuilt = vector_update(store.update_indexes().await.unwrap()).unwrap();
    assert_eq!(rebuilt.action, IndexAction::Created);
    assert_eq!(
        config(VECTOR_INDEX_MODEL_KEY).await.unwrap().as_deref(),
        Some("tiny-b")
    );
}

/// A model that fails after `ok` calls: the embed stage stops part way, as a killed run does.
struct FailsAfter {
    inner: Arc<dyn Embedder>,
    ok: std::sync::atomic::AtomicUsize,
}

impl Embedder for FailsAfter {
    fn model_id(&self) -> &str {
        self.inner.model_id()
    }
    fn dimension(&self) -> usize {
        self.inner.dimension()
    }
    fn max_tokens(&self) -> usize {
        self.inner.max_tokens()
    }
    fn embed(
        &self,
        texts: &[&str],
        kind: pond_embed::TextKind,
    ) -> Result<Vec<Vec<f32>>, pond_embed::EmbedError> {
        use std::sync::atomic::Ordering;
        if self.ok.fetch_sub(1, Ordering::SeqCst) == 0 {
            self.ok.store(0, Ordering::SeqCst);
            return Err(pond_embed::EmbedError::Inference {
                model: self.model_id().to_owned(),
                detail: "stopped by the test".to_owned(),
            });
        }
        self.inner.embed(texts, kind)
    }
}

/// What a scan of every row says: messages per model, and messages without a vector.
async fn models_by_scan(store: &SessionStore) -> (BTreeMap<String, u64>, u64) {
    let ds = store
        .substrate()
        .dataset(&pond_store::sessions::schema::MESSAGES)
        .await
        .unwrap()
        .unwrap();
    let mut scan = ds.scan();
    scan.project(&["embedding_model"]).unwrap();
    scan.use_scalar_index(false);
    let batches: Vec<_> = futures::TryStreamExt::try_collect(scan.try_into_stream().await.unwrap())
        .await
        .unwrap();
    let (mut models, mut nulls) = (BTreeMap::new(), 0);
    for b in &batches {
        let col = b.column(0);
        for i in 0..b.num_rows() {
            match arrow_array::Array::is_null(col.as_ref(), i) {
                true => nulls += 1,
                false => {
                    let m = col
                        .as_any()
                        .downcast_ref::<arrow_array::StringArray>()
                        .unwrap();
                    *models.entry(m.value(i).to_owned()).or_insert(0) += 1;
                }
            }
        }
    }
    (models, nulls)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupted_embed_over_indexed_fragments_is_counted_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let settings = VectorSettings {
        index_threshold: 100,
        ..VectorSettings::default()
    };
    let store = hybrid_store(dir.path(), 36, settings).await;
    // A second sync: a second fragment, which the interrupted run below never reaches.
    let corpus = Corpus::new(&dir.path().join("src"));
    for s in 36..48 {
        let texts: Vec<String> = (0..10).map(|m| hybrid_text(s, m)).collect();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        corpus.session(
            "/work/h9",
            &format!("h{s:03}"),
            None,
            "2026-04-02T10:00:00Z",
            &refs,
        );
    }
    corpus.sync(&store).await;
    // The scalar indexes exist before the first vector (a store synced before embeddings).
    store.update_indexes().await.unwrap();
    let models = dir.path().join("models");
    let a = tiny_model(&models, "tiny-a", 1);
    let stopping: Arc<dyn Embedder> = Arc::new(FailsAfter {
        inner: a.clone(),
        ok: std::sync::atomic::AtomicUsize::new(9),
    });
    let opts = EmbedOptions {
        batch: 16,
        chunk: 16,
        ..EmbedOptions::default()
    };
    assert!(embed(&store, stopping, opts, &mut |_, _| {}).await.is_err());
    let (by_scan, nulls) = models_by_scan(&store).await;
    assert_eq!(by_scan.get("tiny-a"), Some(&144), "{by_scan:?}");
    assert_eq!(store.embedding_models().await.unwrap(), by_scan);
    // update-indexes over the patched fragment: every count still equals the column's.
    store.update_indexes().await.unwrap();
    assert_eq!(
        store.embedding_models().await.unwrap(),
        by_scan,
        "after update-indexes"
    );
    assert_eq!(store.embedded_under("tiny-a").await.unwrap(), 144);
    let null = Some("embedding_model IS NULL");
    let messages = &pond_store::sessions::schema::MESSAGES;
    assert_eq!(
        store.substrate().count(messages, null).await.unwrap(),
        nulls
    );
    // The next run walks exactly the rest.
    let rest = embed(&store, a.clone(), opts, &mut |_, _| {})
        .await
        .unwrap();
    assert_eq!((rest.backlog, rest.embedded), (336, 336), "{rest:?}");
    let (by_scan, nulls) = models_by_scan(&store).await;
    assert_eq!((by_scan.get("tiny-a"), nulls), (Some(&480), 0));
    store.update_indexes().await.unwrap();
    assert_eq!(store.embedding_models().await.unwrap(), by_scan);
    assert_eq!(store.substrate().count(messages, null).await.unwrap(), 0);
    // Another model over every row: no row is counted under the one it replaced.
    let b = tiny_model(&models, "tiny-b", 2);
    let force = EmbedOptions {
        force: true,
        ..opts
    };
    embed(&store, b, force, &mut |_, _| {}).await.unwrap();
    store.update_indexes().await.unwrap();
    assert_eq!(store.embedded_under("tiny-a").await.unwrap(), 0);
    assert_eq!(store.embedded_under("tiny-b").await.unwrap(), 480);
    assert_eq!(
        store.embedding_models().await.unwrap(),
        BTreeMap::from([("tiny-b".to_owned(), 480)])
    );
}

/// A filter's mask is kept per version of the table (`MaskMemo`): after a sync adds rows to a
/// project and the index is folded, the same filter admits them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_filters_mask_is_evaluated_again_for_a_new_version() {
    use pond_store::sessions::schema::SEARCH_TEXT_INDEX;
    use pond_store::substrate::FullTextRequest;
    let dir = tempfile::tempdir().unwrap();
    let corpus = Corpus::new(&dir.path().join("src"));
    let t = "2026-01-05T10:00:00Z";
    corpus.session("/work/alpha", "s1", None, t, &["a zebra crossing", "noted"]);
    corpus.session("/work/beta", "s2", None, t, &["a zebra elsewhere", "noted"]);
    let store = SessionStore::open(dir.path().join("store").to_str().unwrap());
    corpus.sync(&store).await;
    store.update_indexes().await.unwrap();
    let request = FullTextRequest {
        column: SEARCH_TEXT_INDEX.column,
        index: SEARCH_TEXT_INDEX.name,
        terms: vec!["zeb".to_owned()],
        filter: Some("project = '/work/alpha'".to_owned()),
        limit: 100,
        projection: vec![("_score".to_owned(), "_score".to_owned())],
    };
    let found = |batch: arrow_array::RecordBatch| batch.num_rows();
    let view = messages_view(&store).await;
    let first = view.index_search(&request).await.unwrap();
    assert_eq!(first.map(found), Some(1), "the index answers: s1's message");
    // Asked again at the same version: the kept mask, the same answer.
    let again = messages_view(&store).await.index_search(&request).await;
    assert_eq!(again.unwrap().map(found), Some(1));
    corpus.session("/work/alpha", "s3", None, t, &["another zebra", "noted"]);
    corpus.sync(&store).await;
    // Built again whole, the index is one segment over every row, so the index alone answers
    // (a fold would add a second segment, which the plan answers, with no mask kept).
    {
        use lance::index::DatasetIndexExt;
        let table = dir.path().join("store/messages.lance");
        let mut ds = Dataset::open(table.to_str().unwrap()).await.unwrap();
        ds.drop_index(SEARCH_TEXT_INDEX.name).await.unwrap();
    }
    store.update_indexes().await.unwrap();
    let view = messages_view(&store).await;
    let second = view.index_search(&request).await.unwrap();
    assert_eq!(second.map(found), Some(2), "s1's and s3's messages");
}

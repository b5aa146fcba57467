//! Runs many searches through the `pond_search` handler in one process, against a store held
//! open as the server holds it: the search benchmarks' driver (scripts/search-benchmarks/).
//!
//! usage: search_bench STORE QUERIES.jsonl [--runs N] [--out RUN.jsonl] [--limit N]
//!                     [--model NAME --models DIR] [--arms ARMS.jsonl]
//!                     [--exact-vectors] [--nprobes N] [--index-cache MIB]
//!
//! `--model` searches as a pond with `[embedding] model = NAME` does (hybrid where messages are
//! embedded under it). `--arms` also runs each query explained and writes what each arm of a
//! hybrid search returned, `{"qid", "mode", "arms": {"full_text": [[session, raw score], ...],
//! "vector": [...]}}`, the input of `scripts/search-benchmarks/simulate_fusion.py`.
//! `--exact-vectors` makes the vector arm compare every vector even where the IVF_PQ exists
//! (the reference `scripts/search-benchmarks/vector_recall.py` measures the index against);
//! `--nprobes` overrides the partitions probed (default 20, as `[search] nprobes`).
//! `--index-cache` sizes Lance's index cache as `pond serve --index-cache` does (the same default).
//! `--runs 0` runs the untimed pass only.
//!
//! Each line of QUERIES is `{"qid"?: ..., "query" | "question": ..., "project"?: ..., "filter"?: bool}`;
//! a query is filtered by its project when `filter` is true (or absent and a project is given).
//! Every query runs once untimed (warm-up), then `--runs` timed passes; per-query latency
//! (microseconds, wall) goes to stderr as p50/p95/p99 over all timed passes, split by filtered and
//! unfiltered. `--out` writes the last pass's results as `{"qid", "sessions": [ids, best first]}`,
//! the run format `../shared/searchbench/score_run.py` reads.

/// jemalloc, as `pond serve`, `pond search` and `pond get` allocate (cli/src/alloc.rs; under
/// mimalloc these searches were slower and several times larger, under glibc's allocator a loaded
/// server answered fewer: docs/benchmarks.md, "Search latency at 1M messages", "HTTP load").
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

use pond_server::Pond;
use pond_server::search::{SearchRequest, pond_search, pond_search_explained};
use std::io::{BufRead, Write};
use std::time::Instant;

struct Query {
    qid: String,
    text: String,
    project: Option<String>,
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 {
        eprintln!(
            "usage: search_bench STORE QUERIES.jsonl [--runs N] [--out RUN.jsonl] [--limit N]"
        );
        std::process::exit(2);
    }
    let flag = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let runs: usize = flag("--runs").map_or(1, |v| v.parse().expect("--runs N"));
    let limit: u32 = flag("--limit").map_or(10, |v| v.parse().expect("--limit N"));
    let out = flag("--out");
    let arms_out = flag("--arms");
    let queries: Vec<Query> =
        std::io::BufReader::new(std::fs::File::open(&args[2]).expect("queries"))
            .lines()
            .enumerate()
            .map(|(i, l)| {
                let v: serde_json::Value = serde_json::from_str(&l.expect("a line")).expect("JSON");
                let text = v["query"]
                    .as_str()
                    .or(v["question"].as_str())
                    .expect("query")
                    .to_owned();
                let project = v["project"].as_str().map(str::to_owned);
                let filtered = v["filter"].as_bool().unwrap_or(project.is_some());
                Query {
                    qid: v["qid"]
                        .as_str()
                        .map_or_else(|| format!("q{i:04}"), str::to_owned),
                    text,
                    project: project.filter(|_| filtered),
                }
            })
            .collect();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    // The index cache `pond serve` keeps unless told otherwise (`--index-cache MIB`).
    let cache_mib: usize = flag("--index-cache")
        .map_or(pond_store::substrate::SERVE_INDEX_CACHE_BYTES >> 20, |v| {
            v.parse().expect("--index-cache MIB")
        });
    pond_store::substrate::set_index_cache(cache_mib << 20);
    let mut pond = Pond::personal(&args[1]);
    if let Some(model) = flag("--model") {
        let dir = flag("--models").expect("--models DIR with --model");
        pond = pond.with_embedding(pond_server::embedding::EmbeddingModel::new(model, dir));
    }
    let mut settings = pond_store::sessions::VectorSettings::default();
    settings.exact = args.iter().any(|a| a == "--exact-vectors");
    if let Some(n) = flag("--nprobes") {
        settings.nprobes = n.parse().expect("--nprobes N");
    }
    pond = pond.with_vector_settings(settings);
    let request = |q: &Query| {
        let mut r = SearchRequest::new(q.text.clone());
        r.project = q.project.clone();
        r.limit = Some(limit);
        r
    };
    let mut last = Vec::new();
    let mut times: Vec<(bool, u128)> = Vec::new();
    for pass in 0..=runs {
        last.clear();
        for q in &queries {
            let started = Instant::now();
            let response = rt.block_on(pond_search(&pond, request(q)));
            let took = started.elapsed().as_micros();
            let sessions: Vec<String> = match response {
                Ok(r) => r.results.into_iter().map(|s| s.session_id).collect(),
                Err(e) => {
                    eprintln!("{}: {e}", q.qid);
                    Vec::new()
                }
            };
            if pass > 0 {
                times.push((q.project.is_some(), took));
            }
            last.push(serde_json::json!({"qid": q.qid, "sessions": sessions}));
        }
    }
    let report = |name: &str, mut t: Vec<u128>| {
        if t.is_empty() {
            return;
        }
        t.sort_unstable();
        let p = |x: f64| t[((t.len() as f64 * x) as usize).min(t.len() - 1)] as f64 / 1000.0;
        eprintln!(
            "{name}: n={} p50 {:.1} ms, p95 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
            t.len(),
            p(0.50),
            p(0.95),
            p(0.99),
            *t.last().unwrap() as f64 / 1000.0
        );
    };
    report("all", times.iter().map(|t| t.1).collect());
    report(
        "with project filter",
        times.iter().filter(|t| t.0).map(|t| t.1).collect(),
    );
    report(
        "no filter",
        times.iter().filter(|t| !t.0).map(|t| t.1).collect(),
    );
    if let Some(path) = arms_out {
        let mut f = std::io::BufWriter::new(std::fs::File::create(path).expect("--arms"));
        for q in &queries {
            let (response, trace) = rt
                .block_on(pond_search_explained(&pond, request(q)))
                .expect("an explained search");
            let arms: serde_json::Map<String, serde_json::Value> = trace
                .arms
                .iter()
                .map(|a| (a.name.to_owned(), serde_json::json!(a.sessions)))
                .collect();
            let line = serde_json::json!({"qid": q.qid, "mode": response.mode, "arms": arms});
            writeln!(f, "{line}").unwrap();
        }
    }
    if let Some(path) = out {
        let mut f = std::io::BufWriter::new(std::fs::File::create(path).expect("--out"));
        for line in last {
            writeln!(f, "{line}").unwrap();
        }
    }
}

//! Search over the stored messages (spec 8): the BM25 retriever over `search_text` and the
//! vector retriever over `vector`, each with its filters pushed down as prefilters and its hits
//! grouped into one result per session root; when the query comes with a vector and messages
//! are embedded under its model, the two are fused ([`fusion`]).
//!
//! A search runs in two steps ([`query`] says why): Lance's inverted index finds the candidates
//! that hold the query's rarest grams, among the rows the filters admit; each candidate is then
//! scored by BM25 over every gram of the query ([`bm25`]). The scores are Lance's BM25 for the
//! whole query; the candidate pool is what the postings budget bounds.
//!
//! The handler (`pond_search`, in `pond-server`) validates a request and shapes the response;
//! this module finds and ranks. Every Lance call goes through the substrate's read path
//! (lance-chokepoints-read).

pub mod bm25;
pub mod fusion;
pub mod query;

use crate::sessions::schema::{MESSAGES, PARTS, SEARCH_TEXT_INDEX};
use crate::sessions::{SessionStore, rows, sql_quote};
use crate::substrate::{
    FullTextRequest, ReadView, StoreError, TermStats, TextAnalyzer, VectorRequest,
};
use arrow_array::RecordBatch;
use arrow_array::cast::AsArray;
use arrow_array::types::{Float32Type, UInt64Type};
use bm25::{Ranker, ngram_count};
use pond_canonical::{Part, Session};
use query::{AnalyzedQuery, RecallTerm, recall_terms};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// The full-text retriever through Lance's inverted index.
pub const FULL_TEXT: &str = "full_text";
/// The full-text retriever reading every row, before the index exists.
pub const FULL_TEXT_SCAN: &str = "full_text (scan: no index yet)";
/// The vector retriever.
pub const VECTOR: &str = "vector";

/// Sessions each arm of a hybrid search brings to the fusion, at least: more than the `limit`
/// asked for, so a session one arm ranks just below the cut can still win on the other's score.
const MIN_ARM_SESSIONS: usize = 20;

/// The most matches a result carries for its session.
pub const MATCHES_PER_SESSION: usize = 3;

/// How much of a candidate's text the ranking step reads (characters). A longer message is
/// scored on its first this-many characters, with its whole length in the BM25 normalisation.
pub const RANK_CHARS: usize = 64 * 1024;

/// Candidates asked for per result wanted, and the bounds of the pool: enough that `limit`
/// distinct sessions are usually among them. When they are not and the pool came back full,
/// it is asked for again, four times as large, up to [`MAX_POOL`].
const POOL_PER_RESULT: usize = 20;
/// The vector arm's candidates per session wanted, to start with: nearest neighbours of one
/// message cluster in fewer sessions than BM25's candidates do, and each is a read of its
/// vector (docs/benchmarks.md, "Hybrid and full-text at 1M: the arms at once, ...").
const VECTOR_POOL_PER_RESULT: usize = 5;
const MIN_POOL: usize = 100;
/// The largest candidate pool.
pub const MAX_POOL: usize = 4_000;

/// The filters a search applies before it ranks (spec 8, "Filters and ranking").
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filters {
    /// Sessions of exactly this project.
    pub project: Option<String>,
    /// Sessions whose project starts with this.
    pub project_prefix: Option<String>,
    /// This session and the sessions it spawned.
    pub session_id: Option<String>,
    /// Sessions from this harness (`claude-code`, `codex`, ...).
    pub source_agent: Option<String>,
    /// Messages of this role.
    pub role: Option<String>,
    /// Messages at or after this instant (microseconds since the epoch).
    pub since_micros: Option<i64>,
    /// Messages before this instant.
    pub until_micros: Option<i64>,
}

/// What to search for.
#[derive(Debug, Clone)]
pub struct SearchQuery<'a> {
    /// The query text, as typed.
    pub text: &'a str,
    pub filters: Filters,
    /// How many sessions to return.
    pub limit: usize,
    /// Hits scoring below this are not returned.
    pub min_score: Option<f32>,
    /// Also capture Lance's plan of the recall step (`pond search --explain`).
    pub explain: bool,
    /// The query embedded by the configured model: the search is hybrid when messages are
    /// embedded under that model, else full-text.
    pub vector: Option<QueryVector>,
}

/// A query's embedding, and the model that made it.
#[derive(Debug, Clone, PartialEq)]
pub struct QueryVector {
    pub model: String,
    pub values: Vec<f32>,
}

/// How a search ran (spec 8: decided by embedding availability, not asked for).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum SearchMode {
    #[default]
    FullText,
    Hybrid,
}

/// One matching message.
#[derive(Debug, Clone, PartialEq)]
pub struct MessageHit {
    /// The session the message is in (a sub-agent's, for a hit grouped under its root).
    pub session_id: String,
    pub message_id: String,
    pub role: String,
    /// The message's timestamp, RFC 3339 as the source wrote it.
    pub timestamp: String,
    /// BM25 over every gram of the query.
    pub score: f32,
    /// Lance's BM25 over the recall step's grams, by which the message became a candidate.
    pub recall_score: f32,
    /// `search_text`, or its first [`RANK_CHARS`] characters.
    pub text: String,
    /// The characters of the whole `search_text`.
    pub text_chars: u64,
}

/// One result: a root session and its best matches.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionGroup {
    /// The root session (the hit's own session unless it was spawned by a stored one).
    pub session: Session,
    /// The best match's score.
    pub score: f32,
    /// Its best matches, best first, at most [`MATCHES_PER_SESSION`].
    pub hits: Vec<MessageHit>,
}

/// How a search went, for `--explain`.
#[derive(Debug, Clone, Default)]
pub struct SearchTrace {
    /// Distinct grams of the query, each with the rows that hold it.
    pub terms: Vec<(String, u64)>,
    /// Rows with text the statistics cover, and their average length in grams.
    pub documents: u64,
    pub average_length: f64,
    /// The grams the recall step asked Lance for, with their postings.
    pub recall: Vec<RecallTerm>,
    /// The scalar predicate pushed down as a prefilter.
    pub filter: Option<String>,
    /// The candidate pool asked for, and how many came back, per round.
    pub rounds: Vec<(usize, usize)>,
    /// Whether the full-text index exists; without it, every row the filters admit was read.
    pub index_built: bool,
    /// Lance's `analyze_plan` of the last recall query.
    pub plan: Option<String>,
    /// Every returned hit's retriever attribution: (session, message, Lance's recall score,
    /// BM25 over every gram).
    pub hits: Vec<HitTrace>,
    /// A hybrid search's arms, as the fusion saw them (empty for full-text).
    pub arms: Vec<fusion::ArmTrace>,
}

/// Which retriever produced a hit, with its raw scores (`pond search --explain`).
#[derive(Debug, Clone, PartialEq)]
pub struct HitTrace {
    pub session_id: String,
    pub message_id: String,
    /// The retriever: [`FULL_TEXT`], or [`FULL_TEXT_SCAN`] before the index is built (the vector
    /// arm joins them with embeddings).
    pub retriever: &'static str,
    /// Lance's BM25 over the recall step's grams.
    pub recall_score: f32,
    /// The hit's score: BM25 over every gram of the query, or in a hybrid search the fused score.
    pub score: f32,
    /// In a hybrid search, each arm that found the hit with its raw and normalized score.
    pub arms: Vec<fusion::ArmScore>,
}

/// What the vector arm found, and how to read more of it.
struct VectorArm {
    groups: Vec<SessionGroup>,
    /// The table version its candidates were found in.
    view: ReadView,
    /// Each candidate's row in that version.
    rows: HashMap<(String, String), u64>,
    /// The request that found them (for `--explain`).
    request: VectorRequest,
    /// Each pool asked for, and the candidates found.
    rounds: Vec<(usize, usize)>,
}

/// What a search found.
#[derive(Debug, Clone, Default)]
pub struct SearchOutcome {
    /// Sessions in rank order.
    pub groups: Vec<SessionGroup>,
    pub trace: SearchTrace,
    pub mode: SearchMode,
}

impl SessionStore {
    /// Searches the stored messages: see the module documentation.
    pub async fn search(&self, q: &SearchQuery<'_>) -> Result<SearchOutcome, StoreError> {
        if let Some(v) = &q.vector
            && self.embedded_under(&v.model).await? > 0
        {
            return self.hybrid(q, v).await;
        }
        let (groups, mut trace, retriever) = self.full_text(q, q.limit, q.min_score).await?;
        if q.explain {
            trace.hits = groups
                .iter()
                .flat_map(|g| &g.hits)
                .map(|h| HitTrace {
                    session_id: h.session_id.clone(),
                    message_id: h.message_id.clone(),
                    retriever,
                    recall_score: h.recall_score,
                    score: h.score,
                    arms: Vec::new(),
                })
                .collect();
        }
        Ok(SearchOutcome {
            groups,
            trace,
            mode: SearchMode::FullText,
        })
    }

    /// The hybrid search (spec 8): both arms over the same prefilter, each grouped by session
    /// root, then fused.
    async fn hybrid(
        &self,
        q: &SearchQuery<'_>,
        v: &QueryVector,
    ) -> Result<SearchOutcome, StoreError> {
        let arm_limit = q.limit.saturating_mul(2).max(MIN_ARM_SESSIONS);
        // The two arms share nothing but the prefilter: they run at once, each on its own
        // reads (docs/benchmarks.md, "Hybrid and full-text at 1M: the arms at once, ...").
        let filter = self.filter_predicate(&q.filters).await?;
        let (text_arm, vector_arm) = futures::try_join!(
            self.full_text_filtered(q, arm_limit, None, filter.clone()),
            self.vector_arm(v, filter.as_deref(), arm_limit),
        )?;
        let (text_groups, mut trace, text_name) = text_arm;
        let VectorArm {
            groups: vector_groups,
            view,
            rows,
            request,
            rounds,
        } = vector_arm;
        let arms = vec![
            fusion::Arm {
                name: text_name,
                weight: fusion::FULL_TEXT_WEIGHT,
                groups: text_groups,
            },
            fusion::Arm {
                name: VECTOR,
                weight: fusion::VECTOR_WEIGHT,
                groups: vector_groups,
            },
        ];
        let text_read: std::collections::HashSet<(String, String)> = arms[0]
            .groups
            .iter()
            .flat_map(|g| &g.hits)
            .map(|h| (h.session_id.clone(), h.message_id.clone()))
            .collect();
        let (mut groups, mut arms, attributions) = fusion::fuse(arms, q.limit, q.min_score);
        // A hit the full-text arm also found was read whole by it (fusion keeps that one).
        let unread = groups
            .iter_mut()
            .flat_map(|g| &mut g.hits)
            .filter(|h| !text_read.contains(&(h.session_id.clone(), h.message_id.clone())))
            .collect();
        fill_details(
            &view,
            unread,
            |h| {
                rows.get(&(h.session_id.clone(), h.message_id.clone()))
                    .copied()
            },
            true,
        )
        .await?;
        if q.explain {
            arms[0].plan = trace.plan.clone();
            arms[1].plan = Some(
                self.substrate()
                    .analyze_vector_search(&MESSAGES, &request)
                    .await?,
            );
            arms[1].rounds = rounds;
            trace.hits = attributions
                .into_iter()
                .map(|a| HitTrace {
                    retriever: match a.arms.len() {
                        1 => a.arms[0].arm,
                        _ => "full_text+vector",
                    },
                    recall_score: a.arms.first().map_or(0.0, |p| p.raw),
                    score: a.fused,
                    session_id: a.session_id,
                    message_id: a.message_id,
                    arms: a.arms,
                })
                .collect();
        }
        trace.arms = arms;
        Ok(SearchOutcome {
            groups,
            trace,
            mode: SearchMode::Hybrid,
        })
    }

    /// The vector arm: the `limit` sessions nearest the query vector among the messages the
    /// filter admits and the model embedded. It asks the index for [`VECTOR_POOL_PER_RESULT`]
    /// candidates per session wanted and, when they fall in fewer than `limit` sessions and
    /// the pool came back full, asks again four times as many, up to [`MAX_POOL`]: the
    /// sessions kept are then the same as a larger pool's (a session outside the pool is
    /// farther than every session in it), and each candidate asked for is read (its ids, and
    /// its whole vector `refine_factor` times over when the index refines).
    async fn vector_arm(
        &self,
        v: &QueryVector,
        filter: Option<&str>,
        limit: usize,
    ) -> Result<VectorArm, StoreError> {
        let model_clause = format!("embedding_model = {}", sql_quote(&v.model));
        let filter = match filter {
            Some(f) => format!("{model_clause} AND {f}"),
            None => model_clause,
        };
        let settings = self.vector_settings();
        let invalid = |detail| StoreError::Invalid {
            table: MESSAGES.name,
            detail,
        };
        // Embedded messages exist (the caller checked), so the table does.
        let view = self
            .substrate()
            .read_view(&MESSAGES)
            .await?
            .ok_or_else(|| invalid("messages has no version to search".to_owned()))?;
        let mut pool = limit
            .saturating_mul(VECTOR_POOL_PER_RESULT)
            .clamp(MIN_POOL, MAX_POOL);
        let mut rounds = Vec::new();
        loop {
            let request = VectorRequest {
                column: "vector",
                query: v.values.clone(),
                filter: Some(filter.clone()),
                limit: pool,
                // The vector arm ranks by distance alone: a candidate's ids group it, and what
                // a hit shows is read for the hits kept (fill_details).
                projection: plain(&["session_id", "id", "_distance"]),
                nprobes: Some(settings.nprobes),
                refine_factor: Some(settings.refine_factor),
                exact: settings.exact,
            };
            let batches = view.vector_search(&request).await?;
            let recalled = recalled_rows(&batches, "_distance").map_err(invalid)?;
            let mut hits = Vec::with_capacity(recalled.len());
            for b in &batches {
                hits.extend(candidates(b, Columns::Ids).map_err(invalid)?);
            }
            if hits.len() != recalled.len() {
                return Err(invalid(format!(
                    "{} distances and {} candidates in a vector search result",
                    recalled.len(),
                    hits.len()
                )));
            }
            let mut rows: HashMap<(String, String), u64> = HashMap::with_capacity(hits.len());
            for (h, (row, distance)) in hits.iter_mut().zip(&recalled) {
                // Cosine similarity: 1 for the same direction.
                h.score = 1.0 - distance;
                h.recall_score = h.score;
                rows.insert((h.session_id.clone(), h.message_id.clone()), *row);
            }
            let found = hits.len();
            rounds.push((pool, found));
            let groups = self.group(hits, limit).await?;
            if groups.len() >= limit || found < pool || pool >= MAX_POOL {
                return Ok(VectorArm {
                    groups,
                    view,
                    rows,
                    request,
                    rounds,
                });
            }
            pool = (pool * 4).min(MAX_POOL);
        }
    }

    /// The full-text arm: the best `limit` sessions by BM25, with the retriever that ran.
    async fn full_text(
        &self,
        q: &SearchQuery<'_>,
        limit: usize,
        min_score: Option<f32>,
    ) -> Result<(Vec<SessionGroup>, SearchTrace, &'static str), StoreError> {
        let filter = self.filter_predicate(&q.filters).await?;
        self.full_text_filtered(q, limit, min_score, filter).await
    }

    /// [`Self::full_text`] with the filters already made a predicate.
    async fn full_text_filtered(
        &self,
        q: &SearchQuery<'_>,
        limit: usize,
        min_score: Option<f32>,
        filter: Option<String>,
    ) -> Result<(Vec<SessionGroup>, SearchTrace, &'static str), StoreError> {
        let substrate = self.substrate();
        let mut analyzer = TextAnalyzer::for_index(SEARCH_TEXT_INDEX.kind)?;
        let query = AnalyzedQuery::new(&mut analyzer, q.text);
        let stats = substrate
            .term_stats(&MESSAGES, &SEARCH_TEXT_INDEX, &query.terms)
            .await?;
        let df: HashMap<&str, u64> = query
            .terms
            .iter()
            .map(String::as_str)
            .zip(stats.document_frequency.iter().copied())
            .collect();
        let recall = recall_terms(&query, |t| df.get(t).copied().unwrap_or(0));
        let recall_names: Vec<&str> = recall.iter().map(|r| r.window.term.as_str()).collect();
        let ranker = Ranker::new(&analyzer, &query, &stats, &recall_names);
        let mut trace = SearchTrace {
            terms: trace_terms(&query, &stats),
            documents: stats.documents,
            average_length: stats.terms as f64 / stats.documents.max(1) as f64,
            recall: recall.clone(),
            filter: filter.clone(),
            index_built: stats.index_built,
            ..SearchTrace::default()
        };
        if recall.is_empty() {
            // No stored row holds any gram of the query.
            return Ok((Vec::new(), trace, FULL_TEXT));
        }
        if !stats.index_built {
            // Before the first update-indexes, Lance knows no n-gram analysis for the column:
            // every row the filters admit is read and ranked here, the same way.
            let hits = self
                .flat_candidates(&ranker, &mut analyzer, filter.as_deref(), MAX_POOL)
                .await?;
            trace.rounds.push((MAX_POOL, hits.len()));
            let hits = with_min_score(hits, min_score);
            let groups = self.group(hits, limit).await?;
            return Ok((groups, trace, FULL_TEXT_SCAN));
        }
        // The index's answer, the candidates' text and the kept hits' details are read from
        // one version of the table, so the row ids of one step name the rows of the next.
        let Some(view) = substrate.read_view(&MESSAGES).await? else {
            return Ok((Vec::new(), trace, FULL_TEXT));
        };
        let invalid = |detail| StoreError::Invalid {
            table: MESSAGES.name,
            detail,
        };
        let mut pool = (limit.saturating_mul(POOL_PER_RESULT)).clamp(MIN_POOL, MAX_POOL);
        loop {
            // The recall step reads no column: the index answers with row ids and scores. Only
            // what ranking needs is then read for every candidate, and a hit's details only for
            // the hits kept (docs/benchmarks.md, "Search latency at 1M messages: reading fewer
            // columns of fewer rows": every column of every row is a read of its own).
            let request = FullTextRequest {
                column: SEARCH_TEXT_INDEX.column,
                index: SEARCH_TEXT_INDEX.name,
                terms: recall.iter().map(|r| r.window.text.clone()).collect(),
                filter: filter.clone(),
                limit: pool,
                projection: vec![("_score".to_owned(), "_score".to_owned())],
            };
            let recalled = recalled_rows(&view.full_text_search(&request).await?, "_score")
                .map_err(invalid)?;
            let found = recalled.len();
            trace.rounds.push((pool, found));
            let row_ids: Vec<u64> = recalled.iter().map(|r| r.0).collect();
            let batch = view.take_rows(&row_ids, &rank_projection()).await?;
            let hits = candidates(&batch, Columns::Rank).map_err(invalid)?;
            if hits.len() != found {
                return Err(invalid(format!(
                    "{found} rows recalled by the index, {} read",
                    hits.len()
                )));
            }
            let mut ranked: Vec<(MessageHit, u64)> = Vec::with_capacity(found);
            for (mut h, (row, recall_score)) in hits.into_iter().zip(&recalled) {
                h.recall_score = *recall_score;
                h.score = ranker.score(&mut analyzer, &h.text, whole_length(&h)).score;
                if min_score.is_none_or(|min| h.score >= min) {
                    ranked.push((h, *row));
                }
            }
            read_tied_ids(&view, &mut ranked).await?;
            let rows: HashMap<RankKey, u64> = ranked
                .iter()
                .map(|(h, row)| (RankKey::of(h), *row))
                .collect();
            let hits = ranked.into_iter().map(|(h, _)| h).collect();
            let mut groups = self.group(hits, limit).await?;
            if groups.len() >= limit || found < pool || pool >= MAX_POOL {
                let kept = groups.iter_mut().flat_map(|g| &mut g.hits).collect();
                fill_details(&view, kept, |h| rows.get(&RankKey::of(h)).copied(), false).await?;
                if q.explain {
                    trace.plan = Some(
                        substrate
                            .analyze_full_text_search(&MESSAGES, &request)
                            .await?,
                    );
                }
                return Ok((groups, trace, FULL_TEXT));
            }
            pool = (pool * 4).min(MAX_POOL);
        }
    }

    /// Without a full-text index: every row the filter admits is read, and those holding one of
    /// the recall step's grams are candidates, ranked like any others; the best `keep` return.
    async fn flat_candidates(
        &self,
        ranker: &Ranker,
        analyzer: &mut TextAnalyzer,
        filter: Option<&str>,
        keep: usize,
    ) -> Result<Vec<MessageHit>, StoreError> {
        let projection = candidate_projection();
        let filter = match filter {
            Some(f) => format!("search_text IS NOT NULL AND {f}"),
            None => "search_text IS NOT NULL".to_owned(),
        };
        let mut fault = None;
        let mut hits = self
            .substrate()
            .scan_fold(
                &MESSAGES,
                |s| {
                    s.filter(&filter)?;
                    let p: Vec<(&str, &str)> = projection
                        .iter()
                        .map(|(n, e)| (n.as_str(), e.as_str()))
                        .collect();
                    s.project_with_transform(&p)?;
                    Ok(())
                },
                Vec::new,
                |kept: &mut Vec<MessageHit>, batch| {
                    let rows = match candidates(batch, Columns::All) {
                        Ok(rows) => rows,
                        Err(e) => {
                            fault.get_or_insert(e);
                            return;
                        }
                    };
                    for mut h in rows {
                        let scored = ranker.score(analyzer, &h.text, whole_length(&h));
                        if scored.recalled {
                            h.score = scored.score;
                            kept.push(h);
                        }
                    }
                    if kept.len() > 2 * keep {
                        best_first(kept);
                        kept.truncate(keep);
                    }
                },
            )
            .await?;
        if let Some(detail) = fault {
            return Err(StoreError::Invalid {
                table: MESSAGES.name,
                detail,
            });
        }
        best_first(&mut hits);
        hits.truncate(keep);
        Ok(hits)
    }

    /// The filters as one SQL predicate over `messages` (None when there are none). Every
    /// column it names has a scalar index (`schema::indexes`), so the prefilter is an index
    /// lookup, not a scan (search-prefilter-pushdown).
    async fn filter_predicate(&self, f: &Filters) -> Result<Option<String>, StoreError> {
        let mut clauses = Vec::new();
        if let Some(p) = &f.project {
            clauses.push(format!("project = {}", sql_quote(p)));
        }
        if let Some(p) = &f.project_prefix {
            clauses.push(format!("starts_with(project, {})", sql_quote(p)));
        }
        if let Some(id) = &f.session_id {
            // The session and the sub-agents it spawned: their hits are its hits.
            let mut ids: Vec<String> = self
                .session_and_children(id)
                .await?
                .into_iter()
                .map(|s| s.id.to_string())
                .collect();
            if !ids.contains(id) {
                ids.push(id.clone());
            }
            ids.sort();
            let list: Vec<String> = ids.iter().map(|i| sql_quote(i)).collect();
            clauses.push(format!("session_id IN ({})", list.join(", ")));
        }
        if let Some(a) = &f.source_agent {
            clauses.push(format!("source_agent = {}", sql_quote(a)));
        }
        if let Some(r) = &f.role {
            clauses.push(format!("role = {}", sql_quote(r)));
        }
        let instant =
            |micros: i64| format!("arrow_cast({micros}, 'Timestamp(Microsecond, Some(\"UTC\"))')");
        if let Some(t) = f.since_micros {
            clauses.push(format!("timestamp >= {}", instant(t)));
        }
        if let Some(t) = f.until_micros {
            clauses.push(format!("timestamp < {}", instant(t)));
        }
        Ok((!clauses.is_empty()).then(|| clauses.join(" AND ")))
    }

    /// Groups ranked hits by session root (spec 8, intra-arm dedup by `session_root`): the best
    /// `limit` groups by their best hit, each with its best [`MATCHES_PER_SESSION`] hits.
    async fn group(
        &self,
        mut hits: Vec<MessageHit>,
        limit: usize,
    ) -> Result<Vec<SessionGroup>, StoreError> {
        best_first(&mut hits);
        let mut ids: Vec<String> = hits.iter().map(|h| h.session_id.clone()).collect();
        ids.sort();
        ids.dedup();
        let mut sessions = self.shared_sessions_by_id(&ids).await?;
        let parents: Vec<String> = sessions
            .values()
            .filter_map(|s| s.parent_session_id.as_ref().map(ToString::to_string))
            .filter(|p| !sessions.contains_key(p))
            .collect();
        sessions.extend(self.shared_sessions_by_id(&parents).await?);
        let root_of = |id: &str| -> Option<&Session> {
            let s = sessions.get(id)?;
            match s
                .parent_session_id
                .as_ref()
                .and_then(|p| sessions.get(p.as_str()))
            {
                Some(parent) => Some(parent.as_ref()),
                None => Some(s.as_ref()),
            }
        };
        let mut groups: Vec<SessionGroup> = Vec::new();
        let mut at: HashMap<String, usize> = HashMap::new();
        for hit in hits {
            // A message whose session row is missing cannot be shown with its session; it is
            // a store fault surfaced by `pond status`, never a reason to drop the others.
            let Some(root) = root_of(&hit.session_id) else {
                continue;
            };
            let root_id = root.id.to_string();
            match at.get(&root_id) {
                Some(&i) => {
                    if groups[i].hits.len() < MATCHES_PER_SESSION {
                        groups[i].hits.push(hit);
                    }
                }
                None => {
                    if groups.len() == limit {
                        continue;
                    }
                    at.insert(root_id, groups.len());
                    groups.push(SessionGroup {
                        session: root.clone(),
                        score: hit.score,
                        hits: vec![hit],
                    });
                }
            }
        }
        Ok(groups)
    }

    /// The stored sessions with these ids, by id, as one version of `sessions` holds them.
    /// What a read at that version found is remembered, so a search, which reads the sessions
    /// of its candidates every time, reads from the table only those no read at this version
    /// asked for (docs/benchmarks.md, "Search CPU at 1M: where a search goes, ...").
    pub async fn sessions_by_id(
        &self,
        ids: &[String],
    ) -> Result<BTreeMap<String, Session>, StoreError> {
        Ok(self
            .shared_sessions_by_id(ids)
            .await?
            .into_iter()
            .map(|(id, s)| (id, Arc::unwrap_or_clone(s)))
            .collect())
    }

    /// [`Self::sessions_by_id`] as the memo holds them: a search reads up to a few hundred
    /// sessions and shows a few, so it copies only those it shows.
    async fn shared_sessions_by_id(
        &self,
        ids: &[String],
    ) -> Result<BTreeMap<String, Arc<Session>>, StoreError> {
        let mut out = BTreeMap::new();
        if ids.is_empty() {
            return Ok(out);
        }
        let Some(view) = self
            .substrate()
            .read_view(&crate::sessions::schema::SESSIONS)
            .await?
        else {
            return Ok(out);
        };
        let version = view.version();
        let mut missing: Vec<&String> = Vec::new();
        {
            let memo = self.session_memo();
            for id in ids {
                match memo.get(version, id) {
                    Some(Some(s)) => {
                        out.insert(id.clone(), Arc::clone(s));
                    }
                    Some(None) => {}
                    None => missing.push(id),
                }
            }
        }
        missing.sort();
        missing.dedup();
        let mut read = BTreeMap::new();
        for chunk in missing.chunks(1_000) {
            let list: Vec<String> = chunk.iter().map(|i| sql_quote(i)).collect();
            let filter = format!("id IN ({})", list.join(", "));
            let batches = view
                .scan(|s| {
                    s.filter(&filter)?;
                    Ok(())
                })
                .await?;
            for b in &batches {
                for s in rows::sessions_from(b).map_err(|detail| StoreError::Invalid {
                    table: "sessions",
                    detail,
                })? {
                    read.insert(s.id.to_string(), Arc::new(s));
                }
            }
        }
        if !missing.is_empty() {
            self.session_memo()
                .remember(version, missing.iter().copied(), &read);
        }
        out.extend(read);
        Ok(out)
    }

    /// The parts of some messages, by (session id, message id), in ordinal order: what a search
    /// hit's `parts_summary` is made from. The payloads are not read.
    pub async fn parts_of(
        &self,
        messages: &[(String, String)],
    ) -> Result<HashMap<(String, String), Vec<Part>>, StoreError> {
        let mut out: HashMap<(String, String), Vec<(i32, Part)>> = HashMap::new();
        if messages.is_empty() {
            return Ok(HashMap::new());
        }
        let mut sessions: Vec<&str> = messages.iter().map(|(s, _)| s.as_str()).collect();
        sessions.sort();
        sessions.dedup();
        let list: Vec<String> = sessions.iter().map(|s| sql_quote(s)).collect();
        let mut message_ids: Vec<&str> = messages.iter().map(|(_, m)| m.as_str()).collect();
        message_ids.sort();
        message_ids.dedup();
        let ids: Vec<String> = message_ids.iter().map(|m| sql_quote(m)).collect();
        // The session index finds the sessions' parts; the message clause keeps the columns
        // of the other messages' parts from being read.
        let filter = format!(
            "session_id IN ({}) AND message_id IN ({})",
            list.join(", "),
            ids.join(", ")
        );
        let wanted: std::collections::HashSet<&(String, String)> = messages.iter().collect();
        let columns = [
            "session_id",
            "message_id",
            "id",
            "ordinal",
            "type",
            "provenance",
            "variant_data",
            "options",
        ];
        let session_filter = format!("session_id IN ({})", list.join(", "));
        let batches = match self
            .parts_by_row_id(&message_ids, &session_filter, messages, &columns)
            .await?
        {
            Some(batches) => batches,
            None => {
                self.substrate()
                    .scan(&PARTS, |s| {
                        s.filter(&filter)?;
                        s.project(&columns)?;
                        Ok(())
                    })
                    .await?
            }
        };
        for b in &batches {
            for p in rows::part_rows(b).map_err(|detail| StoreError::Invalid {
                table: "parts",
                detail,
            })? {
                let key = (p.session_id.clone(), p.message_id.clone());
                if !wanted.contains(&key) {
                    continue;
                }
                let part: Part = serde_json::from_value(serde_json::Value::Object(p.json))
                    .map_err(|e| StoreError::Invalid {
                        table: "parts",
                        detail: format!("stored part of {}/{}: {e}", key.0, key.1),
                    })?;
                out.entry(key).or_default().push((p.ordinal, part));
            }
        }
        Ok(out
            .into_iter()
            .map(|(k, mut v)| {
                v.sort_by_key(|(o, _)| *o);
                (k, v.into_iter().map(|(_, p)| p).collect())
            })
            .collect())
    }
}

impl SessionStore {
    /// [`Self::parts_of`]'s read without a query plan: the message index alone names the rows
    /// of the messages' parts (`ReadView::index_rows_equal_to`; a message id another session
    /// also uses brings that session's parts too, which the caller leaves out), read by row id with
    /// `columns`. Where that index is not built yet, the session index names the rows of the
    /// sessions' parts, their message ids are read by row id, and `columns` only for the parts
    /// of the messages asked for. A scan with the same filter builds and runs a query plan per
    /// search (docs/benchmarks.md, "Search CPU at 1M: filters without a query plan"). `None`
    /// where neither index answers alone (rows written since they were built), for the scan
    /// to read.
    async fn parts_by_row_id(
        &self,
        message_ids: &[&str],
        session_filter: &str,
        messages: &[(String, String)],
        columns: &[&str],
    ) -> Result<Option<Vec<RecordBatch>>, StoreError> {
        let Some(view) = self.substrate().read_view(&PARTS).await? else {
            return Ok(Some(Vec::new()));
        };
        let invalid = |detail: String| StoreError::Invalid {
            table: PARTS.name,
            detail,
        };
        let projection = plain(columns);
        if let Some(rows) = view.index_rows_equal_to("message_id", message_ids).await? {
            if rows.is_empty() {
                return Ok(Some(Vec::new()));
            }
            let batch = view
                .take_every_row(&rows, &projection, "the message index")
                .await?;
            return Ok(Some(vec![batch]));
        }
        let Some(rows) = view.index_rows(session_filter).await? else {
            return Ok(None);
        };
        if rows.is_empty() {
            return Ok(Some(Vec::new()));
        }
        let keys = view
            .take_every_row(
                &rows,
                &plain(&["session_id", "message_id"]),
                "the session index",
            )
            .await?;
        let key = |name: &str| {
            keys.column_by_name(name)
                .and_then(|c| c.as_string_opt::<i32>())
                .ok_or_else(|| invalid(format!("{name} is missing or not a string column")))
        };
        let (sessions, ids) = (key("session_id")?, key("message_id")?);
        let wanted: std::collections::HashSet<(&str, &str)> = messages
            .iter()
            .map(|(s, m)| (s.as_str(), m.as_str()))
            .collect();
        let kept: Vec<u64> = (0..keys.num_rows())
            .filter(|&i| wanted.contains(&(sessions.value(i), ids.value(i))))
            .map(|i| rows[i])
            .collect();
        if kept.is_empty() {
            return Ok(Some(Vec::new()));
        }
        Ok(Some(vec![
            view.take_every_row(&kept, &projection, "the session index")
                .await?,
        ]))
    }
}

fn trace_terms(query: &AnalyzedQuery, stats: &TermStats) -> Vec<(String, u64)> {
    query
        .terms
        .iter()
        .cloned()
        .zip(stats.document_frequency.iter().copied())
        .collect()
}

/// The columns ranking reads of every candidate: its session (grouping) and the text
/// ([`candidates`] keeps its first [`RANK_CHARS`] characters and its whole length). Its id
/// only orders ties: [`read_tied_ids`] reads it for those, [`fill_details`] for the hits kept
/// (`id` is stored in mini-blocks, so each row taken of it decodes a whole block:
/// docs/benchmarks.md, "HTTP load on `/v1/search`"). Plain columns: Lance reads them without
/// planning an expression per read.
fn rank_projection() -> Vec<(String, String)> {
    plain(&["session_id", "search_text"])
}

/// The columns a hit shows beyond those ranking read.
const DETAIL_COLUMNS: [&str; 2] = ["role", "timestamp_text"];

/// A projection of these columns as they are stored (name and expression alike).
fn plain(columns: &[&str]) -> Vec<(String, String)> {
    columns
        .iter()
        .map(|c| (c.to_string(), c.to_string()))
        .collect()
}

/// Every column a candidate is read with, when all are read at once (a scan, the vector arm).
fn candidate_projection() -> Vec<(String, String)> {
    let mut columns = rank_projection();
    columns.extend(plain(&["id"]));
    columns.extend(plain(&DETAIL_COLUMNS));
    columns
}

/// A ranked candidate as [`best_first`] tells it from the others: its score, session and
/// message id. The id is left empty where [`read_tied_ids`] did not need it; score and session
/// then tell the candidate apart on their own.
#[derive(Debug, PartialEq, Eq, Hash)]
struct RankKey(u32, String, String);

impl RankKey {
    fn of(h: &MessageHit) -> Self {
        Self(
            h.score.to_bits(),
            h.session_id.clone(),
            h.message_id.clone(),
        )
    }
}

/// Reads the message ids the ranking's order depends on: [`best_first`] orders candidates
/// with the same score in the same session by message id, and no other candidate's place
/// depends on its id. The ranking is then the one reading every candidate's id gives.
async fn read_tied_ids(
    view: &ReadView,
    ranked: &mut [(MessageHit, u64)],
) -> Result<(), StoreError> {
    let mut order: Vec<usize> = (0..ranked.len()).collect();
    let key = |i: usize| (ranked[i].0.score.to_bits(), ranked[i].0.session_id.as_str());
    order.sort_by(|&a, &b| key(a).cmp(&key(b)));
    let mut tied: Vec<usize> = Vec::new();
    for run in order.chunk_by(|&a, &b| key(a) == key(b)) {
        if run.len() > 1 {
            tied.extend_from_slice(run);
        }
    }
    if tied.is_empty() {
        return Ok(());
    }
    let rows: Vec<u64> = tied.iter().map(|&i| ranked[i].1).collect();
    let batch = view
        .take_every_row(&rows, &plain(&["id"]), "the tied candidates")
        .await?;
    let read = candidates(&batch, Columns::MessageId).map_err(|detail| StoreError::Invalid {
        table: MESSAGES.name,
        detail,
    })?;
    for (i, r) in tied.into_iter().zip(read) {
        ranked[i].0.message_id = r.message_id;
    }
    Ok(())
}

/// The row id and Lance's `score` column (`_score` of the inverted index, `_distance` of a
/// vector search) of each row a query returned, in its order.
fn recalled_rows(batches: &[RecordBatch], score: &str) -> Result<Vec<(u64, f32)>, String> {
    let mut out = Vec::new();
    for b in batches {
        let rows = b
            .column_by_name("_rowid")
            .and_then(|c| c.as_primitive_opt::<UInt64Type>())
            .ok_or("_rowid missing from a search result")?;
        let scores = b
            .column_by_name(score)
            .and_then(|c| c.as_primitive_opt::<Float32Type>())
            .ok_or_else(|| format!("{score} missing from a search result"))?;
        out.extend(
            rows.values()
                .iter()
                .copied()
                .zip(scores.values().iter().copied()),
        );
    }
    Ok(out)
}

/// Reads what a hit shows and its candidate was not read with, for the hits kept only, by the
/// row ids their candidates had (`row_of`): the role and timestamp, the message id where the
/// ranking did not read it, and with `with_text` the text too (the vector arm ranks without it).
async fn fill_details(
    view: &ReadView,
    mut hits: Vec<&mut MessageHit>,
    row_of: impl Fn(&MessageHit) -> Option<u64>,
    with_text: bool,
) -> Result<(), StoreError> {
    let invalid = |detail| StoreError::Invalid {
        table: MESSAGES.name,
        detail,
    };
    let mut ids = Vec::with_capacity(hits.len());
    for h in &hits {
        ids.push(row_of(h).ok_or_else(|| {
            invalid(format!(
                "hit {}/{} has no row id",
                h.session_id, h.message_id
            ))
        })?);
    }
    if ids.is_empty() {
        return Ok(());
    }
    let with_id = hits.iter().any(|h| h.message_id.is_empty());
    let mut projection = plain(&DETAIL_COLUMNS);
    if with_id {
        projection.extend(plain(&["id"]));
    }
    if with_text {
        projection.extend(plain(&["search_text"]));
    }
    let batch = view
        .take_every_row(&ids, &projection, "the hits kept")
        .await?;
    let read = candidates(&batch, Columns::Details { with_text, with_id }).map_err(invalid)?;
    for (h, r) in hits.iter_mut().zip(read) {
        h.role = r.role;
        h.timestamp = r.timestamp;
        if h.message_id.is_empty() {
            h.message_id = r.message_id;
        }
        if with_text {
            h.text = r.text;
            h.text_chars = r.text_chars;
        }
    }
    Ok(())
}

/// The whole text's length in grams, when the candidate's text is only its first characters.
fn whole_length(h: &MessageHit) -> Option<u64> {
    (h.text_chars > h.text.chars().count() as u64).then(|| ngram_count(h.text_chars, 3, 5))
}

/// Best score first; ties in (session, message) order, so a ranking is reproducible.
fn best_first(hits: &mut [MessageHit]) {
    hits.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then_with(|| a.session_id.cmp(&b.session_id))
            .then_with(|| a.message_id.cmp(&b.message_id))
    });
}

fn with_min_score(mut hits: Vec<MessageHit>, min: Option<f32>) -> Vec<MessageHit> {
    if let Some(min) = min {
        hits.retain(|h| h.score >= min);
    }
    hits
}

/// Which columns a batch of candidates was read with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Columns {
    /// [`candidate_projection`]: everything.
    All,
    /// [`rank_projection`]: a hit's message id, role and timestamp are left empty for
    /// [`read_tied_ids`] and [`fill_details`].
    Rank,
    /// `session_id` and `id` only (the vector arm): the rest is left empty for [`fill_details`].
    Ids,
    /// `id` only ([`read_tied_ids`]).
    MessageId,
    /// What [`fill_details`] reads: the role and timestamp, the message id `with_id` and the
    /// text `with_text`; the session id is left empty.
    Details { with_text: bool, with_id: bool },
}

/// The candidates of a batch read with `columns`; a column not read is left empty.
fn candidates(b: &RecordBatch, columns: Columns) -> Result<Vec<MessageHit>, String> {
    let col = |name: &str| {
        b.column_by_name(name)
            .ok_or_else(|| format!("column {name} missing from a search result"))
    };
    let (session, id, details, text) = match columns {
        Columns::All => (true, true, true, true),
        Columns::Rank => (true, false, false, true),
        Columns::Ids => (true, true, false, false),
        Columns::MessageId => (false, true, false, false),
        Columns::Details { with_text, with_id } => (false, with_id, true, with_text),
    };
    let read = |name: &str, wanted: bool, i: usize| -> Result<String, String> {
        if !wanted {
            return Ok(String::new());
        }
        Ok(rows::string_at(col(name)?.as_ref(), i).unwrap_or_default())
    };
    let scores = match b.column_by_name("_score") {
        Some(c) => Some(
            c.as_primitive_opt::<Float32Type>()
                .ok_or("_score is not Float32")?,
        ),
        None => None,
    };
    let texts = if text {
        Some(col("search_text")?)
    } else {
        None
    };
    let mut out = Vec::with_capacity(b.num_rows());
    for i in 0..b.num_rows() {
        // The text to its first RANK_CHARS characters, and its whole length in characters.
        let (text, text_chars) = match texts.and_then(|t| crate::substrate::str_at(t.as_ref(), i)) {
            Some(whole) => {
                let chars = whole.chars().count();
                let kept = if chars > RANK_CHARS {
                    let end = whole
                        .char_indices()
                        .nth(RANK_CHARS)
                        .map_or(whole.len(), |c| c.0);
                    &whole[..end]
                } else {
                    whole
                };
                (kept.to_owned(), chars as u64)
            }
            None => (String::new(), 0),
        };
        out.push(MessageHit {
            session_id: read("session_id", session, i)?,
            message_id: read("id", id, i)?,
            role: read("role", details, i)?,
            timestamp: read("timestamp_text", details, i)?,
            score: 0.0,
            recall_score: scores.map_or(0.0, |s| s.value(i)),
            text,
            text_chars,
        });
    }
    Ok(out)
}

//! The read path's full-text half (lance-chokepoints-read): BM25 queries against an inverted
//! index with their scalar filters pushed down as a prefilter (search-prefilter-pushdown), the
//! corpus statistics of a set of terms, and the analysis that cuts text into an index's terms.
//!
//! Nothing here knows what the rows are; a consumer names the table, the index and the terms.

use super::grams::TermCounter;
use super::retry::Retry;
use super::{IndexKind, IndexSpec, StoreError, Substrate, TableSpec};
use arrow_array::{Array, RecordBatch};
use lance::Dataset;
use lance::dataset::ProjectionRequest;
use lance::dataset::scanner::RowAddrMask;
use lance::dataset::scanner::Scanner;
use lance::index::prefilter::FilterLoader;
use lance::index::{DatasetIndexExt, DatasetIndexInternalExt};
use lance_index::metrics::NoOpMetricsCollector;
use lance_index::scalar::FullTextSearchQuery;
use lance_index::scalar::inverted::InvertedIndex;
use lance_index::scalar::inverted::query::{BooleanQuery, FtsQuery, MatchQuery, Occur};
use lance_index::scalar::inverted::tokenizer::document_tokenizer::LanceTokenizer;
use lance_tokenizer::TokenStream;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// Cuts text into the terms of an inverted index exactly as the index cut its documents: the
/// same Lance tokenizer, built from the same parameters ([`IndexKind::inverted_params`]).
pub struct TextAnalyzer {
    tokenizer: Box<dyn LanceTokenizer>,
    /// The window lengths, for an n-gram analysis (which [`TermCounter`] counts from bytes).
    ngram: Option<(usize, usize)>,
}

impl TextAnalyzer {
    /// The analyzer of an index of `kind` (only inverted indexes have one).
    pub fn for_index(kind: IndexKind) -> Result<Self, StoreError> {
        let invalid = |detail: String| StoreError::Invalid {
            table: "analyzer",
            detail,
        };
        let params = kind
            .inverted_params()
            .ok_or_else(|| invalid(format!("a {kind:?} index has no text analysis")))?;
        let tokenizer = params.build().map_err(|e| invalid(e.to_string()))?;
        let ngram = match kind {
            IndexKind::Ngram { min, max } => Some((min as usize, max as usize)),
            _ => None,
        };
        Ok(Self { tokenizer, ngram })
    }

    /// What counts `terms` in documents as this analysis cuts them (a document's BM25 term
    /// frequencies and length), without making every term of the document.
    pub fn term_counter(&self, terms: &[String]) -> TermCounter {
        TermCounter::new(terms, self.ngram)
    }

    /// Adds the occurrences of each of `counter`'s terms among `text`'s terms to `freq` (in the
    /// order the counter's terms were given) and returns how many terms `text` has.
    pub fn count_terms(&mut self, counter: &TermCounter, text: &str, freq: &mut [u32]) -> u64 {
        counter.count(self, text, freq)
    }

    /// [`Self::document_terms`] with each term's byte range in `text`.
    pub(crate) fn document_terms_at(
        &mut self,
        text: &str,
        mut each: impl FnMut(&str, usize, usize),
    ) {
        let mut stream = self.tokenizer.token_stream_for_doc(text);
        while stream.advance() {
            let t = stream.token();
            each(&t.text, t.offset_from, t.offset_to);
        }
    }

    /// Every term of a document, in order, repeats included (a term's count in the document is
    /// its BM25 term frequency; their number is the document's length).
    pub fn document_terms(&mut self, text: &str, mut each: impl FnMut(&str)) {
        let mut stream = self.tokenizer.token_stream_for_doc(text);
        while stream.advance() {
            each(&stream.token().text);
        }
    }

    /// The terms Lance searches for when given `text` as a query, in order, repeats included.
    pub fn query_terms(&mut self, text: &str) -> Vec<String> {
        let mut out = Vec::new();
        let mut stream = self.tokenizer.token_stream_for_search(text);
        while stream.advance() {
            out.push(stream.token().text.clone());
        }
        out
    }
}

/// BM25 corpus statistics of some terms: what Lance's scorer reads (spec 8).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TermStats {
    /// Documents in the corpus: rows whose text has at least one term.
    pub documents: u64,
    /// Of those, how many the index's segments cover (the rest were counted by a flat scan).
    pub indexed_documents: u64,
    /// Whether the index exists at all. Without it Lance cannot search the column as the index
    /// would (it knows no tokenizer for it), and a consumer must scan.
    pub index_built: bool,
    /// Terms in all of them together (the average document length is `terms / documents`).
    pub terms: u64,
    /// Per requested term, the documents that contain it.
    pub document_frequency: Vec<u64>,
}

/// A BM25 query of an inverted index: documents matching any of `terms` (each scored as BM25
/// scores it), among the rows `filter` admits, best `limit` first.
#[derive(Debug, Clone)]
pub struct FullTextRequest {
    /// The indexed column, and the name of its inverted index.
    pub column: &'static str,
    pub index: &'static str,
    /// The query's terms; each is analysed by the index's tokenizer and should be exactly one
    /// term of the index (a consumer picks them; see [`TextAnalyzer`]).
    pub terms: Vec<String>,
    /// A scalar predicate (SQL) over the table's columns, applied before ranking.
    pub filter: Option<String>,
    /// How many of the best rows to return.
    pub limit: usize,
    /// The output columns, as (name, SQL expression over the table's columns).
    pub projection: Vec<(String, String)>,
}

impl FullTextRequest {
    fn query(&self) -> FullTextSearchQuery {
        let clauses = self.terms.iter().map(|t| {
            let term = MatchQuery::new(t.clone()).with_column(Some(self.column.to_owned()));
            (Occur::Should, FtsQuery::Match(term))
        });
        FullTextSearchQuery::new_query(FtsQuery::Boolean(BooleanQuery::new(clauses)))
            .limit(Some(self.limit as i64))
    }

    /// search-prefilter-pushdown: the filter is a prefilter, evaluated through the table's
    /// scalar indexes before the BM25 ranking, so `limit` rows come back whenever `limit` rows
    /// match; a post-filter would rank first and silently return fewer.
    fn configure(&self, scanner: &mut Scanner) -> lance::Result<()> {
        scanner.full_text_search(self.query())?;
        if let Some(filter) = &self.filter {
            scanner.filter(filter)?;
            scanner.prefilter(true);
        }
        let projection: Vec<(&str, &str)> = self
            .projection
            .iter()
            .map(|(n, e)| (n.as_str(), e.as_str()))
            .collect();
        scanner.project_with_transform(&projection)?;
        scanner.with_row_id();
        scanner.limit(Some(self.limit as i64), None)?;
        Ok(())
    }
}

/// The single-index searches of a scalar-index expression (its leaves).
fn index_leaves(
    expr: &lance_index::scalar::expression::ScalarIndexExpr,
) -> Vec<&lance_index::scalar::expression::ScalarIndexExpr> {
    use lance_index::scalar::expression::ScalarIndexExpr;
    let mut leaves = Vec::new();
    let mut stack = vec![expr];
    while let Some(e) = stack.pop() {
        match e {
            ScalarIndexExpr::Not(inner) => stack.push(inner),
            ScalarIndexExpr::And(l, r) | ScalarIndexExpr::Or(l, r) => {
                stack.push(l);
                stack.push(r);
            }
            ScalarIndexExpr::Query(_) => leaves.push(e),
        }
    }
    leaves
}

/// The disjunction of `leaves` (not empty), as a balanced tree: its evaluation recurses once
/// per level.
fn any_of(
    mut leaves: Vec<lance_index::scalar::expression::ScalarIndexExpr>,
) -> lance_index::scalar::expression::ScalarIndexExpr {
    use lance_index::scalar::expression::ScalarIndexExpr;
    if leaves.len() == 1 {
        return leaves.pop().expect("one leaf");
    }
    let right = leaves.split_off(leaves.len() / 2);
    ScalarIndexExpr::Or(Box::new(any_of(leaves)), Box::new(any_of(right)))
}

/// A prefilter's row mask already in hand (what [`ReadView::exact_filter_mask`] evaluated), for
/// Lance's `DatasetPreFilter` to combine with the deletions.
struct ReadyMask(RowAddrMask);

impl FilterLoader for ReadyMask {
    // The trait is `#[async_trait]`; this is the signature that macro gives `load`.
    fn load<'a>(
        self: Box<Self>,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = lance::Result<RowAddrMask>> + Send + 'a>>
    where
        Self: 'a,
    {
        Box::pin(async move { Ok(self.0) })
    }
}

/// One version of a table, held so that reads agree: a search's row ids, then the columns of
/// those rows, read from the same version (lance-chokepoints-read; obtained by
/// [`Substrate::read_view`]). It lives beside the full-text half of the read path, its first
/// user; [`Substrate::scan`] and the vector half read through it too.
pub struct ReadView {
    table: &'static str,
    dataset: Arc<Dataset>,
    retry: Retry,
    masks: Arc<std::sync::Mutex<MaskMemo>>,
}

/// The masks a search's filters evaluated to ([`ReadView::exact_filter_mask`]), by table,
/// version and filter, so a filter searches repeat (a project, a role) is evaluated once per
/// version of the table: a version's rows and indexes never change, so neither does its
/// answer. Another version of a table starts that table's masks over; at most
/// [`MaskMemo::CAP`] are kept (all are dropped when a new one would pass it).
#[derive(Default)]
pub(crate) struct MaskMemo {
    masks: HashMap<(&'static str, u64, String), Option<RowAddrMask>>,
}

impl MaskMemo {
    const CAP: usize = 256;

    fn get(&self, table: &'static str, version: u64, sql: &str) -> Option<Option<RowAddrMask>> {
        self.masks.get(&(table, version, sql.to_owned())).cloned()
    }

    fn remember(
        &mut self,
        table: &'static str,
        version: u64,
        sql: &str,
        mask: Option<RowAddrMask>,
    ) {
        self.masks.retain(|k, _| k.0 != table || k.1 == version);
        if self.masks.len() >= Self::CAP {
            self.masks.clear();
        }
        self.masks.insert((table, version, sql.to_owned()), mask);
    }
}

impl ReadView {
    /// lance-chokepoints-read: runs a BM25 query (see [`FullTextRequest`]) and returns its rows,
    /// best first, each with Lance's `_score` and `_rowid`. Rows written since the index was
    /// last folded are searched too, by a flat scan (lance-index-maintenance). A query with no
    /// terms matches nothing. With a projection of `_score` alone no column is read: the rows
    /// are the index's answer alone (row ids and scores), for [`ReadView::take_rows`] to read,
    /// and where the index covers every row and the filter (if any) is one the scalar indexes
    /// answer exactly, that answer comes from the index's own search ([`ReadView::index_search`])
    /// rather than a query plan.
    pub async fn full_text_search(
        &self,
        request: &FullTextRequest,
    ) -> Result<Vec<RecordBatch>, StoreError> {
        if let Some(batch) = self.index_search(request).await? {
            return Ok(vec![batch]);
        }
        self.planned_full_text_search(request).await
    }

    /// [`ReadView::full_text_search`] as a scan with Lance's full-text query plan: a Boolean
    /// SHOULD of one single-term match per term, the filter as a prefilter, a flat search of
    /// the rows the index does not cover. Every request can be answered this way.
    pub async fn planned_full_text_search(
        &self,
        request: &FullTextRequest,
    ) -> Result<Vec<RecordBatch>, StoreError> {
        if request.terms.is_empty() || request.limit == 0 {
            return Ok(Vec::new());
        }
        self.scan(|scanner| request.configure(scanner)).await
    }

    /// The same answer from the inverted index's own BM25 search (`InvertedIndex::bm25_search`:
    /// one WAND over the terms' postings, an OR of them, each scored as BM25 scores it, which is
    /// what the planned Boolean of single-term matches sums), with no query plan around it: at
    /// 1M messages an unfiltered recall takes a fifth of the CPU the plan took
    /// (docs/benchmarks.md, "Search CPU at 1M: the recall without a query plan"). `None`, for
    /// the planned search to answer, unless the request is one this answers exactly alike: only
    /// `_score` projected, the index one segment that covers every fragment of this version (no
    /// row is left to a flat search), no fragment patched by an overlay, every term analysed by
    /// the index's tokenizer to exactly one term of the index, no two alike, and no filter or
    /// one the scalar indexes answer exactly ([`ReadView::exact_filter_mask`]). The rows left
    /// out are those the plan's prefilter leaves out (`DatasetPreFilter`: the filter's mask, the
    /// deletion files of the segment's fragments, and the fragments it covers that this
    /// version no longer has).
    pub async fn index_search(
        &self,
        request: &FullTextRequest,
    ) -> Result<Option<RecordBatch>, StoreError> {
        use lance::index::prefilter::DatasetPreFilter;
        use lance_index::prefilter::PreFilter;
        use lance_index::scalar::inverted::query::{FtsSearchParams, Operator, Tokens};
        use lance_index::scalar::inverted::tokenizer::document_tokenizer::DocType;
        if request.projection.len() != 1
            || request.projection[0].1 != "_score"
            || request.terms.is_empty()
            || request.limit == 0
        {
            return Ok(None);
        }
        let ds = &self.dataset;
        if self.overlaid() {
            return Ok(None);
        }
        let filter = match &request.filter {
            None => None,
            Some(sql) => match self.remembered_filter_mask(sql).await? {
                Some(mask) => Some(Box::new(ReadyMask(mask)) as Box<dyn FilterLoader>),
                None => return Ok(None),
            },
        };
        let mut segments = index_segments(&self.retry, self.table, ds, request.index).await?;
        let (Some(segment), true) = (segments.pop(), segments.is_empty()) else {
            return Ok(None);
        };
        let Some(covered) = &segment.fragment_bitmap else {
            return Ok(None);
        };
        if !ds
            .get_fragments()
            .iter()
            .all(|f| covered.contains(f.id() as u32))
        {
            return Ok(None);
        }
        let opened = open_segment(&self.retry, self.table, ds, request.column, &segment).await?;
        let Some(inverted) = opened.as_any().downcast_ref::<InvertedIndex>() else {
            return Ok(None);
        };
        // The index's own tokenizer, only to cut the query's terms: nothing is counted.
        let mut analyzer = TextAnalyzer {
            tokenizer: inverted.tokenizer(),
            ngram: None,
        };
        let mut terms: Vec<String> = Vec::with_capacity(request.terms.len());
        for text in &request.terms {
            match &analyzer.query_terms(text)[..] {
                [term] if !terms.contains(term) => terms.push(term.clone()),
                _ => return Ok(None),
            }
        }
        let mut prefilter =
            DatasetPreFilter::new(ds.clone(), std::slice::from_ref(&segment), filter);
        if !inverted.deleted_fragments().is_empty() {
            prefilter.set_deleted_fragments(inverted.deleted_fragments().clone());
        }
        let prefilter = Arc::new(prefilter);
        let tokens = Arc::new(Tokens::new(terms, DocType::Text));
        let params = Arc::new(FtsSearchParams::new().with_limit(Some(request.limit)));
        let (rows, scores) = self
            .retry
            .run(self.table, || async {
                prefilter.wait_for_ready().await?;
                inverted
                    .bm25_search(
                        tokens.clone(),
                        params.clone(),
                        Operator::Or,
                        prefilter.clone(),
                        Arc::new(NoOpMetricsCollector),
                        None,
                    )
                    .await
            })
            .await?;
        let schema = Arc::new(arrow_schema::Schema::new(vec![
            arrow_schema::Field::new("_score", arrow_schema::DataType::Float32, false),
            arrow_schema::Field::new("_rowid", arrow_schema::DataType::UInt64, false),
        ]));
        let batch = RecordBatch::try_new(
            schema,
            vec![
                Arc::new(arrow_array::Float32Array::from(scores)),
                Arc::new(arrow_array::UInt64Array::from(rows)),
            ],
        )
        .map_err(|e| StoreError::Invalid {
            table: self.table,
            detail: e.to_string(),
        })?;
        Ok(Some(batch))
    }

    /// search-prefilter-pushdown, without a query plan: the rows `sql` admits, as the table's
    /// scalar indexes alone answer it (the row-id mask Lance's plan hands its full-text search
    /// as a prefilter). `None` unless the indexes answer it exactly: every clause has an index
    /// that needs no recheck, nothing is left to a filter over the rows read, each of those
    /// indexes covers every fragment of this version and no fragment it does not have, and
    /// every fragment records its row count (Lance needs it to use a scalar index at all).
    async fn exact_filter_mask(&self, sql: &str) -> Result<Option<RowAddrMask>, StoreError> {
        self.exact_index_mask(sql, |query| Some(query.clone()))
            .await
    }

    /// [`Self::exact_filter_mask`] with the index query `sql` plans replaced by `rewrite`'s
    /// (`None` from `rewrite` answers `None`): every check is made of the planned query, so a
    /// rewrite may change only what its leaves ask of the same indexes.
    async fn exact_index_mask(
        &self,
        sql: &str,
        rewrite: impl Fn(
            &lance_index::scalar::expression::ScalarIndexExpr,
        ) -> Option<lance_index::scalar::expression::ScalarIndexExpr>,
    ) -> Result<Option<RowAddrMask>, StoreError> {
        use lance::io::exec::Planner;
        use lance::io::exec::scalar_index::ScalarIndexExec;
        use lance_index::scalar::expression::PlannerIndexExt;
        let ds = &self.dataset;
        if ds.fragments().iter().any(|f| f.physical_rows.is_none()) {
            return Ok(None);
        }
        self.retry
            .run(self.table, || async {
                let schema = Arc::new(arrow_schema::Schema::from(ds.schema()));
                let planner = Planner::new(schema);
                let expr = planner.optimize_expr(planner.parse_filter(sql)?)?;
                let plan =
                    planner.create_filter_plan(expr, &ds.scalar_index_info().await?, true)?;
                let (true, Some(query)) = (plan.is_exact_index_search(), plan.index_query) else {
                    return Ok(None);
                };
                let query = query.optimize();
                let covered = ScalarIndexExec::fragments_covered_by_index_query(&query, ds).await?;
                if !ds.fragments().iter().all(|f| covered.contains(f.id as u32)) {
                    return Ok(None);
                }
                // An index still holds the rows of a fragment this version no longer has (all
                // its rows deleted since the build); no deletion file names them, so a mask
                // with them is not taken (the plan leaves them out by the same check).
                let live: roaring::RoaringBitmap =
                    ds.fragments().iter().map(|f| f.id as u32).collect();
                for leaf in index_leaves(&query) {
                    let indexed =
                        ScalarIndexExec::fragments_covered_by_index_query(leaf, ds).await?;
                    if !indexed.is_subset(&live) {
                        return Ok(None);
                    }
                }
                let Some(query) = rewrite(&query) else {
                    return Ok(None);
                };
                let result = query.evaluate(ds.as_ref(), &NoOpMetricsCollector).await?;
                // The rows that may match: with an exact answer, the rows that do (as the
                // plan's prefilter reads it).
                Ok(result.is_exact().then_some(result.upper))
            })
            .await
    }

    /// [`Self::exact_filter_mask`], evaluated once per version of the table for each filter
    /// ([`MaskMemo`]): the filters of searches, which repeat.
    async fn remembered_filter_mask(&self, sql: &str) -> Result<Option<RowAddrMask>, StoreError> {
        let version = self.version();
        let known = self
            .masks
            .lock()
            .expect("not poisoned")
            .get(self.table, version, sql);
        if let Some(mask) = known {
            return Ok(mask);
        }
        let mask = self.exact_filter_mask(sql).await?;
        self.masks
            .lock()
            .expect("not poisoned")
            .remember(self.table, version, sql, mask.clone());
        Ok(mask)
    }

    /// The row ids of the live rows `sql` admits, ascending, as the table's scalar indexes alone
    /// answer it, with no query plan: `None` where they do not answer it exactly (see
    /// [`ReadView::exact_filter_mask`]), for a consumer to scan instead. Deleted rows are left out
    /// by the mask Lance's own prefilters use (`DatasetPreFilter::create_deletion_mask`).
    pub async fn index_rows(&self, sql: &str) -> Result<Option<Vec<u64>>, StoreError> {
        if self.overlaid() {
            return Ok(None);
        }
        let Some(mask) = self.exact_filter_mask(sql).await? else {
            return Ok(None);
        };
        self.live_rows(mask).await
    }

    /// [`Self::index_rows`] of `column IN (values)` (none for no values), asked of the
    /// column's index one value at a time: a B-tree answers an in-list by hashing every entry
    /// of each page that may hold one of the values, an equality by comparing them
    /// (docs/benchmarks.md, "HTTP load on `/v1/search`: fewer columns, fewer hashes").
    pub async fn index_rows_equal_to(
        &self,
        column: &str,
        values: &[&str],
    ) -> Result<Option<Vec<u64>>, StoreError> {
        use lance::deps::datafusion::scalar::ScalarValue;
        use lance_index::scalar::SargableQuery;
        use lance_index::scalar::expression::ScalarIndexExpr;
        let Some(first) = values.first() else {
            return Ok(Some(Vec::new()));
        };
        if self.overlaid() {
            return Ok(None);
        }
        // The planned leaf of one equality names the index; each value is the same question.
        let each = |query: &ScalarIndexExpr| -> Option<ScalarIndexExpr> {
            let ScalarIndexExpr::Query(search) = query else {
                return None;
            };
            let value = |v: &str| match search.query.as_any().downcast_ref::<SargableQuery>()? {
                SargableQuery::Equals(ScalarValue::Utf8(Some(_))) => {
                    Some(ScalarValue::Utf8(Some(v.to_owned())))
                }
                SargableQuery::Equals(ScalarValue::LargeUtf8(Some(_))) => {
                    Some(ScalarValue::LargeUtf8(Some(v.to_owned())))
                }
                SargableQuery::Equals(ScalarValue::Utf8View(Some(_))) => {
                    Some(ScalarValue::Utf8View(Some(v.to_owned())))
                }
                _ => None,
            };
            let leaves = values
                .iter()
                .map(|v| {
                    let mut leaf = search.clone();
                    leaf.query = Arc::new(SargableQuery::Equals(value(v)?));
                    Some(ScalarIndexExpr::Query(leaf))
                })
                .collect::<Option<Vec<_>>>()?;
            Some(any_of(leaves))
        };
        let sql = format!("{column} = {}", crate::sessions::sql_quote(first));
        let Some(mask) = self.exact_index_mask(&sql, each).await? else {
            return Ok(None);
        };
        self.live_rows(mask).await
    }

    /// The row ids of `mask` left by the mask Lance's own prefilters use for deleted rows
    /// (`DatasetPreFilter::create_deletion_mask`), ascending; `None` where the mask does not
    /// list its rows.
    async fn live_rows(&self, mut mask: RowAddrMask) -> Result<Option<Vec<u64>>, StoreError> {
        use lance::index::prefilter::DatasetPreFilter;
        let fragments: roaring::RoaringBitmap = self
            .dataset
            .fragments()
            .iter()
            .map(|f| f.id as u32)
            .collect();
        let deleted = self
            .retry
            .run(self.table, || async {
                match DatasetPreFilter::create_deletion_mask(
                    self.dataset.clone(),
                    fragments.clone(),
                ) {
                    Some(deleted) => deleted.await.map(Some),
                    None => Ok(None),
                }
            })
            .await?;
        if let Some(deleted) = deleted {
            mask = mask & deleted.as_ref().clone();
        }
        Ok(mask.iter_addrs().map(|rows| rows.map(u64::from).collect()))
    }

    /// Whether a fragment of this version is patched by an overlay: an index may hold stale
    /// values of the rows it patches, which only the plan rechecks, so neither read without a
    /// plan answers then.
    fn overlaid(&self) -> bool {
        self.dataset
            .fragments()
            .iter()
            .any(|f| !f.overlays.is_empty())
    }

    /// The version of the table this view reads.
    pub fn version(&self) -> u64 {
        self.dataset.version().version
    }

    /// A scan of this version configured by `configure`, and its batches.
    pub async fn scan(
        &self,
        configure: impl Fn(&mut Scanner) -> lance::Result<()>,
    ) -> Result<Vec<RecordBatch>, StoreError> {
        use futures::TryStreamExt;
        self.retry
            .run(self.table, || async {
                let mut scanner = self.dataset.scan();
                configure(&mut scanner)?;
                scanner
                    .try_into_stream()
                    .await?
                    .try_collect::<Vec<_>>()
                    .await
            })
            .await
    }

    /// The rows with these row ids (as a search returned them in `_rowid`), in the order
    /// given, with `projection`'s columns (name, SQL expression over the table's columns).
    /// One read per column of each row's page: a consumer reads the few columns it needs of
    /// many rows, and the rest only for the rows it keeps.
    pub async fn take_rows(
        &self,
        row_ids: &[u64],
        projection: &[(String, String)],
    ) -> Result<RecordBatch, StoreError> {
        // Plain columns are projected as a schema: an SQL projection is parsed and planned
        // again on every read.
        let plain = projection
            .iter()
            .all(|(name, expr)| name == expr && self.dataset.schema().field(expr).is_some());
        let request = || {
            if plain {
                let columns: Vec<&str> = projection.iter().map(|(c, _)| c.as_str()).collect();
                Ok(ProjectionRequest::Schema(Arc::new(
                    self.dataset.schema().project(&columns)?,
                )))
            } else {
                Ok::<_, lance::Error>(ProjectionRequest::Sql(projection.to_vec()))
            }
        };
        self.retry
            .run(self.table, || async {
                self.dataset.take_rows(row_ids, request()?).await
            })
            .await
    }
}

impl ReadView {
    /// [`Self::take_rows`] where every row named must be read: an error naming `named_by` (what
    /// named the rows) when fewer or more come back.
    pub async fn take_every_row(
        &self,
        row_ids: &[u64],
        projection: &[(String, String)],
        named_by: &str,
    ) -> Result<RecordBatch, StoreError> {
        let batch = self.take_rows(row_ids, projection).await?;
        if batch.num_rows() != row_ids.len() {
            return Err(StoreError::Invalid {
                table: self.table,
                detail: format!(
                    "{} rows named by {named_by}, {} read",
                    row_ids.len(),
                    batch.num_rows()
                ),
            });
        }
        Ok(batch)
    }
}

impl Substrate {
    /// The current version of `spec` for reads that must agree (see [`ReadView`]); `None` when
    /// the table was never written.
    pub async fn read_view(&self, spec: &TableSpec) -> Result<Option<ReadView>, StoreError> {
        Ok(self.read_dataset(spec).await?.map(|dataset| ReadView {
            table: spec.name,
            dataset,
            retry: self.retry.clone(),
            masks: self.masks.clone(),
        }))
    }

    /// The plan Lance ran for `request`, with its metrics (`analyze_plan`): which indexes
    /// answered the prefilter, which terms were searched, how many postings were compared.
    pub async fn analyze_full_text_search(
        &self,
        spec: &TableSpec,
        request: &FullTextRequest,
    ) -> Result<String, StoreError> {
        if request.terms.is_empty() {
            return Ok("no terms: nothing is searched".to_owned());
        }
        self.analyze(spec, |scanner| request.configure(scanner))
            .await
    }

    /// BM25 statistics of `terms` over every row of `spec` with a value in the index's column:
    /// read from the index's segments for the rows they cover, and counted by a flat scan
    /// (with the index's own analysis) over rows written since the last fold, so the figures
    /// are exact whether or not `update-indexes` has run.
    pub async fn term_stats(
        &self,
        spec: &TableSpec,
        index: &IndexSpec,
        terms: &[String],
    ) -> Result<TermStats, StoreError> {
        let mut stats = TermStats {
            document_frequency: vec![0; terms.len()],
            ..TermStats::default()
        };
        let Some(ds) = self.read_dataset(spec).await? else {
            return Ok(stats);
        };
        let invalid = |detail: String| StoreError::Invalid {
            table: spec.name,
            detail,
        };
        let segments = index_segments(&self.retry, spec.name, &ds, index.name).await?;
        stats.index_built = !segments.is_empty();
        let mut covered = HashSet::new();
        for segment in &segments {
            if let Some(fragments) = &segment.fragment_bitmap {
                covered.extend(fragments.iter());
            }
            let opened = open_segment(&self.retry, spec.name, &ds, index.column, segment).await?;
            let inverted = opened
                .as_any()
                .downcast_ref::<InvertedIndex>()
                .ok_or_else(|| invalid(format!("index {} is not an inverted index", index.name)))?;
            let (total, docs, df) = self
                .retry
                .run(spec.name, || inverted.bm25_stats_for_terms(terms, None))
                .await?;
            stats.documents += docs as u64;
            stats.indexed_documents += docs as u64;
            stats.terms += total;
            for (sum, d) in stats.document_frequency.iter_mut().zip(df) {
                *sum += d as u64;
            }
        }
        let unindexed: Vec<_> = ds
            .get_fragments()
            .into_iter()
            .filter(|f| !covered.contains(&(f.id() as u32)))
            .map(|f| f.metadata().clone())
            .collect();
        if unindexed.is_empty() {
            return Ok(stats);
        }
        let mut analyzer = TextAnalyzer::for_index(index.kind)?;
        let counter = analyzer.term_counter(terms);
        let column = index.column;
        let flat = self
            .scan_fold(
                spec,
                |scanner| {
                    scanner.with_fragments(unindexed.clone());
                    scanner.project(&[column])?;
                    Ok(())
                },
                || {
                    (
                        TermStats {
                            document_frequency: vec![0; terms.len()],
                            ..TermStats::default()
                        },
                        vec![0u32; terms.len()],
                    )
                },
                |(flat, freq), batch| {
                    let texts = batch.column(0);
                    for row in 0..batch.num_rows() {
                        let Some(text) = str_at(texts.as_ref(), row) else {
                            continue;
                        };
                        freq.iter_mut().for_each(|f| *f = 0);
                        let length = analyzer.count_terms(&counter, text, freq);
                        for (df, f) in flat.document_frequency.iter_mut().zip(freq.iter()) {
                            *df += u64::from(*f > 0);
                        }
                        // As the index counts: a text too short for one gram is no document.
                        if length > 0 {
                            flat.documents += 1;
                            flat.terms += length;
                        }
                    }
                },
            )
            .await?
            .0;
        stats.documents += flat.documents;
        stats.terms += flat.terms;
        for (sum, d) in stats
            .document_frequency
            .iter_mut()
            .zip(flat.document_frequency)
        {
            *sum += d;
        }
        Ok(stats)
    }
}

/// The segments of the index `name` of `ds` (each build or fold Lance kept apart is one).
async fn index_segments(
    retry: &Retry,
    table: &str,
    ds: &Dataset,
    name: &str,
) -> Result<Vec<lance::table::format::IndexMetadata>, StoreError> {
    Ok(retry
        .run(table, || ds.load_indices())
        .await?
        .iter()
        .filter(|m| m.name == name)
        .cloned()
        .collect())
}

/// One segment of the scalar index on `column`, opened through the session's index cache
/// (the caller downcasts it to the kind it expects).
async fn open_segment(
    retry: &Retry,
    table: &str,
    ds: &Dataset,
    column: &str,
    segment: &lance::table::format::IndexMetadata,
) -> Result<Arc<dyn lance_index::scalar::ScalarIndex>, StoreError> {
    retry
        .run(table, || {
            ds.open_scalar_index(column, &segment.uuid, &NoOpMetricsCollector)
        })
        .await
}

/// A string column's value, `None` for null or for a column that holds no strings. Lance hands
/// strings back as Utf8, LargeUtf8 or, from SQL expressions, Utf8View; all three read here.
pub fn str_at(array: &dyn Array, row: usize) -> Option<&str> {
    use arrow_array::cast::AsArray;
    if array.is_null(row) {
        return None;
    }
    match array.data_type() {
        arrow_schema::DataType::Utf8 => Some(array.as_string::<i32>().value(row)),
        arrow_schema::DataType::LargeUtf8 => Some(array.as_string::<i64>().value(row)),
        arrow_schema::DataType::Utf8View => Some(array.as_string_view().value(row)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documents_and_queries_are_cut_alike() {
        let mut a = TextAnalyzer::for_index(IndexKind::Ngram { min: 3, max: 5 }).unwrap();
        let mut doc = Vec::new();
        a.document_terms("Abcd é", |t| doc.push(t.to_owned()));
        let query = a.query_terms("Abcd é");
        assert_eq!(doc, query);
        assert_eq!(doc[..3], ["abc", "abcd", "abcd "]);
    }
}

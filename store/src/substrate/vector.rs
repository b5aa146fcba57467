//! The read path's vector half (lance-chokepoints-read): nearest-neighbour queries over a vector
//! column with their scalar filters pushed down as a prefilter (search-prefilter-pushdown); and
//! the write path's conditional update (lance-chokepoints-write), which derived columns such as
//! embeddings are written through (spec 5.5: a conditional merge, never a row rewrite by hand).
//!
//! Nothing here knows what the vectors mean; a consumer names the table, the column, the model
//! filter and the metric.

use super::{MergeOutcome, ReadView, StoreError, Substrate, TableSpec};
use arrow_array::{Float32Array, RecordBatch};
use lance::dataset::scanner::Scanner;
use lance::dataset::{MergeInsertWriteMode, WhenMatched, WhenNotMatched};
use lance::index::DatasetIndexExt;

/// A nearest-neighbour query: the `limit` rows whose `column` is closest to `query` by cosine
/// distance, among the rows `filter` admits.
#[derive(Debug, Clone)]
pub struct VectorRequest {
    /// The vector column.
    pub column: &'static str,
    /// The query vector (f32; Lance coerces it to the column's element type).
    pub query: Vec<f32>,
    /// A scalar predicate (SQL) over the table's columns, applied before ranking.
    pub filter: Option<String>,
    /// How many of the nearest rows to return.
    pub limit: usize,
    /// The output columns, as (name, SQL expression over the table's columns).
    pub projection: Vec<(String, String)>,
    /// Partitions an IVF index probes (ignored by a flat scan).
    pub nprobes: Option<usize>,
    /// An IVF_PQ candidate pool of `limit x refine_factor` re-ranked by exact distance.
    pub refine_factor: Option<u32>,
    /// Compare every admitted vector even where an IVF index exists (the reference an index's
    /// recall is measured against).
    pub exact: bool,
}

impl VectorRequest {
    /// search-prefilter-pushdown: the filter is a prefilter, so `limit` rows come back whenever
    /// `limit` rows match; Lance refuses a filtered nearest-neighbour query without it only when
    /// it cannot, and would otherwise rank first and filter the top `limit` afterwards.
    fn configure(&self, scanner: &mut Scanner) -> lance::Result<()> {
        let query = Float32Array::from(self.query.clone());
        scanner.nearest(self.column, &query, self.limit)?;
        scanner.distance_metric("cosine".try_into()?);
        if let Some(n) = self.nprobes {
            scanner.nprobes(n);
        }
        if let Some(r) = self.refine_factor {
            scanner.refine(r);
        }
        if self.exact {
            scanner.use_index(false);
        }
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
        Ok(())
    }
}

impl ReadView {
    /// lance-chokepoints-read: runs a nearest-neighbour query (see [`VectorRequest`]); each row
    /// comes with Lance's `_distance` (cosine distance, 0 for the same direction) and `_rowid`.
    /// Below an index, or on rows written since it was trained, Lance compares every admitted
    /// vector (flat); with an IVF index it probes `nprobes` partitions.
    pub async fn vector_search(
        &self,
        request: &VectorRequest,
    ) -> Result<Vec<RecordBatch>, StoreError> {
        if request.limit == 0 || request.query.is_empty() {
            return Ok(Vec::new());
        }
        self.scan(|scanner| request.configure(scanner)).await
    }
}

impl Substrate {
    /// The plan Lance ran for `request`, with its metrics (`analyze_plan`).
    pub async fn analyze_vector_search(
        &self,
        spec: &TableSpec,
        request: &VectorRequest,
    ) -> Result<String, StoreError> {
        self.analyze(spec, |scanner| request.configure(scanner))
            .await
    }

    /// Rows of `spec` the predicate admits (all rows with `None`); zero for a table never
    /// written.
    pub async fn count(&self, spec: &TableSpec, filter: Option<&str>) -> Result<u64, StoreError> {
        let Some(ds) = self.read_dataset(spec).await? else {
            return Ok(0);
        };
        let filter = filter.map(str::to_owned);
        let n = self
            .retry
            .run(spec.name, || ds.count_rows(filter.clone()))
            .await?;
        Ok(n as u64)
    }

    /// The current version of `spec`, `None` for a table never written.
    pub async fn version(&self, spec: &TableSpec) -> Result<Option<u64>, StoreError> {
        Ok(self.dataset(spec).await?.map(|ds| ds.version().version))
    }

    /// lance-chokepoints-write, the conditional form: for every row of `batches` whose primary
    /// key is stored and for which `condition` holds (SQL over `source.` and `target.` columns),
    /// the columns the batches carry are written over the stored ones; every other column of
    /// the row is left as it is, and keys not stored are ignored: nothing is inserted. Returns
    /// the rows updated in [`MergeOutcome::inserted`] (written) and the rest in `present` (left
    /// alone).
    ///
    /// The columns are patched in place (`MergeInsertWriteMode::RewriteColumns`): each fragment
    /// holding an updated row gets a new file of the given columns, and no row moves. Lance's
    /// default rewrites every matched row whole into new fragments, which copies every other
    /// column (the text) and leaves every index of the table covering none of the moved rows
    /// until they are folded in again: after a first embed, full-text search fell back to flat
    /// scans (docs/decisions.md, "Hybrid search"). Only indexes on the patched columns lose the
    /// coverage of the touched fragments; they are never folded here.
    pub async fn merge_update(
        &self,
        spec: &TableSpec,
        batches: Vec<RecordBatch>,
        condition: &str,
    ) -> Result<MergeOutcome, StoreError> {
        let rows: u64 = batches.iter().map(|b| b.num_rows() as u64).sum();
        if rows == 0 {
            return Ok(MergeOutcome::default());
        }
        let (stats, attempts) = self
            .merge(spec, batches, false, |b, ds| {
                b.when_matched(WhenMatched::update_if(ds, condition)?)
                    .when_not_matched(WhenNotMatched::DoNothing)
                    .write_mode(MergeInsertWriteMode::RewriteColumns);
                Ok(())
            })
            .await?;
        Ok(MergeOutcome {
            inserted: stats.num_updated_rows,
            present: rows - stats.num_updated_rows.min(rows),
            attempts,
        })
    }

    /// A value of `spec`'s dataset configuration (`None` when unset or never written).
    pub async fn config_value(
        &self,
        spec: &TableSpec,
        key: &str,
    ) -> Result<Option<String>, StoreError> {
        Ok(self
            .dataset(spec)
            .await?
            .and_then(|ds| ds.config().get(key).cloned()))
    }

    /// Sets a value of `spec`'s dataset configuration (a commit).
    pub async fn set_config(
        &self,
        spec: &TableSpec,
        key: &str,
        value: &str,
    ) -> Result<(), StoreError> {
        self.commit_on_latest(spec, async |d| {
            d.update_config([(key, value)]).await.map(drop)
        })
        .await
        .map(drop)
    }

    /// Drops the index `name` of `spec` and clears the configuration keys that describe it (a
    /// commit); `false` when there was no such index.
    pub async fn drop_index(
        &self,
        spec: &TableSpec,
        name: &str,
        clear_keys: &[&str],
    ) -> Result<bool, StoreError> {
        let Some(ds) = self.dataset(spec).await? else {
            return Ok(false);
        };
        let present = self
            .retry
            .run(spec.name, || ds.load_indices())
            .await?
            .iter()
            .any(|m| m.name == name);
        if !present {
            return Ok(false);
        }
        self.commit_on_latest(spec, async |d| {
            d.drop_index(name).await?;
            if !clear_keys.is_empty() {
                let entries: Vec<(&str, Option<&str>)> =
                    clear_keys.iter().map(|k| (*k, None)).collect();
                d.update_config(entries).await?;
            }
            Ok(())
        })
        .await?;
        Ok(true)
    }
}

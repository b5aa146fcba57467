//! Index maintenance (spec 3.7, lance-index-maintenance): writes never fold indexes; this is the
//! one place an index is built or folded, run by the `update-indexes` stage of `pond sync`.
//!
//! The fold follows the index family, as the spec's table says: a BTree is rebuilt from scratch
//! (`create_index(replace=true)`), a bitmap and an inverted (full-text) index are folded
//! incrementally (`optimize_indices(append)`), except the bitmap of a column patched in place,
//! which is rebuilt ([`IndexKind::BitmapRebuilt`]). An index that already covers every row is left
//! alone: merges only ever add fragments, so "no unindexed rows" means no write touched its
//! column since.

use super::{StoreError, Substrate, TableSpec};
use lance::dataset::Dataset;
use lance::index::DatasetIndexExt;
use lance::index::vector::VectorIndexParams;
use lance_index::IndexType;
use lance_index::optimize::OptimizeOptions;
use lance_index::scalar::{InvertedIndexParams, ScalarIndexParams};
use serde::Serialize;

/// What kind of index, with its build parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IndexKind {
    /// A scalar BTree: equality, ranges, and prefixes (`starts_with`) of strings.
    BTree,
    /// A scalar bitmap: equality on a column of few distinct values.
    Bitmap,
    /// A bitmap over a column that writes patch in place (`embedding_model`, which the embed
    /// stage patches column-wise): rebuilt from scratch, never folded. Lance 14 answers
    /// `IS NULL` and `IS NOT NULL` wrong from a folded bitmap whose older segment covered a
    /// fragment patched since (every row null, or none; store/tests/search.rs,
    /// `an_interrupted_embed_over_indexed_fragments_is_counted_exactly`).
    BitmapRebuilt,
    /// A BM25 inverted index over character n-grams of `min..=max` characters, the same for every
    /// language (search-language-neutral-index).
    Ngram { min: u32, max: u32 },
    /// A vector index (IVF_PQ, cosine) over a `FixedSizeList` column, trained only once the
    /// column holds at least `min_rows` non-null vectors (below that, a flat scan is exact and
    /// fast enough); `num_rows / 4096` partitions, sub-vectors of 8 dimensions (spec 8).
    IvfPq { min_rows: u64 },
}

impl IndexKind {
    fn name(self) -> &'static str {
        match self {
            Self::BTree => "btree",
            Self::Bitmap | Self::BitmapRebuilt => "bitmap",
            Self::Ngram { .. } => "inverted_ngram",
            Self::IvfPq { .. } => "ivf_pq",
        }
    }

    /// The inverted index's parameters, for an n-gram index: the one definition both the index
    /// build and the analysis of a query use, so a query is cut into grams exactly as the text
    /// was (search-language-neutral-index: no stemming, no stop words, nothing keyed to one
    /// language; lower case and ASCII folding apply to every script alike).
    pub fn inverted_params(self) -> Option<InvertedIndexParams> {
        match self {
            Self::Ngram { min, max } => Some(
                InvertedIndexParams::default()
                    .base_tokenizer("ngram".to_owned())
                    .ngram_min_length(min)
                    .ngram_max_length(max)
                    .ngram_prefix_only(false)
                    .max_token_length(None),
            ),
            Self::BTree | Self::Bitmap | Self::BitmapRebuilt | Self::IvfPq { .. } => None,
        }
    }
}

/// An index a consumer declares on one of its tables.
#[derive(Debug, Clone, Copy)]
pub struct IndexSpec {
    /// The index's name in the dataset.
    pub name: &'static str,
    /// The column it is built on.
    pub column: &'static str,
    pub kind: IndexKind,
}

/// What maintenance did to one index.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum IndexAction {
    /// The table has never been written: nothing to index.
    NoTable,
    /// The index covered every row already.
    Current,
    /// Built for the first time.
    Created,
    /// Rebuilt from scratch (BTree, and the bitmap of a column patched in place).
    Rebuilt,
    /// New rows folded in (bitmap, inverted, IVF_PQ).
    Folded,
    /// A vector index not built: the column holds fewer vectors than its threshold, and a
    /// search compares every vector (flat).
    BelowThreshold,
    /// A vector index not built: the column holds vectors of more than one model, which share
    /// no distance space (re-embed with `pond sync --only embed --force-embed`).
    MixedModels,
}

/// An index's health, as `pond status` shows it.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct IndexStatus {
    pub table: &'static str,
    pub name: &'static str,
    pub column: &'static str,
    pub kind: &'static str,
    /// Whether the index exists yet.
    pub exists: bool,
    /// Rows the index covers, and rows written since it was last built or folded (found by a
    /// flat scan until the next `update-indexes`).
    pub indexed_rows: u64,
    pub unindexed_rows: u64,
}

impl Substrate {
    /// The health of `index` on `spec` (`None` when the table was never written).
    pub async fn index_status(
        &self,
        spec: &TableSpec,
        index: &IndexSpec,
    ) -> Result<Option<IndexStatus>, StoreError> {
        let Some(ds) = self.dataset(spec).await? else {
            return Ok(None);
        };
        let (indexed_rows, unindexed_rows, exists) = match coverage(self, spec, &ds, index).await? {
            Some((i, u, _)) => (i, u, true),
            None => {
                let rows = self.retry.run(spec.name, || ds.count_rows(None)).await? as u64;
                (0, rows, false)
            }
        };
        Ok(Some(IndexStatus {
            table: spec.name,
            name: index.name,
            column: index.column,
            kind: index.kind.name(),
            exists,
            indexed_rows,
            unindexed_rows,
        }))
    }

    /// Builds or folds `index` on `spec` as its family requires; leaves a current index alone.
    pub async fn update_index(
        &self,
        spec: &TableSpec,
        index: &IndexSpec,
    ) -> Result<IndexAction, StoreError> {
        let Some(ds) = self.dataset(spec).await? else {
            return Ok(IndexAction::NoTable);
        };
        let existing = coverage(self, spec, &ds, index).await?;
        match existing {
            // A rebuilt bitmap folded by an earlier pond has segments to merge into one.
            Some((_, 0, segments)) if index.kind != IndexKind::BitmapRebuilt || segments == 1 => {
                return Ok(IndexAction::Current);
            }
            _ => {}
        }
        let existing = existing.map(|(indexed, unindexed, _)| (indexed, unindexed));
        let mut vectors = 0;
        if let IndexKind::IvfPq { min_rows } = index.kind {
            let filter = format!("{} IS NOT NULL", index.column);
            vectors = self
                .retry
                .run(spec.name, || ds.count_rows(Some(filter.clone())))
                .await? as u64;
            if existing.is_none() && vectors < min_rows {
                return Ok(IndexAction::BelowThreshold);
            }
        }
        let action = match (index.kind, existing) {
            (_, None) => IndexAction::Created,
            (IndexKind::BTree | IndexKind::BitmapRebuilt, Some(_)) => IndexAction::Rebuilt,
            (IndexKind::Bitmap | IndexKind::Ngram { .. } | IndexKind::IvfPq { .. }, Some(_)) => {
                IndexAction::Folded
            }
        };
        self.commit_on_latest(spec, async |d| apply(d, index, action, vectors).await)
            .await?;
        Ok(action)
    }
}

async fn apply(
    d: &mut Dataset,
    index: &IndexSpec,
    action: IndexAction,
    vectors: u64,
) -> lance::Result<()> {
    let columns = [index.column];
    let name = Some(index.name.to_owned());
    match (index.kind, action) {
        (
            IndexKind::Bitmap | IndexKind::Ngram { .. } | IndexKind::IvfPq { .. },
            IndexAction::Folded,
        ) => {
            let options = OptimizeOptions::append().index_names(vec![index.name.to_owned()]);
            d.optimize_indices(&options).await
        }
        (kind @ IndexKind::Ngram { .. }, _) => {
            let params = kind
                .inverted_params()
                .expect("an n-gram index has inverted params");
            d.create_index(&columns, IndexType::Inverted, name, &params, true)
                .await
                .map(drop)
        }
        (IndexKind::IvfPq { .. }, _) => {
            // Partitions = rows / 4096 (spec 8); sub-vectors of 8 dimensions (384 / 48), 8-bit
            // codes, cosine as the queries use; Lance's default 50 k-means iterations.
            let partitions = (vectors / 4096).max(1) as usize;
            let dimension = vector_dimension(d, index.column)?;
            let params = VectorIndexParams::ivf_pq(
                partitions,
                8,
                (dimension / 8).max(1),
                "cosine".try_into()?,
                50,
            );
            d.create_index(&columns, IndexType::IvfPq, name, &params, true)
                .await
                .map(drop)
        }
        (IndexKind::BTree, _) => d
            .create_index(
                &columns,
                IndexType::BTree,
                name,
                &ScalarIndexParams::default(),
                true,
            )
            .await
            .map(drop),
        (IndexKind::Bitmap | IndexKind::BitmapRebuilt, _) => d
            .create_index(
                &columns,
                IndexType::Bitmap,
                name,
                &ScalarIndexParams::default(),
                true,
            )
            .await
            .map(drop),
    }
}

/// The length of the vectors of a `FixedSizeList` column.
fn vector_dimension(d: &Dataset, column: &str) -> lance::Result<usize> {
    match d.schema().field(column).map(|f| f.data_type()) {
        Some(arrow_schema::DataType::FixedSizeList(_, n)) if n > 0 => Ok(n as usize),
        other => Err(lance::Error::invalid_input(format!(
            "{column} is not a vector column ({other:?})"
        ))),
    }
}

/// (indexed rows, unindexed rows, segments) of `index`, or `None` when it does not exist.
async fn coverage(
    substrate: &Substrate,
    spec: &TableSpec,
    ds: &Dataset,
    index: &IndexSpec,
) -> Result<Option<(u64, u64, u64)>, StoreError> {
    let indices = substrate.retry.run(spec.name, || ds.load_indices()).await?;
    let segments = indices.iter().filter(|m| m.name == index.name).count() as u64;
    if segments == 0 {
        return Ok(None);
    }
    let stats = substrate
        .retry
        .run(spec.name, || ds.index_statistics(index.name))
        .await?;
    let stats: serde_json::Value =
        serde_json::from_str(&stats).map_err(|e| StoreError::Invalid {
            table: spec.name,
            detail: format!("statistics of index {}: {e}", index.name),
        })?;
    let field = |k: &str| {
        stats
            .get(k)
            .and_then(serde_json::Value::as_u64)
            .unwrap_or(0)
    };
    Ok(Some((
        field("num_indexed_rows"),
        field("num_unindexed_rows"),
        segments,
    )))
}

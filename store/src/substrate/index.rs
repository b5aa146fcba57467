//! Index maintenance (spec 3.7, lance-index-maintenance): writes never fold indexes; this is the
//! one place an index is built or folded, run by the `update-indexes` stage of `pond sync`.
//!
//! The fold follows the index family, as the spec's table says: a BTree is rebuilt from scratch
//! (`create_index(replace=true)`), an inverted (full-text) index is folded incrementally
//! (`optimize_indices(append)`). An index that already covers every row is left alone: merges
//! only ever add fragments, so "no unindexed rows" means no write touched its column since.

use super::{Handle, StoreError, Substrate, TableSpec};
use lance::dataset::Dataset;
use lance::index::DatasetIndexExt;
use lance_index::IndexType;
use lance_index::optimize::OptimizeOptions;
use lance_index::scalar::{InvertedIndexParams, ScalarIndexParams};
use serde::Serialize;
use std::sync::Arc;
use std::time::Instant;

/// What kind of index, with its build parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IndexKind {
    /// A scalar BTree (equality and range filters).
    BTree,
    /// A BM25 inverted index over character n-grams of `min..=max` characters, the same for every
    /// language (search-language-neutral-index).
    Ngram { min: u32, max: u32 },
}

impl IndexKind {
    fn name(self) -> &'static str {
        match self {
            Self::BTree => "btree",
            Self::Ngram { .. } => "inverted_ngram",
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
    /// Rebuilt from scratch (BTree).
    Rebuilt,
    /// New rows folded in (inverted).
    Folded,
}

/// An index's health, as `pond status` shows it.
#[derive(Debug, Clone, Serialize)]
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
            Some((i, u)) => (i, u, true),
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
        if let Some((_, 0)) = existing {
            return Ok(IndexAction::Current);
        }
        let action = match (index.kind, existing) {
            (_, None) => IndexAction::Created,
            (IndexKind::BTree, Some(_)) => IndexAction::Rebuilt,
            (IndexKind::Ngram { .. }, Some(_)) => IndexAction::Folded,
        };
        let updated = self
            .retry
            .run(spec.name, || {
                let mut d = (*ds).clone();
                async move {
                    // Build on the latest version: a sync may have committed since `ds` was read.
                    d.checkout_latest().await?;
                    apply(&mut d, index, action).await?;
                    Ok(d)
                }
            })
            .await?;
        self.handles.lock().await.insert(
            spec.name,
            Handle {
                dataset: Arc::new(updated),
                checked: Instant::now(),
            },
        );
        Ok(action)
    }
}

async fn apply(d: &mut Dataset, index: &IndexSpec, action: IndexAction) -> lance::Result<()> {
    let columns = [index.column];
    match (index.kind, action) {
        (IndexKind::Ngram { .. }, IndexAction::Folded) => {
            let options = OptimizeOptions::append().index_names(vec![index.name.to_owned()]);
            d.optimize_indices(&options).await
        }
        (IndexKind::Ngram { min, max }, _) => {
            let params = InvertedIndexParams::default()
                .base_tokenizer("ngram".to_owned())
                .ngram_min_length(min)
                .ngram_max_length(max)
                .ngram_prefix_only(false)
                .max_token_length(None);
            d.create_index(
                &columns,
                IndexType::Inverted,
                Some(index.name.to_owned()),
                &params,
                true,
            )
            .await
            .map(drop)
        }
        (IndexKind::BTree, _) => d
            .create_index(
                &columns,
                IndexType::BTree,
                Some(index.name.to_owned()),
                &ScalarIndexParams::default(),
                true,
            )
            .await
            .map(drop),
    }
}

/// (indexed rows, unindexed rows) of `index`, or `None` when it does not exist.
async fn coverage(
    substrate: &Substrate,
    spec: &TableSpec,
    ds: &Dataset,
    index: &IndexSpec,
) -> Result<Option<(u64, u64)>, StoreError> {
    let indices = substrate.retry.run(spec.name, || ds.load_indices()).await?;
    if !indices.iter().any(|m| m.name == index.name) {
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
    )))
}

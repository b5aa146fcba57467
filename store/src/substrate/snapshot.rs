//! Snapshots of tables for archives (`pond export` / `pond import`): a streaming read of a whole
//! table, a fresh one-commit copy of it under another root, and the checks that a dataset found
//! in an untrusted archive reads nothing outside itself.
//!
//! A snapshot root is a private staging directory, never a store: a store's tables are still
//! written only by [`Substrate::merge_insert`] (lance-chokepoints-write).

use super::{SCHEMA_VERSION_KEY, StoreError, Substrate, TableSpec};
use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use futures::stream::{BoxStream, StreamExt};
use lance::dataset::scanner::Scanner;
use lance::dataset::{InsertBuilder, WriteMode, WriteParams};
use lance::deps::datafusion::error::DataFusionError;
use lance::deps::datafusion::physical_plan::SendableRecordBatchStream;
use lance::deps::datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use std::sync::Arc;

/// Batches of one table, read or to be written one at a time.
pub type BatchStream = BoxStream<'static, Result<RecordBatch, StoreError>>;

/// `spec`'s schema with its schema version in the schema metadata (lance-dataset-schema-version).
pub(super) fn versioned_schema(spec: &TableSpec) -> SchemaRef {
    let mut schema = (*spec.schema).clone();
    schema.metadata.insert(
        SCHEMA_VERSION_KEY.to_owned(),
        spec.schema_version.to_string(),
    );
    Arc::new(schema)
}

impl Substrate {
    /// lance-table-creation: stable row ids, the current stable file format, the shared session.
    pub(super) fn creation_params(&self) -> WriteParams {
        let mut params = WriteParams::default();
        params.mode = WriteMode::Create;
        params.enable_stable_row_ids = true;
        params.data_storage_version = "stable".parse().ok();
        params.session = Some(self.session.clone());
        // lance-chokepoints-storage: the storage options, always explicit.
        params.store_params = Some(lance::io::ObjectStoreParams {
            storage_options_accessor: Some(Arc::new(
                lance::io::StorageOptionsAccessor::with_static_options(
                    self.root_location.options().to_lance(),
                ),
            )),
            ..Default::default()
        });
        params
    }

    /// lance-chokepoints-read, streaming: the scan of `spec` configured by `configure`, batch by
    /// batch, at the version current now (bounded memory whatever the table's size). Only the
    /// opening is retried; a fault mid-stream ends the stream with the error. A table never
    /// written streams nothing.
    pub async fn scan_stream(
        &self,
        spec: &TableSpec,
        configure: impl Fn(&mut Scanner) -> lance::Result<()>,
    ) -> Result<BatchStream, StoreError> {
        let Some(ds) = self.dataset(spec).await? else {
            return Ok(futures::stream::empty().boxed());
        };
        let stream = self
            .retry
            .run(spec.name, || async {
                let mut scanner = ds.scan();
                configure(&mut scanner)?;
                scanner.try_into_stream().await
            })
            .await?;
        let table = spec.name;
        let retry = self.retry.clone();
        Ok(super::retry::guarded_stream(stream)
            .map(move |polled| match polled {
                Ok(Ok(batch)) => Ok(batch),
                Ok(Err(e)) => Err(retry.failed(table, 1, &e)),
                Err(panic) => Err(retry.damaged(table, panic)),
            })
            .boxed())
    }

    /// Writes `batches` (in `spec`'s schema) as a new table of `spec` under this root in one
    /// commit, created as lance-table-creation says: a clean copy with one version and no index.
    /// For snapshot roots only. Returns the rows written.
    pub async fn write_snapshot(
        &self,
        spec: &TableSpec,
        batches: BatchStream,
    ) -> Result<u64, StoreError> {
        let schema = versioned_schema(spec);
        let rows = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let counted = rows.clone();
        let batch_schema = schema.clone();
        let stream = batches.map(move |b| {
            let b = b.map_err(|e| DataFusionError::External(Box::new(e)))?;
            counted.fetch_add(b.num_rows() as u64, std::sync::atomic::Ordering::Relaxed);
            RecordBatch::try_new(batch_schema.clone(), b.columns().to_vec())
                .map_err(|e| DataFusionError::ArrowError(Box::new(e), None))
        });
        let source: SendableRecordBatchStream =
            Box::pin(RecordBatchStreamAdapter::new(schema, stream));
        let params = self.creation_params();
        let uri = self.location(spec.name);
        // A one-shot source cannot be replayed, so no retry: the root is a local staging directory.
        InsertBuilder::new(uri.as_str())
            .with_params(&params)
            .execute_stream(source)
            .await
            .map_err(|e| StoreError::Unavailable {
                table: spec.name.to_owned(),
                attempts: 1,
                detail: e.to_string(),
            })?;
        Ok(rows.load(std::sync::atomic::Ordering::Relaxed))
    }

    /// Why `spec`'s dataset under this root may read bytes from outside its own directory, if it
    /// may: a registered base path, a data or deletion file on another base or with a path that
    /// leaves the data directory, an overlay. Checked before an archive's dataset is scanned.
    pub async fn foreign_references(&self, spec: &TableSpec) -> Result<Option<String>, StoreError> {
        let Some(ds) = self.dataset(spec).await? else {
            return Ok(None);
        };
        let manifest = ds.manifest();
        if !manifest.base_paths.is_empty() {
            return Ok(Some(format!(
                "its manifest registers {} base path(s) outside the dataset",
                manifest.base_paths.len()
            )));
        }
        let plain =
            |p: &str| !p.is_empty() && !p.contains(['/', '\\', ':']) && p != "." && p != "..";
        for fragment in manifest.fragments.iter() {
            for file in &fragment.files {
                if file.base_id.is_some() || !plain(&file.path) {
                    return Ok(Some(format!(
                        "fragment {} names data file {:?} outside the dataset",
                        fragment.id, file.path
                    )));
                }
            }
            if !fragment.overlays.is_empty() {
                // A fresh snapshot has none; an overlay could name a file anywhere.
                return Ok(Some(format!(
                    "fragment {} has overlay files (a fresh snapshot has none)",
                    fragment.id
                )));
            }
            if fragment
                .deletion_file
                .as_ref()
                .is_some_and(|d| d.base_id.is_some())
            {
                return Ok(Some(format!(
                    "fragment {} has a deletion file outside the dataset",
                    fragment.id
                )));
            }
        }
        Ok(None)
    }
}

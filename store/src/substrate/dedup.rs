//! The write chokepoint's dedup floor (adapter-integrity-dedup): within what one merge-insert
//! writes, a primary key that repeats keeps its first row.
//!
//! Lance could do this itself (`SourceDedupeBehavior::FirstSeen`), but it does so by turning the
//! source into a stream that reports no statistics; the merge's hash join then cannot see that
//! the source is the smaller side and buffers the whole target instead. Deduplicating here keeps
//! the source a materialized table with exact statistics, so the join builds on the batch and
//! the cost of a write follows the batch, not the table.

use super::{PK_KEY, PK_POSITION_KEY};
use arrow_array::{BooleanArray, RecordBatch};
use arrow_row::{RowConverter, SortField};
use arrow_schema::{ArrowError, Schema};
use std::collections::HashSet;

/// The primary-key columns of `schema`, in key order (lance-table-creation-unenforced-pk).
pub(crate) fn key_columns(schema: &Schema) -> Vec<usize> {
    let mut keys: Vec<(u32, usize)> = schema
        .fields()
        .iter()
        .enumerate()
        .filter(|(_, f)| f.metadata().get(PK_KEY).is_some_and(|v| v == "true"))
        .map(|(i, f)| {
            let position = f
                .metadata()
                .get(PK_POSITION_KEY)
                .and_then(|p| p.parse().ok())
                .unwrap_or(u32::MAX);
            (position, i)
        })
        .collect();
    keys.sort();
    keys.into_iter().map(|(_, i)| i).collect()
}

/// `batches` with every row whose primary key (declared in `schema`) appeared in an earlier row
/// removed. Batches without a repeat are passed through untouched; a schema without a key is
/// left alone.
pub(crate) fn first_seen(
    schema: &Schema,
    batches: Vec<RecordBatch>,
) -> Result<Vec<RecordBatch>, ArrowError> {
    let keys = key_columns(schema);
    if keys.is_empty() {
        return Ok(batches);
    }
    let converter = RowConverter::new(
        keys.iter()
            .map(|&i| SortField::new(schema.field(i).data_type().clone()))
            .collect(),
    )?;
    let mut seen = HashSet::new();
    let mut out = Vec::with_capacity(batches.len());
    for batch in batches {
        let columns: Vec<_> = keys.iter().map(|&i| batch.column(i).clone()).collect();
        let rows = converter.convert_columns(&columns)?;
        let keep: Vec<bool> = rows.iter().map(|row| seen.insert(row.owned())).collect();
        if keep.iter().all(|k| *k) {
            out.push(batch);
        } else {
            let mask = BooleanArray::from(keep);
            out.push(arrow_select::filter::filter_record_batch(&batch, &mask)?);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{ArrayRef, StringArray};
    use arrow_schema::{DataType, Field};
    use std::collections::HashMap;
    use std::sync::Arc;

    fn key(name: &str, position: u32) -> Field {
        Field::new(name, DataType::Utf8, false).with_metadata(HashMap::from([
            (PK_KEY.to_owned(), "true".to_owned()),
            (PK_POSITION_KEY.to_owned(), position.to_string()),
        ]))
    }

    /// Two key columns, then a `text` column.
    fn keyed(keys: [Field; 2]) -> Arc<Schema> {
        let [a, b] = keys;
        Arc::new(Schema::new(vec![
            a,
            b,
            Field::new("text", DataType::Utf8, false),
        ]))
    }

    fn batch(schema: &Arc<Schema>, rows: &[(&str, &str, &str)]) -> RecordBatch {
        let col = |i: usize| -> ArrayRef {
            let column: Vec<&str> = rows.iter().map(|r| [r.0, r.1, r.2][i]).collect();
            Arc::new(StringArray::from(column))
        };
        RecordBatch::try_new(schema.clone(), vec![col(0), col(1), col(2)]).unwrap()
    }

    fn values(batches: &[RecordBatch], column: usize) -> Vec<String> {
        batches
            .iter()
            .flat_map(|b| {
                let a = b
                    .column(column)
                    .as_any()
                    .downcast_ref::<StringArray>()
                    .unwrap();
                a.iter().map(|v| v.unwrap().to_owned()).collect::<Vec<_>>()
            })
            .collect()
    }

    #[test]
    fn a_repeated_composite_key_keeps_its_first_row_across_batches() {
        // Key order is (session_id, id), declared by position, not by column order.
        let schema = keyed([key("id", 2), key("session_id", 1)]);
        assert_eq!(key_columns(&schema), vec![1, 0]);
        let first = batch(
            &schema,
            &[("m1", "s1", "a"), ("m1", "s2", "b"), ("m1", "s1", "c")],
        );
        let second = batch(&schema, &[("m2", "s1", "d"), ("m1", "s2", "e")]);
        let out = first_seen(&schema, vec![first, second]).unwrap();
        assert_eq!(values(&out, 2), ["a", "b", "d"]);
    }

    #[test]
    fn batches_without_repeats_pass_through_untouched() {
        let schema = keyed([key("session_id", 1), key("id", 2)]);
        let b = batch(&schema, &[("s1", "m1", "a"), ("s1", "m2", "b")]);
        let out = first_seen(&schema, vec![b.clone()]).unwrap();
        assert_eq!(out, vec![b]);
        // Not a key column: a repeat there is no duplicate.
        let same_text = batch(&schema, &[("s1", "m1", "x"), ("s1", "m2", "x")]);
        assert_eq!(
            first_seen(&schema, vec![same_text]).unwrap()[0].num_rows(),
            2
        );
    }
}

//! The two resources of spec 7.5: `schema://pond` (what each search field means, and the JSON
//! Schema of every request, response and the error body) and `stats://pond` (dataset
//! statistics, as `pond status` shows them).

use crate::envelope::{PROTOCOL_VERSION, Pond};
use crate::error::PondError;
use pond_store::sessions::TableStatus;
use pond_store::substrate::IndexStatus;
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// The URI of the schema resource.
pub const SCHEMA_URI: &str = "schema://pond";
/// The URI of the statistics resource.
pub const STATS_URI: &str = "stats://pond";

/// `schema://pond`: the search fields, each with its type and meaning (read off the request's own
/// schema, so it cannot drift), and the schema of every operation's request and response.
pub fn pond_schema() -> Value {
    let request = crate::schema::search_request();
    let fields: Vec<Value> = request["properties"]
        .as_object()
        .map(|props| {
            let required: Vec<&str> = request["required"]
                .as_array()
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            props
                .iter()
                .map(|(name, p)| {
                    json!({
                        "name": name,
                        "required": required.contains(&name.as_str()),
                        "description": p.get("description").cloned().unwrap_or(Value::Null),
                        "schema": p,
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    json!({
        "protocol_version": PROTOCOL_VERSION,
        "search_fields": fields,
        "operations": {
            "pond_search": {"request": request, "response": crate::schema::search_response()},
            "pond_get": {"request": crate::schema::get_request(), "response": crate::schema::get_response()},
            "pond_ingest": {"request": crate::schema::ingest_request(), "response": crate::schema::ingest_response()},
        },
        "error": crate::schema::error_body(),
    })
}

/// A table's primary keys: rows and distinct keys (equal in a healthy store).
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct KeyCheck {
    pub table: String,
    pub rows: u64,
    pub distinct_keys: u64,
    pub unique: bool,
}

/// Messages with an embedding, of all messages.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct EmbeddingCoverage {
    pub embedded: u64,
    pub messages: u64,
}

/// `stats://pond`: what `pond status --json` prints.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Stats {
    pub protocol_version: u32,
    /// Per table: rows and the dataset version.
    pub tables: Vec<TableStatus>,
    pub messages_per_source_agent: BTreeMap<String, u64>,
    pub embedding: EmbeddingCoverage,
    pub primary_keys: Vec<KeyCheck>,
    /// Per index: the rows it covers, and the rows written since it was last folded (which a
    /// search still finds, by a flat scan, until `pond sync --only update-indexes`).
    pub indexes: Vec<IndexStatus>,
}

/// `stats://pond` for `namespace`.
pub async fn pond_stats(pond: &Pond, namespace: Option<&str>) -> Result<Stats, PondError> {
    let store = pond.namespace(namespace).await?;
    let tables = store.table_status().await?;
    let (per_agent, embedded) = store.message_breakdown().await?;
    let keys = store.key_check().await?;
    let indexes = store.index_status().await?;
    Ok(Stats {
        protocol_version: PROTOCOL_VERSION,
        tables,
        embedding: EmbeddingCoverage {
            embedded,
            messages: per_agent.values().sum(),
        },
        messages_per_source_agent: per_agent,
        primary_keys: keys
            .into_iter()
            .map(|(table, rows, distinct)| KeyCheck {
                table: table.to_owned(),
                rows,
                distinct_keys: distinct,
                unique: rows == distinct,
            })
            .collect(),
        indexes,
    })
}

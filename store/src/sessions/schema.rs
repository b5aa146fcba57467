//! The three session datasets (spec 5.1): `sessions`, `messages`, `parts`, each a direct
//! serialization of its canonical type. See docs/decisions.md ("Session datasets") for the two
//! columns pond adds (`seq`, `ingested_at`) and why.

use crate::substrate::{IndexKind, IndexSpec, PK_KEY, PK_POSITION_KEY, TableSpec};
use arrow_schema::{DataType, Field, Schema, TimeUnit};
use lance::arrow::ARROW_EXT_NAME_KEY;
use std::collections::HashMap;
use std::sync::{Arc, LazyLock};

/// The schema version of the session datasets (lance-dataset-schema-version).
pub const SCHEMA_VERSION: u32 = 1;

/// The dimension of the `vector` column. Fixed at creation (the column exists from the start,
/// spec 8 "Index lifecycle"); 384 is the dimension of the small local models pond can load.
pub const VECTOR_DIM: i32 = 384;

/// A primary-key column (`position` within the key), as every table of the store marks one.
pub(crate) fn pk(name: &str, position: u32) -> Field {
    Field::new(name, DataType::Utf8, false).with_metadata(HashMap::from([
        (PK_KEY.to_owned(), "true".to_owned()),
        (PK_POSITION_KEY.to_owned(), position.to_string()),
    ]))
}

/// The extension name of a JSON column as the table declares it (`pa.json_()`).
const ARROW_JSON_EXT: &str = "arrow.json";

fn json(name: &str, nullable: bool) -> Field {
    Field::new(name, DataType::Utf8, nullable).with_metadata(HashMap::from([(
        ARROW_EXT_NAME_KEY.to_owned(),
        ARROW_JSON_EXT.to_owned(),
    )]))
}

fn micros(name: &str) -> Field {
    Field::new(
        name,
        DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
        false,
    )
}

fn text(name: &str, nullable: bool) -> Field {
    Field::new(name, DataType::Utf8, nullable)
}

/// `sessions`: one row per Session.
pub static SESSIONS: LazyLock<TableSpec> = LazyLock::new(|| TableSpec {
    name: "sessions",
    schema: Arc::new(Schema::new(vec![
        pk("id", 1),
        text("parent_session_id", true),
        text("parent_message_id", true),
        text("source_agent", false),
        micros("created_at"),
        // The source's RFC 3339 text, kept verbatim (the column above is its instant).
        text("created_at_text", false),
        text("project", false),
        json("options", false),
        micros("ingested_at"),
    ])),
    schema_version: SCHEMA_VERSION,
});

/// `messages`: one row per Message; `session_id` leads the key (lance-table-creation-session-scoped-pk).
pub static MESSAGES: LazyLock<TableSpec> = LazyLock::new(|| TableSpec {
    name: "messages",
    schema: Arc::new(Schema::new(vec![
        pk("session_id", 1),
        pk("id", 2),
        // The message's position in its session's log as the source recorded it.
        Field::new("seq", DataType::Int64, false),
        micros("timestamp"),
        text("timestamp_text", false),
        text("role", false),
        text("source_agent", false),
        text("project", false),
        text("content", true),
        text("search_text", true),
        Field::new(
            "vector",
            DataType::FixedSizeList(
                Arc::new(Field::new("item", DataType::Float16, true)),
                VECTOR_DIM,
            ),
            true,
        ),
        text("embedding_model", true),
        json("options", false),
    ])),
    schema_version: SCHEMA_VERSION,
});

/// The embedding columns of `messages`: derived storage that only the embed stage fills (spec
/// 5.5); every ingest leaves them null.
pub const EMBEDDING_COLUMNS: [&str; 2] = ["vector", "embedding_model"];

/// `parts`: one row per Part; keyed (session_id, message_id, id).
pub static PARTS: LazyLock<TableSpec> = LazyLock::new(|| TableSpec {
    name: "parts",
    schema: Arc::new(Schema::new(vec![
        pk("session_id", 1),
        pk("message_id", 2),
        pk("id", 3),
        Field::new("ordinal", DataType::Int32, false),
        text("type", false),
        text("provenance", false),
        json("variant_data", false),
        Field::new("data", DataType::LargeBinary, true).with_metadata(HashMap::from([(
            "lance-encoding:blob".to_owned(),
            "true".to_owned(),
        )])),
        json("options", false),
    ])),
    schema_version: SCHEMA_VERSION,
});

/// The schema of a table's ingest batches ([`super::rows::RowBuffer`]): every column but
/// [`EMBEDDING_COLUMNS`], with JSON columns in Lance's stored form (`super::jsonb`).
///
/// A merge whose source leaves the embedding out inserts it as null, so a batch does not carry
/// 768 bytes of null vector per row through every copy the merge's join makes; a JSON column
/// already in its stored form is written as is rather than parsed again (docs/benchmarks.md,
/// "Ingest batches without null vectors or JSON text"). Both are the same logical table to Lance, which checks the source against it.
fn ingest(spec: &TableSpec) -> Arc<Schema> {
    let fields: Vec<Field> = spec
        .schema
        .fields()
        .iter()
        .filter(|f| !EMBEDDING_COLUMNS.contains(&f.name().as_str()))
        .map(|f| match f.metadata().get(ARROW_EXT_NAME_KEY) {
            Some(ext) if ext == ARROW_JSON_EXT => {
                Field::new(f.name(), DataType::LargeBinary, f.is_nullable()).with_metadata(
                    HashMap::from([(
                        ARROW_EXT_NAME_KEY.to_owned(),
                        super::jsonb::STORED_JSON_EXT.to_owned(),
                    )]),
                )
            }
            _ => f.as_ref().clone(),
        })
        .collect();
    Arc::new(Schema::new(fields))
}

pub static SESSIONS_INGEST: LazyLock<Arc<Schema>> = LazyLock::new(|| ingest(&SESSIONS));
pub static MESSAGES_INGEST: LazyLock<Arc<Schema>> = LazyLock::new(|| ingest(&MESSAGES));
pub static PARTS_INGEST: LazyLock<Arc<Schema>> = LazyLock::new(|| ingest(&PARTS));

/// Every session dataset.
pub fn all() -> [&'static TableSpec; 3] {
    [&SESSIONS, &MESSAGES, &PARTS]
}

/// The full-text index of `messages` (spec 8): BM25 over character 3- to 5-grams of
/// `search_text`, alike for every language (search-language-neutral-index).
pub const SEARCH_TEXT_INDEX: IndexSpec = IndexSpec {
    name: "messages_search_text_fts",
    column: "search_text",
    kind: IndexKind::Ngram { min: 3, max: 5 },
};

/// Non-null vectors at which the vector index is trained (spec 8, "Index lifecycle"): below it a
/// search compares every vector (flat, exact); at or above it the IVF_PQ takes over.
pub const VECTOR_INDEX_THRESHOLD: u64 = 100_000;

/// The vector index of `messages` (spec 8): IVF_PQ over `vector`, cosine. Kept apart from
/// [`indexes`]: it exists only once embeddings are on and enough vectors are stored, and only
/// over vectors of one model (`SessionStore::update_indexes`).
pub const VECTOR_INDEX: IndexSpec = IndexSpec {
    name: "messages_vector_ivf_pq",
    column: "vector",
    kind: IndexKind::IvfPq {
        min_rows: VECTOR_INDEX_THRESHOLD,
    },
};

/// The dataset configuration key of `messages` naming the model whose vectors trained
/// [`VECTOR_INDEX`]: centroids belong to one model's distance space, so the embed stage drops
/// the index before vectors of another model land (spec 5.5).
pub const VECTOR_INDEX_MODEL_KEY: &str = "pond.vector_index.model";

/// The indexes `pond sync`'s update-indexes stage keeps, per table (spec 3.7, 5.1 and 8): the
/// full-text index; the scalar indexes every search filter pushes down into
/// (search-prefilter-pushdown): `project` (a BTree: equality and prefix), `source_agent` and
/// `role` (bitmaps: a few distinct values), `timestamp` (a BTree: ranges), `session_id` (a
/// BTree, which also serves the per-session reads of `pond get` and `pond restore`); a BTree
/// on `parts.session_id` for those reads, and one on `parts.message_id` for the parts of a
/// search's hits (read by row id: docs/decisions.md, "Filters without a query plan"); and
/// `embedding_model` (a bitmap, rebuilt rather than folded because the embed stage patches the
/// column in place: the vector arm's prefilter names the model whose vectors it compares).
pub fn indexes() -> [(&'static TableSpec, IndexSpec); 9] {
    let scalar = |name, column, kind| IndexSpec { name, column, kind };
    [
        (&MESSAGES, SEARCH_TEXT_INDEX),
        (
            &MESSAGES,
            scalar("messages_session_id", "session_id", IndexKind::BTree),
        ),
        (
            &MESSAGES,
            scalar("messages_project", "project", IndexKind::BTree),
        ),
        (
            &MESSAGES,
            scalar("messages_source_agent", "source_agent", IndexKind::Bitmap),
        ),
        (
            &MESSAGES,
            scalar("messages_role", "role", IndexKind::Bitmap),
        ),
        (
            &MESSAGES,
            scalar("messages_timestamp", "timestamp", IndexKind::BTree),
        ),
        (
            &MESSAGES,
            scalar(
                "messages_embedding_model",
                "embedding_model",
                IndexKind::BitmapRebuilt,
            ),
        ),
        (
            &PARTS,
            scalar("parts_session_id", "session_id", IndexKind::BTree),
        ),
        (
            &PARTS,
            scalar("parts_message_id", "message_id", IndexKind::BTree),
        ),
    ]
}

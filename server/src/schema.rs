//! The JSON Schemas of the wire types (spec 7.2): generated from the Rust types the handlers
//! decode and encode, so the published schema is the exact artifact. `pond schema` prints them;
//! `docs/schema/` holds copies that a test keeps current.

use schemars::JsonSchema;

fn schema_of<T: JsonSchema>() -> serde_json::Value {
    let schema = schemars::generate::SchemaSettings::draft2020_12()
        .into_generator()
        .into_root_schema_for::<T>();
    serde_json::to_value(schema).expect("a schema is JSON")
}

/// The schema of a `pond_search` request.
pub fn search_request() -> serde_json::Value {
    schema_of::<crate::search::SearchRequest>()
}

/// The schema of a `pond_search` response.
pub fn search_response() -> serde_json::Value {
    schema_of::<crate::search::SearchResponse>()
}

/// The schema of the error body every operation may answer with.
pub fn error_body() -> serde_json::Value {
    schema_of::<crate::error::ErrorBody>()
}

//! The JSON Schema of the canonical model, generated from the Rust types (spec 7.2).
//!
//! `pond schema` prints [`session_log_schema`]; `docs/schema/` holds copies that a test keeps
//! current.

use crate::event::WireEvent;
use crate::model::SessionLog;

/// The schema of a whole session document ([`SessionLog`]): a session and its messages.
pub fn session_log_schema() -> serde_json::Value {
    let schema = schemars::generate::SchemaSettings::draft2020_12()
        .into_generator()
        .into_root_schema_for::<SessionLog>();
    serde_json::to_value(schema).expect("a schema is JSON")
}

/// The schema of one `pond_ingest` event ([`WireEvent`]).
pub fn wire_event_schema() -> serde_json::Value {
    let schema = schemars::generate::SchemaSettings::draft2020_12()
        .into_generator()
        .into_root_schema_for::<WireEvent>();
    serde_json::to_value(schema).expect("a schema is JSON")
}

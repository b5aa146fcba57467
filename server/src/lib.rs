//! # pond-server
//!
//! The handlers of spec section 7 and, in front of them, the transports: an HTTP+JSON API
//! ([`http`], axum) and an MCP server ([`mcp`], rmcp over stdio).
//!
//! A handler is a plain async function from a request value to a response value
//! ([`search::pond_search`], [`get::pond_get`], [`ingest::pond_ingest`], and the resources
//! [`resources::pond_schema`] and [`resources::pond_stats`]); it cannot tell which transport, or
//! the CLI, called it (spec 7.1).
//! The request and response types here are the wire schema: serde types whose JSON Schema
//! ([`schema`]) is generated from them, so the published schema is exactly what is parsed.
//! Every failure is one [`error::PondError`] of the closed set of spec 7.4. Which namespaces exist
//! and which store each maps to is decided in one place, [`envelope::Pond::namespace`]
//! (wire-namespace-resolution).

pub mod embedding;
pub mod envelope;
pub mod error;
pub mod get;
pub mod http;
pub mod ingest;
pub mod mcp;
pub mod mcp_install;
pub mod resources;
pub mod schema;
pub mod search;

pub use envelope::{PROTOCOL_VERSION, Pond, decode};
pub use error::{ErrorBody, ErrorCode, PondError};

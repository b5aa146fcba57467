//! # pond-server
//!
//! The transports of spec section 7: an HTTP+JSON API (axum) and an MCP server (rmcp), thin
//! dispatchers over one set of transport-agnostic handlers.
//!
//! Not built yet: the crate exists so the workspace has its final shape and its dependency
//! direction (server on canonical and store, never the reverse) is fixed from the start. The
//! handlers land after the store, on which they depend.

//! The MCP transport (spec 7.7, rmcp over stdio): the read operations as tools (`pond_search`,
//! `pond_get`) and the two resources. Ingest is not exposed: MCP is an agent's read access, ingest
//! an operator's action. A tool's input schema is the handler's request schema, and its
//! arguments are decoded by the same `decode` the HTTP transport uses; a handler's error comes
//! back as a tool error whose structured content is the spec 7.4 error body. Nothing is written
//! to stdout but the protocol: log lines go to stderr.

use crate::envelope::{Pond, decode};
use crate::error::PondError;
use crate::resources::{SCHEMA_URI, STATS_URI};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ErrorData, ListResourcesResult,
    ListToolsResult, PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse,
    ReadResourceResult, Resource, ResourceContents, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{RoleServer, ServerHandler, ServiceExt};
use serde::Serialize;
use serde_json::Value;
use std::sync::Arc;

/// pond's MCP server: the handlers behind tools and resources.
pub struct PondMcp {
    pond: Arc<Pond>,
}

impl PondMcp {
    pub fn new(pond: Pond) -> Self {
        Self {
            pond: Arc::new(pond),
        }
    }
}

/// Serves MCP on stdin/stdout until the client closes the connection.
pub async fn serve_stdio(pond: Pond) -> Result<(), String> {
    let service = PondMcp::new(pond)
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|e| format!("the MCP handshake failed: {e}"))?;
    service
        .waiting()
        .await
        .map(drop)
        .map_err(|e| format!("the MCP session ended with an error: {e}"))
}

fn schema_object(schema: Value) -> Arc<serde_json::Map<String, Value>> {
    match schema {
        Value::Object(m) => Arc::new(m),
        _ => Arc::new(serde_json::Map::new()),
    }
}

/// The tools, with the handlers' request schemas as their input schemas.
pub fn tools() -> Vec<Tool> {
    vec![
        Tool::new(
            "pond_search",
            "Search the stored AI coding-agent sessions (Claude Code, Codex, opencode, pi): BM25 over \
             character 3- to 5-grams of what the user and the model said, in any language; matches \
             parts of words, identifiers and paths. Returns sessions best first, each with its best \
             matching messages (text or a snippet around the match). Send protocol_version 1 and a \
             query; filter by project, project_prefix, session_id, source_agent, role, since, until.",
            schema_object(crate::schema::search_request()),
        ),
        Tool::new(
            "pond_get",
            "Read a stored session a page at a time (session_id; response_mode conversational, \
             complete or verbatim; page on with after_id = the page's next_after_id), or one message \
             with all its parts and context_depth messages around it (message_id). Send \
             protocol_version 1.",
            schema_object(crate::schema::get_request()),
        ),
    ]
}

fn tool_result<T: Serialize>(result: Result<T, PondError>) -> CallToolResult {
    match result {
        Ok(v) => CallToolResult::structured(serde_json::to_value(v).unwrap_or(Value::Null)),
        Err(e) => {
            CallToolResult::structured_error(serde_json::to_value(e.body()).unwrap_or(Value::Null))
        }
    }
}

impl ServerHandler for PondMcp {
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_resources()
            .build();
        let mut info = ServerConfig::new(capabilities);
        info.server_info.name = "pond".into();
        info.server_info.version = env!("CARGO_PKG_VERSION").into();
        info.instructions = Some(
            "pond holds the user's past AI coding-agent sessions. Use pond_search to find where \
             something was discussed or done, then pond_get to read the session or the message \
             around a match. schema://pond documents every field; stats://pond describes the store."
                .into(),
        );
        info
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = Value::Object(request.arguments.unwrap_or_default());
        let result = match request.name.as_ref() {
            "pond_search" => match decode(args) {
                Ok(r) => tool_result(crate::search::pond_search(&self.pond, r).await),
                Err(e) => tool_result::<()>(Err(e)),
            },
            "pond_get" => match decode(args) {
                Ok(r) => tool_result(crate::get::pond_get(&self.pond, r).await),
                Err(e) => tool_result::<()>(Err(e)),
            },
            other => {
                return Err(ErrorData::invalid_params(
                    format!("no tool {other}; pond has pond_search and pond_get"),
                    None,
                ));
            }
        };
        Ok(result.into())
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        Ok(ListResourcesResult::with_all_items(vec![
            Resource::new(SCHEMA_URI, "schema")
                .with_description(
                    "Every search field with its meaning, and the JSON Schema of each operation",
                )
                .with_mime_type("application/json"),
            Resource::new(STATS_URI, "stats")
                .with_description(
                    "The store's statistics: rows per table, messages per harness, index health",
                )
                .with_mime_type("application/json"),
        ]))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let value = match request.uri.as_str() {
            SCHEMA_URI => crate::resources::pond_schema(),
            STATS_URI => match crate::resources::pond_stats(&self.pond, None).await {
                Ok(s) => serde_json::to_value(s).unwrap_or(Value::Null),
                Err(e) => return Err(ErrorData::internal_error(e.to_string(), None)),
            },
            other => {
                return Err(ErrorData::resource_not_found(
                    format!("no resource {other}; pond has {SCHEMA_URI} and {STATS_URI}"),
                    None,
                ));
            }
        };
        let text = serde_json::to_string_pretty(&value).unwrap_or_default();
        Ok(ReadResourceResult::new(vec![
            ResourceContents::text(text, request.uri.clone()).with_mime_type("application/json"),
        ])
        .into())
    }
}

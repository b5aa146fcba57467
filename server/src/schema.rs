//! The JSON Schemas of the wire types (spec 7.2), and the OpenAPI document of the HTTP API:
//! generated from the Rust types the handlers decode and encode, so the published schema is the
//! exact artifact. `pond schema` prints them; `docs/schema/` holds copies that a test keeps
//! current.

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde_json::{Map, Value, json};

fn schema_of<T: JsonSchema>() -> Value {
    let schema = SchemaSettings::draft2020_12()
        .into_generator()
        .into_root_schema_for::<T>();
    serde_json::to_value(schema).expect("a schema is JSON")
}

/// The schema of a `pond_search` request.
pub fn search_request() -> Value {
    schema_of::<crate::search::SearchRequest>()
}

/// The schema of a `pond_search` response.
pub fn search_response() -> Value {
    schema_of::<crate::search::SearchResponse>()
}

/// The schema of a `pond_get` request.
pub fn get_request() -> Value {
    schema_of::<crate::get::GetRequest>()
}

/// The schema of a `pond_get` response.
pub fn get_response() -> Value {
    schema_of::<crate::get::GetResponse>()
}

/// The schema of a `pond_ingest` request.
pub fn ingest_request() -> Value {
    schema_of::<crate::ingest::IngestRequest>()
}

/// The schema of a `pond_ingest` response.
pub fn ingest_response() -> Value {
    schema_of::<crate::ingest::IngestResponse>()
}

/// The schema of `stats://pond`.
pub fn stats() -> Value {
    schema_of::<crate::resources::Stats>()
}

/// The schema of the error body every operation may answer with.
pub fn error_body() -> Value {
    schema_of::<crate::error::ErrorBody>()
}

/// The OpenAPI 3.1 document of the HTTP API (`pond schema openapi`): every route, its request
/// body, its success response and every error response with its status (spec 7.4). The
/// component schemas are the same generated schemas.
pub fn openapi() -> Value {
    // OpenAPI 3.1 takes JSON Schema 2020-12 as it is; only the place of shared definitions moves.
    let mut generator = SchemaSettings::draft2020_12()
        .with(|s| s.definitions_path = "/components/schemas".into())
        .into_generator();
    let mut components = Map::new();
    let mut component = |name: &str, schema: schemars::Schema| {
        components.insert(name.to_owned(), serde_json::to_value(schema).expect("JSON"));
    };
    component(
        "SearchRequest",
        generator.subschema_for::<crate::search::SearchRequest>(),
    );
    component(
        "SearchResponse",
        generator.subschema_for::<crate::search::SearchResponse>(),
    );
    component(
        "GetRequest",
        generator.subschema_for::<crate::get::GetRequest>(),
    );
    component(
        "GetResponse",
        generator.subschema_for::<crate::get::GetResponse>(),
    );
    component(
        "IngestRequest",
        generator.subschema_for::<crate::ingest::IngestRequest>(),
    );
    component(
        "IngestResponse",
        generator.subschema_for::<crate::ingest::IngestResponse>(),
    );
    component(
        "Stats",
        generator.subschema_for::<crate::resources::Stats>(),
    );
    component(
        "ErrorBody",
        generator.subschema_for::<crate::error::ErrorBody>(),
    );
    for (name, schema) in generator.take_definitions(true) {
        components.entry(name).or_insert(schema);
    }
    let r = |name: &str| json!({"$ref": format!("#/components/schemas/{name}")});
    let errors = |codes: &[(&str, &str)]| {
        let mut m = Map::new();
        for (status, what) in codes {
            m.insert(
                (*status).to_owned(),
                json!({"description": what, "headers": {"X-Pond-Request-Id": {"$ref": "#/components/headers/RequestId"}},
                       "content": {"application/json": {"schema": r("ErrorBody")}}}),
            );
        }
        m
    };
    let common = [
        (
            "400",
            "validation_failed or version_unsupported: a bad request",
        ),
        ("403", "namespace_unknown: the namespace is not provisioned"),
        ("500", "internal: an unhandled fault"),
        (
            "503",
            "storage_unavailable: the store failed after retries; retry later",
        ),
    ];
    let post = |op: &str, summary: &str, req: &str, res: &str, extra: &[(&str, &str)]| {
        let mut responses = errors(&common);
        responses.extend(errors(extra));
        responses.insert(
            "200".into(),
            json!({"description": "the answer", "headers": {"X-Pond-Request-Id": {"$ref": "#/components/headers/RequestId"}},
                   "content": {"application/json": {"schema": r(res)}}}),
        );
        json!({"post": {"operationId": op, "summary": summary,
            "requestBody": {"required": true, "content": {"application/json": {"schema": r(req)}}},
            "responses": responses}})
    };
    let mut stats_responses = errors(&common);
    stats_responses.insert(
        "200".into(),
        json!({"description": "dataset statistics", "headers": {"X-Pond-Request-Id": {"$ref": "#/components/headers/RequestId"}},
               "content": {"application/json": {"schema": r("Stats")}}}),
    );
    json!({
        "openapi": "3.1.0",
        "info": {"title": "pond", "version": env!("CARGO_PKG_VERSION"),
                 "description": "Search, read and ingest AI coding-agent sessions (Pond v1 protocol, spec section 7)."},
        "jsonSchemaDialect": "https://json-schema.org/draft/2020-12/schema",
        "paths": {
            "/v1/search": post("pond_search", "Search stored messages; results grouped by session", "SearchRequest", "SearchResponse", &[]),
            "/v1/get": post("pond_get", "A session a page at a time, or one message with its neighbours", "GetRequest", "GetResponse",
                &[("404", "not_found: no such session or message")]),
            "/v1/ingest": post("pond_ingest", "Store a batch of canonical events", "IngestRequest", "IngestResponse",
                &[("409", "conflict: concurrent writers won every retry; retry")]),
            "/v1/schema": {"get": {"operationId": "schema", "summary": "schema://pond: search fields and every schema",
                "responses": {"200": {"description": "the schema resource", "headers": {"X-Pond-Request-Id": {"$ref": "#/components/headers/RequestId"}},
                    "content": {"application/json": {"schema": {"type": "object"}}}}}}},
            "/v1/stats": {"get": {"operationId": "stats", "summary": "stats://pond: dataset statistics",
                "parameters": [{"name": "namespace", "in": "query", "required": false, "schema": {"type": "string"}}],
                "responses": stats_responses}},
        },
        "components": {
            "schemas": components,
            "headers": {"RequestId": {"description": "the server's id for this request, also in its log lines",
                                      "schema": {"type": "string"}}},
        },
    })
}

//! The HTTP+JSON transport (spec 7.1, axum): each route decodes its request into the handler's
//! request value and encodes the answer back; no operation logic lives here.
//!
//! - `POST /v1/search`, `/v1/get`, `/v1/ingest`; `GET /v1/schema`, `/v1/stats[?namespace=]`.
//! - Every response carries `X-Pond-Request-Id`, also in the server's log line for the request.
//! - Errors are the one body of spec 7.4 with the code's HTTP status; a bad body (not JSON, an
//!   unknown field, over the size cap) is `validation_failed`, never a 5xx. A handler that
//!   panics answers `internal`, and the server goes on.
//! - At most `concurrency` requests run at once; the rest wait their turn.

use crate::envelope::{Pond, decode};
use crate::error::{ErrorCode, PondError};
use crate::ingest::MAX_BODY_BYTES;
use axum::Router;
use axum::body::{Body, to_bytes};
use axum::extract::{Query, Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use futures::FutureExt;
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;
use tokio::sync::Semaphore;

/// The response header naming a request (spec 7.2).
pub const REQUEST_ID_HEADER: &str = "x-pond-request-id";

/// How many requests run at once by default.
pub const DEFAULT_CONCURRENCY: usize = 64;

struct Shared {
    pond: Pond,
    permits: Semaphore,
    /// This process's prefix for request ids, and the counter after it.
    prefix: String,
    next: AtomicU64,
}

/// The HTTP API over `pond`, at most `concurrency` requests running at once.
pub fn router(pond: Pond, concurrency: usize) -> Router {
    let shared = Arc::new(Shared {
        pond,
        permits: Semaphore::new(concurrency.max(1)),
        prefix: format!("{:08x}", std::process::id() ^ start_nanos()),
        next: AtomicU64::new(1),
    });
    Router::new()
        .route("/v1/search", post(search))
        .route("/v1/get", post(get_op))
        .route("/v1/ingest", post(ingest))
        .route("/v1/schema", get(schema))
        .route("/v1/stats", get(stats))
        .fallback(no_route)
        .method_not_allowed_fallback(wrong_method)
        .layer(middleware::from_fn_with_state(shared.clone(), around))
        .with_state(shared)
}

/// Serves `router` on `listener` until `shutdown` resolves, then lets requests in flight finish.
pub async fn serve(
    listener: tokio::net::TcpListener,
    router: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    axum::serve(listener, router)
        .with_graceful_shutdown(shutdown)
        .await
}

/// Around every request: its id (header and log line), the concurrency bound, and a handler
/// panic turned into `internal`.
async fn around(State(shared): State<Arc<Shared>>, req: Request, next: Next) -> Response {
    let n = shared.next.fetch_add(1, Ordering::Relaxed);
    let id = format!("{}-{n:06}", shared.prefix);
    let (method, path) = (req.method().clone(), req.uri().path().to_owned());
    let started = Instant::now();
    let mut response = {
        let _permit = shared.permits.acquire().await;
        match AssertUnwindSafe(next.run(req)).catch_unwind().await {
            Ok(r) => r,
            Err(_) => error_response(&PondError::new(
                ErrorCode::Internal,
                "the handler failed unexpectedly; the server logged it",
            )),
        }
    };
    if let Ok(v) = HeaderValue::from_str(&id) {
        response.headers_mut().insert(REQUEST_ID_HEADER, v);
    }
    eprintln!(
        "pond serve: request={id} {method} {path} {} {:.1}ms",
        response.status().as_u16(),
        started.elapsed().as_secs_f64() * 1000.0
    );
    response
}

fn start_nanos() -> u32 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0)
}

fn json_response(status: StatusCode, body: &impl Serialize) -> Response {
    match serde_json::to_vec(body) {
        Ok(bytes) => (status, [(header::CONTENT_TYPE, "application/json")], bytes).into_response(),
        Err(e) => error_response(&PondError::new(
            ErrorCode::Internal,
            format!("the answer could not be encoded: {e}"),
        )),
    }
}

fn error_response(e: &PondError) -> Response {
    let status =
        StatusCode::from_u16(e.code.http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut r = json_response(status, &e.body());
    *r.status_mut() = status;
    r
}

fn answer<T: Serialize>(result: Result<T, PondError>) -> Response {
    match result {
        Ok(v) => json_response(StatusCode::OK, &v),
        Err(e) => {
            if e.code == ErrorCode::Internal {
                eprintln!("pond serve: internal error: {e}");
            }
            error_response(&e)
        }
    }
}

/// The body as a request value: JSON, within the size cap, of the request's shape.
async fn body<T: DeserializeOwned>(body: Body) -> Result<T, PondError> {
    let bytes = to_bytes(body, MAX_BODY_BYTES).await.map_err(|_| {
        PondError::invalid(
            "",
            format!("the request body is over {MAX_BODY_BYTES} bytes (or was cut off); send smaller batches"),
        )
    })?;
    let value: serde_json::Value = serde_json::from_slice(&bytes)
        .map_err(|e| PondError::invalid("", format!("the request body is not JSON: {e}")))?;
    decode(value)
}

async fn search(State(s): State<Arc<Shared>>, b: Body) -> Response {
    answer(match body(b).await {
        Ok(r) => crate::search::pond_search(&s.pond, r).await,
        Err(e) => Err(e),
    })
}

async fn get_op(State(s): State<Arc<Shared>>, b: Body) -> Response {
    answer(match body(b).await {
        Ok(r) => crate::get::pond_get(&s.pond, r).await,
        Err(e) => Err(e),
    })
}

async fn ingest(State(s): State<Arc<Shared>>, b: Body) -> Response {
    answer(match body(b).await {
        Ok(r) => crate::ingest::pond_ingest(&s.pond, r).await,
        Err(e) => Err(e),
    })
}

async fn schema() -> Response {
    answer::<serde_json::Value>(Ok(crate::resources::pond_schema()))
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct StatsQuery {
    namespace: Option<String>,
}

async fn stats(
    State(s): State<Arc<Shared>>,
    q: Result<Query<StatsQuery>, axum::extract::rejection::QueryRejection>,
) -> Response {
    match q {
        Ok(Query(q)) => answer(crate::resources::pond_stats(&s.pond, q.namespace.as_deref()).await),
        Err(e) => answer::<()>(Err(PondError::invalid(
            "namespace",
            format!("bad query string: {e}; the only parameter is namespace"),
        ))),
    }
}

async fn no_route(method: Method, uri: axum::http::Uri) -> Response {
    answer::<()>(Err(PondError::new(
        ErrorCode::NotFound,
        format!(
            "no route {method} {}; pond serves POST /v1/search, /v1/get, /v1/ingest and GET /v1/schema, /v1/stats",
            uri.path()
        ),
    )))
}

async fn wrong_method(method: Method, uri: axum::http::Uri) -> Response {
    answer::<()>(Err(PondError::invalid(
        "",
        format!(
            "{method} is not how {} is called: the operations are POST /v1/search, /v1/get, /v1/ingest and GET /v1/schema, /v1/stats",
            uri.path()
        ),
    )))
}

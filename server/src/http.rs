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
use std::future::{Future, IntoFuture};
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

/// Serves `router` on `listener` with `workers` threads, each running its own single-threaded
/// runtime, until `shutdown` resolves; then each lets its requests in flight finish.
///
/// The first thread also accepts, and hands the connections to the threads in turn, so a
/// connection's requests all run on one thread. That is what lets a store's reads go through
/// io_uring on the thread that issued them (`LANCE_URING_CURRENT_THREAD`, set by `pond serve`):
/// no ring thread woken per read and no hand-off back, about a fifth of a loaded search's CPU
/// (docs/benchmarks.md, "HTTP load on `/v1/search`: one runtime per serving thread"). Nothing
/// here knows what a request does; every handler runs the same on any thread.
pub fn serve(
    listener: std::net::TcpListener,
    router: Router,
    workers: usize,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let workers = workers.max(1);
    listener.set_nonblocking(true)?;
    let local = listener.local_addr()?;
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let mut hands = Vec::with_capacity(workers);
    let mut inboxes = Vec::with_capacity(workers);
    for _ in 0..workers {
        let (hand, inbox) = tokio::sync::mpsc::unbounded_channel();
        hands.push(hand);
        inboxes.push(inbox);
    }
    let runtime = || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
    };
    let until_stopped = |mut stopped: tokio::sync::watch::Receiver<bool>| async move {
        // An error means the sender is gone: the acceptor has ended, so stop too.
        let _ = stopped.wait_for(|s| *s).await;
    };
    let first = inboxes.remove(0);
    std::thread::scope(|scope| {
        let others: Vec<_> = inboxes
            .into_iter()
            .enumerate()
            .map(|(i, inbox)| {
                let (router, stopped) = (router.clone(), stopped.clone());
                std::thread::Builder::new()
                    .name(format!("pond-serve-{}", i + 1))
                    .spawn_scoped(scope, move || {
                        runtime()?.block_on(
                            axum::serve(Handed(inbox, local), router)
                                .with_graceful_shutdown(until_stopped(stopped))
                                .into_future(),
                        )
                    })
            })
            .collect::<std::io::Result<_>>()?;
        let first = runtime()?.block_on(async {
            let accepting = accept(tokio::net::TcpListener::from_std(listener)?, hands, {
                let stopped = stopped.clone();
                until_stopped(stopped)
            });
            let serving = axum::serve(Handed(first, local), router)
                .with_graceful_shutdown(until_stopped(stopped.clone()))
                .into_future();
            let signalled = async {
                shutdown.await;
                let _ = stop.send(true);
            };
            let (accepted, served, ()) = tokio::join!(accepting, serving, signalled);
            accepted.and(served)
        });
        others
            .into_iter()
            .map(
                |t: std::thread::ScopedJoinHandle<'_, std::io::Result<()>>| {
                    t.join()
                        .unwrap_or_else(|_| Err(std::io::Error::other("a server thread panicked")))
                },
            )
            .fold(first, |all, one| all.and(one))
    })
}

/// Accepts connections until `stop` resolves, handing them to the serving threads in turn.
/// A failed accept is logged; unless it concerns that one connection (aborted, reset, refused),
/// the loop then waits a second (out of descriptors, say), as axum's own loop does. A thread
/// whose runtime could not start takes no connection: those handed to it are closed.
async fn accept(
    listener: tokio::net::TcpListener,
    hands: Vec<tokio::sync::mpsc::UnboundedSender<std::net::TcpStream>>,
    stop: impl Future<Output = ()>,
) -> std::io::Result<()> {
    tokio::pin!(stop);
    let mut next = 0usize;
    loop {
        let accepted = tokio::select! {
            () = &mut stop => return Ok(()),
            accepted = listener.accept() => accepted,
        };
        match accepted {
            Ok((stream, _)) => {
                // A connection whose socket cannot be detached is dropped: its client sees it
                // closed and may retry; the others are unaffected.
                match stream.into_std() {
                    Ok(stream) => {
                        let _ = hands[next % hands.len()].send(stream);
                        next = next.wrapping_add(1);
                    }
                    Err(e) => eprintln!("pond serve: dropped a connection: {e}"),
                }
            }
            Err(e) => {
                eprintln!("pond serve: accept failed: {e}");
                if !matches!(
                    e.kind(),
                    std::io::ErrorKind::ConnectionAborted
                        | std::io::ErrorKind::ConnectionReset
                        | std::io::ErrorKind::ConnectionRefused
                ) {
                    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
                }
            }
        }
    }
}

/// The connections one serving thread was handed, as axum's listener.
struct Handed(
    tokio::sync::mpsc::UnboundedReceiver<std::net::TcpStream>,
    std::net::SocketAddr,
);

impl axum::serve::Listener for Handed {
    type Io = tokio::net::TcpStream;
    type Addr = std::net::SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            let Some(stream) = self.0.recv().await else {
                // The acceptor has stopped: no connection comes any more, and the graceful
                // shutdown ends this thread's serving.
                return std::future::pending().await;
            };
            let addr = stream.peer_addr();
            match (tokio::net::TcpStream::from_std(stream), addr) {
                (Ok(stream), Ok(addr)) => return (stream, addr),
                (Err(e), _) | (_, Err(e)) => {
                    eprintln!("pond serve: dropped a connection: {e}")
                }
            }
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        Ok(self.1)
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    /// One request on its own connection; the body of the answer.
    fn get_body(addr: std::net::SocketAddr) -> String {
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        s.write_all(b"GET /thread HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .unwrap();
        let mut answer = String::new();
        s.read_to_string(&mut answer).unwrap();
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        answer
            .split("\r\n\r\n")
            .nth(1)
            .unwrap_or_default()
            .to_owned()
    }

    #[test]
    fn connections_are_served_by_every_thread_in_turn_and_all_stop_together() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let router = Router::new().route(
            "/thread",
            get(|| async { std::thread::current().name().unwrap_or("").to_owned() }),
        );
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = std::thread::spawn(move || {
            serve(listener, router, 3, async {
                let _ = stopped.await;
            })
        });
        let threads: Vec<String> = (0..6).map(|_| get_body(addr)).collect();
        // The acceptor's thread serves the first connection, the others the next in turn.
        let main = threads[0].clone();
        assert_eq!(
            threads,
            [
                main.as_str(),
                "pond-serve-1",
                "pond-serve-2",
                main.as_str(),
                "pond-serve-1",
                "pond-serve-2"
            ]
        );
        assert_ne!(main, "pond-serve-1");
        stop.send(()).unwrap();
        // Every thread's serving ends, and `serve` with them.
        server.join().unwrap().unwrap();
        assert!(std::net::TcpStream::connect(addr).is_err());
    }
}

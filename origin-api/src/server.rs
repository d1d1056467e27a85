//! The listener: accepts connections and serves HTTP/1.1 on them with limits that make a
//! hostile client cheap to refuse.
//!
//! `axum::serve` installs no timer, so hyper's header-read timeout never fires there,
//! and it offers no limit on connections or header size. This loop is axum's, with:
//! - a deadline for each request's head, which also closes an idle keep-alive connection:
//!   a connection waiting for a request (since it opened, or since its last response was
//!   written) is closed once it has waited [`Limits::header_read_timeout`], however it
//!   trickles; one busy with a request is closed after [`Limits::max_busy`] (a body that
//!   never arrives, an answer never read). A watchdog per connection checks once a second ([`Watch`]):
//!   hyper's own header timeout re-armed a timer for every request, which cost about a
//!   seventh of a cached redirect's CPU (`scripts/bench-redirect`);
//! - at most [`Limits::max_header_bytes`] of request line and headers (431 beyond);
//! - at most [`Limits::max_connections`] open connections: past it, the loop stops
//!   accepting and the kernel's backlog holds newcomers until one closes;
//! - the peer's address on every request, for limits per client (a router gets it as
//!   [`ConnectInfo`]; see [`App`]).

use axum::extract::ConnectInfo;
use axum::response::Response;
use axum::Router;
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::{watch, Semaphore};
use tower::ServiceExt;

/// What one listener allows each client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// From the moment a connection waits for a request until its last header arrives.
    pub header_read_timeout: Duration,
    /// Request line and headers together.
    pub max_header_bytes: usize,
    /// Connections open at once.
    pub max_connections: usize,
    /// The longest one request may keep its connection busy: reading its body, writing
    /// its answer to a client that reads slowly or not at all.
    pub max_busy: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            header_read_timeout: Duration::from_secs(10),
            max_header_bytes: 16 * 1024,
            max_connections: 10_000,
            max_busy: MAX_BUSY,
        }
    }
}

/// How often each connection's watchdog looks: deadlines hold to within this.
const WATCH_EVERY: Duration = Duration::from_secs(1);
/// The longest a connection may be busy with one request by default, reading its body
/// and writing its answer: past the API's request timeout (30 s), with room for a large
/// export.
pub const MAX_BUSY: Duration = Duration::from_secs(120);

/// A connection's state for its watchdog: waiting for a request since some moment, or
/// busy with one since some moment (the top bit), in milliseconds of the process's
/// clock. Two atomic stores per request, no timer.
#[derive(Debug)]
struct Watch {
    state: std::sync::atomic::AtomicU64,
}

const BUSY_BIT: u64 = 1 << 63;

fn clock_ms() -> u64 {
    static EPOCH: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    let epoch = EPOCH.get_or_init(std::time::Instant::now);
    u64::try_from(epoch.elapsed().as_millis()).unwrap_or(u64::MAX >> 1)
}

impl Watch {
    fn new() -> Self {
        Watch {
            state: std::sync::atomic::AtomicU64::new(clock_ms()),
        }
    }

    fn busy(&self) {
        self.state
            .store(clock_ms() | BUSY_BIT, std::sync::atomic::Ordering::Relaxed);
    }

    fn waiting(&self) {
        self.state
            .store(clock_ms(), std::sync::atomic::Ordering::Relaxed);
    }

    /// Whether the connection has waited longer than `head` for a request, or been busy
    /// with one longer than `busy`.
    fn overdue(&self, head: Duration, busy: Duration) -> bool {
        let state = self.state.load(std::sync::atomic::Ordering::Relaxed);
        let since = state & !BUSY_BIT;
        let limit = if state & BUSY_BIT != 0 { busy } else { head };
        clock_ms().saturating_sub(since) > u64::try_from(limit.as_millis()).unwrap_or(u64::MAX)
    }
}

/// A response body that marks its connection as waiting again once it is dropped (hyper
/// drops it when the last byte is written, or the write failed).
struct Finished {
    body: axum::body::Body,
    watch: Arc<Watch>,
}

impl Drop for Finished {
    fn drop(&mut self) {
        self.watch.waiting();
    }
}

impl http_body::Body for Finished {
    type Data = axum::body::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        std::pin::Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}

/// What [`serve`] runs: an answer to each request, given the client's address (a clone
/// of the app answers each).
pub trait App: Clone + Send + Sync + 'static {
    fn answer(
        self,
        req: axum::http::Request<Incoming>,
        peer: SocketAddr,
    ) -> impl Future<Output = Response> + Send + 'static;
}

/// A router gets the peer as [`ConnectInfo`], for its handlers' limits per client.
impl App for Router {
    fn answer(
        self,
        req: axum::http::Request<Incoming>,
        peer: SocketAddr,
    ) -> impl Future<Output = Response> + Send + 'static {
        let mut req = req.map(axum::body::Body::new);
        req.extensions_mut().insert(ConnectInfo(peer));
        let answered = self.oneshot(req);
        async move {
            match answered.await {
                Ok(res) => res,
                Err(never) => match never {},
            }
        }
    }
}

/// hyper's smallest read buffer; a header limit below it would never be reached first.
const MIN_BUFFER: usize = 8 * 1024;

/// Serves `app` on `listener` until `shutdown` completes, then lets open requests
/// finish: idle connections close at once, busy ones after their current response.
pub async fn serve(
    listener: TcpListener,
    app: impl App,
    limits: Limits,
    shutdown: impl std::future::Future<Output = ()> + Send,
) -> std::io::Result<()> {
    let slots = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let (closing, closed) = watch::channel(false);
    let mut http = hyper::server::conn::http1::Builder::new();
    // The watchdog keeps the deadlines; hyper needs no timer of its own.
    http.header_read_timeout(None::<Duration>)
        .max_header_size(limits.max_header_bytes)
        // The buffer holds a head and then a body's chunks; twice the head limit keeps a
        // read of a body as cheap as before without letting a head grow past its limit.
        .max_buf_size((limits.max_header_bytes * 2).max(MIN_BUFFER));
    let http = Arc::new(http);
    tokio::pin!(shutdown);
    loop {
        let slot = tokio::select! {
            _ = &mut shutdown => break,
            slot = slots.clone().acquire_owned() => match slot {
                Ok(slot) => slot,
                Err(_) => break,
            },
        };
        let (stream, peer) = tokio::select! {
            _ = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of file descriptors, or a connection reset before it was
                    // taken: wait a moment rather than spin, as axum does.
                    if !is_connection_error(&e) {
                        tracing::warn!(error = %e, "accept failed");
                        tokio::time::sleep(Duration::from_secs(1)).await;
                    }
                    continue;
                }
            },
        };
        let _ = stream.set_nodelay(true);
        let watch = Arc::new(Watch::new());
        let (began, ended) = (watch.clone(), watch.clone());
        let app = app.clone();
        let service = hyper::service::service_fn(move |req| {
            began.busy();
            let answer = app.clone().answer(req, peer);
            let ended = ended.clone();
            async move {
                // Waiting again once the whole answer is written (its body dropped).
                let res = answer.await;
                Ok::<_, Infallible>(res.map(move |body| Finished { body, watch: ended }))
            }
        });
        let http = http.clone();
        let mut closed = closed.clone();
        let (header_read_timeout, max_busy) = (limits.header_read_timeout, limits.max_busy);
        tokio::spawn(async move {
            let conn = http.serve_connection(TokioIo::new(stream), service);
            tokio::pin!(conn);
            let mut tick = tokio::time::interval(WATCH_EVERY);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            let mut draining = false;
            loop {
                tokio::select! {
                    _ = conn.as_mut() => break,
                    _ = tick.tick() => {
                        if watch.overdue(header_read_timeout, max_busy) {
                            // Dropping the connection closes it: a client that sends no
                            // complete head, or reads no answer, holds nothing longer.
                            break;
                        }
                    }
                    _ = async { closed.wait_for(|c| *c).await.map(|_| ()) }, if !draining => {
                        draining = true;
                        conn.as_mut().graceful_shutdown();
                    }
                }
            }
            drop(slot);
        });
    }
    drop(listener);
    let _ = closing.send(true);
    // Every connection holds a slot until it ends: having them all back is the drain.
    let _ = slots
        .acquire_many(u32::try_from(limits.max_connections.max(1)).unwrap_or(u32::MAX))
        .await;
    Ok(())
}

/// `fut` with a deadline of `limit`, whose timer is armed only if `fut` cannot finish
/// at once: a redirect served from memory completes on its first poll and pays for no
/// timer; one that waits on the database is cut off at the deadline.
pub async fn within<F: std::future::Future>(
    limit: std::time::Duration,
    fut: F,
) -> Result<F::Output, tokio::time::error::Elapsed> {
    use std::task::Poll;
    let mut fut = std::pin::pin!(fut);
    let first = std::future::poll_fn(|cx| Poll::Ready(fut.as_mut().poll(cx))).await;
    match first {
        Poll::Ready(done) => Ok(done),
        // Boxed: a timer is most of a kilobyte, which every visit's future would
        // otherwise carry (and hyper copy) to serve only the ones that wait.
        Poll::Pending => Box::pin(tokio::time::timeout(limit, fut)).await,
    }
}

fn is_connection_error(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::ConnectionRefused
            | std::io::ErrorKind::ConnectionAborted
            | std::io::ErrorKind::ConnectionReset
    )
}

/// The address of the client a request came from, when it came through [`serve`].
pub fn peer(req: &axum::http::request::Parts) -> Option<SocketAddr> {
    req.extensions
        .get::<ConnectInfo<SocketAddr>>()
        .map(|ConnectInfo(a)| *a)
}

/// What a request past the in-flight cap gets.
pub const BUSY: &str = "The server is busy. Please try again shortly.\n";

/// The answer past the in-flight cap ([`crate::in_flight`]).
pub fn busy() -> axum::response::Response {
    use axum::http::{header, HeaderValue, StatusCode};
    use axum::response::IntoResponse;
    let mut res = (StatusCode::SERVICE_UNAVAILABLE, BUSY).into_response();
    res.headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    res.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    res
}

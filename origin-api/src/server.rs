//! The listener: accepts connections and serves HTTP/1.1 on them with limits that make a
//! hostile client cheap to refuse.
//!
//! `axum::serve` installs no timer, so hyper's header-read timeout never fires there,
//! and it offers no limit on connections or header size. This loop is axum's, with:
//! - a deadline for each request's head, which also closes an idle keep-alive connection:
//!   a connection waiting for a request (since it opened, or since its last response was
//!   written) is closed once it has waited [`Limits::header_read_timeout`], however it
//!   trickles; one busy with a request is closed after [`Limits::max_busy`] (a body that
//!   never arrives, an answer never read). One watchdog for the whole listener looks at
//!   every connection once a second ([`Watchdog`]): hyper's own header timeout re-armed a
//!   timer for every request, which cost about a seventh of a cached redirect's CPU
//!   (`scripts/bench-redirect`), and a timer and a shutdown signal polled by each
//!   connection cost a request about 500 instructions more than one flag
//!   (`scripts/bench-redirect-instructions`);
//! - at most [`Limits::max_header_bytes`] of request line and headers (431 beyond);
//! - at most [`Limits::max_connections`] open connections: past it, the loop stops
//!   accepting and the kernel's backlog holds newcomers until one closes;
//! - the peer's address on every request, for limits per client (a router gets it as
//!   [`ConnectInfo`]; see [`App`]).

use axum::extract::ConnectInfo;
use axum::response::Response;
use axum::Router;
use futures_util::task::AtomicWaker;
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
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

/// How often the watchdog looks: a deadline holds to within two of these (a change is
/// seen at the first look after it, and a deadline passed at the next look after that).
const WATCH_EVERY: Duration = Duration::from_secs(1);
/// The longest a connection may be busy with one request by default, reading its body
/// and writing its answer: past the API's request timeout (30 s), with room for a large
/// export.
pub const MAX_BUSY: Duration = Duration::from_secs(120);

/// One connection as the watchdog sees it, and what the watchdog tells it.
#[derive(Debug, Default)]
struct Watch {
    /// Moves on every change between waiting for a request and being busy with one; odd
    /// while busy. The connection's own task is the only writer, and reads no clock: the
    /// watchdog notes when it first saw each value.
    turns: AtomicU64,
    /// [`RUN`], [`DRAIN`] or [`CLOSE`], set by the watchdog.
    order: AtomicU8,
    /// The connection's task, woken when `order` changes.
    waker: AtomicWaker,
}

const RUN: u8 = 0;
/// Finish the request under way, if any, and close.
const DRAIN: u8 = 1;
/// Close now.
const CLOSE: u8 = 2;

impl Watch {
    fn busy(&self) {
        let turns = self.turns.load(Ordering::Relaxed);
        if turns.is_multiple_of(2) {
            self.turns.store(turns + 1, Ordering::Relaxed);
        }
    }

    fn waiting(&self) {
        let turns = self.turns.load(Ordering::Relaxed);
        if !turns.is_multiple_of(2) {
            self.turns.store(turns + 1, Ordering::Relaxed);
        }
    }

    fn tell(&self, order: u8) {
        if self.order.fetch_max(order, Ordering::AcqRel) < order {
            self.waker.wake();
        }
    }

    /// Resolves to the watchdog's order once it is past `heard`: one atomic load per poll
    /// while nothing changes, and the waker kept only when it is not the same task's.
    fn ordered(&self, heard: u8) -> impl Future<Output = u8> + '_ {
        std::future::poll_fn(move |cx| {
            let order = self.order.load(Ordering::Acquire);
            if order > heard {
                return std::task::Poll::Ready(order);
            }
            self.waker.register(cx.waker());
            match self.order.load(Ordering::Acquire) {
                order if order > heard => std::task::Poll::Ready(order),
                _ => std::task::Poll::Pending,
            }
        })
    }
}

/// What the watchdog keeps of one connection: the last [`Watch::turns`] it saw, and when
/// it first saw it.
struct Seen {
    watch: Arc<Watch>,
    turns: u64,
    since: Instant,
}

/// Every open connection of one listener, looked at once per [`WATCH_EVERY`].
#[derive(Default)]
struct Watchdog {
    open: Mutex<HashMap<u64, Seen>>,
    next: AtomicU64,
}

/// A connection's place in the watchdog: it is forgotten when this is dropped, however
/// the connection's task ends.
struct Watched {
    dog: Arc<Watchdog>,
    id: u64,
}

impl Drop for Watched {
    fn drop(&mut self) {
        self.dog.ended(self.id);
    }
}

/// The watchdog's own task, stopped when `serve` returns or is dropped.
struct Looking(tokio::task::JoinHandle<()>);

impl Drop for Looking {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl Watchdog {
    /// A new connection; it is watched until [`Watchdog::ended`].
    fn opened(&self) -> (u64, Arc<Watch>) {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let watch = Arc::new(Watch::default());
        let seen = Seen {
            watch: watch.clone(),
            turns: 0,
            since: Instant::now(),
        };
        self.open
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id, seen);
        (id, watch)
    }

    fn ended(&self, id: u64) {
        self.open
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&id);
    }

    /// Closes each connection that has waited longer than `head` for a request, or been
    /// busy with one longer than `busy`.
    fn look(&self, now: Instant, head: Duration, busy: Duration) {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        for seen in open.values_mut() {
            let turns = seen.watch.turns.load(Ordering::Relaxed);
            if turns != seen.turns {
                seen.turns = turns;
                seen.since = now;
                continue;
            }
            let limit = if turns.is_multiple_of(2) { head } else { busy };
            if now.saturating_duration_since(seen.since) > limit {
                seen.watch.tell(CLOSE);
            }
        }
    }

    /// Every connection finishes the request under way, if any, and closes.
    fn drain(&self) {
        let open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        for seen in open.values() {
            seen.watch.tell(DRAIN);
        }
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
    let watchdog = Arc::new(Watchdog::default());
    let _looking = Looking(tokio::spawn({
        let watchdog = watchdog.clone();
        let (head, busy) = (limits.header_read_timeout, limits.max_busy);
        async move {
            let mut tick = tokio::time::interval(WATCH_EVERY);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                watchdog.look(Instant::now(), head, busy);
            }
        }
    }));
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
        let (id, watch) = watchdog.opened();
        let watched = Watched {
            dog: watchdog.clone(),
            id,
        };
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
        tokio::spawn(async move {
            let conn = http.serve_connection(TokioIo::new(stream), service);
            tokio::pin!(conn);
            let mut heard = RUN;
            loop {
                tokio::select! {
                    biased;
                    _ = conn.as_mut() => break,
                    order = watch.ordered(heard) => {
                        heard = order;
                        if order == CLOSE {
                            // Dropping the connection closes it: a client that sends no
                            // complete head, or reads no answer, holds nothing longer.
                            break;
                        }
                        conn.as_mut().graceful_shutdown();
                    }
                }
            }
            drop(watched);
            drop(slot);
        });
    }
    drop(listener);
    watchdog.drain();
    // Every connection holds a slot until it ends: having them all back is the drain.
    let _ = slots
        .acquire_many(u32::try_from(limits.max_connections.max(1)).unwrap_or(u32::MAX))
        .await;
    Ok(())
}

fn is_connection_error(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::ConnectionRefused
            | std::io::ErrorKind::ConnectionAborted
            | std::io::ErrorKind::ConnectionReset
    )
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

#[cfg(test)]
mod tests {
    use super::*;

    const HEAD: Duration = Duration::from_secs(10);
    const BUSY: Duration = Duration::from_secs(120);

    fn order(watch: &Watch) -> u8 {
        watch.order.load(Ordering::Acquire)
    }

    #[test]
    fn a_connection_waiting_past_the_head_deadline_is_told_to_close() {
        let dog = Watchdog::default();
        let (_, watch) = dog.opened();
        let opened = Instant::now();
        dog.look(opened + HEAD / 2, HEAD, BUSY);
        assert_eq!(order(&watch), RUN);
        dog.look(opened + HEAD + Duration::from_millis(1), HEAD, BUSY);
        assert_eq!(order(&watch), CLOSE);
    }

    #[test]
    fn each_request_starts_the_clock_again_and_a_busy_one_gets_the_longer_limit() {
        let dog = Watchdog::default();
        let (_, watch) = dog.opened();
        let t0 = Instant::now();
        // A request arrives: from the watchdog's next look, busy since then.
        watch.busy();
        dog.look(t0 + HEAD, HEAD, BUSY);
        dog.look(t0 + HEAD * 3, HEAD, BUSY);
        assert_eq!(order(&watch), RUN, "a busy connection has the busy limit");
        dog.look(t0 + HEAD + BUSY + Duration::from_millis(1), HEAD, BUSY);
        assert_eq!(order(&watch), CLOSE);

        let (_, watch) = dog.opened();
        // Requests answered between looks keep a connection alive however many there are.
        for look in 1..=5u32 {
            watch.busy();
            watch.waiting();
            dog.look(t0 + HEAD * look, HEAD, BUSY);
            assert_eq!(order(&watch), RUN, "look {look}");
        }
        // Then nothing more: closed a head deadline after the last look that saw a change.
        dog.look(t0 + HEAD * 6 + Duration::from_millis(1), HEAD, BUSY);
        assert_eq!(order(&watch), CLOSE);
    }

    #[test]
    fn a_drain_reaches_every_open_connection_and_an_ended_one_is_forgotten() {
        let dog = Watchdog::default();
        let (a, first) = dog.opened();
        let (_, second) = dog.opened();
        dog.ended(a);
        dog.drain();
        assert_eq!(order(&first), RUN, "an ended connection is not watched");
        assert_eq!(order(&second), DRAIN);
        // A drain never undoes a close.
        second.tell(CLOSE);
        second.tell(DRAIN);
        assert_eq!(order(&second), CLOSE);
    }

    /// An app that answers `/slow` once its test says so, and anything else at once.
    #[derive(Clone)]
    struct Gated(Arc<tokio::sync::Notify>);

    impl App for Gated {
        async fn answer(self, req: axum::http::Request<Incoming>, _: SocketAddr) -> Response {
            if req.uri().path() == "/slow" {
                self.0.notified().await;
            }
            Response::new(axum::body::Body::from("done"))
        }
    }

    async fn read_all(stream: &mut tokio::net::TcpStream) -> String {
        use tokio::io::AsyncReadExt;
        let mut got = Vec::new();
        let _ = stream.read_to_end(&mut got).await;
        String::from_utf8_lossy(&got).into_owned()
    }

    #[tokio::test]
    async fn at_shutdown_a_request_under_way_is_answered_and_an_idle_connection_closed() {
        use tokio::io::AsyncWriteExt;
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let gate = Arc::new(tokio::sync::Notify::new());
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(serve(
            listener,
            Gated(gate.clone()),
            Limits::default(),
            async move {
                let _ = stopped.await;
            },
        ));
        // One connection with a request under way, one that was answered and waits.
        let mut busy = tokio::net::TcpStream::connect(addr).await.expect("connect");
        busy.write_all(b"GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .expect("write");
        let mut idle = tokio::net::TcpStream::connect(addr).await.expect("connect");
        idle.write_all(b"GET /fast HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .expect("write");
        let mut first = [0u8; 12];
        tokio::io::AsyncReadExt::read_exact(&mut idle, &mut first)
            .await
            .expect("the idle connection's first answer");
        assert_eq!(&first, b"HTTP/1.1 200");
        stop.send(()).expect("the server is running");
        // The idle connection is closed without waiting for its head deadline (10 s).
        let rest = tokio::time::timeout(Duration::from_secs(5), read_all(&mut idle))
            .await
            .expect("an idle connection was kept open after shutdown");
        assert!(rest.ends_with("done"), "{rest}");
        // The request under way still gets its answer, and then the server is done.
        gate.notify_one();
        let answered = tokio::time::timeout(Duration::from_secs(5), read_all(&mut busy))
            .await
            .expect("the request under way was never answered");
        assert!(answered.starts_with("HTTP/1.1 200"), "{answered}");
        assert!(answered.ends_with("done"), "{answered}");
        tokio::time::timeout(Duration::from_secs(5), server)
            .await
            .expect("serve did not return once drained")
            .expect("serve's task")
            .expect("serve");
    }
}

//! The reference server of `scripts/bench-redirect`: hyper on the same tokio runtime the
//! origin uses, answering every request with the same fixed 302 and doing nothing else.
//! The origin's redirect is measured against it, so the figures say what Hop's own work
//! costs on top of the HTTP stack it cannot avoid.
//!
//!     cargo run --release -p origin-api --example bare_302 -- 127.0.0.1:3901

use http_body_util::Empty;
use hyper::body::Bytes;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{header, Response, StatusCode};
use hyper_util::rt::TokioIo;
use std::convert::Infallible;

/// The origin's own allocator, so that the comparison is one of logic, not of malloc.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:3901".into());
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    eprintln!("bare 302 server on {addr}");
    loop {
        let (stream, _) = listener.accept().await?;
        tokio::spawn(async move {
            let service = service_fn(|_req| async {
                Ok::<_, Infallible>(
                    Response::builder()
                        .status(StatusCode::FOUND)
                        .header(header::LOCATION, "https://example.com/landing")
                        .header(header::CACHE_CONTROL, "private, max-age=3600")
                        .body(Empty::<Bytes>::new())
                        .unwrap_or_default(),
                )
            });
            let _ = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

//! The second reference server of `scripts/bench-redirect`: the bare server plus the one
//! thing a shortener cannot skip, a lookup. It loads every code of a file into a
//! `HashMap` (code → target) and answers `GET /{code}` with a 302 to its target, or 404.
//! Between it and the bare 302 lies the cost of a map of a million links; between it
//! and Hop lies the cost of Hop's own logic.
//!
//!     cargo run --release -p origin-api --example hashmap_302 -- 127.0.0.1:3902 known.txt

use http_body_util::Empty;
use hyper::body::Bytes;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{header, Response, StatusCode};
use hyper_util::rt::TokioIo;
use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::Arc;

/// The origin's own allocator, so that the comparison is one of logic, not of malloc.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let addr = args.next().unwrap_or_else(|| "127.0.0.1:3902".into());
    let file = args.next().unwrap_or_else(|| "known.txt".into());
    let links: HashMap<String, String> = std::fs::read_to_string(&file)?
        .lines()
        .filter(|l| !l.is_empty())
        .map(|code| (code.to_owned(), format!("https://dest.example/{code}")))
        .collect();
    let links = Arc::new(links);
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    eprintln!("hashmap 302 server on {addr} with {} links", links.len());
    loop {
        let (stream, _) = listener.accept().await?;
        let links = links.clone();
        tokio::spawn(async move {
            let service = service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                let found = links.get(req.uri().path().trim_start_matches('/')).cloned();
                async move {
                    let res = match found {
                        Some(target) => Response::builder()
                            .status(StatusCode::FOUND)
                            .header(header::LOCATION, target)
                            .header(header::CACHE_CONTROL, "private, max-age=60"),
                        None => Response::builder().status(StatusCode::NOT_FOUND),
                    };
                    Ok::<_, Infallible>(res.body(Empty::<Bytes>::new()).unwrap_or_default())
                }
            });
            let _ = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

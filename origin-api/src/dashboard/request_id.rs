//! Each dashboard request's id: what ties a failure's page (which names it) to its line
//! in the log, and what every answer carries in [`HEADER`].

use axum::extract::Request;
use axum::http::HeaderValue;
use axum::middleware::Next;
use axum::response::Response;
use std::future::Future;

tokio::task_local! {
    /// The id of the request being answered.
    static REQUEST_ID: String;
}

/// The header a dashboard answer carries its request id in.
pub(super) const HEADER: &str = "x-request-id";

/// The id of the request being answered (`-` outside one).
pub(super) fn current() -> String {
    REQUEST_ID
        .try_with(String::clone)
        .unwrap_or_else(|_| "-".to_owned())
}

/// Runs `work` as the request `id`.
pub(super) async fn scope<F: Future>(id: String, work: F) -> F::Output {
    REQUEST_ID.scope(id, work).await
}

/// Gives the request an id for its answer's pages and log lines, and its answer the
/// [`HEADER`] that names it.
pub(super) async fn with_request_id(req: Request, next: Next) -> Response {
    // 64 random bits: no two requests a support case compares share one.
    let id = crate::random_ids::random_hex::<8>().unwrap_or_else(|_| "norandom".to_owned());
    let mut res = scope(id.clone(), next.run(req)).await;
    if let Ok(value) = HeaderValue::from_str(&id) {
        res.headers_mut().insert(HEADER, value);
    }
    res
}

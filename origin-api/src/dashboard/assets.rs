//! The dashboard's own assets, compiled into the binary: no CDN, no other host.

use axum::extract::Path;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};

const CSS: &str = include_str!("../../assets/dashboard.css");

/// `GET /assets/{name}`: cached for an hour (a new release may change them).
pub(super) async fn asset(Path(name): Path<String>) -> Response {
    let (body, kind) = match name.as_str() {
        "dashboard.css" => (CSS, "text/css; charset=utf-8"),
        _ => return StatusCode::NOT_FOUND.into_response(),
    };
    (
        [
            (header::CONTENT_TYPE, kind),
            (header::CACHE_CONTROL, "public, max-age=3600"),
        ],
        body,
    )
        .into_response()
}

//! A decision as the HTTP response the origin sends: written where it is decided, so the
//! response is built from the decision in place (returning the decision to be written
//! elsewhere cost the cached redirect about 2% more instructions: each move copies it
//! whole). Inline: the visit's module is compiled apart from this one.

use axum::body::Bytes;
use axum::http::{header, HeaderName, HeaderValue, StatusCode};
use axum::response::Response;
use shared::decision::DEFAULT_CACHE_CONTROL;
use shared::Decision;
use std::borrow::Cow;

/// The answer to a browser's ask for a short domain's icon: `204`, kept a week, and
/// never counted as a visit or an answer (`shared::is_favicon`); from memory, on
/// every path that answers visits.
#[inline]
pub(super) fn favicon() -> Response {
    let mut res = Response::new(axum::body::Body::empty());
    *res.status_mut() = StatusCode::NO_CONTENT;
    res.headers_mut().insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static(shared::FAVICON_CACHE_CONTROL),
    );
    res
}

/// The headers `shared::decide` writes, without parsing their names on every request.
fn header_name(name: &str) -> Option<HeaderName> {
    Some(match name {
        "location" => header::LOCATION,
        "cache-control" => header::CACHE_CONTROL,
        "content-type" => header::CONTENT_TYPE,
        "retry-after" => header::RETRY_AFTER,
        "allow" => header::ALLOW,
        "vary" => header::VARY,
        "set-cookie" => header::SET_COOKIE,
        "content-security-policy" => header::CONTENT_SECURITY_POLICY,
        other => return HeaderName::from_bytes(other.as_bytes()).ok(),
    })
}

#[inline]
pub(super) fn write(mut decision: Decision) -> Response {
    let body = match decision.body {
        shared::Body::Empty => axum::body::Body::empty(),
        shared::Body::Text(s) | shared::Body::Html(s) => axum::body::Body::from(s),
        shared::Body::Page(page) => axum::body::Body::from(page),
    };
    let mut res = Response::new(body);
    *res.status_mut() =
        StatusCode::from_u16(decision.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let headers = res.headers_mut();
    for (name, value) in decision.headers.take_all() {
        // The decision's strings become the header values as they are, without a copy;
        // the usual cache header is checked once, at compile time.
        let value = match value {
            Cow::Borrowed(DEFAULT_CACHE_CONTROL) => Ok(DEFAULT_CACHE_HEADER),
            Cow::Borrowed(value) => {
                HeaderValue::from_maybe_shared(Bytes::from_static(value.as_bytes()))
            }
            Cow::Owned(value) => HeaderValue::from_maybe_shared(Bytes::from(value)),
        };
        if let (Some(name), Ok(value)) = (header_name(name), value) {
            headers.insert(name, value);
        }
    }
    res
}

const DEFAULT_CACHE_HEADER: HeaderValue = HeaderValue::from_static(DEFAULT_CACHE_CONTROL);

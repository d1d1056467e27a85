//! JSON request bodies, each route with its own size limit, refused with a problem
//! document that names it.

use crate::error::AppError;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::header;
use axum::http::StatusCode;
use axum::response::Response;
use serde::de::DeserializeOwned;

/// Bodies of single-object calls (a link, a change, a ban): the largest valid link is
/// under 8 KiB even with every field at its limit and escaped.
pub const SMALL_BODY_LIMIT: usize = 64 * 1024;
/// A bulk create: 10,000 realistic links (a target of a few hundred bytes, a title and
/// tags) fit with room to spare; the parsed batch takes about as much again.
pub const BULK_BODY_LIMIT: usize = 16 * 1024 * 1024;
/// A batch of the edge's queue messages: the consumer's 100 tallies of at most 64 KiB
/// (`shared::tally::MAX_TALLY_BYTES`), or 1,000 events of under 1 KiB.
pub const CLICKS_BODY_LIMIT: usize = 8 * 1024 * 1024;

/// A JSON body of at most `LIMIT` bytes whose rejections are problem documents: 415
/// without a JSON content type, 413 past the limit (before reading it, when
/// `Content-Length` says so), 400 for malformed JSON, 422 when it does not fit `T` or is
/// not an object.
#[derive(Debug)]
pub struct ApiJson<T, const LIMIT: usize = SMALL_BODY_LIMIT>(pub T);

impl<S, T, const LIMIT: usize> FromRequest<S> for ApiJson<T, LIMIT>
where
    S: Send + Sync,
    T: DeserializeOwned,
{
    type Rejection = AppError;

    async fn from_request(req: Request, _state: &S) -> Result<Self, AppError> {
        let headers = req.headers();
        if !is_json(headers.get(header::CONTENT_TYPE)) {
            return Err(AppError::UnsupportedMediaType(
                "send Content-Type: application/json".into(),
            ));
        }
        let declared = headers
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        if declared.is_some_and(|n| n > LIMIT as u64) {
            return Err(AppError::TooLarge { limit: LIMIT });
        }
        let bytes = axum::body::to_bytes(req.into_body(), LIMIT)
            .await
            .map_err(|_| AppError::TooLarge { limit: LIMIT })?;
        let axum::Json(value) = axum::Json::<T>::from_bytes(&bytes)?;
        // serde also reads a struct from a JSON array, its fields in order (`[null,
        // null]` was a valid change): every body of this API is an object.
        if bytes.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
            return Err(AppError::invalid("body", "send a JSON object"));
        }
        Ok(ApiJson(value))
    }
}

/// `application/json`, or any `application/…+json`, with or without parameters.
fn is_json(value: Option<&axum::http::HeaderValue>) -> bool {
    let Some(essence) = value
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .map(|v| v.trim().to_ascii_lowercase())
    else {
        return false;
    };
    essence == "application/json"
        || essence
            .strip_prefix("application/")
            .is_some_and(|sub| sub.ends_with("+json"))
}

/// Query strings whose rejections are problem documents.
#[derive(Debug, FromRequestParts)]
#[from_request(via(axum::extract::Query), rejection(AppError))]
pub(crate) struct ApiQuery<T>(pub(crate) T);

/// Path parameters whose rejections (an id that is not a number) are problem documents.
#[derive(Debug, FromRequestParts)]
#[from_request(via(axum::extract::Path), rejection(AppError))]
pub(crate) struct ApiPath<T>(pub(crate) T);

/// `body` as JSON with `status`, its `ETag` the quoted `version`.
pub(crate) fn versioned<T: serde::Serialize>(
    status: StatusCode,
    body: &T,
    version: u64,
) -> Response {
    use axum::response::IntoResponse;
    let mut res = (status, axum::Json(body)).into_response();
    if let Ok(etag) = axum::http::HeaderValue::from_str(&format!("\"{version}\"")) {
        res.headers_mut().insert(axum::http::header::ETAG, etag);
    }
    res
}

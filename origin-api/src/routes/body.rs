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
/// A domain's legacy codes: 10,000 codes or short URLs of a few dozen bytes each, with
/// room for longer ones.
pub(super) const LIST_BODY_LIMIT: usize = 4 * 1024 * 1024;
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
        let axum::Json(value) = match axum::Json::<T>::from_bytes(&bytes) {
            Ok(parsed) => parsed,
            // Read again with `40.0` as `40` only when the body did not fit as sent, so
            // a body written with integers costs one parse.
            Err(rejection) => match with_whole_numbers(&bytes) {
                Some(rewritten) => axum::Json::<T>::from_bytes(&rewritten)?,
                None => return Err(rejection.into()),
            },
        };
        // serde also reads a struct from a JSON array, its fields in order (`[null,
        // null]` was a valid change): every body of this API is an object.
        if bytes.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
            return Err(AppError::invalid("body", "send a JSON object"));
        }
        Ok(ApiJson(value))
    }
}

/// The body with every whole float below 2^53 in magnitude written as the integer it is
/// (`40.0` as `40`), or `None` when it holds none (or is not JSON). JSON has one kind of
/// number, and JSON Schema, in which the API is described, calls `40.0` an integer; a
/// JavaScript client may well send it. serde reads an integer field only from an
/// integer, so the body is rewritten once rather than every integer field read twice.
/// Below 2^53 each whole float is exactly one integer; a fraction stays and is refused.
fn with_whole_numbers(bytes: &[u8]) -> Option<Vec<u8>> {
    fn rewrite(value: &mut serde_json::Value) -> bool {
        use serde_json::Value;
        match value {
            Value::Number(n) if !n.is_i64() && !n.is_u64() => match n.as_f64() {
                Some(f) if f.fract() == 0.0 && f.abs() < 9_007_199_254_740_992.0 => {
                    *value = Value::from(f as i64);
                    true
                }
                _ => false,
            },
            Value::Array(items) => rewrite_all(items.iter_mut()),
            Value::Object(fields) => rewrite_all(fields.values_mut()),
            _ => false,
        }
    }
    /// Every value is visited, whether or not one before it changed.
    fn rewrite_all<'a>(values: impl Iterator<Item = &'a mut serde_json::Value>) -> bool {
        let mut changed = false;
        for v in values {
            changed |= rewrite(v);
        }
        changed
    }
    let mut value: serde_json::Value = serde_json::from_slice(bytes).ok()?;
    if !rewrite(&mut value) {
        return None;
    }
    serde_json::to_vec(&value).ok()
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

/// The version an optional `If-Match` names: `None` without one, 400 for one that names
/// no version.
pub(crate) fn optional_if_match(headers: &axum::http::HeaderMap) -> Result<Option<u64>, AppError> {
    headers
        .get(header::IF_MATCH)
        .map(|v| crate::links::parse_if_match(v.to_str().ok()))
        .transpose()
}

#[cfg(test)]
mod tests {
    use super::with_whole_numbers;

    fn rewritten(json: &str) -> Option<String> {
        with_whole_numbers(json.as_bytes()).map(|b| String::from_utf8(b).expect("UTF-8"))
    }

    #[test]
    fn whole_floats_become_the_integers_they_are_and_nothing_else_changes() {
        assert_eq!(
            rewritten(r#"{"ttl_s": 210.0, "n": [2.1e2, -3.0], "at": {"x": 1.0}}"#).as_deref(),
            Some(r#"{"at":{"x":1},"n":[210,-3],"ttl_s":210}"#)
        );
        // Read exactly, near 2^53 too (serde_json's `float_roundtrip`).
        assert_eq!(
            rewritten(r#"{"hour": 3772208076451198.0}"#).as_deref(),
            Some(r#"{"hour":3772208076451198}"#)
        );
        // Nothing to rewrite: the body is read as it was, and its error stands.
        for kept in [
            r#"{"ttl_s": 210}"#,
            r#"{"ttl_s": 210.5}"#,
            r#"{"ttl_s": 1e300}"#,
            r#"{"ttl_s": 9007199254740992.0}"#,
            r#"{"ttl_s": "210.0"}"#,
            "not json",
        ] {
            assert_eq!(rewritten(kept), None, "{kept}");
        }
    }
}

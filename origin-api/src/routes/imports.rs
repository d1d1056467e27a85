//! `/v1/imports`: another shortener's links, from its export or one page of its API.

use super::body::{ApiJson, BULK_BODY_LIMIT};
use crate::auth::Caller;
use crate::error::{AppError, Problem};
use crate::links::Links;
use crate::views::imports::{ImportReport, ImportRequest};
use axum::extract::State;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use std::sync::Arc;

/// `POST /v1/imports`: imports (or, with `dry_run`, judges) the links of a file or an
/// API page of another shortener, codes and domains kept exactly; one line per link.
#[utoipa::path(post, path = "/v1/imports", operation_id = "import_links", tag = "links", request_body = ImportRequest,
    responses(
        (status = 200, description = "Every link's outcome: created, changed, unchanged, refused (with the reason), skipped (with the reason) or deferred (send the same content again after `retry_after_s`, also in `Retry-After`)", body = ImportReport),
        (status = 422, description = "the content cannot be read as that source's format (nothing is imported), more than 10,000 links, or a bad field", body = Problem, content_type = "application/problem+json"),
        (status = 429, description = "this key creates too fast; see Retry-After", body = Problem, content_type = "application/problem+json"),
    ),
    security(("api_key" = [])))]
pub(crate) async fn create(
    State(state): State<Arc<Links>>,
    caller: Caller,
    ApiJson(body): ApiJson<ImportRequest, BULK_BODY_LIMIT>,
) -> Result<Response, AppError> {
    let report = crate::links::import::run(&state, &caller.creator(), &caller.key_id, body).await?;
    let mut res = (StatusCode::OK, Json(&report)).into_response();
    if let Some(s) = report.retry_after_s {
        if let Ok(v) = HeaderValue::from_str(&s.to_string()) {
            res.headers_mut().insert(header::RETRY_AFTER, v);
        }
    }
    Ok(res)
}

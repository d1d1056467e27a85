//! `/v1/links/{domain}/{code}/history` and `…/revert`: a link's changes, and going back
//! to one of its versions (docs/history.md).

use super::body::{ApiJson, ApiPath, ApiQuery};
use super::responses::{IfMatchHonoured, NoSuchLink, ReadAndDeleteOnly};
use crate::auth::Caller;
use crate::error::{AppError, Problem};
use crate::links::{history, revert_link, Intent, Links};
use crate::views::history::{HistoryEntry, HistoryParams, Revert};
use crate::views::links::{LinkView, Page};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use axum::Json;
use std::sync::Arc;

/// `GET /v1/links/{domain}/{code}/history`: newest first, a page at a time.
#[utoipa::path(get, path = "/v1/links/{domain}/{code}/history", operation_id = "link_history", tag = "links",
    params(("domain" = String, Path), ("code" = String, Path), HistoryParams),
    responses(
        (status = 200, description = "A page of the link's changes, newest first", body = Page<HistoryEntry>),
        NoSuchLink,
        (status = 422, description = "a bad cursor or limit", body = Problem, content_type = "application/problem+json"),
    ),
    security(("api_key" = [])))]
pub(crate) async fn list(
    State(state): State<Arc<Links>>,
    caller: Caller,
    ApiPath((domain, code)): ApiPath<(String, String)>,
    ApiQuery(params): ApiQuery<HistoryParams>,
) -> Result<Json<Page<HistoryEntry>>, AppError> {
    let link = state
        .owned(&caller.creator(), &domain, &code, Intent::ReadOrDelete)
        .await?;
    let page = history::history(&state, &link, params.cursor.as_deref(), params.limit).await?;
    Ok(Json(page))
}

/// `POST /v1/links/{domain}/{code}/revert`: the fields of an earlier version back, as a
/// new version; `If-Match` is honoured when sent.
#[utoipa::path(post, path = "/v1/links/{domain}/{code}/revert", operation_id = "revert_link", tag = "links",
    request_body = Revert,
    params(("domain" = String, Path), ("code" = String, Path),
        ("If-Match" = Option<String>, Header, description = "Optional: refuse with 412 if the version moved on")),
    responses(
        (status = 200, description = "Reverted: a new version with the old one's fields, published to the edge", body = LinkView, headers(("ETag" = String))),
        ReadAndDeleteOnly, NoSuchLink,
        (status = 410, description = "the link is deleted: restore it first", body = Problem, content_type = "application/problem+json"),
        IfMatchHonoured,
        (status = 422, description = "no such version in the history; the version is the deleted link, expired, or needed a secret the history does not keep; or a target no longer passes the policy or is on a banned host", body = Problem, content_type = "application/problem+json"),
    ),
    security(("api_key" = [])))]
pub(crate) async fn revert(
    State(state): State<Arc<Links>>,
    caller: Caller,
    ApiPath((domain, code)): ApiPath<(String, String)>,
    headers: HeaderMap,
    ApiJson(body): ApiJson<Revert>,
) -> Result<Response, AppError> {
    let expected = super::body::optional_if_match(&headers)?;
    let creator = caller.creator();
    let current = state
        .owned(&creator, &domain, &code, Intent::Change)
        .await?;
    let link = revert_link(&state, current, expected, body.version, creator.actor).await?;
    tracing::info!(link = %link.route_key(), to = body.version, by = %caller.key_id, "link reverted");
    Ok(super::body::versioned(
        StatusCode::OK,
        &state.view(&link),
        link.version,
    ))
}

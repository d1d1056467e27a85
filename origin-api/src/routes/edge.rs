//! `/v1/edge/*`: what the edge worker asks the origin. Authenticated by the edge token
//! (`HOP_EDGE_TOKEN`, the worker's `ORIGIN_TOKEN`), not by an API key.

use super::body::{ApiJson, ApiPath, CLICKS_BODY_LIMIT};
use crate::edge::Edge;
use crate::error::{AppError, Problem};
use axum::extract::{FromRef, FromRequestParts, State};
use axum::http::request::Parts;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use shared::clicks::{ClickBatch, ClickReceipt, MAX_CLICK_BATCH};
use shared::tally::MAX_TALLIES_PER_POST;
use std::sync::Arc;

/// A request carrying the edge token. Checked before the body is read, so a caller
/// without the token learns nothing about what the endpoints accept.
pub(crate) struct EdgeCaller;

impl<S: Send + Sync> FromRequestParts<S> for EdgeCaller
where
    Arc<Edge>: FromRef<S>,
{
    type Rejection = AppError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, AppError> {
        let given = parts
            .headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .unwrap_or_default();
        Arc::<Edge>::from_ref(state).admit(given)?;
        Ok(EdgeCaller)
    }
}

/// `GET /v1/edge/resolve/{domain}/{code}`: the link's edge record (marked `banned` when a
/// ban covers it), or 404. The edge asks about codes KV does not hold yet; the answer
/// comes from the same cache as the origin's own redirect.
#[utoipa::path(get, path = "/v1/edge/resolve/{domain}/{code}", operation_id = "edge_resolve", tag = "edge",
    params(("domain" = String, Path), ("code" = String, Path)),
    responses(
        (status = 200, description = "The edge record, as KV would hold it", content_type = "application/json"),
        (status = 404, description = "No such link", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "No edge token configured, or the database cannot answer", body = Problem, content_type = "application/problem+json"),
    ),
    security(("edge_token" = [])))]
pub(crate) async fn resolve(
    State(state): State<Arc<Edge>>,
    _edge: EdgeCaller,
    ApiPath((domain, code)): ApiPath<(String, String)>,
) -> Result<Response, AppError> {
    let record = state.resolve(&domain, &code).await?;
    Ok((
        StatusCode::OK,
        [
            (header::CONTENT_TYPE, "application/json"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        record.to_json(),
    )
        .into_response())
}

/// `GET /v1/edge/denylist`: the active bans, as the edge holds them, under the version of
/// the last ban change (its `ETag`). The edge's fast channel for bans: each location asks
/// about once a second with `If-None-Match`, and is answered 304 without a body while
/// nothing changed. Read from the same memory as the origin's own redirects, which a ban
/// change here (or, on PostgreSQL, announced by another origin) replaces at once.
#[utoipa::path(get, path = "/v1/edge/denylist", operation_id = "edge_denylist", tag = "edge",
    params(("If-None-Match" = Option<String>, Header, description = "The ETag of the copy the edge holds")),
    responses(
        (status = 200, description = "The denylist: `v` (its version), `codes` (domain/code) and `hosts`", content_type = "application/json"),
        (status = 304, description = "The edge's copy is current"),
        (status = 503, description = "No edge token configured, or the database cannot answer", body = Problem, content_type = "application/problem+json"),
    ),
    security(("edge_token" = [])))]
pub(crate) async fn denylist(
    State(state): State<Arc<Edge>>,
    _edge: EdgeCaller,
    headers: axum::http::HeaderMap,
) -> Result<Response, AppError> {
    let held = headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok());
    let (deny, etag, unchanged) = state.denylist(held).await?;
    let cache_control = (header::CACHE_CONTROL, "no-store".to_owned());
    if unchanged {
        return Ok((
            StatusCode::NOT_MODIFIED,
            [(header::ETAG, etag), cache_control],
        )
            .into_response());
    }
    let body = serde_json::to_string(&deny.to_snapshot())
        .map_err(|e| AppError::internal(format!("writing the denylist: {e}")))?;
    Ok((
        StatusCode::OK,
        [
            (header::CONTENT_TYPE, "application/json".to_owned()),
            (header::ETAG, etag),
            cache_control,
        ],
        body,
    )
        .into_response())
}

/// `POST /v1/edge/clicks`: a batch of the edge's queue messages from its consumer:
/// tallies (an isolate's alike clicks over a window, one id each) and single events (an
/// edge before tallies). Safe to repeat: a tally or an event is counted once, by its id,
/// however often it arrives. Clicks that cannot be counted (malformed, too old, about no
/// link) are acknowledged, not retried.
#[utoipa::path(post, path = "/v1/edge/clicks", operation_id = "edge_clicks", tag = "edge",
    request_body(content = ClickBatch, description = "Up to 200 tallies and 1,000 events"),
    responses(
        (status = 200, description = "What was counted, and what was not and why, in clicks", body = ClickReceipt),
        (status = 400, description = "Not a batch, or more than 200 tallies or 1,000 events", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "No edge token configured, or the database cannot write now: send again", body = Problem, content_type = "application/problem+json"),
    ),
    security(("edge_token" = [])))]
pub(crate) async fn clicks(
    State(state): State<Arc<Edge>>,
    _edge: EdgeCaller,
    ApiJson(batch): ApiJson<ClickBatch, CLICKS_BODY_LIMIT>,
) -> Result<Json<ClickReceipt>, AppError> {
    if batch.events.len() > MAX_CLICK_BATCH {
        return Err(AppError::BadRequest(format!(
            "at most {MAX_CLICK_BATCH} events per batch, not {}",
            batch.events.len()
        )));
    }
    if batch.tallies.len() > MAX_TALLIES_PER_POST {
        return Err(AppError::BadRequest(format!(
            "at most {MAX_TALLIES_PER_POST} tallies per batch, not {}",
            batch.tallies.len()
        )));
    }
    let receipt = state.ingest(&batch.events, &batch.tallies).await?;
    Ok(Json(receipt))
}

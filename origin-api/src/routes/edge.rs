//! `/v1/edge/*`: what the edge worker asks the origin. Authenticated by the edge token
//! (`HOP_EDGE_TOKEN`, the worker's `ORIGIN_TOKEN`), not by an API key.

use crate::error::{AppError, Problem};
use crate::AppState;
use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use shared::{LinkStatus, RouteKey};

fn edge_auth(state: &AppState, headers: &HeaderMap) -> Result<(), AppError> {
    let Some(expected) = state
        .settings
        .edge_token
        .as_deref()
        .filter(|t| !t.is_empty())
    else {
        return Err(AppError::NotConfigured(
            "answer the edge: set HOP_EDGE_TOKEN to the worker's ORIGIN_TOKEN",
        ));
    };
    let given = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or_default();
    if shared::sync::tokens_match(given, expected) {
        Ok(())
    } else {
        Err(AppError::EdgeUnauthorized)
    }
}

/// `GET /v1/edge/resolve/{domain}/{code}`: the link's edge record (marked `banned` when a
/// ban covers it), or 404. The edge asks about codes KV does not hold yet; the answer
/// comes from the same cache as the origin's own redirect.
#[utoipa::path(get, path = "/v1/edge/resolve/{domain}/{code}", operation_id = "edge_resolve", tag = "edge",
    params(("domain" = String, Path), ("code" = String, Path)),
    responses(
        (status = 200, description = "The edge record, as KV would hold it", content_type = "application/json"),
        (status = 401, description = "No or a wrong edge token", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such link", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "No edge token configured, or the database cannot answer", body = Problem, content_type = "application/problem+json"),
    ),
    security(("edge_token" = [])))]
pub(crate) async fn resolve(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path((domain, code)): Path<(String, String)>,
) -> Result<Response, AppError> {
    edge_auth(&state, &headers)?;
    state.metrics.edge_resolves.inc();
    let domain = shared::normalize_domain(&domain).map_err(|_| AppError::NotFound)?;
    let settings = state.cache.settings(&state.db, &domain).await?;
    let code = settings.canonical_code(&code).into_owned();
    let route = RouteKey::new(domain, code).ok_or(AppError::NotFound)?;
    let deny = state.cache.denylist(&state.db).await?;
    let entry = state
        .cache
        .entry(&state.db, route.domain(), route.code())
        .await?;
    let prepared = entry.record.as_ref().ok_or(AppError::NotFound)?;
    let mut record = prepared.record.clone();
    if deny.blocks_code(&route) || deny.blocks_host(prepared.target_host()) {
        record.status = LinkStatus::Banned;
    }
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

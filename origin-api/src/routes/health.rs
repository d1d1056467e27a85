//! Liveness, readiness and metrics.

use crate::error::{AppError, Problem};
use crate::health::Health;
use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use std::sync::Arc;

/// Liveness: the process answers. Never touches the database, so a slow database does
/// not get a healthy process restarted.
#[utoipa::path(get, path = "/healthz", operation_id = "healthz", tag = "operations",
    responses((status = 200, description = "Alive", body = String, content_type = "text/plain")))]
pub(crate) async fn healthz() -> &'static str {
    "ok\n"
}

/// Readiness: the database answered a round trip within the last second. However many
/// ask, the database is asked at most once a second ([`crate::db::Readiness`]).
#[utoipa::path(get, path = "/readyz", operation_id = "readyz", tag = "operations",
    responses((status = 200, description = "Ready", body = String, content_type = "text/plain"),
        (status = 503, description = "The database does not answer", body = Problem, content_type = "application/problem+json")))]
pub(crate) async fn readyz(State(state): State<Arc<Health>>) -> Result<&'static str, AppError> {
    if state.ready().await {
        Ok("ready\n")
    } else {
        Err(AppError::NotReady)
    }
}

/// `GET /metrics` on the public listener: only with `HOP_METRICS_TOKEN`. The counts say
/// how many links exist and how fast they are made, which the code permutation exists
/// to hide.
pub(crate) async fn metrics_public(
    State(state): State<Arc<Health>>,
    headers: axum::http::HeaderMap,
) -> Result<axum::response::Response, AppError> {
    let given = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or_default();
    state.admit_scraper(given)?;
    metrics(State(state)).await.map(IntoResponse::into_response)
}

/// `GET /metrics`: Prometheus (OpenMetrics text), on the metrics listener; on the public
/// one, with `Authorization: Bearer <HOP_METRICS_TOKEN>`.
#[utoipa::path(get, path = "/metrics", operation_id = "metrics", tag = "operations",
    responses((status = 200, description = "Every series of the origin (docs/operating.md#metrics): hop_redirects_total{outcome}, hop_redirect_duration_seconds{path}, hop_api_responses_total{route,method,status}, hop_outbox_oldest_age_seconds{lane}, …", body = String, content_type = "application/openmetrics-text"),
        (status = 401, description = "on the public listener: not the metrics token (described only where HOP_METRICS_TOKEN serves it there)", body = Problem, content_type = "application/problem+json")),
    security(("metrics_token" = [])))]
pub(crate) async fn metrics(
    State(state): State<Arc<Health>>,
) -> Result<impl IntoResponse, AppError> {
    state.observe().await?;
    Ok((
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        state.encode(),
    ))
}

//! Liveness, readiness and metrics.

use crate::error::{AppError, Problem};
use crate::health::Health;
use crate::metrics::{LaneLabel, SegmentLabel, SequenceLabel};
use crate::model::time::now_ms;
use crate::store;
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
    if state.readiness.check(&state.db).await {
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
    use secrecy::ExposeSecret;
    let Some(expected) = state.metrics_token.as_ref() else {
        return Err(AppError::NotHere(
            "/metrics is served on the metrics listener (--metrics-listen), or here with HOP_METRICS_TOKEN",
        ));
    };
    let given = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or_default();
    if !shared::sync::token_accepted(given, expected.expose_secret()) {
        return Err(AppError::MetricsUnauthorized);
    }
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
    let m = &state.metrics;
    let now = now_ms();
    for backlog in store::outbox::pending(&state.db).await? {
        let lane = match backlog.lane.as_str() {
            "fast" => "fast",
            "normal" => "normal",
            _ => {
                m.outbox_failed.set(backlog.rows);
                continue;
            }
        };
        m.outbox_pending
            .get_or_create(&LaneLabel { lane })
            .set(backlog.rows);
        m.outbox_oldest_age.get_or_create(&LaneLabel { lane }).set(
            backlog
                .oldest_at
                .map_or(0.0, |at| (now - at).max(0) as f64 / 1_000.0),
        );
    }
    for alloc in std::iter::once(state.ids.clone()).chain(state.codes.allocators()) {
        let Some((current, next)) = alloc.remaining() else {
            continue;
        };
        m.segment_size
            .get_or_create(&SequenceLabel {
                sequence: alloc.name().to_owned(),
            })
            .set(i64::try_from(alloc.step()).unwrap_or(i64::MAX));
        for (segment, left) in [("current", current), ("next", next)] {
            m.segment_remaining
                .get_or_create(&SegmentLabel {
                    sequence: alloc.name().to_owned(),
                    segment,
                })
                .set(i64::try_from(left).unwrap_or(i64::MAX));
        }
    }
    Ok((
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        state.metrics.encode(),
    ))
}

//! Liveness, readiness and metrics.

use crate::error::{AppError, Problem};
use crate::metrics::LaneLabel;
use crate::store::LinkStore;
use crate::AppState;
use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;

/// Liveness: the process answers. Never touches the database, so a slow database does
/// not get a healthy process restarted.
#[utoipa::path(get, path = "/healthz", operation_id = "healthz", tag = "operations",
    responses((status = 200, description = "Alive", body = String, content_type = "text/plain")))]
pub(crate) async fn healthz() -> &'static str {
    "ok\n"
}

/// Readiness: the database answers a round trip.
#[utoipa::path(get, path = "/readyz", operation_id = "readyz", tag = "operations",
    responses((status = 200, description = "Ready", body = String, content_type = "text/plain"),
        (status = 503, description = "The database does not answer", body = Problem, content_type = "application/problem+json")))]
pub(crate) async fn readyz(State(state): State<AppState>) -> Result<&'static str, AppError> {
    state.db.ping().await.map_err(AppError::Unavailable)?;
    Ok("ready\n")
}

/// `GET /metrics`: Prometheus (OpenMetrics text).
#[utoipa::path(get, path = "/metrics", operation_id = "metrics", tag = "operations",
    responses((status = 200, description = "hop_redirects_total{outcome}, hop_links_created_total, hop_id_segments_fetched_total, hop_ids_wasted_total, hop_outbox_pending{lane}", body = String, content_type = "application/openmetrics-text")))]
pub(crate) async fn metrics(State(state): State<AppState>) -> Result<impl IntoResponse, AppError> {
    for lane in ["fast", "normal"] {
        state
            .metrics
            .outbox_pending
            .get_or_create(&LaneLabel { lane })
            .set(0);
    }
    state.metrics.outbox_failed.set(0);
    for (lane, n) in state.db.outbox_pending().await? {
        let lane = match lane.as_str() {
            "fast" => "fast",
            "normal" => "normal",
            _ => {
                state.metrics.outbox_failed.set(n);
                continue;
            }
        };
        state
            .metrics
            .outbox_pending
            .get_or_create(&LaneLabel { lane })
            .set(n);
    }
    Ok((
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        state.metrics.encode(),
    ))
}

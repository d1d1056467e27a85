//! Liveness, readiness and metrics.

use crate::error::AppError;
use crate::metrics::LaneLabel;
use crate::store::LinkStore;
use crate::AppState;
use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;

/// Liveness: the process answers. Never touches the database, so a slow database does
/// not get a healthy process restarted.
pub(crate) async fn healthz() -> &'static str {
    "ok\n"
}

/// Readiness: the database answers a round trip.
pub(crate) async fn readyz(State(state): State<AppState>) -> Result<&'static str, AppError> {
    state.db.ping().await.map_err(AppError::Unavailable)?;
    Ok("ready\n")
}

/// `GET /metrics`: Prometheus (OpenMetrics text).
pub(crate) async fn metrics(State(state): State<AppState>) -> Result<impl IntoResponse, AppError> {
    for lane in ["fast", "normal"] {
        state
            .metrics
            .outbox_pending
            .get_or_create(&LaneLabel { lane })
            .set(0);
    }
    for (lane, n) in state.db.outbox_pending().await? {
        let lane = if lane == "fast" { "fast" } else { "normal" };
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

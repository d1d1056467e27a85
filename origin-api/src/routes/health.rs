//! Liveness and readiness.

use crate::error::AppError;
use crate::AppState;
use axum::extract::State;

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

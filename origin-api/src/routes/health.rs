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

/// Readiness: the database answered a round trip within the last second. However many
/// ask, the database is asked at most once a second ([`Readiness`]).
#[utoipa::path(get, path = "/readyz", operation_id = "readyz", tag = "operations",
    responses((status = 200, description = "Ready", body = String, content_type = "text/plain"),
        (status = 503, description = "The database does not answer", body = Problem, content_type = "application/problem+json")))]
pub(crate) async fn readyz(State(state): State<AppState>) -> Result<&'static str, AppError> {
    if state.readiness.check(&state.db).await {
        Ok("ready\n")
    } else {
        Err(AppError::NotReady)
    }
}

/// The last readiness check and when it ran: anyone may ask `/readyz`, so its answer is
/// reused for a second rather than costing the database a round trip per caller.
#[derive(Debug, Default)]
pub struct Readiness {
    last: tokio::sync::Mutex<Option<(tokio::time::Instant, bool)>>,
}

/// How long one readiness check is reused.
pub(crate) const READINESS_TTL: std::time::Duration = std::time::Duration::from_secs(1);

impl Readiness {
    /// Whether the database answered, asking it only if the last answer is older than
    /// [`READINESS_TTL`]. Callers arriving while it is asked wait for that answer.
    pub async fn check(&self, db: &crate::db::Db) -> bool {
        let mut last = self.last.lock().await;
        if let Some((at, ready)) = *last {
            if at.elapsed() < READINESS_TTL {
                return ready;
            }
        }
        let ready = match db.ping().await {
            Ok(()) => true,
            Err(e) => {
                tracing::warn!(error = %e, "not ready: the database does not answer");
                false
            }
        };
        *last = Some((tokio::time::Instant::now(), ready));
        ready
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn readiness_asks_the_database_at_most_once_a_second() {
        let dir = tempfile::tempdir().expect("temp dir");
        let url = format!("sqlite://{}", dir.path().join("r.db").display());
        let db = crate::db::Db::connect(&url).await.expect("connect");
        let readiness = Readiness::default();
        assert!(readiness.check(&db).await);
        // The database goes away; then the clock stops (a closed pool answers at once,
        // so nothing waits on it). For the rest of the second, nobody's call reaches it.
        db.close().await;
        tokio::time::pause();
        for _ in 0..1_000 {
            assert!(readiness.check(&db).await, "a call reached the database");
        }
        tokio::time::advance(READINESS_TTL).await;
        assert!(!readiness.check(&db).await);
    }
}

/// `GET /metrics` on the public listener: only with `HOP_METRICS_TOKEN`. The counts say
/// how many links exist and how fast they are made, which the code permutation exists
/// to hide.
pub(crate) async fn metrics_public(
    State(state): State<AppState>,
    headers: axum::http::HeaderMap,
) -> Result<axum::response::Response, AppError> {
    use secrecy::ExposeSecret;
    let Some(expected) = state.settings.secrets.metrics_token.as_ref() else {
        return Err(AppError::NotHere(
            "/metrics is served on the metrics listener (--metrics-listen), or here with HOP_METRICS_TOKEN",
        ));
    };
    let given = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or_default();
    if !shared::sync::tokens_match(given, expected.expose_secret()) {
        return Err(AppError::MetricsUnauthorized);
    }
    metrics(State(state)).await.map(IntoResponse::into_response)
}

/// `GET /metrics`: Prometheus (OpenMetrics text), on the metrics listener; on the public
/// one, with `Authorization: Bearer <HOP_METRICS_TOKEN>`.
#[utoipa::path(get, path = "/metrics", operation_id = "metrics", tag = "operations",
    responses((status = 200, description = "hop_redirects_total{outcome}, hop_links_created_total, hop_id_segments_fetched_total, hop_ids_wasted_total, hop_outbox_pending{lane}", body = String, content_type = "application/openmetrics-text"),
        (status = 401, description = "on the public listener: not the metrics token", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "on the public listener: no metrics token is configured", body = Problem, content_type = "application/problem+json")),
    security(("metrics_token" = [])))]
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

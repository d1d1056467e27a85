//! The API's own metrics: how long each route takes, what it answers, and why it refuses.

use crate::app::AppState;
use crate::error::{Failure, Refusal};
use crate::metrics::{ReasonLabel, ResponseLabel, RouteLabel};
use axum::extract::{MatchedPath, Request, State};
use axum::middleware::Next;
use axum::response::Response;

/// Times the call and counts its answer under the route's template, its refusal reason
/// (from the [`Refusal`] an error leaves on its response), and a replayed create; logs a
/// server-side failure (the [`Failure`] its answer does not show) with its route.
pub(crate) async fn observe(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let started = std::time::Instant::now();
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "(unmatched)".to_owned(), |p| p.as_str().to_owned());
    let method = req.method().as_str().to_owned();
    let res = next.run(req).await;
    if let Some(Failure(what)) = res.extensions().get::<Failure>() {
        tracing::error!(%route, %method, status = res.status().as_u16(), error = %what, "request failed");
    }
    let m = &state.metrics;
    m.api_seconds
        .get_or_create(&RouteLabel {
            route: route.clone(),
            method: method.clone(),
        })
        .observe(started.elapsed());
    m.api_responses
        .get_or_create(&ResponseLabel {
            route,
            method,
            status: res.status().as_u16(),
        })
        .inc();
    if let Some(Refusal(reason)) = res.extensions().get::<Refusal>() {
        m.refusals.get_or_create(&ReasonLabel { reason }).inc();
    }
    if res.headers().contains_key("idempotent-replayed") {
        m.idempotency_replays.inc();
    }
    res
}

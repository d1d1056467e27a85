//! HTTP routes. Handlers are thin: they parse, call a service, and shape the answer.

mod admin;
mod bans;
mod body;
mod edge;
mod health;
mod links;
pub mod openapi;
mod redirect;
mod stats;

use crate::AppState;
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::Router;
use std::time::Duration;
use tower_http::timeout::TimeoutLayer;
use tower_http::trace::TraceLayer;

pub use body::{ApiJson, BULK_BODY_LIMIT, CLICKS_BODY_LIMIT, SMALL_BODY_LIMIT};
pub use health::Readiness;

/// What the metrics listener serves (`--metrics-listen`): `/metrics` without credentials,
/// and liveness, so a scraper can tell a dead process from a missing metric.
pub fn metrics_router(state: AppState) -> Router {
    Router::new()
        .route("/metrics", get(health::metrics))
        .route("/healthz", get(health::healthz))
        .route_layer(TimeoutLayer::with_status_code(
            StatusCode::REQUEST_TIMEOUT,
            REQUEST_TIMEOUT,
        ))
        .with_state(state)
}

/// A request that takes longer than this is answered 408 and its work dropped.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// The whole HTTP surface of the origin.
///
/// Every request counts against the in-flight cap (503 past it). The API's routes have a
/// timer each; the redirect path (the fallback) arms one only when it has to wait (a
/// cache miss), because a timer per request cost about a tenth of a cached redirect's
/// CPU (`scripts/bench-redirect`): see [`redirect::REDIRECT_TIMEOUT`].
pub fn router(state: AppState) -> Router {
    // At most `--max-in-flight` requests at once over every route; the next is answered
    // 503 at once rather than queued.
    let in_flight = crate::in_flight::InFlightLayer::new(state.settings.max_in_flight as usize);
    Router::new()
        .route("/healthz", get(health::healthz))
        .route("/readyz", get(health::readyz))
        .route("/metrics", get(health::metrics_public))
        .route("/openapi.json", get(openapi::openapi))
        .route("/v1/links", post(links::create).get(links::list))
        .route("/v1/links/bulk", post(links::create_bulk))
        .route(
            "/v1/links/{domain}/{code}",
            get(links::read).patch(links::update).delete(links::delete),
        )
        .route("/v1/links/{domain}/{code}/stats", get(stats::link))
        .route("/v1/stats", get(stats::owner))
        .route("/v1/bans", post(bans::create).get(bans::list))
        .route("/v1/bans/{id}", axum::routing::delete(bans::lift))
        .route("/v1/edge/resolve/{domain}/{code}", get(edge::resolve))
        .route("/v1/edge/clicks", post(edge::clicks))
        .route("/v1/admin/outbox", get(admin::outbox))
        // `route_layer`: the routes above, not the fallback. The redirect path has no
        // request span either: a perf profile at a million links put it at about 2% of
        // a cached redirect's CPU, and the handler logs what goes wrong itself.
        .route_layer(TimeoutLayer::with_status_code(
            StatusCode::REQUEST_TIMEOUT,
            REQUEST_TIMEOUT,
        ))
        .route_layer(TraceLayer::new_for_http())
        .fallback(redirect::redirect)
        .layer(in_flight)
        .with_state(state)
}

//! HTTP routes. Handlers are thin: they parse, call a service, and shape the answer.

mod abuse;
mod admin;
mod bans;
mod body;
mod domains;
mod edge;
mod health;
mod history;
mod imports;
mod links;
pub(crate) mod observe;
pub mod openapi;
mod owners;
mod redirect;
mod responses;
mod stats;
mod webhooks;

use crate::app::AppState;
use crate::in_flight::InFlightLayer;
use crate::redirects::Redirects;
use crate::server::App;
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::{get, post};
use axum::Router;
use futures_util::future::{ready, Either};
use hyper::body::Incoming;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tower_http::timeout::TimeoutLayer;
use tower_http::trace::TraceLayer;

pub use body::{ApiJson, BULK_BODY_LIMIT, CLICKS_BODY_LIMIT, SMALL_BODY_LIMIT};

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
/// Every request counts against the in-flight cap (503 past it); served through
/// [`Origin`], a visit answered from memory does not (it holds nothing while it is
/// answered). The API's routes have a
/// timer each; the redirect path (the fallback) arms one only when it has to wait (a
/// cache miss), because a timer per request cost about a tenth of a cached redirect's
/// CPU (`scripts/bench-redirect`): see [`crate::redirects::visit::REDIRECT_TIMEOUT`].
pub fn router(state: AppState) -> Router {
    let in_flight = in_flight(&state);
    router_under(state, in_flight)
}

/// At most `--max-in-flight` requests at once over every route; the next is answered
/// 503 at once rather than queued.
fn in_flight(state: &AppState) -> InFlightLayer {
    InFlightLayer::new(state.settings.max_in_flight as usize)
}

fn router_under(state: AppState, in_flight: InFlightLayer) -> Router {
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
        .route("/v1/links/{domain}/{code}/qr", get(links::qr))
        .route("/v1/links/{domain}/{code}/tokens", post(links::issue_token))
        .route("/v1/links/{domain}/{code}/restore", post(links::restore))
        .route("/v1/links/{domain}/{code}/history", get(history::list))
        .route("/v1/links/{domain}/{code}/revert", post(history::revert))
        .route("/v1/imports", post(imports::create))
        .route("/v1/stats", get(stats::owner))
        .route("/v1/owners/me", get(owners::me))
        .route("/v1/domains", post(domains::create).get(domains::list))
        .route(
            "/v1/domains/{domain}",
            get(domains::read)
                .patch(domains::update)
                .delete(domains::delete),
        )
        .route(
            "/v1/domains/{domain}/legacy-misses",
            get(domains::legacy_misses),
        )
        .route(
            "/v1/domains/{domain}/legacy-codes",
            get(domains::read_legacy_codes).post(domains::add_legacy_codes),
        )
        .route("/v1/webhooks", post(webhooks::create).get(webhooks::list))
        .route(
            "/v1/webhooks/{id}",
            get(webhooks::read)
                .patch(webhooks::update)
                .delete(webhooks::delete),
        )
        .route("/v1/webhooks/{id}/rotate", post(webhooks::rotate))
        .route("/v1/webhooks/{id}/redeliver", post(webhooks::redeliver))
        .route("/v1/webhooks/{id}/attempts", get(webhooks::attempts))
        .route("/v1/bans", post(bans::create).get(bans::list))
        .route("/v1/bans/{id}", axum::routing::delete(bans::lift))
        .route("/v1/edge/resolve/{domain}/{code}", get(edge::resolve))
        .route("/v1/edge/clicks", post(edge::clicks))
        .route("/v1/edge/denylist", get(edge::denylist))
        .route("/v1/admin/outbox", get(admin::outbox))
        .route("/v1/admin/reports", get(abuse::list))
        .route("/v1/admin/reports/{id}/resolve", post(abuse::resolve))
        .route("/_hop/report", get(abuse::form).post(abuse::submit))
        // `route_layer`: the routes above, not the fallback. The redirect path has no
        // request span either: a perf profile at a million links put it at about 2% of
        // a cached redirect's CPU, and the handler logs what goes wrong itself.
        .route_layer(TimeoutLayer::with_status_code(
            StatusCode::REQUEST_TIMEOUT,
            REQUEST_TIMEOUT,
        ))
        .route_layer(TraceLayer::new_for_http())
        .route_layer(axum::middleware::from_fn_with_state(
            state.clone(),
            observe::observe,
        ))
        .fallback(redirect::redirect)
        .layer(in_flight)
        .with_state(state)
}

/// The origin as [`crate::server::serve`] runs it: the same surface as [`router`], with
/// visits answered by the redirect handler directly. Going through the router cost a
/// visit its matching, an extensions map for the peer's address, a boxed body and a move
/// of the request through each layer: together about a quarter of a cached redirect's
/// instructions (`scripts/bench-redirect-instructions`).
#[derive(Debug, Clone)]
pub struct Origin(Arc<OriginParts>);

#[derive(Debug)]
struct OriginParts {
    router: Router,
    /// What a visit reaches.
    redirects: Arc<Redirects>,
    /// The router's cap: visits and API calls count against the same one.
    in_flight: InFlightLayer,
}

impl Origin {
    pub fn new(state: AppState) -> Self {
        let in_flight = in_flight(&state);
        Origin(Arc::new(OriginParts {
            redirects: state.redirects.clone(),
            router: router_under(state, in_flight.clone()),
            in_flight,
        }))
    }
}

/// The first path segments of the router's routes. Any other path is a visit, which is
/// what the router would do with it too (its fallback); a path under one of these that
/// no route matches still reaches the redirect handler, through that fallback.
const ROUTED: [&str; 6] = [
    "v1",
    "healthz",
    "readyz",
    "metrics",
    "openapi.json",
    // The report form (`/_hop/report`); an alias `_hop` still reaches the redirect
    // through the router's fallback.
    "_hop",
];

fn routed(path: &str) -> bool {
    let path = path.strip_prefix('/').unwrap_or(path);
    // By byte: a char searcher cost every visit about ninety instructions.
    let first = match path.bytes().position(|b| b == b'/') {
        Some(end) => &path[..end],
        None => path,
    };
    ROUTED.contains(&first)
}

impl App for Origin {
    /// A visit that memory can answer is answered here, before any future exists: its
    /// future is the ready response, where the redirect's future was 2.6 KB, copied
    /// twice on its way into hyper. Everything else (API calls, visits that read) is
    /// boxed.
    ///
    /// Only what may wait counts against the in-flight cap: an answer from memory holds
    /// nothing while it is made, and under overload it is the one that should go on
    /// being given (D-109 in `docs/decisions/security.md`).
    fn answer(
        self,
        req: axum::http::Request<Incoming>,
        peer: SocketAddr,
    ) -> impl Future<Output = Response> + Send + 'static {
        let origin = self.0;
        if routed(req.uri().path()) {
            return Either::Right(Box::pin(
                async move { origin.router.clone().answer(req, peer).await },
            ) as BoxFuture);
        }
        let (parts, body) = req.into_parts();
        if parts.method == axum::http::Method::POST {
            let Some(slot) = origin.in_flight.enter() else {
                return Either::Left(ready(crate::server::busy()));
            };
            return Either::Right(Box::pin(async move {
                let _slot = slot;
                let body = axum::body::Body::new(body);
                origin.redirects.posted(parts, body, Some(peer)).await
            }));
        }
        if let Some(answered) = origin.redirects.answer_held(&parts, Some(peer)) {
            return Either::Left(ready(answered));
        }
        let Some(slot) = origin.in_flight.enter() else {
            return Either::Left(ready(crate::server::busy()));
        };
        Either::Right(Box::pin(async move {
            let _slot = slot;
            origin.redirects.answer(parts, Some(peer)).await
        }))
    }
}

type BoxFuture = std::pin::Pin<Box<dyn Future<Output = Response> + Send>>;

#[cfg(test)]
mod tests {
    use super::routed;

    /// A route missing from `ROUTED` would answer as a visit when served.
    /// The description states the limits the validation reads (utoipa takes literals
    /// only): a limit changed in one place and not the other fails here.
    #[test]
    fn the_description_states_the_limits_the_validation_reads() {
        use crate::views::{bans, domains, links};
        use utoipa::OpenApi;
        let doc = serde_json::to_value(super::openapi::ApiDoc::openapi()).expect("JSON");
        let schema = |name: &str, field: &str, key: &str| {
            doc["components"]["schemas"][name]["properties"][field][key].clone()
        };
        let param = |path: &str, method: &str, name: &str, key: &str| {
            doc["paths"][path][method]["parameters"]
                .as_array()
                .and_then(|ps| ps.iter().find(|p| p["name"] == name))
                .map(|p| p["schema"][key].clone())
                .unwrap_or_default()
        };
        let n = |v: usize| serde_json::json!(v);
        let checks = [
            (
                param("/v1/links", "get", "limit", "maximum"),
                n(links::MAX_PAGE as usize),
            ),
            (
                param("/v1/links", "get", "tag", "maxLength"),
                n(links::MAX_TAG_CHARS),
            ),
            (
                param("/v1/links", "get", "q", "maxLength"),
                n(links::MAX_SEARCH_CHARS),
            ),
            (
                param("/v1/stats", "get", "top", "maximum"),
                n(crate::clicks::stats::MAX_TOP as usize),
            ),
            (
                param("/v1/admin/outbox", "get", "limit", "maximum"),
                n(crate::outbox::MAX_FAILED_PAGE as usize),
            ),
            (
                schema("CreateLink", "target_url", "maxLength"),
                n(shared::target::MAX_TARGET_LEN),
            ),
            (
                schema("CreateLink", "title", "maxLength"),
                n(links::MAX_TITLE_CHARS),
            ),
            (schema("CreateLink", "tags", "maxItems"), n(links::MAX_TAGS)),
            (
                schema("CreateLink", "rules", "maxItems"),
                n(shared::targeting::MAX_RULES),
            ),
            (
                schema("CreateLink", "split", "minItems"),
                n(shared::split::MIN_VARIANTS),
            ),
            (
                schema("CreateLink", "split", "maxItems"),
                n(shared::split::MAX_VARIANTS),
            ),
            (
                schema("BulkCreate", "links", "maxItems"),
                n(links::MAX_BULK),
            ),
            (
                schema("ClickBatch", "events", "maxItems"),
                n(shared::clicks::MAX_CLICK_BATCH),
            ),
            (
                schema("ClickBatch", "tallies", "maxItems"),
                n(shared::tally::MAX_TALLIES_PER_POST),
            ),
            (
                schema("CreateBan", "reason", "maxLength"),
                n(bans::MAX_REASON_CHARS),
            ),
            (
                schema("CreateDomain", "owners", "maxItems"),
                n(domains::MAX_LIST),
            ),
        ];
        let mut checks = checks.to_vec();
        for body in ["CreateDomain", "UpdateDomain"] {
            checks.extend([
                (
                    schema(body, "code_length", "minimum"),
                    n(domains::MIN_CODE_LENGTH as usize),
                ),
                (
                    schema(body, "code_length", "maximum"),
                    n(domains::MAX_CODE_LENGTH as usize),
                ),
                (
                    schema(body, "max_age_s", "maximum"),
                    n(domains::MAX_MAX_AGE_S as usize),
                ),
            ]);
        }
        for (i, (stated, enforced)) in checks.into_iter().enumerate() {
            assert_eq!(stated, enforced, "limit {i} of the table above");
        }
    }

    #[test]
    fn every_documented_route_goes_to_the_router() {
        use utoipa::OpenApi;
        let doc = super::openapi::ApiDoc::openapi();
        let paths: Vec<&String> = doc.paths.paths.keys().collect();
        assert!(paths.len() > 10, "{paths:?}");
        for path in paths.into_iter().filter(|p| *p != "/{code}") {
            assert!(routed(path), "{path}");
        }
    }

    #[test]
    fn the_router_gets_its_own_paths_and_every_other_path_is_a_visit() {
        for api in [
            "/v1/links",
            "/v1/links/s.example/abc/stats",
            "/v1",
            "/healthz",
            "/readyz",
            "/metrics",
            "/openapi.json",
            "/_hop/report",
        ] {
            assert!(routed(api), "{api}");
        }
        for visit in [
            "/",
            "/abc1234",
            "/healthzz",
            "/v1x/a",
            "/abc/v1",
            "/metrics2",
        ] {
            assert!(!routed(visit), "{visit}");
        }
    }
}

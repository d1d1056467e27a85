//! `GET|HEAD /{code}` on the origin: the same decision as the edge, from the database.

use crate::clicks::recorder::{OwnClick, Reduced};
use crate::error::AppError;
use crate::store::now_ms;
use crate::AppState;
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use shared::clicks::counts_as_click;
use shared::{
    decide_prepared, reject_early, Body, Decision, Outcome, RouteKey, Visit, VisitorHost,
};

/// Answers every path the API does not claim.
#[utoipa::path(get, path = "/{code}", operation_id = "redirect", tag = "redirect",
    params(("code" = String, Path), ("Host" = Option<String>, Header, description = "The short domain; without one, or with an address, the origin's default domain. A host this origin does not serve is 404")),
    responses(
        (status = 301, description = "Moved permanently, as the link says; `Location` is the target, with the visitor's query merged when the link forwards it"),
        (status = 302, description = "Found (the default)"),
        (status = 307, description = "Temporary redirect, as the link says"),
        (status = 308, description = "Permanent redirect, as the link says"),
        (status = 403, description = "Banned: a short notice, never a Location"),
        (status = 404, description = "No such link, or disabled"),
        (status = 405, description = "Neither GET nor HEAD"),
        (status = 410, description = "Expired or deleted"),
        (status = 503, description = "The database cannot answer now; see Retry-After"),
    ))]
pub(crate) async fn redirect(State(state): State<AppState>, req: Request) -> Response {
    let (parts, _) = req.into_parts();
    let peer = crate::server::peer(&parts);
    let (method, headers, uri) = (parts.method, parts.headers, parts.uri);
    let method = shared::Method::parse(method.as_str());
    let code = uri.path().strip_prefix('/').unwrap_or_default();
    let decision = match reject_early(method, code) {
        Some(early) => early,
        None => match crate::server::within(
            REDIRECT_TIMEOUT,
            resolve(&state, method, &headers, code, uri.query()),
        )
        .await
        {
            Err(_) => {
                tracing::warn!("redirect lookup timed out");
                Decision::unavailable(method, shared::decision::RETRY_AFTER_S)
            }
            Ok(Ok((decision, visited))) => {
                if let Some((route, at)) = visited {
                    record_click(&state, &decision, route, at, &headers, peer);
                }
                decision
            }
            Ok(Err(e)) => {
                tracing::error!(error = %e, "redirect lookup failed");
                Decision::unavailable(method, shared::decision::RETRY_AFTER_S)
            }
        },
    };
    state
        .metrics
        .redirect_answered(outcome_name(decision.outcome));
    write(decision)
}

/// The longest a visit waits on the database (its pool, its reads) before it is told
/// to retry (503 with `Retry-After`).
pub(crate) const REDIRECT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// Queues the click, when the visit was one, for the background writer: the response
/// does not wait for it.
fn record_click(
    state: &AppState,
    decision: &Decision,
    route: RouteKey,
    at: i64,
    headers: &HeaderMap,
    peer: Option<std::net::SocketAddr>,
) {
    if !state.recorder.enabled() || !counts_as_click(shared::Method::Get, decision.outcome) {
        return;
    }
    state.recorder.record(OwnClick {
        route,
        at,
        status: decision.status,
        visitor: Reduced::of(
            headers.get(header::USER_AGENT),
            headers.get(header::REFERER),
            // Only a trusted proxy's word: anyone can send `CF-IPCountry`.
            state.proxies.country(peer, headers),
        ),
    });
}

async fn resolve(
    state: &AppState,
    method: shared::Method,
    headers: &HeaderMap,
    code: &str,
    query: Option<&str>,
) -> Result<(Decision, Option<Visited>), AppError> {
    // The short domain is the Host the visitor used. Without one, or with an address
    // (a health checker, a curl at the origin's IP), it is the default domain: no short
    // domain is an IP address. A host this origin does not serve, or one no DNS name
    // could be, is not found without a read.
    let db = &state.redirect_db;
    let default = &state.settings.default_domain;
    let domain = match headers.get(header::HOST).map(|h| h.to_str()) {
        None => default.clone(),
        Some(Err(_)) => return Ok((Decision::not_found(method), None)),
        Some(Ok(host)) => match shared::visitor_host(host) {
            VisitorHost::Address => default.clone(),
            VisitorHost::Malformed => return Ok((Decision::not_found(method), None)),
            VisitorHost::Domain(d) if &d == default => d,
            VisitorHost::Domain(d) => {
                if !state.cache.serves(db, &d).await? {
                    return Ok((Decision::not_found(method), None));
                }
                d
            }
        },
    };
    let settings = state.cache.settings(db, &domain).await?;
    let code = settings.canonical_code(code);
    let Some(route) = RouteKey::new(domain, code.as_ref()) else {
        return Ok((Decision::not_found(method), None));
    };
    let deny = state.cache.denylist(db).await?;
    // Memory first; then what can be answered without a read (a banned code, a generated
    // code past the id ceiling); then the database, once per key however many ask.
    let entry = match state.cache.cached(route.domain(), route.code()) {
        Some(entry) => Some(entry),
        None if deny.blocks_code(&route) => None,
        None if !state
            .cache
            .may_exist(
                db,
                state.settings.secrets.permutation_keys.as_ref(),
                &settings,
                route.code(),
            )
            .await? =>
        {
            None
        }
        None => Some(state.cache.entry(db, route.domain(), route.code()).await?),
    };
    let now = now_ms();
    let visit = Visit {
        method,
        route: &route,
        query,
        now: now.div_euclid(1000),
    };
    let record = entry.as_ref().and_then(|e| e.record.as_ref());
    let decision = decide_prepared(&visit, record, &deny, &settings);
    let visited = (method == shared::Method::Get).then_some((route, now));
    Ok((decision, visited))
}

/// The link a `GET` visited and when (Unix ms).
type Visited = (RouteKey, i64);

fn outcome_name(outcome: Outcome) -> &'static str {
    match outcome {
        Outcome::Redirect => "redirect",
        Outcome::NotFound => "not_found",
        Outcome::Disabled => "disabled",
        Outcome::Expired => "expired",
        Outcome::Deleted => "deleted",
        Outcome::Banned => "banned",
        Outcome::Unavailable => "unavailable",
        Outcome::MethodNotAllowed => "method_not_allowed",
    }
}

/// The headers `shared::decide` writes, without parsing their names on every request.
fn header_name(name: &str) -> Option<HeaderName> {
    Some(match name {
        "location" => header::LOCATION,
        "cache-control" => header::CACHE_CONTROL,
        "content-type" => header::CONTENT_TYPE,
        "retry-after" => header::RETRY_AFTER,
        "allow" => header::ALLOW,
        other => return HeaderName::from_bytes(other.as_bytes()).ok(),
    })
}

fn write(decision: Decision) -> Response {
    let status = StatusCode::from_u16(decision.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let body = match decision.body {
        Body::Empty => String::new(),
        Body::Text(s) | Body::Html(s) => s.to_owned(),
    };
    let mut res = (status, body).into_response();
    let headers = res.headers_mut();
    headers.remove(header::CONTENT_TYPE);
    for (name, value) in &decision.headers {
        if let (Some(name), Ok(value)) = (header_name(name), HeaderValue::from_str(value)) {
            headers.insert(name, value);
        }
    }
    res
}

//! `GET|HEAD /{code}` on the origin: the same decision as the edge, from the database.

use crate::error::AppError;
use crate::metrics::OutcomeLabel;
use crate::store::now_ms;
use crate::AppState;
use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderName, HeaderValue, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use shared::{
    decide, reject_early, Body, Decision, Denylist, DenylistSnapshot, Outcome, RouteKey, Visit,
};

/// Answers every path the API does not claim.
#[utoipa::path(get, path = "/{code}", operation_id = "redirect", tag = "redirect",
    params(("code" = String, Path), ("Host" = String, Header, description = "The short domain (the origin's default domain when it is not one of Hop's)")),
    responses(
        (status = 301, description = "Moved permanently (also 302, 307, 308 as the link says); `Location` is the target, with the visitor's query merged when the link forwards it"),
        (status = 403, description = "Banned: a short notice, never a Location"),
        (status = 404, description = "No such link, or disabled"),
        (status = 405, description = "Neither GET nor HEAD"),
        (status = 410, description = "Expired or deleted"),
        (status = 503, description = "The database cannot answer now; see Retry-After"),
    ))]
pub(crate) async fn redirect(
    State(state): State<AppState>,
    method: Method,
    headers: HeaderMap,
    uri: Uri,
) -> Response {
    let method = shared::Method::parse(method.as_str());
    let code = uri.path().strip_prefix('/').unwrap_or_default();
    let decision = match reject_early(method, code) {
        Some(early) => early,
        None => match resolve(&state, method, &headers, code, uri.query()).await {
            Ok(decision) => decision,
            Err(e) => {
                tracing::error!(error = %e, "redirect lookup failed");
                Decision::unavailable(method, shared::decision::RETRY_AFTER_S)
            }
        },
    };
    state
        .metrics
        .redirects
        .get_or_create(&OutcomeLabel {
            outcome: outcome_name(decision.outcome),
        })
        .inc();
    write(decision)
}

async fn resolve(
    state: &AppState,
    method: shared::Method,
    headers: &HeaderMap,
    code: &str,
    query: Option<&str>,
) -> Result<Decision, AppError> {
    // The short domain is the Host the visitor used; without one, the default.
    let domain = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .and_then(|h| shared::normalize_domain(h).ok())
        .unwrap_or_else(|| state.settings.default_domain.clone());
    let settings = state.cache.settings(&state.db, &domain).await?;
    let code = settings.canonical_code(code);
    let Some(route) = RouteKey::new(domain, code.as_ref()) else {
        return Ok(Decision::not_found(method));
    };
    let entry = state
        .cache
        .entry(&state.db, route.domain(), route.code())
        .await?;
    // The edge holds a denylist; here the entry already says whether a ban applies.
    let mut snapshot = DenylistSnapshot::default();
    if entry.code_banned {
        snapshot.codes.push(route.to_string());
    }
    let visit = Visit {
        method,
        route: &route,
        query,
        now: now_ms().div_euclid(1000),
    };
    Ok(decide(
        &visit,
        entry.record.as_ref(),
        &Denylist::from(snapshot),
        &settings,
    ))
}

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
        if let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(value),
        ) {
            headers.insert(name, value);
        }
    }
    res
}

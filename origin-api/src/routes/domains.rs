//! `/v1/domains`: the domain registry. Admin keys register domains; every key sees the
//! domains it may create links on.

use super::body::{ApiJson, LIST_BODY_LIMIT};
use super::body::{ApiPath, ApiQuery};
use super::responses::{AdminOnly, IfMatchHonoured, IfMatchRequired, NotRegistered};
use crate::auth::Caller;
use crate::domains::Domains;
use crate::domains::{delete_domain, update_domain};
use crate::error::{AppError, Problem};
use crate::links::parse_if_match;
use crate::model::time::rfc3339;
use crate::model::Domain;
use crate::views::domains::{
    CreateDomain, DomainView, LegacyCodesBody, LegacyCodesParams, LegacyCodesView,
    LegacyMissParams, LegacyMissView, UpdateDomain,
};
use crate::views::links::Page;
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::Response;
use axum::Json;
use std::sync::Arc;

/// A domain with its `ETag` (the version).
fn domain_response(status: StatusCode, d: &Domain) -> Response {
    super::body::versioned(status, &d.view(), d.version)
}

/// The domain a change names, for an admin key only (`what` says which change).
fn admin_target(caller: &Caller, what: &'static str, raw: &str) -> Result<String, AppError> {
    caller.require_admin(what)?;
    shared::normalize_short_domain(raw).map_err(|_| AppError::NotFound)
}

/// `POST /v1/domains`: registers a domain.
#[utoipa::path(post, path = "/v1/domains", operation_id = "create_domain", tag = "domains", request_body = CreateDomain,
    responses(
        (status = 201, description = "Registered", body = DomainView, headers(("ETag" = String, description = "The version, quoted"))),
        AdminOnly,
        (status = 409, description = "the domain is registered already", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "a field is invalid: the name, owners, a setting, a URL, unknown field", body = Problem, content_type = "application/problem+json"),
    ),
    security(("api_key" = [])))]
pub(crate) async fn create(
    State(state): State<Arc<Domains>>,
    caller: Caller,
    ApiJson(body): ApiJson<CreateDomain>,
) -> Result<Response, AppError> {
    caller.require_admin("registering domains needs an admin key (keys create --admin)")?;
    let domain = state.register(&body).await?;
    tracing::info!(domain = %domain.domain, by = %caller.key_id, "domain registered");
    Ok(domain_response(StatusCode::CREATED, &domain))
}

/// `GET /v1/domains`: every domain for an admin key; for others, those it may use (a
/// key limited to domains, only those).
#[utoipa::path(get, path = "/v1/domains", operation_id = "list_domains", tag = "domains",
    responses((status = 200, description = "The domains, by name", body = Vec<DomainView>)),
    security(("api_key" = [])))]
pub(crate) async fn list(
    State(state): State<Arc<Domains>>,
    caller: Caller,
) -> Result<Json<Vec<DomainView>>, AppError> {
    let domains = state.visible(&caller.principal()).await?;
    Ok(Json(domains.iter().map(Domain::view).collect()))
}

/// `GET /v1/domains/{domain}`: one domain, to an admin key or a key that may use it.
#[utoipa::path(get, path = "/v1/domains/{domain}", operation_id = "read_domain", tag = "domains", params(("domain" = String, Path)),
    responses(
        (status = 200, description = "The domain", body = DomainView, headers(("ETag" = String, description = "The version, quoted"))),
        (status = 404, description = "not registered, or not one this key may use", body = Problem, content_type = "application/problem+json"),
    ),
    security(("api_key" = [])))]
pub(crate) async fn read(
    State(state): State<Arc<Domains>>,
    caller: Caller,
    ApiPath(name): ApiPath<String>,
) -> Result<Response, AppError> {
    let d = state.read(&caller.principal(), &name).await?;
    Ok(domain_response(StatusCode::OK, &d))
}

/// `PATCH /v1/domains/{domain}` with `If-Match: "<version>"`.
#[utoipa::path(patch, path = "/v1/domains/{domain}", operation_id = "update_domain", tag = "domains", request_body = UpdateDomain,
    params(("domain" = String, Path),
        ("If-Match" = Option<String>, Header, description = "The version read, as its ETag: \"3\". Required: without it the answer is 428")),
    responses(
        (status = 200, description = "Changed; the version moved on", body = DomainView, headers(("ETag" = String, description = "The new version, quoted"))),
        AdminOnly, NotRegistered,
        (status = 409, description = "the code shape of a domain that holds links", body = Problem, content_type = "application/problem+json"), (status = 422, description = "a field is invalid", body = Problem, content_type = "application/problem+json"), IfMatchRequired,
    ),
    security(("api_key" = [])))]
pub(crate) async fn update(
    State(state): State<Arc<Domains>>,
    caller: Caller,
    ApiPath(name): ApiPath<String>,
    headers: HeaderMap,
    ApiJson(body): ApiJson<UpdateDomain>,
) -> Result<Response, AppError> {
    let name = admin_target(
        &caller,
        "changing domains needs an admin key (keys create --admin)",
        &name,
    )?;
    let expected = parse_if_match(headers.get(header::IF_MATCH).and_then(|v| v.to_str().ok()))?;
    let d = update_domain(&state, &name, expected, body).await?;
    tracing::info!(domain = %d.domain, version = d.version, by = %caller.key_id, "domain changed");
    Ok(domain_response(StatusCode::OK, &d))
}

/// `DELETE /v1/domains/{domain}`: only a domain no link lives on; `If-Match` is honoured
/// when sent.
#[utoipa::path(delete, path = "/v1/domains/{domain}", operation_id = "delete_domain", tag = "domains",
    params(("domain" = String, Path),
        ("If-Match" = Option<String>, Header, description = "Optional: refuse with 412 if the version moved on")),
    responses(
        (status = 204, description = "Removed"),
        AdminOnly, NotRegistered,
        (status = 409, description = "links live on it (disable it instead), or it is the default domain", body = Problem, content_type = "application/problem+json"), IfMatchHonoured,
    ),
    security(("api_key" = [])))]
pub(crate) async fn delete(
    State(state): State<Arc<Domains>>,
    caller: Caller,
    ApiPath(name): ApiPath<String>,
    headers: HeaderMap,
) -> Result<StatusCode, AppError> {
    let name = admin_target(
        &caller,
        "removing domains needs an admin key (keys create --admin)",
        &name,
    )?;
    let expected = super::body::optional_if_match(&headers)?;
    delete_domain(&state, &name, expected).await?;
    tracing::info!(domain = %name, by = %caller.key_id, "domain removed");
    Ok(StatusCode::NO_CONTENT)
}

/// `GET /v1/domains/{domain}/legacy-misses`: the codes visitors still ask the domain's
/// old shortener for (its `legacy_url`), most visited first, without those a link here
/// has since taken: what is left to import. For an admin key, or a key of an owner of
/// the domain (a shared domain's misses are its operators').
#[utoipa::path(get, path = "/v1/domains/{domain}/legacy-misses", operation_id = "list_legacy_misses", tag = "domains",
    params(("domain" = String, Path), LegacyMissParams),
    responses(
        (status = 200, description = "A page of codes, most visited first", body = Page<LegacyMissView>),
        (status = 404, description = "not registered, or not this key's owner's", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "a bad limit or cursor", body = Problem, content_type = "application/problem+json"),
    ),
    security(("api_key" = [])))]
pub(crate) async fn legacy_misses(
    State(state): State<Arc<Domains>>,
    caller: Caller,
    ApiPath(name): ApiPath<String>,
    ApiQuery(params): ApiQuery<LegacyMissParams>,
) -> Result<Json<Page<LegacyMissView>>, AppError> {
    let domain = domain_for_owner(&state, &caller, &name).await?;
    let limit = params.limit.unwrap_or(100);
    if !(1..=1000).contains(&limit) {
        return Err(AppError::invalid("limit", "between 1 and 1000"));
    }
    let after = params
        .cursor
        .as_deref()
        .map(|c| {
            c.split_once('.')
                .and_then(|(v, code)| Some((v.parse::<i64>().ok()?, code)))
                .ok_or_else(|| AppError::invalid("cursor", "not a cursor this API gave out"))
        })
        .transpose()?;
    let mut misses = state.legacy_misses(&domain, after, limit + 1).await?;
    let more = misses.len() > usize::try_from(limit).unwrap_or(usize::MAX);
    misses.truncate(usize::try_from(limit).unwrap_or(usize::MAX));
    let next_cursor = more
        .then(|| misses.last().map(|m| format!("{}.{}", m.visits, m.code)))
        .flatten();
    let base = domain.settings.legacy_url.as_deref().unwrap_or_default();
    Ok(Json(Page {
        items: misses
            .into_iter()
            .map(|m| LegacyMissView {
                legacy_url: format!("{base}/{}", m.code),
                code: m.code,
                visits: m.visits,
                bot_visits: m.bot_visits,
                first_seen_at: rfc3339(m.first_seen_at),
                last_seen_at: rfc3339(m.last_seen_at),
            })
            .collect(),
        next_cursor,
    }))
}

/// The domain `raw` names, for an admin key or a key of one of its owners (a shared
/// domain is its operators'); 404 for anyone else.
async fn domain_for_owner(state: &Domains, caller: &Caller, raw: &str) -> Result<Domain, AppError> {
    state.held(&caller.principal(), raw).await
}

/// The legacy list's state for `d`: `added` by this request, `listed` in all, and the
/// `code` asked about with whether it is listed.
fn legacy_view(
    d: &Domain,
    added: Option<u64>,
    listed: i64,
    code: Option<(String, bool)>,
) -> LegacyCodesView {
    let now_s = crate::model::time::now_ms().div_euclid(1000);
    let (code, known) = code.map_or((None, None), |(c, k)| (Some(c), Some(k)));
    LegacyCodesView {
        added,
        listed,
        running: d.settings.legacy_base(now_s).is_some(),
        legacy_url: d.settings.legacy_url.clone(),
        legacy_until: d
            .settings
            .legacy_until
            .map(|s| rfc3339(s.saturating_mul(1000))),
        code,
        known,
    }
}

/// `POST /v1/domains/{domain}/legacy-codes`: adds codes to the domain's legacy list,
/// the codes that lived at the shortener it moved from. Only these are sent on there
/// by its fallback (`legacy_url`, until `legacy_until`); every other code is not found.
/// Admin keys only: the list decides where the domain sends its visitors.
#[utoipa::path(post, path = "/v1/domains/{domain}/legacy-codes", operation_id = "add_legacy_codes", tag = "domains",
    params(("domain" = String, Path)), request_body = LegacyCodesBody,
    responses(
        (status = 200, description = "Added (a code listed already is left as it is); each new code reaches the edge like a link's record", body = LegacyCodesView),
        AdminOnly, NotRegistered,
        (status = 413, description = "a body over 4 MiB", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "no codes, more than 10,000, or one no visitor could ask for (the whole request is refused, naming it)", body = Problem, content_type = "application/problem+json"),
    ),
    security(("api_key" = [])))]
pub(crate) async fn add_legacy_codes(
    State(state): State<Arc<Domains>>,
    caller: Caller,
    ApiPath(name): ApiPath<String>,
    ApiJson(body): ApiJson<LegacyCodesBody, LIST_BODY_LIMIT>,
) -> Result<Json<LegacyCodesView>, AppError> {
    let name = admin_target(
        &caller,
        "listing a domain's legacy codes needs an admin key (keys create --admin)",
        &name,
    )?;
    let done = state.list_legacy_codes(&name, &body.codes).await?;
    tracing::info!(domain = %name, added = done.added, by = %caller.key_id, "legacy codes listed");
    Ok(Json(legacy_view(
        &done.domain,
        Some(done.added),
        done.listed,
        None,
    )))
}

/// `GET /v1/domains/{domain}/legacy-codes`: how many codes the domain's legacy list
/// holds, whether its fallback runs, and (`?code=`) whether one code is listed.
#[utoipa::path(get, path = "/v1/domains/{domain}/legacy-codes", operation_id = "read_legacy_codes", tag = "domains",
    params(("domain" = String, Path), LegacyCodesParams),
    responses(
        (status = 200, description = "The list's state", body = LegacyCodesView),
        (status = 404, description = "not registered, or not this key's owner's", body = Problem, content_type = "application/problem+json"),
    ),
    security(("api_key" = [])))]
pub(crate) async fn read_legacy_codes(
    State(state): State<Arc<Domains>>,
    caller: Caller,
    ApiPath(name): ApiPath<String>,
    ApiQuery(params): ApiQuery<LegacyCodesParams>,
) -> Result<Json<LegacyCodesView>, AppError> {
    let d = domain_for_owner(&state, &caller, &name).await?;
    let (listed, code) = state.legacy_list(&d, params.code.as_deref()).await?;
    Ok(Json(legacy_view(&d, None, listed, code)))
}

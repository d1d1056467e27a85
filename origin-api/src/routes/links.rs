//! `/v1/links`: the marketers' API.

use super::body::{ApiJson, ApiPath, ApiQuery, BULK_BODY_LIMIT};
use super::responses::{IfMatchHonoured, IfMatchRequired, NoSuchLink, ReadAndDeleteOnly};
use crate::auth::Caller;
use crate::error::{AppError, Problem};
use crate::links::Links;
use crate::links::{
    self, check_idempotency_key, create_link_once, delete_link, parse_if_match, restore_link,
    update_link, BulkOutcome, Created, Intent,
};
use crate::model::{Link, ListFilter};
use crate::views::links::QrParams;
use crate::views::links::{
    BulkCreate, BulkResponse, CreateLink, LinkView, ListParams, Page, UpdateLink,
};
use crate::views::links::{IssueToken, IssuedToken};
use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use std::sync::Arc;

/// A link with its `ETag` (the version) and status.
fn link_response(links: &Links, status: StatusCode, link: &Link) -> Response {
    super::body::versioned(status, &links.view(link), link.version)
}

/// `POST /v1/links`, with an optional `Idempotency-Key`.
#[utoipa::path(post, path = "/v1/links", operation_id = "create_link", tag = "links", request_body = CreateLink,
    params(("Idempotency-Key" = Option<String>, Header, description = "At most one link per owner and key for 24 hours; a retry with the same body gets the same link")),
    responses(
        (status = 201, description = "Created (or replayed, with `Idempotent-Replayed: true`)", body = LinkView,
            headers(("ETag" = String, description = "The version, quoted"), ("Location" = String))),
        (status = 200, description = "With `dedupe: true` (and nothing a plain public link lacks): the owner's existing live link to the same target, nothing created (`Hop-Deduplicated: true`)", body = LinkView,
            headers(("ETag" = String, description = "The version, quoted"), ("Location" = String), ("Hop-Deduplicated" = String))),
        (status = 403, description = "the domain belongs to other owners, or lies outside the domains this key is limited to; or the owner's quota of live links, or of links today, is used up (`quota-links`, `quota-links-per-day`)", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "the alias is taken, the domain changed meanwhile (send it again), or the domain has issued every generated code of its shape", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "a field is invalid: bad URL, banned or own host, bad or reserved alias, past expiry, unknown field; or the key was used with another body", body = Problem, content_type = "application/problem+json"),
        (status = 429, description = "this key creates too fast; see Retry-After", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "the database cannot answer, or too many passwords are being hashed now; see Retry-After", body = Problem, content_type = "application/problem+json"),
    ),
    security(("api_key" = [])))]
pub(crate) async fn create(
    State(state): State<Arc<Links>>,
    caller: Caller,
    headers: HeaderMap,
    ApiJson(body): ApiJson<CreateLink>,
) -> Result<Response, AppError> {
    state.take_creates(&caller.key_id, &caller.owner_id, 1)?;
    let key = idempotency_key(&headers)?;
    let res = match create_link_once(&state, &caller.creator(), body, key).await? {
        Created::New(link) => with_location(
            link_response(&state, StatusCode::CREATED, &link),
            &link.domain,
            &link.code,
        ),
        Created::Existing(link) => {
            let mut res = link_response(&state, StatusCode::OK, &link);
            res.headers_mut()
                .insert("hop-deduplicated", HeaderValue::from_static("true"));
            with_location(res, &link.domain, &link.code)
        }
        Created::Replayed(json) => {
            let mut view: LinkView = serde_json::from_str(&json)
                .map_err(|e| AppError::Internal(format!("idempotency response: {e}")))?;
            if view.short_url.is_empty() {
                view.short_url = state.settings.short_urls.of(&view.domain, &view.code);
            }
            let mut res = (StatusCode::CREATED, Json(&view)).into_response();
            let h = res.headers_mut();
            h.insert("idempotent-replayed", HeaderValue::from_static("true"));
            if let Ok(etag) = HeaderValue::from_str(&format!("\"{}\"", view.version)) {
                h.insert(header::ETAG, etag);
            }
            with_location(res, &view.domain, &view.code)
        }
    };
    Ok(res)
}

/// `POST /v1/links/bulk`: per-item results in request order.
#[utoipa::path(post, path = "/v1/links/bulk", operation_id = "create_links_bulk", tag = "links", request_body = BulkCreate,
    params(("Idempotency-Key" = Option<String>, Header, description = "Covers the whole batch")),
    responses(
        (status = 200, description = "One result per item, in request order", body = BulkResponse),
        (status = 422, description = "not 1 to 10,000 links, more than 100 with a password, or the key was used with another body", body = Problem, content_type = "application/problem+json"),
        (status = 429, description = "this key creates too fast; see Retry-After", body = Problem, content_type = "application/problem+json"),
    ),
    security(("api_key" = [])))]
pub(crate) async fn create_bulk(
    State(state): State<Arc<Links>>,
    caller: Caller,
    headers: HeaderMap,
    ApiJson(body): ApiJson<BulkCreate, BULK_BODY_LIMIT>,
) -> Result<Response, AppError> {
    state.take_creates(&caller.key_id, &caller.owner_id, body.links.len())?;
    let key = idempotency_key(&headers)?;
    Ok(
        match links::create_bulk(&state, &caller.creator(), body, key).await? {
            BulkOutcome::New(response) => (StatusCode::OK, Json(response)).into_response(),
            BulkOutcome::Replayed(json) => (
                StatusCode::OK,
                [
                    (header::CONTENT_TYPE, "application/json"),
                    (HeaderName::from_static("idempotent-replayed"), "true"),
                ],
                json,
            )
                .into_response(),
        },
    )
}

fn idempotency_key(headers: &HeaderMap) -> Result<Option<&str>, AppError> {
    match headers.get("idempotency-key") {
        None => Ok(None),
        Some(v) => {
            let v = v.to_str().map_err(|_| {
                AppError::BadRequest("Idempotency-Key is 1 to 255 visible ASCII characters".into())
            })?;
            check_idempotency_key(v).map(Some)
        }
    }
}

fn with_location(mut res: Response, domain: &str, code: &str) -> Response {
    if let Ok(location) = HeaderValue::from_str(&format!("/v1/links/{domain}/{code}")) {
        res.headers_mut().insert(header::LOCATION, location);
    }
    res
}

/// `GET /v1/links?domain=&tag=&status=&cursor=&limit=`: the caller's links, newest first.
#[utoipa::path(get, path = "/v1/links", operation_id = "list_links", tag = "links", params(ListParams),
    responses(
        (status = 200, description = "A page of links, newest first", body = Page<LinkView>),
        (status = 403, description = "`domain` names a domain this key is not limited to", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "a bad filter, cursor or limit", body = Problem, content_type = "application/problem+json"),
    ),
    security(("api_key" = [])))]
pub(crate) async fn list(
    State(state): State<Arc<Links>>,
    caller: Caller,
    ApiQuery(params): ApiQuery<ListParams>,
) -> Result<Json<Page<LinkView>>, AppError> {
    let filter = ListFilter::new(&caller.creator(), params)?;
    let page = filter.page(state.list(&filter).await?);
    Ok(Json(Page {
        items: page.items.iter().map(|l| state.view(l)).collect(),
        next_cursor: page.next_cursor,
    }))
}

/// `GET /v1/links/{domain}/{code}`: tombstones too. Another owner's link is 404, so a
/// key cannot learn which codes others hold.
#[utoipa::path(get, path = "/v1/links/{domain}/{code}", operation_id = "read_link", tag = "links", params(("domain" = String, Path), ("code" = String, Path)),
    responses(
        (status = 200, description = "The link", body = LinkView, headers(("ETag" = String))),
        NoSuchLink,
    ),
    security(("api_key" = [])))]
pub(crate) async fn read(
    State(state): State<Arc<Links>>,
    caller: Caller,
    ApiPath((domain, code)): ApiPath<(String, String)>,
) -> Result<Response, AppError> {
    let link = state
        .owned(&caller.creator(), &domain, &code, Intent::ReadOrDelete)
        .await?;
    Ok(link_response(&state, StatusCode::OK, &link))
}

/// `PATCH /v1/links/{domain}/{code}` with `If-Match: "<version>"`.
#[utoipa::path(patch, path = "/v1/links/{domain}/{code}", operation_id = "update_link", tag = "links",
    params(("domain" = String, Path), ("code" = String, Path),
        ("If-Match" = Option<String>, Header, description = "The version read, as its ETag: \"3\". Required: without it the answer is 428")),
    request_body = UpdateLink,
    responses(
        (status = 200, description = "The changed link, version bumped", body = LinkView, headers(("ETag" = String))),
        NoSuchLink, ReadAndDeleteOnly, (status = 410, description = "the link is deleted", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "a field is invalid", body = Problem, content_type = "application/problem+json"), IfMatchRequired,
        (status = 429, description = "this key changes passwords too fast (10 a second, bursts of 20); see Retry-After", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "too many passwords are being hashed now; see Retry-After", body = Problem, content_type = "application/problem+json"),
    ),
    security(("api_key" = [])))]
pub(crate) async fn update(
    State(state): State<Arc<Links>>,
    caller: Caller,
    ApiPath((domain, code)): ApiPath<(String, String)>,
    headers: HeaderMap,
    ApiJson(changes): ApiJson<UpdateLink>,
) -> Result<Response, AppError> {
    let expected = parse_if_match(headers.get(header::IF_MATCH).and_then(|v| v.to_str().ok()))?;
    let current = state
        .owned(&caller.creator(), &domain, &code, Intent::Change)
        .await?;
    let link = update_link(&state, current, expected, changes, caller.creator().actor).await?;
    Ok(link_response(&state, StatusCode::OK, &link))
}

/// `POST /v1/links/{domain}/{code}/restore`: a deleted link back, within the restore
/// window; `If-Match` is honoured when sent.
#[utoipa::path(post, path = "/v1/links/{domain}/{code}/restore", operation_id = "restore_link", tag = "links",
    params(("domain" = String, Path), ("code" = String, Path),
        ("If-Match" = Option<String>, Header, description = "Optional: refuse with 412 if the version moved on")),
    responses(
        (status = 200, description = "Restored with the status it had before its deletion (`active` if its history does not reach so far), as a new version, published to the edge again", body = LinkView, headers(("ETag" = String))),
        (status = 403, description = "the link's domain no longer admits its owner, or is disabled; or restoring it would pass the owner's quota of live links (`quota-links`)", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "no such link of this key's owner", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "the link is not deleted", body = Problem, content_type = "application/problem+json"),
        (status = 410, description = "deleted longer ago than --restore-window (30 days by default): final", body = Problem, content_type = "application/problem+json"),
        IfMatchHonoured,
        (status = 422, description = "a target no longer passes the policy or is on a banned host", body = Problem, content_type = "application/problem+json"),
    ),
    security(("api_key" = [])))]
pub(crate) async fn restore(
    State(state): State<Arc<Links>>,
    caller: Caller,
    ApiPath((domain, code)): ApiPath<(String, String)>,
    headers: HeaderMap,
) -> Result<Response, AppError> {
    let expected = super::body::optional_if_match(&headers)?;
    let current = state
        .owned(&caller.creator(), &domain, &code, Intent::Change)
        .await?;
    let link = restore_link(&state, current, expected, caller.creator().actor).await?;
    tracing::info!(link = %link.route_key(), by = %caller.key_id, "link restored");
    Ok(link_response(&state, StatusCode::OK, &link))
}

/// `DELETE /v1/links/{domain}/{code}`: a tombstone; `If-Match` is honoured when sent.
#[utoipa::path(delete, path = "/v1/links/{domain}/{code}", operation_id = "delete_link", tag = "links",
    params(("domain" = String, Path), ("code" = String, Path),
        ("If-Match" = Option<String>, Header, description = "Optional: refuse with 412 if the version moved on")),
    responses(
        (status = 204, description = "Deleted (or already deleted); the code is kept for ever and visitors get 410"),
        NoSuchLink, IfMatchHonoured,
    ),
    security(("api_key" = [])))]
pub(crate) async fn delete(
    State(state): State<Arc<Links>>,
    caller: Caller,
    ApiPath((domain, code)): ApiPath<(String, String)>,
    headers: HeaderMap,
) -> Result<StatusCode, AppError> {
    let expected = super::body::optional_if_match(&headers)?;
    let current = state
        .owned(&caller.creator(), &domain, &code, Intent::ReadOrDelete)
        .await?;
    delete_link(&state, current, expected, caller.creator().actor).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// `GET /v1/links/{domain}/{code}/qr`: the link's QR code, encoding its full short URL.
#[utoipa::path(get, path = "/v1/links/{domain}/{code}/qr", operation_id = "link_qr", tag = "links",
    params(("domain" = String, Path), ("code" = String, Path), QrParams),
    responses(
        (status = 200, description = "The QR code of https://{domain}/{code}", content((String = "image/svg+xml"), (String = "image/png"))),
        NoSuchLink,
        (status = 422, description = "a bad format, size, margin or ecc", body = Problem, content_type = "application/problem+json"),
    ),
    security(("api_key" = [])))]
pub(crate) async fn qr(
    State(state): State<Arc<Links>>,
    caller: Caller,
    ApiPath((domain, code)): ApiPath<(String, String)>,
    ApiQuery(params): ApiQuery<QrParams>,
) -> Result<Response, AppError> {
    let link = state
        .owned(&caller.creator(), &domain, &code, Intent::ReadOrDelete)
        .await?;
    let drawn = crate::links::qr::draw(&state.short_url(&link), &params)?;
    Ok((
        [
            (header::CONTENT_TYPE, drawn.content_type),
            // A link's short URL never changes: its code may be kept.
            (header::CACHE_CONTROL, "private, max-age=86400"),
        ],
        drawn.bytes,
    )
        .into_response())
}

/// `POST /v1/links/{domain}/{code}/tokens`: a token that opens a signed link until it
/// expires.
#[utoipa::path(post, path = "/v1/links/{domain}/{code}/tokens", operation_id = "issue_link_token", tag = "links",
    params(("domain" = String, Path), ("code" = String, Path)),
    request_body = IssueToken,
    responses(
        (status = 201, description = "The token and the URL to share", body = IssuedToken),
        NoSuchLink, ReadAndDeleteOnly,
        (status = 410, description = "the link is deleted", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "the link is public, or a bad expiry", body = Problem, content_type = "application/problem+json"),
    ),
    security(("api_key" = [])))]
pub(crate) async fn issue_token(
    State(state): State<Arc<Links>>,
    caller: Caller,
    ApiPath((domain, code)): ApiPath<(String, String)>,
    ApiJson(asked): ApiJson<IssueToken>,
) -> Result<Response, AppError> {
    let link = state
        .owned(&caller.creator(), &domain, &code, Intent::Change)
        .await?;
    let issued = crate::links::access::issue(&link, &asked, crate::model::time::now_ms())?;
    Ok((StatusCode::CREATED, Json(issued)).into_response())
}

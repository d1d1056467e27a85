//! `/v1/links`: the marketers' API.

use crate::auth::Caller;
use crate::error::AppError;
use crate::links::{
    self, check_idempotency_key, create_link_once, delete_link, owned_link, parse_if_match,
    update_link, BulkCreate, BulkOutcome, CreateLink, Created, Link, LinkView, ListFilter,
    ListParams, Page, UpdateLink,
};
use crate::store::LinkStore;
use crate::AppState;
use axum::extract::{FromRequest, FromRequestParts, Path, State};
use axum::http::{header, HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;

/// JSON bodies whose rejections are problem documents.
#[derive(Debug, FromRequest)]
#[from_request(via(axum::Json), rejection(AppError))]
pub(crate) struct ApiJson<T>(pub(crate) T);

/// A link with its `ETag` (the version) and status.
fn link_response(status: StatusCode, link: &Link) -> Response {
    let mut res = (status, Json(link.view())).into_response();
    if let Ok(etag) = HeaderValue::from_str(&format!("\"{}\"", link.version)) {
        res.headers_mut().insert(header::ETAG, etag);
    }
    res
}

/// `POST /v1/links`, with an optional `Idempotency-Key`.
pub(crate) async fn create(
    State(state): State<AppState>,
    caller: Caller,
    headers: HeaderMap,
    ApiJson(body): ApiJson<CreateLink>,
) -> Result<Response, AppError> {
    state.create_limit.take(&caller.key_id, 1)?;
    let key = idempotency_key(&headers)?;
    let res = match create_link_once(&state, &caller.owner_id, body, key).await? {
        Created::New(link) => with_location(
            link_response(StatusCode::CREATED, &link),
            &link.domain,
            &link.code,
        ),
        Created::Replayed(json) => {
            let view: LinkView = serde_json::from_str(&json).map_err(|e| {
                AppError::Store(crate::store::StoreError::Corrupt(format!(
                    "idempotency response: {e}"
                )))
            })?;
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
pub(crate) async fn create_bulk(
    State(state): State<AppState>,
    caller: Caller,
    headers: HeaderMap,
    ApiJson(body): ApiJson<BulkCreate>,
) -> Result<Response, AppError> {
    state.create_limit.take(&caller.key_id, body.links.len())?;
    let key = idempotency_key(&headers)?;
    Ok(
        match links::create_bulk(&state, &caller.owner_id, body, key).await? {
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

/// Query strings whose rejections are problem documents.
#[derive(Debug, FromRequestParts)]
#[from_request(via(axum::extract::Query), rejection(AppError))]
pub(crate) struct ApiQuery<T>(pub(crate) T);

/// `GET /v1/links?domain=&tag=&status=&cursor=&limit=`: the caller's links, newest first.
pub(crate) async fn list(
    State(state): State<AppState>,
    caller: Caller,
    ApiQuery(params): ApiQuery<ListParams>,
) -> Result<Json<Page<LinkView>>, AppError> {
    let filter = ListFilter::new(&caller.owner_id, params)?;
    let page = filter.page(state.db.list_links(&filter).await?);
    Ok(Json(Page {
        items: page.items.iter().map(Link::view).collect(),
        next_cursor: page.next_cursor,
    }))
}

/// `GET /v1/links/{domain}/{code}`: tombstones too. Another owner's link is 404, so a
/// key cannot learn which codes others hold.
pub(crate) async fn read(
    State(state): State<AppState>,
    caller: Caller,
    Path((domain, code)): Path<(String, String)>,
) -> Result<Response, AppError> {
    let link = owned_link(&state, &caller.owner_id, &domain, &code).await?;
    Ok(link_response(StatusCode::OK, &link))
}

/// `PATCH /v1/links/{domain}/{code}` with `If-Match: "<version>"`.
pub(crate) async fn update(
    State(state): State<AppState>,
    caller: Caller,
    Path((domain, code)): Path<(String, String)>,
    headers: HeaderMap,
    ApiJson(changes): ApiJson<UpdateLink>,
) -> Result<Response, AppError> {
    let expected = parse_if_match(headers.get(header::IF_MATCH).and_then(|v| v.to_str().ok()))?;
    let current = owned_link(&state, &caller.owner_id, &domain, &code).await?;
    let link = update_link(&state, current, expected, changes).await?;
    Ok(link_response(StatusCode::OK, &link))
}

/// `DELETE /v1/links/{domain}/{code}`: a tombstone; `If-Match` is honoured when sent.
pub(crate) async fn delete(
    State(state): State<AppState>,
    caller: Caller,
    Path((domain, code)): Path<(String, String)>,
    headers: HeaderMap,
) -> Result<StatusCode, AppError> {
    let expected = match headers.get(header::IF_MATCH) {
        None => None,
        Some(v) => Some(parse_if_match(v.to_str().ok())?),
    };
    let current = owned_link(&state, &caller.owner_id, &domain, &code).await?;
    delete_link(&state, current, expected).await?;
    Ok(StatusCode::NO_CONTENT)
}

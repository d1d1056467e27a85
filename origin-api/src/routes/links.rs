//! `/v1/links`: the marketers' API.

use crate::auth::Caller;
use crate::error::AppError;
use crate::links::{create_link, CreateLink, Link};
use crate::store::LinkStore;
use crate::AppState;
use axum::extract::{FromRequest, Path, State};
use axum::http::{header, HeaderValue, StatusCode};
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

/// `POST /v1/links`
pub(crate) async fn create(
    State(state): State<AppState>,
    caller: Caller,
    ApiJson(body): ApiJson<CreateLink>,
) -> Result<Response, AppError> {
    let link = create_link(&state, &caller.owner_id, body).await?;
    let mut res = link_response(StatusCode::CREATED, &link);
    if let Ok(location) = HeaderValue::from_str(&format!("/v1/links/{}/{}", link.domain, link.code))
    {
        res.headers_mut().insert(header::LOCATION, location);
    }
    Ok(res)
}

/// `GET /v1/links/{domain}/{code}`: tombstones too. Another owner's link is 404, so a
/// key cannot learn which codes others hold.
pub(crate) async fn read(
    State(state): State<AppState>,
    caller: Caller,
    Path((domain, code)): Path<(String, String)>,
) -> Result<Response, AppError> {
    let domain = shared::normalize_domain(&domain).map_err(|_| AppError::NotFound)?;
    let settings = state.db.domain_settings(&domain).await?;
    let code = settings.canonical_code(&code);
    let link = state
        .db
        .get_link(&domain, &code)
        .await?
        .filter(|l| l.owner_id == caller.owner_id)
        .ok_or(AppError::NotFound)?;
    Ok(link_response(StatusCode::OK, &link))
}

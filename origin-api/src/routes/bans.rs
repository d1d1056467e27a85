//! `/v1/bans`: trust & safety. Admin keys only: the bans service says so.

use super::body::ApiJson;
use super::body::{ApiPath, ApiQuery};
use super::responses::AdminOnly;
use crate::auth::Caller;
use crate::bans::Bans;
use crate::error::{AppError, Problem};
use crate::views::bans::{BanView, CreateBan};
use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use serde::Deserialize;
use std::sync::Arc;

/// `POST /v1/bans`
#[utoipa::path(post, path = "/v1/bans", operation_id = "create_ban", tag = "bans", request_body = CreateBan,
    responses(
        (status = 201, description = "The ban; the denylist and every covered link are re-published", body = BanView),
        AdminOnly, (status = 422, description = "a bad kind, code, host or reason", body = Problem, content_type = "application/problem+json"),
    ),
    security(("api_key" = [])))]
pub(crate) async fn create(
    State(state): State<Arc<Bans>>,
    caller: Caller,
    ApiJson(body): ApiJson<CreateBan>,
) -> Result<(StatusCode, Json<BanView>), AppError> {
    let created_by = format!("{}/{}", caller.owner_id, caller.key_id);
    let ban = state
        .create(&caller.principal(), &body, &created_by)
        .await?;
    tracing::info!(ban = ban.ban_id, by = %created_by, "ban created");
    Ok((StatusCode::CREATED, Json(ban.view())))
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub(crate) struct ListBans {
    /// Lifted bans too.
    #[serde(default)]
    all: bool,
}

/// `GET /v1/bans[?all=true]`: active bans, or all of them.
#[utoipa::path(get, path = "/v1/bans", operation_id = "list_bans", tag = "bans", params(ListBans),
    responses((status = 200, description = "The bans", body = Vec<BanView>), AdminOnly),
    security(("api_key" = [])))]
pub(crate) async fn list(
    State(state): State<Arc<Bans>>,
    caller: Caller,
    ApiQuery(q): ApiQuery<ListBans>,
) -> Result<Json<Vec<BanView>>, AppError> {
    let bans = state.list(&caller.principal(), q.all).await?;
    Ok(Json(bans.iter().map(|b| b.view()).collect()))
}

/// `DELETE /v1/bans/{id}`: lifts the ban.
#[utoipa::path(delete, path = "/v1/bans/{id}", operation_id = "lift_ban", tag = "bans", params(("id" = i64, Path)),
    responses(
        (status = 204, description = "Lifted (or already lifted); what it covered is re-published"),
        AdminOnly, (status = 404, description = "no such ban", body = Problem, content_type = "application/problem+json"),
    ),
    security(("api_key" = [])))]
pub(crate) async fn lift(
    State(state): State<Arc<Bans>>,
    caller: Caller,
    ApiPath(id): ApiPath<i64>,
) -> Result<StatusCode, AppError> {
    state.lift(&caller.principal(), id).await?;
    Ok(StatusCode::NO_CONTENT)
}

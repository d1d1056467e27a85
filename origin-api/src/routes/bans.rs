//! `/v1/bans`: trust & safety. Admin keys only.

use super::links::{ApiJson, ApiQuery};
use crate::auth::Caller;
use crate::bans::{BanView, CreateBan};
use crate::error::AppError;
use crate::store::{now_ms, BanStore, LiftOutcome};
use crate::AppState;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use serde::Deserialize;

fn admin(caller: &Caller) -> Result<(), AppError> {
    if caller.admin {
        Ok(())
    } else {
        Err(AppError::Forbidden(
            "bans need an admin key (keys create --admin)",
        ))
    }
}

/// `POST /v1/bans`
pub(crate) async fn create(
    State(state): State<AppState>,
    caller: Caller,
    ApiJson(body): ApiJson<CreateBan>,
) -> Result<(StatusCode, Json<BanView>), AppError> {
    admin(&caller)?;
    let target = body.target(&state.settings.default_domain)?;
    let created_by = format!("{}/{}", caller.owner_id, caller.key_id);
    let ban = state
        .db
        .insert_ban(&target, body.reason.trim(), &created_by, now_ms())
        .await?;
    state.cache.clear();
    tracing::info!(ban = ban.ban_id, by = %created_by, "ban created");
    Ok((StatusCode::CREATED, Json(ban.view())))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ListBans {
    #[serde(default)]
    all: bool,
}

/// `GET /v1/bans[?all=true]`: active bans, or all of them.
pub(crate) async fn list(
    State(state): State<AppState>,
    caller: Caller,
    ApiQuery(q): ApiQuery<ListBans>,
) -> Result<Json<Vec<BanView>>, AppError> {
    admin(&caller)?;
    let bans = state.db.list_bans(q.all).await?;
    Ok(Json(bans.iter().map(|b| b.view()).collect()))
}

/// `DELETE /v1/bans/{id}`: lifts the ban.
pub(crate) async fn lift(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<i64>,
) -> Result<StatusCode, AppError> {
    admin(&caller)?;
    let outcome = state.db.lift_ban(id, now_ms()).await?;
    state.cache.clear();
    match outcome {
        LiftOutcome::Lifted(_) | LiftOutcome::AlreadyLifted => Ok(StatusCode::NO_CONTENT),
        LiftOutcome::NotFound => Err(AppError::BanNotFound),
    }
}

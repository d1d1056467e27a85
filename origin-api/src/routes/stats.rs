//! `/v1/links/{domain}/{code}/stats` and `/v1/stats`: what marketers' links did.

use super::links::{ApiPath, ApiQuery};
use super::openapi::NoSuchLink;
use crate::auth::Caller;
use crate::clicks::stats::{link_stats, owner_stats, LinkStats, OwnerStats, Range, StatsParams};
use crate::error::{AppError, Problem};
use crate::links::{owned_link, Intent};
use crate::model::time::now_ms;
use crate::state::AppState;
use axum::extract::State;
use axum::Json;

/// `GET /v1/links/{domain}/{code}/stats`: a link's visits over time and its top
/// countries, referrers, devices and statuses. Deleted links keep their history.
#[utoipa::path(get, path = "/v1/links/{domain}/{code}/stats", operation_id = "link_stats", tag = "stats",
    params(("domain" = String, Path), ("code" = String, Path), StatsParams),
    responses(
        (status = 200, description = "The link's stats; bots are excluded from visits unless include_bots, and always counted in bots", body = LinkStats),
        NoSuchLink,
        (status = 422, description = "a bad range, granularity or top", body = Problem, content_type = "application/problem+json"),
    ),
    security(("api_key" = [])))]
pub(crate) async fn link(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath((domain, code)): ApiPath<(String, String)>,
    ApiQuery(params): ApiQuery<StatsParams>,
) -> Result<Json<LinkStats>, AppError> {
    let range = Range::new(&params, now_ms())?;
    let link = owned_link(
        &state,
        &caller.creator(),
        &domain,
        &code,
        Intent::ReadOrDelete,
    )
    .await?;
    let as_of = data_as_of(&state).await?;
    Ok(Json(link_stats(&state.db, &link, range, as_of).await?))
}

/// `GET /v1/stats`: the caller's totals and most visited links.
#[utoipa::path(get, path = "/v1/stats", operation_id = "owner_stats", tag = "stats",
    params(StatsParams),
    responses(
        (status = 200, description = "Totals over every link of the caller, and the top links", body = OwnerStats),
        (status = 422, description = "a bad range or top", body = Problem, content_type = "application/problem+json"),
    ),
    security(("api_key" = [])))]
pub(crate) async fn owner(
    State(state): State<AppState>,
    caller: Caller,
    ApiQuery(params): ApiQuery<StatsParams>,
) -> Result<Json<OwnerStats>, AppError> {
    let range = Range::new(&params, now_ms())?;
    let as_of = data_as_of(&state).await?;
    Ok(Json(
        owner_stats(&state.db, &caller.creator(), range, as_of).await?,
    ))
}

/// Up to when the counts about to be read are complete: taken before they are read, so
/// every click before it is in what the read sees.
async fn data_as_of(state: &AppState) -> Result<i64, AppError> {
    Ok(crate::clicks::lateness::data_as_of(
        &state.db,
        &state.process,
        &state.recorder,
        &state.clicks,
        crate::model::time::now_ms(),
    )
    .await?)
}

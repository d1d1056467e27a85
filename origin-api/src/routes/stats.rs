//! `/v1/links/{domain}/{code}/stats` and `/v1/stats`: what marketers' links did.

use super::body::{ApiPath, ApiQuery};
use super::responses::NoSuchLink;
use crate::auth::Caller;
use crate::clicks::stats::Range;
use crate::clicks::ClickService;
use crate::error::{AppError, Problem};
use crate::links::Intent;
use crate::links::Links;
use crate::model::time::now_ms;
use crate::views::stats::{LinkStats, OwnerStats, StatsParams};
use axum::extract::State;
use axum::Json;
use std::sync::Arc;

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
    State(clicks): State<Arc<ClickService>>,
    State(links): State<Arc<Links>>,
    caller: Caller,
    ApiPath((domain, code)): ApiPath<(String, String)>,
    ApiQuery(params): ApiQuery<StatsParams>,
) -> Result<Json<LinkStats>, AppError> {
    let range = Range::new(&params, now_ms())?;
    let link = links
        .owned(&caller.creator(), &domain, &code, Intent::ReadOrDelete)
        .await?;
    let as_of = clicks.data_as_of().await?;
    Ok(Json(clicks.link_stats(&link, range, as_of).await?))
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
    State(clicks): State<Arc<ClickService>>,
    caller: Caller,
    ApiQuery(params): ApiQuery<StatsParams>,
) -> Result<Json<OwnerStats>, AppError> {
    let range = Range::new(&params, now_ms())?;
    let as_of = clicks.data_as_of().await?;
    Ok(Json(
        clicks.owner_stats(&caller.creator(), range, as_of).await?,
    ))
}

//! `/v1/owners/me`: what the caller's owner may create, and what it uses.

use crate::auth::Caller;
use crate::error::AppError;
use crate::links::quota::{quotas_of, OwnerQuotas};
use crate::links::Links;
use axum::extract::State;
use axum::Json;
use std::sync::Arc;

/// `GET /v1/owners/me`: the owner's quotas and rate limits, and what it uses.
#[utoipa::path(get, path = "/v1/owners/me", operation_id = "owner_quotas", tag = "links",
    responses(
        (status = 200, description = "The owner's quotas (a `null` limit is none) and rate limits, with what it uses", body = OwnerQuotas),
    ),
    security(("api_key" = [])))]
pub(crate) async fn me(
    State(links): State<Arc<Links>>,
    caller: Caller,
) -> Result<Json<OwnerQuotas>, AppError> {
    Ok(Json(quotas_of(&links, &caller.owner_id).await?))
}

//! What an owner may create, and what it uses (docs/quotas.md): `GET /v1/owners/me`.

use super::service::Links;
use crate::error::AppError;
use crate::model::quota::day_of;
use crate::model::time::{now_ms, rfc3339};
use crate::store;
use serde::{Deserialize, Serialize};

/// One quota: its limit (`null`: none) and what is used of it.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct QuotaUse {
    pub limit: Option<i64>,
    pub used: i64,
    /// When a per-day quota starts again (RFC 3339, midnight UTC).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resets_at: Option<String>,
}

/// An owner's quotas and limits, as `GET /v1/owners/me` shows them.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct OwnerQuotas {
    pub owner: String,
    /// Live links (not deleted); past it, creates and restores get 403 `quota-links`.
    pub links: QuotaUse,
    /// Links created today (UTC), deleted ones too; past it, 403 `quota-links-per-day`.
    pub links_per_day: QuotaUse,
    /// Links per second each key may create (bursts of twice as many); past it, 429
    /// `rate-limited`.
    pub create_rate_per_key: u32,
    /// Links per second the owner may create, whatever its keys (bursts of twice as
    /// many); past it, 429 `owner-rate-limited`.
    pub create_rate_per_owner: u32,
}

/// Sets `owner`'s own limits, as `owner_quotas` stores them (`None`: the `--owner-*`
/// default, -1: none); a `None` argument keeps what is set. Only an operator sets them.
pub async fn set_limits(
    links: &Links,
    who: &crate::principal::Principal,
    owner: &str,
    max_links: Option<Option<i64>>,
    max_links_per_day: Option<Option<i64>>,
) -> Result<(), AppError> {
    who.require_operator("an owner's quotas are the operator's (hop-origin owners set)")?;
    let (links_now, per_day_now) = store::quotas::own_limits(&links.db, owner).await?;
    store::quotas::set_limits(
        &links.db,
        owner,
        max_links.unwrap_or(links_now),
        max_links_per_day.unwrap_or(per_day_now),
    )
    .await?;
    Ok(())
}

/// `owner`'s quotas and what it uses now.
pub async fn quotas_of(links: &Links, owner: &str) -> Result<OwnerQuotas, AppError> {
    let now = now_ms();
    let limits = links.limits_for(owner).await?;
    let (live, today) = store::quotas::usage(&links.db, owner, now).await?;
    let (per_key, per_owner) = links.settings.create_rates;
    Ok(OwnerQuotas {
        owner: owner.to_owned(),
        links: QuotaUse {
            limit: limits.links,
            used: live,
            resets_at: None,
        },
        links_per_day: QuotaUse {
            limit: limits.links_per_day,
            used: today,
            resets_at: Some(rfc3339((day_of(now) + 1) * 86_400_000)),
        },
        create_rate_per_key: per_key,
        create_rate_per_owner: per_owner,
    })
}

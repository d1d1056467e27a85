//! Owners' quotas and what they use (docs/quotas.md): claimed in the transaction of the
//! write that uses them, so two creates can never both take the last link of a quota.

use super::contract::StoreError;
use super::sql::Conn;
use crate::db::Db;
use crate::model::quota::{day_of, Limits, Quota};

const USAGE_ROW: &str = include_str!("queries/owner_usage_row.sql");
const CLAIM: &str = include_str!("queries/claim_owner_quota.sql");
const RELEASE: &str = include_str!("queries/release_owner_quota.sql");
const USAGE: &str = include_str!("queries/owner_usage.sql");
const OWN_LIMITS: &str = include_str!("queries/owner_quota.sql");
const SET_LIMITS: &str = include_str!("queries/set_owner_quota.sql");

/// Counts `n` more live links for `owner` (and, when `created`, `n` created today, at
/// `now`), or refuses with the quota they would pass: in the caller's transaction, which
/// a refusal rolls back whole.
pub(super) async fn claim(
    c: &mut Conn<'_>,
    owner: &str,
    n: i64,
    created: bool,
    limits: &Limits,
    now: i64,
) -> Result<(), StoreError> {
    if n == 0 {
        return Ok(());
    }
    let day = day_of(now);
    c.execute(USAGE_ROW, &[owner.into(), day.into()]).await?;
    let today = if created { n } else { 0 };
    let counted = c
        .execute(
            CLAIM,
            &[
                owner.into(),
                day.into(),
                n.into(),
                today.into(),
                limits.links.into(),
                limits.links_per_day.into(),
            ],
        )
        .await?;
    if counted == 1 {
        return Ok(());
    }
    let (live, at, created_on_day): (i64, i64, i64) = c.fetch_one(USAGE, &[owner.into()]).await?;
    let today_so_far = if at == day { created_on_day } else { 0 };
    let over = match (limits.links, limits.links_per_day) {
        (Some(max), _) if live + n > max => (Quota::Links, max),
        (_, Some(max)) if today_so_far + today > max => (Quota::LinksPerDay, max),
        // Not over by what was read: the claim raced a change of the row; say links.
        _ => (Quota::Links, limits.links.unwrap_or_default()),
    };
    Err(StoreError::OverQuota {
        quota: over.0,
        limit: over.1,
    })
}

/// One of `owner`'s links deleted.
pub(super) async fn release(c: &mut Conn<'_>, owner: &str) -> Result<(), StoreError> {
    c.execute(RELEASE, &[owner.into()]).await?;
    Ok(())
}

/// What `owner` uses at `now`: live links, and links created today.
pub async fn usage(db: &Db, owner: &str, now: i64) -> Result<(i64, i64), StoreError> {
    let row: Option<(i64, i64, i64)> = db.read_optional(USAGE, &[owner.into()]).await?;
    Ok(row.map_or((0, 0), |(live, day, created)| {
        (live, if day == day_of(now) { created } else { 0 })
    }))
}

/// The limits the operator set for `owner` (`None`: the default; negative: none).
pub async fn own_limits(db: &Db, owner: &str) -> Result<(Option<i64>, Option<i64>), StoreError> {
    let row: Option<(Option<i64>, Option<i64>)> =
        db.read_optional(OWN_LIMITS, &[owner.into()]).await?;
    Ok(row.unwrap_or((None, None)))
}

/// Sets `owner`'s own limits.
pub async fn set_limits(
    db: &Db,
    owner: &str,
    links: Option<i64>,
    links_per_day: Option<i64>,
) -> Result<(), StoreError> {
    db.write(
        SET_LIMITS,
        &[owner.into(), links.into(), links_per_day.into()],
    )
    .await?;
    Ok(())
}

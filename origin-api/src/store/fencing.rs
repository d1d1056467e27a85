//! The publisher's writes are fenced by its lease: each runs in a transaction that first
//! checks the lease is still held at the epoch the publisher took it at.

use super::contract::{db_now_sql, LeaseClaim, StoreError};
use super::sql::Tx;
use crate::db::Db;

/// Matches the lease row only while `$1` names it, `$2` holds it at epoch `$3`, and it
/// has not lapsed; the no-op update locks the row on PostgreSQL until commit. Built at
/// run time: the database's clock is each dialect's own.
pub(crate) fn still_held_sql(now: &str) -> String {
    format!(
        "UPDATE leases SET expires_at = expires_at \
         WHERE name = $1 AND holder = $2 AND epoch = $3 AND expires_at > {now}"
    )
}

/// A transaction on the writer in which `claim` still holds its lease (checked first,
/// and on PostgreSQL the lease row stays locked until commit); `LeaseLost`, with nothing
/// begun, otherwise. Every write of the publisher runs in one.
pub(super) async fn fenced(db: &Db, claim: &LeaseClaim<'_>) -> Result<Tx, StoreError> {
    let check = still_held_sql(db_now_sql(db));
    let mut tx = db.begin_write().await?;
    let held = tx
        .conn()
        .execute(
            &check,
            &[claim.name.into(), claim.holder.into(), claim.epoch.into()],
        )
        .await?;
    if held != 1 {
        return Err(StoreError::LeaseLost);
    }
    Ok(tx)
}

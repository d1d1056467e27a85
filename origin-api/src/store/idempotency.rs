//! The `idempotency_keys` table, as far as it is read and swept on its own: a key is
//! claimed in the transaction of the create it guards (`links::insert_idempotent`).

use super::contract::{IdempotencyKey, StoreError};
use crate::db::Db;

/// The hash and response recorded under an unexpired idempotency key.
pub async fn find(
    db: &Db,
    key: &IdempotencyKey<'_>,
) -> Result<Option<(String, String)>, StoreError> {
    let row: Option<(String, Option<String>)> = db
        .read_optional(
            FIND_IDEMPOTENCY_KEY,
            &[
                key.owner_id.into(),
                key.key.into(),
                key.expired_before.into(),
            ],
        )
        .await?;
    Ok(row.map(|(hash, response)| (hash, response.unwrap_or_default())))
}

/// Forgets idempotency keys recorded before `before` (Unix ms); returns how many.
pub async fn forget_before(db: &Db, before: i64) -> Result<u64, StoreError> {
    Ok(db.write(FORGET_IDEMPOTENCY_KEYS, &[before.into()]).await?)
}

/// The request hash and answer of an idempotency key claimed since `$3`.
const FIND_IDEMPOTENCY_KEY: &str = include_str!("queries/find_idempotency_key.sql");

const FORGET_IDEMPOTENCY_KEYS: &str = include_str!("queries/forget_idempotency_keys.sql");

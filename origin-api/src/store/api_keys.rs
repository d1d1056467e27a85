//! The `api_keys` table: a key's id, owner, scopes and the hash of its secret.

use super::contract::StoreError;
use crate::db::Db;
use crate::model::ApiKey;

#[derive(sqlx::FromRow)]
struct KeyRow {
    key_id: String,
    owner_id: String,
    name: String,
    secret_hash: String,
    scopes: String,
    created_at: i64,
    revoked_at: Option<i64>,
}

pub async fn insert(db: &Db, key: &ApiKey) -> Result<(), StoreError> {
    db.write(INSERT_API_KEY, &key_args(key)).await?;
    Ok(())
}

/// What [`INSERT_API_KEY`] binds for `key`.
fn key_args(key: &ApiKey) -> [crate::store::sql::Arg<'_>; 6] {
    [
        (&key.key_id).into(),
        (&key.owner_id).into(),
        (&key.name).into(),
        (&key.secret_hash).into(),
        (&key.scopes).into(),
        key.created_at.into(),
    ]
}

impl From<KeyRow> for ApiKey {
    fn from(r: KeyRow) -> ApiKey {
        ApiKey {
            key_id: r.key_id,
            owner_id: r.owner_id,
            name: r.name,
            secret_hash: r.secret_hash,
            scopes: r.scopes,
            created_at: r.created_at,
            revoked_at: r.revoked_at,
        }
    }
}

pub async fn find(db: &Db, key_id: &str) -> Result<Option<ApiKey>, StoreError> {
    let row: Option<KeyRow> = db.read_optional(FIND_API_KEY, &[key_id.into()]).await?;
    Ok(row.map(ApiKey::from))
}

/// An owner's keys, revoked ones included, newest first.
pub async fn of_owner(db: &Db, owner_id: &str) -> Result<Vec<ApiKey>, StoreError> {
    let rows: Vec<KeyRow> = db.read_all(API_KEYS_OF_OWNER, &[owner_id.into()]).await?;
    Ok(rows.into_iter().map(ApiKey::from).collect())
}

/// Marks a key revoked; `false` when there is no such live key.
pub async fn revoke(db: &Db, key_id: &str, now: i64) -> Result<bool, StoreError> {
    let done = db
        .write(REVOKE_API_KEY, &[now.into(), key_id.into()])
        .await?;
    Ok(done == 1)
}

const INSERT_API_KEY: &str = include_str!("queries/insert_api_key.sql");
const INSERT_KEY_MAKER: &str = include_str!("queries/insert_key_maker.sql");
const REVOKE_KEYS_MADE_BY: &str = include_str!("queries/revoke_keys_made_by.sql");

/// Stores a key a dashboard user made, and who made it, in one transaction: the key
/// ends when its maker loses access to its owner ([`revoke_made_by`]).
pub async fn insert_made_by(db: &Db, key: &ApiKey, user_id: &str) -> Result<(), StoreError> {
    let mut tx = db.begin_write().await?;
    let mut c = tx.conn();
    c.execute(INSERT_API_KEY, &key_args(key)).await?;
    c.execute(
        INSERT_KEY_MAKER,
        &[
            (&key.key_id).into(),
            user_id.into(),
            (&key.owner_id).into(),
            key.created_at.into(),
        ],
    )
    .await?;
    tx.commit().await?;
    Ok(())
}

/// Revokes, at `now`, the live keys `user_id` made in the dashboard for `owner_id`
/// (every owner's, with `None`); their ids.
pub async fn revoke_made_by(
    db: &Db,
    user_id: &str,
    owner_id: Option<&str>,
    now: i64,
) -> Result<Vec<String>, StoreError> {
    let mut tx = db.begin_write().await?;
    let revoked: Vec<(String,)> = tx
        .conn()
        .fetch_all(
            REVOKE_KEYS_MADE_BY,
            &[
                now.into(),
                user_id.into(),
                owner_id.unwrap_or_default().into(),
            ],
        )
        .await?;
    tx.commit().await?;
    Ok(revoked.into_iter().map(|(id,)| id).collect())
}

const FIND_API_KEY: &str = include_str!("queries/find_api_key.sql");

const API_KEYS_OF_OWNER: &str = include_str!("queries/api_keys_of_owner.sql");

/// An API key revoked, unless it was.
const REVOKE_API_KEY: &str = include_str!("queries/revoke_api_key.sql");

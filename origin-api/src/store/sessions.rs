//! The `sessions` table: signed-in browsers, by the SHA-256 of their cookie's secret.

use super::contract::StoreError;
use crate::db::Db;
use crate::model::Session;

#[derive(sqlx::FromRow)]
struct SessionRow {
    session_hash: String,
    user_id: String,
    csrf_token: String,
    epoch: i64,
    created_at: i64,
    last_seen_at: i64,
    expires_at: i64,
}

pub async fn insert(db: &Db, s: &Session) -> Result<(), StoreError> {
    db.write(
        INSERT_SESSION,
        &[
            (&s.session_hash).into(),
            (&s.user_id).into(),
            (&s.csrf_token).into(),
            s.epoch.into(),
            s.created_at.into(),
            s.last_seen_at.into(),
            s.expires_at.into(),
        ],
    )
    .await
    .map_err(StoreError::from_write)?;
    Ok(())
}

/// The session whose cookie hashes to `session_hash`, expired or not.
pub async fn get(db: &Db, session_hash: &str) -> Result<Option<Session>, StoreError> {
    let row: Option<SessionRow> = db
        .read_optional(SESSION_BY_HASH, &[session_hash.into()])
        .await?;
    Ok(row.map(|r| Session {
        session_hash: r.session_hash,
        user_id: r.user_id,
        csrf_token: r.csrf_token,
        epoch: r.epoch,
        created_at: r.created_at,
        last_seen_at: r.last_seen_at,
        expires_at: r.expires_at,
    }))
}

/// Records that the session was used at `now`, and its new end.
pub async fn touch(
    db: &Db,
    session_hash: &str,
    now: i64,
    expires_at: i64,
) -> Result<(), StoreError> {
    db.write(
        TOUCH_SESSION,
        &[now.into(), expires_at.into(), session_hash.into()],
    )
    .await?;
    Ok(())
}

/// Moves a session to the user's new epoch (the one that changed the password).
pub async fn rekey(db: &Db, session_hash: &str, epoch: i64) -> Result<(), StoreError> {
    db.write(REKEY_SESSION, &[epoch.into(), session_hash.into()])
        .await?;
    Ok(())
}

/// Ends one session.
pub async fn delete(db: &Db, session_hash: &str) -> Result<(), StoreError> {
    db.write(DELETE_SESSION, &[session_hash.into()]).await?;
    Ok(())
}

/// Ends every session of the user but `keep` (a session hash, or `""` for none);
/// how many.
pub async fn delete_of_user(db: &Db, user_id: &str, keep: &str) -> Result<u64, StoreError> {
    Ok(db
        .write(DELETE_SESSIONS_OF_USER, &[user_id.into(), keep.into()])
        .await?)
}

/// Forgets the sessions that ended before `now`; how many.
pub async fn forget_expired(db: &Db, now: i64) -> Result<u64, StoreError> {
    Ok(db.write(FORGET_EXPIRED_SESSIONS, &[now.into()]).await?)
}

const INSERT_SESSION: &str = include_str!("queries/insert_session.sql");
const SESSION_BY_HASH: &str = include_str!("queries/session_by_hash.sql");
const TOUCH_SESSION: &str = include_str!("queries/touch_session.sql");
const REKEY_SESSION: &str = include_str!("queries/rekey_session.sql");
const DELETE_SESSION: &str = include_str!("queries/delete_session.sql");
const DELETE_SESSIONS_OF_USER: &str = include_str!("queries/delete_sessions_of_user.sql");
const FORGET_EXPIRED_SESSIONS: &str = include_str!("queries/forget_expired_sessions.sql");

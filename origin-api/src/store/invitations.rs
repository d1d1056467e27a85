//! The `invitations` table: one-time links to join an owner with a role.

use super::contract::StoreError;
use crate::db::Db;
use crate::model::{Invitation, Role};

#[derive(sqlx::FromRow)]
struct InvitationRow {
    token_hash: String,
    owner_id: String,
    role: String,
    email: String,
    created_by: String,
    created_at: i64,
    expires_at: i64,
    used_at: Option<i64>,
}

pub async fn insert(db: &Db, i: &Invitation) -> Result<(), StoreError> {
    db.write(
        INSERT_INVITATION,
        &[
            (&i.token_hash).into(),
            (&i.owner_id).into(),
            i.role.as_str().into(),
            (&i.email).into(),
            (&i.created_by).into(),
            i.created_at.into(),
            i.expires_at.into(),
        ],
    )
    .await
    .map_err(StoreError::from_write)?;
    Ok(())
}

/// The invitation whose token hashes to `token_hash`, used or not.
pub async fn get(db: &Db, token_hash: &str) -> Result<Option<Invitation>, StoreError> {
    let row: Option<InvitationRow> = db
        .read_optional(INVITATION_BY_HASH, &[token_hash.into()])
        .await?;
    row.map(|r| {
        Ok(Invitation {
            role: Role::parse(&r.role)
                .ok_or_else(|| StoreError::Corrupt(format!("invitation role {:?}", r.role)))?,
            token_hash: r.token_hash,
            owner_id: r.owner_id,
            email: r.email,
            created_by: r.created_by,
            created_at: r.created_at,
            expires_at: r.expires_at,
            used_at: r.used_at,
        })
    })
    .transpose()
}

/// Marks the invitation used, if it is unused and unexpired at `now`; `false` when it
/// is not (another acceptance came first, or it ran out).
pub async fn claim(db: &Db, token_hash: &str, now: i64) -> Result<bool, StoreError> {
    Ok(db
        .write(CLAIM_INVITATION, &[now.into(), token_hash.into()])
        .await?
        == 1)
}

const INSERT_INVITATION: &str = include_str!("queries/insert_invitation.sql");
const INVITATION_BY_HASH: &str = include_str!("queries/invitation_by_hash.sql");
const CLAIM_INVITATION: &str = include_str!("queries/claim_invitation.sql");

//! The `users` and `memberships` tables: who signs in to the dashboard, and as what in
//! which owner.

use super::contract::StoreError;
use crate::db::Db;
use crate::model::{LoginAttempts, Membership, Role, User};

#[derive(sqlx::FromRow)]
struct UserRow {
    user_id: String,
    email: String,
    password_hash: String,
    operator: bool,
    created_at: i64,
    disabled_at: Option<i64>,
    session_epoch: i64,
}

impl From<UserRow> for User {
    fn from(r: UserRow) -> Self {
        User {
            user_id: r.user_id,
            email: r.email,
            password_hash: r.password_hash,
            operator: r.operator,
            created_at: r.created_at,
            disabled_at: r.disabled_at,
            session_epoch: r.session_epoch,
        }
    }
}

/// Inserts a user; `EmailTaken` when the email is someone's already.
pub async fn insert(db: &Db, user: &User) -> Result<(), StoreError> {
    db.write(
        INSERT_USER,
        &[
            (&user.user_id).into(),
            (&user.email).into(),
            (&user.password_hash).into(),
            user.operator.into(),
            user.created_at.into(),
        ],
    )
    .await
    .map_err(StoreError::from_write)?;
    Ok(())
}

/// The user with this (lowercased) email.
pub async fn by_email(db: &Db, email: &str) -> Result<Option<User>, StoreError> {
    let row: Option<UserRow> = db.read_optional(USER_BY_EMAIL, &[email.into()]).await?;
    Ok(row.map(User::from))
}

pub async fn by_id(db: &Db, user_id: &str) -> Result<Option<User>, StoreError> {
    let row: Option<UserRow> = db.read_optional(USER_BY_ID, &[user_id.into()]).await?;
    Ok(row.map(User::from))
}

/// Every user, by email.
pub async fn list(db: &Db) -> Result<Vec<User>, StoreError> {
    let rows: Vec<UserRow> = db.read_all(LIST_USERS, &[]).await?;
    Ok(rows.into_iter().map(User::from).collect())
}

/// Disables a user; `false` when there is no such enabled user.
pub async fn disable(db: &Db, user_id: &str, now: i64) -> Result<bool, StoreError> {
    Ok(db
        .write(DISABLE_USER, &[now.into(), user_id.into()])
        .await?
        == 1)
}

/// Sets the password and moves the user's session epoch on (every session ends); the
/// new epoch.
pub async fn set_password(db: &Db, user_id: &str, password_hash: &str) -> Result<i64, StoreError> {
    let (epoch,): (i64,) = db
        .writer()
        .await?
        .conn()
        .fetch_one(SET_PASSWORD, &[password_hash.into(), user_id.into()])
        .await?;
    Ok(epoch)
}

/// Moves the user's session epoch on: every session of theirs ends.
pub async fn end_sessions(db: &Db, user_id: &str) -> Result<(), StoreError> {
    db.write(END_SESSIONS_OF_USER, &[user_id.into()]).await?;
    Ok(())
}

/// The attempts booked against `email` lately.
pub async fn login_attempts(db: &Db, email: &str) -> Result<Option<LoginAttempts>, StoreError> {
    let row: Option<(i64, Option<i64>, i64)> =
        db.read_optional(LOGIN_ATTEMPTS_OF, &[email.into()]).await?;
    Ok(row.map(|(failures, locked_until, last_at)| LoginAttempts {
        failures,
        locked_until,
        last_at,
    }))
}

/// Books the first attempt against `email`; `false` when another booked one first.
pub async fn claim_first_login_attempt(db: &Db, email: &str, now: i64) -> Result<bool, StoreError> {
    Ok(db
        .write(CLAIM_FIRST_LOGIN_ATTEMPT, &[email.into(), now.into()])
        .await?
        == 1)
}

/// Books one more attempt against `email`, if its count is still `seen` (`false` when
/// another attempt was booked since it was read): `failures` attempts now, and no other
/// booked before `locked_until`.
pub async fn claim_login_attempt(
    db: &Db,
    email: &str,
    seen: i64,
    failures: i64,
    locked_until: Option<i64>,
    now: i64,
) -> Result<bool, StoreError> {
    let args = [
        failures.into(),
        locked_until.into(),
        now.into(),
        email.into(),
        seen.into(),
    ];
    Ok(db.write(CLAIM_LOGIN_ATTEMPT, &args).await? == 1)
}

/// Forgets the attempts against `email` (after a right password).
pub async fn forget_login_attempts(db: &Db, email: &str) -> Result<(), StoreError> {
    db.write(FORGET_LOGIN_ATTEMPTS, &[email.into()]).await?;
    Ok(())
}

/// Forgets the attempts against emails last tried before `before`; how many.
pub async fn forget_stale_login_attempts(db: &Db, before: i64) -> Result<u64, StoreError> {
    Ok(db
        .write(FORGET_STALE_LOGIN_ATTEMPTS, &[before.into()])
        .await?)
}

/// Makes the user a member of `owner_id` with `role`, or changes the role they have.
pub async fn grant(
    db: &Db,
    user_id: &str,
    owner_id: &str,
    role: Role,
    now: i64,
) -> Result<(), StoreError> {
    db.write(
        GRANT_MEMBERSHIP,
        &[
            user_id.into(),
            owner_id.into(),
            role.as_str().into(),
            now.into(),
        ],
    )
    .await?;
    Ok(())
}

/// Changes a member's role in `owner_id`, unless that would leave it without an admin:
/// `false` when nothing changed (no such member, or the last admin).
///
/// The count is read in the same statement; two admins demoting each other at the same
/// instant could still both succeed, and an operator restores one with
/// `hop-origin users grant`.
pub async fn change_role(
    db: &Db,
    user_id: &str,
    owner_id: &str,
    role: Role,
) -> Result<bool, StoreError> {
    let changed = db
        .write(
            CHANGE_MEMBER_ROLE,
            &[user_id.into(), owner_id.into(), role.as_str().into()],
        )
        .await?;
    Ok(changed == 1)
}

/// Ends a membership, unless it is the owner's last admin's: `false` when nothing was
/// removed (see [`change_role`]).
pub async fn remove_member(db: &Db, user_id: &str, owner_id: &str) -> Result<bool, StoreError> {
    let removed = db
        .write(REMOVE_MEMBER, &[user_id.into(), owner_id.into()])
        .await?;
    Ok(removed == 1)
}

/// The owners the user is a member of, by owner.
pub async fn memberships(db: &Db, user_id: &str) -> Result<Vec<Membership>, StoreError> {
    let rows: Vec<(String, String)> = db.read_all(MEMBERSHIPS_OF_USER, &[user_id.into()]).await?;
    rows.into_iter()
        .map(|(owner_id, role)| {
            let role = Role::parse(&role)
                .ok_or_else(|| StoreError::Corrupt(format!("membership role {role:?}")))?;
            Ok(Membership { owner_id, role })
        })
        .collect()
}

/// The members of `owner_id` (email and role), by email.
pub async fn members_of(db: &Db, owner_id: &str) -> Result<Vec<(String, Role)>, StoreError> {
    let rows: Vec<(String, String)> = db.read_all(MEMBERS_OF_OWNER, &[owner_id.into()]).await?;
    rows.into_iter()
        .map(|(email, role)| {
            let role = Role::parse(&role)
                .ok_or_else(|| StoreError::Corrupt(format!("membership role {role:?}")))?;
            Ok((email, role))
        })
        .collect()
}

const MEMBERS_OF_OWNER: &str = include_str!("queries/members_of_owner.sql");
const CHANGE_MEMBER_ROLE: &str = include_str!("queries/change_member_role.sql");
const REMOVE_MEMBER: &str = include_str!("queries/remove_member.sql");
const INSERT_USER: &str = include_str!("queries/insert_user.sql");
const USER_BY_EMAIL: &str = include_str!("queries/user_by_email.sql");
const USER_BY_ID: &str = include_str!("queries/user_by_id.sql");
const LIST_USERS: &str = include_str!("queries/list_users.sql");
const DISABLE_USER: &str = include_str!("queries/disable_user.sql");
const END_SESSIONS_OF_USER: &str = include_str!("queries/end_sessions_of_user.sql");
const LOGIN_ATTEMPTS_OF: &str = include_str!("queries/login_attempts_of.sql");
const CLAIM_FIRST_LOGIN_ATTEMPT: &str = include_str!("queries/claim_first_login_attempt.sql");
const CLAIM_LOGIN_ATTEMPT: &str = include_str!("queries/claim_login_attempt.sql");
const FORGET_LOGIN_ATTEMPTS: &str = include_str!("queries/forget_login_attempts.sql");
const FORGET_STALE_LOGIN_ATTEMPTS: &str = include_str!("queries/forget_stale_login_attempts.sql");
const SET_PASSWORD: &str = include_str!("queries/set_password.sql");
const GRANT_MEMBERSHIP: &str = include_str!("queries/grant_membership.sql");
const MEMBERSHIPS_OF_USER: &str = include_str!("queries/memberships_of_user.sql");

const INSERT_ACCOUNT_ORIGIN: &str = include_str!("queries/insert_account_origin.sql");
const ACCOUNT_ORIGIN: &str = include_str!("queries/account_origin.sql");

/// Records that `user_id` was made by accepting an invitation to `owner_id` that
/// `invited_by` (a user id, or `cli`) made.
pub async fn record_origin(
    db: &Db,
    user_id: &str,
    owner_id: &str,
    invited_by: &str,
    at: i64,
) -> Result<(), StoreError> {
    db.write(
        INSERT_ACCOUNT_ORIGIN,
        &[
            user_id.into(),
            owner_id.into(),
            invited_by.into(),
            at.into(),
        ],
    )
    .await?;
    Ok(())
}

/// The owner whose invitation made `user_id`, and who made that invitation; `None` for
/// an account an operator made (or one made before this was recorded).
pub async fn origin(db: &Db, user_id: &str) -> Result<Option<(String, String)>, StoreError> {
    Ok(db.read_optional(ACCOUNT_ORIGIN, &[user_id.into()]).await?)
}

const INSERT_KNOWN_DEVICE: &str = include_str!("queries/insert_known_device.sql");
const KNOWN_DEVICE: &str = include_str!("queries/known_device.sql");
const FORGET_KNOWN_DEVICE: &str = include_str!("queries/forget_known_device.sql");
const FORGET_OLD_KNOWN_DEVICES: &str = include_str!("queries/forget_old_known_devices.sql");

/// Remembers a browser `user_id` signed in from, by the hash of its cookie.
pub async fn remember_device(
    db: &Db,
    device_hash: &str,
    user_id: &str,
    at: i64,
) -> Result<(), StoreError> {
    db.write(
        INSERT_KNOWN_DEVICE,
        &[device_hash.into(), user_id.into(), at.into()],
    )
    .await?;
    Ok(())
}

/// Whose browser the cookie hashed to `device_hash` is, and since when.
pub async fn known_device(db: &Db, device_hash: &str) -> Result<Option<(String, i64)>, StoreError> {
    Ok(db
        .read_optional(KNOWN_DEVICE, &[device_hash.into()])
        .await?)
}

/// Forgets one browser.
pub async fn forget_device(db: &Db, device_hash: &str) -> Result<(), StoreError> {
    db.write(FORGET_KNOWN_DEVICE, &[device_hash.into()]).await?;
    Ok(())
}

/// Forgets the browsers remembered before `before` (Unix ms); how many.
pub async fn forget_old_devices(db: &Db, before: i64) -> Result<u64, StoreError> {
    Ok(db.write(FORGET_OLD_KNOWN_DEVICES, &[before.into()]).await?)
}

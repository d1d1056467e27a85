//! Accounts: the people who sign in to the dashboard, their memberships, and their
//! browsers' sessions (docs/dashboard.md).
//!
//! A browser never holds an API key: it holds a session cookie whose secret is stored
//! only as its SHA-256. Guessing is throttled twice, each attempt booked before its
//! password is verified (so that attempts sent at once cannot all slip through): per
//! client address (as API keys are, [`AuthGuard`]), and per email in the database,
//! known to Hop or not, so that guesses spread over many addresses and origins still
//! slow down against one account, and the answers do not tell which emails have one.
//! At most a few passwords are verified at once (each takes 19 MiB and a core for tens
//! of milliseconds): past them a sign-in is told to retry, and the redirects sharing the
//! process keep their cores.

pub mod password;

use crate::api_keys::{ApiKeys, AuthGuard};
use crate::db::Db;
use crate::model::api_key::sha256_hex;
use crate::model::time::now_ms;
use crate::model::{Invitation, Membership, Role, Session, User};
use crate::principal::Principal;
use crate::random_ids::random_hex;
use crate::store::{self, StoreError};
use std::net::IpAddr;
use subtle::ConstantTimeEq;

pub use password::PasswordRefused;

/// A session ends this long after it was last used...
pub const SESSION_IDLE_MS: i64 = 7 * 24 * 3_600_000;
/// ...and this long after it began, however often it is used.
pub const SESSION_MAX_MS: i64 = 30 * 24 * 3_600_000;
/// A session's last use is written at most this often (a page view is not a write).
const TOUCH_EVERY_MS: i64 = 5 * 60_000;
/// Wrong passwords in a row that cost nothing; each one past them doubles the wait
/// before the next may be tried, from one second up to [`MAX_LOCK_MS`].
const FREE_FAILURES: i64 = 5;
const MAX_LOCK_MS: i64 = 15 * 60_000;
/// Attempts against an email are forgotten this long after the last one.
pub const FORGET_ATTEMPTS_MS: i64 = 3_600_000;
/// How long a browser an account signed in from is remembered: the right password from
/// it gets in while the account's wait runs (strangers' guesses cannot lock its owner
/// out for good).
pub const DEVICE_KEPT_MS: i64 = 90 * 24 * 3_600_000;
/// How long a sign-in waits for a turn to verify a password before it is told to retry.
const HASHING_WAIT: std::time::Duration = std::time::Duration::from_secs(2);
/// Wrong passwords a minute per client address, in bursts of as many.
pub const FAILURES_PER_ADDRESS_MINUTE: u32 = 20;
/// How long an invitation may be accepted.
pub const INVITATION_TTL_MS: i64 = 7 * 24 * 3_600_000;
/// The longest email taken (RFC 5321's path limit).
const MAX_EMAIL_CHARS: usize = 254;

/// What went wrong with an account operation.
#[derive(Debug, thiserror::Error)]
pub enum AccountError {
    /// The email is unknown or the password wrong: the same answer for both.
    #[error("the email or the password is wrong")]
    WrongCredentials,
    /// The account was disabled by an operator (said only to whoever knows its password).
    #[error("this account is disabled")]
    Disabled,
    /// Too many wrong passwords for this account lately.
    #[error("too many wrong passwords: try again in {retry_after_s} s")]
    Locked { retry_after_s: u64 },
    /// Too many sign-ins from this address lately.
    #[error("too many sign-ins from this address: try again in a minute")]
    Throttled,
    /// Too many passwords are being verified right now.
    #[error("the dashboard is busy: try again in a moment")]
    Busy,
    #[error("{0}")]
    BadEmail(&'static str),
    #[error(transparent)]
    BadPassword(#[from] PasswordRefused),
    #[error("an account with that email exists already")]
    EmailTaken,
    #[error("no such user")]
    NoSuchUser,
    /// The invitation was used, ran out, or never was.
    #[error("this invitation was used or has expired: ask for a new one")]
    InvitationGone,
    /// A change that would leave an owner without an admin.
    #[error("an owner keeps at least one admin: make someone else admin first")]
    LastAdmin,
    #[error("that user is not a member of this owner")]
    NotAMember,
    /// What only an operator sees, asked by someone else.
    #[error("only an operator sees that")]
    NotAnOperator,
    /// A grant to an account another owner's invitation made, without saying so.
    #[error("{email} was made through an invitation of {invited_to} (made by {invited_by}): whoever opened that link chose its password, an admin of {invited_to} included; grant it {owner}'s rights only if you know the person holds it (--trust-invited-account)")]
    InvitedElsewhere {
        email: String,
        owner: String,
        invited_to: String,
        invited_by: String,
    },
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("{0}")]
    Internal(String),
}

/// A signed-in browser: who, as what, and its session's form token.
#[derive(Debug, Clone)]
pub struct SignedIn {
    pub user: User,
    pub memberships: Vec<Membership>,
    /// The token every form of this session carries.
    pub csrf_token: String,
    session_hash: String,
    /// Where the session's requests come from, for the throttle of a password change.
    pub client: Option<IpAddr>,
}

impl SignedIn {
    /// The user's role in `owner_id`: an operator is an admin of every owner.
    pub fn role_in(&self, owner_id: &str) -> Option<Role> {
        if self.user.operator {
            return Some(Role::Admin);
        }
        self.memberships
            .iter()
            .find(|m| m.owner_id == owner_id)
            .map(|m| m.role)
    }

    /// Whether the user may do what `needed` may in `owner_id`: `None` when they are no
    /// member of it (its pages are not found for them), `Some(false)` for a member whose
    /// role does not reach `needed`.
    pub fn allows(&self, owner_id: &str, needed: Role) -> Option<bool> {
        self.role_in(owner_id).map(|r| r.allows(needed))
    }

    /// The user acting in `owner` (`None`: outside any, on the operators' pages), as the
    /// services see who acts.
    pub fn principal(&self, owner: Option<&str>) -> Principal {
        Principal::User {
            user_id: self.user.user_id.clone(),
            owner: owner.map(str::to_owned),
            role: owner.and_then(|o| self.role_in(o)),
            operator: self.user.operator,
        }
    }

    /// Whether `token` is this session's form token; constant time in the token.
    pub fn csrf_matches(&self, token: &str) -> bool {
        token.as_bytes().ct_eq(self.csrf_token.as_bytes()).into()
    }
}

/// A new session: the secret for the cookie (shown once) and who it is.
#[derive(Debug)]
pub struct NewSession {
    pub secret: String,
    pub signed_in: SignedIn,
    /// A new cookie for this browser, remembered as the account's (`None`: the browser
    /// is remembered already, or the caller gave no way to tell).
    pub device: Option<String>,
}

/// A new invitation: the token for its link (shown once) and what it grants.
#[derive(Debug)]
pub struct NewInvitation {
    pub token: String,
    pub invitation: Invitation,
}

/// The accounts service.
#[derive(Debug)]
pub struct Accounts {
    db: Db,
    /// Wrong passwords per client address.
    pub guard: AuthGuard,
    /// Whether session cookies are `Secure` (and the session's is named `__Host-…`):
    /// always, but on a development machine's plain-HTTP loopback
    /// (`--dashboard-secure-cookies`).
    pub secure_cookies: bool,
    /// Turns to verify or make a password hash.
    hashing: std::sync::Arc<tokio::sync::Semaphore>,
    /// The keys a member made end with their membership.
    keys: std::sync::Arc<ApiKeys>,
}

impl Accounts {
    /// Accounts with `Secure` cookies; `keys` revokes what a departing member made.
    pub fn new(db: Db, keys: std::sync::Arc<ApiKeys>) -> Self {
        Accounts {
            db,
            keys,
            guard: AuthGuard::new(FAILURES_PER_ADDRESS_MINUTE, std::time::Duration::ZERO),
            secure_cookies: true,
            hashing: std::sync::Arc::new(tokio::sync::Semaphore::new(
                std::thread::available_parallelism().map_or(1, |n| n.get().min(4)),
            )),
        }
    }

    /// The same, with cookies `Secure` or not (`--dashboard-secure-cookies`).
    pub fn with_secure_cookies(self, secure_cookies: bool) -> Self {
        Accounts {
            secure_cookies,
            ..self
        }
    }

    /// Creates a user with `password`; an operator is an instance administrator.
    pub async fn create_user(
        &self,
        email: &str,
        password: &str,
        operator: bool,
    ) -> Result<User, AccountError> {
        let email = normalize_email(email)?;
        password::check(password, &email)?;
        let user = User {
            user_id: format!("u_{}", random_id()?),
            password_hash: self.hash(password).await?,
            email,
            operator,
            created_at: now_ms(),
            disabled_at: None,
            session_epoch: 0,
        };
        match store::users::insert(&self.db, &user).await {
            Err(StoreError::EmailTaken) => Err(AccountError::EmailTaken),
            other => other.map(|()| user).map_err(AccountError::from),
        }
    }

    /// The user with this email.
    pub async fn user(&self, email: &str) -> Result<User, AccountError> {
        let email = normalize_email(email)?;
        store::users::by_email(&self.db, &email)
            .await?
            .ok_or(AccountError::NoSuchUser)
    }

    /// The email of the user `user_id`, if there is one: how a page names who acted.
    pub async fn email_of(&self, user_id: &str) -> Result<Option<String>, AccountError> {
        Ok(store::users::by_id(&self.db, user_id)
            .await?
            .map(|u| u.email))
    }

    /// Every user with their memberships, by email: the operator's list.
    pub async fn users(
        &self,
        who: &Principal,
    ) -> Result<Vec<(User, Vec<Membership>)>, AccountError> {
        who.require_operator("the users are for operators")
            .map_err(|_| AccountError::NotAnOperator)?;
        let mut all = Vec::new();
        for user in store::users::list(&self.db).await? {
            let memberships = store::users::memberships(&self.db, &user.user_id).await?;
            all.push((user, memberships));
        }
        Ok(all)
    }

    /// Gives the user `role` in `owner_id` (or changes the role they had there). An
    /// account another owner's invitation made is refused, naming where it came from,
    /// unless `trust_invited` says the operator knows who holds it: whoever opened that
    /// invitation's link chose the password (an admin of that owner could have opened
    /// it for anyone's email), and would get `owner_id`'s rights with it.
    pub async fn grant(
        &self,
        user: &User,
        owner_id: &str,
        role: Role,
        trust_invited: bool,
    ) -> Result<(), AccountError> {
        if !crate::api_keys::valid_owner(owner_id) {
            return Err(AccountError::Internal(format!(
                "{owner_id:?} is not an owner id (1 to 128 bytes, no control characters)"
            )));
        }
        if !trust_invited {
            if let Some((invited_to, invited_by)) =
                store::users::origin(&self.db, &user.user_id).await?
            {
                if invited_to != owner_id {
                    return Err(AccountError::InvitedElsewhere {
                        email: user.email.clone(),
                        owner: owner_id.to_owned(),
                        invited_to,
                        invited_by,
                    });
                }
            }
        }
        Ok(store::users::grant(&self.db, &user.user_id, owner_id, role, now_ms()).await?)
    }

    /// An invitation for `email` to join `owner_id` as `role`, made by `created_by` (a
    /// user id, or `cli`): a one-time link valid for [`INVITATION_TTL_MS`].
    pub async fn invite(
        &self,
        owner_id: &str,
        role: Role,
        email: &str,
        created_by: &str,
    ) -> Result<NewInvitation, AccountError> {
        if !crate::api_keys::valid_owner(owner_id) {
            return Err(AccountError::Internal(format!(
                "{owner_id:?} is not an owner id (1 to 128 bytes, no control characters)"
            )));
        }
        let token = random_hex::<32>().map_err(|e| AccountError::Internal(e.to_string()))?;
        let now = now_ms();
        let invitation = Invitation {
            token_hash: sha256_hex(&token),
            owner_id: owner_id.to_owned(),
            role,
            email: normalize_email(email)?,
            created_by: created_by.to_owned(),
            created_at: now,
            expires_at: now + INVITATION_TTL_MS,
            used_at: None,
        };
        store::invitations::insert(&self.db, &invitation).await?;
        Ok(NewInvitation { token, invitation })
    }

    /// The invitation whose link holds `token`, while it may be accepted, and whether
    /// its email has an account already.
    pub async fn invitation(&self, token: &str) -> Result<(Invitation, bool), AccountError> {
        let invitation = store::invitations::get(&self.db, &sha256_hex(token))
            .await?
            .filter(|i| i.used_at.is_none() && i.expires_at > now_ms())
            .ok_or(AccountError::InvitationGone)?;
        let has_account = store::users::by_email(&self.db, &invitation.email)
            .await?
            .is_some();
        Ok((invitation, has_account))
    }

    /// Accepts the invitation whose link holds `token`: with the password of the account
    /// its email has (verified and booked as a sign-in is), or, when it has none, with
    /// the password of a new account. The invitation counts once; the role is given,
    /// and a session made. The invitation comes back with the session.
    pub async fn accept(
        &self,
        token: &str,
        password: &str,
        client: Option<IpAddr>,
    ) -> Result<(NewSession, Invitation), AccountError> {
        let (invitation, has_account) = self.invitation(token).await?;
        if !has_account {
            password::check(password, &invitation.email)?;
            match self.create_user(&invitation.email, password, false).await {
                // Whoever opened the link chose the password: on record, for `grant`.
                Ok(user) => {
                    store::users::record_origin(
                        &self.db,
                        &user.user_id,
                        &invitation.owner_id,
                        &invitation.created_by,
                        now_ms(),
                    )
                    .await?;
                }
                // Made meanwhile (another invitation): its password decides below.
                Err(AccountError::EmailTaken) => {}
                Err(e) => return Err(e),
            }
        }
        let mut new = self
            .sign_in(&invitation.email, password, client, None)
            .await?;
        if !store::invitations::claim(&self.db, &invitation.token_hash, now_ms()).await? {
            self.sign_out(&new.signed_in).await?;
            return Err(AccountError::InvitationGone);
        }
        let user = &new.signed_in.user;
        store::users::grant(
            &self.db,
            &user.user_id,
            &invitation.owner_id,
            invitation.role,
            now_ms(),
        )
        .await?;
        new.signed_in.memberships = store::users::memberships(&self.db, &user.user_id).await?;
        Ok((new, invitation))
    }

    /// The members of `owner_id`: email and role, by email.
    pub async fn members(&self, owner_id: &str) -> Result<Vec<(String, Role)>, AccountError> {
        Ok(store::users::members_of(&self.db, owner_id).await?)
    }

    /// Changes the role of the member `email` of `owner_id`; never leaves the owner
    /// without an admin.
    pub async fn change_role(
        &self,
        owner_id: &str,
        email: &str,
        role: Role,
    ) -> Result<(), AccountError> {
        let user = self.member(owner_id, email).await?;
        match store::users::change_role(&self.db, &user.user_id, owner_id, role).await? {
            true => Ok(()),
            false => Err(AccountError::LastAdmin),
        }
    }

    /// Ends the membership of `email` in `owner_id`; never its last admin's. The keys
    /// they made in the dashboard for the owner end with it: a departing member may
    /// have kept a copy of one.
    pub async fn remove_member(&self, owner_id: &str, email: &str) -> Result<(), AccountError> {
        let user = self.member(owner_id, email).await?;
        match store::users::remove_member(&self.db, &user.user_id, owner_id).await? {
            true => {
                self.keys
                    .revoke_made_by(&user.user_id, Some(owner_id))
                    .await?;
                Ok(())
            }
            false => Err(AccountError::LastAdmin),
        }
    }

    /// The user `email`, if a member of `owner_id`.
    async fn member(&self, owner_id: &str, email: &str) -> Result<User, AccountError> {
        let user = self.user(email).await.map_err(|e| match e {
            AccountError::NoSuchUser | AccountError::BadEmail(_) => AccountError::NotAMember,
            other => other,
        })?;
        let theirs = store::users::memberships(&self.db, &user.user_id).await?;
        if theirs.iter().any(|m| m.owner_id == owner_id) {
            Ok(user)
        } else {
            Err(AccountError::NotAMember)
        }
    }

    /// Disables the user and ends every session of theirs.
    pub async fn disable(&self, user: &User) -> Result<bool, AccountError> {
        // The epoch moves on in the same statement: a sign-in verifying meanwhile makes
        // a session that opens nothing.
        let done = store::users::disable(&self.db, &user.user_id, now_ms()).await?;
        store::sessions::delete_of_user(&self.db, &user.user_id, "").await?;
        // And every key they made in the dashboard, for any owner.
        self.keys.revoke_made_by(&user.user_id, None).await?;
        Ok(done)
    }

    /// Signs in with an email and a password from `client`: a new session, whatever
    /// session the browser had before (a session id is never chosen by the browser, so
    /// one planted in it before sign-in is worth nothing after).
    ///
    /// `device` is the browser's cookie from an earlier sign-in (`Some("")` for a
    /// browser that has none; `None` where there is no browser to remember). The right
    /// password from a browser the account signed in from gets in while the account's
    /// wait runs, so strangers guessing cannot lock its owner out for good; a wrong one
    /// from it forgets the browser (a stolen cookie is worth one guess), and is booked
    /// as any other.
    pub async fn sign_in(
        &self,
        email: &str,
        password: &str,
        client: Option<IpAddr>,
        device: Option<&str>,
    ) -> Result<NewSession, AccountError> {
        // Nothing longer than any account's could be right: refused before any work.
        if email.chars().count() > MAX_EMAIL_CHARS
            || password.chars().count() > password::MAX_PASSWORD_CHARS
        {
            return Err(AccountError::WrongCredentials);
        }
        let email = normalize_email(email).ok();
        self.guard
            .take(client)
            .map_err(|_| AccountError::Throttled)?;
        let now = now_ms();
        // The same reads, writes and hashing whether the email has an account or not.
        let user = match &email {
            Some(email) => store::users::by_email(&self.db, email).await?,
            None => None,
        };
        let device_hash = device.filter(|d| !d.is_empty()).map(sha256_hex);
        let known = match (&device_hash, &user) {
            (Some(hash), Some(user)) => store::users::known_device(&self.db, hash)
                .await?
                .is_some_and(|(owner, since)| {
                    owner == user.user_id && now - since < DEVICE_KEPT_MS
                }),
            _ => false,
        };
        if let (Some(email), false) = (&email, known) {
            self.book_attempt(email, now).await?;
        }
        let right = match &user {
            Some(user) => self.verify(password, &user.password_hash).await?,
            None => {
                self.verify(password, password::nobody()).await?;
                false
            }
        };
        let (Some(user), true, Some(email)) = (user, right, email.clone()) else {
            if let (true, Some(hash), Some(email)) = (known, &device_hash, &email) {
                // One guess for a cookie: the browser is forgotten, and the failure
                // booked as anyone's (within the account's wait, if one runs).
                store::users::forget_device(&self.db, hash).await?;
                let _ = self.book_attempt(email, now).await;
            }
            return Err(AccountError::WrongCredentials);
        };
        store::users::forget_login_attempts(&self.db, &email).await?;
        if user.disabled_at.is_some() {
            return Err(AccountError::Disabled);
        }
        let secret = random_hex::<32>().map_err(|e| AccountError::Internal(e.to_string()))?;
        let session = Session {
            session_hash: sha256_hex(&secret),
            user_id: user.user_id.clone(),
            csrf_token: random_hex::<16>().map_err(|e| AccountError::Internal(e.to_string()))?,
            // The epoch read before the password was verified: a new password or a
            // "sign out everywhere" meanwhile leaves this session opening nothing.
            epoch: user.session_epoch,
            created_at: now,
            last_seen_at: now,
            expires_at: now + SESSION_IDLE_MS,
        };
        store::sessions::insert(&self.db, &session).await?;
        let device = match (device, known) {
            (Some(_), false) => {
                let cookie =
                    random_hex::<32>().map_err(|e| AccountError::Internal(e.to_string()))?;
                store::users::remember_device(&self.db, &sha256_hex(&cookie), &user.user_id, now)
                    .await?;
                Some(cookie)
            }
            _ => None,
        };
        let memberships = store::users::memberships(&self.db, &user.user_id).await?;
        Ok(NewSession {
            device,
            secret,
            signed_in: SignedIn {
                user,
                memberships,
                csrf_token: session.csrf_token,
                session_hash: session.session_hash,
                client,
            },
        })
    }

    /// Books one attempt against `email` before its password is verified: refused while
    /// the email's wait runs, and when another attempt was booked since its count was
    /// read (attempts sent at once get one turn between them).
    async fn book_attempt(&self, email: &str, now: i64) -> Result<(), AccountError> {
        let booked = match store::users::login_attempts(&self.db, email).await? {
            None => store::users::claim_first_login_attempt(&self.db, email, now).await?,
            Some(seen) => {
                let forgotten = now - seen.last_at >= FORGET_ATTEMPTS_MS;
                if let Some(until) = seen.locked_until.filter(|u| *u > now && !forgotten) {
                    return Err(AccountError::Locked {
                        retry_after_s: u64::try_from((until - now + 999) / 1000).unwrap_or(1),
                    });
                }
                let failures = if forgotten { 1 } else { seen.failures + 1 };
                let lock = lock_after(failures, now);
                store::users::claim_login_attempt(
                    &self.db,
                    email,
                    seen.failures,
                    failures,
                    lock,
                    now,
                )
                .await?
            }
        };
        if booked {
            Ok(())
        } else {
            Err(AccountError::Locked { retry_after_s: 1 })
        }
    }

    /// The live session whose cookie holds `secret`, of a user who is not disabled.
    pub async fn session(
        &self,
        secret: &str,
        client: Option<IpAddr>,
    ) -> Result<Option<SignedIn>, AccountError> {
        let hash = sha256_hex(secret);
        let now = now_ms();
        let Some(session) = store::sessions::get(&self.db, &hash).await? else {
            return Ok(None);
        };
        if session.expires_at <= now {
            store::sessions::delete(&self.db, &hash).await?;
            return Ok(None);
        }
        let Some(user) = store::users::by_id(&self.db, &session.user_id).await? else {
            return Ok(None);
        };
        if user.disabled_at.is_some() || user.session_epoch != session.epoch {
            return Ok(None);
        }
        if now - session.last_seen_at >= TOUCH_EVERY_MS {
            let ends = (now + SESSION_IDLE_MS).min(session.created_at + SESSION_MAX_MS);
            store::sessions::touch(&self.db, &hash, now, ends).await?;
        }
        let memberships = store::users::memberships(&self.db, &user.user_id).await?;
        Ok(Some(SignedIn {
            user,
            memberships,
            csrf_token: session.csrf_token,
            session_hash: hash,
            client,
        }))
    }

    /// Ends this session.
    pub async fn sign_out(&self, signed_in: &SignedIn) -> Result<(), AccountError> {
        Ok(store::sessions::delete(&self.db, &signed_in.session_hash).await?)
    }

    /// Ends every session of the user, this one included (one being made meanwhile
    /// too).
    pub async fn sign_out_everywhere(&self, signed_in: &SignedIn) -> Result<(), AccountError> {
        store::users::end_sessions(&self.db, &signed_in.user.user_id).await?;
        store::sessions::delete_of_user(&self.db, &signed_in.user.user_id, "").await?;
        Ok(())
    }

    /// Changes the password, given the current one, and ends every other session. The
    /// current password is guessed no faster than at sign-in: the same bookings.
    pub async fn change_password(
        &self,
        signed_in: &SignedIn,
        current: &str,
        new: &str,
    ) -> Result<(), AccountError> {
        let user = &signed_in.user;
        if current.chars().count() > password::MAX_PASSWORD_CHARS {
            return Err(AccountError::WrongCredentials);
        }
        self.guard
            .take(signed_in.client)
            .map_err(|_| AccountError::Throttled)?;
        self.book_attempt(&user.email, now_ms()).await?;
        if !self.verify(current, &user.password_hash).await? {
            return Err(AccountError::WrongCredentials);
        }
        store::users::forget_login_attempts(&self.db, &user.email).await?;
        password::check(new, &user.email)?;
        let hash = self.hash(new).await?;
        let epoch = store::users::set_password(&self.db, &user.user_id, &hash).await?;
        store::sessions::rekey(&self.db, &signed_in.session_hash, epoch).await?;
        store::sessions::delete_of_user(&self.db, &user.user_id, &signed_in.session_hash).await?;
        Ok(())
    }

    /// Sets a user's password without the current one (an operator's reset, from the
    /// command line), and ends every session of theirs.
    pub async fn reset_password(&self, user: &User, new: &str) -> Result<(), AccountError> {
        password::check(new, &user.email)?;
        let hash = self.hash(new).await?;
        store::users::set_password(&self.db, &user.user_id, &hash).await?;
        store::sessions::delete_of_user(&self.db, &user.user_id, "").await?;
        store::users::forget_login_attempts(&self.db, &user.email).await?;
        Ok(())
    }

    /// A turn to hash or verify a password, waiting at most [`HASHING_WAIT`].
    async fn turn(&self) -> Result<tokio::sync::OwnedSemaphorePermit, AccountError> {
        tokio::time::timeout(HASHING_WAIT, self.hashing.clone().acquire_owned())
            .await
            .map_err(|_| AccountError::Busy)?
            .map_err(|_| AccountError::Busy)
    }

    async fn hash(&self, password: &str) -> Result<String, AccountError> {
        let turn = self.turn().await?;
        let password = password.to_owned();
        tokio::task::spawn_blocking(move || {
            let _turn = turn;
            password::hash(&password)
        })
        .await
        .map_err(|e| AccountError::Internal(e.to_string()))?
        .map_err(AccountError::Internal)
    }

    async fn verify(&self, password: &str, phc: &str) -> Result<bool, AccountError> {
        let turn = self.turn().await?;
        let (password, phc) = (password.to_owned(), phc.to_owned());
        tokio::task::spawn_blocking(move || {
            let _turn = turn;
            password::verify(&password, &phc)
        })
        .await
        .map_err(|e| AccountError::Internal(e.to_string()))
    }
}

/// When the next password may be tried after `failures` wrong ones in a row.
fn lock_after(failures: i64, now: i64) -> Option<i64> {
    let over = failures - FREE_FAILURES;
    (over > 0).then(|| now + (1_000_i64 << (over - 1).min(20)).min(MAX_LOCK_MS))
}

/// An email as stored: trimmed and lowercased; roughly `local@domain.tld`.
pub fn normalize_email(email: &str) -> Result<String, AccountError> {
    let email = email.trim().to_lowercase();
    if email.chars().count() > MAX_EMAIL_CHARS {
        return Err(AccountError::BadEmail("an email is at most 254 characters"));
    }
    let valid = email.split_once('@').is_some_and(|(local, domain)| {
        !local.is_empty()
            && domain.contains('.')
            && !domain.starts_with('.')
            && !domain.ends_with('.')
            && !domain.contains('@')
    }) && !email.chars().any(|c| c.is_whitespace() || c.is_control());
    if valid {
        Ok(email)
    } else {
        Err(AccountError::BadEmail("an email is name@domain.example"))
    }
}

fn random_id() -> Result<String, AccountError> {
    random_hex::<12>().map_err(|e| AccountError::Internal(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wait_doubles_after_five_wrong_passwords_up_to_fifteen_minutes() {
        assert_eq!(lock_after(5, 0), None);
        assert_eq!(lock_after(6, 0), Some(1_000));
        assert_eq!(lock_after(7, 0), Some(2_000));
        assert_eq!(lock_after(15, 0), Some(512_000));
        assert_eq!(lock_after(16, 0), Some(MAX_LOCK_MS));
        assert_eq!(lock_after(10_000, 0), Some(MAX_LOCK_MS));
    }

    #[test]
    fn emails_are_lowercased_and_roughly_checked() {
        assert_eq!(
            normalize_email(" Ana@Acme.Example ").unwrap(),
            "ana@acme.example"
        );
        for bad in [
            "ana",
            "@acme.example",
            "ana@acme",
            "ana@.acme",
            "a b@acme.example",
            "a@b@c.example",
        ] {
            assert!(normalize_email(bad).is_err(), "{bad}");
        }
    }
}

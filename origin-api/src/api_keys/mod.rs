//! API keys, the one door to them: who may list, make and revoke an owner's keys, what a
//! key may be named and limited to, and the guard in front of them forgetting a revoked
//! key at once. The dashboard's keys page, `hop-origin keys` and a member's removal all
//! come through here.

pub mod guard;
pub mod token;

pub use guard::AuthGuard;
pub use token::{issue, parse_token, valid_owner, Grant, KeyError};

use crate::db::Db;
use crate::error::AppError;
use crate::model::time::now_ms;
use crate::model::{ApiKey, Domain, Role};
use crate::principal::Principal;
use crate::store;
use std::sync::Arc;

/// The longest name a key is given.
pub const MAX_NAME_CHARS: usize = 100;

/// Why a key was not made or revoked: the caller's mistake (the message says what to
/// change) or the origin's failure.
#[derive(Debug, thiserror::Error)]
pub enum KeysError {
    #[error("name: 1 to {MAX_NAME_CHARS} characters, to tell the key's script later")]
    BadName,
    #[error("{0} is not a registered domain (hop-origin domains add)")]
    NotRegistered(String),
    #[error("{domain} is not a domain of {owner}")]
    NotTheOwners { domain: String, owner: String },
    #[error("{0}")]
    Domain(String),
    #[error(
        "an admin key reaches every owner: only an operator makes or revokes it (hop-origin keys)"
    )]
    AdminKeyNeedsOperator,
    #[error("no live key with id {0}")]
    NoLiveKey(String),
    #[error(transparent)]
    Key(#[from] KeyError),
    /// Not allowed, not found, or the database failing.
    #[error(transparent)]
    App(#[from] AppError),
}

impl From<store::StoreError> for KeysError {
    fn from(e: store::StoreError) -> Self {
        KeysError::App(e.into())
    }
}

/// An owner's keys and the domains a new key of it may be limited to.
#[derive(Debug)]
pub struct OwnerKeys {
    /// Revoked ones included, newest first.
    pub keys: Vec<ApiKey>,
    pub domains: Vec<Domain>,
}

/// A key just made: its row, and the token, shown this once.
#[derive(Debug)]
pub struct NewKey {
    pub key: ApiKey,
    pub token: String,
}

/// A key revoked.
#[derive(Debug)]
pub struct Revoked {
    pub key: ApiKey,
    /// Whether it was live until now (`false`: it had been revoked before).
    pub was_live: bool,
}

/// What is needed of a principal to manage an owner's keys.
const ADMINS_ONLY: &str = "only an admin of this owner manages its API keys";

/// The keys service.
#[derive(Debug)]
pub struct ApiKeys {
    db: Db,
    guard: Arc<AuthGuard>,
}

impl ApiKeys {
    /// Keys in `db`, forgotten by `guard` when revoked.
    pub fn new(db: Db, guard: Arc<AuthGuard>) -> Self {
        ApiKeys { db, guard }
    }

    /// `owner`'s keys, for its admins.
    pub async fn of_owner(&self, who: &Principal, owner: &str) -> Result<OwnerKeys, KeysError> {
        who.require(owner, Role::Admin, ADMINS_ONLY)?;
        let (keys, domains) = tokio::try_join!(
            store::api_keys::of_owner(&self.db, owner),
            store::domains::for_owner(&self.db, owner)
        )?;
        Ok(OwnerKeys { keys, domains })
    }

    /// A new key of `owner` named `name` (trimmed), limited to `grant.domains`: each a
    /// domain the owner may use (a key reaches nothing its owner may not). Its admins
    /// make ordinary keys; only an operator makes an admin key.
    pub async fn issue(
        &self,
        who: &Principal,
        owner: &str,
        name: &str,
        grant: &Grant,
    ) -> Result<NewKey, KeysError> {
        who.require(owner, Role::Admin, ADMINS_ONLY)?;
        if !valid_owner(owner) {
            return Err(KeyError::BadOwner.into());
        }
        if grant.admin && !who.is_operator() {
            return Err(KeysError::AdminKeyNeedsOperator);
        }
        let name = name.trim();
        if name.is_empty()
            || name.chars().count() > MAX_NAME_CHARS
            || name.chars().any(char::is_control)
        {
            return Err(KeysError::BadName);
        }
        let grant = Grant {
            admin: grant.admin,
            domains: self.scope(who, owner, &grant.domains).await?,
        };
        let (key, token) = issue(owner, name, &grant, now_ms())?;
        match who {
            // Kept with its maker: the key ends when they leave the owner.
            Principal::User { user_id, .. } => {
                store::api_keys::insert_made_by(&self.db, &key, user_id).await?
            }
            _ => store::api_keys::insert(&self.db, &key).await?,
        }
        tracing::info!(owner = %owner, key_id = %key.key_id, by = %who.actor().to_column(), "API key made");
        Ok(NewKey { key, token })
    }

    /// `raw` as the normalized domains of `owner` a key is limited to.
    async fn scope(
        &self,
        who: &Principal,
        owner: &str,
        raw: &[String],
    ) -> Result<Vec<String>, KeysError> {
        if raw.is_empty() {
            return Ok(Vec::new());
        }
        let theirs = store::domains::for_owner(&self.db, owner).await?;
        let mut domains = Vec::with_capacity(raw.len());
        for name in raw {
            let d = shared::normalize_short_domain(name)
                .map_err(|e| KeysError::Domain(format!("{name}: {e}")))?;
            if !theirs.iter().any(|t| t.domain == d) {
                // Only an operator learns whether it is registered at all.
                let registered =
                    !who.is_operator() || store::domains::get(&self.db, &d).await?.is_some();
                return Err(if registered {
                    KeysError::NotTheOwners {
                        domain: d,
                        owner: owner.to_owned(),
                    }
                } else {
                    KeysError::NotRegistered(d)
                });
            }
            domains.push(d);
        }
        Ok(domains)
    }

    /// Revokes `key_id`, for an admin of its owner (an admin key, only for an operator);
    /// a principal acting for one owner reaches only that owner's keys. Requests with it
    /// are refused from now on by this process at once, and by others when their hold of
    /// it ends (`--key-hold`). Revoking a revoked key changes nothing: `was_live` says so.
    pub async fn revoke(&self, who: &Principal, key_id: &str) -> Result<Revoked, KeysError> {
        let missing = || KeysError::NoLiveKey(key_id.to_owned());
        // Acting in an owner (a key, a user on its pages), it reaches only that owner's
        // keys, whatever its rights elsewhere; the operator at the shell, any.
        let acting_in = who.owner();
        if let Some(owner) = acting_in {
            who.require(owner, Role::Admin, ADMINS_ONLY)?;
        }
        let key = store::api_keys::find(&self.db, key_id)
            .await?
            .filter(|k| acting_in.is_none_or(|o| o == k.owner_id))
            .ok_or_else(missing)?;
        match who.require(&key.owner_id, Role::Admin, ADMINS_ONLY) {
            // Another owner's key is none of the caller's business.
            Err(AppError::NotFound) => return Err(missing()),
            other => other?,
        }
        if key.is_admin() && !who.is_operator() {
            return Err(KeysError::AdminKeyNeedsOperator);
        }
        let was_live = store::api_keys::revoke(&self.db, key_id, now_ms()).await?;
        self.guard.forget(key_id);
        if was_live {
            tracing::info!(owner = %key.owner_id, key_id = %key_id, by = %who.actor().to_column(), "API key revoked");
        }
        Ok(Revoked { key, was_live })
    }

    /// Revokes the keys `user_id` made in the dashboard for `owner` (every owner's with
    /// `None`): they lost access to it. Hop itself does it, when a member is removed or
    /// a user disabled.
    pub async fn revoke_made_by(
        &self,
        user_id: &str,
        owner: Option<&str>,
    ) -> Result<usize, store::StoreError> {
        let revoked = store::api_keys::revoke_made_by(&self.db, user_id, owner, now_ms()).await?;
        for key_id in &revoked {
            self.guard.forget(key_id);
        }
        Ok(revoked.len())
    }
}

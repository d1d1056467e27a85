//! Who is calling: the API key in `Authorization: Bearer hop_…`.
//!
//! A well-formed token whose key id is not in memory costs a database read, so guessing
//! is limited per client address ([`AuthGuard`]): past a minute's worth of failures the
//! client is answered 429 before any read. Keys that verified are held for `--key-hold`
//! (10 s by default), so a valid key's requests need no read at all and never wait behind an
//! attacker's failures, wherever those come from.

use crate::api_keys::guard::AuthGuard;
use crate::api_keys::token::parse_token;
use crate::db::Db;
use crate::error::AppError;
use crate::model::Creator;
use crate::principal::Principal;
use crate::proxies::Proxies;
use crate::store;
use axum::extract::{FromRef, FromRequestParts};
use axum::http::header::AUTHORIZATION;
use axum::http::request::Parts;
use std::sync::Arc;

/// Authentication: its own pool (guessed keys wait only behind each other), the
/// failures per client and the keys that verified, and whose forwarding headers count.
#[derive(Debug)]
pub struct Auth {
    db: Db,
    /// Shared with the keys service, which tells it of a revoked key.
    guard: Arc<AuthGuard>,
    pub proxies: Proxies,
}

impl Auth {
    /// Authentication on `db` (its own pool), sharing `guard` with the keys service.
    pub fn new(db: Db, guard: Arc<AuthGuard>, proxies: Proxies) -> Self {
        Auth { db, guard, proxies }
    }

    /// Closes authentication's pool.
    pub async fn close(&self) {
        self.db.close().await;
    }
}

/// The owner a request acts for.
#[derive(Debug, Clone)]
pub struct Caller {
    pub owner_id: String,
    pub key_id: String,
    pub admin: bool,
    /// The domains the key is limited to, if it is.
    pub domains: Option<Vec<String>>,
}

impl<S: Send + Sync> FromRequestParts<S> for Caller
where
    Arc<Auth>: FromRef<S>,
{
    type Rejection = AppError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, AppError> {
        let auth = Arc::<Auth>::from_ref(state);
        let token = parts
            .headers
            .get(AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .map(str::trim)
            .ok_or(AppError::Unauthorized)?;
        // A malformed token costs nothing to refuse.
        let (key_id, secret) = parse_token(token).ok_or(AppError::Unauthorized)?;
        let guard = &auth.guard;
        let key = match guard.held(key_id) {
            // A held key that verifies passes whoever else is failing.
            Some(key) if key.verifies(secret) => key,
            held => {
                let client = auth
                    .proxies
                    .client_ip(crate::proxies::peer(parts), &parts.headers);
                guard.admit(client)?;
                let found = match held {
                    // A wrong secret for a held key: refused without a read.
                    Some(_) => None,
                    None => {
                        guard
                            .held_or_read(key_id, || store::api_keys::find(&auth.db, key_id))
                            .await?
                    }
                };
                match found.filter(|k| k.verifies(secret)) {
                    Some(key) => key,
                    None => {
                        guard.failed(client);
                        return Err(AppError::Unauthorized);
                    }
                }
            }
        };
        Ok(Caller {
            admin: key.is_admin(),
            owner_id: key.owner_id.clone(),
            key_id: key.key_id.clone(),
            domains: key.domains(),
        })
    }
}

impl Caller {
    /// The key as the services see who acts.
    pub fn principal(&self) -> Principal {
        Principal::Key {
            key_id: self.key_id.clone(),
            owner: self.owner_id.clone(),
            admin: self.admin,
            domains: self.domains.clone(),
        }
    }

    /// The caller as the registry's rules see a creator of links.
    pub fn creator(&self) -> Creator<'_> {
        Creator {
            owner: &self.owner_id,
            admin: self.admin,
            domains: self.domains.as_deref(),
            actor: crate::model::history::Actor::Key(&self.key_id),
        }
    }

    /// Refuses (403, saying `why`) a key that is not an admin's.
    pub fn require_admin(&self, why: &'static str) -> Result<(), AppError> {
        if self.admin {
            Ok(())
        } else {
            Err(AppError::Forbidden(why))
        }
    }
}

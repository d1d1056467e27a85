//! Who is calling: the API key in `Authorization: Bearer hop_…`.

use crate::error::AppError;
use crate::keys::parse_token;
use crate::store::LinkStore;
use crate::AppState;
use axum::extract::FromRequestParts;
use axum::http::header::AUTHORIZATION;
use axum::http::request::Parts;

/// The owner a request acts for.
#[derive(Debug, Clone)]
pub struct Caller {
    pub owner_id: String,
    pub key_id: String,
    pub admin: bool,
}

impl FromRequestParts<AppState> for Caller {
    type Rejection = AppError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, AppError> {
        let token = parts
            .headers
            .get(AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .map(str::trim)
            .ok_or(AppError::Unauthorized)?;
        let (key_id, secret) = parse_token(token).ok_or(AppError::Unauthorized)?;
        let key = state
            .auth_db
            .find_key(key_id)
            .await?
            .filter(|k| k.revoked_at.is_none() && k.verifies(secret))
            .ok_or(AppError::Unauthorized)?;
        Ok(Caller {
            admin: key.is_admin(),
            owner_id: key.owner_id,
            key_id: key.key_id,
        })
    }
}

impl Caller {
    /// Refuses (403, saying `why`) a key that is not an admin's.
    pub fn require_admin(&self, why: &'static str) -> Result<(), AppError> {
        if self.admin {
            Ok(())
        } else {
            Err(AppError::Forbidden(why))
        }
    }
}

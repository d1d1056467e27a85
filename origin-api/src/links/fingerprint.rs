//! The fingerprint an idempotent create (single or bulk) is remembered by, so that a
//! retry with the same key is told from a different request under it.
//!
//! A body may hold a link's password, so the fingerprint is keyed: HMAC-SHA256 of the
//! body under a key derived from the oldest permutation key (which every node of one
//! deployment shares and which is never retired). A copy of the `idempotency` table
//! alone then cannot be used to test guesses of the passwords in it, as a plain SHA-256
//! could, at billions of guesses a second.

use super::service::Links;
use crate::error::AppError;
use crate::model::api_key::hmac_sha256 as hmac;
use serde::Serialize;
use subtle::ConstantTimeEq;

/// What the fingerprint key is derived for: another use of the same key gets another.
const LABEL: &[u8] = b"hop idempotency fingerprint v1";

/// A request's fingerprint, and what it was taken of.
pub(crate) struct Fingerprint {
    keyed: String,
    body: String,
}

impl Fingerprint {
    /// The fingerprint of `body` (as its JSON), under this deployment's key.
    pub(crate) fn of<T: Serialize>(state: &Links, body: &T) -> Result<Self, AppError> {
        let root = state
            .settings
            .permutation_keys
            .as_ref()
            .and_then(|ring| ring.oldest())
            .ok_or(AppError::NotConfigured(
                "create links: HOP_PERMUTATION_KEYS is not set",
            ))?;
        let body = serde_json::to_string(body).unwrap_or_default();
        let key = hmac(root.as_bytes(), LABEL);
        Ok(Fingerprint {
            keyed: crate::random_ids::hex(&hmac(&key, body.as_bytes())),
            body,
        })
    }

    /// What is stored with the request's idempotency key.
    pub(crate) fn as_str(&self) -> &str {
        &self.keyed
    }

    /// Whether `recorded` was taken of this same request: keyed, or the plain SHA-256
    /// that releases before keyed fingerprints stored (kept for a day at most, so only
    /// a retry across the upgrade meets one; it is compared, never stored again).
    pub(crate) fn matches(&self, recorded: &str) -> bool {
        bool::from(recorded.as_bytes().ct_eq(self.keyed.as_bytes()))
            || recorded == crate::model::api_key::sha256_hex(&self.body)
    }
}

//! An API key as stored: its id, owner, scopes and the SHA-256 of its secret.

use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// Scope that allows bans.
pub const SCOPE_ADMIN: &str = "admin";
/// Scope every key has: its owner's links.
pub const SCOPE_LINKS: &str = "links";

/// A stored key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiKey {
    pub key_id: String,
    pub owner_id: String,
    pub name: String,
    pub secret_hash: String,
    pub scopes: String,
    pub created_at: i64,
    pub revoked_at: Option<i64>,
}

/// Prefix of a scope that limits a key to one domain (`domain:go.acme.example`); a key
/// with none may use every domain its owner may.
pub const SCOPE_DOMAIN_PREFIX: &str = "domain:";

impl ApiKey {
    /// Whether the key may ban, run the outbox and use every domain. A key limited to
    /// domains never may: `keys create` refuses `--admin` with `--domain`, and a key
    /// stored with both before that rule is taken as the limited key it also says it is.
    pub fn is_admin(&self) -> bool {
        self.scopes.split(',').any(|s| s == SCOPE_ADMIN) && self.domains().is_none()
    }

    /// The domains this key is limited to, if it is limited (sorted as stored).
    pub fn domains(&self) -> Option<Vec<String>> {
        let domains: Vec<String> = self
            .scopes
            .split(',')
            .filter_map(|s| s.strip_prefix(SCOPE_DOMAIN_PREFIX))
            .map(str::to_owned)
            .collect();
        (!domains.is_empty()).then_some(domains)
    }

    /// Whether `secret` is this key's secret; constant time in the secret.
    pub fn verifies(&self, secret: &str) -> bool {
        hash_secret(secret)
            .as_bytes()
            .ct_eq(self.secret_hash.as_bytes())
            .into()
    }
}

/// SHA-256 of the secret, lowercase hex.
pub fn hash_secret(secret: &str) -> String {
    sha256_hex(secret)
}

/// SHA-256 of any text, lowercase hex.
pub fn sha256_hex(text: &str) -> String {
    format!("{:x}", Sha256::digest(text.as_bytes()))
}

/// HMAC-SHA256 of `data` under `key`: what stands in for a secret (a link's password)
/// wherever a fingerprint of it is kept.
pub fn hmac_sha256(key: &[u8], data: &[u8]) -> [u8; 32] {
    use hmac::{Hmac, Mac};
    // HMAC takes a key of any length: the error is never returned.
    let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(key) else {
        return [0; 32];
    };
    mac.update(data);
    mac.finalize().into_bytes().into()
}

//! API keys: what a caller presents, and what the database keeps of it (the SHA-256 of
//! the secret, never the secret).
//!
//! A token reads `hop_<key_id>_<secret>`: the id finds the row, the secret is checked
//! against its hash in constant time.

use crate::model::api_key::{hash_secret, SCOPE_ADMIN, SCOPE_DOMAIN_PREFIX, SCOPE_LINKS};
use crate::model::ApiKey;
use crate::random_ids::random_hex;

/// Why a key could not be made.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error("the system's random number generator failed: {0}")]
    Random(String),
    #[error("an owner name is 1 to 128 printable characters")]
    BadOwner,
    #[error("an admin key may use every domain: it cannot also be limited to some (drop --admin or --domain)")]
    AdminLimited,
}

/// Whether `owner_id` can name an owner: 1 to 128 bytes, no control characters.
pub fn valid_owner(owner_id: &str) -> bool {
    !owner_id.is_empty() && owner_id.len() <= 128 && !owner_id.chars().any(char::is_control)
}

/// What a new key may do besides its owner's links.
#[derive(Debug, Clone, Default)]
pub struct Grant {
    /// Bans, the outbox, every domain.
    pub admin: bool,
    /// Only links on these domains (normalized; empty: no limit beyond the registry's).
    pub domains: Vec<String>,
}

impl Grant {
    /// An admin key's grant, limited to no domain.
    pub fn admin() -> Grant {
        Grant {
            admin: true,
            domains: Vec::new(),
        }
    }
}

/// Makes a new key for `owner`: the row to store and the token to show once.
pub fn issue(
    owner_id: &str,
    name: &str,
    grant: &Grant,
    now: i64,
) -> Result<(ApiKey, String), KeyError> {
    if !valid_owner(owner_id) {
        return Err(KeyError::BadOwner);
    }
    if grant.admin && !grant.domains.is_empty() {
        return Err(KeyError::AdminLimited);
    }
    let random = |e: getrandom::Error| KeyError::Random(e.to_string());
    let key_id = random_hex::<8>().map_err(random)?;
    let secret = random_hex::<32>().map_err(random)?;
    let mut scopes = vec![SCOPE_LINKS.to_owned()];
    if grant.admin {
        scopes.push(SCOPE_ADMIN.to_owned());
    }
    let mut domains = grant.domains.clone();
    domains.sort();
    domains.dedup();
    scopes.extend(domains.iter().map(|d| format!("{SCOPE_DOMAIN_PREFIX}{d}")));
    let scopes = scopes.join(",");
    let key = ApiKey {
        key_id: key_id.clone(),
        owner_id: owner_id.to_owned(),
        name: name.to_owned(),
        secret_hash: hash_secret(&secret),
        scopes,
        created_at: now,
        revoked_at: None,
    };
    Ok((key, format!("hop_{key_id}_{secret}")))
}

/// Splits a token into key id and secret.
pub fn parse_token(token: &str) -> Option<(&str, &str)> {
    let rest = token.strip_prefix("hop_")?;
    let (key_id, secret) = rest.split_once('_')?;
    let hex = |s: &str, len: usize| s.len() == len && s.bytes().all(|b| b.is_ascii_hexdigit());
    (hex(key_id, 16) && hex(secret, 64)).then_some((key_id, secret))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issued_tokens_parse_and_verify_and_only_the_hash_is_kept() {
        let (key, token) = issue("acme", "ci", &Grant::default(), 1).unwrap();
        let (id, secret) = parse_token(&token).unwrap();
        assert_eq!(id, key.key_id);
        assert!(key.verifies(secret));
        assert!(!token.contains(&key.secret_hash));
        assert!(!key.secret_hash.contains(secret));
        assert!(!key.is_admin());
        let mut wrong = secret.to_owned();
        wrong.replace_range(0..1, if wrong.starts_with('0') { "1" } else { "0" });
        assert!(!key.verifies(&wrong));
    }

    #[test]
    fn admin_keys_carry_the_admin_scope() {
        let (key, _) = issue("trust-and-safety", "ops", &Grant::admin(), 1).unwrap();
        assert!(key.is_admin());
        assert_eq!(key.domains(), None);
    }

    #[test]
    fn a_key_limited_to_domains_names_each_once() {
        let grant = Grant {
            admin: false,
            domains: vec!["b.example".into(), "a.example".into(), "b.example".into()],
        };
        let (key, _) = issue("acme", "brand", &grant, 1).unwrap();
        assert_eq!(
            key.domains(),
            Some(vec!["a.example".into(), "b.example".into()])
        );
        assert!(!key.is_admin());
        let (plain, _) = issue("acme", "all", &Grant::default(), 1).unwrap();
        assert_eq!(plain.domains(), None);
    }

    #[test]
    fn malformed_tokens_and_owners_are_refused() {
        for bad in [
            "",
            "hop_",
            "hop_abc_def",
            "Bearer x",
            "hop_0123456789abcdef_zz",
        ] {
            assert_eq!(parse_token(bad), None, "{bad:?}");
        }
        assert!(issue("", "x", &Grant::default(), 1).is_err());
        assert!(issue("a\nb", "x", &Grant::default(), 1).is_err());
    }
}

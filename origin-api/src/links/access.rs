//! Private links at the origin: issuing a signed link's tokens, and checking them on
//! the origin's own redirect exactly as the edge does (`shared::access` says what is
//! signed; the MAC here is the `hmac` crate's, compared in constant time).

use hmac::{Hmac, Mac};
use sha2::Sha256;
use shared::access::{hex_decode, signed_message, Access, Challenge, SECRET_BYTES};
use shared::RouteKey;

type HmacSha256 = Hmac<Sha256>;

/// A new secret for a link set to signed access: every token signed with the one it
/// replaces stops opening the link.
pub fn new_signed() -> Result<Access, getrandom::Error> {
    Ok(Access::Signed {
        key: crate::ids::random_hex::<SECRET_BYTES>()?,
    })
}

/// The token that opens `route` under `access` until `expires_s` (Unix seconds):
/// `{expires_s}.{hex MAC}`.
pub fn token(access: &Access, route: &str, expires_s: i64) -> Option<String> {
    let Access::Signed { key } = access;
    let mut mac = HmacSha256::new_from_slice(&hex_decode(key)?).ok()?;
    mac.update(signed_message(route, expires_s).as_bytes());
    Some(format!(
        "{expires_s}.{}",
        crate::ids::hex(&mac.finalize().into_bytes())
    ))
}

/// Whether the visit's raw query carries a token that opens `route` under `access`
/// at `now_s`.
pub fn opens(access: &Access, route: &RouteKey, query: Option<&str>, now_s: i64) -> bool {
    let Some(c) = Challenge::of(access, route, query, now_s) else {
        return false;
    };
    let Ok(mut mac) = HmacSha256::new_from_slice(&c.key) else {
        return false;
    };
    mac.update(c.message.as_bytes());
    mac.verify_slice(&c.mac).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_opens_its_link_until_it_expires_and_nothing_else() {
        let access = new_signed().unwrap();
        let route = RouteKey::new("s.example", "secret1").unwrap();
        let token = token(&access, route.as_str(), 1_000).unwrap();
        let query = format!("t={token}");
        assert!(opens(&access, &route, Some(&query), 999));
        assert!(!opens(&access, &route, Some(&query), 1_000), "expired");
        let other = RouteKey::new("s.example", "secret2").unwrap();
        assert!(!opens(&access, &other, Some(&query), 999), "another link");
        // A later expiry with the same MAC, or a new secret, opens nothing.
        let (_, mac) = token.split_once('.').unwrap();
        assert!(!opens(&access, &route, Some(&format!("t=2000.{mac}")), 999));
        let rotated = new_signed().unwrap();
        assert!(!opens(&rotated, &route, Some(&query), 999));
        assert!(!opens(&access, &route, None, 0));
    }

    /// The edge checks with WebCrypto what this signs: the vector is RFC 4231's test
    /// case 2 (key "Jefe"), the same bytes any HMAC-SHA256 gives.
    #[test]
    fn the_mac_is_plain_hmac_sha256() {
        let mut mac = HmacSha256::new_from_slice(b"Jefe").unwrap();
        mac.update(b"what do ya want for nothing?");
        assert_eq!(
            crate::ids::hex(&mac.finalize().into_bytes()),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }
}

/// The body of `POST /v1/links/{domain}/{code}/tokens`: when the token stops opening
/// the link, as an instant or a time to live (default one day).
#[derive(Debug, Clone, Default, serde::Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct IssueToken {
    /// RFC 3339, in the future, at most 366 days ahead.
    #[serde(default)]
    pub expires_at: Option<String>,
    /// Seconds from now, 1 to 31,622,400 (366 days).
    #[serde(default)]
    pub ttl_s: Option<u64>,
}

/// An issued token, and the link that carries it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize, utoipa::ToSchema)]
pub struct IssuedToken {
    pub token: String,
    /// `https://{domain}/{code}?t={token}`: what to share.
    pub url: String,
    /// RFC 3339, to the second.
    pub expires_at: String,
}

/// A token's longest life.
pub const MAX_TTL_S: u64 = 366 * 24 * 3600;
/// A token's life unless asked otherwise.
pub const DEFAULT_TTL_S: u64 = 24 * 3600;

/// A token for `link`, which must be signed and not deleted, as `asked` at `now` (ms).
pub fn issue(
    link: &crate::model::Link,
    asked: &IssueToken,
    now: i64,
) -> Result<IssuedToken, crate::error::AppError> {
    use crate::error::AppError;
    if link.status == crate::model::LinkState::Deleted {
        return Err(AppError::Deleted);
    }
    let Some(access) = &link.options.access else {
        return Err(AppError::invalid(
            "access",
            "the link is public: set \"access\": \"signed\" on it first",
        ));
    };
    let now_s = now.div_euclid(1000);
    let expires_s = match (&asked.expires_at, asked.ttl_s) {
        (Some(_), Some(_)) => {
            return Err(AppError::invalid(
                "expires_at",
                "give expires_at or ttl_s, not both",
            ))
        }
        (Some(at), None) => {
            let ms = crate::model::time::parse_rfc3339(at).ok_or_else(|| {
                AppError::invalid("expires_at", "use RFC 3339, e.g. 2030-01-31T23:59:59Z")
            })?;
            let s = ms.div_euclid(1000);
            if s <= now_s || s - now_s > MAX_TTL_S as i64 {
                return Err(AppError::invalid(
                    "expires_at",
                    "must be in the future, at most 366 days ahead",
                ));
            }
            s
        }
        (None, ttl) => {
            let ttl = ttl.unwrap_or(DEFAULT_TTL_S);
            if !(1..=MAX_TTL_S).contains(&ttl) {
                return Err(AppError::invalid(
                    "ttl_s",
                    format!("1 to {MAX_TTL_S} seconds"),
                ));
            }
            now_s + ttl as i64
        }
    };
    let route = link.route_key();
    let token = token(access, &route, expires_s).ok_or_else(|| {
        AppError::Store(crate::store::StoreError::Corrupt(format!(
            "link {route}: its secret is not hex"
        )))
    })?;
    Ok(IssuedToken {
        url: format!("https://{route}?t={token}"),
        token,
        expires_at: crate::model::time::rfc3339(expires_s * 1000),
    })
}

//! Private links (issue 17): a code is not a credential. Two kinds:
//!
//! - *signed*: the link answers only visits that carry a token its owner had issued
//!   (`?t=…`): an expiry and an HMAC-SHA256 over the route key and that expiry, with a
//!   secret of the link's own that changes whenever the link is set to signed access
//!   again (which revokes every token issued before);
//! - *password*: the visitor types the link's password into a form (`crate::password`);
//!   success is remembered for that link alone by a cookie ([`COOKIE`]) that has the
//!   same shape as a token, signed with another message ([`cookie_message`]), so neither
//!   can stand in for the other.
//!
//! What is signed and how a token reads are here, shared; the MAC itself is computed
//! by each side's own crypto (the edge's WebCrypto, which compares in constant time
//! and costs the WebAssembly nothing; the origin's `hmac`).

use crate::route::RouteKey;
use serde::{Deserialize, Serialize};

/// The query parameter that carries a token.
pub const TOKEN_PARAM: &str = "t";
/// The password cookie's name (`crate::password`). Its path is the link's own, so each
/// link has its own.
pub const COOKIE: &str = "hop_pass";
/// The longest a token may be read: an expiry and a 64-digit MAC, with room.
const MAX_TOKEN: usize = 96;
/// Bytes of a link's secret.
pub const SECRET_BYTES: usize = 32;

/// Who may follow a link, as the edge record carries it (`ac`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase", deny_unknown_fields)]
pub enum Access {
    /// Visits need a token signed with this secret (hex).
    Signed { key: String },
    /// Visits need the password: `hash` is PBKDF2-HMAC-SHA256 of it with `salt` over
    /// `iterations` rounds; a visitor who gave it carries a cookie signed with `key`.
    /// All hex. The owner's password itself is kept nowhere.
    Password {
        salt: String,
        hash: String,
        iterations: u32,
        key: String,
    },
}

impl Access {
    pub fn is_password(&self) -> bool {
        matches!(self, Access::Password { .. })
    }
}

/// The bytes a token's MAC covers: a version tag, the route key and the expiry, so a
/// token opens one link until one instant and nothing else.
pub fn signed_message(route: &str, expires_s: i64) -> String {
    format!("hop-link-token-v1\n{route}\n{expires_s}")
}

/// The bytes a password cookie's MAC covers: unlike a token's, so that a cookie is never
/// a token nor a token a cookie.
pub fn cookie_message(route: &RouteKey, expires_s: i64) -> String {
    format!("hop-link-password-v1\n{}\n{expires_s}", route.as_str())
}

/// A token as a visit presents it: its expiry (Unix seconds) and its MAC (hex).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Presented<'q> {
    pub expires_s: i64,
    pub mac: &'q str,
}

impl<'q> Presented<'q> {
    /// The token in a visit's raw query, if one is there and well formed; `None` too
    /// once it has expired (at `now_s`), so no MAC is computed for a dead token.
    pub fn find(query: Option<&'q str>, now_s: i64) -> Option<Presented<'q>> {
        let raw = query?.split('&').find_map(|pair| pair.strip_prefix("t="))?;
        Presented::parse(raw, now_s)
    }

    /// The password cookie in a visit's `Cookie` header, read as [`Presented::find`]
    /// reads a token.
    pub fn in_cookie(cookie: Option<&'q str>, now_s: i64) -> Option<Presented<'q>> {
        let raw = cookie?
            .split(';')
            .find_map(|pair| pair.trim().strip_prefix(COOKIE)?.strip_prefix('='))?;
        Presented::parse(raw, now_s)
    }

    /// `{expires_s}.{64 hex digits}`, unexpired at `now_s`.
    fn parse(raw: &'q str, now_s: i64) -> Option<Presented<'q>> {
        if raw.len() > MAX_TOKEN {
            return None;
        }
        let (expires, mac) = raw.split_once('.')?;
        let expires_s: i64 = expires.parse().ok()?;
        let mac_ok = mac.len() == 64 && mac.bytes().all(|b| b.is_ascii_hexdigit());
        (mac_ok && expires_s > now_s).then_some(Presented { expires_s, mac })
    }

    /// What the MAC must cover for `route`.
    pub fn message(&self, route: &RouteKey) -> String {
        signed_message(route.as_str(), self.expires_s)
    }

    /// The MAC's bytes.
    pub fn mac_bytes(&self) -> Option<Vec<u8>> {
        hex_decode(self.mac)
    }
}

/// Bytes written as hex (either case), or `None`. Keys and MACs are hex rather than
/// base64 so that the edge reads them without a decoder crate.
pub fn hex_decode(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    let digit = |b: u8| (b as char).to_digit(16);
    text.as_bytes()
        .chunks(2)
        .map(|pair| Some((digit(pair[0])? * 16 + digit(pair[1])?) as u8))
        .collect()
}

/// What checking a visit against a link's access takes: the secret, the MAC the visit
/// presents, and the bytes that MAC must cover. Each side computes the MAC with its own
/// crypto and compares in constant time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Challenge {
    pub key: Vec<u8>,
    pub mac: Vec<u8>,
    pub message: String,
}

impl Challenge {
    /// The check a visit of `route` with `query` and `cookie` (its `Cookie` header)
    /// faces at `now_s`: a signed link's token, a password link's cookie. `None` when
    /// it presents no well-formed, unexpired one (or the secret is corrupt): refused
    /// without computing anything.
    pub fn of(
        access: &Access,
        route: &RouteKey,
        query: Option<&str>,
        cookie: Option<&str>,
        now_s: i64,
    ) -> Option<Self> {
        let (presented, key, message) = match access {
            Access::Signed { key } => {
                let presented = Presented::find(query, now_s)?;
                (presented, key, presented.message(route))
            }
            Access::Password { key, .. } => {
                let presented = Presented::in_cookie(cookie, now_s)?;
                let message = cookie_message(route, presented.expires_s);
                (presented, key, message)
            }
        };
        Some(Challenge {
            key: hex_decode(key)?,
            mac: presented.mac_bytes()?,
            message,
        })
    }
}

/// A visit's raw query without the token, for forwarding to the target: the token
/// opens the short link, it is no business of the destination's.
pub fn without_token(query: &str) -> String {
    query
        .split('&')
        .filter(|pair| !pair.is_empty() && *pair != TOKEN_PARAM && !pair.starts_with("t="))
        .collect::<Vec<_>>()
        .join("&")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_is_found_only_well_formed_and_unexpired() {
        let mac = "0f".repeat(32);
        let query = format!("a=1&t=1800000100.{mac}&b=2");
        let p = Presented::find(Some(&query), 1_800_000_000).unwrap();
        assert_eq!(p.expires_s, 1_800_000_100);
        assert_eq!(p.mac_bytes(), Some(vec![0x0f; 32]));
        for query in [
            None,
            Some("a=1"),
            Some("t=1800000100"),
            Some("t=soon.abc"),
            Some("t=1800000100."),
            Some("t=1800000100.a%2Fb"),
            Some("t=1800000100.abc"),
            // Expired at the very second.
            Some("t=1800000000.0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f"),
        ] {
            assert_eq!(Presented::find(query, 1_800_000_000), None, "{query:?}");
        }
        let long = format!("t=1800000100.{}", "a".repeat(MAX_TOKEN));
        assert_eq!(Presented::find(Some(&long), 0), None);
    }

    #[test]
    fn the_message_names_the_route_and_the_expiry() {
        let route = RouteKey::new("s.example", "secret1").unwrap();
        let p = Presented {
            expires_s: 42,
            mac: "x",
        };
        assert_eq!(
            p.message(&route),
            "hop-link-token-v1\ns.example/secret1\n42"
        );
    }

    #[test]
    fn hex_round_trips_and_refuses_what_is_not_hex() {
        let bytes: Vec<u8> = (0..=255).collect();
        let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(hex_decode(&hex), Some(bytes));
        assert_eq!(hex_decode("ABcd"), Some(vec![0xab, 0xcd]));
        for bad in ["a", "zz", "0g", "é0"] {
            assert_eq!(hex_decode(bad), None, "{bad}");
        }
    }

    #[test]
    fn the_token_is_not_forwarded() {
        assert_eq!(without_token("a=1&t=5.abc&b=2"), "a=1&b=2");
        assert_eq!(without_token("t=5.abc"), "");
        assert_eq!(without_token("ta=1&t"), "ta=1");
    }

    proptest::proptest! {
        /// Whatever a visitor puts in the query, reading it never panics, and a token
        /// is found only unexpired with a MAC of 32 bytes; forwarding never carries it.
        #[test]
        fn any_query_is_read_safely(query in "[a-z0-9=&.tT%_-]{0,120}", now_s in 0i64..4_000_000_000) {
            if let Some(p) = Presented::find(Some(&query), now_s) {
                proptest::prop_assert!(p.expires_s > now_s);
                proptest::prop_assert_eq!(p.mac_bytes().map(|m| m.len()), Some(32));
            }
            let forwarded = without_token(&query);
            proptest::prop_assert!(forwarded.split('&').all(|pair| !pair.starts_with("t=") && pair != "t"));
        }
    }

    #[test]
    fn a_password_link_reads_its_cookie_and_never_a_token() {
        let route = RouteKey::new("s.example", "pass1").unwrap();
        let mac = "0f".repeat(32);
        let password = Access::Password {
            salt: "00".into(),
            hash: "00".into(),
            iterations: 1,
            key: "ab".into(),
        };
        let now = 1_800_000_000;
        let cookie = format!("theme=dark; hop_pass=1800000100.{mac}; x=y");
        let c = Challenge::of(&password, &route, None, Some(&cookie), now).unwrap();
        assert_eq!(c.key, vec![0xab]);
        assert_eq!(c.mac, vec![0x0f; 32]);
        assert_eq!(c.message, cookie_message(&route, 1_800_000_100));
        // Signed differently from a token: neither stands in for the other.
        let token = Presented {
            expires_s: 1_800_000_100,
            mac: &mac,
        };
        assert_ne!(c.message, token.message(&route));
        let query = format!("t=1800000100.{mac}");
        assert_eq!(
            Challenge::of(&password, &route, Some(&query), None, now),
            None
        );
        let signed = Access::Signed { key: "ab".into() };
        assert_eq!(
            Challenge::of(&signed, &route, None, Some(&cookie), now),
            None
        );
        // Expired, or only named like it: nothing to check.
        assert_eq!(
            Challenge::of(&password, &route, None, Some(&cookie), now + 100),
            None
        );
        for cookie in [
            format!("xhop_pass=1800000100.{mac}"),
            format!("hop_passx=1800000100.{mac}"),
        ] {
            assert_eq!(
                Challenge::of(&password, &route, None, Some(&cookie), now),
                None
            );
        }
    }

    #[test]
    fn the_record_form_is_compact() {
        let a = Access::Signed { key: "k".into() };
        assert_eq!(
            serde_json::to_string(&a).unwrap(),
            r#"{"signed":{"key":"k"}}"#
        );
        assert!(serde_json::from_str::<Access>(r#"{"password":{}}"#).is_err());
        let p = Access::Password {
            salt: "s".into(),
            hash: "h".into(),
            iterations: 100_000,
            key: "k".into(),
        };
        let json = serde_json::to_string(&p).unwrap();
        assert_eq!(
            json,
            r#"{"password":{"salt":"s","hash":"h","iterations":100000,"key":"k"}}"#
        );
        assert_eq!(serde_json::from_str::<Access>(&json).unwrap(), p);
    }
}

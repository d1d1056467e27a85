//! The worker sync contract: how the origin's publisher pushes KV writes to the edge
//! worker (`POST /_hop/sync`), and how the worker decides which to refuse.
//!
//! Every value the publisher writes carries a version: a link record its `v`, the
//! denylist snapshot its `v`, a domain's settings (`cfg:{domain}`) their `v`, a
//! domain's activation meta (`meta:activation:{domain}`) its `v`. The worker writes an item
//! only if it is newer than what KV holds under that key, and says which it refused and
//! why. The publisher's ordering (one leader, newest version per key) is the real fence;
//! this check keeps a late or replayed push from ever turning a key back.

use serde::{Deserialize, Serialize};

/// Where the worker accepts pushes.
pub const SYNC_PATH: &str = "/_hop/sync";
/// The most items one push may carry. Each costs the worker a KV read and a write, and
/// a Workers invocation may make 1,000 KV operations.
pub const MAX_SYNC_ITEMS: usize = 400;
/// The KV key of the denylist snapshot.
pub const DENY_KEY: &str = "deny";
/// What precedes a domain's name in the KV key of its activation meta.
pub const ACTIVATION_PREFIX: &str = "meta:activation:";

/// What precedes a route key in the KV key that says a code lived at the shortener its
/// domain moved from (`lg:{domain}/{code}`): only such a code is sent on there.
pub const LEGACY_PREFIX: &str = "lg:";

/// The KV key that marks `route`'s code as one of its domain's legacy codes.
pub fn legacy_key(route: &crate::RouteKey) -> String {
    format!("{LEGACY_PREFIX}{route}")
}

/// The value under a legacy code's key. A code is added once and never changed (the
/// fallback ends for the whole domain, by its settings), so its version is always
/// [`LegacyCode::VERSION`]; it is there for the sync contract, which versions every
/// value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LegacyCode {
    pub v: u64,
}

impl LegacyCode {
    pub const VERSION: u64 = 1;

    /// The value as KV stores it.
    pub fn json() -> String {
        format!("{{\"v\":{}}}", Self::VERSION)
    }
}

/// The KV key of `domain`'s activation meta: each domain numbers its generated codes
/// in a sequence of its own, so each has its own window.
pub fn activation_key(domain: &str) -> String {
    format!("{ACTIVATION_PREFIX}{domain}")
}

/// The domain of a normalized name `key` is about (`cfg:…`, `meta:activation:…`), if
/// the name is one.
fn normalized_domain<'a>(key: &'a str, prefix: &str) -> Option<&'a str> {
    let domain = key.strip_prefix(prefix)?;
    (crate::normalize_short_domain(domain).ok()? == domain).then_some(domain)
}

/// One KV write.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SyncItem {
    pub key: String,
    /// The value as stored (JSON text).
    pub value: String,
    /// The version `value` carries; must agree with it.
    pub version: u64,
    /// Unix seconds after which KV may drop the key (expired links, well after expiry).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expiration: Option<i64>,
}

/// The body of a push.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SyncBatch {
    pub items: Vec<SyncItem>,
}

/// Why one item was not written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Refusal {
    pub key: String,
    pub offered: u64,
    /// The version KV holds, when that is the reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held: Option<u64>,
    pub reason: String,
    /// The same item may succeed later (KV failed to read or write it); otherwise
    /// pushing the same bytes again cannot succeed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub retry: bool,
}

impl Refusal {
    /// A KV read or write of `item` that failed: worth pushing again.
    pub fn failed(item: &SyncItem, error: impl std::fmt::Display) -> Refusal {
        Refusal {
            key: item.key.clone(),
            offered: item.version,
            held: None,
            reason: format!("KV failed: {error}"),
            retry: true,
        }
    }
}

/// The answer to a push: the keys written and the items refused, in request order.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SyncReply {
    pub written: Vec<String>,
    pub refused: Vec<Refusal>,
}

/// The version a stored value carries, by the kind of its key; `None` for a key Hop does
/// not write or a value that does not parse.
pub fn version_of(key: &str, value: &str) -> Option<u64> {
    // Every value is parsed whole, as the edge will read it: a value that merely
    // carries a `v` (`{"v":9}`) would otherwise be written and make the link answer
    // 503, or a denylist unreadable.
    if let Some(route) = key.strip_prefix("l:") {
        crate::RouteKey::parse(route)?;
        let record = crate::EdgeRecord::from_json(value).ok()?;
        // A live link's target must be one the edge can redirect to.
        if record.status == crate::EdgeStatus::Active
            && crate::validate_target(&record.target).is_err()
        {
            return None;
        }
        Some(record.version)
    } else if key == DENY_KEY {
        serde_json::from_str::<crate::DenylistSnapshot>(value)
            .ok()
            .map(|d| d.v)
    } else if key.starts_with(ACTIVATION_PREFIX) {
        normalized_domain(key, ACTIVATION_PREFIX)?;
        crate::activation::ActivationMeta::from_json(value)
            .ok()
            .map(|m| m.version())
    } else if let Some(route) = key.strip_prefix(LEGACY_PREFIX) {
        crate::RouteKey::parse(route)?;
        serde_json::from_str::<LegacyCode>(value).ok().map(|c| c.v)
    } else if key.starts_with("cfg:") {
        normalized_domain(key, "cfg:")?;
        let config = crate::DomainConfig::from_json(value).ok()?;
        // Every page a domain sends visitors to must be one the edge can redirect to.
        let s = &config.settings;
        for url in [&s.not_found_url, &s.legacy_url, &s.root_url, &s.expired_url]
            .into_iter()
            .flatten()
        {
            crate::validate_target(url).ok()?;
        }
        Some(config.v)
    } else {
        None
    }
}

/// What the worker does with `item` when KV holds `held` (the stored value, if any).
pub fn judge(item: &SyncItem, held: Option<&str>) -> Result<(), Refusal> {
    let refuse = |held: Option<u64>, reason: &str| Refusal {
        key: item.key.clone(),
        offered: item.version,
        held,
        reason: reason.to_owned(),
        retry: false,
    };
    match version_of(&item.key, &item.value) {
        None => {
            return Err(refuse(
                None,
                "not a key Hop writes, or a value that does not parse",
            ))
        }
        Some(v) if v != item.version => {
            return Err(refuse(
                None,
                "the value's own version differs from `version`",
            ))
        }
        Some(_) => {}
    }
    // A held value that does not parse is corrupt: replacing it repairs it.
    match held.and_then(|h| version_of(&item.key, h)) {
        Some(held) if held >= item.version => {
            Err(refuse(Some(held), "KV holds this version or a newer one"))
        }
        _ => Ok(()),
    }
}

/// The shortest token either side accepts (`openssl rand -hex 16` gives 32 characters).
pub const MIN_TOKEN_BYTES: usize = 16;

/// Compares two secrets in time that depends on their lengths only, not on where they
/// first differ.
pub fn tokens_match(given: &str, expected: &str) -> bool {
    use subtle::ConstantTimeEq;
    // `ct_eq` of slices of different lengths is false, in time of the lengths alone.
    !expected.is_empty() && bool::from(given.as_bytes().ct_eq(expected.as_bytes()))
}

/// The tokens a side that checks them accepts: one, or several separated by commas
/// while a token is rotated (the new and the old one, until every sender has the new).
pub fn accepted_tokens(accepted: &str) -> impl Iterator<Item = &str> {
    accepted.split(',').map(str::trim).filter(|t| !t.is_empty())
}

/// Whether `given` is one of the [`accepted_tokens`]; every one is compared, each in
/// constant time, so the answer's time does not say which matched.
pub fn token_accepted(given: &str, accepted: &str) -> bool {
    accepted_tokens(accepted).fold(false, |found, t| found | tokens_match(given, t))
}

/// Whether every accepted token is long enough (and there is one): a list with a
/// guessable token in it is as good as that token.
pub fn tokens_long_enough(accepted: &str) -> bool {
    let mut any = false;
    for t in accepted_tokens(accepted) {
        if t.len() < MIN_TOKEN_BYTES {
            return false;
        }
        any = true;
    }
    any
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(key: &str, value: &str, version: u64) -> SyncItem {
        SyncItem {
            key: key.into(),
            value: value.into(),
            version,
            expiration: None,
        }
    }

    const RECORD_V2: &str =
        r#"{"t":"https://e.example/","s":"active","r":302,"x":null,"v":2,"q":false}"#;
    const RECORD_V3: &str =
        r#"{"t":"https://e.example/b","s":"active","r":302,"x":null,"v":3,"q":false}"#;

    #[test]
    fn each_kind_of_key_has_its_version() {
        assert_eq!(version_of("l:s.example/abc", RECORD_V2), Some(2));
        assert_eq!(
            version_of("deny", r#"{"v":7,"codes":[],"hosts":[]}"#),
            Some(7)
        );
        let meta = r#"{"low":0,"high":20000,"headroom":10000,"at":1,"v":5}"#;
        assert_eq!(version_of(&activation_key("s.example"), meta), Some(5));
        // One meta per domain: the shared key of old, or a name not normalized, is none.
        assert_eq!(version_of("meta:activation", meta), None);
        assert_eq!(version_of("meta:activation:S.example", meta), None);
        assert_eq!(version_of("other", RECORD_V2), None);
        assert_eq!(version_of("l:s.example/abc", "not json"), None);
        // A legacy code: a route and a bare version, nothing else.
        let route = crate::RouteKey::new("s.example", "Spring24").unwrap();
        assert_eq!(legacy_key(&route), "lg:s.example/Spring24");
        assert_eq!(
            version_of(&legacy_key(&route), &LegacyCode::json()),
            Some(1)
        );
        assert_eq!(version_of("lg:s.example", &LegacyCode::json()), None);
        assert_eq!(version_of("lg:s.example/abc", RECORD_V2), None);
    }

    #[test]
    fn only_a_newer_version_is_written() {
        let key = "l:s.example/abc";
        assert_eq!(judge(&item(key, RECORD_V2, 2), None), Ok(()));
        assert_eq!(judge(&item(key, RECORD_V3, 3), Some(RECORD_V2)), Ok(()));
        let older = judge(&item(key, RECORD_V2, 2), Some(RECORD_V3)).unwrap_err();
        assert_eq!((older.held, older.offered), (Some(3), 2));
        let same = judge(&item(key, RECORD_V3, 3), Some(RECORD_V3)).unwrap_err();
        assert_eq!(same.held, Some(3));
        // A corrupt held value is replaced.
        assert_eq!(judge(&item(key, RECORD_V2, 2), Some("garbage")), Ok(()));
    }

    #[test]
    fn an_item_must_carry_the_version_it_claims_and_a_known_key() {
        assert!(judge(&item("l:s.example/abc", RECORD_V2, 9), None).is_err());
        assert!(judge(&item("elsewhere", RECORD_V2, 2), None).is_err());
        // Only values the edge can serve: a bare version, a record whose live target is
        // not a URL, a key that is not a route, a denylist of the wrong shape.
        assert!(judge(&item("l:s.example/abc", r#"{"v":9}"#, 9), None).is_err());
        let bad_target = r#"{"t":"not a url","s":"active","r":302,"v":2}"#;
        assert!(judge(&item("l:s.example/abc", bad_target, 2), None).is_err());
        let tombstone = r#"{"t":"","s":"deleted","r":302,"v":2}"#;
        assert_eq!(judge(&item("l:s.example/abc", tombstone, 2), None), Ok(()));
        assert!(judge(&item("l:no-slash", RECORD_V2, 2), None).is_err());
        assert!(judge(&item("deny", r#"{"v":3,"codes":"x"}"#, 3), None).is_err());
        // A domain's settings: a version, a normalized name, pages the edge can send to.
        assert_eq!(judge(&item("cfg:s.example", r#"{"v":1}"#, 1), None), Ok(()));
        let newer = r#"{"v":2,"settings":{"status":"disabled"}}"#;
        assert_eq!(
            judge(&item("cfg:s.example", newer, 2), Some(r#"{"v":1}"#)),
            Ok(())
        );
        assert!(judge(&item("cfg:s.example", r#"{"v":1}"#, 1), Some(newer)).is_err());
        assert!(judge(&item("cfg:S.Example", r#"{"v":1}"#, 1), None).is_err());
        assert!(judge(&item("cfg:s.example", r#"{"settings":{}}"#, 0), None).is_err());
        let bad_page = r#"{"v":1,"settings":{"not_found_url":"javascript:alert(1)"}}"#;
        assert!(judge(&item("cfg:s.example", bad_page, 1), None).is_err());
        assert!(judge(&item("l:s.example/abc", "{}", 0), None).is_err());
    }

    #[test]
    fn a_rotation_accepts_each_listed_token_and_nothing_else() {
        let both = "new-token-0123456789, old-token-0123456789";
        assert!(token_accepted("new-token-0123456789", both));
        assert!(token_accepted("old-token-0123456789", both));
        assert!(!token_accepted(
            "new-token-0123456789, old-token-0123456789",
            both
        ));
        assert!(!token_accepted("", both));
        assert!(!token_accepted("", ""));
        assert!(!token_accepted("", ","));
        assert!(tokens_long_enough(both));
        assert!(!tokens_long_enough("new-token-0123456789,short"));
        assert!(!tokens_long_enough(" , "));
    }

    #[test]
    fn tokens_match_exactly_and_never_when_empty() {
        assert!(tokens_match("s3cret-token", "s3cret-token"));
        assert!(!tokens_match("s3cret-tokeN", "s3cret-token"));
        assert!(!tokens_match("s3cret", "s3cret-token"));
        assert!(!tokens_match("", ""));
    }
}

//! Short domains: normalization and per-domain settings; route keys, which are
//! [`crate::route`]'s, are re-exported here.

use crate::brand::Brand;
use crate::codes::CodeSpace;
use crate::record::RedirectStatus;
pub use crate::route::RouteKey;
use serde::{Deserialize, Serialize};
use std::borrow::Cow;

/// Why a host name cannot be a short domain.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DomainError {
    #[error("a domain is required")]
    Empty,
    #[error("{0:?} is not a valid host name")]
    Invalid(String),
    #[error("{0:?} cannot be a short domain: {1}")]
    NotAShortDomain(String, &'static str),
}

/// The longest domain name DNS allows, in bytes.
pub const MAX_DOMAIN_BYTES: usize = 253;

/// Normalizes a short domain (see [`normalize_domain`]) and checks that it is a DNS
/// name a shortener can serve: at most 253 bytes of letter-digit-hyphen labels of 1 to
/// 63 each, not an IP address. Every KV key built from it then fits KV's 512 bytes.
pub fn normalize_short_domain(input: &str) -> Result<String, DomainError> {
    let host = normalize_domain(input)?;
    if is_address(&host) {
        return Err(DomainError::NotAShortDomain(host, "an IP address"));
    }
    match short_domain_problem(&host) {
        Some(why) => Err(DomainError::NotAShortDomain(host, why)),
        None => Ok(host),
    }
}

fn is_address(host: &str) -> bool {
    host.starts_with('[') || host.parse::<std::net::Ipv4Addr>().is_ok()
}

/// Why a normalized host that is not an address cannot be a short domain, if it cannot.
fn short_domain_problem(host: &str) -> Option<&'static str> {
    if host.len() > MAX_DOMAIN_BYTES {
        return Some("longer than 253 bytes");
    }
    for label in host.split('.') {
        if label.is_empty() || label.len() > 63 {
            return Some("each label is 1 to 63 characters");
        }
        if label.starts_with('-')
            || label.ends_with('-')
            || !label
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        {
            return Some("labels are letters, digits and inner hyphens");
        }
    }
    None
}

/// What a visitor's `Host` header names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VisitorHost {
    /// A name that could be a short domain, normalized.
    Domain(String),
    /// An IP address (a health checker, a curl at the server's address).
    Address,
    /// Not a host name a shortener could serve (too long, bad characters, a path).
    Malformed,
}

/// Reads a `Host` header as the redirect needs it, refusing anything longer than a DNS
/// name and a port before parsing it.
pub fn visitor_host(input: &str) -> VisitorHost {
    if input.len() > MAX_DOMAIN_BYTES + ":65535".len() {
        return VisitorHost::Malformed;
    }
    let Ok(host) = normalize_domain(input) else {
        return VisitorHost::Malformed;
    };
    if is_address(&host) {
        return VisitorHost::Address;
    }
    match short_domain_problem(&host) {
        Some(_) => VisitorHost::Malformed,
        None => VisitorHost::Domain(host),
    }
}

/// Normalizes a host as written by a person or sent in a `Host` header: lowercase, no
/// port, no trailing dot, international names in punycode (`bücher.example` becomes
/// `xn--bcher-kva.example`). IP literals are kept as the URL standard writes them.
pub fn normalize_domain(input: &str) -> Result<String, DomainError> {
    // Nearly every `Host` header is already normal; the parser costs a redirect more
    // than the rest of its decision.
    if let Some(host) = already_normal(input) {
        return Ok(host.to_owned());
    }
    let trimmed = input.trim();
    if trimmed.is_empty() {
        return Err(DomainError::Empty);
    }
    let invalid = || DomainError::Invalid(trimmed.to_owned());
    // Let the URL parser do IDNA, percent-decoding and IP normalization, exactly as it
    // does for target URLs; reject anything that brings more than a host and a port.
    let url = url::Url::parse(&format!("http://{trimmed}/")).map_err(|_| invalid())?;
    if url.path() != "/" || url.query().is_some() || !url.username().is_empty() {
        return Err(invalid());
    }
    let host = url.host_str().ok_or_else(invalid)?;
    let host = host.strip_suffix('.').unwrap_or(host);
    if host.is_empty() || host.contains('/') {
        return Err(invalid());
    }
    Ok(host.to_owned())
}

/// The host of `input` when the URL parser would return it unchanged: lowercase ASCII
/// labels of letters, digits and inner hyphens, no punycode (which the parser checks),
/// a last label starting with a letter (so never an IPv4 number), and at most a valid
/// port. `None` sends the input through the parser.
fn already_normal(input: &str) -> Option<&str> {
    let (host, port) = match input.split_once(':') {
        Some((host, port)) => (host, Some(port)),
        None => (input, None),
    };
    if let Some(port) = port {
        let digits =
            !port.is_empty() && port.len() <= 5 && port.bytes().all(|b| b.is_ascii_digit());
        if !digits || port.parse::<u32>().ok()? > 65_535 {
            return None;
        }
    }
    let host = host.strip_suffix('.').unwrap_or(host);
    let mut last_starts_with_letter = false;
    for label in host.split('.') {
        let plain = !label.is_empty()
            && label.len() <= 63
            && !label.starts_with('-')
            && !label.ends_with('-')
            && !label.starts_with("xn--")
            && label
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
        if !plain {
            return None;
        }
        last_starts_with_letter = label.as_bytes()[0].is_ascii_lowercase();
    }
    last_starts_with_letter.then_some(host)
}

/// Whether a domain serves. A disabled one answers 404 everywhere and takes no new
/// links; its links are kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DomainStatus {
    #[default]
    Active,
    Disabled,
}

impl DomainStatus {
    /// The name stored and shown.
    pub fn as_str(self) -> &'static str {
        match self {
            DomainStatus::Active => "active",
            DomainStatus::Disabled => "disabled",
        }
    }

    /// The status a stored or requested name means.
    pub fn parse(name: &str) -> Option<DomainStatus> {
        match name {
            "active" => Some(DomainStatus::Active),
            "disabled" => Some(DomainStatus::Disabled),
            _ => None,
        }
    }
}

/// A domain's settings, as the origin stores them and as the edge reads them from
/// `cfg:{domain}`: everything a visit's decision needs of its domain. Every field has a
/// default, so a domain nobody configured works, and unknown fields are ignored, so an
/// older edge reads what a newer origin writes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct DomainSettings {
    /// Alphabet and length of generated codes.
    pub codes: CodeSpace,
    /// Codes match without regard to case (the alphabet should then be base36).
    pub case_insensitive: bool,
    /// Links of this domain forward the visitor's query unless they say otherwise.
    pub forward_query: bool,
    /// The redirect status of links that do not choose one.
    pub default_redirect: RedirectStatus,
    /// Upper bound of the `max-age` a visitor's browser may keep a redirect.
    pub max_age_s: u32,
    pub status: DomainStatus,
    /// Where a visitor of a code with no link goes (302), instead of a 404.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_found_url: Option<String>,
    /// The shortener this domain moved from (`https://bit.ly`, or a base with a path):
    /// a code with no link that is known to have lived there (the domain's list of
    /// legacy codes) goes to the same code there (302, never stored), ahead of
    /// `not_found_url`, so links not imported yet keep working while they are moved.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub legacy_url: Option<String>,
    /// Unix seconds when the fallback to `legacy_url` stops by itself. Without an end
    /// date there is no fallback: a forgotten one must not send visitors through the
    /// domain for ever (docs/migrating.md).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub legacy_until: Option<i64>,
    /// Where a visitor of `/` goes (302), instead of a 404.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub root_url: Option<String>,
    /// Where a visitor of an expired link goes (302), instead of a 410.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expired_url: Option<String>,
    /// Every link of the domain shows its interstitial (the destination and a link to
    /// continue) instead of redirecting at once: a domain for untrusted targets.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub interstitial: bool,
    /// How the pages the domain's visitors may get look: its name and colour, for a
    /// brand domain; Hop's own look without.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub brand: Option<Brand>,
}

/// One minute. This is the longest a ban, a delete or an edit takes to reach a visitor
/// whose browser already holds the redirect; a repeat click after it costs one round
/// trip, and is counted again.
pub const DEFAULT_MAX_AGE_S: u32 = 60;

impl Default for DomainSettings {
    fn default() -> Self {
        DomainSettings {
            codes: CodeSpace::default(),
            case_insensitive: false,
            forward_query: false,
            default_redirect: RedirectStatus::Found,
            max_age_s: DEFAULT_MAX_AGE_S,
            status: DomainStatus::Active,
            not_found_url: None,
            legacy_url: None,
            legacy_until: None,
            root_url: None,
            expired_url: None,
            interstitial: false,
            brand: None,
        }
    }
}

/// What the edge holds under `cfg:{domain}`: the domain's settings and the version
/// that orders its copies (a copy is never replaced by an older one). Nested rather
/// than flattened: serde's `flatten` buffers every field through its generic content
/// type, which cost the worker 40 KB of wasm.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DomainConfig {
    pub v: u64,
    #[serde(default)]
    pub settings: DomainSettings,
}

impl DomainConfig {
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    pub fn from_json(json: &str) -> Result<DomainConfig, serde_json::Error> {
        serde_json::from_str(json)
    }
}

/// The KV key of a domain's settings: `cfg:{domain}`.
pub fn config_key(domain: &str) -> String {
    format!("cfg:{domain}")
}

impl DomainSettings {
    /// The form in which a code is stored and looked up: lowercase on case-insensitive
    /// domains, as given elsewhere.
    pub fn canonical_code<'a>(&self, code: &'a str) -> Cow<'a, str> {
        if self.case_insensitive && code.bytes().any(|b| b.is_ascii_uppercase()) {
            Cow::Owned(code.to_ascii_lowercase())
        } else {
            Cow::Borrowed(code)
        }
    }

    /// The old shortener's base while the fallback to it runs at `now_s` (Unix
    /// seconds): `legacy_url` before `legacy_until`; `None` without either, or after.
    pub fn legacy_base(&self, now_s: i64) -> Option<&str> {
        let until = self.legacy_until?;
        self.legacy_url.as_deref().filter(|_| now_s < until)
    }
}

#[cfg(test)]
mod short_domain_tests {
    use super::*;

    #[test]
    fn short_domains_are_dns_names_that_fit_kv_keys() {
        assert_eq!(normalize_short_domain("S.Example.").unwrap(), "s.example");
        assert_eq!(
            normalize_short_domain("bücher.example").unwrap(),
            "xn--bcher-kva.example"
        );
        let longest = format!(
            "{}.{}.{}.{}",
            "a".repeat(63),
            "b".repeat(63),
            "c".repeat(63),
            "d".repeat(61)
        );
        assert_eq!(longest.len(), 253);
        assert!(normalize_short_domain(&longest).is_ok());
        assert!(normalize_short_domain(&format!("{longest}x")).is_err());
        assert!(normalize_short_domain(&format!("{}.example", "a".repeat(64))).is_err());
        for bad in ["127.0.0.1", "[::1]", "a_b.example", "-a.example"] {
            assert!(normalize_short_domain(bad).is_err(), "{bad}");
        }
        // The longest route key's KV key fits KV's 512 bytes.
        assert!(format!("l:{longest}/{}", "x".repeat(64)).len() <= 512);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_visitors_host_is_read_without_trusting_it() {
        assert_eq!(
            visitor_host("S.Example:8080"),
            VisitorHost::Domain("s.example".into())
        );
        assert_eq!(
            visitor_host("s.example."),
            VisitorHost::Domain("s.example".into())
        );
        for address in ["127.0.0.1:3000", "[::1]:80", "0x7f.1", "2852039166"] {
            assert_eq!(visitor_host(address), VisitorHost::Address, "{address}");
        }
        let labels = vec!["a".repeat(63); 5].join(".");
        for bad in [
            labels.as_str(),
            "a_b.example",
            "s.example/path",
            "",
            "-a.example",
            &"a.".repeat(100_000),
        ] {
            assert_eq!(visitor_host(bad), VisitorHost::Malformed, "{bad:.40}");
        }
    }
    use crate::alphabet::Alphabet;
    use proptest::prelude::*;

    #[test]
    fn normalizes_case_port_trailing_dot_and_idna() {
        assert_eq!(normalize_domain("S.Example").unwrap(), "s.example");
        assert_eq!(normalize_domain("s.example:8787").unwrap(), "s.example");
        assert_eq!(normalize_domain("s.example.").unwrap(), "s.example");
        assert_eq!(normalize_domain(" localhost ").unwrap(), "localhost");
        assert_eq!(
            normalize_domain("Bücher.example").unwrap(),
            "xn--bcher-kva.example"
        );
        assert_eq!(normalize_domain("127.0.0.1:3000").unwrap(), "127.0.0.1");
        assert_eq!(normalize_domain("[::1]:8787").unwrap(), "[::1]");
    }

    proptest! {
        /// The shortcut for hosts already in normal form answers as the parser does.
        #[test]
        fn the_shortcut_agrees_with_the_parser(input in "[a-z0-9.-]{1,24}(:[0-9]{0,6})?\\.?") {
            if let Some(fast) = already_normal(&input) {
                let trimmed = input.trim();
                let url = url::Url::parse(&format!("http://{trimmed}/"));
                prop_assert!(url.is_ok(), "{input:?} parsed by the shortcut only");
                let url = url.unwrap();
                let host = url.host_str().unwrap_or_default();
                prop_assert_eq!(fast, host.strip_suffix('.').unwrap_or(host));
            }
        }
    }

    #[test]
    fn the_shortcut_leaves_anything_unusual_to_the_parser() {
        for unusual in [
            "S.example",
            "1.2.3.4",
            "a.0x1f",
            "xn--bcher-kva.example",
            "-a.example",
            "a..b",
            "s.example:",
            "s.example:99999",
            " s.example",
            "[::1]",
        ] {
            assert_eq!(already_normal(unusual), None, "{unusual}");
        }
        assert_eq!(already_normal("s.example:8787"), Some("s.example"));
        assert_eq!(already_normal("go.s-1.example."), Some("go.s-1.example"));
    }

    #[test]
    fn refuses_what_is_not_a_host() {
        assert_eq!(normalize_domain(""), Err(DomainError::Empty));
        for bad in [
            "s.example/path",
            "user@s.example",
            "s.example?q",
            "a b",
            "s.example:99999",
            ".",
        ] {
            assert!(normalize_domain(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn settings_default_and_parse_from_partial_or_newer_json() {
        let s: DomainSettings = serde_json::from_str(
            r#"{"codes":{"alphabet":"base36","length":7},"case_insensitive":true,"later":1}"#,
        )
        .unwrap();
        assert_eq!(s.codes, CodeSpace::new(Alphabet::Base36, 7).unwrap());
        assert!(s.case_insensitive);
        assert_eq!(s.max_age_s, DEFAULT_MAX_AGE_S);
        assert_eq!(s.canonical_code("AbC1234"), "abc1234");
        assert_eq!(
            DomainSettings::default().canonical_code("AbC1234"),
            "AbC1234"
        );
        let too_long = r#"{"codes":{"alphabet":"base62","length":11}}"#;
        assert!(serde_json::from_str::<DomainSettings>(too_long).is_err());
    }

    #[test]
    fn a_config_reads_back_with_its_version_and_every_setting() {
        let config = DomainConfig {
            v: 4,
            settings: DomainSettings {
                status: DomainStatus::Disabled,
                not_found_url: Some("https://www.acme.example/".into()),
                max_age_s: 300,
                ..DomainSettings::default()
            },
        };
        let json = config.to_json();
        assert!(json.contains(r#""status":"disabled""#), "{json}");
        assert!(
            !json.contains("root_url"),
            "unset URLs are left out: {json}"
        );
        assert_eq!(DomainConfig::from_json(&json).unwrap(), config);
        // A config without a version is not one.
        assert!(DomainConfig::from_json(r#"{"settings":{"max_age_s":5}}"#).is_err());
        assert_eq!(config_key("go.example"), "cfg:go.example");
        for s in [DomainStatus::Active, DomainStatus::Disabled] {
            assert_eq!(DomainStatus::parse(s.as_str()), Some(s));
        }
    }

    proptest! {
        #[test]
        fn normalization_is_idempotent(host in "[a-zA-Z0-9]{1,10}(\\.[a-zA-Z0-9-]{1,10}){0,3}\\.?(:[0-9]{1,4})?") {
            if let Ok(once) = normalize_domain(&host) {
                prop_assert_eq!(normalize_domain(&once).unwrap(), once.clone());
                prop_assert!(!once.ends_with('.') && !once.contains(':'));
                prop_assert_eq!(once.to_ascii_lowercase(), once);
            }
        }
    }
}

#[cfg(test)]
mod brand_config_tests {
    use super::*;

    #[test]
    fn a_brand_travels_in_the_domains_config_and_an_older_config_has_none() {
        let settings = DomainSettings {
            brand: Some(Brand::check("Acme", "#8a1c1c").expect("a brand")),
            ..DomainSettings::default()
        };
        let json = DomainConfig { v: 3, settings }.to_json();
        assert!(json.contains(r##""brand":["Acme","#8a1c1c"]"##), "{json}");
        let back = DomainConfig::from_json(&json).expect("read back");
        assert_eq!(back.settings.brand.map(|b| b.name), Some("Acme".to_owned()));
        // What an origin wrote before brands: no field, Hop's look.
        let older = DomainConfig::from_json(r#"{"v":2,"settings":{"interstitial":true}}"#)
            .expect("an older config");
        assert_eq!(older.settings.brand, None);
        // A plain domain's config says nothing of a brand.
        assert!(!DomainConfig {
            v: 1,
            settings: DomainSettings::default()
        }
        .to_json()
        .contains("brand"));
    }
}

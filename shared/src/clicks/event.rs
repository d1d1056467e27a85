//! The click event: what a visit reports about itself, coarse by construction
//! ([`Visitor::describe`]). Below the tally, which counts alike events, and the batch
//! ([`super::ClickBatch`]), which carries tallies and events.

use crate::agent::{classify_user_agent, Device};
use crate::route::RouteKey;
use crate::scanners::Scanner;
use crate::split::MAX_VARIANTS;
use serde::{Deserialize, Serialize};

/// The longest event id accepted (a UUID is 36 characters).
pub const MAX_EVENT_ID_LEN: usize = 64;
/// The longest referrer host kept (a DNS name's limit).
const MAX_HOST_LEN: usize = 253;

/// The coarse facts about who visited: all that is ever kept of a visitor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Visitor {
    /// ISO 3166-1 alpha-2, uppercase (Cloudflare's `cf.country`; `T1` is Tor).
    pub country: Option<String>,
    /// The referring page's host, lowercased, without `www.`.
    pub referrer_host: Option<String>,
    pub device: Device,
    pub bot: bool,
    /// Why the visit is a scanner's (and so a bot's), when it is one.
    pub scanner: Option<Scanner>,
}

impl Visitor {
    /// Reduces what a request says about its sender to the kept dimensions.
    pub fn describe(
        user_agent: Option<&str>,
        referer: Option<&str>,
        country: Option<&str>,
    ) -> Self {
        let (device, bot) = classify_user_agent(user_agent.unwrap_or_default());
        Visitor {
            country: country.and_then(country_code),
            referrer_host: referer.and_then(referrer_host),
            device,
            bot,
            scanner: None,
        }
    }

    /// The visitor, counted as a bot when `scanner` says it is a scanner (a network
    /// that serves no people, a prefetch) and its user agent did not already say it
    /// was a bot: the stats' `scanner` dimension counts only what it alone found.
    pub fn screened(self, scanner: Option<Scanner>) -> Self {
        match scanner {
            Some(s) if !self.bot => Visitor {
                bot: true,
                scanner: Some(s),
                ..self
            },
            _ => self,
        }
    }
}

/// One click, as the edge sends it and the origin ingests it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct ClickEvent {
    /// Unique per visit, made where the visit was answered; ingestion counts an id once.
    pub event_id: String,
    /// The route key, `domain/code`.
    pub link: String,
    /// The version of the record the answer came from; absent when there was none (a
    /// banned code whose record is gone).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(maximum = 9007199254740991.0))]
    pub version: Option<u64>,
    /// When the visit was answered, Unix milliseconds.
    #[cfg_attr(feature = "openapi", schema(minimum = -9007199254740991.0, maximum = 9007199254740991.0))]
    pub at: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub country: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub referrer_host: Option<String>,
    pub device: Device,
    pub bot: bool,
    /// Why the visit was counted as a bot's though its user agent is a browser's
    /// (docs/scanners.md); absent for every other visit. Only with `bot`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scanner: Option<Scanner>,
    /// The status the visitor got.
    #[cfg_attr(feature = "openapi", schema(maximum = 65535))]
    pub status: u16,
    /// The split variant the visit was sent to (its index), when the link has a split.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(maximum = 255))]
    pub variant: Option<u8>,
}

impl ClickEvent {
    /// The event for a visit to `link` answered with `status` at `at` (Unix ms).
    pub fn new(
        event_id: String,
        link: String,
        version: Option<u64>,
        at: i64,
        status: u16,
        visitor: Visitor,
    ) -> Self {
        ClickEvent {
            event_id,
            link,
            version,
            at,
            country: visitor.country,
            referrer_host: visitor.referrer_host,
            device: visitor.device,
            bot: visitor.bot,
            scanner: visitor.scanner,
            status,
            variant: None,
        }
    }

    /// The event, saying which split variant the visit got.
    pub fn with_variant(self, variant: Option<u8>) -> Self {
        ClickEvent { variant, ..self }
    }

    /// Why this event cannot be counted, if it cannot. A sender may be out of date or
    /// hostile: every field is checked against what `describe` can produce.
    pub fn problem(&self) -> Option<&'static str> {
        let id_ok = !self.event_id.is_empty()
            && self.event_id.len() <= MAX_EVENT_ID_LEN
            && self
                .event_id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        if !id_ok {
            return Some("event_id must be 1 to 64 letters, digits, '-' or '_'");
        }
        if RouteKey::parse(&self.link).is_none() {
            return Some("link must be a route key, domain/code");
        }
        if !(100..=599).contains(&self.status) {
            return Some("status must be an HTTP status");
        }
        if self
            .country
            .as_deref()
            .is_some_and(|c| country_code(c).as_deref() != Some(c))
        {
            return Some("country must be two uppercase letters or digits");
        }
        if self.referrer_host.as_deref().is_some_and(|h| {
            h.is_empty()
                || h.len() > MAX_HOST_LEN
                || !h
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"-._[]:".contains(&b))
        }) {
            return Some("referrer_host must be a lowercase host name");
        }
        if self.scanner.is_some() && !self.bot {
            return Some("scanner is only for a visit counted as a bot's");
        }
        if self.variant.is_some_and(|v| usize::from(v) >= MAX_VARIANTS) {
            return Some("variant must be the index of a split's variant");
        }
        None
    }
}

/// `cf.country` (or `CF-IPCountry`) when it is a code: two ASCII letters or digits
/// (`T1` is Tor, `XX` unknown), uppercased.
pub fn country_code(raw: &str) -> Option<String> {
    let raw = raw.trim();
    (raw.len() == 2 && raw.bytes().all(|b| b.is_ascii_alphanumeric()))
        .then(|| raw.to_ascii_uppercase())
}

/// The most of a `Referer` that is ever read: a scheme, `://`, a DNS name and a port
/// fit. A reduction that reads no further can be remembered under this prefix.
pub const MAX_REFERRER_READ: usize = 320;

/// The part of a `Referer` that names its site: up to the end of its authority. `None`
/// when that is longer than [`MAX_REFERRER_READ`] (no valid host is that long).
pub fn referrer_site(referer: &str) -> Option<&str> {
    let referer = referer.trim_start();
    // Bytes: what is searched for is ASCII, so each match is at a character boundary;
    // a substring searcher cost recording a click more than the rest of this function.
    // Nothing past the bound is read (a header of kilobytes is not scanned to its end):
    // a site that reaches it is too long whatever follows.
    let bytes = referer.as_bytes();
    let within = &bytes[..bytes.len().min(MAX_REFERRER_READ + 1)];
    let mut from = 0;
    let after_scheme = loop {
        let colon = from + within[from..].iter().position(|&b| b == b':')?;
        if bytes[colon + 1..].starts_with(b"//") {
            break colon + 3;
        }
        from = colon + 1;
    };
    let end = match within
        .get(after_scheme..)?
        .iter()
        .position(|b| matches!(b, b'/' | b'?' | b'#'))
    {
        Some(i) => after_scheme + i,
        None if bytes.len() <= MAX_REFERRER_READ => bytes.len(),
        None => return None,
    };
    Some(referer[..end].trim_end())
}

/// The host of a `Referer` header, and nothing else of it: lowercased, without a leading
/// `www.`, for http(s) referrers only (an app's `android-app://…` names no site). Only
/// [`referrer_site`] is read.
pub fn referrer_host(referer: &str) -> Option<String> {
    let url = url::Url::parse(referrer_site(referer)?).ok()?;
    if !matches!(url.scheme(), "http" | "https") {
        return None;
    }
    let host = url.host_str()?.trim_end_matches('.');
    let host = host.strip_prefix("www.").unwrap_or(host);
    (!host.is_empty() && host.len() <= MAX_HOST_LEN).then(|| host.to_ascii_lowercase())
}

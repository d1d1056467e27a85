//! The full short URL of a link, as visitors are given it: `https://{domain}/{code}`,
//! unless the operator serves a domain otherwise (`--short-url-base`).
//!
//! A domain's scheme and port are facts about where it is served, not about the link:
//! on Cloudflare every short domain answers on HTTPS, while `scripts/dev` serves
//! `localhost` through `wrangler dev` on `http://localhost:8787`. So the base is the
//! origin's configuration, never stored with a link; changing it changes every
//! `short_url` the API gives out from then on, and none that was stored.

use std::fmt;
use std::str::FromStr;

/// One `--short-url-base` entry: `DOMAIN=SCHEME://HOST[:PORT]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShortUrlBase {
    /// The normalized short domain it applies to.
    pub domain: String,
    /// Scheme, host and port, without a trailing slash.
    pub base: String,
}

impl FromStr for ShortUrlBase {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let s = s.trim();
        let Some((domain, base)) = s.split_once('=') else {
            return Err(format!(
                "{s:?}: give DOMAIN=BASE, e.g. localhost=http://localhost:8787"
            ));
        };
        let domain = shared::normalize_short_domain(domain).map_err(|e| format!("{s:?}: {e}"))?;
        let url = url::Url::parse(base.trim()).map_err(|e| format!("{s:?}: {e}"))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(format!("{s:?}: the base is an http or https URL"));
        }
        if url.path() != "/"
            || url.query().is_some()
            || url.fragment().is_some()
            || !url.username().is_empty()
            || url.password().is_some()
        {
            return Err(format!(
                "{s:?}: the base is a scheme, a host and a port only (codes are paths of their own)"
            ));
        }
        let host = url.host_str().unwrap_or_default();
        let base = match url.port() {
            Some(port) => format!("{}://{host}:{port}", url.scheme()),
            None => format!("{}://{host}", url.scheme()),
        };
        Ok(ShortUrlBase { domain, base })
    }
}

impl fmt::Display for ShortUrlBase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}={}", self.domain, self.base)
    }
}

/// How the origin writes short URLs: `https://{domain}` unless a base says otherwise.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ShortUrls {
    bases: Vec<ShortUrlBase>,
}

impl ShortUrls {
    /// With `bases` (the last entry for a domain wins, as a later flag would).
    pub fn new(bases: &[ShortUrlBase]) -> ShortUrls {
        let mut kept: Vec<ShortUrlBase> = Vec::new();
        for b in bases.iter().rev() {
            if !kept.iter().any(|k| k.domain == b.domain) {
                kept.push(b.clone());
            }
        }
        ShortUrls { bases: kept }
    }

    /// The short URL of `code` on `domain` (a normalized domain and a stored code, both
    /// URL-safe as they are).
    pub fn of(&self, domain: &str, code: &str) -> String {
        match self.bases.iter().find(|b| b.domain == domain) {
            Some(b) => format!("{}/{code}", b.base),
            None => format!("https://{domain}/{code}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn https_unless_the_domain_is_served_otherwise() {
        let local: ShortUrlBase = "localhost=http://localhost:8787/".parse().unwrap();
        assert_eq!(local.base, "http://localhost:8787");
        let default_port: ShortUrlBase = "Go.Example=https://go.example:443".parse().unwrap();
        assert_eq!(default_port.to_string(), "go.example=https://go.example");
        let urls = ShortUrls::new(&[local, default_port]);
        assert_eq!(urls.of("localhost", "abc"), "http://localhost:8787/abc");
        assert_eq!(urls.of("go.example", "x1"), "https://go.example/x1");
        assert_eq!(urls.of("other.example", "Q"), "https://other.example/Q");
    }

    #[test]
    fn a_later_base_for_a_domain_wins() {
        let urls = ShortUrls::new(&[
            "a.example=http://a.example".parse().unwrap(),
            "a.example=http://a.example:8080".parse().unwrap(),
        ]);
        assert_eq!(urls.of("a.example", "c"), "http://a.example:8080/c");
    }

    #[test]
    fn a_base_is_a_scheme_a_host_and_a_port_only() {
        for bad in [
            "localhost",
            "localhost=ftp://localhost",
            "localhost=http://localhost/x",
            "localhost=http://localhost/?a=1",
            "localhost=http://u:p@localhost",
            "localhost=not a url",
            "1.2.3.4=http://localhost",
        ] {
            assert!(bad.parse::<ShortUrlBase>().is_err(), "{bad} was taken");
        }
    }
}

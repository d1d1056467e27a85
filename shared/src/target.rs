//! Target URLs: what a link may point at, and how the visitor's query joins it.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use url::{Host, Url};

/// The longest target accepted, in bytes after normalization. Longer URLs break in
/// browsers, proxies and mail clients, and are a favourite of abuse.
pub const MAX_TARGET_LEN: usize = 2048;

/// Why a target URL was refused. Each says exactly what to fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TargetError {
    #[error("target_url is not a valid absolute URL: {0}")]
    Unparseable(String),
    #[error("target_url must use http or https, not {0:?}")]
    UnsupportedScheme(String),
    #[error("target_url must not contain a user name or password")]
    Userinfo,
    #[error("target_url must name a host")]
    MissingHost,
    #[error("target_url is {len} bytes long after normalization; the limit is {max}", max = MAX_TARGET_LEN)]
    TooLong { len: usize },
}

/// A target URL that passed validation, in normalized form (scheme and host lowercase,
/// international hosts in punycode, default port dropped, path escaped).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetUrl {
    url: Url,
}

impl TargetUrl {
    /// The normalized URL, as stored and published.
    pub fn as_str(&self) -> &str {
        self.url.as_str()
    }

    /// The host, in the normalized form host bans and the loop check are matched
    /// against: as the redirect reads a `Host`, without a trailing dot (`evil.example.`
    /// is `evil.example`).
    pub fn host(&self) -> &str {
        // Validation guarantees a host.
        let host = self.url.host_str().unwrap_or_default();
        host.strip_suffix('.').unwrap_or(host)
    }

    /// The address, when the host is one (in whatever notation it was written: the URL
    /// parser reads `2852039166` and `0x7f.1` as the IPv4 addresses they are).
    pub fn ip(&self) -> Option<IpAddr> {
        match self.url.host()? {
            Host::Ipv4(a) => Some(IpAddr::V4(a)),
            Host::Ipv6(a) => Some(IpAddr::V6(a)),
            Host::Domain(_) => None,
        }
    }

    /// The port a visitor's browser would connect to.
    pub fn port(&self) -> u16 {
        self.url.port_or_known_default().unwrap_or(80)
    }

    /// Why a public shortener must not send visitors here, if it must not: an address
    /// outside the public internet (private, loopback, link-local and metadata,
    /// shared, reserved, multicast, documentation; IPv4 inside IPv6 is judged as
    /// IPv4), or a name that only resolves inside a network (`localhost`, a single
    /// label, `.local`, `.internal`, …).
    pub fn non_public(&self) -> Option<&'static str> {
        match self.ip() {
            Some(ip) => ip_non_public(ip),
            None => name_non_public(self.host()),
        }
    }
}

/// Why an address is outside the public internet, if it is (as [`TargetUrl::non_public`]
/// judges an address): what a connection made for a user must not reach.
pub fn ip_non_public(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(a) => ipv4_non_public(a),
        IpAddr::V6(a) => ipv6_non_public(a),
    }
}

/// Names that resolve, if at all, only inside someone's network (RFC 6761, RFC 6762,
/// RFC 8375, ICANN's `.internal`), and never to a site a link may share.
const PRIVATE_SUFFIXES: &[&str] = &[
    "localhost",
    "local",
    "localdomain",
    "internal",
    "intranet",
    "lan",
    "home.arpa",
    "invalid",
    "onion",
];

fn name_non_public(host: &str) -> Option<&'static str> {
    if !host.contains('.') {
        return Some("a single-label name, which resolves only inside a network");
    }
    let private = PRIVATE_SUFFIXES.iter().any(|suffix| {
        host == *suffix
            || host
                .strip_suffix(suffix)
                .is_some_and(|rest| rest.ends_with('.'))
    });
    private.then_some("a name that resolves only inside a network")
}

fn ipv4_non_public(a: Ipv4Addr) -> Option<&'static str> {
    let [x, y, ..] = a.octets();
    Some(match (x, y) {
        _ if a.is_loopback() => "a loopback address",
        _ if a.is_private() => "a private address",
        _ if a.is_link_local() => "a link-local address (cloud metadata lives there)",
        (0, _) => "an address of this network",
        (100, 64..=127) => "a shared (carrier-grade NAT) address",
        (192, 0) if a.octets()[2] == 0 || a.octets()[2] == 2 => "a reserved address",
        (198, 18..=19) => "a benchmarking address",
        (198, 51) if a.octets()[2] == 100 => "a documentation address",
        (203, 0) if a.octets()[2] == 113 => "a documentation address",
        (224..=239, _) => "a multicast address",
        (240..=255, _) => "a reserved address",
        _ => return None,
    })
}

fn ipv6_non_public(a: Ipv6Addr) -> Option<&'static str> {
    let s = a.segments();
    // IPv4 carried inside IPv6 reaches the IPv4 address: judged as one.
    if let Some(v4) = a.to_ipv4_mapped() {
        return ipv4_non_public(v4);
    }
    let embedded = |hi: u16, lo: u16| Ipv4Addr::from((u32::from(hi) << 16) | u32::from(lo));
    Some(match s {
        _ if a.is_loopback() => "a loopback address",
        _ if a.is_unspecified() => "an unspecified address",
        [0, 0, 0, 0, 0, 0, _, _] => return ipv4_non_public(embedded(s[6], s[7])),
        [0x64, 0xff9b, 0, 0, 0, 0, hi, lo] => return ipv4_non_public(embedded(hi, lo)),
        // IPv4-translated addresses (RFC 2765, `::ffff:0:0:0/96`) are for a stateless
        // translator inside a network, and NAT64's local-use prefix (RFC 8215,
        // `64:ff9b:1::/48`) for a network's own translator: neither is a public site.
        [0, 0, 0, 0, 0xffff, 0, _, _] => "an IPv4-translated address",
        [0x64, 0xff9b, 1, ..] => "a NAT64 address of a local network",
        [0x2002, hi, lo, ..] => return ipv4_non_public(embedded(hi, lo)),
        [x, ..] if x & 0xfe00 == 0xfc00 => "a private (unique local) address",
        [x, ..] if x & 0xffc0 == 0xfe80 => "a link-local address",
        [x, ..] if x & 0xff00 == 0xff00 => "a multicast address",
        [0x2001, 0xdb8, ..] => "a documentation address",
        [0x2001, 0, ..] => "a Teredo address",
        [0x100, 0, 0, 0, ..] => "a discard address",
        _ => return None,
    })
}

/// Validates and normalizes a target URL.
pub fn validate_target(input: &str) -> Result<TargetUrl, TargetError> {
    let url = Url::parse(input.trim()).map_err(|e| TargetError::Unparseable(e.to_string()))?;
    match url.scheme() {
        "http" | "https" => {}
        other => return Err(TargetError::UnsupportedScheme(other.to_owned())),
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(TargetError::Userinfo);
    }
    match url.host_str() {
        Some(h) if !h.is_empty() => {}
        _ => return Err(TargetError::MissingHost),
    }
    let len = url.as_str().len();
    if len > MAX_TARGET_LEN {
        return Err(TargetError::TooLong { len });
    }
    Ok(TargetUrl { url })
}

/// Appends the visitor's query parameters to `target`'s. A parameter the target already
/// has keeps the target's value; the visitor's parameters keep their own order and exact
/// encoding; the target's fragment stays at the end.
pub fn merge_query(target: &mut Url, visitor_query: Option<&str>) {
    let Some(visitor) = visitor_query.filter(|q| !q.is_empty()) else {
        return;
    };
    let taken: Vec<String> = target
        .query_pairs()
        .map(|(name, _)| name.into_owned())
        .collect();
    let mut merged = target.query().unwrap_or_default().to_owned();
    for pair in visitor.split('&').filter(|p| !p.is_empty()) {
        // Decode the name as a form parser would, so `utm%5Fsource` and `utm_source`
        // are the same parameter.
        let name = url::form_urlencoded::parse(pair.as_bytes())
            .next()
            .map(|(name, _)| name.into_owned())
            .unwrap_or_default();
        if taken.contains(&name) {
            continue;
        }
        if !merged.is_empty() {
            merged.push('&');
        }
        merged.push_str(pair);
    }
    if !merged.is_empty() {
        target.set_query(Some(&merged));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn accepts_and_normalizes_http_targets() {
        let t = validate_target("  HTTPS://Bücher.Example:443/a b?x=1#top ").unwrap();
        assert_eq!(t.as_str(), "https://xn--bcher-kva.example/a%20b?x=1#top");
        assert_eq!(t.host(), "xn--bcher-kva.example");
        assert_eq!(
            validate_target("http://127.0.0.1:8080").unwrap().as_str(),
            "http://127.0.0.1:8080/"
        );
    }

    #[test]
    fn refuses_with_the_reason() {
        assert!(matches!(
            validate_target("not a url"),
            Err(TargetError::Unparseable(_))
        ));
        assert!(matches!(
            validate_target("/relative/path"),
            Err(TargetError::Unparseable(_))
        ));
        assert_eq!(
            validate_target("javascript:alert(1)"),
            Err(TargetError::UnsupportedScheme("javascript".into()))
        );
        assert_eq!(
            validate_target("ftp://files.example/x"),
            Err(TargetError::UnsupportedScheme("ftp".into()))
        );
        assert_eq!(
            validate_target("https://bob:pw@bank.example/"),
            Err(TargetError::Userinfo)
        );
        assert_eq!(
            validate_target("https://bob@bank.example/"),
            Err(TargetError::Userinfo)
        );
        assert!(matches!(
            validate_target("http://"),
            Err(TargetError::Unparseable(_))
        ));
        // The URL standard reads extra slashes after a special scheme as nothing.
        assert_eq!(
            validate_target("http:///h.example").unwrap().host(),
            "h.example"
        );
        let long = format!("https://e.example/{}", "a".repeat(MAX_TARGET_LEN));
        assert!(matches!(
            validate_target(&long),
            Err(TargetError::TooLong { .. })
        ));
        let fits = format!("https://e.example/{}", "a".repeat(MAX_TARGET_LEN - 18));
        assert_eq!(
            validate_target(&fits).unwrap().as_str().len(),
            MAX_TARGET_LEN
        );
    }

    #[test]
    fn only_public_hosts_are_public() {
        let why = |t: &str| validate_target(t).unwrap().non_public();
        for private in [
            "http://169.254.169.254/latest/meta-data/",
            "http://2852039166/",
            "http://0x7f.1/",
            "http://127.1/",
            "http://0177.0.0.1/",
            "http://[::1]/",
            "http://[::ffff:127.0.0.1]/",
            "http://[::ffff:a9fe:a9fe]/",
            "http://[64:ff9b::a9fe:a9fe]/",
            "http://[2002:7f00:1::]/",
            // IPv4-translated (RFC 2765) and NAT64 local-use (RFC 8215) reach IPv4, or a
            // network's own translator.
            "http://[::ffff:0:7f00:1]/",
            "http://[::ffff:0:808:808]/",
            "http://[64:ff9b:1::a9fe:a9fe]/",
            "http://[64:ff9b:1::808:808]/",
            "http://[fd00::1]/",
            "http://[fe80::1]/",
            "http://10.0.0.1/",
            "http://172.16.5.4/",
            "http://192.168.1.1/",
            "http://100.64.0.1/",
            "http://0.0.0.0/",
            "http://224.0.0.1/",
            "http://255.255.255.255/",
            "http://localhost/",
            "http://LOCALHOST./",
            "http://app.localhost/",
            "http://printer.local/",
            "http://db.internal/",
            "http://router.home.arpa/",
            "http://intranet/",
        ] {
            assert!(why(private).is_some(), "{private} was taken for public");
        }
        for public in [
            "https://example.com/",
            "http://8.8.8.8/",
            "http://[2606:4700:4700::1111]/",
            "https://shop.example/",
            "https://localhost.example.com/",
            "https://internal.example.com/",
        ] {
            assert_eq!(why(public), None, "{public}");
        }
        let t = validate_target("http://Evil.Example./x").unwrap();
        assert_eq!(t.host(), "evil.example");
        assert_eq!(validate_target("https://e.example/").unwrap().port(), 443);
    }

    fn merged(target: &str, visitor: Option<&str>) -> String {
        let mut url = Url::parse(target).unwrap();
        merge_query(&mut url, visitor);
        url.into()
    }

    #[test]
    fn query_merge_rules() {
        // Appended after the target's own parameters.
        assert_eq!(
            merged("https://e.example/p?a=1", Some("b=2")),
            "https://e.example/p?a=1&b=2"
        );
        // The target keeps its value for a parameter it already has.
        assert_eq!(
            merged("https://e.example/p?a=1", Some("a=9&b=2")),
            "https://e.example/p?a=1&b=2"
        );
        // Names are compared decoded.
        assert_eq!(
            merged("https://e.example/?utm_source=x", Some("utm%5Fsource=y")),
            "https://e.example/?utm_source=x"
        );
        // A target without a query gains one; the fragment stays last.
        assert_eq!(
            merged("https://e.example/p#frag", Some("b=2&c")),
            "https://e.example/p?b=2&c#frag"
        );
        // The visitor's encoding and repeated names survive untouched.
        assert_eq!(
            merged("https://e.example/", Some("q=a%20b&q=c+d")),
            "https://e.example/?q=a%20b&q=c+d"
        );
        // Nothing to forward.
        assert_eq!(
            merged("https://e.example/?a=1", None),
            "https://e.example/?a=1"
        );
        assert_eq!(
            merged("https://e.example/?a=1", Some("")),
            "https://e.example/?a=1"
        );
        assert_eq!(
            merged("https://e.example/", Some("&&")),
            "https://e.example/"
        );
    }

    proptest! {
        #[test]
        fn merge_keeps_every_target_pair_and_adds_only_new_names(
            target_pairs in prop::collection::vec(("[a-c]{1,2}", "[a-z0-9]{0,3}"), 0..4),
            visitor_pairs in prop::collection::vec(("[a-d]{1,2}", "[a-z0-9 %]{0,3}"), 0..4),
            fragment in prop::option::of("[a-z]{1,4}"),
        ) {
            let enc = |pairs: &[(String, String)]| {
                url::form_urlencoded::Serializer::new(String::new()).extend_pairs(pairs).finish()
            };
            let mut target = Url::parse("https://e.example/path").unwrap();
            if !target_pairs.is_empty() { target.set_query(Some(&enc(&target_pairs))); }
            target.set_fragment(fragment.as_deref());
            let mut out = target.clone();
            merge_query(&mut out, Some(&enc(&visitor_pairs)));

            let got: Vec<(String, String)> = out.query_pairs().map(|(k, v)| (k.into(), v.into())).collect();
            let mut expected: Vec<(String, String)> = target.query_pairs().map(|(k, v)| (k.into(), v.into())).collect();
            let target_names: Vec<String> = expected.iter().map(|(k, _)| k.clone()).collect();
            expected.extend(visitor_pairs.iter().filter(|(k, _)| !target_names.contains(k)).cloned());
            prop_assert_eq!(got, expected);
            prop_assert_eq!(out.fragment(), fragment.as_deref());
            prop_assert_eq!(out.path(), "/path");
        }
    }
}

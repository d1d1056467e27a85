//! Scanners are not people (issue 40, item 8): mail-security gateways and cloud-hosted
//! link checkers open every link of a message before anyone reads it, with a browser's
//! user agent, and browsers fetch links they only guess will be clicked. Such a visit is
//! told apart by where it comes from (the request's network, Cloudflare's `cf.asn`,
//! among networks that serve no people browsing) or by what it says it is (a prefetch
//! header). The list is data, versioned: [`LIST_VERSION`] changes with every edit.
//!
//! Only the classification lives here. The edge's clicks read it (a scanner's visit is
//! counted as a bot's, so it never uses up a `max_visits` link), and the origin's own
//! redirect reads the headers (it knows no network); docs/scanners.md.

/// The version of [`SCANNER_NETWORKS`]: the day it was last edited.
pub const LIST_VERSION: &str = "2026-12-06";

/// Autonomous systems whose addresses serve machines, not people browsing: the clouds
/// link checkers and mail-security services run in, and those services' own networks.
/// Sorted by number (a test keeps it so), each with whose it is. A person browsing from
/// one of them (an employee of the company, a VPN that exits in a cloud) is counted as a
/// scanner too: docs/scanners.md says what that costs.
pub const SCANNER_NETWORKS: &[(u32, &str)] = &[
    (
        8075,
        "Microsoft (Azure, Defender for Office 365 Safe Links)",
    ),
    (14061, "DigitalOcean"),
    (14618, "Amazon (AWS)"),
    (15169, "Google"),
    (16276, "OVHcloud"),
    (16509, "Amazon (AWS)"),
    (20473, "Vultr"),
    (22843, "Proofpoint"),
    (24940, "Hetzner"),
    (26211, "Proofpoint"),
    (31898, "Oracle Cloud"),
    (45102, "Alibaba Cloud"),
    (63949, "Akamai Connected Cloud (Linode)"),
    (132203, "Tencent Cloud"),
    (396982, "Google Cloud"),
];

/// Why a visit is a scanner's: the `scanner` dimension of the stats, carried by the
/// click event and the tally row (absent for every other visit).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = ClickScanner))]
#[serde(rename_all = "lowercase")]
pub enum Scanner {
    /// From a network on [`SCANNER_NETWORKS`].
    Network,
    /// A prefetch or preview the browser made on its own (`Sec-Purpose: prefetch`, …).
    Prefetch,
}

impl Scanner {
    /// The value of the `scanner` dimension in the stats.
    pub fn as_str(self) -> &'static str {
        match self {
            Scanner::Network => "network",
            Scanner::Prefetch => "prefetch",
        }
    }
}

/// The request headers that announce a fetch nobody clicked, each with the value (its
/// start, ASCII case ignored) that does: Chrome's speculation rules and `<link
/// rel=prefetch>` send `Sec-Purpose: prefetch` (`prefetch;prerender` too), older Chrome
/// `Purpose: prefetch`, Firefox `X-Moz: prefetch`, Safari's previews `X-Purpose: preview`.
pub const PREFETCH_HEADERS: &[(&str, &str)] = &[
    ("sec-purpose", "prefetch"),
    ("purpose", "prefetch"),
    ("x-moz", "prefetch"),
    ("x-purpose", "preview"),
];

/// Whether `asn` is on [`SCANNER_NETWORKS`].
pub fn is_scanner_network(asn: u32) -> bool {
    SCANNER_NETWORKS
        .binary_search_by_key(&asn, |(n, _)| *n)
        .is_ok()
}

/// Classifies a visit from its network (`cf.asn`, when known) and its headers (`header`
/// reads one by its lower-case name): `None` for what may be a person.
pub fn classify<S: AsRef<str>>(
    asn: Option<u32>,
    header: impl Fn(&'static str) -> Option<S>,
) -> Option<Scanner> {
    let prefetch = PREFETCH_HEADERS.iter().any(|(name, value)| {
        header(name).is_some_and(|v| {
            v.as_ref()
                .trim_start()
                .get(..value.len())
                .is_some_and(|start| start.eq_ignore_ascii_case(value))
        })
    });
    if prefetch {
        Some(Scanner::Prefetch)
    } else if asn.is_some_and(is_scanner_network) {
        Some(Scanner::Network)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers<'h>(
        pairs: &'h [(&'static str, &'h str)],
    ) -> impl Fn(&'static str) -> Option<&'h str> {
        move |name| pairs.iter().find(|(n, _)| *n == name).map(|(_, v)| *v)
    }

    #[test]
    fn the_list_is_sorted_and_each_network_is_listed_once() {
        assert!(SCANNER_NETWORKS.windows(2).all(|w| w[0].0 < w[1].0));
        for (asn, _) in SCANNER_NETWORKS {
            assert!(is_scanner_network(*asn), "{asn}");
        }
    }

    #[test]
    fn a_visit_from_a_scanners_network_or_a_prefetch_is_a_scanners() {
        let none = headers(&[]);
        assert_eq!(classify(Some(8075), &none), Some(Scanner::Network));
        assert_eq!(classify(Some(22843), &none), Some(Scanner::Network));
        // A home network, or none known (local development).
        assert_eq!(classify(Some(3320), &none), None);
        assert_eq!(classify(None, &none), None);
        for pairs in [
            [("sec-purpose", "prefetch")],
            [("sec-purpose", "prefetch;prerender")],
            [("purpose", "Prefetch")],
            [("x-moz", "prefetch")],
            [("x-purpose", "preview")],
        ] {
            assert_eq!(
                classify(Some(3320), headers(&pairs)),
                Some(Scanner::Prefetch),
                "{pairs:?}"
            );
        }
        // The header named, with another purpose, is a person's visit.
        assert_eq!(
            classify(Some(3320), headers(&[("sec-purpose", "prerender")])),
            None
        );
        assert_eq!(classify(None, headers(&[("purpose", "")])), None);
        assert_eq!(Scanner::Network.as_str(), "network");
        assert_eq!(Scanner::Prefetch.as_str(), "prefetch");
    }
}

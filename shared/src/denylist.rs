//! The denylist: banned codes and banned target hosts, published as one small snapshot.

use crate::route::RouteKey;
use serde::{Deserialize, Serialize};
use std::collections::HashSet;

/// The snapshot as stored in KV under `deny`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DenylistSnapshot {
    /// Grows with every ban and unban; an older snapshot never replaces a newer one.
    pub v: u64,
    /// Banned route keys, `domain/code`.
    #[serde(default)]
    pub codes: Vec<String>,
    /// Banned hosts: a target on the host or under it (`evil.example` covers
    /// `www.evil.example`) is blocked.
    #[serde(default)]
    pub hosts: Vec<String>,
}

/// A snapshot prepared for lookups on every request.
#[derive(Debug, Clone, Default)]
pub struct Denylist {
    version: u64,
    codes: HashSet<String>,
    hosts: HashSet<String>,
}

impl From<DenylistSnapshot> for Denylist {
    fn from(s: DenylistSnapshot) -> Self {
        Denylist {
            version: s.v,
            codes: s.codes.into_iter().collect(),
            hosts: s
                .hosts
                .into_iter()
                .map(|h| h.trim_end_matches('.').to_ascii_lowercase())
                // An empty ban names no host (found by fuzzing: it "blocked" `.` alone).
                .filter(|h| !h.is_empty())
                .collect(),
        }
    }
}

impl Denylist {
    /// Reads the snapshot as stored in KV.
    pub fn from_json(json: &str) -> Result<Self, serde_json::Error> {
        serde_json::from_str::<DenylistSnapshot>(json).map(Denylist::from)
    }

    pub fn version(&self) -> u64 {
        self.version
    }

    /// The snapshot this was prepared from (codes and hosts sorted), as the origin
    /// serves it to the edge.
    pub fn to_snapshot(&self) -> DenylistSnapshot {
        let mut codes: Vec<String> = self.codes.iter().cloned().collect();
        let mut hosts: Vec<String> = self.hosts.iter().cloned().collect();
        codes.sort();
        hosts.sort();
        DenylistSnapshot {
            v: self.version,
            codes,
            hosts,
        }
    }

    /// Whether it bans nothing.
    pub fn is_empty(&self) -> bool {
        self.codes.is_empty() && self.hosts.is_empty()
    }

    pub fn blocks_code(&self, route: &RouteKey) -> bool {
        !self.codes.is_empty() && self.codes.contains(&route.to_string())
    }

    /// Whether `host` is a banned host or lies under one.
    pub fn blocks_host(&self, host: &str) -> bool {
        if self.hosts.is_empty() {
            return false;
        }
        let host = host.trim_end_matches('.');
        let mut rest = host;
        loop {
            if self.hosts.contains(rest) {
                return true;
            }
            match rest.split_once('.') {
                Some((_, parent)) if !parent.is_empty() => rest = parent,
                _ => return false,
            }
        }
    }
}

/// Whether `host` equals `ban` or is a subdomain of it, label-wise (`notevil.example` is
/// not under `evil.example`).
pub fn host_is_or_is_under(host: &str, ban: &str) -> bool {
    host == ban
        || host
            .strip_suffix(ban)
            .is_some_and(|prefix| prefix.ends_with('.'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn list() -> Denylist {
        Denylist::from_json(
            r#"{"v":7,"codes":["s.example/bad1234"],"hosts":["evil.example","Phish.Example."]}"#,
        )
        .unwrap()
    }

    #[test]
    fn blocks_banned_codes_per_domain() {
        let deny = list();
        assert_eq!(deny.version(), 7);
        assert!(deny.blocks_code(&RouteKey::new("s.example", "bad1234").unwrap()));
        assert!(!deny.blocks_code(&RouteKey::new("t.example", "bad1234").unwrap()));
        assert!(!deny.blocks_code(&RouteKey::new("s.example", "Bad1234").unwrap()));
    }

    #[test]
    fn a_prepared_list_gives_back_its_snapshot() {
        let snap = list().to_snapshot();
        assert_eq!(snap.v, 7);
        assert_eq!(snap.codes, ["s.example/bad1234"]);
        assert_eq!(snap.hosts, ["evil.example", "phish.example"]);
        let again = Denylist::from(snap);
        assert!(again.blocks_host("www.phish.example"));
    }

    #[test]
    fn blocks_banned_hosts_and_their_subdomains_only() {
        let deny = list();
        assert!(deny.blocks_host("evil.example"));
        assert!(deny.blocks_host("www.evil.example"));
        assert!(deny.blocks_host("a.b.evil.example."));
        assert!(deny.blocks_host("phish.example"));
        assert!(!deny.blocks_host("notevil.example"));
        assert!(!deny.blocks_host("example"));
        assert!(!deny.blocks_host("evil.example.com"));
        assert!(!Denylist::default().blocks_host("evil.example"));
    }

    proptest! {
        #[test]
        fn blocks_host_agrees_with_the_label_rule(
            host in "([a-c]{1,2}\\.){0,3}[a-c]{1,2}",
            ban in "([a-c]{1,2}\\.){0,2}[a-c]{1,2}",
        ) {
            let deny = Denylist::from(DenylistSnapshot { v: 1, codes: vec![], hosts: vec![ban.clone()] });
            prop_assert_eq!(deny.blocks_host(&host), host_is_or_is_under(&host, &ban));
        }
    }
}

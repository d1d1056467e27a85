//! A ban as stored: one code, or every link whose target host is (or is under) a host.

/// What a ban covers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BanTarget {
    Code { domain: String, code: String },
    Host { host: String },
}

/// A ban as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ban {
    pub ban_id: i64,
    pub target: BanTarget,
    pub reason: String,
    pub created_by: String,
    pub created_at: i64,
    pub lifted_at: Option<i64>,
}

/// The denylist the edge gets for these (active) bans, at `version`: codes as
/// `domain/code` and hosts, each sorted and listed once. The one place a denylist is
/// built: the snapshot published to the edge, the redirect's cached copy and the
/// ban marks of new links all come from here.
pub fn denylist_snapshot(version: u64, bans: &[Ban]) -> shared::DenylistSnapshot {
    let mut snap = shared::DenylistSnapshot {
        v: version,
        ..shared::DenylistSnapshot::default()
    };
    for ban in bans {
        match &ban.target {
            BanTarget::Code { domain, code } => snap.codes.push(format!("{domain}/{code}")),
            BanTarget::Host { host } => snap.hosts.push(host.clone()),
        }
    }
    snap.codes.sort();
    snap.codes.dedup();
    snap.hosts.sort();
    snap.hosts.dedup();
    snap
}

/// [`denylist_snapshot`] as the denylist the redirect decision asks.
pub fn denylist(bans: &[Ban]) -> shared::Denylist {
    shared::Denylist::from(denylist_snapshot(0, bans))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ban(target: BanTarget) -> Ban {
        Ban {
            ban_id: 1,
            target,
            reason: "r".into(),
            created_by: "t".into(),
            created_at: 0,
            lifted_at: None,
        }
    }

    #[test]
    fn a_snapshot_lists_each_code_and_host_once_in_order() {
        let code = |c: &str| {
            ban(BanTarget::Code {
                domain: "s.example".into(),
                code: c.into(),
            })
        };
        let host = |h: &str| ban(BanTarget::Host { host: h.into() });
        let bans = [
            code("b"),
            host("z.example"),
            code("a"),
            code("b"),
            host("a.example"),
        ];
        let snap = denylist_snapshot(7, &bans);
        assert_eq!(snap.v, 7);
        assert_eq!(snap.codes, ["s.example/a", "s.example/b"]);
        assert_eq!(snap.hosts, ["a.example", "z.example"]);
        let deny = denylist(&bans);
        assert!(deny.blocks_host("www.z.example"));
        assert!(!deny.blocks_host("y.example"));
    }
}

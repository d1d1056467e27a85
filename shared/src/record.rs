//! The edge record: what the edge knows about one link, stored compactly in KV under
//! `l:{domain}/{code}` and carried by every copy with its version.

use serde::{Deserialize, Serialize};

/// Where a link stands, as the edge sees it: its own state in the origin's database
/// (`LinkState` there) with trust & safety's ban on top.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EdgeStatus {
    Active,
    /// Switched off by its owner; may come back.
    Disabled,
    /// A tombstone: the code stays taken forever and answers 410.
    Deleted,
    /// Blocked by trust & safety; marked on the record too so the edge fails closed even
    /// without a fresh denylist.
    Banned,
}

/// The redirect statuses a link may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(try_from = "u16", into = "u16")]
pub enum RedirectStatus {
    MovedPermanently,
    #[default]
    Found,
    TemporaryRedirect,
    PermanentRedirect,
}

/// A status code that is not one of 301, 302, 307, 308.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{0} is not a redirect status; use 301, 302, 307 or 308")]
pub struct NotARedirect(pub u16);

impl RedirectStatus {
    pub fn code(self) -> u16 {
        match self {
            RedirectStatus::MovedPermanently => 301,
            RedirectStatus::Found => 302,
            RedirectStatus::TemporaryRedirect => 307,
            RedirectStatus::PermanentRedirect => 308,
        }
    }
}

impl TryFrom<u16> for RedirectStatus {
    type Error = NotARedirect;
    fn try_from(code: u16) -> Result<Self, Self::Error> {
        match code {
            301 => Ok(RedirectStatus::MovedPermanently),
            302 => Ok(RedirectStatus::Found),
            307 => Ok(RedirectStatus::TemporaryRedirect),
            308 => Ok(RedirectStatus::PermanentRedirect),
            other => Err(NotARedirect(other)),
        }
    }
}

impl From<RedirectStatus> for u16 {
    fn from(status: RedirectStatus) -> u16 {
        status.code()
    }
}

/// The record of one link at the edge. Field names are one letter because every byte is
/// stored once per link and read on every cold redirect.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EdgeRecord {
    /// Target URL, already validated and normalized by the origin.
    #[serde(rename = "t")]
    pub target: String,
    #[serde(rename = "s")]
    pub status: EdgeStatus,
    #[serde(rename = "r", default)]
    pub redirect: RedirectStatus,
    /// Expiry as Unix seconds; the link answers 410 from that second on.
    #[serde(rename = "x", default)]
    pub expires_at: Option<i64>,
    /// Starts at 1 and grows with every change; no copy is replaced by an older one.
    #[serde(rename = "v")]
    pub version: u64,
    /// Append the visitor's query parameters to the target's.
    #[serde(rename = "q", default)]
    pub forward_query: bool,
}

impl EdgeRecord {
    /// Reads a record as stored in KV.
    pub fn from_json(json: &str) -> Result<Self, serde_json::Error> {
        serde_json::from_str(json)
    }

    /// The compact JSON stored in KV.
    pub fn to_json(&self) -> String {
        // Serializing plain strings, numbers and enums cannot fail.
        serde_json::to_string(self).unwrap_or_default()
    }

    /// Whether this copy may replace `held`: the version fence.
    pub fn supersedes(&self, held: &EdgeRecord) -> bool {
        self.version > held.version
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn reads_the_documented_compact_form() {
        let json = r#"{"t":"https://example.com/a?b=1","s":"active","r":301,"x":1767225600,"v":3,"q":true}"#;
        let rec = EdgeRecord::from_json(json).unwrap();
        assert_eq!(
            rec,
            EdgeRecord {
                target: "https://example.com/a?b=1".into(),
                status: EdgeStatus::Active,
                redirect: RedirectStatus::MovedPermanently,
                expires_at: Some(1_767_225_600),
                version: 3,
                forward_query: true,
            }
        );
        assert_eq!(rec.to_json(), json);
    }

    #[test]
    fn optional_fields_default_and_unknown_fields_are_ignored() {
        let rec =
            EdgeRecord::from_json(r#"{"t":"https://e.example/","s":"deleted","v":2,"later":[1]}"#)
                .unwrap();
        assert_eq!(rec.redirect, RedirectStatus::Found);
        assert_eq!(rec.expires_at, None);
        assert!(!rec.forward_query);
        assert_eq!(rec.status, EdgeStatus::Deleted);
    }

    #[test]
    fn refuses_statuses_that_are_not_redirects() {
        assert!(
            EdgeRecord::from_json(r#"{"t":"https://e.example/","s":"active","r":200,"v":1}"#)
                .is_err()
        );
        assert!(EdgeRecord::from_json(r#"{"t":"https://e.example/","s":"gone","v":1}"#).is_err());
        assert_eq!(RedirectStatus::try_from(303), Err(NotARedirect(303)));
    }

    #[test]
    fn only_a_newer_version_supersedes() {
        let old =
            EdgeRecord::from_json(r#"{"t":"https://e.example/","s":"active","v":4}"#).unwrap();
        let new = EdgeRecord {
            version: 5,
            ..old.clone()
        };
        assert!(new.supersedes(&old));
        assert!(!old.supersedes(&new));
        assert!(!old.supersedes(&old));
    }

    proptest! {
        #[test]
        fn json_round_trips(
            target in "https://[a-z]{1,10}\\.example/[a-z0-9?=&]{0,20}",
            status in prop::sample::select(vec![EdgeStatus::Active, EdgeStatus::Disabled, EdgeStatus::Deleted, EdgeStatus::Banned]),
            redirect in prop::sample::select(vec![301u16, 302, 307, 308]),
            expires_at: Option<i64>,
            version: u64,
            forward_query: bool,
        ) {
            let rec = EdgeRecord {
                target, status, redirect: RedirectStatus::try_from(redirect).unwrap(),
                expires_at, version, forward_query,
            };
            prop_assert_eq!(EdgeRecord::from_json(&rec.to_json()).unwrap(), rec);
        }
    }
}

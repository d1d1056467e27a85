//! The edge record: what the edge knows about one link, stored compactly in KV under
//! `l:{domain}/{code}` and carried by every copy with its version.

use crate::access::Access;
use crate::preview::Preview;
use crate::split::Split;
use crate::targeting::Rule;
use serde::{Deserialize, Serialize};

/// Where a link stands, as the edge sees it: its own state in the origin's database
/// (`LinkState` there) with trust & safety's ban on top.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EdgeStatus {
    #[default]
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

/// The record of one link at the edge. Field names are a letter or two because every
/// byte is stored once per link and read on every cold redirect; what most links do not
/// use (issue 17's rules, split, preview, ...) is left out of the text when unset, so a
/// plain link's record is what it was before they existed, and an edge that predates a
/// field ignores it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
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
    /// Targeting rules, in order: the first that holds picks the target.
    #[serde(rename = "rl", default, skip_serializing_if = "Vec::is_empty")]
    pub rules: Vec<Rule>,
    /// An A/B split of the visits no rule claims.
    #[serde(rename = "ab", default, skip_serializing_if = "Option::is_none")]
    pub split: Option<Split>,
    /// What link-preview crawlers are shown.
    #[serde(rename = "pv", default, skip_serializing_if = "Option::is_none")]
    pub preview: Option<Preview>,
    /// Where an expired link sends its visitors, before the domain's own.
    #[serde(rename = "e", default, skip_serializing_if = "Option::is_none")]
    pub expired_url: Option<String>,
    /// Show the destination and a link to it instead of redirecting at once.
    #[serde(rename = "i", default, skip_serializing_if = "is_false")]
    pub interstitial: bool,
    /// The owner asked that visits not be recorded.
    #[serde(rename = "nc", default, skip_serializing_if = "is_false")]
    pub no_clicks: bool,
    /// The owner asked that scanners' visits count as people's (docs/scanners.md).
    #[serde(rename = "ns", default, skip_serializing_if = "is_false")]
    pub no_scanner_check: bool,
    /// The link's visit limit was reached: it has ended, as an expired link has.
    #[serde(rename = "m", default, skip_serializing_if = "is_false")]
    pub exhausted: bool,
    /// The link has a visit limit not yet reached: its people's clicks name their
    /// visitor (a keyed hash, `shared::clicks::person`) so that a visitor counts once a
    /// day against the limit. An edge that predates it counts every visit.
    #[serde(rename = "lm", default, skip_serializing_if = "is_false")]
    pub limited: bool,
    /// Who may follow the link; `None`: anyone with its code.
    #[serde(rename = "ac", default, skip_serializing_if = "Option::is_none")]
    pub access: Option<Access>,
}

fn is_false(b: &bool) -> bool {
    !*b
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

    /// Whether deciding a visit reads the visitor's headers (rules, a preview): a plain
    /// link's does not, and callers skip reading them.
    pub fn reads_client(&self) -> bool {
        !self.rules.is_empty() || self.preview.is_some()
    }

    /// Which of the visitor's headers deciding a visit reads: its rules' and, for a
    /// preview, the user agent.
    pub fn client_reads(&self) -> crate::targeting::Reads {
        let mut reads = crate::targeting::reads(&self.rules);
        reads.user_agent |= self.preview.is_some();
        reads
    }

    /// Whether deciding a visit needs a random draw (a split).
    pub fn draws(&self) -> bool {
        self.split.is_some()
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
                ..EdgeRecord::default()
            }
        );
        assert_eq!(rec.to_json(), json);
    }

    /// A link that uses none of issue 17's fields is stored exactly as before them, so
    /// an edge that predates them reads it, and its size did not grow.
    #[test]
    fn a_plain_link_writes_none_of_the_optional_fields() {
        let rec = EdgeRecord {
            target: "https://e.example/".into(),
            version: 1,
            ..EdgeRecord::default()
        };
        assert_eq!(
            rec.to_json(),
            r#"{"t":"https://e.example/","s":"active","r":302,"x":null,"v":1,"q":false}"#
        );
    }

    /// The largest record validation lets through (20 rules, each with every list full
    /// and the longest values, a 10-way split, a full preview) still fits KV's 25 MiB
    /// value limit many times over; the figure is quoted in docs/edge-size.md.
    #[test]
    fn the_largest_record_fits_kv_with_room_to_spare() {
        use crate::preview::{MAX_DESCRIPTION, MAX_TITLE};
        use crate::split::Variant;
        use crate::target::MAX_TARGET_LEN;
        use crate::targeting::{
            Conditions, Device, QueryTest, MAX_QUERY_NAME, MAX_QUERY_VALUE, MAX_RULES, MAX_VALUES,
        };
        let url = |i: usize| {
            let head = format!("https://t{i}.example/");
            format!("{head}{}", "a".repeat(MAX_TARGET_LEN - head.len()))
        };
        // Every list full and every value the longest is refused as too large; the
        // largest accepted set of this shape has lists as long as fit.
        let rules_with = |n: usize| {
            let when = Conditions {
                device: Device::ALL.to_vec(),
                language: (0..n)
                    .map(|i| format!("de-{i:0>8}-xxxxxxxx-xxxxxxxx-xxxxx"))
                    .collect(),
                country: (0..n)
                    .map(|i| {
                        format!(
                            "{}{}",
                            (b'A' + (i / 26) as u8) as char,
                            (b'A' + (i % 26) as u8) as char
                        )
                    })
                    .collect(),
                query: (0..n)
                    .map(|i| QueryTest {
                        name: format!("{i:0>width$}", width = MAX_QUERY_NAME),
                        equals: Some("\u{1}".repeat(MAX_QUERY_VALUE)),
                        present: None,
                    })
                    .collect(),
                after: Some(i64::MIN),
                before: Some(i64::MAX),
            };
            (0..MAX_RULES)
                .map(|i| Rule {
                    when: when.clone(),
                    target_url: url(i),
                })
                .collect::<Vec<_>>()
        };
        assert!(matches!(
            crate::targeting::normalize_rules(rules_with(MAX_VALUES)),
            Err(crate::targeting::RuleError::TooLarge(_))
        ));
        let rules = (0..=MAX_VALUES)
            .rev()
            .find_map(|n| crate::targeting::normalize_rules(rules_with(n)).ok())
            .expect("some rules fit");
        let split = Split::try_from(
            (0..10)
                .map(|i| Variant {
                    target_url: url(100 + i),
                    weight: 10,
                })
                .collect::<Vec<_>>(),
        )
        .unwrap();
        let rec = EdgeRecord {
            target: url(0),
            version: u64::MAX,
            rules,
            split: Some(split),
            preview: Some(Preview {
                title: Some("\"".repeat(MAX_TITLE)),
                description: Some("\"".repeat(MAX_DESCRIPTION)),
                image_url: Some(url(200)),
            }),
            expired_url: Some(url(300)),
            interstitial: true,
            no_clicks: true,
            no_scanner_check: true,
            exhausted: true,
            limited: true,
            access: Some(Access::Signed {
                key: "k".repeat(43),
            }),
            ..EdgeRecord::default()
        };
        assert!(rec.preview.as_ref().unwrap().validate().is_ok());
        let json = rec.to_json();
        assert_eq!(EdgeRecord::from_json(&json).unwrap(), rec);
        // KV's limit is 25 MiB; a record is read on every cold visit, so its worst case
        // is held to a small fraction of it.
        assert!(json.len() < 128 * 1024, "{} bytes", json.len());
        println!("largest record: {} bytes", json.len());
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
                ..EdgeRecord::default()
            };
            prop_assert_eq!(EdgeRecord::from_json(&rec.to_json()).unwrap(), rec);
        }
    }
}

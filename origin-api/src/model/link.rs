//! A link as the origin keeps it, tombstones included, and the record the edge gets of
//! it.

use serde::{Deserialize, Serialize};
use shared::preview::Preview;
use shared::split::Split;
use shared::targeting::Rule;
use shared::{CodeKind, EdgeRecord, EdgeStatus, RedirectStatus};

/// Where a link stands in the database. Bans are kept apart, in `bans`.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize, utoipa::ToSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum LinkState {
    Active,
    Disabled,
    Deleted,
}

impl LinkState {
    pub fn as_str(self) -> &'static str {
        match self {
            LinkState::Active => "active",
            LinkState::Disabled => "disabled",
            LinkState::Deleted => "deleted",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "active" => Some(LinkState::Active),
            "disabled" => Some(LinkState::Disabled),
            "deleted" => Some(LinkState::Deleted),
            _ => None,
        }
    }
}

/// One link, tombstones included.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    pub link_id: u64,
    pub domain: String,
    pub code: String,
    pub target_url: String,
    pub owner_id: String,
    pub status: LinkState,
    pub redirect: RedirectStatus,
    /// Unix milliseconds.
    pub expires_at: Option<i64>,
    pub version: u64,
    pub key_version: Option<u32>,
    pub code_kind: CodeKind,
    /// The number a generated code encodes, from its domain's own code sequence
    /// ([`crate::model::sequence`]); `None` for an alias.
    pub code_number: Option<u64>,
    pub forward_query: bool,
    pub title: Option<String>,
    pub tags: Vec<String>,
    pub created_at: i64,
    pub updated_at: i64,
    /// The newest version the publisher delivered to the edge, if any.
    pub published: Option<Published>,
    /// What it decides at the edge beyond its target: rules, a split, a preview, ...
    pub options: LinkOptions,
}

/// What a link may carry beyond its own target (issue 17), validated, as the edge gets
/// it. Kept in one JSON column (`links.options`, `NULL` for a link that uses none of
/// it): these are read and written whole, never searched by their parts; the hosts of
/// their targets are searched, and kept apart (`link_hosts`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LinkOptions {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rules: Vec<Rule>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub split: Option<Split>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preview: Option<Preview>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expired_url: Option<String>,
    #[serde(default, skip_serializing_if = "is_false")]
    pub interstitial: bool,
    /// `record_clicks: false` in the API.
    #[serde(default, skip_serializing_if = "is_false")]
    pub no_clicks: bool,
    /// `scanner_check: false` in the API: scanners' visits count as people's.
    #[serde(default, skip_serializing_if = "is_false")]
    pub no_scanner_check: bool,
    /// People's visits after which the link ends (bots never count).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_visits: Option<u64>,
    /// Set by the origin when the count reached `max_visits` (never by a request); an
    /// edit of `max_visits` sets it again from the count.
    #[serde(default, skip_serializing_if = "is_false")]
    pub exhausted: bool,
    /// Who may follow the link, with its secret; `None`: anyone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access: Option<shared::access::Access>,
    /// The team's note (never sent to the edge).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Where the link came from, when an import made it (never sent to the edge).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub imported: Option<Imported>,
}

/// What an import keeps of a link's life at the shortener it came from (issue 39).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Imported {
    /// `bitly`, `shlink`, `yourls`, `kutt` or `dub`.
    pub from: String,
    /// The source's count of visits when it was imported: a baseline, shown apart from
    /// Hop's own counts and never added to them (the sources count bots their own way).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clicks: Option<u64>,
    /// When the source made it, Unix ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<i64>,
}

fn is_false(b: &bool) -> bool {
    !*b
}

impl LinkOptions {
    /// The column's value: `None` when the link uses none of these.
    pub fn to_column(&self) -> Option<String> {
        (*self != LinkOptions::default()).then(|| serde_json::to_string(self).unwrap_or_default())
    }

    /// The column read back.
    pub fn from_column(column: Option<&str>) -> Result<Self, serde_json::Error> {
        column.map_or(Ok(LinkOptions::default()), serde_json::from_str)
    }

    /// The URLs besides the link's own target that visitors may be sent to or shown:
    /// rules', the split's, its page for when it has ended, its preview's image.
    pub fn targets(&self) -> impl Iterator<Item = &str> {
        shared::targeting::other_targets(
            &self.rules,
            self.split.as_ref(),
            self.expired_url.as_deref(),
            self.preview.as_ref(),
        )
    }
}

/// A delivery to the edge.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Published {
    pub version: u64,
    /// Unix milliseconds.
    pub at: i64,
}

/// How long KV may take to show a write everywhere once it is accepted.
pub const KV_PROPAGATION_MS: i64 = 60_000;

impl Link {
    /// `domain/code`.
    pub fn route_key(&self) -> String {
        format!("{}/{}", self.domain, self.code)
    }

    /// The host of the target, as host bans match it.
    pub fn target_host(&self) -> String {
        host_of(&self.target_url)
    }

    /// The hosts of the link's other URLs (rules', the split's, its page for when it has
    /// ended, its preview's image), without repeats and without its own target's: kept
    /// in `link_hosts`, so that a host ban finds them.
    pub fn other_hosts(&self) -> Vec<String> {
        let own = self.target_host();
        let mut hosts: Vec<String> = Vec::new();
        for host in self.options.targets().map(host_of) {
            if host != own && !hosts.contains(&host) {
                hosts.push(host);
            }
        }
        hosts
    }

    /// Whether the link's code was drawn at random (a domain's `code_strategy: random`):
    /// generated, yet no number of a sequence.
    pub fn is_random_code(&self) -> bool {
        self.code_kind == CodeKind::Generated && self.code_number.is_none()
    }

    /// Whether the purge emptied this tombstone (docs/retention.md): only its code,
    /// owner and numbers are left. No link is ever stored with an empty target otherwise.
    pub fn is_purged(&self) -> bool {
        self.status == LinkState::Deleted && self.target_url.is_empty()
    }

    /// Every URL a visit of the link could be sent to or shown: its target, then its
    /// other targets ([`LinkOptions::targets`]).
    pub fn urls(&self) -> impl Iterator<Item = &str> {
        std::iter::once(self.target_url.as_str()).chain(self.options.targets())
    }

    /// Every host a visit of the link could be sent to: its other targets', then its
    /// own target's.
    pub fn all_hosts(&self) -> Vec<String> {
        let mut hosts = self.other_hosts();
        hosts.push(self.target_host());
        hosts
    }

    /// Whether `deny` covers this link: its code, or the host of any target a visit
    /// could be sent to (a link that sends some visitors to a banned host is blocked).
    pub fn banned_by(&self, deny: &shared::Denylist) -> bool {
        shared::RouteKey::new(self.domain.as_str(), self.code.as_str())
            .is_some_and(|r| deny.blocks_code(&r))
            || self.all_hosts().iter().any(|h| deny.blocks_host(h))
    }

    /// The record the edge holds for this link. `banned` marks it for a code ban or a
    /// ban of its target host.
    pub fn edge_record(&self, banned: bool) -> EdgeRecord {
        EdgeRecord {
            target: self.target_url.clone(),
            status: if banned {
                EdgeStatus::Banned
            } else {
                match self.status {
                    LinkState::Active => EdgeStatus::Active,
                    LinkState::Disabled => EdgeStatus::Disabled,
                    LinkState::Deleted => EdgeStatus::Deleted,
                }
            },
            redirect: self.redirect,
            // The edge works in seconds; round up so a link never ends early.
            expires_at: self
                .expires_at
                .map(|ms| ms.div_euclid(1000) + i64::from(ms.rem_euclid(1000) != 0)),
            version: self.version,
            forward_query: self.forward_query,
            rules: self.options.rules.clone(),
            split: self.options.split.clone(),
            preview: self.options.preview.clone(),
            expired_url: self.options.expired_url.clone(),
            interstitial: self.options.interstitial,
            no_clicks: self.options.no_clicks,
            no_scanner_check: self.options.no_scanner_check,
            exhausted: self.options.exhausted,
            limited: self.options.max_visits.is_some() && !self.options.exhausted,
            access: self.options.access.clone(),
        }
    }
}

/// The host of a stored URL, as host bans match it (empty if it has none).
pub fn host_of(url: &str) -> String {
    url::Url::parse(url)
        .ok()
        .and_then(|u| u.host_str().map(str::to_owned))
        .unwrap_or_default()
}

/// Every suffix of `host` at a label boundary: `a.b.c` gives `a.b.c`, `b.c`, `c`.
pub fn host_suffixes(host: &str) -> Vec<String> {
    let mut out = vec![host.to_owned()];
    let mut rest = host;
    while let Some((_, parent)) = rest.split_once('.') {
        if parent.is_empty() {
            break;
        }
        out.push(parent.to_owned());
        rest = parent;
    }
    out
}

/// A validated listing of an owner's links, newest first, as the store runs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListFilter {
    pub owner_id: String,
    /// Only links on these domains; empty: on any.
    pub domains: Vec<String>,
    pub tag: Option<String>,
    pub status: Option<LinkState>,
    /// Lowercase text found in the code, the target URL or the title.
    pub search: Option<String>,
    pub condition: Option<Condition>,
    pub access: Option<AccessKind>,
    pub feature: Option<Feature>,
    /// Created in `[from, to)`, Unix ms.
    pub created_from: Option<i64>,
    pub created_to: Option<i64>,
    /// The instant `Condition::Expired` is judged at, Unix ms.
    pub now: i64,
    /// `(created_at, link_id)` of the last link of the previous page.
    pub after: Option<(i64, u64)>,
    pub limit: u32,
}

/// What a listing may ask of a link beyond its status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Condition {
    /// Its expiry has passed.
    Expired,
    /// Its visit limit was reached.
    Exhausted,
    /// An active ban matches its code or the host of any of its targets.
    Banned,
    /// Live, and its expiry falls within the next 7 days.
    Expiring,
}

/// How far ahead [`Condition::Expiring`] looks.
pub const EXPIRING_WITHIN_MS: i64 = 7 * 86_400_000;

/// Who may follow a link, as a listing filters by it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum AccessKind {
    Public,
    Password,
    Signed,
}

/// What a link may carry that a listing filters by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Feature {
    /// Targeting rules.
    Rules,
    /// An A/B split.
    Split,
}

impl LinkOptions {
    /// A `LIKE` pattern on the `options` column (no wildcard but `%`, no escape, no
    /// single quote: the store writes it into its statement) that matches the links with
    /// this feature, access or condition, and only those: the column is this struct's
    /// JSON, whose top-level keys are written with unescaped quotes that no string value
    /// inside it can produce.
    pub fn column_pattern(part: OptionPart) -> &'static str {
        match part {
            OptionPart::Feature(Feature::Rules) => "%\"rules\":[%",
            OptionPart::Feature(Feature::Split) => "%\"split\":[%",
            OptionPart::Access(AccessKind::Password) => "%\"access\":{\"password\":%",
            OptionPart::Access(AccessKind::Signed) => "%\"access\":{\"signed\":%",
            // Public links are those that match neither, filtered by the store.
            OptionPart::Access(AccessKind::Public) => "%\"access\":{%",
            OptionPart::Exhausted => "%\"exhausted\":true%",
        }
    }
}

/// A part of [`LinkOptions`] a listing filters by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OptionPart {
    Feature(Feature),
    Access(AccessKind),
    Exhausted,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether SQL's `LIKE` would match `pattern`, `%X%` with no other wildcard.
    fn like(column: &str, pattern: &str) -> bool {
        column.contains(pattern.trim_matches('%'))
    }

    #[test]
    fn option_patterns_match_their_part_and_no_text_that_spells_it() {
        let all = [
            OptionPart::Feature(Feature::Rules),
            OptionPart::Feature(Feature::Split),
            OptionPart::Access(AccessKind::Password),
            OptionPart::Access(AccessKind::Signed),
            OptionPart::Exhausted,
        ];
        // A title and description that spell every key and value a pattern looks for.
        let spelled: String = all
            .iter()
            .map(|p| LinkOptions::column_pattern(*p))
            .collect();
        let decoy = LinkOptions {
            preview: Some(shared::preview::Preview {
                title: Some(spelled.clone()),
                description: Some(spelled.replace('%', "")),
                image_url: None,
            }),
            expired_url: Some(format!("https://e.example/?q={spelled}")),
            ..LinkOptions::default()
        };
        let column = decoy.to_column().expect("a column");
        for part in all {
            assert!(
                !like(&column, LinkOptions::column_pattern(part)),
                "{part:?} in {column}"
            );
        }
        let full: LinkOptions = serde_json::from_value(serde_json::json!({
            "split": [{"target_url": "https://a.example/", "weight": 50}, {"target_url": "https://b.example/", "weight": 50}],
            "exhausted": true,
            "max_visits": 3,
            "access": {"password": {"salt": "00", "hash": "00", "iterations": 1, "key": "00"}},
        }))
        .expect("options");
        let column = full.to_column().expect("a column");
        for (part, expected) in [
            (all[0], false),
            (all[1], true),
            (all[2], true),
            (all[3], false),
            (all[4], true),
        ] {
            assert_eq!(
                like(&column, LinkOptions::column_pattern(part)),
                expected,
                "{part:?} in {column}"
            );
        }
    }

    #[test]
    fn edge_expiry_rounds_up_to_the_second() {
        let mut link = Link {
            link_id: 1,
            domain: "s.example".into(),
            code: "abc".into(),
            target_url: "https://e.example/".into(),
            owner_id: "o".into(),
            status: LinkState::Active,
            redirect: RedirectStatus::Found,
            expires_at: Some(1_500),
            version: 2,
            key_version: None,
            code_kind: CodeKind::Custom,
            code_number: None,
            forward_query: true,
            title: None,
            tags: vec![],
            created_at: 0,
            updated_at: 0,
            published: None,
            options: LinkOptions::default(),
        };
        assert_eq!(link.edge_record(false).expires_at, Some(2));
        link.expires_at = Some(2_000);
        assert_eq!(link.edge_record(false).expires_at, Some(2));
        assert_eq!(link.edge_record(true).status, EdgeStatus::Banned);
        link.status = LinkState::Deleted;
        let rec = link.edge_record(false);
        assert_eq!(
            (rec.status, rec.version, rec.forward_query),
            (EdgeStatus::Deleted, 2, true)
        );
    }
}

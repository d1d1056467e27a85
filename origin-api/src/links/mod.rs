//! Links as the origin keeps them, and the rules for creating one.

mod bulk;
mod create;
mod fields;
mod list;
mod lookups;
mod update;

pub use bulk::{
    create_bulk, BulkCreate, BulkItem, BulkOutcome, BulkResponse, BulkResult, MAX_BULK,
};
pub use create::{
    check_idempotency_key, create_link, create_link_once, Created, IDEMPOTENCY_TTL_MS,
};
pub use list::{ListFilter, ListParams, Page, DEFAULT_PAGE, MAX_PAGE};
pub use update::{delete_link, owned_link, parse_if_match, update_link, UpdateLink};

use serde::{Deserialize, Serialize};
use shared::{CodeKind, EdgeRecord, LinkStatus, RedirectStatus};
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

/// Where a link stands in the database. Bans are kept apart, in `bans`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
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
    pub forward_query: bool,
    pub title: Option<String>,
    pub tags: Vec<String>,
    pub created_at: i64,
    pub updated_at: i64,
    /// The newest version the publisher delivered to the edge, if any.
    pub published: Option<Published>,
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
        url::Url::parse(&self.target_url)
            .ok()
            .and_then(|u| u.host_str().map(str::to_owned))
            .unwrap_or_default()
    }

    /// Whether `deny` covers this link: its code, or its target's host.
    pub fn banned_by(&self, deny: &shared::Denylist) -> bool {
        shared::RouteKey::new(self.domain.as_str(), self.code.as_str())
            .is_some_and(|r| deny.blocks_code(&r))
            || deny.blocks_host(&self.target_host())
    }

    /// The record the edge holds for this link. `banned` marks it for a code ban or a
    /// ban of its target host.
    pub fn edge_record(&self, banned: bool) -> EdgeRecord {
        EdgeRecord {
            target: self.target_url.clone(),
            status: if banned {
                LinkStatus::Banned
            } else {
                match self.status {
                    LinkState::Active => LinkStatus::Active,
                    LinkState::Disabled => LinkStatus::Disabled,
                    LinkState::Deleted => LinkStatus::Deleted,
                }
            },
            redirect: self.redirect,
            // The edge works in seconds; round up so a link never ends early.
            expires_at: self
                .expires_at
                .map(|ms| ms.div_euclid(1000) + i64::from(ms.rem_euclid(1000) != 0)),
            version: self.version,
            forward_query: self.forward_query,
        }
    }

    /// The link as the API shows it.
    pub fn view(&self) -> LinkView {
        LinkView {
            domain: self.domain.clone(),
            code: self.code.clone(),
            target_url: self.target_url.clone(),
            status: self.status,
            redirect: self.redirect.code(),
            expires_at: self.expires_at.map(rfc3339),
            title: self.title.clone(),
            tags: self.tags.clone(),
            forward_query: self.forward_query,
            code_kind: self.code_kind,
            version: self.version,
            created_at: rfc3339(self.created_at),
            updated_at: rfc3339(self.updated_at),
            edge: match self.published {
                // Published means this version (or a newer one) reached the edge.
                Some(p) if p.version >= self.version => EdgeView {
                    state: EdgeState::Published,
                    published_at: Some(rfc3339(p.at)),
                    visible_everywhere_by: Some(rfc3339(p.at + KV_PROPAGATION_MS)),
                },
                _ => EdgeView {
                    state: EdgeState::Pending,
                    published_at: None,
                    visible_everywhere_by: None,
                },
            },
        }
    }
}

/// The JSON form of a link.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
pub struct LinkView {
    pub domain: String,
    pub code: String,
    pub target_url: String,
    pub status: LinkState,
    /// 301, 302, 307 or 308.
    pub redirect: u16,
    /// RFC 3339, UTC.
    pub expires_at: Option<String>,
    pub title: Option<String>,
    pub tags: Vec<String>,
    pub forward_query: bool,
    /// `generated` or `custom`.
    #[schema(value_type = String, example = "generated")]
    pub code_kind: CodeKind,
    pub version: u64,
    pub created_at: String,
    pub updated_at: String,
    pub edge: EdgeView,
}

/// Where the link stands at the edge.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
pub struct EdgeView {
    pub state: EdgeState,
    pub published_at: Option<String>,
    pub visible_everywhere_by: Option<String>,
}

/// Whether the edge has this version of the link.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum EdgeState {
    /// Not pushed yet: visible through the origin only (and through the edge's
    /// activation window for new links).
    Pending,
    /// Pushed; visible everywhere by `visible_everywhere_by`.
    Published,
}

/// Unix milliseconds as RFC 3339 in UTC.
pub fn rfc3339(ms: i64) -> String {
    OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
        .ok()
        .and_then(|t| t.format(&Rfc3339).ok())
        .unwrap_or_default()
}

/// RFC 3339 (any offset) as Unix milliseconds.
pub fn parse_rfc3339(s: &str) -> Option<i64> {
    let t = OffsetDateTime::parse(s, &Rfc3339).ok()?;
    i64::try_from(t.unix_timestamp_nanos() / 1_000_000).ok()
}

/// The body of `POST /v1/links` (and each item of a bulk create).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateLink {
    pub target_url: String,
    #[serde(default)]
    pub domain: Option<String>,
    /// A custom alias; without it a code is generated.
    #[serde(default)]
    pub code: Option<String>,
    /// RFC 3339.
    #[serde(default)]
    pub expires_at: Option<String>,
    #[serde(default)]
    pub redirect: Option<u16>,
    #[serde(default)]
    pub title: Option<String>,
    #[serde(default)]
    pub tags: Option<Vec<String>>,
    #[serde(default)]
    pub forward_query: Option<bool>,
}

/// Limits on free-text fields, so one link cannot bloat every copy of it.
pub const MAX_TITLE_CHARS: usize = 200;
/// See [`MAX_TITLE_CHARS`].
pub const MAX_TAGS: usize = 20;
/// See [`MAX_TITLE_CHARS`].
pub const MAX_TAG_CHARS: usize = 64;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_round_trip_through_rfc3339_with_any_offset() {
        let ms = parse_rfc3339("2030-01-02T03:04:05.678+02:00").unwrap();
        assert_eq!(rfc3339(ms), "2030-01-02T01:04:05.678Z");
        assert_eq!(parse_rfc3339("2030-01-02"), None);
        assert_eq!(parse_rfc3339("tomorrow"), None);
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
            forward_query: true,
            title: None,
            tags: vec![],
            created_at: 0,
            updated_at: 0,
            published: None,
        };
        assert_eq!(link.edge_record(false).expires_at, Some(2));
        link.expires_at = Some(2_000);
        assert_eq!(link.edge_record(false).expires_at, Some(2));
        assert_eq!(link.edge_record(true).status, LinkStatus::Banned);
        link.status = LinkState::Deleted;
        let rec = link.edge_record(false);
        assert_eq!(
            (rec.status, rec.version, rec.forward_query),
            (LinkStatus::Deleted, 2, true)
        );
    }
}

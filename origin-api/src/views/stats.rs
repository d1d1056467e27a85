//! The stats API's bodies: the query, a link's time series and top lists, an owner's
//! summary.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Granularity {
    #[default]
    Hour,
    Day,
}

/// The query of `GET /v1/links/{domain}/{code}/stats` and `GET /v1/stats`.
#[derive(Debug, Clone, Default, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct StatsParams {
    /// RFC 3339; the start of its hour (or UTC day). Default: 7 days before `to`.
    #[param(format = DateTime)]
    pub from: Option<String>,
    /// RFC 3339, exclusive; a partial last bucket is included whole. Default: now.
    #[param(format = DateTime)]
    pub to: Option<String>,
    /// `hour` (default) or `day` (UTC days).
    pub granularity: Option<Granularity>,
    /// Count bots in `visits`, `redirects` and the top lists (they are always reported
    /// apart in `bots`). Default false.
    pub include_bots: Option<bool>,
    /// Values per top list (links, for `/v1/stats`): 1 to 100, default 10.
    #[param(minimum = 1, maximum = 100)]
    pub top: Option<u32>,
}

/// One bucket of a series.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Point {
    /// The bucket's start, RFC 3339.
    pub start: String,
    #[serde(flatten)]
    pub counts: TotalsView,
}

/// Counts: `visits` and `redirects` (people only, unless bots are included) and `bots`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct TotalsView {
    /// Clicks answered, whatever the answer (a redirect, or 404/410/403 for a link that
    /// was disabled, expired, deleted or banned at the time).
    pub visits: i64,
    /// The visits sent on to the target.
    pub redirects: i64,
    /// Visits by bots (crawlers, link previewers, scripts), always reported here.
    pub bots: i64,
}

/// A value of a dimension and its visits.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Ranked {
    /// `null` when unknown: no country, or no referrer (a direct visit).
    pub value: Option<String>,
    pub visits: i64,
}

/// The most frequent values of each dimension.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Top {
    pub countries: Vec<Ranked>,
    pub referrers: Vec<Ranked>,
    pub devices: Vec<Ranked>,
    pub statuses: Vec<Ranked>,
    /// Visits per split variant (its index in the link's `split`, as a string), for the
    /// visits that got one.
    pub variants: Vec<Ranked>,
    /// Bots' visits that were a scanner's, by why (`network`: from a network that serves
    /// no people browsing; `prefetch`: fetched by a browser before anyone clicked).
    /// Listed whatever `include_bots` says: they are part of `totals.bots`
    /// (docs/scanners.md).
    #[serde(default)]
    pub scanners: Vec<Ranked>,
}

/// `GET /v1/links/{domain}/{code}/stats`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct LinkStats {
    pub domain: String,
    pub code: String,
    pub from: String,
    pub to: String,
    pub granularity: Granularity,
    /// Every click made before this instant that reached an origin is counted; later
    /// ones may still be on their way (the origin writes its own in batches, and the
    /// edge's queue holds clicks while it cannot deliver them). Close to now when all is
    /// well; further back while ingestion is behind.
    pub data_as_of: String,
    pub include_bots: bool,
    pub totals: TotalsView,
    /// Every bucket of the range, oldest first, zeros included.
    pub series: Vec<Point>,
    pub top: Top,
    /// For a link with `max_visits`: how many people its limit has counted, whatever
    /// the range (`null` for other links).
    #[serde(default)]
    pub visit_limit: Option<VisitLimit>,
}

/// A visit limit and the people it has counted: each visitor (an address, or an IPv6
/// /64) once a UTC day, while the link had a limit (docs/api.md, `max_visits`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct VisitLimit {
    pub max_visits: u64,
    pub counted: u64,
}

/// A link in an owner's summary.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct LinkTotals {
    pub domain: String,
    pub code: String,
    #[serde(flatten)]
    pub counts: TotalsView,
}

/// `GET /v1/stats`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct OwnerStats {
    pub from: String,
    pub to: String,
    /// Every click made before this instant that reached an origin is counted; later
    /// ones may still be on their way (the origin writes its own in batches, and the
    /// edge's queue holds clicks while it cannot deliver them). Close to now when all is
    /// well; further back while ingestion is behind.
    pub data_as_of: String,
    pub include_bots: bool,
    pub totals: TotalsView,
    /// The most visited links, most first.
    pub top_links: Vec<LinkTotals>,
}

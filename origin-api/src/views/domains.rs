//! The domains API's bodies: a registration, a change, and a domain as it is shown.

use super::present;
use crate::model::time::rfc3339;
use crate::model::{Domain, DomainAccess};
use serde::{Deserialize, Serialize};

/// Generated codes are at least this long: a shorter space runs out within days.
pub const MIN_CODE_LENGTH: i64 = 4;

/// And at most this long (the database's bound).
pub const MAX_CODE_LENGTH: i64 = 10;

/// The longest a visitor's browser may keep a redirect: the longest a ban, a delete or
/// an edit can take to reach a visitor who clicked before it.
pub const MAX_MAX_AGE_S: i64 = 3_600;

/// The most owners, and the most allowed target hosts, one domain lists.
pub const MAX_LIST: usize = 100;

/// The body of `POST /v1/domains`: either `"shared": true` or a list of `owners`, and
/// any settings, each defaulting to what a domain nobody configured does.
#[derive(Debug, Clone, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateDomain {
    /// The host name visitors use, e.g. `go.example`.
    #[schema(min_length = 1, max_length = 253)]
    pub domain: String,
    /// Any API key may create links on it.
    #[serde(default)]
    pub shared: bool,
    /// The owners whose keys may create links on it (when not shared).
    #[serde(default)]
    #[schema(max_items = 100)]
    pub owners: Vec<String>,
    /// `base62` (default), `base58` or `base36`.
    #[serde(default)]
    #[schema(pattern = "^(base62|base36|base58)$")]
    pub alphabet: Option<String>,
    /// Characters of a generated code: 4 to 10 (default 7); 7 to 10 for random codes.
    #[serde(default)]
    #[schema(minimum = 4, maximum = 10)]
    pub code_length: Option<i64>,
    /// `sequential` (default: codes numbered by the domain's sequence, which the edge
    /// dates) or `random` (drawn from a CSPRNG, 7 to 10 characters; docs/random-codes.md).
    #[serde(default)]
    #[schema(pattern = "^(sequential|random)$")]
    pub code_strategy: Option<String>,
    /// Codes and aliases match in any case (needs `base36`).
    #[serde(default)]
    pub case_insensitive: Option<bool>,
    /// Links forward the visitor's query unless they say otherwise.
    #[serde(default)]
    pub forward_query: Option<bool>,
    /// Every link shows its interstitial (the destination and a link to continue)
    /// instead of redirecting at once: a domain for untrusted targets.
    #[serde(default)]
    pub interstitial: Option<bool>,
    /// 301, 302 (default), 307 or 308, for links that do not choose.
    #[serde(default)]
    #[schema(minimum = 301, maximum = 308)]
    pub default_redirect: Option<i64>,
    /// How long a browser may keep a redirect: 0 to 3600 seconds (default 60).
    #[serde(default)]
    #[schema(minimum = 0, maximum = 3600)]
    pub max_age_s: Option<i64>,
    /// Where a visitor of a code with no link goes instead of a 404.
    #[serde(default)]
    pub not_found_url: Option<String>,
    /// The shortener this domain is moving from (`https://bit.ly`, or a base with a
    /// path, without a query): until `legacy_until`, a code with no link that is on
    /// the domain's list of legacy codes (`POST /v1/domains/{domain}/legacy-codes`,
    /// and every import) is sent to the same code there (302, `no-store`) ahead of
    /// `not_found_url`, and counted (`GET /v1/domains/{domain}/legacy-misses`). Any
    /// other code is not found.
    #[serde(default)]
    pub legacy_url: Option<String>,
    /// RFC 3339: when the fallback to `legacy_url` stops by itself, at most a year
    /// ahead. Setting `legacy_url` without it gives 90 days.
    #[serde(default)]
    pub legacy_until: Option<String>,
    /// Where a visitor of `/` goes.
    #[serde(default)]
    pub root_url: Option<String>,
    /// Where a visitor of an expired link goes instead of a 410.
    #[serde(default)]
    pub expired_url: Option<String>,
    /// The only hosts (with their subdomains) links on it may point at.
    #[serde(default)]
    pub allowed_target_hosts: Option<Vec<String>>,
    /// `active` (default) or `disabled`.
    #[serde(default)]
    #[schema(pattern = "^(active|disabled)$")]
    pub status: Option<String>,
    /// How the pages its visitors may get (not found, expired, the interstitial, the
    /// password form, …) look: Hop's own look without.
    #[serde(default)]
    pub brand: Option<BrandBody>,
}

/// A brand domain's name, above each page its visitors may get, and its colour for
/// links and buttons.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BrandBody {
    #[schema(min_length = 1, max_length = 60)]
    pub name: String,
    /// `#rrggbb`, with at least 4.5:1 contrast on white (WCAG AA), so its links stay
    /// readable: a lighter one is refused, saying its ratio.
    #[schema(pattern = "^#[0-9A-Fa-f]{6}$")]
    pub colour: String,
}

/// A domain as the API shows it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, utoipa::ToSchema)]
pub struct DomainView {
    pub domain: String,
    pub shared: bool,
    /// Empty when shared.
    pub owners: Vec<String>,
    pub status: String,
    pub alphabet: String,
    pub code_length: u8,
    /// `sequential` or `random`.
    pub code_strategy: String,
    pub case_insensitive: bool,
    pub forward_query: bool,
    pub interstitial: bool,
    pub default_redirect: u16,
    pub max_age_s: u32,
    pub not_found_url: Option<String>,
    pub legacy_url: Option<String>,
    /// RFC 3339: when the fallback to `legacy_url` stops by itself.
    pub legacy_until: Option<String>,
    pub root_url: Option<String>,
    pub expired_url: Option<String>,
    pub allowed_target_hosts: Option<Vec<String>>,
    pub brand: Option<BrandBody>,
    pub version: u64,
    pub created_at: String,
    pub updated_at: String,
}

impl Domain {
    pub fn view(&self) -> DomainView {
        let (shared, owners) = match &self.access {
            DomainAccess::Shared => (true, vec![]),
            DomainAccess::Owners(o) => (false, o.clone()),
        };
        DomainView {
            domain: self.domain.clone(),
            shared,
            owners,
            status: self.settings.status.as_str().to_owned(),
            alphabet: self.settings.codes.alphabet().name().to_owned(),
            code_length: self.settings.codes.length(),
            code_strategy: if self.settings.codes.is_random() {
                "random"
            } else {
                "sequential"
            }
            .to_owned(),
            case_insensitive: self.settings.case_insensitive,
            forward_query: self.settings.forward_query,
            interstitial: self.settings.interstitial,
            default_redirect: self.settings.default_redirect.code(),
            max_age_s: self.settings.max_age_s,
            not_found_url: self.settings.not_found_url.clone(),
            legacy_url: self.settings.legacy_url.clone(),
            legacy_until: self
                .settings
                .legacy_until
                .map(|s| rfc3339(s.saturating_mul(1000))),
            root_url: self.settings.root_url.clone(),
            expired_url: self.settings.expired_url.clone(),
            allowed_target_hosts: self.allowed_target_hosts.clone(),
            brand: self.settings.brand.as_ref().map(|b| BrandBody {
                name: b.name.clone(),
                colour: b.colour.clone(),
            }),
            version: self.version,
            created_at: rfc3339(self.created_at),
            updated_at: rfc3339(self.updated_at),
        }
    }
}

/// The body of `PATCH /v1/domains/{domain}`: any of the fields of a registration but
/// the name; `null` clears a URL or the allowed hosts. The code shape (`alphabet`,
/// `code_length`, `code_strategy`, `case_insensitive`) is fixed once a link lives on the domain.
#[derive(Debug, Clone, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateDomain {
    #[serde(default)]
    pub shared: Option<bool>,
    /// Replaces the owners (with `"shared": false` for a shared domain).
    #[serde(default)]
    #[schema(max_items = 100)]
    pub owners: Option<Vec<String>>,
    #[serde(default)]
    #[schema(pattern = "^(base62|base36|base58)$")]
    pub alphabet: Option<String>,
    #[serde(default)]
    #[schema(minimum = 4, maximum = 10)]
    pub code_length: Option<i64>,
    #[serde(default)]
    #[schema(pattern = "^(sequential|random)$")]
    pub code_strategy: Option<String>,
    #[serde(default)]
    pub case_insensitive: Option<bool>,
    #[serde(default)]
    pub forward_query: Option<bool>,
    #[serde(default)]
    pub interstitial: Option<bool>,
    #[serde(default)]
    #[schema(minimum = 301, maximum = 308)]
    pub default_redirect: Option<i64>,
    #[serde(default)]
    #[schema(minimum = 0, maximum = 3600)]
    pub max_age_s: Option<i64>,
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<String>)]
    pub not_found_url: Option<Option<String>>,
    /// `null` ends the fallback to the old shortener. A new one runs 90 days unless
    /// `legacy_until` says otherwise.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<String>)]
    pub legacy_url: Option<Option<String>>,
    /// RFC 3339, at most a year ahead: when the fallback stops by itself (a moment
    /// past ends it now). `null`: no end date, and so no fallback.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<String>)]
    pub legacy_until: Option<Option<String>>,
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<String>)]
    pub root_url: Option<Option<String>>,
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<String>)]
    pub expired_url: Option<Option<String>>,
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<Vec<String>>)]
    pub allowed_target_hosts: Option<Option<Vec<String>>>,
    #[serde(default)]
    #[schema(pattern = "^(active|disabled)$")]
    pub status: Option<String>,
    /// `null` gives the domain's pages Hop's own look again.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<BrandBody>)]
    pub brand: Option<Option<BrandBody>>,
}

/// One code visitors still ask the domain's old shortener for (`GET
/// /v1/domains/{domain}/legacy-misses`): no link here has it yet.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, utoipa::ToSchema)]
pub struct LegacyMissView {
    pub code: String,
    /// Where the visits went: the domain's `legacy_url` and the code.
    pub legacy_url: String,
    /// Visits sent on to the old shortener, bots' included.
    pub visits: i64,
    /// Of them, bots' (by user agent).
    pub bot_visits: i64,
    /// RFC 3339, UTC.
    pub first_seen_at: String,
    pub last_seen_at: String,
}

/// The query of `GET /v1/domains/{domain}/legacy-misses`.
#[derive(Debug, Clone, Default, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct LegacyMissParams {
    /// 1 to 1000 (default 100).
    #[param(minimum = 1, maximum = 1000)]
    pub limit: Option<i64>,
    /// `next_cursor` of the page before.
    #[param(min_length = 1)]
    pub cursor: Option<String>,
}

/// The body of `POST /v1/domains/{domain}/legacy-codes`: codes that lived at the
/// shortener the domain moved from, each a code or a short URL ending in one.
#[derive(Debug, Clone, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LegacyCodesBody {
    #[schema(min_items = 1, max_items = 10000)]
    pub codes: Vec<String>,
}

/// What adding to a domain's legacy list did, or what the list holds.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, utoipa::ToSchema)]
pub struct LegacyCodesView {
    /// Codes this request added (absent when reading).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub added: Option<u64>,
    /// Codes the list holds.
    pub listed: i64,
    /// The domain's fallback sends its listed codes on now: it has a `legacy_url` and
    /// its `legacy_until` is ahead.
    pub running: bool,
    pub legacy_url: Option<String>,
    /// RFC 3339.
    pub legacy_until: Option<String>,
    /// The code asked about (`?code=`), as the domain stores it, and whether it is listed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub known: Option<bool>,
}

/// The query of `GET /v1/domains/{domain}/legacy-codes`.
#[derive(Debug, Clone, Default, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct LegacyCodesParams {
    /// A code (or a short URL ending in one) to look up.
    #[param(min_length = 1, max_length = 256)]
    pub code: Option<String>,
}

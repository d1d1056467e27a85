//! Reports: anyone may tell the operators that a short link is abusive, through a public
//! form that says nothing about the link or its owner; admins read and close them
//! (docs/abuse.md).

use crate::db::Db;
use crate::error::AppError;
use crate::metrics::Metrics;
use crate::model::time::{now_ms, rfc3339};
use crate::principal::Principal;
use crate::ratelimit::CreateLimit;
use crate::store;
use serde::{Deserialize, Serialize};
use std::net::IpAddr;

/// Who reads and closes reports: whoever speaks for the instance.
const OPERATORS_ONLY: &str = "reports are for admins";

/// The longest description a report keeps, in characters.
pub const MAX_DETAILS: usize = 2_000;
/// The longest contact a report keeps, in characters.
pub const MAX_CONTACT: usize = 254;
/// The kinds of abuse a report may name.
pub const CATEGORIES: [&str; 4] = ["phishing", "malware", "spam", "other"];
/// Open reports kept per link. One is enough to look; a flood of reports naming one
/// link (a rival's, or a campaign to bury the desk) is taken, thanked as any other,
/// and not kept past this: the desk sees the link at the top of its count.
pub const MAX_OPEN_PER_LINK: i64 = 100;

/// The reports' service.
#[derive(Debug)]
pub struct Reports {
    db: Db,
    pub metrics: Metrics,
    /// Reports per client (an IPv4 address, or an IPv6 /64), a few a minute.
    pub limit: CreateLimit,
    /// Reports from everyone together, a minute (`--report-rate-global`): a flood
    /// from many addresses cannot fill the desk faster than this.
    pub global: CreateLimit,
    /// How long a resolved report is kept (`--report-retention`).
    pub retention: std::time::Duration,
    /// The domain a short URL without one names.
    pub default_domain: String,
    /// Who the client is, behind the operator's proxies.
    pub proxies: crate::proxies::Proxies,
}

impl Reports {
    /// The reports' service over `db`, with its two budgets (per client, everyone's);
    /// the other handles as the fields say.
    pub fn new(
        db: Db,
        metrics: Metrics,
        (limit, global): (CreateLimit, CreateLimit),
        retention: std::time::Duration,
        default_domain: String,
        proxies: crate::proxies::Proxies,
    ) -> Self {
        Reports {
            db,
            metrics,
            limit,
            global,
            retention,
            default_domain,
            proxies,
        }
    }
}

/// What the form sends.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
pub struct ReportForm {
    /// The short link, as the reporter has it (`https://go.example/abc` or
    /// `go.example/abc`).
    #[serde(default)]
    pub url: String,
    #[serde(default)]
    pub category: String,
    #[serde(default)]
    pub details: String,
    /// How to reach the reporter, if they want to be reached.
    #[serde(default)]
    pub contact: String,
}

/// A report as an admin reads it.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ReportView {
    pub id: i64,
    /// The short link reported, `domain/code`.
    pub link: String,
    pub category: String,
    pub details: String,
    pub contact: Option<String>,
    pub created_at: String,
    pub resolved_at: Option<String>,
    pub resolution: Option<String>,
    /// The link's owner, target and status now; absent when no such link exists.
    pub owner: Option<String>,
    pub target_url: Option<String>,
    pub status: Option<String>,
    /// How many reports name this link, this one included.
    pub reports_of_link: i64,
}

/// Who a report's budget is counted by: an IPv4 address, or the /64 of an IPv6 one (a
/// client holds a whole /64, and would otherwise have billions of budgets).
fn client_key(client: Option<IpAddr>) -> String {
    match client {
        None => "unknown".to_owned(),
        Some(IpAddr::V4(a)) => a.to_string(),
        Some(IpAddr::V6(a)) => {
            let prefix = u128::from(a) & !u128::from(u64::MAX);
            format!("{}/64", std::net::Ipv6Addr::from(prefix))
        }
    }
}

impl Reports {
    /// Records a report from `client`. The answer is the same whether or not the link
    /// exists, so the form tells a reporter nothing about it or its owner.
    pub async fn submit(
        &self,
        form: &ReportForm,
        peer: Option<std::net::SocketAddr>,
        headers: &axum::http::HeaderMap,
    ) -> Result<(), AppError> {
        // A page elsewhere could make its visitors' browsers post reports here.
        if !crate::same_site::from_this_site(headers, false) {
            return Err(AppError::Forbidden(
                "a report is sent from this site's own form (/_hop/report)",
            ));
        }
        let client: Option<IpAddr> = self.proxies.client_ip(peer, headers);
        self.limit.take(&client_key(client), 1)?;
        self.global.take("all", 1)?;
        let category = form.category.trim();
        if !CATEGORIES.contains(&category) {
            return Err(AppError::invalid(
                "category",
                "one of phishing, malware, spam, other",
            ));
        }
        let details = form.details.trim();
        if details.chars().count() > MAX_DETAILS {
            return Err(AppError::invalid(
                "details",
                format!("at most {MAX_DETAILS} characters"),
            ));
        }
        let contact = form.contact.trim();
        if contact.chars().count() > MAX_CONTACT {
            return Err(AppError::invalid(
                "contact",
                format!("at most {MAX_CONTACT} characters"),
            ));
        }
        let (domain, code) = self.route_of(&form.url).await?;
        if store::reports::open_of_link(&self.db, &domain, &code).await? >= MAX_OPEN_PER_LINK {
            // Thanked as any other: the answer says nothing of the link.
            self.metrics.reports_not_kept.inc();
            return Ok(());
        }
        let link = store::links::get(&self.db, &domain, &code).await?;
        let report = store::reports::NewReport {
            domain: &domain,
            code: &code,
            link_id: link.and_then(|l| i64::try_from(l.link_id).ok()),
            category,
            details,
            contact: Some(contact).filter(|c| !c.is_empty()),
            at: now_ms(),
        };
        store::reports::insert(&self.db, &report).await?;
        self.metrics.reports.inc();
        Ok(())
    }

    /// Forgets idle clients' budgets and the resolved reports past their retention, at
    /// `now` (Unix ms); how many reports went.
    pub async fn sweep(&self, now: i64) -> Result<u64, store::StoreError> {
        self.limit.shrink();
        self.global.shrink();
        let keep = i64::try_from(self.retention.as_millis()).unwrap_or(i64::MAX);
        store::reports::forget_resolved(&self.db, now.saturating_sub(keep)).await
    }

    /// The route a reported short URL names, on one of this shortener's domains.
    async fn route_of(&self, url: &str) -> Result<(String, String), AppError> {
        let bad = || {
            AppError::invalid(
                "url",
                "the short link as you have it, like https://go.example/abc",
            )
        };
        let raw = url.trim();
        let with_scheme = if raw.contains("://") {
            raw.to_owned()
        } else {
            format!("https://{raw}")
        };
        let parsed = url::Url::parse(&with_scheme).map_err(|_| bad())?;
        let host = parsed.host_str().ok_or_else(bad)?;
        let domain = shared::normalize_domain(host).map_err(|_| bad())?;
        let code = parsed.path().trim_matches('/');
        if code.is_empty() || code.contains('/') || code.len() > 128 {
            return Err(bad());
        }
        let own = domain == self.default_domain
            || store::domains::get(&self.db, &domain).await?.is_some();
        if !own {
            return Err(AppError::invalid(
                "url",
                format!("{domain} is not a domain of this shortener"),
            ));
        }
        let settings = store::domains::settings(&self.db, &domain).await?;
        let code = settings.canonical_code(code).into_owned();
        Ok((domain, code))
    }

    /// A page of reports for `who` (an operator's only), newest first, after `cursor`
    /// (a `next_cursor` this listing gave); resolved ones too when `all`. Who asks is
    /// judged before what is asked.
    pub async fn list(
        &self,
        who: &Principal,
        all: bool,
        cursor: Option<&str>,
        limit: i64,
    ) -> Result<(Vec<ReportView>, Option<String>), AppError> {
        who.require_operator(OPERATORS_ONLY)?;
        let cursor = cursor
            .map(|c| {
                c.parse::<i64>()
                    .ok()
                    .filter(|n| *n > 0 && !c.starts_with(['0', '+']))
                    .ok_or_else(|| AppError::invalid("cursor", "not a cursor this listing gave"))
            })
            .transpose()?;
        if !(1..=1000).contains(&limit) {
            return Err(AppError::invalid("limit", "1 to 1000"));
        }
        let before = cursor.unwrap_or(i64::MAX);
        let mut rows = store::reports::list(&self.db, before, all, limit + 1).await?;
        let more = rows.len() > usize::try_from(limit).unwrap_or(usize::MAX);
        rows.truncate(usize::try_from(limit).unwrap_or(usize::MAX));
        let next = more
            .then(|| rows.last().map(|r| r.report_id.to_string()))
            .flatten();
        let items = rows
            .into_iter()
            .map(|r| ReportView {
                id: r.report_id,
                link: format!("{}/{}", r.domain, r.code),
                category: r.category,
                details: r.details,
                contact: r.contact,
                created_at: rfc3339(r.created_at),
                resolved_at: r.resolved_at.map(rfc3339),
                resolution: r.resolution,
                owner: r.owner_id,
                target_url: r.target_url,
                status: r.status,
                reports_of_link: r.reports_of_link,
            })
            .collect();
        Ok((items, next))
    }

    /// Closes report `id`, saying what was done (`banned`, `dismissed`, ...).
    pub async fn resolve(
        &self,
        who: &Principal,
        id: i64,
        resolution: &str,
    ) -> Result<(), AppError> {
        who.require_operator(OPERATORS_ONLY)?;
        let resolution = resolution.trim();
        if resolution.is_empty() || resolution.chars().count() > 500 {
            return Err(AppError::invalid("resolution", "1 to 500 characters"));
        }
        match store::reports::resolve(&self.db, id, resolution, now_ms()).await? {
            Some(_) => Ok(()),
            None => Err(AppError::NotFound),
        }
    }
}

//! The operators' pages (`/admin`): the publisher's lag and the rows the edge refused
//! (retried from here), bans (made with a reason, lifted), the domains and their
//! settings, and the users. Only users marked operator (`hop-origin users create
//! --operator`) reach them; anyone else finds nothing there.

use super::page_error::{failed, not_found_for, refusal};
use super::render::{capitalized, refused_post, render, utc, Nav};
use super::session::Signed;
use crate::accounts::{AccountError, Accounts, SignedIn};
use crate::bans::Bans;
use crate::domains::{update_domain, Domains};
use crate::error::AppError;
use crate::model::time::now_ms;
use crate::model::{BanTarget, DomainAccess, DomainStatus};
use crate::outbox::Outbox;
use crate::views::bans::CreateBan;
use crate::views::domains::UpdateDomain;
use askama::Template;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::Form;
use serde::Deserialize;
use std::sync::Arc;

/// Dead letters one page lists.
const FAILED_SHOWN: u32 = 100;

/// The operator's session, or the page that says there is nothing here.
fn operator(signed: &SignedIn) -> Option<Response> {
    (!signed.user.operator).then(|| not_found_for(signed))
}

#[derive(Deserialize)]
pub(super) struct CsrfOnly {
    #[serde(default)]
    csrf: String,
}

#[derive(Template)]
#[template(path = "dashboard/admin.html")]
struct AdminPage {
    nav: Option<Nav>,
    csrf: String,
    lanes: Vec<Lane>,
    failed: Vec<Failed>,
    notice: Option<String>,
}

struct Lane {
    name: String,
    rows: i64,
    /// How long the oldest has waited, in words; empty with none.
    oldest: String,
}

struct Failed {
    seq: i64,
    kind: String,
    key: String,
    version: i64,
    attempts: i64,
    last_error: String,
    failed_at: String,
}

/// A duration in a few words: `45 s`, `12 min`, `3 h`.
fn waited(ms: i64) -> String {
    let s = ms.max(0) / 1000;
    match s {
        0..=119 => format!("{s} s"),
        120..=7199 => format!("{} min", s / 60),
        _ => format!("{} h", s / 3600),
    }
}

/// `GET /admin`: how far behind the publisher is, and what the edge refused.
pub(super) async fn overview(
    Signed(signed): Signed,
    State(outbox): State<Arc<Outbox>>,
) -> Response {
    admin_page(&signed, &outbox, None).await
}

async fn admin_page(signed: &SignedIn, outbox: &Outbox, notice: Option<String>) -> Response {
    let who = signed.principal(None);
    let found = tokio::try_join!(outbox.backlog(&who), outbox.failed(&who, 0, FAILED_SHOWN));
    let (backlog, failed) = match found {
        Ok(found) => found,
        Err(e) => return refusal(signed, e),
    };
    let now = now_ms();
    render(
        StatusCode::OK,
        &AdminPage {
            nav: Nav::of(signed, None),
            csrf: signed.csrf_token.clone(),
            lanes: backlog
                .into_iter()
                .map(|b| Lane {
                    name: b.lane,
                    rows: b.rows,
                    oldest: b.oldest_at.map(|at| waited(now - at)).unwrap_or_default(),
                })
                .collect(),
            failed: failed
                .rows
                .into_iter()
                .map(|f| Failed {
                    seq: f.seq,
                    kind: f.kind,
                    key: f.route_key,
                    version: f.version,
                    attempts: f.attempts,
                    last_error: f.last_error,
                    failed_at: utc(f.failed_at),
                })
                .collect(),
            notice,
        },
    )
}

#[derive(Deserialize)]
pub(super) struct RetryForm {
    #[serde(default)]
    csrf: String,
    /// One row's `seq`, or empty for all.
    #[serde(default)]
    seq: String,
}

/// `POST /admin/outbox/retry`: rows set aside put back in line.
pub(super) async fn retry(
    Signed(signed): Signed,
    State(outbox): State<Arc<Outbox>>,
    Form(form): Form<RetryForm>,
) -> Response {
    if !signed.csrf_matches(&form.csrf) {
        return refused_post();
    }
    let seq = match form.seq.trim() {
        "" => None,
        s => match s.parse() {
            Ok(seq) => Some(seq),
            Err(_) => return admin_page(&signed, &outbox, Some("No such row.".into())).await,
        },
    };
    match outbox.retry(&signed.principal(None), seq).await {
        Ok(n) => {
            admin_page(
                &signed,
                &outbox,
                Some(format!("{n} put back in line for the publisher.")),
            )
            .await
        }
        Err(e) => refusal(&signed, e),
    }
}

#[derive(Template)]
#[template(path = "dashboard/admin_bans.html")]
struct BansPage {
    nav: Option<Nav>,
    csrf: String,
    bans: Vec<BanRow>,
    error: Option<String>,
    form: BanForm,
}

struct BanRow {
    id: i64,
    what: String,
    reason: String,
    by: String,
    at: String,
}

#[derive(Deserialize, Default)]
pub(super) struct BanForm {
    #[serde(default)]
    csrf: String,
    /// `host` or `code`.
    #[serde(default)]
    kind: String,
    #[serde(default)]
    host: String,
    #[serde(default)]
    domain: String,
    #[serde(default)]
    code: String,
    #[serde(default)]
    reason: String,
}

async fn bans_page(
    signed: &SignedIn,
    bans: &Bans,
    status: StatusCode,
    error: Option<String>,
    form: BanForm,
) -> Response {
    let active = match bans.list(&signed.principal(None), false).await {
        Ok(active) => active,
        Err(e) => return failed(e),
    };
    render(
        status,
        &BansPage {
            nav: Nav::of(signed, None),
            csrf: signed.csrf_token.clone(),
            bans: active
                .into_iter()
                .map(|b| BanRow {
                    id: b.ban_id,
                    what: match b.target {
                        BanTarget::Code { domain, code } => format!("the code {domain}/{code}"),
                        BanTarget::Host { host } => format!("the host {host} and those under it"),
                    },
                    reason: b.reason,
                    by: b.created_by,
                    at: utc(b.created_at),
                })
                .collect(),
            error,
            form: BanForm {
                csrf: String::new(),
                ..form
            },
        },
    )
}

/// `GET /admin/bans`: the active bans, and a form for a new one.
pub(super) async fn bans(Signed(signed): Signed, State(bans): State<Arc<Bans>>) -> Response {
    if let Some(refused) = operator(&signed) {
        return refused;
    }
    let form = BanForm {
        kind: "host".into(),
        ..BanForm::default()
    };
    bans_page(&signed, &bans, StatusCode::OK, None, form).await
}

/// `POST /admin/bans`: a ban, with its reason; at the edge within seconds.
pub(super) async fn ban(
    Signed(signed): Signed,
    State(bans): State<Arc<Bans>>,
    Form(form): Form<BanForm>,
) -> Response {
    if !signed.csrf_matches(&form.csrf) {
        return refused_post();
    }
    if let Some(refused) = operator(&signed) {
        return refused;
    }
    let text = |s: &str| Some(s.trim().to_owned()).filter(|s| !s.is_empty());
    let req = CreateBan {
        kind: form.kind.trim().to_owned(),
        host: if form.kind == "host" {
            text(&form.host)
        } else {
            None
        },
        domain: if form.kind == "code" {
            text(&form.domain)
        } else {
            None
        },
        code: if form.kind == "code" {
            text(&form.code)
        } else {
            None
        },
        reason: form.reason.clone(),
    };
    // Who banned is the user, as a key's ban names its key.
    let by = format!("user:{}", signed.user.email);
    match bans.create(&signed.principal(None), &req, &by).await {
        Ok(_) => Redirect::to("/admin/bans").into_response(),
        Err(e) if !e.status().is_server_error() => {
            let why = Some(capitalized(&e.to_string()));
            bans_page(&signed, &bans, e.status(), why, form).await
        }
        Err(e) => failed(e),
    }
}

/// `POST /admin/bans/{id}/lift`.
pub(super) async fn lift(
    Signed(signed): Signed,
    State(bans): State<Arc<Bans>>,
    Path(id): Path<i64>,
    Form(form): Form<CsrfOnly>,
) -> Response {
    if !signed.csrf_matches(&form.csrf) {
        return refused_post();
    }
    if let Some(refused) = operator(&signed) {
        return refused;
    }
    match bans.lift(&signed.principal(None), id).await {
        Ok(()) => Redirect::to("/admin/bans").into_response(),
        Err(AppError::BanNotFound) => not_found_for(&signed),
        Err(e) => failed(e),
    }
}

#[derive(Template)]
#[template(path = "dashboard/admin_domains.html")]
struct DomainsPage {
    nav: Option<Nav>,
    csrf: String,
    domains: Vec<DomainRow>,
    error: Option<String>,
}

struct DomainRow {
    name: String,
    version: u64,
    owners: String,
    shared: bool,
    active: bool,
    codes: String,
    default_redirect: u16,
    interstitial: bool,
    forward_query: bool,
    not_found_url: String,
    legacy_url: String,
    /// `YYYY-MM-DD` (UTC), as a date input shows it.
    legacy_until: String,
    root_url: String,
    expired_url: String,
    allowed_target_hosts: String,
    brand_name: String,
    brand_colour: String,
}

async fn domains_page(
    signed: &SignedIn,
    domains: &Domains,
    status: StatusCode,
    error: Option<String>,
) -> Response {
    let all = match domains.visible(&signed.principal(None)).await {
        Ok(all) => all,
        Err(e) => return refusal(signed, e),
    };
    render(
        status,
        &DomainsPage {
            nav: Nav::of(signed, None),
            csrf: signed.csrf_token.clone(),
            domains: all
                .into_iter()
                .map(|d| {
                    let s = &d.settings;
                    let (shared, owners) = match &d.access {
                        DomainAccess::Shared => (true, String::new()),
                        DomainAccess::Owners(o) => (false, o.join(", ")),
                    };
                    DomainRow {
                        codes: format!(
                            "{} characters of {}{}",
                            s.codes.length(),
                            s.codes.alphabet().name(),
                            if s.case_insensitive { ", any case" } else { "" }
                        ),
                        default_redirect: s.default_redirect.code(),
                        interstitial: s.interstitial,
                        forward_query: s.forward_query,
                        not_found_url: s.not_found_url.clone().unwrap_or_default(),
                        legacy_url: s.legacy_url.clone().unwrap_or_default(),
                        legacy_until: s
                            .legacy_until
                            .map(|at| crate::model::time::rfc3339(at.saturating_mul(1000)))
                            .and_then(|t| t.get(..10).map(str::to_owned))
                            .unwrap_or_default(),
                        root_url: s.root_url.clone().unwrap_or_default(),
                        expired_url: s.expired_url.clone().unwrap_or_default(),
                        allowed_target_hosts: d
                            .allowed_target_hosts
                            .clone()
                            .map(|h| h.join(", "))
                            .unwrap_or_default(),
                        brand_name: s.brand.as_ref().map(|b| b.name.clone()).unwrap_or_default(),
                        brand_colour: s
                            .brand
                            .as_ref()
                            .map(|b| b.colour.clone())
                            .unwrap_or_default(),
                        active: s.status == DomainStatus::Active,
                        name: d.domain,
                        version: d.version,
                        owners,
                        shared,
                    }
                })
                .collect(),
            error,
        },
    )
}

/// `GET /admin/domains`: every registered domain, each with its settings in a form.
pub(super) async fn domains(
    Signed(signed): Signed,
    State(domains): State<Arc<Domains>>,
) -> Response {
    if let Some(refused) = operator(&signed) {
        return refused;
    }
    domains_page(&signed, &domains, StatusCode::OK, None).await
}

/// `POST /admin/domains/{domain}`: the domain's settings, at the version the page
/// showed; a change made meanwhile is said, not overwritten.
pub(super) async fn update(
    Signed(signed): Signed,
    State(domains): State<Arc<Domains>>,
    Path(name): Path<String>,
    Form(posted): Form<Vec<(String, String)>>,
) -> Response {
    let field = |name: &str| super::render::posted(&posted, name).trim();
    if !signed.csrf_matches(field("csrf")) {
        return refused_post();
    }
    if let Some(refused) = operator(&signed) {
        return refused;
    }
    let changed = async {
        let version: u64 = field("version")
            .parse()
            .map_err(|_| AppError::invalid("version", "reload the page"))?;
        let text = |n: &str| Some(field(n).to_owned()).filter(|s| !s.is_empty());
        let redirect: i64 = field("default_redirect")
            .parse()
            .map_err(|_| AppError::invalid("default_redirect", "301, 302, 307 or 308"))?;
        let shared = field("shared") == "1";
        let list = |n: &str| -> Vec<String> {
            field(n)
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect()
        };
        let hosts = list("allowed_target_hosts");
        let patch = UpdateDomain {
            shared: Some(shared),
            owners: (!shared).then(|| list("owners")),
            default_redirect: Some(redirect),
            interstitial: Some(field("interstitial") == "1"),
            forward_query: Some(field("forward_query") == "1"),
            not_found_url: Some(text("not_found_url")),
            legacy_url: Some(text("legacy_url")),
            // A date is its first moment, UTC; empty keeps the end the domain has (a
            // new old shortener gets the default).
            legacy_until: text("legacy_until").map(|d| Some(format!("{d}T00:00:00Z"))),
            root_url: Some(text("root_url")),
            expired_url: Some(text("expired_url")),
            allowed_target_hosts: Some((!hosts.is_empty()).then_some(hosts)),
            brand: Some(match (text("brand_name"), text("brand_colour")) {
                (None, None) => None,
                (name, colour) => Some(crate::views::domains::BrandBody {
                    name: name.unwrap_or_default(),
                    colour: colour.unwrap_or_default(),
                }),
            }),
            status: Some(
                if field("active") == "1" {
                    "active"
                } else {
                    "disabled"
                }
                .to_owned(),
            ),
            ..UpdateDomain::default()
        };
        update_domain(&domains, &name, version, patch).await
    }
    .await;
    match changed {
        Ok(_) => Redirect::to("/admin/domains").into_response(),
        Err(AppError::Stale { .. }) => {
            let why = format!("{name} was changed by someone else since this page was loaded: nothing was saved. Its settings are shown as they are now.");
            domains_page(&signed, &domains, StatusCode::CONFLICT, Some(why)).await
        }
        Err(AppError::NotFound) => not_found_for(&signed),
        Err(e) if !e.status().is_server_error() => {
            let why = format!("{name}: {}", e);
            domains_page(&signed, &domains, e.status(), Some(capitalized(&why))).await
        }
        Err(e) => failed(e),
    }
}

#[derive(Template)]
#[template(path = "dashboard/admin_users.html")]
struct UsersPage {
    nav: Option<Nav>,
    csrf: String,
    users: Vec<UserRow>,
}

struct UserRow {
    email: String,
    operator: bool,
    created: String,
    disabled: Option<String>,
    /// `owner (role)`, joined.
    memberships: String,
}

/// `GET /admin/users`: every user, their owners and roles.
pub(super) async fn users(
    Signed(signed): Signed,
    State(accounts): State<Arc<Accounts>>,
) -> Response {
    let all = match accounts.users(&signed.principal(None)).await {
        Ok(all) => all,
        Err(AccountError::NotAnOperator) => return not_found_for(&signed),
        Err(e) => return failed(e),
    };
    let mut users = Vec::with_capacity(all.len());
    for (u, memberships) in all {
        let memberships = memberships
            .iter()
            .map(|m| format!("{} ({})", m.owner_id, m.role.as_str()))
            .collect::<Vec<_>>()
            .join(", ");
        users.push(UserRow {
            email: u.email,
            operator: u.operator,
            created: utc(u.created_at),
            disabled: u.disabled_at.map(utc),
            memberships,
        });
    }
    render(
        StatusCode::OK,
        &UsersPage {
            nav: Nav::of(&signed, None),
            csrf: signed.csrf_token.clone(),
            users,
        },
    )
}

#[derive(Deserialize)]
pub(super) struct DisableForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    email: String,
}

/// `POST /admin/users/disable`: the user is out, every session of theirs ended.
pub(super) async fn disable(
    Signed(signed): Signed,
    State(accounts): State<Arc<Accounts>>,
    Form(form): Form<DisableForm>,
) -> Response {
    if !signed.csrf_matches(&form.csrf) {
        return refused_post();
    }
    if let Some(refused) = operator(&signed) {
        return refused;
    }
    let done = async {
        let user = accounts.user(&form.email).await?;
        accounts.disable(&user).await
    }
    .await;
    match done {
        Ok(_) => {
            tracing::info!(email = %form.email, by = %signed.user.user_id, "user disabled from the dashboard");
            Redirect::to("/admin/users").into_response()
        }
        Err(crate::accounts::AccountError::NoSuchUser) => not_found_for(&signed),
        Err(e) => failed(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_are_said_in_a_few_words() {
        assert_eq!(waited(45_000), "45 s");
        assert_eq!(waited(12 * 60_000), "12 min");
        assert_eq!(waited(3 * 3_600_000 + 5), "3 h");
        assert_eq!(waited(-5), "0 s");
    }
}

#[derive(Deserialize)]
pub(super) struct OwnerQuery {
    #[serde(default)]
    owner: String,
}

/// `GET /admin/owner?owner=`: to an owner's members page, for an invitation.
pub(super) async fn owner(
    Signed(signed): Signed,
    axum::extract::Query(q): axum::extract::Query<OwnerQuery>,
) -> Response {
    if let Some(refused) = operator(&signed) {
        return refused;
    }
    Redirect::to(&format!(
        "/o/{}/members",
        super::pages::path_segment(q.owner.trim())
    ))
    .into_response()
}

//! The dashboard's pages: each handler reads what it needs, calls a service, and renders
//! a template or redirects.

use super::chart::Sparkline;
use super::page_error::{failed, not_found_for};
use super::render::{capitalized, choices, message, refused_post, render, utc, Choice, Nav};
use super::session::{
    cookie, device_cookie_name, login_cookie_name, no_session_cookie, session_cookie, set_cookie,
    token_tied, with_tied_token, ClientIp, Signed,
};
use crate::accounts::password::MIN_PASSWORD_CHARS;
use crate::accounts::{AccountError, Accounts, SignedIn};
use crate::error::AppError;
use crate::links::Links;
use crate::model::time::{now_ms, parse_rfc3339, rfc3339};
use crate::model::{Creator, Link, ListFilter, Role, KV_PROPAGATION_MS};
use crate::views::links::ListParams;
use askama::Template;
use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{AppendHeaders, IntoResponse, Redirect, Response};
use axum::Form;
use serde::de::value::StrDeserializer;
use serde::de::IntoDeserializer;
use serde::Deserialize;
use std::collections::HashMap;
use std::sync::Arc;

#[derive(Template)]
#[template(path = "dashboard/login.html")]
struct LoginPage {
    nav: Option<Nav>,
    csrf: String,
    email: String,
    error: Option<String>,
}

#[derive(Template)]
#[template(path = "dashboard/account.html")]
struct AccountPage {
    nav: Option<Nav>,
    email: String,
    operator: bool,
    csrf: String,
    min_chars: usize,
    notice: Option<&'static str>,
    error: Option<String>,
}

#[derive(Template)]
#[template(path = "dashboard/links.html")]
struct LinksPage {
    nav: Option<Nav>,
    owner: String,
    q: String,
    domains: Vec<Choice>,
    tag: String,
    statuses: Vec<Choice>,
    conditions: Vec<Choice>,
    accesses: Vec<Choice>,
    features: Vec<Choice>,
    from: String,
    to: String,
    /// Whether any filter is set (the page offers to clear them).
    filtered: bool,
    links: Vec<LinkRow>,
    next: Option<String>,
    error: Option<String>,
    csrf: String,
    may_edit: bool,
    may_admin: bool,
}

struct LinkRow {
    /// The link's own page in the dashboard.
    path: String,
    /// What a bulk action gets for it: `domain/code@version`, the version as shown.
    selection: String,
    short_url: String,
    target_url: String,
    target_host: String,
    title: String,
    tags: Vec<String>,
    status: &'static str,
    /// Badges beyond the status: expired, limit reached, banned.
    marks: Vec<&'static str>,
    /// Where it stands at the edge, in words, and when it is everywhere.
    edge: &'static str,
    edge_by: Option<String>,
    created_at: String,
    created_on: String,
    /// People's visits over the last 7 days, a day a point.
    clicks: Sparkline,
}

impl LinkRow {
    fn of(
        owner: &str,
        link: &Link,
        short_url: String,
        days: &[i64],
        banned: bool,
        now: i64,
    ) -> Self {
        let created_at = rfc3339(link.created_at);
        let mut marks = Vec::new();
        if link.expires_at.is_some_and(|at| at <= now) {
            marks.push("expired");
        }
        if link.options.exhausted {
            marks.push("limit reached");
        }
        if banned {
            marks.push("banned");
        }
        let (edge, edge_by) = match link.published {
            Some(p) if p.version >= link.version => {
                let everywhere = p.at + KV_PROPAGATION_MS;
                if everywhere <= now {
                    ("at the edge", None)
                } else {
                    ("published", Some(utc(everywhere)))
                }
            }
            _ => ("pending", None),
        };
        LinkRow {
            selection: format!("{}/{}@{}", link.domain, link.code, link.version),
            path: format!(
                "/o/{}/links/{}/{}",
                path_segment(owner),
                path_segment(&link.domain),
                path_segment(&link.code)
            ),
            short_url,
            target_host: url::Url::parse(&link.target_url)
                .ok()
                .and_then(|u| u.host_str().map(str::to_owned))
                .unwrap_or_default(),
            target_url: link.target_url.clone(),
            title: link.title.clone().unwrap_or_default(),
            tags: link.tags.clone(),
            status: link.status.as_str(),
            marks,
            edge,
            edge_by,
            created_on: created_at.chars().take(10).collect(),
            created_at,
            clicks: Sparkline::of(days),
        }
    }
}

/// The form token every signed-in post carries.
#[derive(Deserialize)]
pub(super) struct CsrfForm {
    #[serde(default)]
    csrf: String,
}

/// Whether a signed-in post may be acted on.
fn post_allowed(signed: &SignedIn, csrf: &str) -> bool {
    // Where it comes from was checked before it was read (`session::same_site_posts`).
    signed.csrf_matches(csrf)
}

/// `GET /login`.
pub(super) async fn login_form(State(accounts): State<Arc<Accounts>>) -> Response {
    login_page(&accounts, StatusCode::OK, String::new(), None)
}

/// The sign-in form with a fresh token, tied to this browser by a cookie.
fn login_page(
    accounts: &Accounts,
    status: StatusCode,
    email: String,
    error: Option<String>,
) -> Response {
    with_tied_token(accounts, |csrf| {
        render(
            status,
            &LoginPage {
                nav: None,
                csrf,
                email,
                error,
            },
        )
    })
}

#[derive(Deserialize)]
pub(super) struct LoginForm {
    #[serde(default)]
    email: String,
    #[serde(default)]
    password: String,
    #[serde(default)]
    csrf: String,
}

/// `POST /login`.
pub(super) async fn login(
    State(accounts): State<Arc<Accounts>>,
    ClientIp(client): ClientIp,
    headers: HeaderMap,
    Form(form): Form<LoginForm>,
) -> Response {
    let tied = token_tied(&accounts, &headers, &form.csrf);
    if !tied {
        return refused_post();
    }
    let device = cookie(&headers, device_cookie_name(&accounts)).unwrap_or_default();
    match accounts
        .sign_in(&form.email, &form.password, client, Some(device))
        .await
    {
        // Appended: an array of headers would keep only the last `Set-Cookie`.
        Ok(new) => {
            let mut response = (
                AppendHeaders([
                    (header::SET_COOKIE, session_cookie(&accounts, &new.secret)),
                    (
                        header::SET_COOKIE,
                        set_cookie(&accounts, login_cookie_name(&accounts), "", 0),
                    ),
                ]),
                Redirect::to("/"),
            )
                .into_response();
            if let Some(device) = &new.device {
                let kept = set_cookie(
                    &accounts,
                    device_cookie_name(&accounts),
                    device,
                    crate::accounts::DEVICE_KEPT_MS / 1000,
                );
                if let Ok(value) = axum::http::HeaderValue::from_str(&kept) {
                    response.headers_mut().append(header::SET_COOKIE, value);
                }
            }
            response
        }
        Err(e) => {
            let status = match e {
                AccountError::WrongCredentials | AccountError::BadEmail(_) => {
                    StatusCode::UNAUTHORIZED
                }
                AccountError::Disabled => StatusCode::FORBIDDEN,
                AccountError::Locked { .. } | AccountError::Throttled => {
                    StatusCode::TOO_MANY_REQUESTS
                }
                AccountError::Busy => StatusCode::SERVICE_UNAVAILABLE,
                other => return failed(other),
            };
            let error = match e {
                AccountError::BadEmail(_) => AccountError::WrongCredentials.to_string(),
                other => other.to_string(),
            };
            login_page(&accounts, status, form.email, Some(capitalized(&error)))
        }
    }
}

/// `POST /logout`: this session ends.
pub(super) async fn logout(
    Signed(signed): Signed,
    State(accounts): State<Arc<Accounts>>,
    Form(form): Form<CsrfForm>,
) -> Response {
    sign_out(&accounts, &signed, &form, false).await
}

/// `POST /logout/everywhere`: every session of the user ends.
pub(super) async fn logout_everywhere(
    Signed(signed): Signed,
    State(accounts): State<Arc<Accounts>>,
    Form(form): Form<CsrfForm>,
) -> Response {
    sign_out(&accounts, &signed, &form, true).await
}

async fn sign_out(
    accounts: &Accounts,
    signed: &SignedIn,
    form: &CsrfForm,
    everywhere: bool,
) -> Response {
    if !post_allowed(signed, &form.csrf) {
        return refused_post();
    }
    let ended = if everywhere {
        accounts.sign_out_everywhere(signed).await.map(|_| ())
    } else {
        accounts.sign_out(signed).await
    };
    if let Err(e) = ended {
        return failed(e);
    }
    (
        [(header::SET_COOKIE, no_session_cookie(accounts))],
        Redirect::to("/login"),
    )
        .into_response()
}

/// `GET /`: the first owner's links, or a word on having none.
pub(super) async fn home(Signed(signed): Signed) -> Response {
    match signed.memberships.first() {
        Some(m) => Redirect::to(&format!("/o/{}", path_segment(&m.owner_id))).into_response(),
        None => message(
            StatusCode::OK,
            Nav::of(&signed, None),
            "No owners yet",
            "You are not a member of any owner yet: ask an owner's admin to invite you.",
        ),
    }
}

/// `GET /account`.
pub(super) async fn account(Signed(signed): Signed) -> Response {
    account_page(&signed, StatusCode::OK, None, None)
}

fn account_page(
    signed: &SignedIn,
    status: StatusCode,
    notice: Option<&'static str>,
    error: Option<String>,
) -> Response {
    render(
        status,
        &AccountPage {
            nav: Nav::of(signed, None),
            email: signed.user.email.clone(),
            operator: signed.user.operator,
            csrf: signed.csrf_token.clone(),
            min_chars: MIN_PASSWORD_CHARS,
            notice,
            error,
        },
    )
}

#[derive(Deserialize)]
pub(super) struct PasswordForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    current: String,
    #[serde(default)]
    new: String,
}

/// `POST /account/password`.
pub(super) async fn change_password(
    Signed(signed): Signed,
    State(accounts): State<Arc<Accounts>>,
    Form(form): Form<PasswordForm>,
) -> Response {
    if !post_allowed(&signed, &form.csrf) {
        return refused_post();
    }
    match accounts
        .change_password(&signed, &form.current, &form.new)
        .await
    {
        Ok(()) => account_page(
            &signed,
            StatusCode::OK,
            Some("Your password is changed."),
            None,
        ),
        Err(AccountError::WrongCredentials) => account_page(
            &signed,
            StatusCode::FORBIDDEN,
            None,
            Some("The current password is wrong.".into()),
        ),
        Err(AccountError::BadPassword(why)) => account_page(
            &signed,
            StatusCode::UNPROCESSABLE_ENTITY,
            None,
            Some(capitalized(&why.to_string())),
        ),
        Err(e @ (AccountError::Locked { .. } | AccountError::Throttled)) => account_page(
            &signed,
            StatusCode::TOO_MANY_REQUESTS,
            None,
            Some(capitalized(&e.to_string())),
        ),
        Err(AccountError::Busy) => account_page(
            &signed,
            StatusCode::SERVICE_UNAVAILABLE,
            None,
            Some(capitalized(&AccountError::Busy.to_string())),
        ),
        Err(e) => failed(e),
    }
}

/// The links page's filters, as its form sends them: empty means any.
#[derive(Debug, Default, Deserialize)]
pub(super) struct LinksQuery {
    #[serde(default)]
    q: String,
    #[serde(default)]
    domain: String,
    #[serde(default)]
    tag: String,
    #[serde(default)]
    status: String,
    #[serde(default)]
    condition: String,
    #[serde(default)]
    access: String,
    #[serde(default)]
    has: String,
    /// `YYYY-MM-DD`, UTC: created on or after that day.
    #[serde(default)]
    from: String,
    /// `YYYY-MM-DD`, UTC: created on or before that day.
    #[serde(default)]
    to: String,
    #[serde(default)]
    cursor: String,
}

impl LinksQuery {
    /// The listing the API would run for the same filters.
    fn params(&self) -> Result<ListParams, AppError> {
        let text = |s: &str| Some(s.trim().to_owned()).filter(|s| !s.is_empty());
        let day = |field: &'static str, s: &str, plus_days: i64| {
            text(s)
                .map(|d| {
                    parse_rfc3339(&format!("{d}T00:00:00Z"))
                        .map(|ms| rfc3339(ms + plus_days * 86_400_000))
                        .ok_or_else(|| AppError::invalid(field, "a date, as 2026-11-30"))
                })
                .transpose()
        };
        Ok(ListParams {
            domain: text(&self.domain),
            tag: text(&self.tag),
            status: choice("status", &self.status)?,
            q: text(&self.q),
            condition: choice("condition", &self.condition)?,
            access: choice("access", &self.access)?,
            has: choice("has", &self.has)?,
            created_after: day("created_after", &self.from, 0)?,
            // The last day is included whole.
            created_before: day("created_before", &self.to, 1)?,
            cursor: text(&self.cursor),
            limit: None,
        })
    }

    /// The query string of these filters, at `cursor`.
    fn at(&self, cursor: &str) -> String {
        url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs(
                [
                    ("q", self.q.trim()),
                    ("domain", self.domain.as_str()),
                    ("tag", self.tag.trim()),
                    ("status", self.status.as_str()),
                    ("condition", self.condition.as_str()),
                    ("access", self.access.as_str()),
                    ("has", self.has.as_str()),
                    ("from", self.from.trim()),
                    ("to", self.to.trim()),
                    ("cursor", cursor),
                ]
                .into_iter()
                .filter(|(_, v)| !v.is_empty()),
            )
            .finish()
    }
}

/// A select's value as the API's enum: empty is none; anything else not offered is an
/// error naming the field.
fn choice<T: serde::de::DeserializeOwned>(
    field: &'static str,
    value: &str,
) -> Result<Option<T>, AppError> {
    if value.is_empty() {
        return Ok(None);
    }
    // The enum's own names, as the API reads them from a query.
    let value: StrDeserializer<'_, serde::de::value::Error> = value.into_deserializer();
    T::deserialize(value)
        .map(Some)
        .map_err(|_| AppError::invalid(field, "not one of the choices offered"))
}

/// `GET /o/{owner}/links`: an owner's links, newest first, for any member, found by
/// text and filters. Another owner's page is 404, as another owner's link is in the API.
pub(super) async fn links(
    Signed(signed): Signed,
    State(links): State<Arc<Links>>,
    Path(owner): Path<String>,
    Query(query): Query<LinksQuery>,
) -> Response {
    if signed.allows(&owner, Role::Viewer) != Some(true) {
        return not_found_for(&signed);
    }
    let creator = Creator {
        owner: &owner,
        admin: false,
        domains: None,
        actor: crate::model::history::Actor::User(&signed.user.user_id),
    };
    let domains = match links
        .usable_domains(&signed.principal(Some(&owner)), &owner)
        .await
    {
        Ok(found) => found.into_iter().map(|d| d.domain).collect::<Vec<_>>(),
        Err(e) => return failed(e),
    };
    let mut page = LinksPage {
        nav: Nav::of(&signed, Some(&owner)),
        q: query.q.trim().to_owned(),
        domains: choices(
            &domains
                .iter()
                .map(|d| (d.as_str(), d.as_str()))
                .collect::<Vec<_>>(),
            &query.domain,
        ),
        tag: query.tag.trim().to_owned(),
        statuses: choices(
            &[
                ("active", "Active"),
                ("disabled", "Disabled"),
                ("deleted", "Deleted"),
            ],
            &query.status,
        ),
        conditions: choices(
            &[
                ("expired", "Expired"),
                ("expiring", "Expiring within 7 days"),
                ("exhausted", "Visit limit reached"),
                ("banned", "Banned"),
            ],
            &query.condition,
        ),
        accesses: choices(
            &[
                ("public", "Public"),
                ("password", "Password"),
                ("signed", "Signed"),
            ],
            &query.access,
        ),
        features: choices(&[("rules", "Rules"), ("split", "A/B split")], &query.has),
        from: query.from.trim().to_owned(),
        to: query.to.trim().to_owned(),
        filtered: !query.at("").is_empty(),
        links: Vec::new(),
        next: None,
        error: None,
        csrf: signed.csrf_token.clone(),
        may_edit: signed.allows(&owner, Role::Editor) == Some(true),
        may_admin: signed.allows(&owner, Role::Admin) == Some(true),
        owner: owner.clone(),
    };
    let filter = match query
        .params()
        .and_then(|params| ListFilter::new(&creator, params))
    {
        Ok(f) => f,
        Err(AppError::Invalid { field, detail }) => {
            page.error = Some(format!("{}: {detail}", filter_label(field)));
            return render(StatusCode::UNPROCESSABLE_ENTITY, &page);
        }
        Err(e @ AppError::Forbidden(_)) => {
            page.error = Some(capitalized(&e.to_string()));
            return render(StatusCode::FORBIDDEN, &page);
        }
        Err(e) => return failed(e),
    };
    let found = match links.list(&filter).await {
        Ok(found) => filter.page(found),
        Err(e) => return failed(e),
    };
    // The bans as this origin's redirects hold them: read at most once a few seconds,
    // and at once after a ban changes here.
    let (days, deny) = match tokio::try_join!(recent_days(&links, &found.items), links.denylist()) {
        Ok(found) => found,
        Err(e) => return failed(e),
    };
    let now = now_ms();
    page.links = found
        .items
        .iter()
        .map(|l| {
            let week = days.get(&l.link_id).map_or(&[0; SPARK_DAYS], |d| d);
            LinkRow::of(
                &page.owner,
                l,
                links.short_url(l),
                week,
                l.banned_by(&deny),
                now,
            )
        })
        .collect();
    page.next = found
        .next_cursor
        .map(|c| format!("/o/{}/links?{}", path_segment(&page.owner), query.at(&c)));
    render(StatusCode::OK, &page)
}

/// A filter as the form names it.
fn filter_label(field: &str) -> &'static str {
    match field {
        "q" => "Search",
        "domain" => "Domain",
        "tag" => "Tag",
        "status" => "Status",
        "condition" => "Condition",
        "access" => "Access",
        "has" => "Carries",
        "created_after" => "Created from",
        "created_before" => "Created to",
        "cursor" => "Page",
        _ => "Filter",
    }
}

/// Days a row's sparkline covers: today (UTC) and the 6 before.
const SPARK_DAYS: usize = 7;

/// People's visits per day to each of `links` over the last [`SPARK_DAYS`] days, oldest
/// first; links without any are left out.
async fn recent_days(
    links: &Links,
    shown: &[Link],
) -> Result<HashMap<u64, [i64; SPARK_DAYS]>, crate::error::StoreError> {
    const DAY_MS: i64 = 86_400_000;
    let today = now_ms().div_euclid(DAY_MS) * DAY_MS;
    let from = today - (SPARK_DAYS as i64 - 1) * DAY_MS;
    let ids: Vec<u64> = shown.iter().map(|l| l.link_id).collect();
    let mut days: HashMap<u64, [i64; SPARK_DAYS]> = HashMap::new();
    for (link, day, visits) in links
        .human_visits_by_day(&ids, from, today + DAY_MS)
        .await?
    {
        let Ok(i) = usize::try_from((day - from) / DAY_MS) else {
            continue;
        };
        if let Some(slot) = days.entry(link).or_default().get_mut(i) {
            *slot += visits;
        }
    }
    Ok(days)
}

/// Anything else.
pub(super) async fn not_found() -> Response {
    message(
        StatusCode::NOT_FOUND,
        None,
        "Not found",
        "There is nothing here, or nothing you may see.",
    )
}

/// An owner id as one path segment.
pub(super) fn path_segment(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes())
        .collect::<String>()
        .replace('+', "%20")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_next_page_keeps_every_filter_and_only_those_set() {
        let q = LinksQuery {
            q: " 50% off ".into(),
            condition: "banned".into(),
            from: "2026-11-01".into(),
            cursor: "old".into(),
            ..LinksQuery::default()
        };
        assert_eq!(
            q.at("next"),
            "q=50%25+off&condition=banned&from=2026-11-01&cursor=next"
        );
        let params = q.params().expect("params");
        assert_eq!(
            params.created_after.as_deref(),
            Some("2026-11-01T00:00:00Z")
        );
        assert_eq!(params.condition, Some(crate::model::Condition::Banned));
        let to = LinksQuery {
            to: "2026-11-30".into(),
            ..LinksQuery::default()
        };
        assert_eq!(
            to.params().expect("params").created_before.as_deref(),
            Some("2026-12-01T00:00:00Z"),
            "the last day is included whole"
        );
        let bad = LinksQuery {
            access: "everyone".into(),
            ..LinksQuery::default()
        };
        assert!(matches!(
            bad.params(),
            Err(AppError::Invalid {
                field: "access",
                ..
            })
        ));
    }
}

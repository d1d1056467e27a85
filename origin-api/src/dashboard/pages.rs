//! The dashboard's pages: each handler reads what it needs, calls a service, and renders
//! a template or redirects.

use super::render::{capitalized, failure, message, not_found_for, refused_post, render, Nav};
use super::session::{
    login_cookie_name, no_session_cookie, session_cookie, set_cookie, token_tied, with_tied_token,
    ClientIp, Signed,
};
use crate::accounts::password::MIN_PASSWORD_CHARS;
use crate::accounts::{AccountError, Accounts, SignedIn};
use crate::links::Links;
use crate::model::time::rfc3339;
use crate::model::{Creator, Link, LinkState, ListFilter, Role};
use crate::store;
use crate::views::links::ListParams;
use askama::Template;
use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{AppendHeaders, IntoResponse, Redirect, Response};
use axum::Form;
use serde::Deserialize;
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
    tag: String,
    statuses: Vec<StatusOption>,
    links: Vec<LinkRow>,
    next: Option<String>,
    may_edit: bool,
    may_admin: bool,
}

struct StatusOption {
    value: &'static str,
    label: &'static str,
    selected: bool,
}

struct LinkRow {
    /// The link's own page in the dashboard.
    path: String,
    short_url: String,
    target_url: String,
    target_host: String,
    title: String,
    tags: Vec<String>,
    status: &'static str,
    created_at: String,
    created_on: String,
}

impl LinkRow {
    fn of(owner: &str, link: &Link) -> Self {
        let created_at = rfc3339(link.created_at);
        LinkRow {
            path: format!(
                "/o/{}/links/{}/{}",
                path_segment(owner),
                path_segment(&link.domain),
                path_segment(&link.code)
            ),
            short_url: link.short_url(),
            target_host: url::Url::parse(&link.target_url)
                .ok()
                .and_then(|u| u.host_str().map(str::to_owned))
                .unwrap_or_default(),
            target_url: link.target_url.clone(),
            title: link.title.clone().unwrap_or_default(),
            tags: link.tags.clone(),
            status: link.status.as_str(),
            created_on: created_at.chars().take(10).collect(),
            created_at,
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
    match accounts.sign_in(&form.email, &form.password, client).await {
        // Appended: an array of headers would keep only the last `Set-Cookie`.
        Ok(new) => (
            AppendHeaders([
                (header::SET_COOKIE, session_cookie(&accounts, &new.secret)),
                (
                    header::SET_COOKIE,
                    set_cookie(&accounts, login_cookie_name(&accounts), "", 0),
                ),
            ]),
            Redirect::to("/"),
        )
            .into_response(),
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
                other => return failure(&other.to_string()),
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
        return failure(&e.to_string());
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
        Some(m) => Redirect::to(&format!("/o/{}/links", path_segment(&m.owner_id))).into_response(),
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
        Err(e) => failure(&e.to_string()),
    }
}

#[derive(Deserialize)]
pub(super) struct LinksQuery {
    #[serde(default)]
    tag: String,
    #[serde(default)]
    status: String,
    #[serde(default)]
    cursor: String,
}

/// `GET /o/{owner}/links`: an owner's links, newest first, for any member. Another
/// owner's page is 404, as another owner's link is in the API.
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
    };
    let status = LinkState::parse(&query.status);
    let params = ListParams {
        domain: None,
        tag: Some(query.tag.trim().to_owned()).filter(|t| !t.is_empty()),
        status,
        cursor: Some(query.cursor.clone()).filter(|c| !c.is_empty()),
        limit: None,
    };
    let filter = match ListFilter::new(&creator, params) {
        Ok(f) => f,
        Err(e) => {
            return message(
                StatusCode::UNPROCESSABLE_ENTITY,
                Nav::of(&signed, Some(&owner)),
                "That filter cannot be used",
                &e.to_string(),
            )
        }
    };
    let page = match store::links::list(&links.db, &filter).await {
        Ok(found) => filter.page(found),
        Err(e) => return failure(&e.to_string()),
    };
    let selected = status.map_or("", LinkState::as_str);
    let statuses = [
        ("", "Live"),
        ("active", "Active"),
        ("disabled", "Disabled"),
        ("deleted", "Deleted"),
    ]
    .into_iter()
    .map(|(value, label)| StatusOption {
        value,
        label,
        selected: value == selected,
    })
    .collect();
    let next = page.next_cursor.map(|c| {
        format!(
            "/o/{}/links?tag={}&status={}&cursor={}",
            path_segment(&owner),
            query_value(query.tag.trim()),
            selected,
            query_value(&c)
        )
    });
    render(
        StatusCode::OK,
        &LinksPage {
            nav: Nav::of(&signed, Some(&owner)),
            tag: query.tag.trim().to_owned(),
            statuses,
            links: page.items.iter().map(|l| LinkRow::of(&owner, l)).collect(),
            may_edit: signed.allows(&owner, Role::Editor) == Some(true),
            may_admin: signed.allows(&owner, Role::Admin) == Some(true),
            next,
            owner,
        },
    )
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

/// A value in a query string.
fn query_value(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

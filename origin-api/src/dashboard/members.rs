//! An owner's members, and invitations: an owner's admin invites someone by email with a
//! role, and is shown a one-time link to pass on (Hop sends no email); whoever opens it
//! joins with the password of their account, or of a new one.

use super::page_error::{failed, not_found_for};
use super::render::{capitalized, message, refused_post, render, Nav};
use super::session::{
    login_cookie_name, session_cookie, set_cookie, token_tied, with_tied_token, ClientIp, Signed,
};
use crate::accounts::{AccountError, Accounts, SignedIn, INVITATION_TTL_MS};
use crate::model::Role;
use askama::Template;
use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{AppendHeaders, IntoResponse, Redirect, Response};
use axum::Form;
use serde::Deserialize;
use std::sync::Arc;

#[derive(Template)]
#[template(path = "dashboard/members.html")]
struct MembersPage {
    nav: Option<Nav>,
    owner: String,
    members: Vec<(String, &'static str)>,
    csrf: String,
    /// The link of the invitation just made, shown once.
    invited: Option<Invited>,
    error: Option<String>,
    days: i64,
}

struct Invited {
    email: String,
    role: &'static str,
    link: String,
}

#[derive(Template)]
#[template(path = "dashboard/invitation.html")]
struct InvitationPage {
    nav: Option<Nav>,
    owner: String,
    role: &'static str,
    email: String,
    has_account: bool,
    csrf: String,
    error: Option<String>,
}

async fn members_page(
    accounts: &Accounts,
    signed: &SignedIn,
    owner: &str,
    status: StatusCode,
    invited: Option<Invited>,
    error: Option<String>,
) -> Response {
    let members = match accounts.members(owner).await {
        Ok(m) => m
            .into_iter()
            .map(|(email, role)| (email, role.as_str()))
            .collect(),
        Err(e) => return failed(e),
    };
    render(
        status,
        &MembersPage {
            nav: Nav::of(signed, Some(owner)),
            owner: owner.to_owned(),
            members,
            csrf: signed.csrf_token.clone(),
            invited,
            error,
            days: INVITATION_TTL_MS / 86_400_000,
        },
    )
}

/// `GET /o/{owner}/members`: for the owner's admins.
pub(super) async fn members(
    Signed(signed): Signed,
    State(accounts): State<Arc<Accounts>>,
    Path(owner): Path<String>,
) -> Response {
    match signed.allows(&owner, Role::Admin) {
        None => not_found_for(&signed),
        Some(false) => only_admins(&signed, &owner),
        Some(true) => members_page(&accounts, &signed, &owner, StatusCode::OK, None, None).await,
    }
}

fn only_admins(signed: &SignedIn, owner: &str) -> Response {
    message(
        StatusCode::FORBIDDEN,
        Nav::of(signed, Some(owner)),
        "Admins only",
        "Only an admin of this owner manages its members.",
    )
}

/// A member's email and a role: an invitation's, or a member's new one (or `remove`).
#[derive(Deserialize)]
pub(super) struct MemberForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    email: String,
    #[serde(default)]
    role: String,
}

/// Why a post to `owner`'s members may not be acted on, if it may not: its form token
/// wrong, or its user not the owner's admin.
fn refused_admin_post(signed: &SignedIn, owner: &str, csrf: &str) -> Option<Response> {
    if !signed.csrf_matches(csrf) {
        return Some(refused_post());
    }
    match signed.allows(owner, Role::Admin) {
        None => Some(not_found_for(signed)),
        Some(false) => Some(only_admins(signed, owner)),
        Some(true) => None,
    }
}

/// `POST /o/{owner}/members`: a member's role changed, or the member removed; never the
/// owner's last admin.
pub(super) async fn change(
    Signed(signed): Signed,
    State(accounts): State<Arc<Accounts>>,
    Path(owner): Path<String>,
    Form(form): Form<MemberForm>,
) -> Response {
    if let Some(refused) = refused_admin_post(&signed, &owner, &form.csrf) {
        return refused;
    }
    let done = if form.role == "remove" {
        accounts.remove_member(&owner, &form.email).await
    } else if let Some(role) = Role::parse(&form.role) {
        accounts.change_role(&owner, &form.email, role).await
    } else {
        let why = Some("Choose a role, or remove.".to_owned());
        return members_page(
            &accounts,
            &signed,
            &owner,
            StatusCode::UNPROCESSABLE_ENTITY,
            None,
            why,
        )
        .await;
    };
    match done {
        Ok(()) => Redirect::to(&format!(
            "/o/{}/members",
            super::pages::path_segment(&owner)
        ))
        .into_response(),
        Err(e @ (AccountError::LastAdmin | AccountError::NotAMember)) => {
            let status = if matches!(e, AccountError::LastAdmin) {
                StatusCode::CONFLICT
            } else {
                StatusCode::NOT_FOUND
            };
            let why = Some(capitalized(&e.to_string()));
            members_page(&accounts, &signed, &owner, status, None, why).await
        }
        Err(e) => failed(e),
    }
}

/// `POST /o/{owner}/invitations`: a new invitation, its link shown once.
pub(super) async fn invite(
    Signed(signed): Signed,
    State(accounts): State<Arc<Accounts>>,
    Path(owner): Path<String>,
    headers: HeaderMap,
    Form(form): Form<MemberForm>,
) -> Response {
    if let Some(refused) = refused_admin_post(&signed, &owner, &form.csrf) {
        return refused;
    }
    let Some(role) = Role::parse(form.role.trim()) else {
        let why = "Choose a role: admin, editor or viewer.".to_owned();
        return members_page(
            &accounts,
            &signed,
            &owner,
            StatusCode::UNPROCESSABLE_ENTITY,
            None,
            Some(why),
        )
        .await;
    };
    match accounts
        .invite(&owner, role, &form.email, &signed.user.user_id)
        .await
    {
        Ok(new) => {
            let invited = Invited {
                email: new.invitation.email,
                role: role.as_str(),
                link: invitation_link(&accounts, &headers, &new.token),
            };
            members_page(
                &accounts,
                &signed,
                &owner,
                StatusCode::OK,
                Some(invited),
                None,
            )
            .await
        }
        Err(AccountError::BadEmail(why)) => {
            members_page(
                &accounts,
                &signed,
                &owner,
                StatusCode::UNPROCESSABLE_ENTITY,
                None,
                Some(why.to_owned()),
            )
            .await
        }
        Err(e) => failed(e),
    }
}

/// The invitation's link on this dashboard, as the browser reached it.
fn invitation_link(accounts: &Accounts, headers: &HeaderMap, token: &str) -> String {
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("localhost");
    let scheme = if accounts.secure_cookies {
        "https"
    } else {
        "http"
    };
    format!("{scheme}://{host}/invite/{token}")
}

/// A token as an invitation's link carries it: 64 hex digits.
fn well_formed(token: &str) -> bool {
    token.len() == 64 && token.bytes().all(|b| b.is_ascii_hexdigit())
}

fn gone() -> Response {
    message(
        StatusCode::GONE,
        None,
        "Invitation used or expired",
        "This invitation was used, or has expired. Ask whoever invited you for a new one.",
    )
}

fn invitation_page(
    accounts: &Accounts,
    status: StatusCode,
    invitation: &crate::model::Invitation,
    has_account: bool,
    error: Option<String>,
) -> Response {
    with_tied_token(accounts, |csrf| {
        render(
            status,
            &InvitationPage {
                nav: None,
                owner: invitation.owner_id.clone(),
                role: invitation.role.as_str(),
                email: invitation.email.clone(),
                has_account,
                csrf,
                error,
            },
        )
    })
}

/// `GET /invite/{token}`: whoever holds the link.
pub(super) async fn open(
    State(accounts): State<Arc<Accounts>>,
    Path(token): Path<String>,
) -> Response {
    if !well_formed(&token) {
        return gone();
    }
    match accounts.invitation(&token).await {
        Ok((invitation, has_account)) => {
            invitation_page(&accounts, StatusCode::OK, &invitation, has_account, None)
        }
        Err(AccountError::InvitationGone) => gone(),
        Err(e) => failed(e),
    }
}

#[derive(Deserialize)]
pub(super) struct AcceptForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    password: String,
}

/// `POST /invite/{token}`: joins, and signs in.
pub(super) async fn accept(
    State(accounts): State<Arc<Accounts>>,
    ClientIp(client): ClientIp,
    Path(token): Path<String>,
    headers: HeaderMap,
    Form(form): Form<AcceptForm>,
) -> Response {
    let tied = token_tied(&accounts, &headers, &form.csrf);
    if !tied {
        return refused_post();
    }
    if !well_formed(&token) {
        return gone();
    }
    match accounts.accept(&token, &form.password, client).await {
        Ok((new, invitation)) => {
            let to = format!(
                "/o/{}/links",
                super::pages::path_segment(&invitation.owner_id)
            );
            (
                AppendHeaders([
                    (header::SET_COOKIE, session_cookie(&accounts, &new.secret)),
                    (
                        header::SET_COOKIE,
                        set_cookie(&accounts, login_cookie_name(&accounts), "", 0),
                    ),
                ]),
                Redirect::to(&to),
            )
                .into_response()
        }
        Err(AccountError::InvitationGone) => gone(),
        Err(e) => {
            let status = match e {
                AccountError::WrongCredentials => StatusCode::UNAUTHORIZED,
                AccountError::BadPassword(_) => StatusCode::UNPROCESSABLE_ENTITY,
                AccountError::Disabled => StatusCode::FORBIDDEN,
                AccountError::Locked { .. } | AccountError::Throttled => {
                    StatusCode::TOO_MANY_REQUESTS
                }
                AccountError::Busy => StatusCode::SERVICE_UNAVAILABLE,
                other => return failed(other),
            };
            match accounts.invitation(&token).await {
                Ok((invitation, has_account)) => {
                    let why = capitalized(&e.to_string());
                    invitation_page(&accounts, status, &invitation, has_account, Some(why))
                }
                Err(_) => gone(),
            }
        }
    }
}

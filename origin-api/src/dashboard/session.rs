//! The session cookie, the signed-in extractor, and the checks every post passes:
//! from this site (`Sec-Fetch-Site`, `Origin`) and carrying the session's form token.

use crate::accounts::{Accounts, SignedIn, SESSION_MAX_MS};
use axum::extract::{FromRef, FromRequestParts};
use axum::http::request::Parts;
use axum::http::{header, HeaderMap};
use axum::response::{IntoResponse, Redirect, Response};
use std::sync::Arc;

/// The session cookie's name on plain HTTP (development); on HTTPS it is
/// `__Host-hop_session`, which a browser accepts only `Secure`, for this host alone.
pub const SESSION_COOKIE: &str = "hop_session";
/// The cookie that ties the sign-in form to the browser that loaded it (sign-in CSRF),
/// on plain HTTP; `__Host-hop_login` on HTTPS, which no other host can plant.
const LOGIN_COOKIE: &str = "hop_login";

pub(super) fn login_cookie_name(accounts: &Accounts) -> &'static str {
    if accounts.secure_cookies {
        "__Host-hop_login"
    } else {
        LOGIN_COOKIE
    }
}

/// The cookie that marks a browser its account signed in from (its right password gets
/// in while strangers' guesses hold the account's wait).
pub(super) fn device_cookie_name(accounts: &Accounts) -> &'static str {
    if accounts.secure_cookies {
        "__Host-hop_device"
    } else {
        "hop_device"
    }
}

fn session_cookie_name(accounts: &Accounts) -> &'static str {
    if accounts.secure_cookies {
        "__Host-hop_session"
    } else {
        SESSION_COOKIE
    }
}

/// The value of cookie `name` in `headers`, if the browser sent it.
pub(super) fn cookie<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(n, _)| *n == name)
        .map(|(_, value)| value)
}

/// A page with a form that no session vouches for yet (signing in, accepting an
/// invitation), given a fresh token that a cookie ties to this browser.
pub(super) fn with_tied_token(
    accounts: &Accounts,
    page: impl FnOnce(String) -> Response,
) -> Response {
    let Ok(token) = crate::random_ids::random_hex::<16>() else {
        return super::page_error::failure("no randomness for a form");
    };
    let cookie = set_cookie(accounts, login_cookie_name(accounts), &token, 3600);
    ([(header::SET_COOKIE, cookie)], page(token)).into_response()
}

/// Whether `token`, posted with such a form, is the one its cookie ties to this browser.
pub(super) fn token_tied(accounts: &Accounts, headers: &HeaderMap, token: &str) -> bool {
    use subtle::ConstantTimeEq;
    cookie(headers, login_cookie_name(accounts))
        .is_some_and(|c| !token.is_empty() && bool::from(c.as_bytes().ct_eq(token.as_bytes())))
}

/// A `Set-Cookie` value: `HttpOnly`, `SameSite=Lax` (a link from an email to a page
/// finds the user signed in; a post from another site carries no cookie), for the
/// whole site, `Secure` unless told otherwise. `max_age_s` 0 removes it.
pub(super) fn set_cookie(accounts: &Accounts, name: &str, value: &str, max_age_s: i64) -> String {
    let secure = if accounts.secure_cookies {
        "; Secure"
    } else {
        ""
    };
    format!("{name}={value}; Path=/; HttpOnly; SameSite=Lax; Max-Age={max_age_s}{secure}")
}

/// The session cookie for a new session's `secret`.
pub(super) fn session_cookie(accounts: &Accounts, secret: &str) -> String {
    set_cookie(
        accounts,
        session_cookie_name(accounts),
        secret,
        SESSION_MAX_MS / 1000,
    )
}

/// The header that removes the session cookie.
pub(super) fn no_session_cookie(accounts: &Accounts) -> String {
    set_cookie(accounts, session_cookie_name(accounts), "", 0)
}

/// A signed-in browser; any page that takes one sends a browser without a live session
/// to the sign-in page.
pub(super) struct Signed(pub SignedIn);

impl<S: Send + Sync> FromRequestParts<S> for Signed
where
    Arc<Accounts>: FromRef<S>,
    Arc<crate::auth::Auth>: FromRef<S>,
{
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Response> {
        let accounts = Arc::<Accounts>::from_ref(state);
        let secret = cookie(&parts.headers, session_cookie_name(&accounts))
            .filter(|s| s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit()));
        let found = match secret {
            Some(secret) => accounts
                .session(secret, client_ip(parts, state))
                .await
                .map_err(super::page_error::failed)?,
            None => None,
        };
        found.map(Signed).ok_or_else(|| {
            (
                [(header::SET_COOKIE, no_session_cookie(&accounts))],
                Redirect::to("/login"),
            )
                .into_response()
        })
    }
}

/// The client's address, as authentication counts it (behind a trusted proxy, the
/// address it names): what the sign-in throttle counts failures by.
pub(super) struct ClientIp(pub Option<std::net::IpAddr>);

impl<S: Send + Sync> FromRequestParts<S> for ClientIp
where
    Arc<crate::auth::Auth>: FromRef<S>,
{
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        Ok(ClientIp(client_ip(parts, state)))
    }
}

fn client_ip<S>(parts: &Parts, state: &S) -> Option<std::net::IpAddr>
where
    Arc<crate::auth::Auth>: FromRef<S>,
{
    Arc::<crate::auth::Auth>::from_ref(state)
        .proxies
        .client_ip(crate::proxies::peer(parts), &parts.headers)
}

/// Refuses (403) any request but a read that does not come from a page of this
/// dashboard, before its cookies or its body are looked at.
pub(super) async fn same_site_posts(
    axum::extract::State(accounts): axum::extract::State<Arc<Accounts>>,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let read = matches!(
        *req.method(),
        axum::http::Method::GET | axum::http::Method::HEAD
    );
    if read || crate::same_site::from_this_site(req.headers(), accounts.secure_cookies) {
        next.run(req).await
    } else {
        super::render::refused_post()
    }
}

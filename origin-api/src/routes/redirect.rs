//! `GET|HEAD|POST /{code}` on the origin: the redirects service decides
//! ([`crate::redirects::visit`]); this writes the decision as the response.

use crate::redirects::visit::Answer;
use crate::redirects::Redirects;
use axum::body::Bytes;
use axum::extract::{Request, State};
use axum::http::request::Parts;
use axum::http::{header, HeaderName, HeaderValue, StatusCode};
use axum::response::Response;
use shared::decision::DEFAULT_CACHE_CONTROL;
use shared::Decision;
use std::borrow::Cow;
use std::net::SocketAddr;
use std::sync::Arc;

/// Answers every path the API does not claim.
#[utoipa::path(get, path = "/{code}", operation_id = "redirect", tag = "redirect",
    params(("code" = String, Path), ("Host" = Option<String>, Header, description = "The short domain; without one, or with an address, the origin's default domain. A host this origin does not serve is 404")),
    responses(
        (status = 200, description = "An HTML page instead of a redirect: the link's social preview for a link-preview crawler, or its interstitial (the destination and a link to it)"),
        (status = 204, description = "`/favicon.ico`, which browsers ask every site for: no content, `Cache-Control: public, max-age=604800`, never counted as a visit"),
        (status = 301, description = "Moved permanently, as the link says; `Location` is the target, with the visitor's query merged when the link forwards it"),
        (status = 302, description = "Found (the default); also where a domain sends an unknown code, `/` or an expired link when it names a page for them (never cached)"),
        (status = 307, description = "Temporary redirect, as the link says"),
        (status = 308, description = "Permanent redirect, as the link says"),
        (status = 403, description = "Banned: a short notice, never a Location. Or a private link visited without a valid token (a notice) or, for a password link, without its cookie (the password form, which posts back here)"),
        (status = 404, description = "No such link, a disabled link or domain, or `/` on a domain without a root_url"),
        (status = 405, description = "Neither GET nor HEAD (nor a POST to a password link's form)"),
        (status = 410, description = "Expired or deleted"),
        (status = 503, description = "The database cannot answer now; see Retry-After"),
    ))]
pub(crate) async fn redirect(State(state): State<Arc<Redirects>>, req: Request) -> Response {
    let (parts, body) = req.into_parts();
    let peer = crate::proxies::peer(&parts);
    if parts.method == axum::http::Method::POST {
        return write(state.posted(parts, body, peer).await);
    }
    visit(&state, parts, peer).await
}

/// What a password link's form posts.
#[derive(utoipa::ToSchema)]
#[allow(dead_code)] // Documentation: `shared::password::form_password` reads the form.
pub(crate) struct PasswordForm {
    /// What the visitor typed.
    password: String,
}

/// The operation [`Redirects::posted`] answers, for the API description.
#[utoipa::path(post, path = "/{code}", operation_id = "password_form", tag = "redirect",
    params(("code" = String, Path), ("Host" = Option<String>, Header, description = "The short domain, as for `GET /{code}`")),
    request_body(content = PasswordForm, content_type = "application/x-www-form-urlencoded"),
    responses(
        (status = 303, description = "The right password: `Set-Cookie` lets the visitor into this link alone for an hour; `Location` is the short URL again, which then redirects. Never the target"),
        (status = 400, description = "No password in the form: the form again"),
        (status = 403, description = "A wrong password: the form again, with a note; or a banned link's notice"),
        (status = 404, description = "No such link, or a disabled one"),
        (status = 405, description = "The link takes no password: only a password link's form posts"),
        (status = 410, description = "Expired or deleted"),
        (status = 429, description = "Ten wrong passwords for this link within a minute: the form again; see Retry-After"),
        (status = 503, description = "The database cannot answer now; see Retry-After"),
    ))]
#[allow(dead_code)]
pub(crate) fn password_form() {}

/// The answer to a visit, from its request's head and the client's address: from
/// memory when it holds all the visit needs, else through the reads it takes.
pub(crate) async fn visit(state: &Redirects, parts: Parts, peer: Option<SocketAddr>) -> Response {
    if let Some(answered) = state.answer_held(&parts, peer) {
        return respond(answered);
    }
    // Boxed: only a visit that may read carries the room its reads need.
    write(Box::pin(state.answer(parts, peer)).await)
}

/// The response to an answer.
pub(crate) fn respond(answer: Answer) -> Response {
    match answer {
        Answer::Favicon => favicon(),
        Answer::Decided(decision) => write(decision),
    }
}

/// The answer to a browser's ask for a short domain's icon: `204`, kept a week, and
/// never counted as a visit or an answer (`shared::is_favicon`); from memory, on
/// every path that answers visits.
fn favicon() -> Response {
    let mut res = Response::new(axum::body::Body::empty());
    *res.status_mut() = StatusCode::NO_CONTENT;
    res.headers_mut().insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static(shared::FAVICON_CACHE_CONTROL),
    );
    res
}

/// The headers `shared::decide` writes, without parsing their names on every request.
fn header_name(name: &str) -> Option<HeaderName> {
    Some(match name {
        "location" => header::LOCATION,
        "cache-control" => header::CACHE_CONTROL,
        "content-type" => header::CONTENT_TYPE,
        "retry-after" => header::RETRY_AFTER,
        "allow" => header::ALLOW,
        "vary" => header::VARY,
        "set-cookie" => header::SET_COOKIE,
        "content-security-policy" => header::CONTENT_SECURITY_POLICY,
        other => return HeaderName::from_bytes(other.as_bytes()).ok(),
    })
}

pub(crate) fn write(mut decision: Decision) -> Response {
    let body = match decision.body {
        shared::Body::Empty => axum::body::Body::empty(),
        shared::Body::Text(s) | shared::Body::Html(s) => axum::body::Body::from(s),
        shared::Body::Page(page) => axum::body::Body::from(page),
    };
    let mut res = Response::new(body);
    *res.status_mut() =
        StatusCode::from_u16(decision.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let headers = res.headers_mut();
    for (name, value) in decision.headers.take_all() {
        // The decision's strings become the header values as they are, without a copy;
        // the usual cache header is checked once, at compile time.
        let value = match value {
            Cow::Borrowed(DEFAULT_CACHE_CONTROL) => Ok(DEFAULT_CACHE_HEADER),
            Cow::Borrowed(value) => {
                HeaderValue::from_maybe_shared(Bytes::from_static(value.as_bytes()))
            }
            Cow::Owned(value) => HeaderValue::from_maybe_shared(Bytes::from(value)),
        };
        if let (Some(name), Ok(value)) = (header_name(name), value) {
            headers.insert(name, value);
        }
    }
    res
}

const DEFAULT_CACHE_HEADER: HeaderValue = HeaderValue::from_static(DEFAULT_CACHE_CONTROL);

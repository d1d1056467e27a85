//! `GET|HEAD|POST /{code}` on the origin: the redirects service decides and answers
//! ([`crate::redirects::visit`]); this hands it the request.

use crate::redirects::Redirects;
use axum::extract::{Request, State};
use axum::http::request::Parts;
use axum::response::Response;
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
        return state.posted(parts, body, peer).await;
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
        return answered;
    }
    // Boxed: only a visit that may read carries the room its reads need.
    Box::pin(state.answer(parts, peer)).await
}

//! How the dashboard answers: a page from its template, or a page that says what went
//! wrong; and the bar at the top of every signed-in page.

use crate::accounts::SignedIn;
use askama::Template;
use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Response};

/// What the bar at the top of every signed-in page shows.
#[derive(Debug)]
pub(super) struct Nav {
    pub(super) owners: Vec<NavOwner>,
    pub(super) current: Option<String>,
    pub(super) email: String,
    pub(super) csrf: String,
    /// Whether the bar links to the operators' pages.
    pub(super) operator: bool,
}

#[derive(Debug)]
pub(super) struct NavOwner {
    pub(super) owner_id: String,
    pub(super) role: &'static str,
}

impl Nav {
    pub(super) fn of(signed: &SignedIn, current: Option<&str>) -> Option<Nav> {
        Some(Nav {
            owners: signed
                .memberships
                .iter()
                .map(|m| NavOwner {
                    owner_id: m.owner_id.clone(),
                    role: m.role.as_str(),
                })
                .collect(),
            current: current.map(str::to_owned),
            email: signed.user.email.clone(),
            csrf: signed.csrf_token.clone(),
            operator: signed.user.operator,
        })
    }
}

#[derive(Template)]
#[template(path = "dashboard/message.html")]
struct MessagePage {
    nav: Option<Nav>,
    heading: String,
    text: String,
}

/// A page, or a page saying what went wrong, with `status`.
pub(super) fn render(status: StatusCode, page: &impl Template) -> Response {
    match page.render() {
        Ok(html) => (status, Html(html)).into_response(),
        Err(e) => {
            // Not through another template: that may fail as this one did.
            let id = super::request_id::current();
            tracing::error!(request_id = %id, detail = %e, "dashboard failure: rendering a page");
            (
                StatusCode::INTERNAL_SERVER_ERROR,
                Html(format!(
                    "<!doctype html><html lang=\"en\"><title>Something went wrong</title><p>The dashboard could not show this page. Try again in a moment; if it goes on, give your operator this reference: {id}.</p></html>"
                )),
            )
                .into_response()
        }
    }
}

pub(super) fn message(status: StatusCode, nav: Option<Nav>, heading: &str, text: &str) -> Response {
    render(
        status,
        &MessagePage {
            nav,
            heading: heading.to_owned(),
            text: text.to_owned(),
        },
    )
}

pub(super) fn refused_post() -> Response {
    message(
        StatusCode::FORBIDDEN,
        None,
        "Refused",
        "That form was not sent from this dashboard, or it expired. Reload the page and try again.",
    )
}

/// `s` with its first letter a capital: a service's words as a sentence on a page.
pub(super) fn capitalized(s: &str) -> String {
    let mut chars = s.chars();
    chars
        .next()
        .map(|c| c.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

/// An option of a select.
pub(super) struct Choice {
    pub(super) value: String,
    pub(super) label: String,
    pub(super) selected: bool,
}

/// The options `(value, label)` of a select, `selected` marked.
pub(super) fn choices(options: &[(&str, &str)], selected: &str) -> Vec<Choice> {
    options
        .iter()
        .map(|(value, label)| Choice {
            value: (*value).to_owned(),
            label: (*label).to_owned(),
            selected: *value == selected,
        })
        .collect()
}

/// Unix ms as a person reads a time here: `2026-12-06 08:57:44 UTC`.
pub(super) fn utc(ms: i64) -> String {
    let t = crate::model::time::rfc3339(ms);
    format!("{} UTC", t.get(..19).unwrap_or(&t).replace('T', " "))
}

/// The value of `name` in a form posted as pairs (the last one, as a browser's repeated
/// field is read), or empty.
pub(super) fn posted<'f>(pairs: &'f [(String, String)], name: &str) -> &'f str {
    pairs
        .iter()
        .rev()
        .find(|(k, _)| k == name)
        .map_or("", |(_, v)| v.as_str())
}

/// A file to download: `body` of `content_type`, saved as `name` reduced to characters
/// any file system takes (a link's domain and code may hold others).
pub(super) fn download(
    content_type: &str,
    name: &str,
    body: impl axum::response::IntoResponse,
) -> Response {
    let name: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_') {
                c
            } else {
                '_'
            }
        })
        .collect();
    (
        [
            (axum::http::header::CONTENT_TYPE, content_type.to_owned()),
            (
                axum::http::header::CONTENT_DISPOSITION,
                format!("attachment; filename=\"{name}\""),
            ),
        ],
        body,
    )
        .into_response()
}

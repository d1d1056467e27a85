//! A link's history page, and going back to one of its versions: the API's history and
//! revert (docs/history.md), for people.

use super::link_form::{actor, link_path, load, refused_change};
use super::link_tools::readable;
use super::page_error::{failed, not_found_for};
use super::render::{message, posted, render, Nav};
use super::session::Signed;
use crate::error::AppError;
use crate::links::{history, revert_link, Intent, Links};
use crate::model::{LinkState, Role};
use askama::Template;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::Form;
use serde::Deserialize;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;

/// Entries per page.
const PER_PAGE: i64 = 50;

#[derive(Template)]
#[template(path = "dashboard/history.html")]
struct HistoryPage {
    nav: Option<Nav>,
    short_url: String,
    link_path: String,
    csrf: String,
    /// The link's version now (a revert names it, so a race is caught).
    version: u64,
    /// An editor may revert a live link.
    may_revert: bool,
    entries: Vec<Shown>,
    next: Option<String>,
}

/// One entry as the page shows it.
struct Shown {
    version: u64,
    action: String,
    at: String,
    by: String,
    note: Option<String>,
    /// `field: from → to`, one per change.
    changes: Vec<String>,
    /// Whether a revert to this version makes sense: not the version the link is at,
    /// not the link deleted, and the first entry of its version.
    revertible: bool,
}

#[derive(Debug, Default, Deserialize)]
pub(super) struct HistoryQuery {
    #[serde(default)]
    cursor: Option<String>,
}

/// `GET /o/{owner}/links/{domain}/{code}/history`.
pub(super) async fn page(
    Signed(signed): Signed,
    State(links): State<Arc<Links>>,
    State(accounts): State<Arc<crate::accounts::Accounts>>,
    Path((owner, domain, code)): Path<(String, String, String)>,
    Query(q): Query<HistoryQuery>,
) -> Response {
    let link = match readable(&signed, &links, (&owner, &domain, &code)).await {
        Ok(link) => link,
        Err(refused) => return refused,
    };
    let cursor = q.cursor.as_deref().filter(|c| !c.is_empty());
    let got = match history::history(&links, &link, cursor, Some(PER_PAGE)).await {
        Ok(page) => page,
        Err(e @ AppError::Invalid { .. }) => {
            return message(
                StatusCode::UNPROCESSABLE_ENTITY,
                Nav::of(&signed, Some(&owner)),
                "No such page",
                &e.to_string(),
            )
        }
        Err(e) => return failed(e),
    };
    let mut people: HashMap<String, String> = HashMap::new();
    let mut entries = Vec::with_capacity(got.items.len());
    let mut seen_versions = Vec::new();
    // Newest first: the first entry of a version is the last one shown for it.
    for e in got.items.iter().rev() {
        let first_of_version = !seen_versions.contains(&e.version);
        seen_versions.push(e.version);
        let by = match e.actor.strip_prefix("user:") {
            Some(id) => match people.get(id) {
                Some(email) => email.clone(),
                None => {
                    let email = accounts
                        .email_of(id)
                        .await
                        .ok()
                        .flatten()
                        .unwrap_or_else(|| e.actor.clone());
                    people.insert(id.to_owned(), email.clone());
                    email
                }
            },
            None => e.actor.clone(),
        };
        entries.push(Shown {
            version: e.version,
            action: e.action.clone(),
            at: e.at.replace('T', " ").trim_end_matches('Z').to_owned() + " UTC",
            by,
            note: e.note.clone(),
            changes: e
                .changes
                .iter()
                .flatten()
                .map(|(field, change)| said(field, change))
                .collect(),
            revertible: first_of_version
                && e.version != link.version
                && e.fields.get("status").and_then(Value::as_str) != Some("deleted"),
        });
    }
    entries.reverse();
    let shown = HistoryPage {
        nav: Nav::of(&signed, Some(&owner)),
        short_url: links.short_url(&link),
        link_path: link_path(&owner, &link.domain, &link.code),
        csrf: signed.csrf_token.clone(),
        version: link.version,
        may_revert: signed.allows(&owner, Role::Editor) == Some(true)
            && link.status != LinkState::Deleted,
        entries,
        next: got.next_cursor,
    };
    render(StatusCode::OK, &shown)
}

/// One change in words: `title: "Spring" → "Summer"`; a secret only as replaced.
fn said(field: &str, change: &Value) -> String {
    if field == "secret" {
        return "secret: replaced".to_owned();
    }
    let value = |v: Option<&Value>| match v {
        None | Some(Value::Null) => "(none)".to_owned(),
        Some(Value::String(s)) => format!("\"{s}\""),
        Some(other) => other.to_string(),
    };
    format!(
        "{field}: {} → {}",
        value(change.get("from")),
        value(change.get("to"))
    )
}

/// `POST /o/{owner}/links/{domain}/{code}/revert`: the link's fields of `to` back, as
/// the API's revert does.
pub(super) async fn revert(
    Signed(signed): Signed,
    State(links): State<Arc<Links>>,
    Path((owner, domain, code)): Path<(String, String, String)>,
    Form(pairs): Form<Vec<(String, String)>>,
) -> Response {
    if let Some(refused) = refused_change(&signed, &owner, posted(&pairs, "csrf")) {
        return refused;
    }
    let number = |name: &str| posted(&pairs, name).parse::<u64>().ok();
    let (Some(expected), Some(to)) = (number("version"), number("to")) else {
        return message(
            StatusCode::UNPROCESSABLE_ENTITY,
            Nav::of(&signed, Some(&owner)),
            "Not reverted",
            "The form was incomplete. Open the history again.",
        );
    };
    let reverted = async {
        let current = load(&links, &signed, (&owner, &domain, &code), Intent::Change).await?;
        revert_link(&links, current, Some(expected), to, actor(&signed)).await
    }
    .await;
    let nav = || Nav::of(&signed, Some(&owner));
    match reverted {
        Ok(link) => Redirect::to(&format!(
            "{}/history",
            link_path(&owner, &link.domain, &link.code)
        ))
        .into_response(),
        Err(AppError::NotFound) => not_found_for(&signed),
        Err(AppError::Stale { .. }) => message(
            StatusCode::CONFLICT,
            nav(),
            "Not reverted",
            "Someone changed this link since you opened its history. Open it again first.",
        ),
        Err(e) if e.status().is_client_error() => {
            message(e.status(), nav(), "Not reverted", &e.to_string())
        }
        Err(e) => failed(e),
    }
}

#[cfg(test)]
mod tests {
    use super::said;
    use serde_json::json;

    #[test]
    fn a_change_is_said_in_words_and_a_secret_only_as_replaced() {
        assert_eq!(
            said("title", &json!({"from": "Spring", "to": null})),
            "title: \"Spring\" → (none)"
        );
        assert_eq!(
            said("redirect", &json!({"from": 301, "to": 302})),
            "redirect: 301 → 302"
        );
        assert_eq!(
            said("secret", &json!({"changed": true})),
            "secret: replaced"
        );
    }
}

//! What a link's page offers besides its form: whether an alias is free (asked as it is
//! typed), what a given visit would get (the edge's own decision, run here), the QR
//! code to download, and a signed token to share.

use super::link_form::{link_path, load};
use super::page_error::{failed, failure, not_found_for};
use super::render::{capitalized, download, message, refused_post, render, Nav};
use super::session::Signed;
use crate::accounts::SignedIn;
use crate::error::AppError;
use crate::links::{alias_available, Intent, Links};
use crate::model::time::{now_ms, parse_rfc3339};
use crate::model::{Creator, Link, Role};
use crate::views::links::{IssueToken, QrParams};
use askama::Template;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Response};
use axum::Form;
use serde::Deserialize;
use shared::answer::{Method, Outcome};
use shared::decision::{decide, Client, Visit};
use std::sync::Arc;

/// Visitors the tester offers, as their browsers name themselves.
const SAMPLE_AGENTS: [(&str, &str, &str); 6] = [
    (
        "iphone",
        "iPhone",
        "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1",
    ),
    (
        "android",
        "Android phone",
        "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Mobile Safari/537.36",
    ),
    (
        "windows",
        "Windows computer",
        "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Safari/537.36",
    ),
    (
        "mac",
        "Mac",
        "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_4) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Safari/605.1.15",
    ),
    (
        "linux",
        "Linux computer",
        "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Safari/537.36",
    ),
    (
        "slack",
        "Slack's link preview",
        "Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)",
    ),
];

#[derive(Deserialize)]
pub(super) struct AliasQuery {
    #[serde(default)]
    domain: String,
    #[serde(default)]
    code: String,
}

/// `GET /o/{owner}/alias?domain=&code=`: a line saying whether the alias is free, for
/// the form to show beside the field (htmx). Editors only.
pub(super) async fn alias(
    Signed(signed): Signed,
    State(links): State<Arc<Links>>,
    Path(owner): Path<String>,
    Query(q): Query<AliasQuery>,
) -> Response {
    if signed.allows(&owner, Role::Editor) != Some(true) {
        return not_found_for(&signed);
    }
    let code = q.code.trim();
    let said = if code.is_empty() {
        Ok("Empty: a code will be generated.".to_owned())
    } else {
        let creator = Creator {
            owner: &owner,
            admin: signed.user.operator,
            domains: None,
            actor: crate::model::history::Actor::User(&signed.user.user_id),
        };
        match alias_available(&links, &creator, Some(q.domain.as_str()), code).await {
            Ok(()) => Ok(format!("“{code}” is free.")),
            Err(e @ (AppError::Taken { .. } | AppError::Forbidden(_))) => {
                Err(capitalized(&e.to_string()))
            }
            Err(AppError::Invalid { detail, .. }) => Err(capitalized(&detail)),
            Err(e) => return failed(e),
        }
    };
    // A fragment: a `<span>` the page puts in place; its words escaped here.
    let (class, text) = match said {
        Ok(text) => ("notice", text),
        Err(text) => ("error", text),
    };
    Html(format!(
        "<span class=\"{class}\">{}</span>",
        askama::filters::escape(&text, askama::filters::Html)
            .map(|e| e.to_string())
            .unwrap_or_default()
    ))
    .into_response()
}

#[derive(Template)]
#[template(path = "dashboard/link_test.html")]
struct TestPage {
    nav: Option<Nav>,
    short_url: String,
    link_path: String,
    agents: Vec<(&'static str, &'static str, bool)>,
    user_agent: String,
    country: String,
    language: String,
    query: String,
    at: String,
    granted: bool,
    error: Option<String>,
    result: Option<Tested>,
}

/// What the visit got.
struct Tested {
    /// In words: sent to …, shown a page, refused.
    verdict: String,
    status: u16,
    location: Option<String>,
    /// The split's variants, when chance picks among them.
    variants: Vec<String>,
    unrecorded: bool,
}

#[derive(Deserialize, Default)]
pub(super) struct TestQuery {
    /// One of [`SAMPLE_AGENTS`], or empty for `ua`.
    #[serde(default)]
    agent: String,
    #[serde(default)]
    ua: String,
    #[serde(default)]
    country: String,
    #[serde(default)]
    language: String,
    #[serde(default)]
    query: String,
    /// `datetime-local`, UTC; empty: now.
    #[serde(default)]
    at: String,
    /// Present when the visit carries what opens a private link.
    #[serde(default)]
    granted: String,
    /// Present once the form was sent.
    #[serde(default)]
    run: String,
}

/// `GET /o/{owner}/links/{domain}/{code}/test`: what a visit would get, decided by the
/// same code the edge runs, with the link as saved, today's bans and its domain's pages.
pub(super) async fn test(
    Signed(signed): Signed,
    State(links): State<Arc<Links>>,
    Path((owner, domain, code)): Path<(String, String, String)>,
    Query(q): Query<TestQuery>,
) -> Response {
    let link = match readable(&signed, &links, (&owner, &domain, &code)).await {
        Ok(link) => link,
        Err(refused) => return refused,
    };
    let agent = if q.agent.is_empty() && q.ua.is_empty() {
        "iphone"
    } else {
        q.agent.as_str()
    };
    let user_agent = SAMPLE_AGENTS
        .iter()
        .find(|(key, _, _)| *key == agent)
        .map_or(q.ua.trim().to_owned(), |(_, _, ua)| (*ua).to_owned());
    let mut page = TestPage {
        nav: Nav::of(&signed, Some(&owner)),
        short_url: links.short_url(&link),
        link_path: link_path(&owner, &link.domain, &link.code),
        agents: SAMPLE_AGENTS
            .iter()
            .map(|(key, label, _)| (*key, *label, *key == agent))
            .collect(),
        user_agent: if SAMPLE_AGENTS.iter().any(|(k, _, _)| *k == agent) {
            String::new()
        } else {
            user_agent.clone()
        },
        country: q.country.trim().to_owned(),
        language: q.language.trim().to_owned(),
        query: q.query.trim().trim_start_matches('?').to_owned(),
        at: q.at.trim().to_owned(),
        granted: !q.granted.is_empty(),
        error: None,
        result: None,
    };
    if q.run.is_empty() {
        return render(StatusCode::OK, &page);
    }
    let now = match page.at.as_str() {
        "" => now_ms(),
        at => {
            match parse_rfc3339(&format!("{at}:00Z")).or_else(|| parse_rfc3339(&format!("{at}Z"))) {
                Some(ms) => ms,
                None => {
                    page.error = Some("When: a date and time, YYYY-MM-DDTHH:MM (UTC).".into());
                    return render(StatusCode::UNPROCESSABLE_ENTITY, &page);
                }
            }
        }
    };
    let country = page.country.to_ascii_uppercase();
    if !country.is_empty()
        && (country.len() != 2 || !country.bytes().all(|b| b.is_ascii_uppercase()))
    {
        page.error = Some("Country: two letters, as NL or DE.".into());
        return render(StatusCode::UNPROCESSABLE_ENTITY, &page);
    }
    let (deny, settings) =
        match tokio::try_join!(links.denylist(), links.domain_settings(&link.domain)) {
            Ok(found) => found,
            Err(e) => return failed(e),
        };
    let Some(route) = shared::RouteKey::new(link.domain.as_str(), link.code.as_str()) else {
        return failure("a stored link without a route key");
    };
    let record = link.edge_record(link.banned_by(&deny));
    let visit = Visit {
        method: Method::Get,
        route: &route,
        query: Some(page.query.as_str()).filter(|q| !q.is_empty()),
        now_ms: now,
        client: Client {
            user_agent: &user_agent,
            accept_language: &page.language,
            country: Some(country.as_str()).filter(|c| !c.is_empty()),
        },
        draw: 0,
        access_granted: page.granted,
        legacy_known: false,
    };
    let decided = decide(&visit, Some(&record), &deny, &settings);
    let location = decided.header("location").map(str::to_owned);
    let verdict = match (decided.outcome, &location) {
        (Outcome::Redirect, Some(to)) => format!("Sent to {to}"),
        (Outcome::Redirect, None) => {
            "Shown a page before going on (the interstitial or the social preview)".into()
        }
        (Outcome::Disabled, _) => "Refused: the link is disabled".into(),
        (Outcome::Expired, _) => "Refused: the link has expired or reached its visit limit".into(),
        (Outcome::Deleted, _) => "Refused: the link is deleted".into(),
        (Outcome::Banned, _) => {
            "Blocked: a ban covers the link or a target it could send to".into()
        }
        (Outcome::Private, _) => "Asked for the link's password or a valid token".into(),
        (other, _) => format!("Answered {}", other.name()),
    };
    // Chance picks a variant only where no rule claimed the visit.
    let variants = match (decided.variant, &link.options.split) {
        (Some(_), Some(split)) => split
            .variants()
            .iter()
            .map(|v| format!("{} ({}%)", v.target_url, v.weight))
            .collect(),
        _ => Vec::new(),
    };
    page.result = Some(Tested {
        verdict,
        status: decided.status,
        location,
        variants,
        unrecorded: decided.unrecorded,
    });
    render(StatusCode::OK, &page)
}

/// `GET /o/{owner}/links/{domain}/{code}/qr?format=&size=&margin=&ecc=`: the link's QR
/// code as a file to download, drawn as the API draws it.
pub(super) async fn qr(
    Signed(signed): Signed,
    State(links): State<Arc<Links>>,
    Path((owner, domain, code)): Path<(String, String, String)>,
    params: Result<Query<QrParams>, QueryRejection>,
) -> Response {
    let link = match readable(&signed, &links, (&owner, &domain, &code)).await {
        Ok(link) => link,
        Err(refused) => return refused,
    };
    let drawn = params
        .map_err(|e| AppError::BadRequest(e.body_text()))
        .and_then(|Query(p)| crate::links::qr::draw(&links.short_url(&link), &p));
    match drawn {
        Ok(drawn) => {
            let extension = if drawn.content_type.contains("svg") {
                "svg"
            } else {
                "png"
            };
            let name = format!("{}-{}-qr.{extension}", link.domain, link.code);
            download(drawn.content_type, &name, drawn.bytes)
        }
        Err(e) => message(
            StatusCode::UNPROCESSABLE_ENTITY,
            Nav::of(&signed, Some(&owner)),
            "That QR code cannot be drawn",
            &capitalized(&e.to_string()),
        ),
    }
}

#[derive(Deserialize)]
pub(super) struct TokenForm {
    #[serde(default)]
    csrf: String,
    /// Hours the token opens the link for.
    #[serde(default)]
    hours: String,
}

/// `POST /o/{owner}/links/{domain}/{code}/tokens`: a token for a signed link, shown
/// once on the page that answers (it is kept nowhere).
pub(super) async fn token(
    Signed(signed): Signed,
    State(links): State<Arc<Links>>,
    Path((owner, domain, code)): Path<(String, String, String)>,
    Form(form): Form<TokenForm>,
) -> Response {
    if !signed.csrf_matches(&form.csrf) {
        return refused_post();
    }
    match signed.allows(&owner, Role::Editor) {
        None => return not_found_for(&signed),
        Some(false) => {
            return message(
                StatusCode::FORBIDDEN,
                Nav::of(&signed, Some(&owner)),
                "Read only",
                "Your role in this owner lets you read its links, not issue their tokens.",
            )
        }
        Some(true) => {}
    }
    let issued = async {
        let hours: u64 = form
            .hours
            .trim()
            .parse()
            .map_err(|_| AppError::invalid("hours", "a whole number of hours"))?;
        let link = load(&links, &signed, (&owner, &domain, &code), Intent::Change).await?;
        let asked = IssueToken {
            expires_at: None,
            ttl_s: Some(hours.saturating_mul(3600)),
        };
        crate::links::access::issue(&link, &asked, now_ms())
    }
    .await;
    match issued {
        Ok(t) => message(
            StatusCode::CREATED,
            Nav::of(&signed, Some(&owner)),
            "A token for this link",
            &format!(
                "Share this address; it opens the link until {} (UTC), and is shown only now: {}",
                t.expires_at.replace('T', " ").replace('Z', ""),
                t.url
            ),
        ),
        Err(AppError::NotFound) => not_found_for(&signed),
        Err(e) if !e.status().is_server_error() => message(
            e.status(),
            Nav::of(&signed, Some(&owner)),
            "No token issued",
            &capitalized(&e.to_string()),
        ),
        Err(e) => failed(e),
    }
}

/// The link, if `signed` may read its owner's links; else the page that says not found.
pub(super) async fn readable(
    signed: &SignedIn,
    links: &Links,
    key: (&str, &str, &str),
) -> Result<Link, Response> {
    if signed.allows(key.0, Role::Viewer) != Some(true) {
        return Err(not_found_for(signed));
    }
    match load(links, signed, key, Intent::ReadOrDelete).await {
        Ok(link) => Ok(link),
        Err(AppError::NotFound) => Err(not_found_for(signed)),
        Err(e) => Err(failed(e)),
    }
}

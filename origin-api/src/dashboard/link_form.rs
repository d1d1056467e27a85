//! Creating, changing and deleting a link from the browser: the form, what it becomes
//! (the API's own `CreateLink` and `UpdateLink`, judged by the same services), and the
//! pages that show it. A refused form comes back with everything typed in it and the
//! reason; a change that lost a race with another shows what the link is now.

use super::render::{capitalized, failure, message, not_found_for, refused_post, render, Nav};
use super::session::Signed;
use crate::accounts::SignedIn;
use crate::error::AppError;
use crate::links::Links;
use crate::links::{create_link_once, delete_link, owned_link, update_link, Created, Intent};
use crate::model::time::{parse_rfc3339, rfc3339};
use crate::model::{Creator, Link, LinkState, Role};
use crate::store;
use crate::views::links::{CreateLink, UpdateLink};
use askama::Template;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::Form;
use serde::Deserialize;
use serde_json::{json, Map, Value};
use std::sync::Arc;

/// The fields of the link form, as the browser posts them (every one text).
#[derive(Debug, Default, Deserialize)]
pub(super) struct LinkForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    target_url: String,
    #[serde(default)]
    domain: String,
    #[serde(default)]
    code: String,
    #[serde(default)]
    title: String,
    /// Comma-separated.
    #[serde(default)]
    tags: String,
    /// `YYYY-MM-DDTHH:MM` in UTC (an `<input type=datetime-local>`), or empty.
    #[serde(default)]
    expires_at: String,
    #[serde(default)]
    redirect: String,
    /// `active` or `disabled` (changing only).
    #[serde(default)]
    status: String,
    /// The version the form was filled from (changing only).
    #[serde(default)]
    version: String,
}

impl LinkForm {
    /// The form filled from `link`.
    fn of(link: &Link) -> Self {
        LinkForm {
            csrf: String::new(),
            target_url: link.target_url.clone(),
            domain: link.domain.clone(),
            code: link.code.clone(),
            title: link.title.clone().unwrap_or_default(),
            tags: link.tags.join(", "),
            expires_at: link.expires_at.map(datetime_local).unwrap_or_default(),
            redirect: link.redirect.code().to_string(),
            status: link.status.as_str().to_owned(),
            version: link.version.to_string(),
        }
    }

    fn tags(&self) -> Vec<String> {
        self.tags
            .split(',')
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .map(str::to_owned)
            .collect()
    }

    /// The expiry as RFC 3339, or `None` when the field is empty; the field's name and
    /// why when it cannot be read.
    fn expiry(&self) -> Result<Option<String>, AppError> {
        let raw = self.expires_at.trim();
        if raw.is_empty() {
            return Ok(None);
        }
        // A `datetime-local` input sends minutes, sometimes seconds; the form says UTC.
        let candidate = match raw.len() {
            16 => format!("{raw}:00Z"),
            _ => format!("{raw}Z"),
        };
        parse_rfc3339(&candidate)
            .map(|ms| Some(rfc3339(ms)))
            .ok_or_else(|| {
                AppError::invalid("expires_at", "a date and time, YYYY-MM-DDTHH:MM (UTC)")
            })
    }

    fn redirect(&self) -> Result<Option<u16>, AppError> {
        match self.redirect.trim() {
            "" => Ok(None),
            r => r
                .parse()
                .map(Some)
                .map_err(|_| AppError::invalid("redirect", "301, 302, 307 or 308")),
        }
    }

    /// The API's create body: what the form says, and nothing it leaves empty.
    fn to_create(&self) -> Result<CreateLink, AppError> {
        let mut body = Map::new();
        body.insert("target_url".into(), json!(self.target_url.trim()));
        for (name, value) in [
            ("domain", &self.domain),
            ("code", &self.code),
            ("title", &self.title),
        ] {
            if !value.trim().is_empty() {
                body.insert(name.into(), json!(value.trim()));
            }
        }
        let tags = self.tags();
        if !tags.is_empty() {
            body.insert("tags".into(), json!(tags));
        }
        if let Some(expiry) = self.expiry()? {
            body.insert("expires_at".into(), json!(expiry));
        }
        if let Some(redirect) = self.redirect()? {
            body.insert("redirect".into(), json!(redirect));
        }
        serde_json::from_value(Value::Object(body))
            .map_err(|e| AppError::invalid("form", e.to_string()))
    }

    /// The API's change body: every field of the form, an empty one clearing what it
    /// may clear (the title, the expiry).
    fn to_update(&self) -> Result<UpdateLink, AppError> {
        let title = self.title.trim();
        let mut body = json!({
            "target_url": self.target_url.trim(),
            "title": if title.is_empty() { Value::Null } else { json!(title) },
            "tags": self.tags(),
            "expires_at": self.expiry()?,
        });
        if let Some(redirect) = self.redirect()? {
            body["redirect"] = json!(redirect);
        }
        if let Some(status) = LinkState::parse(self.status.trim()) {
            body["status"] = json!(status);
        }
        serde_json::from_value(body).map_err(|e| AppError::invalid("form", e.to_string()))
    }

    fn version(&self) -> Result<u64, AppError> {
        self.version
            .trim()
            .parse()
            .map_err(|_| AppError::invalid("version", "reload the page"))
    }
}

/// `YYYY-MM-DDTHH:MM` in UTC, as a `datetime-local` input shows it.
fn datetime_local(ms: i64) -> String {
    rfc3339(ms).chars().take(16).collect()
}

#[derive(Template)]
#[template(path = "dashboard/link_form.html")]
struct LinkPage {
    nav: Option<Nav>,
    owner: String,
    /// `None` for a new link; the route key and short URL of an existing one.
    existing: Option<Existing>,
    form: LinkForm,
    csrf: String,
    domains: Vec<String>,
    /// The viewer's form is shown without a way to send it.
    may_edit: bool,
    notice: Option<&'static str>,
    error: Option<String>,
    /// The link as it is now, when a change lost a race with another.
    conflict: Option<Vec<Changed>>,
}

struct Existing {
    domain: String,
    code: String,
    short_url: String,
    status: &'static str,
}

/// A field someone else changed while this form was open: what it is now.
struct Changed {
    field: &'static str,
    now: String,
}

impl LinkPage {
    fn redirects(&self) -> [(&'static str, &'static str); 4] {
        [
            ("302", "302 Found (the default)"),
            ("301", "301 Moved Permanently"),
            ("307", "307 Temporary Redirect"),
            ("308", "308 Permanent Redirect"),
        ]
    }
}

/// The owner's page for `signed`, if they may see it, and whether they may change it.
fn role(signed: &SignedIn, owner: &str) -> Option<bool> {
    signed.allows(owner, Role::Editor)
}

/// Whom the services judge: the owner, acting through this user (an operator may use
/// every registered domain, as an admin key may).
fn creator<'a>(signed: &SignedIn, owner: &'a str) -> Creator<'a> {
    Creator {
        owner,
        admin: signed.user.operator,
        domains: None,
    }
}

/// `owner`'s link `domain/code`, as the API would find it for the owner (404 for any
/// other's).
pub(super) async fn load(
    links: &Links,
    signed: &SignedIn,
    (owner, domain, code): (&str, &str, &str),
    intent: Intent,
) -> Result<Link, AppError> {
    owned_link(&links.db, &creator(signed, owner), domain, code, intent).await
}

/// What the create limit counts this user's links by.
fn limit_key(signed: &SignedIn) -> String {
    format!("user:{}", signed.user.user_id)
}

async fn domains_of(links: &Links, owner: &str) -> Result<Vec<String>, AppError> {
    Ok(store::domains::for_owner(&links.db, owner)
        .await?
        .into_iter()
        .map(|d| d.domain)
        .collect())
}

impl LinkPage {
    /// The page of `existing` (or of a new link), with `form` in it and nothing said.
    fn new(signed: &SignedIn, owner: &str, existing: Option<&Link>, form: LinkForm) -> Self {
        LinkPage {
            nav: Nav::of(signed, Some(owner)),
            owner: owner.to_owned(),
            existing: existing.map(|l| Existing {
                domain: l.domain.clone(),
                code: l.code.clone(),
                short_url: l.short_url(),
                status: l.status.as_str(),
            }),
            may_edit: role(signed, owner).unwrap_or(false)
                && existing.is_none_or(|l| l.status != LinkState::Deleted),
            form,
            csrf: signed.csrf_token.clone(),
            domains: Vec::new(),
            notice: None,
            error: None,
            conflict: None,
        }
    }
}

/// What a refusal says on the form: the service's own words for the client's mistakes,
/// nothing of the origin's own failures.
fn refusal(e: &AppError) -> Option<(StatusCode, String)> {
    let status = e.status();
    if status.is_server_error() {
        return None;
    }
    let said = match e {
        AppError::Invalid { field, detail } => format!("{}: {detail}", label(field)),
        other => capitalized(&other.to_string()),
    };
    Some((status, said))
}

/// A field as the form names it.
fn label(field: &str) -> String {
    match field {
        "target_url" => "Target URL".into(),
        "code" => "Alias".into(),
        "expires_at" => "Expires".into(),
        "domain" => "Domain".into(),
        "title" => "Title".into(),
        "tags" => "Tags".into(),
        "redirect" => "Redirect".into(),
        other => capitalized(other),
    }
}

/// `GET /o/{owner}/links/new`.
pub(super) async fn new_link(
    Signed(signed): Signed,
    State(links): State<Arc<Links>>,
    Path(owner): Path<String>,
) -> Response {
    if role(&signed, &owner) != Some(true) {
        return not_found_for(&signed);
    }
    match domains_of(&links, &owner).await {
        Ok(domains) => {
            let page = LinkPage {
                domains,
                ..LinkPage::new(&signed, &owner, None, LinkForm::default())
            };
            render(StatusCode::OK, &page)
        }
        Err(e) => failure(&e.to_string()),
    }
}

/// `POST /o/{owner}/links`.
pub(super) async fn create(
    Signed(signed): Signed,
    State(links): State<Arc<Links>>,
    Path(owner): Path<String>,
    Form(form): Form<LinkForm>,
) -> Response {
    if let Some(refused) = refused_change(&signed, &owner, &form.csrf) {
        return refused;
    }
    let made = async {
        links.create_limit.take(&limit_key(&signed), 1)?;
        create_link_once(&links, &creator(&signed, &owner), form.to_create()?, None).await
    }
    .await;
    let link = match made {
        Ok(Created::New(link) | Created::Existing(link)) => link,
        Ok(Created::Replayed(_)) => return failure("a replay without an idempotency key"),
        Err(e) => return refused_form(&signed, &links, &owner, None, form, &e).await,
    };
    Redirect::to(&link_path(&owner, &link.domain, &link.code)).into_response()
}

/// `GET /o/{owner}/links/{domain}/{code}`: the link, in its form.
pub(super) async fn edit(
    Signed(signed): Signed,
    State(links): State<Arc<Links>>,
    Path((owner, domain, code)): Path<(String, String, String)>,
    Query(shown): Query<Shown>,
) -> Response {
    if role(&signed, &owner).is_none() {
        return not_found_for(&signed);
    }
    let link = match load(
        &links,
        &signed,
        (&owner, &domain, &code),
        Intent::ReadOrDelete,
    )
    .await
    {
        Ok(link) => link,
        Err(AppError::NotFound) => return not_found_for(&signed),
        Err(e) => return failure(&e.to_string()),
    };
    let page = LinkPage {
        notice: shown.saved.is_some().then_some("Saved."),
        ..LinkPage::new(&signed, &owner, Some(&link), LinkForm::of(&link))
    };
    render(StatusCode::OK, &page)
}

/// `?saved=1`, after a change.
#[derive(Deserialize)]
pub(super) struct Shown {
    saved: Option<String>,
}

/// `POST /o/{owner}/links/{domain}/{code}`: the change, if the link is still at the
/// version the form was filled from.
pub(super) async fn update(
    Signed(signed): Signed,
    State(links): State<Arc<Links>>,
    Path((owner, domain, code)): Path<(String, String, String)>,
    Form(form): Form<LinkForm>,
) -> Response {
    if let Some(refused) = refused_change(&signed, &owner, &form.csrf) {
        return refused;
    }
    let current = match load(&links, &signed, (&owner, &domain, &code), Intent::Change).await {
        Ok(link) => link,
        Err(AppError::NotFound) => return not_found_for(&signed),
        Err(e) => return refused_form(&signed, &links, &owner, None, form, &e).await,
    };
    let changed = async {
        let expected = form.version()?;
        let changes = form.to_update()?;
        update_link(&links, current.clone(), expected, changes).await
    }
    .await;
    match changed {
        Ok(link) => Redirect::to(&format!(
            "{}?saved=1",
            link_path(&owner, &link.domain, &link.code)
        ))
        .into_response(),
        Err(AppError::Stale { .. }) => {
            // Someone changed it meanwhile: nothing of this form was written. Show what
            // the link is now beside what was typed, and the version to save over it.
            let theirs = LinkForm::of(&current);
            let conflict = differences(&form, &theirs);
            let mut mine = form;
            mine.version = theirs.version.clone();
            mine.csrf.clear();
            let page = LinkPage {
                error: Some("Someone changed this link while you were editing it. Nothing was saved: compare, then save again to replace their change.".into()),
                conflict: Some(conflict),
                ..LinkPage::new(&signed, &owner, Some(&current), mine)
            };
            render(StatusCode::CONFLICT, &page)
        }
        Err(e) => refused_form(&signed, &links, &owner, Some(&current), form, &e).await,
    }
}

/// `POST /o/{owner}/links/{domain}/{code}/delete`.
pub(super) async fn delete(
    Signed(signed): Signed,
    State(links): State<Arc<Links>>,
    Path((owner, domain, code)): Path<(String, String, String)>,
    Form(form): Form<LinkForm>,
) -> Response {
    if let Some(refused) = refused_change(&signed, &owner, &form.csrf) {
        return refused;
    }
    let deleted = async {
        let current = load(
            &links,
            &signed,
            (&owner, &domain, &code),
            Intent::ReadOrDelete,
        )
        .await?;
        delete_link(&links, current, Some(form.version()?)).await
    }
    .await;
    match deleted {
        Ok(()) => Redirect::to(&format!("/o/{}/links", super::pages::path_segment(&owner))).into_response(),
        Err(AppError::NotFound) => not_found_for(&signed),
        Err(AppError::Stale { .. }) => message(
            StatusCode::CONFLICT,
            Nav::of(&signed, Some(&owner)),
            "Not deleted",
            "Someone changed this link since you opened it. Open it again to see the change before you delete it.",
        ),
        Err(e) => failure(&e.to_string()),
    }
}

/// The form again, with what was typed and why it was refused.
async fn refused_form(
    signed: &SignedIn,
    links: &Links,
    owner: &str,
    existing: Option<&Link>,
    mut form: LinkForm,
    e: &AppError,
) -> Response {
    let Some((status, why)) = refusal(e) else {
        return failure(&e.to_string());
    };
    form.csrf.clear();
    let domains = if existing.is_none() {
        domains_of(links, owner).await.unwrap_or_default()
    } else {
        Vec::new()
    };
    let page = LinkPage {
        domains,
        error: Some(why),
        ..LinkPage::new(signed, owner, existing, form)
    };
    render(status, &page)
}

/// Why a post may not change `owner`'s links, if it may not: its form token wrong, or its
/// user not an editor there (a member who is not is refused; anyone else finds nothing).
fn refused_change(signed: &SignedIn, owner: &str, csrf: &str) -> Option<Response> {
    if !signed.csrf_matches(csrf) {
        return Some(refused_post());
    }
    match role(signed, owner) {
        None => Some(not_found_for(signed)),
        Some(false) => Some(forbidden(signed, owner)),
        Some(true) => None,
    }
}

fn forbidden(signed: &SignedIn, owner: &str) -> Response {
    message(
        StatusCode::FORBIDDEN,
        Nav::of(signed, Some(owner)),
        "Read only",
        "Your role in this owner lets you read its links, not change them.",
    )
}

/// The fields where `theirs` (the link now) differs from `mine` (the form sent).
fn differences(mine: &LinkForm, theirs: &LinkForm) -> Vec<Changed> {
    let pairs: [(&'static str, &str, &str); 6] = [
        ("Target", &mine.target_url, &theirs.target_url),
        ("Title", &mine.title, &theirs.title),
        ("Tags", &mine.tags, &theirs.tags),
        ("Expires", &mine.expires_at, &theirs.expires_at),
        ("Redirect", &mine.redirect, &theirs.redirect),
        ("Status", &mine.status, &theirs.status),
    ];
    pairs
        .into_iter()
        .filter(|(_, a, b)| a.trim() != b.trim())
        .map(|(field, _, now)| Changed {
            field,
            now: if now.is_empty() {
                "(none)".into()
            } else {
                now.to_owned()
            },
        })
        .collect()
}

/// The page of one link.
pub(super) fn link_path(owner: &str, domain: &str, code: &str) -> String {
    use super::pages::path_segment;
    format!(
        "/o/{}/links/{}/{}",
        path_segment(owner),
        path_segment(domain),
        path_segment(code)
    )
}

//! Creating, changing and deleting a link from the browser: the form, what it becomes
//! (the API's own `CreateLink` and `UpdateLink`, judged by the same services), and the
//! pages that show it. A refused form comes back with everything typed in it and the
//! reason; a change that lost a race with another shows what the link is now.

use super::link_form_fields::{device_choices, LinkForm, RuleRow, VariantRow, UTM};
use super::page_error::{failed, failure, not_found_for};
use super::render::{capitalized, message, refused_post, render, Nav};
use super::session::Signed;
use crate::accounts::SignedIn;
use crate::error::AppError;
use crate::links::Links;
use crate::links::{create_link_once, delete_link, restore_link, update_link, Created, Intent};
use crate::model::history::Actor;
use crate::model::{Creator, Link, LinkState, Role};
use crate::views::link_fields;
use askama::Template;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::Form;
use serde::Deserialize;
use std::sync::Arc;

/// The form as a browser posts it: pairs, in order, a name repeated for a list.
type Posted = Form<Vec<(String, String)>>;

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
    /// A deleted link an editor may still bring back (within `--restore-window`).
    may_restore: bool,
    notice: Option<&'static str>,
    error: Option<String>,
    /// The link as it is now, when a change lost a race with another.
    conflict: Option<Vec<Changed>>,
    /// The rows shown: the form's, and a blank one to fill.
    rules: Vec<RuleRow>,
    variants: Vec<VariantRow>,
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

    fn accesses(&self) -> [(&'static str, &'static str); 3] {
        [
            ("public", "Anyone with the link"),
            ("password", "Visitors who give a password"),
            ("signed", "Only links with a signed token"),
        ]
    }

    fn devices(&self) -> Vec<(String, &'static str)> {
        device_choices()
    }

    /// The page of the existing link `l`.
    fn path(&self, l: &Existing) -> String {
        link_path(&self.owner, &l.domain, &l.code)
    }

    fn utm_set(&self) -> bool {
        self.form.utm.iter().any(|v| !v.is_empty())
    }

    /// The UTM builder's fields: `(name, label, value)`.
    fn utm_fields(&self) -> Vec<(&'static str, &'static str, String)> {
        let labels = ["Source", "Medium", "Campaign", "Term", "Content"];
        UTM.iter()
            .zip(labels)
            .zip(&self.form.utm)
            .map(|((name, label), value)| (*name, label, value.clone()))
            .collect()
    }
}

/// The owner's page for `signed`, if they may see it, and whether they may change it.
fn role(signed: &SignedIn, owner: &str) -> Option<bool> {
    signed.allows(owner, Role::Editor)
}

/// Whom the services judge: the owner, acting through this user (an operator may use
/// every registered domain, as an admin key may).
fn creator<'a>(signed: &'a SignedIn, owner: &'a str) -> Creator<'a> {
    Creator {
        owner,
        admin: signed.user.operator,
        domains: None,
        actor: actor(signed),
    }
}

/// The user, as the link's history records them.
pub(super) fn actor(signed: &SignedIn) -> Actor<'_> {
    Actor::User(&signed.user.user_id)
}

/// `owner`'s link `domain/code`, as the API would find it for the owner (404 for any
/// other's).
pub(super) async fn load(
    links: &Links,
    signed: &SignedIn,
    (owner, domain, code): (&str, &str, &str),
    intent: Intent,
) -> Result<Link, AppError> {
    links
        .owned(&creator(signed, owner), domain, code, intent)
        .await
}

/// What the create limit counts this user's links by.
fn limit_key(signed: &SignedIn) -> String {
    format!("user:{}", signed.user.user_id)
}

async fn domains_of(
    links: &Links,
    signed: &SignedIn,
    owner: &str,
) -> Result<Vec<String>, AppError> {
    Ok(links
        .usable_domains(&signed.principal(Some(owner)), owner)
        .await?
        .into_iter()
        .map(|d| d.domain)
        .collect())
}

impl LinkPage {
    /// The page of `existing` (or of a new link), with `form` in it and nothing said.
    fn new(
        signed: &SignedIn,
        owner: &str,
        existing: Option<&Link>,
        form: LinkForm,
        links: &Links,
    ) -> Self {
        let (rules, variants) = form.rows_to_show();
        LinkPage {
            nav: Nav::of(signed, Some(owner)),
            owner: owner.to_owned(),
            existing: existing.map(|l| Existing {
                domain: l.domain.clone(),
                code: l.code.clone(),
                short_url: links.short_url(l),
                status: l.status.as_str(),
            }),
            may_edit: role(signed, owner).unwrap_or(false)
                && existing.is_none_or(|l| l.status != LinkState::Deleted),
            may_restore: role(signed, owner).unwrap_or(false)
                && existing.is_some_and(|l| l.status == LinkState::Deleted),
            form,
            csrf: signed.csrf_token.clone(),
            domains: Vec::new(),
            notice: None,
            error: None,
            conflict: None,
            rules,
            variants,
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
    // The table's text inputs, as the table names them.
    if let Some(f) = link_fields::in_form().find(|f| f.name == field) {
        return f.label.to_owned();
    }
    match field {
        "target_url" => "Target URL".into(),
        "code" => "Alias".into(),
        "expires_at" => "Expires".into(),
        "domain" => "Domain".into(),
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
    match domains_of(&links, &signed, &owner).await {
        Ok(domains) => {
            let page = LinkPage {
                domains,
                ..LinkPage::new(&signed, &owner, None, LinkForm::blank(), &links)
            };
            render(StatusCode::OK, &page)
        }
        Err(e) => failed(e),
    }
}

/// `POST /o/{owner}/links`.
pub(super) async fn create(
    Signed(signed): Signed,
    State(links): State<Arc<Links>>,
    Path(owner): Path<String>,
    Form(posted): Posted,
) -> Response {
    let form = LinkForm::from_pairs(&posted);
    if let Some(refused) = refused_change(&signed, &owner, &form.csrf) {
        return refused;
    }
    if form.adding.is_some() {
        return with_more_rows(&signed, &links, &owner, None, form).await;
    }
    let made = async {
        links.take_creates(&limit_key(&signed), &owner, 1)?;
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
        Err(e) => return failed(e),
    };
    let page = LinkPage {
        notice: shown.saved.is_some().then_some("Saved."),
        ..LinkPage::new(&signed, &owner, Some(&link), LinkForm::of(&link), &links)
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
    Form(posted): Posted,
) -> Response {
    let form = LinkForm::from_pairs(&posted);
    if let Some(refused) = refused_change(&signed, &owner, &form.csrf) {
        return refused;
    }
    let current = match load(&links, &signed, (&owner, &domain, &code), Intent::Change).await {
        Ok(link) => link,
        Err(AppError::NotFound) => return not_found_for(&signed),
        Err(e) => return refused_form(&signed, &links, &owner, None, form, &e).await,
    };
    if form.adding.is_some() {
        return with_more_rows(&signed, &links, &owner, Some(&current), form).await;
    }
    let changed = async {
        let expected = form.version()?;
        let changes = form.to_update()?;
        update_link(&links, current.clone(), expected, changes, actor(&signed)).await
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
                ..LinkPage::new(&signed, &owner, Some(&current), mine, &links)
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
    Form(posted): Posted,
) -> Response {
    let form = LinkForm::from_pairs(&posted);
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
        delete_link(&links, current, Some(form.version()?), actor(&signed)).await
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
        Err(e) => failed(e),
    }
}

/// `POST /o/{owner}/links/{domain}/{code}/restore`: a deleted link back, as the API's
/// restore does.
pub(super) async fn restore(
    Signed(signed): Signed,
    State(links): State<Arc<Links>>,
    Path((owner, domain, code)): Path<(String, String, String)>,
    Form(posted): Posted,
) -> Response {
    let form = LinkForm::from_pairs(&posted);
    if let Some(refused) = refused_change(&signed, &owner, &form.csrf) {
        return refused;
    }
    let restored = async {
        let current = load(&links, &signed, (&owner, &domain, &code), Intent::Change).await?;
        restore_link(&links, current, Some(form.version()?), actor(&signed)).await
    }
    .await;
    let nav = || Nav::of(&signed, Some(&owner));
    match restored {
        Ok(link) => Redirect::to(&link_path(&owner, &link.domain, &link.code)).into_response(),
        Err(AppError::NotFound) => not_found_for(&signed),
        Err(AppError::Stale { .. }) => message(
            StatusCode::CONFLICT,
            nav(),
            "Not restored",
            "Someone changed this link since you opened it. Open it again first.",
        ),
        Err(e) if e.status().is_client_error() => {
            message(e.status(), nav(), "Not restored", &e.to_string())
        }
        Err(e) => failed(e),
    }
}

/// The form again, with what was typed and why it was refused.
async fn refused_form(
    signed: &SignedIn,
    links: &Links,
    owner: &str,
    existing: Option<&Link>,
    form: LinkForm,
    e: &AppError,
) -> Response {
    let Some((status, why)) = refusal(e) else {
        return failed(e);
    };
    form_again(signed, links, owner, existing, form, status, Some(why)).await
}

/// The form again, as sent, with one more blank row of what it asked for: how rules and
/// variants are added without JavaScript. Nothing is saved.
async fn with_more_rows(
    signed: &SignedIn,
    links: &Links,
    owner: &str,
    existing: Option<&Link>,
    form: LinkForm,
) -> Response {
    form_again(signed, links, owner, existing, form, StatusCode::OK, None).await
}

/// The page of a form that was sent and not saved, with what was typed in it (but the
/// password, never sent back into a page) and `error`.
async fn form_again(
    signed: &SignedIn,
    links: &Links,
    owner: &str,
    existing: Option<&Link>,
    mut form: LinkForm,
    status: StatusCode,
    error: Option<String>,
) -> Response {
    form.csrf.clear();
    form.password.clear();
    let domains = if existing.is_none() {
        domains_of(links, signed, owner).await.unwrap_or_default()
    } else {
        Vec::new()
    };
    let page = LinkPage {
        domains,
        error,
        ..LinkPage::new(signed, owner, existing, form, links)
    };
    render(status, &page)
}

/// Why a post may not change `owner`'s links, if it may not: its form token wrong, or its
/// user not an editor there (a member who is not is refused; anyone else finds nothing).
pub(super) fn refused_change(signed: &SignedIn, owner: &str, csrf: &str) -> Option<Response> {
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
    let mut changed = Vec::new();
    let mut compare = |field: &'static str, a: &str, b: &str| {
        if a.trim() != b.trim() {
            changed.push(Changed {
                field,
                now: if b.trim().is_empty() {
                    "(none)".into()
                } else {
                    b.trim().to_owned()
                },
            });
        }
    };
    compare("Target", &mine.target(), &theirs.target());
    for field in link_fields::in_form() {
        compare(field.label, mine.text(field.name), theirs.text(field.name));
    }
    compare("Tags", &mine.tags, &theirs.tags);
    compare("Expires", &mine.expires_at, &theirs.expires_at);
    compare("Redirect", &mine.redirect, &theirs.redirect);
    compare("Status", &mine.status, &theirs.status);
    if mine.options {
        compare("Visit limit", &mine.max_visits, &theirs.max_visits);
        compare("Access", &mine.access, &theirs.access);
        compare("Page once expired", &mine.expired_url, &theirs.expired_url);
        let count = |n: usize, what: &str| match n {
            0 => String::new(),
            n => format!("{n} {what}"),
        };
        if mine.rules != theirs.rules {
            compare(
                "Rules",
                "(changed)",
                &count(theirs.rules.len(), "rules, as now shown"),
            );
        }
        if mine.variants != theirs.variants {
            let now = theirs
                .variants
                .iter()
                .map(|v| format!("{} ({}%)", v.target, v.weight))
                .collect::<Vec<_>>()
                .join(", ");
            compare("Split", "(changed)", &now);
        }
        let flags = |f: &LinkForm| {
            format!(
                "interstitial {}, clicks recorded {}, scanners counted as bots {}, query passed on {}",
                yes(f.interstitial),
                yes(f.record_clicks),
                yes(f.scanner_check),
                yes(f.forward_query)
            )
        };
        compare("Visitors", &flags(mine), &flags(theirs));
    }
    changed
}

fn yes(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "no"
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn form(note: &str) -> LinkForm {
        LinkForm::from_pairs(&[
            ("target_url".to_owned(), "https://a.example/".to_owned()),
            ("note".to_owned(), note.to_owned()),
        ])
    }

    /// A browser sends a textarea's line breaks as CR LF, the link holds LF: a form that
    /// lost a race must not list the note as changed by someone else for that.
    #[test]
    fn a_note_sent_with_a_browsers_line_breaks_is_not_a_change() {
        let mine = form("Legal ok\r\nask Ana");
        assert!(differences(&mine, &form("Legal ok\nask Ana")).is_empty());
        let changed: Vec<&str> = differences(&mine, &form("Legal: no"))
            .iter()
            .map(|c| c.field)
            .collect();
        assert_eq!(changed, ["Team note"]);
    }
}

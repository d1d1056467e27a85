//! Importing another shortener's export from the browser: the file is uploaded, checked
//! first (a dry run: what each link would become, and why), then imported, by the same
//! import the API runs (`POST /v1/imports`, [`crate::links::import`]). Links deferred while the
//! edge learns of the import are sent again from the page (the upload kept in the form
//! when it is small, else uploaded again: a code is an imported link's identity, so
//! nothing arrives twice).

use super::page_error::{failed, failure, not_found_for};
use super::render::{refused_post, render, Nav};
use super::session::Signed;
use crate::error::AppError;
use crate::links::Links;
use crate::model::{Creator, Role};
use crate::views::imports::{Format, ImportReport, ImportRequest, Outcome, Source};
use askama::Template;
use axum::extract::{Multipart, Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use std::sync::Arc;

/// The largest file taken: a 100,000-link Bitly export is about 15 MB.
pub(super) const MAX_UPLOAD: usize = 32 * 1024 * 1024;
/// An upload kept in the page to send deferred links again, at most; a larger one is
/// uploaded again.
const KEPT_IN_PAGE: usize = 1024 * 1024;
/// Report lines shown: the links that did not arrive first.
const SHOWN_ROWS: usize = 500;

#[derive(Template)]
#[template(path = "dashboard/import.html")]
struct ImportPage {
    nav: Option<Nav>,
    owner: String,
    csrf: String,
    domains: Vec<String>,
    sources: Vec<(&'static str, &'static str)>,
    chosen_source: String,
    chosen_domain: String,
    may_edit: bool,
    error: Option<String>,
    report: Option<Shown>,
}

/// A report as the page shows it.
struct Shown {
    dry_run: bool,
    summary: String,
    /// The file's columns no field of Hop's reads, joined (empty: every one is read).
    unused_columns: String,
    rows: Vec<ShownRow>,
    more: usize,
    /// Seconds before deferred links may be sent again, with the content to send.
    retry: Option<(u64, Option<String>)>,
}

struct ShownRow {
    row: usize,
    link: String,
    outcome: &'static str,
    said: String,
}

const SOURCES: [(&str, &str); 5] = [
    ("bitly", "Bitly (its CSV export, or a saved API page)"),
    (
        "shlink",
        "Shlink (the web client's CSV export, or a saved API page)",
    ),
    (
        "yourls",
        "YOURLS (the yourls_url table as CSV, or a saved API answer)",
    ),
    ("kutt", "Kutt (a saved API page)"),
    ("dub", "Dub (its CSV export, or a saved API page)"),
];

async fn page(
    links: &Links,
    signed: &crate::accounts::SignedIn,
    owner: &str,
) -> Result<ImportPage, AppError> {
    let domains = links
        .usable_domains(&signed.principal(Some(owner)), owner)
        .await?
        .into_iter()
        .map(|d| d.domain)
        .collect();
    Ok(ImportPage {
        nav: Nav::of(signed, Some(owner)),
        owner: owner.to_owned(),
        csrf: signed.csrf_token.clone(),
        domains,
        sources: SOURCES.to_vec(),
        chosen_source: "bitly".into(),
        chosen_domain: String::new(),
        may_edit: signed.allows(owner, Role::Editor) == Some(true),
        error: None,
        report: None,
    })
}

/// `GET /o/{owner}/import`.
pub(super) async fn form(
    Signed(signed): Signed,
    State(links): State<Arc<Links>>,
    Path(owner): Path<String>,
) -> Response {
    if signed.allows(&owner, Role::Viewer).is_none() {
        return not_found_for(&signed);
    }
    match page(&links, &signed, &owner).await {
        Ok(p) => render(StatusCode::OK, &p),
        Err(e) => failed(e),
    }
}

/// What the form posted.
#[derive(Default)]
struct Posted {
    csrf: String,
    source: String,
    domain: String,
    action: String,
    content: Option<String>,
}

async fn read_form(mut form: Multipart) -> Result<Posted, String> {
    let mut posted = Posted::default();
    while let Some(field) = form.next_field().await.map_err(|e| e.body_text())? {
        let name = field.name().unwrap_or_default().to_owned();
        let text = field.text().await.map_err(|e| e.body_text())?;
        match name.as_str() {
            "csrf" => posted.csrf = text,
            "source" => posted.source = text,
            "domain" => posted.domain = text,
            "action" => posted.action = text,
            // The file, or the content the page kept to send deferred links again.
            "file" | "content" if !text.is_empty() => posted.content = Some(text),
            _ => {}
        }
    }
    Ok(posted)
}

/// `POST /o/{owner}/import`: `action=check` (a dry run) or `action=import`.
pub(super) async fn submit(
    Signed(signed): Signed,
    State(links): State<Arc<Links>>,
    Path(owner): Path<String>,
    form: Multipart,
) -> Response {
    let posted = match read_form(form).await {
        Ok(p) => p,
        Err(why) => return failure(&format!("the upload could not be read: {why}")),
    };
    if !signed.csrf_matches(&posted.csrf) {
        return refused_post();
    }
    if signed.allows(&owner, Role::Viewer).is_none() {
        return not_found_for(&signed);
    }
    let mut p = match page(&links, &signed, &owner).await {
        Ok(p) => p,
        Err(e) => return failed(e),
    };
    p.chosen_source = posted.source.clone();
    p.chosen_domain = posted.domain.clone();
    if !p.may_edit {
        p.error = Some("Your role in this owner lets you read its links, not import them.".into());
        return render(StatusCode::FORBIDDEN, &p);
    }
    let Some(source) = Source::parse(&posted.source) else {
        p.error = Some("Choose where the links come from.".into());
        return render(StatusCode::UNPROCESSABLE_ENTITY, &p);
    };
    let Some(content) = posted.content else {
        p.error = Some("Choose the file to import.".into());
        return render(StatusCode::UNPROCESSABLE_ENTITY, &p);
    };
    let dry_run = posted.action != "import";
    let format = if content.trim_start().starts_with(['{', '[']) {
        Format::Api
    } else {
        Format::Csv
    };
    let request = ImportRequest {
        source,
        format,
        content: content.clone(),
        dry_run,
        domain: Some(posted.domain).filter(|d| !d.is_empty()),
    };
    let creator = Creator {
        owner: &owner,
        admin: false,
        domains: None,
        actor: crate::model::history::Actor::User(&signed.user.user_id),
    };
    // The creation rate is counted per person here, as per key in the API.
    let limit_key = format!("user:{}", signed.user.user_id);
    match crate::links::import::run(&links, &creator, &limit_key, request).await {
        Ok(report) => {
            p.report = Some(shown(
                &report,
                (content.len() <= KEPT_IN_PAGE).then_some(content),
            ));
            render(StatusCode::OK, &p)
        }
        Err(e) if e.status().is_client_error() => {
            let status = e.status();
            p.error = Some(match e {
                AppError::Invalid { detail, .. } => {
                    format!("The file cannot be imported: {detail}")
                }
                other => other.to_string(),
            });
            render(status, &p)
        }
        Err(e) => failed(e),
    }
}

fn shown(report: &ImportReport, content: Option<String>) -> Shown {
    let s = &report.summary;
    let would = if report.dry_run { "would be " } else { "" };
    let summary = format!(
        "{} links: {} {would}created, {} {would}changed, {} unchanged, {} refused, {} skipped{}.",
        report.rows.len(),
        s.created,
        s.changed,
        s.unchanged,
        s.refused,
        s.skipped,
        if s.deferred > 0 {
            format!(", {} waiting for the edge", s.deferred)
        } else {
            String::new()
        }
    );
    // The links that did not arrive first: they are what needs reading.
    let mut order: Vec<&crate::views::imports::ImportRow> = report.rows.iter().collect();
    order.sort_by_key(|r| {
        (
            !matches!(
                r.outcome,
                Outcome::Refused | Outcome::Skipped | Outcome::Deferred
            ),
            r.row,
        )
    });
    let rows = order
        .iter()
        .take(SHOWN_ROWS)
        .map(|r| ShownRow {
            row: r.row,
            link: format!("{}/{}", r.domain.as_deref().unwrap_or_default(), r.code),
            outcome: match r.outcome {
                Outcome::Created => "created",
                Outcome::Changed => "changed",
                Outcome::Unchanged => "unchanged",
                Outcome::Refused => "refused",
                Outcome::Skipped => "skipped",
                Outcome::Deferred => "waiting",
            },
            said: r
                .reason
                .iter()
                .chain(r.notes.iter())
                .cloned()
                .collect::<Vec<_>>()
                .join(" "),
        })
        .collect();
    Shown {
        dry_run: report.dry_run,
        summary,
        unused_columns: report.unused_columns.join(", "),
        rows,
        more: report.rows.len().saturating_sub(SHOWN_ROWS),
        retry: report
            .retry_after_s
            .filter(|_| s.deferred > 0)
            .map(|secs| (secs, content)),
    }
}

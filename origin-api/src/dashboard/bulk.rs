//! Bulk actions on the links a list page selected: each link is changed on its own, at
//! the version the page showed (its own `If-Match`), so a link someone changed since is
//! reported, never overwritten; the answer says what became of every row.

use super::link_form::link_path;
use super::page_error::{failed, not_found_for};
use super::render::{capitalized, download, refused_post, render, Nav};
use super::session::Signed;
use crate::error::AppError;
use crate::links::{delete_link, update_link, Intent, Links};
use crate::model::time::{parse_rfc3339, rfc3339};
use crate::model::{Creator, Link, LinkState, Role};
use crate::views::links::UpdateLink;
use askama::Template;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use axum::Form;
use std::sync::Arc;

/// The most links one bulk action takes: two pages of the list, with room.
pub(super) const MAX_SELECTED: usize = 200;

/// What a bulk form asks.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Action {
    AddTag(String),
    RemoveTag(String),
    Status(LinkState),
    /// `None` clears the expiry.
    Expiry(Option<String>),
    Delete,
    Export,
}

impl Action {
    fn changes(&self) -> bool {
        *self != Action::Export
    }

    fn from_form(action: &str, tag: &str, expires_at: &str) -> Result<Action, String> {
        let tag = tag.trim();
        let need_tag = || {
            if tag.is_empty() {
                Err("Tag: name the tag to add or remove.".to_owned())
            } else {
                Ok(tag.to_owned())
            }
        };
        Ok(match action {
            "add_tag" => Action::AddTag(need_tag()?),
            "remove_tag" => Action::RemoveTag(need_tag()?),
            "disable" => Action::Status(LinkState::Disabled),
            "enable" => Action::Status(LinkState::Active),
            "set_expiry" => {
                let raw = expires_at.trim();
                let ms = parse_rfc3339(&format!("{raw}:00Z"))
                    .or_else(|| parse_rfc3339(&format!("{raw}Z")))
                    .ok_or("Expires: a date and time, YYYY-MM-DDTHH:MM (UTC).")?;
                Action::Expiry(Some(rfc3339(ms)))
            }
            "clear_expiry" => Action::Expiry(None),
            "delete" => Action::Delete,
            "export" => Action::Export,
            _ => return Err("Choose what to do with the selected links.".to_owned()),
        })
    }

    /// The change to `link`, as the API's body; `None` when it changes nothing.
    fn update(&self, link: &Link) -> Option<UpdateLink> {
        let tags = |tags: Vec<String>| UpdateLink {
            tags: Some(tags),
            ..UpdateLink::default()
        };
        Some(match self {
            Action::AddTag(tag) => {
                if link.tags.contains(tag) {
                    return None;
                }
                let mut all = link.tags.clone();
                all.push(tag.clone());
                tags(all)
            }
            Action::RemoveTag(tag) => {
                if !link.tags.contains(tag) {
                    return None;
                }
                tags(link.tags.iter().filter(|t| *t != tag).cloned().collect())
            }
            Action::Status(status) if link.status == *status => return None,
            Action::Status(status) => UpdateLink {
                status: Some(*status),
                ..UpdateLink::default()
            },
            Action::Expiry(None) if link.expires_at.is_none() => return None,
            Action::Expiry(at) => UpdateLink {
                expires_at: Some(at.clone()),
                ..UpdateLink::default()
            },
            Action::Delete | Action::Export => return None,
        })
    }
}

/// A selected row: `domain/code@version`, as the list page wrote it.
fn selected(value: &str) -> Option<(&str, &str, u64)> {
    let (key, version) = value.rsplit_once('@')?;
    let (domain, code) = key.split_once('/')?;
    Some((domain, code, version.parse().ok()?))
}

#[derive(Template)]
#[template(path = "dashboard/bulk.html")]
struct BulkPage {
    nav: Option<Nav>,
    owner: String,
    summary: String,
    error: Option<String>,
    rows: Vec<Row>,
}

/// What became of one link.
struct Row {
    route: String,
    path: String,
    /// `done`, `unchanged`, `conflict` or `refused`: the row's class, and its words.
    kind: &'static str,
    said: String,
}

/// `POST /o/{owner}/links/bulk`.
pub(super) async fn apply(
    Signed(signed): Signed,
    State(links): State<Arc<Links>>,
    Path(owner): Path<String>,
    Form(posted): Form<Vec<(String, String)>>,
) -> Response {
    let field = |name: &str| super::render::posted(&posted, name);
    if !signed.csrf_matches(field("csrf")) {
        return refused_post();
    }
    let Some(may_edit) = signed
        .allows(&owner, Role::Viewer)
        .filter(|seen| *seen)
        .map(|_| signed.allows(&owner, Role::Editor) == Some(true))
    else {
        return not_found_for(&signed);
    };
    let picked: Vec<&str> = posted
        .iter()
        .filter(|(k, _)| k == "select")
        .map(|(_, v)| v.as_str())
        .collect();
    let mut page = BulkPage {
        nav: Nav::of(&signed, Some(&owner)),
        owner: owner.clone(),
        summary: String::new(),
        error: None,
        rows: Vec::new(),
    };
    let action = match Action::from_form(field("action"), field("tag"), field("expires_at")) {
        Ok(action) => action,
        Err(why) => return refused(page, StatusCode::UNPROCESSABLE_ENTITY, why),
    };
    if picked.is_empty() {
        return refused(
            page,
            StatusCode::UNPROCESSABLE_ENTITY,
            "Select at least one link first.".into(),
        );
    }
    if picked.len() > MAX_SELECTED {
        return refused(
            page,
            StatusCode::UNPROCESSABLE_ENTITY,
            format!("At most {MAX_SELECTED} links at once."),
        );
    }
    if action.changes() && !may_edit {
        return refused(
            page,
            StatusCode::FORBIDDEN,
            "Your role in this owner lets you read and export its links, not change them.".into(),
        );
    }
    let creator = Creator {
        owner: &owner,
        admin: signed.user.operator,
        domains: None,
        actor: crate::model::history::Actor::User(&signed.user.user_id),
    };
    if action == Action::Export {
        return export(&links, &creator, &picked).await;
    }
    let (mut done, mut conflicts, mut refusals) = (0, 0, 0);
    for value in picked {
        let row = one(&links, &creator, &action, value).await;
        match row.kind {
            "done" => done += 1,
            "conflict" => conflicts += 1,
            "refused" => refusals += 1,
            _ => {}
        }
        page.rows.push(row);
    }
    page.summary = format!(
        "{done} changed, {conflicts} changed by someone else meanwhile (left as they are), {refusals} refused, {} already so.",
        page.rows.len() - done - conflicts - refusals
    );
    render(StatusCode::OK, &page)
}

fn refused(mut page: BulkPage, status: StatusCode, why: String) -> Response {
    page.error = Some(why);
    render(status, &page)
}

/// What a row's change came to, when it was not refused.
enum Done {
    Changed(u64),
    Deleted,
    AlreadySo,
}

/// Applies `action` to the link `value` names, at the version it names.
async fn one(links: &Links, creator: &Creator<'_>, action: &Action, value: &str) -> Row {
    let owner = creator.owner;
    let Some((domain, code, version)) = selected(value) else {
        return Row {
            route: value.to_owned(),
            path: String::new(),
            kind: "refused",
            said: "Not a link this page listed.".into(),
        };
    };
    let mut row = Row {
        route: format!("{domain}/{code}"),
        path: link_path(owner, domain, code),
        kind: "done",
        said: String::new(),
    };
    let intent = if *action == Action::Delete {
        Intent::ReadOrDelete
    } else {
        Intent::Change
    };
    let outcome = async {
        let current = links.owned(creator, domain, code, intent).await?;
        if current.version != version {
            return Err(AppError::Stale {
                current: Some(current.version),
            });
        }
        if *action == Action::Delete {
            if current.status == LinkState::Deleted {
                return Ok(Done::AlreadySo);
            }
            return delete_link(links, current, Some(version), creator.actor)
                .await
                .map(|()| Done::Deleted);
        }
        match action.update(&current) {
            None => Ok(Done::AlreadySo),
            Some(changes) => update_link(links, current, version, changes, creator.actor)
                .await
                .map(|l| Done::Changed(l.version)),
        }
    }
    .await;
    match outcome {
        Ok(Done::Deleted) => row.said = "Deleted.".into(),
        Ok(Done::Changed(v)) => row.said = format!("Changed (now version {v})."),
        Ok(Done::AlreadySo) => {
            row.kind = "unchanged";
            row.said = "Already so: nothing to change.".into();
        }
        Err(AppError::Stale { current }) => {
            row.kind = "conflict";
            row.said = format!(
                "Changed by someone else since this page was loaded{}: left as it is. Open it to see the change.",
                current.map(|v| format!(" (now version {v})")).unwrap_or_default()
            );
        }
        Err(AppError::NotFound) => {
            row.kind = "refused";
            row.said = "Not found.".into();
        }
        Err(e) if !e.status().is_server_error() => {
            row.kind = "refused";
            row.said = capitalized(&e.to_string());
        }
        Err(e) => {
            tracing::error!(error = %e, route = %row.route, "bulk action failed");
            row.kind = "refused";
            row.said = "The origin could not change it just now: try again.".into();
        }
    }
    row
}

/// The selected links as CSV, read as they are now.
async fn export(links: &Links, creator: &Creator<'_>, picked: &[&str]) -> Response {
    let mut body = String::from(
        "short_url,domain,code,target_url,title,tags,status,created_at,expires_at,version\n",
    );
    for value in picked {
        let Some((domain, code, _)) = selected(value) else {
            continue;
        };
        let link = match links
            .owned(creator, domain, code, Intent::ReadOrDelete)
            .await
        {
            Ok(link) => link,
            Err(AppError::NotFound) => continue,
            Err(e) => return failed(e),
        };
        let cells = [
            links.short_url(&link),
            link.domain.clone(),
            link.code.clone(),
            link.target_url.clone(),
            link.title.clone().unwrap_or_default(),
            link.tags.join(" "),
            link.status.as_str().to_owned(),
            rfc3339(link.created_at),
            link.expires_at.map(rfc3339).unwrap_or_default(),
            link.version.to_string(),
        ];
        let line: Vec<String> = cells.iter().map(|c| csv_cell(c)).collect();
        body.push_str(&line.join(","));
        body.push('\n');
    }
    download("text/csv; charset=utf-8", "links.csv", body)
}

/// A CSV cell: quoted when it must be, and never read by a spreadsheet as a formula
/// (a title is anyone's text: `=HYPERLINK(…)` stays text).
fn csv_cell(value: &str) -> String {
    let guarded = crate::views::link_fields::neutralized(value);
    if guarded.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", guarded.replace('"', "\"\""))
    } else {
        guarded
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_selection_names_a_link_and_the_version_shown() {
        assert_eq!(
            selected("s.example/spring@3"),
            Some(("s.example", "spring", 3))
        );
        assert_eq!(selected("s.example/spring"), None);
        assert_eq!(selected("spring@3"), None);
        assert_eq!(selected("s.example/spring@x"), None);
    }

    #[test]
    fn cells_stay_text_in_a_spreadsheet() {
        assert_eq!(csv_cell("=HYPERLINK(\"x\")"), "\"'=HYPERLINK(\"\"x\"\")\"");
        assert_eq!(csv_cell("-1"), "'-1");
        assert_eq!(csv_cell("a, b"), "\"a, b\"");
        assert_eq!(csv_cell("plain"), "plain");
    }

    #[test]
    fn actions_need_what_they_use() {
        assert!(Action::from_form("add_tag", " ", "").is_err());
        assert!(Action::from_form("set_expiry", "", "soon").is_err());
        assert_eq!(
            Action::from_form("set_expiry", "", "2099-01-02T03:04"),
            Ok(Action::Expiry(Some("2099-01-02T03:04:00Z".into())))
        );
        assert!(Action::from_form("rename", "", "").is_err());
    }
}

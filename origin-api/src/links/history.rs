//! A link's history, a page at a time, with what each change changed (docs/history.md).
//! Reverting to a version is [`super::update::revert_link`].

use super::service::Links;
use crate::error::AppError;
use crate::model::history::{Entry, Snapshot};
use crate::model::time::rfc3339;
use crate::model::Link;
use crate::store;
use crate::views::history::HistoryEntry;
use crate::views::link_fields;
use crate::views::links::Page;
use serde_json::{json, Map, Value};

/// Entries per page when the caller names no limit.
pub const DEFAULT_LIMIT: i64 = 50;

/// Reads a page cursor: `version.entry`.
fn parse_cursor(cursor: &str) -> Result<(i64, i64), AppError> {
    let bad = || AppError::invalid("cursor", "not a cursor this listing gave");
    let (version, entry) = cursor.split_once('.').ok_or_else(bad)?;
    Ok((
        version.parse().map_err(|_| bad())?,
        entry.parse().map_err(|_| bad())?,
    ))
}

/// Up to `limit` entries of `link`'s history, newest first, after `cursor`.
pub async fn history(
    state: &Links,
    link: &Link,
    cursor: Option<&str>,
    limit: Option<i64>,
) -> Result<Page<HistoryEntry>, AppError> {
    let limit = limit.unwrap_or(DEFAULT_LIMIT);
    if !(1..=1000).contains(&limit) {
        return Err(AppError::invalid("limit", "1 to 1000"));
    }
    let before = cursor.map(parse_cursor).transpose()?;
    let link_id = i64::try_from(link.link_id).unwrap_or(i64::MAX);
    // One more than shown: the oldest shown entry's changes are against it.
    let mut rows = store::history::of_link(&state.db, link_id, before, limit + 1).await?;
    let more = rows.len() > usize::try_from(limit).unwrap_or(usize::MAX);
    let fields: Vec<Map<String, Value>> =
        rows.iter().map(|e| shown(state, link, &e.state)).collect();
    let mut items = Vec::with_capacity(rows.len());
    for (i, entry) in rows.iter().enumerate().take(limit as usize) {
        let changes = rows
            .get(i + 1)
            .map(|before| changed(&fields[i + 1], &fields[i], &before.state, &entry.state));
        items.push(view(entry, fields[i].clone(), changes));
    }
    let next_cursor = if more {
        rows.truncate(limit as usize);
        rows.last().map(|e| format!("{}.{}", e.version, e.entry_id))
    } else {
        None
    };
    Ok(Page { items, next_cursor })
}

fn view(
    entry: &Entry,
    fields: Map<String, Value>,
    changes: Option<Map<String, Value>>,
) -> HistoryEntry {
    HistoryEntry {
        version: entry.version,
        action: entry.action.as_str().to_owned(),
        at: rfc3339(entry.at),
        actor: entry.actor.clone(),
        note: entry.note.clone(),
        fields,
        changes,
    }
}

/// A version's fields as `GET` names and shows them: the link as it is now, with the
/// version's fields put back (its access named from the version, never its secret).
fn shown(state: &Links, link: &Link, snap: &Snapshot) -> Map<String, Value> {
    let Some(at) = snap.applied_to(link) else {
        return Map::new();
    };
    let Ok(Value::Object(all)) = serde_json::to_value(state.view(&at)) else {
        return Map::new();
    };
    let mut fields: Map<String, Value> = all
        .into_iter()
        .filter(|(k, _)| link_fields::field(k).is_some_and(|f| f.history))
        .collect();
    let access = snap.access.as_deref().unwrap_or("public");
    fields.insert("access".to_owned(), Value::from(access));
    fields
}

/// The fields that differ between two versions, and whether the secret was replaced.
fn changed(
    before: &Map<String, Value>,
    after: &Map<String, Value>,
    old: &Snapshot,
    new: &Snapshot,
) -> Map<String, Value> {
    let mut changes = Map::new();
    for name in link_fields::in_history().map(|f| f.name) {
        let (from, to) = (before.get(name), after.get(name));
        if from != to {
            changes.insert(
                name.to_owned(),
                json!({"from": from.cloned().unwrap_or(Value::Null), "to": to.cloned().unwrap_or(Value::Null)}),
            );
        }
    }
    if old.secret.is_some() && new.secret.is_some() && old.secret != new.secret {
        changes.insert("secret".to_owned(), json!({"changed": true}));
    }
    changes
}

//! A link's history (docs/history.md): written by the links', bans' and clicks' writes
//! in the transaction of each change (as the webhook events are), read by the owner a
//! page at a time.

use super::contract::StoreError;
use super::sql::{insert_rows, Arg, Conn};
use crate::db::Db;
use crate::model::history::{Action, Entry, NewEntry, Snapshot};

const OF_LINK: &str = include_str!("queries/history_of_link.sql");
const AT_VERSION: &str = include_str!("queries/history_at_version.sql");

/// Writes `entries` in the transaction of the change they record.
pub(super) async fn record(c: &mut Conn<'_>, entries: &[NewEntry]) -> Result<(), StoreError> {
    if entries.is_empty() {
        return Ok(());
    }
    let args: Vec<Arg<'_>> = entries
        .iter()
        .flat_map(|e| {
            [
                e.link_id.into(),
                e.version.into(),
                e.action.as_str().into(),
                e.actor.as_str().into(),
                e.at.into(),
                e.state.as_str().into(),
                e.note.as_deref().into(),
            ]
        })
        .collect();
    // Built at run time: one VALUES tuple per entry.
    insert_rows(
        c,
        "INSERT INTO link_history (link_id, version, action, actor, at, state, note)",
        "",
        7,
        &args,
    )
    .await?;
    Ok(())
}

type EntryRow = (i64, i64, String, String, i64, String, Option<String>);

fn entry(row: EntryRow) -> Result<Entry, StoreError> {
    let (entry_id, version, action, actor, at, state, note) = row;
    let corrupt = |what: &str| StoreError::Corrupt(format!("history entry {entry_id}: {what}"));
    Ok(Entry {
        entry_id,
        version: u64::try_from(version).map_err(|_| corrupt("version"))?,
        action: Action::parse(&action).ok_or_else(|| corrupt("action"))?,
        actor,
        at,
        state: serde_json::from_str::<Snapshot>(&state).map_err(|_| corrupt("state"))?,
        note,
    })
}

/// Up to `limit` entries of link `link_id`, newest first, older than `before`
/// (`(version, entry_id)`; `None`: from the newest).
pub async fn of_link(
    db: &Db,
    link_id: i64,
    before: Option<(i64, i64)>,
    limit: i64,
) -> Result<Vec<Entry>, StoreError> {
    let (version, entry_id) = before.unwrap_or((i64::MAX, i64::MAX));
    let rows: Vec<EntryRow> = db
        .read_all(
            OF_LINK,
            &[
                link_id.into(),
                version.into(),
                entry_id.into(),
                limit.into(),
            ],
        )
        .await?;
    rows.into_iter().map(entry).collect()
}

/// The entry that made `version` of link `link_id`, if the history holds it.
pub async fn at_version(db: &Db, link_id: i64, version: i64) -> Result<Option<Entry>, StoreError> {
    let row: Option<EntryRow> = db
        .read_optional(AT_VERSION, &[link_id.into(), version.into()])
        .await?;
    row.map(entry).transpose()
}

//! The purge's writes (docs/retention.md): links expired longer than the retention and
//! tombstones past their restore window become bare tombstones (the code, its owner and
//! numbers kept, so the code is never given out again), a batch to a transaction; old
//! click rollups are deleted a batch at a time. And what the id gauges read.

use super::contract::StoreError;
use super::link_rows::{to_i64, LinkRow, SELECT_COLUMNS};
use super::outbox::{insert_outbox, link_row};
use super::sql::Conn;
use super::{events, history, links, quotas};
use crate::db::Db;
use crate::model::event::{EventType, NewEvent};
use crate::model::history::{Action, Actor, Change, NewEntry};
use crate::model::{Link, LinkState};

const PURGE_LINK: &str = include_str!("queries/purge_link.sql");
const PURGE_LINK_HISTORY: &str = include_str!("queries/purge_link_history.sql");
const DELETE_LINK_HOSTS: &str = include_str!("queries/delete_link_hosts.sql");
const PURGE_CLICK_HOURS: &str = include_str!("queries/purge_click_hours.sql");
const PURGE_CLICK_DAYS: &str = include_str!("queries/purge_click_days.sql");
const PURGE_LIMIT_PEOPLE: &str = include_str!("queries/purge_limit_people.sql");
const ID_SEQUENCES: &str = include_str!("queries/id_sequences.sql");
const LINKS_STORED: &str = include_str!("queries/links_stored.sql");
const GENERATED_BY_DOMAIN: &str = include_str!("queries/generated_codes_by_domain.sql");

/// Which links a purge batch takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purgeable {
    /// Links whose expiry is older than the cutoff, oldest first (`links_expiring`).
    Expired,
    /// Tombstones deleted before the cutoff that still hold their payload, oldest
    /// deletion first (`links_tombstones`).
    Tombstones,
}

impl Purgeable {
    pub fn as_str(self) -> &'static str {
        match self {
            Purgeable::Expired => "expired",
            Purgeable::Tombstones => "tombstone",
        }
    }
}

/// Purges up to `limit` links of `which` from before `before` (Unix ms), at `now`, in one
/// transaction: each becomes a bare tombstone at a new version (its target, title, tags
/// and options emptied, its expiry cleared), published to the edge, its history replaced
/// by one entry saying so, its owner's quota given a link back if it was live. A link
/// changed since it was read is left for the next batch. Returns the links as written.
pub async fn purge_links(
    db: &Db,
    which: Purgeable,
    before: i64,
    limit: i64,
    now: i64,
) -> Result<Vec<Link>, StoreError> {
    let read = purge_candidates(db, which, before, limit).await?;
    purge_read(db, which, &read, now).await
}

/// The links [`purge_links`] would purge now, as they are: read on a reader, so an idle
/// purge (nearly always) never takes the writer.
pub async fn purge_candidates(
    db: &Db,
    which: Purgeable,
    before: i64,
    limit: i64,
) -> Result<Vec<Link>, StoreError> {
    // Built at run time: the link columns are one list in `link_rows`.
    let sql = match which {
        Purgeable::Expired => format!(
            "SELECT {SELECT_COLUMNS} FROM links WHERE expires_at IS NOT NULL AND expires_at < $1 \
             ORDER BY expires_at LIMIT $2"
        ),
        Purgeable::Tombstones => format!(
            "SELECT {SELECT_COLUMNS} FROM links WHERE status = 'deleted' AND target_url <> '' \
             AND updated_at < $1 ORDER BY updated_at LIMIT $2"
        ),
    };
    let rows: Vec<LinkRow> = db.read_all(&sql, &[before.into(), limit.into()]).await?;
    rows.into_iter().map(Link::try_from).collect()
}

/// Purges `read` (as [`purge_candidates`] read them) in one transaction. Each write needs
/// the version read: a link changed in between (its expiry moved on, say) is left alone.
pub async fn purge_read(
    db: &Db,
    which: Purgeable,
    read: &[Link],
    now: i64,
) -> Result<Vec<Link>, StoreError> {
    if read.is_empty() {
        return Ok(Vec::new());
    }
    let mut tx = db.begin_write().await?;
    let mut c = tx.conn();
    let mut written = Vec::with_capacity(read.len());
    for old in read {
        if let Some(link) = purge_one(&mut c, old, which, now).await? {
            written.push(link);
        }
    }
    tx.commit().await?;
    Ok(written)
}

async fn purge_one(
    c: &mut Conn<'_>,
    old: &Link,
    which: Purgeable,
    now: i64,
) -> Result<Option<Link>, StoreError> {
    let link_id = to_i64(old.link_id, "link_id")?;
    let version = to_i64(old.version, "version")?;
    let row: Option<LinkRow> = c
        .fetch_optional(PURGE_LINK, &[link_id.into(), version.into(), now.into()])
        .await?;
    let Some(row) = row else {
        return Ok(None);
    };
    let link = Link::try_from(row)?;
    c.execute(DELETE_LINK_HOSTS, &[link_id.into()]).await?;
    c.execute(PURGE_LINK_HISTORY, &[link_id.into()]).await?;
    // The link has no limit any more: who visited it is not kept either.
    c.execute(PURGE_LIMIT_PEOPLE, &[link_id.into()]).await?;
    let route = link.route_key();
    let new_version = to_i64(link.version, "version")?;
    insert_outbox(
        c,
        &[link_row(
            &route,
            new_version,
            &link.edge_record(false).to_json(),
            now,
        )],
    )
    .await?;
    let since = match which {
        Purgeable::Expired => old.expires_at.unwrap_or(now),
        Purgeable::Tombstones => old.updated_at,
    };
    let note = format!(
        "purged: {} on {}",
        match which {
            Purgeable::Expired => "expired",
            Purgeable::Tombstones => "deleted",
        },
        crate::model::time::rfc3339(since)
    );
    let change = Change::new(Action::Deleted, Actor::System).with_note(note);
    history::record(c, &[NewEntry::of(&link, &change, now)]).await?;
    // A live link leaves: its owner's quota gets it back, and receivers hear it is gone.
    if old.status != LinkState::Deleted {
        quotas::release(c, &link.owner_id).await?;
        let event = NewEvent::of_link(EventType::LinkDeleted, &link, false, now);
        events::record(c, &[event]).await?;
    }
    links::announce(c, link.version, &route).await?;
    Ok(Some(link))
}

/// Deletes up to `limit` click rollup rows (hourly, then daily) of periods that began
/// before `before`; how many went.
pub async fn purge_click_rollups(db: &Db, before: i64, limit: i64) -> Result<u64, StoreError> {
    let hours = db
        .write(PURGE_CLICK_HOURS, &[before.into(), limit.into()])
        .await?;
    let left = limit.saturating_sub(i64::try_from(hours).unwrap_or(i64::MAX));
    let days = if left > 0 {
        db.write(PURGE_CLICK_DAYS, &[before.into(), left.into()])
            .await?
    } else {
        0
    };
    Ok(hours + days)
}

/// What the id gauges read: each sequence's high-water mark, and how many of its ids
/// stored links hold (the link sequence's: every link; a domain's code sequence's: its
/// generated codes).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IdUse {
    /// `(sequence, high-water mark, ids in use)`.
    pub sequences: Vec<(String, u64, u64)>,
}

/// Reads [`IdUse`]: a count of the links, so once a minute at most.
pub async fn id_use(db: &Db) -> Result<IdUse, StoreError> {
    use crate::model::sequence::{code_sequence, LINK_SEQUENCE};
    let marks: Vec<(String, i64)> = db.read_all(ID_SEQUENCES, &[]).await?;
    let (stored,): (i64,) = db.read_optional(LINKS_STORED, &[]).await?.unwrap_or((0,));
    let by_domain: Vec<(String, i64)> = db.read_all(GENERATED_BY_DOMAIN, &[]).await?;
    let by_sequence: std::collections::HashMap<String, i64> = by_domain
        .into_iter()
        .map(|(domain, n)| (code_sequence(&domain), n))
        .collect();
    let sequences = marks
        .into_iter()
        .map(|(name, mark)| {
            let n = if name == LINK_SEQUENCE {
                stored
            } else {
                by_sequence.get(&name).copied().unwrap_or(0)
            };
            (
                name,
                u64::try_from(mark).unwrap_or(0),
                u64::try_from(n).unwrap_or(0),
            )
        })
        .collect();
    Ok(IdUse { sequences })
}

//! Threat feeds and their entries, the hosts links point at, and where the background
//! re-check stands (docs/abuse.md).

use super::contract::StoreError;
use super::link_rows::{LinkRow, SELECT_COLUMNS};
use super::sql::{insert_rows, list_placeholders, Arg};
use crate::db::Db;
use crate::model::link::host_suffixes;
use crate::model::Link;
use std::collections::BTreeSet;

const INSERT_FEED: &str = include_str!("queries/insert_feed.sql");
const LIST_FEEDS: &str = include_str!("queries/list_feeds.sql");
const DUE_FEEDS: &str = include_str!("queries/due_feeds.sql");
const DELETE_FEED_ENTRIES: &str = include_str!("queries/delete_feed_entries.sql");
const DELETE_FEED: &str = include_str!("queries/delete_feed.sql");
const FEED_REFRESHED: &str = include_str!("queries/feed_refreshed.sql");
const FEED_FAILED: &str = include_str!("queries/feed_failed.sql");
const LINK_TARGET_HOSTS: &str = include_str!("queries/link_target_hosts.sql");
const LINK_OTHER_HOSTS: &str = include_str!("queries/link_other_hosts.sql");
const RECHECK_POSITION: &str = include_str!("queries/recheck_position.sql");
const SET_RECHECK_POSITION: &str = include_str!("queries/set_recheck_position.sql");

/// Values per `IN (...)` list.
const CHUNK: usize = 500;

/// A feed as stored.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct FeedRow {
    pub name: String,
    /// A path on the origin's machine, or an `http(s)` URL.
    pub source: String,
    pub format: String,
    pub refresh_every_s: i64,
    pub created_at: i64,
    pub refreshed_at: Option<i64>,
    pub due_at: i64,
    pub hosts: i64,
    pub urls: i64,
    pub last_error: Option<String>,
}

/// Registers a feed, due at once; `false` when the name is taken.
pub async fn insert(
    db: &Db,
    name: &str,
    source: &str,
    format: &str,
    refresh_every_s: i64,
    now: i64,
) -> Result<bool, StoreError> {
    let added = db
        .write(
            INSERT_FEED,
            &[
                name.into(),
                source.into(),
                format.into(),
                refresh_every_s.into(),
                now.into(),
            ],
        )
        .await?;
    Ok(added == 1)
}

pub async fn list(db: &Db) -> Result<Vec<FeedRow>, StoreError> {
    Ok(db.read_all(LIST_FEEDS, &[]).await?)
}

pub async fn due(db: &Db, now: i64) -> Result<Vec<FeedRow>, StoreError> {
    Ok(db.read_all(DUE_FEEDS, &[now.into()]).await?)
}

/// Removes a feed and its entries; `false` when there was none. Bans it made stay.
pub async fn remove(db: &Db, name: &str) -> Result<bool, StoreError> {
    let mut tx = db.begin_write().await?;
    let mut c = tx.conn();
    c.execute(DELETE_FEED_ENTRIES, &[name.into()]).await?;
    let gone = c.execute(DELETE_FEED, &[name.into()]).await?;
    tx.commit().await?;
    Ok(gone == 1)
}

/// Replaces a feed's entries with `hosts` and `urls`, in one transaction (a reader sees
/// the old list or the new, never half), and records the refresh.
pub async fn replace_entries(
    db: &Db,
    name: &str,
    hosts: &BTreeSet<String>,
    urls: &BTreeSet<String>,
    now: i64,
    next_due: i64,
) -> Result<(), StoreError> {
    let mut tx = db.begin_write().await?;
    let mut c = tx.conn();
    c.execute(DELETE_FEED_ENTRIES, &[name.into()]).await?;
    let args: Vec<Arg<'_>> = hosts
        .iter()
        .map(|h| ("host", h))
        .chain(urls.iter().map(|u| ("url", u)))
        .flat_map(|(kind, value)| [kind.into(), value.into(), name.into()])
        .collect();
    // Built at run time: one VALUES tuple per entry.
    insert_rows(
        &mut c,
        "INSERT INTO feed_entries (kind, value, feed)",
        "",
        3,
        &args,
    )
    .await?;
    let count = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
    c.execute(
        FEED_REFRESHED,
        &[
            name.into(),
            now.into(),
            next_due.into(),
            count(hosts.len()).into(),
            count(urls.len()).into(),
        ],
    )
    .await?;
    tx.commit().await?;
    Ok(())
}

/// Records a refresh that failed: the entries stay; the next try is at `next_due`.
pub async fn failed(db: &Db, name: &str, error: &str, next_due: i64) -> Result<(), StoreError> {
    db.write(FEED_FAILED, &[name.into(), next_due.into(), error.into()])
        .await?;
    Ok(())
}

/// A feed entry that matched: the feed, and the host or URL it lists.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, sqlx::FromRow)]
pub struct Hit {
    pub feed: String,
    pub kind: String,
    pub value: String,
}

/// The entries of every feed that match any of `hosts` (each, or a host above it) or
/// `urls` (exactly), in a few reads however many are asked.
pub async fn hits(db: &Db, hosts: &[String], urls: &[String]) -> Result<Vec<Hit>, StoreError> {
    let suffixes: BTreeSet<String> = hosts.iter().flat_map(|h| host_suffixes(h)).collect();
    let mut found = BTreeSet::new();
    for (kind, values) in [
        ("host", suffixes.into_iter().collect::<Vec<_>>()),
        ("url", urls.to_vec()),
    ] {
        for chunk in values.chunks(CHUNK) {
            // Built at run time: one placeholder per value.
            let sql = format!(
                "SELECT feed, kind, value FROM feed_entries WHERE kind = $1 AND value IN ({})",
                list_placeholders(2, chunk.len())
            );
            let mut args: Vec<Arg<'_>> = vec![kind.into()];
            args.extend(chunk.iter().map(Arg::from));
            let rows: Vec<Hit> = db.read_all(&sql, &args).await?;
            found.extend(rows);
        }
    }
    Ok(found.into_iter().collect())
}

/// Every host any link points at, its target's and its other URLs', tombstones'
/// included: read from the indexes, once per feed refresh.
pub async fn linked_hosts(db: &Db) -> Result<BTreeSet<String>, StoreError> {
    let targets: Vec<(String,)> = db.read_all(LINK_TARGET_HOSTS, &[]).await?;
    let others: Vec<(String,)> = db.read_all(LINK_OTHER_HOSTS, &[]).await?;
    Ok(targets
        .into_iter()
        .chain(others)
        .map(|(h,)| h)
        .filter(|h| !h.is_empty())
        .collect())
}

/// The live links that point at any of `hosts` (exactly: their target's host or one of
/// their other URLs').
pub async fn live_links_on(db: &Db, hosts: &[String]) -> Result<Vec<Link>, StoreError> {
    let mut links = Vec::new();
    for chunk in hosts.chunks(CHUNK) {
        let list = list_placeholders(1, chunk.len());
        // Built at run time: the link columns, and one placeholder per host.
        let sql = format!(
            "SELECT {SELECT_COLUMNS} FROM links WHERE status <> 'deleted' AND (target_host IN ({list}) \
             OR link_id IN (SELECT link_id FROM link_hosts WHERE host IN ({list}))) ORDER BY link_id"
        );
        let args: Vec<Arg<'_>> = chunk.iter().map(Arg::from).collect();
        let rows: Vec<LinkRow> = db.read_all(&sql, &args).await?;
        for row in rows {
            links.push(Link::try_from(row)?);
        }
    }
    links.sort_by_key(|l| l.link_id);
    links.dedup_by_key(|l| l.link_id);
    Ok(links)
}

/// Up to `limit` live links after link id `after`, by id: a step of the re-check.
pub async fn live_links_after(db: &Db, after: i64, limit: i64) -> Result<Vec<Link>, StoreError> {
    // Built at run time: the link columns are one list for every read of links.
    let sql = format!(
        "SELECT {SELECT_COLUMNS} FROM links WHERE link_id > $1 AND status <> 'deleted' \
         ORDER BY link_id LIMIT $2"
    );
    let rows: Vec<LinkRow> = db.read_all(&sql, &[after.into(), limit.into()]).await?;
    rows.into_iter().map(Link::try_from).collect()
}

/// Where the re-check stands: the last link id checked, and the passes finished.
pub async fn recheck_position(db: &Db) -> Result<(i64, i64), StoreError> {
    let row: Option<(i64, i64)> = db.read_optional(RECHECK_POSITION, &[]).await?;
    Ok(row.unwrap_or((-1, 0)))
}

pub async fn set_recheck_position(db: &Db, link_id: i64, rounds: i64) -> Result<(), StoreError> {
    db.write(SET_RECHECK_POSITION, &[link_id.into(), rounds.into()])
        .await?;
    Ok(())
}

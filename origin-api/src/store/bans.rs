//! Bans in SQL. Each ban or lift is one transaction that (1) records it, (2) advances
//! the denylist version — a row lock that serializes concurrent bans, so every snapshot
//! includes everything committed before it — (3) writes the new snapshot to the fast
//! lane, and (4) re-publishes every affected link with its version bumped.

use super::contract::{LiftOutcome, StoreError};
use super::link_rows::{to_i64, LinkRow};
use super::outbox::{insert_outbox, link_row, OutboxInsert};
use super::sql::Conn;
use crate::db::Db;
use crate::model::event::{EventType, NewEvent};
use crate::model::history::{Action, Actor, Change, NewEntry};
use crate::model::{denylist_snapshot, Ban, BanTarget, Link, LinkState};
use shared::Denylist;

#[derive(sqlx::FromRow)]
pub(super) struct BanRow {
    ban_id: i64,
    kind: String,
    domain: Option<String>,
    code: Option<String>,
    host: Option<String>,
    reason: String,
    created_by: String,
    created_at: i64,
    lifted_at: Option<i64>,
}

impl TryFrom<BanRow> for Ban {
    type Error = StoreError;
    fn try_from(r: BanRow) -> Result<Self, StoreError> {
        let target = match (r.kind.as_str(), r.domain, r.code, r.host) {
            ("code", Some(domain), Some(code), None) => BanTarget::Code { domain, code },
            ("host", None, None, Some(host)) => BanTarget::Host { host },
            _ => return Err(StoreError::Corrupt(format!("ban {}", r.ban_id))),
        };
        Ok(Ban {
            ban_id: r.ban_id,
            target,
            reason: r.reason,
            created_by: r.created_by,
            created_at: r.created_at,
            lifted_at: r.lifted_at,
        })
    }
}

/// The denylist's version counter: a sequence of step 1 in `id_segments`.
const ADVANCE_DENY: &str = include_str!("queries/advance_denylist.sql");
/// The active bans.
const ACTIVE_BANS: &str = include_str!("queries/active_bans.sql");
/// Bumps the version of the links on a banned (or lifted) code, and returns them.
const BUMP_LINKS_OF_CODE: &str = include_str!("queries/bump_links_of_code.sql");
/// Bumps the version of the links to a banned (or lifted) host or a host under it
/// (`$3`, [`under`]), first target or other, and returns them.
const BUMP_LINKS_OF_HOST: &str = include_str!("queries/bump_links_of_host.sql");
const INSERT_BAN: &str = include_str!("queries/insert_ban.sql");
/// Lifts a ban still active, and returns it.
const LIFT_BAN: &str = include_str!("queries/lift_ban.sql");
const BAN_EXISTS: &str = include_str!("queries/ban_exists.sql");
/// Every ban, newest first.
const LIST_BANS: &str = include_str!("queries/list_bans.sql");
/// The active bans, newest first.
const LIST_ACTIVE_BANS: &str = include_str!("queries/list_active_bans.sql");
const DENYLIST_VERSION: &str = include_str!("queries/denylist_version.sql");

/// LIKE pattern for hosts under `host`, wildcards escaped with `!`.
fn under(host: &str) -> String {
    format!(
        "%.{}",
        host.replace('!', "!!")
            .replace('%', "!%")
            .replace('_', "!_")
    )
}

/// The active bans, read in the transaction.
pub(super) async fn active_bans(c: &mut Conn<'_>) -> Result<Vec<Ban>, StoreError> {
    let rows: Vec<BanRow> = c.fetch_all(ACTIVE_BANS, &[]).await?;
    rows.into_iter().map(Ban::try_from).collect()
}

/// Steps 2–4 inside the transaction, after the ban row changed, and the announcement of
/// the change to the other origins on PostgreSQL; the covered links' events are
/// `link.banned` for a ban (`placed`), `link.unbanned` for a lift of those no other ban
/// still covers; each covered link's history records `change` (`banned` or `unbanned`).
async fn propagate(
    c: &mut Conn<'_>,
    target: &BanTarget,
    now: i64,
    change: &Change<'_>,
) -> Result<(), StoreError> {
    let placed = change.action == Action::Banned;
    if c.is_postgres() {
        // Inline: PostgreSQL only (SQLite has no notifications), no file to check on both.
        c.execute(
            "SELECT pg_notify($1, '')",
            &[super::contract::BANS_CHANNEL.into()],
        )
        .await?;
    }
    let (version,): (i64,) = c.fetch_one(ADVANCE_DENY, &[now.into()]).await?;
    let active = active_bans(c).await?;
    let snap = denylist_snapshot(u64::try_from(version).unwrap_or_default(), &active);
    let payload = serde_json::to_string(&snap).unwrap_or_default();
    insert_outbox(
        c,
        &[OutboxInsert {
            lane: "fast",
            kind: "deny",
            route_key: "deny",
            version,
            payload: &payload,
            created_at: now,
        }],
    )
    .await?;
    let deny = Denylist::from(snap);
    // Every covered link's version is bumped by the database, and its copy for the edge
    // built from the row as written: a concurrent edit can neither be lost nor share a
    // version with this one.
    let rows: Vec<LinkRow> = match target {
        BanTarget::Code { domain, code } => {
            c.fetch_all(
                BUMP_LINKS_OF_CODE,
                &[now.into(), domain.into(), code.into()],
            )
            .await?
        }
        BanTarget::Host { host } => {
            let under = under(host);
            c.fetch_all(
                BUMP_LINKS_OF_HOST,
                &[now.into(), host.into(), (&under).into()],
            )
            .await?
        }
    };
    let links: Vec<Link> = rows
        .into_iter()
        .map(Link::try_from)
        .collect::<Result<_, _>>()?;
    let routes: Vec<String> = links.iter().map(Link::route_key).collect();
    let payloads: Vec<String> = links
        .iter()
        .map(|l| l.edge_record(l.banned_by(&deny)).to_json())
        .collect();
    let outbox = links
        .iter()
        .enumerate()
        .map(|(i, link)| {
            debug_assert!(link.status != LinkState::Deleted);
            Ok(link_row(
                &routes[i],
                to_i64(link.version, "version")?,
                &payloads[i],
                now,
            ))
        })
        .collect::<Result<Vec<_>, StoreError>>()?;
    insert_outbox(c, &outbox).await?;
    let events: Vec<NewEvent> = links
        .iter()
        .filter_map(|link| {
            let banned = link.banned_by(&deny);
            let kind = match (placed, banned) {
                (true, _) => EventType::LinkBanned,
                (false, false) => EventType::LinkUnbanned,
                (false, true) => return None,
            };
            Some(NewEvent::of_link(kind, link, banned, now))
        })
        .collect();
    super::events::record(c, &events).await?;
    let entries: Vec<NewEntry> = links
        .iter()
        .map(|link| {
            if !placed && link.banned_by(&deny) {
                let note = change.note.as_deref().unwrap_or_default();
                let still = change
                    .clone()
                    .with_note(format!("{note}; another ban still covers it"));
                NewEntry::of(link, &still, now)
            } else {
                NewEntry::of(link, change, now)
            }
        })
        .collect();
    super::history::record(c, &entries).await
}

pub async fn insert(
    db: &Db,
    target: &BanTarget,
    reason: &str,
    created_by: &str,
    actor: Actor<'_>,
    now: i64,
) -> Result<Ban, StoreError> {
    let (kind, domain, code, host) = match target {
        BanTarget::Code { domain, code } => {
            ("code", Some(domain.as_str()), Some(code.as_str()), None)
        }
        BanTarget::Host { host } => ("host", None, None, Some(host.as_str())),
    };
    let mut tx = db.begin_write().await?;
    let mut c = tx.conn();
    // Exclusive: no link write is deciding its ban mark meanwhile.
    ban_lock(&mut c, BanLock::Exclusive).await?;
    let row: BanRow = c
        .fetch_one(
            INSERT_BAN,
            &[
                kind.into(),
                domain.into(),
                code.into(),
                host.into(),
                reason.into(),
                created_by.into(),
                now.into(),
            ],
        )
        .await?;
    let ban = Ban::try_from(row)?;
    let change =
        Change::new(Action::Banned, actor).with_note(format!("ban {}: {}", ban.ban_id, ban.reason));
    propagate(&mut c, target, now, &change).await?;
    tx.commit().await?;
    Ok(ban)
}

pub async fn lift(
    db: &Db,
    ban_id: i64,
    actor: Actor<'_>,
    now: i64,
) -> Result<LiftOutcome, StoreError> {
    let mut tx = db.begin_write().await?;
    let mut c = tx.conn();
    ban_lock(&mut c, BanLock::Exclusive).await?;
    let row: Option<BanRow> = c
        .fetch_optional(LIFT_BAN, &[now.into(), ban_id.into()])
        .await?;
    let Some(row) = row else {
        let exists: Option<(i64,)> = c.fetch_optional(BAN_EXISTS, &[ban_id.into()]).await?;
        return Ok(if exists.is_some() {
            LiftOutcome::AlreadyLifted
        } else {
            LiftOutcome::NotFound
        });
    };
    let ban = Ban::try_from(row)?;
    let change =
        Change::new(Action::Unbanned, actor).with_note(format!("ban {} lifted", ban.ban_id));
    propagate(&mut c, &ban.target, now, &change).await?;
    tx.commit().await?;
    Ok(LiftOutcome::Lifted(ban))
}

/// Newest first; lifted ones only when asked.
pub async fn list(db: &Db, include_lifted: bool) -> Result<Vec<Ban>, StoreError> {
    let sql = if include_lifted {
        LIST_BANS
    } else {
        LIST_ACTIVE_BANS
    };
    let rows: Vec<BanRow> = db.read_all(sql, &[]).await?;
    rows.into_iter().map(Ban::try_from).collect()
}

/// The denylist the active bans make, under the version of the last ban change.
pub async fn denylist(db: &Db) -> Result<shared::DenylistSnapshot, StoreError> {
    let mut reader = db.reader().await?;
    let mut c = reader.conn();
    // The version first: a ban change committed between the two reads is then
    // served under the version before it (and asked again, as its ETag differs
    // from the next one), never a version under which its ban is missing.
    let version: Option<(i64,)> = c.fetch_optional(DENYLIST_VERSION, &[]).await?;
    let active = active_bans(&mut c).await?;
    let version = version.map_or(0, |(v,)| u64::try_from(v).unwrap_or_default());
    Ok(denylist_snapshot(version, &active))
}
/// The advisory lock that orders ban changes against link writes on PostgreSQL: a
/// write of a link holds it shared while it decides whether a ban covers the link, and a
/// ban or lift holds it exclusively, so that each sees the other whole or not at all.
/// (SQLite has one writer at a time, which orders them already.)
const BAN_LOCK: i64 = 0x686f_705f_6261_6e73; // "hop_bans"

/// How a transaction holds [`BAN_LOCK`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum BanLock {
    /// A link write deciding its ban mark.
    Shared,
    /// A ban or a lift.
    Exclusive,
}

/// Takes the ban lock for the rest of the transaction, on PostgreSQL.
pub(super) async fn ban_lock(c: &mut Conn<'_>, how: BanLock) -> Result<(), StoreError> {
    if c.is_postgres() {
        // Inline: PostgreSQL only (SQLite has no advisory locks), no file to check on both.
        let sql = match how {
            BanLock::Shared => "SELECT pg_advisory_xact_lock_shared($1)",
            BanLock::Exclusive => "SELECT pg_advisory_xact_lock($1)",
        };
        c.execute(sql, &[BAN_LOCK.into()]).await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::link_rows::SELECT_COLUMNS;

    /// What [`BanRow`] reads.
    const BAN_COLUMNS: &str =
        "ban_id, kind, domain, code, host, reason, created_by, created_at, lifted_at";

    fn words(s: &str) -> String {
        s.split_whitespace().collect::<Vec<_>>().join(" ")
    }

    #[test]
    fn every_statement_of_a_row_reads_the_columns_of_the_row() {
        for sql in [
            ACTIVE_BANS,
            INSERT_BAN,
            LIFT_BAN,
            LIST_BANS,
            LIST_ACTIVE_BANS,
        ] {
            assert!(words(sql).contains(&words(BAN_COLUMNS)), "{sql}");
        }
        for sql in [BUMP_LINKS_OF_CODE, BUMP_LINKS_OF_HOST] {
            assert!(
                words(sql).ends_with(&words(&format!("RETURNING {SELECT_COLUMNS}"))),
                "{sql}"
            );
        }
    }
}

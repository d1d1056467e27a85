//! Webhooks as stored: the events written with the changes they tell of, the endpoints
//! they go to, each endpoint's place in the events, and its attempts (docs/webhooks.md).
//!
//! Events are written only while some endpoint is active ([`super::events`]); the dispatcher
//! alone gives them their `ordinal` ([`sequence`]), under its own fenced lease, so
//! every endpoint's cursor follows one order that no late commit can slip behind.

use super::bans::active_bans;
use super::contract::{LeaseClaim, StoreError};
use super::events::record;
use super::fencing::fenced;
use super::link_rows::{LinkRow, SELECT_COLUMNS};
use super::sql::{insert_rows, Arg, Conn};
use crate::db::Db;
use crate::model::event::{ClicksData, EventType, NewEvent};
use crate::model::history::{Action, Actor, Change, NewEntry};
use crate::model::time::rfc3339;
use crate::model::{denylist, Link};

const UNSEQUENCED: &str = include_str!("queries/unsequenced_webhook_events.sql");
const LAST_ORDINAL: &str = include_str!("queries/last_webhook_ordinal.sql");
/// Ordinals after the last one, in `seq` order, for the rows of `[$2, $3]` still without.
const SEQUENCE: &str = include_str!("queries/sequence_webhook_events.sql");
const INSERT_ENDPOINT: &str = include_str!("queries/insert_webhook_endpoint.sql");
const ENDPOINT: &str = include_str!("queries/webhook_endpoint.sql");
const ENDPOINTS: &str = include_str!("queries/webhook_endpoints.sql");
const DUE: &str = include_str!("queries/due_webhook_endpoints.sql");
const ACTIVE: &str = include_str!("queries/active_webhook_endpoints.sql");
const UPDATE_ENDPOINT: &str = include_str!("queries/update_webhook_endpoint.sql");
const ROTATE: &str = include_str!("queries/rotate_webhook_secret.sql");
const REWIND: &str = include_str!("queries/rewind_webhook_endpoint.sql");
const DELETE_ENDPOINT: &str = include_str!("queries/delete_webhook_endpoint.sql");
const DELETE_ATTEMPTS: &str = include_str!("queries/delete_webhook_attempts.sql");
/// An endpoint's events in an ordinal window, by owner (`''`: every owner's) and type.
const EVENTS_FOR: &str = include_str!("queries/webhook_events_for.sql");
/// Moves an endpoint on, unless its cursor was moved (a redelivery) or it was disabled
/// since it was read.
const OUTCOME: &str = include_str!("queries/record_webhook_outcome.sql");
const ATTEMPTS: &str = include_str!("queries/webhook_attempts.sql");
const OLDEST_UNSEQUENCED: &str = include_str!("queries/oldest_unsequenced_webhook_event.sql");
const EVENT_ORDINAL: &str = include_str!("queries/webhook_event_ordinal.sql");
const MARK: &str = include_str!("queries/webhook_mark.sql");
const SET_MARK: &str = include_str!("queries/set_webhook_mark.sql");
/// One closed hour's visits per link, people and bots apart, by link id from `$2`.
const CLICKS_OF_HOUR: &str = include_str!("queries/clicks_of_hour.sql");
const PRUNE_EVENTS: &str = include_str!("queries/prune_webhook_events.sql");
const PRUNE_ATTEMPTS: &str = include_str!("queries/prune_webhook_attempts.sql");

/// The dispatcher's lease row.
pub const LEASE: &str = "webhooks";

/// An endpoint as stored.
#[derive(Debug, Clone, Default, PartialEq, Eq, sqlx::FromRow)]
pub struct EndpointRow {
    pub endpoint_id: String,
    /// `None`: an admin's, which gets every owner's events.
    pub owner_id: Option<String>,
    pub url: String,
    pub description: String,
    /// Comma-joined event types.
    pub event_types: String,
    pub secret: String,
    pub previous_secret: Option<String>,
    pub previous_until: Option<i64>,
    /// `active` or `disabled`.
    pub state: String,
    pub disabled_reason: Option<String>,
    /// The ordinal delivered through.
    pub delivered_through: i64,
    /// Failed attempts at the event after `delivered_through`.
    pub attempts: i64,
    pub failing_since: Option<i64>,
    pub next_attempt_at: i64,
    pub created_by: String,
    pub created_at: i64,
    pub updated_at: i64,
}

/// A new endpoint; its cursor starts at the newest event (it gets what happens next).
#[derive(Debug, Clone)]
pub struct NewEndpoint<'a> {
    pub endpoint_id: &'a str,
    pub owner_id: Option<&'a str>,
    pub url: &'a str,
    pub description: &'a str,
    pub event_types: &'a str,
    pub secret: &'a str,
    pub created_by: &'a str,
    pub at: i64,
}

/// Writes the endpoint unless its owner holds `cap` already; whether it was written.
pub async fn insert_endpoint(db: &Db, e: &NewEndpoint<'_>, cap: i64) -> Result<bool, StoreError> {
    let written = db
        .write(
            INSERT_ENDPOINT,
            &[
                e.endpoint_id.into(),
                e.owner_id.into(),
                e.url.into(),
                e.description.into(),
                e.event_types.into(),
                e.secret.into(),
                e.created_by.into(),
                e.at.into(),
                cap.into(),
            ],
        )
        .await
        .map_err(StoreError::from_write)?;
    Ok(written == 1)
}

pub async fn endpoint(db: &Db, id: &str) -> Result<Option<EndpointRow>, StoreError> {
    Ok(db.read_optional(ENDPOINT, &[id.into()]).await?)
}

/// A page of endpoints by id after `after`: `owner`'s, or (`None`) everyone's.
pub async fn endpoints(
    db: &Db,
    owner: Option<&str>,
    after: &str,
    limit: i64,
) -> Result<Vec<EndpointRow>, StoreError> {
    Ok(db
        .read_all(
            ENDPOINTS,
            &[owner.unwrap_or_default().into(), after.into(), limit.into()],
        )
        .await?)
}

/// Active endpoints whose next attempt is due at `now`, the longest waiting first.
pub async fn due(db: &Db, now: i64, limit: i64) -> Result<Vec<EndpointRow>, StoreError> {
    Ok(db.read_all(DUE, &[now.into(), limit.into()]).await?)
}

pub async fn active(db: &Db) -> Result<Vec<EndpointRow>, StoreError> {
    Ok(db.read_all(ACTIVE, &[]).await?)
}

/// Writes what the API may change of an endpoint, and its state.
pub async fn update_endpoint(db: &Db, e: &EndpointRow) -> Result<(), StoreError> {
    db.write(
        UPDATE_ENDPOINT,
        &[
            (&e.endpoint_id).into(),
            (&e.url).into(),
            (&e.description).into(),
            (&e.event_types).into(),
            (&e.state).into(),
            (&e.disabled_reason).into(),
            e.attempts.into(),
            e.failing_since.into(),
            e.next_attempt_at.into(),
            e.updated_at.into(),
        ],
    )
    .await?;
    Ok(())
}

/// `secret` becomes the endpoint's; the one it had signs too until `previous_until`.
pub async fn rotate_secret(
    db: &Db,
    id: &str,
    secret: &str,
    previous_until: i64,
    now: i64,
) -> Result<(), StoreError> {
    db.write(
        ROTATE,
        &[id.into(), secret.into(), previous_until.into(), now.into()],
    )
    .await?;
    Ok(())
}

/// Sends the endpoint every event after ordinal `through` again, from now on, enabled.
pub async fn rewind(db: &Db, id: &str, through: i64, now: i64) -> Result<(), StoreError> {
    db.write(REWIND, &[id.into(), through.into(), now.into()])
        .await?;
    Ok(())
}

pub async fn delete_endpoint(db: &Db, id: &str) -> Result<bool, StoreError> {
    let mut tx = db.begin_write().await?;
    let mut c = tx.conn();
    c.execute(DELETE_ATTEMPTS, &[id.into()]).await?;
    let gone = c.execute(DELETE_ENDPOINT, &[id.into()]).await?;
    tx.commit().await?;
    Ok(gone == 1)
}

/// The ordinal of event `seq`: `None` when there is no such event (or pruned), and
/// `Some(None)` while it has none yet.
pub async fn event_ordinal(db: &Db, seq: i64) -> Result<Option<Option<i64>>, StoreError> {
    let row: Option<(Option<i64>,)> = db.read_optional(EVENT_ORDINAL, &[seq.into()]).await?;
    Ok(row.map(|(o,)| o))
}

/// Gives ordinals to up to `limit` committed events without one, in `seq` order,
/// after the last ordinal given; returns the last ordinal now given (0: none ever).
pub async fn sequence(db: &Db, claim: &LeaseClaim<'_>, limit: i64) -> Result<i64, StoreError> {
    let mut tx = fenced(db, claim).await?;
    let mut c = tx.conn();
    let (last,): (Option<i64>,) = c.fetch_one(LAST_ORDINAL, &[]).await?;
    let last = last.unwrap_or(0);
    let seqs: Vec<(i64,)> = c.fetch_all(UNSEQUENCED, &[limit.into()]).await?;
    let (Some((first,)), Some((end,))) = (seqs.first(), seqs.last()) else {
        return Ok(last);
    };
    c.execute(
        SEQUENCE,
        &[(last + 1).into(), (*first).into(), (*end).into()],
    )
    .await?;
    let (now_last,): (Option<i64>,) = c.fetch_one(LAST_ORDINAL, &[]).await?;
    tx.commit().await?;
    Ok(now_last.unwrap_or(last))
}

/// An event as the dispatcher reads it.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct EventRow {
    pub seq: i64,
    pub ordinal: i64,
    #[sqlx(rename = "type")]
    pub kind: String,
    pub domain: String,
    pub code: Option<String>,
    pub version: i64,
    pub data: String,
    pub created_at: i64,
}

/// Up to `limit` of `endpoint`'s events with ordinals in `(after, upto]`, in order.
pub async fn events_for(
    db: &Db,
    endpoint: &EndpointRow,
    after: i64,
    upto: i64,
    limit: i64,
) -> Result<Vec<EventRow>, StoreError> {
    let types = format!(",{},", endpoint.event_types);
    Ok(db
        .read_all(
            EVENTS_FOR,
            &[
                after.into(),
                upto.into(),
                endpoint.owner_id.as_deref().unwrap_or_default().into(),
                (&types).into(),
                limit.into(),
            ],
        )
        .await?)
}

/// The age's start of the oldest event not yet given an ordinal (Unix ms).
pub async fn oldest_unsequenced(db: &Db) -> Result<Option<i64>, StoreError> {
    let row: Option<(Option<i64>,)> = db.read_optional(OLDEST_UNSEQUENCED, &[]).await?;
    Ok(row.and_then(|(at,)| at))
}

/// One delivery attempt.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct AttemptRow {
    pub attempt_id: i64,
    pub event_seq: i64,
    pub event_type: String,
    pub attempted_at: i64,
    /// `delivered`, `failed` or `gone`.
    pub result: String,
    pub status: Option<i64>,
    pub error: Option<String>,
    pub duration_ms: i64,
}

/// Where an endpoint stands after a run of attempts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    pub delivered_through: i64,
    pub attempts: i64,
    pub failing_since: Option<i64>,
    pub next_attempt_at: i64,
    pub disabled_reason: Option<String>,
}

/// Records a run of attempts and moves the endpoint on (from `was_through`), in one
/// transaction fenced by the dispatcher's lease; the endpoint is left as it is when a
/// redelivery moved its cursor or it was disabled meanwhile (the attempts are kept).
pub async fn record_outcome(
    db: &Db,
    claim: &LeaseClaim<'_>,
    endpoint_id: &str,
    was_through: i64,
    attempts: &[AttemptRow],
    outcome: &Outcome,
    now: i64,
) -> Result<(), StoreError> {
    let mut tx = fenced(db, claim).await?;
    let mut c = tx.conn();
    let args: Vec<Arg<'_>> = attempts
        .iter()
        .flat_map(|a| {
            [
                endpoint_id.into(),
                a.event_seq.into(),
                a.event_type.as_str().into(),
                a.attempted_at.into(),
                a.result.as_str().into(),
                a.status.into(),
                a.error.as_deref().into(),
                a.duration_ms.into(),
            ]
        })
        .collect();
    // Built at run time: one VALUES tuple per attempt.
    insert_rows(
        &mut c,
        "INSERT INTO webhook_attempts (endpoint_id, event_seq, event_type, attempted_at, result, status, error, duration_ms)",
        "",
        8,
        &args,
    )
    .await?;
    let state = if outcome.disabled_reason.is_some() {
        "disabled"
    } else {
        "active"
    };
    c.execute(
        OUTCOME,
        &[
            endpoint_id.into(),
            outcome.delivered_through.into(),
            outcome.attempts.into(),
            outcome.failing_since.into(),
            outcome.next_attempt_at.into(),
            state.into(),
            outcome.disabled_reason.as_deref().into(),
            now.into(),
            was_through.into(),
        ],
    )
    .await?;
    tx.commit().await?;
    Ok(())
}

/// A page of an endpoint's attempts, newest first, before attempt id `before`.
pub async fn attempts(
    db: &Db,
    endpoint_id: &str,
    before: i64,
    limit: i64,
) -> Result<Vec<AttemptRow>, StoreError> {
    Ok(db
        .read_all(ATTEMPTS, &[endpoint_id.into(), before.into(), limit.into()])
        .await?)
}

/// Where a sweep stands: `(at, link_id)`, the last link it wrote of (`-1` before the
/// first: link ids start at 0).
async fn position(c: &mut Conn<'_>, name: &str) -> Result<Option<(i64, i64)>, StoreError> {
    let at: Option<(i64,)> = c.fetch_optional(MARK, &[name.into()]).await?;
    let link_mark = format!("{name}.link");
    let link: Option<(i64,)> = c.fetch_optional(MARK, &[(&link_mark).into()]).await?;
    Ok(at.map(|(at,)| (at, link.map_or(0, |(l,)| l))))
}

async fn set_position(c: &mut Conn<'_>, name: &str, at: i64, link: i64) -> Result<(), StoreError> {
    let link_mark = format!("{name}.link");
    c.execute(SET_MARK, &[name.into(), at.into()]).await?;
    c.execute(SET_MARK, &[(&link_mark).into(), link.into()])
        .await?;
    Ok(())
}

/// Starts the sweep of `name` at `at` if it never ran (nothing before is told).
pub async fn start_sweep(db: &Db, name: &str, at: i64) -> Result<(), StoreError> {
    let mut tx = db.begin_write().await?;
    let mut c = tx.conn();
    if position(&mut c, name).await?.is_none() {
        set_position(&mut c, name, at, i64::MAX).await?;
    }
    tx.commit().await?;
    Ok(())
}

/// Writes `link.expired` and the links' history entries for up to `limit` links whose expiry passed after the
/// `expired` sweep's position and by `to`, by (expiry, link id), and moves the position
/// on, in one transaction; how many, and whether the sweep reached `to`.
pub async fn sweep_expired(db: &Db, to: i64, limit: i64) -> Result<(u64, bool), StoreError> {
    let mut tx = db.begin_write().await?;
    let mut c = tx.conn();
    let Some((from, after)) = position(&mut c, "expired").await? else {
        return Ok((0, true));
    };
    // Built at run time: the link columns are one list for every read of links.
    let sql = format!(
        "SELECT {SELECT_COLUMNS} FROM links WHERE (expires_at > $1 OR (expires_at = $1 AND link_id > $2)) \
         AND expires_at <= $3 AND status <> 'deleted' ORDER BY expires_at, link_id LIMIT $4"
    );
    let rows: Vec<LinkRow> = c
        .fetch_all(&sql, &[from.into(), after.into(), to.into(), limit.into()])
        .await?;
    let links: Vec<Link> = rows
        .into_iter()
        .map(Link::try_from)
        .collect::<Result<_, _>>()?;
    let done = i64::try_from(links.len()).unwrap_or(i64::MAX) < limit;
    let deny = denylist(&active_bans(&mut c).await?);
    let events: Vec<NewEvent> = links
        .iter()
        .map(|l| {
            NewEvent::of_link(
                EventType::LinkExpired,
                l,
                l.banned_by(&deny),
                l.expires_at.unwrap_or(to),
            )
        })
        .collect();
    record(&mut c, &events).await?;
    let expired = Change::new(Action::Expired, Actor::System);
    let entries: Vec<NewEntry> = links
        .iter()
        .map(|l| NewEntry::of(l, &expired, l.expires_at.unwrap_or(to)))
        .collect();
    super::history::record(&mut c, &entries).await?;
    match links.last().filter(|_| !done) {
        Some(l) => {
            let id = i64::try_from(l.link_id).unwrap_or(i64::MAX);
            set_position(&mut c, "expired", l.expires_at.unwrap_or(to), id).await?;
        }
        None => set_position(&mut c, "expired", to, i64::MAX).await?,
    }
    tx.commit().await?;
    Ok((events.len() as u64, done))
}

/// One link's hour: link id, owner, domain, code, version, people's and bots' visits
/// (read by position: the sums' aliases carry their types for the checks).
type HourRow = (i64, String, String, String, i64, i64, i64);

/// Whose links' hourly counts are written as `clicks.rolled_up`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tell {
    /// Every owner's: an endpoint of every owner's events wants them.
    Everyone,
    /// These owners' only (none: nobody wants them).
    Owners(std::collections::BTreeSet<String>),
}

/// Writes `clicks.rolled_up` for up to `limit` links visited in the hour the `clicks`
/// sweep stands at, after its link, and moves it on (to the next hour once the hour is
/// done), in one transaction; `tell`: whose links' counts anyone wants (the sweep moves
/// on either way). The hour rolled up, if one was due by `now` less `grace`.
pub async fn roll_up_hour(
    db: &Db,
    now: i64,
    grace: i64,
    limit: i64,
    tell: &Tell,
) -> Result<Option<i64>, StoreError> {
    const HOUR: i64 = 3_600_000;
    let mut tx = db.begin_write().await?;
    let mut c = tx.conn();
    let Some((hour, after)) = position(&mut c, "clicks").await? else {
        return Ok(None);
    };
    if hour + HOUR + grace > now {
        return Ok(None);
    }
    let after = if after == i64::MAX { -1 } else { after };
    let rows: Vec<HourRow> = match tell {
        Tell::Owners(owners) if owners.is_empty() => Vec::new(),
        _ => {
            c.fetch_all(CLICKS_OF_HOUR, &[hour.into(), after.into(), limit.into()])
                .await?
        }
    };
    let events: Vec<NewEvent> = rows
        .iter()
        .filter(|(_, owner, ..)| match tell {
            Tell::Everyone => true,
            Tell::Owners(owners) => owners.contains(owner),
        })
        .map(|(_, owner, domain, code, version, visits, bot_visits)| {
            let data = ClicksData {
                domain,
                code,
                version: u64::try_from(*version).unwrap_or_default(),
                owner,
                hour: rfc3339(hour),
                visits: *visits,
                bot_visits: *bot_visits,
            };
            NewEvent {
                kind: EventType::ClicksRolledUp,
                owner_id: Some(owner.clone()),
                domain: domain.clone(),
                code: Some(code.clone()),
                version: *version,
                data: serde_json::to_string(&data).unwrap_or_default(),
                at: hour + HOUR,
            }
        })
        .collect();
    record(&mut c, &events).await?;
    let full = i64::try_from(rows.len()).unwrap_or(i64::MAX) >= limit;
    match rows.last().filter(|_| full) {
        Some(r) => set_position(&mut c, "clicks", hour, r.0).await?,
        None => set_position(&mut c, "clicks", hour + HOUR, -1).await?,
    }
    tx.commit().await?;
    Ok(Some(hour))
}

/// Deletes events and attempts older than `before` (Unix ms); how many of each.
pub async fn prune(db: &Db, before: i64) -> Result<(u64, u64), StoreError> {
    let events = db.write(PRUNE_EVENTS, &[before.into()]).await?;
    let attempts = db.write(PRUNE_ATTEMPTS, &[before.into()]).await?;
    Ok((events, attempts))
}

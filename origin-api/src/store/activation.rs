//! The activation window as promises the origin keeps (docs/architecture.md, "The
//! activation window"), one series per domain's code sequence (`code:{domain}`,
//! [`crate::model::sequence`]).
//!
//! A meta tells the edge: "numbers in `[low, high + headroom)` may belong to this
//! domain's links KV does not hold yet; no other number will be issued before `at +
//! window`". The edge answers 404 without asking anyone for a generated code outside
//! that range, so the origin must make the promise true:
//! - `high` is the sequence's ceiling (`id_segments`) read under the row's lock, so
//!   every segment any process holds lies below it;
//! - segment reservation refuses, while a recorded promise still runs (plus a margin for
//!   clocks), to reserve past that promise's `high + headroom`
//!   ([`reservation_limit_sql`]);
//! - `low` is the smallest of: the start of the oldest segment reserved within the
//!   window, the number of the domain's oldest generated link never delivered to the
//!   edge, and the `low` of every promise still running (a link delivered a moment ago
//!   is not everywhere yet);
//! - `headroom` is sized from the recent reservation rate so that, in practice, the
//!   limit never binds, and is at least a thousand of the sequence's segments: a
//!   thousandth of a small code space, ten million numbers of the default one
//!   (62^7 ≈ 3.5 × 10^12), where a random code falls in the window about 3 times in a
//!   million.

use super::contract::{db_now_sql, LeaseClaim, StoreError};
use super::fencing::fenced;
use crate::db::Db;
use crate::model::sequence::{domain_of_sequence, DEFAULT_STEP};
use serde::Deserialize;

/// The least headroom a meta gives, in segments of its sequence: a burst of imports
/// right after a quiet spell does not run into the promise.
const MIN_HEADROOM_SEGMENTS: i64 = 1_000;
/// The least headroom of a sequence of full segments: ten million numbers.
pub const MIN_HEADROOM: i64 = MIN_HEADROOM_SEGMENTS * DEFAULT_STEP as i64;
/// How much longer than its own window the origin keeps a promise, for clocks (the
/// edge's against the database's) that disagree.
pub const SKEW_MARGIN_MS: i64 = 60_000;

/// A meta as recorded (and as the edge will get it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ActivationPromise {
    /// Its version: the database's clock in ms when recorded, made strictly increasing.
    pub v: i64,
    pub at_ms: i64,
    pub window_ms: i64,
    pub low: i64,
    pub high: i64,
    pub headroom: i64,
    /// The end of the domain's import window, if it has one (`foreign_codes`).
    pub foreign_until_ms: Option<i64>,
}

/// `SELECT limit, ms_left` of the promise that binds the reservation of a segment of
/// sequence `$1` now (the smallest `high + headroom` among its promises still running,
/// and how long it still runs), if any. Built at run time: the database's clock is each
/// dialect's own.
pub(crate) fn reservation_limit_sql(db: &Db) -> String {
    let now = db_now_sql(db);
    format!(
        "SELECT high + headroom, at_ms + window_ms + {SKEW_MARGIN_MS} - {now} FROM activation_promises \
         WHERE sequence = $1 AND at_ms + window_ms + {SKEW_MARGIN_MS} > {now} \
         ORDER BY high + headroom LIMIT 1"
    )
}

/// Reads the ceiling of a sequence under its row's lock (a no-op update).
const LOCK_SEQUENCE_CEILING: &str = include_str!("queries/lock_sequence_ceiling.sql");
/// The segments of a sequence reserved since `$2`.
const RECENT_SEGMENTS: &str = include_str!("queries/recent_segments.sql");
/// The number of a domain's oldest generated link never delivered to the edge.
const OLDEST_UNDELIVERED_CODE: &str = include_str!("queries/oldest_undelivered_code.sql");
/// The smallest `low` of a sequence's promises still running at `$1`, and its last
/// promise's version.
const RUNNING_PROMISES: &str = include_str!("queries/running_promises.sql");
/// The domain's import window (`foreign_codes`).
const FOREIGN_WINDOW: &str = include_str!("queries/foreign_window.sql");
const INSERT_ACTIVATION_PROMISE: &str = include_str!("queries/insert_activation_promise.sql");
/// The promises that ran out before `$2` by more than `$1`.
const FORGET_ACTIVATION_PROMISES: &str = include_str!("queries/forget_activation_promises.sql");

#[derive(Deserialize)]
struct Segment {
    start: i64,
    end: i64,
}

/// Computes and records the next promise of the code sequence `sequence`; see the
/// module's documentation.
pub(super) async fn record(
    db: &Db,
    claim: &LeaseClaim<'_>,
    sequence: &str,
    window_ms: i64,
) -> Result<ActivationPromise, StoreError> {
    let domain = domain_of_sequence(sequence)
        .ok_or_else(|| StoreError::Corrupt(format!("{sequence} numbers no domain's codes")))?;
    // Built at run time: the database's clock is each dialect's own.
    let clock = format!("SELECT {}", db_now_sql(db));
    let mut tx = fenced(db, claim).await?;
    let mut c = tx.conn();
    // The ceiling under its row's lock: a reservation waits until this commits, and then
    // sees this promise.
    let row: Option<(i64, i64)> = c
        .fetch_optional(LOCK_SEQUENCE_CEILING, &[sequence.into()])
        .await?;
    let (high, step) = row.unwrap_or((0, DEFAULT_STEP as i64));
    let (now,): (i64,) = c.fetch_one(&clock, &[]).await?;
    let since = now - window_ms;
    let payloads: Vec<(String,)> = c
        .fetch_all(RECENT_SEGMENTS, &[sequence.into(), since.into()])
        .await?;
    let segments: Vec<Segment> = payloads
        .iter()
        .filter_map(|(p,)| serde_json::from_str(p).ok())
        .collect();
    let (undelivered,): (Option<i64>,) = c
        .fetch_one(OLDEST_UNDELIVERED_CODE, &[domain.into()])
        .await?;
    let (earlier_low, last_v): (Option<i64>, Option<i64>) = c
        .fetch_one(RUNNING_PROMISES, &[now.into(), sequence.into()])
        .await?;
    let low = segments
        .iter()
        .map(|s| s.start)
        .chain(undelivered)
        .chain(earlier_low)
        .min()
        .unwrap_or(high)
        .min(high);
    // Ids reserved per ms lately, over the window and the margin, twice over.
    let reserved: i64 = segments.iter().map(|s| (s.end - s.start).max(0)).sum();
    let by_rate = reserved
        .saturating_mul(2)
        .saturating_mul(window_ms + SKEW_MARGIN_MS)
        / window_ms.max(1);
    let headroom = by_rate.max(MIN_HEADROOM_SEGMENTS.saturating_mul(step.max(1)));
    let foreign: Option<(i64, i64)> = c.fetch_optional(FOREIGN_WINDOW, &[domain.into()]).await?;
    let promise = ActivationPromise {
        foreign_until_ms: foreign.map(|(_, until)| until),
        v: now.max(last_v.unwrap_or(0) + 1),
        at_ms: now,
        window_ms,
        low,
        high,
        headroom,
    };
    c.execute(
        INSERT_ACTIVATION_PROMISE,
        &[
            sequence.into(),
            promise.v.into(),
            promise.at_ms.into(),
            promise.window_ms.into(),
            promise.low.into(),
            promise.high.into(),
            promise.headroom.into(),
        ],
    )
    .await?;
    // Promises that ran out long ago bind nothing and inform nothing.
    c.execute(
        FORGET_ACTIVATION_PROMISES,
        &[(2 * SKEW_MARGIN_MS + window_ms).into(), now.into()],
    )
    .await?;
    tx.commit().await?;
    Ok(promise)
}

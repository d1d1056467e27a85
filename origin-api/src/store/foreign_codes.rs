//! `foreign_codes`: the domains that hold codes imported from another shortener, and the
//! window in which such codes may be missing from KV (see migration 0019 and
//! `shared::activation`).

use super::contract::StoreError;
use super::outbox::{insert_outbox, OutboxInsert};
use crate::db::Db;
use crate::model::sequence::code_sequence;

const WINDOW: &str = include_str!("queries/foreign_window.sql");
const UPSERT: &str = include_str!("queries/upsert_foreign_window.sql");

/// How long after the edge is told of an import its codes may be created, by default
/// (`--import-edge-wait`): the meta's write shows everywhere within KV's 60 s, a
/// location may hold the older meta for the 30 s of its read cache and an isolate for
/// 2 s more; the rest is room for clocks.
pub const PROPAGATION_MS: i64 = 120_000;
/// How long a window lasts once opened or extended.
pub const WINDOW_MS: i64 = 3_600_000;
/// A window with less than this left is extended, early enough that the extension is
/// everywhere before the old end.
pub const EXTEND_WITHIN_MS: i64 = 1_800_000;

/// A domain's import window, Unix ms by the origin's clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub opened_at: i64,
    pub until_at: i64,
}

/// The window of `domain`, if it ever imported codes (a past window too).
pub async fn window(db: &Db, domain: &str) -> Result<Option<Window>, StoreError> {
    let row: Option<(i64, i64)> = db.read_optional(WINDOW, &[domain.into()]).await?;
    Ok(row.map(|(opened_at, until_at)| Window {
        opened_at,
        until_at,
    }))
}

/// Makes sure `domain`'s window covers codes created from `now` on: opens it (or opens
/// it again when too little of it is left for a code made now to reach KV everywhere
/// inside it), or extends it, publishing the domain's activation meta again in the same
/// transaction. `Ok(None)`: codes may be created now; `Ok(Some(ms))`: the edge learns of
/// the window in `ms`, and until then an imported code could be answered 404 there.
///
/// `wait_ms` is how long the edge takes to learn of a window ([`PROPAGATION_MS`]).
pub async fn prepare(
    db: &Db,
    domain: &str,
    now: i64,
    wait_ms: i64,
) -> Result<Option<i64>, StoreError> {
    let mut tx = db.begin_write().await?;
    let mut c = tx.conn();
    let held: Option<(i64, i64)> = c.fetch_optional(WINDOW, &[domain.into()]).await?;
    let (opened_at, until_at, publish) = match held {
        Some((opened, until)) if until >= now + wait_ms => {
            if until < now + EXTEND_WITHIN_MS {
                (opened, now + WINDOW_MS, true)
            } else {
                (opened, until, false)
            }
        }
        _ => (now, now + WINDOW_MS, true),
    };
    if publish {
        c.execute(UPSERT, &[domain.into(), opened_at.into(), until_at.into()])
            .await?;
        let sequence = code_sequence(domain);
        // A segment row stands for the domain's activation meta, which the publisher
        // computes afresh (reading this window); its payload names no segment.
        insert_outbox(
            &mut c,
            &[OutboxInsert {
                lane: "fast",
                kind: "segment",
                route_key: &sequence,
                version: now,
                payload: "{}",
                created_at: now,
            }],
        )
        .await?;
    }
    tx.commit().await?;
    let ready_at = opened_at + wait_ms;
    Ok((ready_at > now).then_some(ready_at - now))
}

//! The outbox as the publisher reads it, and the publisher's lease.
//!
//! Lease expiry is judged by the database's clock, never a node's: every statement that
//! takes, renews or checks the lease reads the time in SQL. Each takeover starts a new
//! epoch, and every write the publisher makes (marking rows delivered or failed,
//! retiring rows) first re-checks, inside its own transaction, that this holder still
//! holds this epoch unexpired; on PostgreSQL that check locks the lease row, so a
//! takeover waits for the write to commit.

use super::activation::ActivationPromise;
use super::contract::db_now_sql as now_sql;
use super::contract::{Backlog, FailedRow, Lease, LeaseClaim, OutboxRow, RowFailure, StoreError};
use super::fencing::fenced;
use super::sql::{insert_rows, list_placeholders, Arg, Conn};
use crate::db::Db;
use async_trait::async_trait;
use std::fmt::Debug;

/// What the publisher reads and writes. Every write takes the publisher's
/// [`LeaseClaim`] and commits only while the lease is still held at that epoch
/// (judged by the database's clock); `LeaseLost` otherwise, with nothing written.
#[async_trait]
pub trait OutboxStore: Send + Sync + Debug + 'static {
    /// Takes or renews the lease `name` for `holder` for `ttl_ms` by the database's
    /// clock: the epoch it is held at, or `None` while another holder's lease runs. The
    /// epoch changes whenever the lease changed hands or lapsed since it was held.
    async fn take_lease(
        &self,
        name: &str,
        holder: &str,
        ttl_ms: i64,
    ) -> Result<Option<Lease>, StoreError>;
    /// Gives the lease up (on shutdown), so a standby need not wait for it to lapse.
    async fn release_lease(&self, claim: &LeaseClaim<'_>) -> Result<(), StoreError>;
    /// Who holds the lease now, and at which epoch (`None` when it is free or lapsed).
    async fn lease_holder(&self, name: &str) -> Result<Option<(String, i64)>, StoreError>;
    /// Up to `limit` undelivered rows of `lane` due by `now` (Unix ms), in `seq` order;
    /// rows set aside as failed are not among them.
    async fn pending(&self, lane: &str, limit: i64, now: i64)
        -> Result<Vec<OutboxRow>, StoreError>;
    /// Records rows as delivered (and, for links, what the edge now has), in one
    /// transaction.
    async fn mark_published(
        &self,
        claim: &LeaseClaim<'_>,
        rows: &[OutboxRow],
        at: i64,
    ) -> Result<(), StoreError>;
    /// Marks delivered, without pushing them, the undelivered rows of `lane` with a seq
    /// in `seqs` (inclusive: the batch about to be pushed) of a key for which a newer
    /// version was already delivered; returns their seqs.
    async fn retire_superseded(
        &self,
        claim: &LeaseClaim<'_>,
        lane: &str,
        seqs: (i64, i64),
        at: i64,
    ) -> Result<Vec<i64>, StoreError>;
    /// Counts refusals of single rows, each retried later or set aside; returns how
    /// many were set aside.
    async fn record_failures(
        &self,
        claim: &LeaseClaim<'_>,
        failures: &[RowFailure],
        now: i64,
    ) -> Result<u64, StoreError>;
    /// Notes on rows why a whole push failed (the edge down, say): not their fault, so
    /// not counted towards setting them aside.
    async fn note_push_failure(
        &self,
        claim: &LeaseClaim<'_>,
        rows: &[OutboxRow],
        error: &str,
    ) -> Result<(), StoreError>;
    /// Rows set aside as failed, after `seq` `after`, oldest first.
    async fn failed_rows(&self, after: i64, limit: i64) -> Result<Vec<FailedRow>, StoreError>;
    /// Puts rows set aside back in line (one by `seq`, or all): returns how many.
    async fn retry_failed(&self, seq: Option<i64>) -> Result<u64, StoreError>;
    /// Deletes rows delivered before `before` (Unix ms), but the newest delivered row of
    /// each key; returns how many.
    async fn prune_delivered(&self, before: i64) -> Result<u64, StoreError>;
    /// Computes the activation meta the edge is to get and records it as a promise
    /// (no id at or past `high + headroom` is issued until it runs out), in one fenced
    /// transaction that orders it with segment reservations.
    async fn record_activation(
        &self,
        claim: &LeaseClaim<'_>,
        sequence: &str,
        window_ms: i64,
    ) -> Result<ActivationPromise, StoreError>;
    /// The code sequences whose activation meta the heartbeat keeps fresh: those of
    /// every active domain.
    async fn code_sequences(&self) -> Result<Vec<String>, StoreError>;
}

/// Takes the lease when it is free or lapsed, renews it for its holder; a new epoch
/// whenever the lease changes hands or lapsed in between, `clean` when it was given up
/// (`expires_at = 0`) or never held. Built at run time: the database's clock
/// ([`now_sql`]) and a boolean literal are each dialect's own.
fn take_sql(now: &str, truth: &str) -> String {
    format!(
        "INSERT INTO leases (name, holder, expires_at, epoch, clean) VALUES ($1, $2, {now} + $3, 1, {truth}) \
         ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_at = {now} + $3, \
         epoch = CASE WHEN leases.holder = excluded.holder AND leases.expires_at >= {now} \
                 THEN leases.epoch ELSE leases.epoch + 1 END, \
         clean = CASE WHEN leases.holder = excluded.holder AND leases.expires_at >= {now} \
                 THEN leases.clean ELSE leases.expires_at = 0 END \
         WHERE leases.holder = excluded.holder OR leases.expires_at < {now} \
         RETURNING holder, epoch, clean"
    )
}

const PENDING: &str = include_str!("queries/outbox_pending.sql");
/// Lapses a lease at once (rather than deleting it), so that the next holder's epoch
/// follows on.
const RELEASE_LEASE: &str = include_str!("queries/release_lease.sql");
/// What the edge now has of a link, unless it had a newer version already.
const MARK_LINK_PUBLISHED: &str = include_str!("queries/mark_link_published.sql");
/// Marks delivered the undelivered rows of a batch of which a newer version of the same
/// key was delivered; returns their seqs.
const RETIRE_SUPERSEDED: &str = include_str!("queries/retire_superseded.sql");
/// One refusal of a row: retried at `$2`, or set aside at `$3`.
const RECORD_FAILURE: &str = include_str!("queries/record_failure.sql");
const FAILED_ROWS: &str = include_str!("queries/failed_rows.sql");
/// One row set aside by its seq, or (with no seq) all of them, back in line.
const RETRY_FAILED: &str = include_str!("queries/retry_failed.sql");
/// Deletes the rows delivered before `$1` of which a newer version of the same key was
/// delivered: the newest delivered row of each key stays.
const PRUNE_DELIVERED: &str = include_str!("queries/prune_delivered.sql");
/// The code sequences of the active domains.
const CODE_SEQUENCES: &str = include_str!("queries/code_sequences.sql");

type RowTuple = (i64, String, String, String, i64, String, i64, i64);

fn row_of(
    (seq, lane, kind, route_key, version, payload, created_at, attempts): RowTuple,
) -> OutboxRow {
    OutboxRow {
        seq,
        lane,
        kind,
        route_key,
        version,
        payload,
        created_at,
        attempts,
    }
}

/// An outbox row to write: a change for the publisher to push.
#[derive(Debug, Clone, Copy)]
pub(super) struct OutboxInsert<'a> {
    /// `fast` (the denylist, segments) or `normal` (link records).
    pub lane: &'a str,
    /// `link`, `deny`, `cfg` or `segment`.
    pub kind: &'a str,
    pub route_key: &'a str,
    pub version: i64,
    pub payload: &'a str,
    pub created_at: i64,
}

/// Writes outbox rows in the transaction, in order (their `seq` follows it): the one
/// place the outbox is inserted into.
pub(super) async fn insert_outbox(
    c: &mut Conn<'_>,
    rows: &[OutboxInsert<'_>],
) -> Result<(), StoreError> {
    let args: Vec<Arg<'_>> = rows
        .iter()
        .flat_map(|r| {
            [
                r.lane.into(),
                r.kind.into(),
                r.route_key.into(),
                r.version.into(),
                r.payload.into(),
                r.created_at.into(),
            ]
        })
        .collect();
    // Built at run time: one VALUES tuple per row.
    insert_rows(
        c,
        "INSERT INTO outbox (lane, kind, route_key, version, payload, created_at)",
        "",
        6,
        &args,
    )
    .await?;
    Ok(())
}

/// The outbox row of a link's new version: what the edge is to hold for it.
pub(super) fn link_row<'a>(
    route: &'a str,
    version: i64,
    payload: &'a str,
    at: i64,
) -> OutboxInsert<'a> {
    OutboxInsert {
        lane: "normal",
        kind: "link",
        route_key: route,
        version,
        payload,
        created_at: at,
    }
}

/// `UPDATE outbox SET … WHERE seq IN (…)` for at most 500 rows at a time.
const SEQ_CHUNK: usize = 500;

/// The outbox column a publisher's write sets on rows.
#[derive(Debug, Clone, Copy)]
enum Column {
    PublishedAt,
    LastError,
}

/// Sets `column` to `value` on `rows`, 500 rows per statement.
async fn set_on_rows(
    c: &mut Conn<'_>,
    column: Column,
    value: Arg<'_>,
    rows: &[OutboxRow],
) -> Result<(), StoreError> {
    let column = match column {
        Column::PublishedAt => "published_at",
        Column::LastError => "last_error",
    };
    for chunk in rows.chunks(SEQ_CHUNK) {
        // Built at run time: the column set, and one placeholder per row.
        let sql = format!(
            "UPDATE outbox SET {column} = $1 WHERE seq IN ({})",
            list_placeholders(2, chunk.len())
        );
        let mut args = vec![value];
        args.extend(chunk.iter().map(|r| Arg::from(r.seq)));
        c.execute(&sql, &args).await?;
    }
    Ok(())
}

#[async_trait]
impl OutboxStore for Db {
    async fn take_lease(
        &self,
        name: &str,
        holder: &str,
        ttl_ms: i64,
    ) -> Result<Option<Lease>, StoreError> {
        let truth = if self.is_postgres() { "TRUE" } else { "1" };
        let sql = take_sql(now_sql(self), truth);
        let got: Option<(String, i64, bool)> = self
            .writer()
            .await?
            .conn()
            .fetch_optional(&sql, &[name.into(), holder.into(), ttl_ms.into()])
            .await?;
        Ok(got
            .filter(|(h, _, _)| h == holder)
            .map(|(_, epoch, clean)| Lease { epoch, clean }))
    }

    async fn release_lease(&self, claim: &LeaseClaim<'_>) -> Result<(), StoreError> {
        self.write(
            RELEASE_LEASE,
            &[claim.name.into(), claim.holder.into(), claim.epoch.into()],
        )
        .await?;
        Ok(())
    }

    async fn lease_holder(&self, name: &str) -> Result<Option<(String, i64)>, StoreError> {
        // Built at run time: the database's clock is each dialect's own.
        let sql = format!(
            "SELECT holder, epoch FROM leases WHERE name = $1 AND expires_at > {}",
            now_sql(self)
        );
        Ok(self.read_optional(&sql, &[name.into()]).await?)
    }

    async fn pending(
        &self,
        lane: &str,
        limit: i64,
        now: i64,
    ) -> Result<Vec<OutboxRow>, StoreError> {
        let rows: Vec<RowTuple> = self
            .read_all(PENDING, &[lane.into(), now.into(), limit.into()])
            .await?;
        Ok(rows.into_iter().map(row_of).collect())
    }

    async fn mark_published(
        &self,
        claim: &LeaseClaim<'_>,
        rows: &[OutboxRow],
        at: i64,
    ) -> Result<(), StoreError> {
        let mut tx = fenced(self, claim).await?;
        let mut c = tx.conn();
        set_on_rows(&mut c, Column::PublishedAt, at.into(), rows).await?;
        for row in rows.iter().filter(|r| r.kind == "link") {
            if let Some((domain, code)) = row.route_key.split_once('/') {
                c.execute(
                    MARK_LINK_PUBLISHED,
                    &[row.version.into(), at.into(), domain.into(), code.into()],
                )
                .await?;
            }
        }
        tx.commit().await?;
        Ok(())
    }

    async fn retire_superseded(
        &self,
        claim: &LeaseClaim<'_>,
        lane: &str,
        (from, to): (i64, i64),
        at: i64,
    ) -> Result<Vec<i64>, StoreError> {
        let mut tx = fenced(self, claim).await?;
        let retired: Vec<(i64,)> = tx
            .conn()
            .fetch_all(
                RETIRE_SUPERSEDED,
                &[at.into(), lane.into(), from.into(), to.into()],
            )
            .await?;
        tx.commit().await?;
        Ok(retired.into_iter().map(|(seq,)| seq).collect())
    }

    async fn record_failures(
        &self,
        claim: &LeaseClaim<'_>,
        failures: &[RowFailure],
        now: i64,
    ) -> Result<u64, StoreError> {
        let mut tx = fenced(self, claim).await?;
        let mut c = tx.conn();
        let mut dead = 0u64;
        for f in failures {
            let failed_at = f.dead.then_some(now);
            dead += u64::from(f.dead);
            c.execute(
                RECORD_FAILURE,
                &[
                    (&f.error).into(),
                    f.retry_at.into(),
                    failed_at.into(),
                    f.seq.into(),
                ],
            )
            .await?;
        }
        tx.commit().await?;
        Ok(dead)
    }

    async fn note_push_failure(
        &self,
        claim: &LeaseClaim<'_>,
        rows: &[OutboxRow],
        error: &str,
    ) -> Result<(), StoreError> {
        let mut tx = fenced(self, claim).await?;
        set_on_rows(&mut tx.conn(), Column::LastError, error.into(), rows).await?;
        tx.commit().await?;
        Ok(())
    }

    async fn failed_rows(&self, after: i64, limit: i64) -> Result<Vec<FailedRow>, StoreError> {
        type Failed = (
            i64,
            String,
            String,
            String,
            i64,
            i64,
            Option<String>,
            i64,
            i64,
        );
        let rows: Vec<Failed> = self
            .read_all(FAILED_ROWS, &[after.into(), limit.into()])
            .await?;
        Ok(rows
            .into_iter()
            .map(
                |(
                    seq,
                    lane,
                    kind,
                    route_key,
                    version,
                    attempts,
                    last_error,
                    created_at,
                    failed_at,
                )| {
                    FailedRow {
                        seq,
                        lane,
                        kind,
                        route_key,
                        version,
                        attempts,
                        last_error: last_error.unwrap_or_default(),
                        created_at,
                        failed_at,
                    }
                },
            )
            .collect())
    }

    async fn retry_failed(&self, seq: Option<i64>) -> Result<u64, StoreError> {
        Ok(self.write(RETRY_FAILED, &[seq.into()]).await?)
    }

    async fn prune_delivered(&self, before: i64) -> Result<u64, StoreError> {
        // The newest delivered row of each key stays: it is what tells a late, older
        // row of that key from a new one (`retire_superseded`).
        Ok(self.write(PRUNE_DELIVERED, &[before.into()]).await?)
    }

    async fn record_activation(
        &self,
        claim: &LeaseClaim<'_>,
        sequence: &str,
        window_ms: i64,
    ) -> Result<ActivationPromise, StoreError> {
        super::activation::record(self, claim, sequence, window_ms).await
    }

    async fn code_sequences(&self) -> Result<Vec<String>, StoreError> {
        let rows: Vec<(String,)> = self.read_all(CODE_SEQUENCES, &[]).await?;
        Ok(rows.into_iter().map(|(name,)| name).collect())
    }
}

/// Unpublished outbox rows per lane (rows set aside as failed under `failed`), each
/// counted up to [`OUTBOX_COUNT_CAP`], with when the oldest of each was written.
pub async fn pending(db: &Db) -> Result<Vec<Backlog>, StoreError> {
    // Each count stops at the cap, walking the pending rows' index: a backlog of a
    // million rows, counted and grouped whole, cost seconds of CPU per scrape. The
    // oldest row of a lane is the first of that index (sequence numbers grow with
    // time), so its age costs one probe.
    let (fast, normal, failed, fast_at, normal_at): (i64, i64, i64, Option<i64>, Option<i64>) = db
        .reader()
        .await?
        .conn()
        .fetch_one(OUTBOX_BACKLOG, &[super::contract::OUTBOX_COUNT_CAP.into()])
        .await?;
    let lane = |lane: &str, rows, oldest_at| Backlog {
        lane: lane.to_owned(),
        rows,
        oldest_at,
    };
    Ok(vec![
        lane("fast", fast, fast_at),
        lane("normal", normal, normal_at),
        lane("failed", failed, None),
    ])
}

/// The outbox's pending rows per lane and those set aside, each counted up to `$1`, and
/// the oldest pending row's time per lane.
const OUTBOX_BACKLOG: &str = include_str!("queries/outbox_backlog.sql");

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> String {
        s.split_whitespace().collect::<Vec<_>>().join(" ")
    }

    #[test]
    fn retiring_and_pruning_judge_a_row_superseded_alike() {
        // A row of which a newer version of the same key was delivered.
        let superseded = "EXISTS (SELECT 1 FROM outbox AS newer WHERE newer.kind = outbox.kind \
             AND newer.route_key = outbox.route_key AND newer.version > outbox.version \
             AND newer.published_at IS NOT NULL)";
        for sql in [RETIRE_SUPERSEDED, PRUNE_DELIVERED] {
            let sql = words(sql);
            let sql = sql.strip_suffix(" RETURNING seq").unwrap_or(&sql);
            assert!(sql.ends_with(&words(superseded)), "{sql}");
        }
    }
}

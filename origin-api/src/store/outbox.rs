//! The outbox as the publisher reads it, and the publisher's lease.
//!
//! Lease expiry is judged by the database's clock, never a node's: every statement that
//! takes, renews or checks the lease reads the time in SQL. Each takeover starts a new
//! epoch, and every write the publisher makes (marking rows delivered or failed,
//! retiring rows) first re-checks, inside its own transaction, that this holder still
//! holds this epoch unexpired; on PostgreSQL that check locks the lease row, so a
//! takeover waits for the write to commit.

use super::db_now_sql as now_sql;
use super::{
    ActivationPromise, FailedRow, Lease, LeaseClaim, OutboxRow, OutboxStore, RowFailure, StoreError,
};
use crate::db::Db;
use async_trait::async_trait;

/// Takes the lease when it is free or lapsed, renews it for its holder; a new epoch
/// whenever the lease changes hands or lapsed in between, `clean` when it was given up
/// (`expires_at = 0`) or never held.
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

/// Matches the lease row only while `$1` names it, `$2` holds it at epoch `$3`, and it
/// has not lapsed; the no-op update locks the row on PostgreSQL until commit.
pub(crate) fn still_held_sql(now: &str) -> String {
    format!(
        "UPDATE leases SET expires_at = expires_at \
         WHERE name = $1 AND holder = $2 AND epoch = $3 AND expires_at > {now}"
    )
}

const PENDING: &str = "SELECT seq, lane, kind, route_key, version, payload, created_at, attempts \
     FROM outbox WHERE published_at IS NULL AND failed_at IS NULL AND lane = $1 \
     AND next_attempt_at <= $2 ORDER BY seq LIMIT $3";

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

/// Runs `$body` in a transaction on the writer, after checking that `$claim` still
/// holds its lease; `LeaseLost` (and nothing written) otherwise.
#[macro_export]
#[doc(hidden)]
macro_rules! fenced {
    ($db:expr, $claim:expr, $tx:ident => $body:expr) => {{
        let check = $crate::store::outbox::still_held_sql($crate::store::db_now_sql($db));
        $crate::on_writer!($db, pool => {
            let mut $tx = pool.begin().await?;
            let held = sqlx::query(&check)
                .bind($claim.name)
                .bind($claim.holder)
                .bind($claim.epoch)
                .execute(&mut *$tx)
                .await?
                .rows_affected();
            if held != 1 {
                return Err(StoreError::LeaseLost);
            }
            let out = $body;
            $tx.commit().await?;
            out
        })
    }};
}

/// A row of which a newer version of the same key was delivered.
const SUPERSEDED: &str = "EXISTS (SELECT 1 FROM outbox AS newer WHERE newer.kind = outbox.kind \
     AND newer.route_key = outbox.route_key AND newer.version > outbox.version \
     AND newer.published_at IS NOT NULL)";

/// `UPDATE outbox SET … WHERE seq IN (…)` for at most 500 rows at a time.
const SEQ_CHUNK: usize = 500;

/// Sets `$column` to `$value` on `$rows` inside `$tx`, 500 rows per statement.
macro_rules! set_on_rows {
    ($tx:expr, $column:literal, $value:expr, $rows:expr) => {
        for chunk in $rows.chunks(SEQ_CHUNK) {
            let mut update = sqlx::QueryBuilder::new(concat!("UPDATE outbox SET ", $column, " = "));
            update.push_bind($value).push(" WHERE seq IN (");
            let mut seqs = update.separated(", ");
            for row in chunk {
                seqs.push_bind(row.seq);
            }
            update.push(")");
            update.build().execute(&mut *$tx).await?;
        }
    };
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
        let got: Option<(String, i64, bool)> = crate::on_writer!(self, pool => {
            sqlx::query_as(&sql)
                .bind(name)
                .bind(holder)
                .bind(ttl_ms)
                .fetch_optional(pool)
                .await?
        });
        Ok(got
            .filter(|(h, _, _)| h == holder)
            .map(|(_, epoch, clean)| Lease { epoch, clean }))
    }

    async fn release_lease(&self, claim: &LeaseClaim<'_>) -> Result<(), StoreError> {
        // Lapsed at once rather than deleted, so that the next holder's epoch follows on.
        crate::on_writer!(self, pool => {
            sqlx::query(
                "UPDATE leases SET expires_at = 0 WHERE name = $1 AND holder = $2 AND epoch = $3",
            )
            .bind(claim.name)
            .bind(claim.holder)
            .bind(claim.epoch)
            .execute(pool)
            .await?;
        });
        Ok(())
    }

    async fn lease_holder(&self, name: &str) -> Result<Option<(String, i64)>, StoreError> {
        let sql = format!(
            "SELECT holder, epoch FROM leases WHERE name = $1 AND expires_at > {}",
            now_sql(self)
        );
        Ok(crate::on_pool!(self, pool => {
            sqlx::query_as(&sql).bind(name).fetch_optional(pool).await?
        }))
    }

    async fn pending(
        &self,
        lane: &str,
        limit: i64,
        now: i64,
    ) -> Result<Vec<OutboxRow>, StoreError> {
        let rows: Vec<RowTuple> = crate::on_pool!(self, pool => {
            sqlx::query_as(PENDING).bind(lane).bind(now).bind(limit).fetch_all(pool).await?
        });
        Ok(rows.into_iter().map(row_of).collect())
    }

    async fn mark_published(
        &self,
        claim: &LeaseClaim<'_>,
        rows: &[OutboxRow],
        at: i64,
    ) -> Result<(), StoreError> {
        fenced!(self, claim, tx => {
            set_on_rows!(tx, "published_at", at, rows);
            for row in rows {
                if row.kind == "link" {
                    if let Some((domain, code)) = row.route_key.split_once('/') {
                        sqlx::query(
                            "UPDATE links SET published_version = $1, published_at = $2 \
                             WHERE domain = $3 AND code = $4 \
                             AND (published_version IS NULL OR published_version < $1)",
                        )
                        .bind(row.version)
                        .bind(at)
                        .bind(domain)
                        .bind(code)
                        .execute(&mut *tx)
                        .await?;
                    }
                }
            }
        });
        Ok(())
    }

    async fn retire_superseded(&self, claim: &LeaseClaim<'_>, at: i64) -> Result<u64, StoreError> {
        let done = fenced!(self, claim, tx => {
            sqlx::query(&format!(
                "UPDATE outbox SET published_at = $1 WHERE published_at IS NULL \
                 AND failed_at IS NULL AND kind IN ('link', 'deny') AND {SUPERSEDED}"
            ))
            .bind(at)
            .execute(&mut *tx)
            .await?
            .rows_affected()
        });
        Ok(done)
    }

    async fn record_failures(
        &self,
        claim: &LeaseClaim<'_>,
        failures: &[RowFailure],
        now: i64,
    ) -> Result<u64, StoreError> {
        let dead = fenced!(self, claim, tx => {
            let mut dead = 0u64;
            for f in failures {
                let failed_at = f.dead.then_some(now);
                dead += u64::from(f.dead);
                sqlx::query(
                    "UPDATE outbox SET attempts = attempts + 1, last_error = $1, \
                     next_attempt_at = $2, failed_at = $3 WHERE seq = $4",
                )
                .bind(&f.error)
                .bind(f.retry_at)
                .bind(failed_at)
                .bind(f.seq)
                .execute(&mut *tx)
                .await?;
            }
            dead
        });
        Ok(dead)
    }

    async fn note_push_failure(
        &self,
        claim: &LeaseClaim<'_>,
        rows: &[OutboxRow],
        error: &str,
    ) -> Result<(), StoreError> {
        fenced!(self, claim, tx => {
            set_on_rows!(tx, "last_error", error, rows);
        });
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
        let rows: Vec<Failed> = crate::on_pool!(self, pool => {
            sqlx::query_as(
                "SELECT seq, lane, kind, route_key, version, attempts, last_error, created_at, failed_at \
                 FROM outbox WHERE failed_at IS NOT NULL AND seq > $1 ORDER BY seq LIMIT $2",
            )
            .bind(after)
            .bind(limit)
            .fetch_all(pool)
            .await?
        });
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
        let done = crate::on_writer!(self, pool => {
            let q = match seq {
                Some(seq) => sqlx::query(
                    "UPDATE outbox SET failed_at = NULL, attempts = 0, next_attempt_at = 0 \
                     WHERE failed_at IS NOT NULL AND seq = $1",
                )
                .bind(seq),
                None => sqlx::query(
                    "UPDATE outbox SET failed_at = NULL, attempts = 0, next_attempt_at = 0 \
                     WHERE failed_at IS NOT NULL",
                ),
            };
            q.execute(pool).await?.rows_affected()
        });
        Ok(done)
    }

    async fn prune_delivered(&self, before: i64) -> Result<u64, StoreError> {
        // The newest delivered row of each key stays: it is what tells a late, older
        // row of that key from a new one (`retire_superseded`).
        let done = crate::on_writer!(self, pool => {
            sqlx::query(&format!(
                "DELETE FROM outbox WHERE published_at IS NOT NULL AND published_at < $1 \
                 AND {SUPERSEDED}"
            ))
            .bind(before)
            .execute(pool)
            .await?
            .rows_affected()
        });
        Ok(done)
    }

    async fn record_activation(
        &self,
        claim: &LeaseClaim<'_>,
        window_ms: i64,
    ) -> Result<ActivationPromise, StoreError> {
        super::activation::record(self, claim, window_ms).await
    }
}

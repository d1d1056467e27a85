//! The outbox as the publisher reads it, and the publisher's lease.

use super::{OutboxRow, OutboxStore, StoreError};
use crate::db::Db;
use async_trait::async_trait;

const LEASE: &str = "INSERT INTO leases (name, holder, expires_at) VALUES ($1, $2, $3) \
     ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at \
     WHERE leases.holder = excluded.holder OR leases.expires_at < $4 \
     RETURNING holder";

const PENDING: &str = "SELECT seq, lane, kind, route_key, version, payload, created_at \
     FROM outbox WHERE published_at IS NULL AND lane = $1 ORDER BY seq LIMIT $2";

#[async_trait]
impl OutboxStore for Db {
    async fn take_lease(
        &self,
        name: &str,
        holder: &str,
        until: i64,
        now: i64,
    ) -> Result<bool, StoreError> {
        let got: Option<String> = crate::on_writer!(self, pool => {
            sqlx::query_scalar(LEASE)
                .bind(name)
                .bind(holder)
                .bind(until)
                .bind(now)
                .fetch_optional(pool)
                .await?
        });
        Ok(got.as_deref() == Some(holder))
    }

    async fn release_lease(&self, name: &str, holder: &str) -> Result<(), StoreError> {
        crate::on_writer!(self, pool => {
            sqlx::query("DELETE FROM leases WHERE name = $1 AND holder = $2")
                .bind(name)
                .bind(holder)
                .execute(pool)
                .await?;
        });
        Ok(())
    }

    async fn pending(&self, limit: i64) -> Result<Vec<OutboxRow>, StoreError> {
        let mut rows = Vec::new();
        // The fast lane first, whole, then the normal lane in what room is left.
        for lane in ["fast", "normal"] {
            let room = limit - rows.len() as i64;
            if room <= 0 {
                break;
            }
            let batch: Vec<(i64, String, String, String, i64, String, i64)> = crate::on_pool!(self, pool => {
                sqlx::query_as(PENDING).bind(lane).bind(room).fetch_all(pool).await?
            });
            rows.extend(batch.into_iter().map(
                |(seq, lane, kind, route_key, version, payload, created_at)| OutboxRow {
                    seq,
                    lane,
                    kind,
                    route_key,
                    version,
                    payload,
                    created_at,
                },
            ));
        }
        Ok(rows)
    }

    async fn mark_published(&self, rows: &[OutboxRow], at: i64) -> Result<(), StoreError> {
        crate::on_writer!(self, pool => {
            let mut tx = pool.begin().await?;
            for chunk in rows.chunks(500) {
                let mut update = sqlx::QueryBuilder::new("UPDATE outbox SET published_at = ");
                update.push_bind(at).push(" WHERE seq IN (");
                let mut seqs = update.separated(", ");
                for row in chunk {
                    seqs.push_bind(row.seq);
                }
                update.push(")");
                update.build().execute(&mut *tx).await?;
            }
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
            tx.commit().await?;
        });
        Ok(())
    }

    async fn retire_superseded(&self, at: i64) -> Result<u64, StoreError> {
        let done = crate::on_writer!(self, pool => {
            sqlx::query(
                "UPDATE outbox SET published_at = $1 \
                 WHERE published_at IS NULL AND kind IN ('link', 'deny') AND EXISTS ( \
                   SELECT 1 FROM outbox AS newer WHERE newer.kind = outbox.kind \
                   AND newer.route_key = outbox.route_key AND newer.version > outbox.version \
                   AND newer.published_at IS NOT NULL)",
            )
            .bind(at)
            .execute(pool)
            .await?
            .rows_affected()
        });
        Ok(done)
    }

    async fn mark_failed(&self, rows: &[OutboxRow], error: &str) -> Result<(), StoreError> {
        crate::on_writer!(self, pool => {
            let mut tx = pool.begin().await?;
            for row in rows {
                sqlx::query(
                    "UPDATE outbox SET attempts = attempts + 1, last_error = $1 WHERE seq = $2",
                )
                .bind(error)
                .bind(row.seq)
                .execute(&mut *tx)
                .await?;
            }
            tx.commit().await?;
        });
        Ok(())
    }

    async fn segments_since(&self, since: i64) -> Result<Vec<String>, StoreError> {
        let payloads: Vec<String> = crate::on_pool!(self, pool => {
            sqlx::query_scalar(
                "SELECT payload FROM outbox WHERE kind = 'segment' AND created_at >= $1 ORDER BY seq",
            )
            .bind(since)
            .fetch_all(pool)
            .await?
        });
        Ok(payloads)
    }

    async fn oldest_pending(&self) -> Result<Option<i64>, StoreError> {
        let at: Option<i64> = crate::on_pool!(self, pool => {
            sqlx::query_scalar("SELECT MIN(created_at) FROM outbox WHERE published_at IS NULL")
                .fetch_one(pool)
                .await?
        });
        Ok(at)
    }
}

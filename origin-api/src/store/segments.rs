//! Segment allocation in SQL: one upsert advances the row and returns the new bound, so
//! two origins (or two tasks) can never receive overlapping ranges.

use super::{now_ms, SegmentSource, StoreError};
use crate::db::Db;
use async_trait::async_trait;
use std::ops::Range;

/// Ids per segment when a sequence is first used. Large enough that a bulk import of
/// 100,000 links touches the database for ids ten times; small enough that a restart
/// wastes little of a 3.5 × 10^12 space.
pub(crate) const DEFAULT_STEP: i64 = 10_000;

const ADVANCE: &str =
    "INSERT INTO id_segments (name, max_id, step, updated_at) VALUES ($1, $2, $2, $3) \
     ON CONFLICT (name) DO UPDATE SET max_id = id_segments.max_id + id_segments.step, \
     updated_at = excluded.updated_at RETURNING max_id, step";

const OUTBOX: &str = "INSERT INTO outbox (lane, kind, route_key, version, payload, created_at) \
     VALUES ('fast', 'segment', $1, $2, $3, $4)";

fn range_of(name: &str, max_id: i64, step: i64) -> Result<Range<u64>, StoreError> {
    let end = u64::try_from(max_id)
        .map_err(|_| StoreError::Corrupt(format!("id_segments {name}: max_id {max_id}")))?;
    let step = u64::try_from(step)
        .map_err(|_| StoreError::Corrupt(format!("id_segments {name}: step {step}")))?;
    let start = end.checked_sub(step).ok_or_else(|| {
        StoreError::Corrupt(format!("id_segments {name}: max_id {end} < step {step}"))
    })?;
    Ok(start..end)
}

fn payload(range: &Range<u64>, at: i64) -> String {
    serde_json::json!({ "start": range.start, "end": range.end, "at": at }).to_string()
}

#[async_trait]
impl SegmentSource for Db {
    async fn next_segment(&self, name: &str) -> Result<Range<u64>, StoreError> {
        let at = now_ms();
        let limit_sql = super::activation::reservation_limit_sql(self);
        // Both dialects accept `$n` placeholders in sqlx.
        crate::on_writer!(self, pool => {
            let mut tx = pool.begin().await?;
            let (max_id, step): (i64, i64) = sqlx::query_as(ADVANCE)
                .bind(name)
                .bind(DEFAULT_STEP)
                .bind(at)
                .fetch_one(&mut *tx)
                .await?;
            // The row is locked now: no promise is being recorded meanwhile. A segment
            // past what a running promise allows would let the edge answer 404 for a
            // link that exists; it waits until that promise runs out.
            if name == crate::LINK_SEQUENCE {
                let binding: Option<(i64, i64)> =
                    sqlx::query_as(&limit_sql).fetch_optional(&mut *tx).await?;
                if let Some((limit, ms_left)) = binding {
                    if max_id > limit {
                        let retry_after_s = u64::try_from(ms_left / 1000 + 1).unwrap_or(1);
                        tracing::warn!(limit, max_id, retry_after_s, "new ids held back: the edge's activation window does not cover them yet");
                        return Err(StoreError::ActivationFull { retry_after_s });
                    }
                }
            }
            let range = range_of(name, max_id, step)?;
            sqlx::query(OUTBOX)
                .bind(name)
                .bind(max_id)
                .bind(payload(&range, at))
                .bind(at)
                .execute(&mut *tx)
                .await?;
            tx.commit().await?;
            Ok(range)
        })
    }

    async fn segment_ceiling(&self, name: &str) -> Result<u64, StoreError> {
        let max_id: Option<i64> = crate::on_pool!(self, pool => {
            sqlx::query_scalar("SELECT max_id FROM id_segments WHERE name = $1")
                .bind(name)
                .fetch_optional(pool)
                .await?
        });
        u64::try_from(max_id.unwrap_or(0))
            .map_err(|_| StoreError::Corrupt(format!("id_segments {name}: max_id {max_id:?}")))
    }
}

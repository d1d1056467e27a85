//! Segment allocation in SQL: one upsert advances the row and returns the new bound, so
//! two origins (or two tasks) can never receive overlapping ranges.

use super::contract::{SegmentSource, StoreError};
use super::outbox::{insert_outbox, OutboxInsert};
use crate::db::Db;
use crate::model::sequence::domain_of_sequence;
use crate::model::time::now_ms;
use async_trait::async_trait;
use std::ops::Range;

/// Advances the row by the step asked for, which the row keeps: a domain's code space
/// is fixed once it holds a link, and until then its step follows its shape.
const ADVANCE: &str = include_str!("queries/advance_segment.sql");
/// A sequence's ceiling: the end of the last segment reserved.
const SEGMENT_CEILING: &str = include_str!("queries/segment_ceiling.sql");

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
    async fn next_segment(&self, name: &str, step: u64) -> Result<Range<u64>, StoreError> {
        let at = now_ms();
        let step = i64::try_from(step.max(1))
            .map_err(|_| StoreError::Corrupt(format!("id_segments {name}: step {step}")))?;
        let limit_sql = super::activation::reservation_limit_sql(self);
        let mut tx = self.begin_write().await?;
        let mut c = tx.conn();
        let (max_id, step): (i64, i64) = c
            .fetch_one(ADVANCE, &[name.into(), step.into(), at.into()])
            .await?;
        let range = range_of(name, max_id, step)?;
        // Only generated codes are dated by the edge; link ids are internal.
        if domain_of_sequence(name).is_none() {
            tx.commit().await?;
            return Ok(range);
        }
        // The row is locked now: no promise is being recorded meanwhile. A segment past
        // what a running promise allows would let the edge answer 404 for a link that
        // exists; it waits until that promise runs out.
        let binding: Option<(i64, i64)> = c.fetch_optional(&limit_sql, &[name.into()]).await?;
        if let Some((limit, ms_left)) = binding {
            if max_id > limit {
                let retry_after_s = u64::try_from(ms_left / 1000 + 1).unwrap_or(1);
                tracing::warn!(
                    limit,
                    max_id,
                    retry_after_s,
                    "new ids held back: the edge's activation window does not cover them yet"
                );
                return Err(StoreError::ActivationFull { retry_after_s });
            }
        }
        let payload = payload(&range, at);
        insert_outbox(
            &mut c,
            &[OutboxInsert {
                lane: "fast",
                kind: "segment",
                route_key: name,
                version: max_id,
                payload: &payload,
                created_at: at,
            }],
        )
        .await?;
        tx.commit().await?;
        Ok(range)
    }

    async fn segment_ceiling(&self, name: &str) -> Result<u64, StoreError> {
        let max_id: Option<(i64,)> = self.read_optional(SEGMENT_CEILING, &[name.into()]).await?;
        let max_id = max_id.map_or(0, |(m,)| m);
        u64::try_from(max_id)
            .map_err(|_| StoreError::Corrupt(format!("id_segments {name}: max_id {max_id}")))
    }
}

//! The system of record, behind traits with one implementation per database. Both pass
//! the same conformance tests (`tests/store_conformance.rs`).

mod segments;

use async_trait::async_trait;
use std::fmt::Debug;
use std::ops::Range;

/// Why the store could not do what was asked.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("database error: {0}")]
    Database(#[from] sqlx::Error),
    #[error("the database holds a value this version cannot read: {0}")]
    Corrupt(String),
}

/// Where segments of ids come from: one atomic advance of a named row per segment.
#[async_trait]
pub trait SegmentSource: Send + Sync + Debug + 'static {
    /// Reserves the next segment of the sequence `name`, writing its outbox row (fast
    /// lane: the edge's activation window needs it) in the same transaction.
    async fn next_segment(&self, name: &str) -> Result<Range<u64>, StoreError>;
}

/// Current time as Unix milliseconds, the unit of every time column.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or_default()
}

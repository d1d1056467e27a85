//! The outbox as operators see it, the one door to it: how far behind the publisher is,
//! the rows the edge refused until they were set aside, and putting them back in line.
//! The API's `/v1/admin/outbox`, the dashboard's `/admin` and `hop-origin outbox` all come
//! through here; the publisher itself works on the store's outbox directly.

use crate::db::Db;
use crate::error::AppError;
use crate::principal::Principal;
use crate::store::{self, OutboxStore};
pub use crate::store::{Backlog, FailedRow};

/// The most rows one page lists.
pub const MAX_FAILED_PAGE: u32 = 1_000;

/// What a key that is not an admin's is told.
const OPERATORS_ONLY: &str = "the outbox is for operators: use an admin key";

/// A page of rows set aside, oldest first.
#[derive(Debug)]
pub struct FailedPage {
    pub rows: Vec<FailedRow>,
    /// The `after` of the next page; `None` on the last.
    pub next_after: Option<i64>,
}

/// The outbox service.
#[derive(Debug)]
pub struct Outbox {
    db: Db,
}

impl Outbox {
    pub fn new(db: Db) -> Self {
        Outbox { db }
    }

    /// Unpublished rows per lane, with when the oldest of each was written.
    pub async fn backlog(&self, who: &Principal) -> Result<Vec<Backlog>, AppError> {
        who.require_operator(OPERATORS_ONLY)?;
        Ok(store::outbox::pending(&self.db).await?)
    }

    /// Up to `limit` (1 to [`MAX_FAILED_PAGE`]) rows in `state` after the one numbered
    /// `after`: only `failed` rows (set aside) are listed.
    pub async fn listed(
        &self,
        who: &Principal,
        state: &str,
        after: i64,
        limit: u32,
    ) -> Result<FailedPage, AppError> {
        who.require_operator(OPERATORS_ONLY)?;
        if state != "failed" {
            return Err(AppError::invalid(
                "state",
                format!("{state:?}: only `failed` rows are listed"),
            ));
        }
        self.failed(who, after, limit).await
    }

    /// Up to `limit` (1 to [`MAX_FAILED_PAGE`]) rows set aside after the one numbered
    /// `after`.
    pub async fn failed(
        &self,
        who: &Principal,
        after: i64,
        limit: u32,
    ) -> Result<FailedPage, AppError> {
        who.require_operator(OPERATORS_ONLY)?;
        if !(1..=MAX_FAILED_PAGE).contains(&limit) {
            return Err(AppError::invalid(
                "limit",
                format!("1 to {MAX_FAILED_PAGE}"),
            ));
        }
        let mut rows = self.db.failed_rows(after, i64::from(limit) + 1).await?;
        let next_after = (rows.len() > limit as usize).then(|| {
            rows.truncate(limit as usize);
            rows.last().map_or(0, |r| r.seq)
        });
        Ok(FailedPage { rows, next_after })
    }

    /// Puts the row numbered `seq` (every row, with `None`) set aside back in line for
    /// the publisher; how many.
    pub async fn retry(&self, who: &Principal, seq: Option<i64>) -> Result<u64, AppError> {
        who.require_operator(OPERATORS_ONLY)?;
        let n = self.db.retry_failed(seq).await?;
        tracing::info!(rows = n, by = %who.actor().to_column(), "outbox rows put back in line");
        Ok(n)
    }
}

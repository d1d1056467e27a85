//! The clicks as the API reads them: the statistics' freshness (`data_as_of`) needs this
//! process's recorder and the edge's lateness, and the background tasks write and fold
//! through the same parts.

use super::ingest::Clicks;
use super::recorder::Recorder;
use crate::db::Db;
use crate::metrics::Metrics;
use crate::store::{ClickStore, StoreError};
use std::sync::Arc;
use tokio::sync::watch;

#[derive(Debug)]
pub struct ClickService {
    /// The API's pool.
    db: Db,
    /// Ingestion and the rollups' bookkeeping.
    pub counts: Arc<Clicks>,
    /// This origin's own clicks, tallied before they are written.
    pub recorder: Arc<Recorder>,
    /// This process among the others on the same database (random, new at each start):
    /// it names its rows in `click_sources`.
    pub process: String,
}

impl ClickService {
    pub fn new(db: Db, counts: Arc<Clicks>, recorder: Arc<Recorder>, process: String) -> Self {
        ClickService {
            db,
            counts,
            recorder,
            process,
        }
    }

    /// `link`'s statistics over `range`, complete up to `as_of` ([`Self::data_as_of`]).
    pub async fn link_stats(
        &self,
        link: &crate::model::Link,
        range: super::stats::Range,
        as_of: i64,
    ) -> Result<crate::views::stats::LinkStats, crate::error::AppError> {
        super::stats::link_stats(&self.db, link, range, as_of).await
    }

    /// The totals and top links of `caller`'s owner over `range`, complete up to
    /// `as_of`.
    pub async fn owner_stats(
        &self,
        caller: &crate::model::Creator<'_>,
        range: super::stats::Range,
        as_of: i64,
    ) -> Result<crate::views::stats::OwnerStats, crate::error::AppError> {
        super::stats::owner_stats(&self.db, caller, range, as_of).await
    }

    /// Up to when the counts about to be read are complete: taken before they are read,
    /// so every click before it is in what the read sees.
    pub async fn data_as_of(&self) -> Result<i64, StoreError> {
        super::lateness::data_as_of(
            &self.db,
            &self.process,
            &self.recorder,
            &self.counts,
            crate::model::time::now_ms(),
        )
        .await
    }

    /// Writes this origin's own clicks in the background until `stop`, then what is
    /// still held.
    pub async fn record(&self, stop: watch::Receiver<bool>) {
        self.recorder.run(&self.counts, &self.db, stop).await;
    }

    /// Folds the edge's staged clicks into the rollups every second until `stop`.
    pub async fn fold(&self, stop: watch::Receiver<bool>) {
        super::fold::run(&self.db, &self.counts, stop).await;
    }

    /// Reports how far this process has written clicks, for every origin's
    /// `data_as_of`, until `stop`.
    pub async fn report(&self, metrics: &Metrics, stop: watch::Receiver<bool>) {
        super::lateness::run(
            &self.db,
            &self.process,
            &self.recorder,
            &self.counts,
            metrics,
            stop,
        )
        .await;
    }

    /// Forgets this process's reports once it has written everything it held, so no
    /// origin waits for it after it is gone.
    pub async fn forget_reports(&self) {
        let sources = super::lateness::sources_of(&self.process);
        let store: &dyn ClickStore = &self.db;
        if let Err(e) = store.forget_click_sources(&sources).await {
            tracing::warn!(error = %e, "forgetting this process's click reports failed");
        }
    }
}

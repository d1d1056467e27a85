//! The edge's staged clicks, folded into the rollups.
//!
//! Acknowledging a delivery from the edge costs one small write: its ids claimed and its
//! counts staged as one row ([`ClickStore::stage_clicks`]). Writing the rollups is the
//! expensive part (a row per link-hour, its dimensions merged), and at the seeds' peak
//! deliveries come twenty a second, each touching thousands of link-hours that the next
//! one touches again. So the rollups are written here, apart from the acknowledgements:
//! every [`FOLD_EVERY`], everything staged since the last fold is added in one
//! transaction per part, each link-hour written once however many deliveries touched
//! it. A fold that takes longer than the interval is followed at once
//! by the next, which then finds more staged and merges more of it: the work per fold
//! grows slower than the traffic it covers (a link-hour is written once a fold), so the
//! lag settles instead of growing (`scripts/bench-clicks`, part `tallies`).
//!
//! Exactly once: a staged row is counted by the transaction that deletes it. Several
//! origins fold side by side on PostgreSQL, each skipping the rows another holds.

use super::ingest::Clicks;
use crate::metrics::SourceLabel;
use crate::model::time::now_ms;
use crate::store::{ClickStore, StoreError, FOLD_PARTS};
use std::time::Duration;

/// How often staged clicks are folded into the rollups: what the stats lag behind the
/// edge's deliveries while the fold keeps up, and what a visit limit may overshoot by.
pub const FOLD_EVERY: Duration = Duration::from_secs(1);
/// Link-hours one part's fold sums before it writes them: bounds a fold's memory (tens
/// of MB for all parts) after a backlog. The seeds' peak touches about as many in a
/// minute (100,000 links, people and bots apart, in four parts).
pub const LINK_HOURS_PER_FOLD: usize = 64_000;

/// What [`Clicks::fold`] did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct FoldReport {
    /// Staged rows folded.
    pub rows: usize,
    /// Clicks they held.
    pub visits: u64,
    /// Link-hours written.
    pub link_hours: usize,
}

impl std::ops::AddAssign for FoldReport {
    fn add_assign(&mut self, other: FoldReport) {
        self.rows += other.rows;
        self.visits += other.visits;
        self.link_hours += other.link_hours;
    }
}

impl Clicks {
    /// Folds everything staged into the rollups, up to [`LINK_HOURS_PER_FOLD`]
    /// link-hours a transaction, and fences the links whose visit limit was reached.
    /// Stops at the first error: what is left stays staged for the next fold.
    pub async fn fold<S: ClickStore + ?Sized>(&self, store: &S) -> Result<FoldReport, StoreError> {
        // The parts side by side: they write disjoint rollup rows.
        let parts = (0..FOLD_PARTS).map(|part| self.fold_part(store, part));
        let mut report = FoldReport::default();
        for part in futures_util::future::join_all(parts).await {
            report += part?;
        }
        Ok(report)
    }

    async fn fold_part<S: ClickStore + ?Sized>(
        &self,
        store: &S,
        part: u16,
    ) -> Result<FoldReport, StoreError> {
        let mut report = FoldReport::default();
        loop {
            let folded = store
                .fold_staged(part, LINK_HOURS_PER_FOLD, now_ms(), self.referrer_cap)
                .await?;
            self.exhausted(&folded.exhausted).await;
            report += FoldReport {
                rows: folded.rows,
                visits: folded.visits,
                link_hours: folded.link_hours,
            };
            if !folded.more {
                return Ok(report);
            }
        }
    }
}

/// Folds every [`FOLD_EVERY`] until `stop` changes, then once more. A failed fold is
/// logged and tried again next time; its rows stay staged.
pub async fn run<S: ClickStore + ?Sized>(
    store: &S,
    clicks: &Clicks,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    let mut tick = tokio::time::interval(FOLD_EVERY);
    // A fold longer than the interval is followed at once by the next, not by a burst.
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        let stopping = tokio::select! {
            _ = tick.tick() => false,
            // The only change ever sent is the stop (or the sender went away).
            _ = stop.changed() => true,
        };
        // How far behind the rollups are: the oldest staged clicks, before this fold.
        match store.staged_since().await {
            Ok(oldest) => {
                clicks
                    .metrics
                    .click_ingest_delay
                    .get_or_create(&SourceLabel { source: "staged" })
                    .set(oldest.map_or(0.0, |t| (now_ms() - t).max(0) as f64 / 1_000.0));
            }
            Err(e) => tracing::warn!(error = %e, "reading the staged clicks' age failed"),
        }
        if let Err(e) = clicks.fold(store).await {
            tracing::warn!(error = %e, "folding staged clicks into the rollups failed; they stay staged");
        }
        if stopping {
            return;
        }
    }
}

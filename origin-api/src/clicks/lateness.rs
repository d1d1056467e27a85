//! How fresh the click statistics are: `data_as_of` in the stats API, and the processes'
//! reports it is computed from.
//!
//! Clicks reach the rollups late by design: the origin's own are tallied in memory for
//! 10 s to 5 minutes before they are written, and the edge's wait in a queue that holds
//! them for as long as the origin cannot take them. So the stats say up to when they are
//! complete, rather than pass old numbers off as live:
//!
//! - each process knows how far it has written its own tally ([`Recorder`]), and whether
//!   the last batch the edge sent it came late ([`Clicks::edge_late_since`]);
//! - every [`REPORT_EVERY`] it writes both to `click_sources`, one row per process and
//!   source, which only that process writes;
//! - `data_as_of` is the earliest of those that are outstanding, among the rows reported
//!   in the last [`STALE_AFTER_MS`] (a process that died takes its unwritten clicks with
//!   it, so its last row stops counting) and this process's own, read from memory.
//!
//! What it cannot see: clicks the edge's queue holds while it delivers nothing at all
//! (the consumer cannot reach the origin). The queue's own backlog and dead-letter queue
//! are Cloudflare's to report (`docs/runbook.md`).

use super::ingest::Clicks;
use super::recorder::Recorder;
use crate::metrics::{Metrics, SourceLabel};
use crate::store::{ClickStore, StoreError};
use std::time::Duration;

/// How often a process reports how far it has written.
pub const REPORT_EVERY: Duration = Duration::from_secs(10);
/// A report older than this is a process that stopped without saying so: ignored.
pub const STALE_AFTER_MS: i64 = 15 * 60_000;
/// A report older than this is deleted.
const FORGET_AFTER_MS: i64 = 86_400_000;

/// This process's rows in `click_sources`.
pub fn sources_of(process: &str) -> [String; 2] {
    [format!("origin:{process}"), format!("edge:{process}")]
}

/// This process's own view: for each of its sources, when its oldest unwritten click may
/// have been made (`None`: nothing outstanding).
fn own(recorder: &Recorder, clicks: &Clicks) -> [Option<i64>; 2] {
    [recorder.unwritten_since(), clicks.edge_late_since()]
}

/// Up to when (Unix ms, at most `now`) the rollups hold every click that reached an
/// origin: the earliest outstanding point among this process's own, the other
/// processes' recent reports, and the edge's clicks staged but not yet folded.
pub async fn data_as_of<S: ClickStore + ?Sized>(
    store: &S,
    process: &str,
    recorder: &Recorder,
    clicks: &Clicks,
    now: i64,
) -> Result<i64, StoreError> {
    let mine = sources_of(process);
    let others = store.click_sources(now - STALE_AFTER_MS).await?;
    let staged = store.staged_since().await?;
    Ok(others
        .into_iter()
        .filter(|(source, _)| !mine.contains(source))
        .filter_map(|(_, complete_to)| complete_to)
        .chain(own(recorder, clicks).into_iter().flatten())
        .chain(staged)
        .fold(now, i64::min))
}

/// Writes this process's report, and sets the origin's delay gauge.
pub async fn report<S: ClickStore + ?Sized>(
    store: &S,
    process: &str,
    recorder: &Recorder,
    clicks: &Clicks,
    metrics: &Metrics,
    now: i64,
) -> Result<(), StoreError> {
    let own = own(recorder, clicks);
    metrics
        .click_ingest_delay
        .get_or_create(&SourceLabel { source: "origin" })
        .set(own[0].map_or(0.0, |t| (now - t).max(0) as f64 / 1_000.0));
    let rows: Vec<(String, Option<i64>)> = sources_of(process).into_iter().zip(own).collect();
    store
        .report_click_sources(&rows, now, now - FORGET_AFTER_MS)
        .await
}

/// Reports every [`REPORT_EVERY`] until `stop` changes. A failed report is logged and
/// tried again next time: until then, other processes see this one's last report.
pub async fn run<S: ClickStore + ?Sized>(
    store: &S,
    process: &str,
    recorder: &Recorder,
    clicks: &Clicks,
    metrics: &Metrics,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    let mut tick = tokio::time::interval(REPORT_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = stop.changed() => break,
        }
        let now = crate::model::time::now_ms();
        if let Err(e) = report(store, process, recorder, clicks, metrics, now).await {
            tracing::warn!(error = %e, "reporting how far clicks are written failed");
        }
    }
}

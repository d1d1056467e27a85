//! The purge (docs/retention.md): so that the database does not silt up over years, one
//! origin at a time (under the lease `purge`) turns links expired longer than
//! `--purge-expired-after` and tombstones whose restore window has passed into bare
//! tombstones, and deletes click rollups older than `--click-rollup-retention`, at most
//! `--purge-rate` links a second in small transactions. Nothing records where it is:
//! what is left to do is what the indexes still find, so a restart resumes where it
//! stopped. Every origin also reads, once a minute, how many ids each sequence has given
//! out against how many stored links hold, and how full each domain's code space is.

use crate::cache::RedirectCache;
use crate::db::Db;
use crate::leased::Lease;
use crate::metrics::{DomainLabel, Metrics, ReasonLabel, SequenceLabel};
use crate::model::sequence::{domain_of_sequence, LINK_SEQUENCE};
use crate::model::time::now_ms;
use crate::store::purge::{self, Purgeable};
use crate::store::StoreError;
use shared::CodeSpace;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// The lease one origin holds to purge.
pub const LEASE: &str = "purge";
const LEASE_TTL_MS: i64 = 30_000;
/// How often the purge works (and its rate is counted over).
const TICK: Duration = Duration::from_secs(1);
/// How often the id gauges are read (each a count of the links).
const MEASURE_EVERY: u32 = 60;
/// Links per transaction: SQLite's one writer is held a few milliseconds per batch, so
/// creates and clicks wait no longer than that for it.
const BATCH: i64 = 100;
/// Click rollup rows deleted per link the rate allows: rows are small and carry no
/// publishing.
const CLICK_ROWS_PER_LINK: i64 = 10;

/// What the purge reads of the configuration.
#[derive(Debug, Clone)]
pub struct PurgeSettings {
    /// How long after its expiry a link is purged (`--purge-expired-after`); `None`: never.
    pub expired_after: Option<Duration>,
    /// How long a deleted link stays restorable (`--restore-window`): its payload goes after.
    pub restore_window: Duration,
    /// How long click rollups are kept (`--click-rollup-retention`); `None`: for ever.
    pub click_retention: Option<Duration>,
    /// Links purged per second at most (`--purge-rate`); 0: no purge.
    pub per_second: u32,
}

/// What one step purged.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Step {
    pub expired: usize,
    pub tombstones: usize,
    pub click_rows: u64,
}

#[derive(Debug)]
pub struct Purge {
    db: Db,
    /// Told of each purged link, as of any write.
    pub cache: RedirectCache,
    pub metrics: Metrics,
    pub settings: PurgeSettings,
}

fn ms(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

impl Purge {
    pub fn new(db: Db, cache: RedirectCache, metrics: Metrics, settings: PurgeSettings) -> Self {
        Purge {
            db,
            cache,
            metrics,
            settings,
        }
    }

    /// One second's work at `now`: up to `--purge-rate` links (expired ones first, then
    /// tombstones), a batch to a transaction, then click rollup rows.
    pub async fn step(&self, now: i64) -> Result<Step, StoreError> {
        let mut step = Step::default();
        let budget = i64::from(self.settings.per_second);
        let mut left = budget;
        if let Some(after) = self.settings.expired_after {
            let before = now.saturating_sub(ms(after));
            step.expired = self
                .purge(Purgeable::Expired, before, &mut left, now)
                .await?;
        }
        let before = now.saturating_sub(ms(self.settings.restore_window));
        step.tombstones = self
            .purge(Purgeable::Tombstones, before, &mut left, now)
            .await?;
        if let Some(keep) = self.settings.click_retention {
            let before = now.saturating_sub(ms(keep));
            step.click_rows =
                purge::purge_click_rollups(&self.db, before, budget * CLICK_ROWS_PER_LINK).await?;
            self.metrics.purged_click_rows.inc_by(step.click_rows);
        }
        Ok(step)
    }

    /// Purges `which` in batches while `left` allows; how many.
    async fn purge(
        &self,
        which: Purgeable,
        before: i64,
        left: &mut i64,
        now: i64,
    ) -> Result<usize, StoreError> {
        let mut done = 0;
        while *left > 0 {
            let batch = BATCH.min(*left);
            let purged = purge::purge_links(&self.db, which, before, batch, now).await?;
            for link in &purged {
                self.cache.fence(link).await;
            }
            let n = purged.len();
            self.metrics
                .purged_links
                .get_or_create(&ReasonLabel {
                    reason: which.as_str(),
                })
                .inc_by(u64::try_from(n).unwrap_or(0));
            done += n;
            let n = i64::try_from(n).unwrap_or(i64::MAX);
            *left -= n;
            if n < batch {
                break;
            }
            // Between batches, whatever else waits for the writer goes first.
            tokio::task::yield_now().await;
        }
        Ok(done)
    }

    /// Reads the id gauges: each sequence's high-water mark and the ids stored links
    /// hold, and each domain's code space used (its high-water mark over its size).
    pub async fn measure(&self) -> Result<(), StoreError> {
        let used = purge::id_use(&self.db).await?;
        let spaces: std::collections::HashMap<String, CodeSpace> =
            crate::store::domains::list(&self.db)
                .await?
                .into_iter()
                .map(|d| (d.domain, d.settings.codes))
                .collect();
        for (sequence, mark, in_use) in used.sequences {
            let label = SequenceLabel {
                sequence: sequence.clone(),
            };
            let gauge = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
            self.metrics
                .id_high_water
                .get_or_create(&label)
                .set(gauge(mark));
            self.metrics
                .ids_in_use
                .get_or_create(&label)
                .set(gauge(in_use));
            if sequence == LINK_SEQUENCE {
                continue;
            }
            let Some(domain) = domain_of_sequence(&sequence) else {
                continue;
            };
            let space = spaces.get(domain).copied().unwrap_or_default();
            #[allow(clippy::cast_precision_loss)] // a ratio: 53 bits are plenty
            let ratio = mark.min(space.size()) as f64 / space.size() as f64;
            self.metrics
                .code_space_used
                .get_or_create(&DomainLabel {
                    domain: domain.to_owned(),
                })
                .set(ratio);
        }
        Ok(())
    }

    /// Runs until `stop` turns true: every origin reads the id gauges once a minute;
    /// the one holding the lease purges each second.
    pub async fn run(self: Arc<Self>, stop: watch::Receiver<bool>) {
        let lease = Lease {
            name: LEASE,
            ttl_ms: LEASE_TTL_MS,
            tick: TICK,
        };
        let db = self.db.clone();
        let mut ticks: u32 = 0;
        crate::leased::run(&db, lease, self.settings.per_second > 0, stop, |held| {
            let purge = Arc::clone(&self);
            let measure = ticks.is_multiple_of(MEASURE_EVERY);
            ticks = ticks.wrapping_add(1);
            async move {
                if measure {
                    if let Err(e) = purge.measure().await {
                        tracing::warn!(error = %e, "reading the id gauges failed");
                    }
                }
                if !held {
                    return;
                }
                match purge.step(now_ms()).await {
                    Ok(s) if s != Step::default() => tracing::info!(
                        expired = s.expired,
                        tombstones = s.tombstones,
                        click_rows = s.click_rows,
                        "purged"
                    ),
                    Ok(_) => {}
                    Err(e) => tracing::warn!(error = %e, "purge step failed"),
                }
            }
        })
        .await;
    }
}

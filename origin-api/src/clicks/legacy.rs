//! Legacy misses: visits of a code Hop has no link for, on a domain moving from another
//! shortener, that were sent on to it (the domain's `legacy_url`). They are what is left
//! to import, so they are counted per code: from the edge's tallies (a row of a route
//! with no link, answered 302; nothing else the edge reports is one) and from this
//! origin's own redirects. Counts gather in memory and are written every
//! [`FLUSH_EVERY`]: a crash loses at most that much of a count that only needs to say
//! which codes are still visited, and roughly how often.

use crate::db::Db;
use crate::metrics::{Metrics, ResultLabel};
use crate::store::legacy_misses::{self, LegacyMiss};
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

/// How often held counts are written.
pub const FLUSH_EVERY: Duration = Duration::from_secs(10);
/// Distinct codes held between writes: a scan of made-up codes beyond this in one
/// interval is dropped (and counted), not held.
pub const MAX_HELD: usize = 10_000;

/// The counts not written yet, by route key (`domain/code`).
#[derive(Debug)]
pub struct LegacyMisses {
    held: Mutex<HashMap<String, LegacyMiss>>,
    metrics: Metrics,
}

impl LegacyMisses {
    pub fn new(metrics: Metrics) -> LegacyMisses {
        LegacyMisses {
            held: Mutex::new(HashMap::new()),
            metrics,
        }
    }

    /// Counts `n` visits of the route `domain/code` at `at` (Unix ms), `bot` or not.
    pub fn note(&self, route: &str, n: u64, bot: bool, at: i64) {
        let n = i64::try_from(n).unwrap_or(i64::MAX);
        let miss = LegacyMiss {
            code: String::new(),
            visits: n,
            bot_visits: if bot { n } else { 0 },
            first_seen_at: at,
            last_seen_at: at,
        };
        let noted = merge(&mut self.held(), route, &miss, MAX_HELD);
        self.metrics
            .legacy_misses
            .get_or_create(&ResultLabel {
                result: if noted { "noted" } else { "dropped" },
            })
            .inc_by(u64::try_from(n).unwrap_or_default());
    }

    fn held(&self) -> std::sync::MutexGuard<'_, HashMap<String, LegacyMiss>> {
        self.held.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Writes what is held; on failure it is held again (merged with what came since).
    pub async fn flush(&self, db: &Db) -> Result<(), crate::store::StoreError> {
        let taken = std::mem::take(&mut *self.held());
        if taken.is_empty() {
            return Ok(());
        }
        let mut rows: Vec<(String, LegacyMiss)> = taken
            .iter()
            .filter_map(|(route, m)| {
                let (domain, _) = route.split_once('/')?;
                Some((domain.to_owned(), m.clone()))
            })
            .collect();
        // By domain, so each domain's room is read once; by code, so that two writers
        // take the rows' locks in one order.
        rows.sort_by(|a, b| (&a.0, &a.1.code).cmp(&(&b.0, &b.1.code)));
        match legacy_misses::add(db, &rows).await {
            Ok(dropped) => {
                if dropped > 0 {
                    self.metrics
                        .legacy_misses
                        .get_or_create(&ResultLabel { result: "dropped" })
                        .inc_by(dropped);
                }
                Ok(())
            }
            Err(e) => {
                // Held again whatever came since; counted once already.
                let mut held = self.held();
                for (route, m) in &taken {
                    merge(&mut held, route, m, usize::MAX);
                }
                Err(e)
            }
        }
    }
}

/// Adds `miss` to `route`'s count in `held`, making one while `held` has fewer than
/// `max` routes; whether it was counted.
fn merge(
    held: &mut HashMap<String, LegacyMiss>,
    route: &str,
    miss: &LegacyMiss,
    max: usize,
) -> bool {
    if let Some(m) = held.get_mut(route) {
        m.visits = m.visits.saturating_add(miss.visits);
        m.bot_visits = m.bot_visits.saturating_add(miss.bot_visits);
        m.first_seen_at = m.first_seen_at.min(miss.first_seen_at);
        m.last_seen_at = m.last_seen_at.max(miss.last_seen_at);
        return true;
    }
    let Some((_, code)) = route.split_once('/') else {
        return false;
    };
    if held.len() >= max {
        return false;
    }
    held.insert(
        route.to_owned(),
        LegacyMiss {
            code: code.to_owned(),
            ..miss.clone()
        },
    );
    true
}

/// Writes the held counts every [`FLUSH_EVERY`] until `stop`, then once more.
pub async fn run(
    db: Db,
    misses: std::sync::Arc<LegacyMisses>,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    let mut tick = tokio::time::interval(FLUSH_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        let stopping = tokio::select! {
            _ = tick.tick() => false,
            _ = stop.changed() => true,
        };
        if let Err(e) = misses.flush(&db).await {
            tracing::warn!(error = %e, "writing legacy misses failed; they are held for the next try");
        }
        if stopping {
            return;
        }
    }
}

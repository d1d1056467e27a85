//! Click analytics: ingesting events exactly once into hourly rollups, the origin's own
//! redirects as a source of events, and the stats read back from the rollups.
//!
//! Events arrive from the edge (`POST /v1/edge/clicks`, posted by the worker's queue
//! consumer, which retries until the origin acknowledges) and from this origin's own
//! redirect path ([`recorder`]). Both go through [`Clicks::ingest`]: an event is counted
//! when its id is claimed for the first time, in the same transaction as the rollup
//! increments, so a retried or replayed batch counts nothing twice.

pub mod recorder;
pub mod stats;

use crate::metrics::Metrics;
use crate::store::{Attributed, ClickStore, LinkRef, StoreError};
use shared::clicks::{ClickEvent, ClickReceipt};
use shared::RouteKey;
use std::collections::HashMap;
use std::sync::Arc;

/// How far ahead of this origin's clock an event may be stamped (edge clocks differ a
/// little; more means a broken or lying sender).
pub const MAX_CLOCK_AHEAD_MS: i64 = 5 * 60 * 1000;
/// Route keys whose link is remembered, for attributing events without a read.
const LINK_REFS_HELD: usize = 100_000;

/// The ingestion side of analytics. Cheap to share; held in the app state.
pub struct Clicks {
    /// Route key → link. A route key names one link forever (codes are never reissued
    /// and owners never change), so entries never go stale; unknown keys are not kept,
    /// since the link may be created a moment later.
    links: quick_cache::sync::Cache<String, Arc<LinkRef>>,
    /// Events older than this are refused: their ids may have been forgotten.
    retention_ms: i64,
    metrics: Metrics,
}

impl std::fmt::Debug for Clicks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Clicks")
            .field("retention_ms", &self.retention_ms)
            .finish_non_exhaustive()
    }
}

impl Clicks {
    pub fn new(retention_h: u64, metrics: Metrics) -> Self {
        Clicks {
            links: quick_cache::sync::Cache::new(LINK_REFS_HELD),
            retention_ms: i64::try_from(retention_h.saturating_mul(3_600_000)).unwrap_or(i64::MAX),
            metrics,
        }
    }

    /// How long event ids are kept, in ms.
    pub fn retention_ms(&self) -> i64 {
        self.retention_ms
    }

    /// Counts the events of a batch that were never counted. Malformed events, events
    /// outside the window in which a replay can be recognised, and events about no known
    /// link are not counted; the receipt says how many of each.
    pub async fn ingest<S: ClickStore + ?Sized>(
        &self,
        store: &S,
        events: &[ClickEvent],
        now: i64,
    ) -> Result<ClickReceipt, StoreError> {
        let mut receipt = ClickReceipt::default();
        let oldest = now.saturating_sub(self.retention_ms);
        let newest = now.saturating_add(MAX_CLOCK_AHEAD_MS);
        let valid: Vec<&ClickEvent> = events
            .iter()
            .filter(|e| {
                let ok = e.problem().is_none() && (oldest..=newest).contains(&e.at);
                receipt.refused += u64::from(!ok);
                ok
            })
            .collect();
        let links = self.links_of(store, &valid).await?;
        let attributed: Vec<Attributed<'_>> = valid
            .iter()
            .filter_map(|e| {
                let link = links.get(e.link.as_str());
                receipt.unknown_links += u64::from(link.is_none());
                link.map(|l| Attributed {
                    link_id: l.link_id,
                    owner_id: &l.owner_id,
                    event: e,
                })
            })
            .collect();
        receipt.counted = store.record_clicks(&attributed, now).await?;
        receipt.duplicates = attributed.len() as u64 - receipt.counted;
        self.metrics.clicks_ingested(&receipt);
        Ok(receipt)
    }

    /// The links the events name, from memory or one read for the rest.
    async fn links_of<S: ClickStore + ?Sized>(
        &self,
        store: &S,
        events: &[&ClickEvent],
    ) -> Result<HashMap<String, Arc<LinkRef>>, StoreError> {
        let mut found = HashMap::new();
        let mut missing = Vec::new();
        for e in events {
            if found.contains_key(e.link.as_str()) {
                continue;
            }
            match self.links.get(e.link.as_str()) {
                Some(link) => {
                    found.insert(e.link.clone(), link);
                }
                None => {
                    if let Some(key) = RouteKey::parse(&e.link) {
                        if !missing.contains(&key) {
                            missing.push(key);
                        }
                    }
                }
            }
        }
        if !missing.is_empty() {
            for link in store.link_refs(&missing).await? {
                let key = format!("{}/{}", link.domain, link.code);
                let link = Arc::new(link);
                self.links.insert(key.clone(), link.clone());
                found.insert(key, link);
            }
        }
        Ok(found)
    }
}

/// A new event id: a random (version 4) UUID.
pub fn event_id() -> String {
    let mut b = [0u8; 16];
    // The OS's generator; should it ever fail, a time-based id is still unique enough
    // for counting (it is never a secret).
    if getrandom::getrandom(&mut b).is_err() {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default();
        b = nanos.to_le_bytes();
    }
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_ids_are_distinct_uuids() {
        let a = event_id();
        let b = event_id();
        assert_ne!(a, b);
        assert_eq!(a.len(), 36);
        assert_eq!(&a[14..15], "4");
        assert!(shared::clicks::MAX_EVENT_ID_LEN >= a.len());
    }
}

//! The edge's clicks arriving: each tally or event counted once, staged for the fold.

use crate::metrics::{Metrics, SourceLabel};
use crate::store::{Attributed, ClickDims, ClickStore, LinkRef, StoreError};
use shared::clicks::{ClickEvent, ClickReceipt};
use shared::tally::{ClickTally, TallyRow};
use shared::RouteKey;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

/// A batch from the edge whose oldest event is older than this on arrival came late:
/// the queue was holding clicks back.
pub(crate) const LATE_AFTER_MS: i64 = 60_000;
/// How far ahead of this origin's clock an event may be stamped (edge clocks differ a
/// little; more means a broken or lying sender).
pub const MAX_CLOCK_AHEAD_MS: i64 = 5 * 60 * 1000;
const HOUR_MS: i64 = 3_600_000;
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
    /// Distinct referrer hosts counted per link and hour.
    pub(super) referrer_cap: u32,
    pub(super) metrics: Metrics,
    /// When the oldest event of the last batch from the edge was made, if that batch
    /// came late ([`LATE_AFTER_MS`]); `i64::MAX` while batches come on time.
    edge_late_since: AtomicI64,
    /// The redirect cache, told at once of a link whose visit limit a write of clicks
    /// reached, so this origin's own redirect stops at once too.
    cache: Option<crate::cache::RedirectCache>,
    /// Visits of codes with no link sent on to a domain's old shortener.
    pub legacy: Arc<super::legacy::LegacyMisses>,
}

impl std::fmt::Debug for Clicks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Clicks")
            .field("retention_ms", &self.retention_ms)
            .finish_non_exhaustive()
    }
}

impl Clicks {
    pub fn new(retention_h: u64, referrer_cap: u32, metrics: Metrics) -> Self {
        Clicks {
            referrer_cap,
            links: quick_cache::sync::Cache::new(LINK_REFS_HELD),
            retention_ms: i64::try_from(retention_h.saturating_mul(3_600_000)).unwrap_or(i64::MAX),
            edge_late_since: AtomicI64::new(i64::MAX),
            cache: None,
            legacy: Arc::new(super::legacy::LegacyMisses::new(metrics.clone())),
            metrics,
        }
    }

    /// As it is, telling `cache` of the links whose visit limit is reached.
    pub fn fencing(self, cache: crate::cache::RedirectCache) -> Self {
        Clicks {
            cache: Some(cache),
            ..self
        }
    }

    /// The links a write of clicks exhausted: into the redirect cache, and counted.
    pub(crate) async fn exhausted(&self, links: &[crate::model::Link]) {
        for link in links {
            tracing::info!(route = %link.route_key(), "visit limit reached");
            if let Some(cache) = &self.cache {
                cache.fence(link).await;
            }
        }
    }

    /// While the edge's clicks arrive late, when the oldest of its last batch was made
    /// (Unix ms): what the rollups hold of the edge is complete to about then.
    pub fn edge_late_since(&self) -> Option<i64> {
        Some(self.edge_late_since.load(Ordering::Acquire)).filter(|&t| t != i64::MAX)
    }

    /// Distinct referrer hosts counted per link and hour.
    pub fn referrer_cap(&self) -> u32 {
        self.referrer_cap
    }

    /// How long event ids are kept, in ms.
    pub fn retention_ms(&self) -> i64 {
        self.retention_ms
    }

    /// Counts the clicks of a batch that were never counted: single events (one a click,
    /// as an edge before tallies sent them) and tallies (alike clicks, one id a window).
    /// Malformed ones, ones outside the window in which a replay can be recognised, and
    /// ones about no known link are not counted; the receipt says how many clicks of
    /// each. Counted clicks are staged, durably: they reach the rollups at the next
    /// [`fold`].
    pub async fn ingest<S: ClickStore + ?Sized>(
        &self,
        store: &S,
        events: &[ClickEvent],
        tallies: &[ClickTally],
        now: i64,
    ) -> Result<ClickReceipt, StoreError> {
        let mut receipt = ClickReceipt::default();
        let oldest = now.saturating_sub(self.retention_ms);
        let newest = now.saturating_add(MAX_CLOCK_AHEAD_MS);
        let in_window = |at: i64| (oldest..=newest).contains(&at);
        // An id once, even within a batch.
        let mut ids = HashSet::new();
        let events: Vec<&ClickEvent> = events
            .iter()
            .filter(|e| ids.insert(e.event_id.as_str()))
            .filter(|e| {
                let ok = e.problem().is_none() && in_window(e.at);
                receipt.refused += u64::from(!ok);
                ok
            })
            .collect();
        // A tally's rows are counted or refused one by one, under the tally's id.
        let mut rows: Vec<(&str, &TallyRow)> = Vec::new();
        let mut tallies_taken: Vec<&ClickTally> = Vec::new();
        for t in tallies {
            if !ids.insert(t.batch_id.as_str()) {
                continue;
            }
            if !in_window(t.at) {
                receipt.refused += t.visits();
                continue;
            }
            tallies_taken.push(t);
            for row in &t.rows {
                // A row's hour counts if any of it lies in the window: its start may be
                // up to an hour before the window's oldest instant, and is at most the
                // newest.
                let hour_in_window =
                    row.hour <= newest && row.hour.saturating_add(HOUR_MS - 1) >= oldest;
                if row.problem(&t.batch_id).is_some() || !hour_in_window {
                    receipt.refused += u64::from(row.n);
                } else {
                    rows.push((t.batch_id.as_str(), row));
                }
            }
        }
        let links = self
            .links_of(
                store,
                events
                    .iter()
                    .map(|e| e.link.as_str())
                    .chain(rows.iter().map(|(_, r)| r.link.as_str())),
            )
            .await?;
        let mut attributed: Vec<Attributed<'_>> = Vec::with_capacity(events.len() + rows.len());
        for e in &events {
            match links.get(e.link.as_str()) {
                Some(l) => attributed.push(Attributed {
                    link_id: l.link_id,
                    owner_id: &l.owner_id,
                    claim: &e.event_id,
                    dims: ClickDims::of(e),
                    n: 1,
                    person: None,
                }),
                None => receipt.unknown_links += 1,
            }
        }
        let mut legacy: Vec<(&str, &TallyRow)> = Vec::new();
        for (claim, row) in &rows {
            match links.get(row.link.as_str()) {
                Some(l) => attributed.push(Attributed {
                    link_id: l.link_id,
                    owner_id: &l.owner_id,
                    claim,
                    dims: ClickDims::of_row(row),
                    n: i64::from(row.n),
                    // Checked with the row (`TallyRow::problem`).
                    person: row
                        .person
                        .as_deref()
                        .and_then(shared::clicks::person::parse),
                }),
                None => {
                    receipt.unknown_links += u64::from(row.n);
                    // The only visits the edge reports that redirect, or show where they
                    // would go, without a record: a legacy code sent on (302), or shown
                    // behind its domain's interstitial (200).
                    if row.version.is_none()
                        && ((300..400).contains(&row.status) || row.status == 200)
                    {
                        legacy.push((claim, row));
                    }
                }
            }
        }
        // Every message is claimed, even one whose clicks all went elsewhere, so that a
        // tally's report of dropped clicks counts once.
        let claims: Vec<&str> = events
            .iter()
            .map(|e| e.event_id.as_str())
            .chain(tallies_taken.iter().map(|t| t.batch_id.as_str()))
            .collect();
        let made = events
            .iter()
            .map(|e| e.at)
            .chain(tallies_taken.iter().map(|t| t.at))
            .min()
            .unwrap_or(now);
        let fresh = store.stage_clicks(&claims, &attributed, made, now).await?;
        if !legacy.is_empty() {
            let sealed: HashMap<&str, i64> = tallies_taken
                .iter()
                .map(|t| (t.batch_id.as_str(), t.at))
                .collect();
            for (claim, row) in legacy.iter().filter(|(c, _)| fresh.contains(*c)) {
                let at = sealed.get(claim).copied().unwrap_or(row.hour);
                self.legacy.note(&row.link, u64::from(row.n), row.bot, at);
            }
        }
        for a in &attributed {
            let n = u64::try_from(a.n).unwrap_or_default();
            if fresh.contains(a.claim) {
                receipt.counted += n;
            } else {
                receipt.duplicates += n;
            }
        }
        let fresh_tallies = tallies_taken
            .iter()
            .filter(|t| fresh.contains(t.batch_id.as_str()));
        receipt.dropped = fresh_tallies.clone().map(|t| t.dropped).sum();
        for (t, health) in fresh_tallies
            .clone()
            .filter_map(|t| t.health.as_ref().map(|h| (t, h)))
        {
            self.metrics.edge_reported(health, t.at, now);
        }
        let messages = events
            .iter()
            .filter(|e| fresh.contains(e.event_id.as_str()))
            .count()
            + fresh_tallies.count();
        self.metrics.clicks_ingested(&receipt);
        self.metrics
            .edge_clicks_taken(messages as u64, receipt.counted, receipt.dropped);
        let made = events
            .iter()
            .map(|e| e.at)
            .chain(tallies_taken.iter().map(|t| t.at));
        if let Some(oldest) = made.min() {
            let late_by = now.saturating_sub(oldest).max(0);
            self.edge_late_since.store(
                if late_by > LATE_AFTER_MS {
                    oldest
                } else {
                    i64::MAX
                },
                Ordering::Release,
            );
            self.metrics
                .click_ingest_delay
                .get_or_create(&SourceLabel { source: "edge" })
                .set(late_by as f64 / 1_000.0);
        }
        Ok(receipt)
    }

    /// The links some route keys name, from memory or one read for the rest; unknown
    /// keys are absent.
    pub async fn links_of<'k, S: ClickStore + ?Sized>(
        &self,
        store: &S,
        routes: impl Iterator<Item = &'k str>,
    ) -> Result<HashMap<String, Arc<LinkRef>>, StoreError> {
        let mut found = HashMap::new();
        let mut missing = HashSet::new();
        for route in routes {
            if found.contains_key(route) || missing.contains(route) {
                continue;
            }
            match self.links.get(route) {
                Some(link) => {
                    found.insert(route.to_owned(), link);
                }
                None => {
                    missing.insert(route);
                }
            }
        }
        let keys: Vec<RouteKey> = missing.into_iter().filter_map(RouteKey::parse).collect();
        if !keys.is_empty() {
            for link in store.link_refs(&keys).await? {
                let key = format!("{}/{}", link.domain, link.code);
                let link = Arc::new(link);
                self.links.insert(key.clone(), link.clone());
                found.insert(key, link);
            }
        }
        Ok(found)
    }

    /// Counts what happened to clicks gathered in this process.
    pub fn counted_own(&self, counted: u64, unknown_links: u64) {
        self.metrics.clicks_ingested(&ClickReceipt {
            counted,
            unknown_links,
            ..ClickReceipt::default()
        });
    }
}

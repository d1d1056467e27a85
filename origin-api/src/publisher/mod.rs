//! The publisher: carries the outbox to the edge.
//!
//! - One leader at a time: a lease row (`leases.publisher`) taken for [`LEASE_TTL`] and
//!   renewed every [`RENEW_EVERY`]; a standby origin takes it once it lapses, and a
//!   stopping leader gives it up at once.
//! - It reads undelivered rows, the fast lane (denylist, activation meta) before the
//!   normal lane (records), coalesces them to the newest version per KV key, and pushes
//!   each lane as batches to a [`Sink`].
//! - A row is marked delivered only after the sink acknowledged its key, in one
//!   transaction with the link's `published_version`; a failed push is counted on its
//!   rows and retried with exponential backoff and jitter. Nothing is lost when the
//!   origin or the edge dies mid-batch: undelivered rows stay pending, and a replayed push
//!   is refused by the edge as already held, which counts as delivered.

pub mod sink;

use crate::metrics::Metrics;
use crate::store::{now_ms, OutboxRow, OutboxStore, StoreError};
use serde::Deserialize;
use shared::sync::{SyncItem, ACTIVATION_KEY, DENY_KEY};
use shared::EdgeRecord;
use sink::{Sink, SinkError};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// The lease row's name.
pub const LEASE: &str = "publisher";
/// How long a lease lasts without renewal: a dead leader's standby waits at most this.
pub const LEASE_TTL: Duration = Duration::from_secs(5);
/// How often the leader renews its lease.
pub const RENEW_EVERY: Duration = Duration::from_secs(1);
/// How often an idle leader looks for new rows.
pub const IDLE_POLL: Duration = Duration::from_millis(50);
/// Rows read per step.
pub const BATCH_ROWS: i64 = 1_000;
/// The longest wait between two failed pushes.
pub const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// The activation meta covers the segments reserved within this window: longer than a
/// segment's life (5 min) plus KV's propagation.
pub const ACTIVATION_WINDOW_MS: i64 = 10 * 60 * 1000;
/// How long after a link's expiry KV may drop its record (until then it answers 410).
pub const EXPIRED_KEPT_S: i64 = 30 * 24 * 3600;

/// Why a step failed.
#[derive(Debug, thiserror::Error)]
pub enum PublishError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Sink(#[from] SinkError),
}

/// The publisher of one origin process.
#[derive(Debug, Clone)]
pub struct Publisher {
    store: Arc<dyn OutboxStore>,
    sink: Arc<dyn Sink>,
    holder: String,
    metrics: Metrics,
}

impl Publisher {
    pub fn new(store: Arc<dyn OutboxStore>, sink: Arc<dyn Sink>, metrics: Metrics) -> Self {
        let mut bytes = [0u8; 8];
        let _ = getrandom::getrandom(&mut bytes);
        let holder = format!(
            "{}-{}",
            std::process::id(),
            bytes.iter().map(|b| format!("{b:02x}")).collect::<String>()
        );
        Publisher {
            store,
            sink,
            holder,
            metrics,
        }
    }

    /// Who this publisher is in the lease row.
    pub fn holder(&self) -> &str {
        &self.holder
    }

    /// Runs until `stop` turns true: stands by, leads when it holds the lease.
    pub async fn run(self, mut stop: watch::Receiver<bool>) {
        let mut renewed: Option<tokio::time::Instant> = None;
        let mut backoff = Duration::ZERO;
        loop {
            if *stop.borrow() {
                break;
            }
            let due = renewed.is_none_or(|at| at.elapsed() >= RENEW_EVERY);
            if due {
                let now = now_ms();
                let until = now + LEASE_TTL.as_millis() as i64;
                renewed = match self.store.take_lease(LEASE, &self.holder, until, now).await {
                    Ok(true) => Some(tokio::time::Instant::now()),
                    Ok(false) => None,
                    Err(e) => {
                        tracing::warn!("publisher lease: {e}");
                        None
                    }
                };
                self.metrics
                    .publisher_leader
                    .set(i64::from(renewed.is_some()));
            }
            let wait = if renewed.is_none() {
                RENEW_EVERY
            } else {
                match self.step().await {
                    Ok(0) => IDLE_POLL,
                    Ok(_) => {
                        backoff = Duration::ZERO;
                        Duration::ZERO
                    }
                    Err(e) => {
                        self.metrics.publish_failures.inc();
                        backoff = (backoff * 2).clamp(Duration::from_millis(100), MAX_BACKOFF);
                        tracing::warn!("publishing failed, retrying in about {backoff:?}: {e}");
                        crate::retry::jittered(backoff)
                    }
                }
            };
            if !wait.is_zero() {
                tokio::select! {
                    _ = tokio::time::sleep(wait) => {}
                    _ = stop.changed() => {}
                }
            }
        }
        if renewed.is_some() {
            if let Err(e) = self.store.release_lease(LEASE, &self.holder).await {
                tracing::warn!("releasing the publisher lease: {e}");
            }
            self.metrics.publisher_leader.set(0);
        }
    }

    /// Delivers one batch of rows; returns how many rows it delivered.
    pub async fn step(&self) -> Result<usize, PublishError> {
        let mut rows = self.store.pending(BATCH_ROWS).await?;
        if !rows.is_empty() && self.store.retire_superseded(now_ms()).await? > 0 {
            rows = self.store.pending(BATCH_ROWS).await?;
        }
        let lag_ms = rows
            .iter()
            .map(|r| r.created_at)
            .min()
            .map_or(0, |oldest| (now_ms() - oldest).max(0));
        self.metrics.publisher_lag_ms.set(lag_ms);
        if rows.is_empty() {
            return Ok(0);
        }
        let (fast, normal): (Vec<_>, Vec<_>) = rows.into_iter().partition(|r| r.lane == "fast");
        let delivered = fast.len() + normal.len();
        for lane in [fast, normal] {
            if !lane.is_empty() {
                self.deliver(lane).await?;
            }
        }
        Ok(delivered)
    }

    async fn deliver(&self, rows: Vec<OutboxRow>) -> Result<(), PublishError> {
        // The newest version per KV key; every row is covered by its key's push.
        let mut items: Vec<SyncItem> = Vec::new();
        let mut slot: HashMap<String, usize> = HashMap::new();
        let mut unknown = Vec::new();
        // Every segment row of a batch stands for the same meta: computed once.
        let mut activation: Option<SyncItem> = None;
        for row in &rows {
            let item = if row.kind == "segment" {
                if activation.is_none() {
                    activation = Some(self.activation().await?);
                }
                activation.clone()
            } else {
                item_of(row)
            };
            let Some(item) = item else {
                unknown.push(row.seq);
                continue;
            };
            match slot.get(&item.key) {
                Some(&i) if items[i].version >= item.version => {}
                Some(&i) => items[i] = item,
                None => {
                    slot.insert(item.key.clone(), items.len());
                    items.push(item);
                }
            }
        }
        if !unknown.is_empty() {
            tracing::error!(rows = ?unknown, "outbox rows of an unknown kind are skipped");
        }
        let reply = match self.sink.push(&items).await {
            Ok(reply) => reply,
            Err(e) => {
                self.store.mark_failed(&rows, &e.to_string()).await?;
                return Err(e.into());
            }
        };
        for refusal in &reply.refused {
            if refusal.held.is_none() {
                // Pushing the same bytes again cannot succeed: say so, and move on.
                tracing::error!(key = %refusal.key, reason = %refusal.reason, "the edge refused a value");
                self.metrics.publish_rejected.inc();
            }
        }
        self.metrics.published.inc_by(reply.written.len() as u64);
        self.store.mark_published(&rows, now_ms()).await?;
        Ok(())
    }

    /// `meta:activation` from the segments reserved within the activation window.
    async fn activation(&self) -> Result<SyncItem, StoreError> {
        #[derive(Deserialize)]
        struct Segment {
            start: u64,
            end: u64,
        }
        let now = now_ms();
        let segments: Vec<Segment> = self
            .store
            .segments_since(now - ACTIVATION_WINDOW_MS)
            .await?
            .iter()
            .filter_map(|p| serde_json::from_str(p).ok())
            .collect();
        let low = segments.iter().map(|s| s.start).min().unwrap_or(0);
        let high = segments.iter().map(|s| s.end).max().unwrap_or(0);
        // Room for segments other origins reserve after this meta is read.
        let headroom = segments.last().map_or(0, |s| s.end - s.start);
        let value = serde_json::json!({
            "low": low, "high": high, "headroom": headroom, "at": now / 1000,
        });
        Ok(SyncItem {
            key: ACTIVATION_KEY.to_owned(),
            value: value.to_string(),
            version: high,
            expiration: None,
        })
    }
}

/// The KV write a link or denylist row stands for (segment rows stand for the
/// activation meta, which needs the database).
fn item_of(row: &OutboxRow) -> Option<SyncItem> {
    let version = u64::try_from(row.version).unwrap_or_default();
    match row.kind.as_str() {
        "link" => {
            let expiration = EdgeRecord::from_json(&row.payload)
                .ok()
                .and_then(|r| r.expires_at)
                .map(|x| x + EXPIRED_KEPT_S)
                // KV refuses expirations less than a minute away.
                .filter(|at| *at > now_ms() / 1000 + 120);
            Some(SyncItem {
                key: format!("l:{}", row.route_key),
                value: row.payload.clone(),
                version,
                expiration,
            })
        }
        "deny" => Some(SyncItem {
            key: DENY_KEY.to_owned(),
            value: row.payload.clone(),
            version,
            expiration: None,
        }),
        _ => None,
    }
}

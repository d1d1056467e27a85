//! The publisher: carries the outbox to the edge.
//!
//! - **One leader, fenced.** A lease row (`leases.publisher`) is taken and renewed by a
//!   task of its own, every [`Timings::renew_every`], for [`Timings::lease_ttl`] by the
//!   database's clock; every takeover starts a new epoch. A push (one request) is
//!   started only if, on this process's monotonic clock, the lease will outlast the
//!   push's deadline ([`Timings::push_deadline`]) by a margin, and a push is abandoned at
//!   its deadline. A leader that took the lease over after it lapsed waits that deadline
//!   out before its first push, so a push of the old leader cannot land after it (one
//!   given the lease by a clean shutdown need not). Every write the publisher makes to
//!   the outbox commits only while the lease is still held at its epoch.
//! - **Two lanes, independent.** The fast lane (denylist, activation meta) and the
//!   normal lane (records) run as two loops under the same lease, each reading its own
//!   undelivered rows in `seq` order, coalescing them to the newest version per KV key,
//!   and pushing them in requests of at most the sink's size. A slow or failing normal
//!   lane never holds up a ban.
//! - **No poison pill.** The sink answers per item. A request the sink refuses for its
//!   content is split in halves until the item at fault stands alone. An item refused
//!   is retried on its own schedule, and set aside as failed after
//!   [`Timings::max_attempts`] (at once when pushing the same bytes cannot succeed),
//!   where `GET /v1/admin/outbox?state=failed` lists it and `hop-origin outbox retry`
//!   puts it back; the rows behind it go on.
//! - **Delivered means acknowledged.** A row is marked delivered only once the sink
//!   answered for its key (written, or already held at this version), in one
//!   transaction with the link's `published_version`. Nothing is lost when the origin or
//!   the edge dies mid-batch: undelivered rows stay pending, and a replayed push is
//!   refused by the edge as already held, which counts as delivered.

pub mod sink;

use crate::metrics::Metrics;
use crate::model::sequence::domain_of_sequence;
use crate::model::time::now_ms;
use crate::store::{LeaseClaim, OutboxRow, OutboxStore, RowFailure, StoreError};
use shared::sync::{activation_key, Refusal, SyncItem, SyncReply, DENY_KEY};
use shared::EdgeRecord;
use sink::{Sink, SinkError};
use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{watch, Mutex};
use tokio::time::Instant;

/// The lease row's name.
pub const LEASE: &str = "publisher";
/// Rows read per step of a lane.
pub const BATCH_ROWS: i64 = 1_000;
/// The activation meta covers the segments reserved within this window: longer than a
/// segment's life (5 min) plus KV's propagation.
pub const ACTIVATION_WINDOW_MS: i64 = 10 * 60 * 1000;
/// How long after a link's expiry KV may drop its record (until then it answers 410).
pub const EXPIRED_KEPT_S: i64 = 30 * 24 * 3600;
/// The longest KV key Cloudflare accepts, in bytes.
pub const MAX_KV_KEY_BYTES: usize = 512;

/// The publisher's clocks. The defaults are the production ones; tests shorten them.
#[derive(Debug, Clone, Copy)]
pub struct Timings {
    /// How long a lease lasts without renewal: a dead leader's standby waits this long.
    pub lease_ttl: Duration,
    /// How often the leader renews its lease.
    pub renew_every: Duration,
    /// The longest one push (one request to the sink) may take; it is abandoned then.
    pub push_deadline: Duration,
    /// A push starts only if the lease will still be held this long after its deadline.
    pub margin: Duration,
    /// How often an idle lane looks for new rows.
    pub idle_poll: Duration,
    /// The longest wait between two failed pushes of a lane.
    pub max_backoff: Duration,
    /// The first wait before an item the sink refused is pushed again (then doubling).
    pub item_retry_base: Duration,
    /// Refusals of one item before it is set aside as failed.
    pub max_attempts: i64,
    /// How often the activation meta is pushed again when nothing new was reserved, so
    /// that the edge's copy never grows older than its own promise while all is well.
    pub heartbeat: Duration,
}

impl Default for Timings {
    fn default() -> Self {
        Timings {
            lease_ttl: Duration::from_secs(10),
            renew_every: Duration::from_secs(1),
            push_deadline: sink::PUSH_DEADLINE,
            margin: Duration::from_secs(1),
            idle_poll: Duration::from_millis(50),
            max_backoff: Duration::from_secs(30),
            item_retry_base: Duration::from_secs(1),
            max_attempts: 8,
            heartbeat: Duration::from_secs(60),
        }
    }
}

impl Timings {
    /// Whether a push that starts now could still be running when a lease renewed at
    /// `valid_until` lapses.
    fn too_late(&self, valid_until: Instant) -> bool {
        Instant::now() + self.push_deadline + self.margin > valid_until
    }
}

/// Why a step failed.
#[derive(Debug, thiserror::Error)]
pub enum PublishError {
    #[error(transparent)]
    Store(StoreError),
    #[error(transparent)]
    Sink(#[from] SinkError),
    /// This process does not hold the lease (any more, or not long enough for a push).
    #[error("the publisher lease is not held")]
    LeaseLost,
}

impl From<StoreError> for PublishError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::LeaseLost => PublishError::LeaseLost,
            other => PublishError::Store(other),
        }
    }
}

/// The lease as this process holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Held {
    epoch: i64,
    /// When the lease could lapse, on this process's monotonic clock: the time the last
    /// successful renewal was *sent*, plus the lease's length.
    valid_until: Instant,
    /// Before this, a push of the previous holder may still land: wait.
    usable_from: Instant,
}

/// One lane's permission to push: the epoch it started under, checked against the lease
/// as the keeper last saw it before every request.
struct Fence<'a> {
    holder: &'a str,
    epoch: i64,
    lease: watch::Receiver<Option<Held>>,
    timings: Timings,
}

impl Fence<'_> {
    fn claim(&self) -> LeaseClaim<'_> {
        LeaseClaim {
            name: LEASE,
            holder: self.holder,
            epoch: self.epoch,
        }
    }

    /// Whether a push may start now.
    fn ensure(&self) -> Result<(), PublishError> {
        match *self.lease.borrow() {
            Some(h) if h.epoch == self.epoch && !self.timings.too_late(h.valid_until) => Ok(()),
            _ => Err(PublishError::LeaseLost),
        }
    }
}

/// The lanes, fast first.
const LANES: [&str; 2] = ["fast", "normal"];

/// The publisher of one origin process. Cheap to clone; clones are the same publisher.
#[derive(Debug, Clone)]
pub struct Publisher {
    store: Arc<dyn OutboxStore>,
    sink: Arc<dyn Sink>,
    holder: Arc<str>,
    metrics: Metrics,
    timings: Timings,
    /// The oldest undelivered row's age per lane, for `hop_publisher_lag_milliseconds`.
    lag_ms: Arc<[AtomicI64; 2]>,
    /// The lease as [`Publisher::step`] (without the keeper task) holds it.
    manual: Arc<Mutex<Option<Held>>>,
    /// When this process last delivered the activation meta, and under which epoch.
    meta_pushed: Arc<std::sync::Mutex<Option<(i64, Instant)>>>,
}

/// A holder id unique to this process: its pid and 64 random bits, or, should the
/// system refuse randomness, the clock's nanoseconds (two processes must never share
/// an id, or both would think they lead).
fn holder_id(random: Result<[u8; 8], getrandom::Error>) -> String {
    let bits = match random {
        Ok(bytes) => u64::from_le_bytes(bytes),
        Err(e) => {
            tracing::warn!("no randomness for the publisher's id ({e}); using the clock");
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or_default()
        }
    };
    format!("{}-{bits:016x}", std::process::id())
}

impl Publisher {
    pub fn new(store: Arc<dyn OutboxStore>, sink: Arc<dyn Sink>, metrics: Metrics) -> Self {
        Self::with_timings(store, sink, metrics, Timings::default())
    }

    /// As [`Publisher::new`], with other clocks.
    pub fn with_timings(
        store: Arc<dyn OutboxStore>,
        sink: Arc<dyn Sink>,
        metrics: Metrics,
        timings: Timings,
    ) -> Self {
        let random = crate::random_ids::random_bytes::<8>();
        Publisher {
            store,
            sink,
            holder: holder_id(random).into(),
            metrics,
            timings,
            lag_ms: Arc::new([AtomicI64::new(0), AtomicI64::new(0)]),
            manual: Arc::default(),
            meta_pushed: Arc::default(),
        }
    }

    /// Who this publisher is in the lease row.
    pub fn holder(&self) -> &str {
        &self.holder
    }

    /// Runs until `stop` turns true: the lease keeper and one loop per lane. Gives the
    /// lease up on the way out, once no push of its own is left in flight, so that the
    /// next holder may push at once.
    pub async fn run(self, stop: watch::Receiver<bool>) {
        let (lease_tx, lease_rx) = watch::channel(None);
        let (stop_keeper, keeper_stopped) = watch::channel(false);
        let keeper = tokio::spawn(self.clone().keep_lease(lease_tx, keeper_stopped));
        let lanes: Vec<_> = LANES
            .iter()
            .enumerate()
            .map(|(i, lane)| {
                tokio::spawn(
                    self.clone()
                        .run_lane(i, lane, lease_rx.clone(), stop.clone()),
                )
            })
            .collect();
        for lane in lanes {
            let _ = lane.await;
        }
        let _ = stop_keeper.send(true);
        let _ = keeper.await;
    }

    /// Takes and renews the lease, publishing what is held to the lanes.
    async fn keep_lease(self, lease: watch::Sender<Option<Held>>, mut stop: watch::Receiver<bool>) {
        let mut every = tokio::time::interval(self.timings.renew_every);
        every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = every.tick() => {}
                _ = stop.changed() => {}
            }
            if *stop.borrow() {
                break;
            }
            let previous = *lease.borrow();
            let next = self.renew(previous).await;
            lease.send_replace(next);
            self.metrics.publisher_leader.set(i64::from(
                next.is_some_and(|h| !self.timings.too_late(h.valid_until)),
            ));
        }
        let held = *lease.borrow();
        lease.send_replace(None);
        if let Some(h) = held {
            let claim = LeaseClaim {
                name: LEASE,
                holder: &self.holder,
                epoch: h.epoch,
            };
            if let Err(e) = self.store.release_lease(&claim).await {
                tracing::warn!("releasing the publisher lease: {e}");
            }
        }
        self.metrics.publisher_leader.set(0);
    }

    /// One renewal: what is held afterwards. A renewal that fails or does not answer
    /// keeps what was held, which then lapses on its own monotonic deadline.
    async fn renew(&self, previous: Option<Held>) -> Option<Held> {
        let sent = Instant::now();
        let ttl_ms = i64::try_from(self.timings.lease_ttl.as_millis()).unwrap_or(i64::MAX);
        let answer = tokio::time::timeout(
            self.timings.lease_ttl,
            self.store.take_lease(LEASE, &self.holder, ttl_ms),
        )
        .await;
        match answer {
            Ok(Ok(Some(lease))) => Some(match previous {
                Some(p) if p.epoch == lease.epoch => Held {
                    valid_until: sent + self.timings.lease_ttl,
                    ..p
                },
                _ => {
                    tracing::info!(holder = %self.holder, epoch = lease.epoch, clean = lease.clean, "publisher lease taken");
                    Held {
                        epoch: lease.epoch,
                        valid_until: sent + self.timings.lease_ttl,
                        // Taken over after it lapsed: a push of the last holder may still
                        // land until its deadline. Given up: the last holder had stopped.
                        usable_from: if lease.clean {
                            sent
                        } else {
                            sent + self.timings.push_deadline
                        },
                    }
                }
            }),
            Ok(Ok(None)) => None,
            Ok(Err(e)) => {
                tracing::warn!("renewing the publisher lease: {e}");
                previous
            }
            Err(_) => {
                tracing::warn!("renewing the publisher lease did not answer in time");
                previous
            }
        }
    }

    /// One lane's loop: pushes while the lease is usable, backs off on failures.
    async fn run_lane(
        self,
        index: usize,
        lane: &'static str,
        mut lease: watch::Receiver<Option<Held>>,
        mut stop: watch::Receiver<bool>,
    ) {
        let mut backoff = Duration::ZERO;
        loop {
            if *stop.borrow() {
                break;
            }
            let held = *lease.borrow();
            let wait = match held {
                None => None,
                Some(h) if Instant::now() < h.usable_from => {
                    Some(h.usable_from.saturating_duration_since(Instant::now()))
                }
                Some(h) if self.timings.too_late(h.valid_until) => None,
                Some(h) => {
                    let fence = Fence {
                        holder: &self.holder,
                        epoch: h.epoch,
                        lease: lease.clone(),
                        timings: self.timings,
                    };
                    Some(match self.step_lane(index, lane, &fence).await {
                        Ok(0) => self.timings.idle_poll,
                        Ok(_) => {
                            backoff = Duration::ZERO;
                            Duration::ZERO
                        }
                        Err(PublishError::LeaseLost) => self.timings.idle_poll,
                        Err(e) => {
                            self.metrics.publish_failures.inc();
                            backoff = (backoff * 2)
                                .clamp(Duration::from_millis(100), self.timings.max_backoff);
                            tracing::warn!(
                                lane,
                                "publishing failed, retrying in about {backoff:?}: {e}"
                            );
                            crate::retry::jittered(backoff)
                        }
                    })
                }
            };
            match wait {
                Some(d) if d.is_zero() => {}
                Some(d) => {
                    tokio::select! {
                        _ = tokio::time::sleep(d) => {}
                        _ = stop.changed() => {}
                    }
                }
                // Not leading: wait for the keeper to say otherwise.
                None => {
                    tokio::select! {
                        _ = lease.changed() => {}
                        _ = stop.changed() => {}
                    }
                }
            }
        }
    }

    /// One step of both lanes as the leader, for tests and tools that drive the
    /// publisher by hand: takes (or renews) the lease, waiting the push deadline out when
    /// newly taken, then delivers one batch per lane. Returns how many rows it handled;
    /// `LeaseLost` when another process leads.
    pub async fn step(&self) -> Result<usize, PublishError> {
        let mut manual = self.manual.lock().await;
        let held = self.renew(*manual).await.ok_or(PublishError::LeaseLost)?;
        *manual = Some(held);
        drop(manual);
        let wait = held.usable_from.saturating_duration_since(Instant::now());
        if !wait.is_zero() {
            tokio::time::sleep(wait).await;
        }
        let (_keep, lease) = watch::channel(Some(held));
        let fence = Fence {
            holder: &self.holder,
            epoch: held.epoch,
            lease,
            timings: self.timings,
        };
        let mut handled = 0;
        let mut failure = None;
        for (index, lane) in LANES.iter().enumerate() {
            match self.step_lane(index, lane, &fence).await {
                Ok(n) => handled += n,
                Err(e) => failure = failure.or(Some(e)),
            }
        }
        match failure {
            Some(e) => Err(e),
            None => Ok(handled),
        }
    }

    /// Delivers one batch of `lane`; returns how many rows it handled.
    async fn step_lane(
        &self,
        index: usize,
        lane: &str,
        fence: &Fence<'_>,
    ) -> Result<usize, PublishError> {
        let now = now_ms();
        let mut rows = self.store.pending(lane, BATCH_ROWS, now).await?;
        // KV checks no versions: a row whose key had a newer version delivered (a
        // transaction that committed late) must never be pushed. Only this batch's rows
        // are judged, so a round costs the same however many rows wait behind it.
        let mut retired = 0;
        if let (Some(first), Some(last)) = (rows.first(), rows.last()) {
            let mut gone = self
                .store
                .retire_superseded(&fence.claim(), lane, (first.seq, last.seq), now)
                .await?;
            if !gone.is_empty() {
                gone.sort_unstable();
                let before = rows.len();
                rows.retain(|r| gone.binary_search(&r.seq).is_err());
                // Rows of the range waiting out a retry were retired too; not counted.
                retired = before - rows.len();
            }
        }
        let lag = rows
            .iter()
            .map(|r| r.created_at)
            .min()
            .map_or(0, |oldest| (now - oldest).max(0));
        self.lag_ms[index].store(lag, Ordering::Relaxed);
        self.metrics.publisher_lag_ms.set(
            self.lag_ms
                .iter()
                .map(|l| l.load(Ordering::Relaxed))
                .max()
                .unwrap_or(0),
        );
        if rows.is_empty() {
            if retired > 0 {
                // The whole batch was stale: more may wait behind it.
                return Ok(retired);
            }
            if lane == "fast" && self.meta_due(fence.epoch) {
                self.heartbeat(fence).await?;
            }
            return Ok(0);
        }
        let started = std::time::Instant::now();
        let delivered = self.deliver(&rows, fence).await;
        if let Some(lane) = LANES.get(index) {
            self.metrics
                .publish_seconds
                .get_or_create(&crate::metrics::LaneLabel { lane })
                .observe(started.elapsed());
        }
        delivered?;
        Ok(rows.len() + retired)
    }

    /// Whether the meta should be pushed again: never yet under this epoch, or not for
    /// a heartbeat.
    fn meta_due(&self, epoch: i64) -> bool {
        let pushed = *self.meta_pushed.lock().unwrap_or_else(|e| e.into_inner());
        !pushed.is_some_and(|(e, at)| e == epoch && at.elapsed() < self.timings.heartbeat)
    }

    /// The heartbeat: every active domain's meta, the same numbers under a fresh
    /// promise, so no copy at the edge outlives its promise while all is well. It is
    /// done once the edge took any of them (one domain's meta refused over and over
    /// must not make the heartbeat spin); those it refused are sent again next beat.
    async fn heartbeat(&self, fence: &Fence<'_>) -> Result<(), PublishError> {
        let mut metas = Vec::new();
        for sequence in self.store.code_sequences().await? {
            metas.push(self.activation(fence, &sequence).await?);
        }
        let mut taken = metas.is_empty();
        for chunk in metas.chunks(self.sink.max_items().max(1)) {
            let reply = self.push_isolating(chunk, fence).await?;
            taken |= !reply.written.is_empty();
        }
        if taken {
            *self.meta_pushed.lock().unwrap_or_else(|e| e.into_inner()) =
                Some((fence.epoch, Instant::now()));
        }
        Ok(())
    }

    /// Pushes `rows` coalesced, request by request, and records what became of each.
    async fn deliver(&self, rows: &[OutboxRow], fence: &Fence<'_>) -> Result<(), PublishError> {
        // The newest version per KV key; every row is covered by its key's push.
        let mut items: Vec<SyncItem> = Vec::new();
        let mut slot: HashMap<String, usize> = HashMap::new();
        let mut keys: Vec<Option<String>> = Vec::with_capacity(rows.len());
        let mut unpublishable: Vec<RowFailure> = Vec::new();
        // Every segment row of a sequence in a batch stands for the same meta of its
        // domain: computed once.
        let mut activation: HashMap<&str, Option<SyncItem>> = HashMap::new();
        for row in rows {
            let item = if row.kind == "segment" {
                match activation.get(row.route_key.as_str()) {
                    Some(item) => item.clone(),
                    None => {
                        let item = match domain_of_sequence(&row.route_key) {
                            Some(_) => Some(self.activation(fence, &row.route_key).await?),
                            None => None,
                        };
                        activation.insert(&row.route_key, item.clone());
                        item
                    }
                }
            } else {
                item_of(row)
            };
            let item = match item {
                Some(item) if item.key.len() <= MAX_KV_KEY_BYTES => item,
                other => {
                    let error = match other {
                        Some(_) => "the KV key is longer than 512 bytes: KV cannot hold it",
                        None => "an outbox row of a kind this origin does not publish",
                    };
                    tracing::error!(seq = row.seq, key = %row.route_key, error, "set aside");
                    unpublishable.push(RowFailure {
                        seq: row.seq,
                        error: error.to_owned(),
                        retry_at: 0,
                        dead: true,
                    });
                    keys.push(None);
                    continue;
                }
            };
            keys.push(Some(item.key.clone()));
            match slot.get(&item.key) {
                Some(&i) if items[i].version >= item.version => {}
                Some(&i) => items[i] = item,
                None => {
                    slot.insert(item.key.clone(), items.len());
                    items.push(item);
                }
            }
        }
        if !unpublishable.is_empty() {
            let dead = self
                .store
                .record_failures(&fence.claim(), &unpublishable, now_ms())
                .await?;
            self.metrics.publish_dead.inc_by(dead);
        }
        for chunk in items.chunks(self.sink.max_items().max(1)) {
            let in_chunk: HashSet<&str> = chunk.iter().map(|i| i.key.as_str()).collect();
            let chunk_rows: Vec<(&OutboxRow, &str)> = rows
                .iter()
                .zip(&keys)
                .filter_map(|(row, key)| {
                    let key = key.as_deref()?;
                    in_chunk.contains(key).then_some((row, key))
                })
                .collect();
            let reply = match self.push_isolating(chunk, fence).await {
                Ok(reply) => reply,
                Err(PublishError::Sink(e)) => {
                    let rows: Vec<OutboxRow> =
                        chunk_rows.iter().map(|(r, _)| (*r).clone()).collect();
                    self.store
                        .note_push_failure(&fence.claim(), &rows, &e.to_string())
                        .await?;
                    return Err(e.into());
                }
                Err(e) => return Err(e),
            };
            self.record(&chunk_rows, &reply, fence).await?;
        }
        Ok(())
    }

    /// Pushes `items` in one request, or, when the sink refuses the request for its
    /// content, in halves until the item at fault stands alone and is refused by itself.
    fn push_isolating<'a>(
        &'a self,
        items: &'a [SyncItem],
        fence: &'a Fence<'a>,
    ) -> Pin<Box<dyn Future<Output = Result<SyncReply, PublishError>> + Send + 'a>> {
        Box::pin(async move {
            fence.ensure()?;
            let deadline = self.timings.push_deadline;
            match tokio::time::timeout(deadline, self.sink.push(items)).await {
                Err(_) => Err(SinkError::Deadline(deadline).into()),
                Ok(Ok(reply)) => Ok(reply),
                Ok(Err(e)) if e.blames_content() => match items {
                    [item] => Ok(SyncReply {
                        written: vec![],
                        refused: vec![Refusal {
                            key: item.key.clone(),
                            offered: item.version,
                            held: None,
                            reason: e.to_string(),
                            retry: true,
                        }],
                    }),
                    _ => {
                        let (a, b) = items.split_at(items.len() / 2);
                        let mut reply = self.push_isolating(a, fence).await?;
                        let more = self.push_isolating(b, fence).await?;
                        reply.written.extend(more.written);
                        reply.refused.extend(more.refused);
                        Ok(reply)
                    }
                },
                Ok(Err(e)) => Err(e.into()),
            }
        })
    }

    /// Marks the rows of one request delivered or failed, as the sink answered.
    async fn record(
        &self,
        rows: &[(&OutboxRow, &str)],
        reply: &SyncReply,
        fence: &Fence<'_>,
    ) -> Result<(), PublishError> {
        let written: HashSet<&str> = reply.written.iter().map(String::as_str).collect();
        let refused: HashMap<&str, &Refusal> =
            reply.refused.iter().map(|r| (r.key.as_str(), r)).collect();
        let now = now_ms();
        let mut delivered = Vec::new();
        let mut failures: Vec<RowFailure> = Vec::new();
        for (row, key) in rows {
            let (error, dead) = if written.contains(key) {
                delivered.push((*row).clone());
                continue;
            } else if let Some(r) = refused.get(key) {
                match r.held {
                    // A replay of what the edge has: delivered.
                    Some(held) if held == r.offered => {
                        delivered.push((*row).clone());
                        continue;
                    }
                    // Older rows of this key were retired before the push, so an edge
                    // ahead of the newest row means the database went back in time.
                    Some(held) => {
                        self.metrics.publish_edge_ahead.inc();
                        (format!(
                            "the edge holds version {held} of {key}, newer than this database's {}: \
                             was the database restored from a backup? Change the link (each change \
                             bumps its version) until it passes {held}, then retry this row",
                            r.offered
                        ), true)
                    }
                    None => {
                        self.metrics.publish_rejected.inc();
                        // Pushing the same bytes again cannot succeed unless KV failed.
                        (format!("the edge refused {key}: {}", r.reason), !r.retry)
                    }
                }
            } else {
                (format!("the edge did not answer for {key}"), false)
            };
            tracing::warn!(seq = row.seq, key, %error, "an outbox row was refused");
            let attempts = row.attempts + 1;
            let dead = dead || attempts >= self.timings.max_attempts;
            let wait = self
                .timings
                .item_retry_base
                .saturating_mul(1u32 << (attempts - 1).clamp(0, 16))
                .min(Duration::from_secs(300));
            let retry_at = now + i64::try_from(wait.as_millis()).unwrap_or(i64::MAX);
            failures.push(RowFailure {
                seq: row.seq,
                error,
                retry_at,
                dead,
            });
        }
        self.metrics.published.inc_by(reply.written.len() as u64);
        if !delivered.is_empty() {
            self.store
                .mark_published(&fence.claim(), &delivered, now)
                .await?;
        }
        if !failures.is_empty() {
            let dead = self
                .store
                .record_failures(&fence.claim(), &failures, now)
                .await?;
            self.metrics.publish_dead.inc_by(dead);
        }
        Ok(())
    }

    /// `meta:activation:{domain}` of the code sequence `sequence`, recorded first as the
    /// promise it makes (see `store::activation`): what was recorded may reach the edge,
    /// so it binds.
    async fn activation(&self, fence: &Fence<'_>, sequence: &str) -> Result<SyncItem, StoreError> {
        let domain = domain_of_sequence(sequence)
            .ok_or_else(|| StoreError::Corrupt(format!("{sequence} numbers no domain's codes")))?;
        let p = self
            .store
            .record_activation(&fence.claim(), sequence, ACTIVATION_WINDOW_MS)
            .await?;
        let meta = shared::activation::ActivationMeta {
            low: u64::try_from(p.low).unwrap_or_default(),
            high: u64::try_from(p.high).unwrap_or_default(),
            headroom: u64::try_from(p.headroom).unwrap_or_default(),
            at: p.at_ms.div_euclid(1000),
            window_s: u64::try_from(p.window_ms / 1000).unwrap_or_default(),
            v: u64::try_from(p.v).ok(),
            f: p.foreign_until_ms.map(|ms| ms.div_euclid(1000)),
        };
        Ok(SyncItem {
            key: activation_key(domain),
            value: meta.to_json(),
            version: u64::try_from(p.v).unwrap_or_default(),
            expiration: None,
        })
    }
}

/// The KV write a link, denylist or domain settings row stands for (segment rows stand for the
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
        "legacy" => Some(SyncItem {
            key: format!("{}{}", shared::sync::LEGACY_PREFIX, row.route_key),
            value: row.payload.clone(),
            version,
            expiration: None,
        }),
        "cfg" => Some(SyncItem {
            key: shared::config_key(&row.route_key),
            value: row.payload.clone(),
            version,
            expiration: None,
        }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holder_ids_differ_between_publishers_even_without_randomness() {
        let a = holder_id(Ok([1, 2, 3, 4, 5, 6, 7, 8]));
        let b = holder_id(Ok([8, 7, 6, 5, 4, 3, 2, 1]));
        assert_ne!(a, b);
        let c = holder_id(Err(getrandom::Error::UNSUPPORTED));
        let d = holder_id(Err(getrandom::Error::UNSUPPORTED));
        assert_ne!(c, d, "the clock stands in for randomness");
        assert!(c.starts_with(&format!("{}-", std::process::id())));
    }

    #[test]
    fn a_push_starts_only_if_the_lease_outlasts_its_deadline_and_the_margin() {
        let t = Timings::default();
        let now = Instant::now();
        assert!(!t.too_late(now + t.push_deadline + t.margin + Duration::from_millis(100)));
        assert!(t.too_late(now + t.push_deadline));
        // The defaults leave a renewal or two of slack.
        assert!(t.push_deadline + t.margin + t.renew_every * 2 < t.lease_ttl);
    }
}

//! `/metrics` in the Prometheus text format: what an operator watches.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use shared::Outcome;
use std::sync::Arc;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct OutcomeLabel {
    pub outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ResultLabel {
    pub result: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct LaneLabel {
    pub lane: &'static str,
}

/// Every metric the origin exports. Cloning shares the same series.
#[derive(Clone)]
pub struct Metrics {
    registry: Arc<Registry>,
    /// `hop_redirects_total`, one counter per [`Outcome`], by its discriminant, created
    /// up front: the redirect path then bumps an atomic, without the family's lock.
    redirects: Arc<[Counter]>,
    pub links_created: Counter,
    pub redirect_lookups: Counter,
    pub segments_fetched: Counter,
    pub ids_wasted: Counter,
    pub outbox_pending: Family<LaneLabel, Gauge>,
    /// Calls of `/v1/edge/resolve`.
    pub edge_resolves: Counter,
    /// KV writes the edge acknowledged.
    pub published: Counter,
    /// Pushes that failed (and were retried).
    pub publish_failures: Counter,
    /// Values the edge refused for a reason other than holding a newer version.
    pub publish_rejected: Counter,
    /// Outbox rows set aside as failed (dead letters).
    pub publish_dead: Counter,
    /// Rows the edge held a newer version of than this database (restored from a backup?).
    pub publish_edge_ahead: Counter,
    /// Outbox rows set aside as failed, now.
    pub outbox_failed: Gauge,
    /// 1 while this process holds the publisher lease.
    pub publisher_leader: Gauge,
    /// Age of the oldest undelivered outbox row, as the leader last saw it.
    pub publisher_lag_ms: Gauge,
    /// Click events ingested, by what became of them.
    pub clicks: Family<ResultLabel, Counter>,
    /// Clicks of this origin's own redirects dropped: the recorder's queue was full, or
    /// the database refused them for longer than the recorder retries.
    pub clicks_dropped: Counter,
    /// Link writes refused by a unique index other than the route key's.
    pub write_conflicts: Counter,
    /// Connections (and reconnections) of the listener for other origins' changes.
    pub freshness_connects: Counter,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Metrics")
    }
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::with_prefix("hop");
        let redirects = Family::<OutcomeLabel, Counter>::default();
        registry.register(
            "redirects",
            "Redirect requests answered by this origin, by outcome",
            redirects.clone(),
        );
        let redirect_lookups = Counter::default();
        registry.register(
            "redirect_lookups",
            "Links the redirect path read from the database (cache misses of codes that may exist)",
            redirect_lookups.clone(),
        );
        let links_created = Counter::default();
        registry.register(
            "links_created",
            "Links created through this origin",
            links_created.clone(),
        );
        let segments_fetched = Counter::default();
        registry.register(
            "id_segments_fetched",
            "Id segments reserved from the database",
            segments_fetched.clone(),
        );
        let ids_wasted = Counter::default();
        registry.register(
            "ids_wasted",
            "Ids never issued: the rest of segments abandoned for age",
            ids_wasted.clone(),
        );
        let outbox_pending = Family::<LaneLabel, Gauge>::default();
        registry.register(
            "outbox_pending",
            "Outbox rows not yet published, by lane",
            outbox_pending.clone(),
        );
        let redirects = Outcome::ALL
            .iter()
            .map(|o| {
                let label = OutcomeLabel { outcome: o.name() };
                redirects.get_or_create(&label).clone()
            })
            .collect();
        let edge_resolves = Counter::default();
        registry.register(
            "edge_resolves",
            "Links the edge asked the origin about (codes KV did not hold yet)",
            edge_resolves.clone(),
        );
        let published = Counter::default();
        registry.register(
            "published",
            "KV writes the edge acknowledged (written, not refused)",
            published.clone(),
        );
        let publish_failures = Counter::default();
        registry.register(
            "publish_failures",
            "Pushes to the edge that failed and will be retried",
            publish_failures.clone(),
        );
        let publish_rejected = Counter::default();
        registry.register(
            "publish_rejected",
            "Values the edge refused for a reason other than holding a newer version",
            publish_rejected.clone(),
        );
        let publish_dead = Counter::default();
        registry.register(
            "publish_dead",
            "Outbox rows set aside as failed after the edge refused them (GET /v1/admin/outbox?state=failed lists them)",
            publish_dead.clone(),
        );
        let publish_edge_ahead = Counter::default();
        registry.register(
            "publish_edge_ahead",
            "Rows the edge already held a newer version of than this database: restored from a backup?",
            publish_edge_ahead.clone(),
        );
        let outbox_failed = Gauge::default();
        registry.register(
            "outbox_failed",
            "Outbox rows set aside as failed, waiting for an operator",
            outbox_failed.clone(),
        );
        let publisher_leader = Gauge::default();
        registry.register(
            "publisher_leader",
            "1 while this process holds the publisher lease",
            publisher_leader.clone(),
        );
        let publisher_lag_ms = Gauge::default();
        registry.register(
            "publisher_lag_milliseconds",
            "Age of the oldest undelivered outbox row, as the leader last saw it",
            publisher_lag_ms.clone(),
        );
        let clicks = Family::<ResultLabel, Counter>::default();
        registry.register(
            "clicks",
            "Click events ingested, by result: counted, duplicate (a retry or replay), unknown_link, refused",
            clicks.clone(),
        );
        let clicks_dropped = Counter::default();
        registry.register(
            "clicks_dropped",
            "Clicks of this origin's own redirects dropped (recorder queue full, or the database failing)",
            clicks_dropped.clone(),
        );
        let write_conflicts = Counter::default();
        registry.register(
            "write_conflicts",
            "Link writes refused by a unique index other than (domain, code): an id handed out twice; each is a 500",
            write_conflicts.clone(),
        );
        let freshness_connects = Counter::default();
        registry.register(
            "freshness_connects",
            "Connections of the listener for other origins' changes (PostgreSQL); each forgets the redirect cache",
            freshness_connects.clone(),
        );
        Metrics {
            freshness_connects,
            publish_dead,
            publish_edge_ahead,
            outbox_failed,
            write_conflicts,
            clicks,
            clicks_dropped,
            edge_resolves,
            published,
            publish_failures,
            publish_rejected,
            publisher_leader,
            publisher_lag_ms,
            registry: Arc::new(registry),
            redirects,
            links_created,
            redirect_lookups,
            segments_fetched,
            ids_wasted,
            outbox_pending,
        }
    }
}

impl Metrics {
    /// Counts one redirect request answered with `outcome`.
    pub fn redirect_answered(&self, outcome: Outcome) {
        if let Some(counter) = self.redirects.get(outcome as usize) {
            counter.inc();
        }
    }

    /// Counts what became of a batch of click events.
    pub fn clicks_ingested(&self, receipt: &shared::clicks::ClickReceipt) {
        for (result, n) in [
            ("counted", receipt.counted),
            ("duplicate", receipt.duplicates),
            ("unknown_link", receipt.unknown_links),
            ("refused", receipt.refused),
        ] {
            if n > 0 {
                self.clicks.get_or_create(&ResultLabel { result }).inc_by(n);
            }
        }
    }

    /// The text exposition.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        if prometheus_client::encoding::text::encode(&mut out, &self.registry).is_err() {
            out.clear();
        }
        out
    }
}

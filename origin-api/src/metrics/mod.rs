//! `/metrics` in the Prometheus text format: what an operator watches. Every series is
//! listed in `docs/operating.md#metrics`; `deploy/prometheus/alerts.yml` and
//! `deploy/grafana/hop.json` are built on them, and a test checks both against a scrape.

mod histogram;

pub use histogram::{Histogram, BUCKETS};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use shared::Outcome;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

/// A gauge of seconds (an age, a delay).
pub type Seconds = Gauge<f64, AtomicU64>;

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

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RouteLabel {
    /// The route's template, `/v1/links/{domain}/{code}`: never the path itself, whose
    /// values would make a series per link.
    pub route: String,
    pub method: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ResponseLabel {
    pub route: String,
    pub method: String,
    pub status: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ReasonLabel {
    pub reason: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct SegmentLabel {
    /// `links`, or `code:{domain}`.
    pub sequence: String,
    /// `current` or `next` (the one fetched ahead).
    pub segment: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct SequenceLabel {
    pub sequence: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct SourceLabel {
    pub source: &'static str,
}

/// Where a visit's answer came from, for `hop_redirect_duration_seconds{path}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RedirectPath {
    /// Answered from what the process holds, without waiting.
    Memory = 0,
    /// It read the database (a cache miss, or the root's lookup).
    Database = 1,
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
    /// Time to answer a visit, by [`RedirectPath`].
    redirect_seconds: Arc<[Histogram; 2]>,
    /// Time to answer an API call, by route and method.
    pub api_seconds: Family<RouteLabel, Histogram>,
    /// API answers by route, method and status (409, 412, 428… are told apart here).
    pub api_responses: Family<ResponseLabel, Counter>,
    /// API calls refused, by the problem type of the answer.
    pub refusals: Family<ReasonLabel, Counter>,
    /// Creates answered from an earlier one with the same `Idempotency-Key`.
    pub idempotency_replays: Counter,
    /// Time of one push to the edge (a batch of one lane), whatever its outcome.
    pub publish_seconds: Family<LaneLabel, Histogram>,
    /// Numbers left to hand out per sequence, in the current and the prefetched segment.
    pub segment_remaining: Family<SegmentLabel, Gauge>,
    /// Numbers per segment of each sequence this process hands out from.
    pub segment_size: Family<SequenceLabel, Gauge>,
    /// Age of the oldest undelivered outbox row per lane (0 with none), read at scrape.
    pub outbox_oldest_age: Family<LaneLabel, Seconds>,
    /// How late clicks reach the rollups, by source: for `origin`, the age of the oldest
    /// click this process holds unwritten; for `edge`, how old the oldest event of the
    /// last batch was when it arrived.
    pub click_ingest_delay: Family<SourceLabel, Seconds>,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Metrics")
    }
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::with_prefix("hop");
        // One row per metric: its field, its name (after `hop_`) and its help text.
        let redirects: Family<OutcomeLabel, Counter> = metric(
            &mut registry,
            "redirects",
            "Redirect requests answered by this origin, by outcome",
        );
        let redirects = Outcome::ALL
            .iter()
            .map(|o| {
                let label = OutcomeLabel { outcome: o.name() };
                redirects.get_or_create(&label).clone()
            })
            .collect();
        let m = Metrics {
            redirects,
            redirect_lookups: metric(&mut registry, "redirect_lookups", "Links the redirect path read from the database (cache misses of codes that may exist)"),
            links_created: metric(&mut registry, "links_created", "Links created through this origin"),
            segments_fetched: metric(&mut registry, "id_segments_fetched", "Segments reserved from the database: of link ids, and of each domain's code numbers"),
            ids_wasted: metric(&mut registry, "ids_wasted", "Link ids and code numbers never issued: the rest of segments abandoned for age"),
            outbox_pending: metric(&mut registry, "outbox_pending", "Outbox rows not yet published, by lane"),
            edge_resolves: metric(&mut registry, "edge_resolves", "Links the edge asked the origin about (codes KV did not hold yet)"),
            published: metric(&mut registry, "published", "KV writes the edge acknowledged (written, not refused)"),
            publish_failures: metric(&mut registry, "publish_failures", "Pushes to the edge that failed and will be retried"),
            publish_rejected: metric(&mut registry, "publish_rejected", "Values the edge refused for a reason other than holding a newer version"),
            publish_dead: metric(&mut registry, "publish_dead", "Outbox rows set aside as failed after the edge refused them (GET /v1/admin/outbox?state=failed lists them)"),
            publish_edge_ahead: metric(&mut registry, "publish_edge_ahead", "Rows the edge already held a newer version of than this database: restored from a backup?"),
            outbox_failed: metric(&mut registry, "outbox_failed", "Outbox rows set aside as failed, waiting for an operator"),
            publisher_leader: metric(&mut registry, "publisher_leader", "1 while this process holds the publisher lease"),
            publisher_lag_ms: metric(&mut registry, "publisher_lag_milliseconds", "Age of the oldest undelivered outbox row, as the leader last saw it"),
            clicks: metric(&mut registry, "clicks", "Click events ingested, by result: counted, duplicate (a retry or replay), unknown_link, refused"),
            clicks_dropped: metric(&mut registry, "clicks_dropped", "Clicks of this origin's own redirects dropped (recorder queue full, or the database failing)"),
            write_conflicts: metric(&mut registry, "write_conflicts", "Link writes refused by a unique index other than (domain, code): an id handed out twice; each is a 500"),
            freshness_connects: metric(&mut registry, "freshness_connects", "Connections of the listener for other origins' changes (PostgreSQL); each forgets the redirect cache"),
            redirect_seconds: {
                let by_path: Family<PathLabel, Histogram> = metric(&mut registry, "redirect_duration_seconds", "Time to answer a visit, by path: memory (answered from what the process holds) or database (it read)");
                let memory = by_path.get_or_create(&PathLabel { path: "memory" }).clone();
                let database = by_path.get_or_create(&PathLabel { path: "database" }).clone();
                Arc::new([memory, database])
            },
            api_seconds: metric(&mut registry, "api_request_duration_seconds", "Time to answer an API call, by route template and method"),
            api_responses: metric(&mut registry, "api_responses", "API answers by route template, method and status"),
            refusals: metric(&mut registry, "api_refusals", "API calls refused, by the problem type of the answer (code-taken, banned, precondition-failed, rate-limited, …)"),
            idempotency_replays: metric(&mut registry, "idempotency_replays", "Creates answered from an earlier one with the same Idempotency-Key"),
            publish_seconds: metric(&mut registry, "publish_duration_seconds", "Time of one push to the edge (one lane's batch), whatever its outcome"),
            segment_remaining: metric(&mut registry, "id_segment_remaining", "Numbers this process can still hand out per sequence (links, code:{domain}), in the current and the prefetched (next) segment"),
            segment_size: metric(&mut registry, "id_segment_size", "Numbers per segment of each sequence this process hands out from: a segment is fetched ahead once a fifth of the current one is used, so current plus next below a tenth of it means fetching fails"),
            outbox_oldest_age: metric(&mut registry, "outbox_oldest_age_seconds", "Age of the oldest undelivered outbox row per lane, 0 with none (read when scraped)"),
            click_ingest_delay: metric(&mut registry, "click_ingest_delay_seconds", "How late clicks reach the rollups: origin, the oldest click this process holds unwritten; edge, the oldest event of the last batch when it arrived"),
            registry: Arc::new(registry),
        };
        // Series whose labels are known up front exist from the start, at zero: a
        // dashboard shows a flat line rather than nothing, and `rate()` sees the first
        // increase.
        for lane in ["fast", "normal"] {
            let lane = LaneLabel { lane };
            let _ = m.publish_seconds.get_or_create(&lane);
            let _ = m.outbox_pending.get_or_create(&lane);
            let _ = m.outbox_oldest_age.get_or_create(&lane);
        }
        for source in ["origin", "edge"] {
            let _ = m.click_ingest_delay.get_or_create(&SourceLabel { source });
        }
        for result in ["counted", "duplicate", "unknown_link", "refused"] {
            let _ = m.clicks.get_or_create(&ResultLabel { result });
        }
        m
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PathLabel {
    path: &'static str,
}

/// A new metric of type `M`, registered as `hop_<name>`.
fn metric<M>(registry: &mut Registry, name: &str, help: &str) -> M
where
    M: Default + Clone + prometheus_client::registry::Metric,
{
    let m = M::default();
    registry.register(name, help, m.clone());
    m
}

impl Metrics {
    /// Counts one redirect request answered with `outcome`.
    pub fn redirect_answered(&self, outcome: Outcome) {
        if let Some(counter) = self.redirects.get(outcome as usize) {
            counter.inc();
        }
    }

    /// Times one visit's answer.
    pub fn redirect_took(&self, path: RedirectPath, took: std::time::Duration) {
        if let Some(h) = self.redirect_seconds.get(path as usize) {
            h.observe(took);
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

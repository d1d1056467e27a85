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
/// A gauge of a fraction, 0 to 1.
pub type Ratio = Gauge<f64, AtomicU64>;

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
pub struct DomainLabel {
    pub domain: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct StatusLabel {
    pub status: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct KindLabel {
    pub kind: &'static str,
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
    /// Queue messages (tallies, or single events from an older edge) taken from the edge.
    pub edge_click_messages: Counter,
    /// Clicks counted from the edge.
    pub edge_clicks_received: Counter,
    /// Clicks the edge reported it dropped (its outbox full while the queue refused it).
    pub edge_clicks_dropped: Counter,
    /// The edge's reads of the denylist, by result: `sent` or `unchanged` (304).
    pub edge_denylist_reads: Family<ResultLabel, Counter>,
    /// Health reports taken from edge isolates (one a window of each).
    pub edge_health_reports: Counter,
    /// The edge's answers, by status, as its isolates reported them.
    pub edge_answers: Family<StatusLabel, Counter>,
    /// The edge's faults, by kind.
    pub edge_faults: Family<KindLabel, Counter>,
    /// The oldest denylist an edge location reported using within the last two minutes.
    pub edge_denylist_age: Seconds,
    /// Each location's oldest denylist age this minute and last, behind `edge_denylist_age`.
    edge_denylist_ages: Arc<std::sync::Mutex<DenylistAges>>,
    /// Clicks of this origin's own redirects dropped: the recorder's queue was full, or
    /// the database refused them for longer than the recorder retries.
    pub clicks_dropped: Counter,
    /// Visits of codes with no link sent on to a domain's old shortener, by what
    /// became of their count: `noted`, or `dropped` (too many codes at once).
    pub legacy_misses: Family<ResultLabel, Counter>,
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
    /// Webhook delivery attempts, by result: `delivered`, `failed`, `gone` (410).
    pub webhook_deliveries: Family<ResultLabel, Counter>,
    /// Age of the oldest event an active endpoint has yet to receive (0 with none).
    pub webhook_oldest_undelivered: Seconds,
    /// Endpoints disabled for failing too long or answering 410, now.
    pub webhook_endpoints_disabled: Gauge,
    /// 1 while this process holds the webhooks' lease.
    pub webhook_leader: Gauge,
    /// Bans the abuse desk placed for threat feeds' entries.
    pub feed_bans: Counter,
    /// Feed refreshes that could not read their feed.
    pub feed_refresh_failures: Counter,
    /// Live links the background re-check went through.
    pub rechecked_links: Counter,
    /// Reports taken by the public form.
    pub reports: Counter,
    /// Reports taken and not kept: their link had its fill of open reports.
    pub reports_not_kept: Counter,
    /// Generated codes the allocator passed over, by why: `reserved`, `operator_reserved`,
    /// `offensive` (a word list) or `imported` (an imported link holds it).
    pub codes_skipped: Family<ReasonLabel, Counter>,
    /// Inserts of a random code that another link already held (each is drawn again).
    pub random_code_collisions: Counter,
    /// Links the purge made bare tombstones, by why: `expired` or `tombstone`.
    pub purged_links: Family<ReasonLabel, Counter>,
    /// Click rollup rows the purge deleted.
    pub purged_click_rows: Counter,
    /// Each sequence's high-water mark: the end of the last segment reserved.
    pub id_high_water: Family<SequenceLabel, Gauge>,
    /// The ids of each sequence stored links hold.
    pub ids_in_use: Family<SequenceLabel, Gauge>,
    /// Each domain's code space used: its sequence's high-water mark over its size.
    pub code_space_used: Family<DomainLabel, Ratio>,
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
            edge_click_messages: metric(&mut registry, "edge_click_messages", "Queue messages of clicks taken from the edge, each counted once: tallies (an isolate's alike clicks over a window), or single events from an edge before tallies"),
            edge_clicks_received: metric(&mut registry, "edge_clicks_received", "Clicks counted from the edge: divided by hop_edge_click_messages_total, the clicks a queue message carries"),
            edge_clicks_dropped: metric(&mut registry, "edge_clicks_dropped", "Clicks the edge reported it had to drop: its outbox (1 MB an isolate) was full while the queue refused its messages"),
            edge_denylist_reads: metric(&mut registry, "edge_denylist_reads", "The edge's reads of GET /v1/edge/denylist, by result: sent (a new version) or unchanged (304): about one a second per location"),
            edge_health_reports: metric(&mut registry, "edge_health_reports", "Health reports taken from edge isolates, one a window (about a second) of each isolate that answered anything"),
            edge_answers: metric(&mut registry, "edge_answers", "The edge's answers by HTTP status, as its isolates reported them (each report counted once)"),
            edge_faults: metric(&mut registry, "edge_faults", "The edge's faults by kind: kv_read, denylist_unreadable, corrupt_record, origin_asked (a code KV lacks), origin_budget_spent, origin_failed, client_limited (one address over its own budget of lookups), queue_refused, other"),
            edge_denylist_age: metric(&mut registry, "edge_denylist_age_seconds", "The oldest denylist any edge location reported using within the last two minutes: how long before its report it last read one"),
            edge_denylist_ages: Arc::default(),
            clicks_dropped: metric(&mut registry, "clicks_dropped", "Clicks of this origin's own redirects dropped (recorder queue full, or the database failing)"),
            legacy_misses: metric(&mut registry, "legacy_misses", "Visits of codes with no link sent on to the domain's old shortener (legacy_url), by result: noted (counted per code for GET /v1/domains/{domain}/legacy-misses) or dropped (more codes at once than a flush holds, or past a domain's cap)"),
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
            webhook_deliveries: metric(&mut registry, "webhook_deliveries", "Webhook delivery attempts, by result: delivered (2xx), failed (retried on the schedule) or gone (410: the endpoint was disabled)"),
            webhook_oldest_undelivered: metric(&mut registry, "webhook_oldest_undelivered_seconds", "Age of the oldest webhook event an active endpoint has yet to receive, 0 with none (as the dispatcher last saw it)"),
            webhook_endpoints_disabled: metric(&mut registry, "webhook_endpoints_disabled", "Webhook endpoints disabled by the dispatcher (failing for --webhook-give-up-after, or 410) or by request"),
            webhook_leader: metric(&mut registry, "webhook_dispatcher_leader", "1 while this process holds the webhook dispatcher's lease"),
            feed_bans: metric(&mut registry, "feed_bans", "Bans the abuse desk placed for threat feeds' entries (a host a link points at, or a link's listed URL)"),
            feed_refresh_failures: metric(&mut registry, "feed_refresh_failures", "Threat feed refreshes that could not read their feed (its entries stay as they were)"),
            rechecked_links: metric(&mut registry, "rechecked_links", "Live links the background re-check compared with the feeds and the bans"),
            reports: metric(&mut registry, "reports", "Reports of abusive links taken by the public form"),
            reports_not_kept: metric(&mut registry, "reports_not_kept", "Reports taken by the public form and not kept: their link had 100 open reports already"),
            random_code_collisions: metric(&mut registry, "random_code_collisions", "Creates whose random code another link already held (docs/random-codes.md): each draws again, up to five times; the rate against hop_links_created_total is the birthday bound's"),
            purged_links: metric(&mut registry, "purged_links", "Links the purge made bare tombstones (docs/retention.md), by reason: expired (past --purge-expired-after) or tombstone (deleted, past --restore-window)"),
            purged_click_rows: metric(&mut registry, "purged_click_rows", "Click rollup rows the purge deleted (older than --click-rollup-retention)"),
            id_high_water: metric(&mut registry, "id_sequence_high_water", "Each id sequence's high-water mark (links, and code:{domain} per domain): the end of the last segment reserved, read once a minute"),
            ids_in_use: metric(&mut registry, "id_sequence_used", "The ids of each sequence that stored links hold (tombstones included), read once a minute: against hop_id_sequence_high_water, the ids wasted"),
            code_space_used: metric(&mut registry, "code_space_used_ratio", "Each domain's code space used: its code sequence's high-water mark over the number of codes of its shape, read once a minute"),
            codes_skipped: metric(&mut registry, "generated_codes_skipped", "Generated codes the allocator passed over (each spends a number of its domain's code space), by reason: reserved, operator_reserved, offensive (docs/words.md) or imported (an imported link holds it)"),
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
        for result in ["delivered", "failed", "gone"] {
            let _ = m.webhook_deliveries.get_or_create(&ResultLabel { result });
        }
        for reason in ["expired", "tombstone"] {
            let _ = m.purged_links.get_or_create(&ReasonLabel { reason });
        }
        for reason in ["reserved", "operator_reserved", "offensive", "imported"] {
            let _ = m.codes_skipped.get_or_create(&ReasonLabel { reason });
        }
        for result in ["sent", "unchanged"] {
            let _ = m.edge_denylist_reads.get_or_create(&ResultLabel { result });
        }
        // The series alerts divide by exist before the first report.
        for status in [302, 404, 503] {
            let _ = m.edge_answers.get_or_create(&StatusLabel { status });
        }
        for fault in shared::tally::Fault::ALL {
            let _ = m.edge_faults.get_or_create(&KindLabel {
                kind: fault.as_str(),
            });
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

    /// Counts what one batch from the edge brought: messages taken for the first time,
    /// the clicks counted from them, and the drops they reported.
    pub fn edge_clicks_taken(&self, messages: u64, clicks: u64, dropped: u64) {
        self.edge_click_messages.inc_by(messages);
        self.edge_clicks_received.inc_by(clicks);
        self.edge_clicks_dropped.inc_by(dropped);
    }

    /// Counts a read of the denylist by the edge: `unchanged` when answered 304.
    pub fn edge_denylist_read(&self, unchanged: bool) {
        let result = if unchanged { "unchanged" } else { "sent" };
        self.edge_denylist_reads
            .get_or_create(&ResultLabel { result })
            .inc();
    }

    /// Counts an edge isolate's health report, sealed at `sealed_ms` and received at
    /// `now_ms`. Its denylist's age counts only if the report is under two minutes old:
    /// a backlog delivered after an outage says how things were, not how they are.
    pub fn edge_reported(&self, health: &shared::tally::Health, sealed_ms: i64, now_ms: i64) {
        self.edge_health_reports.inc();
        for (&status, &n) in &health.answers {
            self.edge_answers
                .get_or_create(&StatusLabel { status })
                .inc_by(n);
        }
        for (&fault, &n) in &health.faults {
            self.edge_faults
                .get_or_create(&KindLabel {
                    kind: fault.as_str(),
                })
                .inc_by(n);
        }
        if now_ms.saturating_sub(sealed_ms) > DENYLIST_AGES_KEPT_MS {
            return;
        }
        let Ok(mut ages) = self.edge_denylist_ages.lock() else {
            return;
        };
        // An isolate that never read a denylist reports none: as old as can be.
        let age_ms = health.denylist_age_ms.unwrap_or(u64::MAX);
        let oldest = ages.report(health.colo.as_deref().unwrap_or(""), age_ms, now_ms);
        self.edge_denylist_age.set(if oldest == u64::MAX {
            f64::INFINITY
        } else {
            oldest as f64 / 1000.0
        });
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

/// How old a health report may be and still say how old its location's denylist is now.
const DENYLIST_AGES_KEPT_MS: i64 = 120_000;

/// Each edge location's oldest denylist, by minute: the oldest any isolate there
/// reported this minute, and last minute's. Two minutes, so that a location whose
/// isolates all read a fresh denylist again stops counting as stale within two minutes,
/// and one that stopped reporting is forgotten.
#[derive(Debug, Default)]
struct DenylistAges {
    by_colo: std::collections::HashMap<String, [(i64, u64); 2]>,
}

impl DenylistAges {
    /// Notes `age_ms` from `colo` at `now_ms`; the oldest reported anywhere within the
    /// last two minutes.
    fn report(&mut self, colo: &str, age_ms: u64, now_ms: i64) -> u64 {
        let minute = now_ms.div_euclid(60_000);
        // At most a few hundred locations; a flood of made-up names is cleared.
        if self.by_colo.len() >= 1_000 && !self.by_colo.contains_key(colo) {
            self.by_colo.clear();
        }
        let slots = self.by_colo.entry(colo.to_owned()).or_default();
        if slots[1].0 != minute {
            slots[0] = if slots[1].0 == minute - 1 {
                slots[1]
            } else {
                (0, 0)
            };
            slots[1] = (minute, 0);
        }
        slots[1].1 = slots[1].1.max(age_ms);
        self.by_colo.retain(|_, s| s[1].0 >= minute - 1);
        self.by_colo
            .values()
            .flat_map(|s| s.iter().filter(|(m, _)| *m >= minute - 1).map(|(_, a)| *a))
            .max()
            .unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::{DenylistAges, Metrics};
    use shared::tally::Health;

    #[test]
    fn a_late_report_counts_its_answers_but_not_its_denylist_age() {
        let metrics = Metrics::default();
        let now = 1_800_000_000_000;
        let stale = Health {
            answers: [(302, 5)].into_iter().collect(),
            denylist_age_ms: Some(300_000),
            ..Health::default()
        };
        // Sealed ten minutes ago: a backlog arriving after an outage.
        metrics.edge_reported(&stale, now - 600_000, now);
        assert_eq!(metrics.edge_denylist_age.get(), 0.0);
        assert!(metrics
            .encode()
            .contains("hop_edge_answers_total{status=\"302\"} 5"));
        metrics.edge_reported(&stale, now - 1_000, now);
        assert_eq!(metrics.edge_denylist_age.get(), 300.0);
    }

    #[test]
    fn the_oldest_denylist_counts_for_two_minutes_then_is_forgotten() {
        let mut ages = DenylistAges::default();
        let t0 = 1_800_000_000_000 / 60_000 * 60_000;
        assert_eq!(ages.report("FRA", 200, t0), 200);
        assert_eq!(ages.report("AMS", 95_000, t0 + 1_000), 95_000);
        assert_eq!(ages.report("FRA", 300, t0 + 2_000), 95_000);
        // AMS reads a fresh one: its stale report still counts the next minute.
        assert_eq!(ages.report("AMS", 100, t0 + 61_000), 95_000);
        // Two minutes on, the stale report is gone, and so is FRA, which stopped
        // reporting.
        assert_eq!(ages.report("AMS", 100, t0 + 121_000), 100);
        assert_eq!(ages.report("AMS", 50, t0 + 181_000), 100);
        assert_eq!(ages.report("AMS", 50, t0 + 241_000), 50);
    }
}

//! Click analytics on one database (`scripts/bench-clicks` runs it on SQLite and
//! PostgreSQL): how fast events go into the rollups, and how long the stats take to read
//! back once the rollups hold 10 million events' worth.
//!
//!     cargo run --release -p origin-api --example bench_clicks -- DATABASE_URL [EVENTS]
//!     cargo run --release -p origin-api --example bench_clicks -- DATABASE_URL tallies [SECONDS]
//!
//! `tallies`: the seeds' load as the edge sends it since issue 36 ([`seeds_load`]).
//!
//! DATABASE_URL must name an empty database (it is migrated here). The links, events and
//! rollups are synthetic but shaped like traffic: 1,000 links of one owner visited with a
//! Zipf distribution (the top link gets about 13%), 40 countries and 200 referrers also
//! Zipf-distributed, 15% bots, over 30 days.

use axum::http::HeaderValue;
use origin_api::cache::LinkTag;
use origin_api::clicks::recorder::{Recorder, Reduced};
use origin_api::clicks::stats::{link_stats, owner_stats, Range};
use origin_api::clicks::tally::Clicked;
use origin_api::clicks::Clicks;
use origin_api::db::Db;
use origin_api::metrics::Metrics;
use origin_api::model::time::now_ms;
use origin_api::owners::Owners;
use origin_api::store::sql::{values_placeholders, Arg};
use origin_api::store::{ClickDims, ClickStore, Increments, LinkRef};
use origin_api::views::stats::Granularity;
use shared::clicks::{ClickEvent, Device};
use shared::tally::{ClickTally, Tally, TallyRow};
use shared::RouteKey;
use std::sync::Arc;
use std::time::{Duration, Instant};

const LINKS: u64 = 1_000;
const OWNER: &str = "bench";
const HOUR_MS: i64 = 3_600_000;
const DAYS: i64 = 30;

#[path = "support/rng.rs"]
mod rng;
use rng::Rng;

/// Ranks 0..n with probability ∝ 1/(rank+1), by inverting the cumulative weights.
struct Zipf(Vec<f64>);

impl Zipf {
    fn new(n: usize) -> Self {
        let mut acc = 0.0;
        let mut cdf: Vec<f64> = (0..n)
            .map(|i| {
                acc += 1.0 / (i as f64 + 1.0);
                acc
            })
            .collect();
        for c in &mut cdf {
            *c /= acc;
        }
        Zipf(cdf)
    }
    fn sample(&self, rng: &mut Rng) -> usize {
        let u = rng.unit();
        self.0.partition_point(|c| *c < u).min(self.0.len() - 1)
    }
}

struct Traffic {
    rng: Rng,
    links: Zipf,
    link_count: usize,
    countries: Zipf,
    referrers: Zipf,
    serial: u64,
}

impl Traffic {
    fn new(seed: u64) -> Self {
        Traffic::over(seed, LINKS as usize)
    }

    /// Traffic over `links` links (`link-0000` on).
    fn over(seed: u64, links: usize) -> Self {
        Traffic {
            rng: Rng(seed),
            links: Zipf::new(links),
            link_count: links,
            countries: Zipf::new(40),
            referrers: Zipf::new(200),
            serial: 0,
        }
    }

    /// One event at a time in `[from, from + span)`.
    fn event(&mut self, from: i64, span: i64) -> ClickEvent {
        self.serial += 1;
        let link = self.links.sample(&mut self.rng);
        let country = self.countries.sample(&mut self.rng);
        let bot = self.rng.unit() < 0.15;
        let referrer = (self.rng.unit() < 0.6).then(|| {
            let r = self.referrers.sample(&mut self.rng);
            format!("site{r}.example")
        });
        let device = [
            Device::Mobile,
            Device::Desktop,
            Device::Tablet,
            Device::Other,
        ][(self.rng.next() % 4) as usize];
        debug_assert!(link < self.link_count);
        ClickEvent {
            event_id: format!("bench-{:x}-{}", self.rng.next(), self.serial),
            link: format!("s.example/link-{link:04}"),
            version: Some(1),
            at: from + (self.rng.next() % span as u64) as i64,
            country: Some(format!(
                "{}{}",
                char::from(b'A' + (country / 26) as u8),
                char::from(b'A' + (country % 26) as u8)
            )),
            referrer_host: referrer,
            device,
            bot,
            scanner: None,
            status: if self.rng.unit() < 0.01 { 410 } else { 302 },
            variant: None,
        }
    }
}

async fn seed_links(db: &Db, links: u64) {
    let now = now_ms();
    let codes: Vec<(String, String)> = (0..links)
        .map(|i| (format!("link-{i:04}"), format!("https://dest.example/{i}")))
        .collect();
    let mut w = db.writer().await.expect("writer");
    // 9 values a row: a few hundred rows a statement stay under SQLite's bound.
    for (n, chunk) in codes.chunks(500).enumerate() {
        let sql = format!(
            "INSERT INTO links (link_id, domain, code, target_url, owner_id, status, code_kind, created_at, updated_at) \
             VALUES {}",
            values_placeholders(1, chunk.len(), 9)
        );
        let args: Vec<Arg<'_>> = chunk
            .iter()
            .enumerate()
            .flat_map(|(i, (code, target))| {
                [
                    ((n * 500 + i) as i64 + 1).into(),
                    "s.example".into(),
                    code.into(),
                    target.into(),
                    OWNER.into(),
                    "active".into(),
                    "custom".into(),
                    now.into(),
                    now.into(),
                ]
            })
            .collect();
        w.conn().execute(&sql, &args).await.expect("seed links");
    }
    // The planner's statistics, as a database that has been running has them: without,
    // PostgreSQL reads a new table's links by scanning it.
    w.conn()
        .execute("ANALYZE links", &[])
        .await
        .expect("analyze");
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

#[tokio::main]
async fn main() {
    let mut args = std::env::args().skip(1);
    let url = args
        .next()
        .expect("usage: bench_clicks DATABASE_URL [EVENTS]");
    let part = args.next();
    let db = Db::connect(&url).await.expect("connect");
    db.migrate().await.expect("migrate");
    if part.as_deref() == Some("tallies") {
        let seconds = args.next().map_or(60, |n| n.parse().expect("SECONDS"));
        seeds_load(&db, seconds).await;
        db.close().await;
        return;
    }
    let rollup_events: u64 = part.map_or(10_000_000, |n| n.parse().expect("EVENTS"));
    seed_links(&db, LINKS).await;
    // A year of retention: the synthetic month is all acceptable.
    let clicks = Clicks::new(24 * 365, 100, Metrics::default());
    let now = now_ms();
    let kind = db.kind();

    // 1. Ingestion as the edge delivers it: queue batches of 100 (and 1,000), each event
    // id claimed; then the same batches again, all duplicates.
    for batch in [100usize, 1_000] {
        let mut traffic = Traffic::new(batch as u64);
        let batches: Vec<Vec<ClickEvent>> = (0..200_000 / batch)
            .map(|_| {
                (0..batch)
                    .map(|_| traffic.event(now - HOUR_MS, HOUR_MS))
                    .collect()
            })
            .collect();
        for (label, pass) in [("new", 0), ("replayed", 1)] {
            let started = Instant::now();
            let mut counted = 0;
            for b in &batches {
                counted += clicks
                    .ingest(&db, b, &[], now)
                    .await
                    .expect("ingest")
                    .counted;
            }
            // Into the rollups: acknowledged (staged), then folded.
            clicks.fold(&db).await.expect("fold");
            let secs = started.elapsed().as_secs_f64();
            assert_eq!(counted, if pass == 0 { 200_000 } else { 0 });
            println!(
                "| {kind} | edge batches of {batch}, {label} | {:.0} events/s |",
                200_000.0 / secs
            );
        }
    }
    // The origin's own clicks: counted by the redirect path, tallied, written together.
    let links: Vec<LinkRef> = {
        let keys: Vec<RouteKey> = (0..LINKS)
            .map(|i| RouteKey::new("s.example", format!("link-{i:04}")).expect("route"))
            .collect();
        let mut refs = db.link_refs(&keys).await.expect("links");
        refs.sort_by(|a, b| a.code.cmp(&b.code));
        refs
    };
    let owners = Owners::default();
    let tags: std::collections::HashMap<String, LinkTag> = links
        .iter()
        .map(|l| {
            let tag = LinkTag {
                id: l.link_id,
                owner: owners.intern(&l.owner_id),
            };
            (format!("{}/{}", l.domain, l.code), tag)
        })
        .collect();
    let recorder = Recorder::new(true, 96 << 20, owners, Metrics::default());
    let mut traffic = Traffic::new(7);
    let agents = [
        "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36",
        "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1",
        "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
    ];
    let started = Instant::now();
    for i in 0..200_000u32 {
        let e = traffic.event(now - HOUR_MS, HOUR_MS);
        let visitor = Reduced::of(
            HeaderValue::from_str(agents[i as usize % 3]).ok().as_ref(),
            e.referrer_host
                .and_then(|h| HeaderValue::from_str(&format!("https://{h}/page")).ok())
                .as_ref(),
            e.country
                .and_then(|c| HeaderValue::from_str(&c).ok())
                .as_ref(),
        );
        recorder.record(Clicked::Link(tags[&e.link]), e.at, e.status, visitor);
        if i % 50_000 == 49_999 {
            recorder.flush(&clicks, &db).await;
        }
    }
    println!(
        "| {kind} | origin's own clicks, tallied and written every 50,000 | {:.0} clicks/s |",
        200_000.0 / started.elapsed().as_secs_f64()
    );

    // 2. A month of traffic into the rollups, in large batches (this is set-up, not a
    // figure: it is the rollups, not the path they took, that the queries read).
    let mut traffic = Traffic::new(42);
    let from = now - DAYS * 24 * HOUR_MS;
    let started = Instant::now();
    let mut left = rollup_events;
    while left > 0 {
        let n = left.min(100_000);
        let mut inc = Increments::new(100);
        for _ in 0..n {
            let e = traffic.event(from, DAYS * 24 * HOUR_MS);
            let i: usize = e.link["s.example/link-".len()..].parse().expect("index");
            inc.add(links[i].link_id, OWNER, &ClickDims::of(&e), 1);
        }
        db.add_rollups(&inc, 0).await.expect("rollups");
        left -= n;
    }
    let rows: (i64, i64) = {
        let mut r = db.reader().await.expect("reader");
        let (h,): (i64,) = r
            .conn()
            .fetch_one("SELECT COUNT(*) FROM click_hours", &[])
            .await
            .expect("count");
        let (d,): (i64,) = r
            .conn()
            .fetch_one("SELECT CAST(COALESCE(SUM(LENGTH(CAST(dims AS TEXT))), 0) AS BIGINT) FROM click_hours", &[])
            .await
            .expect("count");
        (h, d)
    };
    eprintln!(
        "{kind}: {rollup_events} events into {} hour rows and {} bytes of dimensions in {:.0} s",
        rows.0,
        rows.1,
        started.elapsed().as_secs_f64()
    );

    // 3. Stats over the month: each query 30 times, median.
    let range = |granularity, days: i64| Range {
        from: (now - days * 24 * HOUR_MS).div_euclid(HOUR_MS * 24) * HOUR_MS * 24,
        to: (now + HOUR_MS).div_euclid(HOUR_MS) * HOUR_MS,
        granularity,
        include_bots: false,
        top: 10,
    };
    let top = origin_api::store::links::get(&db, "s.example", "link-0000")
        .await
        .expect("read")
        .expect("link");
    let tail = origin_api::store::links::get(&db, "s.example", "link-0500")
        .await
        .expect("read")
        .expect("link");
    let cases = [
        (
            "top link (13% of traffic), 7 days by the hour",
            &top,
            range(Granularity::Hour, 7),
        ),
        (
            "top link, 30 days by the day",
            &top,
            range(Granularity::Day, 30),
        ),
        (
            "link ranked 500th, 30 days by the day",
            &tail,
            range(Granularity::Day, 30),
        ),
    ];
    for (label, link, range) in cases {
        let mut times = Vec::new();
        for _ in 0..30 {
            let started = Instant::now();
            let stats = link_stats(&db, link, range, 0).await.expect("stats");
            times.push(started.elapsed());
            assert!(stats.totals.visits > 0);
        }
        println!(
            "| {kind} | stats: {label} | {:.2} ms |",
            median(times).as_secs_f64() * 1e3
        );
    }
    let mut times = Vec::new();
    for _ in 0..30 {
        let started = Instant::now();
        let summary = owner_stats(
            &db,
            &origin_api::model::Creator::owner(OWNER),
            range(Granularity::Day, 30),
            0,
        )
        .await
        .expect("summary");
        times.push(started.elapsed());
        assert_eq!(summary.top_links.len(), 10);
    }
    println!(
        "| {kind} | summary: an owner's 1,000 links, 30 days, top 10 | {:.2} ms |",
        median(times).as_secs_f64() * 1e3
    );
    db.close().await;
}

/// The seeds' peak as the edge delivers it since issue 36: 100,000 visits a second over
/// 2,000 isolates (50 each), Zipf over 100,000 links, 40 countries, 200 referrers, 15%
/// bots. Each isolate's second becomes a tally (its alike clicks as rows, sealed as the
/// edge seals them), made before the clock starts. Then, as in production, two things
/// run at once for `seconds` of real time: the consumer's deliveries (batches of 100
/// tallies) acknowledged as each second's come due, and the fold task adding what is
/// staged to the rollups every second. Printed: how long each second's acknowledgements
/// took, and its lag (from the end of the second to the end of the fold that put it in
/// the rollups): median, first and last ten seconds' means, worst, so that a lag that
/// grows shows. Then, on the same database and traffic, the old path for comparison: one
/// event a click, batches of 100, acknowledged and folded as fast as they go.
async fn seeds_load(db: &Db, seconds: u32) {
    use std::sync::atomic::{AtomicU32, Ordering};
    const LINKS: usize = 100_000;
    const ISOLATES: usize = 2_000;
    const VISITS_PER_ISOLATE: usize = 50;
    const BATCH: usize = 100;
    const CONSUMERS: usize = 4;
    seed_links(db, LINKS as u64).await;
    let kind = db.kind();
    let clicks = Clicks::new(24 * 365, 100, Metrics::default());
    let now = now_ms();
    let mut traffic = Traffic::over(11, LINKS);
    let mut rows = 0usize;
    let load: Vec<Vec<ClickTally>> = (0..seconds)
        .map(|second| {
            let mut tallies: Vec<ClickTally> = Vec::with_capacity(ISOLATES);
            for isolate in 0..ISOLATES {
                let mut tally = Tally::default();
                for _ in 0..VISITS_PER_ISOLATE {
                    tally.add(&TallyRow::of(traffic.event(now - 60_000, 60_000)));
                }
                let mut n = 0;
                for sealed in tally.seal(now, 0, None, || {
                    n += 1;
                    format!("bench-{second}-{isolate}-{n}")
                }) {
                    tallies.push(serde_json::from_str(&sealed.body).expect("a tally"));
                }
            }
            rows += tallies.iter().map(|t| t.rows.len()).sum::<usize>();
            tallies
        })
        .collect();
    // Seconds whose deliveries are all acknowledged.
    let staged = Arc::new(AtomicU32::new(0));
    let clicks = Arc::new(clicks);
    let load = Arc::new(load);
    let started = tokio::time::Instant::now();
    let due = move |second: u32| started + Duration::from_secs(u64::from(second) + 1);
    // The consumer delivers a few batches at once, as the queue runs several consumer
    // invocations side by side; each is its own task, as each is its own request.
    let acknowledging = tokio::spawn({
        let (db, clicks, load, staged) = (db.clone(), clicks.clone(), load.clone(), staged.clone());
        async move {
            let mut took = Vec::with_capacity(seconds as usize);
            let mut counted = 0u64;
            for second in 0..seconds {
                // A second's deliveries arrive during it: acknowledged from its start on.
                tokio::time::sleep_until(due(second) - Duration::from_secs(1)).await;
                let began = Instant::now();
                let batches = load[second as usize].len().div_ceil(BATCH);
                for wave in (0..batches).collect::<Vec<_>>().chunks(CONSUMERS) {
                    let mut set = tokio::task::JoinSet::new();
                    for &b in wave {
                        let (db, clicks, load) = (db.clone(), clicks.clone(), load.clone());
                        set.spawn(async move {
                            let tallies = &load[second as usize];
                            let batch = &tallies[b * BATCH..((b + 1) * BATCH).min(tallies.len())];
                            clicks
                                .ingest(&db, &[], batch, now)
                                .await
                                .expect("ingest")
                                .counted
                        });
                    }
                    counted += set.join_all().await.into_iter().sum::<u64>();
                }
                took.push(began.elapsed());
                staged.store(second + 1, Ordering::Release);
            }
            (took, counted)
        }
    });
    let folding = tokio::spawn({
        let (db, clicks, staged) = (db.clone(), clicks.clone(), staged.clone());
        async move {
            let mut lag = Vec::with_capacity(seconds as usize);
            let mut tick = tokio::time::interval(origin_api::clicks::fold::FOLD_EVERY);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            while lag.len() < seconds as usize {
                tick.tick().await;
                let ready = staged.load(Ordering::Acquire);
                let f0 = Instant::now();
                let report = clicks.fold(&db).await.expect("fold");
                let done = tokio::time::Instant::now();
                if std::env::var_os("HOP_BENCH_VERBOSE").is_some() {
                    eprintln!(
                        "at {:.1} s: folded {} deliveries, {} visits, {} link-hours in {:.0} ms (seconds up to {ready} staged)",
                        started.elapsed().as_secs_f64(),
                        report.rows,
                        report.visits,
                        report.link_hours,
                        f0.elapsed().as_secs_f64() * 1e3
                    );
                }
                for second in lag.len() as u32..ready {
                    lag.push(done.saturating_duration_since(due(second)));
                }
            }
            lag
        }
    });
    let (acks, counted) = acknowledging.await.expect("acknowledging");
    let lag = folding.await.expect("folding");
    assert_eq!(
        counted,
        u64::from(seconds) * (ISOLATES * VISITS_PER_ISOLATE) as u64
    );
    let mean = |d: &[Duration]| d.iter().sum::<Duration>() / d.len().max(1) as u32;
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let ten = lag.len().min(10);
    println!(
        "| {kind} | edge tallies at 100,000 visits/s over 2,000 isolates, {seconds} s ({} rows/s), acknowledged and folded at once | a second's deliveries acknowledged in {:.0} ms median (worst {:.0} ms); lag from the end of a second to the rollups {:.0} ms median (first ten {:.0} ms, last ten {:.0} ms, worst {:.0} ms) |",
        rows / seconds as usize,
        ms(median(acks.clone())),
        ms(acks.iter().max().copied().unwrap_or_default()),
        ms(median(lag.clone())),
        ms(mean(&lag[..ten])),
        ms(mean(&lag[lag.len() - ten..])),
        ms(lag.iter().max().copied().unwrap_or_default()),
    );
    println!(
        "| {kind} | the same, lag by ten seconds of traffic (mean) | {} |",
        lag.chunks(10)
            .map(|c| format!("{:.1} s", mean(c).as_secs_f64()))
            .collect::<Vec<_>>()
            .join(", ")
    );
    // The old path on the same traffic: one event a click, in the consumer's batches.
    let events: Vec<Vec<ClickEvent>> = (0..1_000)
        .map(|_| {
            (0..BATCH)
                .map(|_| traffic.event(now - 60_000, 60_000))
                .collect()
        })
        .collect();
    let started = Instant::now();
    for batch in &events {
        clicks.ingest(db, batch, &[], now).await.expect("ingest");
    }
    clicks.fold(db).await.expect("fold");
    println!(
        "| {kind} | the same traffic as single events (before issue 36), batches of {BATCH}, acknowledged then folded | {:.0} visits/s |",
        (events.len() * BATCH) as f64 / started.elapsed().as_secs_f64()
    );
}

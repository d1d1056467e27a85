//! The click rollups' writer at a million links: windows of one key per link (a
//! million links visited uniformly, each link-hour once per window), written in slices
//! as the origin's recorder writes them, each window an hour later than the last so
//! that the tables grow. Prints the CPU per key written and the process's `RssAnon`
//! (SQLite's page cache is anonymous memory).
//!
//!     cargo run --release -p origin-api --example bench_rollup_writer -- \
//!         sqlite:///tmp/rollups.db [WINDOWS [KEYS [SLICE [STEP_MS]]]]
//!
//! The database must be new (it is migrated here). Defaults: 3 windows of 1,000,000
//! keys, 3,000 keys per slice (a 5-minute window spread over 30 s in 100 ms ticks), each
//! window an hour (3,600,000 ms) after the last; a step of 0 keeps them in one hour, so
//! that every key after the first window adds to a row already written.
use origin_api::db::Db;
use origin_api::store::{ClickDims, ClickStore, Increments};
use std::time::Instant;

#[path = "support/rng.rs"]
mod rng;
use rng::Rng;

#[tokio::main]
async fn main() {
    let mut args = std::env::args().skip(1);
    let url = args
        .next()
        .expect("usage: bench_rollup_writer DATABASE_URL [WINDOWS [KEYS [SLICE [STEP_MS]]]]");
    let windows: usize = args.next().map_or(3, |s| s.parse().expect("a number"));
    let keys: u64 = args
        .next()
        .map_or(1_000_000, |s| s.parse().expect("a number"));
    let slice: usize = args.next().map_or(3_000, |s| s.parse().expect("a number"));
    // 0 writes every window into the same hour: each key then merges into a row
    // written before, as the tally's windows of a few minutes do within an hour.
    let step: i64 = args
        .next()
        .map_or(3_600_000, |s| s.parse().expect("a number"));
    let db = Db::connect(&url).await.expect("connect");
    db.migrate().await.expect("migrate");
    let mut rng = Rng(1);
    let devices = ["mobile", "desktop", "tablet", "other"];
    let base = 1_800_000_000_000i64 / 3_600_000 * 3_600_000;
    for w in 0..windows {
        let hour = base + w as i64 * step;
        let ids: Vec<u64> = (1..=keys).collect();
        let started = Instant::now();
        let cpu0 = cpu();
        let mut written = 0;
        for chunk in ids.chunks(slice) {
            let mut inc = Increments::new(100);
            for id in chunk.iter() {
                let r = rng.next();
                let country = format!("C{}", r % 40);
                let referrer = if r % 10 < 6 {
                    format!("site{}.example", (r >> 8) % 200)
                } else {
                    String::new()
                };
                let dims = ClickDims {
                    at: hour + (r >> 20) as i64 % 3_600_000,
                    bot: r.is_multiple_of(7),
                    status: 302,
                    country: &country,
                    referrer: &referrer,
                    device: devices[((r >> 4) % 4) as usize],
                    variant: None,
                    scanner: None,
                };
                inc.add(*id, &format!("owner{}", id % 50), &dims, 1 + (r % 5) as i64);
            }
            db.add_rollups(&inc, 0).await.expect("rollups");
            written += chunk.len();
        }
        let secs = started.elapsed().as_secs_f64();
        let c = cpu() - cpu0;
        let anon = status("RssAnon");
        println!(
            "window {w}: {written} keys, {:.1} s wall, {:.1} s cpu, {:.1} us/key cpu, {anon}",
            secs,
            c,
            c * 1e6 / written as f64
        );
    }
}

/// This process's utime + stime, in seconds.
fn cpu() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").expect("/proc/self/stat");
    let fields: Vec<&str> = stat
        .rsplit(')')
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    (ticks(11) + ticks(12)) / 100.0
}

/// A line of /proc/self/status.
fn status(name: &str) -> String {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with(name))
        .unwrap_or_default()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

//! Clicks of the origin's own redirects.
//!
//! The redirect handler hands each click to a bounded queue without waiting
//! ([`Recorder::record`] never blocks and never fails a redirect), carrying only the
//! visitor already reduced to its coarse dimensions. A background task takes clicks off
//! the queue into a tally in memory, counting alike clicks once with a weight, and
//! writes the tally to the rollups every few seconds: the database sees one row update
//! per link and dimension value per interval, not one per click. These clicks exist
//! only in this process, so they need no ids: each is added to the tally once, and each
//! slice of it is written in one transaction or retried whole. A crash loses the clicks
//! not yet written (a few seconds' worth); a full queue, or a database down for longer
//! than the retries, drops clicks, counted in `hop_clicks_dropped_total`.

use super::Clicks;
use crate::metrics::Metrics;
use crate::store::{ClickDims, ClickStore, Increments};
use axum::http::HeaderValue;
use shared::clicks::{
    classify_user_agent, country_code, referrer_host, referrer_site, Device, MAX_UA_BYTES,
};
use shared::RouteKey;
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// Clicks waiting to be tallied at most (over a second's worth at full speed); beyond,
/// new ones are dropped (and counted).
pub const QUEUE: usize = 262_144;
/// How often queued clicks are taken into the tally.
const TAKE_EVERY: Duration = Duration::from_millis(20);
/// How often the tally closes to be written (sooner when it grows past [`MAX_TALLY`]).
pub const WRITE_EVERY: Duration = Duration::from_secs(10);
const MAX_TALLY: usize = 100_000;
/// A closed tally is written a slice per tick: at least this many alike clicks.
const SLICE: usize = 500;
const SLICE_EVERY: Duration = Duration::from_millis(100);
/// User agents and referrers whose reduction is remembered, per kind.
const MAX_REMEMBERED: usize = 10_000;
/// Waits between attempts at writing a tally the database refused.
const RETRIES: [Duration; 3] = [
    Duration::from_millis(100),
    Duration::from_millis(500),
    Duration::from_secs(2),
];

/// One click as the redirect path saw it, its headers already reduced.
#[derive(Debug)]
pub struct OwnClick {
    pub route: RouteKey,
    /// Unix ms.
    pub at: i64,
    pub status: u16,
    pub visitor: Reduced,
}

/// A visitor reduced to what is kept, with the parts shared between alike visitors.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Reduced {
    pub device: Device,
    pub bot: bool,
    pub referrer: Option<Arc<str>>,
    pub country: Option<[u8; 2]>,
}

/// Header bytes → their reduction.
type Memo<T> = HashMap<Box<[u8]>, T>;

thread_local! {
    // Per worker thread: the reductions of recent user agents and referrers. A busy
    // origin sees the same few over and over, and reducing them (lowercasing an agent,
    // parsing a URL) costs more than looking them up.
    static AGENTS: RefCell<Memo<(Device, bool)>> = RefCell::new(HashMap::new());
    static REFERRERS: RefCell<Memo<Option<Arc<str>>>> = RefCell::new(HashMap::new());
}

impl Reduced {
    /// What a request's headers say, reduced exactly as `shared::clicks::Visitor::describe`
    /// does. The header bytes are not kept: holding them would hold the connection's
    /// whole read buffer, which the server then has to replace.
    pub fn of(
        user_agent: Option<&HeaderValue>,
        referer: Option<&HeaderValue>,
        country: Option<&HeaderValue>,
    ) -> Reduced {
        // Each memo is keyed by the most of its header that the reduction reads, so a
        // memo entry is small however long the header, and a million distinct agents
        // that differ past that prefix are one entry.
        let (device, bot) = match user_agent {
            Some(ua) => {
                let read = &ua.as_bytes()[..ua.len().min(MAX_UA_BYTES)];
                AGENTS.with_borrow_mut(|memo| {
                    remember(memo, read, |b| classify_user_agent(utf8_prefix(b)))
                })
            }
            None => classify_user_agent(""),
        };
        let referrer = referer
            .and_then(|r| r.to_str().ok())
            .and_then(referrer_site)
            .and_then(|site| {
                REFERRERS.with_borrow_mut(|memo| {
                    remember(memo, site.as_bytes(), |b| {
                        referrer_host(utf8_prefix(b)).map(Arc::from)
                    })
                })
            });
        let country = country
            .and_then(|c| c.to_str().ok())
            .and_then(country_code)
            .and_then(|c| <[u8; 2]>::try_from(c.as_bytes()).ok());
        Reduced {
            device,
            bot,
            referrer,
            country,
        }
    }
}

/// Alike clicks: the same link, hour, status and visitor.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Alike {
    route: RouteKey,
    hour: i64,
    status: u16,
    visitor: Reduced,
}

/// Clicks gathered since the last write.
#[derive(Debug, Default)]
struct Tally {
    counts: HashMap<Alike, i64>,
}

impl Tally {
    fn add(&mut self, click: OwnClick) {
        let alike = Alike {
            route: click.route,
            hour: click.at.div_euclid(3_600_000) * 3_600_000,
            status: click.status,
            visitor: click.visitor,
        };
        *self.counts.entry(alike).or_default() += 1;
    }
}

/// The longest valid UTF-8 start of `b` (a prefix cut may split a character).
fn utf8_prefix(b: &[u8]) -> &str {
    match std::str::from_utf8(b) {
        Ok(s) => s,
        Err(e) => std::str::from_utf8(&b[..e.valid_up_to()]).unwrap_or_default(),
    }
}

fn remember<T: Clone>(memo: &mut Memo<T>, key: &[u8], reduce: impl FnOnce(&[u8]) -> T) -> T {
    if let Some(known) = memo.get(key) {
        return known.clone();
    }
    if memo.len() >= MAX_REMEMBERED {
        memo.clear();
    }
    let value = reduce(key);
    memo.insert(key.into(), value.clone());
    value
}

/// The redirect path's end of the queue, and the writer's.
#[derive(Debug)]
pub struct Recorder {
    tx: Option<mpsc::Sender<OwnClick>>,
    /// The writer's state: the queue's other end and the tally. Locked by the one task
    /// that writes (or by [`Recorder::flush`], in tests without that task).
    writer: tokio::sync::Mutex<Option<(mpsc::Receiver<OwnClick>, Tally)>>,
    metrics: Metrics,
}

impl Recorder {
    /// A recorder; a disabled one records nothing.
    pub fn new(enabled: bool, metrics: Metrics) -> Self {
        let (tx, writer) = if enabled {
            let (tx, rx) = mpsc::channel(QUEUE);
            (Some(tx), Some((rx, Tally::default())))
        } else {
            (None, None)
        };
        Recorder {
            tx,
            writer: tokio::sync::Mutex::new(writer),
            metrics,
        }
    }

    /// Whether clicks are being recorded.
    pub fn enabled(&self) -> bool {
        self.tx.is_some()
    }

    /// Queues a click without waiting.
    pub fn record(&self, click: OwnClick) {
        if let Some(tx) = &self.tx {
            if tx.try_send(click).is_err() {
                self.metrics.clicks_dropped.inc();
            }
        }
    }

    /// Tallies and writes everything queued so far, unless the writer task runs (it
    /// writes on its own schedule): for tests and benchmarks without it.
    pub async fn flush<S: ClickStore + ?Sized>(&self, clicks: &Clicks, store: &S) {
        let Ok(mut writer) = self.writer.try_lock() else {
            return;
        };
        if let Some((rx, tally)) = writer.as_mut() {
            drain(rx, tally);
            let all: Vec<_> = std::mem::take(&mut tally.counts).into_iter().collect();
            self.write(clicks, store, all).await;
        }
    }

    /// Tallies queued clicks as they come and writes them in slices, until `stop`
    /// changes; then writes what is left.
    ///
    /// Every [`WRITE_EVERY`] the tally closes and is written in slices of a few hundred
    /// alike clicks per [`SLICE_EVERY`], rather than in one transaction: a burst of
    /// tens of thousands of row updates at once held a core long enough to triple the
    /// redirect's p99 (`scripts/bench-clicks`), where the same work spread out is lost
    /// in the noise.
    pub async fn run<S: ClickStore + ?Sized>(
        &self,
        clicks: &Clicks,
        store: &S,
        mut stop: tokio::sync::watch::Receiver<bool>,
    ) {
        let mut writer = self.writer.lock().await;
        let Some((rx, tally)) = writer.as_mut() else {
            return;
        };
        let mut take = tokio::time::interval(TAKE_EVERY);
        let mut every = tokio::time::interval(SLICE_EVERY);
        let mut closed: Vec<(Alike, i64)> = Vec::new();
        let mut opened = Instant::now();
        loop {
            tokio::select! {
                // Taken on a timer rather than as they arrive: a task waiting on the
                // queue is woken by every click sent, which cost the redirect path a
                // quarter more CPU per request; taking a few thousand at a time costs
                // a fraction of a millisecond per take.
                _ = take.tick() => drain(rx, tally),
                _ = every.tick() => {
                    if closed.is_empty() && (opened.elapsed() >= WRITE_EVERY || tally.counts.len() >= MAX_TALLY) {
                        closed = std::mem::take(&mut tally.counts).into_iter().collect();
                        opened = Instant::now();
                    }
                    // A slice per tick, larger when the closed tally is large, so that
                    // it is written before the next one closes.
                    let ticks = (WRITE_EVERY.as_millis() / SLICE_EVERY.as_millis()).max(1) as usize;
                    let n = closed.len().min(SLICE.max(closed.len().div_ceil(ticks)));
                    if n > 0 {
                        let slice = closed.split_off(closed.len() - n);
                        self.write(clicks, store, slice).await;
                    }
                }
                // The only change ever sent is the stop (or the sender went away).
                _ = stop.changed() => break,
            }
        }
        // Shutting down: what the last requests queued.
        drain(rx, tally);
        closed.extend(std::mem::take(&mut tally.counts));
        self.write(clicks, store, closed).await;
    }

    /// Writes alike clicks, retrying a little while the database refuses.
    async fn write<S: ClickStore + ?Sized>(
        &self,
        clicks: &Clicks,
        store: &S,
        counts: Vec<(Alike, i64)>,
    ) {
        if counts.is_empty() {
            return;
        }
        let total: i64 = counts.iter().map(|(_, n)| n).sum();
        let mut waits = RETRIES.iter();
        loop {
            match attribute(clicks, store, &counts).await {
                Ok((increments, unknown)) => match store.add_rollups(&increments).await {
                    Ok(()) => {
                        clicks.counted_own(increments.visits(), unknown);
                        return;
                    }
                    Err(e) => tracing::warn!(error = %e, "writing clicks failed"),
                },
                Err(e) => tracing::warn!(error = %e, "reading the links of clicks failed"),
            }
            match waits.next() {
                Some(wait) => tokio::time::sleep(*wait).await,
                None => {
                    tracing::error!(clicks = total, "writing clicks failed; dropped");
                    self.metrics
                        .clicks_dropped
                        .inc_by(u64::try_from(total).unwrap_or_default());
                    return;
                }
            }
        }
    }
}

fn drain(rx: &mut mpsc::Receiver<OwnClick>, tally: &mut Tally) {
    while let Ok(click) = rx.try_recv() {
        tally.add(click);
    }
}

/// The tally as rollup increments, and how many clicks named no known link.
async fn attribute<S: ClickStore + ?Sized>(
    clicks: &Clicks,
    store: &S,
    counts: &[(Alike, i64)],
) -> Result<(Increments, u64), crate::store::StoreError> {
    let routes: Vec<(String, &Alike, &i64)> = counts
        .iter()
        .map(|(a, n)| (a.route.to_string(), a, n))
        .collect();
    let links = clicks
        .links_of(store, routes.iter().map(|(r, _, _)| r.as_str()))
        .await?;
    let mut increments = Increments::new(clicks.referrer_cap());
    let mut unknown = 0u64;
    for (route, a, n) in routes {
        let Some(link) = links.get(&route) else {
            unknown += u64::try_from(*n).unwrap_or_default();
            continue;
        };
        let country = a
            .visitor
            .country
            .map(|c| String::from_utf8_lossy(&c).into_owned())
            .unwrap_or_default();
        let dims = ClickDims {
            at: a.hour,
            bot: a.visitor.bot,
            status: a.status,
            country: &country,
            referrer: a.visitor.referrer.as_deref().unwrap_or_default(),
            device: a.visitor.device.as_str(),
        };
        increments.add(link.link_id, &link.owner_id, &dims, *n);
    }
    Ok((increments, unknown))
}

#[cfg(test)]
mod tests {
    use super::*;
    use shared::clicks::Visitor;

    #[test]
    fn reducing_headers_matches_the_edge_and_remembers() {
        let cases = [
            (
                Some("Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) Mobile/15E148"),
                Some("https://www.t.co/x?y=1"),
                Some("nl"),
            ),
            (Some("curl/8.5.0"), None, None),
            (
                None,
                Some("android-app://com.example/"),
                Some("Netherlands"),
            ),
        ];
        for _ in 0..2 {
            for (ua, referer, country) in cases {
                let header = |v: Option<&str>| v.map(|v| HeaderValue::from_str(v).unwrap());
                let got = Reduced::of(
                    header(ua).as_ref(),
                    header(referer).as_ref(),
                    header(country).as_ref(),
                );
                let want = Visitor::describe(ua, referer, country);
                assert_eq!(got.device, want.device);
                assert_eq!(got.bot, want.bot);
                assert_eq!(got.referrer.as_deref(), want.referrer_host.as_deref());
                assert_eq!(
                    got.country
                        .map(|c| String::from_utf8_lossy(&c).into_owned()),
                    want.country
                );
            }
        }
    }
}

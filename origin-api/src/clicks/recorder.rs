//! Clicks of the origin's own redirects.
//!
//! The redirect handler adds each click to its worker thread's shard of the tally
//! ([`Recorder::record`] never waits on anything but that shard and never fails a
//! redirect), carrying the link's id from the redirect cache and the visitor already
//! reduced to its coarse dimensions. A background task moves the shards into one window
//! every few milliseconds, and closes the window when writing it is cheap enough
//! ([`closes`]): at least every [`MIN_WINDOW`], at most every [`MAX_WINDOW`], and at
//! once when it reaches its bound in bytes. A closed window is written to the rollups in
//! link order, a slice at a time, so that the database sees one row update per link and
//! dimension value per window, and never a burst. These clicks exist only in this
//! process, so they need no ids: each is in one window once, and each slice of it is
//! written in one transaction or retried whole. A crash loses the clicks not yet
//! written; clicks that find no room (a full window while the last one is still being
//! written), and a database down for longer than the retries, are dropped and counted
//! in `hop_clicks_dropped_total`.

use super::ingest::Clicks;
use super::tally::{Clicked, Closed, Count, Key, Shard, Shards, Window};
use crate::metrics::Metrics;
use crate::model::time::now_ms;
use crate::owners::Owners;
use crate::store::{ClickDims, ClickStore, Increments};
use axum::http::HeaderValue;
use shared::clicks::{
    classify_user_agent, country_code, referrer_host, referrer_site, Device, MAX_UA_BYTES,
};
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
// tokio's clock, which is std's unless a test pauses it.
use tokio::time::Instant;

pub use super::tally::Reduced;

/// How often the shards are moved into the window.
const TAKE_EVERY: Duration = Duration::from_millis(20);
/// A window stays open at least this long (what the stats lag behind under light load)…
pub const MIN_WINDOW: Duration = Duration::from_secs(10);
/// … and at most this long (under load heavy enough that writing sooner would cost more
/// than [`WRITE_BUDGET`]).
pub const MAX_WINDOW: Duration = Duration::from_secs(300);
/// The share of one core that writing the origin's clicks may take, about.
const WRITE_BUDGET: f64 = 0.02;
/// What writing one key is taken to cost before the first write measures it.
const FIRST_COST: Duration = Duration::from_micros(10);
/// Entries one thread's shard logs between takes, at most (about 48 bytes each): over
/// a second of one thread's visits at the pace this machine serves, where a take comes
/// every [`TAKE_EVERY`].
const SHARD_ENTRIES: usize = 65_536;
/// The writer's pace: a slice per tick, at least this many keys, the whole window
/// spread over [`WRITE_SPREAD`].
const SLICE: usize = 500;
const SLICE_EVERY: Duration = Duration::from_millis(100);
const WRITE_SPREAD: Duration = Duration::from_secs(30);
/// User agents and referrers whose reduction is remembered, per kind.
const MAX_REMEMBERED: usize = 10_000;
/// Waits between attempts at writing a slice the database refused.
const RETRIES: [Duration; 3] = [
    Duration::from_millis(100),
    Duration::from_millis(500),
    Duration::from_secs(2),
];

/// Header bytes → their reduction, the last one looked up kept apart: alike visits come
/// in runs (a post's readers share its site as referrer, a crawler its agent), and
/// comparing a header with the last costs less than hashing it for the table.
struct Memo<T> {
    table: HashMap<Box<[u8]>, T, foldhash::fast::RandomState>,
    last: Option<(Vec<u8>, T)>,
}

impl<T> Default for Memo<T> {
    fn default() -> Self {
        Memo {
            table: HashMap::default(),
            last: None,
        }
    }
}

impl<T: Clone> Memo<T> {
    fn remember(&mut self, key: &[u8], reduce: impl FnOnce(&[u8]) -> T) -> T {
        if let Some((last, value)) = &self.last {
            if last.as_slice() == key {
                return value.clone();
            }
        }
        let value = match self.table.get(key) {
            Some(known) => known.clone(),
            None => {
                if self.table.len() >= MAX_REMEMBERED {
                    self.table.clear();
                }
                let value = reduce(key);
                self.table.insert(key.into(), value.clone());
                value
            }
        };
        // The last key's buffer is reused: it is at most a header's read prefix.
        match &mut self.last {
            Some((last, held)) => {
                last.clear();
                last.extend_from_slice(key);
                *held = value.clone();
            }
            None => self.last = Some((key.to_vec(), value.clone())),
        }
        value
    }
}

thread_local! {
    // Per worker thread: the reductions of recent user agents and referrers. A busy
    // origin sees the same few over and over, and reducing them (lowercasing an agent,
    // parsing a URL) costs more than looking them up.
    static AGENTS: RefCell<Memo<(Device, bool)>> = RefCell::new(Memo::default());
    static REFERRERS: RefCell<Memo<Option<Arc<str>>>> = RefCell::new(Memo::default());
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
                    memo.remember(read, |b| classify_user_agent(utf8_prefix(b)))
                })
            }
            None => classify_user_agent(""),
        };
        let referrer = referer
            .and_then(|r| r.to_str().ok())
            .and_then(referrer_site)
            .and_then(|site| {
                REFERRERS.with_borrow_mut(|memo| {
                    memo.remember(site.as_bytes(), |b| {
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
            variant: None,
            scanner: None,
        }
    }
}

/// The longest valid UTF-8 start of `b` (a prefix cut may split a character).
fn utf8_prefix(b: &[u8]) -> &str {
    match std::str::from_utf8(b) {
        Ok(s) => s,
        Err(e) => std::str::from_utf8(&b[..e.valid_up_to()]).unwrap_or_default(),
    }
}

/// Whether a window of `keys` distinct keys, open for `age`, closes now: when writing it
/// (`keys` × `cost` per key) takes at most [`WRITE_BUDGET`] of its age, once it is at
/// least [`MIN_WINDOW`] old; at [`MAX_WINDOW`] in any case; at once when `full`.
pub fn closes(keys: usize, age: Duration, cost: Duration, full: bool) -> bool {
    full || age >= MAX_WINDOW
        || (age >= MIN_WINDOW
            && keys as f64 * cost.as_secs_f64() <= WRITE_BUDGET * age.as_secs_f64())
}

/// The redirect path's end of the tally, and the writer's.
#[derive(Debug)]
pub struct Recorder {
    shards: Option<Shards>,
    /// The writer's state: the open window and the closed one being written. Locked by
    /// the one task that writes (or by [`Recorder::flush`], in tests without it).
    writer: tokio::sync::Mutex<Writer>,
    owners: Owners,
    metrics: Metrics,
    /// How far this process's clicks are written, for the stats' `data_as_of`.
    written: Progress,
    /// Clicks per visitor a minute, as the edge counts them.
    budget: Option<super::budget::ClickBudget>,
    /// The people who visited links with a visit limit, `(link, at, person)`, until a
    /// slice is written: at most [`PEOPLE_HELD`].
    people: std::sync::Mutex<Vec<(u64, i64, u64)>>,
}

/// People held for the next write, at most (24 bytes each): a window of a million
/// distinct visitors of links with a visit limit. Past it a visitor is not counted
/// against the limit until their next visit (and a warning is logged).
const PEOPLE_HELD: usize = 1 << 20;

/// Clicks made before `complete_to` (Unix ms) are written, unless `outstanding` is
/// false, when nothing is held at all.
#[derive(Debug)]
struct Progress {
    complete_to: std::sync::atomic::AtomicI64,
    outstanding: AtomicBool,
}

#[derive(Debug)]
struct Writer {
    window: Window,
    spares: Vec<Shard>,
}

impl Recorder {
    /// A recorder whose open window holds at most `max_bytes`, resolving owners through
    /// `owners` (the redirect cache's); a disabled one records nothing.
    pub fn new(enabled: bool, max_bytes: usize, owners: Owners, metrics: Metrics) -> Self {
        Recorder {
            shards: enabled.then(|| Shards::new(SHARD_ENTRIES)),
            budget: enabled.then(super::budget::ClickBudget::default),
            people: std::sync::Mutex::new(Vec::new()),
            writer: tokio::sync::Mutex::new(Writer {
                window: Window::new(max_bytes),
                spares: Vec::new(),
            }),
            owners,
            metrics,
            // Nothing this process counts was made before it started.
            written: Progress {
                complete_to: std::sync::atomic::AtomicI64::new(now_ms()),
                outstanding: AtomicBool::new(false),
            },
        }
    }

    /// When the oldest click this process holds unwritten may have been made (Unix ms):
    /// every click before it is in the rollups. `None` when it holds none (or records
    /// none).
    pub fn unwritten_since(&self) -> Option<i64> {
        self.written
            .outstanding
            .load(Ordering::Acquire)
            .then(|| self.written.complete_to.load(Ordering::Acquire))
    }

    /// Everything counted before `at` is written (or was never there).
    fn caught_up(&self, at: i64) {
        self.written.complete_to.fetch_max(at, Ordering::AcqRel);
        self.written.outstanding.store(false, Ordering::Release);
    }

    /// Clicks are held unwritten (and those before `complete_to` were written).
    fn holding(&self) {
        self.written.outstanding.store(true, Ordering::Release);
    }

    /// Whether clicks are being recorded.
    pub fn enabled(&self) -> bool {
        self.shards.is_some()
    }

    /// Whether a click by `client` at `at` (Unix ms) is within its budget: an address
    /// adds at most `CLICKS_PER_VISITOR_MINUTE` clicks a minute, as at each edge
    /// isolate. Without an address (a request that did not come through the listener),
    /// nothing is counted against one.
    pub fn admits(&self, client: Option<std::net::IpAddr>, at: i64) -> bool {
        match (&self.budget, client) {
            (Some(budget), Some(client)) => budget.admit(client, at),
            _ => true,
        }
    }

    /// Counts a click (Unix ms `at`) without waiting.
    pub fn record(&self, clicked: Clicked, at: i64, status: u16, visitor: Reduced) {
        if let Some(shards) = &self.shards {
            if !shards.add(clicked, at, status, visitor) {
                self.metrics.clicks_dropped.inc();
            }
        }
    }

    /// Notes who made a click on `link` (one with a visit limit) at `at`, for the next
    /// write ([`Increments::add_person`]).
    pub fn person(&self, link: u64, at: i64, person: u64) {
        if self.shards.is_none() {
            return;
        }
        // Only visits of links with a limit come here, a few a second: a lock is cheap.
        let mut people = self.people.lock().unwrap_or_else(|e| e.into_inner());
        if people.len() < PEOPLE_HELD {
            people.push((link, at, person));
        } else {
            // The click itself is still counted; only its person is not held.
            tracing::warn!(link, "too many people held for the next write; one not counted against its link's visit limit");
        }
    }

    /// Keys counted by the redirect path and not yet taken into the tally.
    pub fn untaken(&self) -> usize {
        self.shards.as_ref().map_or(0, Shards::keys)
    }

    /// Writes everything counted so far, unless the writer task runs (it writes on its
    /// own schedule): for tests and benchmarks without it.
    pub async fn flush<S: ClickStore + ?Sized>(&self, clicks: &Clicks, store: &S) {
        let Ok(mut writer) = self.writer.try_lock() else {
            return;
        };
        let Some(shards) = &self.shards else { return };
        let Writer { window, spares } = &mut *writer;
        let at = now_ms();
        self.dropped(shards.take_into(window, spares));
        let mut closed = window.close();
        let n = closed.remaining();
        self.write_slice(clicks, store, &mut closed, n).await;
        self.caught_up(at);
    }

    fn dropped(&self, n: u64) {
        if n > 0 {
            tracing::warn!(clicks = n, "click tally full; clicks dropped");
            self.metrics.clicks_dropped.inc_by(n);
        }
    }

    /// Tallies clicks as they come and writes closed windows in slices, until `stop`
    /// changes; then writes what is left.
    ///
    /// Two loops: one moves the shards into the window and closes it, never waiting on
    /// the database (a shard is emptied every [`TAKE_EVERY`] even while a write is
    /// retried); the other writes the closed window a slice per [`SLICE_EVERY`], spread
    /// over [`WRITE_SPREAD`]: a burst of tens of thousands of row updates at once held a
    /// core long enough to triple the redirect's p99 (`scripts/bench-clicks`), where the
    /// same work spread out is lost in the noise.
    pub async fn run<S: ClickStore + ?Sized>(
        &self,
        clicks: &Clicks,
        store: &S,
        mut stop: tokio::sync::watch::Receiver<bool>,
    ) {
        let Some(shards) = &self.shards else { return };
        let mut writer = self.writer.lock().await;
        let Writer { window, spares } = &mut *writer;
        // A closed window, and when it closed: every click before that is in it or in
        // an earlier one.
        let (hand, mut handed) = tokio::sync::mpsc::channel::<(Closed, i64)>(1);
        // Set while a closed window is being written; the next one waits for it.
        let writing = AtomicBool::new(false);
        // Set when the open window is full while the last one is still being written:
        // the writer then writes the rest at once.
        let hurry = AtomicBool::new(false);
        // Measured cost of writing one key, in ns.
        let cost = AtomicU64::new(FIRST_COST.as_nanos() as u64);
        let tallying = async {
            let mut take = tokio::time::interval(TAKE_EVERY);
            take.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
            loop {
                tokio::select! {
                    _ = take.tick() => {}
                    // The only change ever sent is the stop (or the sender went away).
                    _ = stop.changed() => break,
                }
                let at = now_ms();
                self.dropped(shards.take_into(window, spares));
                let busy = writing.load(Ordering::Acquire);
                if busy || !window.is_empty() {
                    self.holding();
                } else {
                    self.caught_up(at);
                }
                hurry.store(busy && window.is_full(), Ordering::Release);
                let per_key = Duration::from_nanos(cost.load(Ordering::Relaxed));
                if !busy
                    && !window.is_empty()
                    && closes(
                        window.len(),
                        window.opened().elapsed(),
                        per_key,
                        window.is_full(),
                    )
                {
                    writing.store(true, Ordering::Release);
                    if hand.send((window.close(), at)).await.is_err() {
                        break;
                    }
                }
            }
            // Shutting down: what the last requests counted.
            let at = now_ms();
            self.dropped(shards.take_into(window, spares));
            hurry.store(true, Ordering::Release);
            let _ = hand.send((window.close(), at)).await;
            drop(hand);
        };
        let writing_out = async {
            let mut tick = tokio::time::interval(SLICE_EVERY);
            // A slice that took longer than a tick is followed by the next a tick later.
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            while let Some((mut closed, closed_at)) = handed.recv().await {
                // The first slice at once, the rest a tick apart. Without this the
                // ticks missed while waiting for the window (10 s to 5 minutes of them)
                // were made up at once, and the whole window written in a burst.
                tick.reset_immediately();
                let per_tick = SLICE.max(
                    (closed.remaining() as u128 * SLICE_EVERY.as_millis()
                        / WRITE_SPREAD.as_millis()) as usize,
                );
                while closed.remaining() > 0 {
                    let n = if hurry.load(Ordering::Acquire) {
                        closed.remaining()
                    } else {
                        tick.tick().await;
                        per_tick
                    };
                    let started = Instant::now();
                    let keys = n.min(closed.remaining());
                    self.write_slice(clicks, store, &mut closed, n).await;
                    // What a key cost, smoothed over slices (a slice that waited out
                    // retries counts as costly, which only keeps windows longer).
                    let measured = started.elapsed().as_nanos() as u64 / keys.max(1) as u64;
                    let old = cost.load(Ordering::Relaxed);
                    cost.store((old * 7 + measured) / 8, Ordering::Relaxed);
                }
                // Still outstanding until a tick finds nothing held: the open window
                // may hold clicks made since it closed.
                self.written
                    .complete_to
                    .fetch_max(closed_at, Ordering::AcqRel);
                writing.store(false, Ordering::Release);
            }
        };
        tokio::join!(tallying, writing_out);
    }

    /// Writes the next `n` keys of `closed` (and, with the last slice, its clicks known
    /// only by route key), retrying a little while the database refuses; past the
    /// retries they are dropped and counted.
    async fn write_slice<S: ClickStore + ?Sized>(
        &self,
        clicks: &Clicks,
        store: &S,
        closed: &mut Closed,
        n: usize,
    ) {
        let slice = closed.peek(n);
        let last = slice.len() + closed.unresolved().len() == closed.remaining();
        let total: u64 = slice.iter().map(|(_, c)| u64::from(c.n)).sum::<u64>()
            + if last {
                closed
                    .unresolved()
                    .iter()
                    .map(|(_, _, n)| u64::from(*n))
                    .sum()
            } else {
                0
            };
        // Who visited links with a limit so far: written with this slice, whichever
        // links it holds (the write checks their limits too).
        let people = std::mem::take(&mut *self.people.lock().unwrap_or_else(|e| e.into_inner()));
        let mut waits = RETRIES.iter();
        loop {
            let increments = match self
                .increments(clicks, store, closed, slice.len(), last)
                .await
            {
                Ok((mut inc, unknown)) => {
                    for &(link, at, person) in &people {
                        inc.add_person(link, at, Some(person), 1);
                    }
                    Some((inc, unknown))
                }
                Err(e) => {
                    tracing::warn!(error = %e, "reading the links of clicks failed");
                    None
                }
            };
            if let Some((increments, unknown)) = increments {
                match store.add_rollups(&increments, now_ms()).await {
                    Ok(exhausted) => {
                        clicks.counted_own(increments.visits(), unknown);
                        clicks.exhausted(&exhausted).await;
                        break;
                    }
                    Err(e) => tracing::warn!(error = %e, "writing clicks failed"),
                }
            }
            match waits.next() {
                Some(wait) => tokio::time::sleep(*wait).await,
                None => {
                    tracing::error!(clicks = total, "writing clicks failed; dropped");
                    self.metrics.clicks_dropped.inc_by(total);
                    // The people go back for the next write: some made clicks of a
                    // later window, still to be written.
                    let mut held = self.people.lock().unwrap_or_else(|e| e.into_inner());
                    held.extend(people);
                    held.truncate(PEOPLE_HELD);
                    break;
                }
            }
        }
        let written = closed.peek(n).len();
        closed.advance(written);
        if last {
            closed.clear_unresolved();
        }
    }

    /// The next `n` keys of `closed` as rollup increments (and, when `last`, its clicks
    /// known only by route key, resolved with one read), and how many clicks named no
    /// known link.
    async fn increments<S: ClickStore + ?Sized>(
        &self,
        clicks: &Clicks,
        store: &S,
        closed: &Closed,
        n: usize,
        last: bool,
    ) -> Result<(Increments, u64), crate::store::StoreError> {
        let owners = self.owners.names();
        let mut increments = Increments::new(clicks.referrer_cap());
        let mut unknown = 0u64;
        let mut add = |link: u64, owner: &str, key: &Key, n: u32| {
            let dims = ClickDims {
                at: key.hour_ms(),
                bot: key.bot,
                status: key.status,
                country: key.country(),
                referrer: closed.referrer(key.referrer),
                device: key.device.as_str(),
                variant: key.variant(),
                scanner: key.scanner,
            };
            increments.add(link, owner, &dims, i64::from(n));
        };
        for (key, Count { n, owner }) in closed.peek(n) {
            match owners.get(*owner) {
                Some(owner) => add(key.link, owner, key, *n),
                None => unknown += u64::from(*n),
            }
        }
        if last && !closed.unresolved().is_empty() {
            let routes: Vec<String> = closed
                .unresolved()
                .iter()
                .map(|(route, _, _)| route.to_string())
                .collect();
            let links = clicks
                .links_of(store, routes.iter().map(String::as_str))
                .await?;
            for (route, (_, key, n)) in routes.iter().zip(closed.unresolved()) {
                match links.get(route) {
                    Some(link) => add(link.link_id, &link.owner_id, key, *n),
                    None => unknown += u64::from(*n),
                }
            }
        }
        Ok((increments, unknown))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::LinkTag;
    use crate::store::{Attributed, DimCount, LinkRef, Rollup, StoreError, Totals};
    use shared::clicks::Visitor;
    use std::sync::atomic::AtomicUsize;
    use tokio::time::Instant as Clock;

    /// A click store that keeps what the recorder writes and when (tokio's clock, paused
    /// in these tests), refusing the next `refuse` writes; it answers nothing else.
    #[derive(Debug, Default)]
    struct Written {
        /// (when, link-hours, visits) per write.
        writes: std::sync::Mutex<Vec<(Clock, usize, u64)>>,
        refuse: AtomicUsize,
    }

    impl Written {
        fn writes(&self) -> Vec<(Clock, usize, u64)> {
            self.writes.lock().map(|w| w.clone()).unwrap_or_default()
        }

        fn visits(&self) -> u64 {
            self.writes().iter().map(|w| w.2).sum()
        }
    }

    #[async_trait::async_trait]
    impl ClickStore for Written {
        async fn link_refs(&self, _: &[shared::RouteKey]) -> Result<Vec<LinkRef>, StoreError> {
            Ok(Vec::new())
        }
        async fn link_refs_by_id(&self, _: &[u64]) -> Result<Vec<LinkRef>, StoreError> {
            Ok(Vec::new())
        }
        async fn stage_clicks(
            &self,
            _: &[&str],
            _: &[Attributed<'_>],
            _: i64,
            _: i64,
        ) -> Result<std::collections::HashSet<String>, StoreError> {
            Ok(Default::default())
        }
        async fn fold_staged(
            &self,
            _: u16,
            _: usize,
            _: i64,
            _: u32,
        ) -> Result<crate::store::Folded, StoreError> {
            Ok(Default::default())
        }
        async fn staged_since(&self) -> Result<Option<i64>, StoreError> {
            Ok(None)
        }
        async fn limit_count(&self, _: u64) -> Result<u64, StoreError> {
            Ok(0)
        }
        async fn forget_old_people(&self, _: i64, _: i64) -> Result<u64, StoreError> {
            Ok(0)
        }
        async fn add_rollups(
            &self,
            inc: &Increments,
            _: i64,
        ) -> Result<Vec<crate::model::Link>, StoreError> {
            let refused = self
                .refuse
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                .is_ok();
            if refused {
                return Err(StoreError::Unavailable("refused by the test".into()));
            }
            if let Ok(mut w) = self.writes.lock() {
                w.push((Clock::now(), inc.link_hours(), inc.visits()));
            }
            Ok(Vec::new())
        }
        async fn forget_click_ids(&self, _: i64) -> Result<u64, StoreError> {
            Ok(0)
        }
        async fn report_click_sources(
            &self,
            _: &[(String, Option<i64>)],
            _: i64,
            _: i64,
        ) -> Result<(), StoreError> {
            Ok(())
        }
        async fn click_sources(&self, _: i64) -> Result<Vec<(String, Option<i64>)>, StoreError> {
            Ok(Vec::new())
        }
        async fn forget_click_sources(&self, _: &[String]) -> Result<(), StoreError> {
            Ok(())
        }
        async fn click_series(
            &self,
            _: u64,
            _: i64,
            _: i64,
            _: i64,
        ) -> Result<Vec<Rollup>, StoreError> {
            Ok(Vec::new())
        }
        async fn click_dims(
            &self,
            _: u64,
            _: i64,
            _: i64,
            _: bool,
            _: i64,
        ) -> Result<Vec<DimCount>, StoreError> {
            Ok(Vec::new())
        }
        async fn owner_top_links(
            &self,
            _: &str,
            _: &[String],
            _: i64,
            _: i64,
            _: bool,
            _: i64,
        ) -> Result<Vec<(u64, Totals)>, StoreError> {
            Ok(Vec::new())
        }
        async fn owner_totals(
            &self,
            _: &str,
            _: &[String],
            _: i64,
            _: i64,
        ) -> Result<Totals, StoreError> {
            Ok(Totals::default())
        }
    }

    /// A recorder whose writer task runs over a [`Written`] store, as `serve` runs it.
    struct Rig {
        recorder: Arc<Recorder>,
        store: Arc<Written>,
        owner: crate::owners::OwnerId,
        stop: tokio::sync::watch::Sender<bool>,
        task: tokio::task::JoinHandle<()>,
    }

    impl Rig {
        fn start(refuse: usize) -> Rig {
            let owners = Owners::default();
            let owner = owners.intern("ana");
            let recorder = Arc::new(Recorder::new(true, 64 << 20, owners, Metrics::default()));
            let store = Arc::new(Written {
                refuse: AtomicUsize::new(refuse),
                ..Written::default()
            });
            let clicks = Clicks::new(96, 100, Metrics::default());
            let (stop, stopped) = tokio::sync::watch::channel(false);
            let task = tokio::spawn({
                let (recorder, store) = (recorder.clone(), store.clone());
                async move { recorder.run(&clicks, &*store, stopped).await }
            });
            Rig {
                recorder,
                store,
                owner,
                stop,
                task,
            }
        }

        /// One visit to each of `links` links (all in one hour).
        fn visit(&self, links: u64) {
            for id in 1..=links {
                let visitor = Reduced {
                    device: shared::clicks::Device::Desktop,
                    bot: false,
                    referrer: None,
                    country: None,
                    variant: None,
                    scanner: None,
                };
                let link = Clicked::Link(LinkTag {
                    id,
                    owner: self.owner,
                });
                self.recorder.record(link, 1_800_000_000_000, 302, visitor);
            }
        }

        async fn stop(self) -> Arc<Written> {
            let _ = self.stop.send(true);
            self.task.await.expect("the writer ends");
            self.store
        }
    }

    #[tokio::test(start_paused = true)]
    async fn the_writer_waits_out_a_window_then_spreads_it_in_slices() {
        let rig = Rig::start(0);
        let started = Clock::now();
        rig.visit(3_000);
        tokio::time::sleep(MIN_WINDOW - Duration::from_secs(1)).await;
        assert!(
            rig.store.writes().is_empty(),
            "written before the window closed"
        );
        tokio::time::sleep(Duration::from_secs(2)).await;
        let writes = rig.store.writes();
        // 3,000 keys at 500 a slice, one slice per SLICE_EVERY.
        assert_eq!(writes.len(), 6, "{writes:?}");
        assert!(writes.iter().all(|w| w.1 <= SLICE), "{writes:?}");
        assert_eq!(rig.store.visits(), 3_000);
        assert!(writes[0].0 - started >= MIN_WINDOW);
        for pair in writes.windows(2) {
            assert!(
                pair[1].0 - pair[0].0 >= SLICE_EVERY,
                "slices written in a burst: {:?}",
                writes.iter().map(|w| w.0 - started).collect::<Vec<_>>()
            );
        }
        rig.stop().await;
    }

    /// What `data_as_of` reads of this process: clicks held unwritten keep it at or
    /// before their time until their window is written.
    #[tokio::test(start_paused = true)]
    async fn clicks_held_unwritten_say_since_when_until_their_window_is_written() {
        let rig = Rig::start(0);
        tokio::time::sleep(TAKE_EVERY * 2).await;
        assert_eq!(rig.recorder.unwritten_since(), None, "nothing held yet");
        let before = now_ms();
        rig.visit(10);
        tokio::time::sleep(TAKE_EVERY * 2).await;
        match rig.recorder.unwritten_since() {
            Some(since) => assert!(since <= before, "{since} > {before}"),
            None => panic!("ten clicks held, yet nothing outstanding"),
        }
        tokio::time::sleep(MIN_WINDOW + Duration::from_secs(1)).await;
        assert_eq!(rig.store.visits(), 10);
        assert_eq!(rig.recorder.unwritten_since(), None, "all written");
        rig.stop().await;
    }

    #[tokio::test(start_paused = true)]
    async fn stopping_writes_what_the_tally_holds_at_once() {
        let rig = Rig::start(0);
        let started = Clock::now();
        rig.visit(1_200);
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert!(rig.store.writes().is_empty());
        let store = rig.stop().await;
        assert_eq!(store.visits(), 1_200, "a clean stop loses nothing");
        let writes = store.writes();
        assert!(
            writes
                .iter()
                .all(|w| w.0 - started < Duration::from_secs(2)),
            "the last window waited: {writes:?}"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_refused_write_is_retried_and_past_the_retries_dropped_and_counted() {
        // Refused twice, then written: nothing lost.
        let rig = Rig::start(2);
        rig.visit(10);
        let store = rig.stop().await;
        assert_eq!(store.visits(), 10);
        // Refused more often than it is retried: dropped, and counted as dropped.
        let rig = Rig::start(RETRIES.len() + 1);
        rig.visit(10);
        let recorder = rig.recorder.clone();
        let store = rig.stop().await;
        assert_eq!(store.visits(), 0);
        assert_eq!(recorder.metrics.clicks_dropped.get(), 10);
    }

    #[test]
    fn a_window_closes_when_writing_it_is_cheap_enough_or_at_its_limits() {
        let cost = Duration::from_micros(10);
        assert!(
            !closes(100, Duration::from_secs(5), cost, false),
            "too young"
        );
        assert!(
            closes(100, MIN_WINDOW, cost, false),
            "light load: every 10 s"
        );
        // A million keys take 10 s to write: more than 2% of a minute, within 2% of
        // 500 s, so such a window closes at MAX_WINDOW.
        assert!(!closes(1_000_000, Duration::from_secs(60), cost, false));
        assert!(!closes(
            1_000_000,
            MAX_WINDOW - Duration::from_secs(1),
            cost,
            false
        ));
        assert!(closes(1_000_000, MAX_WINDOW, cost, false));
        assert!(
            closes(1_000_000, Duration::from_secs(1), cost, true),
            "full"
        );
    }

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
        // Twice through, each case twice in a row: reduced, then from the table, then
        // as the last one seen.
        for _ in 0..2 {
            for (ua, referer, country) in cases.into_iter().flat_map(|c| [c, c]) {
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

//! The origin's own clicks, counted in memory until they are written.
//!
//! Two stages, so that no lock is shared by every request:
//!
//! - [`Shards`]: the redirect path appends each click to the shard of its own worker
//!   thread (a mutex only that thread and, every few milliseconds, the tally task take),
//!   alike clicks in a row once with a weight. An append touches only the log's end:
//!   a table keyed by click, as the shards were, cost a hash of the visitor and a
//!   probe per visit that the window then paid again.
//! - [`Window`]: the tally task moves the shards' counts into one window, keyed
//!   compactly (a link's id, not its route key), and bounded in bytes. A closed window
//!   becomes a sorted [`Closed`] list that the writer writes to the rollups.

use crate::cache::LinkTag;
use crate::owners::OwnerId;
use shared::clicks::Device;
use shared::scanners::Scanner;
use shared::RouteKey;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
// tokio's clock, which is std's unless a test pauses it.
use tokio::time::Instant;

/// A fast hasher: keys are the process's own numbers and reduced header values, and a
/// shard or window is bounded, so flooding one with colliding keys gains nothing.
type Hasher = foldhash::fast::RandomState;

/// A visitor reduced to what is kept, with the parts shared between alike visitors.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Reduced {
    pub device: Device,
    pub bot: bool,
    pub referrer: Option<Arc<str>>,
    pub country: Option<[u8; 2]>,
    /// The split variant the visit was sent to, if the link has a split.
    pub variant: Option<u8>,
    /// Why the visit is a scanner's (a prefetch, at the origin), when it is one.
    pub scanner: Option<Scanner>,
}

/// The link a click is about: known from the redirect cache, or (a banned code whose
/// record was never read) only by its route key, resolved when written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Clicked {
    Link(LinkTag),
    Route(RouteKey),
}

/// Alike clicks in a row, as a shard logs them.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Logged {
    link: u64,
    hour: u32,
    status: u16,
    count: Count,
    visitor: Reduced,
}

/// Clicks on one key, and whose link it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Count {
    /// Bounded by the clicks one window can see (minutes of traffic), far below 2³².
    pub n: u32,
    pub owner: OwnerId,
}

/// Alike clicks as a window counts them: the same link, hour, status and visitor, in
/// 24 bytes. Sorted, a window's keys come link by link, the rollups' own order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Key {
    pub link: u64,
    /// Hours since the Unix epoch.
    pub hour: u32,
    pub status: u16,
    pub bot: bool,
    pub device: Device,
    /// `[0, 0]`: unknown.
    pub country: [u8; 2],
    /// Index into the window's referrers; 0: none.
    pub referrer: u32,
    /// The split variant plus one; 0: none.
    pub variant: u8,
    pub scanner: Option<Scanner>,
}

/// Hashed as three words rather than field by field: a write per field was a mix of
/// the hasher's state per field, eight per click.
impl std::hash::Hash for Key {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        let [c0, c1] = self.country;
        state.write_u64(self.link);
        state.write_u64(
            u64::from(self.hour) << 32
                | u64::from(self.status) << 16
                | u64::from(self.bot) << 8
                | scanner_bits(self.scanner) << 4
                | self.device as u64,
        );
        state.write_u64(
            u64::from(self.variant) << 48
                | u64::from(c0) << 40
                | u64::from(c1) << 32
                | u64::from(self.referrer),
        );
    }
}

/// A scanner kind as the bits of a key's hash.
fn scanner_bits(scanner: Option<Scanner>) -> u64 {
    match scanner {
        None => 0,
        Some(Scanner::Network) => 1,
        Some(Scanner::Prefetch) => 2,
    }
}

impl Key {
    /// The hour's start in Unix ms.
    pub fn hour_ms(&self) -> i64 {
        i64::from(self.hour) * HOUR_MS
    }

    /// The split variant, if any.
    pub fn variant(&self) -> Option<u8> {
        self.variant.checked_sub(1)
    }

    /// The country code, empty when unknown.
    pub fn country(&self) -> &str {
        match self.country {
            [0, 0] => "",
            ref c => std::str::from_utf8(c).unwrap_or_default(),
        }
    }
}

const HOUR_MS: i64 = 3_600_000;

/// Clicks on codes known only by their route key that one shard or window holds at most
/// (banned codes whose record was never read: rare); beyond, they are dropped, counted.
const UNRESOLVED: usize = 4_096;

/// One thread's clicks since the tally task last took them, in the order they came.
#[derive(Debug, Default)]
pub struct Shard {
    log: Vec<Logged>,
    unresolved: Vec<(RouteKey, u32, u16, Reduced)>,
}

impl Shard {
    fn is_empty(&self) -> bool {
        self.log.is_empty() && self.unresolved.is_empty()
    }
}

/// The redirect path's side: a shard per worker thread, each behind its own mutex.
#[derive(Debug)]
pub struct Shards {
    slots: Box<[Mutex<Shard>]>,
    /// Entries one shard's log holds at most between takes (the tally task takes every
    /// few ms, so only a stalled task lets a shard fill); clicks beyond that are not
    /// alike the last are dropped, counted.
    cap: usize,
}

/// Every thread's place among the shards, given in turn as threads first record.
fn thread_slot() -> usize {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static SLOT: usize = NEXT.fetch_add(1, Ordering::Relaxed);
    }
    SLOT.with(|s| *s)
}

impl Shards {
    pub fn new(cap: usize) -> Self {
        let threads = std::thread::available_parallelism().map_or(4, |n| n.get());
        Shards {
            slots: (0..(threads * 2).clamp(4, 64))
                .map(|_| Mutex::default())
                .collect(),
            cap,
        }
    }

    /// Entries held in all shards.
    pub fn keys(&self) -> usize {
        self.slots
            .iter()
            .map(|s| {
                let shard = s.lock().unwrap_or_else(|e| e.into_inner());
                shard.log.len() + shard.unresolved.len()
            })
            .sum()
    }

    /// Counts one click; `false` if it had to be dropped (its shard is full).
    pub fn add(&self, clicked: Clicked, at: i64, status: u16, visitor: Reduced) -> bool {
        let hour = u32::try_from(at.div_euclid(HOUR_MS)).unwrap_or_default();
        let slot = &self.slots[thread_slot() % self.slots.len()];
        let mut shard = slot.lock().unwrap_or_else(|e| e.into_inner());
        match clicked {
            Clicked::Link(link) => {
                if let Some(last) = shard.log.last_mut() {
                    if last.link == link.id
                        && last.hour == hour
                        && last.status == status
                        && last.visitor == visitor
                    {
                        last.count.n = last.count.n.saturating_add(1);
                        return true;
                    }
                }
                if shard.log.len() >= self.cap {
                    return false;
                }
                shard.log.push(Logged {
                    link: link.id,
                    hour,
                    status,
                    count: Count {
                        n: 1,
                        owner: link.owner,
                    },
                    visitor,
                });
            }
            Clicked::Route(route) => {
                if shard.unresolved.len() >= UNRESOLVED {
                    return false;
                }
                shard.unresolved.push((route, hour, status, visitor));
            }
        }
        true
    }

    /// Moves every shard's counts into `window`, swapping each shard with a spare so
    /// that neither side allocates in the steady state. What the window has no room for
    /// stays in the spare, to go first into the next window. Returns the clicks dropped.
    pub fn take_into(&self, window: &mut Window, spares: &mut Vec<Shard>) -> u64 {
        spares.resize_with(self.slots.len(), Shard::default);
        let mut dropped = 0;
        for (slot, spare) in self.slots.iter().zip(spares.iter_mut()) {
            // What an earlier take had no room for goes first; while some of it still
            // finds none, the shard keeps its own clicks.
            if !spare.is_empty() {
                dropped += window.absorb(spare);
                if !spare.is_empty() {
                    continue;
                }
            }
            {
                let mut shard = slot.lock().unwrap_or_else(|e| e.into_inner());
                if shard.is_empty() {
                    continue;
                }
                std::mem::swap(&mut *shard, spare);
            }
            dropped += window.absorb(spare);
        }
        dropped
    }
}

/// The referrer hosts of one window, each once.
#[derive(Debug, Default)]
struct Referrers {
    names: Vec<Arc<str>>,
    ids: HashMap<Arc<str>, u32, Hasher>,
    /// The host numbered last, by address: a thread's clicks share one allocation per
    /// host (its memo's), so a run of clicks from one referrer is numbered without
    /// hashing its name again.
    last: Option<(Arc<str>, u32)>,
    bytes: usize,
}

impl Referrers {
    fn id(&mut self, host: Option<&Arc<str>>) -> u32 {
        let Some(host) = host else { return 0 };
        if let Some((last, id)) = &self.last {
            if Arc::ptr_eq(last, host) {
                return *id;
            }
        }
        let id = self.numbered(host);
        self.last = Some((host.clone(), id));
        id
    }

    fn numbered(&mut self, host: &Arc<str>) -> u32 {
        if let Some(id) = self.ids.get(host) {
            return *id;
        }
        self.names.push(host.clone());
        let id = u32::try_from(self.names.len()).unwrap_or(u32::MAX);
        self.bytes += host.len() + 64;
        self.ids.insert(host.clone(), id);
        id
    }
}

/// Clicks counted since the window opened, bounded in bytes.
#[derive(Debug)]
pub struct Window {
    counts: HashMap<Key, Count, Hasher>,
    referrers: Referrers,
    unresolved: Vec<(RouteKey, Key, u32)>,
    opened: Instant,
    clicks: u64,
    max_bytes: usize,
    /// A new key found no room: the window should close now.
    full: bool,
}

/// What one slot of a hash table of `capacity` entries costs: the entry and its
/// control byte, with the table's spare eighth.
fn table_bytes(capacity: usize) -> usize {
    capacity.div_ceil(7) * 8 * (std::mem::size_of::<(Key, Count)>() + 1)
}

impl Window {
    pub fn new(max_bytes: usize) -> Self {
        Window {
            counts: HashMap::default(),
            referrers: Referrers::default(),
            unresolved: Vec::new(),
            opened: Instant::now(),
            clicks: 0,
            max_bytes,
            full: false,
        }
    }

    /// A window for about as many keys as `keys` (the last window's): its table is
    /// sized once instead of doubling its way there, each doubling a pass over every
    /// key so far, to fresh memory (under uniform traffic over a million links, a cache
    /// miss per recorded click). At most half the bound is reserved this way; untouched,
    /// the reserved slots are address space, not resident memory.
    fn expecting(max_bytes: usize, keys: usize) -> Self {
        let mut window = Window::new(max_bytes);
        let most = (max_bytes / 2) / (std::mem::size_of::<(Key, Count)>() + 1) / 8 * 7;
        window.counts.reserve(keys.min(most));
        window
    }

    /// The memory the window holds, about.
    pub fn bytes(&self) -> usize {
        table_bytes(self.counts.capacity())
            + self.referrers.bytes
            + self.unresolved.capacity() * std::mem::size_of::<(RouteKey, Key, u32)>()
    }

    /// Distinct keys held: what writing the window costs, about, in rows.
    pub fn len(&self) -> usize {
        self.counts.len() + self.unresolved.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn opened(&self) -> Instant {
        self.opened
    }

    /// Whether a click found no room since the window opened.
    pub fn is_full(&self) -> bool {
        self.full
    }

    /// Whether one more key fits without the table growing past the bound.
    fn has_room(&self) -> bool {
        let grows = self.counts.len() >= self.counts.capacity();
        !grows
            || self.bytes() - table_bytes(self.counts.capacity())
                + table_bytes((self.counts.capacity() * 2).max(8))
                <= self.max_bytes
    }

    /// The compact key of alike clicks, their referrer numbered in this window.
    fn key(&mut self, link: u64, hour: u32, status: u16, visitor: &Reduced) -> Key {
        Key {
            link,
            hour,
            status,
            bot: visitor.bot,
            device: visitor.device,
            country: visitor.country.unwrap_or([0, 0]),
            referrer: self.referrers.id(visitor.referrer.as_ref()),
            variant: visitor.variant.map_or(0, |v| v.saturating_add(1)),
            scanner: visitor.scanner,
        }
    }

    /// Adds a shard's clicks. What finds no room (a new key, the window full) stays
    /// in the shard, for the next window. Returns the clicks dropped (those known only
    /// by route key, past their bound).
    fn absorb(&mut self, shard: &mut Shard) -> u64 {
        shard.log.retain(|logged| {
            let key = self.key(logged.link, logged.hour, logged.status, &logged.visitor);
            if self.has_room() {
                // One hash and one probe for a new key, not a lookup and then an
                // insert. Only with room: taking an entry may grow the table.
                let held = self.counts.entry(key).or_insert(Count {
                    n: 0,
                    owner: logged.count.owner,
                });
                held.n = held.n.saturating_add(logged.count.n);
            } else if let Some(held) = self.counts.get_mut(&key) {
                held.n = held.n.saturating_add(logged.count.n);
            } else {
                self.full = true;
                return true;
            }
            self.clicks += u64::from(logged.count.n);
            false
        });
        let mut dropped = 0;
        for (route, hour, status, visitor) in shard.unresolved.drain(..) {
            if self.unresolved.len() >= UNRESOLVED {
                dropped += 1;
                continue;
            }
            let key = self.key(0, hour, status, &visitor);
            self.clicks += 1;
            self.unresolved.push((route, key, 1));
        }
        dropped
    }

    /// The window's counts, sorted, for writing; the window is left empty and open
    /// again, its memory given back.
    pub fn close(&mut self) -> Closed {
        let next = Window::expecting(self.max_bytes, self.counts.len());
        let closed = std::mem::replace(self, next);
        let mut entries: Vec<(Key, Count)> = closed.counts.into_iter().collect();
        entries.sort_unstable_by_key(|(k, _)| *k);
        Closed {
            entries,
            next: 0,
            referrers: closed.referrers.names,
            unresolved: closed.unresolved,
            clicks: closed.clicks,
        }
    }
}

/// A closed window, being written in order.
#[derive(Debug, Default)]
pub struct Closed {
    entries: Vec<(Key, Count)>,
    next: usize,
    referrers: Vec<Arc<str>>,
    unresolved: Vec<(RouteKey, Key, u32)>,
    /// Clicks it counts.
    pub clicks: u64,
}

impl Closed {
    /// Keys not yet written.
    pub fn remaining(&self) -> usize {
        self.entries.len() - self.next + self.unresolved.len()
    }

    /// The next `n` keys to write, without moving on ([`Closed::advance`] does, once
    /// they are written).
    pub fn peek(&self, n: usize) -> &[(Key, Count)] {
        &self.entries[self.next..(self.next + n).min(self.entries.len())]
    }

    pub fn advance(&mut self, n: usize) {
        self.next = (self.next + n).min(self.entries.len());
    }

    /// Clicks known only by route key; the writer resolves them with the last slice.
    pub fn unresolved(&self) -> &[(RouteKey, Key, u32)] {
        &self.unresolved
    }

    pub fn clear_unresolved(&mut self) {
        self.unresolved.clear();
    }

    /// A referrer host by its index in this window; empty for none.
    pub fn referrer(&self, id: u32) -> &str {
        id.checked_sub(1)
            .and_then(|i| self.referrers.get(i as usize))
            .map_or("", |r| r.as_ref())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::owners::Owners;

    fn visitor(referrer: Option<&str>) -> Reduced {
        Reduced {
            device: Device::Desktop,
            bot: false,
            referrer: referrer.map(Arc::from),
            country: Some(*b"NL"),
            variant: None,
            scanner: None,
        }
    }

    fn tag(owners: &Owners, id: u64) -> Clicked {
        Clicked::Link(LinkTag {
            id,
            owner: owners.intern("ana"),
        })
    }

    #[test]
    fn alike_clicks_are_one_key_with_a_count_and_closed_in_link_order() {
        let owners = Owners::default();
        let shards = Shards::new(1_000);
        let mut window = Window::new(1 << 20);
        let mut spares = Vec::new();
        for link in [7, 3, 7, 7] {
            assert!(shards.add(tag(&owners, link), 0, 302, visitor(Some("t.co"))));
        }
        assert!(shards.add(tag(&owners, 3), 0, 302, visitor(None)));
        assert_eq!(shards.take_into(&mut window, &mut spares), 0);
        assert_eq!((window.len(), window.clicks), (3, 5));
        let closed = window.close();
        assert!(window.is_empty(), "a new window opens");
        let written: Vec<(u64, &str, u32)> = closed
            .peek(10)
            .iter()
            .map(|(k, c)| (k.link, closed.referrer(k.referrer), c.n))
            .collect();
        assert_eq!(written, [(3, "", 1), (3, "t.co", 1), (7, "t.co", 3)]);
    }

    #[test]
    fn a_full_window_keeps_what_it_cannot_hold_for_the_next_one() {
        let owners = Owners::default();
        let shards = Shards::new(100_000);
        // Room for a table of 1,792 keys, not for the next (3,584).
        let bound = table_bytes(1_792) + 1_000;
        let mut window = Window::new(bound);
        let mut spares = Vec::new();
        for link in 0..5_000 {
            assert!(shards.add(tag(&owners, link), 0, 302, visitor(None)));
        }
        let mut written = 0;
        for _ in 0..3 {
            assert_eq!(
                shards.take_into(&mut window, &mut spares),
                0,
                "nothing dropped"
            );
            assert!(window.bytes() <= bound, "{}", window.bytes());
            written += window.close().remaining();
        }
        assert_eq!(written, 5_000, "every click in some window");
    }

    #[test]
    fn the_next_window_has_room_for_the_last_ones_keys_within_its_bound() {
        let owners = Owners::default();
        let shards = Shards::new(100_000);
        let mut spares = Vec::new();
        let fill = |window: &mut Window, spares: &mut Vec<Shard>| {
            for link in 0..5_000 {
                assert!(shards.add(tag(&owners, link), 0, 302, visitor(None)));
            }
            shards.take_into(window, spares);
        };
        let mut window = Window::new(64 << 20);
        fill(&mut window, &mut spares);
        assert_eq!(window.len(), 5_000);
        window.close();
        assert!(
            window.counts.capacity() >= 5_000,
            "sized for the last window's keys"
        );
        // A bound that a table for them would not fit in: the reservation stays inside.
        let bound = table_bytes(1_792) + 1_000;
        let mut window = Window::new(bound);
        fill(&mut window, &mut spares);
        while !window.is_empty() {
            window.close();
            assert!(window.bytes() <= bound, "{} of {bound}", window.bytes());
            shards.take_into(&mut window, &mut spares);
        }
    }

    #[test]
    fn a_full_shard_refuses_new_entries_but_counts_clicks_alike_the_last() {
        let owners = Owners::default();
        let shards = Shards::new(2);
        assert!(shards.add(tag(&owners, 1), 0, 302, visitor(None)));
        assert!(shards.add(tag(&owners, 2), 0, 302, visitor(None)));
        assert!(!shards.add(tag(&owners, 3), 0, 302, visitor(None)));
        assert!(shards.add(tag(&owners, 2), 0, 302, visitor(None)));
        assert!(!shards.add(tag(&owners, 1), 0, 302, visitor(None)));
        assert!(
            !shards.add(tag(&owners, 2), 0, 302, visitor(Some("t.co"))),
            "another visitor is another entry"
        );
        let mut window = Window::new(1 << 20);
        shards.take_into(&mut window, &mut Vec::new());
        assert_eq!((window.len(), window.clicks), (2, 3));
    }

    #[test]
    fn clicks_alike_but_not_in_a_row_are_one_key_in_the_window() {
        let owners = Owners::default();
        let shards = Shards::new(100);
        for link in [1, 2, 1, 2, 1] {
            assert!(shards.add(tag(&owners, link), 0, 302, visitor(Some("t.co"))));
            assert!(shards.add(tag(&owners, link), 0, 302, visitor(Some("t.co"))));
        }
        assert_eq!(shards.keys(), 5, "runs are one entry each");
        let mut window = Window::new(1 << 20);
        shards.take_into(&mut window, &mut Vec::new());
        let closed = window.close();
        let counted: Vec<(u64, u32)> = closed.peek(10).iter().map(|(k, c)| (k.link, c.n)).collect();
        assert_eq!(counted, [(1, 6), (2, 4)]);
    }
}

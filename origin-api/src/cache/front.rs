//! Each worker thread's own copy of what nearly every visit reads: its domain's
//! settings, the denylist, and the links it served twice in a row.
//!
//! The shared cache answers under a lock (a `quick_cache` shard's, the settings' and the
//! denylist's), and each answer is an `Arc` whose count every visiting thread changes.
//! Under one hot link every request took those same locks and wrote that same count:
//! the cores passed one cache line back and forth. A visit answered from this thread's
//! front reads two atomics that change only when something is written, and changes no
//! memory another thread uses.
//!
//! Nothing here outlives what it copies: a setting or the denylist is kept until the
//! shared copy's own expiry, an entry until its own; any write of a key, any ban change
//! and [`RedirectCache::forget_all`](super::RedirectCache::forget_all) move a generation
//! counter, and a copy taken under an older generation is not used again. A generation
//! is read *before* the shared cache is, so a write that lands between the two leaves
//! the copy already stale.

use super::entry::{Entry, DENYLIST_TTL, SETTINGS_TTL};
use shared::{Denylist, DomainSettings, RouteKey};
use std::cell::RefCell;
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// Slots for entries per thread: direct-mapped by the key's hash.
const SLOTS: usize = 256;
/// Write generations, by key hash: a write moves one, and invalidates only the copies of
/// keys that share it.
const GENERATIONS: usize = 1024;
/// Domains whose settings a thread keeps.
const DOMAINS: usize = 8;

/// The shared side: which cache the fronts copy, and its generations.
pub(super) struct Fronts {
    id: u64,
    keys: Box<[AtomicU64]>,
    hasher: foldhash::fast::FixedState,
}

impl Default for Fronts {
    fn default() -> Self {
        static IDS: AtomicU64 = AtomicU64::new(1);
        Fronts {
            id: IDS.fetch_add(1, Ordering::Relaxed),
            keys: (0..GENERATIONS).map(|_| AtomicU64::new(0)).collect(),
            hasher: foldhash::fast::FixedState::default(),
        }
    }
}

/// What a thread holds.
#[derive(Default)]
struct Front {
    /// The [`Fronts::id`] these copies come from; another cache's visit starts afresh.
    cache: u64,
    /// Each with the moment its shared copy expires: a deadline compared with the clock
    /// costs less than the age computed from it on every visit.
    /// And the generation of domains it was copied under.
    /// Held in an `Arc` of this thread's own, so a visit's copy costs one count that no
    /// other core touches, whatever the settings hold.
    settings: Vec<(Box<str>, Arc<DomainSettings>, Instant, u64)>,
    /// This thread's own copy, the generation it was taken under, when the shared one
    /// expires.
    deny: Option<(Arc<Denylist>, u64, Instant)>,
    slots: Vec<Slot>,
}

#[derive(Default)]
struct Slot {
    /// The hash of the last key that missed here: a key seen twice in a row is copied.
    seen: u64,
    held: Option<Held>,
}

struct Held {
    key: Box<str>,
    /// This thread's own copy ([`Entry::detached`]): cloning it touches no other core's
    /// cache line.
    entry: Entry,
    generation: u64,
}

thread_local! {
    static FRONT: RefCell<Front> = RefCell::default();
}

/// A key about to be written, by its hash.
pub(super) struct Written(u64);

/// Where a key that missed the front would go, and the generation read before the
/// shared cache was asked.
pub(super) struct Miss {
    hash: u64,
    generation: u64,
}

impl Fronts {
    /// Runs `f` on this thread's front for this cache.
    fn with<T>(&self, f: impl FnOnce(&mut Front) -> T) -> T {
        FRONT.with(|front| {
            let mut front = front.borrow_mut();
            if front.cache != self.id {
                *front = Front {
                    cache: self.id,
                    ..Front::default()
                };
            }
            f(&mut front)
        })
    }

    fn generation(&self, hash: u64) -> &AtomicU64 {
        &self.keys[(hash as usize) % GENERATIONS]
    }

    /// The entry for `route` from this thread's copy, or where to keep it once the shared
    /// cache has it.
    pub(super) fn entry(&self, route: &RouteKey, now: Instant) -> Result<Entry, Miss> {
        let hash = self.hasher.hash_one(route.as_str());
        let generation = self.generation(hash).load(Ordering::Acquire);
        self.with(|front| {
            let slot = front.slots.get((hash as usize) % SLOTS);
            match slot.and_then(|s| s.held.as_ref()) {
                Some(held)
                    if held.generation == generation
                        && *held.key == *route.as_str()
                        && held.entry.fresh(now) =>
                {
                    Ok(held.entry.clone())
                }
                _ => Err(Miss { hash, generation }),
            }
        })
    }

    /// The shared cache answered `route` with `entry` after `miss`: the second miss in a
    /// row of the same key in its slot copies it.
    pub(super) fn saw(&self, route: &RouteKey, miss: Miss, entry: &Entry) {
        self.with(|front| {
            if front.slots.is_empty() {
                front.slots.resize_with(SLOTS, Slot::default);
            }
            let Some(slot) = front.slots.get_mut((miss.hash as usize) % SLOTS) else {
                return;
            };
            if slot.seen != miss.hash {
                slot.seen = miss.hash;
                return;
            }
            slot.held = Some(Held {
                key: route.as_str().into(),
                entry: entry.detached(),
                generation: miss.generation,
            });
        });
    }

    /// What [`Fronts::changed`] takes: taken before the key is moved into the cache.
    pub(super) fn key(&self, key: &str) -> Written {
        Written(self.hasher.hash_one(key))
    }

    /// The key was written (after the shared cache holds what was written): copies of
    /// it are not used again.
    pub(super) fn changed(&self, key: Written) {
        self.generation(key.0).fetch_add(1, Ordering::AcqRel);
    }

    /// Everything may have changed.
    pub(super) fn changed_all(&self) {
        for g in self.keys.iter() {
            g.fetch_add(1, Ordering::AcqRel);
        }
    }

    /// `domain`'s settings, if this thread holds them from a shared copy not yet expired
    /// taken under `generation`.
    pub(super) fn settings(
        &self,
        domain: &str,
        generation: u64,
        now: Instant,
    ) -> Option<Arc<DomainSettings>> {
        self.with(|front| {
            front
                .settings
                .iter()
                .find(|(d, _, until, g)| **d == *domain && now < *until && *g == generation)
                .map(|(_, s, ..)| s.clone())
        })
    }

    /// Keeps `settings` of `domain`, from the shared copy read `at` under `generation`,
    /// until that copy expires.
    pub(super) fn keep_settings(
        &self,
        domain: &str,
        settings: &DomainSettings,
        generation: u64,
        at: Instant,
    ) {
        let until = at + SETTINGS_TTL;
        self.with(|front| {
            front.settings.retain(|(d, ..)| **d != *domain);
            if front.settings.len() >= DOMAINS {
                front.settings.remove(0);
            }
            front
                .settings
                .push((domain.into(), Arc::new(settings.clone()), until, generation));
        });
    }

    /// This thread's denylist, if it was copied under `generation` from a shared copy
    /// not yet expired.
    pub(super) fn denylist(&self, generation: u64, now: Instant) -> Option<Arc<Denylist>> {
        self.with(|front| match &front.deny {
            Some((deny, g, until)) if *g == generation && now < *until => Some(deny.clone()),
            _ => None,
        })
    }

    /// Keeps a copy of `deny`, the shared denylist read `at` under `generation`, until
    /// that copy expires.
    pub(super) fn keep_denylist(&self, deny: &Denylist, generation: u64, at: Instant) {
        let until = at + DENYLIST_TTL;
        self.with(|front| front.deny = Some((Arc::new(deny.clone()), generation, until)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::entry::{DENYLIST_TTL, SETTINGS_TTL};
    use std::time::Duration;

    /// A shared copy read `age` ago.
    fn read_ago(age: Duration) -> Instant {
        Instant::now()
            .checked_sub(age)
            .expect("the clock goes back that far")
    }

    /// Another process's ban reaches this one's visits only through the shared copy's
    /// re-read: a thread's copy must not outlive it.
    #[test]
    fn a_threads_copies_last_no_longer_than_the_shared_ones() {
        let fronts = Fronts::default();
        let deny = Denylist::default();
        let settings = DomainSettings::default();
        let just = Duration::from_millis(100);
        fronts.keep_denylist(&deny, 7, read_ago(DENYLIST_TTL - just * 10));
        fronts.keep_settings(
            "s.example",
            &settings,
            3,
            read_ago(SETTINGS_TTL - just * 10),
        );
        assert!(
            fronts.denylist(7, Instant::now()).is_some(),
            "a copy younger than the shared one's TTL serves"
        );
        assert!(
            fronts.denylist(8, Instant::now()).is_none(),
            "a ban change since the copy voids it"
        );
        assert!(fronts.settings("s.example", 3, Instant::now()).is_some());
        assert!(
            fronts.settings("s.example", 4, Instant::now()).is_none(),
            "a change of domains since the copy voids it"
        );
        fronts.keep_denylist(&deny, 7, read_ago(DENYLIST_TTL + just));
        fronts.keep_settings("s.example", &settings, 3, read_ago(SETTINGS_TTL + just));
        assert!(
            fronts.denylist(7, Instant::now()).is_none(),
            "expired with the shared copy"
        );
        assert!(
            fronts.settings("s.example", 3, Instant::now()).is_none(),
            "expired with the shared copy"
        );
    }
}

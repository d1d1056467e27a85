//! The origin's redirect cache: what `GET /{code}` needs, kept in memory so a hot link
//! costs no database round trip.
//!
//! - Entries live in `quick_cache` (S3-FIFO): a hit takes a shard's read lock and sets a
//!   bit, with no per-read bookkeeping, so a read stays cheap with a million links held.
//!   Each entry carries its own expiry, checked on read.
//! - A miss is loaded once however many visitors ask at the same moment (single flight:
//!   moka runs one loader per key and hands its result to every waiter).
//! - Unknown codes are remembered briefly, in a cache of their own bounded in bytes (a
//!   scan cannot push real links out), and generated codes past
//!   the id ceiling are answered without any read ([`crate::ceiling`]), so a scan of
//!   random codes does not become a scan of the database.
//! - This process's own writes put the new version in place at once, and never let an
//!   older copy replace a newer one (the version fence); other processes' writes show
//!   after at most the positive TTL (`--redirect-cache-ttl`, [`POSITIVE_TTL`] by default).
//! - Bans are not folded into entries: the active bans are held as one denylist,
//!   exactly as the edge holds its snapshot, re-read every `DENYLIST_TTL` and at once
//!   after this process changes a ban.
//! - Each worker thread keeps its own copy of the settings, the denylist and the links it
//!   serves most ([`front`]), so that a hot link's visits share no lock and no counter.

mod entry;
mod front;
pub mod served;

pub use entry::{Entry, LinkTag, DENYLIST_TTL, SETTINGS_TTL};

use crate::ceiling::Ceilings;
use crate::model::Link;
use crate::owners::Owners;
use crate::store;
use crate::store::{SegmentSource, StoreError};
use moka::future::Cache;
use shared::{CodeKind, Denylist, DomainSettings, EdgeRecord, KeyRing, PreparedRecord, RouteKey};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

/// How long a known link is served from memory without asking the database, unless
/// configured otherwise.
pub const POSITIVE_TTL: Duration = Duration::from_secs(60);
/// How long an unknown code is remembered as unknown.
pub const NEGATIVE_TTL: Duration = Duration::from_secs(10);
/// `d` give or take up to a tenth, so that entries loaded together do not all expire
/// (and come back to the database) in the same instant.
fn jittered(d: Duration) -> Duration {
    use std::cell::Cell;
    use std::hash::{BuildHasher, RandomState};
    thread_local! {
        // xorshift64, seeded once per thread from std's random keys.
        static STATE: Cell<u64> = Cell::new(RandomState::new().hash_one(0u8) | 1);
    }
    let x = STATE.with(|s| {
        let mut x = s.get();
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        s.set(x);
        x
    });
    // A factor in [0.9, 1.1).
    d.mul_f64(0.9 + (x % 2_000) as f64 / 10_000.0)
}

impl Entry {
    fn new(found: Option<(PreparedRecord, LinkTag)>, positive_ttl: Duration) -> Self {
        let ttl = if found.is_some() {
            positive_ttl
        } else {
            NEGATIVE_TTL
        };
        let (record, link) = found.unzip();
        Entry {
            record,
            link,
            expires: Instant::now() + jittered(ttl),
        }
    }

    fn version(&self) -> u64 {
        self.record.as_ref().map_or(0, |r| r.version)
    }

    /// A copy that shares no memory with this one (see [`front`]).
    fn detached(&self) -> Self {
        Entry {
            record: self.record.as_ref().map(PreparedRecord::detached),
            ..self.clone()
        }
    }

    fn fresh(&self, now: Instant) -> bool {
        now < self.expires
    }
}

/// The memory unknown codes may take (keys and bookkeeping): about 200,000 of them.
pub const NEGATIVE_BYTES: u64 = 16 << 20;

/// A negative entry's weight: its key and what quick_cache keeps beside it.
#[derive(Debug, Clone, Copy)]
struct KeyBytes;

impl quick_cache::Weighter<Key, Entry> for KeyBytes {
    fn weight(&self, key: &Key, _: &Entry) -> u64 {
        key.len() as u64 + 64
    }
}

/// A route key as the cache holds it: up to 24 bytes within the table's slot.
type Key = compact_str::CompactString;

/// Writes of one key are serialized on one of these, so that comparing versions and
/// replacing is one step; reads take none.
const WRITE_STRIPES: usize = 64;

/// The reads the redirect path needs; the database has them.
#[async_trait::async_trait]
pub trait RedirectSource: Send + Sync {
    async fn get_link(&self, domain: &str, code: &str) -> Result<Option<Link>, StoreError>;
    async fn denylist(&self) -> Result<shared::DenylistSnapshot, StoreError>;
    async fn domain_settings(&self, domain: &str) -> Result<DomainSettings, StoreError>;
    /// The end of `domain`'s code sequence ([`crate::ceiling`]); `u64::MAX` for a domain
    /// holding imported codes.
    async fn code_ceiling(&self, domain: &str) -> Result<u64, StoreError>;
    async fn served_domains(&self) -> Result<Vec<String>, StoreError>;
}

#[async_trait::async_trait]
impl RedirectSource for crate::db::Db {
    async fn get_link(&self, domain: &str, code: &str) -> Result<Option<Link>, StoreError> {
        store::links::get(self, domain, code).await
    }
    async fn denylist(&self) -> Result<shared::DenylistSnapshot, StoreError> {
        store::bans::denylist(self).await
    }
    async fn domain_settings(&self, domain: &str) -> Result<DomainSettings, StoreError> {
        store::domains::settings(self, domain).await
    }
    async fn code_ceiling(&self, domain: &str) -> Result<u64, StoreError> {
        // Codes imported from another shortener may have the generated shape with any
        // number: a domain that holds them has no ceiling (it is never lowered again).
        if store::foreign_codes::window(self, domain).await?.is_some() {
            return Ok(u64::MAX);
        }
        SegmentSource::segment_ceiling(self, &crate::model::sequence::code_sequence(domain)).await
    }
    async fn served_domains(&self) -> Result<Vec<String>, StoreError> {
        store::domains::served(self).await
    }
}

/// The active bans, held for [`DENYLIST_TTL`]; a generation counter keeps a read that
/// started before a ban change from being kept after it.
#[derive(Default)]
struct DenyMemo {
    held: RwLock<Option<(Arc<Denylist>, Instant)>>,
    generation: AtomicU64,
    reading: tokio::sync::Mutex<()>,
}

impl DenyMemo {
    /// The denylist and when it was read, if that is less than [`DENYLIST_TTL`] before
    /// `now`.
    fn fresh(&self, now: Instant) -> Option<(Arc<Denylist>, Instant)> {
        let held = self.held.read().unwrap_or_else(|e| e.into_inner());
        held.as_ref()
            .filter(|(_, at)| now.saturating_duration_since(*at) < DENYLIST_TTL)
            .map(|(deny, at)| (deny.clone(), *at))
    }
}

/// Each domain's settings as read, and when.
type HeldSettings = HashMap<String, (Arc<DomainSettings>, Instant)>;

/// Route key (`domain/code`) → entry, plus domain settings, the denylist and the id
/// ceiling. Cheap to clone; clones share everything.
#[derive(Clone)]
pub struct RedirectCache {
    entries: Arc<quick_cache::sync::Cache<Key, Entry>>,
    /// Unknown codes, apart: their keys are whatever visitors send, so they are bounded
    /// in bytes ([`NEGATIVE_BYTES`]) and cannot push real links out of `entries`.
    negatives: Arc<quick_cache::sync::Cache<Key, Entry, KeyBytes>>,
    /// Only to run one load per key at a time: a result is dropped from here as soon as
    /// its waiters have it, and kept in `entries`.
    /// With the generation of links it was read under.
    loads: Cache<String, (Entry, u64)>,
    /// Moves when every entry is forgotten ([`RedirectCache::forget_all`]): a read begun
    /// under an older one is not kept.
    links_generation: Arc<AtomicU64>,
    writes: Arc<[std::sync::Mutex<()>]>,
    settings: Arc<RwLock<HeldSettings>>,
    /// Moves with every change of a domain (here, or elsewhere as announced): a copy of
    /// settings taken under an older one is not used again.
    domains_generation: Arc<AtomicU64>,
    deny: Arc<DenyMemo>,
    front: Arc<front::Fronts>,
    ceilings: Ceilings,
    served: Arc<crate::cache::served::ServedDomains>,
    owners: Owners,
    /// Links read from the database on a miss.
    lookups: prometheus_client::metrics::counter::Counter,
    positive_ttl: Duration,
}

impl std::fmt::Debug for RedirectCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedirectCache")
            .field("entries", &self.entries.len())
            .finish()
    }
}

impl RedirectCache {
    /// A cache of at most `capacity` route keys.
    pub fn new(capacity: u64) -> Self {
        Self::counting(capacity, POSITIVE_TTL, Default::default())
    }

    /// As [`RedirectCache::new`], keeping known links for `positive_ttl` and counting the
    /// database reads of misses into `lookups`.
    pub fn counting(
        capacity: u64,
        positive_ttl: Duration,
        lookups: prometheus_client::metrics::counter::Counter,
    ) -> Self {
        RedirectCache {
            positive_ttl,
            lookups,
            entries: Arc::new(quick_cache::sync::Cache::new(
                usize::try_from(capacity).unwrap_or(usize::MAX),
            )),
            negatives: Arc::new(quick_cache::sync::Cache::with_weighter(
                (NEGATIVE_BYTES / 100) as usize,
                NEGATIVE_BYTES,
                KeyBytes,
            )),
            loads: Cache::builder().max_capacity(100_000).build(),
            links_generation: Arc::default(),
            writes: (0..WRITE_STRIPES)
                .map(|_| std::sync::Mutex::new(()))
                .collect(),
            settings: Arc::default(),
            domains_generation: Arc::default(),
            deny: Arc::default(),
            front: Arc::default(),
            ceilings: Ceilings::default(),
            served: Arc::default(),
            owners: Owners::default(),
        }
    }

    /// The owners of the links this cache holds, by number ([`LinkTag::owner`]).
    pub fn owners(&self) -> &Owners {
        &self.owners
    }

    /// What an entry holds of a link read from the database.
    fn found(&self, link: Link) -> (PreparedRecord, LinkTag) {
        let tag = LinkTag {
            id: link.link_id,
            owner: self.owners.intern(&link.owner_id),
        };
        (PreparedRecord::new(link.edge_record(false)), tag)
    }

    /// Whether this origin serves `domain` (holds a link on it or its settings); an
    /// unknown host costs no read ([`crate::cache::served`]).
    pub async fn serves<S: RedirectSource + ?Sized>(
        &self,
        store: &S,
        domain: &str,
    ) -> Result<bool, StoreError> {
        self.served
            .contains(domain, || store.served_domains())
            .await
    }

    /// The ceilings this cache checks generated codes against, one per domain; the
    /// allocators raise them.
    pub fn ceilings(&self) -> &Ceilings {
        &self.ceilings
    }

    /// A domain's settings, read at most once per [`SETTINGS_TTL`] (domains are few, and
    /// a read at expiry by several visitors at once is harmless). `now`: the visit's
    /// moment, read once for all of its lookups (the clock was a tenth of a cached
    /// visit's instructions when each read it).
    pub async fn settings<S: RedirectSource + ?Sized>(
        &self,
        store: &S,
        domain: &str,
        now: Instant,
    ) -> Result<Arc<DomainSettings>, StoreError> {
        if let Some(settings) = self.held_settings(domain, now) {
            return Ok(settings);
        }
        let generation = self.domains_generation.load(Ordering::Acquire);
        // Boxed, as every read on the redirect path: a future holds what each of its
        // awaits may need, and these reads made a cached visit's future almost 5 KB,
        // copied several times per request on its way through hyper. A box costs only
        // the visits that read.
        let settings = Arc::new(Box::pin(store.domain_settings(domain)).await?);
        // A change of domains meanwhile: answer this visit with what was read, keep
        // nothing of it.
        if self.domains_generation.load(Ordering::Acquire) != generation {
            return Ok(settings);
        }
        let at = Instant::now();
        let mut held = self.settings.write().unwrap_or_else(|e| e.into_inner());
        // Bounded: drop everything rather than grow with junk Host headers.
        if held.len() >= 10_000 {
            held.clear();
        }
        held.insert(domain.to_owned(), (settings.clone(), at));
        drop(held);
        self.front.keep_settings(domain, &settings, generation, at);
        Ok(settings)
    }

    /// `domain`'s settings if they are in memory and fresh at `now`: this thread's copy,
    /// else the shared one.
    pub fn held_settings(&self, domain: &str, now: Instant) -> Option<Arc<DomainSettings>> {
        // The generation first, as for the denylist.
        let generation = self.domains_generation.load(Ordering::Acquire);
        if let Some(settings) = self.front.settings(domain, generation, now) {
            return Some(settings);
        }
        let held = self.settings.read().unwrap_or_else(|e| e.into_inner());
        let (settings, at) = held.get(domain)?;
        if now.saturating_duration_since(*at) >= SETTINGS_TTL {
            return None;
        }
        self.front.keep_settings(domain, settings, generation, *at);
        Some(settings.clone())
    }

    /// A domain was registered, changed or removed (here, or elsewhere as announced):
    /// every visit from now on reads the settings and the served domains again.
    pub fn domains_changed(&self) {
        self.domains_generation.fetch_add(1, Ordering::AcqRel);
        self.settings
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
        self.served.forget();
    }

    /// The active bans, read at most once per [`DENYLIST_TTL`] (and by one caller), as
    /// of `now`.
    pub async fn denylist<S: RedirectSource + ?Sized>(
        &self,
        store: &S,
        now: Instant,
    ) -> Result<Arc<Denylist>, StoreError> {
        if let Some(deny) = self.held_denylist(now) {
            return Ok(deny);
        }
        Box::pin(self.read_denylist(store)).await
    }

    /// The active bans if they are in memory and fresh at `now`: this thread's copy, else
    /// the shared one.
    pub fn held_denylist(&self, now: Instant) -> Option<Arc<Denylist>> {
        // The generation first: a ban change after this read leaves any copy made from
        // what is read below stale.
        let generation = self.deny.generation.load(Ordering::Acquire);
        if let Some(deny) = self.front.denylist(generation, now) {
            return Some(deny);
        }
        let (deny, at) = self.deny.fresh(now)?;
        self.front.keep_denylist(&deny, generation, at);
        Some(deny)
    }

    async fn read_denylist<S: RedirectSource + ?Sized>(
        &self,
        store: &S,
    ) -> Result<Arc<Denylist>, StoreError> {
        let _reading = self.deny.reading.lock().await;
        if let Some(deny) = self.deny.fresh(Instant::now()) {
            return Ok(deny.0);
        }
        let generation = self.deny.generation.load(Ordering::Acquire);
        let deny = Arc::new(Denylist::from(store.denylist().await?));
        if self.deny.generation.load(Ordering::Acquire) == generation {
            let at = Instant::now();
            let mut held = self.deny.held.write().unwrap_or_else(|e| e.into_inner());
            *held = Some((deny.clone(), at));
            drop(held);
            self.front.keep_denylist(&deny, generation, at);
        }
        Ok(deny)
    }

    /// The entry for `route` if it is in memory and fresh at `now`: this thread's copy,
    /// else the shared one.
    pub fn cached(&self, route: &RouteKey, now: Instant) -> Option<Entry> {
        let miss = match self.front.entry(route, now) {
            Ok(entry) => return Some(entry),
            Err(miss) => miss,
        };
        let entry = self.held(route.as_str(), now)?;
        self.front.saw(route, miss, &entry);
        Some(entry)
    }

    fn held(&self, key: &str, now: Instant) -> Option<Entry> {
        if let Some(entry) = self.entries.get(key).filter(|e| e.fresh(now)) {
            return Some(entry);
        }
        self.negatives.get(key).filter(|e| e.fresh(now))
    }

    fn stripe(&self, key: &str) -> std::sync::MutexGuard<'_, ()> {
        use std::hash::{BuildHasher, RandomState};
        // One fixed hasher per process is enough to spread keys over the stripes.
        static STRIPES: std::sync::OnceLock<RandomState> = std::sync::OnceLock::new();
        let hash = STRIPES.get_or_init(RandomState::new).hash_one(key);
        let lock = &self.writes[(hash as usize) % self.writes.len()];
        lock.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Keeps `entry` for `key` unless a fresh entry of a higher version (`strictly`:
    /// of the same version too) is held; returns whichever is kept.
    fn put(&self, key: &str, entry: Entry, strictly: bool) -> Entry {
        let _write = self.stripe(key);
        if let Some(held) = self.held(key, Instant::now()) {
            let newer = if strictly {
                held.version() < entry.version()
            } else {
                held.version() <= entry.version()
            };
            if !newer {
                return held;
            }
        }
        // The threads' copies are invalidated after the shared one is replaced (see
        // [`front`]), not before.
        let written = self.front.key(key);
        if entry.record.is_some() {
            self.negatives.remove(key);
            self.entries.insert(key.into(), entry.clone());
        } else {
            self.entries.remove(key);
            self.negatives.insert(key.into(), entry.clone());
        }
        self.front.changed(written);
        entry
    }

    /// As [`Self::put`] for an entry read from the database under `generation`: if
    /// everything was forgotten since, the entry answers its visitor but is not kept
    /// (it is put, then taken out, so that a clear between the two cannot miss it).
    fn put_read(&self, key: &str, entry: Entry, generation: u64) -> Entry {
        let kept = self.put(key, entry.clone(), false);
        if self.links_generation.load(Ordering::Acquire) == generation {
            return kept;
        }
        let _write = self.stripe(key);
        let written = self.front.key(key);
        self.entries.remove(key);
        self.negatives.remove(key);
        self.front.changed(written);
        entry
    }

    /// Whether a link may exist under `route`: `false` only for a generated code whose
    /// number is past its domain's ceiling under every key version.
    pub async fn may_exist<S: RedirectSource + ?Sized>(
        &self,
        store: &S,
        keys: Option<&KeyRing>,
        settings: &DomainSettings,
        route: &RouteKey,
    ) -> Result<bool, StoreError> {
        if let Some(known) = self.may_exist_held(keys, settings, route) {
            return Ok(known);
        }
        // A generated code, and a number the ceiling must be read again for.
        let Some(keys) = keys else {
            return Ok(true);
        };
        let ceiling = self.ceilings.of(route.domain());
        for n in shared::activation::code_numbers(route.code(), &settings.codes, keys) {
            if ceiling
                .admits(n, || store.code_ceiling(route.domain()))
                .await?
            {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// [`RedirectCache::may_exist`] without a read: `None` when it would read.
    pub fn may_exist_held(
        &self,
        keys: Option<&KeyRing>,
        settings: &DomainSettings,
        route: &RouteKey,
    ) -> Option<bool> {
        let Some(keys) = keys else {
            return Some(true);
        };
        let code = route.code();
        // A random code has no number to hold against the ceiling.
        if settings.codes.is_random()
            || shared::codes::classify(code, &settings.codes) != Some(CodeKind::Generated)
        {
            return Some(true);
        }
        for n in shared::activation::code_numbers(code, &settings.codes, keys) {
            if self.ceilings.admits_held(route.domain(), n)? {
                return Some(true);
            }
        }
        Some(false)
    }

    /// The entry for `route`, loading it once on a miss.
    pub async fn entry<S: RedirectSource + ?Sized>(
        &self,
        store: &S,
        route: &RouteKey,
    ) -> Result<Entry, StoreError> {
        if let Some(entry) = self.cached(route, Instant::now()) {
            return Ok(entry);
        }
        let key = route.as_str().to_owned();
        let loaded = self
            .loads
            .try_get_with(key.clone(), async {
                // A load that finished between this visitor's miss and now has put its
                // entry in place before it was forgotten here: use it, read nothing.
                let generation = self.links_generation.load(Ordering::Acquire);
                if let Some(entry) = self.cached(route, Instant::now()) {
                    return Ok((entry, generation));
                }
                self.lookups.inc();
                let link = store.get_link(route.domain(), route.code()).await?;
                let found = link.map(|l| self.found(l));
                Ok::<_, StoreError>((Entry::new(found, self.positive_ttl), generation))
            })
            .await
            .map_err(StoreError::Shared)?;
        // Kept first, then the load forgotten: a visitor arriving in between finds the
        // entry instead of starting a second load. A write this process made while the
        // read was on its way wins over it.
        let (loaded, generation) = loaded;
        let kept = self.put_read(&key, loaded, generation);
        self.loads.invalidate(&key).await;
        Ok(kept)
    }

    /// Puts a link this process just wrote, unless the cache holds a newer version.
    pub async fn fence(&self, link: &Link) {
        let tag = LinkTag {
            id: link.link_id,
            owner: self.owners.intern(&link.owner_id),
        };
        self.fence_record(link.route_key(), link.edge_record(false), tag);
    }

    fn fence_record(&self, route_key: String, record: EdgeRecord, tag: LinkTag) {
        if let Some((domain, _)) = route_key.split_once('/') {
            self.served.add(domain);
        }
        let entry = Entry::new(Some((PreparedRecord::new(record), tag)), self.positive_ttl);
        self.put(&route_key, entry, true);
    }

    /// Another process wrote `route` at `version` (announced by PostgreSQL): an entry
    /// held at an older version, or held as unknown, is read again now. The version
    /// fence keeps whichever of two reads is newer.
    pub async fn changed_elsewhere<S: RedirectSource + ?Sized>(
        &self,
        store: &S,
        route: &shared::RouteKey,
        version: u64,
    ) -> Result<(), StoreError> {
        self.served.add(route.domain());
        let key = route.to_string();
        let stale = self
            .held(&key, Instant::now())
            .is_some_and(|held| held.version() < version);
        if !stale {
            return Ok(());
        }
        self.lookups.inc();
        let generation = self.links_generation.load(Ordering::Acquire);
        match store.get_link(route.domain(), route.code()).await {
            Ok(link) => {
                let found = link.map(|l| self.found(l));
                self.put_read(&key, Entry::new(found, self.positive_ttl), generation);
                Ok(())
            }
            Err(e) => {
                self.entries.remove(key.as_str());
                self.negatives.remove(key.as_str());
                self.front.changed(self.front.key(&key));
                Err(e)
            }
        }
    }

    /// Forgets every entry and the denylist: after a gap in the notifications, anything
    /// held may be stale.
    pub fn forget_all(&self) {
        // The generation first: a read that puts its entry after the clear sees it moved.
        self.links_generation.fetch_add(1, Ordering::AcqRel);
        self.entries.clear();
        self.negatives.clear();
        self.front.changed_all();
        self.bans_changed();
        self.domains_changed();
    }

    /// After this process created or lifted a ban: the next visit reads the bans again.
    /// Entries stay: they hold records unmarked, and every visit is decided against the
    /// denylist.
    pub fn bans_changed(&self) {
        self.deny.generation.fetch_add(1, Ordering::AcqRel);
        let mut held = self.deny.held.write().unwrap_or_else(|e| e.into_inner());
        *held = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Ban;
    use shared::{CodeKind, EdgeStatus, RedirectStatus};
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tokio::sync::{watch, Semaphore};

    /// Counts loads, and holds each one until released; serves the bans it is given.
    struct Gate {
        loads: AtomicUsize,
        /// Reads begun (as `loads`), to wait on.
        reading: watch::Sender<usize>,
        started: watch::Sender<usize>,
        release: Semaphore,
        link: Option<Link>,
        bans: std::sync::Mutex<Vec<Ban>>,
    }

    #[async_trait::async_trait]
    impl RedirectSource for Gate {
        async fn get_link(&self, _d: &str, _c: &str) -> Result<Option<Link>, StoreError> {
            self.loads.fetch_add(1, Ordering::SeqCst);
            self.reading.send_modify(|n| *n += 1);
            let _permit = self
                .release
                .acquire()
                .await
                .map_err(|e| StoreError::Corrupt(e.to_string()))?;
            Ok(self.link.clone())
        }
        async fn denylist(&self) -> Result<shared::DenylistSnapshot, StoreError> {
            Ok(crate::model::denylist_snapshot(
                0,
                &self.bans.lock().expect("bans"),
            ))
        }
        async fn domain_settings(&self, _d: &str) -> Result<DomainSettings, StoreError> {
            Ok(DomainSettings::default())
        }
        async fn served_domains(&self) -> Result<Vec<String>, StoreError> {
            Ok(vec![])
        }
        async fn code_ceiling(&self, _d: &str) -> Result<u64, StoreError> {
            Ok(u64::MAX)
        }
    }

    fn link(version: u64) -> Link {
        Link {
            link_id: 1,
            domain: "s.example".into(),
            code: "abc1234".into(),
            target_url: format!("https://e.example/v{version}"),
            owner_id: "o".into(),
            status: crate::model::LinkState::Active,
            redirect: RedirectStatus::Found,
            expires_at: None,
            version,
            key_version: Some(1),
            code_number: None,
            code_kind: CodeKind::Generated,
            forward_query: false,
            title: None,
            tags: vec![],
            created_at: 0,
            updated_at: 0,
            published: None,
            options: crate::model::LinkOptions::default(),
        }
    }

    fn route(code: &str) -> RouteKey {
        RouteKey::new("s.example", code).expect("route")
    }

    fn gate(link: Option<Link>, open: bool) -> Arc<Gate> {
        Arc::new(Gate {
            loads: AtomicUsize::new(0),
            reading: watch::channel(0).0,
            started: watch::channel(0).0,
            release: Semaphore::new(if open { Semaphore::MAX_PERMITS } else { 0 }),
            link,
            bans: Default::default(),
        })
    }

    type Visitor = tokio::task::JoinHandle<Result<Entry, StoreError>>;

    /// Fifty visitors of one link the cache does not hold, all started, whose database
    /// read waits until the gate is opened or closed.
    async fn fifty_visitors_of_one_cold_link() -> (Arc<Gate>, Vec<Visitor>) {
        let cache = RedirectCache::new(100);
        let source = gate(Some(link(1)), false);
        let visitors: Vec<_> = (0..50)
            .map(|_| {
                let (cache, source) = (cache.clone(), source.clone());
                tokio::spawn(async move {
                    source.started.send_modify(|n| *n += 1);
                    cache.entry(source.as_ref(), &route("abc1234")).await
                })
            })
            .collect();
        source
            .started
            .subscribe()
            .wait_for(|&n| n == 50)
            .await
            .expect("sender alive");
        (source, visitors)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn a_cold_hot_key_is_loaded_once_for_every_concurrent_visitor() {
        let (source, visitors) = fifty_visitors_of_one_cold_link().await;
        source.release.add_permits(Semaphore::MAX_PERMITS);
        for v in visitors {
            let entry = v.await.expect("task").expect("entry");
            assert_eq!(entry.record.as_ref().map(|r| r.version), Some(1));
        }
        assert_eq!(source.loads.load(Ordering::SeqCst), 1);
    }

    /// Why moka holds the single flight (D-214 in docs/decisions/origin-redirect.md): when the one
    /// load fails (the database gone), every visitor waiting on it gets that failure at
    /// once. A single flight that hands the load over to the next waiter instead would
    /// read the database once per visitor, each after the last one's timeout.
    /// On one thread, the fifty visitors all wait inside the cache before the load fails:
    /// a spawned task runs until it waits, and the test's own task is woken after them.
    #[tokio::test(flavor = "current_thread")]
    async fn a_failed_load_fails_every_concurrent_visitor_with_one_read() {
        let (source, visitors) = fifty_visitors_of_one_cold_link().await;
        // The load's read fails.
        source.release.close();
        for v in visitors {
            assert!(v.await.expect("task").is_err(), "a visitor got an entry");
        }
        assert_eq!(
            source.loads.load(Ordering::SeqCst),
            1,
            "reads of the database"
        );
    }

    /// A read on its way when everything is forgotten (the notifications had a gap: the
    /// `LISTEN` connection was lost) answers its visitor but is not kept: it may hold
    /// what the gap changed since.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_read_on_its_way_when_everything_is_forgotten_is_not_kept() {
        let cache = RedirectCache::new(100);
        let source = gate(Some(link(1)), false);
        let visitor = {
            let (cache, source) = (cache.clone(), source.clone());
            tokio::spawn(async move { cache.entry(source.as_ref(), &route("abc1234")).await })
        };
        source
            .reading
            .subscribe()
            .wait_for(|&n| n == 1)
            .await
            .expect("sender alive");
        cache.forget_all();
        source.release.add_permits(Semaphore::MAX_PERMITS);
        let entry = visitor.await.expect("task").expect("entry");
        assert_eq!(entry.record.as_ref().map(|r| r.version), Some(1));
        assert!(
            cache.cached(&route("abc1234"), Instant::now()).is_none(),
            "a read from before the gap was kept"
        );
    }

    #[tokio::test]
    async fn an_older_version_never_replaces_a_newer_one() {
        let cache = RedirectCache::new(100);
        let source = gate(None, true);
        let key = "s.example/abc1234".to_owned();
        cache.fence(&link(3)).await;
        cache.fence(&link(2)).await;
        let entry = cache
            .entry(source.as_ref(), &route("abc1234"))
            .await
            .expect("entry");
        assert_eq!(entry.record.as_ref().map(|r| r.version), Some(3));
        assert_eq!(source.loads.load(Ordering::SeqCst), 0, "served from memory");
        let tag = LinkTag {
            id: 1,
            owner: cache.owners().intern("o"),
        };
        cache.fence_record(key, link(4).edge_record(true), tag);
        let entry = cache
            .entry(source.as_ref(), &route("abc1234"))
            .await
            .expect("entry");
        assert_eq!(
            entry.record.as_ref().map(|r| r.status()),
            Some(EdgeStatus::Banned)
        );
    }

    #[test]
    fn lifetimes_are_spread_over_a_tenth_either_way() {
        let ttl = Duration::from_secs(60);
        let spread: Vec<Duration> = (0..1_000).map(|_| jittered(ttl)).collect();
        assert!(spread
            .iter()
            .all(|d| *d >= ttl.mul_f64(0.9) && *d < ttl.mul_f64(1.1)));
        let distinct: std::collections::HashSet<_> = spread.iter().collect();
        assert!(
            distinct.len() > 500,
            "only {} distinct lifetimes",
            distinct.len()
        );
        let below = spread.iter().filter(|d| **d < ttl).count();
        assert!((300..700).contains(&below), "{below} of 1000 below the TTL");
    }

    #[tokio::test]
    async fn another_processs_newer_version_replaces_what_is_held_and_an_older_one_does_not() {
        let cache = RedirectCache::new(100);
        let held_route = route("abc1234");
        cache.fence(&link(2)).await;
        let source = gate(Some(link(3)), true);
        cache
            .changed_elsewhere(source.as_ref(), &held_route, 2)
            .await
            .expect("same version");
        assert_eq!(
            source.loads.load(Ordering::SeqCst),
            0,
            "nothing newer: no read"
        );
        cache
            .changed_elsewhere(source.as_ref(), &held_route, 3)
            .await
            .expect("newer");
        let held = cache.cached(&held_route, Instant::now()).expect("held");
        assert_eq!(held.record.as_ref().map(|r| r.version), Some(3));
        // Codes this process never held cost nothing.
        let other = route("zzz9999");
        cache
            .changed_elsewhere(source.as_ref(), &other, 9)
            .await
            .expect("not held");
        assert_eq!(source.loads.load(Ordering::SeqCst), 1);
        cache.forget_all();
        assert!(cache.cached(&held_route, Instant::now()).is_none());
    }

    #[tokio::test]
    async fn an_unknown_code_is_remembered_until_this_process_creates_it() {
        let cache = RedirectCache::new(100);
        let source = gate(None, true);
        for _ in 0..3 {
            let entry = cache
                .entry(source.as_ref(), &route("abc1234"))
                .await
                .expect("entry");
            assert!(entry.record.is_none());
        }
        assert_eq!(
            source.loads.load(Ordering::SeqCst),
            1,
            "the negative answer is cached"
        );
        cache.fence(&link(1)).await;
        let entry = cache
            .entry(source.as_ref(), &route("abc1234"))
            .await
            .expect("entry");
        assert_eq!(entry.record.as_ref().map(|r| r.version), Some(1));
    }

    /// Keys of up to 24 bytes live in the table's slot, longer ones apart: both are held,
    /// found and replaced alike.
    #[tokio::test]
    async fn a_route_key_held_in_its_slot_or_apart_is_found_and_replaced_alike() {
        let cache = RedirectCache::new(100);
        let source = gate(None, true);
        let short = route("abc1234");
        let long = RouteKey::new("links.a-rather-long-brand.example", "abc1234").expect("route");
        assert!(short.as_str().len() <= 24 && long.as_str().len() > 24);
        for key in [&short, &long] {
            let mut written = link(2);
            written.domain = key.domain().into();
            cache.fence(&written).await;
            let entry = cache.entry(source.as_ref(), key).await.expect("entry");
            assert_eq!(entry.record.as_ref().map(|r| r.version), Some(2), "{key}");
            written.version = 3;
            cache.fence(&written).await;
            let entry = cache.cached(key, Instant::now()).expect("held");
            assert_eq!(entry.record.as_ref().map(|r| r.version), Some(3), "{key}");
        }
        assert_eq!(source.loads.load(Ordering::SeqCst), 0, "both were held");
    }

    /// A thread's front keeps a copy of its own: cloning it must not touch the shared
    /// entry's reference count, which every other thread's visits change.
    #[test]
    fn a_detached_entry_is_equal_and_shares_nothing() {
        let (record, tag) = RedirectCache::new(1).found(link(1));
        let entry = Entry::new(Some((record, tag)), POSITIVE_TTL);
        let copy = entry.detached();
        assert_eq!(copy, entry);
        let target = |e: &Entry| e.record.as_ref().map(|r| r.target().as_ptr());
        assert_ne!(target(&copy), target(&entry));
    }

    #[tokio::test]
    async fn unknown_codes_are_bounded_in_bytes_and_never_push_out_a_link() {
        let cache = RedirectCache::new(1_000);
        cache.fence(&link(1)).await;
        let source = gate(None, true);
        // A scan of 100,000 unknown codes of the longest alias allowed: 16 MiB of keys.
        for i in 0..100_000 {
            let code = format!("{i:064}");
            cache
                .entry(source.as_ref(), &route(&code))
                .await
                .expect("entry");
        }
        assert!(cache.negatives.weight() <= NEGATIVE_BYTES);
        assert!(cache.negatives.len() > 10_000, "recent ones are remembered");
        let held = cache
            .cached(&route("abc1234"), Instant::now())
            .expect("the link is still held");
        assert_eq!(held.record.as_ref().map(|r| r.version), Some(1));
    }

    fn version_of(entry: &Entry) -> Option<u64> {
        entry.record.as_ref().map(|r| r.version)
    }

    #[tokio::test]
    async fn a_hot_links_copy_on_this_thread_gives_way_to_a_write_at_once() {
        let cache = RedirectCache::new(100);
        let hot = route("abc1234");
        cache.fence(&link(1)).await;
        // Served often enough on this thread to be copied into its front.
        for _ in 0..5 {
            assert_eq!(
                cache
                    .cached(&hot, Instant::now())
                    .as_ref()
                    .and_then(version_of),
                Some(1)
            );
        }
        cache.fence(&link(2)).await;
        assert_eq!(
            cache
                .cached(&hot, Instant::now())
                .as_ref()
                .and_then(version_of),
            Some(2)
        );
        // A ban arrives as a new record from this process too.
        let tag = LinkTag {
            id: 1,
            owner: cache.owners().intern("o"),
        };
        for _ in 0..5 {
            cache.cached(&hot, Instant::now());
        }
        cache.fence_record(hot.to_string(), link(3).edge_record(true), tag);
        assert_eq!(
            cache
                .cached(&hot, Instant::now())
                .and_then(|e| e.record.as_ref().map(|r| r.status())),
            Some(EdgeStatus::Banned)
        );
        for _ in 0..5 {
            cache.cached(&hot, Instant::now());
        }
        cache.forget_all();
        assert!(
            cache.cached(&hot, Instant::now()).is_none(),
            "forgotten on every thread"
        );
    }

    #[tokio::test]
    async fn a_ban_this_process_made_reaches_the_next_visit_on_every_thread() {
        let cache = RedirectCache::new(100);
        let source = gate(None, true);
        let hot = route("abc1234");
        for _ in 0..3 {
            let deny = cache
                .denylist(source.as_ref(), Instant::now())
                .await
                .expect("bans");
            assert!(!deny.blocks_code(&hot));
        }
        let ban = Ban {
            ban_id: 1,
            target: crate::model::BanTarget::Code {
                domain: hot.domain().into(),
                code: hot.code().into(),
            },
            reason: "test".into(),
            created_by: "admin".into(),
            created_at: 0,
            lifted_at: None,
        };
        source.bans.lock().expect("bans").push(ban);
        cache.bans_changed();
        let deny = cache
            .denylist(source.as_ref(), Instant::now())
            .await
            .expect("bans");
        assert!(deny.blocks_code(&hot), "the thread's copy was not used");
    }

    /// Writers move a hot link's version up while readers on other threads serve it: once
    /// a write has returned, no reader anywhere serves an older version. Run many times:
    /// an invalidation that came before the shared cache was updated, or a generation
    /// read after it, shows as a stale read.
    #[test]
    fn no_thread_serves_an_older_version_once_a_write_has_returned() {
        use std::sync::atomic::AtomicBool;
        let cache = RedirectCache::new(100);
        let hot = route("abc1234");
        let tag = LinkTag {
            id: 1,
            owner: cache.owners().intern("o"),
        };
        cache.fence_record(hot.to_string(), link(1).edge_record(false), tag);
        let written = AtomicU64::new(1);
        let done = AtomicBool::new(false);
        std::thread::scope(|scope| {
            for _ in 0..3 {
                scope.spawn(|| {
                    while !done.load(Ordering::Acquire) {
                        let floor = written.load(Ordering::Acquire);
                        let seen = cache
                            .cached(&hot, Instant::now())
                            .as_ref()
                            .and_then(version_of);
                        assert!(
                            seen >= Some(floor),
                            "served version {seen:?} after version {floor} was written"
                        );
                    }
                });
            }
            for v in 2..=2_000 {
                cache.fence_record(hot.to_string(), link(v).edge_record(false), tag);
                written.store(v, Ordering::Release);
            }
            done.store(true, Ordering::Release);
        });
    }
}

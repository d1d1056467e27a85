//! The origin's redirect cache: what `GET /{code}` needs, kept in memory so a hot link
//! costs no database round trip.
//!
//! - A miss is loaded once however many visitors ask at the same moment (single flight:
//!   moka runs one loader per key and hands its result to every waiter).
//! - Unknown codes are remembered briefly (a negative entry), so a scan of random codes
//!   does not become a scan of the database.
//! - This process's own writes put the new version in place at once, and never let an
//!   older copy replace a newer one (the version fence); other processes' writes show
//!   after at most `POSITIVE_TTL`.

use crate::error::AppError;
use crate::links::Link;
use crate::store::{LinkStore, StoreError};
use moka::future::Cache;
use moka::ops::compute::Op;
use moka::Expiry;
use shared::{DomainSettings, EdgeRecord};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long a known link is served from memory without asking the database.
pub const POSITIVE_TTL: Duration = Duration::from_secs(60);
/// How long an unknown code is remembered as unknown.
pub const NEGATIVE_TTL: Duration = Duration::from_secs(10);
/// Domain settings change rarely.
pub const SETTINGS_TTL: Duration = Duration::from_secs(60);

/// What the redirect path knows about one route key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The link's record, marked `banned` when a ban covers it; `None`: no such link.
    pub record: Option<EdgeRecord>,
    /// A ban names this code (it may have no link).
    pub code_banned: bool,
}

impl Entry {
    fn version(&self) -> u64 {
        self.record.as_ref().map_or(0, |r| r.version)
    }
}

/// The reads a cache miss needs; every [`LinkStore`] has them.
#[async_trait::async_trait]
pub trait RedirectSource: Send + Sync {
    async fn get_link(&self, domain: &str, code: &str) -> Result<Option<Link>, StoreError>;
    async fn code_banned(&self, domain: &str, code: &str) -> Result<bool, StoreError>;
    async fn host_banned(&self, host: &str) -> Result<bool, StoreError>;
    async fn domain_settings(&self, domain: &str) -> Result<DomainSettings, StoreError>;
}

#[async_trait::async_trait]
impl<S: LinkStore> RedirectSource for S {
    async fn get_link(&self, domain: &str, code: &str) -> Result<Option<Link>, StoreError> {
        LinkStore::get_link(self, domain, code).await
    }
    async fn code_banned(&self, domain: &str, code: &str) -> Result<bool, StoreError> {
        LinkStore::code_banned(self, domain, code).await
    }
    async fn host_banned(&self, host: &str) -> Result<bool, StoreError> {
        LinkStore::host_banned(self, host).await
    }
    async fn domain_settings(&self, domain: &str) -> Result<DomainSettings, StoreError> {
        LinkStore::domain_settings(self, domain).await
    }
}

struct TtlByKind;

impl Expiry<String, Arc<Entry>> for TtlByKind {
    fn expire_after_create(
        &self,
        _key: &String,
        value: &Arc<Entry>,
        _now: Instant,
    ) -> Option<Duration> {
        Some(if value.record.is_none() && !value.code_banned {
            NEGATIVE_TTL
        } else {
            POSITIVE_TTL
        })
    }

    fn expire_after_update(
        &self,
        key: &String,
        value: &Arc<Entry>,
        now: Instant,
        _current: Option<Duration>,
    ) -> Option<Duration> {
        self.expire_after_create(key, value, now)
    }
}

/// Route key (`domain/code`) → entry, plus domain settings.
#[derive(Clone)]
pub struct RedirectCache {
    entries: Cache<String, Arc<Entry>>,
    settings: Cache<String, DomainSettings>,
}

impl std::fmt::Debug for RedirectCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedirectCache")
            .field("entries", &self.entries.entry_count())
            .finish()
    }
}

impl RedirectCache {
    /// A cache of at most `capacity` route keys.
    pub fn new(capacity: u64) -> Self {
        RedirectCache {
            entries: Cache::builder()
                .max_capacity(capacity)
                .expire_after(TtlByKind)
                .build(),
            settings: Cache::builder()
                .max_capacity(10_000)
                .time_to_live(SETTINGS_TTL)
                .build(),
        }
    }

    pub async fn settings<S: RedirectSource + ?Sized>(
        &self,
        store: &S,
        domain: &str,
    ) -> Result<DomainSettings, AppError> {
        self.settings
            .try_get_with(domain.to_owned(), async {
                store.domain_settings(domain).await
            })
            .await
            .map_err(|e: Arc<StoreError>| AppError::Store(StoreError::Corrupt(e.to_string())))
    }

    /// The entry for `domain/code`, loading it once on a miss.
    pub async fn entry<S: RedirectSource + ?Sized>(
        &self,
        store: &S,
        domain: &str,
        code: &str,
    ) -> Result<Arc<Entry>, AppError> {
        self.entries
            .try_get_with(format!("{domain}/{code}"), async {
                let link = store.get_link(domain, code).await?;
                let code_banned = store.code_banned(domain, code).await?;
                let record = match link {
                    None => None,
                    Some(l) => {
                        let banned = code_banned || store.host_banned(&l.target_host()).await?;
                        Some(l.edge_record(banned))
                    }
                };
                Ok::<_, StoreError>(Arc::new(Entry {
                    record,
                    code_banned,
                }))
            })
            .await
            .map_err(|e: Arc<StoreError>| AppError::Store(StoreError::Corrupt(e.to_string())))
    }

    /// Puts a record this process just wrote, unless the cache holds a newer one.
    pub async fn fence(&self, route_key: String, record: EdgeRecord) {
        self.entries
            .entry(route_key)
            .and_compute_with(|held| {
                let held = held.map(|h| h.into_value());
                let newer = held.as_ref().is_none_or(|h| h.version() < record.version);
                std::future::ready(if newer {
                    Op::Put(Arc::new(Entry {
                        // A code ban stays known until a ban change clears the cache.
                        code_banned: held.is_some_and(|h| h.code_banned),
                        record: Some(record),
                    }))
                } else {
                    Op::Nop
                })
            })
            .await;
    }

    /// Forgets everything: after a ban or a lift, which may touch any number of links.
    pub fn clear(&self) {
        self.entries.invalidate_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shared::{CodeKind, LinkStatus, RedirectStatus};
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tokio::sync::{watch, Semaphore};

    /// Counts loads, and holds each one until released.
    struct Gate {
        loads: AtomicUsize,
        started: watch::Sender<usize>,
        release: Semaphore,
        link: Option<Link>,
    }

    #[async_trait::async_trait]
    impl RedirectSource for Gate {
        async fn get_link(&self, _d: &str, _c: &str) -> Result<Option<Link>, StoreError> {
            self.loads.fetch_add(1, Ordering::SeqCst);
            let _permit = self
                .release
                .acquire()
                .await
                .map_err(|e| StoreError::Corrupt(e.to_string()))?;
            Ok(self.link.clone())
        }
        async fn code_banned(&self, _d: &str, _c: &str) -> Result<bool, StoreError> {
            Ok(false)
        }
        async fn host_banned(&self, _h: &str) -> Result<bool, StoreError> {
            Ok(false)
        }
        async fn domain_settings(&self, _d: &str) -> Result<DomainSettings, StoreError> {
            Ok(DomainSettings::default())
        }
    }

    fn link(version: u64) -> Link {
        Link {
            link_id: 1,
            domain: "s.example".into(),
            code: "abc1234".into(),
            target_url: format!("https://e.example/v{version}"),
            owner_id: "o".into(),
            status: crate::links::LinkState::Active,
            redirect: RedirectStatus::Found,
            expires_at: None,
            version,
            key_version: Some(1),
            code_kind: CodeKind::Generated,
            forward_query: false,
            title: None,
            tags: vec![],
            created_at: 0,
            updated_at: 0,
        }
    }

    fn gate(link: Option<Link>, open: bool) -> Arc<Gate> {
        Arc::new(Gate {
            loads: AtomicUsize::new(0),
            started: watch::channel(0).0,
            release: Semaphore::new(if open { Semaphore::MAX_PERMITS } else { 0 }),
            link,
        })
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn a_cold_hot_key_is_loaded_once_for_every_concurrent_visitor() {
        let cache = RedirectCache::new(100);
        let source = gate(Some(link(1)), false);
        let visitors: Vec<_> = (0..50)
            .map(|_| {
                let (cache, source) = (cache.clone(), source.clone());
                tokio::spawn(async move {
                    source.started.send_modify(|n| *n += 1);
                    cache.entry(source.as_ref(), "s.example", "abc1234").await
                })
            })
            .collect();
        source
            .started
            .subscribe()
            .wait_for(|&n| n == 50)
            .await
            .expect("sender alive");
        source.release.add_permits(Semaphore::MAX_PERMITS);
        for v in visitors {
            let entry = v.await.expect("task").expect("entry");
            assert_eq!(entry.record.as_ref().map(|r| r.version), Some(1));
        }
        assert_eq!(source.loads.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn an_older_version_never_replaces_a_newer_one() {
        let cache = RedirectCache::new(100);
        let source = gate(None, true);
        let key = "s.example/abc1234".to_owned();
        cache.fence(key.clone(), link(3).edge_record(false)).await;
        cache.fence(key.clone(), link(2).edge_record(false)).await;
        let entry = cache
            .entry(source.as_ref(), "s.example", "abc1234")
            .await
            .expect("entry");
        assert_eq!(entry.record.as_ref().map(|r| r.version), Some(3));
        assert_eq!(source.loads.load(Ordering::SeqCst), 0, "served from memory");
        cache.fence(key, link(4).edge_record(true)).await;
        let entry = cache
            .entry(source.as_ref(), "s.example", "abc1234")
            .await
            .expect("entry");
        assert_eq!(
            entry.record.as_ref().map(|r| r.status),
            Some(LinkStatus::Banned)
        );
    }

    #[tokio::test]
    async fn an_unknown_code_is_remembered_until_this_process_creates_it() {
        let cache = RedirectCache::new(100);
        let source = gate(None, true);
        for _ in 0..3 {
            let entry = cache
                .entry(source.as_ref(), "s.example", "abc1234")
                .await
                .expect("entry");
            assert!(entry.record.is_none());
        }
        assert_eq!(
            source.loads.load(Ordering::SeqCst),
            1,
            "the negative answer is cached"
        );
        cache
            .fence("s.example/abc1234".into(), link(1).edge_record(false))
            .await;
        let entry = cache
            .entry(source.as_ref(), "s.example", "abc1234")
            .await
            .expect("entry");
        assert_eq!(entry.record.as_ref().map(|r| r.version), Some(1));
    }
}

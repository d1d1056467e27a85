//! The short domains this origin answers for, held in memory: a visit on any other host
//! is answered 404 without a database read, so a scan of random `Host` headers costs
//! nothing but its answers.
//!
//! The set is every domain that holds a link or has settings, plus the default domain.
//! It is read once, then again at most every [`SERVED_TTL`] (by one visit, while the
//! others use the set held). This process's own writes add their domain at once, and on
//! PostgreSQL so do other processes' (by notification); otherwise a link on a brand-new
//! domain created by another origin process is answered here within a minute.

use crate::store::StoreError;
use std::collections::HashSet;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

/// How long the set is used before it is read again.
pub const SERVED_TTL: Duration = Duration::from_secs(60);

/// See the module's documentation.
#[derive(Debug, Default)]
pub struct ServedDomains {
    held: RwLock<Option<(Arc<HashSet<String>>, Instant)>>,
    reading: tokio::sync::Mutex<()>,
}

impl ServedDomains {
    /// Whether `domain` is one this origin serves, reading the set if it has none or
    /// its copy is older than [`SERVED_TTL`].
    pub async fn contains<F, Fut>(&self, domain: &str, read: F) -> Result<bool, StoreError>
    where
        F: FnOnce() -> Fut,
        Fut: std::future::Future<Output = Result<Vec<String>, StoreError>>,
    {
        let held = self.current();
        if let Some((set, at)) = &held {
            if at.elapsed() < SERVED_TTL {
                return Ok(set.contains(domain));
            }
        }
        // Stale or missing: one caller reads; while it does, the others use what is held
        // (and only the very first visits wait).
        let _reading = match (&held, self.reading.try_lock()) {
            (_, Ok(guard)) => guard,
            (Some((set, _)), Err(_)) => return Ok(set.contains(domain)),
            (None, Err(_)) => self.reading.lock().await,
        };
        if let Some((set, at)) = self.current() {
            if at.elapsed() < SERVED_TTL {
                return Ok(set.contains(domain));
            }
        }
        // Boxed: the read's future would otherwise be part of every visit's (see
        // `RedirectCache::settings`).
        let mut set: HashSet<String> = Box::pin(read()).await?.into_iter().collect();
        let found = set.contains(domain);
        let mut held = self.held.write().unwrap_or_else(|e| e.into_inner());
        // Domains added while the read was on its way stay (links are never removed,
        // only tombstoned, so a domain once served stays served).
        if let Some((old, _)) = held.as_ref() {
            set.extend(old.iter().cloned());
        }
        *held = Some((Arc::new(set), Instant::now()));
        Ok(found)
    }

    /// A link was just written on `domain` (here, or elsewhere as announced).
    pub fn add(&self, domain: &str) {
        let mut held = self.held.write().unwrap_or_else(|e| e.into_inner());
        if let Some((set, _)) = held.as_mut() {
            if !set.contains(domain) {
                Arc::make_mut(set).insert(domain.to_owned());
            }
        }
        // Not read yet: the first read will find it.
    }

    /// The registry changed: the next visit of another host reads the set again (the
    /// visits that arrive meanwhile wait for that one read).
    pub fn forget(&self) {
        *self.held.write().unwrap_or_else(|e| e.into_inner()) = None;
    }

    fn current(&self) -> Option<(Arc<HashSet<String>>, Instant)> {
        self.held.read().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_set_is_read_once_and_kept() {
        let served = ServedDomains::default();
        let reads = std::sync::atomic::AtomicUsize::new(0);
        let read = || async {
            reads.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            Ok(vec!["s.example".to_owned()])
        };
        assert!(served.contains("s.example", read).await.unwrap());
        for i in 0..1_000 {
            let host = format!("junk{i}.example");
            assert!(!served.contains(&host, read).await.unwrap());
        }
        assert_eq!(reads.load(std::sync::atomic::Ordering::SeqCst), 1);
        served.add("new.example");
        assert!(served.contains("new.example", read).await.unwrap());
    }
}

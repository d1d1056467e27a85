//! The code ceiling, one per domain: every number a domain's code sequence has issued
//! lies below the end of the newest segment reserved in its `id_segments` row. A
//! generated code whose number (under every key version) is at or past that end names
//! no link, so the origin's redirect answers it 404 without reading the database.
//! Random and enumerated codes decode to numbers spread over the whole code space and
//! land there almost always: the origin's counterpart of the edge's activation window,
//! and what keeps a scan of random codes from becoming a scan of the database.
//!
//! Segments this process reserves raise the ceiling at once. Segments other origins
//! reserve are seen by reading the ceiling again, which happens when a code lands past
//! it and the last read is older than [`RECHECK`]: a link another origin created in a
//! segment it reserved less than that long ago may answer 404 here for that long.

use crate::model::sequence::domain_of_sequence;
use crate::store::{SegmentSource, StoreError};
use std::collections::HashMap;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;
// tokio's clock, so tests can move it.
use tokio::time::Instant;

/// How stale the ceiling may be when it refuses a code.
pub const RECHECK: Duration = Duration::from_millis(100);

/// Cheap to clone; clones share the ceiling.
#[derive(Debug, Clone)]
pub struct IdCeiling(Arc<Inner>);

#[derive(Debug)]
struct Inner {
    known: AtomicU64,
    /// Milliseconds after `epoch` of the last read, plus one (0: never read).
    read_at: AtomicU64,
    epoch: Instant,
    reading: tokio::sync::Mutex<()>,
}

impl Default for IdCeiling {
    fn default() -> Self {
        IdCeiling(Arc::new(Inner {
            known: AtomicU64::new(0),
            read_at: AtomicU64::new(0),
            epoch: Instant::now(),
            reading: tokio::sync::Mutex::new(()),
        }))
    }
}

impl IdCeiling {
    /// Records that ids below `end` may have been issued.
    pub fn raise(&self, end: u64) {
        self.0.known.fetch_max(end, Ordering::AcqRel);
    }

    fn fresh(&self) -> bool {
        let at = self.0.read_at.load(Ordering::Acquire);
        let now = self.0.epoch.elapsed().as_millis() as u64;
        at != 0 && now + 1 < at + RECHECK.as_millis() as u64
    }

    /// Whether a link with `id` may exist, reading the ceiling again (with `read`) when
    /// `id` is past it and the last read is older than [`RECHECK`].
    pub async fn admits<F, Fut>(&self, id: u64, read: F) -> Result<bool, StoreError>
    where
        F: FnOnce() -> Fut,
        Fut: std::future::Future<Output = Result<u64, StoreError>>,
    {
        if let Some(known) = self.admits_held(id) {
            return Ok(known);
        }
        // Boxed: the visits the answers above settle (nearly all) carry no room for the
        // lock and the read.
        Box::pin(self.read_again(id, read)).await
    }

    /// [`IdCeiling::admits`] without a read: `None` when it would read.
    pub fn admits_held(&self, id: u64) -> Option<bool> {
        if id < self.0.known.load(Ordering::Acquire) {
            return Some(true);
        }
        self.fresh().then_some(false)
    }

    async fn read_again<F, Fut>(&self, id: u64, read: F) -> Result<bool, StoreError>
    where
        F: FnOnce() -> Fut,
        Fut: std::future::Future<Output = Result<u64, StoreError>>,
    {
        // One reader at a time; the others then see its answer.
        let _reading = self.0.reading.lock().await;
        if id < self.0.known.load(Ordering::Acquire) {
            return Ok(true);
        }
        if !self.fresh() {
            self.raise(read().await?);
            let now = self.0.epoch.elapsed().as_millis() as u64;
            self.0.read_at.store(now + 1, Ordering::Release);
        }
        Ok(id < self.0.known.load(Ordering::Acquire))
    }
}

/// Each domain's ceiling, made on first use. Only domains this origin serves reach it
/// (the registry's, or the default), so it grows no larger than the registry.
#[derive(Debug, Clone, Default)]
pub struct Ceilings(Arc<RwLock<HashMap<String, IdCeiling>>>);

impl Ceilings {
    /// [`IdCeiling::admits_held`] of `domain`'s ceiling, without a copy of it (the
    /// redirect path asks this of every unknown generated code).
    pub fn admits_held(&self, domain: &str, id: u64) -> Option<bool> {
        match self.0.read().unwrap_or_else(|e| e.into_inner()).get(domain) {
            Some(c) => c.admits_held(id),
            // Never read: the caller reads it (through `of`).
            None => None,
        }
    }

    /// `domain`'s ceiling.
    pub fn of(&self, domain: &str) -> IdCeiling {
        if let Some(c) = self.0.read().unwrap_or_else(|e| e.into_inner()).get(domain) {
            return c.clone();
        }
        self.0
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .entry(domain.to_owned())
            .or_default()
            .clone()
    }
}

/// A segment source that raises a domain's ceiling with every segment of its code
/// sequence it hands out, so this process's newest links are never refused by its own
/// ceiling.
#[derive(Debug)]
pub struct Raising<S> {
    pub source: S,
    pub ceilings: Ceilings,
}

#[async_trait::async_trait]
impl<S: SegmentSource> SegmentSource for Raising<S> {
    async fn next_segment(&self, name: &str, step: u64) -> Result<Range<u64>, StoreError> {
        let range = self.source.next_segment(name, step).await?;
        if let Some(domain) = domain_of_sequence(name) {
            self.ceilings.of(domain).raise(range.end);
        }
        Ok(range)
    }

    async fn segment_ceiling(&self, name: &str) -> Result<u64, StoreError> {
        self.source.segment_ceiling(name).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    /// A sequence whose ceiling the test moves, counting reads.
    #[derive(Debug, Default)]
    struct Moving {
        end: AtomicU64,
        reads: AtomicUsize,
    }

    #[async_trait::async_trait]
    impl SegmentSource for Moving {
        async fn next_segment(&self, _name: &str, _step: u64) -> Result<Range<u64>, StoreError> {
            let end = self.end.fetch_add(100, Ordering::SeqCst) + 100;
            Ok(end - 100..end)
        }
        async fn segment_ceiling(&self, _name: &str) -> Result<u64, StoreError> {
            self.reads.fetch_add(1, Ordering::SeqCst);
            Ok(self.end.load(Ordering::SeqCst))
        }
    }

    #[tokio::test]
    async fn ids_past_the_ceiling_are_refused_with_one_read_per_recheck_period() {
        let source = Moving::default();
        source.end.store(1_000, Ordering::SeqCst);
        let ceiling = IdCeiling::default();
        assert!(ceiling
            .admits(999, || source.segment_ceiling("links"))
            .await
            .unwrap());
        for id in [1_000, 5_000, u64::MAX] {
            assert!(!ceiling
                .admits(id, || source.segment_ceiling("links"))
                .await
                .unwrap());
        }
        assert_eq!(
            source.reads.load(Ordering::SeqCst),
            1,
            "one read answers them all"
        );
        assert!(ceiling
            .admits(10, || source.segment_ceiling("links"))
            .await
            .unwrap());
        assert_eq!(
            source.reads.load(Ordering::SeqCst),
            1,
            "ids below need no read"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn another_origins_segment_is_seen_once_the_recheck_period_has_passed() {
        let source = Moving::default();
        let ceiling = IdCeiling::default();
        assert!(!ceiling
            .admits(50, || source.segment_ceiling("links"))
            .await
            .unwrap());
        source.end.store(100, Ordering::SeqCst); // another origin reserved [0, 100)
                                                 // Within the period the old answer stands; after it, the ceiling is read again.
        tokio::time::advance(RECHECK / 2).await;
        assert!(!ceiling
            .admits(50, || source.segment_ceiling("links"))
            .await
            .unwrap());
        assert_eq!(source.reads.load(Ordering::SeqCst), 1);
        tokio::time::advance(RECHECK).await;
        assert!(ceiling
            .admits(50, || source.segment_ceiling("links"))
            .await
            .unwrap());
        assert_eq!(source.reads.load(Ordering::SeqCst), 2);
    }

    #[tokio::test(start_paused = true)]
    async fn this_processs_own_segments_raise_their_domains_ceiling_at_once() {
        let ceilings = Ceilings::default();
        let raising = Raising {
            source: Moving::default(),
            ceilings: ceilings.clone(),
        };
        let ceiling = ceilings.of("go.example");
        let read = || raising.segment_ceiling("code:go.example");
        assert!(!ceiling.admits(150, read).await.unwrap());
        raising.next_segment("code:go.example", 100).await.unwrap();
        raising.next_segment("code:go.example", 100).await.unwrap();
        assert!(ceiling.admits(150, read).await.unwrap());
        assert!(!ceiling.admits(200, read).await.unwrap());
        // Another domain's ceiling, and the link sequence, raise nothing here.
        raising.next_segment("links", 100).await.unwrap();
        assert!(!ceiling.admits(250, read).await.unwrap());
        assert_eq!(ceilings.of("other.example").admits_held(0), None);
    }
}

//! The segment allocator: dense numbers (`link_id`s, and each domain's code numbers)
//! without a database round trip per number.
//!
//! A named row in `id_segments` is advanced by its `step` in one atomic statement; the
//! range it gives up is this process's segment, handed out with an atomic counter. When
//! a fifth of the segment is used, the next one is fetched in the background (double
//! buffering), so no request waits on the database at a segment boundary. A segment
//! older than `max_age` is abandoned, its rest counted as wasted: this bounds how old an
//! unissued id can be, which the edge's activation window relies on.

use crate::model::sequence::{code_sequence, code_step, DEFAULT_STEP};
pub use crate::store::LINK_SEQUENCE;
use crate::store::{SegmentSource, StoreError};
use prometheus_client::metrics::counter::Counter;
use shared::CodeSpace;
use std::collections::HashMap;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;
// tokio's clock, so tests can move time forward instead of waiting for it.
use tokio::time::Instant;

/// The fraction of a segment used before the next is fetched, in percent.
const PREFETCH_AT_PERCENT: u64 = 20;

/// The default bound on a segment's age.
pub const DEFAULT_SEGMENT_MAX_AGE: Duration = Duration::from_secs(300);

#[derive(Debug)]
struct Segment {
    range: Range<u64>,
    cursor: AtomicU64,
    born: Instant,
    prefetch_at: u64,
    prefetch_started: AtomicBool,
}

impl Segment {
    fn new(range: Range<u64>) -> Arc<Self> {
        let len = range.end - range.start;
        Arc::new(Segment {
            prefetch_at: range.start + len * PREFETCH_AT_PERCENT / 100,
            cursor: AtomicU64::new(range.start),
            range,
            born: Instant::now(),
            prefetch_started: AtomicBool::new(false),
        })
    }

    /// Ids not handed out yet.
    fn remaining(&self) -> u64 {
        self.range
            .end
            .saturating_sub(self.cursor.load(Ordering::Relaxed))
    }
}

/// Hands out ids from segments of one named sequence.
#[derive(Debug, Clone)]
pub struct SegmentAllocator {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    source: Arc<dyn SegmentSource>,
    name: String,
    /// Ids per segment.
    step: u64,
    max_age: Duration,
    current: RwLock<Option<Arc<Segment>>>,
    /// The prefetched segment; the lock is held while fetching, so a rotation that
    /// needs it waits for the fetch in flight rather than starting another.
    next: tokio::sync::Mutex<Option<Arc<Segment>>>,
    /// Serializes rotations so a segment boundary is crossed once.
    rotate: tokio::sync::Mutex<()>,
    wasted: Counter,
    segments_fetched: Counter,
}

impl SegmentAllocator {
    pub fn new(source: Arc<dyn SegmentSource>, name: impl Into<String>, max_age: Duration) -> Self {
        Self::with_counters(
            source,
            name,
            DEFAULT_STEP,
            max_age,
            Counter::default(),
            Counter::default(),
        )
    }

    /// As [`SegmentAllocator::new`], `step` ids a segment, counting into the given
    /// metrics.
    pub fn with_counters(
        source: Arc<dyn SegmentSource>,
        name: impl Into<String>,
        step: u64,
        max_age: Duration,
        segments_fetched: Counter,
        wasted: Counter,
    ) -> Self {
        SegmentAllocator {
            inner: Arc::new(Inner {
                source,
                name: name.into(),
                step,
                max_age,
                current: RwLock::new(None),
                next: tokio::sync::Mutex::new(None),
                rotate: tokio::sync::Mutex::new(()),
                wasted,
                segments_fetched,
            }),
        }
    }

    /// The next id. Waits on the database only when no segment is at hand (the first
    /// call, or after abandoning an old one with no fresh one buffered).
    pub async fn next_id(&self) -> Result<u64, StoreError> {
        // A segment this call just installed is used even if `max_age` is tiny, so the
        // loop always ends.
        let mut just_rotated = false;
        loop {
            match self.take(just_rotated) {
                Ok(id) => return Ok(id),
                // Rotate away from the segment that failed, not whatever is current by
                // now: another caller may already have installed a fresh one.
                Err(spent) => self.rotate(spent).await?,
            }
            just_rotated = true;
        }
    }

    /// The fast path: an id from the current segment under the read lock, without
    /// touching the segment's reference count. On failure (spent or too old), the
    /// segment that failed.
    fn take(&self, fresh: bool) -> Result<u64, Option<Arc<Segment>>> {
        let guard = match self.inner.current.read() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        };
        let Some(seg) = guard.as_ref() else {
            return Err(None);
        };
        if !fresh && seg.born.elapsed() > self.inner.max_age {
            return Err(Some(Arc::clone(seg)));
        }
        let id = seg.cursor.fetch_add(1, Ordering::Relaxed);
        if id >= seg.range.end {
            return Err(Some(Arc::clone(seg)));
        }
        if id >= seg.prefetch_at && !seg.prefetch_started.swap(true, Ordering::AcqRel) {
            self.prefetch();
        }
        Ok(id)
    }

    /// The sequence this allocator hands out.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// Numbers per segment.
    pub fn step(&self) -> u64 {
        self.inner.step
    }

    /// Numbers left in the current segment and in the one fetched ahead (0 when none is
    /// held, or while it is being fetched): what this process can hand out before it
    /// must wait on the database. `None` before the first number is asked for.
    pub fn remaining(&self) -> Option<(u64, u64)> {
        let current = self.current()?.remaining();
        let next = match self.inner.next.try_lock() {
            Ok(next) => next.as_ref().map_or(0, |s| s.remaining()),
            Err(_) => 0,
        };
        Some((current, next))
    }

    /// Ids wasted so far: the unissued rest of abandoned segments.
    pub fn wasted(&self) -> u64 {
        self.inner.wasted.get()
    }

    /// Segments taken from the database so far.
    pub fn segments_fetched(&self) -> u64 {
        self.inner.segments_fetched.get()
    }

    fn current(&self) -> Option<Arc<Segment>> {
        match self.inner.current.read() {
            Ok(guard) => guard.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    fn set_current(&self, seg: Arc<Segment>) {
        match self.inner.current.write() {
            Ok(mut guard) => *guard = Some(seg),
            Err(poisoned) => *poisoned.into_inner() = Some(seg),
        }
    }

    /// Replaces `seen` (exhausted or too old) with the buffered segment, or a fresh one.
    async fn rotate(&self, seen: Option<Arc<Segment>>) -> Result<(), StoreError> {
        let _rotating = self.inner.rotate.lock().await;
        let now_current = self.current();
        let same = match (&seen, &now_current) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            (None, None) => true,
            _ => false,
        };
        if !same {
            return Ok(()); // another caller rotated meanwhile
        }
        if let Some(old) = &seen {
            self.inner.wasted.inc_by(old.remaining());
        }
        let mut next = self.inner.next.lock().await;
        let fresh = match next.take() {
            Some(seg) if seg.born.elapsed() <= self.inner.max_age => seg,
            Some(stale) => {
                self.inner.wasted.inc_by(stale.remaining());
                self.fetch().await?
            }
            None => self.fetch().await?,
        };
        self.set_current(fresh);
        Ok(())
    }

    fn prefetch(&self) {
        let this = self.clone();
        tokio::spawn(async move {
            let mut next = this.inner.next.lock().await;
            if next.is_none() {
                match this.fetch().await {
                    Ok(seg) => *next = Some(seg),
                    // The rotation fetches for itself when nothing is buffered.
                    Err(e) => {
                        tracing::warn!(sequence = %this.inner.name, "segment prefetch failed: {e}")
                    }
                }
            }
        });
    }

    async fn fetch(&self) -> Result<Arc<Segment>, StoreError> {
        let range = self
            .inner
            .source
            .next_segment(&self.inner.name, self.inner.step)
            .await?;
        self.inner.segments_fetched.inc();
        tracing::debug!(sequence = %self.inner.name, start = range.start, end = range.end, "segment allocated");
        Ok(Segment::new(range))
    }
}

/// Each domain's code sequence ([`crate::model::sequence`]): an allocator apiece, made
/// on a domain's first generated code and kept (domains are registered, so few).
#[derive(Debug, Clone)]
pub struct CodeSequences {
    inner: Arc<Sequences>,
}

#[derive(Debug)]
struct Sequences {
    source: Arc<dyn SegmentSource>,
    max_age: Duration,
    segments_fetched: Counter,
    wasted: Counter,
    /// Per domain, the allocator and the code space its step was sized for.
    held: Mutex<HashMap<String, (CodeSpace, SegmentAllocator)>>,
}

impl CodeSequences {
    /// Sequences over `source`, every allocator counting into the given metrics.
    pub fn new(
        source: Arc<dyn SegmentSource>,
        max_age: Duration,
        segments_fetched: Counter,
        wasted: Counter,
    ) -> Self {
        CodeSequences {
            inner: Arc::new(Sequences {
                source,
                max_age,
                segments_fetched,
                wasted,
                held: Mutex::default(),
            }),
        }
    }

    /// The next number of `domain`'s code sequence, whose codes lie in `space`.
    pub async fn next_number(&self, domain: &str, space: &CodeSpace) -> Result<u64, StoreError> {
        self.allocator(domain, space).next_id().await
    }

    /// Every domain's allocator made so far.
    pub fn allocators(&self) -> Vec<SegmentAllocator> {
        let held = self.inner.held.lock().unwrap_or_else(|e| e.into_inner());
        held.values().map(|(_, alloc)| alloc.clone()).collect()
    }

    fn allocator(&self, domain: &str, space: &CodeSpace) -> SegmentAllocator {
        let mut held = self.inner.held.lock().unwrap_or_else(|e| e.into_inner());
        match held.get(domain) {
            Some((sized_for, alloc)) if sized_for == space => alloc.clone(),
            // New, or the domain's shape changed (only possible while it held no link):
            // segments sized for the space it has now.
            _ => {
                let alloc = SegmentAllocator::with_counters(
                    Arc::clone(&self.inner.source),
                    code_sequence(domain),
                    code_step(space),
                    self.inner.max_age,
                    self.inner.segments_fetched.clone(),
                    self.inner.wasted.clone(),
                );
                held.insert(domain.to_owned(), (*space, alloc.clone()));
                alloc
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use async_trait::async_trait;
    use std::collections::HashSet;
    use std::sync::Mutex;
    use tokio::sync::watch;

    /// An in-memory sequence that reports every segment it hands out.
    #[derive(Debug)]
    struct FakeSource {
        step: u64,
        max: Mutex<u64>,
        calls: watch::Sender<u64>,
        /// While set, every fetch fails as an unreachable database does.
        down: AtomicBool,
    }

    impl FakeSource {
        fn new(step: u64) -> Arc<Self> {
            Arc::new(FakeSource {
                step,
                max: Mutex::new(0),
                calls: watch::channel(0).0,
                down: AtomicBool::new(false),
            })
        }

        async fn wait_for_calls(&self, n: u64) {
            let mut rx = self.calls.subscribe();
            rx.wait_for(|&c| c >= n).await.expect("sender alive");
        }
    }

    #[async_trait]
    impl SegmentSource for FakeSource {
        async fn next_segment(&self, _name: &str, _step: u64) -> Result<Range<u64>, StoreError> {
            if self.down.load(Ordering::SeqCst) {
                self.calls.send_modify(|c| *c += 1);
                return Err(StoreError::Unavailable("the test took it down".into()));
            }
            let range = {
                let mut max = self.max.lock().expect("lock");
                *max += self.step;
                *max - self.step..*max
            };
            self.calls.send_modify(|c| *c += 1);
            Ok(range)
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn concurrent_callers_get_distinct_dense_ids() {
        let source = FakeSource::new(1_000);
        let alloc = SegmentAllocator::new(source.clone(), "links", DEFAULT_SEGMENT_MAX_AGE);
        let tasks: Vec<_> = (0..32)
            .map(|_| {
                let alloc = alloc.clone();
                tokio::spawn(async move {
                    let mut ids = Vec::with_capacity(2_500);
                    for _ in 0..2_500 {
                        ids.push(alloc.next_id().await.expect("id"));
                    }
                    ids
                })
            })
            .collect();
        let mut all = HashSet::new();
        for task in tasks {
            for id in task.await.expect("task") {
                assert!(all.insert(id), "id {id} issued twice");
            }
        }
        assert_eq!(all.len(), 80_000);
        // Dense: every id below the highest issued was issued, but for the unused rest
        // of the segments still buffered.
        let max = all.iter().copied().max().expect("ids");
        assert!(max < 80_000 + 2 * 1_000, "ids spread to {max}");
        assert_eq!(alloc.wasted(), 0);
    }

    #[tokio::test]
    async fn the_next_segment_is_fetched_after_a_fifth_of_the_current_is_used() {
        let source = FakeSource::new(100);
        let alloc = SegmentAllocator::new(source.clone(), "links", DEFAULT_SEGMENT_MAX_AGE);
        for expected in 0..20 {
            assert_eq!(alloc.next_id().await.unwrap(), expected);
        }
        assert_eq!(*source.calls.borrow(), 1, "no prefetch before 20%");
        assert_eq!(alloc.next_id().await.unwrap(), 20);
        source.wait_for_calls(2).await;
        // The boundary is crossed from the buffer: no third fetch, no gap.
        for expected in 21..150 {
            assert_eq!(alloc.next_id().await.unwrap(), expected);
        }
        assert_eq!(alloc.segments_fetched(), 2);
    }

    #[tokio::test(start_paused = true)]
    async fn an_old_segment_is_abandoned_and_its_rest_counted_as_wasted() {
        let source = FakeSource::new(100);
        let alloc = SegmentAllocator::new(source.clone(), "links", Duration::from_secs(300));
        assert_eq!(alloc.next_id().await.unwrap(), 0);
        tokio::time::advance(Duration::from_secs(301)).await;
        assert_eq!(
            alloc.next_id().await.unwrap(),
            100,
            "a fresh segment after max_age"
        );
        assert_eq!(alloc.wasted(), 99);
    }

    /// The runbook's drill "segment source down": the numbers in hand go on being issued
    /// while the gauges show them running out; creation fails (503) only once they are
    /// spent, and resumes, without a gap, when the source is back.
    #[tokio::test]
    async fn with_the_source_down_the_numbers_in_hand_are_issued_then_creation_waits() {
        let source = FakeSource::new(100);
        let alloc = SegmentAllocator::new(source.clone(), "links", DEFAULT_SEGMENT_MAX_AGE);
        assert_eq!(alloc.remaining(), None, "nothing asked for yet");
        assert_eq!(alloc.next_id().await.unwrap(), 0);
        assert_eq!(alloc.remaining(), Some((99, 0)));
        source.down.store(true, Ordering::SeqCst);
        for expected in 1..100 {
            assert_eq!(alloc.next_id().await.unwrap(), expected);
        }
        source.wait_for_calls(2).await; // the prefetch at a fifth, failed
        assert_eq!(
            alloc.remaining(),
            Some((0, 0)),
            "what HopSegmentsRunningOut sees"
        );
        assert!(matches!(
            alloc.next_id().await,
            Err(StoreError::Unavailable(_))
        ));
        source.down.store(false, Ordering::SeqCst);
        assert_eq!(alloc.next_id().await.unwrap(), 100);
        assert_eq!(alloc.remaining(), Some((99, 0)));
    }

    #[tokio::test]
    async fn a_zero_max_age_still_issues_ids() {
        let source = FakeSource::new(10);
        let alloc = SegmentAllocator::new(source.clone(), "links", Duration::ZERO);
        let a = alloc.next_id().await.unwrap();
        let b = alloc.next_id().await.unwrap();
        assert_ne!(a, b);
    }
}

//! Segment allocator throughput: ids per second from one process, with the database
//! replaced by an in-memory sequence so that only the allocator is measured (a real
//! database is touched once per 10,000 ids, in the background).
//!
//! cargo bench -p origin-api --bench segments

use async_trait::async_trait;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use origin_api::segments::{SegmentAllocator, DEFAULT_SEGMENT_MAX_AGE};
use origin_api::store::{SegmentSource, StoreError};
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

#[derive(Debug, Default)]
struct Memory(AtomicU64);

#[async_trait]
impl SegmentSource for Memory {
    async fn next_segment(&self, _name: &str, step: u64) -> Result<Range<u64>, StoreError> {
        let end = self.0.fetch_add(step, Ordering::Relaxed) + step;
        Ok(end - step..end)
    }
}

const IDS: u64 = 100_000;

/// An allocator over an in-memory source, its first segment not yet fetched.
fn fresh_allocator() -> SegmentAllocator {
    SegmentAllocator::new(
        Arc::new(Memory::default()),
        "links",
        DEFAULT_SEGMENT_MAX_AGE,
    )
}

fn allocate(c: &mut Criterion) {
    let mut group = c.benchmark_group("segment_allocator");
    group.throughput(Throughput::Elements(IDS));

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let alloc = fresh_allocator();
    group.bench_function("one_task", |b| {
        b.to_async(&rt).iter(|| async {
            let mut last = 0;
            for _ in 0..IDS {
                last = alloc.next_id().await.expect("id");
            }
            last
        })
    });

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let alloc = fresh_allocator();
    group.bench_function("two_threads", |b| {
        b.to_async(&rt).iter(|| {
            let alloc = alloc.clone();
            async move {
                let tasks: Vec<_> = (0..2)
                    .map(|_| {
                        let alloc = alloc.clone();
                        tokio::spawn(async move {
                            for _ in 0..IDS / 2 {
                                alloc.next_id().await.expect("id");
                            }
                        })
                    })
                    .collect();
                for t in tasks {
                    t.await.expect("task");
                }
            }
        })
    });
    group.finish();
}

criterion_group!(benches, allocate);
criterion_main!(benches);

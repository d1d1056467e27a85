//! One suite, every database: what the store promises, checked against SQLite and
//! PostgreSQL alike.

mod common;

use common::TestDb;
use origin_api::store::SegmentSource;
use std::collections::BTreeMap;
use std::sync::Arc;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_segment_advances_never_overlap_and_each_writes_its_outbox_row() {
    for t in TestDb::all("segments").await {
        let db = Arc::new(t.db.clone());
        let tasks: Vec<_> = (0..16)
            .map(|_| {
                let db = db.clone();
                tokio::spawn(async move { db.next_segment("links").await })
            })
            .collect();
        let mut ranges = Vec::new();
        for task in tasks {
            ranges.push(task.await.expect("task").expect("segment"));
        }
        ranges.sort_by_key(|r| r.start);
        for pair in ranges.windows(2) {
            assert_eq!(
                pair[0].end,
                pair[1].start,
                "{}: gap or overlap in {ranges:?}",
                t.kind()
            );
        }
        assert_eq!(ranges[0].start, 0, "{}", t.kind());
        // Another sequence is independent.
        assert_eq!(db.next_segment("other").await.expect("segment").start, 0);

        let rows: Vec<(String, String, i64, String)> = t
            .db
            .read_all(
                "SELECT lane, kind, version, payload FROM outbox WHERE route_key = 'links' ORDER BY seq",
                &[],
            )
            .await
            .expect("outbox");
        assert_eq!(rows.len(), 16, "{}", t.kind());
        let by_end: BTreeMap<i64, &(String, String, i64, String)> =
            rows.iter().map(|r| (r.2, r)).collect();
        for range in &ranges {
            let row = by_end
                .get(&(range.end as i64))
                .expect("an outbox row per segment");
            assert_eq!((row.0.as_str(), row.1.as_str()), ("fast", "segment"));
            let payload: serde_json::Value = serde_json::from_str(&row.3).expect("payload JSON");
            assert_eq!(payload["start"], range.start);
            assert_eq!(payload["end"], range.end);
        }
        t.cleanup().await;
    }
}

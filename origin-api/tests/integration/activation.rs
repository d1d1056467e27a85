//! The activation window as a promise the origin keeps, on every database available:
//! what a meta says, that no id is issued past a promise still running, that `low`
//! stays at the oldest link the edge does not have yet, and the heartbeat.

use crate::common::{Api, TestDb};
use axum::http::{header, StatusCode};
use origin_api::model::time::now_ms;
use origin_api::segments::{SegmentAllocator, DEFAULT_SEGMENT_MAX_AGE};
use origin_api::store::{LeaseClaim, OutboxStore, StoreError, MIN_HEADROOM, SKEW_MARGIN_MS};
use serde_json::json;
use std::sync::Arc;

const WINDOW_MS: i64 = 600_000;
/// The test origins' default domain's code sequence.
const SEQ: &str = "code:s.example";

#[tokio::test]
async fn a_meta_covers_every_segment_reserved_and_low_stays_at_the_oldest_undelivered_link() {
    for t in TestDb::all("activation-low").await {
        let api = Api {
            state: crate::common::app_state(&t),
        };
        let token = api.key("acme", false).await;
        let first = api
            .create(&token, json!({ "target_url": "https://dest.example/1" }))
            .await;
        assert_eq!(first.status, StatusCode::CREATED);
        // Its segment was reserved long ago (a publisher stalled for twenty minutes)...
        api.exec(&format!(
            "UPDATE outbox SET created_at = {} WHERE kind = 'segment'",
            now_ms() - 20 * 60_000
        ))
        .await;
        // ...and another origin reserved one since.
        let other = SegmentAllocator::new(Arc::new(t.db.clone()), SEQ, DEFAULT_SEGMENT_MAX_AGE);
        let later = other.next_id().await.expect("id");
        assert!(later >= 10_000);

        let claim = crate::common::publisher_claim(&t.db).await;
        let p =
            t.db.record_activation(&claim, SEQ, WINDOW_MS)
                .await
                .expect("meta");
        assert_eq!(
            p.high,
            20_000,
            "{}: every reserved segment lies below high",
            t.kind()
        );
        assert_eq!(
            p.low,
            0,
            "{}: the undelivered link of the old segment keeps low down",
            t.kind()
        );
        assert!(p.headroom >= MIN_HEADROOM);
        assert_eq!(p.window_ms, WINDOW_MS);
        // The next promise is newer, and keeps the earlier low while that one runs.
        api.exec("UPDATE links SET published_version = 1, published_at = 1")
            .await;
        let q =
            t.db.record_activation(&claim, SEQ, WINDOW_MS)
                .await
                .expect("meta");
        assert!(q.v > p.v);
        assert_eq!(
            q.low,
            0,
            "{}: an earlier promise's low still runs",
            t.kind()
        );
        // A stale leader records nothing.
        let stale = LeaseClaim {
            epoch: claim.epoch - 1,
            ..claim
        };
        assert!(matches!(
            t.db.record_activation(&stale, SEQ, WINDOW_MS).await,
            Err(StoreError::LeaseLost)
        ));
        t.cleanup().await;
    }
}

#[tokio::test]
async fn no_segment_is_reserved_past_a_running_promise_and_creation_says_when_to_retry() {
    for t in TestDb::all("activation-limit").await {
        let api = Api {
            state: crate::common::app_state(&t),
        };
        let token = api.key("acme", false).await;
        assert_eq!(
            api.create(&token, json!({ "target_url": "https://dest.example/1" }))
                .await
                .status,
            StatusCode::CREATED
        );
        let claim = crate::common::publisher_claim(&t.db).await;
        t.db.record_activation(&claim, SEQ, WINDOW_MS)
            .await
            .expect("meta");
        // Say the promise left no headroom at all: the next segment would break it.
        api.exec("UPDATE activation_promises SET headroom = 0")
            .await;
        let fresh = Api {
            state: crate::common::app_state(&t),
        };
        let refused = fresh
            .create(&token, json!({ "target_url": "https://dest.example/2" }))
            .await;
        assert_eq!(
            refused.status,
            StatusCode::SERVICE_UNAVAILABLE,
            "{}: {}",
            t.kind(),
            refused.text
        );
        let wait: u64 = refused.headers[header::RETRY_AFTER]
            .to_str()
            .expect("ascii")
            .parse()
            .expect("seconds");
        assert!(
            wait > 0 && wait <= ((WINDOW_MS + SKEW_MARGIN_MS) / 1000 + 1) as u64,
            "{wait}"
        );
        assert!(refused.body["detail"]
            .as_str()
            .expect("detail")
            .contains("held back"));
        // Once the promise has run out (with the margin for clocks), ids flow again.
        api.exec(&format!(
            "UPDATE activation_promises SET at_ms = at_ms - {}",
            WINDOW_MS + SKEW_MARGIN_MS + 1_000
        ))
        .await;
        let created = fresh
            .create(&token, json!({ "target_url": "https://dest.example/3" }))
            .await;
        assert_eq!(
            created.status,
            StatusCode::CREATED,
            "{}: {}",
            t.kind(),
            created.text
        );
        t.cleanup().await;
    }
}

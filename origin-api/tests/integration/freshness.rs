//! Two origins on one PostgreSQL database: a change made through one reaches the other's
//! redirect cache at once (LISTEN/NOTIFY), a code the other remembered as unknown is
//! found as soon as it is created, and a lost notification connection forgets the cache.

use crate::common::{Api, TestDb};
use axum::http::StatusCode;
use hop_e2e::poll;
use serde_json::json;
use std::cell::RefCell;
use std::time::{Duration, Instant};
use tokio::sync::watch;

/// Waits (up to 10 s, far below the cache's 60 s) until `origin` redirects `code` to
/// `target`; returns how long that took.
async fn until_redirects(origin: &Api, code: &str, target: &str) -> Duration {
    // The last answer, for the failure message.
    let last = RefCell::new(String::new());
    let started = Instant::now();
    poll(format!("{code} redirects to {target}"))
        .within(Duration::from_secs(10))
        .every(Duration::from_millis(2))
        .explain(|| format!("it still answers {}", last.borrow()))
        .until_true(|| async {
            let r = origin.visit("GET", "s.example", &format!("/{code}")).await;
            let location = r
                .headers
                .get("location")
                .and_then(|l| l.to_str().ok())
                .unwrap_or_default()
                .to_owned();
            let done = location == target;
            *last.borrow_mut() = format!("{} {location:?}", r.status);
            done
        })
        .await;
    started.elapsed()
}

async fn patch(api: &Api, token: &str, code: &str, version: u64, target: &str) {
    let r = api
        .patch_json(
            token,
            &format!("/v1/links/s.example/{code}"),
            Some(&format!("\"{version}\"")),
            json!({ "target_url": target }),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_change_through_one_origin_reaches_the_others_cache_at_once() {
    let Some(t) = TestDb::postgres("freshness").await else {
        return;
    };
    let a = Api {
        state: crate::common::app_state(&t),
    };
    let b = Api {
        state: crate::common::app_state(&t),
    };
    let (stop, stopped) = watch::channel(false);
    let listening = tokio::spawn(origin_api::freshness::listen(
        b.state.freshness.clone(),
        stopped,
    ));
    let token = a.key("acme", false).await;
    // B remembers an alias as unknown; A creates it; B finds it at once.
    let unknown = b.visit("GET", "s.example", "/fresh-one").await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND);
    // (B listens before A writes: wait for its first connection.) This wait had no
    // deadline: 30 s is generous for a connection to the test's own database.
    poll("B listens")
        .within(Duration::from_secs(30))
        .every(Duration::from_millis(5))
        .until_true(|| async { b.state.metrics.freshness_connects.get() > 0 })
        .await;
    let created = a
        .create(
            &token,
            json!({ "target_url": "https://dest.example/v1", "code": "fresh-one" }),
        )
        .await;
    assert_eq!(created.status, StatusCode::CREATED);
    until_redirects(&b, "fresh-one", "https://dest.example/v1").await;

    // Fifty edits through A, each seen by B's redirect.
    let mut took = Vec::new();
    for version in 1..=50u64 {
        let target = format!("https://dest.example/v{}", version + 1);
        patch(&a, &token, "fresh-one", version, &target).await;
        took.push(until_redirects(&b, "fresh-one", &target).await);
    }
    took.sort();
    println!(
        "PATCH on origin A to origin B's redirect answering it: median {:?}, max {:?} (50 edits)",
        took[took.len() / 2],
        took[took.len() - 1]
    );

    // A ban through A blocks at B at once (its denylist is read again).
    let admin = a.key("ops", true).await;
    let ban = a
        .post_json(
            &admin,
            "/v1/bans",
            &json!({ "kind": "host", "host": "dest.example", "reason": "test" }),
        )
        .await;
    assert_eq!(ban.status, StatusCode::CREATED, "{}", ban.text);
    poll("the ban reaches B before its 5 s re-read")
        .within(Duration::from_secs(4))
        .every(Duration::from_millis(2))
        .until_true(|| async {
            b.visit("GET", "s.example", "/fresh-one").await.status == StatusCode::FORBIDDEN
        })
        .await;

    // The notification connection is cut: B forgets what it holds, since it could have
    // missed a change meanwhile (here, one made behind every origin's back).
    a.exec("UPDATE links SET target_url = 'https://elsewhere.example/' WHERE code = 'fresh-one'")
        .await;
    a.exec("DELETE FROM bans").await;
    b.state.cache.bans_changed();
    let connects = b.state.metrics.freshness_connects.get();
    a.exec(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
         WHERE query LIKE 'LISTEN%' AND pid <> pg_backend_pid()",
    )
    .await;
    // This wait had no deadline: 30 s is generous for B to notice the cut and connect
    // again.
    poll("B listens again")
        .within(Duration::from_secs(30))
        .every(Duration::from_millis(5))
        .until_true(|| async { b.state.metrics.freshness_connects.get() != connects })
        .await;
    // The cache is forgotten once B listens again, not before: by then a new
    // connection is listening.
    let listening_now: Vec<(i64,)> = a
        .rows("SELECT COUNT(*) FROM pg_stat_activity WHERE query LIKE 'LISTEN%' AND pid <> pg_backend_pid()")
        .await;
    assert!(
        listening_now.first().is_some_and(|(n,)| *n >= 1),
        "the cache was forgotten before B listened again"
    );
    until_redirects(&b, "fresh-one", "https://elsewhere.example/").await;
    stop.send(true).expect("stop");
    let _ = listening.await;
    t.cleanup().await;
}

/// A domain changed through one origin is decided by its new settings at the other at
/// once: a domain disabled, a not-found page added.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_domain_changed_through_one_origin_is_obeyed_by_the_other_at_once() {
    let Some(t) = TestDb::postgres("freshness-domains").await else {
        return;
    };
    let (a, b) = (Api::of(&t), Api::of(&t));
    let (stop, stopped) = watch::channel(false);
    let listening = tokio::spawn(origin_api::freshness::listen(
        b.state.freshness.clone(),
        stopped,
    ));
    let admin = a.key("ops", true).await;
    let made = a
        .post_json(
            &admin,
            "/v1/domains",
            &json!({"domain": "go.example", "shared": true}),
        )
        .await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.text);
    let link = a
        .create(
            &admin,
            json!({"domain": "go.example", "target_url": "https://dest.example/", "code": "kept"}),
        )
        .await;
    assert_eq!(link.status, StatusCode::CREATED, "{}", link.text);
    // This wait had no deadline: 30 s is generous for a connection to the test's own
    // database.
    poll("B listens")
        .within(Duration::from_secs(30))
        .every(Duration::from_millis(5))
        .until_true(|| async { b.state.metrics.freshness_connects.get() > 0 })
        .await;
    // B holds the domain's settings now.
    assert_eq!(
        b.visit("GET", "go.example", "/kept").await.status,
        StatusCode::FOUND
    );
    assert_eq!(
        b.visit("GET", "go.example", "/nothing").await.status,
        StatusCode::NOT_FOUND
    );

    let changed = a
        .patch_json(
            &admin,
            "/v1/domains/go.example",
            Some("\"1\""),
            json!({"not_found_url": "https://www.example.org/", "status": "disabled"}),
        )
        .await;
    assert_eq!(changed.status, StatusCode::OK, "{}", changed.text);
    poll("the other origin stops serving the disabled domain (its cache holds settings 60 s)")
        .within(Duration::from_secs(10))
        .every(Duration::from_millis(2))
        .until_true(|| async {
            b.visit("GET", "go.example", "/kept").await.status == StatusCode::NOT_FOUND
        })
        .await;
    stop.send(true).expect("stop");
    listening.await.expect("listener");
    t.cleanup().await;
}

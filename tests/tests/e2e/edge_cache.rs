//! The location's cache of origin answers (the Cache API, which `wrangler dev` runs
//! locally as Cloudflare does on custom domains): an isolate that never asked the origin
//! about a new link gets the answer another one cached, found or not, without a call.

use hop_e2e::{api_key, free_port, origin_env, Edge, Origin};
use hop_e2e::{EDGE_TOKEN, PERMUTATION_KEYS, SYNC_TOKEN};
use reqwest::header::LOCATION;
use reqwest::StatusCode;
use serde_json::json;

/// The link redirects and the unknown alias gets 404.
async fn visit_both(edge: &Edge) {
    let res = edge.visit("cached-link").await;
    assert_eq!(res.status(), StatusCode::FOUND, "{}", edge.log());
    assert_eq!(res.headers()[LOCATION], "https://dest.example/cached");
    let res = edge.visit("no-such-alias").await;
    assert_eq!(res.status(), StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn a_fresh_isolate_reuses_the_answers_its_location_cached() {
    let dir = tempfile::tempdir().expect("temp dir");
    let origin_port = free_port();
    let origin_url = format!("http://127.0.0.1:{origin_port}");
    // Held far longer than the restart takes, so that the test does not race the clock.
    let mut edge = Edge::start_with(
        &[],
        &[
            ("ORIGIN_URL", origin_url.as_str()),
            ("ORIGIN_TOKEN", EDGE_TOKEN),
            ("SYNC_TOKEN", SYNC_TOKEN),
            ("PERMUTATION_KEYS", PERMUTATION_KEYS),
            ("ANSWER_HOLD_S", "600"),
        ],
    )
    .await;
    // No publishing: KV stays empty, so every answer comes from the origin or a cache.
    let env = origin_env(dir.path(), None);
    let key = api_key(&env, "e2e", false);
    let origin = Origin::start(origin_port, &env, dir.path().join("origin.log")).await;
    origin
        .create(
            &key,
            json!({ "target_url": "https://dest.example/cached", "code": "cached-link" }),
        )
        .await;

    visit_both(&edge).await;
    assert_eq!(origin.metric("hop_edge_resolves_total").await, 2);

    // A new isolate: its memory is empty, the location's cache is not.
    edge.restart().await;
    visit_both(&edge).await;
    assert_eq!(
        origin.metric("hop_edge_resolves_total").await,
        2,
        "the second isolate asked the origin again"
    );
    // A code nobody asked about yet still reaches the origin.
    assert_eq!(
        edge.visit("other-alias").await.status(),
        StatusCode::NOT_FOUND
    );
    assert_eq!(origin.metric("hop_edge_resolves_total").await, 3);
}

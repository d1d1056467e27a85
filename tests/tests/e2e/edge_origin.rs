//! The real origin and the real `wrangler dev`, wired as in production (nothing mocked
//! between them), each test with an edge and an origin of its own: a new link redirects
//! at the edge at once through the activation fallback, and an expired one answers 410
//! there; once published a link is served from KV without asking the origin, and an
//! edit replaces it there while a late push of the older version is refused; random
//! codes never reach the origin; tombstones, bans and expiry reach the edge, and with
//! the origin dead KV links still redirect, bans still block, and a possibly-new code
//! gets 503 with Retry-After.

use hop_e2e::{
    api_key, client, free_port, origin_env, poll, random_codes, wait_published, wired_edge, Origin,
    Wired, SYNC_TOKEN,
};
use reqwest::header::{LOCATION, RETRY_AFTER};
use reqwest::StatusCode;
use serde_json::{json, Value};
use std::time::{Duration, Instant, SystemTime};
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

/// How long the expiring links live: long enough to be created and published first.
const SHORT_LIFE: Duration = Duration::from_secs(3);

/// Creates the alias `code`, expiring at the first whole second at least
/// [`SHORT_LIFE`] from now, and returns that moment. (The edge works in whole seconds
/// and rounds an expiry up, so a fraction would end the link later.)
async fn create_expiring(origin: &Origin, key: &str, code: &str) -> SystemTime {
    let at = SystemTime::now() + SHORT_LIFE;
    let secs = at
        .duration_since(SystemTime::UNIX_EPOCH)
        .expect("clock")
        .as_secs()
        + 1;
    let at = SystemTime::UNIX_EPOCH + Duration::from_secs(secs);
    let expires_at = OffsetDateTime::from(at).format(&Rfc3339).expect("format");
    let target = format!("https://dest.example/{code}");
    create(
        origin,
        key,
        json!({ "target_url": target, "code": code, "expires_at": expires_at }),
    )
    .await;
    at
}

/// Waits until the clock is past `at`: the passing of time is what is tested.
async fn outlive(at: SystemTime) {
    if let Ok(left) = at.duration_since(SystemTime::now()) {
        tokio::time::sleep(left + Duration::from_millis(50)).await;
    }
}

async fn create(origin: &Origin, key: &str, body: Value) -> Value {
    origin.create(key, body).await
}

/// Creates the alias `code` and waits until the edge has it.
async fn published(w: &Wired, code: &str) {
    create(
        &w.origin,
        &w.key,
        json!({ "target_url": format!("https://dest.example/{code}"), "code": code }),
    )
    .await;
    wait_published(&w.origin.url(""), &w.key, "s.example", code).await;
}

#[tokio::test]
async fn before_anything_is_published_a_new_link_redirects_through_the_fallback() {
    let dir = tempfile::tempdir().expect("temp dir");
    let origin_port = free_port();
    let edge = wired_edge(origin_port).await;
    // Publishing off: the edge can only learn of links by asking the origin.
    let env = origin_env(dir.path(), None);
    let key = api_key(&env, "e2e", false);
    // An alias: asking about a generated code would make the edge read the activation
    // meta now, and KV keeps even "not found" for its cache time; codes it cannot date
    // are the random codes' test.
    let origin = Origin::start(origin_port, &env, dir.path().join("origin.log")).await;
    create(
        &origin,
        &key,
        json!({ "target_url": "https://dest.example/first", "code": "first-link" }),
    )
    .await;
    let expiry = create_expiring(&origin, &key, "brief-link").await;
    let res = edge.visit("first-link").await;
    assert_eq!(res.status(), StatusCode::FOUND, "{}", edge.log());
    assert_eq!(res.headers()[LOCATION], "https://dest.example/first");
    assert_eq!(origin.metric("hop_edge_resolves_total").await, 1);
    // Expired before it was ever published: the origin's answer makes it 410, not 404.
    outlive(expiry).await;
    assert_eq!(edge.visit("brief-link").await.status(), StatusCode::GONE);
    assert_eq!(origin.metric("hop_edge_resolves_total").await, 2);
}

#[tokio::test]
async fn a_published_link_comes_from_kv_and_an_edit_replaces_it_while_an_older_push_is_refused() {
    let w = Wired::start("e2e", false).await;
    let (edge, origin, key) = (&w.edge, &w.origin, &w.key);
    let second = create(
        origin,
        key,
        json!({ "target_url": "https://dest.example/second", "code": "second-link" }),
    )
    .await;
    assert_eq!(second["edge"]["state"], "pending");
    wait_published(&origin.url(""), key, "s.example", "second-link").await;
    let res = edge.visit("second-link").await;
    assert_eq!(res.status(), StatusCode::FOUND);
    assert_eq!(res.headers()[LOCATION], "https://dest.example/second");
    assert_eq!(
        origin.metric("hop_edge_resolves_total").await,
        0,
        "served from KV"
    );
    // An edit reaches the edge once the publisher reports it published, and a late push
    // of the older version is refused by the worker.
    let patched = client()
        .patch(origin.url("/v1/links/s.example/second-link"))
        .bearer_auth(key)
        .header("if-match", "\"1\"")
        .json(&json!({ "target_url": "https://dest.example/second-v2" }))
        .send()
        .await
        .expect("patch");
    assert_eq!(patched.status(), StatusCode::OK);
    // Timed from the API's answer to the edge's new answer, for the table of bounds
    // (docs/operating.md, "What each promise rests on"): reported, not asserted.
    let returned = Instant::now();
    poll("the edit reaches the edge")
        .within(Duration::from_secs(30))
        .every(Duration::from_millis(5))
        .until_true(|| async {
            edge.visit("second-link").await.headers()[LOCATION] == "https://dest.example/second-v2"
        })
        .await;
    println!(
        "an edit reached the edge {} ms after the API answered",
        returned.elapsed().as_millis()
    );
    wait_published(&origin.url(""), key, "s.example", "second-link").await;
    let stale = json!({ "t": "https://dest.example/second", "s": "active", "r": 302, "x": null, "v": 1, "q": false });
    let reply: Value = client()
        .post(edge.url("/_hop/sync"))
        .bearer_auth(SYNC_TOKEN)
        .json(&json!({ "items": [{ "key": "l:s.example/second-link", "value": stale.to_string(), "version": 1 }] }))
        .send()
        .await
        .expect("push")
        .json()
        .await
        .expect("reply");
    assert_eq!(
        reply["refused"][0]["key"], "l:s.example/second-link",
        "{reply}"
    );
    assert_eq!(reply["refused"][0]["held"], 2, "{reply}");
    let res = edge.visit("second-link").await;
    assert_eq!(res.headers()[LOCATION], "https://dest.example/second-v2");
}

#[tokio::test]
async fn random_codes_of_the_generated_shape_are_404_without_reaching_the_origin() {
    let w = Wired::start("e2e", false).await;
    // A generated link published, so that the edge holds the activation meta.
    let made = create(
        &w.origin,
        &w.key,
        json!({ "target_url": "https://dest.example/generated" }),
    )
    .await;
    let code = made["code"].as_str().expect("code").to_owned();
    wait_published(&w.origin.url(""), &w.key, "s.example", &code).await;
    let randoms = 10_000_u64;
    for random in random_codes(randoms as usize, 0x2545_F491_4F6C_DD1D) {
        let res = w.edge.visit(&random).await;
        assert_eq!(res.status(), StatusCode::NOT_FOUND, "{random}");
    }
    let asked = w.origin.metric("hop_edge_resolves_total").await;
    assert!(
        asked * 100 < randoms,
        "{asked} of {randoms} random codes reached the origin"
    );
}

#[tokio::test]
async fn tombstones_bans_and_expiry_reach_the_edge_and_hold_with_the_origin_dead() {
    let w = Wired::start("e2e", false).await;
    let (edge, origin, key) = (&w.edge, &w.origin, &w.key);
    published(&w, "doomed-link").await;
    published(&w, "banned-link").await;
    published(&w, "kept-link").await;
    let expiry = create_expiring(origin, key, "fleeting-link").await;
    wait_published(&origin.url(""), key, "s.example", "fleeting-link").await;
    assert_eq!(
        edge.visit("fleeting-link").await.status(),
        StatusCode::FOUND
    );
    let asked = origin.metric("hop_edge_resolves_total").await;

    // A published link that expires answers 410 from its KV record, asking no one.
    outlive(expiry).await;
    assert_eq!(edge.visit("fleeting-link").await.status(), StatusCode::GONE);
    assert_eq!(origin.metric("hop_edge_resolves_total").await, asked);
    // A deleted link answers 410 once its tombstone is published; a banned one 403.
    let deleted = client()
        .delete(origin.url("/v1/links/s.example/doomed-link"))
        .bearer_auth(key)
        .send()
        .await
        .expect("delete");
    assert_eq!(deleted.status(), StatusCode::NO_CONTENT);
    wait_published(&origin.url(""), key, "s.example", "doomed-link").await;
    assert_eq!(edge.visit("doomed-link").await.status(), StatusCode::GONE);
    let admin = api_key(&w.env, "ops", true);
    let banned = client()
        .post(origin.url("/v1/bans"))
        .bearer_auth(&admin)
        .json(&json!({ "kind": "code", "code": "banned-link", "reason": "e2e" }))
        .send()
        .await
        .expect("ban");
    assert_eq!(banned.status(), StatusCode::CREATED);
    poll("the ban reaches the edge")
        .within(Duration::from_secs(10))
        .every(Duration::from_millis(20))
        .until_true(|| async { edge.visit("banned-link").await.status() == StatusCode::FORBIDDEN })
        .await;

    // The origin dies: KV links still redirect, bans still block, tombstones still
    // answer 410, and a code that may be new gets 503.
    let Wired { edge, origin, .. } = w;
    origin.kill();
    assert_eq!(edge.visit("kept-link").await.status(), StatusCode::FOUND);
    assert_eq!(
        edge.visit("banned-link").await.status(),
        StatusCode::FORBIDDEN
    );
    assert_eq!(edge.visit("doomed-link").await.status(), StatusCode::GONE);
    let res = edge.visit("maybe-brand-new").await;
    assert_eq!(
        res.status(),
        StatusCode::SERVICE_UNAVAILABLE,
        "{}",
        edge.log()
    );
    assert!(res.headers().get(RETRY_AFTER).is_some());
}

//! Undoing a delete at the real edge: a deleted link answers 410 at the edge, and once
//! its owner restores it (`POST …/restore`), the edge sends visitors to its target again.

use hop_e2e::{client, poll, Wired};
use reqwest::StatusCode;
use serde_json::json;
use std::time::Duration;

/// The publisher's push to the worker and KV's local write, with room for a loaded machine.
const DEADLINE: Duration = Duration::from_secs(60);

async fn until_status(w: &Wired, want: StatusCode) {
    poll(format!("/spring-sale answers {want} at the edge"))
        .within(DEADLINE)
        .every(Duration::from_millis(200))
        .explain(|| format!("{}\n{}", w.origin.log(), w.edge.log()))
        .until_true(|| async { w.edge.visit("spring-sale").await.status() == want })
        .await;
}

#[tokio::test]
async fn a_deleted_link_restored_by_its_owner_answers_again_at_the_edge() {
    let w = Wired::start("acme", false).await;
    w.origin
        .create(
            &w.key,
            json!({"code": "spring-sale", "target_url": "https://shop.example/spring"}),
        )
        .await;
    until_status(&w, StatusCode::FOUND).await;
    let gone = client()
        .delete(w.origin.url("/v1/links/s.example/spring-sale"))
        .bearer_auth(&w.key)
        .send()
        .await
        .expect("delete");
    assert_eq!(gone.status(), StatusCode::NO_CONTENT);
    until_status(&w, StatusCode::GONE).await;
    let back = client()
        .post(w.origin.url("/v1/links/s.example/spring-sale/restore"))
        .bearer_auth(&w.key)
        .send()
        .await
        .expect("restore");
    let status = back.status();
    assert_eq!(
        status,
        StatusCode::OK,
        "{}",
        back.text().await.unwrap_or_default()
    );
    until_status(&w, StatusCode::FOUND).await;
    let res = w.edge.visit("spring-sale").await;
    assert_eq!(
        res.headers().get("location").and_then(|v| v.to_str().ok()),
        Some("https://shop.example/spring")
    );
}

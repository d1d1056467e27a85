//! A threat feed at the real edge: an operator adds a feed that lists the host of a live
//! link (`hop-origin feeds add`), the serving origin reads it at once, and the edge
//! answers 403 for the link, through the ordinary ban lane; a new link to the host is
//! refused; and a visitor's report through the serving origin's form is recorded.

use hop_e2e::{client, poll, Origin, Wired};
use reqwest::StatusCode;
use serde_json::json;
use std::time::{Duration, Instant};

/// The publisher's push of the denylist to the worker, with room for a loaded machine.
const DEADLINE: Duration = Duration::from_secs(60);

#[tokio::test]
async fn a_feed_refresh_bans_a_live_link_at_the_edge() {
    let w = Wired::start("acme", false).await;
    for (code, target) in [
        ("bank-login", "https://secure.evil-bank.example/login"),
        ("spring-sale", "https://shop.example/spring"),
    ] {
        w.origin
            .create(&w.key, json!({"code": code, "target_url": target}))
            .await;
    }
    for code in ["bank-login", "spring-sale"] {
        poll(format!("/{code} answers 302 at the edge"))
            .within(DEADLINE)
            .every(Duration::from_millis(200))
            .explain(|| format!("{}\n{}", w.origin.log(), w.edge.log()))
            .until_true(|| async { w.edge.visit(code).await.status() == StatusCode::FOUND })
            .await;
    }

    let feed = w.dir.path().join("phish.hosts");
    std::fs::write(&feed, "# test list\n0.0.0.0 evil-bank.example\n").expect("write the feed");
    let path = feed.to_str().expect("a path");
    let started = Instant::now();
    // The serving origin reads the new feed (due at once) and bans what it lists.
    let said = Origin::run(
        &["feeds", "add", "bank-phish", path, "--format", "hosts"],
        &w.env,
    );
    assert!(said.contains("added bank-phish"), "{said}");
    poll("/bank-login answers 403 at the edge")
        .within(DEADLINE)
        .every(Duration::from_millis(100))
        .explain(|| format!("{}\n{}", w.origin.log(), w.edge.log()))
        .until_true(|| async { w.edge.visit("bank-login").await.status() == StatusCode::FORBIDDEN })
        .await;
    // Local: wrangler dev's KV and a loopback push, not a production figure.
    eprintln!(
        "feed refresh to 403 at the local edge: {:?}",
        started.elapsed()
    );
    assert_eq!(
        w.edge.visit("spring-sale").await.status(),
        StatusCode::FOUND
    );

    let refused = client()
        .post(w.origin.url("/v1/links"))
        .bearer_auth(&w.key)
        .json(&json!({"target_url": "https://pay.evil-bank.example/"}))
        .send()
        .await
        .expect("create");
    assert_eq!(refused.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let text = refused.text().await.unwrap_or_default();
    assert!(text.contains("bank-phish"), "{text}");

    // A visitor reports another link through the serving origin's form (not a code).
    let report = client()
        .post(w.origin.url("/_hop/report"))
        .form(&[
            ("url", "https://s.example/spring-sale"),
            ("category", "spam"),
        ])
        .send()
        .await
        .expect("report");
    assert_eq!(report.status(), StatusCode::OK);
    let page = report.text().await.unwrap_or_default();
    assert!(page.contains("your report is recorded"), "{page}");
}

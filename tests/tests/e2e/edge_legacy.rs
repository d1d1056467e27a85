//! A domain moving from another shortener, at the real edge: while its `legacy_url` is
//! set (until its end date), a code on its legacy list that it has no link for goes to
//! the same code on the old shortener (with the visitor's query, never kept by a
//! browser); a code not on the list is not found, whatever the old shortener holds; an
//! interstitial domain shows its interstitial first. Each visit sent on reaches the
//! origin through the click queue and is listed per code (`GET
//! /v1/domains/{domain}/legacy-misses`); a link imported on that code takes over and
//! leaves the list; a banned code stays 403; unsetting `legacy_url` ends the fallback.

use hop_e2e::{client, poll, Wired};
use reqwest::header::{CACHE_CONTROL, LOCATION};
use reqwest::StatusCode;
use serde_json::{json, Value};
use std::time::Duration;

/// The publisher's push, the worker's hold of a domain's settings and the click
/// queue's windows, with room for a loaded machine.
const DEADLINE: Duration = Duration::from_secs(90);
const HUMAN_UA: &str = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Safari/537.36";

async fn visit(w: &Wired, path: &str) -> reqwest::Response {
    client()
        .get(w.edge.url(path))
        .header("host", "go.moving.example")
        .header("user-agent", HUMAN_UA)
        .send()
        .await
        .expect("edge answers")
}

fn location(res: &reqwest::Response) -> &str {
    res.headers()
        .get(LOCATION)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
}

/// Visits `path` until its answer's `Location` is `want` (empty: a 404).
async fn until_sent_to(w: &Wired, path: &str, want: &str) {
    poll(format!("{path} answered with {want:?}"))
        .within(DEADLINE)
        .every(Duration::from_millis(200))
        .explain(|| w.edge.log())
        .until_true(|| async {
            let res = visit(w, path).await;
            location(&res) == want && (want.is_empty() == (res.status() == StatusCode::NOT_FOUND))
        })
        .await;
}

/// Adds `codes` to `domain`'s legacy list, as an admin.
async fn list(w: &Wired, domain: &str, codes: &[&str]) {
    let res = client()
        .post(w.origin.url(&format!("/v1/domains/{domain}/legacy-codes")))
        .bearer_auth(&w.key)
        .json(&json!({ "codes": codes }))
        .send()
        .await
        .expect("origin answers");
    assert_eq!(res.status(), StatusCode::OK);
}

async fn misses(w: &Wired) -> Value {
    let res = client()
        .get(w.origin.url("/v1/domains/go.moving.example/legacy-misses"))
        .bearer_auth(&w.key)
        .send()
        .await
        .expect("origin answers");
    assert_eq!(res.status(), StatusCode::OK);
    res.json().await.expect("a page")
}

async fn patch_domain(w: &Wired, body: Value) {
    let read: Value = client()
        .get(w.origin.url("/v1/domains/go.moving.example"))
        .bearer_auth(&w.key)
        .send()
        .await
        .expect("read")
        .json()
        .await
        .expect("a domain");
    let res = client()
        .patch(w.origin.url("/v1/domains/go.moving.example"))
        .bearer_auth(&w.key)
        .header("if-match", format!("\"{}\"", read["version"]))
        .json(&body)
        .send()
        .await
        .expect("patch");
    assert_eq!(res.status(), StatusCode::OK);
}

#[tokio::test]
async fn a_moving_domains_listed_codes_go_to_its_old_shortener_until_imported() {
    let w = Wired::start("ops", true).await;
    let registered = client()
        .post(w.origin.url("/v1/domains"))
        .bearer_auth(&w.key)
        .json(&json!({"domain": "go.moving.example", "shared": true,
            "legacy_url": "https://old.example"}))
        .send()
        .await
        .expect("register");
    assert_eq!(registered.status(), StatusCode::CREATED);
    // The edge holds the domain's settings once an unlisted code is answered as the
    // domain's own not found; a code nobody listed is never sent on.
    until_sent_to(&w, "/Spring24", "").await;
    list(&w, "go.moving.example", &["Spring24", "Autumn25", "Phish1"]).await;

    until_sent_to(
        &w,
        "/Spring24?utm_source=mail",
        "https://old.example/Spring24?utm_source=mail",
    )
    .await;
    let unlisted = visit(&w, "/Winter26").await;
    assert_eq!(unlisted.status(), StatusCode::NOT_FOUND);
    assert_eq!(location(&unlisted), "");
    let res = visit(&w, "/Spring24").await;
    assert_eq!(res.status(), StatusCode::FOUND);
    assert_eq!(
        res.headers()
            .get(CACHE_CONTROL)
            .and_then(|v| v.to_str().ok()),
        Some("no-store")
    );
    visit(&w, "/Spring24").await;

    // Each visit crosses the click queue to the origin, which lists the code.
    poll("the edge's legacy misses reach the origin")
        .within(DEADLINE)
        .every(Duration::from_millis(500))
        .explain(|| format!("{}\n{}", w.origin.log(), w.edge.log()))
        .until_true(|| async {
            let page = misses(&w).await;
            page["items"][0]["code"] == "Spring24"
                && page["items"][0]["visits"].as_i64().unwrap_or_default() >= 3
        })
        .await;

    // Imported: the link takes over at the edge, and leaves the list.
    let link = w
        .origin
        .create(
            &w.key,
            json!({"domain": "go.moving.example", "code": "Spring24",
                "target_url": "https://acme.example/spring"}),
        )
        .await;
    assert_eq!(link["short_url"], "https://go.moving.example/Spring24");
    until_sent_to(&w, "/Spring24", "https://acme.example/spring").await;
    assert_eq!(misses(&w).await["items"], json!([]));

    // A banned code is refused, not sent on.
    let ban = client()
        .post(w.origin.url("/v1/bans"))
        .bearer_auth(&w.key)
        .json(&json!({"kind": "code", "domain": "go.moving.example", "code": "Phish1", "reason": "e2e"}))
        .send()
        .await
        .expect("ban");
    assert_eq!(ban.status(), StatusCode::CREATED);
    poll("the banned code is refused at the edge")
        .within(DEADLINE)
        .every(Duration::from_millis(200))
        .until_true(|| async { visit(&w, "/Phish1").await.status() == StatusCode::FORBIDDEN })
        .await;

    // Unset: the fallback ends once the edge holds the new settings.
    patch_domain(&w, json!({"legacy_url": null})).await;
    until_sent_to(&w, "/Autumn25", "").await;

    an_interstitial_domain_shows_its_interstitial_for_a_legacy_code(&w).await;
}

/// On a domain whose every link shows an interstitial, a listed legacy code shows one
/// too, naming the old shortener's address, before anyone goes on (run on the wired
/// pair of the test above: a `wrangler dev` costs seconds to start).
async fn an_interstitial_domain_shows_its_interstitial_for_a_legacy_code(w: &Wired) {
    let registered = client()
        .post(w.origin.url("/v1/domains"))
        .bearer_auth(&w.key)
        .json(
            &json!({"domain": "go.careful.example", "shared": true, "interstitial": true,
            "legacy_url": "https://old.example/s"}),
        )
        .send()
        .await
        .expect("register");
    assert_eq!(registered.status(), StatusCode::CREATED);
    list(w, "go.careful.example", &["Spring24"]).await;
    let shown = poll("the legacy code's interstitial at the edge")
        .within(DEADLINE)
        .every(Duration::from_millis(200))
        .explain(|| w.edge.log())
        .until(|| async {
            let res = client()
                .get(w.edge.url("/Spring24?a=1"))
                .header("host", "go.careful.example")
                .header("user-agent", HUMAN_UA)
                .send()
                .await
                .expect("edge answers");
            if res.status() != StatusCode::OK {
                return None;
            }
            res.text().await.ok()
        })
        .await;
    assert!(
        shown.contains(r#"href="https://old.example/s/Spring24?a=1""#),
        "{shown}"
    );
}

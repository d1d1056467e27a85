//! A scan of alias-shaped paths from one address at the real edge: each unknown alias is
//! a lookup at the origin (aliases cannot be dated), so one address gets its own budget
//! of such lookups (20 a minute, held by the isolate) and is then told 429, before it can
//! spend the isolate's budget (50 a second) that fresh campaign aliases visited by
//! everyone else need. `CF-Connecting-IP` is sent as Cloudflare would set it.

use hop_e2e::{client, poll, Wired};
use reqwest::StatusCode;
use serde_json::json;
use std::time::Duration;

async fn visit_from(w: &Wired, code: &str, ip: &str) -> reqwest::Response {
    client()
        .get(w.edge.url(&format!("/{code}")))
        .header("host", "s.example")
        .header("cf-connecting-ip", ip)
        .send()
        .await
        .expect("edge answers")
}

#[tokio::test]
async fn a_scan_from_one_address_is_refused_before_it_spends_the_isolates_budget() {
    let w = Wired::start("acme", false).await;
    let scanner = "203.0.113.5";
    for i in 0..20 {
        let res = visit_from(&w, &format!("scan-{i}-probe"), scanner).await;
        assert_eq!(res.status(), StatusCode::NOT_FOUND, "lookup {i}");
    }
    let refused = visit_from(&w, "scan-20-probe", scanner).await;
    assert_eq!(refused.status(), StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(
        refused
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok()),
        Some("60")
    );
    // An answer the isolate holds costs the scanner nothing: told again, not refused.
    let held = visit_from(&w, "scan-3-probe", scanner).await;
    assert_eq!(held.status(), StatusCode::NOT_FOUND);

    // Everyone else is still answered: an unknown alias is 404, a new campaign's alias
    // redirects.
    let other = "198.51.100.23";
    assert_eq!(
        visit_from(&w, "not-a-campaign", other).await.status(),
        StatusCode::NOT_FOUND
    );
    w.origin
        .create(
            &w.key,
            json!({"code": "launch-day", "target_url": "https://shop.example/launch"}),
        )
        .await;
    poll("the new alias answers 302 for another address")
        .within(Duration::from_secs(60))
        .every(Duration::from_millis(200))
        .explain(|| format!("{}\n{}", w.origin.log(), w.edge.log()))
        .until_true(|| async {
            visit_from(&w, "launch-day", other).await.status() == StatusCode::FOUND
        })
        .await;
}

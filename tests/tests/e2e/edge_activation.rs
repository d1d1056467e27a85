//! The promise that a link that exists is never 404 at the edge, attacked with the real
//! origin and the real `wrangler dev`:
//! - the sink stopped (every push fails) while a bulk import issues three segments of
//!   ids that no meta the edge holds has seen: the newest codes answer 302 through the
//!   origin, never 404;
//! - a scan of alias-shaped codes spends the edge's budget for codes it cannot date, and
//!   a fresh alias visited meanwhile answers 302 or 503, never 404;
//! - and what random codes then cost the origin.

use hop_e2e::{
    api_key, client, free_port, origin_env, origin_env_through, random_codes, wait_published,
    wired_edge, Origin, SinkMode,
};
use reqwest::StatusCode;
use serde_json::{json, Value};
use std::sync::Arc;

#[tokio::test]
async fn new_links_answer_through_the_origin_while_the_sink_is_down_never_404() {
    let dir = tempfile::tempdir().expect("temp dir");
    let origin_port = free_port();
    let edge = wired_edge(origin_port).await;
    let (sink, env) = origin_env_through(dir.path(), &edge).await;
    let key = api_key(&env, "e2e", false);
    let origin = Origin::start(origin_port, &env, dir.path().join("origin.log")).await;

    // One link, published: the edge now holds a meta for the first segment.
    let first = origin
        .create(&key, json!({ "target_url": "https://dest.example/first" }))
        .await;
    let first_code = first["code"].as_str().expect("code");
    wait_published(&origin.url(""), &key, "s.example", first_code).await;

    // The sink stops; 30,000 links (three segments) are created.
    sink.set(SinkMode::Down);
    let mut last_codes = Vec::new();
    for batch in 0..3 {
        let links: Vec<Value> = (0..10_000)
            .map(|i| json!({ "target_url": format!("https://dest.example/{batch}/{i}") }))
            .collect();
        let res = client()
            .post(origin.url("/v1/links/bulk"))
            .bearer_auth(&key)
            .json(&json!({ "links": links }))
            .send()
            .await
            .expect("bulk");
        assert_eq!(res.status(), StatusCode::OK);
        let body: Value = res.json().await.expect("results");
        if batch == 2 {
            last_codes = body["results"].as_array().expect("results")[9_900..]
                .iter()
                .map(|r| r["link"]["code"].as_str().expect("code").to_owned())
                .collect();
        }
    }
    // The newest codes are in no meta the edge has seen: each answers 302 through the
    // origin, never 404.
    for code in &last_codes {
        let res = edge.visit(code).await;
        assert_eq!(
            res.status(),
            StatusCode::FOUND,
            "{code}: a link that exists answered {}\n{}",
            res.status(),
            edge.log()
        );
    }

    // Random generated codes cost the origin almost nothing even now.
    let before = origin.metric("hop_edge_resolves_total").await;
    let randoms = 2_000;
    let mut refused = 0;
    for code in random_codes(randoms, 0x9e37_79b9_7f4a_7c15) {
        let status = edge.visit(&code).await.status();
        assert!(
            status == StatusCode::NOT_FOUND || status == StatusCode::SERVICE_UNAVAILABLE,
            "{code}: {status}"
        );
        refused += usize::from(status == StatusCode::SERVICE_UNAVAILABLE);
    }
    let asked = origin.metric("hop_edge_resolves_total").await - before;
    println!(
        "random codes with the sink down: {asked} of {randoms} reached the origin, {refused} answered 503"
    );
    assert!(
        asked * 100 < randoms as u64,
        "{asked} of {randoms} random codes reached the origin"
    );
}

#[tokio::test]
async fn a_fresh_alias_is_never_404_while_a_scan_spends_the_edges_budget() {
    let dir = tempfile::tempdir().expect("temp dir");
    let origin_port = free_port();
    let edge = Arc::new(wired_edge(origin_port).await);
    let env = origin_env(dir.path(), Some(edge.as_ref()));
    let key = api_key(&env, "e2e", false);
    let origin = Origin::start(origin_port, &env, dir.path().join("origin.log")).await;

    // A scan of 5,000 alias-shaped codes, sixteen at a time.
    let scan = {
        let edge = edge.clone();
        tokio::spawn(async move {
            let mut statuses = std::collections::BTreeMap::new();
            for round in 0..(5_000 / 16) {
                let visits: Vec<_> = (0..16)
                    .map(|i| {
                        let edge = edge.clone();
                        tokio::spawn(async move {
                            edge.visit(&format!("scan-{round}-{i}")).await.status()
                        })
                    })
                    .collect();
                for visit in visits {
                    let status = visit.await.expect("visit");
                    *statuses.entry(status.as_u16()).or_insert(0u32) += 1;
                }
            }
            statuses
        })
    };
    // Meanwhile a marketer creates an alias and it is visited at once, again and again.
    let mut answers = std::collections::BTreeMap::new();
    for n in 0..20 {
        let code = format!("fresh-alias-{n}");
        origin
            .create(
                &key,
                json!({ "target_url": "https://dest.example/fresh", "code": code }),
            )
            .await;
        let status = edge.visit(&code).await.status();
        assert!(
            status == StatusCode::FOUND || status == StatusCode::SERVICE_UNAVAILABLE,
            "{code}: a link that exists answered {status}\n{}",
            edge.log()
        );
        *answers.entry(status.as_u16()).or_insert(0u32) += 1;
    }
    let scanned = scan.await.expect("scan");
    println!("scan answers {scanned:?}; fresh aliases {answers:?}");
    assert!(
        scanned.keys().all(|s| *s == 404 || *s == 503),
        "{scanned:?}"
    );
}

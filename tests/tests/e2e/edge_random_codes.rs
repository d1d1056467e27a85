//! Random codes at the real edge: a domain with `code_strategy: random` reaches `wrangler
//! dev` as `cfg:{domain}`; then, while no push reaches KV, a new link's random code
//! answers 302 through the origin (the edge cannot date it, so it asks), and an unknown
//! one is asked about and answered 404. The whole path, end to end; that the edge never
//! dates a random code by a number, even with a meta, is `shared`'s unit test
//! (`activation::tests::a_random_domains_codes_cannot_be_dated`), which fails without it.

use hop_e2e::{api_key, client, free_port, origin_env_through, poll, wired_edge, Origin, SinkMode};
use reqwest::header::LOCATION;
use reqwest::StatusCode;
use serde_json::json;
use std::time::Duration;

const DOMAIN: &str = "r.example";

/// A visitor's `GET path` on `r.example` at the edge, from an address of its own.
async fn visit(edge: &hop_e2e::Edge, path: &str, n: u32) -> reqwest::Response {
    client()
        .get(edge.url(path))
        .header("host", DOMAIN)
        .header("cf-connecting-ip", format!("10.200.{}.{}", n >> 8, n & 255))
        .send()
        .await
        .expect("edge answers")
}

#[tokio::test]
async fn a_new_random_code_answers_through_the_origin_before_kv_holds_it() {
    let dir = tempfile::tempdir().expect("temp dir");
    let origin_port = free_port();
    let edge = wired_edge(origin_port).await;
    let (sink, env) = origin_env_through(dir.path(), &edge).await;
    let admin = api_key(&env, "ops", true);
    let origin = Origin::start(origin_port, &env, dir.path().join("origin.log")).await;

    // Seven characters: the default numbered shape too, so only the domain's settings at
    // the edge tell that its codes cannot be dated.
    let registered = client()
        .post(origin.url("/v1/domains"))
        .bearer_auth(&admin)
        .json(
            &json!({"domain": DOMAIN, "shared": true, "code_strategy": "random",
                      "code_length": 7, "root_url": "https://home.example/"}),
        )
        .send()
        .await
        .expect("register");
    assert_eq!(registered.status(), StatusCode::CREATED);
    // The edge knows the domain once its root answers with the domain's page.
    let mut n = 0;
    poll("the domain's settings at the edge")
        .within(Duration::from_secs(60))
        .every(Duration::from_millis(200))
        .explain(|| edge.log())
        .until(|| {
            n += 1;
            let edge = &edge;
            let n = n;
            async move {
                let res = visit(edge, "/", n).await;
                let to = res.headers().get(LOCATION).and_then(|v| v.to_str().ok());
                (to == Some("https://home.example/")).then_some(())
            }
        })
        .await;

    // No push reaches KV from now on.
    sink.set(SinkMode::Down);
    let key = api_key(&env, "acme", false);
    let made = origin
        .create(
            &key,
            json!({"target_url": "https://dest.example/random", "domain": DOMAIN}),
        )
        .await;
    let code = made["code"].as_str().expect("code").to_owned();
    assert_eq!(code.len(), 7, "{made}");
    let res = visit(&edge, &format!("/{code}"), 1_000).await;
    assert_eq!(
        res.status(),
        StatusCode::FOUND,
        "{code}: a link that exists answered {}\n{}",
        res.status(),
        edge.log()
    );
    assert_eq!(
        res.headers().get(LOCATION).and_then(|v| v.to_str().ok()),
        Some("https://dest.example/random")
    );
    // An unknown code of the shape is asked about too, and is 404.
    let before = origin.metric("hop_edge_resolves_total").await;
    let res = visit(&edge, "/Zz9Yy8X", 1_001).await;
    assert_eq!(res.status(), StatusCode::NOT_FOUND, "{}", edge.log());
    assert!(origin.metric("hop_edge_resolves_total").await > before);
}

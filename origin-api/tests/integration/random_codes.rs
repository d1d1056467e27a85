//! Random codes on every database available: a domain with `code_strategy: random` gets
//! codes of its length from a CSPRNG, never a number; a code another link holds is drawn
//! again (single and bulk creates), and too many collisions in a row say the space is
//! full; the origin serves them although they stand for no number under its ceiling.

use crate::common::{apis, Api};
use axum::http::StatusCode;
use serde_json::{json, Value};
use std::collections::HashSet;

const DOMAIN: &str = "r.example";

async fn register(api: &Api, admin: &str, body: Value) -> crate::common::Reply {
    api.post_json(admin, "/v1/domains", &body).await
}

async fn create(api: &Api, key: &str) -> crate::common::Reply {
    api.create(
        key,
        json!({"target_url": "https://shop.example/r", "domain": DOMAIN}),
    )
    .await
}

fn script(api: &Api, codes: &[&str]) {
    let mut queue = api.state.links.scripted_codes.lock().expect("the script");
    queue.extend(codes.iter().map(|c| (*c).to_owned()));
}

async fn collisions(api: &Api) -> f64 {
    let text = api.metrics().await;
    text.lines()
        .find_map(|l| l.strip_prefix("hop_random_code_collisions_total "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no collision counter in\n{text}"))
}

#[tokio::test]
async fn a_random_domain_draws_codes_and_draws_again_on_a_collision() {
    for (api, t) in apis("random-codes").await {
        let admin = api.key("ops", true).await;
        for (body, field) in [
            (
                json!({"domain": DOMAIN, "shared": true, "code_strategy": "random", "code_length": 6}),
                "code_length",
            ),
            (
                json!({"domain": DOMAIN, "shared": true, "code_length": 11}),
                "code_length",
            ),
            (
                json!({"domain": DOMAIN, "shared": true, "code_strategy": "uuid"}),
                "code_strategy",
            ),
        ] {
            let r = register(&api, &admin, body).await;
            assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.text);
            assert_eq!(r.body["field"], field, "{}", r.text);
        }
        let r = register(
            &api,
            &admin,
            json!({"domain": DOMAIN, "shared": true, "code_strategy": "random", "code_length": 10}),
        )
        .await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
        assert_eq!(r.body["code_strategy"], "random");
        assert_eq!(r.body["code_length"], 10);
        let key = api.key("acme", false).await;

        let mut codes = HashSet::new();
        for _ in 0..100 {
            let made = create(&api, &key).await;
            assert_eq!(made.status, StatusCode::CREATED, "{}", made.text);
            let code = made.body["code"].as_str().expect("code").to_owned();
            assert_eq!(code.len(), 10, "{code}");
            assert!(code.bytes().all(|b| b.is_ascii_alphanumeric()), "{code}");
            assert!(codes.insert(code), "a code drawn twice");
        }
        let first = codes.iter().next().expect("a code").clone();
        let link = origin_api::store::links::get(api.state.db(), DOMAIN, &first)
            .await
            .expect("read")
            .expect("stored");
        assert!(link.is_random_code(), "{link:?}");
        // Its number is nobody's: an origin that did not create it (nothing cached)
        // still reads and serves it, although the code decodes past the ceiling.
        let other = Api::of(&t);
        let visit = other.visit("GET", DOMAIN, &format!("/{first}")).await;
        assert_eq!(
            visit.status,
            StatusCode::FOUND,
            "{}: {}",
            t.kind(),
            visit.text
        );
        assert_eq!(
            other.visit("GET", DOMAIN, "/ZZZZZZZZZZ").await.status,
            StatusCode::NOT_FOUND
        );

        // A drawn code another link holds is drawn again, and counted.
        assert_eq!(collisions(&api).await, 0.0);
        script(&api, &[&first, "FreshCode1"]);
        let made = create(&api, &key).await;
        assert_eq!(made.status, StatusCode::CREATED, "{}", made.text);
        assert_eq!(made.body["code"], "FreshCode1");
        assert_eq!(collisions(&api).await, 1.0);

        // A bulk create draws again what is stored, and what another item drew.
        script(
            &api,
            &[
                &first,
                "BulkFresh1",
                "SameDraw01",
                "SameDraw01",
                "BulkFresh2",
            ],
        );
        let bulk = api
            .post_json(
                &key,
                "/v1/links/bulk",
                &json!({"links": [
                    {"target_url": "https://shop.example/a", "domain": DOMAIN},
                    {"target_url": "https://shop.example/b", "domain": DOMAIN},
                    {"target_url": "https://shop.example/c", "domain": DOMAIN}]}),
            )
            .await;
        assert_eq!(bulk.status, StatusCode::OK, "{}", bulk.text);
        let got: HashSet<String> = bulk.body["results"]
            .as_array()
            .expect("results")
            .iter()
            .map(|r| {
                assert_eq!(r["ok"], true, "{r}");
                r["link"]["code"].as_str().expect("code").to_owned()
            })
            .collect();
        let expected: HashSet<String> = ["BulkFresh1", "SameDraw01", "BulkFresh2"]
            .map(String::from)
            .into();
        assert_eq!(got, expected, "{}", bulk.text);
        assert_eq!(collisions(&api).await, 3.0);

        // Five collisions in a row: the space is called full, and nothing is stored.
        script(&api, &[&first, &first, &first, &first, &first]);
        let full = create(&api, &key).await;
        assert_eq!(full.status, StatusCode::CONFLICT, "{}", full.text);
        assert_eq!(
            full.body["type"], "/problems/code-space-full",
            "{}",
            full.text
        );

        // A link lives on the domain: its strategy is part of its shape, fixed now.
        let change = api
            .patch_json(
                &admin,
                &format!("/v1/domains/{DOMAIN}"),
                Some("\"1\""),
                json!({"code_strategy": "sequential", "code_length": 7}),
            )
            .await;
        assert_eq!(change.status, StatusCode::CONFLICT, "{}", change.text);
    }
}

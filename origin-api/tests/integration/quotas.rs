//! Quotas per owner on every database available: live links and links a day, counted in
//! the transaction of each create, bulk create, import, delete and restore, so that no
//! path passes them; the creation rate per owner over all its keys; each refusal names its
//! quota, and `GET /v1/owners/me` shows them.

use crate::common::{apis_with, Api};
use axum::http::StatusCode;
use serde_json::{json, Value};

async fn create(api: &Api, key: &str, code: &str) -> (StatusCode, Value) {
    let r = api
        .create(
            key,
            json!({"target_url": format!("https://shop.example/{code}"), "code": code}),
        )
        .await;
    (r.status, r.body)
}

async fn me(api: &Api, key: &str) -> Value {
    let r = api.call_as(key, "GET", "/v1/owners/me").await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    r.body
}

#[tokio::test]
async fn an_owner_holds_at_most_its_quota_of_live_links_by_every_path() {
    for (api, t) in apis_with("quota-links", &["--owner-max-links", "3"]).await {
        let key = api.key("acme", false).await;
        let other_key = api.key("acme", false).await;
        let someone = api.key("zeta", false).await;
        for code in ["one-link", "two-link"] {
            assert_eq!(create(&api, &key, code).await.0, StatusCode::CREATED);
        }
        // A bulk create that would pass the quota makes none of its links.
        let bulk = api
            .post_json(
                &other_key,
                "/v1/links/bulk",
                &json!({"links": [
                    {"target_url": "https://shop.example/a", "code": "bulk-a"},
                    {"target_url": "https://shop.example/b", "code": "bulk-b"}]}),
            )
            .await;
        assert_eq!(bulk.status, StatusCode::FORBIDDEN, "{}", bulk.text);
        assert_eq!(bulk.body["type"], "/problems/quota-links", "{}", bulk.text);
        assert_eq!(
            api.read(&key, "s.example", "bulk-a").await.status,
            StatusCode::NOT_FOUND
        );
        assert_eq!(
            create(&api, &other_key, "three-link").await.0,
            StatusCode::CREATED
        );
        let (status, body) = create(&api, &key, "four-link").await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
        assert_eq!(body["type"], "/problems/quota-links", "{body}");
        assert!(
            body["detail"].as_str().unwrap_or("").contains('3'),
            "{body}"
        );
        // Another owner has its own.
        assert_eq!(
            create(&api, &someone, "zeta-link").await.0,
            StatusCode::CREATED
        );
        let quotas = me(&api, &key).await;
        assert_eq!(
            quotas["links"],
            json!({"limit": 3, "used": 3}),
            "{} {quotas}",
            t.kind()
        );
        assert_eq!(quotas["owner"], "acme");

        // A delete gives one back; a restore past the quota is refused and stays deleted.
        let gone = api
            .call_as(&key, "DELETE", "/v1/links/s.example/one-link")
            .await;
        assert_eq!(gone.status, StatusCode::NO_CONTENT, "{}", gone.text);
        assert_eq!(me(&api, &key).await["links"]["used"], 2);
        assert_eq!(create(&api, &key, "five-link").await.0, StatusCode::CREATED);
        let back = api
            .call_as(&key, "POST", "/v1/links/s.example/one-link/restore")
            .await;
        assert_eq!(back.status, StatusCode::FORBIDDEN, "{}", back.text);
        assert_eq!(
            api.read(&key, "s.example", "one-link").await.body["status"],
            "deleted"
        );
        // An import is counted too.
        let page = json!({"links": [{"id": "s.example/imported-one",
            "long_url": "https://imported.example/", "custom_bitlinks": []}]});
        let imported = api
            .post_json(
                &key,
                "/v1/imports",
                &json!({"source": "bitly", "format": "api", "content": page.to_string()}),
            )
            .await;
        assert_eq!(imported.status, StatusCode::FORBIDDEN, "{}", imported.text);
        assert_eq!(me(&api, &key).await["links"]["used"], 3);
        t.cleanup().await;
    }
}

#[tokio::test]
async fn an_owners_own_quota_and_the_daily_one_are_kept() {
    for (api, t) in apis_with("quota-day", &["--owner-max-links-per-day", "2"]).await {
        let key = api.key("acme", false).await;
        let vip = api.key("vip", false).await;
        for code in ["day-one", "day-two"] {
            assert_eq!(create(&api, &key, code).await.0, StatusCode::CREATED);
        }
        // Deleting does not give a day's creates back.
        let gone = api
            .call_as(&key, "DELETE", "/v1/links/s.example/day-one")
            .await;
        assert_eq!(gone.status, StatusCode::NO_CONTENT);
        let (status, body) = create(&api, &key, "day-three").await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
        assert_eq!(body["type"], "/problems/quota-links-per-day", "{body}");
        let quotas = me(&api, &key).await;
        assert_eq!(quotas["links_per_day"]["limit"], 2, "{quotas}");
        assert_eq!(quotas["links_per_day"]["used"], 2, "{quotas}");
        assert!(quotas["links_per_day"]["resets_at"].is_string(), "{quotas}");
        // The day passes (the counted day moved back): creates start again.
        api.exec("UPDATE owner_usage SET day = day - 1 WHERE owner_id = 'acme'")
            .await;
        assert_eq!(create(&api, &key, "next-day").await.0, StatusCode::CREATED);

        // The operator gives one owner no daily limit.
        origin_api::store::quotas::set_limits(api.state.db(), "vip", None, Some(-1))
            .await
            .expect("set");
        for code in ["vip-one", "vip-two", "vip-three"] {
            assert_eq!(
                create(&api, &vip, code).await.0,
                StatusCode::CREATED,
                "{code}"
            );
        }
        assert!(me(&api, &vip).await["links_per_day"]["limit"].is_null());
        t.cleanup().await;
    }
}

#[tokio::test]
async fn an_owner_creates_no_faster_than_its_rate_whatever_its_keys() {
    for (api, t) in apis_with("quota-rate", &["--owner-create-rate", "1"]).await {
        let keys = [
            api.key("acme", false).await,
            api.key("acme", false).await,
            api.key("acme", false).await,
        ];
        // Bursts of twice the rate: the third create within the second is refused,
        // though each key made only one.
        let mut statuses = Vec::new();
        for (i, key) in keys.iter().enumerate() {
            statuses.push(create(&api, key, &format!("rate-{i}-x")).await);
        }
        assert_eq!(statuses[0].0, StatusCode::CREATED);
        assert_eq!(statuses[1].0, StatusCode::CREATED);
        assert_eq!(
            statuses[2].0,
            StatusCode::TOO_MANY_REQUESTS,
            "{}",
            statuses[2].1
        );
        assert_eq!(
            statuses[2].1["type"],
            "/problems/owner-rate-limited",
            "{} {}",
            t.kind(),
            statuses[2].1
        );
        let quotas = me(&api, &keys[0]).await;
        assert_eq!(quotas["create_rate_per_owner"], 1, "{quotas}");
        assert_eq!(quotas["create_rate_per_key"], 10000, "{quotas}");
        t.cleanup().await;
    }
}

//! Keys limited to domains (`keys create --domain`) reach only links on those domains,
//! on every route; an owner a domain no longer admits (or a disabled domain) may still
//! read and delete its links there, and change nothing. Both databases.

use crate::common::{apis_with, Api};
use axum::http::StatusCode;
use origin_api::api_keys::{self, Grant, KeyError};
use origin_api::model::time::now_ms;
use serde_json::{json, Value};

const EDGE_TOKEN: &str = "scoped-edge-token";
const BRAND: &str = "go.acme.example";

/// Registers `go.acme.example` for acme alone; returns an admin token.
async fn brand_domain(api: &Api) -> String {
    let admin = api.key("ops", true).await;
    let made = api
        .post_json(
            &admin,
            "/v1/domains",
            &json!({"domain": BRAND, "owners": ["acme"]}),
        )
        .await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.text);
    admin
}

async fn made(api: &Api, token: &str, body: Value) -> Value {
    let r = api.create(token, body.clone()).await;
    assert_eq!(r.status, StatusCode::CREATED, "{body}: {}", r.text);
    r.body
}

/// Every route that names one link, as `token`: (what, status).
async fn each_link_route(
    api: &Api,
    token: &str,
    domain: &str,
    code: &str,
) -> Vec<(&'static str, StatusCode)> {
    let path = format!("/v1/links/{domain}/{code}");
    vec![
        ("read", api.call_as(token, "GET", &path).await.status),
        (
            "qr",
            api.call_as(token, "GET", &format!("{path}/qr"))
                .await
                .status,
        ),
        (
            "stats",
            api.call_as(token, "GET", &format!("{path}/stats"))
                .await
                .status,
        ),
        (
            "tokens",
            api.post_json(token, &format!("{path}/tokens"), &json!({"ttl_s": 60}))
                .await
                .status,
        ),
        (
            "patch",
            api.patch_json(token, &path, Some("\"1\""), json!({"title": "taken over"}))
                .await
                .status,
        ),
        ("delete", api.call_as(token, "DELETE", &path).await.status),
    ]
}

/// A key limited to `s.example` finds nothing of its owner's on another domain: every
/// route that names such a link answers 404 and changes nothing; a listing or a
/// dedupe that names the other domain is 403; lists, owner stats and the domains it is
/// shown hold only what the key may use.
#[tokio::test]
async fn a_key_limited_to_a_domain_reaches_no_link_elsewhere() {
    for (api, t) in apis_with("scoped-keys", &["--edge-token", EDGE_TOKEN]).await {
        brand_domain(&api).await;
        let acme = api.key("acme", false).await;
        let scoped = api.key_limited_to("acme", &["s.example"]).await;
        let target = "https://shop.example/spring";
        let brand = made(
            &api,
            &acme,
            // Public, so that a dedupe that looked before checking the domain would find it.
            json!({"domain": BRAND, "target_url": target, "code": "spring"}),
        )
        .await;
        made(
            &api,
            &acme,
            json!({"target_url": target, "code": "spring-here"}),
        )
        .await;
        // Visits of both, so the owner's stats have something to leave out.
        let events: Vec<Value> = [format!("{BRAND}/spring"), "s.example/spring-here".into()]
            .iter()
            .enumerate()
            .map(|(i, link)| {
                json!({"event_id": format!("e{i}"), "link": link, "version": 1, "at": now_ms(),
                    "country": "DE", "referrer_host": null, "device": "mobile", "bot": false, "status": 302})
            })
            .collect();
        let posted = api
            .post_json(EDGE_TOKEN, "/v1/edge/clicks", &json!({ "events": events }))
            .await;
        assert!(posted.status.is_success(), "{}", posted.text);
        api.fold_clicks().await;

        for (route, status) in each_link_route(&api, &scoped, BRAND, "spring").await {
            assert_eq!(status, StatusCode::NOT_FOUND, "{}: {route}", t.kind());
        }
        // The owner's unlimited key still sees it as it was.
        let read = api.read(&acme, BRAND, "spring").await;
        assert_eq!(read.status, StatusCode::OK, "{}", read.text);
        assert_eq!(read.body["version"], brand["version"]);
        assert_eq!(read.body["status"], "active");

        let routes = |body: &Value| -> Vec<String> {
            body["items"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .map(|l| {
                            format!(
                                "{}/{}",
                                l["domain"].as_str().unwrap_or(""),
                                l["code"].as_str().unwrap_or("")
                            )
                        })
                        .collect()
                })
                .unwrap_or_default()
        };
        let listed = api.call_as(&scoped, "GET", "/v1/links").await;
        assert_eq!(listed.status, StatusCode::OK, "{}", listed.text);
        assert_eq!(
            routes(&listed.body),
            ["s.example/spring-here"],
            "{}",
            t.kind()
        );
        let all = api.call_as(&acme, "GET", "/v1/links").await;
        assert_eq!(routes(&all.body).len(), 2, "{}", all.text);
        let elsewhere = api
            .call_as(&scoped, "GET", &format!("/v1/links?domain={BRAND}"))
            .await;
        assert_eq!(
            elsewhere.status,
            StatusCode::FORBIDDEN,
            "{}",
            elsewhere.text
        );

        let stats = api.call_as(&scoped, "GET", "/v1/stats").await;
        assert_eq!(stats.status, StatusCode::OK, "{}", stats.text);
        assert_eq!(
            stats.body["totals"]["visits"],
            1,
            "{}: {}",
            t.kind(),
            stats.text
        );
        let top: Vec<&str> = stats.body["top_links"]
            .as_array()
            .map(|a| a.iter().filter_map(|l| l["domain"].as_str()).collect())
            .unwrap_or_default();
        assert_eq!(top, ["s.example"], "{}", stats.text);
        let owner_wide = api.call_as(&acme, "GET", "/v1/stats").await;
        assert_eq!(
            owner_wide.body["totals"]["visits"], 2,
            "{}",
            owner_wide.text
        );

        let domains = api.call_as(&scoped, "GET", "/v1/domains").await;
        let names: Vec<&str> = domains
            .body
            .as_array()
            .map(|a| a.iter().filter_map(|d| d["domain"].as_str()).collect())
            .unwrap_or_default();
        assert_eq!(names, ["s.example"], "{}", domains.text);
        let one = api
            .call_as(&scoped, "GET", &format!("/v1/domains/{BRAND}"))
            .await;
        assert_eq!(one.status, StatusCode::NOT_FOUND, "{}", one.text);

        // dedupe on the other domain answers 403, never the link found there.
        let dedupe = api
            .create(
                &scoped,
                json!({"domain": BRAND, "target_url": target, "dedupe": true}),
            )
            .await;
        assert_eq!(dedupe.status, StatusCode::FORBIDDEN, "{}", dedupe.text);
        assert!(!dedupe.text.contains("spring"), "{}", dedupe.text);
        assert_eq!(api.count("links").await, 2, "{}", t.kind());
        t.cleanup().await;
    }
}

/// An owner a domain no longer admits, or any owner of a disabled domain, may read and
/// delete its links there and change nothing else (403).
#[tokio::test]
async fn links_on_a_domain_that_no_longer_admits_their_owner_are_read_and_delete_only() {
    for (api, t) in apis_with("scoped-orphans", &[]).await {
        let admin = brand_domain(&api).await;
        let acme = api.key("acme", false).await;
        for code in ["kept", "gone"] {
            made(
                &api,
                &acme,
                json!({"domain": BRAND, "target_url": "https://shop.example/", "code": code, "access": "signed"}),
            )
            .await;
        }
        let handed = api
            .patch_json(
                &admin,
                &format!("/v1/domains/{BRAND}"),
                Some("\"1\""),
                json!({"owners": ["zeta"]}),
            )
            .await;
        assert_eq!(handed.status, StatusCode::OK, "{}", handed.text);
        let path = format!("/v1/links/{BRAND}/kept");
        let changed = api
            .patch_json(
                &acme,
                &path,
                Some("\"1\""),
                json!({"target_url": "https://elsewhere.example/"}),
            )
            .await;
        assert_eq!(
            changed.status,
            StatusCode::FORBIDDEN,
            "{}: {}",
            t.kind(),
            changed.text
        );
        assert!(changed.text.contains("read and delete"), "{}", changed.text);
        let token = api
            .post_json(&acme, &format!("{path}/tokens"), &json!({"ttl_s": 60}))
            .await;
        assert_eq!(token.status, StatusCode::FORBIDDEN, "{}", token.text);
        let read = api.read(&acme, BRAND, "kept").await;
        assert_eq!(read.status, StatusCode::OK, "{}", read.text);
        assert_eq!(read.body["target_url"], "https://shop.example/");
        assert_eq!(read.body["version"], 1);
        let deleted = api
            .call_as(&acme, "DELETE", &format!("/v1/links/{BRAND}/gone"))
            .await;
        assert_eq!(deleted.status, StatusCode::NO_CONTENT, "{}", deleted.text);

        // A disabled domain: even an admin key of the owner changes nothing there.
        let back = api
            .patch_json(
                &admin,
                &format!("/v1/domains/{BRAND}"),
                Some("\"2\""),
                json!({"owners": ["acme"], "status": "disabled"}),
            )
            .await;
        assert_eq!(back.status, StatusCode::OK, "{}", back.text);
        let acme_admin = api.key("acme", true).await;
        for token in [&acme, &acme_admin] {
            let changed = api
                .patch_json(token, &path, Some("\"1\""), json!({"title": "x"}))
                .await;
            assert_eq!(
                changed.status,
                StatusCode::FORBIDDEN,
                "{}: {}",
                t.kind(),
                changed.text
            );
        }
        assert_eq!(api.read(&acme, BRAND, "kept").await.status, StatusCode::OK);
        t.cleanup().await;
    }
}

/// A key cannot be both an admin's and limited to domains: issuing one is refused, and
/// one stored before that rule is the limited key it says it is, not an admin.
#[tokio::test]
async fn an_admin_key_is_never_limited_to_a_domain() {
    let grant = Grant {
        admin: true,
        domains: vec!["s.example".into()],
    };
    assert!(matches!(
        api_keys::issue("ops", "both", &grant, 0),
        Err(KeyError::AdminLimited)
    ));
    for (api, t) in apis_with("scoped-admin", &[]).await {
        let (mut key, token) =
            api_keys::issue("ops", "old", &Grant::admin(), now_ms()).expect("issue");
        key.scopes = "links,admin,domain:s.example".into();
        origin_api::store::api_keys::insert(api.state.db(), &key)
            .await
            .expect("store key");
        let ban = api
            .post_json(
                &token,
                "/v1/bans",
                &json!({"kind": "host", "host": "evil.example", "reason": "test"}),
            )
            .await;
        assert_eq!(
            ban.status,
            StatusCode::FORBIDDEN,
            "{}: {}",
            t.kind(),
            ban.text
        );
        let domain = api
            .post_json(&token, "/v1/domains", &json!({"domain": "new.example"}))
            .await;
        assert_eq!(domain.status, StatusCode::FORBIDDEN, "{}", domain.text);
        assert_eq!(api.count("bans").await, 0);
        t.cleanup().await;
    }
}

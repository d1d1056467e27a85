//! Every URL a visitor (or a link-preview crawler) can be sent to passes the policy a
//! link's target passes: a link's page for when it has ended, its preview's image and a
//! domain's own pages are public, not loops, not banned, and on the domain's allowed
//! hosts; host bans cover them; and no visitor is sent to a banned host by way of a
//! page. Both databases.

use crate::common::{apis_with, Api};
use axum::http::StatusCode;
use serde_json::{json, Value};

const EDGE_TOKEN: &str = "visitor-urls-edge-token";

async fn field_refused(api: &Api, token: &str, body: Value, field: &str) {
    let r = api.create(token, body.clone()).await;
    assert_eq!(
        (r.status, r.body["field"].clone()),
        (StatusCode::UNPROCESSABLE_ENTITY, json!(field)),
        "{body}: {}",
        r.text
    );
}

async fn ban_host(api: &Api, admin: &str, host: &str) {
    let ban = api
        .post_json(
            admin,
            "/v1/bans",
            &json!({"kind": "host", "host": host, "reason": "phishing"}),
        )
        .await;
    assert_eq!(ban.status, StatusCode::CREATED, "{}", ban.text);
}

#[tokio::test]
async fn pages_and_preview_images_pass_the_policy_of_a_target() {
    for (api, t) in apis_with("visitor-urls-policy", &[]).await {
        let admin = api.key("ops", true).await;
        let acme = api.key("acme", false).await;
        let brand = json!({"domain": "go.acme.example", "owners": ["acme"], "allowed_target_hosts": ["acme.example"]});
        let made = api.post_json(&admin, "/v1/domains", &brand).await;
        assert_eq!(made.status, StatusCode::CREATED, "{}", made.text);
        ban_host(&api, &admin, "evil.example").await;
        let on_brand = |extra: Value| {
            let mut body =
                json!({"domain": "go.acme.example", "target_url": "https://shop.acme.example/"});
            for (k, v) in extra.as_object().cloned().unwrap_or_default() {
                body[k] = v;
            }
            body
        };
        // Outside the domain's allowed hosts.
        field_refused(
            &api,
            &acme,
            on_brand(json!({"expired_url": "https://elsewhere.example/"})),
            "expired_url",
        )
        .await;
        field_refused(
            &api,
            &acme,
            on_brand(json!({"preview": {"title": "t", "image_url": "https://cdn.elsewhere.example/a.png"}})),
            "preview",
        )
        .await;
        // Not public, a loop, banned: on any domain.
        for (body, field) in [
            (
                json!({"expired_url": "http://127.0.0.1/ended"}),
                "expired_url",
            ),
            (
                json!({"expired_url": "https://s.example/other"}),
                "expired_url",
            ),
            (
                json!({"expired_url": "https://www.evil.example/"}),
                "expired_url",
            ),
            (
                json!({"preview": {"title": "t", "image_url": "http://10.0.0.7/a.png"}}),
                "preview",
            ),
            (
                json!({"preview": {"title": "t", "image_url": "https://go.acme.example/a.png"}}),
                "preview",
            ),
            (
                json!({"preview": {"title": "t", "image_url": "https://img.evil.example/a.png"}}),
                "preview",
            ),
        ] {
            let mut body = body;
            body["target_url"] = json!("https://shop.example/");
            field_refused(&api, &acme, body, field).await;
        }
        // And through PATCH.
        let link = api
            .create(
                &acme,
                on_brand(json!({"expired_url": "https://www.acme.example/ended"})),
            )
            .await;
        assert_eq!(link.status, StatusCode::CREATED, "{}", link.text);
        let path = format!(
            "/v1/links/go.acme.example/{}",
            link.body["code"].as_str().unwrap_or("")
        );
        for (change, field) in [
            (
                json!({"expired_url": "https://elsewhere.example/"}),
                "expired_url",
            ),
            (
                json!({"preview": {"title": "t", "image_url": "https://cdn.elsewhere.example/a.png"}}),
                "preview",
            ),
        ] {
            let r = api
                .patch_json(&acme, &path, Some("\"1\""), change.clone())
                .await;
            assert_eq!(
                (r.status, r.body["field"].clone()),
                (StatusCode::UNPROCESSABLE_ENTITY, json!(field)),
                "{change}: {}",
                r.text
            );
        }

        // A domain's own pages: on its allowed hosts too, when it lists them.
        let refused = api
            .post_json(
                &admin,
                "/v1/domains",
                &json!({"domain": "b.acme.example", "owners": ["acme"], "allowed_target_hosts": ["acme.example"], "root_url": "https://elsewhere.example/"}),
            )
            .await;
        assert_eq!(
            (refused.status, refused.body["field"].clone()),
            (StatusCode::UNPROCESSABLE_ENTITY, json!("root_url")),
            "{}",
            refused.text
        );
        let changed = api
            .patch_json(
                &admin,
                "/v1/domains/go.acme.example",
                Some("\"1\""),
                json!({"not_found_url": "https://elsewhere.example/missing"}),
            )
            .await;
        assert_eq!(
            (changed.status, changed.body["field"].clone()),
            (StatusCode::UNPROCESSABLE_ENTITY, json!("not_found_url")),
            "{}: {}",
            t.kind(),
            changed.text
        );
        let fine = api
            .patch_json(
                &admin,
                "/v1/domains/go.acme.example",
                Some("\"1\""),
                json!({"not_found_url": "https://www.acme.example/missing"}),
            )
            .await;
        assert_eq!(fine.status, StatusCode::OK, "{}", fine.text);
        assert_eq!(api.count("links").await, 1, "{}", t.kind());
        t.cleanup().await;
    }
}

/// A host ban covers a link's page for when it has ended and its preview's image: the
/// link is marked banned (so the edge blocks it from its record alone) and answers 403
/// without a `Location`, before and after it ends.
#[tokio::test]
async fn a_ban_of_a_link_s_page_or_image_host_blocks_the_link() {
    for (api, t) in apis_with("visitor-urls-ban", &["--edge-token", EDGE_TOKEN]).await {
        let admin = api.key("ops", true).await;
        let acme = api.key("acme", false).await;
        let mut codes = Vec::new();
        for extra in [
            json!({"expired_url": "https://ended.evil.example/"}),
            json!({"preview": {"title": "Spring", "image_url": "https://img.evil.example/a.png"}}),
        ] {
            let mut body = extra;
            body["target_url"] = json!("https://shop.example/");
            let made = api.create(&acme, body.clone()).await;
            assert_eq!(made.status, StatusCode::CREATED, "{body}: {}", made.text);
            let code = made.body["code"].as_str().expect("code").to_owned();
            assert_eq!(
                api.visit("GET", "s.example", &format!("/{code}"))
                    .await
                    .status,
                StatusCode::FOUND
            );
            codes.push(code);
        }
        ban_host(&api, &admin, "evil.example").await;
        for code in &codes {
            let visit = api.visit("GET", "s.example", &format!("/{code}")).await;
            assert_eq!(
                (visit.status, visit.headers.get("location")),
                (StatusCode::FORBIDDEN, None),
                "{}: {code}",
                t.kind()
            );
            let record = api
                .call_as(
                    EDGE_TOKEN,
                    "GET",
                    &format!("/v1/edge/resolve/s.example/{code}"),
                )
                .await;
            assert_eq!(record.body["s"], "banned", "{}: {}", t.kind(), record.text);
        }
        // Ended, the link with its own page on the banned host is still blocked.
        api.exec(&format!(
            "UPDATE links SET expires_at = 1000 WHERE code = '{}'",
            codes[0]
        ))
        .await;
        let api = Api {
            state: crate::common::app_state(&t),
        };
        let ended = api
            .visit("GET", "s.example", &format!("/{}", codes[0]))
            .await;
        assert_eq!(
            (ended.status, ended.headers.get("location")),
            (StatusCode::FORBIDDEN, None),
            "{}",
            t.kind()
        );
        t.cleanup().await;
    }
}

/// A domain's pages on a banned host are not used: an unknown code is 404, `/` is 404
/// and an ended link 410, none with a `Location`.
#[tokio::test]
async fn no_domain_page_sends_a_visitor_to_a_banned_host() {
    for (api, t) in apis_with("visitor-urls-pages", &[]).await {
        let admin = api.key("ops", true).await;
        let acme = api.key("acme", false).await;
        let pages = json!({
            "domain": "pages.example", "shared": true,
            "not_found_url": "https://www.landing.example/missing",
            "root_url": "https://www.landing.example/",
            "expired_url": "https://www.landing.example/ended",
        });
        let made = api.post_json(&admin, "/v1/domains", &pages).await;
        assert_eq!(made.status, StatusCode::CREATED, "{}", made.text);
        let link = api
            .create(&acme, json!({"domain": "pages.example", "target_url": "https://shop.example/", "code": "ended-soon", "expires_at": "2099-01-01T00:00:00Z"}))
            .await;
        assert_eq!(link.status, StatusCode::CREATED, "{}", link.text);
        api.exec("UPDATE links SET expires_at = 1000 WHERE code = 'ended-soon'")
            .await;
        // A new process, whose cache has not held the link before its expiry moved.
        let api = Api {
            state: crate::common::app_state(&t),
        };
        let visits = [
            ("/ended-soon", StatusCode::GONE),
            ("/no-such-link", StatusCode::NOT_FOUND),
            ("/", StatusCode::NOT_FOUND),
        ];
        // Before the ban, each goes to its page.
        for (path, _) in visits {
            let r = api.visit("GET", "pages.example", path).await;
            assert_eq!(r.status, StatusCode::FOUND, "{}: {path}", t.kind());
            assert!(r.headers.contains_key("location"), "{path}");
        }
        ban_host(&api, &admin, "landing.example").await;
        for (path, status) in visits {
            let r = api.visit("GET", "pages.example", path).await;
            assert_eq!(
                (r.status, r.headers.get("location")),
                (status, None),
                "{}: {path}",
                t.kind()
            );
        }
        t.cleanup().await;
    }
}

//! The links API and the origin's own redirect, through the real router, on every
//! database available.

use crate::common::{apis, apis_with, register, Api, Reply, TestDb};
use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use origin_api::api_keys;
use origin_api::model::time::now_ms;
use serde_json::{json, Value};
use std::collections::HashSet;

#[tokio::test]
async fn a_created_link_is_readable_by_its_owner_only_and_redirects_at_once() {
    for (api, t) in apis("create").await {
        let token = api.key("acme", false).await;
        let res = api
            .create(
                &token,
                json!({ "target_url": "https://Dest.Example/landing?a=1", "tags": ["spring"] }),
            )
            .await;
        assert_eq!(
            res.status,
            StatusCode::CREATED,
            "{}: {}",
            t.kind(),
            res.text
        );
        let link = res.body.clone();
        let code = link["code"].as_str().expect("code").to_owned();
        assert_eq!(code.len(), 7, "{code}");
        assert!(code.bytes().all(|b| b.is_ascii_alphanumeric()), "{code}");
        assert_eq!(link["domain"], "s.example");
        assert_eq!(link["target_url"], "https://dest.example/landing?a=1");
        assert_eq!(link["status"], "active");
        assert_eq!(link["redirect"], 302);
        assert_eq!(link["version"], 1);
        assert_eq!(link["code_kind"], "generated");
        assert_eq!(link["edge"]["state"], "pending");
        assert_eq!(res.headers[header::ETAG], "\"1\"");
        assert_eq!(
            res.headers[header::LOCATION],
            format!("/v1/links/s.example/{code}").as_str()
        );

        let read = api.read(&token, "s.example", &code).await;
        assert_eq!(read.status, StatusCode::OK);
        assert_eq!(read.body, link);
        assert_eq!(read.headers[header::ETAG], "\"1\"");

        // Another owner cannot tell the link exists.
        let other = api.key("globex", false).await;
        assert_eq!(
            api.read(&other, "s.example", &code).await.status,
            StatusCode::NOT_FOUND
        );
        assert_eq!(
            api.read(&other, "s.example", "zzzzzzz").await.status,
            StatusCode::NOT_FOUND
        );

        // Visible through the origin's redirect the moment the create call returned.
        let visit = api
            .visit("GET", "s.example", &format!("/{code}?utm=x"))
            .await;
        assert_eq!(visit.status, StatusCode::FOUND);
        assert_eq!(
            visit.headers[header::LOCATION],
            "https://dest.example/landing?a=1"
        );
        let head = api
            .visit("HEAD", "S.Example:3000", &format!("/{code}"))
            .await;
        assert_eq!(head.status, StatusCode::FOUND);
        assert!(head.text.is_empty());
        t.cleanup().await;
    }
}

#[tokio::test]
async fn every_change_writes_its_outbox_row_in_the_same_transaction() {
    for (api, t) in apis("outbox").await {
        let token = api.key("acme", false).await;
        let res = api
            .create(
                &token,
                json!({ "target_url": "https://dest.example/", "code": "launch" }),
            )
            .await;
        assert_eq!(res.status, StatusCode::CREATED, "{}", res.text);
        let rows: Vec<(String, String, i64, String)> =
            t.db.read_all(
                "SELECT lane, route_key, version, payload FROM outbox WHERE kind = 'link'",
                &[],
            )
            .await
            .expect("outbox");
        assert_eq!(rows.len(), 1, "{}", t.kind());
        let (lane, route, version, payload) = &rows[0];
        assert_eq!(
            (lane.as_str(), route.as_str(), *version),
            ("normal", "s.example/launch", 1)
        );
        let record = shared::EdgeRecord::from_json(payload).expect("an edge record");
        assert_eq!(record.target, "https://dest.example/");
        assert_eq!(record.version, 1);
        // A refused create leaves no row behind.
        let again = api
            .create(
                &token,
                json!({ "target_url": "https://dest.example/", "code": "launch" }),
            )
            .await;
        assert_eq!(again.status, StatusCode::CONFLICT);
        assert_eq!(api.count("outbox WHERE kind = 'link'").await, 1);
        t.cleanup().await;
    }
}

#[tokio::test]
async fn custom_aliases_are_unique_per_domain_and_never_reissued() {
    for (api, t) in apis("aliases").await {
        let token = api.key("acme", false).await;
        crate::common::register(&t.db, "t.example").await;
        let first = api
            .create(
                &token,
                json!({ "target_url": "https://a.example/", "code": "spring-sale" }),
            )
            .await;
        assert_eq!(first.status, StatusCode::CREATED, "{}", first.text);
        assert_eq!(first.body["code_kind"], "custom");

        // Taken, by anyone: 409, and nothing stored.
        let other = api.key("globex", false).await;
        let taken = api
            .create(
                &other,
                json!({ "target_url": "https://b.example/", "code": "spring-sale" }),
            )
            .await;
        assert_eq!(taken.status, StatusCode::CONFLICT, "{}", taken.text);
        assert_eq!(
            taken.headers[header::CONTENT_TYPE],
            "application/problem+json"
        );
        assert!(taken.body["detail"]
            .as_str()
            .unwrap_or_default()
            .contains("s.example/spring-sale"));
        // Another domain may hold the same alias.
        let elsewhere = api
            .create(&other, json!({ "target_url": "https://b.example/", "code": "spring-sale", "domain": "T.Example." }))
            .await;
        assert_eq!(elsewhere.status, StatusCode::CREATED, "{}", elsewhere.text);
        assert_eq!(elsewhere.body["domain"], "t.example");
        assert_eq!(api.count("links").await, 2);

        // A tombstone keeps its code forever.
        assert_eq!(
            api.delete(&token, "s.example/spring-sale").await.status,
            StatusCode::NO_CONTENT
        );
        let visit = api.visit("GET", "s.example", "/spring-sale").await;
        assert_eq!(visit.status, StatusCode::GONE);
        let reuse = api
            .create(
                &token,
                json!({ "target_url": "https://c.example/", "code": "spring-sale" }),
            )
            .await;
        assert_eq!(reuse.status, StatusCode::CONFLICT);
        t.cleanup().await;
    }
}

#[tokio::test]
async fn bad_requests_get_a_clear_4xx_and_store_nothing() {
    for (api, t) in apis("bad requests").await {
        let token = api.key("acme", false).await;
        api.exec(&format!(
            "INSERT INTO bans (kind, host, reason, created_by, created_at) VALUES ('host', 'evil.example', 'phishing', 'ops', {})",
            now_ms()
        ))
        .await;
        let cases: Vec<(Value, StatusCode, &str)> = vec![
            (
                json!({ "target_url": "not a url" }),
                StatusCode::UNPROCESSABLE_ENTITY,
                "target_url",
            ),
            (
                json!({ "target_url": "javascript:alert(1)" }),
                StatusCode::UNPROCESSABLE_ENTITY,
                "target_url",
            ),
            (
                json!({ "target_url": "https://u:p@bank.example/" }),
                StatusCode::UNPROCESSABLE_ENTITY,
                "target_url",
            ),
            (
                json!({ "target_url": "https://login.evil.example/" }),
                StatusCode::UNPROCESSABLE_ENTITY,
                "target_url",
            ),
            (
                json!({ "target_url": "https://s.example/loop" }),
                StatusCode::UNPROCESSABLE_ENTITY,
                "target_url",
            ),
            (
                json!({ "target_url": "https://e.example/", "code": "api" }),
                StatusCode::UNPROCESSABLE_ENTITY,
                "code",
            ),
            (
                json!({ "target_url": "https://e.example/", "code": "Abc1234" }),
                StatusCode::UNPROCESSABLE_ENTITY,
                "code",
            ),
            (
                json!({ "target_url": "https://e.example/", "code": "a b" }),
                StatusCode::UNPROCESSABLE_ENTITY,
                "code",
            ),
            (
                json!({ "target_url": "https://e.example/", "expires_at": "2001-01-01T00:00:00Z" }),
                StatusCode::UNPROCESSABLE_ENTITY,
                "expires_at",
            ),
            (
                json!({ "target_url": "https://e.example/", "expires_at": "next week" }),
                StatusCode::UNPROCESSABLE_ENTITY,
                "expires_at",
            ),
            (
                json!({ "target_url": "https://e.example/", "redirect": 303 }),
                StatusCode::UNPROCESSABLE_ENTITY,
                "redirect",
            ),
            (
                json!({ "target_url": "https://e.example/", "domain": "a/b" }),
                StatusCode::UNPROCESSABLE_ENTITY,
                "domain",
            ),
            (
                json!({ "target_url": "https://e.example/", "tags": [""] }),
                StatusCode::UNPROCESSABLE_ENTITY,
                "tags",
            ),
            (
                json!({ "target_url": "https://e.example/", "colour": "red" }),
                StatusCode::UNPROCESSABLE_ENTITY,
                "body",
            ),
            (
                json!({ "code": "abc" }),
                StatusCode::UNPROCESSABLE_ENTITY,
                "body",
            ),
        ];
        for (body, status, field) in cases {
            let res = api.create(&token, body.clone()).await;
            assert_eq!(res.status, status, "{}: {body} → {}", t.kind(), res.text);
            assert_eq!(
                res.headers[header::CONTENT_TYPE],
                "application/problem+json",
                "{body}"
            );
            assert_eq!(res.body["field"], field, "{body}: {}", res.text);
            assert!(
                !res.body["detail"].as_str().unwrap_or_default().is_empty(),
                "{body}"
            );
        }

        let raw = |body: &'static str, content_type: Option<&str>| {
            let mut req =
                Request::post("/v1/links").header(header::AUTHORIZATION, format!("Bearer {token}"));
            if let Some(ct) = content_type {
                req = req.header(header::CONTENT_TYPE, ct);
            }
            req.body(Body::from(body)).expect("request")
        };
        assert_eq!(
            api.send(raw("{\"target_url\":", Some("application/json")))
                .await
                .status,
            StatusCode::BAD_REQUEST
        );
        assert_eq!(
            api.send(raw("{}", None)).await.status,
            StatusCode::UNSUPPORTED_MEDIA_TYPE
        );
        let huge = format!(
            "{{\"target_url\":\"https://e.example/{}\"}}",
            "a".repeat(origin_api::routes::SMALL_BODY_LIMIT)
        );
        let res = api
            .send(
                Request::post("/v1/links")
                    .header(header::AUTHORIZATION, format!("Bearer {token}"))
                    .header(header::CONTENT_TYPE, "application/json")
                    .body(Body::from(huge))
                    .expect("request"),
            )
            .await;
        assert_eq!(res.status, StatusCode::PAYLOAD_TOO_LARGE);

        assert_eq!(api.count("links").await, 0, "{}: nothing stored", t.kind());
        assert_eq!(api.count("outbox WHERE kind = 'link'").await, 0);
        t.cleanup().await;
    }
}

#[tokio::test]
async fn only_live_keys_are_accepted() {
    // Without the hold of verified keys, a revocation is refused on the next request.
    for (api, t) in apis_with("auth", &["--key-hold", "0"]).await {
        let body = json!({ "target_url": "https://e.example/" });
        assert_eq!(
            api.create("", body.clone()).await.status,
            StatusCode::UNAUTHORIZED
        );
        assert_eq!(
            api.create("hop_nonsense", body.clone()).await.status,
            StatusCode::UNAUTHORIZED
        );
        let token = api.key("acme", false).await;
        let forged = format!("{}0", &token[..token.len() - 1]);
        let forged = if forged == token {
            format!("{}1", &token[..token.len() - 1])
        } else {
            forged
        };
        assert_eq!(
            api.create(&forged, body.clone()).await.status,
            StatusCode::UNAUTHORIZED
        );
        assert_eq!(
            api.create(&token, body.clone()).await.status,
            StatusCode::CREATED
        );
        let (key_id, _) = api_keys::parse_token(&token).expect("token");
        assert!(
            origin_api::store::api_keys::revoke(api.state.db(), key_id, now_ms())
                .await
                .expect("revoke")
        );
        let res = api.create(&token, body).await;
        assert_eq!(res.status, StatusCode::UNAUTHORIZED);
        assert_eq!(
            res.headers[header::CONTENT_TYPE],
            "application/problem+json"
        );
        t.cleanup().await;
    }
}

#[tokio::test]
async fn the_origin_redirect_decides_like_the_edge() {
    for (api, t) in apis("redirect").await {
        let token = api.key("acme", false).await;
        let mk = |code: &'static str, target: &'static str, extra: Value| {
            let mut body = json!({ "target_url": target, "code": code });
            if let (Some(b), Some(e)) = (body.as_object_mut(), extra.as_object()) {
                b.extend(e.clone());
            }
            body
        };
        for body in [
            mk(
                "perm-link",
                "https://dest.example/p",
                json!({ "redirect": 301 }),
            ),
            mk(
                "fwd-link",
                "https://dest.example/q?a=1#f",
                json!({ "forward_query": true }),
            ),
            mk("evil-link", "https://www.evil.example/", json!({})),
            mk("off-link", "https://dest.example/off", json!({})),
            mk("ban-code", "https://dest.example/b", json!({})),
        ] {
            assert_eq!(api.create(&token, body).await.status, StatusCode::CREATED);
        }
        // Visited once before the changes, so the redirect cache holds every one of them.
        for path in [
            "/perm-link",
            "/evil-link",
            "/off-link",
            "/ban-code",
            "/nothing-here",
        ] {
            api.visit("GET", "s.example", path).await;
        }
        let ops = api.key("ops", true).await;
        let res = api
            .ban(
                &ops,
                json!({ "kind": "host", "host": "evil.example", "reason": "phishing" }),
            )
            .await;
        assert_eq!(res.status, StatusCode::CREATED);
        let res = api
            .ban(
                &ops,
                json!({ "kind": "code", "code": "ban-code", "reason": "malware" }),
            )
            .await;
        assert_eq!(res.status, StatusCode::CREATED);
        let res = api
            .patch(
                &token,
                "s.example/off-link",
                Some("\"1\""),
                json!({ "status": "disabled" }),
            )
            .await;
        assert_eq!(res.status, StatusCode::OK);

        let r = api.visit("GET", "s.example", "/perm-link").await;
        assert_eq!(
            (r.status, r.headers[header::LOCATION].to_str().ok()),
            (
                StatusCode::MOVED_PERMANENTLY,
                Some("https://dest.example/p")
            )
        );
        assert_eq!(r.headers[header::CACHE_CONTROL], "private, max-age=60");
        let r = api.visit("GET", "s.example", "/fwd-link?a=9&b=2").await;
        assert_eq!(
            r.headers[header::LOCATION],
            "https://dest.example/q?a=1&b=2#f"
        );
        for path in ["/evil-link", "/ban-code"] {
            let r = api.visit("GET", "s.example", path).await;
            assert_eq!(r.status, StatusCode::FORBIDDEN, "{path}");
            assert!(r.headers.get(header::LOCATION).is_none());
            assert_eq!(r.headers[header::CONTENT_TYPE], "text/html; charset=utf-8");
        }
        assert_eq!(
            api.visit("GET", "s.example", "/off-link").await.status,
            StatusCode::NOT_FOUND
        );
        assert_eq!(
            api.visit("GET", "s.example", "/nothing-here").await.status,
            StatusCode::NOT_FOUND
        );
        assert_eq!(
            api.visit("GET", "s.example", "/robots.txt").await.status,
            StatusCode::NOT_FOUND
        );
        assert_eq!(
            api.visit("GET", "t.example", "/perm-link").await.status,
            StatusCode::NOT_FOUND
        );
        // An address is no short domain: the default domain answers.
        for host in ["127.0.0.1:3000", "[::1]:3000"] {
            let r = api.visit("GET", host, "/perm-link").await;
            assert_eq!(r.status, StatusCode::MOVED_PERMANENTLY, "{host}");
        }
        let post = api.visit("POST", "s.example", "/perm-link").await;
        assert_eq!(post.status, StatusCode::METHOD_NOT_ALLOWED);
        assert_eq!(post.headers[header::ALLOW], "GET, HEAD");
        t.cleanup().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_creates_get_distinct_codes_that_resolve_to_their_own_targets() {
    for (api, t) in apis("concurrent creates").await {
        let token = api.key("acme", false).await;
        let api = std::sync::Arc::new(api);
        let tasks: Vec<_> = (0..32)
            .map(|client| {
                let (api, token) = (api.clone(), token.clone());
                tokio::spawn(async move {
                    let mut made = Vec::new();
                    for i in 0..20 {
                        let target = format!("https://dest.example/{client}/{i}");
                        let res = api.create(&token, json!({ "target_url": target })).await;
                        assert_eq!(res.status, StatusCode::CREATED, "{}", res.text);
                        made.push((
                            res.body["code"].as_str().unwrap_or_default().to_owned(),
                            target,
                        ));
                    }
                    made
                })
            })
            .collect();
        let mut codes = HashSet::new();
        let mut all = Vec::new();
        for task in tasks {
            for (code, target) in task.await.expect("task") {
                assert!(
                    codes.insert(code.clone()),
                    "{}: code {code} issued twice",
                    t.kind()
                );
                all.push((code, target));
            }
        }
        assert_eq!(codes.len(), 640);
        for (code, target) in all.iter().step_by(37) {
            let r = api.visit("GET", "s.example", &format!("/{code}")).await;
            assert_eq!(r.headers[header::LOCATION], target.as_str());
        }
        t.cleanup().await;
    }
}

impl Api {
    async fn patch(&self, token: &str, path: &str, if_match: Option<&str>, body: Value) -> Reply {
        self.patch_json(token, &format!("/v1/links/{path}"), if_match, body)
            .await
    }

    async fn delete(&self, token: &str, path: &str) -> Reply {
        self.call_as(token, "DELETE", &format!("/v1/links/{path}"))
            .await
    }
}

#[tokio::test]
async fn patch_needs_the_current_version_and_bumps_it() {
    for (api, t) in apis("patch").await {
        let token = api.key("acme", false).await;
        let made = api
            .create(
                &token,
                json!({ "target_url": "https://old.example/", "code": "promo" }),
            )
            .await;
        assert_eq!(made.status, StatusCode::CREATED);
        let change =
            json!({ "target_url": "https://new.example/", "title": "Spring", "redirect": 307 });

        let res = api
            .patch(&token, "s.example/promo", None, change.clone())
            .await;
        assert_eq!(
            res.status,
            StatusCode::PRECONDITION_REQUIRED,
            "{}",
            res.text
        );
        let res = api
            .patch(&token, "s.example/promo", Some("\"7\""), change.clone())
            .await;
        assert_eq!(res.status, StatusCode::PRECONDITION_FAILED, "{}", res.text);
        assert!(res.body["detail"]
            .as_str()
            .unwrap_or_default()
            .contains("version 1"));
        let other = api.key("globex", false).await;
        assert_eq!(
            api.patch(&other, "s.example/promo", Some("\"1\""), change.clone())
                .await
                .status,
            StatusCode::NOT_FOUND
        );
        let bad = api
            .patch(
                &token,
                "s.example/promo",
                Some("\"1\""),
                json!({ "status": "deleted" }),
            )
            .await;
        assert_eq!(bad.status, StatusCode::UNPROCESSABLE_ENTITY);
        let bad = api
            .patch(
                &token,
                "s.example/promo",
                Some("\"1\""),
                json!({ "code": "x" }),
            )
            .await;
        assert_eq!(bad.status, StatusCode::UNPROCESSABLE_ENTITY);
        // A change that can never be made is refused as such whichever version it names:
        // sent back as stale (412), it would be read again and retried in vain.
        for invalid in [
            json!({ "split": [{ "target_url": "https://a.example/", "weight": 2_147_483_648u64 }] }),
            json!({ "title": "t".repeat(10_000) }),
            json!({ "status": "deleted" }),
        ] {
            let bad = api
                .patch(&token, "s.example/promo", Some("\"7\""), invalid.clone())
                .await;
            assert_eq!(
                bad.status,
                StatusCode::UNPROCESSABLE_ENTITY,
                "{invalid}: {}",
                bad.text
            );
        }

        let res = api
            .patch(&token, "s.example/promo", Some("\"1\""), change)
            .await;
        assert_eq!(res.status, StatusCode::OK, "{}", res.text);
        assert_eq!(res.body["version"], 2);
        assert_eq!(res.body["title"], "Spring");
        assert_eq!(res.headers[header::ETAG], "\"2\"");
        let visit = api.visit("GET", "s.example", "/promo").await;
        assert_eq!(visit.status, StatusCode::TEMPORARY_REDIRECT);
        assert_eq!(visit.headers[header::LOCATION], "https://new.example/");

        // Clearing a field with null, disabling, and the outbox trail of versions.
        let res = api
            .patch(
                &token,
                "s.example/promo",
                Some("\"2\""),
                json!({ "title": null, "status": "disabled" }),
            )
            .await;
        assert_eq!(res.status, StatusCode::OK, "{}", res.text);
        assert_eq!(res.body["title"], Value::Null);
        assert_eq!(
            api.visit("GET", "s.example", "/promo").await.status,
            StatusCode::NOT_FOUND
        );
        let versions: Vec<(i64,)> = t
            .db
            .read_all(
                "SELECT version FROM outbox WHERE kind = 'link' AND route_key = 's.example/promo' ORDER BY seq",
                &[],
            )
            .await
            .expect("outbox");
        assert_eq!(versions, [(1,), (2,), (3,)]);
        t.cleanup().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn of_concurrent_patches_with_the_same_if_match_exactly_one_wins() {
    for (api, t) in apis("concurrent patch").await {
        let token = api.key("acme", false).await;
        api.create(
            &token,
            json!({ "target_url": "https://e.example/", "code": "race" }),
        )
        .await;
        let api = std::sync::Arc::new(api);
        let tasks: Vec<_> = (0..10)
            .map(|i| {
                let (api, token) = (api.clone(), token.clone());
                tokio::spawn(async move {
                    let body = json!({ "target_url": format!("https://e.example/{i}") });
                    api.patch(&token, "s.example/race", Some("\"1\""), body)
                        .await
                        .status
                })
            })
            .collect();
        let mut statuses = Vec::new();
        for task in tasks {
            statuses.push(task.await.expect("task"));
        }
        let won = statuses.iter().filter(|s| **s == StatusCode::OK).count();
        let lost = statuses
            .iter()
            .filter(|s| **s == StatusCode::PRECONDITION_FAILED)
            .count();
        assert_eq!((won, lost), (1, 9), "{}: {statuses:?}", t.kind());
        let read = api.read(&token, "s.example", "race").await;
        assert_eq!(read.body["version"], 2);
        t.cleanup().await;
    }
}

#[tokio::test]
async fn delete_leaves_a_tombstone_that_answers_410_and_keeps_its_code() {
    for (api, t) in apis("delete").await {
        let token = api.key("acme", false).await;
        let made = api
            .create(&token, json!({ "target_url": "https://e.example/" }))
            .await;
        let code = made.body["code"].as_str().expect("code").to_owned();
        api.create(
            &token,
            json!({ "target_url": "https://e.example/", "code": "old-promo" }),
        )
        .await;

        for path in [
            format!("s.example/{code}"),
            "s.example/old-promo".to_owned(),
        ] {
            let res = api.delete(&token, &path).await;
            assert_eq!(res.status, StatusCode::NO_CONTENT, "{}", res.text);
            // Deleting again changes nothing.
            assert_eq!(
                api.delete(&token, &path).await.status,
                StatusCode::NO_CONTENT
            );
        }
        let read = api.read(&token, "s.example", &code).await;
        assert_eq!(read.status, StatusCode::OK);
        assert_eq!(read.body["status"], "deleted");
        assert_eq!(read.body["version"], 2);
        assert_eq!(
            api.visit("GET", "s.example", &format!("/{code}"))
                .await
                .status,
            StatusCode::GONE
        );
        assert_eq!(
            api.visit("GET", "s.example", "/old-promo").await.status,
            StatusCode::GONE
        );
        let res = api
            .patch(
                &token,
                &format!("s.example/{code}"),
                Some("\"2\""),
                json!({ "title": "x" }),
            )
            .await;
        assert_eq!(res.status, StatusCode::GONE);
        // The alias is never handed out again; generated codes cannot be asked for.
        let reuse = api
            .create(
                &token,
                json!({ "target_url": "https://e.example/", "code": "old-promo" }),
            )
            .await;
        assert_eq!(reuse.status, StatusCode::CONFLICT);
        let reuse = api
            .create(
                &token,
                json!({ "target_url": "https://e.example/", "code": code }),
            )
            .await;
        assert_eq!(reuse.status, StatusCode::UNPROCESSABLE_ENTITY);
        let other = api.key("globex", false).await;
        assert_eq!(
            api.delete(&other, "s.example/old-promo").await.status,
            StatusCode::NOT_FOUND
        );
        t.cleanup().await;
    }
}

impl Api {
    async fn list(&self, token: &str, query: &str) -> Reply {
        self.send(
            Request::get(format!("/v1/links{query}"))
                .header(header::AUTHORIZATION, format!("Bearer {token}"))
                .body(Body::empty())
                .expect("request"),
        )
        .await
    }
}

#[tokio::test]
async fn listing_pages_through_the_owners_links_newest_first_without_gaps_or_repeats() {
    for (api, t) in apis("list").await {
        let token = api.key("acme", false).await;
        let other = api.key("globex", false).await;
        let mut made = Vec::new();
        for i in 0..7 {
            let tags = if i % 2 == 0 {
                json!(["even", "50%_off"])
            } else {
                json!(["odd"])
            };
            let res = api
                .create(
                    &token,
                    json!({ "target_url": format!("https://e.example/{i}"), "tags": tags }),
                )
                .await;
            made.push(res.body["code"].as_str().expect("code").to_owned());
        }
        api.create(&other, json!({ "target_url": "https://e.example/theirs" }))
            .await;
        crate::common::register(&t.db, "t.example").await;
        api.create(
            &token,
            json!({ "target_url": "https://e.example/t", "domain": "t.example" }),
        )
        .await;

        let mut seen = Vec::new();
        let mut query = "?limit=3&domain=s.example".to_owned();
        loop {
            let page = api.list(&token, &query).await;
            assert_eq!(page.status, StatusCode::OK, "{}", page.text);
            let items = page.body["items"].as_array().expect("items").clone();
            assert!(items.len() <= 3);
            seen.extend(
                items
                    .iter()
                    .map(|l| l["code"].as_str().unwrap_or_default().to_owned()),
            );
            match page.body["next_cursor"].as_str() {
                Some(c) => query = format!("?limit=3&domain=s.example&cursor={c}"),
                None => break,
            }
        }
        let newest_first: Vec<String> = made.iter().rev().cloned().collect();
        assert_eq!(seen, newest_first, "{}", t.kind());

        let all = api.list(&token, "").await;
        assert_eq!(
            all.body["items"].as_array().map(Vec::len),
            Some(8),
            "both domains, not globex's"
        );
        let even = api.list(&token, "?tag=even").await;
        assert_eq!(even.body["items"].as_array().map(Vec::len), Some(4));
        let odd = api.list(&token, "?tag=odd").await;
        assert_eq!(odd.body["items"].as_array().map(Vec::len), Some(3));
        // LIKE wildcards in a tag match only themselves.
        let pct = api.list(&token, "?tag=50%25_off").await;
        assert_eq!(pct.body["items"].as_array().map(Vec::len), Some(4));
        let wild = api.list(&token, "?tag=50%25").await;
        assert_eq!(wild.body["items"].as_array().map(Vec::len), Some(0));
        // A tag no link can carry (empty, or longer than a tag may be) is a mistake in the
        // request, said as such rather than answered with an empty page.
        for query in [
            "?tag=".to_owned(),
            format!("?tag={}", "t".repeat(65)),
            "?cursor=".to_owned(),
            "?domain=".to_owned(),
        ] {
            let refused = api.list(&token, &query).await;
            assert_eq!(
                refused.status,
                StatusCode::UNPROCESSABLE_ENTITY,
                "{query}: {}",
                refused.text
            );
        }

        // Tombstones only when asked for.
        api.delete(&token, &format!("s.example/{}", made[0])).await;
        assert_eq!(
            api.list(&token, "").await.body["items"]
                .as_array()
                .map(Vec::len),
            Some(7)
        );
        let gone = api.list(&token, "?status=deleted").await;
        assert_eq!(gone.body["items"][0]["code"], made[0].as_str());

        for bad in [
            "?limit=0",
            "?limit=5000",
            "?cursor=abc",
            "?colour=red",
            "?status=banned",
        ] {
            let res = api.list(&token, bad).await;
            assert_eq!(
                res.status,
                StatusCode::UNPROCESSABLE_ENTITY,
                "{bad}: {}",
                res.text
            );
        }
        t.cleanup().await;
    }
}

/// The codes of a listing's page, in order.
fn codes(page: &Reply) -> Vec<String> {
    page.body["items"]
        .as_array()
        .map(|items| {
            items
                .iter()
                .map(|l| l["code"].as_str().unwrap_or_default().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn listing_finds_links_by_text_condition_access_content_and_creation_time() {
    const EDGE: &str = "listing-edge-token-0123456789";
    for (api, t) in crate::common::apis_with("list-find", &["--edge-token", EDGE]).await {
        let token = api.key("acme", false).await;
        let other = api.key("globex", false).await;
        let ops = api.key("ops", true).await;
        let links = [
            json!({"code": "Spring-Sale", "target_url": "https://shop.example/spring", "title": "Big 50% off"}),
            json!({"code": "autumn", "target_url": "https://SHOP.example/fall?c=spring", "title": "Leaves"}),
            json!({"code": "winter", "target_url": "https://shop.example/w", "title": "SPRING is near",
                   "rules": [{"when": {"device": ["ios"]}, "target_url": "https://cdn.evil.example/app"}]}),
            json!({"code": "a-b", "target_url": "https://shop.example/a", "split": [
                {"target_url": "https://shop.example/a", "weight": 50},
                {"target_url": "https://shop.example/b", "weight": 50}]}),
            json!({"code": "secret", "target_url": "https://shop.example/s", "access": "password", "password": "correct horse"}),
            json!({"code": "signed", "target_url": "https://shop.example/t", "access": "signed"}),
            json!({"code": "once", "target_url": "https://shop.example/o", "max_visits": 1}),
            json!({"code": "old", "target_url": "https://shop.example/old", "expires_at": "2099-01-01T00:00:00Z"}),
            json!({"code": "bad-code", "target_url": "https://shop.example/b"}),
        ];
        for body in links {
            let res = api.create(&token, body).await;
            assert_eq!(res.status, StatusCode::CREATED, "{}", res.text);
        }
        let res = api
            .create(
                &other,
                json!({"code": "spring-theirs", "target_url": "https://shop.example/spring"}),
            )
            .await;
        assert_eq!(res.status, StatusCode::CREATED);

        // Text: in the code, the target or the title, whatever its case; never another
        // owner's; a wildcard is only itself.
        let found = codes(&api.list(&token, "?q=SpRiNg").await);
        assert_eq!(found, ["winter", "autumn", "Spring-Sale"], "{}", t.kind());
        assert_eq!(codes(&api.list(&token, "?q=50%25").await), ["Spring-Sale"]);
        assert_eq!(
            codes(&api.list(&token, "?q=5_%25").await),
            Vec::<String>::new()
        );

        // Access and content.
        assert_eq!(
            codes(&api.list(&token, "?access=password").await),
            ["secret"]
        );
        assert_eq!(codes(&api.list(&token, "?access=signed").await), ["signed"]);
        assert_eq!(
            api.list(&token, "?access=public").await.body["items"]
                .as_array()
                .map(Vec::len),
            Some(7)
        );
        assert_eq!(codes(&api.list(&token, "?has=rules").await), ["winter"]);
        assert_eq!(codes(&api.list(&token, "?has=split").await), ["a-b"]);

        // Conditions: none yet.
        for condition in ["expired", "exhausted", "banned"] {
            let none = api.list(&token, &format!("?condition={condition}")).await;
            assert_eq!(
                codes(&none),
                Vec::<String>::new(),
                "{condition}: {}",
                none.text
            );
        }
        // A code ban, and a host ban that reaches a rule's target through its parent domain.
        for ban in [
            json!({"kind": "code", "code": "bad-code", "reason": "malware"}),
            json!({"kind": "host", "host": "evil.example", "reason": "phishing"}),
        ] {
            assert_eq!(api.ban(&ops, ban).await.status, StatusCode::CREATED);
        }
        assert_eq!(
            codes(&api.list(&token, "?condition=banned").await),
            ["bad-code", "winter"]
        );
        // The visit limit, reached by people's visits counted from the edge.
        let click = json!({"events": [{"event_id": "x-1", "link": "s.example/once", "version": 1,
            "at": origin_api::model::time::now_ms(), "country": "DE", "referrer_host": "news.example",
            "device": "mobile", "bot": false, "status": 302}]});
        let sent = api.post_json(EDGE, "/v1/edge/clicks", &click).await;
        assert_eq!(sent.body["counted"], 1, "{}", sent.text);
        api.fold_clicks().await;
        assert_eq!(
            codes(&api.list(&token, "?condition=exhausted").await),
            ["once"]
        );
        // An expiry that has passed (set in the past here, as time would).
        api.exec("UPDATE links SET expires_at = 1000 WHERE code = 'old'")
            .await;
        assert_eq!(
            codes(&api.list(&token, "?condition=expired").await),
            ["old"]
        );

        // Creation time: [after, before).
        let all = api.list(&token, "").await;
        let items = all.body["items"].as_array().expect("items").clone();
        let at = |code: &str| {
            items
                .iter()
                .find(|l| l["code"] == code)
                .and_then(|l| l["created_at"].as_str())
                .expect("created_at")
                .to_owned()
        };
        api.exec("UPDATE links SET created_at = created_at - 86400000 WHERE code = 'Spring-Sale'")
            .await;
        let (spring, secret) = (at("Spring-Sale"), at("secret"));
        let before = api
            .list(&token, &format!("?created_before={}", urlencoded(&spring)))
            .await;
        assert_eq!(codes(&before), ["Spring-Sale"], "{}", before.text);
        let after = api
            .list(
                &token,
                &format!("?created_after={}&q=s", urlencoded(&secret)),
            )
            .await;
        assert!(
            !codes(&after).contains(&"Spring-Sale".to_owned()),
            "{}",
            after.text
        );
        assert!(codes(&after).contains(&"secret".to_owned()));

        // Filters combine, and page as any listing does.
        let mut seen = Vec::new();
        let mut query = "?limit=1&q=shop.example%2F".to_owned();
        loop {
            let page = api.list(&token, &query).await;
            seen.extend(codes(&page));
            match page.body["next_cursor"].as_str() {
                Some(c) => query = format!("?limit=1&q=shop.example%2F&cursor={c}"),
                None => break,
            }
        }
        assert_eq!(seen.len(), 9, "{seen:?}");

        // Expiring within 7 days: not the one of 2099, not the expired one.
        let soon =
            origin_api::model::time::rfc3339(origin_api::model::time::now_ms() + 3 * 86_400_000);
        let res = api
            .create(&token, json!({"code": "soon", "target_url": "https://shop.example/soon", "expires_at": soon}))
            .await;
        assert_eq!(res.status, StatusCode::CREATED, "{}", res.text);
        assert_eq!(
            codes(&api.list(&token, "?condition=expiring").await),
            ["soon"]
        );

        for bad in [
            "?q=".to_owned(),
            format!("?q={}", "x".repeat(101)),
            "?condition=sad".to_owned(),
            "?access=open".to_owned(),
            "?has=tags".to_owned(),
            "?created_after=yesterday".to_owned(),
            format!("?created_after={0}&created_before={0}", urlencoded(&spring)),
        ] {
            let refused = api.list(&token, &bad).await;
            assert_eq!(
                refused.status,
                StatusCode::UNPROCESSABLE_ENTITY,
                "{bad}: {}",
                refused.text
            );
        }
        t.cleanup().await;
    }
}

fn urlencoded(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

impl Api {
    async fn ban(&self, token: &str, body: Value) -> Reply {
        self.post_json(token, "/v1/bans", &body).await
    }

    async fn lift(&self, token: &str, id: &Value) -> Reply {
        self.call_as(token, "DELETE", &format!("/v1/bans/{id}"))
            .await
    }

    /// Outbox rows of one kind and key: (lane, version, payload), oldest first.
    async fn outbox(&self, kind: &str, route: &str) -> Vec<(String, i64, String)> {
        self.state
            .db()
            .read_all(
                "SELECT lane, version, payload FROM outbox WHERE kind = $1 AND route_key = $2 ORDER BY seq",
                &[kind.into(), route.into()],
            )
            .await
            .expect("outbox")
    }
}

fn payload(row: &(String, i64, String)) -> Value {
    serde_json::from_str(&row.2).expect("JSON payload")
}

#[tokio::test]
async fn a_host_ban_blocks_and_republishes_every_covered_link_and_lifting_restores_them() {
    for (api, t) in apis("host ban").await {
        let token = api.key("acme", false).await;
        let ops = api.key("trust-and-safety", true).await;
        for (code, target) in [
            ("apex-link", "https://evil.example/a"),
            ("sub-link", "https://www.evil.example/b"),
            ("fine-link", "https://notevil.example/c"),
        ] {
            let res = api
                .create(&token, json!({ "target_url": target, "code": code }))
                .await;
            assert_eq!(res.status, StatusCode::CREATED, "{}", res.text);
        }

        // Only admins.
        let res = api
            .ban(
                &token,
                json!({ "kind": "host", "host": "evil.example", "reason": "phishing" }),
            )
            .await;
        assert_eq!(res.status, StatusCode::FORBIDDEN);
        let res = api
            .ban(
                &ops,
                json!({ "kind": "host", "host": "Evil.Example", "reason": "phishing" }),
            )
            .await;
        assert_eq!(res.status, StatusCode::CREATED, "{}", res.text);
        assert_eq!(res.body["host"], "evil.example");
        let ban_id = res.body["id"].clone();

        // Fast lane: the snapshot.
        let deny = api.outbox("deny", "deny").await;
        assert_eq!(deny.len(), 1, "{}", t.kind());
        assert_eq!(deny[0].0, "fast");
        assert_eq!(payload(&deny[0])["hosts"], json!(["evil.example"]));
        // Normal lane: covered links again, version bumped, marked banned.
        for code in ["apex-link", "sub-link"] {
            let rows = api.outbox("link", &format!("s.example/{code}")).await;
            assert_eq!(rows.len(), 2, "{code}");
            assert_eq!((rows[1].0.as_str(), rows[1].1), ("normal", 2));
            assert_eq!(payload(&rows[1])["s"], "banned");
            assert_eq!(
                api.visit("GET", "s.example", &format!("/{code}"))
                    .await
                    .status,
                StatusCode::FORBIDDEN
            );
        }
        assert_eq!(
            api.outbox("link", "s.example/fine-link").await.len(),
            1,
            "untouched"
        );
        assert_eq!(
            api.visit("GET", "s.example", "/fine-link").await.status,
            StatusCode::FOUND
        );
        let refused = api
            .create(&token, json!({ "target_url": "https://x.evil.example/" }))
            .await;
        assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY);

        let list = api
            .send(
                Request::get("/v1/bans")
                    .header(header::AUTHORIZATION, format!("Bearer {ops}"))
                    .body(Body::empty())
                    .expect("request"),
            )
            .await;
        assert_eq!(list.body.as_array().map(Vec::len), Some(1));

        // Lifting: a new snapshot without the host, and the links come back.
        assert_eq!(
            api.lift(&token, &ban_id).await.status,
            StatusCode::FORBIDDEN
        );
        assert_eq!(api.lift(&ops, &ban_id).await.status, StatusCode::NO_CONTENT);
        assert_eq!(
            api.lift(&ops, &ban_id).await.status,
            StatusCode::NO_CONTENT,
            "lifting twice is fine"
        );
        assert_eq!(
            api.lift(&ops, &json!(999_999)).await.status,
            StatusCode::NOT_FOUND
        );
        let deny = api.outbox("deny", "deny").await;
        assert_eq!(deny.len(), 2);
        assert!(deny[1].1 > deny[0].1, "snapshot versions grow");
        assert_eq!(payload(&deny[1])["hosts"], json!([]));
        let rows = api.outbox("link", "s.example/sub-link").await;
        assert_eq!((rows.len(), rows[2].1), (3, 3));
        assert_eq!(payload(&rows[2])["s"], "active");
        assert_eq!(
            api.visit("GET", "s.example", "/sub-link").await.status,
            StatusCode::FOUND
        );
        t.cleanup().await;
    }
}

#[tokio::test]
async fn a_code_ban_blocks_that_code_even_before_it_exists() {
    for (api, t) in apis("code ban").await {
        let token = api.key("acme", false).await;
        let ops = api.key("ops", true).await;
        api.create(
            &token,
            json!({ "target_url": "https://fine.example/", "code": "bad-link" }),
        )
        .await;
        for (code, status) in [
            ("bad-link", StatusCode::CREATED),
            ("not-yet", StatusCode::CREATED),
            ("a/b", StatusCode::UNPROCESSABLE_ENTITY),
        ] {
            let res = api
                .ban(
                    &ops,
                    json!({ "kind": "code", "code": code, "reason": "malware" }),
                )
                .await;
            assert_eq!(res.status, status, "{code}: {}", res.text);
        }
        assert_eq!(
            api.visit("GET", "s.example", "/bad-link").await.status,
            StatusCode::FORBIDDEN
        );
        assert_eq!(
            api.visit("GET", "s.example", "/not-yet").await.status,
            StatusCode::FORBIDDEN
        );
        let rows = api.outbox("link", "s.example/bad-link").await;
        assert_eq!(payload(rows.last().expect("row"))["s"], "banned");
        // A later edit keeps the mark: the record never forgets a ban that still holds.
        let res = api
            .patch(
                &token,
                "s.example/bad-link",
                Some("\"2\""),
                json!({ "title": "x" }),
            )
            .await;
        assert_eq!(res.status, StatusCode::OK, "{}", res.text);
        let rows = api.outbox("link", "s.example/bad-link").await;
        assert_eq!(payload(rows.last().expect("row"))["s"], "banned");
        let deny = api.outbox("deny", "deny").await;
        assert_eq!(
            payload(deny.last().expect("row"))["codes"],
            json!(["s.example/bad-link", "s.example/not-yet"])
        );
        t.cleanup().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_bans_each_get_a_snapshot_version_and_the_last_holds_them_all() {
    for (api, t) in apis("concurrent bans").await {
        let ops = api.key("ops", true).await;
        let api = std::sync::Arc::new(api);
        let tasks: Vec<_> = (0..8)
            .map(|i| {
                let (api, ops) = (api.clone(), ops.clone());
                tokio::spawn(async move {
                    api.ban(&ops, json!({ "kind": "host", "host": format!("evil{i}.example"), "reason": "spam" })).await.status
                })
            })
            .collect();
        for task in tasks {
            assert_eq!(task.await.expect("task"), StatusCode::CREATED);
        }
        let deny = api.outbox("deny", "deny").await;
        let mut versions: Vec<i64> = deny.iter().map(|r| r.1).collect();
        versions.sort_unstable();
        assert_eq!(versions, (1..=8).collect::<Vec<_>>(), "{}", t.kind());
        let newest = deny.iter().max_by_key(|r| r.1).expect("rows");
        assert_eq!(
            payload(newest)["hosts"].as_array().map(Vec::len),
            Some(8),
            "{}",
            t.kind()
        );
        t.cleanup().await;
    }
}

impl Api {
    async fn create_with_key(&self, token: &str, key: &str, body: Value) -> Reply {
        self.post_json_idempotent(token, "/v1/links", key, &body)
            .await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_idempotency_key_sent_twenty_times_at_once_makes_one_link() {
    for (api, t) in apis("idempotency").await {
        let token = api.key("acme", false).await;
        let api = std::sync::Arc::new(api);
        let body = json!({ "target_url": "https://e.example/campaign", "tags": ["q3"] });
        let tasks: Vec<_> = (0..20)
            .map(|_| {
                let (api, token, body) = (api.clone(), token.clone(), body.clone());
                tokio::spawn(async move { api.create_with_key(&token, "import-42", body).await })
            })
            .collect();
        let mut replies = Vec::new();
        for task in tasks {
            replies.push(task.await.expect("task"));
        }
        for r in &replies {
            assert_eq!(r.status, StatusCode::CREATED, "{}: {}", t.kind(), r.text);
            assert_eq!(r.body["code"], replies[0].body["code"], "{}", t.kind());
            assert_eq!(r.headers[header::ETAG], "\"1\"");
        }
        let replayed = replies
            .iter()
            .filter(|r| r.headers.get("idempotent-replayed").is_some())
            .count();
        assert_eq!(replayed, 19, "{}", t.kind());
        assert_eq!(api.count("links").await, 1, "{}", t.kind());
        assert_eq!(api.count("outbox WHERE kind = 'link'").await, 1);

        // Later retries replay too; a different body under the same key is refused.
        let again = api.create_with_key(&token, "import-42", body.clone()).await;
        assert_eq!(again.body["code"], replies[0].body["code"]);
        let other = api
            .create_with_key(
                &token,
                "import-42",
                json!({ "target_url": "https://e.example/other" }),
            )
            .await;
        assert_eq!(
            other.status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{}",
            other.text
        );
        assert_eq!(other.body["field"], "Idempotency-Key");
        // Keys are per owner.
        let globex = api.key("globex", false).await;
        let theirs = api
            .create_with_key(&globex, "import-42", body.clone())
            .await;
        assert_eq!(theirs.status, StatusCode::CREATED);
        assert_ne!(theirs.body["code"], replies[0].body["code"]);
        assert_eq!(api.count("links").await, 2);

        // After 24 hours a key is forgotten.
        api.exec("UPDATE idempotency SET created_at = 0").await;
        let fresh = api.create_with_key(&token, "import-42", body).await;
        assert_eq!(fresh.status, StatusCode::CREATED);
        assert!(fresh.headers.get("idempotent-replayed").is_none());
        assert_eq!(api.count("links").await, 3);

        for bad in ["", "é", &"k".repeat(256)] {
            let res = api
                .create_with_key(&token, bad, json!({ "target_url": "https://e.example/" }))
                .await;
            assert_eq!(res.status, StatusCode::BAD_REQUEST, "{bad:?}: {}", res.text);
        }
        t.cleanup().await;
    }
}

impl Api {
    async fn bulk(&self, token: &str, key: Option<&str>, body: Value) -> Reply {
        let mut req = Request::post("/v1/links/bulk")
            .header(header::AUTHORIZATION, format!("Bearer {token}"))
            .header(header::CONTENT_TYPE, "application/json");
        if let Some(k) = key {
            req = req.header("idempotency-key", k);
        }
        self.send(req.body(Body::from(body.to_string())).expect("request"))
            .await
    }
}

#[tokio::test]
async fn bulk_create_judges_each_item_and_answers_in_order() {
    for (api, t) in apis("bulk").await {
        let token = api.key("acme", false).await;
        // An item that is no create body breaks the published contract: the whole
        // batch is refused, naming it, and nothing is created.
        for bad in [
            json!({ "target_url": "https://e.example/5", "colour": "red" }),
            json!({ "target_url": 5 }),
            // Past the description's `maxLength` and `minimum`: no create body either.
            json!({ "target_url": "https://e.example/5", "title": "x".repeat(201) }),
            json!({ "target_url": "https://e.example/5", "max_visits": 0 }),
            // serde would read a struct from an array: the description says object.
            json!({ "target_url": "https://e.example/5", "preview": [null, null] }),
            json!(["https://e.example/5"]),
        ] {
            let res = api
                .bulk(
                    &token,
                    Some("batch-0"),
                    json!({ "links": [{ "target_url": "https://e.example/1" }, bad] }),
                )
                .await;
            assert_eq!(res.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", res.text);
            assert_eq!(res.body["field"], "links");
            assert!(
                res.body["detail"]
                    .as_str()
                    .is_some_and(|d| d.contains("item 1")),
                "{}",
                res.text
            );
            assert_eq!(api.count("links").await, 0, "{}", t.kind());
        }
        let body = json!({ "links": [
            { "target_url": "https://e.example/1" },
            { "target_url": "https://e.example/2", "code": "bulk-alias" },
            { "target_url": "ftp://e.example/3" },
            { "target_url": "https://e.example/4", "code": "bulk-alias" },
            { "target_url": "https://e.example/6", "tags": ["x"] },
        ]});
        let res = api.bulk(&token, Some("batch-1"), body.clone()).await;
        assert_eq!(res.status, StatusCode::OK, "{}: {}", t.kind(), res.text);
        let results = res.body["results"].as_array().expect("results").clone();
        let oks: Vec<bool> = results
            .iter()
            .map(|r| r["ok"].as_bool().unwrap_or_default())
            .collect();
        assert_eq!(oks, [true, true, false, false, true], "{}", res.text);
        assert_eq!(results[1]["link"]["code"], "bulk-alias");
        assert_eq!(results[2]["error"]["status"], 422);
        assert_eq!(results[2]["error"]["field"], "target_url");
        assert_eq!(results[3]["error"]["status"], 409);
        assert!(
            results[3]["error"]["detail"]
                .as_str()
                .is_some_and(|d| d.contains("s.example/bulk-alias is taken")),
            "{}",
            res.text
        );
        assert_eq!(results[4]["link"]["target_url"], "https://e.example/6");
        assert_eq!(api.count("links").await, 3);
        assert_eq!(api.count("outbox WHERE kind = 'link'").await, 3);

        // The key covers the batch.
        let again = api.bulk(&token, Some("batch-1"), body).await;
        assert_eq!(again.status, StatusCode::OK);
        assert_eq!(again.headers["idempotent-replayed"], "true");
        assert_eq!(again.body, res.body);
        assert_eq!(api.count("links").await, 3);
        let other = api
            .bulk(
                &token,
                Some("batch-1"),
                json!({ "links": [{ "target_url": "https://e.example/" }] }),
            )
            .await;
        assert_eq!(other.status, StatusCode::UNPROCESSABLE_ENTITY);

        let empty = api.bulk(&token, None, json!({ "links": [] })).await;
        assert_eq!(empty.status, StatusCode::UNPROCESSABLE_ENTITY);
        let too_many: Vec<Value> = (0..=origin_api::views::links::MAX_BULK)
            .map(|_| json!({ "target_url": "https://e.example/" }))
            .collect();
        let res = api.bulk(&token, None, json!({ "links": too_many })).await;
        assert_eq!(res.status, StatusCode::UNPROCESSABLE_ENTITY);
        assert_eq!(api.count("links").await, 3);
        t.cleanup().await;
    }
}

/// The seed incident: a 100,000-link import from many concurrent clients, through bulk
/// and single creates, some retried under their idempotency keys. Every link must get
/// its own code and keep its own target. `HOP_INCIDENT_LINKS` scales it down for quick
/// local runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_incident_100000_concurrent_creates_give_100000_distinct_codes_each_resolving_to_its_own_target(
) {
    let total: usize = std::env::var("HOP_INCIDENT_LINKS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    const CLIENTS: usize = 32;
    const BATCH: usize = 1_000;
    // The limit is not under test here: an importer this fast would be slowed by it.
    for (api, t) in apis_with(
        "incident",
        &["--create-rate", "1000000", "--owner-create-rate", "1000000"],
    )
    .await
    {
        let started = std::time::Instant::now();
        let token = api.key("importer", false).await;
        let api = std::sync::Arc::new(api);
        // Four fifths in bulk batches, the rest one by one.
        let bulk_total = total / 5 * 4 / BATCH * BATCH;
        let single_total = total - bulk_total;
        let tasks: Vec<_> = (0..CLIENTS)
            .map(|client| {
                let (api, token) = (api.clone(), token.clone());
                tokio::spawn(async move {
                    let mut made: Vec<(String, String)> = Vec::new();
                    // Bulk batches dealt round-robin to clients; every third is sent twice.
                    for batch in (client..bulk_total / BATCH).step_by(CLIENTS) {
                        let targets: Vec<String> = (0..BATCH).map(|i| format!("https://dest.example/b{batch}/{i}")).collect();
                        let body = json!({ "links": targets.iter().map(|t| json!({ "target_url": t })).collect::<Vec<_>>() });
                        let key = format!("batch-{batch}");
                        let tries = if batch % 3 == 0 { 2 } else { 1 };
                        let mut first: Option<Value> = None;
                        for _ in 0..tries {
                            let res = api.bulk(&token, Some(&key), body.clone()).await;
                            assert_eq!(res.status, StatusCode::OK, "{}", res.text);
                            match &first {
                                None => first = Some(res.body),
                                Some(f) => assert_eq!(&res.body, f, "a retried batch answers the same"),
                            }
                        }
                        let results = first.expect("a reply");
                        for (r, target) in results["results"].as_array().expect("results").iter().zip(targets) {
                            assert_eq!(r["ok"], true, "{r}");
                            made.push((r["link"]["code"].as_str().unwrap_or_default().to_owned(), target));
                        }
                    }
                    // Single creates; every tenth is retried with its key.
                    for i in (client..single_total).step_by(CLIENTS) {
                        let target = format!("https://dest.example/s/{i}");
                        let body = json!({ "target_url": target });
                        let res = if i % 10 == 0 {
                            let key = format!("single-{i}");
                            let a = api.create_with_key(&token, &key, body.clone()).await;
                            let b = api.create_with_key(&token, &key, body).await;
                            assert_eq!(a.body["code"], b.body["code"]);
                            a
                        } else {
                            api.create(&token, body).await
                        };
                        assert_eq!(res.status, StatusCode::CREATED, "{}", res.text);
                        made.push((res.body["code"].as_str().unwrap_or_default().to_owned(), target));
                    }
                    made
                })
            })
            .collect();
        let mut expected = std::collections::HashMap::new();
        for task in tasks {
            for (code, target) in task.await.expect("client") {
                assert!(
                    expected.insert(code.clone(), target).is_none(),
                    "{}: code {code} handed out twice",
                    t.kind()
                );
            }
        }
        assert_eq!(expected.len(), total, "{}", t.kind());

        // The database holds exactly those links, each with its own target.
        let rows: Vec<(String, String)> =
            t.db.read_all("SELECT code, target_url FROM links", &[])
                .await
                .expect("links");
        assert_eq!(
            rows.len(),
            total,
            "{}: no extra links from retries",
            t.kind()
        );
        for (code, target) in &rows {
            assert_eq!(
                expected.get(code),
                Some(target),
                "{}: {code} was overwritten",
                t.kind()
            );
        }
        // And visitors land where each link says.
        for (code, target) in expected.iter().step_by((total / 500).max(1)) {
            let r = api.visit("GET", "s.example", &format!("/{code}")).await;
            assert_eq!(r.headers[header::LOCATION], target.as_str());
        }
        eprintln!(
            "incident on {}: {total} links in {:?}",
            t.kind(),
            started.elapsed()
        );
        t.cleanup().await;
    }
}

#[tokio::test]
async fn a_link_visited_before_it_existed_redirects_the_moment_it_is_created() {
    for (api, t) in apis("negative cache").await {
        let token = api.key("acme", false).await;
        assert_eq!(
            api.visit("GET", "s.example", "/launch-day").await.status,
            StatusCode::NOT_FOUND
        );
        let res = api
            .create(
                &token,
                json!({ "target_url": "https://e.example/launch", "code": "launch-day" }),
            )
            .await;
        assert_eq!(res.status, StatusCode::CREATED);
        let visit = api.visit("GET", "s.example", "/launch-day").await;
        assert_eq!(visit.status, StatusCode::FOUND, "{}", t.kind());
        // And an edit shows at once too.
        api.patch(
            &token,
            "s.example/launch-day",
            Some("\"1\""),
            json!({ "target_url": "https://e.example/v2" }),
        )
        .await;
        let visit = api.visit("GET", "s.example", "/launch-day").await;
        assert_eq!(visit.headers[header::LOCATION], "https://e.example/v2");
        t.cleanup().await;
    }
}

#[tokio::test]
async fn creating_too_fast_gets_429_with_retry_after_per_key() {
    let t = TestDb::sqlite().await;
    let api = Api {
        state: crate::common::app_state_with(&t, &["--create-rate", "1"]),
    };
    let token = api.key("acme", false).await;
    for i in 0..2 {
        let res = api
            .create(
                &token,
                json!({ "target_url": format!("https://e.example/{i}") }),
            )
            .await;
        assert_eq!(
            res.status,
            StatusCode::CREATED,
            "burst of twice the rate: {}",
            res.text
        );
    }
    let res = api
        .create(&token, json!({ "target_url": "https://e.example/x" }))
        .await;
    assert_eq!(res.status, StatusCode::TOO_MANY_REQUESTS, "{}", res.text);
    assert_eq!(res.headers[header::RETRY_AFTER], "1");
    assert_eq!(
        res.headers[header::CONTENT_TYPE],
        "application/problem+json"
    );
    let res = api
        .bulk(
            &token,
            None,
            json!({ "links": [{ "target_url": "https://e.example/y" }] }),
        )
        .await;
    assert_eq!(res.status, StatusCode::TOO_MANY_REQUESTS);
    // Another key has its own budget; reads are not limited.
    let other = api.key("globex", false).await;
    assert_eq!(
        api.create(&other, json!({ "target_url": "https://e.example/z" }))
            .await
            .status,
        StatusCode::CREATED
    );
    assert_eq!(api.list(&token, "").await.status, StatusCode::OK);
    assert_eq!(api.count("links").await, 3);
    t.cleanup().await;
}

#[tokio::test]
async fn metrics_count_creations_redirects_segments_and_the_outbox_backlog() {
    let t = TestDb::sqlite().await;
    let api = crate::common::Api::of(&t);
    let token = api.key("acme", false).await;
    let made = api
        .create(&token, json!({ "target_url": "https://e.example/1" }))
        .await;
    let code = made.body["code"].as_str().expect("code").to_owned();
    let bulk = json!({ "links": [{ "target_url": "https://e.example/2" }, { "target_url": "ftp://bad" }] });
    assert_eq!(api.bulk(&token, None, bulk).await.status, StatusCode::OK);
    api.visit("GET", "s.example", &format!("/{code}")).await;
    api.visit("GET", "s.example", "/nope-nope").await;
    api.visit("GET", "s.example", "/robots.txt").await;

    let res = metrics(&api).await;
    assert_eq!(res.status, StatusCode::OK);
    assert!(res.headers[header::CONTENT_TYPE]
        .to_str()
        .unwrap_or_default()
        .starts_with("application/openmetrics-text"));
    for line in [
        "hop_links_created_total 2",
        "hop_redirects_total{outcome=\"redirect\"} 1",
        "hop_redirects_total{outcome=\"not_found\"} 2",
        // One of link ids, one of s.example's code numbers.
        "hop_id_segments_fetched_total 2",
        "hop_redirect_lookups_total 1",
        "hop_ids_wasted_total 0",
        "hop_outbox_pending{lane=\"normal\"} 2",
        // The code segment (link ids write none), and the default domain's settings
        // (registered at startup).
        "hop_outbox_pending{lane=\"fast\"} 2",
    ] {
        assert!(
            res.text.lines().any(|l| l == line),
            "missing {line:?} in:\n{}",
            res.text
        );
    }
    t.cleanup().await;
}

#[tokio::test]
async fn a_scrape_counts_an_outbox_backlog_only_up_to_its_cap() {
    // A backlog of a million rows (an edge down for a while, an origin that does not
    // publish) made every scrape a scan and sort of all of them: seconds of CPU each.
    // The gauges count up to 10,000; past that they say "at least 10,000".
    for t in TestDb::all("outbox-gauge").await {
        let api = crate::common::Api::of(&t);
        api.exec(
            "INSERT INTO outbox (lane, kind, route_key, version, payload, created_at) \
             WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < 10005) \
             SELECT 'normal', 'link', 'k' || x, 1, '{}', 0 FROM n",
        )
        .await;
        api.exec(
            "INSERT INTO outbox (lane, kind, route_key, version, payload, created_at, failed_at) \
             VALUES ('fast', 'link', 'f1', 1, '{}', 0, NULL), ('fast', 'link', 'f2', 1, '{}', 0, 5)",
        )
        .await;
        let res = metrics(&api).await;
        for line in [
            "hop_outbox_pending{lane=\"normal\"} 10000",
            // f1, and the default domain's settings.
            "hop_outbox_pending{lane=\"fast\"} 2",
            "hop_outbox_failed 1",
        ] {
            assert!(
                res.text.lines().any(|l| l == line),
                "{}: missing {line:?} in:\n{}",
                t.kind(),
                res.text
            );
        }
        t.cleanup().await;
    }
}

async fn metrics(api: &Api) -> Reply {
    api.send(
        Request::get("/metrics")
            .header(
                header::AUTHORIZATION,
                format!("Bearer {}", crate::common::METRICS_TOKEN),
            )
            .body(Body::empty())
            .expect("request"),
    )
    .await
}

/// One line of `/metrics`'s value, e.g. `hop_redirect_lookups_total`.
async fn metric(api: &Api, name: &str) -> u64 {
    let res = metrics(api).await;
    res.text
        .lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or_else(|| panic!("no {name} in:\n{}", res.text))
}

#[tokio::test]
async fn random_generated_codes_are_answered_404_without_reading_the_links_table() {
    for (api, t) in apis("ceiling").await {
        let token = api.key("acme", false).await;
        // Another origin over the same database creates a link; this one has reserved
        // no ids itself.
        let other = crate::common::Api::of(&t);
        let made = other
            .create(&token, json!({ "target_url": "https://e.example/other" }))
            .await;
        assert_eq!(made.status, StatusCode::CREATED);
        let code = made.body["code"].as_str().expect("code").to_owned();

        // A thousand codes of the generated shape (7 base62 digits) nobody was given.
        let alphabet = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        for _ in 0..1000 {
            let random: String = (0..7)
                .map(|_| {
                    x = x
                        .wrapping_mul(6_364_136_223_846_793_005)
                        .wrapping_add(1_442_695_040_888_963_407);
                    char::from(alphabet[(x >> 33) as usize % alphabet.len()])
                })
                .collect();
            if random == code {
                continue;
            }
            let r = api.visit("GET", "s.example", &format!("/{random}")).await;
            assert_eq!(r.status, StatusCode::NOT_FOUND, "{random}");
        }
        assert_eq!(
            metric(&api, "hop_redirect_lookups_total").await,
            0,
            "{}: no random code was looked up",
            t.kind()
        );
        // The other origin's link lies below the ceiling read here: it is found.
        let r = api.visit("GET", "s.example", &format!("/{code}")).await;
        assert_eq!(r.status, StatusCode::FOUND, "{}", t.kind());
        assert_eq!(metric(&api, "hop_redirect_lookups_total").await, 1);
        // An alias-shaped unknown code cannot be dated: it is looked up, then remembered.
        for _ in 0..3 {
            let r = api.visit("GET", "s.example", "/no-such-alias").await;
            assert_eq!(r.status, StatusCode::NOT_FOUND);
        }
        assert_eq!(metric(&api, "hop_redirect_lookups_total").await, 2);
        t.cleanup().await;
    }
}

#[tokio::test]
async fn the_edge_resolves_a_link_with_its_token_only_and_sees_bans_on_the_record() {
    for (api, t) in apis_with("edge-resolve", &["--edge-token", "edge-secret-token"]).await {
        let token = api.key("acme", false).await;
        let admin = api.key("ops", true).await;
        let made = api
            .create(
                &token,
                json!({ "target_url": "https://dest.example/r", "code": "fresh-link" }),
            )
            .await;
        assert_eq!(made.status, StatusCode::CREATED);
        let resolve = |auth: Option<&'static str>, code: &str| {
            let mut req = Request::get(format!("/v1/edge/resolve/s.example/{code}"));
            if let Some(auth) = auth {
                req = req.header(header::AUTHORIZATION, format!("Bearer {auth}"));
            }
            req.body(Body::empty()).expect("request")
        };
        for auth in [
            None,
            Some("edge-secret-tokeN"),
            Some("hop_not_an_edge_token"),
        ] {
            let r = api.send(resolve(auth, "fresh-link")).await;
            assert_eq!(r.status, StatusCode::UNAUTHORIZED, "{auth:?}");
        }
        let r = api
            .send(resolve(Some("edge-secret-token"), "fresh-link"))
            .await;
        assert_eq!(r.status, StatusCode::OK, "{}", t.kind());
        assert_eq!(r.headers[header::CACHE_CONTROL], "no-store");
        assert_eq!(
            (
                r.body["t"].clone(),
                r.body["s"].clone(),
                r.body["v"].clone()
            ),
            (json!("https://dest.example/r"), json!("active"), json!(1))
        );
        let r = api
            .send(resolve(Some("edge-secret-token"), "never-made"))
            .await;
        assert_eq!(r.status, StatusCode::NOT_FOUND);

        // A host ban shows on the record at once, before anything is published.
        let ban = api
            .ban(
                &admin,
                json!({ "kind": "host", "host": "dest.example", "reason": "phishing" }),
            )
            .await;
        assert_eq!(ban.status, StatusCode::CREATED);
        let r = api
            .send(resolve(Some("edge-secret-token"), "fresh-link"))
            .await;
        assert_eq!(r.body["s"], json!("banned"), "{}", t.kind());
        assert_eq!(metric(&api, "hop_edge_resolves_total").await, 3);
        t.cleanup().await;
    }
}

#[tokio::test]
async fn without_an_edge_token_the_resolve_endpoint_says_it_is_not_configured() {
    let t = TestDb::sqlite().await;
    let api = crate::common::Api::of(&t);
    let r = api
        .send(
            Request::get("/v1/edge/resolve/s.example/abc")
                .header(header::AUTHORIZATION, "Bearer anything")
                .body(Body::empty())
                .expect("request"),
        )
        .await;
    assert_eq!(r.status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(r.body["detail"]
        .as_str()
        .unwrap_or_default()
        .contains("HOP_EDGE_TOKEN"));
    t.cleanup().await;
}

/// Every answer that shows a link names its full short URL: `https://` by default, the
/// operator's base for a domain served otherwise (`wrangler dev`'s `localhost:8787`), in
/// a create, a read, an update, the list, a bulk create and an idempotent replay, also
/// of an answer stored before the field existed.
#[tokio::test]
async fn every_link_answer_names_its_full_short_url() {
    for (api, t) in apis_with(
        "short-url",
        &["--short-url-bases", "localhost=http://localhost:8787"],
    )
    .await
    {
        register(api.state.db(), "localhost").await;
        let token = api.key("acme", false).await;
        let created = api
            .create(&token, json!({ "target_url": "https://dest.example/a" }))
            .await;
        assert_eq!(created.status, StatusCode::CREATED, "{}", created.text);
        let code = created.body["code"].as_str().unwrap().to_owned();
        let https = format!("https://s.example/{code}");
        assert_eq!(created.body["short_url"], https.as_str(), "{}", t.kind());
        assert_eq!(
            api.read(&token, "s.example", &code).await.body["short_url"],
            https.as_str()
        );
        let patched = api
            .patch_json(
                &token,
                &format!("/v1/links/s.example/{code}"),
                Some("\"1\""),
                json!({ "title": "A" }),
            )
            .await;
        assert_eq!(
            patched.body["short_url"],
            https.as_str(),
            "{}",
            patched.text
        );

        let local = api
            .create(
                &token,
                json!({ "target_url": "https://dest.example/b", "domain": "localhost", "code": "spring" }),
            )
            .await;
        assert_eq!(
            local.body["short_url"], "http://localhost:8787/spring",
            "{}",
            local.text
        );
        let list = api.call_as(&token, "GET", "/v1/links").await;
        let listed: Vec<&str> = list.body["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l["short_url"].as_str().unwrap())
            .collect();
        assert_eq!(listed, ["http://localhost:8787/spring", https.as_str()]);
        let bulk = api
            .post_json(
                &token,
                "/v1/links/bulk",
                &json!({ "links": [{ "target_url": "https://dest.example/c", "code": "bulk-c" }] }),
            )
            .await;
        assert_eq!(
            bulk.body["results"][0]["link"]["short_url"], "https://s.example/bulk-c",
            "{}",
            bulk.text
        );

        // A replay answers as the create did; one stored before `short_url` existed gets
        // it filled in.
        let body = json!({ "target_url": "https://dest.example/d" });
        let first = api
            .post_json_idempotent(&token, "/v1/links", "k-1", &body)
            .await;
        let again = api
            .post_json_idempotent(&token, "/v1/links", "k-1", &body)
            .await;
        assert_eq!(again.headers["idempotent-replayed"], "true");
        assert_eq!(again.body, first.body);
        let stored: Vec<(String,)> = api
            .rows("SELECT response FROM idempotency WHERE key = 'k-1'")
            .await;
        let mut old: Value = serde_json::from_str(&stored[0].0).unwrap();
        old.as_object_mut().unwrap().remove("short_url");
        api.exec(&format!(
            "UPDATE idempotency SET response = '{}' WHERE key = 'k-1'",
            old.to_string().replace('\'', "''")
        ))
        .await;
        let replayed = api
            .post_json_idempotent(&token, "/v1/links", "k-1", &body)
            .await;
        assert_eq!(replayed.body, first.body, "{}", t.kind());
        t.cleanup().await;
    }
}

/// A deleted link comes back within the restore window, as a new version, and answers
/// again; a live link, another owner's, a stale version, a target banned since and a
/// deletion older than the window are each refused, saying why.
#[tokio::test]
async fn a_deleted_link_is_restored_by_its_owner_within_the_window() {
    for (api, t) in crate::common::apis("links-restore").await {
        let owner = api.key("acme", false).await;
        let other = api.key("other", false).await;
        let admin = api.key("ops", true).await;
        let made = api
            .create(
                &owner,
                json!({"target_url": "https://shop.example/spring", "code": "spring-sale"}),
            )
            .await;
        assert_eq!(made.status, StatusCode::CREATED, "{}", made.text);
        let path = "/v1/links/s.example/spring-sale/restore";
        let live = api.call_as(&owner, "POST", path).await;
        assert_eq!(live.status, StatusCode::CONFLICT, "{}", live.text);
        assert_eq!(live.body["type"], "/problems/not-deleted", "{}", live.text);

        let gone = api
            .call_as(&owner, "DELETE", "/v1/links/s.example/spring-sale")
            .await;
        assert_eq!(gone.status, StatusCode::NO_CONTENT, "{}", gone.text);
        assert_eq!(
            api.visit("GET", "s.example", "/spring-sale").await.status,
            StatusCode::GONE
        );
        let theirs = api.call_as(&other, "POST", path).await;
        assert_eq!(theirs.status, StatusCode::NOT_FOUND, "{}", theirs.text);

        let back = api.call_as(&owner, "POST", path).await;
        assert_eq!(back.status, StatusCode::OK, "{}", back.text);
        assert_eq!(back.body["status"], "active", "{}", back.text);
        assert_eq!(back.body["version"], 3, "{}", back.text);
        assert_eq!(back.headers[header::ETAG], "\"3\"");
        let visit = api.visit("GET", "s.example", "/spring-sale").await;
        assert_eq!(visit.status, StatusCode::FOUND, "{}", t.kind());
        assert_eq!(
            visit.headers[header::LOCATION],
            "https://shop.example/spring"
        );

        // A host banned while the link was deleted keeps it deleted.
        let gone = api
            .call_as(&owner, "DELETE", "/v1/links/s.example/spring-sale")
            .await;
        assert_eq!(gone.status, StatusCode::NO_CONTENT, "{}", gone.text);
        let ban = api
            .post_json(
                &admin,
                "/v1/bans",
                &json!({"kind": "host", "host": "shop.example", "reason": "phishing"}),
            )
            .await;
        assert_eq!(ban.status, StatusCode::CREATED, "{}", ban.text);
        let banned = api.call_as(&owner, "POST", path).await;
        assert_eq!(
            banned.status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{}",
            banned.text
        );
        let lift = api
            .call_as(&admin, "DELETE", &format!("/v1/bans/{}", ban.body["id"]))
            .await;
        assert_eq!(lift.status, StatusCode::NO_CONTENT, "{}", lift.text);

        // A stale If-Match is refused; past the window (30 days) the deletion is final.
        let stale = api
            .send(
                Request::post(path)
                    .header(header::AUTHORIZATION, format!("Bearer {owner}"))
                    .header(header::IF_MATCH, "\"3\"")
                    .body(Body::empty())
                    .expect("request"),
            )
            .await;
        assert_eq!(
            stale.status,
            StatusCode::PRECONDITION_FAILED,
            "{}",
            stale.text
        );
        let month = 31 * 24 * 3_600_000_i64;
        api.exec(&format!(
            "UPDATE links SET updated_at = updated_at - {month} WHERE code = 'spring-sale'"
        ))
        .await;
        let late = api.call_as(&owner, "POST", path).await;
        assert_eq!(late.status, StatusCode::GONE, "{}", late.text);
        assert_eq!(
            late.body["type"], "/problems/deletion-final",
            "{}",
            late.text
        );
        assert_eq!(
            api.visit("GET", "s.example", "/spring-sale").await.status,
            StatusCode::GONE
        );
        t.cleanup().await;
    }
}

/// A bulk create learns which targets are Hop's own domains in one read for the batch:
/// every such target is still refused, a registered domain's and its subdomains' alike,
/// and the others are created.
#[tokio::test]
async fn a_bulk_create_refuses_every_target_on_hops_own_domains() {
    for (api, t) in apis("links-bulk-own").await {
        let admin = api.key("ops", true).await;
        let owner = api.key("acme", false).await;
        let made = api
            .post_json(
                &admin,
                "/v1/domains",
                &json!({"domain": "go.acme.example", "owners": ["acme"]}),
            )
            .await;
        assert_eq!(made.status, StatusCode::CREATED, "{}", made.text);
        let r = api
            .post_json(
                &owner,
                "/v1/links/bulk",
                &json!({"links": [
                    {"target_url": "https://go.acme.example/x"},
                    {"target_url": "https://shop.example/ok"},
                    {"target_url": "https://a.go.acme.example/y"},
                    {"target_url": "https://GO.acme.example./z"},
                    {"target_url": "https://shop.example/ok-too"},
                ]}),
            )
            .await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.text);
        let ok: Vec<bool> = r.body["results"]
            .as_array()
            .expect("results")
            .iter()
            .map(|x| x["ok"] == true)
            .collect();
        assert_eq!(
            ok,
            [false, true, false, false, true],
            "{}: {}",
            t.kind(),
            r.text
        );
        assert!(r.text.contains("own domains"), "{}", r.text);
        t.cleanup().await;
    }
}

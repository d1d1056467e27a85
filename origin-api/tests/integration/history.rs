//! A link's history on every database available: each change on record with its
//! version, who made it and what changed, in the transaction of the change, never a
//! secret; paged; and a revert to an earlier version, judged by today's rules.

use crate::common::{apis, apis_with, Api, Reply};
use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use hop_e2e::poll;
use serde_json::{json, Value};
use std::time::Duration;

const LINK: &str = "/v1/links/s.example/spring-sale";

/// The key id a token names, as the history records it.
fn actor(token: &str) -> String {
    let (id, _) = origin_api::api_keys::parse_token(token).expect("a token");
    format!("key:{id}")
}

/// Every entry of the link's history, newest first, a page of `limit` at a time.
async fn history(api: &Api, token: &str, path: &str, limit: usize) -> Vec<Value> {
    let mut all = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut url = format!("{path}/history?limit={limit}");
        if let Some(c) = &cursor {
            url.push_str(&format!("&cursor={c}"));
        }
        let page = api.call_as(token, "GET", &url).await;
        assert_eq!(page.status, StatusCode::OK, "{}", page.text);
        let items = page.body["items"].as_array().cloned().unwrap_or_default();
        assert!(items.len() <= limit, "{}", page.text);
        all.extend(items);
        match page.body["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => return all,
        }
    }
}

/// `(version, action, actor)` of each entry, oldest first.
fn summary(entries: &[Value]) -> Vec<(u64, String, String)> {
    entries
        .iter()
        .rev()
        .map(|e| {
            (
                e["version"].as_u64().unwrap_or(0),
                e["action"].as_str().unwrap_or("").to_owned(),
                e["actor"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect()
}

fn entry(entries: &[Value], version: u64, action: &str) -> Value {
    entries
        .iter()
        .find(|e| e["version"] == version && e["action"] == action)
        .cloned()
        .unwrap_or_else(|| panic!("no {action} at v{version} in {entries:?}"))
}

async fn revert_at(
    api: &Api,
    token: &str,
    path: &str,
    version: u64,
    if_match: Option<&str>,
) -> Reply {
    let mut req = Request::post(format!("{path}/revert"))
        .header(header::AUTHORIZATION, format!("Bearer {token}"))
        .header(header::CONTENT_TYPE, "application/json");
    if let Some(v) = if_match {
        req = req.header(header::IF_MATCH, v);
    }
    api.send(
        req.body(Body::from(json!({ "version": version }).to_string()))
            .expect("request"),
    )
    .await
}

async fn revert(api: &Api, token: &str, version: u64, if_match: Option<&str>) -> Reply {
    revert_at(api, token, LINK, version, if_match).await
}

/// Create, edit, a new password twice, ban, lift, delete, restore, use up, import and
/// expire: each is recorded once, at its version, with who made it and the fields that
/// changed; a password or its hash never appears; pages meet without a gap; another
/// owner sees nothing.
#[tokio::test]
async fn every_change_of_a_link_is_on_record_with_who_made_it_and_what_changed() {
    for (api, t) in apis("history-record").await {
        let owner = api.key("acme", false).await;
        let second = api.key("acme", false).await;
        let admin = api.key("ops", true).await;
        let other = api.key("other", false).await;
        let made = api
            .create(
                &owner,
                json!({"target_url": "https://shop.example/spring", "code": "spring-sale",
                       "title": "Spring", "tags": ["sale"]}),
            )
            .await;
        assert_eq!(made.status, StatusCode::CREATED, "{}", made.text);
        let edit = |token: &str, v: &str, body: Value| {
            let (token, v) = (token.to_owned(), v.to_owned());
            let api = &api;
            async move { api.patch_json(&token, LINK, Some(&v), body).await }
        };
        let r = edit(
            &second,
            "\"1\"",
            json!({"target_url": "https://shop.example/summer", "title": "Summer"}),
        )
        .await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.text);
        let r = edit(
            &owner,
            "\"2\"",
            json!({"access": "password", "password": "first-Secret-1"}),
        )
        .await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.text);
        let r = edit(&owner, "\"3\"", json!({"password": "second-Secret-2"})).await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.text);
        // A refused change records nothing.
        let r = edit(
            &owner,
            "\"4\"",
            json!({"target_url": "ftp://shop.example/"}),
        )
        .await;
        assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.text);
        let r = edit(&owner, "\"1\"", json!({"title": "late"})).await;
        assert_eq!(r.status, StatusCode::PRECONDITION_FAILED, "{}", r.text);

        let ban = api
            .post_json(
                &admin,
                "/v1/bans",
                &json!({"kind": "host", "host": "shop.example", "reason": "phishing kit"}),
            )
            .await;
        assert_eq!(ban.status, StatusCode::CREATED, "{}", ban.text);
        let ban_id = ban.body["id"].as_i64().expect("ban id");
        let lift = api
            .call_as(&admin, "DELETE", &format!("/v1/bans/{ban_id}"))
            .await;
        assert_eq!(lift.status, StatusCode::NO_CONTENT, "{}", lift.text);
        let r = api.call_as(&owner, "DELETE", LINK).await;
        assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.text);
        let r = api
            .call_as(&owner, "POST", &format!("{LINK}/restore"))
            .await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.text);
        // Public again, at most one visit, then used up by a visit.
        let r = edit(
            &owner,
            "\"8\"",
            json!({"access": "public", "max_visits": 1}),
        )
        .await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.text);
        let visit = api.visit_as_person("/spring-sale").await;
        assert_eq!(visit.status, StatusCode::FOUND, "{}", visit.text);
        api.flush_clicks().await;

        let me = actor(&owner);
        let entries = history(&api, &owner, LINK, 3).await;
        assert_eq!(
            summary(&entries),
            vec![
                (1, "created".into(), me.clone()),
                (2, "edited".into(), actor(&second)),
                (3, "edited".into(), me.clone()),
                (4, "edited".into(), me.clone()),
                (5, "banned".into(), actor(&admin)),
                (6, "unbanned".into(), actor(&admin)),
                (7, "deleted".into(), me.clone()),
                (8, "restored".into(), me.clone()),
                (9, "edited".into(), me.clone()),
                (10, "exhausted".into(), "system".into()),
            ],
            "{}",
            t.kind()
        );
        let created = entry(&entries, 1, "created");
        assert!(created.get("changes").is_none(), "{created}");
        assert_eq!(
            created["fields"]["target_url"],
            "https://shop.example/spring"
        );
        assert_eq!(created["fields"]["tags"], json!(["sale"]));
        let e = entry(&entries, 2, "edited");
        assert_eq!(
            e["changes"],
            json!({
                "target_url": {"from": "https://shop.example/spring", "to": "https://shop.example/summer"},
                "title": {"from": "Spring", "to": "Summer"},
            }),
            "{e}"
        );
        let e = entry(&entries, 3, "edited");
        assert_eq!(
            e["changes"],
            json!({"access": {"from": "public", "to": "password"}}),
            "{e}"
        );
        let e = entry(&entries, 4, "edited");
        assert_eq!(e["changes"], json!({"secret": {"changed": true}}), "{e}");
        let e = entry(&entries, 5, "banned");
        assert_eq!(e["note"], format!("ban {ban_id}: phishing kit"), "{e}");
        assert_eq!(e["changes"], json!({}), "{e}");
        assert_eq!(
            entry(&entries, 7, "deleted")["changes"],
            json!({"status": {"from": "active", "to": "deleted"}})
        );
        assert_eq!(
            entry(&entries, 8, "restored")["changes"],
            json!({"status": {"from": "deleted", "to": "active"}})
        );
        assert_eq!(
            entry(&entries, 10, "exhausted")["changes"],
            json!({"exhausted": {"from": false, "to": true}})
        );
        let text = serde_json::to_string(&entries).expect("json");
        for secret in ["first-Secret-1", "second-Secret-2", "\"hash\"", "\"salt\""] {
            assert!(!text.contains(secret), "{secret} in {text}");
        }
        // Nor does the database's copy: the history keeps no secret at all.
        let stored: Vec<(String,)> = api.rows("SELECT state FROM link_history").await;
        assert!(stored.len() >= 10, "{stored:?}");
        for (state,) in &stored {
            for secret in ["\"hash\"", "\"salt\"", "\"key\""] {
                assert!(!state.contains(secret), "{secret} in the stored {state}");
            }
        }
        // Pages of 3 and one page of 100 hold the same entries.
        assert_eq!(history(&api, &owner, LINK, 100).await, entries);

        let theirs = api.call_as(&other, "GET", &format!("{LINK}/history")).await;
        assert_eq!(theirs.status, StatusCode::NOT_FOUND, "{}", theirs.text);
        for bad in ["?cursor=x", "?limit=0", "?limit=1001"] {
            let r = api
                .call_as(&owner, "GET", &format!("{LINK}/history{bad}"))
                .await;
            assert_eq!(
                r.status,
                StatusCode::UNPROCESSABLE_ENTITY,
                "{bad}: {}",
                r.text
            );
        }

        // An import and a bulk create record each link they make.
        let page = json!({"links": [{"id": "s.example/old-promo",
            "long_url": "https://imported.example/", "custom_bitlinks": []}]});
        let imported = api
            .post_json(
                &owner,
                "/v1/imports",
                &json!({"source": "bitly", "format": "api", "content": page.to_string()}),
            )
            .await;
        assert_eq!(imported.body["summary"]["created"], 1, "{}", imported.text);
        let old = history(&api, &owner, "/v1/links/s.example/old-promo", 10).await;
        assert_eq!(summary(&old), vec![(1, "imported".into(), me.clone())]);
        let bulk = api
            .post_json(
                &owner,
                "/v1/links/bulk",
                &json!({"links": [
                    {"target_url": "https://a.example/", "code": "bulk-one"},
                    {"target_url": "https://b.example/", "code": "bulk-two"}]}),
            )
            .await;
        assert_eq!(bulk.status, StatusCode::OK, "{}", bulk.text);
        for code in ["bulk-one", "bulk-two"] {
            let got = history(&api, &owner, &format!("/v1/links/s.example/{code}"), 10).await;
            assert_eq!(summary(&got), vec![(1, "created".into(), me.clone())]);
        }
        t.cleanup().await;
    }
}

/// A link's expiry is recorded by the origin's sweep, at the instant it passed, by
/// `system`, without a new version.
#[tokio::test]
async fn an_expiry_is_recorded_when_it_passes() {
    for (api, t) in apis_with("history-expiry", &[]).await {
        let owner = api.key("acme", false).await;
        let stop = api.run_dispatcher();
        let soon = origin_api::model::time::now_ms() + 1_500;
        let made = api
            .create(
                &owner,
                json!({"target_url": "https://shop.example/flash", "code": "flash-sale",
                       "expires_at": origin_api::model::time::rfc3339(soon)}),
            )
            .await;
        assert_eq!(made.status, StatusCode::CREATED, "{}", made.text);
        let path = "/v1/links/s.example/flash-sale";
        let entries = poll("the expiry on record")
            .within(Duration::from_secs(30))
            .until(|| async {
                let entries = history(&api, &owner, path, 10).await;
                (entries.len() == 2).then_some(entries)
            })
            .await;
        assert_eq!(
            summary(&entries),
            vec![
                (1, "created".into(), actor(&owner)),
                (1, "expired".into(), "system".into())
            ]
        );
        assert_eq!(
            entries[0]["at"],
            origin_api::model::time::rfc3339(soon),
            "{}",
            t.kind()
        );
        // An expired version does not come back by a revert.
        let r = revert_at(&api, &owner, path, 1, None).await;
        assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.text);
        assert!(r.text.contains("expired"), "{}", r.text);
        drop(stop);
        t.cleanup().await;
    }
}

/// The history is written in the transaction of the change: when it cannot be written,
/// the change is not made either.
#[tokio::test]
async fn a_change_whose_history_cannot_be_written_is_not_made() {
    for (api, t) in apis("history-atomic").await {
        let owner = api.key("acme", false).await;
        let made = api
            .create(
                &owner,
                json!({"target_url": "https://shop.example/spring", "code": "spring-sale"}),
            )
            .await;
        assert_eq!(made.status, StatusCode::CREATED, "{}", made.text);
        api.exec("DROP TABLE link_history").await;
        let r = api
            .patch_json(
                &owner,
                LINK,
                Some("\"1\""),
                json!({"target_url": "https://x.example/"}),
            )
            .await;
        assert!(r.status.is_server_error(), "{}", r.text);
        let r = api
            .create(
                &owner,
                json!({"target_url": "https://shop.example/b", "code": "second-sale"}),
            )
            .await;
        assert!(r.status.is_server_error(), "{}", r.text);
        let now = api.read(&owner, "s.example", "spring-sale").await;
        assert_eq!(now.body["version"], 1, "{}", now.text);
        assert_eq!(now.body["target_url"], "https://shop.example/spring");
        let none = api.read(&owner, "s.example", "second-sale").await;
        assert_eq!(
            none.status,
            StatusCode::NOT_FOUND,
            "{} {}",
            t.kind(),
            none.text
        );
        t.cleanup().await;
    }
}

/// A revert makes a new version with an earlier one's fields, published like an edit,
/// and on record; what today's rules refuse stays refused.
#[tokio::test]
async fn a_link_reverts_to_an_earlier_version_under_todays_rules() {
    for (api, t) in apis("history-revert").await {
        let owner = api.key("acme", false).await;
        let admin = api.key("ops", true).await;
        let other = api.key("other", false).await;
        let made = api
            .create(
                &owner,
                json!({"target_url": "https://shop.example/spring", "code": "spring-sale",
                       "title": "Spring", "redirect": 301}),
            )
            .await;
        assert_eq!(made.status, StatusCode::CREATED, "{}", made.text);
        let r = api
            .patch_json(
                &owner,
                LINK,
                Some("\"1\""),
                json!({"target_url": "https://wrong.example/oops", "title": null, "redirect": 302,
                       "rules": [{"when": {"country": ["DE"]}, "target_url": "https://shop.example/de"}]}),
            )
            .await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.text);
        assert_eq!(
            api.visit("GET", "s.example", "/spring-sale").await.headers[header::LOCATION],
            "https://wrong.example/oops"
        );

        let r = revert(&api, &owner, 1, Some("\"2\"")).await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.text);
        assert_eq!(r.headers[header::ETAG], "\"3\"");
        assert_eq!(r.body["target_url"], "https://shop.example/spring");
        assert_eq!(r.body["title"], "Spring");
        assert_eq!(r.body["redirect"], 301);
        assert_eq!(r.body["rules"], json!([]), "{}", r.text);
        let visit = api.visit("GET", "s.example", "/spring-sale").await;
        assert_eq!(visit.status, StatusCode::MOVED_PERMANENTLY, "{}", t.kind());
        assert_eq!(
            visit.headers[header::LOCATION],
            "https://shop.example/spring"
        );
        let entries = history(&api, &owner, LINK, 10).await;
        let e = entry(&entries, 3, "reverted");
        assert_eq!(e["note"], "to version 1", "{e}");
        assert_eq!(e["actor"], actor(&owner));
        assert_eq!(
            e["changes"]["target_url"],
            json!({"from": "https://wrong.example/oops", "to": "https://shop.example/spring"})
        );
        assert_eq!(e["fields"], entry(&entries, 1, "created")["fields"], "{e}");

        // Refused, each saying why, and nothing changes.
        let stale = revert(&api, &owner, 2, Some("\"2\"")).await;
        assert_eq!(
            stale.status,
            StatusCode::PRECONDITION_FAILED,
            "{}",
            stale.text
        );
        let missing = revert(&api, &owner, 99, None).await;
        assert_eq!(
            missing.status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{}",
            missing.text
        );
        assert!(missing.text.contains("no version 99"), "{}", missing.text);
        let theirs = revert(&api, &other, 1, None).await;
        assert_eq!(theirs.status, StatusCode::NOT_FOUND, "{}", theirs.text);
        let ban = api
            .post_json(
                &admin,
                "/v1/bans",
                &json!({"kind": "host", "host": "wrong.example", "reason": "phishing"}),
            )
            .await;
        assert_eq!(ban.status, StatusCode::CREATED, "{}", ban.text);
        let banned = revert(&api, &owner, 2, None).await;
        assert_eq!(
            banned.status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{}",
            banned.text
        );
        assert!(banned.text.contains("wrong.example"), "{}", banned.text);

        // A version behind a password cannot come back without its secret.
        let r = api
            .patch_json(
                &owner,
                LINK,
                None,
                json!({"access": "password", "password": "Secret-pass-1"}),
            )
            .await;
        assert_eq!(r.status, StatusCode::PRECONDITION_REQUIRED, "{}", r.text);
        let r = api
            .patch_json(
                &owner,
                LINK,
                Some("\"3\""),
                json!({"access": "password", "password": "Secret-pass-1"}),
            )
            .await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.text);
        let r = api
            .patch_json(&owner, LINK, Some("\"4\""), json!({"access": "public"}))
            .await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.text);
        let secret = revert(&api, &owner, 4, None).await;
        assert_eq!(
            secret.status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{}",
            secret.text
        );
        assert!(secret.text.contains("password"), "{}", secret.text);
        // Back to version 1 again works: public, and today's rules pass.
        let again = revert(&api, &owner, 1, None).await;
        assert_eq!(again.status, StatusCode::OK, "{}", again.text);
        assert_eq!(again.body["version"], 6, "{}", again.text);

        // A deleted link is restored, not reverted; nor is a link reverted to its
        // deletion.
        let r = api.call_as(&owner, "DELETE", LINK).await;
        assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.text);
        let gone = revert(&api, &owner, 1, None).await;
        assert_eq!(gone.status, StatusCode::GONE, "{}", gone.text);
        let r = api
            .call_as(&owner, "POST", &format!("{LINK}/restore"))
            .await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.text);
        let deleted = revert(&api, &owner, 7, None).await;
        assert_eq!(
            deleted.status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{}",
            deleted.text
        );
        assert!(deleted.text.contains("DELETE"), "{}", deleted.text);
        let entries = history(&api, &owner, LINK, 100).await;
        assert_eq!(
            summary(&entries)
                .iter()
                .map(|(v, a, _)| (*v, a.as_str()))
                .collect::<Vec<_>>(),
            vec![
                (1, "created"),
                (2, "edited"),
                (3, "reverted"),
                (4, "edited"),
                (5, "edited"),
                (6, "reverted"),
                (7, "deleted"),
                (8, "restored"),
            ]
        );
        // A link deleted while disabled is restored disabled, as its history says.
        let r = api
            .patch_json(&owner, LINK, Some("\"8\""), json!({"status": "disabled"}))
            .await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.text);
        let r = api.call_as(&owner, "DELETE", LINK).await;
        assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.text);
        let back = api
            .call_as(&owner, "POST", &format!("{LINK}/restore"))
            .await;
        assert_eq!(back.status, StatusCode::OK, "{}", back.text);
        assert_eq!(
            (&back.body["status"], &back.body["version"]),
            (&json!("disabled"), &json!(11)),
            "{}",
            back.text
        );
        t.cleanup().await;
    }
}

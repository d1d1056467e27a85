//! No fast hash of a link's password is ever stored: the fingerprint an idempotent
//! create or bulk call is remembered by is keyed, so a leaked `idempotency` table
//! cannot be used to test guesses of the passwords in it. Both databases.

use crate::common::{apis_with, Api};
use axum::http::StatusCode;
use origin_api::model::api_key::sha256_hex;
use serde_json::{json, Value};

/// The fingerprints the `idempotency` table holds.
async fn fingerprints(api: &Api) -> Vec<String> {
    let rows: Vec<(String,)> = api.rows("SELECT request_hash FROM idempotency").await;
    rows.into_iter().map(|(h,)| h).collect()
}

async fn post_with_key(
    api: &Api,
    token: &str,
    path: &str,
    key: &str,
    body: &Value,
) -> crate::common::Reply {
    api.post_json_idempotent(token, path, key, body).await
}

#[tokio::test]
async fn an_idempotent_create_never_stores_a_fast_hash_of_its_password() {
    for (api, t) in apis_with("fingerprints", &[]).await {
        let token = api.key("acme", false).await;
        let body = json!({"target_url": "https://shop.example/", "access": "password", "password": "hunter2hunter2"});
        let made = post_with_key(&api, &token, "/v1/links", "k1", &body).await;
        assert_eq!(
            made.status,
            StatusCode::CREATED,
            "{}: {}",
            t.kind(),
            made.text
        );
        let bulk = json!({"links": [body.clone()]});
        let many = post_with_key(&api, &token, "/v1/links/bulk", "k2", &bulk).await;
        assert_eq!(many.status, StatusCode::OK, "{}", many.text);
        assert_eq!(many.body["results"][0]["ok"], true, "{}", many.text);

        let stored = fingerprints(&api).await;
        assert_eq!(stored.len(), 2, "{}", t.kind());
        // Whatever serialization a fast hash would have been taken of.
        let single: origin_api::views::links::CreateLink =
            serde_json::from_value(body.clone()).expect("body");
        let plain = [
            sha256_hex(&serde_json::to_string(&single).expect("json")),
            sha256_hex(&body.to_string()),
            sha256_hex(&bulk.to_string()),
            sha256_hex(&json!({"links": [single]}).to_string()),
        ];
        for fp in &stored {
            assert!(
                !plain.contains(fp),
                "{}: {fp} is a plain SHA-256 of a body",
                t.kind()
            );
        }

        // Same key, a body that differs only in its password: still another request.
        let mut other = body.clone();
        other["password"] = json!("hunter3hunter3");
        let conflict = post_with_key(&api, &token, "/v1/links", "k1", &other).await;
        assert_eq!(
            conflict.status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{}",
            conflict.text
        );
        assert_eq!(
            conflict.body["field"], "Idempotency-Key",
            "{}",
            conflict.text
        );
        let mut other_bulk = bulk.clone();
        other_bulk["links"][0]["password"] = json!("hunter3hunter3");
        let conflict = post_with_key(&api, &token, "/v1/links/bulk", "k2", &other_bulk).await;
        assert_eq!(
            conflict.status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{}",
            conflict.text
        );
        // And the same body again is replayed, not created twice.
        let again = post_with_key(&api, &token, "/v1/links", "k1", &body).await;
        assert_eq!(
            again.headers["idempotent-replayed"], "true",
            "{}",
            again.text
        );
        assert_eq!(again.body["code"], made.body["code"]);
        assert_eq!(api.count("links").await, 2, "{}", t.kind());
        t.cleanup().await;
    }
}

/// Every PBKDF2 goes through the process's one hashing gate: concurrent password
/// PATCHes never hash more at once than it allows; a bulk call carries at most
/// `MAX_BULK_PASSWORDS` password links (refused whole, nothing hashed or created); a
/// key changes passwords at a bounded rate (429 with `Retry-After`).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn password_hashing_is_gated_and_bounded_everywhere() {
    for (api, t) in apis_with("hashing-gate", &[]).await {
        let token = api.key("acme", false).await;
        let api = std::sync::Arc::new(api);
        const LINKS: usize = 12;
        for i in 0..LINKS {
            let made = api
                .create(
                    &token,
                    json!({"target_url": "https://shop.example/", "code": format!("pw-gate-{i}"),
                        "access": "password", "password": "correct horse"}),
                )
                .await;
            assert_eq!(made.status, StatusCode::CREATED, "{}", made.text);
        }
        let patches: Vec<_> = (0..LINKS)
            .map(|i| {
                let (api, token) = (api.clone(), token.clone());
                tokio::spawn(async move {
                    api.patch_json(
                        &token,
                        &format!("/v1/links/s.example/pw-gate-{i}"),
                        Some("\"1\""),
                        json!({"password": "battery staple"}),
                    )
                    .await
                    .status
                })
            })
            .collect();
        for patch in patches {
            assert_eq!(patch.await.expect("task"), StatusCode::OK, "{}", t.kind());
        }
        let gate = &api.state.links.passwords.hashing;
        assert!(
            gate.peak() <= gate.size(),
            "{} hashes ran at once; the gate allows {}",
            gate.peak(),
            gate.size()
        );

        // A bulk call over the cap is refused whole, before anything is hashed.
        let many: Vec<_> = (0..=origin_api::views::links::MAX_BULK_PASSWORDS)
            .map(|_| json!({"target_url": "https://shop.example/", "access": "password", "password": "correct horse"}))
            .collect();
        let before = api.count("links").await;
        let refused = api
            .post_json(&token, "/v1/links/bulk", &json!({ "links": many }))
            .await;
        assert_eq!(
            (refused.status, refused.body["field"].clone()),
            (StatusCode::UNPROCESSABLE_ENTITY, json!("links")),
            "{}",
            refused.text
        );
        assert_eq!(api.count("links").await, before);

        // A key's password changes are rate-limited: its burst, then 429. A change the
        // password check then refuses counts too (it hashes nothing, so the loop is fast).
        let mut limited = None;
        for round in 0..64 {
            let r = api
                .patch_json(
                    &token,
                    "/v1/links/s.example/pw-gate-0",
                    Some("\"2\""),
                    json!({"password": "x"}),
                )
                .await;
            if r.status == StatusCode::TOO_MANY_REQUESTS {
                limited = Some((round, r));
                break;
            }
        }
        let (round, r) = limited.expect("password changes are limited");
        assert!(round >= 1, "the first change was refused");
        assert!(r.headers.contains_key("retry-after"), "{:?}", r.headers);
        assert!(r.text.contains("changes passwords"), "{}", r.text);
        t.cleanup().await;
    }
}

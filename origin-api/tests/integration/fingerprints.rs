//! No fast hash of a link's password is ever stored: the fingerprint an idempotent
//! create or bulk call is remembered by is keyed, so a leaked `idempotency` table
//! cannot be used to test guesses of the passwords in it. Both databases.

use crate::common::{apis_with, Api};
use axum::http::StatusCode;
use origin_api::model::key::sha256_hex;
use serde_json::{json, Value};

/// The fingerprints the `idempotency` table holds.
async fn fingerprints(api: &Api) -> Vec<String> {
    let rows: Vec<(String,)> = api
        .state
        .db
        .reader()
        .await
        .expect("reader")
        .conn()
        .fetch_all("SELECT request_hash FROM idempotency", &[])
        .await
        .expect("read");
    rows.into_iter().map(|(h,)| h).collect()
}

async fn post_with_key(
    api: &Api,
    token: &str,
    path: &str,
    key: &str,
    body: &Value,
) -> crate::common::Reply {
    use axum::body::Body;
    use axum::http::{header, Request};
    api.send(
        Request::post(path)
            .header(header::AUTHORIZATION, format!("Bearer {token}"))
            .header(header::CONTENT_TYPE, "application/json")
            .header("idempotency-key", key)
            .body(Body::from(body.to_string()))
            .expect("request"),
    )
    .await
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
        let single: origin_api::links::CreateLink =
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

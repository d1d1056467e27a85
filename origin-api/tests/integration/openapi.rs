//! `/openapi.json` describes the API that is actually served: every documented operation
//! is routed, and the documented link and problem shapes are the ones the API returns.

use crate::common::TestDb;
use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use http_body_util::BodyExt;
use origin_api::api_keys;
use origin_api::model::time::now_ms;
use serde_json::{json, Value};
use std::collections::BTreeSet;
use tower::ServiceExt;

async fn call(state: &origin_api::AppState, req: Request<Body>) -> (StatusCode, Value) {
    let res = origin_api::routes::router(state.clone())
        .oneshot(req)
        .await
        .expect("infallible");
    let status = res.status();
    let bytes = res.into_body().collect().await.expect("body").to_bytes();
    (
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

/// The property names of a component schema.
fn properties(doc: &Value, schema: &str) -> BTreeSet<String> {
    doc["components"]["schemas"][schema]["properties"]
        .as_object()
        .unwrap_or_else(|| panic!("no schema {schema}"))
        .keys()
        .cloned()
        .collect()
}

fn keys_of(v: &Value) -> BTreeSet<String> {
    v.as_object().expect("an object").keys().cloned().collect()
}

#[tokio::test]
async fn the_description_matches_the_routes_and_the_shapes_served() {
    let t = TestDb::sqlite().await;
    let state = crate::common::app_state_with(&t, &["--edge-token", "edge-test-token-0123"]);
    let (status, doc) = call(
        &state,
        Request::get("/openapi.json").body(Body::empty()).unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert!(doc["openapi"].as_str().unwrap().starts_with("3.1"));
    assert_eq!(
        doc["components"]["securitySchemes"]["api_key"]["scheme"],
        "bearer"
    );

    // Every documented operation is routed: /v1 ones ask for a key, the others answer.
    let mut operations = Vec::new();
    let mut operation_ids = BTreeSet::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, operation) in item.as_object().unwrap() {
            operations.push(format!("{} {path}", method.to_uppercase()));
            let id = operation["operationId"].as_str().unwrap();
            assert!(operation_ids.insert(id.to_owned()), "{id} twice");
            let uri = path
                .replace("{domain}", "s.example")
                .replace("{code}", "abc")
                .replace("{id}", "1");
            let req = Request::builder()
                .method(method.to_uppercase().as_str())
                .uri(&uri)
                .header(header::CONTENT_TYPE, "application/json")
                .body(Body::from("{}"))
                .unwrap();
            let (status, _) = call(&state, req).await;
            // `/metrics` on the public listener needs its token too.
            let expected = if path.starts_with("/v1/") || path == "/metrics" {
                StatusCode::UNAUTHORIZED
            } else if path == "/{code}" && method == "post" {
                // Only a password link's form takes a POST: no such link takes one.
                StatusCode::METHOD_NOT_ALLOWED
            } else if path == "/{code}" {
                StatusCode::NOT_FOUND
            } else {
                StatusCode::OK
            };
            assert_eq!(status, expected, "{method} {uri}");
        }
    }
    operations.sort();
    assert_eq!(
        operations,
        [
            "DELETE /v1/bans/{id}",
            "DELETE /v1/domains/{domain}",
            "DELETE /v1/links/{domain}/{code}",
            "DELETE /v1/webhooks/{id}",
            "GET /healthz",
            "GET /metrics",
            "GET /openapi.json",
            "GET /readyz",
            "GET /v1/admin/outbox",
            "GET /v1/admin/reports",
            "GET /v1/bans",
            "GET /v1/domains",
            "GET /v1/domains/{domain}",
            "GET /v1/domains/{domain}/legacy-codes",
            "GET /v1/domains/{domain}/legacy-misses",
            "GET /v1/edge/denylist",
            "GET /v1/edge/resolve/{domain}/{code}",
            "GET /v1/links",
            "GET /v1/links/{domain}/{code}",
            "GET /v1/links/{domain}/{code}/history",
            "GET /v1/links/{domain}/{code}/qr",
            "GET /v1/links/{domain}/{code}/stats",
            "GET /v1/owners/me",
            "GET /v1/stats",
            "GET /v1/webhooks",
            "GET /v1/webhooks/{id}",
            "GET /v1/webhooks/{id}/attempts",
            "GET /{code}",
            "PATCH /v1/domains/{domain}",
            "PATCH /v1/links/{domain}/{code}",
            "PATCH /v1/webhooks/{id}",
            "POST /v1/admin/reports/{id}/resolve",
            "POST /v1/bans",
            "POST /v1/domains",
            "POST /v1/domains/{domain}/legacy-codes",
            "POST /v1/edge/clicks",
            "POST /v1/imports",
            "POST /v1/links",
            "POST /v1/links/bulk",
            "POST /v1/links/{domain}/{code}/restore",
            "POST /v1/links/{domain}/{code}/revert",
            "POST /v1/links/{domain}/{code}/tokens",
            "POST /v1/webhooks",
            "POST /v1/webhooks/{id}/redeliver",
            "POST /v1/webhooks/{id}/rotate",
            "POST /{code}",
        ]
    );

    // The documented shapes are the served ones, field for field.
    let (key, token) = api_keys::issue("o", "t", &api_keys::Grant::default(), now_ms()).unwrap();
    origin_api::store::api_keys::insert(state.db(), &key)
        .await
        .unwrap();
    let create = |body: Value| {
        Request::post("/v1/links")
            .header(header::AUTHORIZATION, format!("Bearer {token}"))
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(body.to_string()))
            .unwrap()
    };
    let (status, link) = call(&state, create(json!({"target_url": "https://e.example/"}))).await;
    assert_eq!(status, StatusCode::CREATED);
    assert_eq!(keys_of(&link), properties(&doc, "LinkView"));
    assert_eq!(keys_of(&link["edge"]), properties(&doc, "EdgeView"));
    let (status, problem) = call(&state, create(json!({"target_url": "ftp://e.example/"}))).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(keys_of(&problem), properties(&doc, "Problem"));
    let req = Request::get("/v1/stats")
        .header(header::AUTHORIZATION, format!("Bearer {token}"))
        .body(Body::empty())
        .unwrap();
    let (status, summary) = call(&state, req).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(keys_of(&summary), properties(&doc, "OwnerStats"));
    let (admin, admin_token) =
        api_keys::issue("ops", "t", &api_keys::Grant::admin(), now_ms()).unwrap();
    origin_api::store::api_keys::insert(state.db(), &admin)
        .await
        .unwrap();
    let req = Request::post("/v1/domains")
        .header(header::AUTHORIZATION, format!("Bearer {admin_token}"))
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(
            json!({"domain": "d.example", "owners": ["o"], "root_url": "https://e.example/"})
                .to_string(),
        ))
        .unwrap();
    let (status, domain) = call(&state, req).await;
    assert_eq!(status, StatusCode::CREATED);
    assert_eq!(keys_of(&domain), properties(&doc, "DomainView"));
    let req = Request::get(format!(
        "/v1/links/{}/{}/stats",
        link["domain"].as_str().unwrap(),
        link["code"].as_str().unwrap()
    ))
    .header(header::AUTHORIZATION, format!("Bearer {token}"))
    .body(Body::empty())
    .unwrap();
    let (status, stats) = call(&state, req).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(keys_of(&stats), properties(&doc, "LinkStats"));
    assert_eq!(keys_of(&stats["top"]), properties(&doc, "Top"));
    let create_fields = properties(&doc, "CreateLink");
    assert!(create_fields.contains("target_url") && create_fields.contains("forward_query"));
    t.cleanup().await;
}

/// `/metrics` is served on the public listener only with a metrics token: without one
/// the description does not name it (it answered 404 while described as 401), and with
/// one it says exactly what it answers.
#[tokio::test]
async fn metrics_is_described_only_where_the_public_listener_serves_it() {
    let t = TestDb::sqlite().await;
    let served = crate::common::app_state_with(&t, &[]);
    let hidden = crate::common::app_state_with(&t, &["--no-metrics-token"]);
    let describe = |state: origin_api::AppState| async move {
        call(
            &state,
            Request::get("/openapi.json").body(Body::empty()).unwrap(),
        )
        .await
        .1
    };
    let doc = describe(served.clone()).await;
    let answers = keys_of(&doc["paths"]["/metrics"]["get"]["responses"]);
    assert_eq!(
        answers,
        BTreeSet::from(["200".to_owned(), "401".to_owned()])
    );
    let (status, _) = call(
        &served,
        Request::get("/metrics").body(Body::empty()).unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);

    let doc = describe(hidden.clone()).await;
    assert!(doc["paths"].get("/metrics").is_none(), "{}", doc["paths"]);
    assert!(doc["paths"].get("/healthz").is_some());
    let (status, _) = call(
        &hidden,
        Request::get("/metrics").body(Body::empty()).unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    t.cleanup().await;
}

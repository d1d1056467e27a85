//! Imported codes at the real edge. A code brought from another shortener may have the
//! domain's generated shape with any number, which the edge would otherwise answer 404
//! without asking anyone (it is outside the activation window). The import first tells
//! the edge, through the domain's activation meta, that the domain imports such codes,
//! and creates them only once that is known; from then on such a code is asked about,
//! so it redirects the moment it is created, also while KV never gets its record (the
//! normal lane stuck here).

use hop_e2e::{api_key, client, free_port, origin_env_through, poll, wired_edge, Origin, SinkMode};
use reqwest::StatusCode;
use serde_json::{json, Value};
use std::time::Duration;

/// A code of the default domain's generated shape (seven base62 characters) whose
/// number lies far past what the domain's sequence has issued.
const CODE: &str = "Zq7Lm2X";

async fn import(origin: &Origin, key: &str) -> Value {
    let page = json!({"links": [{"id": format!("s.example/{CODE}"),
        "long_url": "https://imported.example/moved", "custom_bitlinks": []}]});
    let res = client()
        .post(origin.url("/v1/imports"))
        .bearer_auth(key)
        .json(&json!({"source": "bitly", "format": "api", "content": page.to_string()}))
        .send()
        .await
        .expect("import");
    assert_eq!(res.status(), StatusCode::OK);
    res.json().await.expect("a report")
}

#[tokio::test]
async fn an_imported_code_of_the_generated_shape_never_404s_at_the_edge_once_created() {
    let dir = tempfile::tempdir().expect("temp dir");
    let origin_port = free_port();
    let edge = wired_edge(origin_port).await;
    let (sink, mut env) = origin_env_through(dir.path(), &edge).await;
    // wrangler dev's KV shows a write at once: a few seconds stand for production's two
    // minutes here.
    env.push(("HOP_IMPORT_EDGE_WAIT", "5".to_owned()));
    let key = api_key(&env, "ops", true);
    let origin = Origin::start(origin_port, &env, dir.path().join("origin.log")).await;
    // Link records never reach KV; the domain's meta (the fast lane) does.
    sink.set(SinkMode::StallRecords);

    // A link of Hop's own makes the domain's activation meta, which reaches the edge.
    let own = origin
        .create(&key, json!({"target_url": "https://dest.example/own"}))
        .await;
    assert!(own["code"].is_string(), "{own}");
    poll("the domain's activation meta reaches the edge")
        .within(Duration::from_secs(60))
        .every(Duration::from_millis(200))
        .until_true(|| async { origin.metric_sum("hop_outbox_pending{lane=\"fast\"}").await == 0 })
        .await;
    // Before: a code of that shape and number is answered 404 without asking anyone.
    let before = edge.visit(CODE).await;
    assert_eq!(before.status(), StatusCode::NOT_FOUND);

    let first = import(&origin, &key).await;
    assert_eq!(first["rows"][0]["outcome"], "deferred", "{first}");
    let wait = first["retry_after_s"].as_u64().expect("retry_after_s");
    assert!(wait <= 5, "{first}");
    let created = poll("the import creates the link once the edge knows")
        .within(Duration::from_secs(60))
        .every(Duration::from_secs(1))
        .explain(|| origin.log())
        .until(|| async {
            let report = import(&origin, &key).await;
            (report["rows"][0]["outcome"] == "created").then_some(report)
        })
        .await;
    assert_eq!(created["summary"]["created"], 1);

    // From its creation on, every visit redirects: asked of the origin, since KV never
    // gets the record.
    for _ in 0..20 {
        let res = edge.visit(CODE).await;
        assert_eq!(res.status(), StatusCode::FOUND, "{}", edge.log());
        assert_eq!(
            res.headers().get("location").and_then(|v| v.to_str().ok()),
            Some("https://imported.example/moved")
        );
    }
    assert!(
        origin
            .metric_sum("hop_outbox_pending{lane=\"normal\"}")
            .await
            > 0,
        "the record was indeed never delivered"
    );
}

//! Faults the origin must name truthfully and tables it must keep from growing, on
//! every database available: a collision that is not "taken", a database that is gone,
//! input that could never be published, dead letters, and housekeeping.

use crate::common::{apis, Api, Reply, TestDb};
use axum::http::{header, StatusCode};
use origin_api::housekeeping::{sweep, Swept};
use origin_api::model::time::now_ms;
use origin_api::store::{OutboxStore, RowFailure};
use serde_json::{json, Value};

/// Makes the next segment of `sequence` a fresh origin reserves start at 0 again, as if
/// `id_segments` had been restored from an old backup: numbers are handed out twice.
async fn rewind(api: &Api, sequence: &str) {
    api.exec(&format!(
        "UPDATE id_segments SET max_id = 0 WHERE name = '{sequence}'"
    ))
    .await;
}

/// `reply`, from `origin`, is a 500 counted as a write conflict: never "code taken".
fn assert_counted_500(origin: &Api, reply: &Reply, kind: &str) {
    assert_eq!(
        reply.status,
        StatusCode::INTERNAL_SERVER_ERROR,
        "{kind}: {}",
        reply.text
    );
    assert_ne!(reply.body["type"], "/problems/code-taken");
    assert_eq!(origin.state.metrics.write_conflicts.get(), 1);
}

#[tokio::test]
async fn an_id_handed_out_twice_is_a_counted_500_never_alias_taken() {
    for (api, t) in apis("fault-pk").await {
        let token = api.key("acme", false).await;
        let first = api
            .create(
                &token,
                json!({ "target_url": "https://dest.example/1", "code": "first-alias" }),
            )
            .await;
        assert_eq!(first.status, StatusCode::CREATED, "{}", first.text);
        rewind(&api, "links").await;
        // A second origin process over the same database: its allocator starts afresh.
        let again = crate::common::Api::of(&t);
        let collided = again
            .create(
                &token,
                json!({ "target_url": "https://dest.example/2", "code": "second-alias" }),
            )
            .await;
        assert_counted_500(&again, &collided, t.kind());
        // Bulk: the same collision fails the call, and nothing of it is stored.
        rewind(&api, "links").await;
        let third = crate::common::Api::of(&t);
        let bulk = third
            .post_json(
                &token,
                "/v1/links/bulk",
                &json!({ "links": [
                    { "target_url": "https://dest.example/3", "code": "bulk-one" },
                    { "target_url": "https://dest.example/4", "code": "bulk-two" },
                ] }),
            )
            .await;
        assert_eq!(
            bulk.status,
            StatusCode::INTERNAL_SERVER_ERROR,
            "{}: {}",
            t.kind(),
            bulk.text
        );
        assert_eq!(third.state.metrics.write_conflicts.get(), 1);
        assert_eq!(api.count("links").await, 1, "{}", t.kind());
        // The real "taken" is still 409.
        let taken = api
            .create(
                &token,
                json!({ "target_url": "https://dest.example/5", "code": "first-alias" }),
            )
            .await;
        assert_eq!(taken.status, StatusCode::CONFLICT);
        t.cleanup().await;
    }
}

#[tokio::test]
async fn a_code_number_handed_out_twice_is_a_counted_500_never_alias_taken() {
    for (api, t) in apis("fault-code").await {
        let token = api.key("acme", false).await;
        let body = json!({ "target_url": "https://dest.example/1" });
        let first = api.create(&token, body.clone()).await;
        assert_eq!(first.status, StatusCode::CREATED, "{}", first.text);
        // The domain's code sequence restored from an old backup; link ids are fine.
        rewind(&api, "code:s.example").await;
        let again = crate::common::Api::of(&t);
        let collided = again.create(&token, body.clone()).await;
        assert_counted_500(&again, &collided, t.kind());
        // In a bulk call, the item says so and is counted; the others go in.
        rewind(&api, "code:s.example").await;
        let third = crate::common::Api::of(&t);
        let bulk = third
            .post_json(
                &token,
                "/v1/links/bulk",
                &json!({ "links": [body, { "target_url": "https://dest.example/2", "code": "fine" }] }),
            )
            .await;
        assert_eq!(bulk.status, StatusCode::OK, "{}", bulk.text);
        let results = &bulk.body["results"];
        assert_eq!(results[0]["ok"], false, "{}", bulk.text);
        assert_eq!(results[0]["error"]["status"], 500);
        assert_eq!(results[1]["ok"], true);
        assert_eq!(third.state.metrics.write_conflicts.get(), 1);
        assert_eq!(api.count("links").await, 2, "{}", t.kind());
        t.cleanup().await;
    }
}

#[tokio::test]
async fn a_database_that_is_gone_answers_503_with_retry_after() {
    for (api, t) in apis("fault-down").await {
        let token = api.key("acme", false).await;
        api.state.close_db().await;
        let read = api.read(&token, "s.example", "some-alias").await;
        assert_eq!(
            read.status,
            StatusCode::SERVICE_UNAVAILABLE,
            "{}: {}",
            t.kind(),
            read.text
        );
        assert!(read.headers.contains_key(header::RETRY_AFTER));
        let visit = api.visit("GET", "s.example", "/some-alias").await;
        assert_eq!(visit.status, StatusCode::SERVICE_UNAVAILABLE);
        assert!(visit.headers.contains_key(header::RETRY_AFTER));
        // A create needs the database to write the link, whatever ids are in hand: the
        // runbook's "segment source down" says so.
        let create = api
            .create(
                &token,
                serde_json::json!({ "target_url": "https://dest.example/" }),
            )
            .await;
        assert_eq!(
            create.status,
            StatusCode::SERVICE_UNAVAILABLE,
            "{}",
            create.text
        );
        assert!(create.headers.contains_key(header::RETRY_AFTER));
        t.cleanup().await;
    }
}

#[tokio::test]
async fn a_domain_no_kv_key_could_hold_is_refused_at_the_api() {
    for (api, t) in apis("fault-domain").await {
        let token = api.key("acme", false).await;
        let long = format!(
            "{}.example",
            [
                "a".repeat(63),
                "b".repeat(63),
                "c".repeat(63),
                "d".repeat(63)
            ]
            .join(".")
        );
        for domain in [long.as_str(), "a_b.example", "127.0.0.1"] {
            let res = api
                .create(
                    &token,
                    json!({ "target_url": "https://dest.example/", "domain": domain }),
                )
                .await;
            assert_eq!(
                res.status,
                StatusCode::UNPROCESSABLE_ENTITY,
                "{}: {domain}: {}",
                t.kind(),
                res.text
            );
            assert_eq!(res.body["field"], "domain");
        }
        assert_eq!(api.count("outbox WHERE kind = 'link'").await, 0);
        t.cleanup().await;
    }
}

/// Sets the first `n` pending records aside as the publisher would after the edge
/// refused them ("KV failed: too large"); their `seq`s.
async fn set_aside(api: &Api, n: usize) -> Vec<i64> {
    let claim = crate::common::publisher_claim(api.state.db()).await;
    let rows = api
        .state
        .db()
        .pending("normal", 10, now_ms())
        .await
        .expect("pending");
    let failures: Vec<RowFailure> = rows[..n]
        .iter()
        .map(|r| RowFailure {
            seq: r.seq,
            error: "KV failed: too large".into(),
            retry_at: 0,
            dead: true,
        })
        .collect();
    let dead = api
        .state
        .db()
        .record_failures(&claim, &failures, now_ms())
        .await
        .expect("set aside");
    assert_eq!(dead, n as u64);
    failures.iter().map(|f| f.seq).collect()
}

#[tokio::test]
async fn operators_list_the_dead_letters_and_only_operators() {
    for (api, t) in apis("fault-admin").await {
        let token = api.key("acme", false).await;
        let admin = api.key("ops", true).await;
        for i in 0..3 {
            let res = api
                .create(&token, json!({ "target_url": format!("https://dest.example/{i}"), "code": format!("dead-{i}") }))
                .await;
            assert_eq!(res.status, StatusCode::CREATED);
        }
        // The publisher set two rows aside.
        assert_eq!(set_aside(&api, 2).await.len(), 2);

        // An ordinary key is refused whatever it asks, before what it asks is judged.
        for query in ["state=failed", "state=pending", "state=failed&limit=0"] {
            assert_eq!(
                api.call_as(&token, "GET", &format!("/v1/admin/outbox?{query}"))
                    .await
                    .status,
                StatusCode::FORBIDDEN,
                "{query}"
            );
        }
        let bad = api
            .call_as(&admin, "GET", "/v1/admin/outbox?state=pending")
            .await;
        assert_eq!(bad.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", bad.text);
        let page = api
            .call_as(&admin, "GET", "/v1/admin/outbox?state=failed&limit=1")
            .await;
        assert_eq!(page.status, StatusCode::OK, "{}: {}", t.kind(), page.text);
        let items = page.body["items"].as_array().expect("items");
        assert_eq!(items.len(), 1);
        assert_eq!(items[0]["key"], "s.example/dead-0");
        assert_eq!(items[0]["last_error"], "KV failed: too large");
        assert_eq!(items[0]["attempts"], 1);
        let after = page.body["next_after"].as_i64().expect("a next page");
        let next = api
            .call_as(
                &admin,
                "GET",
                &format!("/v1/admin/outbox?state=failed&after={after}"),
            )
            .await;
        let keys: Vec<Value> = next.body["items"]
            .as_array()
            .expect("items")
            .iter()
            .map(|i| i["key"].clone())
            .collect();
        assert_eq!(keys, [json!("s.example/dead-1")]);
        assert_eq!(next.body["next_after"], Value::Null);
        // Counted apart from what is pending.
        let metrics = api.metrics().await;
        assert!(metrics.contains("hop_outbox_failed 2"), "{metrics}");
        assert!(
            metrics.contains("hop_outbox_pending{lane=\"normal\"} 1"),
            "{metrics}"
        );
        t.cleanup().await;
    }
}

#[tokio::test]
async fn housekeeping_forgets_idempotency_keys_after_a_day_and_prunes_delivered_rows_but_the_newest(
) {
    for (api, t) in apis("housekeeping").await {
        let token = api.key("acme", false).await;
        let res = api
            .send(
                axum::http::Request::post("/v1/links")
                    .header(header::AUTHORIZATION, format!("Bearer {token}"))
                    .header(header::CONTENT_TYPE, "application/json")
                    .header("idempotency-key", "k-1")
                    .body(axum::body::Body::from(
                        json!({ "target_url": "https://dest.example/a", "code": "kept" })
                            .to_string(),
                    ))
                    .expect("request"),
            )
            .await;
        assert_eq!(res.status, StatusCode::CREATED);
        // Two versions of the link, both delivered.
        let patch = api
            .send(
                axum::http::Request::patch("/v1/links/s.example/kept")
                    .header(header::AUTHORIZATION, format!("Bearer {token}"))
                    .header(header::CONTENT_TYPE, "application/json")
                    .header(header::IF_MATCH, "\"1\"")
                    .body(axum::body::Body::from(json!({ "title": "t" }).to_string()))
                    .expect("request"),
            )
            .await;
        assert_eq!(patch.status, StatusCode::OK, "{}", patch.text);
        let claim = crate::common::publisher_claim(api.state.db()).await;
        let rows = api
            .state
            .db()
            .pending("normal", 10, now_ms())
            .await
            .expect("pending");
        assert_eq!(rows.len(), 2);
        let now = now_ms();
        api.state
            .db()
            .mark_published(&claim, &rows, now)
            .await
            .expect("mark");

        // An hour later nothing is due.
        assert_eq!(
            sweep(&api.state.housekeeping, now + 3_600_000)
                .await
                .expect("sweep"),
            Swept::default()
        );
        assert_eq!(api.count("idempotency").await, 1);
        // After a day the key is forgotten; after the retention (7 days) the older row goes.
        let day = 24 * 3_600_000;
        let swept = sweep(&api.state.housekeeping, now + day + 1)
            .await
            .expect("sweep");
        assert_eq!(
            (swept.idempotency_keys, swept.outbox_rows),
            (1, 0),
            "{}",
            t.kind()
        );
        let swept = sweep(&api.state.housekeeping, now + 8 * day)
            .await
            .expect("sweep");
        assert_eq!(swept.outbox_rows, 1, "{}", t.kind());
        // The newest delivered row of the key stays, and still fences a late older row.
        assert_eq!(api.count("outbox WHERE kind = 'link'").await, 1);
        assert_eq!(
            sweep(&api.state.housekeeping, now + 30 * day)
                .await
                .expect("sweep")
                .outbox_rows,
            0
        );
        t.cleanup().await;
    }
}

/// `hop-origin outbox failed` lists the dead letters with why; `outbox retry` puts one
/// (or all) back in line, and says so when there is nothing to retry.
#[tokio::test]
async fn operators_list_and_retry_dead_letters_from_the_command_line() {
    let t = TestDb::sqlite().await;
    let api = crate::common::Api::of(&t);
    let token = api.key("acme", false).await;
    for i in 0..2 {
        let res = api
            .create(
                &token,
                json!({ "target_url": format!("https://dest.example/{i}"), "code": format!("cli-{i}") }),
            )
            .await;
        assert_eq!(res.status, StatusCode::CREATED);
    }
    let rows = set_aside(&api, 2).await;
    let run = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_hop-origin"))
            .args(args)
            .env("HOP_DATABASE_URL", &t.url)
            .output()
            .expect("run hop-origin")
    };
    let listed = run(&["outbox", "failed"]);
    assert!(
        listed.status.success(),
        "{}",
        String::from_utf8_lossy(&listed.stderr)
    );
    let listed = String::from_utf8_lossy(&listed.stdout).into_owned();
    assert_eq!(listed.lines().count(), 2, "{listed}");
    assert!(
        listed.contains("s.example/cli-0 v1") && listed.contains("KV failed: too large"),
        "{listed}"
    );

    let one = run(&["outbox", "retry", "--seq", &rows[0].to_string()]);
    assert!(
        one.status.success(),
        "{}",
        String::from_utf8_lossy(&one.stderr)
    );
    assert!(String::from_utf8_lossy(&one.stdout).starts_with("1 row(s) back in line"));
    let all = run(&["outbox", "retry", "--all"]);
    assert!(String::from_utf8_lossy(&all.stdout).starts_with("1 row(s) back in line"));
    let none = run(&["outbox", "retry", "--all"]);
    assert!(!none.status.success());
    assert!(String::from_utf8_lossy(&none.stderr).contains("no row is set aside"));
    assert!(
        !run(&["outbox", "retry"]).status.success(),
        "a row or --all is required"
    );
    assert_eq!(
        api.state
            .db()
            .pending("normal", 10, now_ms())
            .await
            .expect("pending")
            .len(),
        2,
        "both are back in line"
    );
    t.cleanup().await;
}

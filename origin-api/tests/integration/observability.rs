//! What an on-call engineer reads: the metrics the alerts and the dashboard are built on
//! (`deploy/prometheus`, `deploy/grafana`), and how fresh the stats say they are.

use crate::common::{apis, apis_with, Api, Reply};
use axum::http::StatusCode;
use origin_api::model::time::{now_ms, parse_rfc3339};
use serde_json::{json, Value};

/// The value of the series `series` (its name and labels, as exported), if exported.
fn value(metrics: &str, series: &str) -> Option<f64> {
    metrics
        .lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

fn must(metrics: &str, series: &str) -> f64 {
    value(metrics, series).unwrap_or_else(|| panic!("no {series} in:\n{metrics}"))
}

async fn create_with_key(api: &Api, token: &str, key: &str, body: &Value) -> Reply {
    api.post_json_idempotent(token, "/v1/links", key, body)
        .await
}

#[tokio::test]
async fn metrics_time_every_path_and_count_refusals_replays_segments_and_backlog_age() {
    for (api, t) in apis("observability").await {
        let token = api.key("acme", false).await;
        let body = json!({ "target_url": "https://e.example/a" });
        let first = create_with_key(&api, &token, "k-1", &body).await;
        assert_eq!(first.status, StatusCode::CREATED, "{}", first.text);
        let again = create_with_key(&api, &token, "k-1", &body).await;
        assert_eq!(again.status, StatusCode::CREATED, "{}", again.text);
        let code = first.body["code"].as_str().expect("code").to_owned();
        let alias = json!({ "target_url": "https://e.example/b", "code": "promo" });
        assert_eq!(
            api.create(&token, alias.clone()).await.status,
            StatusCode::CREATED
        );
        assert_eq!(api.create(&token, alias).await.status, StatusCode::CONFLICT);
        let stale = api
            .patch_json(
                &token,
                "/v1/links/s.example/promo",
                Some("\"7\""),
                json!({ "title": "x" }),
            )
            .await;
        assert_eq!(stale.status, StatusCode::PRECONDITION_FAILED);
        let unconditional = api
            .patch_json(
                &token,
                "/v1/links/s.example/promo",
                None,
                json!({ "title": "x" }),
            )
            .await;
        assert_eq!(unconditional.status, StatusCode::PRECONDITION_REQUIRED);
        // Twice: the first reads the database, the second is answered from memory.
        for _ in 0..2 {
            let visit = api.visit("GET", "s.example", &format!("/{code}")).await;
            assert_eq!(visit.status, StatusCode::FOUND);
        }
        // The fast lane's rows (the domain's settings, the code segment) have waited ten
        // minutes for an edge that does not take them.
        assert!(
            api.count("outbox WHERE lane = 'fast' AND published_at IS NULL")
                .await
                > 0
        );
        api.exec("UPDATE outbox SET created_at = created_at - 600000 WHERE lane = 'fast'")
            .await;

        let m = api.metrics().await;
        let kind = t.kind();
        assert_eq!(must(&m, "hop_idempotency_replays_total"), 1.0, "{kind}");
        assert_eq!(
            must(&m, "hop_api_refusals_total{reason=\"code-taken\"}"),
            1.0,
            "{kind}"
        );
        for (series, n) in [
            ("hop_api_responses_total{route=\"/v1/links\",method=\"POST\",status=\"201\"}", 3.0),
            ("hop_api_responses_total{route=\"/v1/links\",method=\"POST\",status=\"409\"}", 1.0),
            ("hop_api_responses_total{route=\"/v1/links/{domain}/{code}\",method=\"PATCH\",status=\"412\"}", 1.0),
            ("hop_api_responses_total{route=\"/v1/links/{domain}/{code}\",method=\"PATCH\",status=\"428\"}", 1.0),
            ("hop_api_request_duration_seconds_count{route=\"/v1/links\",method=\"POST\"}", 4.0),
            ("hop_redirect_duration_seconds_count{path=\"database\"}", 1.0),
            ("hop_redirect_duration_seconds_count{path=\"memory\"}", 1.0),
        ] {
            assert_eq!(must(&m, series), n, "{kind}: {series}");
        }
        // Three creates took three link ids of the first segment (the one refused for
        // its taken alias too); one generated code took a number of s.example's.
        assert_eq!(
            must(
                &m,
                "hop_id_segment_remaining{sequence=\"links\",segment=\"current\"}"
            ),
            9_997.0,
            "{kind}"
        );
        assert_eq!(
            must(
                &m,
                "hop_id_segment_remaining{sequence=\"code:s.example\",segment=\"current\"}"
            ),
            9_999.0,
            "{kind}"
        );
        let age = must(&m, "hop_outbox_oldest_age_seconds{lane=\"fast\"}");
        assert!(
            (600.0..3_600.0).contains(&age),
            "{kind}: fast lane {age}s old"
        );
        t.cleanup().await;
    }
}

const EDGE_TOKEN: &str = "edge-click-token";

async fn data_as_of(api: &Api, token: &str) -> i64 {
    let res = api
        .call_as(token, "GET", "/v1/links/s.example/fresh/stats")
        .await;
    assert_eq!(res.status, StatusCode::OK, "{}", res.text);
    let owner = api.call_as(token, "GET", "/v1/stats").await;
    assert_eq!(owner.status, StatusCode::OK, "{}", owner.text);
    let of = |r: &Reply| {
        r.body["data_as_of"]
            .as_str()
            .and_then(parse_rfc3339)
            .unwrap_or_else(|| panic!("no data_as_of in {}", r.text))
    };
    // Read after the link's: as fresh or fresher.
    assert!(of(&owner) >= of(&res), "{} / {}", owner.text, res.text);
    of(&res)
}

async fn edge_batch(api: &Api, id: &str, at: i64) {
    let event = json!({
        "event_id": id, "link": "s.example/fresh", "version": 1, "at": at,
        "country": "DE", "referrer_host": null, "device": "mobile", "bot": false, "status": 302,
    });
    let res = api
        .post_json(EDGE_TOKEN, "/v1/edge/clicks", &json!({ "events": [event] }))
        .await;
    assert_eq!(res.status, StatusCode::OK, "{}", res.text);
    assert_eq!(res.body["counted"], 1, "{}", res.text);
}

/// "Show the data is 12 minutes late; do not pass old numbers off as live."
#[tokio::test]
async fn stats_say_how_late_their_data_is_when_clicks_arrive_late() {
    for (api, t) in apis_with("data-as-of", &["--edge-token", EDGE_TOKEN]).await {
        let kind = t.kind();
        let token = api.key("ana", false).await;
        let made = api
            .create(
                &token,
                json!({ "target_url": "https://e.example/", "code": "fresh" }),
            )
            .await;
        assert_eq!(made.status, StatusCode::CREATED);
        // Nothing outstanding: live, to the second the stats were read.
        let before = now_ms() / 1_000 * 1_000;
        assert!(data_as_of(&api, &token).await >= before, "{kind}");

        // The edge's queue held clicks back: its batch arrives with a click made twelve
        // minutes ago.
        let late = now_ms() - 12 * 60_000;
        edge_batch(&api, "late-1", late).await;
        let as_of = data_as_of(&api, &token).await;
        assert!(as_of <= late, "{kind}: {as_of} after the late click {late}");
        let m = api.metrics().await;
        assert!(
            must(&m, "hop_click_ingest_delay_seconds{source=\"edge\"}") >= 720.0,
            "{kind}"
        );
        // The backlog drained: a batch on time. Until the fold adds them to the rollups,
        // both batches are staged, and the stats still say the late click is missing.
        edge_batch(&api, "on-time-1", now_ms()).await;
        let as_of = data_as_of(&api, &token).await;
        assert!(as_of <= late, "{kind}: {as_of}, staged since {late}");
        assert_eq!(api.fold_clicks().await.visits, 2, "{kind}");
        let before = now_ms() / 1_000 * 1_000;
        assert!(data_as_of(&api, &token).await >= before, "{kind}");

        // Another origin process reported clicks unwritten since five minutes ago; one
        // that stopped reporting an hour ago is gone, and does not count.
        let now = now_ms();
        api.exec(&format!(
            "INSERT INTO click_sources (source, complete_to, reported_at) VALUES \
             ('origin:other', {}, {now}), ('origin:gone', {}, {})",
            now - 300_000,
            now - 7_200_000,
            now - 3_600_000
        ))
        .await;
        let as_of = data_as_of(&api, &token).await;
        assert!(
            (now - 301_000..=now - 300_000).contains(&as_of),
            "{kind}: {as_of}, expected five minutes before {now}"
        );
        t.cleanup().await;
    }
}

/// The names of the series `/metrics` declares (`# TYPE`), with the suffixes their
/// samples carry: `_total` for counters, `_bucket`, `_count`, `_sum` for histograms.
fn exported(metrics: &str) -> std::collections::BTreeSet<String> {
    let mut names = std::collections::BTreeSet::new();
    for line in metrics.lines() {
        let Some(rest) = line.strip_prefix("# TYPE ") else {
            continue;
        };
        let mut parts = rest.split_whitespace();
        let (Some(name), Some(kind)) = (parts.next(), parts.next()) else {
            continue;
        };
        let suffixes: &[&str] = match kind {
            "counter" => &["_total"],
            "histogram" => &["_bucket", "_count", "_sum"],
            _ => &[""],
        };
        names.extend(suffixes.iter().map(|s| format!("{name}{s}")));
    }
    names
}

/// Every `hop_…` name in `text`.
fn hop_names(text: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find("hop_") {
        let boundary = rest[..i]
            .chars()
            .next_back()
            .is_none_or(|c| !(c.is_ascii_alphanumeric() || c == '_'));
        let name: String = rest[i..]
            .chars()
            .take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '_')
            .collect();
        if boundary {
            names.push(name.clone());
        }
        rest = &rest[i + name.len()..];
    }
    names
}

fn deploy_file(path: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../deploy")
        .join(path);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The dashboard and the alerts are checked against what a running origin exports, so a
/// renamed metric fails here rather than as an empty panel or an alert that never fires.
#[tokio::test]
async fn the_dashboard_and_the_alerts_query_only_series_the_origin_exports() {
    let t = crate::common::TestDb::sqlite().await;
    let api = Api::of(&t);
    // Series with open label sets appear with their first use: an API call, a refusal,
    // a create (segments in hand), a visit.
    let token = api.key("acme", false).await;
    let made = api
        .create(&token, json!({ "target_url": "https://e.example/" }))
        .await;
    assert_eq!(made.status, StatusCode::CREATED);
    assert_eq!(
        api.call_as("not-a-key", "GET", "/v1/links").await.status,
        StatusCode::UNAUTHORIZED
    );
    let code = made.body["code"].as_str().expect("code");
    api.visit("GET", "s.example", &format!("/{code}")).await;
    // The id gauges, read once a minute by a serving origin.
    api.state.purge.measure().await.expect("measure");
    let exported = exported(&api.metrics().await);
    assert!(exported.contains("hop_redirects_total"), "{exported:?}");
    assert!(
        !exported.contains("hop_redirects"),
        "a counter's samples end in _total"
    );

    let dashboard: Value =
        serde_json::from_str(&deploy_file("grafana/hop.json")).expect("the dashboard is JSON");
    assert_eq!(dashboard["uid"], "hop-origin");
    let panels = dashboard["panels"].as_array().expect("panels");
    let mut ids = std::collections::BTreeSet::new();
    let mut rows = Vec::new();
    let mut queries = 0;
    for p in panels {
        assert!(
            ids.insert(p["id"].as_i64().expect("id")),
            "duplicate id in {p}"
        );
        for k in ["x", "y", "w", "h"] {
            assert!(p["gridPos"][k].is_u64(), "gridPos.{k} of {}", p["title"]);
        }
        if p["type"] == "row" {
            rows.push(p["title"].as_str().unwrap_or_default().to_owned());
            continue;
        }
        let targets = p["targets"].as_array().expect("targets");
        assert!(!targets.is_empty(), "{} queries nothing", p["title"]);
        for target in targets {
            let expr = target["expr"].as_str().expect("expr");
            let names = hop_names(expr);
            assert!(!names.is_empty(), "{}: {expr} names no series", p["title"]);
            for name in names {
                assert!(
                    exported.contains(&name),
                    "panel {}: {name} is not exported",
                    p["title"]
                );
            }
            queries += 1;
        }
    }
    // The seeds' monitoring table, by layer.
    for row in ["Create", "Redirect", "Cache", "Consistency", "Security"] {
        assert!(rows.iter().any(|r| r == row), "no {row} row in {rows:?}");
    }
    assert!(queries >= 30, "{queries} queries");

    let alerts = deploy_file("prometheus/alerts.yml");
    let names = hop_names(&alerts);
    assert!(names.len() >= 13, "{names:?}");
    for name in names {
        assert!(
            exported.contains(&name),
            "alerts.yml: {name} is not exported"
        );
    }
    // The check itself can fail.
    assert!(!exported.contains("hop_made_up_total"));
    t.cleanup().await;
}

/// Rotating the edge's token without downtime: while the origin lists the new token and
/// the old one, the edge is let in with either; a token not listed is refused.
#[tokio::test]
async fn during_a_token_rotation_both_listed_tokens_are_accepted_and_no_other() {
    const OLD: &str = "old-edge-token-0123456789";
    const NEW: &str = "new-edge-token-0123456789";
    let t = crate::common::TestDb::sqlite().await;
    let api = Api {
        state: crate::common::app_state_with(&t, &["--edge-token", &format!("{NEW},{OLD}")]),
    };
    let batch = json!({ "events": [] });
    for token in [NEW, OLD] {
        let res = api.post_json(token, "/v1/edge/clicks", &batch).await;
        assert_eq!(res.status, StatusCode::OK, "{token}: {}", res.text);
    }
    for token in ["other-edge-token-0123456789", &format!("{NEW},{OLD}"), ""] {
        let res = api.post_json(token, "/v1/edge/clicks", &batch).await;
        assert_eq!(res.status, StatusCode::UNAUTHORIZED, "{token:?}");
    }
    t.cleanup().await;
}

/// The sum of every sample of `family` in an exposition.
fn total(exposition: &str, family: &str) -> f64 {
    exposition
        .lines()
        .filter(|l| l.starts_with(&format!("{family}{{")) || l.starts_with(&format!("{family} ")))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

/// Browsers ask every short domain for `/favicon.ico` on every visitor's page: 204 with
/// a week's caching, on any host, without a lookup, and never counted as a visit or an
/// answer (a 404 there was an error in each visitor's console and a miss in the counts).
/// Another method is answered as on any path that can be no code.
#[tokio::test]
async fn a_browsers_ask_for_the_icon_is_answered_204_and_counts_nothing() {
    let t = crate::common::TestDb::sqlite().await;
    let api = Api::of(&t);
    let before = total(&api.metrics().await, "hop_redirects_total");
    for host in ["s.example", "not-served.example"] {
        for method in ["GET", "HEAD"] {
            let icon = api.visit(method, host, "/favicon.ico").await;
            assert_eq!(icon.status, StatusCode::NO_CONTENT, "{method} {host}");
            assert_eq!(icon.headers["cache-control"], "public, max-age=604800");
            assert!(icon.text.is_empty());
        }
    }
    assert_eq!(
        total(&api.metrics().await, "hop_redirects_total"),
        before,
        "no answer counted"
    );
    // A path that can be no code, as for any other method.
    assert_eq!(
        api.visit("POST", "s.example", "/favicon.ico").await.status,
        StatusCode::NOT_FOUND
    );
    assert!(total(&api.metrics().await, "hop_redirects_total") > before);
    t.cleanup().await;
}

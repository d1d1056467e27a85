//! Click analytics through the real router, on every database available: edge batches
//! counted exactly once, the origin's own redirects counted the same way, and the stats
//! API reading the rollups back per owner.

use crate::common::{apis_with, Api, Reply};
use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use hop_e2e::poll;
use origin_api::model::time::now_ms;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::time::Duration;

const EDGE_TOKEN: &str = "edge-click-token";
const FLAGS: &[&str] = &[
    "--edge-token",
    EDGE_TOKEN,
    "--trusted-proxies",
    "10.0.0.0/8",
];
/// The proxy in front of the test origin, and a client that reaches it directly.
const PROXY: &str = "10.0.0.2:40000";
const STRANGER: &str = "203.0.113.50:40000";
const HUMAN_UA: &str = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1";
const BOT_UA: &str = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)";

impl Api {
    async fn post_clicks(&self, token: &str, body: &Value) -> Reply {
        self.post_json(token, "/v1/edge/clicks", body).await
    }

    async fn get_as(&self, token: &str, path: &str) -> Reply {
        self.call_as(token, "GET", path).await
    }

    /// A new link of `token`'s owner: its route key.
    async fn link(&self, token: &str, alias: &str) -> String {
        let r = self
            .create(
                token,
                json!({"target_url": "https://example.com/landing", "code": alias}),
            )
            .await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
        format!("s.example/{alias}")
    }

    /// A visit through the proxy in front of the origin (which says the country).
    async fn visit_as(&self, method: &str, path: &str, ua: &str, referer: &str) -> StatusCode {
        self.visit_from(PROXY, method, path, ua, referer).await
    }

    /// A visit whose connection comes from `peer`, claiming the country NL.
    async fn visit_from(
        &self,
        peer: &str,
        method: &str,
        path: &str,
        ua: &str,
        referer: &str,
    ) -> StatusCode {
        let mut req = Request::builder()
            .method(method)
            .uri(path)
            .header(header::HOST, "s.example")
            .header(header::USER_AGENT, ua)
            .header(header::REFERER, referer)
            .header("cf-ipcountry", "NL")
            .body(Body::empty())
            .expect("request");
        let peer: std::net::SocketAddr = peer.parse().expect("address");
        req.extensions_mut()
            .insert(axum::extract::ConnectInfo(peer));
        self.send(req).await.status
    }
}

fn event(id: &str, link: &str, country: &str, bot: bool, status: u16) -> Value {
    json!({
        "event_id": id, "link": link, "version": 1, "at": now_ms(),
        "country": country, "referrer_host": "news.example", "device": if bot { "other" } else { "mobile" },
        "bot": bot, "status": status,
    })
}

fn counts(v: &Value) -> (i64, i64, i64) {
    (
        v["visits"].as_i64().unwrap_or(-1),
        v["redirects"].as_i64().unwrap_or(-1),
        v["bots"].as_i64().unwrap_or(-1),
    )
}

fn ranked(list: &Value) -> Vec<(Option<String>, i64)> {
    list.as_array()
        .map(|a| {
            a.iter()
                .map(|r| {
                    (
                        r["value"].as_str().map(str::to_owned),
                        r["visits"].as_i64().unwrap_or(-1),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn an_edge_batch_counts_once_however_often_it_arrives() {
    for (api, t) in apis_with("clicks-once", FLAGS).await {
        let owner = api.key("ana", false).await;
        let link = api.link(&owner, "spring-sale").await;
        let batch = json!({"events": [
            event("e-1", &link, "DE", false, 302),
            event("e-2", &link, "DE", false, 302),
            event("e-3", &link, "US", false, 410),
            event("e-4", &link, "US", true, 302),
            event("e-5", "s.example/no-such-link", "US", false, 302),
        ]});
        let first = api.post_clicks(EDGE_TOKEN, &batch).await;
        assert_eq!(first.status, StatusCode::OK, "{}", first.text);
        assert_eq!(
            first.body,
            json!({"counted": 4, "duplicates": 0, "unknown_links": 1, "refused": 0, "dropped": 0}),
            "{}",
            t.kind()
        );
        let replay = api.post_clicks(EDGE_TOKEN, &batch).await;
        assert_eq!(
            replay.body,
            json!({"counted": 0, "duplicates": 4, "unknown_links": 1, "refused": 0, "dropped": 0})
        );
        api.fold_clicks().await;

        let stats = api
            .get_as(&owner, "/v1/links/s.example/spring-sale/stats")
            .await;
        assert_eq!(stats.status, StatusCode::OK, "{}", stats.text);
        // People: 3 visits, 2 of them redirected; the bot apart.
        assert_eq!(counts(&stats.body["totals"]), (3, 2, 1), "{}", t.kind());
        let series = stats.body["series"].as_array().expect("series");
        assert_eq!(
            series.len(),
            7 * 24 + 1,
            "a week of hours and the current one"
        );
        assert_eq!(counts(series.last().expect("a point")), (3, 2, 1));
        assert_eq!(
            ranked(&stats.body["top"]["countries"]),
            [(Some("DE".into()), 2), (Some("US".into()), 1)]
        );
        assert_eq!(
            ranked(&stats.body["top"]["statuses"]),
            [(Some("302".into()), 2), (Some("410".into()), 1)]
        );
        assert_eq!(
            ranked(&stats.body["top"]["devices"]),
            [(Some("mobile".into()), 3)]
        );

        let with_bots = api
            .get_as(
                &owner,
                "/v1/links/s.example/spring-sale/stats?include_bots=true",
            )
            .await;
        assert_eq!(counts(&with_bots.body["totals"]), (4, 3, 1));
        assert_eq!(
            ranked(&with_bots.body["top"]["countries"]),
            [(Some("DE".into()), 2), (Some("US".into()), 2)],
            "ties in order of value"
        );
        t.cleanup().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_deliveries_of_one_batch_count_it_once() {
    for (api, t) in apis_with("clicks-race", FLAGS).await {
        let owner = api.key("ana", false).await;
        let link = api.link(&owner, "race-link").await;
        let events: Vec<Value> = (0..200)
            .map(|i| event(&format!("race-{i}"), &link, "FR", false, 302))
            .collect();
        let batch = json!({ "events": events });
        let mut sends = tokio::task::JoinSet::new();
        for _ in 0..6 {
            let (api, batch) = (
                Api {
                    state: api.state.clone(),
                },
                batch.clone(),
            );
            sends.spawn(async move { api.post_clicks(EDGE_TOKEN, &batch).await });
        }
        let replies = sends.join_all().await;
        let counted: i64 = replies
            .iter()
            .map(|r| {
                assert_eq!(r.status, StatusCode::OK, "{}", r.text);
                r.body["counted"].as_i64().unwrap_or(-1)
            })
            .sum();
        assert_eq!(counted, 200, "{}", t.kind());
        api.fold_clicks().await;
        let stats = api
            .get_as(&owner, "/v1/links/s.example/race-link/stats")
            .await;
        assert_eq!(counts(&stats.body["totals"]), (200, 200, 0), "{}", t.kind());
        t.cleanup().await;
    }
}

/// Edges deliver side by side: the same person in many tallies at once (one visitor's
/// clicks through several isolates) is counted against a visit limit once, and two
/// people twice, however the deliveries interleave (D-280).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_deliveries_count_a_person_once() {
    for (api, t) in apis_with("clicks-people-race", FLAGS).await {
        let owner = api.key("ana", false).await;
        let r = api
            .create(
                &owner,
                json!({"target_url": "https://example.com/limited", "code": "race-limit", "max_visits": 100}),
            )
            .await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
        let mut sends = tokio::task::JoinSet::new();
        for i in 0..12 {
            let mut person = row("s.example/race-limit", "FR", false, 302, 1);
            // Half the tallies name one person, half another.
            person["person"] = json!(if i % 2 == 0 {
                "00000000000000aa"
            } else {
                "00000000000000bb"
            });
            let batch = json!({"tallies": [{"batch_id": format!("people-race-{i}"), "at": now_ms(), "rows": [person]}]});
            let api = Api {
                state: api.state.clone(),
            };
            sends.spawn(async move { api.post_clicks(EDGE_TOKEN, &batch).await });
        }
        for reply in sends.join_all().await {
            assert_eq!(reply.body["counted"], 1, "{}", reply.text);
        }
        api.fold_clicks().await;
        let stats = api
            .get_as(&owner, "/v1/links/s.example/race-limit/stats")
            .await;
        assert_eq!(
            (
                stats.body["totals"]["visits"].clone(),
                stats.body["visit_limit"]["counted"].clone()
            ),
            (json!(12), json!(2)),
            "{}",
            t.kind()
        );
        t.cleanup().await;
    }
}

/// Origins fold side by side (each runs the fold task): a staged delivery is counted by
/// exactly one of them, however their folds interleave.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_folds_count_each_staged_delivery_once() {
    for (api, t) in apis_with("clicks-folds", FLAGS).await {
        let owner = api.key("ana", false).await;
        let link = api.link(&owner, "folded").await;
        // 300 deliveries, staged: three folds' worth each.
        for d in 0..300 {
            let events: Vec<Value> = (0..2)
                .map(|i| event(&format!("fold-{d}-{i}"), &link, "FR", false, 302))
                .collect();
            let r = api
                .post_clicks(EDGE_TOKEN, &json!({ "events": events }))
                .await;
            assert_eq!(r.body["counted"], 2, "{}", r.text);
        }
        let stats = api.get_as(&owner, "/v1/links/s.example/folded/stats").await;
        assert_eq!(counts(&stats.body["totals"]).0, 0, "staged, not yet folded");
        let mut folds = tokio::task::JoinSet::new();
        for _ in 0..4 {
            let state = api.state.clone();
            folds.spawn(async move { state.clicks.counts.fold(state.db()).await });
        }
        let folded: u64 = folds
            .join_all()
            .await
            .into_iter()
            .map(|f| f.expect("fold").visits)
            .sum();
        assert_eq!(folded, 600, "{}", t.kind());
        assert_eq!(api.fold_clicks().await.rows, 0, "nothing left staged");
        let stats = api.get_as(&owner, "/v1/links/s.example/folded/stats").await;
        assert_eq!(counts(&stats.body["totals"]), (600, 600, 0), "{}", t.kind());
        t.cleanup().await;
    }
}

#[tokio::test]
async fn bad_batches_are_refused_and_bad_events_not_counted() {
    for (api, t) in apis_with(
        "clicks-bad",
        &["--edge-token", EDGE_TOKEN, "--click-id-retention-h", "1"],
    )
    .await
    {
        let owner = api.key("ana", false).await;
        let link = api.link(&owner, "bad-input").await;
        let batch = json!({"events": [event("ok-1", &link, "DE", false, 302)]});
        assert_eq!(
            api.post_clicks("wrong", &batch).await.status,
            StatusCode::UNAUTHORIZED
        );
        let api_key = api.post_clicks(&owner, &batch).await;
        assert_eq!(
            api_key.status,
            StatusCode::UNAUTHORIZED,
            "an API key is not the edge token"
        );

        let with_ip = json!({"events": [], "ip": "203.0.113.9"});
        let r = api.post_clicks(EDGE_TOKEN, &with_ip).await;
        assert!(r.status.is_client_error(), "{}", r.text);
        let mut full_ua = event("ua-1", &link, "DE", false, 302);
        full_ua["user_agent"] = json!(HUMAN_UA);
        let r = api
            .post_clicks(EDGE_TOKEN, &json!({"events": [full_ua]}))
            .await;
        assert!(
            r.status.is_client_error(),
            "no field beyond the coarse ones: {}",
            r.text
        );
        let too_many: Vec<Value> = (0..1001)
            .map(|i| event(&format!("m{i}"), &link, "DE", false, 302))
            .collect();
        let r = api
            .post_clicks(EDGE_TOKEN, &json!({"events": too_many}))
            .await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.text);
        assert!(r.body["detail"]
            .as_str()
            .unwrap_or_default()
            .contains("1000"));

        let mut old = event("old-1", &link, "DE", false, 302);
        old["at"] = json!(now_ms() - 2 * 3_600_000);
        let mut ahead = event("ahead-1", &link, "DE", false, 302);
        ahead["at"] = json!(now_ms() + 3_600_000);
        let mut bad_id = event("has space", &link, "DE", false, 302);
        bad_id["status"] = json!(302);
        let mut full_referrer = event("ref-1", &link, "DE", false, 302);
        full_referrer["referrer_host"] = json!("https://news.example/a?b=c");
        let r = api
            .post_clicks(
                EDGE_TOKEN,
                &json!({"events": [old, ahead, bad_id, full_referrer, event("ok-2", &link, "DE", false, 302)]}),
            )
            .await;
        assert_eq!(
            r.body,
            json!({"counted": 1, "duplicates": 0, "unknown_links": 0, "refused": 4, "dropped": 0}),
            "{}",
            t.kind()
        );
        let metrics = api.metrics().await;
        assert!(
            metrics.contains("hop_clicks_total{result=\"refused\"} 4"),
            "{metrics}"
        );
        t.cleanup().await;
    }
}

/// A row of an edge's tally: `n` alike clicks in the current hour.
fn row(link: &str, country: &str, bot: bool, status: u16, n: u32) -> Value {
    json!({
        "link": link, "version": 1, "hour": now_ms() / 3_600_000 * 3_600_000,
        "country": country, "referrer_host": "news.example",
        "device": if bot { "other" } else { "mobile" }, "bot": bot, "status": status, "n": n,
    })
}

#[tokio::test]
async fn an_edge_tally_counts_its_clicks_once_however_often_it_arrives() {
    for (api, t) in apis_with("clicks-tally", FLAGS).await {
        let owner = api.key("ana", false).await;
        let link = api.link(&owner, "viral").await;
        let limited = api
            .create(
                &owner,
                json!({"target_url": "https://example.com/limited", "code": "limited-t", "max_visits": 100}),
            )
            .await;
        assert_eq!(limited.status, StatusCode::CREATED, "{}", limited.text);
        let tally = json!({"batch_id": "t-1", "at": now_ms(), "dropped": 7, "rows": [
            row(&link, "DE", false, 302, 40),
            row(&link, "US", false, 410, 2),
            row(&link, "US", true, 302, 3),
            row("s.example/no-such-link", "US", false, 302, 5),
            // One window of a viral link past its visit limit.
            row("s.example/limited-t", "FR", false, 302, 150),
        ]});
        // An older edge's single events ride along in the same POST.
        let batch = json!({"tallies": [tally], "events": [event("e-1", &link, "DE", false, 302)]});
        let first = api.post_clicks(EDGE_TOKEN, &batch).await;
        assert_eq!(first.status, StatusCode::OK, "{}", first.text);
        assert_eq!(
            first.body,
            json!({"counted": 196, "duplicates": 0, "unknown_links": 5, "refused": 0, "dropped": 7}),
            "{}",
            t.kind()
        );
        let replay = api.post_clicks(EDGE_TOKEN, &batch).await;
        assert_eq!(
            replay.body,
            json!({"counted": 0, "duplicates": 196, "unknown_links": 5, "refused": 0, "dropped": 0}),
            "a tally delivered again counts nothing, its drops included"
        );
        api.fold_clicks().await;
        let stats = api.get_as(&owner, "/v1/links/s.example/viral/stats").await;
        assert_eq!(counts(&stats.body["totals"]), (43, 41, 3), "{}", t.kind());
        assert_eq!(
            ranked(&stats.body["top"]["countries"]),
            [(Some("DE".into()), 41), (Some("US".into()), 2)]
        );
        assert_eq!(
            api.read(&owner, "s.example", "limited-t").await.body["exhausted"],
            true,
            "a tally's count closes a visit limit like single clicks do"
        );
        let metrics = api.metrics().await;
        for line in [
            "hop_edge_click_messages_total 2",
            "hop_edge_clicks_received_total 196",
            "hop_edge_clicks_dropped_total 7",
        ] {
            assert!(metrics.contains(line), "{line} in\n{metrics}");
        }
        t.cleanup().await;
    }
}

/// JSON has one kind of number: `40.0` is the integer 40 to JSON Schema (which the API
/// description speaks) and to every JavaScript sender, so a batch written with whole
/// floats counts exactly as one written with integers, and a fraction is still refused.
#[tokio::test]
async fn a_batch_whose_integers_are_written_as_whole_floats_counts_the_same() {
    for (api, t) in apis_with("clicks-floats", FLAGS).await {
        let owner = api.key("ana", false).await;
        let link = api.link(&owner, "floaty").await;
        let mut tally_row = row(&link, "DE", false, 302, 40);
        for field in ["version", "hour", "status", "n"] {
            let n = tally_row[field].as_f64().expect("a number");
            tally_row[field] = json!(n);
        }
        let mut single = event("fe-1", &link, "DE", false, 302);
        single["at"] = json!(now_ms() as f64);
        single["status"] = json!(302.0);
        let batch = json!({"tallies": [{"batch_id": "ft-1", "at": now_ms() as f64, "dropped": 2.0,
            "health": {"answers": {"302": 41.0}, "faults": {"kv_read": 1.0}, "denylist_age_ms": 5.0},
            "rows": [tally_row]}], "events": [single]});
        assert!(batch.to_string().contains("\"status\":302.0"), "{batch}");
        let first = api.post_clicks(EDGE_TOKEN, &batch).await;
        assert_eq!(
            first.status,
            StatusCode::OK,
            "{} ({})",
            first.text,
            t.kind()
        );
        assert_eq!(
            first.body,
            json!({"counted": 41, "duplicates": 0, "unknown_links": 0, "refused": 0, "dropped": 2}),
            "{}",
            t.kind()
        );
        let mut fraction = batch.clone();
        fraction["tallies"][0]["batch_id"] = json!("ft-2");
        fraction["tallies"][0]["rows"][0]["n"] = json!(40.5);
        let refused = api.post_clicks(EDGE_TOKEN, &fraction).await;
        assert_eq!(
            refused.status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{}",
            refused.text
        );
        assert!(
            refused.text.contains("tallies[0].rows[0].n"),
            "{}",
            refused.text
        );
        t.cleanup().await;
    }
}

#[tokio::test]
async fn bad_tallies_are_refused_and_bad_rows_not_counted() {
    for (api, t) in apis_with(
        "clicks-bad-tally",
        &["--edge-token", EDGE_TOKEN, "--click-id-retention-h", "1"],
    )
    .await
    {
        let owner = api.key("ana", false).await;
        let link = api.link(&owner, "bad-rows").await;
        let mut zero = row(&link, "DE", false, 302, 1);
        zero["n"] = json!(0);
        let mut mid_hour = row(&link, "DE", false, 302, 4);
        mid_hour["hour"] = json!(now_ms());
        let mut huge = row(&link, "DE", false, 302, 1);
        huge["n"] = json!(10_000_001);
        let good = row(&link, "DE", false, 302, 6);
        let old = json!({"batch_id": "old", "at": now_ms() - 2 * 3_600_000, "rows": [row(&link, "DE", false, 302, 9)]});
        let mixed =
            json!({"batch_id": "mixed", "at": now_ms(), "rows": [zero, mid_hour, huge, good]});
        let r = api
            .post_clicks(EDGE_TOKEN, &json!({"tallies": [old, mixed]}))
            .await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.text);
        assert_eq!(
            r.body,
            json!({"counted": 6, "duplicates": 0, "unknown_links": 0, "refused": 10_000_014, "dropped": 0}),
            "{}",
            t.kind()
        );
        let mut extra = json!({"batch_id": "x", "at": now_ms(), "rows": []});
        extra["ip"] = json!("203.0.113.9");
        let r = api
            .post_clicks(EDGE_TOKEN, &json!({"tallies": [extra]}))
            .await;
        assert!(
            r.status.is_client_error(),
            "no field beyond the coarse ones: {}",
            r.text
        );
        let many: Vec<Value> = (0..201)
            .map(|i| json!({"batch_id": format!("m{i}"), "at": now_ms(), "rows": []}))
            .collect();
        let r = api.post_clicks(EDGE_TOKEN, &json!({"tallies": many})).await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.text);
        assert!(r.body["detail"]
            .as_str()
            .unwrap_or_default()
            .contains("200"));
        t.cleanup().await;
    }
}

/// One visitor counts at most `CLICKS_PER_VISITOR_MINUTE` clicks a minute at the origin,
/// as at each edge isolate: a script hammering a link through the origin cannot end a
/// `max_visits` link for everyone, and every visit is still answered.
#[tokio::test]
async fn one_visitor_counts_at_most_its_budget_of_clicks_at_the_origin() {
    for (api, t) in apis_with("clicks-budget", FLAGS).await {
        let owner = api.key("ana", false).await;
        let r = api
            .create(
                &owner,
                json!({"target_url": "https://example.com/limited", "code": "limited-1", "max_visits": 150}),
            )
            .await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
        let budget = u64::from(shared::clicks::CLICKS_PER_VISITOR_MINUTE);
        // Three budgets' worth: even straddling a minute's boundary, at most two count.
        for _ in 0..budget * 3 {
            let status = api
                .visit_from(STRANGER, "GET", "/limited-1", HUMAN_UA, "")
                .await;
            assert_eq!(status, StatusCode::FOUND, "every visit is answered");
        }
        api.visit_from("198.51.100.9:40000", "GET", "/limited-1", HUMAN_UA, "")
            .await;
        api.flush_clicks().await;
        let stats = api
            .get_as(&owner, "/v1/links/s.example/limited-1/stats")
            .await;
        let visits = stats.body["totals"]["visits"].as_u64().unwrap_or(0);
        assert!(
            (budget + 1..=2 * budget + 1).contains(&visits),
            "{}: {visits} visits counted of {} made by one visitor and 1 by another",
            t.kind(),
            3 * budget
        );
        let read = api.read(&owner, "s.example", "limited-1").await;
        assert_eq!(read.body["exhausted"], false, "{}", read.text);
        t.cleanup().await;
    }
}

#[tokio::test]
async fn the_origins_own_redirects_are_counted_as_clicks() {
    for (api, t) in apis_with("clicks-origin", FLAGS).await {
        let owner = api.key("ana", false).await;
        api.link(&owner, "own-path").await;
        for _ in 0..3 {
            let status = api
                .visit_as(
                    "GET",
                    "/own-path?utm=x",
                    HUMAN_UA,
                    "https://www.news.example/story?id=9",
                )
                .await;
            assert_eq!(status, StatusCode::FOUND);
        }
        api.visit_as("GET", "/own-path", BOT_UA, "").await;
        // A client that is not the proxy claims a country too: counted, without one.
        api.visit_from(STRANGER, "GET", "/own-path", HUMAN_UA, "")
            .await;
        // Not clicks: a HEAD, and a code that names no link.
        api.visit_as("HEAD", "/own-path", HUMAN_UA, "").await;
        api.visit_as("GET", "/no-such-code", HUMAN_UA, "").await;
        api.flush_clicks().await;

        let stats = api
            .get_as(&owner, "/v1/links/s.example/own-path/stats")
            .await;
        assert_eq!(
            counts(&stats.body["totals"]),
            (4, 4, 1),
            "{}: {}",
            t.kind(),
            stats.text
        );
        assert_eq!(
            ranked(&stats.body["top"]["referrers"]),
            [(Some("news.example".into()), 3), (None, 1)]
        );
        // The stranger's claimed country was not believed.
        assert_eq!(
            ranked(&stats.body["top"]["countries"]),
            [(Some("NL".into()), 3), (None, 1)]
        );
        assert_eq!(
            ranked(&stats.body["top"]["devices"]),
            [(Some("mobile".into()), 4)]
        );
        t.cleanup().await;
    }
}

#[tokio::test]
async fn with_recording_off_the_origins_redirects_count_nothing() {
    for (api, t) in apis_with("clicks-off", &["--record-clicks", "false"]).await {
        let owner = api.key("ana", false).await;
        api.link(&owner, "quiet-link").await;
        assert_eq!(
            api.visit_as("GET", "/quiet-link", HUMAN_UA, "").await,
            StatusCode::FOUND
        );
        api.flush_clicks().await;
        let stats = api
            .get_as(&owner, "/v1/links/s.example/quiet-link/stats")
            .await;
        assert_eq!(counts(&stats.body["totals"]), (0, 0, 0));
        t.cleanup().await;
    }
}

#[tokio::test]
async fn stats_belong_to_the_owner_and_outlive_the_link() {
    for (api, t) in apis_with("clicks-owner", FLAGS).await {
        let ana = api.key("ana", false).await;
        let bo = api.key("bo", false).await;
        let big = api.link(&ana, "big-campaign").await;
        let small = api.link(&ana, "small-campaign").await;
        let theirs = api.link(&bo, "bo-campaign").await;
        let mut events = Vec::new();
        for i in 0..3 {
            events.push(event(&format!("b{i}"), &big, "DE", false, 302));
        }
        // Two days ago: counted from the daily rollup, where whole days are in range.
        let mut earlier = event("b-earlier", &big, "DE", false, 302);
        earlier["at"] = json!(now_ms() - 2 * 86_400_000);
        events.push(earlier);
        events.push(event("s0", &small, "DE", false, 302));
        events.push(event("s1", &small, "DE", true, 302));
        for i in 0..5 {
            events.push(event(&format!("t{i}"), &theirs, "DE", false, 302));
        }
        api.post_clicks(EDGE_TOKEN, &json!({ "events": events }))
            .await;
        api.fold_clicks().await;

        let not_yours = api
            .get_as(&bo, "/v1/links/s.example/big-campaign/stats")
            .await;
        assert_eq!(
            not_yours.status,
            StatusCode::NOT_FOUND,
            "another owner's link is not found"
        );

        let summary = api.get_as(&ana, "/v1/stats").await;
        assert_eq!(summary.status, StatusCode::OK, "{}", summary.text);
        assert_eq!(counts(&summary.body["totals"]), (5, 5, 1), "{}", t.kind());
        let top: Vec<(String, (i64, i64, i64))> = summary.body["top_links"]
            .as_array()
            .expect("top links")
            .iter()
            .map(|l| (l["code"].as_str().unwrap_or_default().to_owned(), counts(l)))
            .collect();
        assert_eq!(
            top,
            [
                ("big-campaign".into(), (4, 4, 0)),
                ("small-campaign".into(), (1, 1, 1))
            ]
        );
        // The last hour only: today's partial hours, without the day before yesterday.
        let hour_ago = time::OffsetDateTime::from_unix_timestamp(now_ms() / 1000 - 3600)
            .expect("time")
            .format(&time::format_description::well_known::Rfc3339)
            .expect("format");
        let recent = api
            .get_as(&ana, &format!("/v1/stats?from={hour_ago}"))
            .await;
        assert_eq!(counts(&recent.body["totals"]), (4, 4, 1), "{}", recent.text);
        let top_one = api.get_as(&ana, "/v1/stats?top=1&include_bots=true").await;
        assert_eq!(top_one.body["top_links"].as_array().map(Vec::len), Some(1));
        assert_eq!(counts(&top_one.body["totals"]), (6, 6, 1), "bots included");

        // A deleted link keeps its history.
        let r = api
            .call_as(&ana, "DELETE", "/v1/links/s.example/big-campaign")
            .await;
        assert_eq!(r.status, StatusCode::NO_CONTENT);
        let after = api
            .get_as(
                &ana,
                "/v1/links/s.example/big-campaign/stats?granularity=day",
            )
            .await;
        assert_eq!(after.status, StatusCode::OK, "{}", after.text);
        assert_eq!(counts(&after.body["totals"]), (4, 4, 0));
        assert_eq!(
            after.body["series"].as_array().map(Vec::len),
            Some(8),
            "7 days and today"
        );
        t.cleanup().await;
    }
}

#[tokio::test]
async fn bad_stats_queries_say_which_field() {
    for (api, t) in apis_with("clicks-query", FLAGS).await {
        let ana = api.key("ana", false).await;
        api.link(&ana, "query-link").await;
        for (query, field) in [
            ("from=yesterday", "from"),
            ("from=2026-02-01T00:00:00Z&to=2026-01-01T00:00:00Z", "from"),
            ("from=2025-01-01T00:00:00Z&to=2026-01-01T00:00:00Z", "from"),
            ("granularity=minute", ""),
            ("top=0", "top"),
            ("colour=red", ""),
        ] {
            let r = api
                .get_as(
                    &ana,
                    &format!("/v1/links/s.example/query-link/stats?{query}"),
                )
                .await;
            assert!(r.status.is_client_error(), "{query}: {}", r.status);
            if !field.is_empty() {
                assert_eq!(r.body["field"], json!(field), "{query}: {}", r.text);
            }
        }
        let r = api
            .get_as(
                &ana,
                "/v1/stats?from=2025-01-01T00:00:00Z&to=2026-01-01T00:00:00Z&granularity=day",
            )
            .await;
        assert_eq!(
            r.status,
            StatusCode::OK,
            "a year by the day is fine: {}",
            r.text
        );
        assert_eq!(
            api.get_as("nobody", "/v1/stats").await.status,
            StatusCode::UNAUTHORIZED
        );
        t.cleanup().await;
    }
}

#[tokio::test]
async fn ids_past_their_retention_are_forgotten() {
    use origin_api::store::ClickStore;
    for (api, t) in apis_with("clicks-forget", FLAGS).await {
        let owner = api.key("ana", false).await;
        let link = api.link(&owner, "forget-me").await;
        let batch = json!({"events": [event("f-1", &link, "DE", false, 302)]});
        api.post_clicks(EDGE_TOKEN, &batch).await;
        // The sweep keeps ids received since `before`…
        let early = api
            .state
            .db()
            .forget_click_ids(now_ms() - 60_000)
            .await
            .expect("sweep");
        assert_eq!(early, 0, "{}", t.kind());
        assert_eq!(
            api.post_clicks(EDGE_TOKEN, &batch).await.body["duplicates"],
            json!(1)
        );
        // …and forgets those received before it, which is why older events are refused.
        let forgotten = api
            .state
            .db()
            .forget_click_ids(now_ms() + 1)
            .await
            .expect("sweep");
        assert_eq!(forgotten, 1, "{}", t.kind());
        t.cleanup().await;
    }
}

#[tokio::test]
async fn forged_referrers_cannot_grow_a_links_statistics() {
    let flags = [FLAGS, &["--referrers-per-hour", "10"]].concat();
    for (api, t) in apis_with("clicks-referrers", &flags).await {
        let owner = api.key("ana", false).await;
        let link = api.link(&owner, "forged-refs").await;
        // 600 visits, each claiming a different site sent it, in two batches (the cap
        // holds across writes too).
        for half in 0..2 {
            let events: Vec<Value> = (0..300)
                .map(|i| {
                    let mut e = event(&format!("f-{half}-{i}"), &link, "DE", false, 302);
                    e["referrer_host"] = json!(format!("forged-{half}-{i}.example"));
                    e
                })
                .collect();
            let res = api
                .post_clicks(EDGE_TOKEN, &json!({ "events": events }))
                .await;
            assert_eq!(res.body["counted"], 300, "{}", res.text);
            // Each half in a fold of its own: the second finds the first's hosts held.
            api.fold_clicks().await;
        }
        let hours: Vec<(String,)> =
            t.db.read_all("SELECT CAST(dims AS TEXT) FROM click_hours", &[])
                .await
                .expect("hours");
        let hosts: Vec<String> = hours
            .iter()
            .flat_map(|(dims,)| {
                let dims: BTreeMap<String, i64> = serde_json::from_str(dims).expect("JSON");
                dims.into_keys()
                    .filter(|k| k.starts_with("r:") && k.len() > 2)
            })
            .collect();
        assert_eq!(
            hosts.len(),
            11,
            "{}: ten hosts and the rest: {hosts:?}",
            t.kind()
        );
        let stats = api
            .get_as(&owner, "/v1/links/s.example/forged-refs/stats?top=20")
            .await;
        let referrers = ranked(&stats.body["top"]["referrers"]);
        assert_eq!(referrers.len(), 11, "{referrers:?}");
        assert_eq!(referrers[0], (Some("(other)".into()), 590));
        assert_eq!(counts(&stats.body["totals"]).0, 600, "nothing is lost");
        // A host the link-hour holds keeps being counted under its name once the cap is
        // reached; a new one still is not.
        let kept = referrers[1].0.clone().expect("a kept host");
        let events: Vec<Value> = (0..10)
            .map(|i| {
                let mut e = event(&format!("f-2-{i}"), &link, "DE", false, 302);
                e["referrer_host"] = json!(if i < 5 {
                    kept.clone()
                } else {
                    format!("forged-2-{i}.example")
                });
                e
            })
            .collect();
        let res = api
            .post_clicks(EDGE_TOKEN, &json!({ "events": events }))
            .await;
        assert_eq!(res.body["counted"], 10, "{}", res.text);
        api.fold_clicks().await;
        let stats = api
            .get_as(&owner, "/v1/links/s.example/forged-refs/stats?top=20")
            .await;
        let referrers = ranked(&stats.body["top"]["referrers"]);
        assert_eq!(referrers.len(), 11, "{}: {referrers:?}", t.kind());
        assert_eq!(referrers[0], (Some("(other)".into()), 595));
        assert_eq!(referrers[1], (Some(kept), 6));
        // The top is chosen by the database: asking for 3 gets 3 per dimension.
        let stats = api
            .get_as(&owner, "/v1/links/s.example/forged-refs/stats?top=3")
            .await;
        assert_eq!(ranked(&stats.body["top"]["referrers"]).len(), 3);
        t.cleanup().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_tally_is_written_sooner_and_loses_nothing() {
    use origin_api::cache::LinkTag;
    use origin_api::clicks::recorder::Reduced;
    use origin_api::clicks::tally::Clicked;
    use origin_api::store::ClickStore;
    // 1 MiB holds a window of 14,336 keys: six batches of 7,000 distinct links need
    // three windows at least, each written when it fills, well before its time is up.
    for (api, t) in apis_with("clicks-full", &["--click-tally-mib", "1"]).await {
        let state = api.state.clone();
        let (stop, stopped) = tokio::sync::watch::channel(false);
        let writer = tokio::spawn({
            let state = state.clone();
            async move {
                state
                    .clicks
                    .recorder
                    .run(&state.clicks.counts, state.db(), stopped)
                    .await
            }
        });
        let owner = state.cache.owners().intern("ana");
        let now = now_ms();
        let visitor = Reduced::of(None, None, None);
        for batch in 0..6u64 {
            for i in 0..7_000 {
                let link = LinkTag {
                    id: 1_000_000 + batch * 7_000 + i,
                    owner,
                };
                state
                    .clicks
                    .recorder
                    .record(Clicked::Link(link), now, 302, visitor.clone());
            }
            // The next batch once this one is in the tally (a shard holds 16,384 keys).
            poll("the tally takes the batch's clicks")
                .within(Duration::from_secs(30))
                .every(Duration::from_millis(5))
                .until_true(|| async { state.clicks.recorder.untaken() == 0 })
                .await;
        }
        // Two full windows are written while the third is still open: long before a
        // window's time would have closed them (a window stays open 10 s at least).
        let counted = || async {
            let totals = state
                .db()
                .owner_totals("ana", &[], now - 3_600_000, now + 3_600_000)
                .await
                .expect("totals");
            totals.visits + totals.bots
        };
        poll("two full windows are written")
            .within(Duration::from_secs(30))
            .every(Duration::from_millis(20))
            .until_true(|| async { counted().await >= 2 * 14_336 })
            .await;
        stop.send(true).expect("writer alive");
        writer.await.expect("writer");
        let totals = state
            .db()
            .owner_totals("ana", &[], now - 3_600_000, now + 3_600_000)
            .await
            .expect("totals");
        assert_eq!(totals.visits + totals.bots, 42_000, "{}", t.kind());
        assert!(
            api.metrics().await.contains("hop_clicks_dropped_total 0"),
            "nothing dropped"
        );
        t.cleanup().await;
    }
}

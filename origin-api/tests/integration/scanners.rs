//! Scanners are not people (docs/scanners.md), on every database available: an edge's
//! scanner rows and the origin's own prefetched visits are bots', listed in the stats'
//! `scanner` dimension, and never use up a `max_visits` link, unless the link's owner
//! turned the check off (`scanner_check: false`).

use crate::common::{apis_with, Api, Reply};
use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use origin_api::model::time::now_ms;
use serde_json::{json, Value};

const EDGE_TOKEN: &str = "edge-scanner-token";
const BROWSER: &str = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36";

fn row(link: &str, bot: bool, scanner: Option<&str>, n: u32) -> Value {
    let mut row = json!({
        "link": link, "version": 1, "hour": now_ms() / 3_600_000 * 3_600_000,
        "country": "US", "device": "desktop", "bot": bot, "status": 302, "n": n,
    });
    if let Some(s) = scanner {
        row["scanner"] = json!(s);
    }
    row
}

/// `(visits, bots)` of a stats answer, and its scanner dimension.
fn seen(stats: &Reply) -> ((i64, i64), Vec<(String, i64)>) {
    let totals = &stats.body["totals"];
    let scanners = stats.body["top"]["scanners"]
        .as_array()
        .unwrap_or_else(|| panic!("top.scanners in {}", stats.text))
        .iter()
        .map(|r| {
            (
                r["value"].as_str().unwrap_or_default().to_owned(),
                r["visits"].as_i64().unwrap_or(-1),
            )
        })
        .collect();
    (
        (
            totals["visits"].as_i64().unwrap_or(-1),
            totals["bots"].as_i64().unwrap_or(-1),
        ),
        scanners,
    )
}

impl Api {
    async fn limited(&self, token: &str, code: &str, extra: Value) -> String {
        let mut body =
            json!({"target_url": "https://example.com/offer", "code": code, "max_visits": 10});
        if let (Some(body), Some(extra)) = (body.as_object_mut(), extra.as_object()) {
            body.extend(extra.clone());
        }
        let r = self.create(token, body).await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
        format!("s.example/{code}")
    }

    /// A browser's prefetch of `path`, through the origin's own redirect.
    /// A prefetch of `path` from the `n`th address (each a person of its own: a visit
    /// limit counts an address once a day).
    async fn prefetch(&self, path: &str, n: u8) -> StatusCode {
        let mut req = Request::builder()
            .uri(path)
            .header(header::HOST, "s.example")
            .header(header::USER_AGENT, BROWSER)
            .header("sec-purpose", "prefetch")
            .body(Body::empty())
            .expect("request");
        let peer = std::net::SocketAddr::from(([198, 51, 100, n], 40000));
        req.extensions_mut()
            .insert(axum::extract::ConnectInfo(peer));
        self.send(req).await.status
    }
}

/// An edge's tally says which bots were scanners; the stats list them whatever
/// `include_bots` says, they never use up a visit limit, and a row that says
/// "scanner" of a person's visit is refused.
#[tokio::test]
async fn an_edges_scanner_rows_are_bots_listed_by_why() {
    for (api, t) in apis_with("scanners-edge", &["--edge-token", EDGE_TOKEN]).await {
        let owner = api.key("ana", false).await;
        // A limit the 25 scanners' visits would pass, were they people's.
        let link = api.limited(&owner, "offer", json!({"max_visits": 5})).await;
        let tally = json!({"batch_id": "s-1", "at": now_ms(), "rows": [
            row(&link, false, None, 4),
            row(&link, true, Some("network"), 20),
            row(&link, true, Some("prefetch"), 5),
            row(&link, true, None, 2),
            // A scanner is a bot: a row that says otherwise is not counted.
            row(&link, false, Some("network"), 7),
        ]});
        let r = api
            .post_json(EDGE_TOKEN, "/v1/edge/clicks", &json!({"tallies": [tally]}))
            .await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.text);
        assert_eq!(
            (&r.body["counted"], &r.body["refused"]),
            (&json!(31), &json!(7)),
            "{}: {}",
            t.kind(),
            r.text
        );
        api.fold_clicks().await;
        let expected = vec![("network".to_owned(), 20), ("prefetch".to_owned(), 5)];
        let people = api
            .call_as(&owner, "GET", "/v1/links/s.example/offer/stats")
            .await;
        assert_eq!(seen(&people), ((4, 27), expected.clone()), "{}", t.kind());
        let all = api
            .call_as(
                &owner,
                "GET",
                "/v1/links/s.example/offer/stats?include_bots=true",
            )
            .await;
        assert_eq!(seen(&all), ((31, 27), expected), "{}", t.kind());
        // 25 scanners' visits and 4 people's: under the limit of 5.
        assert_eq!(
            api.read(&owner, "s.example", "offer").await.body["exhausted"],
            false,
            "{}",
            t.kind()
        );
        t.cleanup().await;
    }
}

/// At the origin's own redirect a prefetch is a scanner's visit; a link whose owner
/// turned the check off counts it as a person's, up to the end of its visit limit.
#[tokio::test]
async fn the_origin_counts_a_prefetch_as_a_scanner_unless_the_link_says_otherwise() {
    for (api, t) in apis_with("scanners-origin", &[]).await {
        let owner = api.key("ana", false).await;
        api.limited(&owner, "scan-checked", json!({})).await;
        api.limited(&owner, "scan-unchecked", json!({"scanner_check": false}))
            .await;
        let read = api.read(&owner, "s.example", "scan-unchecked").await;
        assert_eq!(read.body["scanner_check"], false, "{}", read.text);
        assert_eq!(
            api.read(&owner, "s.example", "scan-checked").await.body["scanner_check"],
            true
        );
        for n in 0..12 {
            assert_eq!(api.prefetch("/scan-checked", n).await, StatusCode::FOUND);
            assert_eq!(api.prefetch("/scan-unchecked", n).await, StatusCode::FOUND);
        }
        api.flush_clicks().await;
        let checked = api
            .call_as(&owner, "GET", "/v1/links/s.example/scan-checked/stats")
            .await;
        assert_eq!(
            seen(&checked),
            ((0, 12), vec![("prefetch".to_owned(), 12)]),
            "{}",
            t.kind()
        );
        let unchecked = api
            .call_as(&owner, "GET", "/v1/links/s.example/scan-unchecked/stats")
            .await;
        assert_eq!(seen(&unchecked), ((12, 0), vec![]), "{}", t.kind());
        assert_eq!(
            api.read(&owner, "s.example", "scan-checked").await.body["exhausted"],
            false
        );
        assert_eq!(
            api.read(&owner, "s.example", "scan-unchecked").await.body["exhausted"],
            true,
            "{}: twelve prefetches from twelve addresses, counted as people, end a link of ten",
            t.kind()
        );
        // The owner turns the check back on.
        let read = api.read(&owner, "s.example", "scan-unchecked").await;
        let etag = read.headers[header::ETAG].to_str().expect("an ETag");
        let r = api
            .patch_json(
                &owner,
                "/v1/links/s.example/scan-unchecked",
                Some(etag),
                json!({"scanner_check": true}),
            )
            .await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.text);
        assert_eq!(r.body["scanner_check"], true, "{}", r.text);
        t.cleanup().await;
    }
}

/// A dimension a newer origin on the same database wrote (a rolling upgrade, a rollback)
/// is skipped: the stats still answer, with what this origin knows.
#[tokio::test]
async fn a_dimension_this_origin_does_not_know_is_skipped() {
    for (api, t) in apis_with("scanners-unknown-dim", &[]).await {
        let owner = api.key("ana", false).await;
        api.limited(&owner, "newer-dims", json!({})).await;
        let link = origin_api::store::links::get(api.state.db(), "s.example", "newer-dims")
            .await
            .expect("read")
            .expect("the link");
        let hour = now_ms() / 3_600_000 * 3_600_000;
        api.exec(&format!(
            "INSERT INTO click_hours (link_id, hour, bot, owner_id, visits, redirects, dims) \
             VALUES ({}, {hour}, TRUE, 'ana', 3, 3, '{{\"c:DE\": 3, \"z:future\": 3}}')",
            link.link_id
        ))
        .await;
        let stats = api
            .call_as(
                &owner,
                "GET",
                "/v1/links/s.example/newer-dims/stats?include_bots=true",
            )
            .await;
        assert_eq!(stats.status, StatusCode::OK, "{}: {}", t.kind(), stats.text);
        assert_eq!(
            stats.body["top"]["countries"],
            json!([{"value": "DE", "visits": 3}]),
            "{}",
            t.kind()
        );
        t.cleanup().await;
    }
}

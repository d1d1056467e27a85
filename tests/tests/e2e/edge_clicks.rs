//! Clicks at the real edge (`wrangler dev`, with its local queue) reach the real origin
//! and are counted exactly once: when the origin's acknowledgement is lost and the
//! queue delivers the batch again, and when the origin is down for a while (redirects
//! carry on from KV meanwhile, and the clicks arrive once it is back).

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use hop_e2e::{
    api_key, client, free_port, origin_env, poll, read_link, serve_in_background, wait_published,
    wired_edge_to, Edge, Origin,
};
use serde_json::{json, Value};
use std::cell::RefCell;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

const HUMAN_UA: &str = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36";
const BOT_UA: &str = "Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)";
/// The queue consumer's first retry comes after a second (then 2, 4, 8 s).
const FAST_RETRIES: (&str, &str) = ("CLICK_RETRY_BASE_S", "1");

/// Stands between the edge and the origin and forwards everything, except that the
/// origin's answer to the first batch of clicks is replaced by a 503: the origin counted
/// the batch, the edge believes it failed, and its queue delivers it again.
#[derive(Clone)]
struct LossyProxy {
    origin: String,
    click_posts: Arc<AtomicUsize>,
}

async fn forward(State(proxy): State<LossyProxy>, req: Request) -> Response {
    let (parts, body) = req.into_parts();
    let Ok(body) = axum::body::to_bytes(body, 16 << 20).await else {
        return StatusCode::BAD_REQUEST.into_response();
    };
    let url = format!("{}{}", proxy.origin, parts.uri);
    let mut out = client().request(parts.method.clone(), url).body(body);
    for (name, value) in &parts.headers {
        if name != "host" {
            out = out.header(name, value);
        }
    }
    let Ok(answer) = out.send().await else {
        return StatusCode::BAD_GATEWAY.into_response();
    };
    let status = answer.status();
    let bytes = answer.bytes().await.unwrap_or_default();
    if parts.uri.path() == "/v1/edge/clicks"
        && proxy.click_posts.fetch_add(1, Ordering::SeqCst) == 0
    {
        return (StatusCode::SERVICE_UNAVAILABLE, "acknowledgement lost").into_response();
    }
    (status, Body::from(bytes)).into_response()
}

async fn start_proxy(origin: String) -> (String, Arc<AtomicUsize>) {
    let proxy = LossyProxy {
        origin,
        click_posts: Arc::new(AtomicUsize::new(0)),
    };
    let posts = proxy.click_posts.clone();
    let app = axum::Router::new().fallback(forward).with_state(proxy);
    (serve_in_background(app).await, posts)
}

async fn visit(edge: &Edge, method: reqwest::Method, code: &str, ua: &str) -> StatusCode {
    let status = client()
        .request(method, edge.url(&format!("/{code}")))
        .header("host", "s.example")
        .header("user-agent", ua)
        .header("referer", "https://www.news.example/today?utm=x")
        .send()
        .await
        .expect("edge answers")
        .status();
    StatusCode::from_u16(status.as_u16()).expect("status")
}

async fn stats(origin: &Origin, key: &str, code: &str) -> Value {
    read_link(
        &origin.url(&format!("/v1/links/s.example/{code}/stats")),
        key,
    )
    .await
}

fn totals(stats: &Value) -> (i64, i64, i64) {
    let t = &stats["totals"];
    (
        t["visits"].as_i64().unwrap_or(-1),
        t["redirects"].as_i64().unwrap_or(-1),
        t["bots"].as_i64().unwrap_or(-1),
    )
}

/// Polls the origin until `done` holds (at most a minute: the queue's retries back off).
async fn until<F: Fn(&Value) -> bool>(origin: &Origin, key: &str, code: &str, done: F) -> Value {
    // The stats as last read, for the failure message.
    let last = RefCell::new(Value::Null);
    poll("the clicks arrive")
        .within(Duration::from_secs(60))
        .every(Duration::from_millis(100))
        .explain(|| format!("{}\n{}", last.borrow(), origin.log()))
        .until(|| async {
            let s = stats(origin, key, code).await;
            if done(&s) {
                return Some(s);
            }
            *last.borrow_mut() = s;
            None
        })
        .await
}

/// The stats once everything acknowledged by `since` is in the rollups: their
/// `data_as_of` (the oldest clicks still staged for the fold, if any) has reached it.
async fn until_folded(origin: &Origin, key: &str, code: &str, since: OffsetDateTime) -> Value {
    until(origin, key, code, |s| {
        s["data_as_of"]
            .as_str()
            .and_then(|t| OffsetDateTime::parse(t, &Rfc3339).ok())
            .is_some_and(|as_of| as_of >= since)
    })
    .await
}

async fn create(origin: &Origin, key: &str, code: &str) {
    origin
        .create(
            key,
            json!({ "target_url": format!("https://dest.example/{code}"), "code": code }),
        )
        .await;
}

#[tokio::test]
async fn edge_clicks_count_once_when_the_queue_delivers_them_again() {
    let dir = tempfile::tempdir().expect("temp dir");
    let origin_port = free_port();
    let (proxy, click_posts) = start_proxy(format!("http://127.0.0.1:{origin_port}")).await;
    let edge = wired_edge_to(&proxy, &[FAST_RETRIES]).await;
    let env = origin_env(dir.path(), Some(&edge));
    let key = api_key(&env, "e2e", false);
    let origin = Origin::start(origin_port, &env, dir.path().join("origin.log")).await;
    create(&origin, &key, "counted-link").await;
    wait_published(&origin.url(""), &key, "s.example", "counted-link").await;

    for _ in 0..5 {
        assert_eq!(
            visit(&edge, reqwest::Method::GET, "counted-link", HUMAN_UA).await,
            StatusCode::FOUND
        );
    }
    for _ in 0..2 {
        assert_eq!(
            visit(&edge, reqwest::Method::GET, "counted-link", BOT_UA).await,
            StatusCode::FOUND
        );
    }
    // Not clicks: a HEAD, and codes that name no link.
    visit(&edge, reqwest::Method::HEAD, "counted-link", HUMAN_UA).await;
    visit(&edge, reqwest::Method::GET, "no-such-link", HUMAN_UA).await;
    // Nor a browser's ask for the site's icon: 204, kept a week, and no answer counted.
    let icon = client()
        .get(edge.url("/favicon.ico"))
        .header("host", "s.example")
        .header("user-agent", HUMAN_UA)
        .send()
        .await
        .expect("edge answers");
    assert_eq!(icon.status().as_u16(), 204);
    assert_eq!(
        icon.headers()
            .get("cache-control")
            .and_then(|v| v.to_str().ok()),
        Some("public, max-age=604800")
    );
    let visited = Instant::now();

    // Every click counted, and the batch whose acknowledgement was lost delivered again
    // (the origin saw its events a second time and counted none of them).
    let s = until(&origin, &key, "counted-link", |s| totals(s) == (5, 5, 2)).await;
    // Reported, not asserted: the tally's window, the queue's batch and a lost answer's
    // redelivery all lie on this path.
    println!(
        "edge clicks counted {} ms after the last visit",
        visited.elapsed().as_millis()
    );
    poll("the lost batch is delivered again")
        .within(Duration::from_secs(60))
        .every(Duration::from_millis(100))
        .explain(|| edge.log())
        .until_true(|| async {
            origin
                .metric_sum("hop_clicks_total{result=\"duplicate\"}")
                .await
                > 0
        })
        .await;
    assert!(click_posts.load(Ordering::SeqCst) >= 2);
    assert_eq!(
        totals(&stats(&origin, &key, "counted-link").await),
        (5, 5, 2),
        "counted once"
    );
    assert_eq!(
        origin
            .metric_sum("hop_clicks_total{result=\"counted\"}")
            .await,
        7
    );
    assert_eq!(
        s["top"]["referrers"],
        json!([{"value": "news.example", "visits": 5}])
    );
    assert_eq!(
        s["top"]["devices"],
        json!([{"value": "desktop", "visits": 5}])
    );
    assert_eq!(s["top"]["statuses"], json!([{"value": "302", "visits": 5}]));
    // The edge's own answers reached the origin with its clicks, each report once
    // though its message was delivered twice: seven GETs and a HEAD found, one code
    // not.
    let answers = |status: u16| {
        let origin = &origin;
        async move {
            origin
                .metric_sum(&format!("hop_edge_answers_total{{status=\"{status}\"}}"))
                .await
        }
    };
    poll("the edge reports its answers")
        .within(Duration::from_secs(60))
        .every(Duration::from_millis(100))
        .explain(|| edge.log())
        .until_true(|| async { answers(302).await >= 8 && answers(404).await >= 1 })
        .await;
    // 404s include the harness's readiness probes (`/_hop/ready`): at least the one.
    assert_eq!(answers(302).await, 8, "each report counted once");
    assert_eq!(answers(204).await, 0, "the icon's ask is no answer");
    assert!(origin.metric_sum("hop_edge_health_reports_total").await >= 1);
    assert_eq!(
        origin
            .metric_sum("hop_edge_faults_total{kind=\"kv_read\"}")
            .await,
        0
    );
    let with_bots = client()
        .get(origin.url("/v1/links/s.example/counted-link/stats?include_bots=true"))
        .bearer_auth(&key)
        .send()
        .await
        .expect("stats")
        .json::<Value>()
        .await
        .expect("JSON");
    assert_eq!(totals(&with_bots), (7, 7, 2));
}

#[tokio::test]
async fn with_the_origin_down_redirects_go_on_and_clicks_arrive_when_it_returns() {
    let dir = tempfile::tempdir().expect("temp dir");
    let origin_port = free_port();
    let edge = wired_edge_to(&format!("http://127.0.0.1:{origin_port}"), &[FAST_RETRIES]).await;
    let env = origin_env(dir.path(), Some(&edge));
    let key = api_key(&env, "e2e", false);
    let origin = Origin::start(origin_port, &env, dir.path().join("origin-1.log")).await;
    create(&origin, &key, "outage-link").await;
    wait_published(&origin.url(""), &key, "s.example", "outage-link").await;
    // The same visits with the origin up, for the latency comparison printed below. The
    // origin may die before their clicks are delivered: they are retried like the rest.
    let mut up = Vec::new();
    for _ in 0..10 {
        let started = Instant::now();
        assert_eq!(
            visit(&edge, reqwest::Method::GET, "outage-link", HUMAN_UA).await,
            StatusCode::FOUND
        );
        up.push(started.elapsed());
    }
    origin.kill();

    let mut down = Vec::new();
    for _ in 0..10 {
        let started = Instant::now();
        let status = visit(&edge, reqwest::Method::GET, "outage-link", HUMAN_UA).await;
        down.push(started.elapsed());
        assert_eq!(
            status,
            StatusCode::FOUND,
            "redirects go on without the origin"
        );
    }
    up.sort();
    down.sort();
    println!(
        "edge redirect latency, origin up vs down: median {:?} vs {:?}, max {:?} vs {:?}",
        up[5], down[5], up[9], down[9]
    );

    let origin = Origin::start(origin_port, &env, dir.path().join("origin-2.log")).await;
    // Quiescence: the queue has had every one of the 20 events acknowledged, so nothing
    // more can arrive (a batch the first origin counted but died before answering was
    // delivered again, and counted as a duplicate). Only then are the counts final.
    poll("the queue drains")
        .within(Duration::from_secs(60))
        .every(Duration::from_millis(100))
        .explain(|| edge.log())
        .until_true(|| async { delivered(&edge.log()) >= 20 })
        .await;
    assert_eq!(delivered(&edge.log()), 20, "each event acknowledged once");
    // Acknowledged is staged; the fold adds it to the rollups within a second or so.
    let drained = OffsetDateTime::now_utc();
    assert_eq!(
        totals(&until_folded(&origin, &key, "outage-link", drained).await),
        (20, 20, 0),
        "each click once"
    );
}

/// The events the edge's queue consumer had acknowledged by the origin, by its log.
fn delivered(log: &str) -> u64 {
    log.lines()
        .filter_map(|l| {
            let rest = &l[l.find("clicks: delivered ")? + "clicks: delivered ".len()..];
            rest.split(' ').next()?.parse::<u64>().ok()
        })
        .sum()
}

/// The clicks the edge's consumer had acknowledged, and in how many queue messages, by
/// its log.
fn deliveries(log: &str) -> (u64, u64) {
    log.lines()
        .filter_map(|l| {
            let rest = &l[l.find("clicks: delivered ")? + "clicks: delivered ".len()..];
            let mut words = rest.split(' ');
            let clicks = words.next()?.parse::<u64>().ok()?;
            let messages = words.nth(2)?.parse::<u64>().ok()?;
            Some((clicks, messages))
        })
        .fold((0, 0), |(c, m), (dc, dm)| (c + dc, m + dm))
}

/// Clicks travel as tallies: a thousand visits of one hot link take about one queue
/// message per second of visits (one per isolate and window), not one per visit, and a
/// thousand visits of a thousand links (each click its own row) a few more; none is
/// lost. The budgets: at most 5 messages per 1,000 visits of a hot link at
/// 1,000 a second, at most 50 for visits spread over many links. The figures are
/// printed; what is asserted is the structure (a message a window, the spread budget)
/// and that every click arrives.
#[tokio::test]
async fn a_thousand_visits_take_a_few_queue_messages_and_lose_no_click() {
    const VISITS: usize = 1_000;
    let w = hop_e2e::Wired::start("marketing", false).await;
    let spread: Vec<String> = (0..VISITS).map(|i| format!("spread-{i}")).collect();
    let links: Vec<Value> = spread
        .iter()
        .map(|code| json!({ "target_url": format!("https://dest.example/{code}"), "code": code }))
        .chain([json!({ "target_url": "https://dest.example/hot", "code": "hot" })])
        .collect();
    for chunk in links.chunks(500) {
        w.origin.create_bulk(&w.key, chunk.to_vec()).await;
    }
    poll("every link is published")
        .within(Duration::from_secs(120))
        .every(Duration::from_millis(100))
        .until_true(|| async {
            w.origin
                .metric_sum("hop_outbox_pending{lane=\"normal\"}")
                .await
                == 0
        })
        .await;
    // One visitor's clicks are counted up to 60 a minute: the visits come from 25
    // loopback addresses per shape (`wrangler dev` takes the visitor's address from the
    // connection), 40 each.
    let visitors = |shape: u8| -> Vec<reqwest::Client> {
        (1..=25)
            .map(|i| {
                reqwest::Client::builder()
                    .redirect(reqwest::redirect::Policy::none())
                    .local_address(std::net::IpAddr::from([127, 0, shape, i]))
                    .build()
                    .expect("a visitor's client")
            })
            .collect()
    };
    for (shape, codes, visitors) in [
        ("one hot link", vec!["hot".to_owned(); VISITS], visitors(1)),
        ("1,000 links, one visit each", spread, visitors(2)),
    ] {
        let (clicks_before, messages_before) = deliveries(&w.edge.log());
        let started = Instant::now();
        for (n, chunk) in codes.chunks(50).enumerate() {
            let mut visits = tokio::task::JoinSet::new();
            for (i, code) in chunk.iter().enumerate() {
                let req = visitors[(n * 50 + i) % visitors.len()]
                    .get(w.edge.url(&format!("/{code}")))
                    .header("host", "s.example")
                    .header("user-agent", HUMAN_UA);
                visits.spawn(async move { req.send().await.expect("visit").status() });
            }
            while let Some(status) = visits.join_next().await {
                assert_eq!(status.expect("visit task"), reqwest::StatusCode::FOUND);
            }
        }
        let took = started.elapsed();
        let (clicks, messages) = poll(format!("{shape}: every click is delivered"))
            .within(Duration::from_secs(60))
            .every(Duration::from_millis(100))
            .explain(|| {
                let log = w.edge.log();
                let (clicks, _) = deliveries(&log);
                format!(
                    "{} of {VISITS} clicks delivered:\n{log}",
                    clicks - clicks_before
                )
            })
            .until(|| async {
                let (clicks, messages) = deliveries(&w.edge.log());
                if clicks >= clicks_before + VISITS as u64 {
                    Some((clicks - clicks_before, messages - messages_before))
                } else {
                    None
                }
            })
            .await;
        println!(
            "{shape}: {VISITS} visits in {} ms took {messages} queue messages",
            took.as_millis()
        );
        assert_eq!(clicks, VISITS as u64, "{shape}: every click, once");
        // A hot link: a message a window (a second) of visits, and a window begun on
        // either side. Spread: the budget.
        let most = match shape {
            "one hot link" => took.as_secs() + 2,
            _ => 50,
        };
        assert!(
            messages <= most,
            "{shape}: {messages} messages for {VISITS} visits in {took:?}"
        );
    }
}

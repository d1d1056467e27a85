//! Hostile clients against a real listener: oversized heads, slow and idle connections,
//! floods past the in-flight cap, oversized bodies, starved pools. Each test is the
//! attack; each assertion is what the attacker gets instead of the origin's resources.

use crate::common::{app_state_with, TestDb};
use hop_e2e::poll;
use origin_api::AppState;
use std::net::SocketAddr;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// An origin served on a random port of loopback, as `hop-origin serve` serves it.
struct Served {
    addr: SocketAddr,
    state: AppState,
    _stop: tokio::sync::oneshot::Sender<()>,
}

async fn serve(t: &TestDb, flags: &[&str]) -> Served {
    let state = app_state_with(t, flags);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("address");
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(origin_api::serve(listener, state.clone(), async {
        let _ = stopped.await;
    }));
    Served {
        addr,
        state,
        _stop: stop,
    }
}

impl Served {
    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// A new API key of `acme`: its record (for its id) and its token.
    async fn key(&self) -> (origin_api::model::ApiKey, String) {
        let (k, token) =
            origin_api::api_keys::issue("acme", "k", &origin_api::api_keys::Grant::default(), 0)
                .expect("key");
        origin_api::store::api_keys::insert(self.state.db(), &k)
            .await
            .expect("insert key");
        (k, token)
    }
}

/// Everything the server sends until it closes the connection, or `None` if it is still
/// open after `limit` (the attack held it).
async fn read_until_closed(stream: &mut TcpStream, limit: Duration) -> Option<String> {
    let mut got = Vec::new();
    let read = tokio::time::timeout(limit, async {
        let mut buf = [0u8; 4096];
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => got.extend_from_slice(&buf[..n]),
            }
        }
    })
    .await;
    read.ok()
        .map(|()| String::from_utf8_lossy(&got).into_owned())
}

/// The status line's code of a raw response.
fn status_of(raw: &str) -> Option<u16> {
    raw.split_whitespace().nth(1)?.parse().ok()
}

#[tokio::test]
async fn a_head_past_16_kib_is_refused_with_431() {
    let t = TestDb::sqlite().await;
    let s = serve(&t, &[]).await;
    let client = reqwest::Client::new();
    // Well under hyper's own 400 KB: without a limit of Hop's, this is served.
    let res = client
        .get(s.url("/healthz"))
        .header("x-junk", "a".repeat(20 * 1024))
        .send()
        .await
        .expect("an answer");
    assert_eq!(res.status(), 431);
    // A head of ordinary size still gets through.
    let res = client
        .get(s.url("/healthz"))
        .header("user-agent", "a".repeat(4 * 1024))
        .send()
        .await
        .expect("an answer");
    assert_eq!(res.status(), 200);
    t.cleanup().await;
}

#[tokio::test]
async fn a_client_trickling_its_head_is_cut_off_at_the_deadline() {
    let t = TestDb::sqlite().await;
    let s = serve(&t, &["--header-read-timeout", "1"]).await;
    let mut slow = TcpStream::connect(s.addr).await.expect("connect");
    slow.write_all(b"GET /healthz HTTP/1.1\r\nHost: s.example\r\nX-Slow: ")
        .await
        .expect("write");
    // One byte now and then, never the end of the head: the deadline counts from the
    // start of the head, so trickling does not extend it.
    let trickle = async {
        loop {
            if slow.write_all(b"a").await.is_err() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    };
    let cut = tokio::time::timeout(Duration::from_secs(10), trickle).await;
    assert!(cut.is_ok(), "the server kept a trickling client for 10 s");
    // Meanwhile, and after, everyone else is served.
    let res = reqwest::get(s.url("/healthz")).await.expect("healthz");
    assert_eq!(res.status(), 200);
    t.cleanup().await;
}

#[tokio::test]
async fn an_idle_keep_alive_connection_is_closed() {
    let t = TestDb::sqlite().await;
    let s = serve(&t, &["--header-read-timeout", "1"]).await;
    let mut idle = TcpStream::connect(s.addr).await.expect("connect");
    idle.write_all(b"GET /healthz HTTP/1.1\r\nHost: s.example\r\n\r\n")
        .await
        .expect("write");
    // The answer, then nothing more is asked: the connection is closed, not kept.
    let got = read_until_closed(&mut idle, Duration::from_secs(10))
        .await
        .expect("an idle connection was kept open for 10 s");
    assert_eq!(status_of(&got), Some(200), "{got}");
    t.cleanup().await;
}

/// A connection whose request holds an in-flight slot: its body is announced and never
/// sent.
async fn hold_a_slot(s: &Served, token: &str) -> TcpStream {
    let mut holder = TcpStream::connect(s.addr).await.expect("connect");
    holder
        .write_all(
            format!(
                "POST /v1/links HTTP/1.1\r\nHost: s.example\r\nAuthorization: Bearer {token}\r\n\
                 Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{{"
            )
            .as_bytes(),
        )
        .await
        .expect("write");
    holder
}

#[tokio::test]
async fn past_the_in_flight_cap_a_request_gets_503_at_once() {
    let t = TestDb::sqlite().await;
    let s = serve(&t, &["--max-in-flight", "1"]).await;
    let (_, token) = s.key().await;
    let holder = hold_a_slot(&s, &token).await;
    // Whatever comes next waits for no one: 503 and when to come back.
    // The holder's head may not have been read yet: ask again (at once) until it has.
    let res = poll("past the cap, a request gets 503")
        .within(Duration::from_secs(10))
        .every(Duration::ZERO)
        .until(|| async {
            let res = reqwest::get(s.url("/abc1234")).await.expect("an answer");
            (res.status() == 503).then_some(res)
        })
        .await;
    assert_eq!(
        res.headers().get("retry-after").map(|v| v.as_bytes()),
        Some(&b"1"[..])
    );
    assert_eq!(res.text().await.expect("body"), origin_api::server::BUSY);
    // Once the holder goes, the slot is free again.
    drop(holder);
    // This wait had no deadline: the test's own bound for the cap filling (10 s) is
    // generous for a slot freed by a closed connection.
    let res = poll("the slot is free again")
        .within(Duration::from_secs(10))
        .every(Duration::ZERO)
        .until(|| async {
            let res = reqwest::get(s.url("/healthz")).await.expect("an answer");
            (res.status() != 503).then_some(res)
        })
        .await;
    assert_eq!(res.status(), 200);
    t.cleanup().await;
}

/// The cap bounds what may wait: a visit memory can answer holds nothing while it is
/// answered, and goes on being served when the cap is full.
#[tokio::test]
async fn past_the_in_flight_cap_a_link_held_in_memory_is_still_served() {
    let t = TestDb::sqlite().await;
    let s = serve(&t, &["--max-in-flight", "1"]).await;
    let (_, token) = s.key().await;
    // No redirects followed: the answer itself is what is checked.
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client");
    let res = client
        .post(s.url("/v1/links"))
        .bearer_auth(&token)
        .json(
            &serde_json::json!({ "target_url": "https://dest.example/kept", "code": "kept-link" }),
        )
        .send()
        .await
        .expect("create");
    assert_eq!(res.status(), 201);
    // Visited once, so memory holds the link, the domain's settings and the bans.
    let res = client.get(s.url("/kept-link")).send().await.expect("visit");
    assert_eq!(res.status(), 302);
    // The only slot is taken.
    let holder = hold_a_slot(&s, &token).await;
    poll("the cap fills")
        .within(Duration::from_secs(10))
        .every(Duration::ZERO)
        .until_true(|| async {
            let res = client
                .get(s.url("/healthz"))
                .send()
                .await
                .expect("an answer");
            res.status() == 503
        })
        .await;
    // The cap is full, and the link in memory is served all the same.
    let res = client.get(s.url("/kept-link")).send().await.expect("visit");
    assert_eq!(res.status(), 302);
    assert_eq!(
        res.headers().get("location").map(|v| v.as_bytes()),
        Some(&b"https://dest.example/kept"[..])
    );
    drop(holder);
    t.cleanup().await;
}

/// A bulk body of `n` realistic links (a target of about 300 bytes, a title, tags).
fn realistic_bulk(n: usize) -> String {
    let links: Vec<serde_json::Value> = (0..n)
        .map(|i| {
            serde_json::json!({
                "target_url": format!("https://shop.example/campaigns/winter-2026/landing?item={i}&utm_source=newsletter&utm_medium=email&utm_campaign=winter-sale-{i}&ref={}", "x".repeat(150)),
                "title": format!("Winter sale, item {i}: boots, coats and everything warm"),
                "tags": ["winter", "newsletter", "2026"],
            })
        })
        .collect();
    serde_json::json!({ "links": links }).to_string()
}

#[tokio::test]
async fn body_limits_are_per_route_and_the_413_names_the_real_one() {
    let t = TestDb::sqlite().await;
    let s = serve(&t, &[]).await;
    let (_, token) = s.key().await;
    let client = reqwest::Client::new();
    let post = |path: &str, body: String| {
        client
            .post(s.url(path))
            .bearer_auth(&token)
            .header("content-type", "application/json")
            .body(body)
    };
    // 10,000 realistic links: well over axum's default of 2 MiB.
    let bulk = realistic_bulk(10_000);
    assert!(bulk.len() > 2 << 20, "{} bytes", bulk.len());
    let res = post("/v1/links/bulk", bulk).send().await.expect("bulk");
    assert_eq!(res.status(), 200);
    let results: serde_json::Value = res.json().await.expect("json");
    let results = results["results"].as_array().expect("results");
    assert_eq!(results.len(), 10_000);
    assert!(results.iter().all(|r| r["ok"] == true), "{:?}", results[0]);

    // Past the limit: 413, and the detail says which limit.
    let huge = format!(
        "{{\"links\":[{}]}}",
        vec![
            format!(
                "{{\"target_url\":\"https://e.example/{}\"}}",
                "a".repeat(2000)
            );
            9_000
        ]
        .join(",")
    );
    let res = post("/v1/links/bulk", huge).send().await.expect("bulk");
    assert_eq!(res.status(), 413);
    let problem: serde_json::Value = res.json().await.expect("problem");
    let limit = origin_api::routes::BULK_BODY_LIMIT.to_string();
    assert!(
        problem["detail"]
            .as_str()
            .is_some_and(|d| d.contains(&limit)),
        "{problem}"
    );
    // A single create is small: 100 KB is refused, naming its own limit.
    let big = format!(
        "{{\"target_url\":\"https://e.example/\",\"title\":\"{}\"}}",
        "a".repeat(100_000)
    );
    let res = post("/v1/links", big).send().await.expect("create");
    assert_eq!(res.status(), 413);
    let problem: serde_json::Value = res.json().await.expect("problem");
    let limit = origin_api::routes::SMALL_BODY_LIMIT.to_string();
    assert!(
        problem["detail"]
            .as_str()
            .is_some_and(|d| d.contains(&limit)),
        "{problem}"
    );
    t.cleanup().await;
}

#[tokio::test]
async fn a_starved_api_pool_does_not_stop_redirects_or_authentication() {
    for t in TestDb::all("starved-pool").await {
        let s = serve(&t, &[]).await;
        let (_, token) = s.key().await;
        let client = no_redirects();
        let res = client
            .post(s.url("/v1/links"))
            .bearer_auth(&token)
            .json(&serde_json::json!({"target_url": "https://e.example/", "code": "held-up"}))
            .send()
            .await
            .expect("create");
        assert_eq!(res.status(), 201);
        // Everything the API's pool has, taken (a slow import, a stuck report): taken
        // until the pool has nothing more to give (its background tasks hold a few).
        let mut held = Vec::new();
        let wait = Duration::from_secs(1);
        match s.state.db() {
            origin_api::db::Db::Sqlite(pools) => {
                while let Ok(Ok(c)) = tokio::time::timeout(wait, pools.read.acquire()).await {
                    held.push(Held::Sqlite(c));
                }
            }
            origin_api::db::Db::Postgres(pool) => {
                while let Ok(Ok(c)) = tokio::time::timeout(wait, pool.acquire()).await {
                    held.push(Held::Postgres(c));
                }
            }
        }
        assert!(!held.is_empty());
        s.state.cache.forget_all();
        let limit = Duration::from_secs(10);
        // A visit still reads its link (it is not in memory) through its own pool.
        let res = tokio::time::timeout(limit, client.get(s.url("/held-up")).send())
            .await
            .expect("the redirect waited on the API's pool")
            .expect("redirect");
        assert_eq!(res.status(), 302, "{}", t.kind());
        // A guessed key is still told no (its own pool), rather than left waiting.
        let res = tokio::time::timeout(
            limit,
            client
                .get(s.url("/v1/links"))
                .bearer_auth(format!("{}x", &token[..token.len() - 1]))
                .send(),
        )
        .await
        .expect("authentication waited on the API's pool")
        .expect("list");
        assert_eq!(res.status(), 401, "{}", t.kind());
        drop(held);
        t.cleanup().await;
    }
}

/// A client that shows redirects instead of following them.
fn no_redirects() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client")
}

/// Holds a pooled connection of either kind until dropped.
enum Held {
    #[allow(dead_code)]
    Sqlite(sqlx::pool::PoolConnection<sqlx::Sqlite>),
    #[allow(dead_code)]
    Postgres(sqlx::pool::PoolConnection<sqlx::Postgres>),
}

#[tokio::test]
async fn a_visit_that_cannot_get_a_connection_is_told_to_retry() {
    let t = TestDb::sqlite().await;
    let s = serve(&t, &[]).await;
    let origin_api::db::Db::Sqlite(pools) = s.state.redirect_pool() else {
        unreachable!("a SQLite test");
    };
    let mut held = Vec::new();
    for _ in 0..pools.read.options().get_max_connections() {
        held.push(pools.read.acquire().await.expect("acquire"));
    }
    // Every connection of the redirect path is taken: the visit waits the pool's
    // short wait, not 30 s, and is told when to come back.
    let res = tokio::time::timeout(
        Duration::from_secs(10),
        reqwest::Client::new().get(s.url("/unknown1")).send(),
    )
    .await
    .expect("the visit waited past 10 s")
    .expect("visit");
    assert_eq!(res.status(), 503);
    assert!(res.headers().contains_key("retry-after"));
    drop(held);
    t.cleanup().await;
}

#[tokio::test]
async fn hosts_this_origin_does_not_serve_cost_no_database_read() {
    for t in TestDb::all("unknown-hosts").await {
        let s = serve(&t, &[]).await;
        let (_, token) = s.key().await;
        let client = no_redirects();
        crate::common::register(&t.db, "other.example").await;
        for (domain, code) in [("s.example", "on-default"), ("other.example", "on-other")] {
            let res = client
                .post(s.url("/v1/links"))
                .bearer_auth(&token)
                .json(&serde_json::json!({
                    "target_url": "https://e.example/", "code": code, "domain": domain
                }))
                .send()
                .await
                .expect("create");
            assert_eq!(res.status(), 201);
        }
        let visit = |host: String, path: &'static str| raw_get(s.addr, host, path);
        // The served hosts are learned once...
        assert_eq!(visit("other.example".into(), "/on-other").await, Some(302));
        // ...and from then on, no visit on any other host reaches the database: with the
        // redirect path's pool closed, they are all still answered.
        if let origin_api::db::Db::Sqlite(p) = s.state.redirect_pool() {
            p.read.close().await;
        } else if let origin_api::db::Db::Postgres(p) = s.state.redirect_pool() {
            p.close().await;
        }
        for i in 0..200 {
            let host = format!("scan-{i}.attacker.example");
            assert_eq!(visit(host, "/on-other").await, Some(404), "{}", t.kind());
        }
        for junk in [
            "a_b.example",
            "x/y",
            &"a".repeat(300),
            &format!("{}.example", "a".repeat(64)),
        ] {
            assert_eq!(
                visit(junk.to_owned(), "/on-other").await,
                Some(404),
                "{junk:.30}"
            );
        }
        // The links held in memory still redirect.
        assert_eq!(visit("other.example".into(), "/on-other").await, Some(302));
        t.cleanup().await;
    }
}

/// The status of a `GET path` with this `Host`, sent as raw bytes (a client library
/// would refuse most hostile hosts before sending them).
async fn raw_get(addr: SocketAddr, host: String, path: &str) -> Option<u16> {
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    stream
        .write_all(
            format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n").as_bytes(),
        )
        .await
        .expect("write");
    let got = read_until_closed(&mut stream, Duration::from_secs(10))
        .await
        .expect("an answer");
    status_of(&got)
}

#[tokio::test]
async fn metrics_are_not_served_to_the_public_without_the_token() {
    let t = TestDb::sqlite().await;
    let s = serve(&t, &[]).await;
    let client = no_redirects();
    let res = client.get(s.url("/metrics")).send().await.expect("metrics");
    assert_eq!(res.status(), 401);
    let res = client
        .get(s.url("/metrics"))
        .bearer_auth("not-the-metrics-token")
        .send()
        .await
        .expect("metrics");
    assert_eq!(res.status(), 401);
    let res = client
        .get(s.url("/metrics"))
        .bearer_auth(crate::common::METRICS_TOKEN)
        .send()
        .await
        .expect("metrics");
    assert_eq!(res.status(), 200);
    assert!(res
        .text()
        .await
        .expect("text")
        .contains("hop_redirects_total"));

    // Without a token configured the public listener has no /metrics at all; the
    // metrics listener serves it to whoever reaches it (loopback, by default).
    let mut state = app_state_with(&t, &[]);
    let mut settings = state.settings.clone();
    settings.secrets.metrics_token = None;
    state = AppState::new(state.db().clone(), settings);
    let public = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let private = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let (public_addr, private_addr) = (
        public.local_addr().expect("addr"),
        private.local_addr().expect("addr"),
    );
    let (_stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(origin_api::serve_with_metrics(
        public,
        Some(private),
        state,
        async {
            let _ = stopped.await;
        },
    ));
    let res = client
        .get(format!("http://{public_addr}/metrics"))
        .send()
        .await
        .expect("metrics");
    assert_eq!(res.status(), 404);
    let res = client
        .get(format!("http://{private_addr}/metrics"))
        .send()
        .await
        .expect("metrics");
    assert_eq!(res.status(), 200);
    assert!(res
        .text()
        .await
        .expect("text")
        .contains("hop_redirects_total"));
    // The metrics listener serves nothing else.
    let res = client
        .get(format!("http://{private_addr}/v1/links"))
        .send()
        .await
        .expect("links");
    assert_eq!(res.status(), 404);
    t.cleanup().await;
}

#[tokio::test]
async fn links_to_private_addresses_and_back_to_the_shortener_are_refused() {
    for (api, t) in
        crate::common::apis_with("target-policy", &["--listen", "93.184.216.34:8080"]).await
    {
        let token = api.key("acme", false).await;
        // Another domain this shortener serves, with a link.
        crate::common::register(&t.db, "go.example").await;
        let res = api
            .create(
                &token,
                serde_json::json!({"target_url": "https://e.example/", "domain": "go.example", "code": "other"}),
            )
            .await;
        assert_eq!(res.status, 201, "{}", res.text);
        let refused = |target: &'static str, says: &'static str| (target, says);
        for (target, says) in [
            refused("http://169.254.169.254/latest/meta-data/", "link-local"),
            refused("http://2852039166/", "link-local"),
            refused("http://0x7f.1/", "loopback"),
            refused("http://[::1]/", "loopback"),
            refused("http://[::ffff:10.0.0.1]/", "private"),
            refused("http://10.1.2.3/admin", "private"),
            refused("http://localhost:8080/", "inside a network"),
            refused("http://printer.local/", "inside a network"),
            refused("http://wiki/", "single-label"),
            // Back to the shortener: a trailing dot, another served domain, its address.
            refused("https://s.example./x", "loop"),
            refused("https://S.EXAMPLE/x", "loop"),
            refused("https://go.example/other", "loop"),
            refused("http://93.184.216.34:8080/abc", "loop"),
        ] {
            let res = api
                .create(&token, serde_json::json!({ "target_url": target }))
                .await;
            assert_eq!(res.status, 422, "{target}: {}", res.text);
            assert_eq!(res.body["field"], "target_url", "{target}");
            let detail = res.body["detail"].as_str().unwrap_or_default();
            assert!(detail.contains(says), "{target}: {detail}");
        }
        // The same checks guard a change and a bulk item.
        let res = api
            .create(
                &token,
                serde_json::json!({ "target_url": "https://public.example/" }),
            )
            .await;
        assert_eq!(res.status, 201);
        let code = res.body["code"].as_str().expect("code").to_owned();
        let res = api
            .send(
                axum::http::Request::patch(format!("/v1/links/s.example/{code}"))
                    .header("authorization", format!("Bearer {token}"))
                    .header("content-type", "application/json")
                    .header("if-match", "\"1\"")
                    .body(axum::body::Body::from(
                        r#"{"target_url":"http://127.0.0.1/"}"#,
                    ))
                    .expect("request"),
            )
            .await;
        assert_eq!(res.status, 422, "{}", res.text);
        let res = api
            .post_json(
                &token,
                "/v1/links/bulk",
                &serde_json::json!({"links": [{"target_url": "http://192.168.0.1/"}, {"target_url": "https://ok.example/"}]}),
            )
            .await;
        assert_eq!(res.body["results"][0]["ok"], false, "{}", res.text);
        assert_eq!(res.body["results"][1]["ok"], true, "{}", res.text);
        t.cleanup().await;
    }
}

#[tokio::test]
async fn an_intranet_deployment_allows_its_own_hosts_and_nothing_else() {
    for (api, t) in crate::common::apis_with(
        "target-allowlist",
        &["--allow-target-hosts", "wiki,.corp.example,10.0.0.0/8"],
    )
    .await
    {
        let token = api.key("acme", false).await;
        for allowed in [
            "http://wiki/page",
            "http://jira.corp.example/browse/X-1",
            "http://10.20.30.40/",
        ] {
            let res = api
                .create(&token, serde_json::json!({ "target_url": allowed }))
                .await;
            assert_eq!(res.status, 201, "{allowed}: {}", res.text);
        }
        for refused in [
            "http://192.168.1.1/",
            "http://169.254.169.254/",
            "http://other/",
        ] {
            let res = api
                .create(&token, serde_json::json!({ "target_url": refused }))
                .await;
            assert_eq!(res.status, 422, "{refused}: {}", res.text);
        }
        t.cleanup().await;
    }
}

#[tokio::test]
async fn guessed_keys_are_throttled_per_client_and_a_valid_key_is_not() {
    let t = TestDb::sqlite().await;
    let s = serve(
        &t,
        &[
            "--auth-failures-per-minute",
            "5",
            "--trusted-proxies",
            "127.0.0.1",
        ],
    )
    .await;
    let (k, token) = s.key().await;
    let client = no_redirects();
    let list = |token: String, client_ip: &'static str| {
        client
            .get(s.url("/v1/links"))
            .bearer_auth(token)
            .header("x-forwarded-for", client_ip)
            .send()
    };
    // The marketer's key works (and is held from now on).
    assert_eq!(
        list(token.clone(), "198.51.100.1")
            .await
            .expect("list")
            .status(),
        200
    );
    // An attacker guesses well-formed tokens: each costs a read, until its minute is used.
    // Wrong secrets for the real key id, and made-up key ids, alternately.
    let guess = |i: usize| {
        if i.is_multiple_of(2) {
            format!("hop_{}_{:064x}", &k.key_id, i)
        } else {
            format!("hop_{:016x}_{:064x}", i, i)
        }
    };
    for i in 0..5 {
        let res = list(guess(i), "203.0.113.66").await.expect("guess");
        assert_eq!(res.status(), 401);
    }
    let res = list(guess(5), "203.0.113.66").await.expect("guess");
    assert_eq!(res.status(), 429);
    let wait: u64 = res
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok()?.parse().ok())
        .expect("Retry-After");
    assert!((1..=12).contains(&wait), "{wait}");
    // The valid key, from anywhere (even the attacker's address), is not held back.
    assert_eq!(
        list(token.clone(), "203.0.113.66")
            .await
            .expect("list")
            .status(),
        200
    );
    assert_eq!(
        list(token.clone(), "198.51.100.1")
            .await
            .expect("list")
            .status(),
        200
    );
    // Another client is not held back either.
    assert_eq!(
        list(guess(7), "192.0.2.200").await.expect("guess").status(),
        401
    );
    t.cleanup().await;
}

#[tokio::test]
async fn forwarding_headers_from_strangers_are_not_believed() {
    let t = TestDb::sqlite().await;
    // No trusted proxy: every request below comes from 127.0.0.1, whatever it claims.
    let s = serve(&t, &["--auth-failures-per-minute", "3"]).await;
    let client = no_redirects();
    for i in 0..3 {
        let res = client
            .get(s.url("/v1/links"))
            .bearer_auth(format!("hop_{i:016x}_{}", "1".repeat(64)))
            .header("x-forwarded-for", format!("198.51.100.{i}"))
            .send()
            .await
            .expect("guess");
        assert_eq!(res.status(), 401);
    }
    let res = client
        .get(s.url("/v1/links"))
        .bearer_auth(format!("hop_{:016x}_{}", 9, "1".repeat(64)))
        .header("x-forwarded-for", "198.51.100.99")
        .send()
        .await
        .expect("guess");
    assert_eq!(
        res.status(),
        429,
        "a forged X-Forwarded-For bought a new budget"
    );
    t.cleanup().await;
}

#[tokio::test]
async fn text_that_would_deceive_or_break_a_reader_is_refused() {
    for (api, t) in crate::common::apis("hostile-text").await {
        let token = api.key("acme", false).await;
        for (body, field) in [
            (
                serde_json::json!({"target_url": "https://e.example/", "title": "pay \u{202E}moc.elpmaxe"}),
                "title",
            ),
            (
                serde_json::json!({"target_url": "https://e.example/", "title": "line\nbreak"}),
                "title",
            ),
            (
                serde_json::json!({"target_url": "https://e.example/", "tags": ["a,b"]}),
                "tags",
            ),
            (
                serde_json::json!({"target_url": "https://e.example/", "tags": ["esc\u{1b}[31m"]}),
                "tags",
            ),
            (
                serde_json::json!({"target_url": "https://e.example/", "tags": ["\u{2066}x"]}),
                "tags",
            ),
        ] {
            let res = api.create(&token, body.clone()).await;
            assert_eq!(res.status, 422, "{body}: {}", res.text);
            assert_eq!(res.body["field"], field, "{body}");
        }
        // A cursor no page gave out, past what an id can be: 422, not 500.
        let res = api
            .call_as(&token, "GET", "/v1/links?cursor=1.9223372036854775808")
            .await;
        assert_eq!(res.status, 422, "{}", res.text);
        assert_eq!(res.body["field"], "cursor");
        t.cleanup().await;
    }
}

#[tokio::test]
async fn a_request_whose_body_never_comes_is_cut_off_when_busy_too_long() {
    let t = TestDb::sqlite().await;
    let state = app_state_with(&t, &[]);
    let (k, token) =
        origin_api::api_keys::issue("acme", "k", &origin_api::api_keys::Grant::default(), 0)
            .expect("key");
    origin_api::store::api_keys::insert(state.db(), &k)
        .await
        .expect("insert key");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("address");
    let limits = origin_api::server::Limits {
        max_busy: Duration::from_secs(1),
        ..Default::default()
    };
    let (_stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(origin_api::server::serve(
        listener,
        origin_api::routes::router(state),
        limits,
        async {
            let _ = stopped.await;
        },
    ));
    // The head arrives, the body it announces never does: without the watchdog this
    // holds the connection until the API's 30 s request timeout (and a client that
    // never reads its answer, for ever).
    let mut stuck = TcpStream::connect(addr).await.expect("connect");
    let head = format!(
        "POST /v1/links HTTP/1.1\r\nHost: s.example\r\nContent-Type: application/json\r\n\
         Authorization: Bearer {token}\r\nContent-Length: 100\r\n\r\n{{"
    );
    stuck.write_all(head.as_bytes()).await.expect("write");
    let got = read_until_closed(&mut stuck, Duration::from_secs(10)).await;
    // Closed without an answer: the request never completed.
    assert_eq!(
        got.as_deref(),
        Some(""),
        "a busy connection was held for 10 s"
    );
    t.cleanup().await;
}

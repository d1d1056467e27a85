//! Hostile requests, sent byte for byte to the real origin and to the real `wrangler dev`
//! wired to it: oversized and malformed heads, junk hosts, forged tokens, links to
//! private addresses and back to the shortener, deceptive text, oversized bodies,
//! request smuggling, path tricks, forged sync pushes. Each gets its exact answer.

use hop_e2e::{client, poll, wait_published, Origin, Wired, SYNC_TOKEN};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// One hostile request and the status it must get.
struct Case {
    name: &'static str,
    request: Vec<u8>,
    status: u16,
    /// Text the answer must contain (a header, a problem's field).
    contains: Option<&'static str>,
}

/// Sends `request` on a new connection and reads the whole answer (the server closes:
/// every request says `Connection: close`, or is refused outright).
async fn send(port: u16, request: &[u8]) -> String {
    let mut stream = TcpStream::connect(("127.0.0.1", port))
        .await
        .expect("connect");
    let _ = stream.write_all(request).await;
    let mut got = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(20), stream.read_to_end(&mut got)).await;
    String::from_utf8_lossy(&got).into_owned()
}

fn status_of(raw: &str) -> Option<u16> {
    raw.split_whitespace().nth(1)?.parse().ok()
}

fn get(path: &str, host: &str, extra: &str) -> Vec<u8> {
    format!("GET {path} HTTP/1.1\r\nHost: {host}\r\n{extra}Connection: close\r\n\r\n").into_bytes()
}

fn post(path: &str, auth: &str, content_type: &str, body: &str) -> Vec<u8> {
    format!(
        "POST {path} HTTP/1.1\r\nHost: s.example\r\nAuthorization: Bearer {auth}\r\n\
         Content-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

fn case(name: &'static str, request: Vec<u8>, status: u16) -> Case {
    Case {
        name,
        request,
        status,
        contains: None,
    }
}

fn case_with(name: &'static str, request: Vec<u8>, status: u16, contains: &'static str) -> Case {
    Case {
        name,
        request,
        status,
        contains: Some(contains),
    }
}

async fn run(port: u16, cases: Vec<Case>) -> usize {
    let mut wrong = Vec::new();
    let n = cases.len();
    for c in cases {
        let answer = send(port, &c.request).await;
        let ok = status_of(&answer) == Some(c.status)
            // Header names in any case (workerd writes them capitalized).
            && c.contains.is_none_or(|text| {
                answer
                    .to_ascii_lowercase()
                    .contains(&text.to_ascii_lowercase())
            });
        if !ok {
            wrong.push(format!(
                "{}: expected {}{}, got:\n{}",
                c.name,
                c.status,
                c.contains
                    .map(|t| format!(" with {t:?}"))
                    .unwrap_or_default(),
                answer.chars().take(600).collect::<String>()
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n\n"));
    n
}

#[tokio::test]
async fn every_hostile_request_gets_its_exact_answer_at_the_origin_and_the_edge() {
    let Wired {
        edge,
        origin,
        origin_port,
        key,
        dir: _dir,
        ..
    } = Wired::start("e2e", false).await;
    let edge_port: u16 = edge
        .url("")
        .rsplit(':')
        .next()
        .and_then(|p| p.trim_end_matches('/').parse().ok())
        .expect("edge port");

    origin
        .create(
            &key,
            serde_json::json!({"target_url": "https://dest.example/ok", "code": "known-one"}),
        )
        .await;
    wait_published(&origin.url(""), &key, "s.example", "known-one").await;

    let junk_token = format!("hop_{:016x}_{}", 7, "0".repeat(64));
    let link = |target: &str| format!("{{\"target_url\":\"{target}\"}}");
    let json = "application/json";
    let big_head = format!("X-Junk: {}\r\n", "a".repeat(20 * 1024));
    let long_host = format!("{}.example", "a".repeat(300));
    let origin_cases = vec![
        // Heads.
        case("a 20 KiB head", get("/known-one", "s.example", &big_head), 431),
        case("a host longer than DNS allows", get("/known-one", &long_host, ""), 404),
        case("a host with an underscore", get("/known-one", "a_b.example", ""), 404),
        case("a host this origin does not serve", get("/known-one", "evil.example", ""), 404),
        case_with("an address: the default domain", get("/known-one", "127.0.0.1", ""), 302, "dest.example/ok"),
        case_with("the link on its own domain", get("/known-one", "S.EXAMPLE.", ""), 302, "dest.example/ok"),
        case("a control byte in a header", b"GET /known-one HTTP/1.1\r\nHost: s.example\r\nX-A: a\x01b\r\nConnection: close\r\n\r\n".to_vec(), 400),
        case("an unknown HTTP version", b"GET /known-one HTTP/9.9\r\nHost: s.example\r\nConnection: close\r\n\r\n".to_vec(), 400),
        case("request smuggling: two lengths", b"POST /v1/links HTTP/1.1\r\nHost: s.example\r\nContent-Length: 4\r\nContent-Length: 40\r\nConnection: close\r\n\r\nabcd".to_vec(), 400),
        // Paths and methods.
        case("a path climbing out", get("/../../etc/passwd", "s.example", ""), 404),
        case("an encoded NUL", get("/%00", "s.example", ""), 404),
        case("a code too long to be one", get(&format!("/{}", "a".repeat(200)), "s.example", ""), 404),
        case_with("another method on a link", b"OPTIONS /known-one HTTP/1.1\r\nHost: s.example\r\nConnection: close\r\n\r\n".to_vec(), 405, "allow"),
        // Operational endpoints.
        case("metrics without the token", get("/metrics", "s.example", ""), 401),
        case("metrics with another token", get("/metrics", "s.example", "Authorization: Bearer not-the-metrics-token\r\n"), 401),
        // Credentials.
        case("the API without a key", get("/v1/links", "s.example", ""), 401),
        case("a malformed key", get("/v1/links", "s.example", "Authorization: Bearer hop_nonsense\r\n"), 401),
        case("a well-formed guessed key", get("/v1/links", "s.example", &format!("Authorization: Bearer {junk_token}\r\n")), 401),
        case("the edge's endpoint without its token", get("/v1/edge/resolve/s.example/known-one", "s.example", ""), 401),
        case("clicks with a forged token", post("/v1/edge/clicks", "forged-edge-token-0123", json, "{\"events\":[]}"), 401),
        // Targets no public shortener accepts.
        case_with("cloud metadata", post("/v1/links", &key, json, &link("http://169.254.169.254/latest/meta-data/")), 422, "link-local"),
        case_with("metadata as one number", post("/v1/links", &key, json, &link("http://2852039166/")), 422, "link-local"),
        case_with("loopback in hex", post("/v1/links", &key, json, &link("http://0x7f.1/")), 422, "loopback"),
        case_with("IPv6 loopback", post("/v1/links", &key, json, &link("http://[::1]/")), 422, "loopback"),
        case_with("a private address inside IPv6", post("/v1/links", &key, json, &link("http://[::ffff:10.0.0.1]/")), 422, "private"),
        case_with("localhost", post("/v1/links", &key, json, &link("http://localhost:8080/")), 422, "inside a network"),
        case_with("a single label", post("/v1/links", &key, json, &link("http://intranet/")), 422, "single-label"),
        case_with("a loop through a trailing dot", post("/v1/links", &key, json, &link("https://s.example./x")), 422, "loop"),
        case_with("a script", post("/v1/links", &key, json, &link("javascript:alert(1)")), 422, "target_url"),
        // Text and fields.
        case_with("a bidi override in a title", post("/v1/links", &key, json, "{\"target_url\":\"https://e.example/\",\"title\":\"pay \u{202E}moc.elpmaxe\"}"), 422, "\"field\":\"title\""),
        case_with("a comma in a tag", post("/v1/links", &key, json, "{\"target_url\":\"https://e.example/\",\"tags\":[\"a,b\"]}"), 422, "\"field\":\"tags\""),
        case_with("a cursor past any id", get("/v1/links?cursor=1.9223372036854775808", "s.example", &format!("Authorization: Bearer {key}\r\n")), 422, "\"field\":\"cursor\""),
        case_with("a ban id that is no number", b"DELETE /v1/bans/1e99 HTTP/1.1\r\nHost: s.example\r\nConnection: close\r\n\r\n".to_vec(), 401, "unauthorized"),
        // Bodies.
        case_with("a single create of 100 KB", post("/v1/links", &key, json, &format!("{{\"target_url\":\"https://e.example/\",\"title\":\"{}\"}}", "a".repeat(100_000))), 413, "65536"),
        case_with("a body announced past the limit", format!("POST /v1/links/bulk HTTP/1.1\r\nHost: s.example\r\nAuthorization: Bearer {key}\r\nContent-Type: application/json\r\nContent-Length: 999999999\r\nConnection: close\r\n\r\n").into_bytes(), 413, "16777216"),
        case("not JSON", post("/v1/links", &key, "text/plain", "target_url=x"), 415),
        case("malformed JSON", post("/v1/links", &key, json, "{\"target_url\":"), 400),
        case("an If-Match past any version", format!("PATCH /v1/links/s.example/known-one HTTP/1.1\r\nHost: s.example\r\nAuthorization: Bearer {key}\r\nIf-Match: \"99999999999999999999\"\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{{}}").into_bytes(), 400),
    ];
    let at_origin = run(origin_port, origin_cases).await;

    let sync = |token: &str, body: &str| {
        format!(
            "POST /_hop/sync HTTP/1.1\r\nHost: s.example\r\nAuthorization: Bearer {token}\r\n\
             Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .into_bytes()
    };
    let forged_item =
        r#"{"items":[{"key":"l:s.example/known-one","value":"{\"v\":9}","version":9}]}"#;
    let edge_cases = vec![
        case_with("a published link", get("/known-one", "s.example", ""), 302, "dest.example/ok"),
        case("a path climbing out", get("/../../etc/passwd", "s.example", ""), 404),
        case("an encoded NUL", get("/%00", "s.example", ""), 404),
        case("a code too long to be one", get(&format!("/{}", "a".repeat(200)), "s.example", ""), 404),
        case_with("another method", b"POST /known-one HTTP/1.1\r\nHost: s.example\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_vec(), 405, "allow"),
        case("a sync push without a token", sync("", forged_item), 401),
        case("a sync push with a forged token", sync("forged-sync-token-0123456789", forged_item), 401),
        case_with("a value that only carries a version", sync(SYNC_TOKEN, forged_item), 200, "refused"),
        case("the sync endpoint read", get("/_hop/sync", "s.example", ""), 405),
    ];
    let at_edge = run(edge_port, edge_cases).await;
    // The forged value was not written: the link still redirects.
    let res = edge.visit("known-one").await;
    assert_eq!(res.status(), 302);
    assert!(at_origin + at_edge >= 40, "{at_origin} + {at_edge}");
    println!("hostile requests: {at_origin} at the origin, {at_edge} at the edge, each answered as expected");
    drop(origin);
}

/// The visits of `code` the origin has counted (bots included).
async fn counted(origin: &Origin, key: &str, code: &str) -> i64 {
    let res = client()
        .get(origin.url(&format!(
            "/v1/links/s.example/{code}/stats?include_bots=true"
        )))
        .bearer_auth(key)
        .send()
        .await
        .expect("stats");
    let body: serde_json::Value = res.json().await.expect("stats body");
    body["totals"]["visits"].as_i64().unwrap_or(-1)
}

#[tokio::test]
async fn one_visitors_flood_is_answered_but_counted_only_up_to_its_budget() {
    let Wired {
        edge,
        origin,
        key,
        dir: _dir,
        ..
    } = Wired::start("e2e", false).await;
    for code in ["flooded-link", "marker-link"] {
        origin
            .create(
                &key,
                serde_json::json!({"target_url": "https://dest.example/", "code": code}),
            )
            .await;
        wait_published(&origin.url(""), &key, "s.example", code).await;
    }
    let visit = |code: &'static str, ip: &'static str| {
        client()
            .get(edge.url(&format!("/{code}")))
            .header("host", "s.example")
            .header("cf-connecting-ip", ip)
            .send()
    };
    // Minutes are the budget's windows: a flood that straddles one gets two budgets.
    let minute = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs() / 60)
            .unwrap_or_default()
    };
    let first_minute = minute();
    for _ in 0..150 {
        let res = visit("flooded-link", "203.0.113.77").await.expect("visit");
        assert_eq!(res.status(), 302, "every visit is still answered");
    }
    let windows = (minute() - first_minute + 1) as i64;
    // Someone else's visit, after the flood: once it is counted, the flood's are too
    // (the queue delivers in order).
    let res = visit("marker-link", "198.51.100.5").await.expect("visit");
    assert_eq!(res.status(), 302);
    poll("the marker's click arrives")
        .within(Duration::from_secs(90))
        .every(Duration::from_millis(200))
        .explain(|| edge.log())
        .until_true(|| async { counted(&origin, &key, "marker-link").await >= 1 })
        .await;
    let flood = counted(&origin, &key, "flooded-link").await;
    let budget = i64::from(shared::clicks::CLICKS_PER_VISITOR_MINUTE);
    println!("150 visits from one address: {flood} counted (budget {budget} a minute, {windows} minute(s))");
    assert!(
        (budget..=budget * windows).contains(&flood),
        "{flood} of 150 visits counted"
    );
}

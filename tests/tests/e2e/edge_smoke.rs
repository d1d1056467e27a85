//! What a visitor gets from the real edge worker under `wrangler dev`, for every kind of
//! record the origin can publish.

use hop_e2e::{client, Edge};
use reqwest::header::{ALLOW, CACHE_CONTROL, CONTENT_TYPE, LOCATION, RETRY_AFTER};
use reqwest::{Method, StatusCode};
use serde_json::json;

const DOMAIN: &str = "s.example";

fn record(target: &str, status: &str, extra: serde_json::Value) -> String {
    let mut rec = json!({ "t": target, "s": status, "v": 1 });
    if let (Some(rec), Some(extra)) = (rec.as_object_mut(), extra.as_object()) {
        rec.extend(extra.clone());
    }
    rec.to_string()
}

fn key(code: &str) -> String {
    format!("l:{DOMAIN}/{code}")
}

async fn start() -> Edge {
    let keys: Vec<String> = [
        "Active1",
        "fwdQry1",
        "Expired",
        "Deleted",
        "Disable",
        "evilTgt",
        "flagged",
        "banCode",
        "corrupt",
        "summer-sale",
    ]
    .iter()
    .map(|c| key(c))
    .collect();
    let seed: Vec<(&str, String)> = vec![
        (
            &keys[0],
            record(
                "https://dest.example/landing?a=1#top",
                "active",
                json!({ "r": 301 }),
            ),
        ),
        (
            &keys[1],
            record("https://dest.example/p?a=1", "active", json!({ "q": true })),
        ),
        (
            &keys[2],
            record(
                "https://dest.example/old",
                "active",
                json!({ "x": 1_000_000_000 }),
            ),
        ),
        (
            &keys[3],
            record("https://dest.example/gone", "deleted", json!({ "v": 2 })),
        ),
        (
            &keys[4],
            record("https://dest.example/off", "disabled", json!({})),
        ),
        (
            &keys[5],
            record("https://login.evil.example/phish", "active", json!({})),
        ),
        (
            &keys[6],
            record("https://fine.example/", "banned", json!({ "v": 3 })),
        ),
        (
            &keys[7],
            record("https://fine.example/", "active", json!({})),
        ),
        (&keys[8], "{not json".to_owned()),
        (
            &keys[9],
            record("https://dest.example/summer", "active", json!({ "r": 307 })),
        ),
        (
            "deny",
            json!({ "v": 1, "codes": [format!("{DOMAIN}/banCode")], "hosts": ["evil.example"] })
                .to_string(),
        ),
    ];
    Edge::start(&seed).await
}

async fn visit(edge: &Edge, method: Method, path: &str) -> reqwest::Response {
    client()
        .request(method, edge.url(path))
        .header("host", DOMAIN)
        .send()
        .await
        .unwrap_or_else(|e| panic!("{path}: {e}\n{}", edge.log()))
}

fn header(res: &reqwest::Response, name: reqwest::header::HeaderName) -> Option<&str> {
    res.headers().get(name).and_then(|v| v.to_str().ok())
}

#[tokio::test]
async fn visitors_get_what_each_record_says() {
    let edge = start().await;

    // Active: the link's own redirect status and target, cacheable privately.
    let res = visit(&edge, Method::GET, "/Active1?utm=x").await;
    assert_eq!(
        res.status(),
        StatusCode::MOVED_PERMANENTLY,
        "{}",
        edge.log()
    );
    assert_eq!(
        header(&res, LOCATION),
        Some("https://dest.example/landing?a=1#top")
    );
    assert_eq!(header(&res, CACHE_CONTROL), Some("private, max-age=60"));

    // Query forwarding merges, keeping the target's own value.
    let res = visit(&edge, Method::GET, "/fwdQry1?a=9&b=2").await;
    assert_eq!(res.status(), StatusCode::FOUND);
    assert_eq!(
        header(&res, LOCATION),
        Some("https://dest.example/p?a=1&b=2")
    );

    // Custom aliases resolve the same way.
    let res = visit(&edge, Method::GET, "/summer-sale").await;
    assert_eq!(res.status(), StatusCode::TEMPORARY_REDIRECT);
    assert_eq!(header(&res, LOCATION), Some("https://dest.example/summer"));

    // Expired and deleted: gone, never cached.
    for path in ["/Expired", "/Deleted"] {
        let res = visit(&edge, Method::GET, path).await;
        assert_eq!(res.status(), StatusCode::GONE, "{path}");
        assert_eq!(header(&res, CACHE_CONTROL), Some("no-store"), "{path}");
        assert_eq!(header(&res, LOCATION), None, "{path}");
    }

    // Disabled: not found, never cached.
    let res = visit(&edge, Method::GET, "/Disable").await;
    assert_eq!(res.status(), StatusCode::NOT_FOUND);
    assert_eq!(header(&res, CACHE_CONTROL), Some("no-store"));

    // Banned code (denylist), banned target host (denylist), record marked banned.
    for path in ["/banCode", "/evilTgt", "/flagged"] {
        let res = visit(&edge, Method::GET, path).await;
        assert_eq!(res.status(), StatusCode::FORBIDDEN, "{path}");
        assert_eq!(header(&res, LOCATION), None, "{path}");
        assert_eq!(
            header(&res, CONTENT_TYPE),
            Some("text/html; charset=utf-8"),
            "{path}"
        );
        let body = res.text().await.expect("body");
        assert!(body.contains("Link blocked"), "{path}: {body}");
    }

    // Unknown code, and paths that cannot be codes.
    for path in ["/Unknown", "/robots.txt", "/a/b", "/-nope", "/", "/x%20y"] {
        let res = visit(&edge, Method::GET, path).await;
        assert_eq!(res.status(), StatusCode::NOT_FOUND, "{path}");
    }

    // A record that cannot be read is temporary trouble, never a 404.
    let res = visit(&edge, Method::GET, "/corrupt").await;
    assert_eq!(res.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert!(header(&res, RETRY_AFTER).is_some());
}

#[tokio::test]
async fn only_get_and_head_are_answered_and_head_has_no_body() {
    let edge = start().await;

    for method in [
        Method::POST,
        Method::PUT,
        Method::DELETE,
        Method::PATCH,
        Method::OPTIONS,
    ] {
        let res = visit(&edge, method.clone(), "/Active1").await;
        assert_eq!(res.status(), StatusCode::METHOD_NOT_ALLOWED, "{method}");
        // Only a password link takes a POST (of its form); a code's URL may be one.
        let allow = match method {
            Method::POST => "GET, HEAD",
            _ => "GET, HEAD, POST",
        };
        assert_eq!(header(&res, ALLOW), Some(allow), "{method}");
    }

    let res = visit(&edge, Method::HEAD, "/Active1").await;
    assert_eq!(res.status(), StatusCode::MOVED_PERMANENTLY);
    assert_eq!(
        header(&res, LOCATION),
        Some("https://dest.example/landing?a=1#top")
    );
    assert!(res.bytes().await.expect("body").is_empty());

    for path in ["/Deleted", "/banCode", "/Unknown"] {
        let get = visit(&edge, Method::GET, path).await;
        let head = visit(&edge, Method::HEAD, path).await;
        assert_eq!(head.status(), get.status(), "{path}");
        assert_eq!(
            header(&head, CONTENT_TYPE),
            header(&get, CONTENT_TYPE),
            "{path}"
        );
        assert!(head.bytes().await.expect("body").is_empty(), "{path}");
        assert!(!get.bytes().await.expect("body").is_empty(), "{path}");
    }
}

#[tokio::test]
async fn hosts_are_normalized_before_lookup() {
    let edge = start().await;
    for host in ["S.Example", "s.example.", "s.example:8787"] {
        let res = client()
            .get(edge.url("/Active1"))
            .header("host", host)
            .send()
            .await
            .expect("request");
        assert_eq!(res.status(), StatusCode::MOVED_PERMANENTLY, "{host}");
    }
    // Another domain does not share this domain's codes.
    let res = client()
        .get(edge.url("/Active1"))
        .header("host", "other.example")
        .send()
        .await
        .expect("request");
    assert_eq!(res.status(), StatusCode::NOT_FOUND);
}

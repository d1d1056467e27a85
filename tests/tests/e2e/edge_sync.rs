//! `POST /_hop/sync` on the real worker under `wrangler dev`: the origin's publisher
//! writes KV through it, authenticated, and never turns a key back to an older version.

use hop_e2e::{client, poll, Edge};
use reqwest::header::LOCATION;
use reqwest::StatusCode;
use serde_json::{json, Value};

const TOKEN: &str = "sync-test-token-0123456789";
/// The token being rotated out.
const OLD_TOKEN: &str = "sync-old-token-0123456789";

fn record(target: &str, version: u64) -> String {
    json!({ "t": target, "s": "active", "r": 302, "x": null, "v": version, "q": false }).to_string()
}

async fn push(edge: &Edge, token: Option<&str>, items: Value) -> (StatusCode, Value) {
    let mut req = client()
        .post(edge.url("/_hop/sync"))
        .json(&json!({ "items": items }));
    if let Some(token) = token {
        req = req.bearer_auth(token);
    }
    let res = req.send().await.expect("push");
    let status = res.status();
    (status, res.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn pushes_are_authenticated_written_and_never_turned_back() {
    // The worker in the middle of a rotation: it accepts the new token and the old one.
    let both = format!("{TOKEN},{OLD_TOKEN}");
    let edge = Edge::start_with(&[], &[("SYNC_TOKEN", both.as_str())]).await;
    let key = "l:s.example/spring-sale";
    let v2 = json!([{ "key": key, "value": record("https://dest.example/v2", 2), "version": 2 }]);

    for token in [None, Some("wrong-token-0123456789abcd")] {
        let (status, _) = push(&edge, token, v2.clone()).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{token:?}");
    }
    assert_eq!(
        edge.visit("spring-sale").await.status(),
        StatusCode::NOT_FOUND
    );

    let (status, reply) = push(&edge, Some(TOKEN), v2.clone()).await;
    assert_eq!(status, StatusCode::OK, "{reply}");
    assert_eq!(reply["written"], json!([key]));
    let res = edge.visit("spring-sale").await;
    assert_eq!(res.status(), StatusCode::FOUND, "{}", edge.log());
    assert_eq!(res.headers()[LOCATION], "https://dest.example/v2");

    // The old token is still let in while it is listed.
    let v2b = json!([{ "key": "l:s.example/rotated", "value": record("https://dest.example/r", 1), "version": 1 }]);
    let (status, reply) = push(&edge, Some(OLD_TOKEN), v2b).await;
    assert_eq!(status, StatusCode::OK, "{reply}");
    assert_eq!(reply["written"], json!(["l:s.example/rotated"]));

    // Newer wins; the same or an older version is refused with the version held.
    let v3 = json!({ "key": key, "value": record("https://dest.example/v3", 3), "version": 3 });
    let v1 = json!({ "key": key, "value": record("https://dest.example/v1", 1), "version": 1 });
    let (status, reply) = push(&edge, Some(TOKEN), json!([v3, v1, v3])).await;
    assert_eq!(status, StatusCode::OK, "{reply}");
    assert_eq!(reply["written"], json!([key]));
    let refused = reply["refused"].as_array().expect("refused");
    assert_eq!(refused.len(), 2, "{reply}");
    assert_eq!(
        (refused[0]["offered"].clone(), refused[0]["held"].clone()),
        (json!(1), json!(3))
    );
    assert_eq!(
        (refused[1]["offered"].clone(), refused[1]["held"].clone()),
        (json!(3), json!(3))
    );
    assert_eq!(
        edge.visit("spring-sale").await.headers()[LOCATION],
        "https://dest.example/v3"
    );

    // A value whose version disagrees with the item's, or an unknown key, is refused.
    let (_, reply) = push(
        &edge,
        Some(TOKEN),
        json!([
            { "key": key, "value": record("https://dest.example/v9", 9), "version": 10 },
            { "key": "elsewhere", "value": "{}", "version": 1 },
        ]),
    )
    .await;
    assert_eq!(
        reply["refused"].as_array().map(Vec::len),
        Some(2),
        "{reply}"
    );

    // A ban pushed as a new denylist snapshot blocks once the isolate's copy (held for
    // a second) is read again.
    let deny = json!({ "v": 1, "codes": ["s.example/spring-sale"], "hosts": [] }).to_string();
    let (_, reply) = push(
        &edge,
        Some(TOKEN),
        json!([{ "key": "deny", "value": deny, "version": 1 }]),
    )
    .await;
    assert_eq!(reply["written"], json!(["deny"]));
    poll("the ban takes effect")
        .within(std::time::Duration::from_secs(10))
        .every(std::time::Duration::from_millis(50))
        .until_true(|| async { edge.visit("spring-sale").await.status() == StatusCode::FORBIDDEN })
        .await;

    let (status, _) = client()
        .post(edge.url("/_hop/sync"))
        .bearer_auth(TOKEN)
        .body("not json")
        .send()
        .await
        .map(|r| (r.status(), ()))
        .expect("push");
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let get = client()
        .get(edge.url("/_hop/sync"))
        .send()
        .await
        .expect("get");
    assert_eq!(get.status(), StatusCode::METHOD_NOT_ALLOWED);
}

/// One value KV will not take (an expiration less than a minute away, which KV refuses)
/// is refused alone, marked worth retrying; the items around it are written.
#[tokio::test]
async fn a_value_kv_refuses_is_refused_alone_and_the_rest_of_the_push_is_written() {
    let edge = Edge::start_with(&[], &[("SYNC_TOKEN", TOKEN)]).await;
    let soon = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs()
        + 5;
    let items = json!([
        { "key": "l:s.example/before-it", "value": record("https://dest.example/a", 1), "version": 1 },
        { "key": "l:s.example/poisoned", "value": record("https://dest.example/p", 1), "version": 1, "expiration": soon },
        { "key": "l:s.example/after-it", "value": record("https://dest.example/b", 1), "version": 1 },
    ]);
    let (status, reply) = push(&edge, Some(TOKEN), items).await;
    assert_eq!(status, StatusCode::OK, "{reply}\n{}", edge.log());
    let mut written: Vec<String> = reply["written"]
        .as_array()
        .expect("written")
        .iter()
        .map(|k| k.as_str().expect("key").to_owned())
        .collect();
    written.sort();
    assert_eq!(written, ["l:s.example/after-it", "l:s.example/before-it"]);
    let refused = reply["refused"].as_array().expect("refused");
    assert_eq!(refused.len(), 1, "{reply}");
    assert_eq!(refused[0]["key"], "l:s.example/poisoned");
    assert_eq!(refused[0]["retry"], true, "{reply}");
    for code in ["before-it", "after-it"] {
        assert_eq!(edge.visit(code).await.status(), StatusCode::FOUND, "{code}");
    }
}

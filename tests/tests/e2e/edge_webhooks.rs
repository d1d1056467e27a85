//! Webhooks from a real origin publishing to `wrangler dev`, received by a Python
//! receiver that checks every delivery with the Standard Webhooks reference library
//! (`standardwebhooks`, PyPI): a receiver down for a while gets every event in order
//! afterwards, including a link used up by visits at the edge (the clicks cross the
//! real queue); a receiver that never answers delays neither publishing nor the other
//! receiver; a receiver answering 410 is disabled.

use hop_e2e::{
    api_key, client, free_port, origin_env, poll, repo_root, wired_edge_to, Origin, Process,
};
use reqwest::StatusCode;
use serde_json::{json, Value};
use std::process::Command;
use std::time::Duration;

const DEADLINE: Duration = Duration::from_secs(90);
const HUMAN_UA: &str = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Safari/537.36";

/// The receiver: `tests/receivers/standard_webhooks.py` in the virtualenv scripts/setup
/// makes.
fn receiver(port: u16, log: std::path::PathBuf) -> Process {
    let target = std::env::var("CARGO_TARGET_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|_| repo_root().join("target"));
    let python = target.join("standardwebhooks-1.3.0/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run scripts/setup (it installs standardwebhooks)",
        python.display()
    );
    let mut command = Command::new(python);
    command
        .arg(repo_root().join("tests/receivers/standard_webhooks.py"))
        .arg(port.to_string());
    Process::spawn("receiver", command, log)
}

async fn control(base: &str, body: Value) {
    let res = client()
        .post(format!("{base}/control"))
        .json(&body)
        .send()
        .await
        .expect("the receiver answers");
    assert_eq!(res.status(), StatusCode::NO_CONTENT);
}

async fn received(base: &str) -> Vec<Value> {
    client()
        .get(format!("{base}/received"))
        .send()
        .await
        .expect("the receiver answers")
        .json()
        .await
        .expect("a list")
}

/// `type code version` of a verified delivery.
fn summary(r: &Value) -> String {
    let e = &r["event"];
    format!(
        "{} {} {}",
        e["type"].as_str().unwrap_or_default(),
        e["data"]["code"].as_str().unwrap_or_default(),
        e["data"]["version"]
    )
}

async fn register(origin: &Origin, key: &str, body: Value) -> Value {
    let res = client()
        .post(origin.url("/v1/webhooks"))
        .bearer_auth(key)
        .json(&body)
        .send()
        .await
        .expect("register");
    let status = res.status();
    let text = res.text().await.expect("an answer");
    assert_eq!(status, StatusCode::CREATED, "{text}");
    serde_json::from_str(&text).expect("an endpoint")
}

#[tokio::test]
async fn a_receiver_verifies_every_event_with_the_reference_library_in_order() {
    let dir = tempfile::tempdir().expect("temp dir");
    let origin_port = free_port();
    let edge = wired_edge_to(&format!("http://127.0.0.1:{origin_port}"), &[]).await;
    let mut env = origin_env(dir.path(), Some(&edge));
    env.extend([
        ("HOP_WEBHOOK_ALLOW_PRIVATE", "true".to_owned()),
        ("HOP_WEBHOOK_RETRY_SCHEDULE", "1s".to_owned()),
        // The silent receiver holds its attempt this long: all of this test.
        ("HOP_WEBHOOK_TIMEOUT", "60".to_owned()),
    ]);
    let key = api_key(&env, "acme", false);
    let origin = Origin::start(origin_port, &env, dir.path().join("origin.log")).await;

    let port = free_port();
    let mut python = receiver(port, dir.path().join("receiver.log"));
    let base = format!("http://127.0.0.1:{port}");
    python
        .wait_until_answering(&format!("{base}/received"))
        .await;
    // A receiver that takes connections and never answers.
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a port");
    let silent_url = format!("http://{}/hook", silent.local_addr().expect("its address"));
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = silent.accept().await {
            held.push(socket);
        }
    });
    register(&origin, &key, json!({"url": silent_url})).await;
    let endpoint = register(&origin, &key, json!({"url": format!("{base}/hook")})).await;
    let secret = endpoint["secret"].as_str().expect("a secret");
    let id = endpoint["id"].as_str().expect("an id");
    control(&base, json!({"secrets": [secret], "status": 503})).await;

    // Down: links are made, one is used up at the edge; the edge serves them all the
    // while (publishing waits for no receiver).
    origin
        .create(
            &key,
            json!({"code": "summer", "target_url": "https://shop.example/summer"}),
        )
        .await;
    origin
        .create(
            &key,
            json!({"code": "once", "target_url": "https://shop.example/once", "max_visits": 1}),
        )
        .await;
    for code in ["summer", "once"] {
        poll(format!("{code} answers at the edge"))
            .within(DEADLINE)
            .every(Duration::from_millis(200))
            .explain(|| format!("{}\n{}", origin.log(), edge.log()))
            .until_true(|| async {
                client()
                    .get(edge.url(&format!("/{code}")))
                    .header("host", "s.example")
                    .header("user-agent", HUMAN_UA)
                    .send()
                    .await
                    .is_ok_and(|r| r.status() == StatusCode::FOUND)
            })
            .await;
    }
    poll("the receiver turned attempts away")
        .within(DEADLINE)
        .until_true(|| async { received(&base).await.len() >= 2 })
        .await;
    let read: Value = client()
        .get(origin.url("/v1/links/s.example/once"))
        .bearer_auth(&key)
        .send()
        .await
        .expect("read")
        .json()
        .await
        .expect("a link");
    let exhausted = poll("the edge's visit uses the link up at the origin")
        .within(DEADLINE)
        .every(Duration::from_millis(500))
        .explain(|| origin.log())
        .until(|| async {
            let link: Value = client()
                .get(origin.url("/v1/links/s.example/once"))
                .bearer_auth(&key)
                .send()
                .await
                .ok()?
                .json()
                .await
                .ok()?;
            (link["exhausted"] == true).then_some(link)
        })
        .await;
    assert_eq!(read["version"], 1);

    // Up: everything, in order, each verified by the reference library.
    control(&base, json!({"status": 204})).await;
    let expected = [
        "link.created summer 1".to_owned(),
        "link.created once 1".to_owned(),
        format!("link.exhausted once {}", exhausted["version"]),
    ];
    let got = poll("every event once the receiver is back")
        .within(DEADLINE)
        .explain(|| origin.log())
        .until(|| async {
            let got: Vec<Value> = received(&base)
                .await
                .into_iter()
                .filter(|r| r["answered"] == 204)
                .collect();
            (got.len() >= expected.len()).then_some(got)
        })
        .await;
    let all = received(&base).await;
    assert!(all.iter().all(|r| r["verified_by"] == 1), "{all:?}");
    assert!(all.iter().any(|r| r["answered"] == 503), "{all:?}");
    let summaries: Vec<String> = got.iter().map(summary).collect();
    assert_eq!(summaries, expected);
    assert_eq!(
        got[0]["event"]["data"]["short_url"],
        "https://s.example/summer"
    );

    // 410: disabled, and called no more.
    control(&base, json!({"status": 410})).await;
    origin
        .create(
            &key,
            json!({"code": "later", "target_url": "https://shop.example/later"}),
        )
        .await;
    poll("a 410 disables the endpoint")
        .within(DEADLINE)
        .until_true(|| async {
            let e: Value = client()
                .get(origin.url(&format!("/v1/webhooks/{id}")))
                .bearer_auth(&key)
                .send()
                .await
                .expect("read")
                .json()
                .await
                .expect("an endpoint");
            e["state"] == "disabled"
        })
        .await;
    python.stop();
}

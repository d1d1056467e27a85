//! A KV incident is not an outage. The worker runs under workerd with its KV namespace
//! down (every read rejects): the links the origin knows keep redirecting, from the
//! origin's answers the edge holds and asks for within its budget; banned and deleted
//! links stay refused, and a code the origin does not know is 404, never a redirect; and
//! the edge's health reports tell the origin about the failed reads.

use hop_e2e::{
    api_key, client, free_port, origin_env, poll, repo_root, Origin, Process, EDGE_TOKEN,
};
use reqwest::header::LOCATION;
use reqwest::StatusCode;
use serde_json::json;
use std::process::Command;
use std::time::Duration;

/// The worker of `tests/fixtures/kv-down.mjs`, asking the origin on `origin_port`.
async fn edge_with_kv_down(origin_port: u16, log: std::path::PathBuf) -> (Process, String) {
    let built = Command::new("bash")
        .arg(repo_root().join("scripts/build-worker"))
        .status()
        .expect("build the worker");
    assert!(built.success(), "scripts/build-worker failed");
    let port = free_port();
    let mut command = Command::new("node");
    command
        .current_dir(repo_root())
        .arg("tests/fixtures/kv-down.mjs")
        .env("PORT", port.to_string())
        .env("ORIGIN_URL", format!("http://127.0.0.1:{origin_port}"))
        .env("ORIGIN_TOKEN", EDGE_TOKEN);
    let mut process = Process::spawn("workerd with KV down", command, log);
    let base = format!("http://127.0.0.1:{port}");
    process
        .wait_until_answering(&format!("{base}/_hop/ready"))
        .await;
    (process, base)
}

async fn visit(base: &str, code: &str) -> reqwest::Response {
    client()
        .get(format!("{base}/{code}"))
        .header("host", "s.example")
        .send()
        .await
        .expect("the edge answers")
}

#[tokio::test]
async fn with_kv_down_known_links_keep_redirecting_and_the_edge_reports_it() {
    let dir = tempfile::tempdir().expect("temp dir");
    let origin_port = free_port();
    let env = origin_env(dir.path(), None);
    let admin = api_key(&env, "ops", true);
    let origin = Origin::start(origin_port, &env, dir.path().join("origin.log")).await;
    for code in ["kept-1", "kept-2", "banned-1", "deleted-1"] {
        origin
            .create(
                &admin,
                json!({ "target_url": format!("https://dest.example/{code}"), "code": code }),
            )
            .await;
    }
    let banned = client()
        .post(origin.url("/v1/bans"))
        .bearer_auth(&admin)
        .json(&json!({ "kind": "code", "code": "banned-1", "reason": "test" }))
        .send()
        .await
        .expect("ban");
    assert_eq!(banned.status(), StatusCode::CREATED);
    let deleted = client()
        .delete(origin.url("/v1/links/s.example/deleted-1"))
        .bearer_auth(&admin)
        .send()
        .await
        .expect("delete");
    assert!(deleted.status().is_success(), "{}", deleted.status());

    let (edge, base) = edge_with_kv_down(origin_port, dir.path().join("edge.log")).await;
    for round in 0..10 {
        for code in ["kept-1", "kept-2"] {
            let res = visit(&base, code).await;
            assert_eq!(
                res.status(),
                StatusCode::FOUND,
                "round {round}, {code}:\n{}",
                edge.log()
            );
            assert_eq!(
                res.headers()[LOCATION],
                format!("https://dest.example/{code}").as_str()
            );
        }
        let res = visit(&base, "banned-1").await;
        assert_eq!(res.status(), StatusCode::FORBIDDEN, "round {round}");
        assert!(res.headers().get(LOCATION).is_none());
        assert_eq!(visit(&base, "deleted-1").await.status(), StatusCode::GONE);
        assert_eq!(
            visit(&base, "never-made").await.status(),
            StatusCode::NOT_FOUND,
            "round {round}"
        );
    }
    // Fifty visits of five codes, forty of which read KV: the origin's answers were
    // held, not asked for each.
    let asked = origin.metric("hop_edge_resolves_total").await;
    assert!(asked <= 10, "the origin was asked {asked} times");

    // The edge told the origin that it could not read KV.
    poll("the edge reports its failed reads")
        .within(Duration::from_secs(60))
        .every(Duration::from_millis(100))
        .explain(|| edge.log())
        .until_true(|| async {
            origin
                .metric_sum("hop_edge_faults_total{kind=\"kv_read\"}")
                .await
                >= 40
        })
        .await;
    println!(
        "KV down: 50 visits answered, the origin asked {asked} times, {} failed reads reported",
        origin
            .metric_sum("hop_edge_faults_total{kind=\"kv_read\"}")
            .await
    );
}

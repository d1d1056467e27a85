//! Bans reach the real edge fast: the real origin publishes the denylist on the fast lane
//! to the real `wrangler dev`. Fifty bans, of codes and of target hosts, each checked at
//! the edge from the moment the API call returns; the distribution is printed (speed is
//! reported, not asserted: every ban must simply take effect).

use hop_e2e::{
    api_key, client, free_port, origin_env_through, poll, wired_edge, Origin, SinkMode, SinkProxy,
    Wired,
};
use reqwest::StatusCode;
use serde_json::json;
use std::time::{Duration, Instant};

const BANS: usize = 50;

/// The distribution of the time from each ban's API answer to the first 403 at the edge.
async fn ban_fifty(origin: &Origin, edge: &hop_e2e::Edge, admin: &str) -> Vec<Duration> {
    let mut took = Vec::with_capacity(BANS);
    for i in 0..BANS {
        let ban = if i % 2 == 0 {
            json!({ "kind": "code", "code": format!("ban-me-{i}"), "reason": "test" })
        } else {
            json!({ "kind": "host", "host": format!("h{i}.dest.example"), "reason": "test" })
        };
        let res = client()
            .post(origin.url("/v1/bans"))
            .bearer_auth(admin)
            .json(&ban)
            .send()
            .await
            .expect("ban");
        assert_eq!(res.status(), StatusCode::CREATED);
        let code = format!("ban-me-{i}");
        let returned = Instant::now();
        poll(format!("ban {i} takes effect at the edge"))
            .within(Duration::from_secs(15))
            .every(Duration::from_millis(5))
            .explain(|| origin.log())
            .until_true(|| async { edge.visit(&code).await.status() == StatusCode::FORBIDDEN })
            .await;
        took.push(returned.elapsed());
    }
    took.sort();
    took
}

fn report(what: &str, took: &[Duration]) {
    let at = |q: f64| took[((took.len() as f64 * q).ceil() as usize).clamp(1, took.len()) - 1];
    eprintln!(
        "ban propagation over {BANS} bans{what} (API return → 403 at the edge): p50 {:?}, p90 {:?}, p99 {:?}, max {:?}",
        at(0.5),
        at(0.9),
        at(0.99),
        took[took.len() - 1]
    );
}

/// Every link redirects at the edge before the bans start (published, or through the
/// fallback). Aliases cannot be dated, so past the edge's budget for them a visit may be
/// told to come back (503) before it redirects.
async fn every_link_redirects(edge: &hop_e2e::Edge) {
    for i in 0..BANS {
        let code = format!("ban-me-{i}");
        poll(format!("{code} redirects"))
            .within(Duration::from_secs(10))
            .every(Duration::from_millis(50))
            .until_true(|| async {
                let status = edge.visit(&code).await.status();
                if status != StatusCode::FOUND {
                    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{code}");
                }
                status == StatusCode::FOUND
            })
            .await;
    }
}

/// Half the links are banned by code, half by their target's host.
fn targets() -> Vec<serde_json::Value> {
    (0..BANS)
        .map(|i| json!({ "target_url": format!("https://h{i}.dest.example/"), "code": format!("ban-me-{i}") }))
        .collect()
}

#[tokio::test]
async fn fifty_bans_of_codes_and_hosts_block_at_the_edge() {
    let w = Wired::start("ops", true).await;
    w.origin.create_bulk(&w.key, targets()).await;
    every_link_redirects(&w.edge).await;
    report("", &ban_fifty(&w.origin, &w.edge, &w.key).await);
}

/// An edge, and an origin publishing to it through a sink the test switches, with an
/// administrator's key (and the directory holding the origin's database).
async fn publishing_through_a_sink() -> (tempfile::TempDir, hop_e2e::Edge, SinkProxy, Origin, String)
{
    let dir = tempfile::tempdir().expect("temp dir");
    let origin_port = free_port();
    let edge = wired_edge(origin_port).await;
    let (sink, env) = origin_env_through(dir.path(), &edge).await;
    let admin = api_key(&env, "ops", true);
    let origin = Origin::start(origin_port, &env, dir.path().join("origin.log")).await;
    (dir, edge, sink, origin, admin)
}

/// The normal lane is stuck (every push of link records hangs): bans travel on the
/// fast lane and take effect all the same, without waiting for it.
#[tokio::test]
async fn bans_block_at_the_edge_while_the_normal_lane_is_stuck() {
    let (_dir, edge, sink, origin, admin) = publishing_through_a_sink().await;
    sink.set(SinkMode::StallRecords);
    origin.create_bulk(&admin, targets()).await;
    every_link_redirects(&edge).await;
    report(
        " with the normal lane stuck",
        &ban_fifty(&origin, &edge, &admin).await,
    );
    assert!(
        origin
            .metric_sum("hop_outbox_pending{lane=\"normal\"}")
            .await
            > 0,
        "the records were indeed never delivered"
    );
}

/// KV's copy of the denylist is frozen (every push to the edge is refused): bans still
/// reach the edge, through the origin's own denylist, which each location asks for about
/// once a second. Locally the bound is the edge's hold (two seconds at most) plus the
/// origin's answer; the distribution is printed.
#[tokio::test]
async fn bans_block_at_the_edge_while_kv_is_frozen() {
    let (_dir, edge, sink, origin, admin) = publishing_through_a_sink().await;
    origin.create_bulk(&admin, targets()).await;
    every_link_redirects(&edge).await;
    sink.set(SinkMode::Down);
    let took = ban_fifty(&origin, &edge, &admin).await;
    report(" with KV frozen", &took);
    assert!(
        origin.metric_sum("hop_outbox_pending{lane=\"fast\"}").await > 0,
        "KV's denylist was indeed never written"
    );
    assert!(
        origin
            .metric_sum("hop_edge_denylist_reads_total{result=\"sent\"}")
            .await
            >= BANS as u64,
        "each ban came through the origin's denylist"
    );
}

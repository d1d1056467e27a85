//! Two real origins share one database and publish to the real `wrangler dev`: one leads,
//! the other stands by. The leader is killed in the middle of publishing a bulk import
//! and its edits; the standby takes the lease over and the edge ends with every link at
//! its newest version (the worker never lets a key go back to an older one).

use hop_e2e::{api_key, client, free_port, origin_env, poll, Edge, Origin, SYNC_TOKEN};
use reqwest::header::LOCATION;
use reqwest::StatusCode;
use serde_json::{json, Value};
use std::cell::Cell;
use std::time::Duration;

const LINKS: usize = 2_000;

#[tokio::test]
async fn the_standby_takes_over_when_the_leader_dies_mid_batch() {
    let dir = tempfile::tempdir().expect("temp dir");
    let edge = Edge::start_with(&[], &[("SYNC_TOKEN", SYNC_TOKEN)]).await;
    let env = origin_env(dir.path(), Some(&edge));
    let key = api_key(&env, "e2e", false);
    let leader = Origin::start(free_port(), &env, dir.path().join("a.log")).await;
    poll("the first origin leads")
        .within(Duration::from_secs(30))
        .every(Duration::from_millis(50))
        .until_true(|| async { leader.metric("hop_publisher_leader").await == 1 })
        .await;
    let standby = Origin::start(free_port(), &env, dir.path().join("b.log")).await;
    assert_eq!(standby.metric("hop_publisher_leader").await, 0);

    // A bulk import, then a second version of every tenth link, all through the leader.
    let links: Vec<Value> = (0..LINKS)
        .map(|i| json!({ "target_url": format!("https://dest.example/{i}/v1"), "code": format!("fo-{i}") }))
        .collect();
    leader.create_bulk(&key, links).await;
    for i in (0..LINKS).step_by(10) {
        let res = client()
            .patch(leader.url(&format!("/v1/links/s.example/fo-{i}")))
            .bearer_auth(&key)
            .header("if-match", "\"1\"")
            .json(&json!({ "target_url": format!("https://dest.example/{i}/v2") }))
            .send()
            .await
            .expect("patch");
        assert_eq!(res.status(), StatusCode::OK);
    }
    // Killed while it works through the backlog.
    let published_before = leader.metric("hop_published_total").await;
    leader.kill();
    assert!(
        (published_before as usize) < LINKS,
        "the leader finished before it was killed ({published_before} written)"
    );

    // The standby takes the lease once it lapses and delivers everything.
    // What the standby said last (leader, lag in ms, pending), for the failure message.
    let last = Cell::new((0, 0, 0));
    poll("the standby finishes")
        .within(Duration::from_secs(120))
        .every(Duration::from_millis(200))
        .explain(|| {
            let (leads, lag, pending) = last.get();
            format!(
                "leader {leads}, lag {lag} ms, pending {pending}\n{}",
                standby.log()
            )
        })
        .until_true(|| async {
            let lag = standby.metric("hop_publisher_lag_milliseconds").await;
            let leads = standby.metric("hop_publisher_leader").await;
            let pending = standby.metric_sum("hop_outbox_pending").await;
            last.set((leads, lag, pending));
            leads == 1 && pending == 0
        })
        .await;
    // Every link is at the edge, at its newest version.
    for i in (0..LINKS).step_by(7) {
        let res = client()
            .get(edge.url(&format!("/fo-{i}")))
            .header("host", "s.example")
            .send()
            .await
            .expect("edge");
        assert_eq!(res.status(), StatusCode::FOUND, "fo-{i}");
        let version = if i % 10 == 0 { "v2" } else { "v1" };
        assert_eq!(
            res.headers()[LOCATION],
            format!("https://dest.example/{i}/{version}").as_str(),
            "fo-{i}"
        );
    }
}

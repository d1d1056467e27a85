//! The publisher against a recording sink that keeps KV in memory and judges pushes as
//! the worker does, on SQLite and PostgreSQL: what reaches the edge, in which order,
//! coalesced, retried after failures, never turned back, and one leader at a time.

mod common;

use async_trait::async_trait;
use common::TestDb;
use origin_api::publisher::sink::{Sink, SinkError};
use origin_api::publisher::{Publisher, LEASE};
use origin_api::store::{now_ms, LinkStore, OutboxStore};
use origin_api::{keys, links, AppState};
use serde_json::{json, Value};
use shared::sync::{judge, SyncItem, SyncReply};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// KV in memory, judged like the worker; can be made to fail.
#[derive(Debug, Default)]
struct MemoryEdge {
    kv: Mutex<HashMap<String, String>>,
    pushes: Mutex<Vec<Vec<String>>>,
    down: AtomicBool,
}

#[async_trait]
impl Sink for MemoryEdge {
    async fn push(&self, items: &[SyncItem]) -> Result<SyncReply, SinkError> {
        if self.down.load(Ordering::SeqCst) {
            return Err(SinkError::Unreachable("connection refused".into()));
        }
        self.pushes
            .lock()
            .expect("lock")
            .push(items.iter().map(|i| i.key.clone()).collect());
        let mut kv = self.kv.lock().expect("lock");
        let mut reply = SyncReply::default();
        for item in items {
            match judge(item, kv.get(&item.key).map(String::as_str)) {
                Ok(()) => {
                    kv.insert(item.key.clone(), item.value.clone());
                    reply.written.push(item.key.clone());
                }
                Err(refusal) => reply.refused.push(refusal),
            }
        }
        Ok(reply)
    }
}

impl MemoryEdge {
    fn value(&self, key: &str) -> Option<Value> {
        let kv = self.kv.lock().expect("lock");
        kv.get(key).map(|v| serde_json::from_str(v).expect("JSON"))
    }
}

struct Setup {
    state: AppState,
    edge: Arc<MemoryEdge>,
    publisher: Publisher,
    owner: String,
}

fn setup(t: &TestDb) -> Setup {
    let state = common::app_state(t);
    let edge = Arc::new(MemoryEdge::default());
    let publisher = Publisher::new(
        Arc::new(state.db.clone()),
        edge.clone(),
        state.metrics.clone(),
    );
    Setup {
        state,
        edge,
        publisher,
        owner: "acme".into(),
    }
}

async fn create(s: &Setup, body: Value) -> links::Link {
    let req: links::CreateLink = serde_json::from_value(body).expect("body");
    match links::create_link_once(&s.state, &s.owner, req, None)
        .await
        .expect("create")
    {
        links::Created::New(link) => *link,
        links::Created::Replayed(_) => panic!("not replayed"),
    }
}

async fn drain(s: &Setup) {
    while s.publisher.step().await.expect("step") > 0 {}
}

#[tokio::test]
async fn creates_edits_and_bans_reach_the_edge_coalesced_with_the_fast_lane_first() {
    for t in TestDb::all("publisher").await {
        let s = setup(&t);
        let link = create(
            &s,
            json!({ "target_url": "https://dest.example/a", "code": "spring" }),
        )
        .await;
        assert_eq!(link.view().edge.state, links::EdgeState::Pending);
        // Two edits before anything is published: the edge gets version 3 only.
        let mut current = link;
        for target in ["https://dest.example/b", "https://dest.example/c"] {
            let changes: links::UpdateLink =
                serde_json::from_value(json!({ "target_url": target })).expect("changes");
            current = links::update_link(&s.state, current.clone(), current.version, changes)
                .await
                .expect("update");
        }
        assert_eq!(current.version, 3);
        // A ban, on the fast lane.
        let (admin, _) = keys::issue("ops", "t", true, now_ms()).expect("key");
        s.state.db.insert_key(&admin).await.expect("key");
        let ban = origin_api::bans::BanTarget::Host {
            host: "evil.example".into(),
        };
        use origin_api::store::BanStore;
        s.state
            .db
            .insert_ban(&ban, "phishing", "ops/t", now_ms())
            .await
            .expect("ban");

        drain(&s).await;

        let pushes = s.edge.pushes.lock().expect("lock").clone();
        assert_eq!(
            pushes[0],
            vec!["meta:activation".to_owned(), "deny".to_owned()],
            "{}: the fast lane goes first",
            t.kind()
        );
        assert_eq!(
            pushes[1],
            vec!["l:s.example/spring".to_owned()],
            "coalesced to one write"
        );
        let record = s.edge.value("l:s.example/spring").expect("record");
        assert_eq!(
            (record["v"].clone(), record["t"].clone()),
            (json!(3), json!("https://dest.example/c"))
        );
        assert_eq!(
            s.edge.value("deny").expect("deny")["hosts"],
            json!(["evil.example"])
        );
        let meta = s.edge.value("meta:activation").expect("meta");
        assert!(meta["high"].as_u64() > Some(0) && meta["low"].as_u64() < meta["high"].as_u64());

        // The link says so, with when it will be visible everywhere.
        let read = s
            .state
            .db
            .get_link("s.example", "spring")
            .await
            .expect("read")
            .expect("link");
        let view = read.view();
        assert_eq!(view.edge.state, links::EdgeState::Published, "{}", t.kind());
        assert!(view.edge.published_at.is_some() && view.edge.visible_everywhere_by.is_some());
        assert!(s.state.db.pending(100).await.expect("pending").is_empty());
        assert_eq!(s.publisher.step().await.expect("idle step"), 0);

        // A further edit makes it pending again until it is delivered.
        let changes: links::UpdateLink =
            serde_json::from_value(json!({ "title": "Spring" })).expect("changes");
        let edited = links::update_link(&s.state, read.clone(), read.version, changes)
            .await
            .expect("update");
        let again = s
            .state
            .db
            .get_link("s.example", "spring")
            .await
            .expect("read")
            .expect("link");
        assert_eq!(again.view().edge.state, links::EdgeState::Pending);
        drain(&s).await;
        let record = s.edge.value("l:s.example/spring").expect("record");
        assert_eq!(record["v"], json!(edited.version));
        t.cleanup().await;
    }
}

#[tokio::test]
async fn a_failed_push_is_retried_and_an_older_version_never_replaces_a_newer_one() {
    for t in TestDb::all("publisher-retry").await {
        let s = setup(&t);
        create(
            &s,
            json!({ "target_url": "https://dest.example/a", "code": "retry-me" }),
        )
        .await;
        s.edge.down.store(true, Ordering::SeqCst);
        assert!(s.publisher.step().await.is_err());
        let pending = s.state.db.pending(100).await.expect("pending");
        assert!(!pending.is_empty(), "{}: nothing is lost", t.kind());
        s.edge.down.store(false, Ordering::SeqCst);
        drain(&s).await;
        assert_eq!(
            s.edge.value("l:s.example/retry-me").expect("record")["v"],
            json!(1)
        );

        // The edge already holds version 5 (say, from a push whose answer was lost and
        // a later edit): a replay of version 1 is refused, counted as delivered, and
        // the edge keeps version 5.
        let newer = json!({ "t": "https://dest.example/v5", "s": "active", "r": 302, "x": null, "v": 5, "q": false });
        s.edge
            .kv
            .lock()
            .expect("lock")
            .insert("l:s.example/retry-me".into(), newer.to_string());
        let link = s
            .state
            .db
            .get_link("s.example", "retry-me")
            .await
            .expect("read")
            .expect("link");
        let changes: links::UpdateLink =
            serde_json::from_value(json!({ "title": "t" })).expect("changes");
        links::update_link(&s.state, link.clone(), link.version, changes)
            .await
            .expect("update");
        drain(&s).await;
        assert_eq!(
            s.edge.value("l:s.example/retry-me").expect("record")["v"],
            json!(5)
        );
        assert!(s.state.db.pending(100).await.expect("pending").is_empty());
        t.cleanup().await;
    }
}

#[tokio::test]
async fn one_leader_at_a_time_and_a_standby_takes_over_when_the_lease_lapses_or_is_given_up() {
    for t in TestDb::all("publisher-lease").await {
        let db = &t.db;
        let now = now_ms();
        assert!(db
            .take_lease(LEASE, "a", now + 5_000, now)
            .await
            .expect("lease"));
        assert!(
            !db.take_lease(LEASE, "b", now + 5_000, now)
                .await
                .expect("lease"),
            "{}",
            t.kind()
        );
        assert!(db
            .take_lease(LEASE, "a", now + 6_000, now + 1_000)
            .await
            .expect("renew"));
        // Once a's lease has lapsed, b takes it, and a cannot renew.
        assert!(db
            .take_lease(LEASE, "b", now + 12_000, now + 7_000)
            .await
            .expect("lease"));
        assert!(!db
            .take_lease(LEASE, "a", now + 13_000, now + 8_000)
            .await
            .expect("lease"));
        // Given up, it is free at once.
        db.release_lease(LEASE, "b").await.expect("release");
        assert!(db
            .take_lease(LEASE, "a", now + 14_000, now + 9_000)
            .await
            .expect("lease"));
        t.cleanup().await;
    }
}

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

/// Applies `changes` (a PATCH body) to `link` at its current version.
async fn edit(s: &Setup, link: &links::Link, changes: Value) -> links::Link {
    let changes: links::UpdateLink = serde_json::from_value(changes).expect("changes");
    links::update_link(&s.state, link.clone(), link.version, changes)
        .await
        .expect("update")
}

/// The link `code` of `s.example`, as the database holds it.
async fn stored(s: &Setup, code: &str) -> links::Link {
    s.state
        .db
        .get_link("s.example", code)
        .await
        .expect("read")
        .expect("link")
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
            current = edit(&s, &current, json!({ "target_url": target })).await;
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
        let read = stored(&s, "spring").await;
        let view = read.view();
        assert_eq!(view.edge.state, links::EdgeState::Published, "{}", t.kind());
        assert!(view.edge.published_at.is_some() && view.edge.visible_everywhere_by.is_some());
        assert!(s.state.db.pending(100).await.expect("pending").is_empty());
        assert_eq!(s.publisher.step().await.expect("idle step"), 0);

        // A further edit makes it pending again until it is delivered.
        let edited = edit(&s, &read, json!({ "title": "Spring" })).await;
        let again = stored(&s, "spring").await;
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
        edit(&s, &link, json!({ "title": "t" })).await;
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

/// A stand-in for Cloudflare's API that checks what the KV bulk write documents:
/// `PUT /accounts/{account}/storage/kv/namespaces/{namespace}/bulk` with a bearer token
/// and a JSON array of at most 10,000 `{key, value, expiration?}` (keys of 1 to 512
/// bytes, values strings, expirations integers), answering as Cloudflare does.
#[derive(Default)]
struct FakeCloudflare {
    kv: Mutex<HashMap<String, (String, Option<i64>)>>,
    problems: Mutex<Vec<String>>,
    calls: Mutex<usize>,
}

async fn kv_bulk(
    axum::extract::State(cf): axum::extract::State<Arc<FakeCloudflare>>,
    axum::extract::Path((account, namespace)): axum::extract::Path<(String, String)>,
    headers: axum::http::HeaderMap,
    body: String,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    *cf.calls.lock().expect("lock") += 1;
    let mut problems = Vec::new();
    if (account.as_str(), namespace.as_str()) != ("acct123", "ns456") {
        problems.push(format!("wrong account or namespace: {account}/{namespace}"));
    }
    if headers.get("authorization").and_then(|v| v.to_str().ok()) != Some("Bearer cf-token") {
        problems.push("missing or wrong bearer token".into());
    }
    if headers.get("content-type").and_then(|v| v.to_str().ok()) != Some("application/json") {
        problems.push("not JSON".into());
    }
    let pairs: Vec<Value> = serde_json::from_str(&body).unwrap_or_else(|_| {
        problems.push("the body is not a JSON array".into());
        vec![]
    });
    if pairs.len() > 10_000 {
        problems.push("more than 10,000 pairs".into());
    }
    let mut good = Vec::new();
    for pair in &pairs {
        let Some(obj) = pair.as_object() else {
            problems.push(format!("not an object: {pair}"));
            continue;
        };
        if let Some(extra) = obj.keys().find(|k| {
            ![
                "key",
                "value",
                "expiration",
                "expiration_ttl",
                "metadata",
                "base64",
            ]
            .contains(&k.as_str())
        }) {
            problems.push(format!("unknown field {extra}"));
        }
        let key = obj.get("key").and_then(Value::as_str).unwrap_or_default();
        if key.is_empty() || key.len() > 512 {
            problems.push(format!("bad key {key:?}"));
        }
        let Some(value) = obj.get("value").and_then(Value::as_str) else {
            problems.push(format!("value of {key} is not a string"));
            continue;
        };
        let expiration = match obj.get("expiration") {
            None => None,
            Some(e) => match e.as_i64() {
                Some(e) => Some(e),
                None => {
                    problems.push(format!("expiration of {key} is not an integer"));
                    None
                }
            },
        };
        good.push((key.to_owned(), (value.to_owned(), expiration)));
    }
    if !problems.is_empty() {
        cf.problems.lock().expect("lock").extend(problems.clone());
        let errors: Vec<Value> = problems
            .iter()
            .map(|p| json!({ "code": 10001, "message": p }))
            .collect();
        return (
            axum::http::StatusCode::BAD_REQUEST,
            axum::Json(
                json!({ "success": false, "errors": errors, "messages": [], "result": null }),
            ),
        )
            .into_response();
    }
    let count = good.len();
    cf.kv.lock().expect("lock").extend(good);
    axum::Json(json!({
        "success": true, "errors": [], "messages": [],
        "result": { "successful_key_count": count, "unsuccessful_keys": [] }
    }))
    .into_response()
}

#[tokio::test]
async fn the_kv_bulk_sink_sends_what_cloudflare_documents_and_never_an_older_version() {
    for t in TestDb::all("publisher-kv").await {
        let cf = Arc::new(FakeCloudflare::default());
        let app = axum::Router::new()
            .route(
                "/client/v4/accounts/{account}/storage/kv/namespaces/{namespace}/bulk",
                axum::routing::put(kv_bulk),
            )
            .with_state(cf.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let api: url::Url = format!("http://{}/client/v4", listener.local_addr().expect("addr"))
            .parse()
            .expect("url");
        let server = tokio::spawn(async move {
            axum::serve(listener, app).await.expect("serve");
        });
        let state = common::app_state(&t);
        let sink = origin_api::publisher::sink::KvBulk::new(&api, "acct123", "ns456", "cf-token")
            .expect("sink");
        let publisher = Publisher::new(
            Arc::new(state.db.clone()),
            Arc::new(sink),
            state.metrics.clone(),
        );
        let s = Setup {
            state,
            edge: Arc::new(MemoryEdge::default()),
            publisher,
            owner: "acme".into(),
        };
        let expires = "2099-01-01T00:00:00Z";
        create(&s, json!({ "target_url": "https://dest.example/a", "code": "kv-a", "expires_at": expires })).await;
        create(
            &s,
            json!({ "target_url": "https://dest.example/b", "code": "kv-b" }),
        )
        .await;
        drain(&s).await;
        assert_eq!(
            cf.problems.lock().expect("lock").clone(),
            Vec::<String>::new(),
            "{}",
            t.kind()
        );
        {
            let kv = cf.kv.lock().expect("lock");
            let (value, expiration) = kv.get("l:s.example/kv-a").expect("kv-a").clone();
            assert_eq!(
                serde_json::from_str::<Value>(&value).expect("record")["v"],
                json!(1)
            );
            // Kept 30 days past the link's own expiry, so it answers 410 until then.
            assert_eq!(expiration, Some(4_070_908_800 + 30 * 24 * 3600));
            assert_eq!(kv.get("l:s.example/kv-b").map(|(_, e)| *e), Some(None));
            assert!(kv.contains_key("meta:activation"));
        }

        // A row of version 1 that committed after version 2 was delivered is retired,
        // never sent: KV would take it, having no versions of its own.
        let link = s
            .state
            .db
            .get_link("s.example", "kv-b")
            .await
            .expect("read")
            .expect("link");
        edit(
            &s,
            &link,
            json!({ "target_url": "https://dest.example/b2" }),
        )
        .await;
        drain(&s).await;
        let late = link.edge_record(false).to_json().replace('\'', "''");
        let sql = format!(
            "INSERT INTO outbox (lane, kind, route_key, version, payload, created_at) \
             VALUES ('normal', 'link', 's.example/kv-b', 1, '{late}', {})",
            now_ms()
        );
        origin_api::on_writer!(&s.state.db, pool => {
            sqlx::query(&sql).execute(pool).await.expect("insert");
        });
        let calls = *cf.calls.lock().expect("lock");
        drain(&s).await;
        assert_eq!(
            *cf.calls.lock().expect("lock"),
            calls,
            "{}: nothing was sent",
            t.kind()
        );
        let held = cf.kv.lock().expect("lock").get("l:s.example/kv-b").cloned();
        let (value, _) = held.expect("kv-b");
        assert_eq!(
            serde_json::from_str::<Value>(&value).expect("record")["v"],
            json!(2)
        );
        assert!(s.state.db.pending(10).await.expect("pending").is_empty());
        server.abort();
        t.cleanup().await;
    }
}

//! The publisher against a recording sink that keeps KV in memory and judges pushes as
//! the worker does, on SQLite and PostgreSQL: what reaches the edge, in which order,
//! coalesced, retried after failures, never turned back, and one leader at a time.

use crate::common::TestDb;
use async_trait::async_trait;
use origin_api::db::Db;
use origin_api::model::history::Actor;
use origin_api::model::time::now_ms;
use origin_api::model::Creator;
use origin_api::publisher::sink::{Sink, SinkError};
use origin_api::publisher::{Publisher, Timings, LEASE};
use origin_api::store::{
    ActivationPromise, FailedRow, Lease, LeaseClaim, OutboxRow, OutboxStore, RowFailure, StoreError,
};
use origin_api::{api_keys, links, metrics::Metrics, views, AppState};
use serde_json::{json, Value};
use shared::sync::{judge, Refusal, SyncItem, SyncReply};
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{watch, Notify};

/// KV in memory: judged like the worker (`checks_versions`), or taking whatever comes
/// like Cloudflare's bulk API; can be made to fail whole, or to refuse some keys.
#[derive(Debug)]
struct MemoryEdge {
    kv: Mutex<HashMap<String, String>>,
    pushes: Mutex<Vec<Vec<String>>>,
    down: AtomicBool,
    checks_versions: bool,
    /// Keys KV fails to write (worth retrying, as the worker says).
    poison: Mutex<HashSet<String>>,
    /// Keys the answer leaves out.
    unanswered: Mutex<HashSet<String>>,
    written: Notify,
}

impl Default for MemoryEdge {
    fn default() -> Self {
        MemoryEdge::new(true)
    }
}

#[async_trait]
impl Sink for MemoryEdge {
    fn max_items(&self) -> usize {
        400
    }

    async fn push(&self, items: &[SyncItem]) -> Result<SyncReply, SinkError> {
        if self.down.load(Ordering::SeqCst) {
            return Err(SinkError::Unreachable("connection refused".into()));
        }
        Ok(self.apply(items))
    }
}

impl MemoryEdge {
    fn new(checks_versions: bool) -> Self {
        MemoryEdge {
            kv: Mutex::default(),
            pushes: Mutex::default(),
            down: AtomicBool::new(false),
            checks_versions,
            poison: Mutex::default(),
            unanswered: Mutex::default(),
            written: Notify::new(),
        }
    }

    fn apply(&self, items: &[SyncItem]) -> SyncReply {
        self.pushes
            .lock()
            .expect("lock")
            .push(items.iter().map(|i| i.key.clone()).collect());
        let poison = self.poison.lock().expect("lock").clone();
        let unanswered = self.unanswered.lock().expect("lock").clone();
        let mut kv = self.kv.lock().expect("lock");
        let mut reply = SyncReply::default();
        for item in items {
            if unanswered.contains(&item.key) {
                continue;
            }
            if poison.contains(&item.key) {
                reply.refused.push(Refusal::failed(item, "value too large"));
                continue;
            }
            let verdict = if self.checks_versions {
                judge(item, kv.get(&item.key).map(String::as_str))
            } else {
                Ok(())
            };
            match verdict {
                Ok(()) => {
                    kv.insert(item.key.clone(), item.value.clone());
                    reply.written.push(item.key.clone());
                }
                Err(refusal) => reply.refused.push(refusal),
            }
        }
        self.written.notify_waiters();
        reply
    }

    fn value(&self, key: &str) -> Option<Value> {
        let kv = self.kv.lock().expect("lock");
        kv.get(key).map(|v| serde_json::from_str(v).expect("JSON"))
    }
}

/// Short clocks, so that leases lapse and deadlines pass within a test.
fn test_timings() -> Timings {
    Timings {
        lease_ttl: Duration::from_millis(800),
        renew_every: Duration::from_millis(100),
        push_deadline: Duration::from_millis(200),
        margin: Duration::from_millis(100),
        idle_poll: Duration::from_millis(10),
        max_backoff: Duration::from_millis(100),
        item_retry_base: Duration::ZERO,
        max_attempts: 3,
        heartbeat: Duration::from_secs(60),
    }
}

/// Every undelivered row of both lanes that is due now.
async fn pending(db: &Db) -> Vec<OutboxRow> {
    let mut rows = db.pending("fast", 10_000, now_ms()).await.expect("pending");
    rows.extend(
        db.pending("normal", 10_000, now_ms())
            .await
            .expect("pending"),
    );
    rows
}

/// Polls `done` every few milliseconds for up to 30 s: for what a test cannot be told
/// directly (another task's progress through the database).
async fn eventually<F, Fut>(what: &str, done: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    hop_e2e::poll(what)
        .within(Duration::from_secs(30))
        .every(Duration::from_millis(5))
        .until_true(done)
        .await
}

struct Setup {
    state: AppState,
    edge: Arc<MemoryEdge>,
    publisher: Publisher,
    owner: String,
}

fn setup(t: &TestDb) -> Setup {
    let state = crate::common::app_state(t);
    let edge = Arc::new(MemoryEdge::default());
    let publisher = Publisher::with_timings(
        Arc::new(state.db().clone()),
        edge.clone(),
        state.metrics.clone(),
        test_timings(),
    );
    Setup {
        state,
        edge,
        publisher,
        owner: "acme".into(),
    }
}

async fn create(s: &Setup, body: Value) -> origin_api::model::Link {
    let req: views::links::CreateLink = serde_json::from_value(body).expect("body");
    match links::create_link_once(&s.state.links, &Creator::owner(&s.owner), req, None)
        .await
        .expect("create")
    {
        links::Created::New(link) => *link,
        other => panic!("not created: {other:?}"),
    }
}

/// Applies `changes` (a PATCH body) to `link` at its current version.
async fn edit(
    s: &Setup,
    link: &origin_api::model::Link,
    changes: Value,
) -> origin_api::model::Link {
    let changes: views::links::UpdateLink = serde_json::from_value(changes).expect("changes");
    links::update_link(
        &s.state.links,
        link.clone(),
        link.version,
        changes,
        Actor::System,
    )
    .await
    .expect("update")
}

/// The link `code` of `s.example`, as the database holds it.
async fn stored(s: &Setup, code: &str) -> origin_api::model::Link {
    origin_api::store::links::get(s.state.db(), "s.example", code)
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
        assert_eq!(
            link.view(&Default::default()).edge.state,
            views::links::EdgeState::Pending
        );
        // Two edits before anything is published: the edge gets version 3 only.
        let mut current = link;
        for target in ["https://dest.example/b", "https://dest.example/c"] {
            current = edit(&s, &current, json!({ "target_url": target })).await;
        }
        assert_eq!(current.version, 3);
        // A ban, on the fast lane.
        let (admin, _) =
            api_keys::issue("ops", "t", &api_keys::Grant::admin(), now_ms()).expect("key");
        origin_api::store::api_keys::insert(s.state.db(), &admin)
            .await
            .expect("key");
        let ban = origin_api::model::BanTarget::Host {
            host: "evil.example".into(),
        };
        origin_api::store::bans::insert(
            s.state.db(),
            &ban,
            "phishing",
            "ops/t",
            Actor::System,
            now_ms(),
        )
        .await
        .expect("ban");

        drain(&s).await;

        let pushes = s.edge.pushes.lock().expect("lock").clone();
        assert_eq!(
            pushes[0],
            vec!["cfg:s.example".to_owned(), "deny".to_owned()],
            "{}: the fast lane goes first (the default domain's settings, queued when it \
             was registered, first of all)",
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
        // The heartbeat gave the domain its own meta: an alias numbers no code, so its
        // window is empty but for the headroom.
        let meta = s.edge.value("meta:activation:s.example").expect("meta");
        assert_eq!(
            (meta["low"].clone(), meta["high"].clone()),
            (json!(0), json!(0))
        );
        assert!(meta["headroom"].as_u64() > Some(0));

        // The link says so, with when it will be visible everywhere.
        let read = stored(&s, "spring").await;
        let view = read.view(&Default::default());
        assert_eq!(
            view.edge.state,
            views::links::EdgeState::Published,
            "{}",
            t.kind()
        );
        assert!(view.edge.published_at.is_some() && view.edge.visible_everywhere_by.is_some());
        assert!(pending(s.state.db()).await.is_empty());
        assert_eq!(s.publisher.step().await.expect("idle step"), 0);

        // A further edit makes it pending again until it is delivered.
        let edited = edit(&s, &read, json!({ "title": "Spring" })).await;
        let again = stored(&s, "spring").await;
        assert_eq!(
            again.view(&Default::default()).edge.state,
            views::links::EdgeState::Pending
        );
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
        assert!(
            !pending(s.state.db()).await.is_empty(),
            "{}: nothing is lost",
            t.kind()
        );
        s.edge.down.store(false, Ordering::SeqCst);
        drain(&s).await;
        assert_eq!(
            s.edge.value("l:s.example/retry-me").expect("record")["v"],
            json!(1)
        );

        // The edge already holds version 5 of a link this database has at version 2 (the
        // database was restored from a backup, say). That is not a replay: the row is set
        // aside, loudly, instead of being counted as delivered while the edge keeps a
        // version this database never made.
        let newer = json!({ "t": "https://dest.example/v5", "s": "active", "r": 302, "x": null, "v": 5, "q": false });
        s.edge
            .kv
            .lock()
            .expect("lock")
            .insert("l:s.example/retry-me".into(), newer.to_string());
        let link = stored(&s, "retry-me").await;
        edit(&s, &link, json!({ "title": "t" })).await;
        drain(&s).await;
        assert_eq!(
            s.edge.value("l:s.example/retry-me").expect("record")["v"],
            json!(5)
        );
        assert!(pending(s.state.db()).await.is_empty());
        let failed = s.state.db().failed_rows(0, 10).await.expect("failed");
        assert_eq!(failed.len(), 1, "{}: {failed:?}", t.kind());
        assert!(
            failed[0].last_error.contains("restored from a backup"),
            "{}",
            failed[0].last_error
        );
        assert_eq!(s.state.metrics.publish_edge_ahead.get(), 1);
        assert_eq!(
            stored(&s, "retry-me")
                .await
                .view(&Default::default())
                .edge
                .state,
            views::links::EdgeState::Pending
        );
        t.cleanup().await;
    }
}

#[tokio::test]
async fn one_leader_at_a_time_by_the_databases_clock_with_a_new_epoch_at_each_takeover() {
    for t in TestDb::all("publisher-lease").await {
        let db = &t.db;
        let take = |holder: &'static str, ttl: i64| async move {
            db.take_lease(LEASE, holder, ttl).await.expect("lease")
        };
        let a = take("a", 60_000).await.expect("free: a takes it");
        assert!(a.clean, "{}: never held before", t.kind());
        assert_eq!(take("b", 60_000).await, None);
        assert_eq!(
            take("a", 60_000).await,
            Some(a),
            "a renewal keeps the epoch"
        );
        // a renews for no time at all: its lease has lapsed by the database's clock, and
        // b takes it over: a new epoch, not clean (a push of a's may still land).
        assert_eq!(take("a", -1).await, Some(a));
        let b = take("b", 60_000).await.expect("lapsed: b takes it");
        assert!(b.epoch > a.epoch && !b.clean, "{}: {b:?}", t.kind());
        assert_eq!(take("a", 60_000).await, None);
        assert_eq!(
            db.lease_holder(LEASE).await.expect("holder"),
            Some(("b".to_owned(), b.epoch))
        );
        // A stale claim writes nothing; the holder's does.
        let stale = LeaseClaim {
            name: LEASE,
            holder: "a",
            epoch: a.epoch,
        };
        assert!(matches!(
            db.mark_published(&stale, &[], now_ms()).await,
            Err(StoreError::LeaseLost)
        ));
        let held = LeaseClaim {
            name: LEASE,
            holder: "b",
            epoch: b.epoch,
        };
        db.mark_published(&held, &[], now_ms()).await.expect("held");
        // Given up, it is free at once, and the next holder's epoch follows on, clean.
        db.release_lease(&held).await.expect("release");
        assert_eq!(db.lease_holder(LEASE).await.expect("holder"), None);
        let a2 = take("a", 60_000).await.expect("given up: a takes it");
        assert!(a2.epoch > b.epoch && a2.clean, "{}: {a2:?}", t.kind());
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
        let state = crate::common::app_state(&t);
        let sink = origin_api::publisher::sink::KvBulk::new(&api, "acct123", "ns456", "cf-token")
            .expect("sink");
        let publisher = Publisher::with_timings(
            Arc::new(state.db().clone()),
            Arc::new(sink),
            state.metrics.clone(),
            test_timings(),
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
            assert!(kv.contains_key("meta:activation:s.example"));
        }

        // A row of version 1 that committed after version 2 was delivered is retired,
        // never sent: KV would take it, having no versions of its own.
        let link = origin_api::store::links::get(s.state.db(), "s.example", "kv-b")
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
        s.state.db().write(&sql, &[]).await.expect("insert");
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
        assert!(pending(s.state.db()).await.is_empty());

        // The sweep judges only the batch about to be pushed. Two late rows with a
        // batch's worth of rows from the first on: the first is retired from its batch,
        // the second (just past it) from the next, and neither is ever sent.
        let fresh = |i: usize| {
            format!(
                "('normal', 'link', 's.example/filler-{i}', 1, '{{\"t\":\"https://dest.example/{i}\",\"s\":\"active\",\"v\":1}}', {})",
                now_ms()
            )
        };
        let late_row = format!(
            "('normal', 'link', 's.example/kv-b', 1, '{late}', {})",
            now_ms()
        );
        let mut values = vec![late_row.clone()];
        values.extend((0..origin_api::publisher::BATCH_ROWS as usize - 1).map(fresh));
        values.push(late_row);
        let sql = format!(
            "INSERT INTO outbox (lane, kind, route_key, version, payload, created_at) VALUES {}",
            values.join(", ")
        );
        s.state.db().write(&sql, &[]).await.expect("insert");
        drain(&s).await;
        assert!(pending(s.state.db()).await.is_empty(), "{}", t.kind());
        {
            let kv = cf.kv.lock().expect("lock");
            let (value, _) = kv.get("l:s.example/kv-b").expect("kv-b").clone();
            assert_eq!(
                serde_json::from_str::<Value>(&value).expect("record")["v"],
                json!(2),
                "{}: a late version 1 was pushed over version 2",
                t.kind()
            );
            assert!(kv.contains_key("l:s.example/filler-998"), "{}", t.kind());
        }
        server.abort();
        t.cleanup().await;
    }
}

/// A sink whose pushes, once armed, stall until released, and then land whatever the
/// pusher did meanwhile (a request on the wire that the server goes on with after the
/// client gave up on it).
#[derive(Debug)]
struct Stalling {
    edge: Arc<MemoryEdge>,
    armed: AtomicBool,
    entered: Notify,
    release: Arc<Notify>,
}

#[async_trait]
impl Sink for Stalling {
    fn max_items(&self) -> usize {
        400
    }

    async fn push(&self, items: &[SyncItem]) -> Result<SyncReply, SinkError> {
        if !self.armed.load(Ordering::SeqCst) {
            return Ok(self.edge.apply(items));
        }
        let (edge, items, release) = (self.edge.clone(), items.to_vec(), self.release.clone());
        let released = release.notified_owned();
        let landing = tokio::spawn(async move {
            released.await;
            edge.apply(&items)
        });
        self.entered.notify_waiters();
        landing
            .await
            .map_err(|e| SinkError::Unreachable(e.to_string()))
    }
}

/// The database as one origin sees it, which a test can cut off from renewing its lease
/// (a partition, a process frozen mid-push); counts the delivery marks that commit.
#[derive(Debug)]
struct Cut {
    db: Db,
    cut: AtomicBool,
    marks: AtomicUsize,
}

#[async_trait]
impl OutboxStore for Cut {
    async fn take_lease(&self, n: &str, h: &str, ttl: i64) -> Result<Option<Lease>, StoreError> {
        if self.cut.load(Ordering::SeqCst) {
            return Err(StoreError::Unavailable("cut off".into()));
        }
        self.db.take_lease(n, h, ttl).await
    }
    async fn release_lease(&self, c: &LeaseClaim<'_>) -> Result<(), StoreError> {
        self.db.release_lease(c).await
    }
    async fn lease_holder(&self, n: &str) -> Result<Option<(String, i64)>, StoreError> {
        self.db.lease_holder(n).await
    }
    async fn pending(&self, l: &str, n: i64, at: i64) -> Result<Vec<OutboxRow>, StoreError> {
        self.db.pending(l, n, at).await
    }
    async fn mark_published(
        &self,
        c: &LeaseClaim<'_>,
        rows: &[OutboxRow],
        at: i64,
    ) -> Result<(), StoreError> {
        self.db.mark_published(c, rows, at).await?;
        self.marks.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
    async fn retire_superseded(
        &self,
        c: &LeaseClaim<'_>,
        lane: &str,
        seqs: (i64, i64),
        at: i64,
    ) -> Result<Vec<i64>, StoreError> {
        self.db.retire_superseded(c, lane, seqs, at).await
    }
    async fn record_failures(
        &self,
        c: &LeaseClaim<'_>,
        f: &[RowFailure],
        at: i64,
    ) -> Result<u64, StoreError> {
        self.db.record_failures(c, f, at).await
    }
    async fn note_push_failure(
        &self,
        c: &LeaseClaim<'_>,
        rows: &[OutboxRow],
        e: &str,
    ) -> Result<(), StoreError> {
        self.db.note_push_failure(c, rows, e).await
    }
    async fn failed_rows(&self, after: i64, n: i64) -> Result<Vec<FailedRow>, StoreError> {
        self.db.failed_rows(after, n).await
    }
    async fn retry_failed(&self, seq: Option<i64>) -> Result<u64, StoreError> {
        self.db.retry_failed(seq).await
    }
    async fn prune_delivered(&self, before: i64) -> Result<u64, StoreError> {
        self.db.prune_delivered(before).await
    }
    async fn record_activation(
        &self,
        c: &LeaseClaim<'_>,
        sequence: &str,
        window_ms: i64,
    ) -> Result<ActivationPromise, StoreError> {
        self.db.record_activation(c, sequence, window_ms).await
    }
    async fn code_sequences(&self) -> Result<Vec<String>, StoreError> {
        self.db.code_sequences().await
    }
}

async fn published_version(db: &Db, code: &str) -> Option<u64> {
    origin_api::store::links::get(db, "s.example", code)
        .await
        .expect("read")
        .and_then(|l| l.published.map(|p| p.version))
}

/// Clocks for the fenced test: a wait-out (the push deadline) long enough that the test
/// lands the stale push inside it even on a loaded machine.
fn fenced_timings() -> Timings {
    Timings {
        lease_ttl: Duration::from_millis(4_000),
        push_deadline: Duration::from_millis(1_500),
        margin: Duration::from_millis(200),
        ..test_timings()
    }
}

/// The promise: a stale leader's push never lands after the next leader's push of the
/// same key, and a stale leader marks nothing, on a sink that checks versions (the
/// worker) and on one that does not (Cloudflare's bulk API).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_push_stalled_past_the_lease_never_lands_after_the_standbys_and_the_stale_leader_marks_nothing(
) {
    for t in TestDb::all("publisher-fenced").await {
        for checks_versions in [false, true] {
            let state = crate::common::app_state(&t);
            let edge = Arc::new(MemoryEdge::new(checks_versions));
            let code = format!("fenced-{checks_versions}");
            let link = {
                let req: views::links::CreateLink = serde_json::from_value(
                    json!({ "target_url": "https://dest.example/v1", "code": code }),
                )
                .expect("body");
                links::create_link(&state.links, &Creator::owner("acme"), req)
                    .await
                    .expect("create")
            };
            let stalling = Arc::new(Stalling {
                edge: edge.clone(),
                armed: AtomicBool::new(false),
                entered: Notify::new(),
                release: Arc::new(Notify::new()),
            });
            let a_store = Arc::new(Cut {
                db: state.db().clone(),
                cut: AtomicBool::new(false),
                marks: AtomicUsize::new(0),
            });
            let a_metrics = Metrics::default();
            let a = Publisher::with_timings(
                a_store.clone(),
                stalling.clone(),
                a_metrics.clone(),
                fenced_timings(),
            );
            let (stop, stopped) = watch::channel(false);
            let a_task = tokio::spawn(a.run(stopped.clone()));
            eventually("A delivers v1", || async {
                published_version(state.db(), &code).await == Some(1)
            })
            .await;

            // A's next push stalls on the wire; then A is cut off from the database.
            stalling.armed.store(true, Ordering::SeqCst);
            let entered = stalling.entered.notified();
            let v2 = {
                let changes: views::links::UpdateLink =
                    serde_json::from_value(json!({ "target_url": "https://dest.example/v2" }))
                        .expect("changes");
                links::update_link(&state.links, link.clone(), 1, changes, Actor::System)
                    .await
                    .expect("v2")
            };
            entered.await;
            a_store.cut.store(true, Ordering::SeqCst);
            let marks_before = a_store.marks.load(Ordering::SeqCst);
            // A stops pushing on its own clock before its lease could lapse; only then is
            // the link deleted (v3), so that every push A has in flight carries v2.
            eventually("A stops leading", || async {
                a_metrics.publisher_leader.get() == 0
            })
            .await;
            links::delete_link(&state.links, v2, None, Actor::System)
                .await
                .expect("v3");

            // B takes over once A's lease lapses by the database's clock.
            let b_metrics = Metrics::default();
            let b = Publisher::with_timings(
                Arc::new(state.db().clone()),
                edge.clone(),
                b_metrics.clone(),
                fenced_timings(),
            );
            let b_task = tokio::spawn(b.run(stopped.clone()));
            eventually("B leads", || async {
                b_metrics.publisher_leader.get() == 1
            })
            .await;
            // A's stale push lands a while after the takeover (here a quarter of the push
            // deadline: the time it takes is the model, not a wait for anything), as a
            // request the server finished after its client gave up. B waits the deadline
            // out before its first push, so it lands before that push; a leader that
            // pushed at once would have its push overwritten by it.
            tokio::time::sleep(fenced_timings().push_deadline / 4).await;
            stalling.release.notify_waiters();
            eventually("B delivers v3", || async {
                published_version(state.db(), &code).await == Some(3)
            })
            .await;

            let record = edge.value(&format!("l:s.example/{code}")).expect("record");
            assert_eq!(
                (record["v"].clone(), record["s"].clone()),
                (json!(3), json!("deleted")),
                "{} (versions checked: {checks_versions}): the edge ends with the newest version",
                t.kind()
            );
            assert_eq!(
                a_store.marks.load(Ordering::SeqCst),
                marks_before,
                "{}: the stale leader marked nothing once cut off",
                t.kind()
            );
            assert_eq!(
                a_metrics.publisher_leader.get(),
                0,
                "A knows it does not lead"
            );
            stop.send(true).expect("stop");
            let _ = a_task.await;
            let _ = b_task.await;
        }
        t.cleanup().await;
    }
}

/// No poison pill: one value the edge will not take is retried, then set aside where an
/// operator sees it, while a hundred changes and a ban behind it all reach the edge.
#[tokio::test]
async fn a_value_the_edge_refuses_is_set_aside_and_everything_behind_it_is_delivered() {
    for t in TestDb::all("publisher-poison").await {
        let s = setup(&t);
        s.edge
            .poison
            .lock()
            .expect("lock")
            .insert("l:s.example/poison".into());
        create(
            &s,
            json!({ "target_url": "https://dest.example/p", "code": "poison" }),
        )
        .await;
        let mut links = Vec::new();
        for i in 0..50 {
            let link = create(&s, json!({ "target_url": format!("https://dest.example/{i}"), "code": format!("ok-{i}") })).await;
            links.push(edit(&s, &link, json!({ "title": format!("edited {i}") })).await);
        }
        ban_evil_example(s.state.db()).await;
        drain(&s).await;

        for link in &links {
            let record = s
                .edge
                .value(&format!("l:{}", link.route_key()))
                .expect("record");
            assert_eq!(record["v"], json!(2), "{}: {}", t.kind(), link.route_key());
        }
        assert_eq!(
            s.edge.value("deny").expect("deny")["hosts"],
            json!(["evil.example"])
        );
        assert!(s.edge.value("l:s.example/poison").is_none());
        assert!(pending(s.state.db()).await.is_empty(), "{}", t.kind());
        let failed = s.state.db().failed_rows(0, 10).await.expect("failed");
        assert_eq!(failed.len(), 1, "{failed:?}");
        assert_eq!(
            (failed[0].route_key.as_str(), failed[0].attempts),
            ("s.example/poison", 3)
        );
        assert!(
            failed[0].last_error.contains("value too large"),
            "{}",
            failed[0].last_error
        );
        assert_eq!(s.state.metrics.publish_dead.get(), 1);

        // Once the edge takes it, the operator puts it back in line and it is delivered.
        s.edge.poison.lock().expect("lock").clear();
        assert_eq!(s.state.db().retry_failed(None).await.expect("retry"), 1);
        drain(&s).await;
        assert_eq!(
            s.edge.value("l:s.example/poison").expect("record")["v"],
            json!(1)
        );
        assert!(s
            .state
            .db()
            .failed_rows(0, 10)
            .await
            .expect("failed")
            .is_empty());
        assert_eq!(
            stored(&s, "poison")
                .await
                .view(&Default::default())
                .edge
                .state,
            views::links::EdgeState::Published
        );
        t.cleanup().await;
    }
}

/// A sink that refuses a whole request (400) when any of its items is the bad key, as
/// Cloudflare's bulk API does for a key it cannot store.
#[derive(Debug)]
struct Fussy {
    edge: MemoryEdge,
    bad: String,
    requests: AtomicUsize,
}

#[async_trait]
impl Sink for Fussy {
    fn max_items(&self) -> usize {
        1_000
    }
    async fn push(&self, items: &[SyncItem]) -> Result<SyncReply, SinkError> {
        self.requests.fetch_add(1, Ordering::SeqCst);
        if items.iter().any(|i| i.key == self.bad) {
            return Err(SinkError::Refused {
                status: 400,
                body: "bad key".into(),
            });
        }
        Ok(self.edge.apply(items))
    }
}

#[tokio::test]
async fn a_request_refused_for_one_item_is_split_until_that_item_stands_alone() {
    for t in TestDb::all("publisher-split").await {
        let state = crate::common::app_state(&t);
        let sink = Arc::new(Fussy {
            edge: MemoryEdge::new(false),
            bad: "l:s.example/bad-17".into(),
            requests: AtomicUsize::new(0),
        });
        let publisher = Publisher::with_timings(
            Arc::new(state.db().clone()),
            sink.clone(),
            state.metrics.clone(),
            test_timings(),
        );
        for i in 0..64 {
            let req: views::links::CreateLink = serde_json::from_value(
                json!({ "target_url": format!("https://dest.example/{i}"), "code": format!("bad-{i}") }),
            )
            .expect("body");
            links::create_link(&state.links, &Creator::owner("acme"), req)
                .await
                .expect("create");
        }
        while publisher.step().await.expect("step") > 0 {}
        for i in (0..64).filter(|i| *i != 17) {
            assert!(
                sink.edge.value(&format!("l:s.example/bad-{i}")).is_some(),
                "{}: bad-{i}",
                t.kind()
            );
        }
        let failed = state.db().failed_rows(0, 10).await.expect("failed");
        assert_eq!(
            failed
                .iter()
                .map(|f| f.route_key.as_str())
                .collect::<Vec<_>>(),
            ["s.example/bad-17"]
        );
        // Halving finds one item among 64 in about 2·log2(64) requests, per attempt.
        let requests = sink.requests.load(Ordering::SeqCst);
        assert!(requests < 3 * 2 * 8, "{requests} requests");
        t.cleanup().await;
    }
}

#[tokio::test]
async fn a_key_the_edge_did_not_answer_for_is_not_counted_as_delivered() {
    for t in TestDb::all("publisher-unanswered").await {
        let s = setup(&t);
        s.edge
            .unanswered
            .lock()
            .expect("lock")
            .insert("l:s.example/silent".into());
        create(
            &s,
            json!({ "target_url": "https://dest.example/s", "code": "silent" }),
        )
        .await;
        create(
            &s,
            json!({ "target_url": "https://dest.example/t", "code": "spoken" }),
        )
        .await;
        s.publisher.step().await.expect("step");
        assert_eq!(
            stored(&s, "spoken")
                .await
                .view(&Default::default())
                .edge
                .state,
            views::links::EdgeState::Published
        );
        assert_eq!(
            stored(&s, "silent")
                .await
                .view(&Default::default())
                .edge
                .state,
            views::links::EdgeState::Pending,
            "{}",
            t.kind()
        );
        // Once answered, it is delivered.
        s.edge.unanswered.lock().expect("lock").clear();
        drain(&s).await;
        assert_eq!(
            stored(&s, "silent")
                .await
                .view(&Default::default())
                .edge
                .state,
            views::links::EdgeState::Published
        );
        t.cleanup().await;
    }
}

/// A sink whose pushes of link records never answer; the fast lane's go through.
#[derive(Debug)]
struct RecordsStuck {
    edge: Arc<MemoryEdge>,
}

#[async_trait]
impl Sink for RecordsStuck {
    fn max_items(&self) -> usize {
        400
    }
    async fn push(&self, items: &[SyncItem]) -> Result<SyncReply, SinkError> {
        if items.iter().any(|i| i.key.starts_with("l:")) {
            std::future::pending::<()>().await;
        }
        Ok(self.edge.apply(items))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ban_reaches_the_edge_while_the_normal_lane_is_stuck() {
    for t in TestDb::all("publisher-lanes").await {
        let state = crate::common::app_state(&t);
        let edge = Arc::new(MemoryEdge::new(true));
        let publisher = Publisher::with_timings(
            Arc::new(state.db().clone()),
            Arc::new(RecordsStuck { edge: edge.clone() }),
            state.metrics.clone(),
            test_timings(),
        );
        for i in 0..20 {
            let req: views::links::CreateLink = serde_json::from_value(
                json!({ "target_url": format!("https://dest.example/{i}"), "code": format!("stuck-{i}") }),
            )
            .expect("body");
            links::create_link(&state.links, &Creator::owner("acme"), req)
                .await
                .expect("create");
        }
        let (stop, stopped) = watch::channel(false);
        let task = tokio::spawn(publisher.run(stopped));
        ban_evil_example(state.db()).await;
        eventually("the denylist reaches the edge", || async {
            edge.value("deny")
                .is_some_and(|d| d["hosts"] == json!(["evil.example"]))
        })
        .await;
        assert!(
            edge.value("l:s.example/stuck-0").is_none(),
            "{}: the records are still stuck",
            t.kind()
        );
        stop.send(true).expect("stop");
        let _ = task.await;
        t.cleanup().await;
    }
}

/// The meta is pushed again on a heartbeat, with a newer version and time, so the edge's
/// copy never outlives its promise while the publisher runs; and it says what it
/// promises.
#[tokio::test]
async fn the_activation_meta_is_pushed_again_on_a_heartbeat_and_states_its_promise() {
    for t in TestDb::all("publisher-heartbeat").await {
        let state = crate::common::app_state(&t);
        let edge = Arc::new(MemoryEdge::new(true));
        let publisher = Publisher::with_timings(
            Arc::new(state.db().clone()),
            edge.clone(),
            state.metrics.clone(),
            Timings {
                heartbeat: Duration::ZERO,
                ..test_timings()
            },
        );
        let req: views::links::CreateLink =
            serde_json::from_value(json!({ "target_url": "https://dest.example/" })).expect("body");
        links::create_link(&state.links, &Creator::owner("acme"), req)
            .await
            .expect("create");
        publisher.step().await.expect("step");
        let first = edge.value("meta:activation:s.example").expect("meta");
        assert_eq!(first["w"], json!(600), "{first}");
        assert!(first["headroom"].as_u64() >= Some(origin_api::store::MIN_HEADROOM as u64));
        assert_eq!(first["high"], json!(10_000));
        // Nothing new to publish: the heartbeat pushes the meta again, newer.
        publisher.step().await.expect("step");
        let second = edge.value("meta:activation:s.example").expect("meta");
        assert!(
            second["v"].as_u64() > first["v"].as_u64(),
            "{first} then {second}"
        );
        assert_eq!(second["high"], first["high"]);
        // Another domain numbers its codes apart, and has a window of its own.
        crate::common::register(state.db(), "b.example").await;
        for _ in 0..2 {
            let req: views::links::CreateLink = serde_json::from_value(
                json!({ "target_url": "https://dest.example/b", "domain": "b.example" }),
            )
            .expect("body");
            links::create_link(&state.links, &Creator::owner("acme"), req)
                .await
                .expect("create");
        }
        publisher.step().await.expect("step");
        publisher.step().await.expect("step");
        let b = edge.value("meta:activation:b.example").expect("b's meta");
        assert_eq!(
            (b["low"].clone(), b["high"].clone()),
            (json!(0), json!(10_000))
        );
        let s_meta = edge.value("meta:activation:s.example").expect("meta");
        assert_eq!(
            s_meta["high"],
            first["high"],
            "{}: b.example's codes moved s.example's window",
            t.kind()
        );
        t.cleanup().await;
    }
}

/// Bans the host `evil.example` as an operator would, straight in the store.
async fn ban_evil_example(db: &origin_api::db::Db) {
    let host = origin_api::model::BanTarget::Host {
        host: "evil.example".into(),
    };
    origin_api::store::bans::insert(db, &host, "phishing", "ops/t", Actor::System, now_ms())
        .await
        .expect("ban");
}

//! Fresh databases for tests: a SQLite file in a temporary directory always, and a new
//! PostgreSQL database when a server answers (a visible notice otherwise).

#![allow(dead_code, unreachable_pub)] // a helper module: each test file uses its own part

use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use clap::Parser;
use http_body_util::BodyExt;
use origin_api::api_keys;
use origin_api::config::{Cli, Settings};
use origin_api::db::Db;
use origin_api::model::time::now_ms;
use origin_api::AppState;
use serde_json::Value;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tower::ServiceExt;

pub fn settings(database_url: &str) -> Settings {
    Cli::try_parse_from(["hop-origin", "--database-url", database_url])
        .expect("valid flags")
        .settings
}

/// The PostgreSQL server the tests use; overridable for machines that have one elsewhere.
pub fn postgres_url() -> String {
    std::env::var("HOP_TEST_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".into())
}

/// A migrated database that exists only for one test.
pub struct TestDb {
    pub db: Db,
    pub url: String,
    cleanup: Cleanup,
}

enum Cleanup {
    Dir(#[allow(dead_code)] tempfile::TempDir),
    Postgres { admin: sqlx::PgPool, name: String },
}

impl TestDb {
    pub async fn sqlite() -> TestDb {
        TestDb::sqlite_at(None).await
    }

    /// A SQLite database migrated to `version` (all of them when `None`).
    async fn sqlite_at(version: Option<i64>) -> TestDb {
        let dir = tempfile::tempdir().expect("temp dir");
        let url = format!("sqlite://{}", dir.path().join("test.db").display());
        let db = migrated(&url, version).await;
        TestDb {
            db,
            url,
            cleanup: Cleanup::Dir(dir),
        }
    }

    /// A fresh PostgreSQL database, or `None` (with a notice) when no server answers.
    pub async fn postgres(test: &str) -> Option<TestDb> {
        TestDb::postgres_at(test, None).await
    }

    /// A fresh PostgreSQL database migrated to `version` (all of them when `None`).
    async fn postgres_at(test: &str, version: Option<i64>) -> Option<TestDb> {
        let admin_url = postgres_url();
        let probe = sqlx::postgres::PgPoolOptions::new().acquire_timeout(Duration::from_secs(3));
        let admin = match probe.connect(&admin_url).await {
            Ok(pool) => pool,
            // The README's test command finds or starts a server and requires it: there a
            // missing server is a failure, not a skip.
            Err(e) if postgres_required() => {
                panic!("{test}: no PostgreSQL at {admin_url} ({e}), and HOP_TEST_REQUIRE_POSTGRES is set")
            }
            Err(e) => {
                eprintln!("NOTICE: {test}: skipping PostgreSQL, no server at {admin_url} ({e})");
                return None;
            }
        };
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default();
        // A counter too: two tests of one process may read the same instant.
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let name = format!("hop_test_{}_{n}_{nanos}", std::process::id());
        sqlx::query(&format!("CREATE DATABASE {name}"))
            .execute(&admin)
            .await
            .expect("create database");
        let mut url = url::Url::parse(&admin_url).expect("URL");
        url.set_path(&name);
        let url = url.to_string();
        let db = migrated(&url, version).await;
        Some(TestDb {
            db,
            url,
            cleanup: Cleanup::Postgres { admin, name },
        })
    }

    /// Every backend available here: SQLite, and PostgreSQL when reachable.
    pub async fn all(test: &str) -> Vec<TestDb> {
        // Server-side errors are logged, not answered: show them with a failing test.
        let _ = tracing_subscriber::fmt()
            .with_test_writer()
            .with_env_filter("warn")
            .try_init();
        let mut dbs = vec![TestDb::sqlite().await];
        dbs.extend(TestDb::postgres(test).await);
        dbs
    }

    /// Every backend available here, migrated only up to `version`: the schema of an
    /// older release, for tests of an upgrade.
    pub async fn all_at(test: &str, version: i64) -> Vec<TestDb> {
        let mut dbs = vec![TestDb::sqlite_at(Some(version)).await];
        dbs.extend(TestDb::postgres_at(test, Some(version)).await);
        dbs
    }

    pub fn kind(&self) -> &'static str {
        self.db.kind()
    }

    /// Closes the pool and drops a PostgreSQL database.
    pub async fn cleanup(self) {
        self.db.close().await;
        if let Cleanup::Postgres { admin, name } = self.cleanup {
            sqlx::query(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
                .execute(&admin)
                .await
                .expect("drop database");
        }
    }
}

/// The database at `url`, migrated to `version` (all the way when `None`). Nothing is
/// registered in it (`prepare` registers the default domain; a test says what it needs).
async fn migrated(url: &str, version: Option<i64>) -> Db {
    let db = Db::connect(url).await.expect("connect");
    match version {
        None => {
            db.migrate().await.expect("migrate");
            // As `hop-origin` registers its default domain at startup.
            origin_api::domains::register_if_missing(&db, "s.example")
                .await
                .expect("register s.example");
        }
        Some(v) => db.migrate_to(v).await.expect("migrate"),
    }
    db
}

/// Registers `domain` shared, with every default setting (links may be created on it by
/// any key), unless it is registered.
pub async fn register(db: &Db, domain: &str) {
    origin_api::domains::register_if_missing(db, domain)
        .await
        .expect("register a domain");
}

/// A key ring for tests (never used outside them).
pub const TEST_KEYS: &str = "1:000102030405060708090a0b0c0d0e0f";
/// The metrics token of every test origin.
pub const METRICS_TOKEN: &str = "test-metrics-token-0123456789";

/// The router over `db`, as `hop-origin serve` builds it, with the default domain
/// `s.example` and test permutation keys.
pub fn app_state(t: &TestDb) -> origin_api::AppState {
    app_state_with(t, &[])
}

/// As [`app_state`], with more flags.
///
/// Secrets are not flags: `--edge-token X` (`--permutation-keys X`) among `extra` is
/// given to the origin as `HOP_EDGE_TOKEN` (`HOP_PERMUTATION_KEYS`) would be, and every
/// test origin has the test keys (unless given others) and [`METRICS_TOKEN`].
pub fn app_state_with(t: &TestDb, extra: &[&str]) -> origin_api::AppState {
    let mut args = vec![
        "hop-origin",
        "--database-url",
        &t.url,
        "--default-domain",
        "s.example",
    ];
    let mut env = vec![
        ("HOP_PERMUTATION_KEYS", TEST_KEYS.to_owned()),
        ("HOP_METRICS_TOKEN", METRICS_TOKEN.to_owned()),
    ];
    let mut rest = extra.iter();
    while let Some(arg) = rest.next() {
        match *arg {
            "--edge-token" => env.push((
                "HOP_EDGE_TOKEN",
                rest.next().expect("--edge-token VALUE").to_string(),
            )),
            // An origin whose public listener does not serve `/metrics`.
            "--no-metrics-token" => env.retain(|(n, _)| *n != "HOP_METRICS_TOKEN"),
            "--permutation-keys" => {
                env.retain(|(n, _)| *n != "HOP_PERMUTATION_KEYS");
                env.push((
                    "HOP_PERMUTATION_KEYS",
                    rest.next().expect("--permutation-keys VALUE").to_string(),
                ));
            }
            other => args.push(other),
        }
    }
    let mut settings = Cli::try_parse_from(args).expect("valid flags").settings;
    settings.secrets = origin_api::config::Secrets::read(|name| {
        env.iter().find(|(n, _)| *n == name).map(|(_, v)| v.clone())
    })
    .expect("valid secrets");
    origin_api::AppState::new(t.db.clone(), settings)
}

/// The API of one origin, through its real router.
pub struct Api {
    pub state: AppState,
}

pub struct Reply {
    pub status: StatusCode,
    pub headers: axum::http::HeaderMap,
    pub body: Value,
    pub text: String,
}

impl Api {
    /// The API over `t`, with the test origin's settings (see [`app_state`]).
    pub fn of(t: &TestDb) -> Api {
        Api {
            state: app_state(t),
        }
    }

    pub async fn key(&self, owner: &str, admin: bool) -> String {
        let (key, token) = api_keys::issue(
            owner,
            "test",
            &api_keys::Grant {
                admin,
                ..Default::default()
            },
            now_ms(),
        )
        .expect("issue");
        origin_api::store::api_keys::insert(self.state.db(), &key)
            .await
            .expect("store key");
        token
    }

    /// A key of `owner` limited to `domains` (`keys create --domain`).
    pub async fn key_limited_to(&self, owner: &str, domains: &[&str]) -> String {
        let grant = api_keys::Grant {
            admin: false,
            domains: domains.iter().map(|d| (*d).to_owned()).collect(),
        };
        let (key, token) = api_keys::issue(owner, "limited", &grant, now_ms()).expect("issue");
        origin_api::store::api_keys::insert(self.state.db(), &key)
            .await
            .expect("store key");
        token
    }

    pub async fn send(&self, req: Request<Body>) -> Reply {
        let res = origin_api::routes::router(self.state.clone())
            .oneshot(req)
            .await
            .expect("infallible");
        let status = res.status();
        let headers = res.headers().clone();
        let bytes = res.into_body().collect().await.expect("body").to_bytes();
        let text = String::from_utf8_lossy(&bytes).into_owned();
        Reply {
            status,
            headers,
            body: serde_json::from_str(&text).unwrap_or(Value::Null),
            text,
        }
    }

    /// Adds the edge's staged clicks to the rollups, as the origin's fold task does
    /// every second (the router alone runs no background task).
    pub async fn fold_clicks(&self) -> origin_api::clicks::fold::FoldReport {
        self.state
            .clicks
            .counts
            .fold(self.state.db())
            .await
            .expect("fold the staged clicks")
    }

    /// Writes the clicks the origin's own redirects counted, as its flush task does.
    pub async fn flush_clicks(&self) {
        self.state
            .clicks
            .recorder
            .flush(&self.state.clicks.counts, self.state.db())
            .await;
    }

    /// Writes the legacy misses this origin holds, as its flush task would.
    pub async fn flush_legacy_misses(&self) {
        self.state
            .clicks
            .counts
            .legacy
            .flush(self.state.db())
            .await
            .expect("legacy misses written");
    }

    /// `POST path` with a JSON body and `Authorization: Bearer token`.
    pub async fn post_json(&self, token: &str, path: &str, body: &Value) -> Reply {
        self.send(
            Request::post(path)
                .header(header::AUTHORIZATION, format!("Bearer {token}"))
                .header(header::CONTENT_TYPE, "application/json")
                .body(Body::from(body.to_string()))
                .expect("request"),
        )
        .await
    }

    /// `PATCH path` with a JSON body, as `token`, with `If-Match: if_match` when given.
    pub async fn patch_json(
        &self,
        token: &str,
        path: &str,
        if_match: Option<&str>,
        body: Value,
    ) -> Reply {
        let mut req = Request::patch(path)
            .header(header::AUTHORIZATION, format!("Bearer {token}"))
            .header(header::CONTENT_TYPE, "application/json");
        if let Some(v) = if_match {
            req = req.header(header::IF_MATCH, v);
        }
        self.send(req.body(Body::from(body.to_string())).expect("request"))
            .await
    }

    /// `METHOD path` without a body, with `Authorization: Bearer token`.
    pub async fn call_as(&self, token: &str, method: &str, path: &str) -> Reply {
        self.send(
            Request::builder()
                .method(method)
                .uri(path)
                .header(header::AUTHORIZATION, format!("Bearer {token}"))
                .body(Body::empty())
                .expect("request"),
        )
        .await
    }

    /// `POST path` with a JSON body, as `token`, under `Idempotency-Key: key`.
    pub async fn post_json_idempotent(
        &self,
        token: &str,
        path: &str,
        key: &str,
        body: &Value,
    ) -> Reply {
        self.send(
            Request::post(path)
                .header(header::AUTHORIZATION, format!("Bearer {token}"))
                .header(header::CONTENT_TYPE, "application/json")
                .header("idempotency-key", key)
                .body(Body::from(body.to_string()))
                .expect("request"),
        )
        .await
    }

    pub async fn create(&self, token: &str, body: Value) -> Reply {
        self.post_json(token, "/v1/links", &body).await
    }

    pub async fn read(&self, token: &str, domain: &str, code: &str) -> Reply {
        self.call_as(token, "GET", &format!("/v1/links/{domain}/{code}"))
            .await
    }

    pub async fn visit(&self, method: &str, host: &str, path: &str) -> Reply {
        self.send(
            Request::builder()
                .method(method)
                .uri(path)
                .header(header::HOST, host)
                .body(Body::empty())
                .expect("request"),
        )
        .await
    }

    /// `GET path` on `s.example` as a person would: a browser's user agent, from a
    /// public address (so the visit counts against `max_visits`).
    pub async fn visit_as_person(&self, path: &str) -> Reply {
        let mut req = Request::builder()
            .uri(path)
            .header(header::HOST, "s.example")
            .header(
                header::USER_AGENT,
                "Mozilla/5.0 (X11; Linux x86_64) Firefox/133.0",
            )
            .body(Body::empty())
            .expect("request");
        let peer: std::net::SocketAddr = "198.51.100.7:40000".parse().expect("address");
        req.extensions_mut()
            .insert(axum::extract::ConnectInfo(peer));
        self.send(req).await
    }

    /// Runs this origin's webhook dispatcher (and with it the sweeps: expiry, hourly
    /// clicks) until the returned sender is dropped or set.
    pub fn run_dispatcher(&self) -> tokio::sync::watch::Sender<bool> {
        let (stop, stopped) = tokio::sync::watch::channel(false);
        let d = origin_api::webhooks::dispatch::Dispatcher::new(
            self.state.db().clone(),
            origin_api::app::webhook_settings(&self.state.settings),
            self.state.links.settings.short_urls.clone(),
            self.state.metrics.clone(),
        )
        .expect("a client");
        tokio::spawn(d.run(stopped));
        stop
    }

    /// `/metrics`, read with the metrics token.
    pub async fn metrics(&self) -> String {
        self.send(
            Request::get("/metrics")
                .header(header::AUTHORIZATION, format!("Bearer {METRICS_TOKEN}"))
                .body(Body::empty())
                .expect("request"),
        )
        .await
        .text
    }

    pub async fn count(&self, table: &str) -> i64 {
        let [(n,)]: [(i64,); 1] = self
            .rows(&format!("SELECT COUNT(*) FROM {table}"))
            .await
            .try_into()
            .expect("one count");
        n
    }

    /// The rows `sql` reads.
    pub async fn rows<T: origin_api::store::sql::Row>(&self, sql: &str) -> Vec<T> {
        self.state
            .db()
            .reader()
            .await
            .expect("reader")
            .conn()
            .fetch_all(sql, &[])
            .await
            .expect("read")
    }

    pub async fn exec(&self, sql: &str) {
        self.state.db().write(sql, &[]).await.expect("exec");
    }
}

pub async fn apis(test: &str) -> Vec<(Api, TestDb)> {
    apis_with(test, &[]).await
}

pub async fn apis_with(test: &str, flags: &[&str]) -> Vec<(Api, TestDb)> {
    TestDb::all(test)
        .await
        .into_iter()
        .map(|t| {
            (
                Api {
                    state: app_state_with(&t, flags),
                },
                t,
            )
        })
        .collect()
}

/// Takes the publisher's lease for the holder `p`, as a publisher would: its claim.
pub async fn publisher_claim(db: &Db) -> origin_api::store::LeaseClaim<'static> {
    use origin_api::store::OutboxStore;
    let lease = db
        .take_lease("publisher", "p", 60_000)
        .await
        .expect("lease")
        .expect("free");
    origin_api::store::LeaseClaim {
        name: "publisher",
        holder: "p",
        epoch: lease.epoch,
    }
}

/// Whether a test that needs PostgreSQL must fail without it (`HOP_TEST_REQUIRE_POSTGRES=1`,
/// set by `scripts/test`) rather than skip with a notice.
pub fn postgres_required() -> bool {
    std::env::var("HOP_TEST_REQUIRE_POSTGRES").is_ok_and(|v| v == "1")
}

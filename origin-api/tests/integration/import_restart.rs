//! The restart invariant with real processes: `hop-origin import` runs against a real
//! `hop-origin serve` through a proxy, the origin is killed (SIGKILL) at a chosen point
//! mid-import (its fifth batch committed, the answer never delivered), the import gives
//! up, the origin comes back, and running the same import again completes it with every
//! row a link exactly once — on SQLite and on PostgreSQL.

use crate::common::{TestDb, TEST_KEYS};
use axum::extract::{Request, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use hop_e2e::{free_port, Process};
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_hop-origin");
const ROWS: usize = 20_000;

fn hop(db_url: &str) -> Command {
    let mut command = Command::new(BIN);
    command
        .env("HOP_DATABASE_URL", db_url)
        .env("HOP_PERMUTATION_KEYS", TEST_KEYS)
        .env("HOP_DEFAULT_DOMAIN", "s.example")
        .env("HOP_LOG", "warn")
        .env("HOP_METRICS_LISTEN", "off")
        .stdin(Stdio::null());
    command
}

/// Starts `serve` on `port` and waits until it answers.
async fn start_origin(db_url: &str, port: u16, log: PathBuf) -> Process {
    let mut command = hop(db_url);
    command
        .env("HOP_LISTEN", format!("127.0.0.1:{port}"))
        .arg("serve");
    let mut origin = Process::spawn("the origin", command, log);
    origin
        .wait_until_answering(&format!("http://127.0.0.1:{port}/healthz"))
        .await;
    origin
}

/// The bulk call whose answer the proxy holds back: the import has four batches in
/// its journal and a fifth created that it does not know of.
const HELD_CALL: usize = 5;

/// Forwards every call to the origin. Once (while armed), it lets the origin answer the
/// [`HELD_CALL`]-th successful bulk call, so that batch is committed, and then holds the answer
/// back: it tells the test (`held`), which kills the origin, and answers 502 when told
/// the origin is gone (`killed`). The import stops at the same point every run.
#[derive(Clone)]
struct Proxy {
    origin: String,
    client: reqwest::Client,
    bulk_calls: Arc<AtomicUsize>,
    armed: Arc<AtomicBool>,
    held: Arc<tokio::sync::Notify>,
    killed: Arc<tokio::sync::Notify>,
}

impl Proxy {
    /// Serves on a port of its own; returns its address.
    async fn start(self) -> String {
        let app = axum::Router::new().fallback(forward).with_state(self);
        hop_e2e::serve_in_background(app).await
    }
}

async fn forward(State(proxy): State<Proxy>, req: Request) -> Response {
    let (parts, body) = req.into_parts();
    let Ok(body) = axum::body::to_bytes(body, 64 << 20).await else {
        return StatusCode::BAD_REQUEST.into_response();
    };
    let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    let mut call = proxy
        .client
        .request(parts.method.clone(), format!("{}{path}", proxy.origin))
        .body(body);
    for (name, value) in &parts.headers {
        if name != header::HOST && name != header::CONTENT_LENGTH {
            call = call.header(name, value);
        }
    }
    let Ok(answer) = call.send().await else {
        return StatusCode::BAD_GATEWAY.into_response();
    };
    let status = answer.status();
    let headers = answer.headers().clone();
    let Ok(bytes) = answer.bytes().await else {
        return StatusCode::BAD_GATEWAY.into_response();
    };
    if parts.uri.path() == "/v1/links/bulk"
        && status.is_success()
        && proxy.bulk_calls.fetch_add(1, Ordering::SeqCst) + 1 == HELD_CALL
        && proxy.armed.swap(false, Ordering::SeqCst)
    {
        proxy.held.notify_one();
        proxy.killed.notified().await;
        return StatusCode::BAD_GATEWAY.into_response();
    }
    let mut out = Response::new(axum::body::Body::from(bytes));
    *out.status_mut() = status;
    *out.headers_mut() = headers;
    out.headers_mut().remove(header::TRANSFER_ENCODING);
    out
}

fn run_import(db_url: &str, origin: &str, token: &str, file: &Path) -> Command {
    let mut command = hop(db_url);
    command
        .env("HOP_ORIGIN_URL", origin)
        .env("HOP_API_KEY", token)
        .arg("import")
        .arg(file)
        .args(["--batch-size", "250", "--retry-for", "2"]);
    command
}

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

// Two threads: the proxy answers while the test waits on the import's process.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killing_the_origin_mid_import_and_importing_again_loses_nothing_and_duplicates_nothing() {
    for t in TestDb::all("import-restart").await {
        let dir = tempfile::tempdir().unwrap();
        let keys = hop(&t.url)
            .args(["keys", "create", "--owner", "importer"])
            .output()
            .unwrap();
        assert!(keys.status.success(), "{}", text(&keys));
        let token = String::from_utf8(keys.stdout)
            .unwrap()
            .lines()
            .last()
            .unwrap()
            .to_owned();

        let file = dir.path().join("campaign.csv");
        let mut csv = String::from("target_url,code\n");
        for i in 0..ROWS {
            let alias = if i.is_multiple_of(50) {
                format!("spring-{i}")
            } else {
                String::new()
            };
            csv.push_str(&format!("https://dest.example/{i},{alias}\n"));
        }
        std::fs::write(&file, csv).unwrap();
        let journal = dir.path().join("campaign.csv.hop-import");

        let port = free_port();
        let mut origin = start_origin(&t.url, port, dir.path().join("origin.log")).await;
        let proxy = Proxy {
            origin: format!("http://127.0.0.1:{port}"),
            client: reqwest::Client::new(),
            bulk_calls: Arc::default(),
            armed: Arc::new(AtomicBool::new(true)),
            held: Arc::default(),
            killed: Arc::default(),
        };
        let (held, killed) = (proxy.held.clone(), proxy.killed.clone());
        // The import knows the origin by the proxy's address, the same for both runs.
        let origin_url = proxy.start().await;

        // Kill the origin once its fifth batch is committed, its answer held back.
        let import_log = dir.path().join("import.log");
        let first = run_import(&t.url, &origin_url, &token, &file);
        let mut first = Process::spawn("the import", first, import_log.clone());
        tokio::time::timeout(Duration::from_secs(120), held.notified())
            .await
            .unwrap_or_else(|_| {
                panic!(
                    "the import never reached its fifth batch: {}",
                    std::fs::read_to_string(&import_log).unwrap_or_default()
                )
            });
        origin.kill();
        killed.notify_one();
        let status = first.wait();
        let said = std::fs::read_to_string(&import_log).unwrap();
        assert!(
            !status.success(),
            "{}: the import cannot have finished: {said}",
            t.kind()
        );
        assert!(said.contains("Re-run the same command"), "{said}");
        // The journal's first line names the import; one line per answered call.
        let recorded = std::fs::read_to_string(&journal).unwrap().lines().count() - 1;
        assert_eq!(recorded, HELD_CALL - 1, "{}: calls recorded", t.kind());
        let (links,): (i64,) =
            t.db.read_all("SELECT COUNT(*) FROM links", &[])
                .await
                .expect("count")
                .pop()
                .expect("a row");
        assert_eq!(
            links,
            (HELD_CALL * 250) as i64,
            "{}: the held batch was created, unknown to the import",
            t.kind()
        );

        // Same origin address and database, same command.
        let _origin = start_origin(&t.url, port, dir.path().join("origin-again.log")).await;
        let second = run_import(&t.url, &origin_url, &token, &file)
            .output()
            .unwrap();
        let said = text(&second);
        assert!(second.status.success(), "{}: {said}", t.kind());
        assert!(
            said.contains(&format!("{ROWS} rows: ")) && said.contains(" 0 refused"),
            "{said}"
        );

        let export = dir.path().join("links.jsonl");
        let exported = hop(&t.url)
            .env("HOP_ORIGIN_URL", &origin_url)
            .env("HOP_API_KEY", &token)
            .args(["export", "--format", "jsonl", "--output"])
            .arg(&export)
            .output()
            .unwrap();
        assert!(exported.status.success(), "{}", text(&exported));
        let mut targets = HashSet::new();
        let mut codes = HashSet::new();
        for line in std::fs::read_to_string(&export).unwrap().lines() {
            let link: serde_json::Value = serde_json::from_str(line).unwrap();
            let target = link["target_url"].as_str().unwrap().to_owned();
            let i: usize = target.rsplit('/').next().unwrap().parse().unwrap();
            if i.is_multiple_of(50) {
                assert_eq!(link["code"], format!("spring-{i}"));
            }
            assert!(targets.insert(target), "{}: {line} duplicated", t.kind());
            codes.insert(link["code"].as_str().unwrap().to_owned());
        }
        assert_eq!((targets.len(), codes.len()), (ROWS, ROWS), "{}", t.kind());

        let third = run_import(&t.url, &origin_url, &token, &file)
            .output()
            .unwrap();
        assert!(
            text(&third).contains(&format!("0 created now, {ROWS} imported before")),
            "{}",
            text(&third)
        );
        drop(_origin);
        t.cleanup().await;
    }
}

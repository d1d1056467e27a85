//! The origin skeleton: configuration, database creation and migration, liveness and
//! readiness, on SQLite always and on PostgreSQL when one is reachable.

use axum::body::Body;
use axum::http::{Request, StatusCode};

use crate::common::{settings, TestDb};
use hop_e2e::{poll, Process};
use http_body_util::BodyExt;
use origin_api::config::Settings;
use origin_api::db::Db;
use origin_api::{prepare, routes, AppState};
use std::process::Command;
use std::time::Duration;
use tower::ServiceExt;

fn sqlite_in(dir: &tempfile::TempDir, name: &str) -> Settings {
    settings(&format!("sqlite://{}", dir.path().join(name).display()))
}

async fn get(state: AppState, path: &str) -> (StatusCode, Option<String>, String) {
    let res = routes::router(state)
        .oneshot(Request::get(path).body(Body::empty()).expect("request"))
        .await
        .expect("infallible");
    let status = res.status();
    let content_type = res
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let body = res.into_body().collect().await.expect("body").to_bytes();
    (
        status,
        content_type,
        String::from_utf8_lossy(&body).into_owned(),
    )
}

async fn tables(db: &Db) -> Vec<String> {
    let mut names: Vec<String> = match db {
        Db::Sqlite(pools) => sqlx::query_scalar(
            "SELECT name FROM sqlite_master WHERE type = 'table' \
             AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '_sqlx%'",
        )
        .fetch_all(&pools.read)
        .await
        .expect("list tables"),
        Db::Postgres(pool) => sqlx::query_scalar(
            "SELECT tablename::text FROM pg_tables \
             WHERE schemaname = current_schema() AND tablename NOT LIKE '_sqlx%'",
        )
        .fetch_all(pool)
        .await
        .expect("list tables"),
    };
    names.sort();
    names
}

const TABLES: [&str; 40] = [
    "account_origins",
    "activation_promises",
    "api_keys",
    "bans",
    "click_days",
    "click_hours",
    "click_seen",
    "click_sources",
    "click_staged",
    "domain_owners",
    "domains",
    "feed_entries",
    "feeds",
    "foreign_codes",
    "id_segments",
    "idempotency",
    "invitations",
    "key_makers",
    "known_devices",
    "leases",
    "legacy_codes",
    "legacy_misses",
    "limit_republish",
    "link_history",
    "link_hosts",
    "links",
    "login_attempts",
    "memberships",
    "outbox",
    "owner_quotas",
    "owner_usage",
    "recheck_position",
    "reports",
    "sessions",
    "users",
    "visit_limit_people",
    "webhook_attempts",
    "webhook_endpoints",
    "webhook_events",
    "webhook_marks",
];

#[tokio::test]
async fn a_missing_sqlite_database_is_created_and_migrated_once() {
    let dir = tempfile::tempdir().expect("temp dir");
    let settings = sqlite_in(&dir, "fresh.db");
    let db = prepare(&settings).await.expect("create and migrate");
    assert!(dir.path().join("fresh.db").exists());
    assert_eq!(tables(&db).await, TABLES);
    // A second start finds everything applied and changes nothing.
    let again = prepare(&settings).await.expect("re-migrate");
    assert_eq!(tables(&again).await, TABLES);
}

#[tokio::test]
async fn the_route_key_is_unique_per_domain_in_the_database() {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = prepare(&sqlite_in(&dir, "u.db")).await.expect("migrate");
    let Db::Sqlite(pools) = &db else {
        unreachable!("sqlite URL")
    };
    let pool = &pools.write;
    let insert = |id: i64, domain: &'static str| {
        sqlx::query(
            "INSERT INTO links (link_id, domain, code, target_url, owner_id, status, code_kind, \
             created_at, updated_at) VALUES (?, ?, 'abc', 'https://e.example/', 'o', 'active', \
             'custom', 0, 0)",
        )
        .bind(id)
        .bind(domain)
        .execute(pool)
    };
    insert(1, "s.example").await.expect("first");
    insert(2, "t.example")
        .await
        .expect("same code, other domain");
    let dup = insert(3, "s.example").await.expect_err("same route key");
    assert!(dup.to_string().contains("UNIQUE"), "{dup}");
}

#[tokio::test]
async fn health_and_readiness() {
    let dir = tempfile::tempdir().expect("temp dir");
    let settings = sqlite_in(&dir, "h.db");
    let db = prepare(&settings).await.expect("migrate");
    let state = AppState::new(db.clone(), settings);

    assert_eq!(get(state.clone(), "/healthz").await.0, StatusCode::OK);
    assert_eq!(get(state.clone(), "/readyz").await.0, StatusCode::OK);

    // With the database gone, the process is alive but not ready, and says why (once
    // the last check, reused for a second, is older than that).
    db.close().await;
    assert_eq!(get(state.clone(), "/healthz").await.0, StatusCode::OK);
    let (status, content_type, body) = poll("readiness fails without the database")
        .within(Duration::from_secs(10))
        .every(Duration::from_millis(50))
        .until(|| async {
            let answer = get(state.clone(), "/readyz").await;
            (answer.0 != StatusCode::OK).then_some(answer)
        })
        .await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(content_type.as_deref(), Some("application/problem+json"));
    let problem: serde_json::Value = serde_json::from_str(&body).expect("problem JSON");
    assert_eq!(problem["status"], 503);
    assert_eq!(problem["detail"], "the database does not answer");
}

#[tokio::test]
async fn unsupported_database_urls_are_refused_with_a_reason() {
    let err = prepare(&settings("mysql://127.0.0.1/hop"))
        .await
        .expect_err("refused");
    assert!(
        err.to_string()
            .contains("expected sqlite://PATH or postgres://"),
        "{err}"
    );
}

#[tokio::test]
async fn postgres_migrations_apply_to_a_fresh_database() {
    let Some(t) = TestDb::postgres("postgres migrations").await else {
        return;
    };
    assert_eq!(tables(&t.db).await, TABLES);
    // A second start finds everything applied.
    let again = prepare(&settings(&t.url)).await.expect("re-migrate");
    assert_eq!(tables(&again).await, TABLES);
    again.close().await;
    t.cleanup().await;
}

#[tokio::test]
async fn the_binary_serves_healthz_on_the_configured_address_and_database() {
    let dir = tempfile::tempdir().expect("temp dir");
    let db_path = dir.path().join("bin.db");
    let addr = format!("127.0.0.1:{}", hop_e2e::free_port());
    let mut command = Command::new(env!("CARGO_BIN_EXE_hop-origin"));
    command
        .arg("serve")
        // Flags and environment both configure it.
        .args(["--listen", &addr])
        .env(
            "HOP_DATABASE_URL",
            format!("sqlite://{}", db_path.display()),
        );
    let mut origin = Process::spawn("hop-origin", command, dir.path().join("origin.log"));
    let health = format!("http://{addr}/healthz");
    origin.wait_until_answering(&health).await;
    let res = reqwest::get(&health).await.expect("healthz");
    assert_eq!(res.status(), 200);
    assert_eq!(res.text().await.expect("body"), "ok\n");
    assert!(db_path.exists(), "the SQLite file was created");
}

#[test]
fn a_bad_flag_stops_the_binary_with_a_message() {
    let out = Command::new(env!("CARGO_BIN_EXE_hop-origin"))
        .args(["--listen", "not-an-address", "migrate"])
        .output()
        .expect("run hop-origin");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--listen"));
}

/// A runner of `hop-origin` commands on a SQLite file in `dir` whose default domain is
/// `s.example`: whether each succeeded, its stdout and its stderr.
fn operator(dir: &tempfile::TempDir) -> impl Fn(&[&str]) -> (bool, String, String) {
    let url = format!("sqlite://{}", dir.path().join("ops.db").display());
    move |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_hop-origin"))
            .args(args)
            .env("HOP_DATABASE_URL", &url)
            .env("HOP_DEFAULT_DOMAIN", "s.example")
            .output()
            .expect("run hop-origin");
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }
}

#[test]
fn keys_create_prints_the_secret_alone_on_the_last_line_and_keys_revoke_revokes() {
    let dir = tempfile::tempdir().expect("temp dir");
    let run = operator(&dir);
    let (ok, stdout, stderr) = run(&["keys", "create", "--owner", "acme", "--admin"]);
    assert!(ok, "{stderr}");
    let token = stdout.lines().last().expect("a last line");
    let (key_id, _) = origin_api::api_keys::parse_token(token).expect("the last line is the token");
    assert!(stdout.contains(&format!("key id: {key_id}")), "{stdout}");

    assert!(run(&["keys", "revoke", key_id]).0);
    let (ok, _, stderr) = run(&["keys", "revoke", key_id]);
    assert!(!ok);
    assert!(stderr.contains("no live key"), "{stderr}");
}

#[test]
fn domains_add_registers_by_the_apis_rules_and_domains_list_shows_them() {
    let dir = tempfile::tempdir().expect("temp dir");
    let run = operator(&dir);
    let settings = r#"{"alphabet": "base36", "code_length": 6, "case_insensitive": true}"#;
    let (ok, stdout, stderr) = run(&[
        "domains",
        "add",
        "Go.Acme.Example",
        "--owner",
        "acme",
        "--owner",
        "acme-eu",
        "--settings",
        settings,
    ]);
    assert!(ok, "{stderr}");
    assert!(stdout.contains("registered go.acme.example"), "{stdout}");
    // The API's rules, the API's words: each refusal names the field.
    let shared_with = |settings: &'static str| {
        vec![
            "domains",
            "add",
            "b.example",
            "--shared",
            "--settings",
            settings,
        ]
    };
    for (args, says) in [
        (shared_with(r#"{"code_length": 3}"#), "code_length"),
        (shared_with(r#"{"colour": 1}"#), "colour"),
        (shared_with("[1]"), "JSON object"),
        (shared_with(r#"{"domain": "c.example"}"#), "domain"),
        (vec!["domains", "add", "10.0.0.1", "--shared"], "domain"),
        (
            vec!["domains", "add", "go.acme.example", "--shared"],
            "registered already",
        ),
        (vec!["domains", "add", "b.example"], "--shared"),
    ] {
        let (ok, stdout, stderr) = run(&args);
        assert!(!ok, "{args:?} succeeded: {stdout}");
        assert!(
            stderr.contains(says),
            "{args:?} should say {says}: {stderr}"
        );
    }
    let (ok, stdout, stderr) = run(&["domains", "list"]);
    assert!(ok, "{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    // The default domain was registered when the database was prepared.
    assert_eq!(
        lines,
        [
            "go.acme.example\tactive\towners acme,acme-eu\tbase36 x6\tv1",
            "s.example\tactive\tshared\tbase62 x7\tv1",
        ],
        "{stdout}"
    );
}

#[test]
fn domains_set_and_remove_change_the_registry_by_the_apis_rules() {
    let dir = tempfile::tempdir().expect("temp dir");
    let run = operator(&dir);
    assert!(run(&["domains", "add", "b.example", "--shared"]).0);
    let (ok, stdout, stderr) = run(&[
        "domains",
        "set",
        "B.Example",
        "--settings",
        r#"{"status": "disabled", "not_found_url": "https://www.b-corp.example/"}"#,
    ]);
    assert!(ok, "{stderr}");
    assert!(stdout.contains("changed b.example (v2)"), "{stdout}");
    for (args, says) in [
        (
            vec![
                "domains",
                "set",
                "b.example",
                "--settings",
                r#"{"max_age_s": -1}"#,
            ],
            "max_age_s",
        ),
        (
            vec![
                "domains",
                "set",
                "b.example",
                "--settings",
                r#"{"domain": "c.example"}"#,
            ],
            "domain",
        ),
        (
            vec!["domains", "set", "nowhere.example", "--settings", "{}"],
            "not registered",
        ),
        (vec!["domains", "remove", "s.example"], "--default-domain"),
        (
            vec!["domains", "remove", "nowhere.example"],
            "not registered",
        ),
    ] {
        let (ok, stdout, stderr) = run(&args);
        assert!(!ok, "{args:?} succeeded: {stdout}");
        assert!(
            stderr.contains(says),
            "{args:?} should say {says}: {stderr}"
        );
    }
    let (_, listed, _) = run(&["domains", "list"]);
    assert!(
        listed.contains("b.example\tdisabled\tshared\tbase62 x7\tv2"),
        "{listed}"
    );
    let (ok, stdout, stderr) = run(&["domains", "remove", "b.example"]);
    assert!(ok, "{stderr}");
    assert!(stdout.contains("removed b.example"), "{stdout}");
    let (_, listed, _) = run(&["domains", "list"]);
    assert!(!listed.contains("b.example"), "{listed}");
}

#[test]
fn keys_create_limits_a_key_to_registered_domains() {
    let dir = tempfile::tempdir().expect("temp dir");
    let run = operator(&dir);
    let (ok, stdout, stderr) = run(&["keys", "create", "--owner", "acme", "--domain", "S.Example"]);
    assert!(ok, "{stderr}");
    assert!(stdout.contains("domains: s.example"), "{stdout}");
    let (ok, _, stderr) = run(&[
        "keys",
        "create",
        "--owner",
        "acme",
        "--domain",
        "nowhere.example",
    ]);
    assert!(!ok);
    assert!(stderr.contains("not a registered domain"), "{stderr}");
    // A key reaches nothing its owner may not, from the shell as from the dashboard.
    let (ok, _, stderr) = run(&["domains", "add", "g.example", "--owner", "globex"]);
    assert!(ok, "{stderr}");
    let (ok, _, stderr) = run(&["keys", "create", "--owner", "acme", "--domain", "g.example"]);
    assert!(!ok);
    assert!(
        stderr.contains("g.example is not a domain of acme"),
        "{stderr}"
    );
    let (ok, stdout, stderr) = run(&[
        "keys",
        "create",
        "--owner",
        "globex",
        "--domain",
        "g.example",
    ]);
    assert!(ok, "{stderr}");
    assert!(stdout.contains("domains: g.example"), "{stdout}");
}

//! Upgrades from the previous release: databases written by it, with data in them
//! (tests/fixtures/upgrade/REV, made by `scripts/make-upgrade-fixture REV` with that
//! release's own binary), migrated by this one. Every link answers as it did, keys still
//! authenticate, stats and bans survive, and new links take codes no old one holds.

use crate::common::{Api, TestDb};
use axum::http::{header, StatusCode};
use origin_api::db::Db;
use serde_json::{json, Value};

/// The release before this one: the last commit before issue 16's schema change.
const PREVIOUS: &str = "eb1996c";

fn fixture(name: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/upgrade")
        .join(PREVIOUS)
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Replaces `t`'s database with the fixture's, then migrates it as `serve` would.
async fn load_previous(t: &mut TestDb) {
    t.db.close().await;
    match t.kind() {
        "sqlite" => {
            let path = t.url.trim_start_matches("sqlite://").to_owned();
            for suffix in ["", "-wal", "-shm"] {
                let _ = std::fs::remove_file(format!("{path}{suffix}"));
            }
            let pool = sqlx::SqlitePool::connect(&format!("{}?mode=rwc", t.url))
                .await
                .expect("sqlite");
            sqlx::raw_sql(&fixture("sqlite.sql"))
                .execute(&pool)
                .await
                .expect("the SQLite fixture loads");
            pool.close().await;
        }
        _ => {
            let pool = sqlx::PgPool::connect(&t.url).await.expect("postgres");
            sqlx::raw_sql("DROP SCHEMA public CASCADE; CREATE SCHEMA public;")
                .execute(&pool)
                .await
                .expect("empty schema");
            sqlx::raw_sql(&fixture("postgres.sql"))
                .execute(&pool)
                .await
                .expect("the PostgreSQL fixture loads");
            pool.close().await;
        }
    }
    t.db = Db::connect(&t.url).await.expect("connect");
    let (pending, unknown) = t.db.migration_status().await.expect("status");
    assert!(unknown.is_empty(), "{unknown:?}");
    assert!(
        !pending.is_empty(),
        "the fixture is at this release's schema already"
    );
    use clap::Parser;
    let settings = origin_api::config::Cli::try_parse_from([
        "hop-origin",
        "--database-url",
        &t.url,
        "--default-domain",
        "s.example",
    ])
    .expect("flags")
    .settings;
    origin_api::prepare(&settings)
        .await
        .expect("migrated and prepared as serve does");
}

#[tokio::test]
async fn a_database_of_the_previous_release_upgrades_keeping_every_link_key_ban_and_click() {
    for mut t in TestDb::all("upgrade").await {
        let kind = t.kind();
        let expected: Value =
            serde_json::from_str(&fixture(&format!("expected.{kind}.json"))).expect("JSON");
        load_previous(&mut t).await;
        let api = Api::of(&t);

        let mut old_codes = Vec::new();
        for link in expected["links"].as_array().expect("links") {
            let (domain, code) = (
                link["domain"].as_str().unwrap(),
                link["code"].as_str().unwrap(),
            );
            old_codes.push(code.to_owned());
            let res = api.visit("GET", domain, &format!("/{code}")).await;
            assert_eq!(
                res.status.as_u16(),
                link["status"],
                "{kind}: {domain}/{code}"
            );
            if let Some(location) = link["location"].as_str() {
                assert_eq!(
                    res.headers[header::LOCATION],
                    location,
                    "{kind}: {domain}/{code}"
                );
            }
        }
        // The keys the previous release issued still work, with their owners and rights.
        let user = expected["user"].as_str().unwrap();
        let admin = expected["admin"].as_str().unwrap();
        let spring = api.read(user, "s.example", "spring").await;
        assert_eq!(spring.status, StatusCode::OK, "{kind}: {}", spring.text);
        assert_eq!(spring.body["version"], 2, "{kind}");
        // The owners' quotas start from what they held (migration 0023 counts it).
        let me = api.call_as(user, "GET", "/v1/owners/me").await;
        assert_eq!(me.status, StatusCode::OK, "{kind}: {}", me.text);
        let owner = me.body["owner"].as_str().unwrap_or_default().to_owned();
        let live: Vec<(i64,)> = api
            .rows(&format!(
                "SELECT COUNT(*) FROM links WHERE owner_id = '{owner}' AND status <> 'deleted'"
            ))
            .await;
        assert!(live[0].0 > 0, "{kind}: the fixture's owner holds links");
        assert_eq!(me.body["links"]["used"], live[0].0, "{kind}: {}", me.text);
        assert_eq!(spring.body["tags"], json!(["campaign", "q2"]), "{kind}");
        let stats = api
            .call_as(user, "GET", "/v1/links/s.example/spring/stats")
            .await;
        assert_eq!(stats.status, StatusCode::OK, "{kind}: {}", stats.text);
        assert_eq!(
            stats.body["totals"]["visits"], expected["spring"]["visits"],
            "{kind}"
        );
        assert_eq!(
            stats.body["totals"]["bots"], expected["spring"]["bots"],
            "{kind}"
        );
        assert!(stats.body["data_as_of"].is_string(), "{kind}");
        let bans = api.call_as(admin, "GET", "/v1/bans").await;
        assert_eq!(bans.status, StatusCode::OK, "{kind}: {}", bans.text);
        assert_eq!(
            bans.body.as_array().map(Vec::len),
            Some(1),
            "{kind}: {}",
            bans.text
        );
        let banned = api
            .create(user, json!({ "target_url": "https://evil.example/again" }))
            .await;
        assert!(banned.status.is_client_error(), "{kind}: {}", banned.text);

        // New links on both domains, in their own code shapes, never an old code.
        for (domain, length) in [("s.example", 7), ("t.example", 6)] {
            let made = api
                .create(
                    user,
                    json!({ "target_url": "https://dest.example/new", "domain": domain }),
                )
                .await;
            assert_eq!(made.status, StatusCode::CREATED, "{kind}: {}", made.text);
            let code = made.body["code"].as_str().unwrap();
            assert_eq!(code.len(), length, "{kind}: {code}");
            assert!(
                !old_codes.iter().any(|c| c == code),
                "{kind}: {code} issued again"
            );
            let res = api.visit("GET", domain, &format!("/{code}")).await;
            assert_eq!(res.status, StatusCode::FOUND, "{kind}");
        }
        t.cleanup().await;
    }
}

//! The backup-and-restore drill of docs/deploy.md, on PostgreSQL with `pg_dump` and
//! `pg_restore` as an operator runs them: links written before the backup come back,
//! and the fence after the restore keeps the sequences from issuing again the numbers
//! of links made after the backup, which the edge may still serve.

use crate::common::{Api, TestDb};
use axum::http::StatusCode;
use serde_json::json;
use std::process::Command;

/// The statement docs/deploy.md runs after a restore: every sequence skips a thousand of
/// its segments, far more than an origin reserves between two backups.
const FENCE: &str = "UPDATE id_segments SET max_id = max_id + step * 1000";

async fn codes(api: &Api, token: &str, n: usize) -> Vec<String> {
    let mut out = Vec::new();
    for i in 0..n {
        let made = api
            .create(
                token,
                json!({ "target_url": format!("https://e.example/{i}"), "domain": "tiny.example" }),
            )
            .await;
        assert_eq!(made.status, StatusCode::CREATED, "{}", made.text);
        out.push(made.body["code"].as_str().expect("code").to_owned());
    }
    out
}

fn run(cmd: &mut Command) {
    let out = cmd.output().expect("the PostgreSQL client tools run");
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[tokio::test]
async fn a_restored_database_serves_what_it_held_and_never_reissues_a_later_code() {
    let Some(source) = TestDb::postgres("restore-source").await else {
        return;
    };
    let Some(target) = TestDb::postgres("restore-target").await else {
        return;
    };
    let api = Api::of(&source);
    let admin = api.key("ops", true).await;
    // Five base36 characters: segments of 60 numbers, so the links made after the
    // backup take segments reserved after it.
    let made = api
        .post_json(
            &admin,
            "/v1/domains",
            &json!({ "domain": "tiny.example", "shared": true, "alphabet": "base36", "code_length": 5 }),
        )
        .await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.text);
    let token = api.key("ana", false).await;
    let kept = codes(&api, &token, 5).await;

    let dir = tempfile::tempdir().unwrap();
    let dump = dir.path().join("hop.dump");
    run(Command::new("pg_dump")
        .args(["--format=custom", "--file"])
        .arg(&dump)
        .arg(&source.url));
    // After the backup: more than a segment of links, lost with the restore.
    let lost = codes(&api, &token, 130).await;

    run(Command::new("pg_restore")
        .args(["--clean", "--if-exists", "--no-owner", "--dbname"])
        .arg(&target.url)
        .arg(&dump));
    let restored = Api::of(&target);
    restored.exec(FENCE).await;
    let visit = |code: String| {
        let api = &restored;
        async move {
            api.visit("GET", "tiny.example", &format!("/{code}"))
                .await
                .status
        }
    };
    for code in &kept {
        assert_eq!(visit(code.clone()).await, StatusCode::FOUND, "{code}");
    }
    assert_eq!(visit(lost[0].clone()).await, StatusCode::NOT_FOUND);

    // New links after the restore never take the code of a lost one.
    let token = restored.key("ana", false).await;
    let fresh = codes(&restored, &token, 130).await;
    let reissued: Vec<&String> = fresh.iter().filter(|c| lost.contains(c)).collect();
    assert!(reissued.is_empty(), "codes issued twice: {reissued:?}");
    source.cleanup().await;
    target.cleanup().await;
}

//! The README's first command, `scripts/dev`, brings up the origin and the edge wired
//! together, and stops both when it is stopped.

use hop_e2e::{client, free_port, repo_root, Process};
use reqwest::StatusCode;
use std::process::Command;

/// The repository's `.dev.vars` as it was, put back when the test ends however it ends.
struct DevVars {
    path: std::path::PathBuf,
    before: Option<Vec<u8>>,
    planted: bool,
}

impl DevVars {
    /// Takes note of a developer's `.dev.vars`; when there is none, plants one whose
    /// secrets are wrong for scripts/dev, so that its wiring works only if its own win.
    fn guard() -> DevVars {
        let path = repo_root().join(".dev.vars");
        let before = std::fs::read(&path).ok();
        let planted = before.is_none();
        if planted {
            std::fs::write(
                &path,
                "SYNC_TOKEN=a-developer-s-own\nORIGIN_TOKEN=a-developer-s-own\nMY_OWN=1\n",
            )
            .expect("write .dev.vars");
        }
        DevVars {
            path,
            before,
            planted,
        }
    }

    fn unchanged(&self) -> bool {
        let now = std::fs::read(&self.path).ok();
        match &self.before {
            Some(before) => now.as_ref() == Some(before),
            None => now.is_some_and(|n| n.starts_with(b"SYNC_TOKEN=a-developer-s-own")),
        }
    }
}

impl Drop for DevVars {
    fn drop(&mut self) {
        if self.planted {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

#[tokio::test]
async fn scripts_dev_runs_origin_and_edge_and_stops_them() {
    let dir = tempfile::tempdir().expect("temp dir");
    let dev_vars = DevVars::guard();
    let (origin_port, edge_port) = (free_port(), free_port());
    let mut command = Command::new("bash");
    command
        .arg(repo_root().join("scripts/dev"))
        .env("HOP_ORIGIN_PORT", origin_port.to_string())
        .env("HOP_EDGE_PORT", edge_port.to_string())
        .env("HOP_METRICS_PORT", free_port().to_string())
        .env("HOP_DEV_DIR", dir.path());
    let mut dev = Process::spawn("scripts/dev", command, dir.path().join("dev.log"));

    let demo = format!("http://localhost:{edge_port}/hop-demo?utm_source=test");
    // scripts/dev runs setup and cargo first: when it must compile, that takes minutes.
    dev.wait_until_answering_within(&demo, std::time::Duration::from_secs(600))
        .await;
    let res = client().get(&demo).send().await.expect("edge answers");
    assert_eq!(res.status(), StatusCode::FOUND, "{}", dev.log());
    assert_eq!(
        res.headers().get("location").and_then(|v| v.to_str().ok()),
        Some("https://example.com/?from=hop&utm_source=test")
    );
    let origin = format!("http://127.0.0.1:{origin_port}");
    let ready = client()
        .get(format!("{origin}/readyz"))
        .send()
        .await
        .expect("origin answers");
    assert_eq!(ready.status(), StatusCode::OK);
    assert!(
        dir.path().join("hop.db").exists(),
        "the origin uses the SQLite file under HOP_DEV_DIR"
    );

    // The printed development key creates a link; the publisher pushes it to the edge's
    // local KV, and the edge then redirects it.
    let key = std::fs::read_to_string(dir.path().join("dev-key")).expect("dev key");
    let created = client()
        .post(format!("{origin}/v1/links"))
        .bearer_auth(key.trim())
        .json(&serde_json::json!({ "target_url": "https://example.com/published", "code": "e2e-published" }))
        .send()
        .await
        .expect("create");
    assert_eq!(created.status(), StatusCode::CREATED, "{}", dev.log());
    hop_e2e::wait_published(&origin, key.trim(), "localhost", "e2e-published").await;
    let res = client()
        .get(format!("http://localhost:{edge_port}/e2e-published"))
        .send()
        .await
        .expect("edge answers");
    assert_eq!(res.status(), StatusCode::FOUND);
    assert_eq!(
        res.headers().get("location").and_then(|v| v.to_str().ok()),
        Some("https://example.com/published")
    );

    // Stopping the script stops what it started, and it wrote nothing of the developer's.
    dev.stop();
    assert!(dev_vars.unchanged(), "scripts/dev rewrote .dev.vars");
    assert!(
        client()
            .get(format!("{origin}/healthz"))
            .send()
            .await
            .is_err(),
        "origin still up"
    );
    assert!(client().get(&demo).send().await.is_err(), "edge still up");
}

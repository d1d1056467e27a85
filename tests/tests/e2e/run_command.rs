//! The README's first command, `scripts/dev`, brings up the origin and the edge wired
//! together, and stops both when it is stopped.

use hop_e2e::{client, free_port, repo_root, Process};
use reqwest::StatusCode;
use std::process::Command;

/// The repository's `.dev.vars` as it was, put back when the test ends however it ends.
struct DevVars {
    path: std::path::PathBuf,
    /// What the file holds: the developer's own, or the one planted here.
    expected: Vec<u8>,
    planted: bool,
}

/// Secrets that are wrong for scripts/dev: its wiring works only if its own win.
const PLANTED: &[u8] = b"SYNC_TOKEN=a-developer-s-own\nORIGIN_TOKEN=a-developer-s-own\nMY_OWN=1\n";

impl DevVars {
    /// Takes note of a developer's `.dev.vars`, or plants [`PLANTED`] when there is none.
    fn guard() -> DevVars {
        let path = repo_root().join(".dev.vars");
        let (expected, planted) = match std::fs::read(&path) {
            Ok(own) => (own, false),
            Err(_) => {
                std::fs::write(&path, PLANTED).expect("write .dev.vars");
                (PLANTED.to_vec(), true)
            }
        };
        DevVars {
            path,
            expected,
            planted,
        }
    }

    fn unchanged(&self) -> bool {
        std::fs::read(&self.path).ok().as_ref() == Some(&self.expected)
    }
}

impl Drop for DevVars {
    fn drop(&mut self) {
        if self.planted {
            let _ = std::fs::remove_file(&self.path);
        } else if !self.unchanged() {
            let _ = std::fs::write(&self.path, &self.expected);
        }
    }
}

#[tokio::test]
async fn scripts_dev_runs_origin_and_edge_and_stops_them() {
    let dir = tempfile::tempdir().expect("temp dir");
    let dev_vars = DevVars::guard();
    let (origin_port, edge_port, dashboard_port) = (free_port(), free_port(), free_port());
    let mut command = Command::new("bash");
    command
        .arg(repo_root().join("scripts/dev"))
        .env("HOP_ORIGIN_PORT", origin_port.to_string())
        .env("HOP_EDGE_PORT", edge_port.to_string())
        .env("HOP_METRICS_PORT", free_port().to_string())
        .env("HOP_DASHBOARD_PORT", dashboard_port.to_string())
        // Two scripts/dev at once (these tests run side by side) each need their own.
        .env("HOP_INSPECTOR_PORT", free_port().to_string())
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
    // The short URL the API gives is the one to follow: under scripts/dev, the edge's.
    let created: serde_json::Value = created.json().await.expect("a link");
    let short_url = created["short_url"].as_str().expect("short_url").to_owned();
    assert_eq!(
        short_url,
        format!("http://localhost:{edge_port}/e2e-published")
    );
    hop_e2e::wait_published(&origin, key.trim(), "localhost", "e2e-published").await;
    let res = client().get(&short_url).send().await.expect("edge answers");
    assert_eq!(res.status(), StatusCode::FOUND);
    assert_eq!(
        res.headers().get("location").and_then(|v| v.to_str().ok()),
        Some("https://example.com/published")
    );

    // The printed development user signs in to the dashboard, and sees the owner's links.
    let password = std::fs::read_to_string(dir.path().join("dev-password")).expect("password");
    let dashboard = format!("http://127.0.0.1:{dashboard_port}");
    assert!(
        dev.log().contains(password.trim()),
        "the password is printed"
    );
    let form = client()
        .get(format!("{dashboard}/login"))
        .send()
        .await
        .expect("dashboard answers");
    let login_cookie = set_cookie(&form, "hop_login");
    let html = form.text().await.expect("form");
    let csrf = html
        .split("name=\"csrf\" value=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .expect("a form token")
        .to_owned();
    let signed_in = client()
        .post(format!("{dashboard}/login"))
        .header("cookie", format!("hop_login={login_cookie}"))
        .form(&[
            ("email", "dev@hop.localhost"),
            ("password", password.trim()),
            ("csrf", &csrf),
        ])
        .send()
        .await
        .expect("sign in");
    assert_eq!(signed_in.status(), StatusCode::SEE_OTHER, "{}", dev.log());
    let session = set_cookie(&signed_in, "hop_session");
    let links = client()
        .get(format!("{dashboard}/o/dev/links"))
        .header("cookie", format!("hop_session={session}"))
        .send()
        .await
        .expect("links page");
    assert_eq!(links.status(), StatusCode::OK);
    let html = links.text().await.expect("page");
    assert!(html.contains(&short_url), "{html}");

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

/// The value of the cookie `name` a response sets.
fn set_cookie(res: &reqwest::Response, name: &str) -> String {
    res.headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .filter_map(|c| c.split(';').next()?.split_once('='))
        .find(|(n, _)| *n == name)
        .map(|(_, v)| v.to_owned())
        .unwrap_or_else(|| panic!("no {name} cookie"))
}

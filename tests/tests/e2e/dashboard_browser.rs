//! The dashboard in a real browser (issue 38): `tests/browser/journeys.mjs` drives
//! Debian's Chromium through playwright-core against `scripts/dev` (the origin with its
//! dashboard, the edge under `wrangler dev`): an admin invites a marketer and a viewer,
//! the marketer creates a link with a rule and a split, an iPhone follows the rule at
//! the edge, the click shows in the link's analytics, a bulk tag reports the link changed
//! meanwhile, the viewer cannot edit, signing out ends the session; axe-core checks every
//! page on the way, and a CSP violation or a script error fails the run.

use hop_e2e::{free_port, repo_root, Process};
use std::process::Command;

/// Where `scripts/setup` puts Debian's Chromium.
fn chromium() -> String {
    for candidate in ["/usr/bin/chromium", "/usr/bin/chromium-browser"] {
        if std::path::Path::new(candidate).exists() {
            return candidate.to_owned();
        }
    }
    panic!("no Chromium: scripts/setup installs Debian's chromium package");
}

#[tokio::test]
async fn the_dashboards_journeys_pass_in_a_real_browser() {
    let browser = chromium();
    let dir = tempfile::tempdir().expect("temp dir");
    let (edge_port, dashboard_port) = (free_port(), free_port());
    let mut command = Command::new("bash");
    command
        .arg(repo_root().join("scripts/dev"))
        .env("HOP_ORIGIN_PORT", free_port().to_string())
        .env("HOP_EDGE_PORT", edge_port.to_string())
        .env("HOP_METRICS_PORT", free_port().to_string())
        .env("HOP_DASHBOARD_PORT", dashboard_port.to_string())
        // Two scripts/dev at once (these tests run side by side) each need their own.
        .env("HOP_INSPECTOR_PORT", free_port().to_string())
        .env("HOP_DEV_DIR", dir.path());
    let mut dev = Process::spawn("scripts/dev", command, dir.path().join("dev.log"));
    let dashboard = format!("http://127.0.0.1:{dashboard_port}");
    let edge = format!("http://localhost:{edge_port}");
    // scripts/dev builds first; once the edge answers, everything it starts is up.
    dev.wait_until_answering_within(
        &format!("{edge}/_hop/ready"),
        std::time::Duration::from_secs(600),
    )
    .await;
    let password = std::fs::read_to_string(dir.path().join("dev-password")).expect("password");
    // Screenshots go where HOP_SHOTS says (docs/images to refresh the README's), else
    // beside the run's other files.
    let shots = std::env::var("HOP_SHOTS")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|_| dir.path().join("shots"));
    let run = tokio::process::Command::new("node")
        .arg(repo_root().join("tests/browser/journeys.mjs"))
        .current_dir(repo_root())
        .env("HOP_DASHBOARD", &dashboard)
        .env("HOP_EDGE", &edge)
        .env("HOP_OWNER", "dev")
        .env("HOP_EMAIL", "dev@hop.localhost")
        .env("HOP_PASSWORD", password.trim())
        .env("HOP_CHROMIUM", &browser)
        .env("HOP_SHOTS", &shots)
        .output()
        .await
        .expect("node runs");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr)
    );
    eprintln!("{said}");
    assert!(
        run.status.success(),
        "the journeys failed:\n{said}\nscripts/dev's log:\n{}\norigin:\n{}",
        dev.log(),
        std::fs::read_to_string(dir.path().join("origin.log")).unwrap_or_default()
    );
    dev.stop();
}

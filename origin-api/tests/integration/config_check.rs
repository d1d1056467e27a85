//! `hop-origin config check`, run as an operator runs it: the binary, its environment and
//! a configuration file, against a real database.

use crate::common::TestDb;
use std::process::Command;

const SYNC_TOKEN: &str = "sync-token-0123456789abcdef";
const EDGE_TOKEN: &str = "edge-token-0123456789abcdef";

/// Runs `config check` with only `vars` in the environment: its exit status and output.
fn check(args: &[&str], vars: &[(&str, &str)]) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_hop-origin"))
        .args(args)
        .args(["config", "check"])
        .env_clear()
        .env("HOP_LOG", "off")
        .envs(vars.iter().copied())
        .output()
        .expect("hop-origin runs");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr),
    )
}

#[tokio::test]
async fn config_check_passes_a_working_configuration_and_names_what_would_stop_one() {
    let t = TestDb::sqlite().await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("hop.toml");
    std::fs::write(
        &file,
        format!(
            "database_url = \"{}\"\nedge_sync_url = \"http://127.0.0.1:8787\"\nlisten = \"127.0.0.1:3999\"\n\
             permutation_keys = \"1:000102030405060708090a0b0c0d0e0f\"\nedge_token = \"{EDGE_TOKEN}\"\n",
            t.url
        ),
    )
    .unwrap();
    let config = file.display().to_string();

    // The sync URL without its token: serving would fail to publish.
    let (ok, out) = check(&["--config", &config], &[]);
    assert!(!ok, "{out}");
    assert!(
        out.contains("FAIL publishing: HOP_EDGE_SYNC_URL is set but HOP_EDGE_SYNC_TOKEN is not"),
        "{out}"
    );

    // With the token from the environment, everything passes; no secret is printed, and
    // each setting says where it came from.
    let (ok, out) = check(
        &["--config", &config],
        &[
            ("HOP_EDGE_SYNC_TOKEN", SYNC_TOKEN),
            ("HOP_LISTEN", "127.0.0.1:4001"),
        ],
    );
    assert!(ok, "{out}");
    assert!(out.contains("configuration ok"), "{out}");
    assert!(out.contains("database: sqlite at"), "{out}");
    assert!(out.contains("schema up to date"), "{out}");
    assert!(
        out.contains("listen = 127.0.0.1:4001  [environment]"),
        "{out}"
    );
    assert!(
        out.contains("edge_sync_url = http://127.0.0.1:8787/  [file]")
            || out.contains("edge_sync_url = http://127.0.0.1:8787  [file]"),
        "{out}"
    );
    assert!(out.contains("edge_sync_token: set  [environment]"), "{out}");
    assert!(out.contains("edge_token: set  [file]"), "{out}");
    for secret in [SYNC_TOKEN, EDGE_TOKEN, "000102030405060708090a0b0c0d0e0f"] {
        assert!(!out.contains(secret), "a secret was printed:\n{out}");
    }

    // A database it cannot reach, with its password redacted.
    let (ok, out) = check(
        &[
            "--config",
            &config,
            "--database-url",
            "postgres://hop:hunter2secret@127.0.0.1:1/hop",
        ],
        &[("HOP_EDGE_SYNC_TOKEN", SYNC_TOKEN)],
    );
    assert!(!ok, "{out}");
    assert!(
        out.contains("FAIL database: cannot connect to postgres://hop:***@127.0.0.1:1/hop"),
        "{out}"
    );
    assert!(!out.contains("hunter2secret"), "{out}");

    // A typo in the file stops everything, saying what was meant.
    std::fs::write(&file, "databse_url = \"sqlite://x.db\"\n").unwrap();
    let (ok, out) = check(&["--config", &config], &[]);
    assert!(!ok);
    assert!(
        out.contains("unknown setting 'databse_url' (did you mean 'database_url'?)"),
        "{out}"
    );
    t.cleanup().await;
}

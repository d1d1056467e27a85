//! The command line and the settings as an operator gives them: flags, environment,
//! files and secrets.

use super::commands::*;
use super::file;
use super::load::*;
use super::secrets::*;
use secrecy::SecretString;

/// The command line with no environment variables read: the tests hold whatever
/// `HOP_*` variables the developer running them has set.
fn without_env(cmd: clap::Command) -> clap::Command {
    cmd.mut_args(|a| a.env(None)).mut_subcommands(without_env)
}

fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
    use clap::{CommandFactory, FromArgMatches};
    let matches = without_env(Cli::command())
        .try_get_matches_from(std::iter::once("hop-origin").chain(args.iter().copied()))?;
    Cli::from_arg_matches(&matches)
}

/// `load` as `main` calls it, with `vars` as the environment (clap's own reading of
/// the process's environment off, as in [`parse`]).
fn load_with(args: &[&str], vars: &[(&str, &str)]) -> Result<Loaded, LoadError> {
    use clap::CommandFactory;
    let vars: Vec<(String, String)> = vars
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    let args = std::iter::once("hop-origin")
        .chain(args.iter().copied())
        .map(std::ffi::OsString::from)
        .collect();
    load_from(without_env(Cli::command()), args, move |name| {
        vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
    })
}

fn config_file(text: &str) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hop.toml");
    std::fs::write(&path, text).unwrap();
    (dir, path.display().to_string())
}

/// The database URL is a secret: no `Debug` of the settings shows its password,
/// whichever way it is written; it may come from a file (a mounted secret, a
/// systemd credential) named by `database_url_file`, but not from both.
#[test]
fn the_database_url_is_a_secret_that_may_come_from_a_file() {
    for url in [
        "postgres://hop:s3cret@db.internal/hop",
        "postgres://hop@db.internal/hop?password=s3cret",
        "postgres://hop:s3cret@[not a url",
    ] {
        let cli = parse(&["--database-url", url]).unwrap();
        let shown = format!("{:?}", cli.settings);
        assert!(!shown.contains("s3cret"), "{shown}");
        assert_eq!(cli.settings.database_url.expose(), url);
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("database-url");
    std::fs::write(&file, "postgres://hop:s3cret@db.internal/hop\n").unwrap();
    let file = file.display().to_string();
    let loaded = load_with(&["--database-url-file", &file], &[]).unwrap();
    assert_eq!(
        loaded.cli.settings.database_url.expose(),
        "postgres://hop:s3cret@db.internal/hop"
    );
    let (_dir, path) = config_file(&format!("database_url_file = {file:?}\n"));
    let from_file = load_with(&["--config", &path], &[]).unwrap();
    assert_eq!(
        from_file.sources["database_url"].1,
        Source::File,
        "config check says where it came from"
    );
    let both = load_with(
        &[
            "--database-url",
            "sqlite://x.db",
            "--database-url-file",
            &file,
        ],
        &[],
    );
    assert!(both.err().unwrap().to_string().contains("not both"));
    let missing = load_with(&["--database-url-file", "/nonexistent/url"], &[]);
    assert!(missing.err().unwrap().to_string().contains("cannot read"));
}

/// Nothing loaded from a file or the command line shows a secret in `Debug`: not
/// the file's tokens, not the database URL among the settings' sources.
#[test]
fn no_debug_of_what_was_loaded_shows_a_secret() {
    let (_dir, path) = config_file(
        "database_url = \"postgres://hop:s3cret-url@db.internal/hop\"\n\
         edge_token = \"s3cret-edge-token-0123456789abcdef\"\n",
    );
    let loaded = load_with(&["--config", &path], &[]).unwrap();
    let shown = format!("{loaded:?}");
    assert!(!shown.contains("s3cret"), "{shown}");
    assert!(shown.contains("edge_token"), "the keys still show: {shown}");
    let file = loaded.file.as_ref().expect("the file");
    let shown = format!("{file:?}");
    assert!(!shown.contains("s3cret"), "{shown}");
}

#[test]
fn a_config_file_sets_what_flags_do_and_flags_win_over_it() {
    let (_dir, path) = config_file(
        r#"
listen = "127.0.0.1:4000"
default_domain = "Go.Example"
record_clicks = false
click_id_retention_h = 48
trusted_proxies = ["10.0.0.0/8", "192.0.2.1"]
outbox_retention = "36h"
"#,
    );
    let loaded = load_with(&["--config", &path, "--listen", "127.0.0.1:5000"], &[]).unwrap();
    let s = &loaded.cli.settings;
    assert_eq!(s.listen.to_string(), "127.0.0.1:5000", "the flag wins");
    assert_eq!(
        s.default_domain, "go.example",
        "normalized as the flag's value is"
    );
    assert!(!s.record_clicks);
    assert_eq!(s.click_id_retention_h, 48);
    assert_eq!(s.trusted_proxies.len(), 2);
    assert_eq!(s.outbox_retention.as_secs(), 36 * 3_600);
    let source = |k: &str| loaded.sources.get(k).map(|(_, s)| *s);
    assert_eq!(source("listen"), Some(Source::Flag));
    assert_eq!(source("default_domain"), Some(Source::File));
    assert_eq!(source("max_in_flight"), Some(Source::Default));
    // HOP_CONFIG names the file when no flag does.
    let by_env = load_with(&["migrate"], &[("HOP_CONFIG", &path)]).unwrap();
    assert_eq!(by_env.cli.settings.listen.to_string(), "127.0.0.1:4000");
    assert!(matches!(by_env.cli.command, Some(Command::Migrate)));
}

#[test]
fn a_config_file_is_refused_whole_for_an_unknown_key_a_bad_type_or_a_bad_value() {
    let refused = |text: &str| {
        let (_dir, path) = config_file(text);
        load_with(&["--config", &path], &[])
            .map(|_| ())
            .unwrap_err()
            .to_string()
    };
    let typo = refused("databse_url = \"sqlite://x.db\"\n");
    assert!(
        typo.contains("unknown setting 'databse_url' (did you mean 'database_url'?)"),
        "{typo}"
    );
    assert!(refused("config = \"other.toml\"\n").contains("unknown setting 'config'"));
    assert!(refused("listen = { port = 3 }\n").contains("'listen' must be a string"));
    assert!(refused("listen = \n").contains("not valid TOML"));
    // Values are checked as the flag's are.
    let bad = refused("listen = \"localhost\"\n");
    assert!(bad.contains("localhost"), "{bad}");
    assert!(refused("outbox_retention = \"10m\"\n").contains("at least an hour"));
    let missing = load_with(&["--config", "/nonexistent/hop.toml"], &[]).unwrap_err();
    assert!(
        missing.to_string().contains("/nonexistent/hop.toml"),
        "{missing}"
    );
}

#[test]
fn secrets_come_from_the_environment_before_the_file() {
    use secrecy::ExposeSecret;
    let (dir, path) = config_file("");
    let token_file = dir.path().join("sync");
    std::fs::write(
        &token_file,
        "sync-token-from-its-file
",
    )
    .unwrap();
    std::fs::write(
        &path,
        format!(
            "edge_token = \"edge-token-in-the-config\"\nedge_sync_token_file = \"{}\"\npermutation_keys = \"1:000102030405060708090a0b0c0d0e0f\"\n",
            token_file.display()
        ),
    )
    .unwrap();
    let loaded = load_with(
        &["--config", &path],
        &[("HOP_EDGE_TOKEN", "edge-token-from-the-environment")],
    )
    .unwrap();
    let secrets = &loaded.cli.settings.secrets;
    let shown = |t: &Option<SecretString>| t.as_ref().map(|t| t.expose_secret().to_owned());
    assert_eq!(
        shown(&secrets.edge_token).as_deref(),
        Some("edge-token-from-the-environment")
    );
    assert_eq!(
        shown(&secrets.edge_sync_token).as_deref(),
        Some("sync-token-from-its-file")
    );
    assert!(secrets.permutation_keys.is_some());
    assert_eq!(
        loaded.secret_sources.get("edge_token"),
        Some(&Source::Environment)
    );
    assert_eq!(
        loaded.secret_sources.get("edge_sync_token"),
        Some(&Source::File)
    );
    assert_eq!(loaded.secret_sources.get("metrics_token"), None);
    // A short token in the file is refused as one in the environment is.
    let (_dir, short) = config_file("metrics_token = \"short\"\n");
    assert!(load_with(&["--config", &short], &[]).is_err());
}

/// What lets a file key, a flag and a variable name the same setting.
#[test]
fn every_setting_has_its_flag_variable_and_file_key_named_alike() {
    use clap::CommandFactory;
    let cmd = Cli::command();
    let keys = file::setting_keys(&cmd);
    assert!(keys.len() >= 25, "{keys:?}");
    for arg in cmd.get_arguments().filter(|a| a.is_global_set()) {
        let long = arg.get_long().expect("a long flag");
        let env = arg.get_env().and_then(|e| e.to_str()).expect("a variable");
        assert_eq!(
            env,
            format!("HOP_{}", long.to_uppercase().replace('-', "_"))
        );
    }
}

#[test]
fn the_version_names_the_release() {
    assert!(
        version().starts_with(env!("CARGO_PKG_VERSION")),
        "{}",
        version()
    );
    assert!(version().contains("commit "), "{}", version());
}

#[test]
fn defaults_match_the_documented_ones() {
    let cli = parse(&[]).unwrap();
    assert_eq!(cli.settings.listen.to_string(), "127.0.0.1:3000");
    assert_eq!(cli.settings.database_url.expose(), "sqlite://hop.db");
    assert_eq!(cli.settings.default_domain, "localhost");
    assert!(cli.settings.edge_sync_url.is_none());
    assert!(cli.settings.record_clicks);
    assert_eq!(cli.settings.click_id_retention_h, 96);
    assert_eq!(
        cli.settings.outbox_retention,
        std::time::Duration::from_secs(7 * 86_400)
    );
    assert!(cli.command.is_none());
}

#[test]
fn flags_are_validated_and_normalized() {
    let cli = parse(&[
        "migrate",
        "--default-domain",
        "S.Example.",
        "--edge-sync-url",
        "http://127.0.0.1:8787",
    ])
    .unwrap();
    assert!(matches!(cli.command, Some(Command::Migrate)));
    assert_eq!(cli.settings.default_domain, "s.example");
    assert!(parse(&["--listen", "localhost"]).is_err());
    assert!(parse(&["--edge-sync-url", "ftp://x"]).is_err());
    assert!(parse(&["--default-domain", "a/b"]).is_err());
    assert!(
        !parse(&["--record-clicks", "false"])
            .unwrap()
            .settings
            .record_clicks
    );
    assert!(parse(&["--click-id-retention-h", "0"]).is_err());
    let retention =
        |v: &str| parse(&["--outbox-retention", v]).map(|c| c.settings.outbox_retention.as_secs());
    assert_eq!(retention("36h").unwrap(), 36 * 3_600);
    assert_eq!(retention("2").unwrap(), 2 * 86_400);
    assert!(retention("10m").is_err(), "shorter than an hour");
    assert!(retention("7w").is_err());
}

#[test]
fn secrets_are_never_flags_and_never_short() {
    // A flag is visible to every user of the machine in `ps`.
    for flag in [
        "--edge-token",
        "--edge-sync-token",
        "--cf-api-token",
        "--permutation-keys",
        "--api-key",
    ] {
        assert!(
            parse(&[flag, "0123456789abcdef0123"]).is_err(),
            "{flag} is accepted"
        );
        assert!(
            parse(&["import", "f.csv", flag, "0123456789abcdef0123"]).is_err(),
            "{flag}"
        );
    }
    let env = |vars: &'static [(&'static str, &'static str)]| {
        move |name: &str| {
            vars.iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.to_string())
        }
    };
    let short = Secrets::read(env(&[("HOP_EDGE_TOKEN", "short")])).unwrap_err();
    assert_eq!(
        short.to_string(),
        "HOP_EDGE_TOKEN is 5 bytes; use at least 16 (e.g. openssl rand -hex 16)"
    );
    assert!(Secrets::read(env(&[
        ("HOP_METRICS_TOKEN", "0123456789abcdef"),
        ("HOP_METRICS_TOKEN_FILE", "/x")
    ]))
    .is_err());
    assert!(Secrets::read(env(&[("HOP_PERMUTATION_KEYS", "1:zz")])).is_err());
    // From a file, as a mounted secret.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("token");
    std::fs::write(&path, "sync-token-from-a-file-0123\n").unwrap();
    let path = path.display().to_string();
    let secrets =
        Secrets::read(|name| (name == "HOP_EDGE_SYNC_TOKEN_FILE").then(|| path.clone())).unwrap();
    use secrecy::ExposeSecret;
    assert_eq!(
        secrets.edge_sync_token.as_ref().map(|t| t.expose_secret()),
        Some("sync-token-from-a-file-0123")
    );
    // And nothing of it in Debug (logs, panics).
    let shown = format!("{secrets:?}");
    assert!(!shown.contains("sync-token"), "{shown}");
}

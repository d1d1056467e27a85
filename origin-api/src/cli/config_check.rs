//! `hop-origin config check`: what this process would run with, and whether it could.
//!
//! Prints every setting with where it came from (flag, environment, file, default), the
//! secrets as set or unset (never their values), then the checks: the publishing sink
//! and its token, the secrets a serving origin needs, and the database (reachable, its
//! migrations). Exits non-zero when a check fails, so a deploy can run it first.

use crate::config::{redact_database_url as redact_url, Loaded, Publishing};
use crate::db::Db;
use std::fmt::Write;

/// How a check went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Ok,
    /// Serving works, but something a production origin wants is missing.
    Warn,
    /// `serve` would fail, or run without doing its job.
    Fail,
}

impl Verdict {
    fn label(self) -> &'static str {
        match self {
            Verdict::Ok => "ok  ",
            Verdict::Warn => "warn",
            Verdict::Fail => "FAIL",
        }
    }
}

/// The report, and whether every check passed (warnings pass).
pub async fn run(loaded: &Loaded) -> (String, bool) {
    let s = &loaded.cli.settings;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "configuration file: {}",
        loaded
            .file
            .as_ref()
            .map_or("none (flags, environment and defaults)".to_owned(), |f| f
                .path
                .display()
                .to_string())
    );
    let _ = writeln!(out, "\nsettings:");
    for (key, (value, source)) in &loaded.sources {
        let shown = match value {
            Some(v) if key == "database_url" => redact_url(v),
            Some(v) => v.clone(),
            None => "(unset)".to_owned(),
        };
        let _ = writeln!(out, "  {key} = {shown}  [{}]", source.as_str());
    }
    let _ = writeln!(out, "\nsecrets (values never shown):");
    for key in crate::config::file::SECRET_KEYS {
        let state = match loaded.secret_sources.get(key) {
            Some(source) => format!("set  [{}]", source.as_str()),
            None => "unset".to_owned(),
        };
        let _ = writeln!(out, "  {key}: {state}");
    }

    let mut checks: Vec<(Verdict, String)> = Vec::new();
    match s.publishing() {
        Ok(Publishing::Nowhere) => checks.push((
            Verdict::Warn,
            "publishing: no edge configured (HOP_EDGE_SYNC_URL or HOP_CF_*): the origin serves alone and its outbox only grows".into(),
        )),
        Ok(Publishing::Worker { url, .. }) => checks.push((
            Verdict::Ok,
            format!("publishing: to the worker at {url} with HOP_EDGE_SYNC_TOKEN"),
        )),
        Ok(Publishing::Kv {
            account, namespace, ..
        }) => checks.push((
            Verdict::Ok,
            format!("publishing: to KV namespace {namespace} of account {account} with HOP_CF_API_TOKEN"),
        )),
        Err(why) => checks.push((Verdict::Fail, format!("publishing: {why}"))),
    }
    let secrets = &s.secrets;
    checks.push(match &secrets.permutation_keys {
        Some(_) => (Verdict::Ok, "HOP_PERMUTATION_KEYS: set".into()),
        None => (
            Verdict::Fail,
            "HOP_PERMUTATION_KEYS is not set: no link can be created (docs/deploy.md says how to make one)".into(),
        ),
    });
    let edge = !matches!(s.publishing(), Ok(Publishing::Nowhere) | Err(_));
    if edge && secrets.edge_token.is_none() {
        checks.push((
            Verdict::Fail,
            "HOP_EDGE_TOKEN is not set: the edge cannot ask about new links or deliver clicks (/v1/edge/* answers 503)".into(),
        ));
    }
    if s.metrics_listen.0.is_none() && secrets.metrics_token.is_none() {
        checks.push((
            Verdict::Warn,
            "metrics: --metrics-listen is off and HOP_METRICS_TOKEN unset: nothing can scrape /metrics".into(),
        ));
    }
    if let Some(warning) = plaintext_database(s.database_url.expose()) {
        checks.push((Verdict::Warn, warning));
    }
    checks.push(database(s.database_url.expose()).await);

    let _ = writeln!(out, "\nchecks:");
    for (verdict, what) in &checks {
        let _ = writeln!(out, "  {} {what}", verdict.label());
    }
    let passed = checks.iter().all(|(v, _)| *v != Verdict::Fail);
    let _ = writeln!(
        out,
        "\n{}",
        if passed {
            "configuration ok"
        } else {
            "configuration has problems: fix the FAIL lines"
        }
    );
    (out, passed)
}

/// How long the check waits for the database to accept a connection.
const CONNECT_WITHIN: std::time::Duration = std::time::Duration::from_secs(5);

/// Whether the database answers, and how its schema stands against this binary's.
async fn database(url: &str) -> (Verdict, String) {
    let shown = redact_url(url);
    if let Some(path) = url
        .strip_prefix("sqlite://")
        .or_else(|| url.strip_prefix("sqlite:"))
    {
        let path = path.split('?').next().unwrap_or_default();
        if !std::path::Path::new(path).exists() {
            return (
                Verdict::Warn,
                format!("database: {shown} does not exist yet; `hop-origin migrate` (or serve) creates it"),
            );
        }
    }
    // The pool retries a refused connection until its own timeout (30 s); a check
    // should answer sooner.
    let db = match tokio::time::timeout(CONNECT_WITHIN, Db::connect(url)).await {
        Ok(Ok(db)) => db,
        Ok(Err(e)) => {
            return (
                Verdict::Fail,
                format!("database: cannot connect to {shown}: {e}"),
            )
        }
        Err(_) => {
            return (
                Verdict::Fail,
                format!(
                    "database: cannot connect to {shown} within {} s",
                    CONNECT_WITHIN.as_secs()
                ),
            )
        }
    };
    let status = db.migration_status().await;
    db.close().await;
    match status {
        Ok((_, unknown)) if !unknown.is_empty() => (
            Verdict::Fail,
            format!("database: {shown} has migrations this binary does not know ({unknown:?}): a newer release ran on it; do not downgrade"),
        ),
        Ok((pending, _)) if pending.is_empty() => (
            Verdict::Ok,
            format!("database: {} at {shown}, schema up to date", db.kind()),
        ),
        Ok((pending, _)) => (
            Verdict::Warn,
            format!(
                "database: {} at {shown}, {} migration(s) to apply ({}); `hop-origin migrate` or serve applies them",
                db.kind(),
                pending.len(),
                pending.iter().map(i64::to_string).collect::<Vec<_>>().join(", ")
            ),
        ),
        Err(e) => (Verdict::Fail, format!("database: {shown} answered, but its migrations could not be read: {e}")),
    }
}

/// A warning when `url` reaches PostgreSQL on another machine without saying how TLS is
/// to be used: sqlx then tries TLS and falls back to plain text (`sslmode=prefer`), so
/// the password and every link may cross the network in the clear.
fn plaintext_database(url: &str) -> Option<String> {
    let parsed = url::Url::parse(url).ok()?;
    if !matches!(parsed.scheme(), "postgres" | "postgresql") {
        return None;
    }
    let mut params = parsed.query_pairs();
    if params.any(|(k, _)| k == "sslmode") {
        return None;
    }
    let host = parsed
        .query_pairs()
        .find(|(k, _)| k == "host")
        .map(|(_, v)| v.into_owned())
        .or_else(|| parsed.host_str().map(str::to_owned))
        .unwrap_or_default();
    let local = host.is_empty()
        || host.starts_with('/')
        || host == "localhost"
        || host
            .trim_matches(|c| c == '[' || c == ']')
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    (!local).then(|| {
        format!(
            "database: {host} is another machine and the URL sets no sslmode: add \
             sslmode=verify-full (with sslrootcert=CA.pem for a private CA), or at least \
             sslmode=require, so that nothing crosses the network in the clear"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_database_url_is_shown_without_any_password() {
        for (url, hidden) in [
            ("postgres://hop:s3cret@db.internal/hop", "s3cret"),
            (
                "postgres://hop@db.internal/hop?password=s3cret&sslmode=require",
                "s3cret",
            ),
            (
                "postgres://hop@db.internal/hop?sslpassword=s3cret",
                "s3cret",
            ),
            ("postgres://hop:s3cret@[bad", "s3cret"),
            ("not a url s3cret", "s3cret"),
        ] {
            let shown = redact_url(url);
            assert!(!shown.contains(hidden), "{url} shown as {shown}");
        }
        assert_eq!(
            redact_url("postgres://hop@db.internal/hop?sslmode=require"),
            "postgres://hop@db.internal/hop?sslmode=require"
        );
        assert!(
            redact_url("postgres://hop@db/hop?password=x&sslmode=require")
                .contains("sslmode=require")
        );
    }

    #[test]
    fn a_remote_database_without_sslmode_is_warned_about() {
        for url in [
            "postgres://hop@db.internal/hop",
            "postgresql://hop@10.1.2.3:5432/hop",
            "postgres:///hop?host=db.internal&user=hop",
        ] {
            assert!(plaintext_database(url).is_some(), "{url}");
        }
        for url in [
            "postgres://hop@db.internal/hop?sslmode=verify-full",
            "postgres://hop@localhost/hop",
            "postgres://hop@127.0.0.1:5432/hop",
            "postgres://hop@[::1]/hop",
            "postgres:///hop?host=/var/run/postgresql",
            "sqlite://hop.db",
        ] {
            assert!(plaintext_database(url).is_none(), "{url}");
        }
    }
}

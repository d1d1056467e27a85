//! `hop-origin config check`: what this process would run with, and whether it could.
//!
//! Prints every setting with where it came from (flag, environment, file, default), the
//! secrets as set or unset (never their values), then the checks: the publishing sink
//! and its token, the secrets a serving origin needs, and the database (reachable, its
//! migrations). Exits non-zero when a check fails, so a deploy can run it first.

use crate::config::{Loaded, Publishing};
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
    checks.push(database(&s.database_url).await);

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

/// `url` without its password.
fn redact_url(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut parsed) if parsed.password().is_some() => {
            let _ = parsed.set_password(Some("***"));
            parsed.to_string()
        }
        _ => url.to_owned(),
    }
}

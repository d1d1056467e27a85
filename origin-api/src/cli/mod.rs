//! The command line's doors. `import` and `export` talk to a running origin through its
//! API, as a marketer's script would: they never open the database, so they work against
//! a remote production origin as well as a local one. `config check` reads the
//! configuration and only looks at the database. The operator's commands
//! (`keys`, `domains`, `outbox`, …) call the one service the composition root built
//! for them ([`crate::app::commands`]).

pub mod abuse;
pub mod api_client;
pub mod config_check;
pub mod domains;
pub mod export;
pub mod import;
pub mod import_from;
pub mod keys;
pub mod outbox;
pub mod owners;
pub mod users;
pub mod webhooks;

use crate::config::{ApiArgs, ExportArgs, ImportArgs};
use api_client::ApiClient;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::net::SocketAddr;
use std::time::Duration;

/// The origin a command talks to: `--origin-url`, else the address of `--listen`.
pub fn origin_url(api: &ApiArgs, listen: SocketAddr) -> Result<url::Url, api_client::ClientError> {
    if let Some(url) = &api.origin_url {
        return Ok(url.clone());
    }
    let mut addr = listen;
    if addr.ip().is_unspecified() {
        addr.set_ip(std::net::Ipv4Addr::LOCALHOST.into());
    }
    url::Url::parse(&format!("http://{addr}/"))
        .map_err(|e| api_client::ClientError::Setup(format!("{addr}: {e}")))
}

fn connect(
    api: &ApiArgs,
    listen: SocketAddr,
) -> Result<(ApiClient, url::Url), api_client::ClientError> {
    use secrecy::ExposeSecret;
    let base = origin_url(api, listen)?;
    let from_env = crate::config::read_secret(&|name| std::env::var(name).ok(), "HOP_API_KEY")
        .map_err(|e| api_client::ClientError::Setup(e.to_string()))?
        .map(secrecy::SecretString::from);
    let key = api.api_key.clone().or(from_env).ok_or_else(|| {
        api_client::ClientError::Setup("set HOP_API_KEY (or HOP_API_KEY_FILE) to an API key".into())
    })?;
    let client = ApiClient::new(
        base.clone(),
        key.expose_secret(),
        Duration::from_secs(api.retry_for),
    )?;
    Ok((client, base))
}

/// A bar on standard error when it is a terminal; nothing otherwise (logs, CI).
fn progress_bar(template: &str) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
    if let Ok(style) = ProgressStyle::with_template(template) {
        bar.set_style(style);
    }
    bar
}

/// `import FILE`: prints a summary; fails when rows were refused or the run stopped.
pub async fn run_import(
    args: ImportArgs,
    listen: SocketAddr,
) -> Result<(), Box<dyn std::error::Error>> {
    let (client, base) = connect(&args.api, listen)?;
    if let Some(from) = args.from {
        return run_import_from(&client, args, from.into()).await;
    }
    let options = import::ImportOptions {
        file: args.file,
        journal: args.journal,
        domain: args.domain,
        batch_size: usize::from(args.batch_size),
        retry_failed: args.retry_failed,
    };
    let bar = progress_bar("{bar:40} {pos}/{len} rows ({per_sec}, {eta} left)");
    let summary = import::import(&client, base.as_str(), &options, &bar).await;
    bar.finish_and_clear();
    let summary = summary?;
    println!(
        "{} rows: {} created now, {} imported before, {} refused",
        summary.rows, summary.created, summary.already, summary.failed
    );
    for (row, error) in &summary.failures {
        println!("  row {row}: {error}");
    }
    if summary.failed > summary.failures.len() {
        println!(
            "  … and {} more (see the journal)",
            summary.failed - summary.failures.len()
        );
    }
    if summary.failed > 0 {
        return Err(format!(
            "{} rows were refused; fix them in the file and run the same command again",
            summary.failed
        )
        .into());
    }
    Ok(())
}

/// `import --from SOURCE`: prints the outcome per kind and every link that did not
/// arrive; fails when links were refused.
async fn run_import_from(
    client: &ApiClient,
    args: ImportArgs,
    source: crate::views::imports::Source,
) -> Result<(), Box<dyn std::error::Error>> {
    use crate::views::imports::Outcome;
    let source_token =
        crate::config::read_secret(&|name| std::env::var(name).ok(), "HOP_SOURCE_TOKEN")
            .map_err(|e| e.to_string())?
            .map(secrecy::SecretString::from);
    let options = import_from::FromOptions {
        source,
        input: args.file.display().to_string(),
        dry_run: args.dry_run,
        domain: args.domain,
        journal: args.journal,
        report: args.report,
        source_token,
        rows_per_call: usize::from(args.batch_size),
        source_interval: Duration::from_secs(60) / import_from::BITLY_CALLS_PER_MINUTE,
    };
    let bar = progress_bar("{bar:40} {pos}/{len} ({per_sec}, {eta} left)");
    let done = import_from::import_from(client, &options, &bar).await;
    bar.finish_and_clear();
    let done = done?;
    if done.rows.is_empty() && done.resumed_from > 0 {
        println!(
            "nothing to do: an earlier run finished this import (see its journal, or --journal); \
             delete the journal to send everything again"
        );
        return Ok(());
    }
    let s = &done.summary;
    let verb = if args.dry_run { "would be " } else { "" };
    println!(
        "{} links: {verb}created {}, {verb}changed {}, unchanged {}, refused {}, skipped {}, deferred {}",
        done.rows.len(),
        s.created,
        s.changed,
        s.unchanged,
        s.refused,
        s.skipped,
        s.deferred
    );
    if done.resumed_from > 0 {
        println!(
            "  (resumed after {} parts an earlier run had sent)",
            done.resumed_from
        );
    }
    if !done.unused_columns.is_empty() {
        println!(
            "  columns not imported (no field of Hop's reads them): {}",
            done.unused_columns.join(", ")
        );
    }
    for r in done
        .rows
        .iter()
        .filter(|r| {
            !matches!(
                r.outcome,
                Outcome::Created | Outcome::Changed | Outcome::Unchanged
            )
        })
        .take(20)
    {
        println!(
            "  row {} {}/{}: {:?}: {}",
            r.row,
            r.domain.as_deref().unwrap_or_default(),
            r.code,
            r.outcome,
            r.reason.as_deref().unwrap_or_default()
        );
    }
    if s.refused > 0 && !args.dry_run {
        return Err(format!(
            "{} links were refused (see above, or --report); fix them at the source or in Hop and run the same command again",
            s.refused
        )
        .into());
    }
    Ok(())
}

/// `export`: to `--output` (written whole or not at all) or standard output.
pub async fn run_export(
    args: ExportArgs,
    listen: SocketAddr,
) -> Result<(), Box<dyn std::error::Error>> {
    let (client, _) = connect(&args.api, listen)?;
    let options = export::ExportOptions {
        format: args.format,
        domain: args.domain,
        tag: args.tag,
        include_deleted: args.include_deleted,
    };
    let bar = progress_bar("{spinner} {pos} links ({per_sec})");
    let written = match &args.output {
        Some(path) => {
            let mut partial = path.clone().into_os_string();
            partial.push(".partial");
            let partial = std::path::PathBuf::from(partial);
            let mut file = std::io::BufWriter::new(std::fs::File::create(&partial)?);
            let written = export::export(&client, &options, &mut file, &bar).await;
            let written = match written {
                Ok(n) => n,
                Err(e) => {
                    let _ = std::fs::remove_file(&partial);
                    return Err(e.into());
                }
            };
            file.into_inner().map_err(|e| e.into_error())?.sync_all()?;
            std::fs::rename(&partial, path)?;
            written
        }
        None => {
            let stdout = std::io::stdout();
            let mut lock = stdout.lock();
            export::export(&client, &options, &mut lock, &bar).await?
        }
    };
    bar.finish_and_clear();
    eprintln!("exported {written} links");
    Ok(())
}

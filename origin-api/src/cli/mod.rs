//! The commands that talk to a running origin through its API, as a marketer's script
//! would: `import` and `export`. They never open the database, so they work against a
//! remote production origin as well as a local one. Also `config check`, which reads the
//! configuration and only looks at the database.

pub mod api_client;
pub mod config_check;
pub mod export;
pub mod import;
pub mod users;

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

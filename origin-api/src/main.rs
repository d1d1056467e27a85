use clap::Parser;
use origin_api::config::{Cli, Command};
use origin_api::{prepare, serve, AppState};
use std::process::ExitCode;
use tracing_subscriber::EnvFilter;

#[tokio::main]
async fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_env("HOP_LOG").unwrap_or_else(|_| EnvFilter::new("info")),
        )
        .init();
    let cli = Cli::parse();
    match run(cli).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!("{e}");
            eprintln!("hop-origin: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run(cli: Cli) -> Result<(), Box<dyn std::error::Error>> {
    let settings = cli.settings;
    let db = prepare(&settings).await?;
    match cli.command.unwrap_or(Command::Serve) {
        Command::Migrate => {
            tracing::info!(database = db.kind(), "migrations applied");
        }
        Command::Serve => {
            let listener = tokio::net::TcpListener::bind(settings.listen)
                .await
                .map_err(|e| format!("cannot listen on {}: {e}", settings.listen))?;
            tracing::info!(
                address = %listener.local_addr()?,
                database = db.kind(),
                default_domain = %settings.default_domain,
                "hop origin listening"
            );
            serve(listener, AppState { db, settings }, shutdown_signal()).await?;
        }
    }
    Ok(())
}

/// Completes on Ctrl-C or SIGTERM.
async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! { _ = ctrl_c => {}, _ = term => {} }
    tracing::info!("shutting down");
}

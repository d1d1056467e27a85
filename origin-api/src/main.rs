use origin_api::config::{Command, ConfigCommand, LoadError, Loaded};
use origin_api::{cli, prepare, serve_on, AppState, Listeners};
use std::process::ExitCode;
use tracing_subscriber::EnvFilter;

/// mimalloc rather than the system's allocator: a cached redirect makes about ten
/// allocations, and glibc's malloc and free were 8% of its instructions
/// (`scripts/bench-redirect-instructions`; the reference servers use the same allocator,
/// so the comparison stays one of logic).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() -> ExitCode {
    // Logs go to standard error; standard output carries only what commands print.
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            EnvFilter::try_from_env("HOP_LOG").unwrap_or_else(|_| EnvFilter::new("info")),
        )
        .init();
    let loaded = match origin_api::config::load(std::env::args_os().collect(), |name| {
        std::env::var(name).ok()
    }) {
        Ok(loaded) => loaded,
        // clap's own message, usage, and exit status (0 for --help and --version).
        Err(LoadError::Arguments(e)) => e.exit(),
        Err(e) => {
            eprintln!("hop-origin: {e}");
            return ExitCode::FAILURE;
        }
    };
    match run(loaded).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!("{e}");
            eprintln!("hop-origin: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run(loaded: Loaded) -> Result<(), Box<dyn std::error::Error>> {
    if let Some(Command::Config(ConfigCommand::Check)) = &loaded.cli.command {
        let (report, passed) = cli::config_check::run(&loaded).await;
        print!("{report}");
        return if passed {
            Ok(())
        } else {
            Err("the configuration check failed".into())
        };
    }
    let cli = loaded.cli;
    let settings = cli.settings;
    // The API clients never touch the database.
    let command = match cli.command.unwrap_or(Command::Serve) {
        Command::Import(args) => return cli::run_import(args, settings.listen).await,
        Command::Export(args) => return cli::run_export(args, settings.listen).await,
        other => other,
    };
    let db = prepare(&settings).await?;
    if !matches!(command, Command::Serve) {
        return origin_api::app::commands::run(command, db, &settings).await;
    }
    serve(db, settings).await
}

/// Serves the API, and the metrics and the dashboard where they are configured, until
/// Ctrl-C or SIGTERM.
async fn serve(
    db: origin_api::db::Db,
    settings: origin_api::config::Settings,
) -> Result<(), Box<dyn std::error::Error>> {
    if settings.secrets.permutation_keys.is_none() {
        tracing::warn!("HOP_PERMUTATION_KEYS is not set: links cannot be created until it is");
    }
    let listener = tokio::net::TcpListener::bind(settings.listen)
        .await
        .map_err(|e| format!("cannot listen on {}: {e}", settings.listen))?;
    tracing::info!(
        address = %listener.local_addr()?,
        database = db.kind(),
        default_domain = %settings.default_domain,
        "hop origin listening"
    );
    let metrics = bind_optional(settings.metrics_listen.0, "metrics", "--metrics-listen").await?;
    let dashboard = bind_optional(
        settings.dashboard_listen.0,
        "the dashboard",
        "--dashboard-listen",
    )
    .await?;
    let listeners = Listeners {
        api: listener,
        metrics,
        dashboard,
    };
    serve_on(listeners, AppState::new(db, settings), shutdown_signal()).await?;
    Ok(())
}

/// A listener on `addr` for `what`, when it is set; the error names the flag to change.
async fn bind_optional(
    addr: Option<std::net::SocketAddr>,
    what: &str,
    flag: &str,
) -> Result<Option<tokio::net::TcpListener>, String> {
    let Some(addr) = addr else { return Ok(None) };
    let l = tokio::net::TcpListener::bind(addr).await.map_err(|e| {
        format!("cannot serve {what} on {addr}: {e} (set {flag} to another address, or off)")
    })?;
    let local = l.local_addr().map_err(|e| e.to_string())?;
    tracing::info!(address = %local, "{what} listening");
    Ok(Some(l))
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

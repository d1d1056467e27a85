//! Hop's origin: the control plane (links, bans, publishing to the edge) and a complete
//! shortener on its own, on SQLite or PostgreSQL.

pub mod abuse;
pub mod accounts;
pub mod api_keys;
pub mod app;
pub mod auth;
pub mod bans;
pub mod cache;
pub mod ceiling;
pub mod cli;
pub mod clicks;
pub mod config;
pub mod dashboard;
pub mod db;
pub mod deadline;
pub mod domains;
pub mod edge;
pub mod error;
pub mod freshness;
pub mod health;
pub mod housekeeping;
pub mod imports;
pub mod in_flight;
pub mod leased;
pub mod links;
pub mod metrics;
pub mod model;
pub mod outbox;
pub mod owners;
pub mod principal;
pub mod proxies;
pub mod publisher;
pub mod purge;
pub mod random_ids;
pub mod ratelimit;
pub mod redirects;
pub mod retry;
pub mod routes;
pub mod same_site;
pub mod segments;
pub mod server;
pub mod store;
pub mod views;
pub mod webhooks;

pub use app::background::publisher;
pub use app::AppState;

use config::Settings;
use db::Db;
use tokio::net::TcpListener;

/// Why the origin could not be made ready to serve.
#[derive(Debug, thiserror::Error)]
pub enum PrepareError {
    #[error(transparent)]
    Db(#[from] db::DbError),
    #[error("cannot register the default domain: {0}")]
    Register(#[source] error::AppError),
}

/// Connects to the database and applies migrations.
pub async fn prepare(settings: &Settings) -> Result<Db, PrepareError> {
    let db = Db::connect(settings.database_url.expose()).await?;
    db.migrate().await?;
    domains::prepare_registry(&db, &settings.default_domain)
        .await
        .map_err(PrepareError::Register)?;
    Ok(db)
}

/// Serves on `listener` until `shutdown` completes, then drains open requests. With an
/// edge configured, the publisher runs alongside (leading or standing by) and gives its
/// lease up on the way out.
pub async fn serve(
    listener: TcpListener,
    state: AppState,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    serve_with_metrics(listener, None, state, shutdown).await
}

/// As [`serve`], with `/metrics` also served without credentials on `metrics` (the
/// `--metrics-listen` address, bound by the caller).
pub async fn serve_with_metrics(
    listener: TcpListener,
    metrics: Option<TcpListener>,
    state: AppState,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let listeners = Listeners {
        api: listener,
        metrics,
        dashboard: None,
    };
    serve_on(listeners, state, shutdown).await
}

/// The origin's listeners, each bound by the caller.
#[derive(Debug)]
pub struct Listeners {
    /// The API and the redirects.
    pub api: TcpListener,
    /// `/metrics` without credentials (`--metrics-listen`).
    pub metrics: Option<TcpListener>,
    /// The dashboard (`--dashboard-listen`).
    pub dashboard: Option<TcpListener>,
}

/// As [`serve`], on every listener given.
pub async fn serve_on(
    listeners: Listeners,
    state: AppState,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let Listeners {
        api: listener,
        metrics,
        dashboard,
    } = listeners;
    // Every background task, listed in one place (`app::background`).
    let background = app::background::start(&state)?;
    let limits = server::Limits {
        header_read_timeout: std::time::Duration::from_secs(state.settings.header_read_timeout),
        max_connections: state.settings.max_connections as usize,
        ..server::Limits::default()
    };
    let (closing, closed) = tokio::sync::watch::channel(false);
    let until_closed = |mut closed: tokio::sync::watch::Receiver<bool>| async move {
        let _ = closed.wait_for(|c| *c).await;
    };
    let scraping = metrics.map(|l| {
        tokio::spawn(server::serve(
            l,
            routes::metrics_router(state.clone()),
            server::Limits::default(),
            until_closed(closed.clone()),
        ))
    });
    let dashboard = dashboard.map(|l| {
        tokio::spawn(server::serve(
            l,
            dashboard::router(state.clone()),
            server::Limits::default(),
            until_closed(closed.clone()),
        ))
    });
    let served = server::serve(listener, routes::Origin::new(state), limits, async move {
        shutdown.await;
        let _ = closing.send(true);
    })
    .await;
    for task in [scraping, dashboard].into_iter().flatten() {
        let _ = task.await;
    }
    background.stop().await;
    served
}

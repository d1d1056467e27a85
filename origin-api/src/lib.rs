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

pub use app::AppState;

use config::Settings;
use db::Db;
use std::sync::Arc;
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

/// The publisher this origin runs, when it is configured to publish.
pub fn publisher(state: &AppState) -> std::io::Result<Option<publisher::Publisher>> {
    use publisher::sink::{KvBulk, Sink, WorkerSync};
    use secrecy::ExposeSecret;
    let s = &state.settings;
    let sink: Arc<dyn Sink> = match s.publishing().map_err(std::io::Error::other)? {
        config::Publishing::Nowhere => return Ok(None),
        config::Publishing::Worker { url, token } => {
            Arc::new(WorkerSync::new(url, token.expose_secret()).map_err(std::io::Error::other)?)
        }
        config::Publishing::Kv {
            account,
            namespace,
            token,
        } => Arc::new(
            KvBulk::new(&s.cf_api_url, account, namespace, token.expose_secret())
                .map_err(std::io::Error::other)?,
        ),
    };
    Ok(Some(publisher::Publisher::new(
        Arc::new(state.db().clone()),
        sink,
        state.metrics.clone(),
    )))
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
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let publishing = publisher(&state)?.map(|p| tokio::spawn(p.run(stopped)));
    // The origin's own clicks are written in the background, and what is queued at
    // shutdown is written before the process exits.
    let clicks = state.clicks.clone();
    let recording = tokio::spawn({
        let (c, stop) = (clicks.clone(), stop.subscribe());
        async move { c.record(stop).await }
    });
    // The edge's clicks, staged as they are acknowledged, folded into the rollups.
    let folding = tokio::spawn({
        let (c, stop) = (clicks.clone(), stop.subscribe());
        async move { c.fold(stop).await }
    });
    // Codes sent on to a domain's old shortener, counted per code.
    let legacy = tokio::spawn(clicks::legacy::run(
        state.db().clone(),
        state.clicks.counts.legacy.clone(),
        stop.subscribe(),
    ));
    // How far this process has written clicks, for the stats' `data_as_of`.
    let reporting = tokio::spawn({
        let (c, metrics, stop) = (clicks.clone(), state.metrics.clone(), stop.subscribe());
        async move { c.report(&metrics, stop).await }
    });
    // Webhook events to their endpoints: a task and a lease of its own, so that a slow
    // receiver holds up nothing else.
    let dispatching = tokio::spawn(
        webhooks::dispatch::Dispatcher::new(
            state.db().clone(),
            app::webhook_settings(&state.settings),
            state.links.settings.short_urls.clone(),
            state.metrics.clone(),
        )
        .map_err(std::io::Error::other)?
        .run(stop.subscribe()),
    );
    // Threat feeds refreshed when due, and live links re-checked against them: a lease
    // of its own, so one origin does it.
    let abusing = tokio::spawn(state.abuse.clone().run(stop.subscribe()));
    // Expired links and old tombstones purged, a few hundred a second, under a lease of
    // its own; every origin reads the id gauges.
    let purging = tokio::spawn(state.purge.clone().run(stop.subscribe()));
    // On PostgreSQL, other origins' changes reach this one's cache as they commit.
    let listening = tokio::spawn(freshness::listen(state.freshness.clone(), stop.subscribe()));
    // Once a minute, what is past its time is forgotten (housekeeping).
    let sweeper = tokio::spawn(housekeeping::run(state.housekeeping.clone()));
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
    sweeper.abort();
    let _ = stop.send(true);
    let _ = listening.await;
    let _ = recording.await;
    let _ = folding.await;
    let _ = legacy.await;
    let _ = dispatching.await;
    let _ = abusing.await;
    let _ = purging.await;
    // Everything held is written (or counted as dropped): nothing is outstanding.
    let _ = reporting.await;
    clicks.forget_reports().await;
    if let Some(task) = publishing {
        let _ = task.await;
    }
    served
}

//! Hop's origin: the control plane (links, bans, publishing to the edge) and a complete
//! shortener on its own, on SQLite or PostgreSQL.

pub mod auth;
pub mod bans;
pub mod cache;
pub mod ceiling;
pub mod cli;
pub mod config;
pub mod db;
pub mod error;
pub mod keys;
pub mod links;
pub mod metrics;
pub mod ratelimit;
pub mod routes;
pub mod segments;
pub mod store;

use config::Settings;
use db::Db;
use segments::{SegmentAllocator, DEFAULT_SEGMENT_MAX_AGE};
use std::sync::Arc;
use tokio::net::TcpListener;

/// What every handler can reach. Cloned for every request (axum's `State`), so it is one
/// `Arc`: cloning the parts themselves cost the redirect path a dozen atomic operations
/// and a few string copies per request.
#[derive(Debug, Clone)]
pub struct AppState(Arc<Shared>);

impl std::ops::Deref for AppState {
    type Target = Shared;
    fn deref(&self) -> &Shared {
        &self.0
    }
}

/// The parts of [`AppState`].
#[derive(Debug)]
pub struct Shared {
    pub db: Db,
    pub settings: Settings,
    pub allocator: SegmentAllocator,
    pub cache: cache::RedirectCache,
    pub create_limit: ratelimit::CreateLimit,
    pub metrics: metrics::Metrics,
}

impl AppState {
    /// The state of a serving origin over a migrated database.
    pub fn new(db: Db, settings: Settings) -> Self {
        let settings_rate = settings.create_rate;
        let metrics = metrics::Metrics::default();
        let cache = cache::RedirectCache::counting(
            settings.redirect_cache_entries,
            std::time::Duration::from_secs(settings.redirect_cache_ttl),
            metrics.redirect_lookups.clone(),
        );
        let allocator = SegmentAllocator::with_counters(
            Arc::new(ceiling::Raising {
                source: db.clone(),
                ceiling: cache.ceiling().clone(),
            }),
            LINK_SEQUENCE,
            DEFAULT_SEGMENT_MAX_AGE,
            metrics.segments_fetched.clone(),
            metrics.ids_wasted.clone(),
        );
        AppState(Arc::new(Shared {
            db,
            settings,
            allocator,
            cache,
            create_limit: ratelimit::CreateLimit::new(settings_rate),
            metrics,
        }))
    }
}

/// The `id_segments` row that numbers links.
pub const LINK_SEQUENCE: &str = "links";

/// Connects to the database and applies migrations.
pub async fn prepare(settings: &Settings) -> Result<Db, db::DbError> {
    let db = Db::connect(&settings.database_url).await?;
    db.migrate().await?;
    Ok(db)
}

/// Serves on `listener` until `shutdown` completes, then drains open requests.
pub async fn serve(
    listener: TcpListener,
    state: AppState,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    // Idle keys' rate budgets are dropped once a minute.
    let limit = state.create_limit.clone();
    let sweeper = tokio::spawn(async move {
        let mut every = tokio::time::interval(std::time::Duration::from_secs(60));
        loop {
            every.tick().await;
            limit.shrink();
        }
    });
    let served = axum::serve(listener, routes::router(state))
        .with_graceful_shutdown(shutdown)
        .await;
    sweeper.abort();
    served
}

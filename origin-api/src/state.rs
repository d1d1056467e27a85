//! The state every handler and service reaches: the pools, the settings, the caches and
//! counters, built once at start from the configuration.

use crate::config::Settings;
use crate::db::{self, Db};
use crate::segments::{CodeSequences, SegmentAllocator, DEFAULT_SEGMENT_MAX_AGE};
use crate::{auth, cache, ceiling, clicks, client, metrics, ratelimit};
use std::sync::Arc;

/// What every handler can reach. Cloned for every request (axum's `State`), so it is one
/// `Arc`: cloning the parts themselves cost the redirect path a dozen atomic operations
/// and a few string copies per request.
#[derive(Debug, Clone)]
pub struct AppState(Arc<AppParts>);

impl std::ops::Deref for AppState {
    type Target = AppParts;
    fn deref(&self) -> &AppParts {
        &self.0
    }
}

/// The parts of [`AppState`].
#[derive(Debug)]
pub struct AppParts {
    /// The API's, the publisher's and the background tasks' pool.
    pub db: Db,
    /// The redirect path's own pool: a flood of visits cannot take the API's
    /// connections, nor the API a visitor's ([`db::Db::with_own_pool`]).
    pub redirect_db: Db,
    /// Authentication's own pool: guessed keys wait only behind each other.
    pub auth_db: Db,
    pub settings: Settings,
    /// Numbers links (`link_id`).
    pub allocator: SegmentAllocator,
    /// Numbers each domain's generated codes.
    pub codes: CodeSequences,
    pub cache: cache::RedirectCache,
    pub create_limit: ratelimit::CreateLimit,
    /// Password changes per key ([`PASSWORD_CHANGES_PER_S`]): each costs a PBKDF2.
    pub password_changes: ratelimit::CreateLimit,
    pub metrics: metrics::Metrics,
    pub clicks: clicks::Clicks,
    pub recorder: clicks::recorder::Recorder,
    pub readiness: db::Readiness,
    /// Failed authentications per client, and the keys that verified.
    pub auth: auth::AuthGuard,
    /// Which peers' forwarding headers are believed.
    pub proxies: client::Proxies,
    /// Password links' attempts: counted per link, hashed a few at a time.
    pub passwords: crate::links::access::PasswordGate,
    /// This process among the others on the same database (random, new at each start):
    /// it names its rows in `click_sources`.
    pub process: String,
}

impl AppState {
    /// The state of a serving origin over a migrated database.
    pub fn new(db: Db, settings: Settings) -> Self {
        let settings_rate = settings.create_rate;
        let auth = auth::AuthGuard::new(
            settings.auth_failures_per_minute,
            std::time::Duration::from_secs(settings.key_hold),
        );
        let proxies = client::Proxies::new(
            settings.trusted_proxies.clone(),
            settings.client_ip_header.clone(),
            settings.country_header.clone(),
        );
        let metrics = metrics::Metrics::default();
        let cache = cache::RedirectCache::counting(
            settings.redirect_cache_entries,
            std::time::Duration::from_secs(settings.redirect_cache_ttl),
            metrics.redirect_lookups.clone(),
        );
        let allocator = SegmentAllocator::with_counters(
            Arc::new(db.clone()),
            crate::store::LINK_SEQUENCE,
            crate::model::sequence::DEFAULT_STEP,
            DEFAULT_SEGMENT_MAX_AGE,
            metrics.segments_fetched.clone(),
            metrics.ids_wasted.clone(),
        );
        let codes = CodeSequences::new(
            Arc::new(ceiling::Raising {
                source: db.clone(),
                ceilings: cache.ceilings().clone(),
            }),
            DEFAULT_SEGMENT_MAX_AGE,
            metrics.segments_fetched.clone(),
            metrics.ids_wasted.clone(),
        );
        AppState(Arc::new(AppParts {
            clicks: clicks::Clicks::new(
                settings.click_id_retention_h,
                settings.referrers_per_hour,
                metrics.clone(),
            )
            .fencing(cache.clone()),
            recorder: clicks::recorder::Recorder::new(
                settings.record_clicks,
                usize::try_from(settings.click_tally_mib << 20).unwrap_or(usize::MAX),
                cache.owners().clone(),
                metrics.clone(),
            ),
            redirect_db: db.with_own_pool(REDIRECT_CONNECTIONS, POOL_WAIT),
            auth_db: db.with_own_pool(AUTH_CONNECTIONS, POOL_WAIT),
            db,
            settings,
            allocator,
            codes,
            cache,
            create_limit: ratelimit::CreateLimit::new(settings_rate),
            password_changes: ratelimit::CreateLimit::counting(
                "changes passwords",
                PASSWORD_CHANGES_PER_S,
            ),
            readiness: db::Readiness::default(),
            auth,
            proxies,
            passwords: Default::default(),
            metrics,
            process: process_id(),
        }))
    }
}

impl AppParts {
    /// Closes every pool (the API's, the redirect path's, authentication's).
    pub async fn close_db(&self) {
        self.redirect_db.close().await;
        self.auth_db.close().await;
        self.db.close().await;
    }
}

/// Connections of the redirect path's pool.
pub const REDIRECT_CONNECTIONS: u32 = 8;
/// PATCHes that set a password, per key and second (bursts of twice as many): each is a
/// PBKDF2, and the hashing gate is shared with every visitor of a password link.
pub const PASSWORD_CHANGES_PER_S: std::num::NonZeroU32 = std::num::NonZeroU32::new(10).unwrap();
/// Connections of authentication's pool.
pub const AUTH_CONNECTIONS: u32 = 2;
/// How long the redirect path and authentication wait for a connection before the
/// request is answered 503: a visitor is better told to retry than kept waiting.
pub const POOL_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// 16 random hex digits; the time and process id if the system has no randomness.
fn process_id() -> String {
    let mut bytes = [0u8; 8];
    match getrandom::getrandom(&mut bytes) {
        Ok(()) => bytes.iter().map(|b| format!("{b:02x}")).collect(),
        Err(_) => format!("{:x}-{}", crate::model::time::now_ms(), std::process::id()),
    }
}

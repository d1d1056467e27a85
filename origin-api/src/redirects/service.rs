//! What the redirect path holds: its own pool, the redirect cache, the click recorder and
//! the password gate. A visit reaches nothing else, and no API call reaches its pool
//! ([`crate::db::Db::with_own_pool`]): a flood of visits cannot take the API's
//! connections, nor the API a visitor's. A visit's decision and its response are
//! `redirects/visit.rs` and `redirects/answer.rs`.

use crate::cache::RedirectCache;
use crate::clicks::recorder::Recorder;
use crate::db::Db;
use crate::links::access::PasswordGate;
use crate::metrics::Metrics;
use crate::proxies::Proxies;
use crate::store::StoreError;
use shared::KeyRing;
use std::sync::Arc;

/// The redirect path's service.
#[derive(Debug)]
pub struct Redirects {
    /// The redirect path's own pool.
    pub(super) db: Db,
    pub(super) cache: RedirectCache,
    pub(super) metrics: Metrics,
    /// Which peers' forwarding headers are believed.
    pub(super) proxies: Proxies,
    pub(super) recorder: Arc<Recorder>,
    /// Visits sent on to a domain's old shortener, counted per code.
    pub(super) legacy: Arc<crate::clicks::legacy::LegacyMisses>,
    /// Password links' attempts: counted per link, hashed a few at a time.
    pub(super) passwords: Arc<PasswordGate>,
    pub(super) settings: RedirectSettings,
}

/// What the redirect path reads of the configuration.
#[derive(Debug, Clone)]
pub struct RedirectSettings {
    /// The domain a visit on an unknown `Host` (or none) is answered for.
    pub default_domain: String,
    /// Tell a code that may be new from one that cannot exist without a read.
    pub permutation_keys: Option<KeyRing>,
    /// Names a visit-limited link's visitors, as the edge does (from the oldest
    /// permutation key).
    pub person_key: shared::clicks::person::PersonKey,
}

impl Redirects {
    /// The redirect path over its own pool `db`; the other handles are shared with the
    /// rest of the origin by the root.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        db: Db,
        cache: RedirectCache,
        metrics: Metrics,
        proxies: Proxies,
        recorder: Arc<Recorder>,
        legacy: Arc<crate::clicks::legacy::LegacyMisses>,
        passwords: Arc<PasswordGate>,
        settings: RedirectSettings,
    ) -> Self {
        Redirects {
            db,
            cache,
            metrics,
            proxies,
            recorder,
            legacy,
            passwords,
            settings,
        }
    }

    /// Closes the redirect path's pool.
    pub async fn close(&self) {
        self.db.close().await;
    }

    /// Whether `route` is on its domain's legacy list: a code the old shortener served.
    pub async fn legacy_known(&self, route: &shared::RouteKey) -> Result<bool, StoreError> {
        crate::store::legacy_codes::known(&self.db, route.domain(), route.code()).await
    }
}

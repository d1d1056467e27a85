//! The composition root: the one place that builds the origin from its configuration.
//!
//! Each service is a value holding only what it uses, with settings of its own type
//! (no service reads the command line's [`Settings`]); the handlers get theirs through
//! axum's `FromRef`, so a handler names the one service it calls. What several services
//! share (the API's pool, the redirect cache, the metrics, the id sequences) is made here
//! once and handed to each: those are handles, cheap to clone.

pub mod background;
pub mod commands;

use crate::abuse::reports::Reports;
use crate::abuse::{AbuseDesk, AbuseSettings};
use crate::accounts::Accounts;
use crate::api_keys::{ApiKeys, AuthGuard};
use crate::auth::Auth;
use crate::bans::Bans;
use crate::cache::RedirectCache;
use crate::ceiling;
use crate::clicks::{recorder::Recorder, ClickService, Clicks};
use crate::config::Settings;
use crate::db::Db;
use crate::domains::Domains;
use crate::edge::Edge;
use crate::freshness::Freshness;
use crate::health::Health;
use crate::housekeeping::Housekeeping;
use crate::links::access::PasswordGate;
use crate::links::{LinkSettings, Links, TargetPolicy};
use crate::metrics::Metrics;
use crate::model::ShortUrls;
use crate::outbox::Outbox;
use crate::proxies::Proxies;
use crate::purge::{Purge, PurgeSettings};
use crate::ratelimit::CreateLimit;
use crate::redirects::{RedirectSettings, Redirects};
use crate::segments::{CodeSequences, SegmentAllocator, DEFAULT_SEGMENT_MAX_AGE};
use crate::webhooks::{WebhookSettings, Webhooks};
use axum::extract::FromRef;
use std::sync::Arc;
use std::time::Duration;

/// The whole origin, as the router holds it. Cloned for every request (axum's `State`),
/// so it is one `Arc`: cloning the parts themselves cost the redirect path a dozen
/// atomic operations and a few string copies per request.
#[derive(Debug, Clone)]
pub struct AppState(Arc<AppParts>);

impl std::ops::Deref for AppState {
    type Target = AppParts;
    fn deref(&self) -> &AppParts {
        &self.0
    }
}

/// The services, and what the server and the background tasks need besides.
#[derive(Debug)]
pub struct AppParts {
    pub links: Arc<Links>,
    pub domains: Arc<Domains>,
    pub bans: Arc<Bans>,
    pub redirects: Arc<Redirects>,
    pub auth: Arc<Auth>,
    pub clicks: Arc<ClickService>,
    pub health: Arc<Health>,
    pub edge: Arc<Edge>,
    pub freshness: Arc<Freshness>,
    pub housekeeping: Arc<Housekeeping>,
    pub accounts: Arc<Accounts>,
    pub webhooks: Arc<Webhooks>,
    pub abuse: Arc<AbuseDesk>,
    /// The purge of expired links, tombstones' payloads and old click rollups.
    pub purge: Arc<Purge>,
    pub reports: Arc<Reports>,
    pub keys: Arc<ApiKeys>,
    pub outbox: Arc<Outbox>,
    /// The API's, the publisher's and the background tasks' pool.
    db: Db,
    /// The redirect path's own pool, as its service holds it.
    redirect_db: Db,
    pub cache: RedirectCache,
    pub metrics: Metrics,
    /// The configuration, for the server (its limits) and the publisher; no service
    /// reads it.
    pub settings: Settings,
}

impl AppState {
    /// The origin over a migrated database: every service, built from `settings`.
    pub fn new(db: Db, settings: Settings) -> Self {
        build(db, settings)
    }

    /// The API's pool: for the publisher and the background tasks the root starts, and
    /// for tests that look at the database. No door is handed it.
    pub fn db(&self) -> &Db {
        &self.db
    }

    /// The redirect path's pool, for tests that exhaust or close it.
    #[doc(hidden)]
    pub fn redirect_pool(&self) -> &Db {
        &self.redirect_db
    }

    /// Closes every pool (the API's, the redirect path's, authentication's).
    pub async fn close_db(&self) {
        self.redirects.close().await;
        self.auth.close().await;
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
pub const POOL_WAIT: Duration = Duration::from_secs(2);

/// Builds the origin: the one place where the configuration becomes services.
pub fn build(db: Db, settings: Settings) -> AppState {
    let metrics = Metrics::default();
    let cache = RedirectCache::counting(
        settings.redirect_cache_entries,
        Duration::from_secs(settings.redirect_cache_ttl),
        metrics.redirect_lookups.clone(),
    );
    let codes = code_sequences(&db, &cache, &metrics);
    let ids = link_ids(&db, &metrics);
    let proxies = Proxies::new(
        settings.trusted_proxies.clone(),
        settings.client_ip_header.clone(),
        settings.country_header.clone(),
    );
    let passwords = Arc::new(PasswordGate::default());
    let create_limit = CreateLimit::new(settings.create_rate);
    let counts = Arc::new(
        Clicks::new(
            settings.click_id_retention_h,
            settings.referrers_per_hour,
            metrics.clone(),
        )
        .fencing(cache.clone()),
    );
    let recorder = Arc::new(Recorder::new(
        settings.record_clicks,
        usize::try_from(settings.click_tally_mib << 20).unwrap_or(usize::MAX),
        cache.owners().clone(),
        metrics.clone(),
    ));
    let secrets = &settings.secrets;
    let links = links(
        &db,
        (ids.clone(), codes.clone()),
        &cache,
        &metrics,
        create_limit.clone(),
        passwords.clone(),
        &settings,
    );
    let redirect_db = db.with_own_pool(REDIRECT_CONNECTIONS, POOL_WAIT);
    let redirects = Redirects::new(
        redirect_db.clone(),
        cache.clone(),
        metrics.clone(),
        proxies.clone(),
        recorder.clone(),
        counts.legacy.clone(),
        passwords,
        RedirectSettings {
            default_domain: settings.default_domain.clone(),
            permutation_keys: secrets.permutation_keys.clone(),
            person_key: shared::clicks::person::PersonKey::derive(
                secrets
                    .permutation_keys
                    .as_ref()
                    .and_then(shared::KeyRing::oldest),
            ),
        },
    );
    let report_proxies = proxies.clone();
    let key_guard = Arc::new(AuthGuard::new(
        settings.auth_failures_per_minute,
        Duration::from_secs(settings.key_hold),
    ));
    let keys = Arc::new(ApiKeys::new(db.clone(), key_guard.clone()));
    let auth = Auth::new(
        db.with_own_pool(AUTH_CONNECTIONS, POOL_WAIT),
        key_guard,
        proxies,
    );
    let clicks = ClickService::new(db.clone(), counts.clone(), recorder, process_id());
    let health = Health::new(
        db.clone(),
        metrics.clone(),
        ids,
        codes.clone(),
        secrets.metrics_token.clone(),
    );
    let edge = Edge::new(
        db.clone(),
        cache.clone(),
        metrics.clone(),
        counts.clone(),
        secrets.edge_token.clone(),
    );
    let reports = Arc::new(reports(&db, &metrics, report_proxies, &settings));
    let housekeeping = Housekeeping::new(
        db.clone(),
        create_limit,
        reports.clone(),
        counts.retention_ms(),
        settings.outbox_retention,
        settings.webhook_retention,
    );
    let freshness = Freshness::new(db.clone(), cache.clone(), metrics.clone());
    let bans = Arc::new(Bans::new(
        db.clone(),
        cache.clone(),
        settings.default_domain.clone(),
    ));
    AppState(Arc::new(AppParts {
        links: Arc::new(links),
        domains: Arc::new(domains(&db, &cache, &settings)),
        redirects: Arc::new(redirects),
        auth: Arc::new(auth),
        clicks: Arc::new(clicks),
        health: Arc::new(health),
        edge: Arc::new(edge),
        freshness: Arc::new(freshness),
        housekeeping: Arc::new(housekeeping),
        accounts: Arc::new(accounts(&db, keys.clone(), &settings)),
        webhooks: Arc::new(webhooks_only(db.clone(), &settings)),
        abuse: Arc::new(abuse(&db, bans.clone(), &metrics, &settings)),
        purge: Arc::new(Purge::new(
            db.clone(),
            cache.clone(),
            metrics.clone(),
            PurgeSettings {
                expired_after: settings.purge_expired_after.0,
                restore_window: settings.restore_window,
                click_retention: settings.click_rollup_retention.0,
                per_second: settings.purge_rate,
            },
        )),
        reports,
        bans,
        keys,
        outbox: Arc::new(Outbox::new(db.clone())),
        db,
        redirect_db,
        cache,
        metrics,
        settings,
    }))
}

/// The links service over `db`, with the allocators of ids and codes it draws from.
fn links(
    db: &Db,
    (ids, codes): (SegmentAllocator, CodeSequences),
    cache: &RedirectCache,
    metrics: &Metrics,
    create_limit: CreateLimit,
    passwords: Arc<PasswordGate>,
    settings: &Settings,
) -> Links {
    let secrets = &settings.secrets;
    Links::new(
        db.clone(),
        ids,
        codes,
        cache.clone(),
        metrics.clone(),
        (
            create_limit,
            CreateLimit::counting("this owner creates links", settings.owner_create_rate)
                .answering("owner-rate-limited"),
            CreateLimit::counting("this key changes passwords", PASSWORD_CHANGES_PER_S),
        ),
        passwords,
        LinkSettings {
            policy: target_policy(settings),
            permutation_keys: secrets.permutation_keys.clone(),
            code_key_version: settings.code_key_version,
            short_urls: ShortUrls::new(&settings.short_url_bases),
            import_edge_wait: Duration::from_secs(settings.import_edge_wait),
            restore_window: settings.restore_window,
            quotas: crate::model::quota::Limits {
                links: quota_flag(settings.owner_max_links),
                links_per_day: quota_flag(settings.owner_max_links_per_day),
            },
            create_rates: (settings.create_rate.get(), settings.owner_create_rate.get()),
            words: Arc::new(settings.words()),
        },
    )
}

/// Only the links service (`hop-origin owners`: an owner's quotas), on the API's pool,
/// with a cache and allocators of its own that nothing else reads.
pub fn links_only(db: Db, settings: &Settings) -> Links {
    let metrics = Metrics::default();
    let cache = RedirectCache::new(1);
    let codes = code_sequences(&db, &cache, &metrics);
    let ids = link_ids(&db, &metrics);
    links(
        &db,
        (ids, codes),
        &cache,
        &metrics,
        CreateLimit::new(settings.create_rate),
        Arc::new(PasswordGate::default()),
        settings,
    )
}

fn abuse(db: &Db, bans: Arc<Bans>, metrics: &Metrics, settings: &Settings) -> AbuseDesk {
    AbuseDesk::new(
        db.clone(),
        bans,
        metrics.clone(),
        AbuseSettings {
            recheck_per_second: settings.recheck_rate,
            allow_http: settings.feed_allow_http,
        },
    )
}

/// Only the abuse desk (`hop-origin feeds`), with the bans it makes; their cache is one
/// nothing reads (the serving origins hear of a ban through the database).
pub fn abuse_only(db: Db, settings: &Settings) -> AbuseDesk {
    let bans = Arc::new(Bans::new(
        db.clone(),
        RedirectCache::new(1),
        settings.default_domain.clone(),
    ));
    abuse(&db, bans, &Metrics::default(), settings)
}

fn reports(db: &Db, metrics: &Metrics, proxies: Proxies, settings: &Settings) -> Reports {
    Reports::new(
        db.clone(),
        metrics.clone(),
        (
            CreateLimit::per_minute("this address sends reports", settings.report_rate),
            CreateLimit::per_minute("this shortener takes reports", settings.report_rate_global),
        ),
        settings.report_retention,
        settings.default_domain.clone(),
        proxies,
    )
}

/// Only the reports (`hop-origin reports`).
pub fn reports_only(db: Db, settings: &Settings) -> Reports {
    let proxies = Proxies::new(
        settings.trusted_proxies.clone(),
        settings.client_ip_header.clone(),
        settings.country_header.clone(),
    );
    reports(&db, &Metrics::default(), proxies, settings)
}

/// A quota flag: 0 is no limit.
fn quota_flag(n: u64) -> Option<i64> {
    (n > 0).then(|| i64::try_from(n).unwrap_or(i64::MAX))
}

/// The webhooks' settings from the configuration (`--webhook-*`).
pub fn webhook_settings(settings: &Settings) -> WebhookSettings {
    WebhookSettings {
        schedule: settings.webhook_retry_schedule.0.clone(),
        give_up_after: settings.webhook_give_up_after,
        retention: settings.webhook_retention,
        timeout: Duration::from_secs(settings.webhook_timeout),
        allow_private: settings.webhook_allow_private,
    }
}

/// Only the keys service (`hop-origin keys`): a guard nobody else reads (a serving
/// origin holds a revoked key until its `--key-hold` ends).
pub fn api_keys_only(db: Db) -> ApiKeys {
    ApiKeys::new(db, Arc::new(AuthGuard::new(1, Duration::ZERO)))
}

/// Only the outbox service (`hop-origin outbox`).
pub fn outbox_only(db: Db) -> Outbox {
    Outbox::new(db)
}

/// Only the accounts service (`hop-origin users`), with a keys service of its own for
/// the keys a disabled user made.
pub fn accounts_only(db: Db, settings: &Settings) -> Accounts {
    let keys = Arc::new(api_keys_only(db.clone()));
    accounts(&db, keys, settings)
}

fn accounts(db: &Db, keys: Arc<ApiKeys>, settings: &Settings) -> Accounts {
    Accounts::new(db.clone(), keys).with_secure_cookies(settings.dashboard_secure_cookies)
}

/// Only the webhooks service (`hop-origin webhooks`).
pub fn webhooks_only(db: Db, settings: &Settings) -> Webhooks {
    Webhooks::new(db, webhook_settings(settings))
}

/// Only what registering and changing domains needs (`hop-origin domains add|set|remove`):
/// the API's pool, and a cache that nothing reads (the serving origins hear of the change
/// through the database).
pub fn domains_only(db: Db, settings: &Settings) -> Domains {
    domains(&db, &RedirectCache::new(1), settings)
}

fn domains(db: &Db, cache: &RedirectCache, settings: &Settings) -> Domains {
    Domains::new(db.clone(), cache.clone(), target_policy(settings))
}

fn target_policy(settings: &Settings) -> TargetPolicy {
    TargetPolicy {
        default_domain: settings.default_domain.clone(),
        allow_target_hosts: settings.allow_target_hosts.clone(),
        listen: settings.listen,
    }
}

/// The allocator of link ids, in segments of the database's sequence.
fn link_ids(db: &Db, metrics: &Metrics) -> SegmentAllocator {
    SegmentAllocator::with_counters(
        Arc::new(db.clone()),
        crate::segments::LINK_SEQUENCE,
        crate::model::sequence::DEFAULT_STEP,
        DEFAULT_SEGMENT_MAX_AGE,
        metrics.segments_fetched.clone(),
        metrics.ids_wasted.clone(),
    )
}

/// Each domain's code sequence, raising the ceiling of what the cache may call
/// possibly-new as it goes.
fn code_sequences(db: &Db, cache: &RedirectCache, metrics: &Metrics) -> CodeSequences {
    CodeSequences::new(
        Arc::new(ceiling::Raising {
            source: db.clone(),
            ceilings: cache.ceilings().clone(),
        }),
        DEFAULT_SEGMENT_MAX_AGE,
        metrics.segments_fetched.clone(),
        metrics.ids_wasted.clone(),
    )
}

/// 16 random hex digits; the time and process id if the system has no randomness.
fn process_id() -> String {
    let mut bytes = [0u8; 8];
    match getrandom::getrandom(&mut bytes) {
        Ok(()) => bytes.iter().map(|b| format!("{b:02x}")).collect(),
        Err(_) => format!("{:x}-{}", crate::model::time::now_ms(), std::process::id()),
    }
}

/// Each service from the root, for the handlers that take it (`State<Arc<Links>>`).
macro_rules! services_from_the_root {
    ($($field:ident: $service:ty),* $(,)?) => {$(
        impl FromRef<AppState> for Arc<$service> {
            fn from_ref(state: &AppState) -> Self {
                state.$field.clone()
            }
        }
    )*};
}

services_from_the_root!(
    links: Links,
    domains: Domains,
    bans: Bans,
    redirects: Redirects,
    auth: Auth,
    clicks: ClickService,
    health: Health,
    edge: Edge,
    accounts: Accounts,
    webhooks: Webhooks,
    abuse: AbuseDesk,
    reports: Reports,
    keys: ApiKeys,
    outbox: Outbox,
);

//! The links service: what creating, changing and reading links holds, built by the
//! composition root ([`crate::app`]).

use crate::cache::RedirectCache;
use crate::config::AllowedHost;
use crate::db::Db;
use crate::metrics::Metrics;
use crate::model::ShortUrls;
use crate::ratelimit::CreateLimit;
use crate::segments::{CodeSequences, SegmentAllocator};
use shared::KeyRing;
use std::net::SocketAddr;
use std::sync::Arc;

use super::access::PasswordGate;

#[derive(Debug)]
pub struct Links {
    /// The API's pool: the links service's own files reach it, nobody else.
    pub(super) db: Db,
    /// Numbers links (`link_id`).
    pub ids: SegmentAllocator,
    /// Numbers each domain's generated codes.
    pub codes: CodeSequences,
    /// This origin's redirect cache, told of each write at once.
    pub cache: RedirectCache,
    pub metrics: Metrics,
    /// Links created per key.
    pub create_limit: CreateLimit,
    /// Links created per owner, whatever its keys and people (`--owner-create-rate`).
    pub owner_create_limit: CreateLimit,
    /// Changes that set a password, per actor (`key:…`, `user:…`): taken by
    /// [`crate::links::update_link`] whichever door the change comes through.
    pub password_changes: CreateLimit,
    /// The one gate every password hash passes (visitors' too).
    pub passwords: Arc<PasswordGate>,
    /// The domains holding codes imported from other shorteners.
    pub foreign: ForeignDomains,
    /// Random codes to hand out before drawing any: empty but in tests, which script
    /// collisions with it (a CSPRNG's draws cannot be foreseen).
    pub scripted_codes: std::sync::Mutex<std::collections::VecDeque<String>>,
    pub settings: LinkSettings,
}

/// Which domains hold imported codes ([`crate::store::foreign_codes`]), remembered: a
/// domain that holds some always will; one that did not is asked again after a few
/// seconds (another origin may have imported since).
#[derive(Debug, Default)]
pub struct ForeignDomains {
    known: std::sync::Mutex<std::collections::HashMap<String, (bool, std::time::Instant)>>,
}

/// How long "holds no imported codes" is believed.
const FOREIGN_RECHECK: std::time::Duration = std::time::Duration::from_secs(5);

impl ForeignDomains {
    /// Whether `domain` holds imported codes.
    pub async fn holds(&self, db: &Db, domain: &str) -> Result<bool, crate::store::StoreError> {
        let now = std::time::Instant::now();
        if let Some(&(holds, at)) = self.lock().get(domain) {
            if holds || now.duration_since(at) < FOREIGN_RECHECK {
                return Ok(holds);
            }
        }
        let holds = crate::store::foreign_codes::window(db, domain)
            .await?
            .is_some();
        self.noted(domain, holds);
        Ok(holds)
    }

    /// Remembers that `domain` holds imported codes (or not).
    pub fn noted(&self, domain: &str, holds: bool) {
        let mut known = self.lock();
        // Made-up domains never reach here (only registered ones take links); still,
        // the map is bounded.
        if known.len() > 10_000 {
            known.clear();
        }
        known.insert(domain.to_owned(), (holds, std::time::Instant::now()));
    }

    fn lock(
        &self,
    ) -> std::sync::MutexGuard<'_, std::collections::HashMap<String, (bool, std::time::Instant)>>
    {
        self.known.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Links {
    /// The links service over `db`, with the handles the root shares with the other
    /// services and its three budgets (creates per key, creates per owner, password
    /// changes per actor); no domain is known to hold imported codes yet, and no code is
    /// scripted.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        db: Db,
        ids: SegmentAllocator,
        codes: CodeSequences,
        cache: RedirectCache,
        metrics: Metrics,
        (create_limit, owner_create_limit, password_changes): (
            CreateLimit,
            CreateLimit,
            CreateLimit,
        ),
        passwords: Arc<PasswordGate>,
        settings: LinkSettings,
    ) -> Self {
        Links {
            db,
            ids,
            codes,
            cache,
            metrics,
            create_limit,
            owner_create_limit,
            password_changes,
            passwords,
            foreign: ForeignDomains::default(),
            scripted_codes: Default::default(),
            settings,
        }
    }

    /// `link` as the API shows it.
    pub fn view(&self, link: &crate::model::Link) -> crate::views::links::LinkView {
        link.view(&self.settings.short_urls)
    }

    /// `owner`'s quotas: its own where the operator set them, else the defaults.
    pub async fn limits_for(
        &self,
        owner: &str,
    ) -> Result<crate::model::quota::Limits, crate::store::StoreError> {
        use crate::model::quota::{resolve, Limits};
        let (links, per_day) = crate::store::quotas::own_limits(&self.db, owner).await?;
        Ok(Limits {
            links: resolve(links, self.settings.quotas.links),
            links_per_day: resolve(per_day, self.settings.quotas.links_per_day),
        })
    }

    /// Takes `n` creates from the budgets of the key (or person) `key` and of `owner`.
    pub fn take_creates(
        &self,
        key: &str,
        owner: &str,
        n: usize,
    ) -> Result<(), crate::error::AppError> {
        self.create_limit.take(key, n)?;
        self.owner_create_limit.take(owner, n)
    }

    /// What visitors are given of `link`.
    pub fn short_url(&self, link: &crate::model::Link) -> String {
        self.settings.short_urls.of(&link.domain, &link.code)
    }
}

/// What the links service reads of the configuration.
#[derive(Debug, Clone)]
pub struct LinkSettings {
    pub policy: TargetPolicy,
    /// `HOP_PERMUTATION_KEYS`: required to create links.
    pub permutation_keys: Option<KeyRing>,
    /// The key version that makes new codes (`--code-key-version`), else the newest.
    pub code_key_version: Option<u32>,
    /// How the links' full short URLs are written.
    pub short_urls: ShortUrls,
    /// How long the edge takes to learn that a domain imports codes of its generated
    /// shape (`--import-edge-wait`).
    pub import_edge_wait: std::time::Duration,
    /// How long a deleted link stays restorable by its owner (`--restore-window`).
    pub restore_window: std::time::Duration,
    /// Every owner's quotas unless the operator set its own (`--owner-max-links`,
    /// `--owner-max-links-per-day`).
    pub quotas: crate::model::quota::Limits,
    /// Links per second a key, and an owner, may create (`--create-rate`,
    /// `--owner-create-rate`).
    pub create_rates: (u32, u32),
    /// The reserved and offensive words codes are judged by (`--reserved-words`,
    /// `--offensive-words`).
    pub words: Arc<shared::words::Words>,
}

/// Where visitors may be sent: the rules every target, rule target, variant, preview
/// image and domain page passes.
#[derive(Debug, Clone)]
pub struct TargetPolicy {
    /// The default short domain: never a target, nor any host under it.
    pub default_domain: String,
    /// Private hosts an operator allowed (`--allow-target-hosts`).
    pub allow_target_hosts: Vec<AllowedHost>,
    /// This origin's own listening address: a target that would reach it is refused.
    pub listen: SocketAddr,
}

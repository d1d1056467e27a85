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
    /// The API's pool.
    pub db: Db,
    /// Numbers links (`link_id`).
    pub ids: SegmentAllocator,
    /// Numbers each domain's generated codes.
    pub codes: CodeSequences,
    /// This origin's redirect cache, told of each write at once.
    pub cache: RedirectCache,
    pub metrics: Metrics,
    /// Links created per key.
    pub create_limit: CreateLimit,
    /// Password changes per key: each costs a PBKDF2.
    pub password_changes: CreateLimit,
    /// The one gate every password hash passes (visitors' too).
    pub passwords: Arc<PasswordGate>,
    pub settings: LinkSettings,
}

impl Links {
    /// `link` as the API shows it.
    pub fn view(&self, link: &crate::model::Link) -> crate::views::links::LinkView {
        link.view(&self.settings.short_urls)
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

//! Domains' settings as this isolate holds them: read from KV under `cfg:{domain}` and
//! kept in memory for a moment, as the denylist is, so that a busy isolate reads each
//! domain's settings about once a second.
//!
//! A domain with no `cfg:` (the origin has not published it yet, or it is not Hop's) has
//! the defaults every domain had before the registry: its links in KV still redirect,
//! and nothing more is asked of the origin for it than for any domain.

use crate::kv::Kv;
use shared::fallback::Held;
use shared::{DomainConfig, DomainSettings};
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use worker::console_error;

/// How long this isolate trusts its copy of a domain's settings. A change (a domain
/// disabled, say) reaches a visitor within this and KV's cache time.
const HOLD_MS: u64 = 1_000;
/// Cloudflare's smallest per-location KV cache.
const CACHE_TTL_S: u32 = 30;
/// Domains held at most: when full, all go (a flood of made-up `Host` names must not
/// grow the isolate's memory).
const MAX_HELD: usize = 1_000;

/// A domain's settings as held: `None` when KV has none for it.
pub(crate) type Settings = Option<Rc<DomainSettings>>;

thread_local! {
    // Workers isolates run one thread; this is per-isolate memory.
    static HELD: RefCell<HashMap<String, Held<Settings>>> = RefCell::new(HashMap::new());
}

/// `domain`'s settings, if this isolate read them less than [`HOLD_MS`] before `now_ms`.
pub(crate) fn held(domain: &str, now_ms: u64) -> Option<Settings> {
    HELD.with_borrow(|held| held.get(domain).and_then(|h| h.fresh(now_ms, HOLD_MS)))
}

/// Reads `domain`'s settings again and holds them. When KV cannot be read, or holds a
/// value this worker cannot read, the last copy held is used; with none, the defaults.
pub(crate) async fn refresh(kv: &Kv, domain: &str, now_ms: u64) -> Settings {
    match read(kv, domain).await {
        Ok(settings) => {
            HELD.with_borrow_mut(|held| {
                if held.len() >= MAX_HELD && !held.contains_key(domain) {
                    held.clear();
                }
                held.insert(domain.to_owned(), Held::new(settings.clone(), now_ms));
            });
            settings
        }
        Err(e) => {
            console_error!("settings of {domain} unreadable, keeping the last copy: {e}");
            crate::health::fault(shared::tally::Fault::KvRead);
            HELD.with_borrow(|held| held.get(domain).and_then(|h| h.value().clone()))
        }
    }
}

thread_local! {
    static DEFAULTS: Rc<DomainSettings> = Rc::new(DomainSettings::default());
}

/// The settings a visit is decided by: those held, or the defaults.
pub(crate) fn or_defaults(settings: Settings) -> Rc<DomainSettings> {
    settings.unwrap_or_else(|| DEFAULTS.with(Rc::clone))
}

async fn read(kv: &Kv, domain: &str) -> Result<Settings, String> {
    match kv.text(&shared::config_key(domain), CACHE_TTL_S).await? {
        None => Ok(None),
        Some(json) => DomainConfig::from_json(&json)
            .map(|c| Some(Rc::new(c.settings)))
            .map_err(|e| format!("corrupt cfg: {e}")),
    }
}

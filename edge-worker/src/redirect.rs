//! The redirect path: request line → early checks → denylist → record → decision.

use crate::denylist;
use crate::fallback::{self, Ask, Resolved};
use shared::decision::RETRY_AFTER_S;
use shared::{decide, reject_early, Decision, DomainSettings, EdgeRecord, Method, RouteKey, Visit};
use worker::{console_error, Date, Env, Request};

/// KV binding holding records and the denylist.
pub(crate) const LINKS: &str = "LINKS";

/// How long a location may serve a cached record. Edits are allowed to take minutes
/// (bans do not rely on this: they travel in the denylist).
const RECORD_CACHE_TTL_S: u64 = 60;

pub(crate) async fn handle(req: &Request, env: &Env) -> Decision {
    let method = Method::parse(req.method().as_ref());
    let url = match req.url() {
        Ok(url) => url,
        Err(_) => return Decision::not_found(method),
    };
    let code = url.path().strip_prefix('/').unwrap_or_default();
    if let Some(early) = reject_early(method, code) {
        return early;
    }
    // The runtime's URL parser already lowercased the host and converted it to punycode.
    let host = url.host_str().unwrap_or_default();
    let Some(route) = RouteKey::new(host.trim_end_matches('.'), code) else {
        return Decision::not_found(method);
    };
    let kv = match env.kv(LINKS) {
        Ok(kv) => kv,
        Err(e) => {
            console_error!("KV binding {LINKS} missing: {e}");
            return Decision::unavailable(method, RETRY_AFTER_S);
        }
    };
    let deny = denylist::current(&kv).await;
    let visit = Visit {
        method,
        route: &route,
        query: url.query(),
        now: (Date::now().as_millis() / 1000) as i64,
    };
    // Per-domain settings (`cfg:{domain}`) are read here once the origin publishes
    // them; until then every domain has the defaults.
    let settings = DomainSettings::default();
    if deny.blocks_code(&route) {
        return decide(&visit, None, &deny, &settings);
    }
    match read_record(&kv, &route).await {
        Ok(Some(record)) => decide(&visit, Some(&record), &deny, &settings),
        Ok(None) => match fallback::worth_asking(env, &kv, &route, &settings.codes).await {
            Ask::No => decide(&visit, None, &deny, &settings),
            ask => match fallback::resolve(env, &route, ask).await {
                Resolved::Found(record) => decide(&visit, Some(&record), &deny, &settings),
                Resolved::Unknown => decide(&visit, None, &deny, &settings),
                Resolved::Unavailable => Decision::unavailable(method, RETRY_AFTER_S),
            },
        },
        Err(e) => {
            console_error!("reading {route}: {e}");
            Decision::unavailable(method, RETRY_AFTER_S)
        }
    }
}

async fn read_record(
    kv: &worker::kv::KvStore,
    route: &RouteKey,
) -> Result<Option<EdgeRecord>, String> {
    let text = kv
        .get(&route.kv_key())
        .cache_ttl(RECORD_CACHE_TTL_S)
        .text()
        .await
        .map_err(|e| e.to_string())?;
    text.map(|json| EdgeRecord::from_json(&json).map_err(|e| format!("corrupt record: {e}")))
        .transpose()
}

//! Asking the origin about codes KV does not hold yet (docs/architecture.md, "The activation window").
//!
//! KV lags behind the origin, so a link created a moment ago is missing here. Only codes
//! that may be new are asked about: a generated code whose number lies in its domain's
//! activation window (`meta:activation:{domain}`), or a custom alias, which cannot be
//! dated. Everything else
//! — random and enumerated codes — is answered 404 without calling anyone. The origin's
//! answers are kept for a few seconds, in this isolate and in the location's cache
//! (`answer_cache`); lookups of undatable codes are rate-limited per isolate; and an
//! origin that does not answer in time gives the visitor a 503 with `Retry-After`, never
//! a 404 for a link that may exist. The bookkeeping is `shared::fallback`'s; this module
//! is the I/O.

use crate::answer_cache;
use crate::health;
use crate::kv::Kv;
use shared::activation::{may_be_new, ActivationMeta, NewCode};
use shared::clicks::VisitorBudget;
use shared::fallback::{Answers, Held, UndatedBudget};
use shared::sync::activation_key;
use shared::tally::Fault;
use shared::{CodeKind, CodeSpace, EdgeRecord, RouteKey};
use std::cell::RefCell;
use std::collections::HashMap;
use std::time::Duration;
use worker::worker_sys::Context;
use worker::{console_error, Date, Env};

/// How long this isolate trusts its copy of a domain's activation meta.
const META_HOLD_MS: u64 = 2_000;
/// Domains whose meta is held at most: when full, all go (made-up `Host` names must
/// not grow the isolate's memory).
const MAX_METAS: usize = 1_000;
/// Cloudflare's smallest per-location KV cache.
const META_CACHE_TTL_S: u32 = 30;
/// How long an origin answer is kept, in this isolate and in the location's cache: a
/// found link (KV will hold it soon) and an unknown code alike. `ANSWER_HOLD_S` in the
/// worker's vars overrides it.
const ANSWER_HOLD_S: u64 = 10;
/// Answers kept at most ([`Answers`]: when full, the expired go, or else all).
const MAX_ANSWERS: usize = 10_000;
/// The longest a visitor waits for the origin.
const ORIGIN_TIMEOUT: Duration = Duration::from_secs(3);
/// Lookups of codes that cannot be dated this isolate may send per second (a scan of
/// alias-shaped codes must not become a flood at the origin).
const UNDATED_LOOKUPS_PER_S: u32 = 50;
/// Such lookups one client address may cause per minute: a scan from one address is
/// refused (429) before it spends the isolate's budget, which fresh aliases visited by
/// everyone else need. Answers held by the isolate or the location cost nothing.
const UNDATED_LOOKUPS_PER_CLIENT_MINUTE: u16 = 20;
/// Client addresses whose lookups the isolate counts apart (8 bytes each).
const CLIENT_SLOTS: usize = 4096;

/// What the origin said about a code.
pub(crate) enum Resolved {
    /// Boxed: a record with rules is a few hundred bytes, the other answers none.
    Found(Box<EdgeRecord>),
    Unknown,
    /// The origin could not be asked or did not answer in time.
    Unavailable,
    /// This client asked about too many codes that cannot be dated.
    Limited,
}

/// What this isolate remembers between visits.
struct State {
    /// Per domain, its activation meta (`None`: KV holds none).
    metas: HashMap<String, Held<Option<ActivationMeta>>>,
    /// The origin's answers: a record, or `None` for an unknown code.
    answers: Answers<Option<EdgeRecord>>,
    undated: UndatedBudget,
    /// Per client address, its lookups of codes that cannot be dated this minute (made
    /// on the first).
    clients: Option<VisitorBudget>,
}

thread_local! {
    // Workers isolates run one thread; this is per-isolate memory.
    static STATE: RefCell<State> = RefCell::new(State {
        metas: HashMap::new(),
        answers: Answers::new(MAX_ANSWERS),
        undated: UndatedBudget::new(UNDATED_LOOKUPS_PER_S),
        clients: None,
    });
}

async fn meta(kv: &Kv, domain: &str) -> Option<ActivationMeta> {
    let now = Date::now().as_millis();
    let held = STATE.with_borrow(|s| s.metas.get(domain).and_then(|m| m.fresh(now, META_HOLD_MS)));
    if let Some(meta) = held {
        return meta;
    }
    let key = activation_key(domain);
    let meta = match kv.text(&key, META_CACHE_TTL_S).await {
        Ok(Some(json)) => ActivationMeta::from_json(&json)
            .map_err(|e| console_error!("corrupt {key}: {e}"))
            .ok(),
        Ok(None) => None,
        Err(e) => {
            console_error!("reading {key}: {e}");
            None
        }
    };
    STATE.with_borrow_mut(|s| {
        if s.metas.len() >= MAX_METAS && !s.metas.contains_key(domain) {
            s.metas.clear();
        }
        s.metas.insert(domain.to_owned(), Held::new(meta, now));
    });
    meta
}

/// Whether `route` may name a link KV does not hold yet ([`may_be_new`]). KV's meta
/// and the keys are read only for a generated code: nothing else can be dated.
pub(crate) async fn worth_asking(
    env: &Env,
    kv: &Kv,
    route: &RouteKey,
    space: &CodeSpace,
) -> NewCode {
    // Without a token there is no origin to ask: the edge serves from KV alone.
    let has_origin = env
        .secret("ORIGIN_TOKEN")
        .is_ok_and(|t| !t.to_string().is_empty());
    if !has_origin {
        return NewCode::No;
    }
    let code = route.code();
    let (keys, meta) = match shared::codes::classify(code, space) {
        Some(CodeKind::Generated) => (crate::keys::keys(env), meta(kv, route.domain()).await),
        _ => (None, None),
    };
    let now_s = (Date::now().as_millis() / 1000) as i64;
    may_be_new(code, space, keys.as_ref(), meta.as_ref(), now_s)
}

fn answer_hold_s(env: &Env) -> u64 {
    env.var("ANSWER_HOLD_S")
        .ok()
        .and_then(|v| v.to_string().parse().ok())
        .unwrap_or(ANSWER_HOLD_S)
}

/// The origin's answer about `route`: from this isolate's memory, else from the
/// location's cache, else from the origin.
pub(crate) async fn resolve(
    env: &Env,
    ctx: &Context,
    route: &RouteKey,
    ask: NewCode,
    client: Option<&str>,
) -> Resolved {
    let key = route.to_string();
    let now = Date::now().as_millis();
    let held = STATE.with_borrow(|s| s.answers.get(&key, now));
    if let Some(record) = held {
        return record.map_or(Resolved::Unknown, |r| Resolved::Found(Box::new(r)));
    }
    let hold_s = answer_hold_s(env);
    let record = match answer_cache::get(route).await {
        Some(record) => record,
        None => {
            if ask == NewCode::Undatable && client.is_some_and(|ip| !admit_client(ip, now)) {
                health::fault(Fault::ClientLimited);
                return Resolved::Limited;
            }
            if ask == NewCode::Undatable && !STATE.with_borrow_mut(|s| s.undated.admit(now)) {
                // Over the budget the origin is not asked, and a code that may name a
                // link is not called unknown: the visitor is told to come back.
                health::fault(Fault::OriginBudgetSpent);
                return Resolved::Unavailable;
            }
            health::fault(Fault::OriginAsked);
            let record = match ask_origin(env, route).await {
                Resolved::Found(record) => Some(*record),
                Resolved::Unknown => None,
                // The origin's answer is never a client's limit.
                Resolved::Unavailable | Resolved::Limited => {
                    health::fault(Fault::OriginFailed);
                    return Resolved::Unavailable;
                }
            };
            answer_cache::put(ctx, route, record.as_ref(), hold_s);
            record
        }
    };
    STATE.with_borrow_mut(|s| {
        s.answers.put(
            key,
            record.clone(),
            now,
            now.saturating_add(hold_s.saturating_mul(1000)),
        )
    });
    record.map_or(Resolved::Unknown, |r| Resolved::Found(Box::new(r)))
}

/// Whether client `ip` may cause one more lookup of a code that cannot be dated.
fn admit_client(ip: &str, now_ms: u64) -> bool {
    STATE.with_borrow_mut(|s| {
        s.clients
            .get_or_insert_with(|| VisitorBudget::new(CLIENT_SLOTS, crate::random::seed()))
            .admit(ip, now_ms / 1000, UNDATED_LOOKUPS_PER_CLIENT_MINUTE)
    })
}

async fn ask_origin(env: &Env, route: &RouteKey) -> Resolved {
    let path = format!("/v1/edge/resolve/{}/{}", route.domain(), route.code());
    match crate::origin::get(env, &path, None, ORIGIN_TIMEOUT).await {
        Ok(answer) if answer.status == 200 => EdgeRecord::from_json(&answer.body)
            .map_or(Resolved::Unavailable, |r| Resolved::Found(Box::new(r))),
        Ok(answer) if answer.status == 404 => Resolved::Unknown,
        Ok(answer) => {
            console_error!("the origin answered {} about {route}", answer.status);
            Resolved::Unavailable
        }
        Err(e) => {
            console_error!("asking the origin about {route}: {e}");
            Resolved::Unavailable
        }
    }
}

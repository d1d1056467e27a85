//! The redirect path: request line → early checks → denylist and the domain's settings
//! → record → decision.
//!
//! Written as a promise chain rather than an `async fn`. Under wasm-bindgen's executor
//! every `.await` on a JavaScript promise costs two closures and a `queueMicrotask`, and
//! starting the task costs another microtask: together the largest part of what the Rust
//! worker spent beyond a minimal JavaScript one (docs/benchmarks/history/edge.md). A redirect served
//! from KV makes one read, so here it is one `then` with one closure. The rare paths that
//! need more reads (refreshing the denylist, asking the origin) are plain `async` code.

use crate::clicks::{self, Click};
use crate::client::{draw, ClientHeaders};
use crate::denylist::{self, Hold};
use crate::fallback::{self, Resolved};
use crate::kv::Kv;
use crate::{config, health, respond};
use shared::activation::NewCode;
use shared::clicks::counts_as_click;
use shared::decision::RETRY_AFTER_S;
/// When a client over its budget of lookups may ask again: its budget is per minute.
const CLIENT_RETRY_AFTER_S: u32 = 60;
use shared::sync::legacy_key;
use shared::tally::Fault;
use shared::{
    decide, decide_root, reject_early, Decision, Denylist, DomainSettings, DomainStatus,
    EdgeRecord, Method, RouteKey, Visit, VisitUrl,
};
use std::rc::Rc;
use wasm_bindgen::prelude::*;
use worker::js_sys::Promise;
use worker::wasm_bindgen_futures::{future_to_promise, JsFuture};
use worker::worker_sys::Context;
use worker::{console_error, web_sys, Date, Env};

/// How long a location may serve a cached record. Edits are allowed to take minutes
/// (bans do not rely on this: they travel in the denylist).
const RECORD_CACHE_TTL_S: u32 = 60;

/// A visit being answered, owned so that it can wait for KV.
struct Pending {
    method: Method,
    route: RouteKey,
    query: Option<String>,
    now_ms: u64,
    kv: Kv,
    request: web_sys::Request,
    env: Env,
    ctx: Context,
    /// The domain's settings (`cfg:{domain}`), or the defaults when KV has none.
    settings: Rc<DomainSettings>,
}

impl Pending {
    fn settings(&self) -> &DomainSettings {
        &self.settings
    }

    /// The answer to a visit of `record`, which may be a private link: its token or
    /// cookie is checked first, and a password posted to its form.
    async fn decide_private(&self, record: &EdgeRecord, deny: &Denylist) -> Decision {
        let Some(access) = &record.access else {
            return self.decide_and_count(Some(record), deny, false);
        };
        let now_s = i64::try_from(self.now_ms / 1000).unwrap_or(i64::MAX);
        let cookie = match access.is_password() {
            true => self.request.headers().get("cookie").ok().flatten(),
            false => None,
        };
        let query = self.query.as_deref();
        let granted =
            crate::access::granted(access, &self.route, query, cookie.as_deref(), now_s).await;
        let decision = self.decide_and_count(Some(record), deny, granted);
        if !decision.asks_password(self.method, Some(access)) {
            return decision;
        }
        crate::access::attempt(access, &self.route, query, &self.request, self.now_ms)
            .await
            .in_look_of(self.settings())
    }

    /// The decision, with the click reported when the visit is one; `granted`: a
    /// private link's token was checked and opens it.
    fn decide_and_count(
        &self,
        record: Option<&EdgeRecord>,
        deny: &Denylist,
        granted: bool,
    ) -> Decision {
        self.decide_known(record, deny, granted, false)
    }

    /// The answer to a code with no link: sent on to the shortener the domain moved
    /// from only while its fallback runs and KV lists the code as one that lived there
    /// (`lg:{domain}/{code}`); read only then. A read that fails is no list: the
    /// domain's not-found answer, never a redirect nobody vouched for.
    async fn no_link(&self, deny: &Denylist) -> Decision {
        let now_s = i64::try_from(self.now_ms / 1000).unwrap_or(i64::MAX);
        let known = match self.settings().legacy_base(now_s) {
            None => false,
            Some(_) => {
                let key = legacy_key(&self.route);
                match self.kv.text(&key, RECORD_CACHE_TTL_S).await {
                    Ok(found) => found.is_some(),
                    Err(e) => {
                        console_error!("reading {key}: {e}");
                        health::fault(Fault::KvRead);
                        false
                    }
                }
            }
        };
        self.decide_known(None, deny, false, known)
    }

    /// [`Pending::decide_and_count`], for a code known (or not) to have lived at the
    /// domain's old shortener.
    fn decide_known(
        &self,
        record: Option<&EdgeRecord>,
        deny: &Denylist,
        granted: bool,
        legacy_known: bool,
    ) -> Decision {
        // Headers and a draw only for the records that read them.
        let reads = record
            .filter(|r| r.reads_client())
            .map(|r| r.client_reads());
        let headers = reads
            .map(|reads| ClientHeaders::read(&self.request, reads))
            .unwrap_or_default();
        let visit = Visit {
            method: self.method,
            route: &self.route,
            query: self.query.as_deref(),
            now_ms: i64::try_from(self.now_ms).unwrap_or(i64::MAX),
            client: headers.client(),
            draw: record.filter(|r| r.draws()).map_or(0, |_| draw()),
            access_granted: granted,
            legacy_known,
        };
        let decision = decide(&visit, record, deny, self.settings());
        if counts_as_click(self.method, decision.outcome) && !decision.unrecorded {
            let click = Click {
                route: &self.route,
                version: record.map(|r| r.version),
                status: decision.status,
                at_ms: self.now_ms,
                variant: decision.variant,
                country: reads.and_then(|reads| headers.country_read(reads)),
                scanners_unchecked: decision.scanners_unchecked,
                limited: decision.limited,
            };
            clicks::report(&self.env, &self.request, click);
        }
        decision
    }
}

/// The response to `GET|HEAD url` (or a `POST` to a password link's form), as a
/// promise for the runtime.
pub(crate) fn handle(
    method: Method,
    url: VisitUrl<'_>,
    request: web_sys::Request,
    env: Env,
    ctx: Context,
) -> Promise {
    let code = url.path.strip_prefix('/').unwrap_or_default();
    let root = code.is_empty();
    if root && matches!(method, Method::Post | Method::Other) {
        return respond::settled(&decide_root(method, None));
    }
    if let Some(early) = reject_early(method, code).filter(|_| !root) {
        return respond::settled(&early);
    }
    // The runtime's URL parser already lowercased the host and converted it to punycode.
    let host = url.host.trim_end_matches('.');
    let kv = match Kv::bind(&env, crate::kv::LINKS) {
        Ok(kv) => kv,
        Err(e) => {
            console_error!("{e}");
            health::fault(Fault::KvRead);
            return respond::settled(&Decision::unavailable(method, RETRY_AFTER_S));
        }
    };
    let now_ms = Date::now().as_millis();
    let visit = Visitor {
        method,
        now_ms,
        kv,
        request,
        env,
        ctx,
    };
    let query = url.query;
    let deny = match denylist::held(now_ms) {
        Hold::Fresh(deny) => Some(deny),
        Hold::Aging(deny) => {
            denylist::refresh_behind(&visit.env, &visit.ctx, host, now_ms);
            Some(deny)
        }
        Hold::Stale => None,
    };
    match (deny, config::held(host, now_ms)) {
        (Some(deny), Some(settings)) => {
            visit.with(host, code, query, deny, config::or_defaults(settings))
        }
        (deny, settings) => {
            // What waits on KV owns its strings.
            let (host, code) = (host.to_owned(), code.to_owned());
            let query = query.map(str::to_owned);
            future_to_promise(async move {
                let deny = match deny {
                    Some(deny) => deny,
                    None => {
                        denylist::refresh(&visit.kv, &visit.env, &visit.ctx, &host, now_ms).await
                    }
                };
                let settings = match settings {
                    Some(settings) => settings,
                    None => config::refresh(&visit.kv, &host, now_ms).await,
                };
                let settings = config::or_defaults(settings);
                JsFuture::from(visit.with(&host, &code, query.as_deref(), deny, settings)).await
            })
        }
    }
}

/// A visit before its domain's settings are known: all of it but the request line.
struct Visitor {
    method: Method,
    now_ms: u64,
    kv: Kv,
    request: web_sys::Request,
    env: Env,
    ctx: Context,
}

impl Visitor {
    /// With the denylist and the domain's settings in hand: `/` is the domain's root
    /// page; any other code is looked up in the form the domain stores it.
    fn with(
        self,
        host: &str,
        code: &str,
        query: Option<&str>,
        deny: Rc<Denylist>,
        settings: Rc<DomainSettings>,
    ) -> Promise {
        if code.is_empty() {
            return respond::settled(&decide_root(self.method, Some((&settings, &deny))));
        }
        let code = settings.canonical_code(code);
        let Some(route) = RouteKey::new(host, code.as_ref()) else {
            return respond::settled(&Decision::not_found(self.method).in_look_of(&settings));
        };
        let visit = Pending {
            method: self.method,
            route,
            query: query.map(str::to_owned),
            now_ms: self.now_ms,
            kv: self.kv,
            request: self.request,
            env: self.env,
            ctx: self.ctx,
            settings,
        };
        lookup(visit, deny)
    }
}

/// With the denylist in hand: the record, then the decision.
fn lookup(visit: Pending, deny: Rc<Denylist>) -> Promise {
    if deny.blocks_code(&visit.route) {
        return respond::settled(&visit.decide_and_count(None, &deny, false));
    }
    let method = visit.method;
    let read = match visit.kv.read(&visit.route.kv_key(), RECORD_CACHE_TTL_S) {
        Ok(read) => read,
        Err(e) => {
            console_error!("{e}");
            return without_kv(visit, deny);
        }
    };
    // One closure for both outcomes, so that it is always called, and so freed: a
    // `once_into_js` closure that is never called is never freed, and a handler only for
    // success leaked a visit's worth of memory on every failed read.
    let on_settled = Closure::once_into_js(move |value: JsValue| -> Result<JsValue, JsValue> {
        // A text read settles with a string or null; anything else is the error of a
        // read that failed.
        let json = match value.as_string() {
            Some(json) => json,
            None if value.is_null() || value.is_undefined() => {
                // Not in KV: it may be a link too new to be there.
                return Ok(future_to_promise(async move {
                    respond::to_response(&unknown(visit, deny).await).map(JsValue::from)
                })
                .into());
            }
            None => {
                console_error!("KV read failed: {value:?}");
                return Ok(without_kv(visit, deny).into());
            }
        };
        let decision = match EdgeRecord::from_json(&json) {
            // A private link waits for WebCrypto to check its token or password.
            Ok(record) if record.access.is_some() => {
                return Ok(future_to_promise(async move {
                    let decision = visit.decide_private(&record, &deny).await;
                    respond::to_response(&decision).map(JsValue::from)
                })
                .into());
            }
            Ok(record) => visit.decide_and_count(Some(&record), &deny, false),
            Err(e) => {
                console_error!("corrupt record {}: {e}", visit.route);
                health::fault(Fault::CorruptRecord);
                Decision::unavailable(method, RETRY_AFTER_S)
            }
        };
        respond::to_response(&decision).map(JsValue::from)
    });
    read.then_or(&on_settled, &on_settled)
}

/// The decision for a code KV does not hold: 404, unless the origin knows it.
async fn unknown(visit: Pending, deny: Rc<Denylist>) -> Decision {
    // A disabled domain serves nothing: no new code of it is worth asking about.
    if visit.settings().status == DomainStatus::Disabled {
        return visit.decide_and_count(None, &deny, false);
    }
    let codes = visit.settings().codes;
    let ask = fallback::worth_asking(&visit.env, &visit.kv, &visit.route, &codes).await;
    if ask == NewCode::No {
        return visit.no_link(&deny).await;
    }
    from_origin(visit, deny, ask).await
}

/// KV could not be read: a KV incident must not be an outage. The code is answered as
/// one that cannot be dated: from the origin's answers this isolate or its location
/// holds (10 s, `ANSWER_HOLD_S`), else from the origin within the isolate's budget for
/// such lookups (50 a second), else 503. Banned, expired and deleted stay refused: the
/// origin's answer is decided like any record, against the denylist.
fn without_kv(visit: Pending, deny: Rc<Denylist>) -> Promise {
    health::fault(Fault::KvRead);
    future_to_promise(async move {
        let decision = match visit.settings().status {
            DomainStatus::Disabled => visit.decide_and_count(None, &deny, false),
            _ => from_origin(visit, deny, NewCode::Undatable).await,
        };
        respond::to_response(&decision).map(JsValue::from)
    })
}

/// The decision by what the origin says of the code (held, or asked as `ask` allows).
async fn from_origin(visit: Pending, deny: Rc<Denylist>, ask: NewCode) -> Decision {
    // Cloudflare sets it; a request without it (only local development) is not limited.
    let client = visit
        .request
        .headers()
        .get("cf-connecting-ip")
        .ok()
        .flatten();
    match fallback::resolve(&visit.env, &visit.ctx, &visit.route, ask, client.as_deref()).await {
        Resolved::Found(record) => visit.decide_private(&record, &deny).await,
        Resolved::Unknown => visit.no_link(&deny).await,
        Resolved::Unavailable => Decision::unavailable(visit.method, RETRY_AFTER_S),
        Resolved::Limited => Decision::too_many_lookups(visit.method, CLIENT_RETRY_AFTER_S),
    }
}

//! The denylist as this isolate holds it, from the fastest source that answers.
//!
//! A ban must reach every location within seconds, and KV cannot carry it so fast: a
//! write takes up to 60 s to show everywhere, and a read is cached at a location for at
//! least 30 s. So the origin serves the current denylist itself (`GET
//! /v1/edge/denylist`, with its version as `ETag`), and KV's `deny` is the fallback copy:
//!
//! - an isolate uses its copy as is for [`FRESH_MS`] after its source confirmed it; up
//!   to [`MAX_AGE_MS`] it still uses it, and fetches a newer one after the response;
//!   past that a visit waits for a newer one (the bound a ban rests on);
//! - fetching asks the location's cache (Cache API, shared by its isolates) first, then
//!   the origin, with `If-None-Match` (a 304 costs no body), and keeps the origin's
//!   answer in the location's cache: a location asks the origin about once a second;
//! - when the origin does not answer within [`ORIGIN_WAIT`] it is left alone for
//!   [`ORIGIN_BACKOFF_MS`] and KV's copy is read; when nothing can be read, the last
//!   copy is kept, and with none, an empty list: records marked `banned` still block
//!   (the edge fails closed for bans it has seen in any form). The health report says
//!   how old the copy is.
//!
//! A copy never replaces one of a higher version.

use crate::kv::Kv;
use crate::{answer_cache, health};
use shared::sync::DENY_KEY;
use shared::tally::Fault;
use shared::Denylist;
use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;
use wasm_bindgen::{JsCast, JsValue};
use worker::wasm_bindgen_futures::{future_to_promise, JsFuture};
use worker::web_sys::Response;
use worker::worker_sys::Context;
use worker::{console_error, Env};

/// How long after its source confirmed it a copy is used without asking again.
const FRESH_MS: u64 = 1_000;
/// How long a copy may be used at all, while a newer one is fetched after the response;
/// past it, a visit waits for one.
const MAX_AGE_MS: u64 = 2_000;
/// The longest a visit waits for the origin's denylist before reading KV's copy.
const ORIGIN_WAIT: Duration = Duration::from_millis(800);
/// After the origin failed to answer, how long it is left alone (KV is read instead).
const ORIGIN_BACKOFF_MS: u64 = 5_000;
/// Cloudflare's smallest per-location KV cache.
const KV_CACHE_TTL_S: u32 = 30;
/// Where a location keeps the origin's answer, under each served domain (the Cache API
/// keeps entries per zone). No code holds a `/`, so no visit's URL is this.
const CACHE_PATH: &str = "/_hop/denylist";
/// The header of a cached copy that says when the origin confirmed it, Unix ms.
const CHECKED_HEADER: &str = "x-hop-checked-ms";

/// A copy of the denylist and what is known of its freshness.
struct Copy {
    list: Rc<Denylist>,
    /// Its text, to keep in the location's cache again after a 304.
    json: Rc<str>,
    /// When its source last confirmed it (the origin, the location's cache or KV).
    checked_ms: u64,
    /// When the origin last confirmed it, directly or through the location's cache.
    origin_ms: Option<u64>,
}

#[derive(Default)]
struct State {
    copy: Option<Copy>,
    /// A fetch after the response is under way (one at a time per isolate).
    refreshing: bool,
    /// The origin is not asked before this (it failed to answer).
    origin_quiet_until: u64,
}

thread_local! {
    // Workers isolates run one thread; this is per-isolate memory.
    static STATE: RefCell<State> = RefCell::new(State::default());
}

/// What this isolate holds at `now_ms`.
pub(crate) enum Hold {
    /// Use it.
    Fresh(Rc<Denylist>),
    /// Use it, and fetch a newer one after the response ([`refresh_behind`]).
    Aging(Rc<Denylist>),
    /// Too old or none: wait for [`refresh`].
    Stale,
}

pub(crate) fn held(now_ms: u64) -> Hold {
    STATE.with_borrow(|s| match &s.copy {
        Some(c) if now_ms.saturating_sub(c.checked_ms) < FRESH_MS => {
            Hold::Fresh(Rc::clone(&c.list))
        }
        Some(c) if now_ms.saturating_sub(c.checked_ms) < MAX_AGE_MS => {
            Hold::Aging(Rc::clone(&c.list))
        }
        _ => Hold::Stale,
    })
}

/// How long before `now_ms` the copy in use was confirmed by the origin (or, where the
/// origin never answered, read from KV); `None` if this isolate holds none.
pub(crate) fn age_ms(now_ms: u64) -> Option<u64> {
    STATE.with_borrow(|s| {
        s.copy
            .as_ref()
            .map(|c| now_ms.saturating_sub(c.origin_ms.unwrap_or(c.checked_ms)))
    })
}

/// Fetches a newer copy after the response, inside `waitUntil`, unless one is being
/// fetched already.
pub(crate) fn refresh_behind(env: &Env, ctx: &Context, host: &str, now_ms: u64) {
    if STATE.with_borrow_mut(|s| std::mem::replace(&mut s.refreshing, true)) {
        return;
    }
    let Ok(kv) = Kv::bind(env, crate::kv::LINKS) else {
        STATE.with_borrow_mut(|s| s.refreshing = false);
        return;
    };
    // The context outlives this request's handler: the runtime keeps it until every
    // promise handed to `waitUntil` settles.
    let ctx2: Context = AsRef::<JsValue>::as_ref(ctx).clone().unchecked_into();
    let (env, host) = (env.clone(), host.to_owned());
    let fetch = future_to_promise(async move {
        refresh(&kv, &env, &ctx2, &host, now_ms).await;
        STATE.with_borrow_mut(|s| s.refreshing = false);
        Ok(JsValue::UNDEFINED)
    });
    if let Err(e) = ctx.wait_until(&fetch) {
        console_error!("denylist: cannot fetch after the response: {e:?}");
    }
}

/// Fetches a newer copy (the location's cache, the origin, KV, in that order) and holds
/// it; what to use when none can be had: the last copy, or an empty list.
pub(crate) async fn refresh(
    kv: &Kv,
    env: &Env,
    ctx: &Context,
    host: &str,
    now_ms: u64,
) -> Rc<Denylist> {
    if let Some(list) = from_location(host, now_ms).await {
        return list;
    }
    let quiet = STATE.with_borrow(|s| now_ms < s.origin_quiet_until);
    if !quiet {
        match from_origin(env, ctx, host, now_ms).await {
            Ok(list) => return list,
            Err(e) => {
                console_error!("denylist: the origin did not serve it ({e}); reading KV's copy");
                health::fault(Fault::OriginFailed);
                STATE.with_borrow_mut(|s| {
                    s.origin_quiet_until = now_ms.saturating_add(ORIGIN_BACKOFF_MS)
                });
            }
        }
    }
    match kv.text(DENY_KEY, KV_CACHE_TTL_S).await {
        Ok(json) => {
            let json: Rc<str> = json.unwrap_or_else(|| r#"{"v":0}"#.into()).into();
            match Denylist::from_json(&json) {
                Ok(list) => return keep(list, json, now_ms, None),
                Err(e) => console_error!("denylist: KV's copy is corrupt: {e}"),
            }
        }
        Err(e) => console_error!("denylist: KV's copy is unreadable: {e}"),
    }
    health::fault(Fault::DenylistUnreadable);
    STATE
        .with_borrow(|s| s.copy.as_ref().map(|c| Rc::clone(&c.list)))
        .unwrap_or_default()
}

/// Holds `list` (its text `json`), confirmed at `checked_ms` (and by the origin at
/// `origin_ms`), unless the copy held is of a higher version; what to use now.
fn keep(list: Denylist, json: Rc<str>, checked_ms: u64, origin_ms: Option<u64>) -> Rc<Denylist> {
    STATE.with_borrow_mut(|s| {
        if let Some(held) = s
            .copy
            .as_mut()
            .filter(|c| c.list.version() > list.version())
        {
            // An older copy (KV lagging the origin): the newer one stays, as the best
            // to be had now (its age, from the origin's last word, says how good).
            held.checked_ms = held.checked_ms.max(checked_ms);
            return Rc::clone(&held.list);
        }
        let list = Rc::new(list);
        let origin_ms = origin_ms.or_else(|| {
            s.copy
                .as_ref()
                .filter(|c| c.list.version() == list.version())
                .and_then(|c| c.origin_ms)
        });
        s.copy = Some(Copy {
            list: Rc::clone(&list),
            json,
            checked_ms,
            origin_ms,
        });
        list
    })
}

/// The location's copy, if the origin confirmed it less than [`FRESH_MS`] ago.
async fn from_location(host: &str, now_ms: u64) -> Option<Rc<Denylist>> {
    let cache = answer_cache::cache(host)?;
    let held = JsFuture::from(cache.match_with_str(&cache_key(host)))
        .await
        .ok()?;
    let response = held.dyn_into::<Response>().ok()?;
    let checked_ms: u64 = response
        .headers()
        .get(CHECKED_HEADER)
        .ok()
        .flatten()?
        .parse()
        .ok()?;
    if now_ms.saturating_sub(checked_ms) >= FRESH_MS {
        return None;
    }
    let json: Rc<str> = JsFuture::from(response.text().ok()?)
        .await
        .ok()?
        .as_string()?
        .into();
    let list = Denylist::from_json(&json).ok()?;
    Some(keep(list, json, checked_ms, Some(checked_ms)))
}

/// The origin's copy, asked with the held copy's version; kept in the location's cache.
async fn from_origin(
    env: &Env,
    ctx: &Context,
    host: &str,
    now_ms: u64,
) -> Result<Rc<Denylist>, String> {
    let etag = STATE.with_borrow(|s| s.copy.as_ref().map(|c| format!("\"{}\"", c.list.version())));
    let answer = crate::origin::get(env, "/v1/edge/denylist", etag.as_deref(), ORIGIN_WAIT).await?;
    let (list, json) = match answer.status {
        200 => {
            let list = Denylist::from_json(&answer.body).map_err(|e| format!("corrupt: {e}"))?;
            (list, Rc::<str>::from(answer.body))
        }
        304 => {
            // The copy held is current: confirmed, not read again.
            let (list, json) = STATE
                .with_borrow_mut(|s| {
                    s.copy.as_mut().map(|c| {
                        c.checked_ms = now_ms;
                        c.origin_ms = Some(now_ms);
                        (Rc::clone(&c.list), Rc::clone(&c.json))
                    })
                })
                .ok_or("304 for a copy this isolate does not hold")?;
            to_location(ctx, host, &json, now_ms);
            return Ok(list);
        }
        status => return Err(format!("it answered {status}")),
    };
    to_location(ctx, host, &json, now_ms);
    Ok(keep(list, json, now_ms, Some(now_ms)))
}

fn cache_key(host: &str) -> String {
    format!("https://{host}{CACHE_PATH}")
}

/// Keeps the origin's copy, confirmed at `checked_ms`, in the location's cache for the
/// location's other isolates (after the response: nobody waits for the write).
fn to_location(ctx: &Context, host: &str, json: &str, checked_ms: u64) {
    let Some(cache) = answer_cache::cache(host) else {
        return;
    };
    let checked = checked_ms.to_string();
    let headers = [
        ("content-type", "application/json"),
        ("cache-control", "max-age=2"),
        (CHECKED_HEADER, checked.as_str()),
    ];
    let Ok(response) = crate::respond::build(200, headers, Some(json)) else {
        return;
    };
    answer_cache::put_after(
        ctx,
        &cache,
        &cache_key(host),
        &response,
        "the denylist".into(),
    );
}

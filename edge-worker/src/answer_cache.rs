//! The origin's answers, shared by one location's isolates through the Cache API.
//!
//! Isolate memory (`fallback`) keeps one isolate from asking the origin twice about a
//! code, but a busy location runs many isolates, and a link shared widely the moment it
//! is created would make each of them ask. The Cache API is shared by a location's
//! isolates, so the location asks about once per hold time. It works on custom domains
//! and locally under `wrangler dev`; on `workers.dev` it stores nothing, so it is not
//! used there at all. Failures here are logged and ignored: the cache only saves calls.
//!
//! A private link's record carries its secrets (a signed link's key, a password link's
//! hash, salt and cookie key), which its decision needs. The Cache API is the zone's
//! cache, stored on Cloudflare's disks and beyond the worker's control, so such a record
//! is never put there: it stays in the asking isolate's memory for its hold, and each
//! isolate asks the origin for it once ([`entry`]).

use crate::respond;
use shared::{EdgeRecord, RouteKey};
use wasm_bindgen::{JsCast, JsValue};
use worker::console_error;
use worker::js_sys::{self, Reflect};
use worker::wasm_bindgen_futures::{future_to_promise, JsFuture};
use worker::web_sys::{Cache, Response};
use worker::worker_sys::Context;

/// Entries live under this path of the link's own domain: no code contains a `/`, so
/// no visitor's URL is ever one of them.
const KEY_PATH: &str = "/_hop/answer/";

fn key(route: &RouteKey) -> String {
    format!("https://{}{KEY_PATH}{}", route.domain(), route.code())
}

fn usable(host: &str) -> bool {
    !host.ends_with(".workers.dev")
}

/// The runtime's default cache for entries under `host`; `None` where there is none,
/// or where it stores nothing (`workers.dev`). The denylist's location copy uses it too.
pub(crate) fn cache(host: &str) -> Option<Cache> {
    if !usable(host) {
        return None;
    }
    let caches = Reflect::get(&js_sys::global(), &JsValue::from_str("caches")).ok()?;
    let default = Reflect::get(&caches, &JsValue::from_str("default")).ok()?;
    default.dyn_into::<Cache>().ok()
}

/// What this location holds about `route`: `Some(Some(record))` for a link, `Some(None)`
/// for a code the origin did not know, `None` when it holds nothing.
pub(crate) async fn get(route: &RouteKey) -> Option<Option<EdgeRecord>> {
    let held = JsFuture::from(cache(route.domain())?.match_with_str(&key(route)))
        .await
        .map_err(|e| console_error!("cache match for {route}: {e:?}"))
        .ok()?;
    let response = held.dyn_into::<Response>().ok()?;
    if response.status() == 404 {
        return Some(None);
    }
    let text = JsFuture::from(response.text().ok()?)
        .await
        .ok()?
        .as_string()?;
    EdgeRecord::from_json(&text).ok().map(Some)
}

/// What the location's cache keeps of the origin's answer: its status and body; `None`
/// for a private link's record, whose secrets never leave isolate memory.
fn entry(answer: Option<&EdgeRecord>) -> Option<(u16, Option<String>)> {
    match answer {
        Some(record) if record.access.is_some() => None,
        Some(record) => Some((200, Some(record.to_json()))),
        None => Some((404, None)),
    }
}

/// Keeps the origin's answer about `route` for `hold_s` seconds, after the response
/// (the visitor does not wait for the write); a private link's, never.
pub(crate) fn put(ctx: &Context, route: &RouteKey, answer: Option<&EdgeRecord>, hold_s: u64) {
    let Some((status, body)) = entry(answer) else {
        return;
    };
    let Some(cache) = cache(route.domain()) else {
        return;
    };
    let max_age = format!("max-age={hold_s}");
    let response = match respond::build(
        status,
        [("cache-control", max_age.as_str())],
        body.as_deref(),
    ) {
        Ok(response) => response,
        Err(e) => {
            console_error!("caching the answer for {route}: {e:?}");
            return;
        }
    };
    put_after(ctx, &cache, &key(route), &response, route.to_string());
}

/// Puts `response` under `key` after the response to the visitor (inside `waitUntil`:
/// nobody waits for the write); a failure is logged with `what`.
pub(crate) fn put_after(
    ctx: &Context,
    cache: &Cache,
    key: &str,
    response: &Response,
    what: String,
) {
    let write = JsFuture::from(cache.put_with_str(key, response));
    let write = future_to_promise(async move {
        if let Err(e) = write.await {
            console_error!("caching {what}: {e:?}");
        }
        Ok(JsValue::UNDEFINED)
    });
    if let Err(e) = ctx.wait_until(&write) {
        console_error!("caching: {e:?}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_is_kept_under_its_own_domain_at_a_path_no_code_can_take() {
        let route = RouteKey::new("s.example", "abc1234").expect("route");
        assert_eq!(key(&route), "https://s.example/_hop/answer/abc1234");
        // A code never holds a `/`, so no visit's URL is a cache entry.
        assert!(RouteKey::new("s.example", "_hop/answer/x").is_none());
    }

    /// No record that carries a link's secrets goes into the location's cache: not a
    /// signed link's key, not a password link's hash, salt or cookie key.
    #[test]
    fn a_private_link_s_record_is_never_shared_with_the_location() {
        let public = EdgeRecord::from_json(
            r#"{"t":"https://e.example/","s":"active","r":302,"x":null,"v":1,"q":false}"#,
        )
        .expect("record");
        assert_eq!(entry(Some(&public)).map(|(s, _)| s), Some(200));
        assert_eq!(entry(None), Some((404, None)));
        for access in [
            r#"{"signed":{"key":"00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"}}"#,
            r#"{"password":{"salt":"0011","hash":"2233","iterations":100000,"key":"4455"}}"#,
        ] {
            let json = format!(
                r#"{{"t":"https://e.example/","s":"active","r":302,"x":null,"v":1,"q":false,"ac":{access}}}"#
            );
            let private = EdgeRecord::from_json(&json).expect("a private record");
            assert!(private.access.is_some(), "{json}");
            assert_eq!(entry(Some(&private)), None, "{json}");
        }
    }

    #[test]
    fn workers_dev_hosts_skip_the_cache_that_stores_nothing_there() {
        let dev = RouteKey::new("hop.someone.workers.dev", "abc1234").expect("route");
        let own = RouteKey::new("s.example", "abc1234").expect("route");
        assert!(!usable(dev.domain()));
        assert!(usable(own.domain()));
    }
}

//! Workers KV reads on the redirect path, bound directly.
//!
//! `worker::kv::KvStore` looks up five methods of the namespace on every `env.kv()` and
//! builds a fresh options object for every read: seven calls into JavaScript before the
//! read starts. A redirect needs only `get(key, {type: "text", cacheTtl})`, so this binds
//! that one method and keeps each options object for the isolate's life (a plain object,
//! safe to reuse across requests). A read is handed back as its promise, so that the
//! redirect path can chain on it without an executor (see `redirect`). The sync endpoint,
//! off the hot path, keeps using `worker`'s full binding for its writes.

use crate::names;
use std::cell::RefCell;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use worker::js_sys::{Object, Promise, Reflect};
use worker::wasm_bindgen_futures::JsFuture;
use worker::Env;

/// KV binding holding records and the denylist.
pub(crate) const LINKS: &str = "LINKS";

#[wasm_bindgen]
extern "C" {
    /// A KV namespace binding, as the runtime passes it in `env`.
    type KvNamespace;

    /// The promise of a read, bound for the two-argument `then` (`js_sys` binds it with
    /// typed closures only).
    #[wasm_bindgen(extends = Promise)]
    type ReadPromise;

    #[wasm_bindgen(method, catch, js_name = get)]
    fn get_with(this: &KvNamespace, key: &str, options: &Object) -> Result<ReadPromise, JsValue>;

    #[wasm_bindgen(method, js_name = then)]
    fn then2(this: &ReadPromise, on_value: &JsValue, on_error: &JsValue) -> Promise;
}

thread_local! {
    // Workers isolates run one thread; this is per-isolate memory. One object per cache
    // time in use (three at most).
    static OPTIONS: RefCell<Vec<(u32, Object)>> = const { RefCell::new(Vec::new()) };
}

/// `{type: "text", cacheTtl}`, made once per isolate.
fn text_options(cache_ttl_s: u32) -> Result<Object, String> {
    if let Some(held) = OPTIONS.with_borrow(|o| {
        o.iter()
            .find(|(ttl, _)| *ttl == cache_ttl_s)
            .map(|(_, obj)| obj.clone())
    }) {
        return Ok(held);
    }
    let options = Object::new();
    let set = |k: &str, v: JsValue| {
        Reflect::set(&options, &JsValue::from_str(k), &v).map_err(|e| format!("{e:?}"))
    };
    set("type", JsValue::from_str("text"))?;
    set("cacheTtl", JsValue::from(cache_ttl_s))?;
    OPTIONS.with_borrow_mut(|o| o.push((cache_ttl_s, options.clone())));
    Ok(options)
}

/// A KV namespace for reading text values.
pub(crate) struct Kv(KvNamespace);

impl Kv {
    /// The namespace bound as `binding`, or why it is missing.
    pub(crate) fn bind(env: &Env, binding: &'static str) -> Result<Kv, String> {
        let value = Reflect::get(env, &names::js(binding))
            .map_err(|e| format!("reading binding {binding}: {e:?}"))?;
        if value.is_undefined() {
            return Err(format!("no KV binding {binding}"));
        }
        Ok(Kv(value.unchecked_into()))
    }

    /// Starts reading the value under `key` as text, cached at the location for
    /// `cache_ttl_s` (at least 30: Cloudflare's minimum).
    pub(crate) fn read(&self, key: &str, cache_ttl_s: u32) -> Result<Read, String> {
        let options = text_options(cache_ttl_s)?;
        self.0
            .get_with(key, &options)
            .map(Read)
            .map_err(|e| format!("KV get {key}: {e:?}"))
    }

    /// The value under `key` as text, for code that can afford an `.await`.
    pub(crate) async fn text(&self, key: &str, cache_ttl_s: u32) -> Result<Option<String>, String> {
        self.read(key, cache_ttl_s)?.value().await
    }
}

/// A KV read in flight: it settles with the value as a string, or `null`.
pub(crate) struct Read(ReadPromise);

impl Read {
    /// The promise of what `on_value(value)` returns, or of what `on_error(error)`
    /// returns if the read fails.
    pub(crate) fn then_or(self, on_value: &JsValue, on_error: &JsValue) -> Promise {
        self.0.then2(on_value, on_error)
    }

    async fn value(self) -> Result<Option<String>, String> {
        let value = JsFuture::from(Promise::from(self.0))
            .await
            .map_err(|e| format!("KV get: {e:?}"))?;
        Ok(value.as_string())
    }
}

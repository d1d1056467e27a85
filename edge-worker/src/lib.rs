//! Hop's edge worker: answers `GET|HEAD /<code>` from Workers KV and the denylist.
//!
//! The fetch handler is a thin adapter. Every decision is made by `shared`, the same
//! code the origin runs; this crate only reads KV and writes the response. Nothing here
//! may panic: a panic in WebAssembly poisons the isolate for every later request.
//!
//! The handler is exported by hand rather than through `#[event(fetch)]`, for speed
//! measured in docs/benchmarks/history/edge.md: it takes the runtime's own request (converting it to
//! `worker::Request` reads `request.cf`, which the runtime builds afresh on each access,
//! and was the largest single cost of a redirect), and it returns a promise that the
//! redirect path builds as a chain rather than through an async executor (`redirect`).
//! worker-build wires an exported `fetch` exactly as it wires the macro's.

mod access;
mod answer_cache;
mod clicks;
mod client;
mod config;
mod denylist;
mod fallback;
mod health;
mod keys;
mod kv;
mod names;
mod origin;
mod random;
mod redirect;
mod respond;
mod sync;

use shared::{Decision, Method, VisitUrl};
use wasm_bindgen::prelude::*;
use worker::js_sys::Promise;
use worker::wasm_bindgen_futures::future_to_promise;
use worker::{web_sys, Env};

#[wasm_bindgen]
pub fn fetch(req: web_sys::Request, env: Env, ctx: worker::worker_sys::Context) -> Promise {
    let method = Method::parse(&req.method());
    let href = req.url();
    let Some(url) = VisitUrl::from_serialized(&href) else {
        return respond::settled(&Decision::not_found(method));
    };
    if url.path == shared::sync::SYNC_PATH {
        return future_to_promise(async move {
            let response = sync::handle(req.into(), &env).await?;
            Ok(web_sys::Response::from(response).into())
        });
    }
    // A browser's ask for the site's icon: no visit, no answer counted, no lookup.
    if shared::is_favicon(method, url.path) {
        let cache = [("cache-control", shared::FAVICON_CACHE_CONTROL)];
        return match respond::build(204, cache, None) {
            Ok(response) => Promise::resolve(&JsValue::from(response)),
            Err(e) => Promise::reject(&e),
        };
    }
    // The first visit of a window schedules its report (clicks and health).
    clicks::schedule(&env, &ctx, &req);
    redirect::handle(method, url, req, env, ctx)
}

/// The queue consumer: click events, posted in batches to the origin.
#[wasm_bindgen]
pub fn queue(batch: clicks::MessageBatch, env: Env, _ctx: worker::worker_sys::Context) -> Promise {
    future_to_promise(async move {
        clicks::consume(batch, env).await?;
        Ok(JsValue::UNDEFINED)
    })
}

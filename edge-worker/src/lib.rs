//! Hop's edge worker: answers `GET|HEAD /<code>` from Workers KV and the denylist.
//!
//! The fetch handler is a thin adapter. Every decision is made by `shared`, the same
//! code the origin runs; this crate only reads KV and writes the response. Nothing here
//! may panic: a panic in WebAssembly poisons the isolate for every later request.

mod denylist;
mod fallback;
mod redirect;
mod respond;
mod sync;

use worker::{event, Context, Env, Request, Response, Result};

#[event(fetch)]
async fn fetch(req: Request, env: Env, _ctx: Context) -> Result<Response> {
    if req.path() == shared::sync::SYNC_PATH {
        return sync::handle(req, &env).await;
    }
    let decision = redirect::handle(&req, &env).await;
    respond::to_response(decision)
}

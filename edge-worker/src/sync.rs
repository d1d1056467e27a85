//! `POST /_hop/sync`: the origin's publisher writes KV through the worker. This is how
//! the origin feeds `wrangler dev`'s local KV, and it serves small deployments (large
//! ones use Cloudflare's KV bulk API). The push is authenticated by `SYNC_TOKEN`, and an
//! item is written only when it is newer than what KV holds (`shared::sync::judge`).
//!
//! KV has no compare-and-swap: two pushes of one key at the same moment could both pass
//! the check. The publisher (one leader, newest version per key, in order) is what keeps
//! versions moving forward; this check catches late and replayed pushes.

use futures_util::future::join_all;
use shared::sync::{
    judge, token_accepted, tokens_long_enough, Refusal, SyncBatch, SyncItem, SyncReply,
    MAX_SYNC_ITEMS,
};
use worker::kv::KvStore;
use worker::{console_error, Env, Method, Request, Response, Result};

use crate::kv::LINKS;

fn problem(status: u16, detail: &str) -> Result<Response> {
    let body = format!(
        r#"{{"type":"/problems/sync","title":"sync refused","status":{status},"detail":{}}}"#,
        serde_json::Value::from(detail)
    );
    let response = Response::ok(body)?.with_status(status);
    response
        .headers()
        .set("content-type", "application/problem+json")?;
    Ok(response)
}

/// Writes one item if it is newer than what KV holds: the key written, or why not. A
/// KV failure refuses this item alone (marked worth retrying); the rest of the push
/// goes on, so one value KV will not take cannot hold up every other.
async fn write(kv: &KvStore, item: SyncItem) -> std::result::Result<String, Refusal> {
    // Uncached: the check must see the latest value this location knows.
    let held = match kv.get(&item.key).text().await {
        Ok(held) => held,
        Err(e) => return Err(kv_failed(&item, e)),
    };
    judge(&item, held.as_deref())?;
    let put = match kv.put(&item.key, &item.value) {
        Ok(put) => put,
        Err(e) => return Err(kv_failed(&item, e)),
    };
    let put = match item.expiration.and_then(|at| u64::try_from(at).ok()) {
        Some(at) => put.expiration(at),
        None => put,
    };
    match put.execute().await {
        Ok(()) => Ok(item.key),
        Err(e) => Err(kv_failed(&item, e)),
    }
}

fn kv_failed(item: &SyncItem, e: impl std::fmt::Display) -> Refusal {
    console_error!("sync: KV failed for {}: {e}", item.key);
    Refusal::failed(item, e)
}

pub(crate) async fn handle(mut req: Request, env: &Env) -> Result<Response> {
    if req.method() != Method::Post {
        let response = problem(405, "POST a batch of items")?;
        response.headers().set("allow", "POST")?;
        return Ok(response);
    }
    let Ok(expected) = env.secret("SYNC_TOKEN").map(|s| s.to_string()) else {
        return problem(
            503,
            "this worker has no SYNC_TOKEN, so it accepts no pushes",
        );
    };
    // A guessable token is as good as none: refuse to run with one.
    if !tokens_long_enough(&expected) {
        return problem(
            503,
            "a token of this worker's SYNC_TOKEN is shorter than 16 bytes, so it accepts no pushes",
        );
    }
    let given = req.headers().get("authorization")?.unwrap_or_default();
    let authorized = given
        .strip_prefix("Bearer ")
        .is_some_and(|token| token_accepted(token, &expected));
    if !authorized {
        return problem(401, "send Authorization: Bearer <the SYNC_TOKEN>");
    }
    let batch: SyncBatch = match req.json().await {
        Ok(batch) => batch,
        Err(e) => return problem(400, &format!("not a sync batch: {e}")),
    };
    if batch.items.len() > MAX_SYNC_ITEMS {
        return problem(413, &format!("at most {MAX_SYNC_ITEMS} items per push"));
    }
    let kv = env.kv(LINKS)?;
    // The publisher's pushes name each key once (it coalesces), and those are written
    // concurrently: one by one, local KV managed under a thousand a second. A push that
    // names a key twice is written in order, so its later items see its earlier ones.
    let mut seen = std::collections::HashSet::new();
    let distinct = batch
        .items
        .iter()
        .all(|item| seen.insert(item.key.as_str()));
    let outcomes = if distinct {
        join_all(batch.items.into_iter().map(|item| write(&kv, item))).await
    } else {
        let mut outcomes = Vec::with_capacity(batch.items.len());
        for item in batch.items {
            outcomes.push(write(&kv, item).await);
        }
        outcomes
    };
    let mut reply = SyncReply::default();
    for outcome in outcomes {
        match outcome {
            Ok(key) => reply.written.push(key),
            Err(refusal) => reply.refused.push(refusal),
        }
    }
    Response::from_json(&reply)
}

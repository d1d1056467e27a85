//! The denylist as this isolate holds it: read from KV under `deny`, kept in memory for
//! a moment so that a busy isolate does not read it on every request.

use crate::kv::Kv;
use shared::fallback::Held;
use shared::sync::DENY_KEY;
use shared::Denylist;
use std::cell::RefCell;
use std::rc::Rc;
use worker::console_error;

/// How long this isolate trusts its copy before reading again. Short, because a ban
/// must take effect within a second locally (and within KV's cache time everywhere);
/// four reads a second per busy isolate are cheap.
const HOLD_MS: u64 = 250;
/// Cloudflare's smallest per-location KV cache.
const CACHE_TTL_S: u32 = 30;

thread_local! {
    // Workers isolates run one thread; this is per-isolate memory.
    static HELD: RefCell<Option<Held<Rc<Denylist>>>> = const { RefCell::new(None) };
}

/// This isolate's copy, if it was read less than [`HOLD_MS`] before `now_ms`.
pub(crate) fn held(now_ms: u64) -> Option<Rc<Denylist>> {
    HELD.with_borrow(|held| held.as_ref().and_then(|h| h.fresh(now_ms, HOLD_MS)))
}

/// Reads the denylist again and holds it. When KV cannot be read, the last copy held is
/// used; with none, an empty list: records marked `banned` still block (the edge fails
/// closed for bans it has seen in any form), plain links keep redirecting.
pub(crate) async fn refresh(kv: &Kv, now_ms: u64) -> Rc<Denylist> {
    match read(kv).await {
        Ok(list) => {
            let list = Rc::new(list);
            HELD.set(Some(Held::new(Rc::clone(&list), now_ms)));
            list
        }
        Err(e) => {
            console_error!("denylist unreadable, keeping the last copy: {e}");
            HELD.with_borrow(|held| held.as_ref().map(|h| Rc::clone(h.value())))
                .unwrap_or_default()
        }
    }
}

async fn read(kv: &Kv) -> Result<Denylist, String> {
    match kv.text(DENY_KEY, CACHE_TTL_S).await? {
        None => Ok(Denylist::default()),
        Some(json) => Denylist::from_json(&json).map_err(|e| format!("corrupt snapshot: {e}")),
    }
}

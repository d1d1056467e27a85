//! The denylist as this isolate holds it: read from KV under `deny`, kept in memory for
//! a moment so that a busy isolate does not read it on every request.

use shared::sync::DENY_KEY;
use shared::Denylist;
use std::cell::RefCell;
use std::rc::Rc;
use worker::kv::KvStore;
use worker::{console_error, Date};

/// How long this isolate trusts its copy before reading again. Short, because a ban
/// must take effect within a second locally (and within KV's cache time everywhere);
/// four reads a second per busy isolate are cheap.
const HOLD_MS: u64 = 250;
/// Cloudflare's smallest per-location KV cache.
const CACHE_TTL_S: u64 = 30;

struct Held {
    list: Rc<Denylist>,
    read_at_ms: u64,
}

thread_local! {
    // Workers isolates run one thread; this is per-isolate memory.
    static HELD: RefCell<Option<Held>> = const { RefCell::new(None) };
}

/// The denylist to apply now. When KV cannot be read, the last copy held is used; with
/// none, an empty list: records marked `banned` still block (the edge fails closed for
/// bans it has seen in any form), plain links keep redirecting.
pub(crate) async fn current(kv: &KvStore) -> Rc<Denylist> {
    let now = Date::now().as_millis();
    let fresh = HELD.with_borrow(|held| {
        held.as_ref()
            .filter(|h| now.saturating_sub(h.read_at_ms) < HOLD_MS)
            .map(|h| Rc::clone(&h.list))
    });
    if let Some(list) = fresh {
        return list;
    }
    match read(kv).await {
        Ok(list) => {
            let list = Rc::new(list);
            HELD.set(Some(Held {
                list: Rc::clone(&list),
                read_at_ms: now,
            }));
            list
        }
        Err(e) => {
            console_error!("denylist unreadable, keeping the last copy: {e}");
            HELD.with_borrow(|held| held.as_ref().map(|h| Rc::clone(&h.list)))
                .unwrap_or_default()
        }
    }
}

async fn read(kv: &KvStore) -> Result<Denylist, String> {
    let text = kv
        .get(DENY_KEY)
        .cache_ttl(CACHE_TTL_S)
        .text()
        .await
        .map_err(|e| e.to_string())?;
    match text {
        None => Ok(Denylist::default()),
        Some(json) => Denylist::from_json(&json).map_err(|e| format!("corrupt snapshot: {e}")),
    }
}

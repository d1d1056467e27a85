//! The permutation keys (`PERMUTATION_KEYS`), read once an isolate: what dates a
//! generated code the edge has no record of (`fallback`), and what the key naming a
//! visit-limited link's visitors derives from (`clicks`).

use shared::KeyRing;
use std::cell::RefCell;
use worker::{console_error, Env};

thread_local! {
    // Workers isolates run one thread; this is per-isolate memory. `Some(None)`: read,
    // and unset or unreadable.
    static KEYS: RefCell<Option<Option<KeyRing>>> = const { RefCell::new(None) };
}

/// The keys, read on the first call.
pub(crate) fn keys(env: &Env) -> Option<KeyRing> {
    KEYS.with_borrow_mut(|k| {
        k.get_or_insert_with(|| {
            let ring = env.secret("PERMUTATION_KEYS").ok()?.to_string();
            KeyRing::parse(&ring)
                .map_err(|e| console_error!("PERMUTATION_KEYS: {e}"))
                .ok()
        })
        .clone()
    })
}

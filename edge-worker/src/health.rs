//! How this isolate is doing: its answers by status and its faults by kind, counted as
//! they happen (an increment, no call into JavaScript), and sent with the clicks of each
//! window (`clicks`), with the isolate's location and its denylist's age. The bottom of
//! the worker's modules: every other may count here, so this one imports none of them.

use shared::tally::{Fault, HealthCounts};
use std::cell::RefCell;
use wasm_bindgen::JsValue;
use worker::js_sys::Reflect;
use worker::web_sys;

thread_local! {
    // Workers isolates run one thread; this is per-isolate memory.
    static COUNTS: RefCell<HealthCounts> = RefCell::new(HealthCounts::default());
    // An isolate runs at one location: read once.
    static COLO: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Counts an answer sent with `status`.
pub(crate) fn answered(status: u16) {
    COUNTS.with_borrow_mut(|c| c.answered(status));
}

/// Counts a fault.
pub(crate) fn fault(fault: Fault) {
    COUNTS.with_borrow_mut(|c| c.fault(fault));
}

/// Notes the location `request` arrived at, once per isolate (`request.cf` is built
/// afresh on each access: not read per visit).
pub(crate) fn note_location(request: &web_sys::Request) {
    if COLO.with_borrow(Option::is_some) {
        return;
    }
    let colo = Reflect::get(request, &JsValue::from_str("cf"))
        .ok()
        .filter(|cf| cf.is_object())
        .and_then(|cf| Reflect::get(&cf, &JsValue::from_str("colo")).ok())
        .and_then(|colo| colo.as_string())
        .filter(|colo| colo.len() <= 8);
    COLO.set(Some(colo.unwrap_or_default()));
}

/// The report of what was counted since the last one (a `shared::tally::Health`'s JSON),
/// with the location and `denylist_age_ms`; `None` when nothing was counted. Counting
/// starts again from nothing.
pub(crate) fn take(denylist_age_ms: Option<u64>) -> Option<String> {
    let counts = COUNTS.take();
    if counts.is_empty() {
        return None;
    }
    let colo = COLO.with_borrow(|c| c.clone());
    Some(counts.to_json(colo.as_deref(), denylist_age_ms))
}

//! JavaScript copies of the worker's constant strings (header names, binding names),
//! made once per isolate.
//!
//! Every `&str` handed to JavaScript is decoded from wasm memory by a `TextDecoder` call,
//! which showed up as a measurable share of a redirect's CPU. A constant needs decoding
//! only once.

use std::cell::RefCell;
use wasm_bindgen::JsValue;

thread_local! {
    // Workers isolates run one thread; this is per-isolate memory. A handful of
    // entries: a linear scan beats hashing.
    static HELD: RefCell<Vec<(&'static str, JsValue)>> = const { RefCell::new(Vec::new()) };
}

/// `name` as a JavaScript string, decoded once per isolate.
pub(crate) fn js(name: &'static str) -> JsValue {
    HELD.with_borrow_mut(|held| {
        if let Some((_, value)) = held.iter().find(|(n, _)| *n == name) {
            return value.clone();
        }
        let value = JsValue::from_str(name);
        held.push((name, value.clone()));
        value
    })
}

//! Writes a `shared` decision out as a runtime response.
//!
//! Built on the runtime's own `Response` rather than `worker::Response`: that wrapper
//! makes a `Headers` object of its own that this replaces, and converting it back costs
//! more calls into JavaScript. (`Response.redirect` would not do either: its headers are
//! immutable.)

use crate::names;
use shared::{Body, Decision};
use worker::js_sys::{Object, Promise, Reflect};
use worker::wasm_bindgen::JsValue;
use worker::web_sys::{Response, ResponseInit};

/// A promise already settled with the response for `decision`.
pub(crate) fn settled(decision: &Decision) -> Promise {
    match to_response(decision) {
        Ok(response) => Promise::resolve(&JsValue::from(response)),
        Err(e) => Promise::reject(&e),
    }
}

pub(crate) fn to_response(decision: &Decision) -> Result<Response, JsValue> {
    // A plain object: the runtime reads it into the response's headers in one call,
    // where `Headers.set` would cost a call into the runtime per header.
    let headers = Object::new();
    for (name, value) in &decision.headers {
        Reflect::set(&headers, &names::js(name), &JsValue::from_str(value))?;
    }
    let init = ResponseInit::new();
    init.set_status(decision.status);
    init.set_headers(&headers);
    let body = match &decision.body {
        Body::Empty => None,
        Body::Text(text) | Body::Html(text) => Some(*text),
    };
    Response::new_with_opt_str_and_init(body, &init)
}

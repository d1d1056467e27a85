//! Writes a `shared` decision out as a runtime response.
//!
//! Built on the runtime's own `Response` rather than `worker::Response`: that wrapper
//! makes a `Headers` object of its own that this replaces, and converting it back costs
//! more calls into JavaScript. (`Response.redirect` would not do either: its headers are
//! immutable.)

use crate::names;
use shared::Decision;
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

/// The response for `decision`, counted in the isolate's health report: every answer a
/// visitor gets goes through here.
pub(crate) fn to_response(decision: &Decision) -> Result<Response, JsValue> {
    crate::health::answered(decision.status);
    let headers = decision.headers.iter();
    build(decision.status, headers, decision.body.text())
}

/// A runtime response with `status`, `headers` (name, value) and `body`.
pub(crate) fn build<'a>(
    status: u16,
    headers: impl IntoIterator<Item = (&'static str, &'a str)>,
    body: Option<&str>,
) -> Result<Response, JsValue> {
    // A plain object: the runtime reads it into the response's headers in one call,
    // where `Headers.set` would cost a call into the runtime per header.
    let object = Object::new();
    for (name, value) in headers {
        Reflect::set(&object, &names::js(name), &JsValue::from_str(value))?;
    }
    let init = ResponseInit::new();
    init.set_status(status);
    init.set_headers(&object);
    Response::new_with_opt_str_and_init(body, &init)
}

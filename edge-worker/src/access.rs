//! Checks a private link's token with the runtime's WebCrypto: HMAC-SHA256 verified by
//! `crypto.subtle.verify`, which compares in constant time and costs the WebAssembly
//! nothing. Only a record with `access` takes this path; it is asynchronous (WebCrypto
//! answers with promises), the plain redirect stays one `then`.

use shared::access::{Access, Challenge};
use shared::RouteKey;
use wasm_bindgen::prelude::*;
use worker::js_sys::{Array, Object, Promise, Reflect, Uint8Array};
use worker::wasm_bindgen_futures::JsFuture;

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(js_namespace = ["crypto", "subtle"], js_name = importKey, catch)]
    fn import_key(
        format: &str,
        key: &Uint8Array,
        algorithm: &JsValue,
        extractable: bool,
        usages: &Array,
    ) -> Result<Promise, JsValue>;

    #[wasm_bindgen(js_namespace = ["crypto", "subtle"], js_name = verify, catch)]
    fn verify(
        algorithm: &str,
        key: &JsValue,
        signature: &Uint8Array,
        data: &Uint8Array,
    ) -> Result<Promise, JsValue>;
}

/// Whether the visit's query carries a token that opens `route` under `access` at
/// `now_s`. Anything malformed, expired or failing is a refusal, never an error.
pub(crate) async fn granted(
    access: &Access,
    route: &RouteKey,
    query: Option<&str>,
    now_s: i64,
) -> bool {
    let Some(c) = Challenge::of(access, route, query, now_s) else {
        return false;
    };
    verified(&c.key, &c.mac, c.message.as_bytes())
        .await
        .unwrap_or(false)
}

async fn verified(key: &[u8], mac: &[u8], message: &[u8]) -> Result<bool, JsValue> {
    let algorithm = Object::new();
    Reflect::set(&algorithm, &"name".into(), &"HMAC".into())?;
    Reflect::set(&algorithm, &"hash".into(), &"SHA-256".into())?;
    let usages = Array::of1(&"verify".into());
    let key = JsFuture::from(import_key(
        "raw",
        &Uint8Array::from(key),
        &algorithm,
        false,
        &usages,
    )?)
    .await?;
    let ok = JsFuture::from(verify(
        "HMAC",
        &key,
        &Uint8Array::from(mac),
        &Uint8Array::from(message),
    )?)
    .await?;
    Ok(ok.as_bool().unwrap_or(false))
}

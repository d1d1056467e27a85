//! Private links at the edge, with the runtime's WebCrypto: a signed link's token and
//! a password link's cookie are HMAC-SHA256, checked by `crypto.subtle.verify` (which
//! compares in constant time); a posted password is hashed by `crypto.subtle.deriveBits`
//! (PBKDF2). All of it costs the WebAssembly nothing. Only a record with `access` takes
//! this path; it is asynchronous (WebCrypto answers with promises), the plain redirect
//! stays one `then`.

use shared::access::{Access, Challenge};
use shared::password::{self, Attempts, Check, Client, Tried};
use shared::{Decision, RouteKey};
use std::cell::RefCell;
use wasm_bindgen::prelude::*;
use worker::js_sys::{Array, ArrayBuffer, Object, Promise, Reflect, Uint8Array};
use worker::wasm_bindgen_futures::JsFuture;
use worker::web_sys;

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

    #[wasm_bindgen(js_namespace = ["crypto", "subtle"], js_name = sign, catch)]
    fn sign(algorithm: &str, key: &JsValue, data: &Uint8Array) -> Result<Promise, JsValue>;

    #[wasm_bindgen(js_namespace = ["crypto", "subtle"], js_name = deriveBits, catch)]
    fn derive_bits(algorithm: &JsValue, key: &JsValue, length: u32) -> Result<Promise, JsValue>;
}

thread_local! {
    /// Wrong passwords per link and client, for this isolate.
    static ATTEMPTS: RefCell<Attempts> = RefCell::new(Attempts::default());
}

/// Whether the visit opens `route` under `access` at `now_s`: a signed link's token in
/// `query`, a password link's cookie in `cookie`. Anything malformed, expired or
/// failing is a refusal, never an error.
pub(crate) async fn granted(
    access: &Access,
    route: &RouteKey,
    query: Option<&str>,
    cookie: Option<&str>,
    now_s: i64,
) -> bool {
    let Some(c) = Challenge::of(access, route, query, cookie, now_s) else {
        return false;
    };
    verified(&c.key, &c.mac, c.message.as_bytes())
        .await
        .unwrap_or(false)
}

/// The answer to a password posted to `route`'s form in `request`, at `now_ms`.
pub(crate) async fn attempt(
    access: &Access,
    route: &RouteKey,
    query: Option<&str>,
    request: &web_sys::Request,
    now_ms: u64,
) -> Decision {
    let tried = match tried(access, route, request, now_ms).await {
        Ok(tried) => tried,
        Err(e) => {
            worker::console_error!("password check for {route} failed: {e:?}");
            return Decision::unavailable(shared::Method::Post, shared::decision::RETRY_AFTER_S);
        }
    };
    Decision::password_tried(route, query, tried)
}

async fn tried(
    access: &Access,
    route: &RouteKey,
    request: &web_sys::Request,
    now_ms: u64,
) -> Result<Tried, JsValue> {
    let Some(check) = Check::of(access) else {
        return Err("the record's password secrets are not hex".into());
    };
    // Browsers send a form's length; a body without one, or longer than a form with
    // the longest password, is not read.
    let length = request.headers().get("content-length")?;
    let fits = length
        .and_then(|l| l.parse::<usize>().ok())
        .is_some_and(|l| l <= password::MAX_FORM_BYTES);
    if !fits {
        return Ok(Tried::Missing);
    }
    let body = JsFuture::from(request.text()?).await?;
    let Some(typed) = body
        .as_string()
        .and_then(|b| password::form_password(b.as_bytes()))
    else {
        return Ok(Tried::Missing);
    };
    let now = i64::try_from(now_ms).unwrap_or(i64::MAX);
    // Cloudflare sets the visitor's address; a request without one counts as one
    // shared client.
    let client = Client::named(request.headers().get("cf-connecting-ip")?.as_deref());
    // The attempt is taken before hashing: a flood of guesses costs no PBKDF2.
    if let Err(retry_after_s) = ATTEMPTS.with_borrow_mut(|a| a.take(route, client, now)) {
        return Ok(Tried::Limited(retry_after_s));
    }
    let derived = pbkdf2(typed.as_bytes(), &check.salt, check.iterations).await?;
    if !check.matches(&derived) {
        return Ok(Tried::Wrong);
    }
    ATTEMPTS.with_borrow_mut(|a| a.give_back(route, client));
    let now_s = now.div_euclid(1000);
    let expires_s = now_s + password::COOKIE_TTL_S;
    let message = password::cookie_message(route, expires_s);
    let mac = hmac(&check.key, message.as_bytes()).await?;
    Ok(Tried::Right(password::set_cookie(
        route, expires_s, now_s, &mac,
    )))
}

fn algorithm(pairs: &[(&str, &JsValue)]) -> Result<Object, JsValue> {
    let object = Object::new();
    for (name, value) in pairs {
        Reflect::set(&object, &JsValue::from_str(name), value)?;
    }
    Ok(object)
}

async fn hmac_key(key: &[u8], usage: &str) -> Result<JsValue, JsValue> {
    let algorithm = algorithm(&[("name", &"HMAC".into()), ("hash", &"SHA-256".into())])?;
    let usages = Array::of1(&usage.into());
    JsFuture::from(import_key(
        "raw",
        &Uint8Array::from(key),
        &algorithm,
        false,
        &usages,
    )?)
    .await
}

async fn verified(key: &[u8], mac: &[u8], message: &[u8]) -> Result<bool, JsValue> {
    let key = hmac_key(key, "verify").await?;
    let ok = JsFuture::from(verify(
        "HMAC",
        &key,
        &Uint8Array::from(mac),
        &Uint8Array::from(message),
    )?)
    .await?;
    Ok(ok.as_bool().unwrap_or(false))
}

async fn hmac(key: &[u8], message: &[u8]) -> Result<Vec<u8>, JsValue> {
    let key = hmac_key(key, "sign").await?;
    let mac = JsFuture::from(sign("HMAC", &key, &Uint8Array::from(message))?).await?;
    Ok(bytes(mac))
}

/// PBKDF2-HMAC-SHA256 of `password`, 256 bits, as the origin stored the link's hash.
async fn pbkdf2(password: &[u8], salt: &[u8], iterations: u32) -> Result<Vec<u8>, JsValue> {
    let usages = Array::of1(&"deriveBits".into());
    let key = JsFuture::from(import_key(
        "raw",
        &Uint8Array::from(password),
        &"PBKDF2".into(),
        false,
        &usages,
    )?)
    .await?;
    let algorithm = algorithm(&[
        ("name", &"PBKDF2".into()),
        ("hash", &"SHA-256".into()),
        ("salt", &Uint8Array::from(salt).into()),
        ("iterations", &iterations.into()),
    ])?;
    let bits = JsFuture::from(derive_bits(&algorithm, &key, 256)?).await?;
    Ok(bytes(bits))
}

fn bytes(buffer: JsValue) -> Vec<u8> {
    Uint8Array::new(&ArrayBuffer::from(buffer)).to_vec()
}

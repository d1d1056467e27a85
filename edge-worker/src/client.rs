//! What a visit's request says about its client, read only as far as a record needs it: a
//! plain link's redirect reads no header for its decision (each read is a call into
//! the runtime).

use crate::names;
use shared::targeting::Reads;
use shared::Client;
use wasm_bindgen::JsValue;
use worker::js_sys::{Math, Reflect};
use worker::web_sys;

/// The headers targeting rules and previews read, owned for the decision.
#[derive(Debug, Default)]
pub(crate) struct ClientHeaders {
    user_agent: String,
    accept_language: String,
    country: Option<String>,
}

impl ClientHeaders {
    /// What `reads` asks for of `request`; the rest is left empty, unread.
    pub(crate) fn read(request: &web_sys::Request, reads: Reads) -> Self {
        let headers = request.headers();
        let header = |want: bool, name: &'static str| {
            if want {
                headers.get(name).ok().flatten().unwrap_or_default()
            } else {
                String::new()
            }
        };
        ClientHeaders {
            user_agent: header(reads.user_agent, "user-agent"),
            accept_language: header(reads.accept_language, "accept-language"),
            country: reads.country.then(|| country(request)).flatten(),
        }
    }

    pub(crate) fn client(&self) -> Client<'_> {
        Client {
            user_agent: &self.user_agent,
            accept_language: &self.accept_language,
            country: self.country.as_deref(),
        }
    }

    /// The country, when `reads` had it read (`request.cf`, built afresh on each access,
    /// is then not read again for the click): `None` when it was not read.
    pub(crate) fn country_read(&self, reads: Reads) -> Option<Option<&str>> {
        reads.country.then_some(self.country.as_deref())
    }
}

/// What Cloudflare says of the request (`request.cf`), if anything. `cf` is built afresh
/// on each access: callers read it once and take its fields with [`country_of`] and
/// [`asn_of`].
pub(crate) fn cf(request: &web_sys::Request) -> Option<JsValue> {
    Reflect::get(request, &names::js("cf"))
        .ok()
        .filter(|cf| cf.is_object())
}

/// The visitor's country as Cloudflare places it (`request.cf.country`), if any.
pub(crate) fn country(request: &web_sys::Request) -> Option<String> {
    cf(request).as_ref().and_then(country_of)
}

/// `cf.country`.
pub(crate) fn country_of(cf: &JsValue) -> Option<String> {
    Reflect::get(cf, &names::js("country"))
        .ok()
        .and_then(|c| c.as_string())
}

/// `cf.asn`: the network the visit came from, when Cloudflare says.
pub(crate) fn asn_of(cf: &JsValue) -> Option<u32> {
    Reflect::get(cf, &names::js("asn"))
        .ok()
        .and_then(|a| a.as_f64())
        .filter(|a| a.fract() == 0.0 && (0.0..=f64::from(u32::MAX)).contains(a))
        .map(|a| a as u32)
}

/// A split's draw: `Math.random` is enough to share visits by weight (nothing is
/// gained by predicting it), and costs one call rather than a buffer and a copy.
pub(crate) fn draw() -> u32 {
    (Math::random() * f64::from(u32::MAX)) as u32
}

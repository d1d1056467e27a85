//! What a visit's request says about its client, read only when a record needs it: a
//! plain link's redirect reads no header for its decision (each read is a call into
//! the runtime).

use crate::names;
use shared::Client;
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
    pub(crate) fn read(request: &web_sys::Request) -> Self {
        let headers = request.headers();
        let header = |name: &'static str| headers.get(name).ok().flatten().unwrap_or_default();
        ClientHeaders {
            user_agent: header("user-agent"),
            accept_language: header("accept-language"),
            country: country(request),
        }
    }

    pub(crate) fn client(&self) -> Client<'_> {
        Client {
            user_agent: &self.user_agent,
            accept_language: &self.accept_language,
            country: self.country.as_deref(),
        }
    }
}

/// The visitor's country as Cloudflare places it (`request.cf.country`), if any.
/// `cf` is built afresh on each access: callers read it once.
pub(crate) fn country(request: &web_sys::Request) -> Option<String> {
    Reflect::get(request, &names::js("cf"))
        .ok()
        .filter(|cf| cf.is_object())
        .and_then(|cf| Reflect::get(&cf, &names::js("country")).ok())
        .and_then(|c| c.as_string())
}

/// A split's draw: `Math.random` is enough to share visits by weight (nothing is
/// gained by predicting it), and costs one call rather than a buffer and a copy.
pub(crate) fn draw() -> u32 {
    (Math::random() * f64::from(u32::MAX)) as u32
}

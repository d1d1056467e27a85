//! Whether a browser's post comes from a page of the site it is sent to: the dashboard's
//! forms and the public report form refuse one from another site, whatever it carries
//! (a page elsewhere can make a visitor's browser post anything to any site).

use axum::http::{header, HeaderMap};

/// Whether a post comes from a page of this host: a browser says where a request comes
/// from (`Sec-Fetch-Site`, every current browser; `Origin` on posts), and a request
/// from another site is refused whatever it carries. Served over HTTPS (`secure`), a
/// page of this host over plain HTTP is another site too. A client that says neither
/// (a script, an old browser) is not a browser another site can drive: taken.
pub fn from_this_site(headers: &HeaderMap, secure: bool) -> bool {
    let fetch_site = headers.get("sec-fetch-site").and_then(|v| v.to_str().ok());
    if matches!(fetch_site, Some("cross-site" | "same-site")) {
        return false;
    }
    let Some(origin) = headers.get(header::ORIGIN).and_then(|v| v.to_str().ok()) else {
        return true;
    };
    let host = headers.get(header::HOST).and_then(|v| v.to_str().ok());
    let origin_host = match origin.strip_prefix("https://") {
        Some(host) => Some(host),
        None if secure => None,
        None => origin.strip_prefix("http://"),
    };
    matches!((origin_host, host), (Some(o), Some(h)) if o.eq_ignore_ascii_case(h))
}

//! How a decision becomes an answer: the statuses, headers and bodies of each kind of
//! [`Decision`], and the pages drawn for one ([`Page`], named by the decision, drawn by
//! the page's module). Nothing here decides: `super` chooses, this writes it out.

use crate::access::Access;
use crate::answer::{Body, Decision, Headers, Method, Outcome};
use crate::denylist::Denylist;
use crate::domain::{DomainSettings, DEFAULT_MAX_AGE_S};
use crate::page::Page;
use crate::password::{Form, Tried};
use crate::route::RouteKey;
use crate::visit_url::VisitUrl;
use std::borrow::Cow;

use crate::html::visitor_page;

pub(super) const NOT_FOUND: &str = visitor_page!(
    "Not found",
    "<p>There is no link at this address. Check it for a typing mistake, \
     or ask whoever gave it to you.</p>"
);
pub(super) const DISABLED: &str = visitor_page!(
    "Link not available",
    "<p>This link is switched off for now by its owner.</p>"
);
pub(super) const EXPIRED: &str = visitor_page!("Link expired", "<p>This link has expired.</p>");
pub(super) const EXHAUSTED: &str = visitor_page!(
    "Link expired",
    "<p>This link has reached its limit of visits.</p>"
);
pub(super) const DELETED: &str =
    visitor_page!("Link deleted", "<p>This link was deleted by its owner.</p>");
const UNAVAILABLE: &str = visitor_page!(
    "Try again shortly",
    "<p>This link cannot be resolved right now. Please try again in a moment.</p>"
);
const TOO_MANY_LOOKUPS: &str =
    "Too many links that are not known yet were asked for from your address. Try again in a minute.\n";
const METHOD_NOT_ALLOWED: &str = "Only GET and HEAD are supported.\n";
const METHOD_NOT_ALLOWED_BUT_FORMS: &str =
    "Only GET and HEAD are supported (and POST of a password link's form).\n";
pub(super) const PRIVATE: &str = visitor_page!(
    "Private link",
    "<p>This link is private: open it with the link you were given. \
     Links to it expire; ask its owner for a new one.</p>"
);
const BANNED: &str = visitor_page!(
    "Link blocked",
    "<p>This short link was blocked because it was reported as harmful. \
     You have not been redirected.</p>"
);

const NO_STORE: &str = "no-store";
/// What a link's answer depends on besides its URL, when it has rules or a preview.
pub(super) const VARY: &str = "User-Agent, Accept-Language";

impl Decision {
    pub(super) fn new(method: Method, outcome: Outcome, status: u16, body: Body) -> Self {
        let mut headers = Headers::default();
        headers.push("cache-control", Cow::Borrowed(NO_STORE));
        match body {
            Body::Empty => {}
            Body::Text(_) => headers.push("content-type", "text/plain; charset=utf-8".into()),
            Body::Html(_) | Body::Page(_) => {
                headers.push("content-type", "text/html; charset=utf-8".into())
            }
        }
        Decision {
            outcome,
            status,
            headers,
            body: if method == Method::Head {
                Body::Empty
            } else {
                body
            },
            variant: None,
            unrecorded: false,
            scanners_unchecked: false,
            limited: false,
        }
    }

    /// The decision with its page, if it has one, in the domain's brand, if it has one:
    /// `decide` and `decide_root` answer so; an adapter that answers a password's `POST`
    /// itself ([`Decision::password_tried`]) passes the domain's settings here.
    pub fn in_look_of(mut self, settings: &DomainSettings) -> Self {
        if let Some(brand) = &settings.brand {
            self.body = match self.body {
                Body::Html(page) => Body::Page(crate::html::branded(page, brand)),
                Body::Page(page) => Body::Page(crate::html::branded(&page, brand)),
                other => other,
            };
        }
        self
    }

    pub fn not_found(method: Method) -> Self {
        Decision::new(method, Outcome::NotFound, 404, Body::Html(NOT_FOUND))
    }

    /// The answer when the record or the origin cannot be read: never a 404 for a link
    /// that may exist.
    pub fn unavailable(method: Method, retry_after_s: u32) -> Self {
        let mut d = Decision::new(method, Outcome::Unavailable, 503, Body::Html(UNAVAILABLE));
        d.headers
            .push("retry-after", retry_after_s.to_string().into());
        d
    }

    /// The answer to a client that asked about too many codes that cannot be dated:
    /// 429, come back in `retry_after_s` (never a 404 for a link that may exist).
    pub fn too_many_lookups(method: Method, retry_after_s: u32) -> Self {
        let mut d = Decision::new(
            method,
            Outcome::Unavailable,
            429,
            Body::Text(TOO_MANY_LOOKUPS),
        );
        d.headers
            .push("retry-after", retry_after_s.to_string().into());
        d
    }

    /// 405 for a method no code's URL takes, before any lookup: a password link's URL
    /// also takes the `POST` of its form, so the `Allow` of a code's URL names it.
    pub(super) fn method_not_allowed() -> Self {
        Decision::not_allowed("GET, HEAD, POST", METHOD_NOT_ALLOWED_BUT_FORMS)
    }

    /// 405 where a `POST` is not taken either: `/`, and a link without a password.
    pub(super) fn get_or_head_only() -> Self {
        Decision::not_allowed("GET, HEAD", METHOD_NOT_ALLOWED)
    }

    fn not_allowed(allow: &'static str, why: &'static str) -> Self {
        let mut d = Decision::new(
            Method::Other,
            Outcome::MethodNotAllowed,
            405,
            Body::Text(why),
        );
        d.headers.push("allow", Cow::Borrowed(allow));
        d
    }

    pub(super) fn banned(method: Method) -> Self {
        Decision::new(method, Outcome::Banned, 403, Body::Html(BANNED))
    }

    /// A 302 to one of the domain's own pages (for an unknown code, `/`, an expired
    /// link), counted as `outcome`. Never kept by a browser: a link created on that
    /// code later must be found on the next visit.
    fn sent_to(outcome: Outcome, url: &str) -> Self {
        let mut headers = Headers::default();
        headers.push("location", Cow::Owned(url.to_owned()));
        headers.push("cache-control", Cow::Borrowed(NO_STORE));
        Decision {
            outcome,
            status: 302,
            headers,
            body: Body::Empty,
            variant: None,
            unrecorded: false,
            scanners_unchecked: false,
            limited: false,
        }
    }

    /// A 302 to `url` (a domain's page, or a link's page for when it has ended), unless
    /// a host ban covers it: `None`, and the caller answers without a `Location`.
    pub(super) fn page(outcome: Outcome, url: &str, deny: &Denylist) -> Option<Self> {
        let host = VisitUrl::from_serialized(url)?.host;
        (!deny.blocks_host(host)).then(|| Decision::sent_to(outcome, url))
    }

    /// No link: the same code on the shortener the domain moved from, when `legacy`
    /// names its base (the code is known to have lived there and the fallback runs),
    /// with the visitor's query and behind the domain's interstitial when it has one;
    /// else the domain's `not_found_url`; else 404. A host ban covering either page
    /// skips it.
    pub(super) fn no_link(
        method: Method,
        route: &RouteKey,
        query: Option<&str>,
        legacy: Option<&str>,
        settings: &DomainSettings,
        deny: &Denylist,
    ) -> Self {
        if let Some(base) = legacy {
            let mut url = format!("{}/{}", base.trim_end_matches('/'), route.code());
            if let Some(q) = query.filter(|q| !q.is_empty()) {
                url.push('?');
                url.push_str(q);
            }
            let open = VisitUrl::from_serialized(&url).is_some_and(|v| !deny.blocks_host(v.host));
            if open && settings.interstitial {
                let page = Page::Interstitial { target: &url };
                return Decision::drawn(method, Outcome::Legacy, 200, &page);
            }
            if let Some(d) = Decision::page(Outcome::Legacy, &url, deny) {
                return d;
            }
        }
        settings
            .not_found_url
            .as_deref()
            .and_then(|url| Decision::page(Outcome::NotFound, url, deny))
            .unwrap_or_else(|| Decision::not_found(method))
    }

    /// A page drawn for this visit, served with its own policy if it has one.
    pub(super) fn drawn(method: Method, outcome: Outcome, status: u16, page: &Page<'_>) -> Self {
        let mut d = Decision::new(method, outcome, status, Body::Page(page.draw()));
        if let Some(policy) = page.policy() {
            d.headers
                .push("content-security-policy", Cow::Borrowed(policy));
        }
        d
    }

    /// A password link's form (403), or the form again with a note.
    pub(super) fn password_form(method: Method, status: u16, route: &RouteKey, form: Form) -> Self {
        Decision::drawn(
            method,
            Outcome::Private,
            status,
            &Page::Password { route, form },
        )
    }

    /// 303 to the short URL itself, for a `GET` to decide: the answer to a password
    /// that let the visitor in, so that no answer to a `POST` names the target (and a
    /// 307 or 308 link would not post the password on to it).
    pub(super) fn see_again(route: &RouteKey, query: Option<&str>) -> Self {
        let mut location = format!("/{}", route.code());
        if let Some(q) = query.filter(|q| !q.is_empty()) {
            location.push('?');
            location.push_str(q);
        }
        let mut headers = Headers::default();
        headers.push("location", Cow::Owned(location));
        headers.push("cache-control", Cow::Borrowed(NO_STORE));
        Decision {
            outcome: Outcome::Private,
            status: 303,
            headers,
            body: Body::Empty,
            variant: None,
            unrecorded: false,
            scanners_unchecked: false,
            limited: false,
        }
    }

    /// The answer to a password posted to `route`'s form (with the visited `query`).
    pub fn password_tried(route: &RouteKey, query: Option<&str>, tried: Tried) -> Self {
        match tried {
            Tried::Missing => Decision::password_form(Method::Post, 400, route, Form::First),
            Tried::Wrong => Decision::password_form(Method::Post, 403, route, Form::Wrong),
            Tried::Limited(retry_after_s) => {
                let mut d = Decision::password_form(Method::Post, 429, route, Form::Limited);
                d.headers
                    .push("retry-after", retry_after_s.to_string().into());
                d
            }
            Tried::Right(cookie) => {
                let mut d = Decision::see_again(route, query);
                d.headers.push("set-cookie", cookie.into());
                d
            }
        }
    }

    /// Whether this answers a `POST` to a link with `access` with the form a password
    /// link shows before it lets a visitor in: the adapter then checks the password.
    pub fn asks_password(&self, method: Method, access: Option<&Access>) -> bool {
        method == Method::Post
            && self.outcome == Outcome::Private
            && self.status == 403
            && access.is_some_and(Access::is_password)
    }
}

/// `private, max-age={max_age}`, borrowed for the default age (most links' every
/// visit): `format!` cost a redirect more than the rest of its headers.
pub(super) fn private_max_age(max_age: i64) -> Cow<'static, str> {
    if max_age == i64::from(DEFAULT_MAX_AGE_S) {
        Cow::Borrowed(DEFAULT_CACHE_CONTROL)
    } else {
        Cow::Owned(format!("private, max-age={max_age}"))
    }
}

/// What [`private_max_age`] says for [`DEFAULT_MAX_AGE_S`] (a test checks): most
/// redirects' `Cache-Control`, which a server may hold ready-made.
pub const DEFAULT_CACHE_CONTROL: &str = "private, max-age=60";

/// What a visitor is told to wait before retrying a 503.
pub const RETRY_AFTER_S: u32 = 5;

//! The redirect decision: one pure function from what is known about a visit to the
//! response, used by the edge worker and by the origin's own redirect path alike.

use crate::access::{without_token, Access};
use crate::codes::is_plausible_code;
use crate::denylist::Denylist;
use crate::domain::{DomainSettings, DomainStatus, RouteKey, DEFAULT_MAX_AGE_S};
use crate::password::{Form, Tried};
use crate::preview::{is_previewer, Preview};
use crate::record::{EdgeRecord, EdgeStatus, RedirectStatus};
use crate::split::Split;
use crate::target::merge_query;
use crate::targeting::{first_match, Facts, Request, Rule};
use crate::visit_url::VisitUrl;
use std::borrow::Cow;
use std::sync::Arc;
use url::Url;

/// A record with its target checked and its host found once, for callers that keep
/// records in memory (the origin's cache): deciding from it parses nothing unless a
/// visitor's query is merged in, exactly as the edge decides from the stored text.
///
/// The record's fields are held beside a shared target: a cache can keep it by value,
/// cloned on every read for a reference count, with the target's text its one
/// allocation (a million cached links were four pointers deep, a cache miss each).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreparedRecord {
    target: Arc<str>,
    /// Where the target's host lies in its text, when the target is an http(s) URL
    /// exactly as the `url` crate writes it (every target the origin stores). Anything
    /// else (a corrupt copy) is `None` and decided from the stored text, exactly as the
    /// edge decides it: fuzzing found a copy with a target of another scheme that this
    /// path redirected to and the edge's refused. A span rather than a parsed `Url`
    /// keeps a million cached links about a hundred bytes each smaller.
    host: Option<(u32, u32)>,
    basics: Basics,
    /// What few links carry (issue 17): `None` for the rest, so a plain link costs a
    /// cache no more than before.
    more: Option<Arc<More>>,
    pub version: u64,
}

/// A record's rarer parts, owned.
#[derive(Debug, Clone, PartialEq, Eq)]
struct More {
    rules: Vec<Rule>,
    split: Option<Split>,
    preview: Option<Preview>,
    expired_url: Option<String>,
    access: Option<Access>,
}

impl PreparedRecord {
    pub fn new(record: EdgeRecord) -> Self {
        let canonical = Url::parse(&record.target)
            .ok()
            .is_some_and(|url| url.as_str() == record.target);
        let host = canonical
            .then(|| VisitUrl::from_serialized(&record.target))
            .flatten()
            .and_then(|v| {
                let start = v.host.as_ptr() as usize - record.target.as_ptr() as usize;
                let start = u32::try_from(start).ok()?;
                Some((start, start + u32::try_from(v.host.len()).ok()?))
            });
        let more = (!record.rules.is_empty()
            || record.split.is_some()
            || record.preview.is_some()
            || record.expired_url.is_some()
            || record.access.is_some())
        .then(|| {
            Arc::new(More {
                rules: record.rules,
                split: record.split,
                preview: record.preview,
                expired_url: record.expired_url,
                access: record.access,
            })
        });
        PreparedRecord {
            basics: Basics {
                status: record.status,
                redirect: record.redirect,
                expires_at: record.expires_at,
                forward_query: record.forward_query,
                interstitial: record.interstitial,
                no_clicks: record.no_clicks,
                exhausted: record.exhausted,
            },
            version: record.version,
            target: record.target.into(),
            host,
            more,
        }
    }

    pub fn status(&self) -> EdgeStatus {
        self.basics.status
    }

    /// Whether the record carries nothing of issue 17 (rules, a split, a preview, its own
    /// expired page, access): most links, whose visit then checks for none of it.
    pub fn is_plain(&self) -> bool {
        self.more.is_none()
    }

    /// [`EdgeRecord::reads_client`].
    pub fn reads_client(&self) -> bool {
        self.more
            .as_deref()
            .is_some_and(|m| !m.rules.is_empty() || m.preview.is_some())
    }

    /// Who may follow the link (`None`: anyone).
    pub fn access(&self) -> Option<&Access> {
        self.more.as_deref().and_then(|m| m.access.as_ref())
    }

    /// [`EdgeRecord::draws`].
    pub fn draws(&self) -> bool {
        self.more.as_deref().is_some_and(|m| m.split.is_some())
    }

    /// `None` for a plain link, which the decision then checks for nothing of issue 17.
    fn extras(&self) -> Option<Extras<'_>> {
        self.more.as_deref().map(Extras::of_more)
    }

    /// The record's target, as stored.
    pub fn target(&self) -> &str {
        &self.target
    }

    /// The record as the edge stores it.
    pub fn to_record(&self) -> EdgeRecord {
        let Basics {
            status,
            redirect,
            expires_at,
            forward_query,
            interstitial,
            no_clicks,
            exhausted,
        } = self.basics;
        let more = self.more.as_deref();
        EdgeRecord {
            target: self.target.to_string(),
            status,
            redirect,
            expires_at,
            version: self.version,
            forward_query,
            rules: more.map(|m| m.rules.clone()).unwrap_or_default(),
            split: more.and_then(|m| m.split.clone()),
            preview: more.and_then(|m| m.preview.clone()),
            expired_url: more.and_then(|m| m.expired_url.clone()),
            access: more.and_then(|m| m.access.clone()),
            interstitial,
            no_clicks,
            exhausted,
        }
    }

    /// A copy that shares no memory with this one: a thread that keeps it for itself
    /// changes no reference count another thread reads.
    pub fn detached(&self) -> Self {
        PreparedRecord {
            target: Arc::from(&*self.target),
            more: self.more.as_deref().cloned().map(Arc::new),
            ..self.clone()
        }
    }

    fn decided_target(&self) -> Target<'_> {
        match self.host {
            Some((start, end)) => Target::Checked {
                text: &self.target,
                host: self
                    .target
                    .get(start as usize..end as usize)
                    .unwrap_or_default(),
            },
            None => Target::Stored(&self.target),
        }
    }

    /// The target's host, as host bans match it (empty for a corrupt target).
    pub fn target_host(&self) -> &str {
        self.decided_target().host().unwrap_or_default()
    }

    /// Whether `deny` covers the link at `route`: its code, or the host of any URL a
    /// visit could be sent to or shown (its target's, its rules', its split's, its page
    /// for when it has ended, its preview's image), as a decision checks them.
    pub fn banned_by(&self, route: &RouteKey, deny: &Denylist) -> bool {
        deny.blocks_code(route)
            || deny.blocks_host(self.target_host())
            || self.extras().is_some_and(|e| e.blocked_by(deny))
    }
}

/// What a decision reads of every record besides its target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Basics {
    status: EdgeStatus,
    redirect: RedirectStatus,
    expires_at: Option<i64>,
    forward_query: bool,
    interstitial: bool,
    no_clicks: bool,
    exhausted: bool,
}

impl From<&EdgeRecord> for Basics {
    fn from(r: &EdgeRecord) -> Self {
        Basics {
            status: r.status,
            redirect: r.redirect,
            expires_at: r.expires_at,
            forward_query: r.forward_query,
            interstitial: r.interstitial,
            no_clicks: r.no_clicks,
            exhausted: r.exhausted,
        }
    }
}

/// A record's rarer parts, borrowed from either form of it; a plain record has none
/// (`None` where a decision holds them).
#[derive(Debug, Clone, Copy)]
struct Extras<'r> {
    rules: &'r [Rule],
    split: Option<&'r Split>,
    preview: Option<&'r Preview>,
    expired_url: Option<&'r str>,
    access: Option<&'r Access>,
}

impl<'r> Extras<'r> {
    /// `None` for a record that carries none of them.
    fn of_record(r: &'r EdgeRecord) -> Option<Self> {
        let plain = r.rules.is_empty()
            && r.split.is_none()
            && r.preview.is_none()
            && r.expired_url.is_none()
            && r.access.is_none();
        (!plain).then_some(Extras {
            rules: &r.rules,
            split: r.split.as_ref(),
            preview: r.preview.as_ref(),
            expired_url: r.expired_url.as_deref(),
            access: r.access.as_ref(),
        })
    }

    fn of_more(m: &'r More) -> Self {
        Extras {
            rules: &m.rules,
            split: m.split.as_ref(),
            preview: m.preview.as_ref(),
            expired_url: m.expired_url.as_deref(),
            access: m.access.as_ref(),
        }
    }

    fn private(&self) -> bool {
        self.access.is_some()
    }

    fn password(&self) -> bool {
        self.access.is_some_and(Access::is_password)
    }

    /// The target a visit gets instead of the link's own, if any: the first rule that
    /// holds, else the split's pick for the visit's draw (with the variant's index).
    fn chosen(&self, visit: &Visit<'_>) -> Option<(&'r str, Option<u8>)> {
        if !self.rules.is_empty() {
            let facts = Facts::of(&visit.request());
            if let Some(i) = first_match(self.rules, &facts) {
                return Some((&self.rules[i].target_url, None));
            }
        }
        let split = self.split?;
        let i = split.pick(visit.draw);
        let variant = split.variants().get(i)?;
        Some((&variant.target_url, u8::try_from(i).ok()))
    }

    /// Whether a host ban covers any URL a visit could be sent to or shown: a link that
    /// sends some of its visitors (or crawlers) to a banned host is blocked for all of
    /// them, as the origin marks it too.
    fn blocked_by(&self, deny: &Denylist) -> bool {
        crate::targeting::other_targets(self.rules, self.split, self.expired_url, self.preview)
            .filter_map(VisitUrl::from_serialized)
            .any(|v| deny.blocks_host(v.host))
    }

    /// Milliseconds from `now_ms` to the next instant a rule starts or stops holding,
    /// if one is ahead: no cache may keep an answer past it.
    fn next_boundary_ms(&self, now_ms: i64) -> Option<i64> {
        self.rules
            .iter()
            .flat_map(|r| [r.when.after, r.when.before])
            .flatten()
            .filter(|t| *t > now_ms)
            .map(|t| t - now_ms)
            .min()
    }
}

/// The request methods the redirect path tells apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    Get,
    Head,
    /// Only a password link's form posts (to its own short URL).
    Post,
    Other,
}

impl Method {
    pub fn parse(method: &str) -> Method {
        match method {
            "GET" => Method::Get,
            "HEAD" => Method::Head,
            "POST" => Method::Post,
            _ => Method::Other,
        }
    }
}

/// What happened, for logs, metrics and click reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Redirect,
    /// Unknown code, or a path that cannot be a code.
    NotFound,
    Disabled,
    Expired,
    Deleted,
    /// Banned code, banned target host, or a record marked banned.
    Banned,
    /// The answer depends on something that cannot be reached now.
    Unavailable,
    MethodNotAllowed,
    /// A private link visited without what opens it (a valid, unexpired token).
    Private,
}

impl Outcome {
    /// Every outcome, in the order of its discriminant.
    pub const ALL: [Outcome; 9] = [
        Outcome::Redirect,
        Outcome::NotFound,
        Outcome::Disabled,
        Outcome::Expired,
        Outcome::Deleted,
        Outcome::Banned,
        Outcome::Unavailable,
        Outcome::MethodNotAllowed,
        Outcome::Private,
    ];

    /// Its name in metrics and logs.
    pub fn name(self) -> &'static str {
        match self {
            Outcome::Redirect => "redirect",
            Outcome::NotFound => "not_found",
            Outcome::Disabled => "disabled",
            Outcome::Expired => "expired",
            Outcome::Deleted => "deleted",
            Outcome::Banned => "banned",
            Outcome::Unavailable => "unavailable",
            Outcome::MethodNotAllowed => "method_not_allowed",
            Outcome::Private => "private",
        }
    }
}

/// The body of a response, before the method is applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Body {
    Empty,
    Text(&'static str),
    Html(&'static str),
    /// A page made for this visit: a social preview or an interstitial.
    Page(String),
}

impl Body {
    /// The body's text, if it has one.
    pub fn text(&self) -> Option<&str> {
        match self {
            Body::Empty => None,
            Body::Text(t) | Body::Html(t) => Some(t),
            Body::Page(p) => Some(p),
        }
    }
}

/// A response, ready for an adapter to write out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    pub outcome: Outcome,
    pub status: u16,
    pub headers: Headers,
    /// Already empty for `HEAD`; the `Content-Type` header still says what a `GET`
    /// would carry.
    pub body: Body,
    /// The split variant the visit was sent to (its index), for the click event.
    pub variant: Option<u8>,
    /// The link asks that its visits not be recorded (`record_clicks: false`).
    pub unrecorded: bool,
}

/// A decision's headers, name and value, held inline: no decision has more than
/// [`Headers::ROOM`] (a test checks each kind), and a `Vec` of them was an allocation
/// on every visit. A value the same for every visit is borrowed, so writing it out
/// copies and allocates nothing.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Headers {
    set: [Option<Header>; Headers::ROOM],
}

type Header = (&'static str, Cow<'static, str>);

impl Headers {
    pub const ROOM: usize = 4;

    fn push(&mut self, name: &'static str, value: Cow<'static, str>) {
        if let Some(free) = self.set.iter_mut().find(|h| h.is_none()) {
            *free = Some((name, value));
        }
    }

    /// Name and value, in the order they were set.
    pub fn iter(&self) -> impl Iterator<Item = (&'static str, &str)> {
        self.set.iter().flatten().map(|(n, v)| (*n, v.as_ref()))
    }

    /// Name and value, in the order they were set, taken out: a writer that owns the
    /// decision moves each value into its response without copying the whole set (an
    /// owning iterator over it was two copies and a drop of its every slot per redirect).
    pub fn take_all(&mut self) -> impl Iterator<Item = Header> + '_ {
        self.set.iter_mut().filter_map(Option::take)
    }

    pub fn len(&self) -> usize {
        self.set.iter().flatten().count()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// What is known about one visit, besides the record.
#[derive(Debug, Clone, Copy)]
pub struct Visit<'a> {
    pub method: Method,
    pub route: &'a RouteKey,
    /// The raw query of the visited URL, without `?`.
    pub query: Option<&'a str>,
    /// Unix milliseconds.
    pub now_ms: i64,
    /// What targeting rules and previews read of the request.
    pub client: Client<'a>,
    /// A number drawn at random for this visit: it picks a split's variant.
    pub draw: u32,
    /// The caller checked what the visit presented against the link's access (a
    /// token's MAC, with the link's secret) and it opens the link. Ignored for a link
    /// anyone may follow.
    pub access_granted: bool,
}

/// The request headers a decision may read (all empty for a caller that has none).
#[derive(Debug, Clone, Copy, Default)]
pub struct Client<'a> {
    pub user_agent: &'a str,
    pub accept_language: &'a str,
    /// Two letters, from a source the caller trusts: the edge's own `cf.country`; at the
    /// origin, only a configured trusted proxy's header.
    pub country: Option<&'a str>,
}

impl<'a> Visit<'a> {
    fn request(&self) -> Request<'a> {
        Request {
            user_agent: self.client.user_agent,
            accept_language: self.client.accept_language,
            country: self.client.country,
            query: self.query,
            now_ms: self.now_ms,
        }
    }
}

const NOT_FOUND: &str = "Not found.\n";
const DISABLED: &str = "This link is not available.\n";
const EXPIRED: &str = "This link has expired.\n";
const EXHAUSTED: &str = "This link has reached its limit of visits.\n";
const DELETED: &str = "This link was deleted.\n";
const UNAVAILABLE: &str = "This link cannot be resolved right now. Please try again shortly.\n";
const METHOD_NOT_ALLOWED: &str = "Only GET and HEAD are supported.\n";
const METHOD_NOT_ALLOWED_BUT_FORMS: &str =
    "Only GET and HEAD are supported (and POST of a password link's form).\n";
const PRIVATE: &str = "This link is private: open it with the link you were given. \
Links to it expire; ask its owner for a new one.\n";
const BANNED: &str = "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
<meta name=\"robots\" content=\"noindex\"><title>Link blocked</title></head>\
<body><h1>Link blocked</h1><p>This short link was blocked because it was reported \
as harmful. You have not been redirected.</p></body></html>\n";

const NO_STORE: &str = "no-store";
/// What a link's answer depends on besides its URL, when it has rules or a preview.
const VARY: &str = "User-Agent, Accept-Language";

impl Decision {
    fn new(method: Method, outcome: Outcome, status: u16, body: Body) -> Self {
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
        }
    }

    pub fn not_found(method: Method) -> Self {
        Decision::new(method, Outcome::NotFound, 404, Body::Text(NOT_FOUND))
    }

    /// The answer when the record or the origin cannot be read: never a 404 for a link
    /// that may exist.
    pub fn unavailable(method: Method, retry_after_s: u32) -> Self {
        let mut d = Decision::new(method, Outcome::Unavailable, 503, Body::Text(UNAVAILABLE));
        d.headers
            .push("retry-after", retry_after_s.to_string().into());
        d
    }

    /// 405 for a method no code's URL takes, before any lookup: a password link's URL
    /// also takes the `POST` of its form, so the `Allow` of a code's URL names it.
    fn method_not_allowed() -> Self {
        Decision::not_allowed("GET, HEAD, POST", METHOD_NOT_ALLOWED_BUT_FORMS)
    }

    /// 405 where a `POST` is not taken either: `/`, and a link without a password.
    fn get_or_head_only() -> Self {
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

    fn banned(method: Method) -> Self {
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
        }
    }

    /// A 302 to `url` (a domain's page, or a link's page for when it has ended), unless
    /// a host ban covers it: `None`, and the caller answers without a `Location`.
    fn page(outcome: Outcome, url: &str, deny: &Denylist) -> Option<Self> {
        let host = VisitUrl::from_serialized(url)?.host;
        (!deny.blocks_host(host)).then(|| Decision::sent_to(outcome, url))
    }

    /// No link: the domain's `not_found_url` when it has one (and no ban covers it),
    /// else 404.
    fn no_link(method: Method, settings: &DomainSettings, deny: &Denylist) -> Self {
        settings
            .not_found_url
            .as_deref()
            .and_then(|url| Decision::page(Outcome::NotFound, url, deny))
            .unwrap_or_else(|| Decision::not_found(method))
    }

    /// A password link's form (403), or the form again with a note.
    fn password_form(method: Method, status: u16, route: &RouteKey, which: Form) -> Self {
        let form = crate::password::form(route, which);
        let mut d = Decision::new(method, Outcome::Private, status, Body::Page(form));
        d.headers.push(
            "content-security-policy",
            Cow::Borrowed(crate::password::FORM_POLICY),
        );
        d
    }

    /// 303 to the short URL itself, for a `GET` to decide: the answer to a password
    /// that let the visitor in, so that no answer to a `POST` names the target (and a
    /// 307 or 308 link would not post the password on to it).
    fn see_again(route: &RouteKey, query: Option<&str>) -> Self {
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

    /// The value of a header, by lowercase name.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v)
    }
}

/// The checks that need nothing but the request line: a method other than GET, HEAD or
/// POST gets 405, a path segment that cannot be a code gets 404. `None`: go on and look
/// up (a `POST` is 405 too unless the code is a password link's).
pub fn reject_early(method: Method, code: &str) -> Option<Decision> {
    if method == Method::Other {
        Some(Decision::method_not_allowed())
    } else if !is_plausible_code(code) {
        Some(Decision::not_found(method))
    } else {
        None
    }
}

/// The answer to `GET|HEAD /` on a domain, from its settings and the denylist (`None`:
/// a domain the caller holds no settings for): its `root_url` unless a host ban covers
/// it, else 404; 405 for other methods.
pub fn decide_root(method: Method, pages: Option<(&DomainSettings, &Denylist)>) -> Decision {
    if matches!(method, Method::Post | Method::Other) {
        return Decision::get_or_head_only();
    }
    match pages {
        Some((s, deny)) if s.status == DomainStatus::Active => s
            .root_url
            .as_deref()
            .and_then(|url| Decision::page(Outcome::NotFound, url, deny))
            .unwrap_or_else(|| Decision::not_found(method)),
        _ => Decision::not_found(method),
    }
}

/// Decides the response to a visit from the link's record (`None`: no such link), the
/// denylist and the domain's settings.
pub fn decide(
    visit: &Visit<'_>,
    record: Option<&EdgeRecord>,
    deny: &Denylist,
    settings: &DomainSettings,
) -> Decision {
    let stored = || record.map(|r| Target::Stored(&r.target));
    let known = record.map(|r| (Basics::from(r), Extras::of_record(r)));
    decide_with(visit, known, stored, deny, settings)
}

/// [`decide`] for a record whose target is already parsed.
pub fn decide_prepared(
    visit: &Visit<'_>,
    prepared: Option<&PreparedRecord>,
    deny: &Denylist,
    settings: &DomainSettings,
) -> Decision {
    let parsed = || prepared.map(PreparedRecord::decided_target);
    let known = prepared.map(|p| (p.basics, p.extras()));
    decide_with(visit, known, parsed, deny, settings)
}

/// A record's target as a decision needs it.
enum Target<'u> {
    /// Checked when it was prepared: a URL exactly as the `url` crate writes it, and
    /// where its host is.
    Checked { text: &'u str, host: &'u str },
    /// As the origin stored it, a URL serialized by the `url` crate: its host is read off
    /// the string, and it is parsed only when a visitor's query is merged in (at the
    /// edge, parsing every target cost a visible share of a redirect's CPU).
    Stored(&'u str),
}

impl<'u> Target<'u> {
    fn text(&self) -> &'u str {
        match self {
            Target::Checked { text, .. } | Target::Stored(text) => text,
        }
    }

    /// The host, as host bans match it; `None` for a corrupt target.
    fn host(&self) -> Option<&'u str> {
        match self {
            Target::Checked { host, .. } => Some(host),
            Target::Stored(text) => VisitUrl::from_serialized(text).map(|v| v.host),
        }
    }

    /// Where to send the visitor, with their `query` merged in when there is one;
    /// `None` for a corrupt target.
    fn location(&self, query: Option<&str>) -> Option<String> {
        let Some(query) = query.filter(|q| !q.is_empty()) else {
            return Some(self.text().to_owned());
        };
        let mut merged = Url::parse(self.text()).ok()?;
        merge_query(&mut merged, Some(query));
        Some(merged.into())
    }
}

/// `private, max-age={max_age}`, borrowed for the default age (most links' every
/// visit): `format!` cost a redirect more than the rest of its headers.
fn private_max_age(max_age: i64) -> Cow<'static, str> {
    if max_age == i64::from(DEFAULT_MAX_AGE_S) {
        Cow::Borrowed(DEFAULT_CACHE_CONTROL)
    } else {
        Cow::Owned(format!("private, max-age={max_age}"))
    }
}

/// What [`private_max_age`] says for [`DEFAULT_MAX_AGE_S`] (a test checks): most
/// redirects' `Cache-Control`, which a server may hold ready-made.
pub const DEFAULT_CACHE_CONTROL: &str = "private, max-age=60";

/// The decision itself, marked unrecorded when the link asks for that.
fn decide_with<'u>(
    visit: &Visit<'_>,
    record: Option<(Basics, Option<Extras<'u>>)>,
    target: impl FnOnce() -> Option<Target<'u>>,
    deny: &Denylist,
    settings: &DomainSettings,
) -> Decision {
    let mut decision = decide_known(visit, record, target, deny, settings);
    decision.unrecorded = record.is_some_and(|(basics, _)| basics.no_clicks);
    decision
}

/// The decision; `target` gives the record's target, and is asked only once the record
/// is known to be live enough to need it. A plain link's extras are `None`: its visit
/// pays for no check of rules, splits, previews or access (they cost the origin's cached
/// redirect 5% of its instructions while they were checked on empty lists).
fn decide_known<'u>(
    visit: &Visit<'_>,
    record: Option<(Basics, Option<Extras<'u>>)>,
    target: impl FnOnce() -> Option<Target<'u>>,
    deny: &Denylist,
    settings: &DomainSettings,
) -> Decision {
    if let Some(early) = reject_early(visit.method, visit.route.code()) {
        return early;
    }
    // A disabled domain serves nothing, not even a notice that a code is banned.
    if settings.status == DomainStatus::Disabled {
        return Decision::not_found(visit.method);
    }
    if deny.blocks_code(visit.route) {
        return Decision::banned(visit.method);
    }
    let Some((record, extras)) =
        record.filter(|(_, e)| visit.method != Method::Post || e.is_some_and(|e| e.password()))
    else {
        return match visit.method {
            // Only a password link's form posts.
            Method::Post => Decision::get_or_head_only(),
            _ => Decision::no_link(visit.method, settings, deny),
        };
    };
    if record.status == EdgeStatus::Banned {
        return Decision::banned(visit.method);
    }
    // The origin stored a validated URL; one that does not parse is a corrupt copy,
    // which the next publish repairs, so it is reported as temporary.
    let Some(target) = target() else {
        return Decision::unavailable(visit.method, RETRY_AFTER_S);
    };
    let Some(host) = target.host() else {
        return Decision::unavailable(visit.method, RETRY_AFTER_S);
    };
    if deny.blocks_host(host) || extras.is_some_and(|e| e.blocked_by(deny)) {
        return Decision::banned(visit.method);
    }
    match record.status {
        EdgeStatus::Deleted => {
            return Decision::new(visit.method, Outcome::Deleted, 410, Body::Text(DELETED))
        }
        EdgeStatus::Disabled => {
            return Decision::new(visit.method, Outcome::Disabled, 404, Body::Text(DISABLED))
        }
        EdgeStatus::Active | EdgeStatus::Banned => {}
    }
    // An ended link (expired, or its visit limit reached) goes to its own page for
    // ended links, else its domain's, else 410; never to a banned host (a ban of the
    // link's own page blocked the link above).
    let own_expired_url = extras.and_then(|e| e.expired_url);
    let ended = |why: &'static str| {
        own_expired_url
            .or(settings.expired_url.as_deref())
            .and_then(|url| Decision::page(Outcome::Expired, url, deny))
            .unwrap_or_else(|| Decision::new(visit.method, Outcome::Expired, 410, Body::Text(why)))
    };
    if record.exhausted {
        return ended(EXHAUSTED);
    }
    // Nothing past here may reach a visitor a private link has not let in: no target,
    // no preview, no page naming the destination.
    let private = extras.is_some_and(|e| e.private());
    if private && !visit.access_granted {
        return match extras.is_some_and(|e| e.password()) {
            // The form; its `POST` is the adapter's to check ([`Decision::password_tried`]).
            true => Decision::password_form(visit.method, 403, visit.route, Form::First),
            false => Decision::new(visit.method, Outcome::Private, 403, Body::Text(PRIVATE)),
        };
    }
    // Posting the form again once let in: look with `GET`.
    if visit.method == Method::Post {
        return Decision::see_again(visit.route, visit.query);
    }
    let mut max_age = i64::from(settings.max_age_s);
    let now = visit.now_ms.div_euclid(1000);
    if let Some(expires_at) = record.expires_at {
        if now >= expires_at {
            return ended(EXPIRED);
        }
        max_age = max_age.min(expires_at - now);
    }
    let (target, variant) = match extras.and_then(|e| e.chosen(visit)) {
        None => (target, None),
        // Checked like the link's own: a corrupt copy is never a location.
        Some((url, _)) if Target::Stored(url).host().is_none() => {
            return Decision::unavailable(visit.method, RETRY_AFTER_S)
        }
        Some((url, variant)) => (Target::Stored(url), variant),
    };
    if let Some(ms) = extras.and_then(|e| e.next_boundary_ms(visit.now_ms)) {
        // Rounded up, so an answer is never kept past the instant it changes.
        max_age = max_age.min(ms.div_euclid(1000) + i64::from(ms.rem_euclid(1000) != 0));
    }
    let forwarded;
    let query = match visit.query.filter(|_| record.forward_query) {
        // The token opens the short link; it is no business of the destination's.
        Some(q) if private => {
            forwarded = without_token(q);
            Some(forwarded.as_str())
        }
        other => other,
    };
    let Some(location) = target.location(query) else {
        return Decision::unavailable(visit.method, RETRY_AFTER_S);
    };
    // A private link never shows a preview: a crawler has no token to open it with.
    let preview = extras
        .and_then(|e| e.preview)
        .filter(|_| !private && is_previewer(visit.client.user_agent));
    let interstitial = record.interstitial || settings.interstitial;
    let page = match preview {
        // A crawler gets the preview; behind an interstitial, without the refresh that
        // would carry past it whoever only claims to be one.
        Some(preview) => {
            let short_url = format!("https://{}/{}", visit.route.domain(), visit.route.code());
            Some(preview.page(&short_url, &location, !interstitial))
        }
        None if interstitial => Some(crate::interstitial::page(&location)),
        None => None,
    };
    let varies = extras.is_some_and(|e| !e.rules.is_empty() || e.preview.is_some());
    let vary = varies.then_some(("vary", Cow::Borrowed(VARY)));
    if let Some(page) = page {
        let mut decision = Decision::new(visit.method, Outcome::Redirect, 200, Body::Page(page));
        if let Some((name, value)) = vary {
            decision.headers.push(name, value);
        }
        decision.variant = variant;
        return decision;
    }
    // Built where it is returned: assembling it in a local and then changing it cost two
    // copies of the whole decision on every redirect (callgrind: 58 instructions of the
    // origin's cached redirect).
    Decision {
        outcome: Outcome::Redirect,
        status: record.redirect.code(),
        headers: Headers {
            set: [
                Some(("location", location.into())),
                Some(("cache-control", private_max_age(max_age))),
                vary,
                None,
            ],
        },
        body: Body::Empty,
        variant,
        unrecorded: false,
    }
}

/// What a visitor is told to wait before retrying a 503.
pub const RETRY_AFTER_S: u32 = 5;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::denylist::DenylistSnapshot;
    use crate::record::RedirectStatus;
    use crate::split::Split;

    /// Headers are held inline: a decision with more than their room would lose one.
    #[test]
    fn every_kind_of_decision_fits_its_headers() {
        let route = route();
        let expected: [(Decision, &[&str]); 8] = [
            (
                Decision::not_found(Method::Get),
                &["cache-control", "content-type"],
            ),
            (
                Decision::unavailable(Method::Get, 5),
                &["cache-control", "content-type", "retry-after"],
            ),
            (
                Decision::method_not_allowed(),
                &["cache-control", "content-type", "allow"],
            ),
            (
                Decision::banned(Method::Get),
                &["cache-control", "content-type"],
            ),
            (
                run(
                    Some(&active("https://e.example/")),
                    Method::Get,
                    None,
                    &Denylist::default(),
                ),
                &["location", "cache-control"],
            ),
            (
                Decision::password_tried(&route, None, Tried::Wrong),
                &["cache-control", "content-type", "content-security-policy"],
            ),
            (
                Decision::password_tried(&route, None, Tried::Limited(9)),
                &[
                    "cache-control",
                    "content-type",
                    "content-security-policy",
                    "retry-after",
                ],
            ),
            (
                Decision::password_tried(&route, None, Tried::Right("c".into())),
                &["location", "cache-control", "set-cookie"],
            ),
        ];
        for (decision, names) in expected {
            let held: Vec<&str> = decision.headers.iter().map(|(n, _)| n).collect();
            assert_eq!(held, names, "{decision:?}");
            assert!(decision.headers.len() <= Headers::ROOM);
        }
    }

    /// Metrics count outcomes in an array indexed by the discriminant.
    #[test]
    fn every_outcome_is_listed_once_in_its_place_with_its_own_name() {
        let mut names = std::collections::HashSet::new();
        for (i, outcome) in Outcome::ALL.iter().enumerate() {
            assert_eq!(*outcome as usize, i, "{outcome:?}");
            assert!(names.insert(outcome.name()), "{outcome:?}");
        }
    }

    #[test]
    fn the_default_cache_header_is_the_one_its_age_gives() {
        assert_eq!(
            private_max_age(i64::from(DEFAULT_MAX_AGE_S)),
            format!("private, max-age={DEFAULT_MAX_AGE_S}")
        );
        assert_eq!(private_max_age(7), "private, max-age=7");
    }

    const NOW: i64 = 1_800_000_000;

    fn route() -> RouteKey {
        RouteKey::new("s.example", "7Fk3aQx").unwrap()
    }

    fn active(target: &str) -> EdgeRecord {
        EdgeRecord {
            target: target.into(),
            status: EdgeStatus::Active,
            redirect: RedirectStatus::Found,
            expires_at: None,
            version: 1,
            forward_query: false,
            ..EdgeRecord::default()
        }
    }

    fn visit<'a>(route: &'a RouteKey, method: Method, query: Option<&'a str>) -> Visit<'a> {
        Visit {
            method,
            route,
            query,
            now_ms: NOW * 1000,
            client: Client::default(),
            draw: 0,
            access_granted: false,
        }
    }

    fn run(
        record: Option<&EdgeRecord>,
        method: Method,
        query: Option<&str>,
        deny: &Denylist,
    ) -> Decision {
        run_on(record, method, query, deny, &DomainSettings::default())
    }

    /// [`run`] on a domain with `settings`.
    fn run_on(
        record: Option<&EdgeRecord>,
        method: Method,
        query: Option<&str>,
        deny: &Denylist,
        settings: &DomainSettings,
    ) -> Decision {
        let route = route();
        let visit = visit(&route, method, query);
        let decided = decide(&visit, record, deny, settings);
        // Every row of the table holds for a record parsed ahead of time too.
        let prepared = record.cloned().map(PreparedRecord::new);
        assert_eq!(
            decide_prepared(&visit, prepared.as_ref(), deny, settings),
            decided
        );
        decided
    }

    fn with_pages() -> DomainSettings {
        DomainSettings {
            not_found_url: Some("https://www.acme.example/missing".into()),
            root_url: Some("https://www.acme.example/".into()),
            expired_url: Some("https://www.acme.example/ended".into()),
            ..DomainSettings::default()
        }
    }

    #[test]
    fn a_domain_sends_unknown_codes_its_root_and_expired_links_to_its_own_pages() {
        let pages = with_pages();
        let none = Denylist::default();
        let d = run_on(None, Method::Get, Some("a=1"), &none, &pages);
        assert_eq!((d.status, d.outcome), (302, Outcome::NotFound));
        assert_eq!(
            d.header("location"),
            Some("https://www.acme.example/missing")
        );
        assert_eq!(d.header("cache-control"), Some("no-store"));
        let expired = EdgeRecord {
            expires_at: Some(NOW - 1),
            ..active("https://dest.example/")
        };
        let d = run_on(Some(&expired), Method::Get, None, &none, &pages);
        assert_eq!((d.status, d.outcome), (302, Outcome::Expired));
        assert_eq!(d.header("location"), Some("https://www.acme.example/ended"));
        // A deleted link is gone, not expired; a banned code is blocked, not unknown.
        let deleted = EdgeRecord {
            status: EdgeStatus::Deleted,
            ..active("https://dest.example/")
        };
        assert_eq!(
            run_on(Some(&deleted), Method::Get, None, &none, &pages).status,
            410
        );
        let banned = deny(&["s.example/7Fk3aQx"], &[]);
        assert_eq!(run_on(None, Method::Get, None, &banned, &pages).status, 403);
        // A path that cannot be a code is a plain 404, decided before any settings.
        let route = RouteKey::new("s.example", "robots.txt").unwrap();
        let d = decide(&visit(&route, Method::Get, None), None, &none, &pages);
        assert_eq!(d.status, 404);

        let root = decide_root(Method::Get, Some((&pages, &none)));
        assert_eq!(
            (root.status, root.header("location")),
            (302, Some("https://www.acme.example/"))
        );
        assert_eq!(root.header("cache-control"), Some("no-store"));
        assert_eq!(
            decide_root(Method::Head, Some((&DomainSettings::default(), &none))).status,
            404
        );
        assert_eq!(decide_root(Method::Get, None).status, 404);
        assert_eq!(
            decide_root(Method::Other, Some((&pages, &none))).status,
            405
        );
    }

    /// No visitor is sent to a banned host by way of a page: the domain's pages for an
    /// unknown code, `/` and an ended link answer as if there were none, and a link
    /// whose own page for when it has ended, or whose preview's image, is on a banned
    /// host is blocked (the origin marks it banned too).
    #[test]
    fn no_page_sends_a_visitor_to_a_banned_host() {
        let pages = with_pages();
        let banned = deny(&[], &["acme.example"]);
        let d = run_on(None, Method::Get, None, &banned, &pages);
        assert_eq!((d.status, d.header("location")), (404, None));
        let root = decide_root(Method::Get, Some((&pages, &banned)));
        assert_eq!((root.status, root.header("location")), (404, None));
        let expired = EdgeRecord {
            expires_at: Some(NOW - 1),
            ..active("https://dest.example/")
        };
        let d = run_on(Some(&expired), Method::Get, None, &banned, &pages);
        assert_eq!(
            (d.status, d.outcome, d.header("location")),
            (410, Outcome::Expired, None)
        );
        let exhausted = EdgeRecord {
            exhausted: true,
            ..active("https://dest.example/")
        };
        let d = run_on(Some(&exhausted), Method::Get, None, &banned, &pages);
        assert_eq!((d.status, d.header("location")), (410, None));

        let own_page = EdgeRecord {
            expired_url: Some("https://ended.evil.example/".into()),
            ..active("https://dest.example/")
        };
        let image = EdgeRecord {
            preview: Some(crate::preview::Preview {
                title: Some("t".into()),
                description: None,
                image_url: Some("https://img.evil.example/a.png".into()),
            }),
            ..active("https://dest.example/")
        };
        let evil = deny(&[], &["evil.example"]);
        for record in [own_page, image] {
            let live = run_on(Some(&record), Method::Get, None, &evil, &pages);
            assert_eq!(
                (live.status, live.header("location")),
                (403, None),
                "{record:?}"
            );
            let ended = EdgeRecord {
                expires_at: Some(NOW - 1),
                ..record.clone()
            };
            let d = run_on(Some(&ended), Method::Get, None, &evil, &pages);
            assert_eq!((d.status, d.header("location")), (403, None), "{record:?}");
            // Unbanned, the same link redirects as before.
            let free = run_on(
                Some(&record),
                Method::Get,
                None,
                &Denylist::default(),
                &pages,
            );
            assert_eq!(free.status, 302, "{record:?}");
        }
    }

    #[test]
    fn a_disabled_domain_answers_404_to_everything() {
        let off = DomainSettings {
            status: DomainStatus::Disabled,
            ..with_pages()
        };
        let none = Denylist::default();
        let link = active("https://dest.example/");
        for (record, deny) in [
            (Some(&link), &none),
            (None, &none),
            (Some(&link), &deny(&["s.example/7Fk3aQx"], &[])),
        ] {
            let d = run_on(record, Method::Get, None, deny, &off);
            assert_eq!(
                (d.status, d.outcome),
                (404, Outcome::NotFound),
                "{record:?}"
            );
            assert_eq!(d.header("location"), None);
        }
        assert_eq!(decide_root(Method::Get, Some((&off, &none))).status, 404);
    }

    fn deny(codes: &[&str], hosts: &[&str]) -> Denylist {
        Denylist::from(DenylistSnapshot {
            v: 1,
            codes: codes.iter().map(|s| s.to_string()).collect(),
            hosts: hosts.iter().map(|s| s.to_string()).collect(),
        })
    }

    #[test]
    fn a_corrupt_target_is_never_a_location_either_way() {
        // Found by fuzzing: the origin's prepared path parsed any scheme and redirected
        // where the edge refused. `run` checks both paths decide alike.
        for target in [
            "javascript:alert(1)",
            "httzs://e.example/a",
            "data:text/html,x",
        ] {
            let d = run(
                Some(&active(target)),
                Method::Get,
                None,
                &Denylist::default(),
            );
            assert_eq!(d.header("location"), None, "{target}");
            assert!(!(300..400).contains(&d.status), "{target}: {}", d.status);
        }
    }

    #[test]
    fn active_link_redirects_with_its_status_and_a_private_max_age() {
        let d = run(
            Some(&active("https://dest.example/x")),
            Method::Get,
            None,
            &Denylist::default(),
        );
        assert_eq!((d.status, d.outcome), (302, Outcome::Redirect));
        assert_eq!(d.header("location"), Some("https://dest.example/x"));
        assert_eq!(d.header("cache-control"), Some("private, max-age=60"));
        assert_eq!(d.body, Body::Empty);

        for code in [301, 307, 308] {
            let rec = EdgeRecord {
                redirect: RedirectStatus::try_from(code).unwrap(),
                ..active("https://dest.example/")
            };
            assert_eq!(
                run(Some(&rec), Method::Head, None, &Denylist::default()).status,
                code
            );
        }
    }

    #[test]
    fn max_age_never_outlives_the_link() {
        let rec = EdgeRecord {
            expires_at: Some(NOW + 40),
            ..active("https://dest.example/")
        };
        let d = run(Some(&rec), Method::Get, None, &Denylist::default());
        assert_eq!(d.header("cache-control"), Some("private, max-age=40"));
        let settings = DomainSettings {
            max_age_s: 30,
            ..DomainSettings::default()
        };
        let route = route();
        let d = decide(
            &visit(&route, Method::Get, None),
            Some(&rec),
            &Denylist::default(),
            &settings,
        );
        assert_eq!(d.header("cache-control"), Some("private, max-age=30"));
    }

    #[test]
    fn expired_and_deleted_links_are_gone() {
        let expired = EdgeRecord {
            expires_at: Some(NOW),
            ..active("https://dest.example/")
        };
        let d = run(Some(&expired), Method::Get, None, &Denylist::default());
        assert_eq!((d.status, d.outcome), (410, Outcome::Expired));
        assert_eq!(d.header("cache-control"), Some("no-store"));
        assert_eq!(d.header("location"), None);

        let deleted = EdgeRecord {
            status: EdgeStatus::Deleted,
            ..active("https://dest.example/")
        };
        let d = run(Some(&deleted), Method::Get, None, &Denylist::default());
        assert_eq!((d.status, d.outcome), (410, Outcome::Deleted));
    }

    #[test]
    fn disabled_and_unknown_links_are_not_found() {
        let disabled = EdgeRecord {
            status: EdgeStatus::Disabled,
            ..active("https://dest.example/")
        };
        let d = run(Some(&disabled), Method::Get, None, &Denylist::default());
        assert_eq!((d.status, d.outcome), (404, Outcome::Disabled));
        assert_eq!(d.header("cache-control"), Some("no-store"));
        let d = run(None, Method::Get, None, &Denylist::default());
        assert_eq!((d.status, d.outcome), (404, Outcome::NotFound));
        assert_eq!(d.body, Body::Text(NOT_FOUND));
    }

    #[test]
    fn bans_block_without_a_location_whatever_the_record_says() {
        let rec = active("https://www.evil.example/login");
        for (record, deny) in [
            (Some(&rec), deny(&["s.example/7Fk3aQx"], &[])),
            (None, deny(&["s.example/7Fk3aQx"], &[])),
            (Some(&rec), deny(&[], &["evil.example"])),
            (
                Some(&EdgeRecord {
                    status: EdgeStatus::Banned,
                    ..active("https://fine.example/")
                }),
                Denylist::default(),
            ),
            (
                Some(&EdgeRecord {
                    status: EdgeStatus::Deleted,
                    ..rec.clone()
                }),
                deny(&[], &["evil.example"]),
            ),
        ] {
            let d = run(record, Method::Get, None, &deny);
            assert_eq!((d.status, d.outcome), (403, Outcome::Banned), "{record:?}");
            assert_eq!(d.header("location"), None);
            assert_eq!(d.header("cache-control"), Some("no-store"));
            assert_eq!(d.header("content-type"), Some("text/html; charset=utf-8"));
            assert!(matches!(d.body, Body::Html(html) if html.contains("blocked")));
        }
        // A ban of another code or an unrelated host changes nothing.
        let d = run(
            Some(&rec),
            Method::Get,
            None,
            &deny(&["s.example/other12"], &["notevil.example"]),
        );
        assert_eq!(d.status, 302);
    }

    #[test]
    fn head_gets_the_same_status_and_headers_without_a_body() {
        let rec = EdgeRecord {
            status: EdgeStatus::Deleted,
            ..active("https://dest.example/")
        };
        let get = run(Some(&rec), Method::Get, None, &Denylist::default());
        let head = run(Some(&rec), Method::Head, None, &Denylist::default());
        assert_eq!((head.status, &head.headers), (get.status, &get.headers));
        assert_eq!(head.body, Body::Empty);
        assert_ne!(get.body, Body::Empty);
    }

    #[test]
    fn other_methods_are_not_allowed() {
        for method in ["POST", "PUT", "DELETE", "OPTIONS", "get"] {
            let d = run(
                Some(&active("https://dest.example/")),
                Method::parse(method),
                None,
                &Denylist::default(),
            );
            assert_eq!(d.status, 405, "{method}");
            // A code's URL takes a POST only for a password link's form.
            let allow = match method {
                "POST" => "GET, HEAD",
                _ => "GET, HEAD, POST",
            };
            assert_eq!(d.header("allow"), Some(allow), "{method}");
        }
    }

    #[test]
    fn paths_that_cannot_be_codes_are_404_before_any_lookup() {
        for bad in ["", "robots.txt", "a/b", "x%20y", "_hop", "-abc", "é"] {
            let d = reject_early(Method::Get, bad).expect(bad);
            assert_eq!(d.status, 404, "{bad:?}");
        }
        assert_eq!(reject_early(Method::Get, "7Fk3aQx"), None);
        assert_eq!(
            reject_early(Method::Other, "7Fk3aQx").map(|d| d.status),
            Some(405)
        );
    }

    #[test]
    fn query_is_forwarded_only_when_the_link_says_so() {
        let plain = active("https://dest.example/p?a=1#f");
        let d = run(
            Some(&plain),
            Method::Get,
            Some("a=2&b=3"),
            &Denylist::default(),
        );
        assert_eq!(d.header("location"), Some("https://dest.example/p?a=1#f"));
        let fwd = EdgeRecord {
            forward_query: true,
            ..plain
        };
        let d = run(
            Some(&fwd),
            Method::Get,
            Some("a=2&b=3"),
            &Denylist::default(),
        );
        assert_eq!(
            d.header("location"),
            Some("https://dest.example/p?a=1&b=3#f")
        );
    }

    #[test]
    fn a_corrupt_record_is_temporary_trouble_not_a_404() {
        let d = run(
            Some(&active("not a url")),
            Method::Get,
            None,
            &Denylist::default(),
        );
        assert_eq!(d.status, 503);
        assert_eq!(d.header("retry-after"), Some("5"));
    }

    const IPHONE: &str = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1";
    const DESKTOP: &str = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Safari/537.36";
    const SLACKBOT: &str = "Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)";

    fn rule(when: &str, target: &str) -> Rule {
        Rule {
            when: serde_json::from_str(when).unwrap(),
            target_url: target.into(),
        }
    }

    /// A link with rules for iOS, German speakers and `?ref=tv`, in that order.
    fn targeted() -> EdgeRecord {
        EdgeRecord {
            rules: vec![
                rule(r#"{"device":["ios"]}"#, "https://apps.example/ios"),
                rule(r#"{"language":["de"]}"#, "https://shop.example/de"),
                rule(
                    r#"{"query":[{"name":"ref","equals":"tv"}]}"#,
                    "https://shop.example/tv",
                ),
            ],
            ..active("https://shop.example/")
        }
    }

    /// Decides `record` for a visit with `client`, `query` and `draw`, both ways (the
    /// stored and the prepared record must agree).
    fn run_as(
        record: &EdgeRecord,
        client: Client<'_>,
        query: Option<&str>,
        draw: u32,
        deny: &Denylist,
    ) -> Decision {
        let route = route();
        let visit = Visit {
            client,
            draw,
            ..visit(&route, Method::Get, query)
        };
        let settings = DomainSettings::default();
        let decided = decide(&visit, Some(record), deny, &settings);
        let prepared = PreparedRecord::new(record.clone());
        assert_eq!(prepared.to_record(), *record);
        assert_eq!(
            decide_prepared(&visit, Some(&prepared), deny, &settings),
            decided
        );
        decided
    }

    fn ua(user_agent: &str) -> Client<'_> {
        Client {
            user_agent,
            ..Client::default()
        }
    }

    #[test]
    fn the_first_rule_that_holds_picks_the_target_else_the_link_s_own() {
        let rec = targeted();
        let none = Denylist::default();
        let to = |client, query| {
            let d = run_as(&rec, client, query, 0, &none);
            assert_eq!(d.status, 302);
            d.header("location").map(str::to_owned)
        };
        assert_eq!(
            to(ua(IPHONE), None).as_deref(),
            Some("https://apps.example/ios")
        );
        let german = Client {
            user_agent: DESKTOP,
            accept_language: "de-CH,de;q=0.9,en;q=0.8",
            country: None,
        };
        assert_eq!(to(german, None).as_deref(), Some("https://shop.example/de"));
        // An iPhone in German still gets the first rule.
        let german_iphone = Client {
            user_agent: IPHONE,
            ..german
        };
        assert_eq!(
            to(german_iphone, None).as_deref(),
            Some("https://apps.example/ios")
        );
        assert_eq!(
            to(ua(DESKTOP), Some("ref=tv")).as_deref(),
            Some("https://shop.example/tv")
        );
        assert_eq!(
            to(ua(DESKTOP), Some("ref=radio")).as_deref(),
            Some("https://shop.example/")
        );
        assert_eq!(
            to(Client::default(), None).as_deref(),
            Some("https://shop.example/")
        );
        // The answer depends on the request's headers: caches are told.
        let d = run_as(&rec, ua(DESKTOP), None, 0, &none);
        assert_eq!(d.header("vary"), Some(VARY));
        assert_eq!(d.variant, None);
    }

    #[test]
    fn the_winning_target_gets_the_visitor_s_query_when_the_link_forwards_it() {
        let rec = EdgeRecord {
            forward_query: true,
            ..targeted()
        };
        let d = run_as(
            &rec,
            ua(IPHONE),
            Some("utm_source=x"),
            0,
            &Denylist::default(),
        );
        assert_eq!(
            d.header("location"),
            Some("https://apps.example/ios?utm_source=x")
        );
    }

    #[test]
    fn a_ban_of_any_target_s_host_blocks_every_visit_of_the_link() {
        let split_to_banned = EdgeRecord {
            split: Some(split(&[50, 50])),
            ..active("https://shop.example/")
        };
        for (rec, banned) in [
            (targeted(), "apps.example"),
            (split_to_banned, "v1.example"),
        ] {
            let deny = deny(&[], &[banned]);
            for client in [ua(IPHONE), ua(DESKTOP), Client::default()] {
                for draw in [0, 50] {
                    let d = run_as(&rec, client, None, draw, &deny);
                    assert_eq!((d.status, d.outcome), (403, Outcome::Banned), "{banned}");
                    assert_eq!(d.header("location"), None);
                }
            }
        }
        // Unrelated hosts change nothing.
        let d = run_as(
            &targeted(),
            ua(IPHONE),
            None,
            0,
            &deny(&[], &["other.example"]),
        );
        assert_eq!(d.header("location"), Some("https://apps.example/ios"));
        // A corrupt rule target is never a location.
        let rec = EdgeRecord {
            rules: vec![rule(r#"{"device":["ios"]}"#, "javascript:alert(1)")],
            ..active("https://shop.example/")
        };
        let d = run_as(&rec, ua(IPHONE), None, 0, &Denylist::default());
        assert_eq!((d.status, d.header("location")), (503, None));
    }

    #[test]
    fn no_cache_keeps_an_answer_past_a_rule_s_start_or_end() {
        let rec = EdgeRecord {
            rules: vec![rule(
                &format!(r#"{{"after":{}}}"#, NOW * 1000 + 12_500),
                "https://shop.example/launch",
            )],
            ..active("https://shop.example/")
        };
        let d = run_as(&rec, Client::default(), None, 0, &Denylist::default());
        assert_eq!(d.header("location"), Some("https://shop.example/"));
        assert_eq!(d.header("cache-control"), Some("private, max-age=13"));
    }

    fn split(weights: &[u32]) -> Split {
        Split::try_from(
            weights
                .iter()
                .enumerate()
                .map(|(i, w)| crate::split::Variant {
                    target_url: format!("https://v{i}.example/"),
                    weight: *w,
                })
                .collect::<Vec<_>>(),
        )
        .unwrap()
    }

    #[test]
    fn a_split_sends_each_draw_to_its_variant_and_says_which() {
        let rec = EdgeRecord {
            split: Some(split(&[30, 70])),
            ..active("https://shop.example/")
        };
        let none = Denylist::default();
        for (draw, variant) in [(0, 0), (29, 0), (30, 1), (99, 1), (100, 0), (130, 1)] {
            let d = run_as(&rec, Client::default(), None, draw, &none);
            let expected = format!("https://v{variant}.example/");
            assert_eq!(d.header("location"), Some(expected.as_str()), "{draw}");
            assert_eq!(d.variant, Some(variant), "{draw}");
        }
        // A rule that holds wins over the split, and no variant is reported.
        let both = EdgeRecord {
            rules: targeted().rules,
            ..rec
        };
        let d = run_as(&both, ua(IPHONE), None, 30, &none);
        assert_eq!(
            (d.header("location"), d.variant),
            (Some("https://apps.example/ios"), None)
        );
        let d = run_as(&both, ua(DESKTOP), None, 30, &none);
        assert_eq!(d.variant, Some(1));
    }

    #[test]
    fn a_previewer_gets_the_preview_page_and_a_browser_the_redirect() {
        let rec = EdgeRecord {
            preview: Some(Preview {
                title: Some("Spring sale".into()),
                ..Preview::default()
            }),
            ..active("https://shop.example/spring")
        };
        let none = Denylist::default();
        let d = run_as(&rec, ua(SLACKBOT), None, 0, &none);
        assert_eq!((d.status, d.outcome), (200, Outcome::Redirect));
        assert_eq!(d.header("content-type"), Some("text/html; charset=utf-8"));
        let page = d.body.text().unwrap();
        assert!(
            page.contains(r#"<meta property="og:title" content="Spring sale">"#),
            "{page}"
        );
        assert!(page.contains(r#"<meta property="og:url" content="https://s.example/7Fk3aQx">"#));
        assert!(page.contains("url=https://shop.example/spring"));
        assert_eq!(d.header("vary"), Some(VARY));
        let d = run_as(&rec, ua(IPHONE), None, 0, &none);
        assert_eq!(
            (d.status, d.header("location")),
            (302, Some("https://shop.example/spring"))
        );
        // A link without a preview redirects previewers like anyone.
        let d = run_as(
            &active("https://shop.example/"),
            ua(SLACKBOT),
            None,
            0,
            &none,
        );
        assert_eq!(d.status, 302);
    }

    #[test]
    fn an_interstitial_link_shows_where_it_goes_instead_of_redirecting() {
        let rec = EdgeRecord {
            interstitial: true,
            ..active("https://xn--bcher-kva.example/x")
        };
        let d = run_as(&rec, ua(DESKTOP), None, 0, &Denylist::default());
        assert_eq!((d.status, d.header("location")), (200, None));
        let page = d.body.text().unwrap();
        assert!(page.contains("bücher.example"), "{page}");
        assert!(page.contains(r#"href="https://xn--bcher-kva.example/x""#));
        // A banned target is blocked before any page names it.
        let d = run_as(
            &rec,
            ua(DESKTOP),
            None,
            0,
            &deny(&[], &["xn--bcher-kva.example"]),
        );
        assert_eq!(d.status, 403);
    }

    #[test]
    fn a_domain_of_untrusted_targets_shows_every_link_s_interstitial() {
        let warned = DomainSettings {
            interstitial: true,
            ..DomainSettings::default()
        };
        let rec = active("https://shop.example/x");
        let d = run_on(Some(&rec), Method::Get, None, &Denylist::default(), &warned);
        assert_eq!((d.status, d.header("location")), (200, None));
        assert!(d.body.text().unwrap_or_default().contains("shop.example"));
        // The setting travels in the domain's config, and an edge that predates it
        // reads the config all the same.
        let json = serde_json::to_string(&warned).unwrap();
        assert!(json.contains(r#""interstitial":true"#), "{json}");
        assert!(!serde_json::to_string(&DomainSettings::default())
            .unwrap()
            .contains("interstitial"));
    }

    /// On a domain of untrusted targets, a preview never carries a visitor past the
    /// interstitial: people (in-app browsers of LINE and Snapchat among them) get the
    /// interstitial, and a known crawler gets the preview's tags without the refresh to
    /// the target (one that only claims to be a crawler gets no way past either).
    #[test]
    fn a_domain_s_interstitial_wins_over_a_preview_for_anyone_but_a_crawler() {
        let warned = DomainSettings {
            interstitial: true,
            ..DomainSettings::default()
        };
        let rec = EdgeRecord {
            preview: Some(Preview {
                title: Some("Spring sale".into()),
                ..Preview::default()
            }),
            ..active("https://shop.example/x")
        };
        let route = route();
        let decide_for = |agent: &str| {
            let visit = Visit {
                client: ua(agent),
                ..visit(&route, Method::Get, None)
            };
            decide(&visit, Some(&rec), &Denylist::default(), &warned)
        };
        for person in [
            IPHONE,
            "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148 Safari Line/13.17.0",
            "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/120.0 Mobile Safari/537.36 Snapchat/12.70.0.40 (like Safari/604.1)",
        ] {
            let d = decide_for(person);
            let page = d.body.text().unwrap_or_default().to_owned();
            assert_eq!((d.status, d.header("location")), (200, None), "{person}");
            assert!(!page.contains("og:title"), "{person}: the preview, not the interstitial");
            assert!(!page.contains("http-equiv=\"refresh\""), "{person}: {page}");
        }
        let d = decide_for(SLACKBOT);
        let page = d.body.text().unwrap_or_default();
        assert!(page.contains(r#"content="Spring sale""#), "{page}");
        assert!(!page.contains("http-equiv=\"refresh\""), "{page}");
        // Without the interstitial, the crawler's page still refreshes to the target.
        let plain = run_as(&rec, ua(SLACKBOT), None, 0, &Denylist::default());
        assert!(plain
            .body
            .text()
            .unwrap_or_default()
            .contains("url=https://shop.example/x"));
    }

    #[test]
    fn an_expired_link_goes_to_its_own_page_before_its_domain_s() {
        let rec = EdgeRecord {
            expires_at: Some(NOW - 1),
            expired_url: Some("https://shop.example/ended".into()),
            ..active("https://shop.example/")
        };
        let none = Denylist::default();
        for settings in [DomainSettings::default(), with_pages()] {
            let d = run_on(Some(&rec), Method::Get, None, &none, &settings);
            assert_eq!(
                (d.status, d.outcome, d.header("location")),
                (302, Outcome::Expired, Some("https://shop.example/ended"))
            );
        }
    }

    #[test]
    fn a_link_past_its_visit_limit_has_ended_like_an_expired_one() {
        let rec = EdgeRecord {
            exhausted: true,
            ..active("https://shop.example/")
        };
        let none = Denylist::default();
        let d = run(Some(&rec), Method::Get, None, &none);
        assert_eq!((d.status, d.outcome), (410, Outcome::Expired));
        assert_eq!(d.body, Body::Text(EXHAUSTED));
        assert_eq!(d.header("location"), None);
        let with_page = EdgeRecord {
            expired_url: Some("https://shop.example/sold-out".into()),
            ..rec.clone()
        };
        let d = run(Some(&with_page), Method::Get, None, &none);
        assert_eq!(
            (d.status, d.header("location")),
            (302, Some("https://shop.example/sold-out"))
        );
        let d = run_on(Some(&rec), Method::Get, None, &none, &with_pages());
        assert_eq!(d.header("location"), Some("https://www.acme.example/ended"));
        // A ban still comes first.
        let d = run(Some(&rec), Method::Get, None, &deny(&[], &["shop.example"]));
        assert_eq!(d.status, 403);
    }

    fn private(target: &str) -> EdgeRecord {
        EdgeRecord {
            access: Some(Access::Signed { key: "k".into() }),
            forward_query: true,
            preview: Some(Preview {
                title: Some("Secret".into()),
                ..Preview::default()
            }),
            interstitial: false,
            ..active(target)
        }
    }

    /// Decides `record` for a `GET` with `query`, as `client`, the access as given.
    fn run_private(
        record: &EdgeRecord,
        query: Option<&str>,
        client: Client<'_>,
        granted: bool,
    ) -> Decision {
        let route = route();
        let visit = Visit {
            client,
            access_granted: granted,
            ..visit(&route, Method::Get, query)
        };
        let settings = DomainSettings::default();
        let decided = decide(&visit, Some(record), &Denylist::default(), &settings);
        let prepared = PreparedRecord::new(record.clone());
        assert_eq!(
            decide_prepared(&visit, Some(&prepared), &Denylist::default(), &settings),
            decided
        );
        decided
    }

    #[test]
    fn a_private_link_shows_nothing_of_its_target_until_let_in() {
        let rec = private("https://secret.example/plans?x=1");
        for client in [ua(DESKTOP), ua(SLACKBOT), Client::default()] {
            let d = run_private(&rec, Some("t=1.abc"), client, false);
            assert_eq!((d.status, d.outcome), (403, Outcome::Private));
            assert_eq!(d.header("location"), None);
            let body = d.body.text().unwrap_or_default();
            assert!(!body.contains("secret.example"), "{body}");
            assert!(!body.contains("og:"), "{body}");
        }
        // Let in: the target, with the visitor's query but not the token.
        let d = run_private(&rec, Some("a=1&t=1800000100.abc&b=2"), ua(DESKTOP), true);
        assert_eq!(d.status, 302);
        assert_eq!(
            d.header("location"),
            Some("https://secret.example/plans?x=1&a=1&b=2")
        );
        // Even let in, a crawler gets no preview of a private link.
        let d = run_private(&rec, None, ua(SLACKBOT), true);
        assert_eq!(d.status, 302);
        // A refused visit is not a click (it would use up a visit limit).
        let refused = run_private(&rec, None, ua(DESKTOP), false);
        assert!(!crate::clicks::counts_as_click(
            Method::Get,
            refused.outcome
        ));
        // A public link ignores what the caller says of access.
        let d = run_private(&active("https://e.example/"), None, ua(DESKTOP), false);
        assert_eq!(d.status, 302);
        // Bans and ends still come first.
        let gone = EdgeRecord {
            status: EdgeStatus::Deleted,
            ..rec.clone()
        };
        assert_eq!(run_private(&gone, None, ua(DESKTOP), false).status, 410);
    }

    fn password_link(target: &str) -> EdgeRecord {
        EdgeRecord {
            access: Some(Access::Password {
                salt: "00".into(),
                hash: "00".into(),
                iterations: 1,
                key: "00".into(),
            }),
            ..private(target)
        }
    }

    #[test]
    fn a_password_link_shows_its_form_and_takes_posts_only_to_it() {
        let rec = password_link("https://secret.example/plans");
        let route = route();
        let at = |method, granted| {
            let v = Visit {
                access_granted: granted,
                ..visit(&route, method, Some("a=1"))
            };
            let settings = DomainSettings::default();
            let d = decide(&v, Some(&rec), &Denylist::default(), &settings);
            let prepared = PreparedRecord::new(rec.clone());
            assert_eq!(
                decide_prepared(&v, Some(&prepared), &Denylist::default(), &settings),
                d
            );
            d
        };
        for method in [Method::Get, Method::Post] {
            let d = at(method, false);
            assert_eq!((d.status, d.outcome), (403, Outcome::Private));
            let form = crate::password::form(&route, Form::First);
            assert_eq!(d.body, Body::Page(form));
            assert_eq!(
                d.header("content-security-policy"),
                Some(crate::password::FORM_POLICY)
            );
            assert_eq!(d.header("location"), None);
            assert_eq!(
                d.asks_password(method, rec.access.as_ref()),
                method == Method::Post
            );
        }
        assert_eq!(at(Method::Head, false).body, Body::Empty);
        // Let in by the cookie: a `GET` goes on, a `POST` is sent to look again.
        let d = at(Method::Get, true);
        assert_eq!(
            d.header("location"),
            Some("https://secret.example/plans?a=1")
        );
        let d = at(Method::Post, true);
        assert_eq!(
            (d.status, d.header("location")),
            (303, Some("/7Fk3aQx?a=1"))
        );
        assert!(!d.asks_password(Method::Post, rec.access.as_ref()));
        // A `POST` to any other link, or to no link, is 405 as before.
        for record in [
            Some(active("https://e.example/")),
            Some(private("https://e.example/")),
            None,
        ] {
            let d = run(record.as_ref(), Method::Post, None, &Denylist::default());
            assert_eq!(d.status, 405, "{record:?}");
        }
        assert_eq!(reject_early(Method::Post, "7Fk3aQx"), None);
        assert_eq!(
            decide_root(
                Method::Post,
                Some((&DomainSettings::default(), &Denylist::default()))
            )
            .status,
            405
        );
        // Gone or banned, the form is not shown, nor a password taken.
        let gone = EdgeRecord {
            status: EdgeStatus::Deleted,
            ..rec.clone()
        };
        let d = run(Some(&gone), Method::Post, None, &Denylist::default());
        assert_eq!(d.status, 410);
        assert!(!d.asks_password(Method::Post, gone.access.as_ref()));
    }

    #[test]
    fn the_answer_to_a_posted_password_never_names_the_target() {
        let route = route();
        let right =
            Decision::password_tried(&route, Some("a=1"), Tried::Right("hop_pass=x".into()));
        assert_eq!(right.status, 303);
        assert_eq!(right.header("location"), Some("/7Fk3aQx?a=1"));
        assert_eq!(right.header("set-cookie"), Some("hop_pass=x"));
        assert_eq!(right.header("cache-control"), Some("no-store"));
        let wrong = Decision::password_tried(&route, None, Tried::Wrong);
        assert_eq!(
            (wrong.status, wrong.body.clone()),
            (403, Body::Page(crate::password::form(&route, Form::Wrong)))
        );
        let limited = Decision::password_tried(&route, None, Tried::Limited(7));
        assert_eq!(
            (limited.status, limited.header("retry-after")),
            (429, Some("7"))
        );
        assert_eq!(
            Decision::password_tried(&route, None, Tried::Missing).status,
            400
        );
        for d in [right, wrong, limited] {
            assert!(!crate::clicks::counts_as_click(Method::Post, d.outcome));
            assert_eq!(d.outcome, Outcome::Private);
        }
    }

    #[test]
    fn a_link_that_asks_not_to_be_recorded_says_so_on_every_answer() {
        let rec = EdgeRecord {
            no_clicks: true,
            ..active("https://shop.example/")
        };
        let none = Denylist::default();
        assert!(run(Some(&rec), Method::Get, None, &none).unrecorded);
        assert!(
            !run(
                Some(&active("https://shop.example/")),
                Method::Get,
                None,
                &none
            )
            .unrecorded
        );
        let gone = EdgeRecord {
            status: EdgeStatus::Deleted,
            ..rec
        };
        assert!(run(Some(&gone), Method::Get, None, &none).unrecorded);
    }

    proptest::proptest! {
        /// A link without rules, split, preview or interstitial decides exactly as
        /// before they existed: nothing of the visitor's headers or draw matters.
        #[test]
        fn a_plain_link_ignores_the_client_and_the_draw(
            user_agent in ".{0,80}",
            accept_language in ".{0,40}",
            country in proptest::option::of("[A-Z]{2}"),
            draw in proptest::num::u32::ANY,
            query in proptest::option::of("[a-z0-9=&]{0,10}"),
            forward_query in proptest::bool::ANY,
        ) {
            let rec = EdgeRecord { forward_query, ..active("https://shop.example/p?a=1") };
            let client = Client { user_agent: &user_agent, accept_language: &accept_language, country: country.as_deref() };
            let with = run_as(&rec, client, query.as_deref(), draw, &Denylist::default());
            let without = run_as(&rec, Client::default(), query.as_deref(), 0, &Denylist::default());
            proptest::prop_assert_eq!(with, without);
        }

        /// Whatever the visit, the location is the link's own target, a rule's or a
        /// variant's (with the query merged as the link says): never anything else.
        #[test]
        fn the_location_is_always_one_of_the_link_s_targets(
            ios in proptest::bool::ANY,
            lang in proptest::sample::select(vec!["", "de-CH,de;q=0.9", "fr", "en-US"]),
            query in proptest::option::of(proptest::sample::select(vec!["ref=tv", "ref=x", "a=1"])),
            draw in proptest::num::u32::ANY,
            with_split in proptest::bool::ANY,
            forward_query in proptest::bool::ANY,
        ) {
            let rec = EdgeRecord {
                forward_query,
                split: with_split.then(|| split(&[50, 25, 25])),
                ..targeted()
            };
            let client = Client { user_agent: if ios { IPHONE } else { DESKTOP }, accept_language: lang, country: None };
            let d = run_as(&rec, client, query, draw, &Denylist::default());
            let location = d.header("location").unwrap_or_default();
            let mut targets: Vec<String> = rec.rules.iter().map(|r| r.target_url.clone()).collect();
            targets.push(rec.target.clone());
            targets.extend(rec.split.iter().flat_map(|s| s.variants().iter().map(|v| v.target_url.clone())));
            let base = location.split('?').next().unwrap_or_default();
            proptest::prop_assert!(targets.iter().any(|t| t.split('?').next() == Some(base)), "{}", location);
            proptest::prop_assert!(crate::target::validate_target(location).is_ok());
        }

        /// Reading the host off the stored target and parsing it only to merge a query
        /// decides exactly as parsing it up front does, bans on its host included.
        #[test]
        fn the_stored_target_decides_as_the_parsed_one(
            host in "[a-z]{1,8}(\\.[a-z]{1,8}){1,2}",
            port in proptest::option::of(1u16..),
            path in "(/[a-zA-Z0-9%. é]{0,6}){0,3}",
            target_query in proptest::option::of("[a-z0-9=&%]{0,10}"),
            visitor_query in proptest::option::of("[a-z0-9=&%é ]{0,10}"),
            forward_query: bool,
            ban_host: bool,
            max_age_s in 0u32..4000,
            disabled: bool,
            pages: bool,
            expires_in in proptest::option::of(-5i64..100),
        ) {
            let raw = format!(
                "https://{host}{}{path}{}",
                port.map(|p| format!(":{p}")).unwrap_or_default(),
                target_query.map(|q| format!("?{q}")).unwrap_or_default(),
            );
            let Ok(url) = Url::parse(&raw) else { return Ok(()) };
            let record = EdgeRecord {
                forward_query,
                expires_at: expires_in.map(|s| NOW + s),
                ..active(url.as_str())
            };
            let hosts: &[&str] = if ban_host { &[host.as_str()] } else { &[] };
            let deny = deny(&[], hosts);
            // Any settings a domain may have: `run_on` checks that the edge's path (the
            // stored record) and the origin's (the prepared one) decide alike.
            let settings = DomainSettings {
                max_age_s,
                status: if disabled { DomainStatus::Disabled } else { DomainStatus::Active },
                ..if pages { with_pages() } else { DomainSettings::default() }
            };
            let d = run_on(Some(&record), Method::Get, visitor_query.as_deref(), &deny, &settings);
            let expired = expires_in.is_some_and(|s| s <= 0);
            let expected = match () {
                _ if disabled => 404,
                _ if ban_host => 403,
                _ if expired && !pages => 410,
                _ => 302,
            };
            proptest::prop_assert_eq!(d.status, expected);
            let unknown = run_on(None, Method::Get, None, &deny, &settings);
            proptest::prop_assert_eq!(unknown.status, if pages && !disabled { 302 } else { 404 });
        }
    }
}

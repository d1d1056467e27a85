//! The redirect decision: one pure function from what is known about a visit to the
//! response, used by the edge worker and by the origin's own redirect path alike.

use crate::codes::is_plausible_code;
use crate::denylist::Denylist;
use crate::domain::{DomainSettings, DomainStatus, RouteKey, DEFAULT_MAX_AGE_S};
use crate::record::{EdgeRecord, EdgeStatus, RedirectStatus};
use crate::target::merge_query;
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
    rules: Rules,
    pub version: u64,
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
        PreparedRecord {
            rules: Rules::from(&record),
            version: record.version,
            target: record.target.into(),
            host,
        }
    }

    pub fn status(&self) -> EdgeStatus {
        self.rules.status
    }

    /// The record's target, as stored.
    pub fn target(&self) -> &str {
        &self.target
    }

    /// The record as the edge stores it.
    pub fn to_record(&self) -> EdgeRecord {
        let Rules {
            status,
            redirect,
            expires_at,
            forward_query,
        } = self.rules;
        EdgeRecord {
            target: self.target.to_string(),
            status,
            redirect,
            expires_at,
            version: self.version,
            forward_query,
        }
    }

    /// A copy that shares no memory with this one: a thread that keeps it for itself
    /// changes no reference count another thread reads.
    pub fn detached(&self) -> Self {
        PreparedRecord {
            target: Arc::from(&*self.target),
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
}

/// What a decision reads of a record besides its target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Rules {
    status: EdgeStatus,
    redirect: RedirectStatus,
    expires_at: Option<i64>,
    forward_query: bool,
}

impl From<&EdgeRecord> for Rules {
    fn from(r: &EdgeRecord) -> Self {
        Rules {
            status: r.status,
            redirect: r.redirect,
            expires_at: r.expires_at,
            forward_query: r.forward_query,
        }
    }
}

/// The request methods the redirect path tells apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    Get,
    Head,
    Other,
}

impl Method {
    pub fn parse(method: &str) -> Method {
        match method {
            "GET" => Method::Get,
            "HEAD" => Method::Head,
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
}

impl Outcome {
    /// Every outcome, in the order of its discriminant.
    pub const ALL: [Outcome; 8] = [
        Outcome::Redirect,
        Outcome::NotFound,
        Outcome::Disabled,
        Outcome::Expired,
        Outcome::Deleted,
        Outcome::Banned,
        Outcome::Unavailable,
        Outcome::MethodNotAllowed,
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
        }
    }
}

/// The body of a response, before the method is applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Body {
    Empty,
    Text(&'static str),
    Html(&'static str),
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

    pub fn len(&self) -> usize {
        self.set.iter().flatten().count()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl IntoIterator for Headers {
    type Item = Header;
    type IntoIter = std::iter::Flatten<std::array::IntoIter<Option<Header>, { Headers::ROOM }>>;

    fn into_iter(self) -> Self::IntoIter {
        self.set.into_iter().flatten()
    }
}

/// What is known about one visit, besides the record.
#[derive(Debug, Clone, Copy)]
pub struct Visit<'a> {
    pub method: Method,
    pub route: &'a RouteKey,
    /// The raw query of the visited URL, without `?`.
    pub query: Option<&'a str>,
    /// Unix seconds.
    pub now: i64,
}

const NOT_FOUND: &str = "Not found.\n";
const DISABLED: &str = "This link is not available.\n";
const EXPIRED: &str = "This link has expired.\n";
const DELETED: &str = "This link was deleted.\n";
const UNAVAILABLE: &str = "This link cannot be resolved right now. Please try again shortly.\n";
const METHOD_NOT_ALLOWED: &str = "Only GET and HEAD are supported.\n";
const BANNED: &str = "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
<meta name=\"robots\" content=\"noindex\"><title>Link blocked</title></head>\
<body><h1>Link blocked</h1><p>This short link was blocked because it was reported \
as harmful. You have not been redirected.</p></body></html>\n";

const NO_STORE: &str = "no-store";

impl Decision {
    fn new(method: Method, outcome: Outcome, status: u16, body: Body) -> Self {
        let mut headers = Headers::default();
        headers.push("cache-control", Cow::Borrowed(NO_STORE));
        match body {
            Body::Empty => {}
            Body::Text(_) => headers.push("content-type", "text/plain; charset=utf-8".into()),
            Body::Html(_) => headers.push("content-type", "text/html; charset=utf-8".into()),
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

    fn method_not_allowed() -> Self {
        let mut d = Decision::new(
            Method::Other,
            Outcome::MethodNotAllowed,
            405,
            Body::Text(METHOD_NOT_ALLOWED),
        );
        d.headers.push("allow", "GET, HEAD".into());
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
        }
    }

    /// No link: the domain's `not_found_url` when it has one, else 404.
    fn no_link(method: Method, settings: &DomainSettings) -> Self {
        match &settings.not_found_url {
            Some(url) => Decision::sent_to(Outcome::NotFound, url),
            None => Decision::not_found(method),
        }
    }

    /// The value of a header, by lowercase name.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v)
    }
}

/// The checks that need nothing but the request line: a method other than GET or HEAD
/// gets 405, a path segment that cannot be a code gets 404. `None`: go on and look up.
pub fn reject_early(method: Method, code: &str) -> Option<Decision> {
    if method == Method::Other {
        Some(Decision::method_not_allowed())
    } else if !is_plausible_code(code) {
        Some(Decision::not_found(method))
    } else {
        None
    }
}

/// The answer to `GET|HEAD /` on a domain (`None`: one the caller holds no settings
/// for): its `root_url`, else 404; 405 for other methods.
pub fn decide_root(method: Method, settings: Option<&DomainSettings>) -> Decision {
    if method == Method::Other {
        return Decision::method_not_allowed();
    }
    match settings {
        Some(s) if s.status == DomainStatus::Active => match &s.root_url {
            Some(url) => Decision::sent_to(Outcome::NotFound, url),
            None => Decision::not_found(method),
        },
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
    decide_with(visit, record.map(Rules::from), stored, deny, settings)
}

/// [`decide`] for a record whose target is already parsed.
pub fn decide_prepared(
    visit: &Visit<'_>,
    prepared: Option<&PreparedRecord>,
    deny: &Denylist,
    settings: &DomainSettings,
) -> Decision {
    let parsed = || prepared.map(PreparedRecord::decided_target);
    decide_with(visit, prepared.map(|p| p.rules), parsed, deny, settings)
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

/// The decision itself; `target` gives the record's target, and is asked only once the
/// record is known to be live enough to need it.
fn decide_with<'u>(
    visit: &Visit<'_>,
    record: Option<Rules>,
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
    let Some(record) = record else {
        return Decision::no_link(visit.method, settings);
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
    if deny.blocks_host(host) {
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
    let mut max_age = i64::from(settings.max_age_s);
    if let Some(expires_at) = record.expires_at {
        if visit.now >= expires_at {
            return match &settings.expired_url {
                Some(url) => Decision::sent_to(Outcome::Expired, url),
                None => Decision::new(visit.method, Outcome::Expired, 410, Body::Text(EXPIRED)),
            };
        }
        max_age = max_age.min(expires_at - visit.now);
    }
    let query = visit.query.filter(|_| record.forward_query);
    let Some(location) = target.location(query) else {
        return Decision::unavailable(visit.method, RETRY_AFTER_S);
    };
    let mut headers = Headers::default();
    headers.push("location", location.into());
    headers.push("cache-control", private_max_age(max_age));
    Decision {
        outcome: Outcome::Redirect,
        status: record.redirect.code(),
        headers,
        body: Body::Empty,
    }
}

/// What a visitor is told to wait before retrying a 503.
pub const RETRY_AFTER_S: u32 = 5;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::denylist::DenylistSnapshot;
    use crate::record::RedirectStatus;

    /// Headers are held inline: a decision with more than their room would lose one.
    #[test]
    fn every_kind_of_decision_fits_its_headers() {
        let expected: [(Decision, &[&str]); 5] = [
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
        ];
        for (decision, names) in expected {
            let held: Vec<&str> = decision.headers.iter().map(|(n, _)| n).collect();
            assert_eq!(held, names, "{decision:?}");
            assert!(decision.headers.len() < Headers::ROOM, "room to spare");
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
        }
    }

    fn visit<'a>(route: &'a RouteKey, method: Method, query: Option<&'a str>) -> Visit<'a> {
        Visit {
            method,
            route,
            query,
            now: NOW,
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

        let root = decide_root(Method::Get, Some(&pages));
        assert_eq!(
            (root.status, root.header("location")),
            (302, Some("https://www.acme.example/"))
        );
        assert_eq!(root.header("cache-control"), Some("no-store"));
        assert_eq!(
            decide_root(Method::Head, Some(&DomainSettings::default())).status,
            404
        );
        assert_eq!(decide_root(Method::Get, None).status, 404);
        assert_eq!(decide_root(Method::Other, Some(&pages)).status, 405);
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
        assert_eq!(decide_root(Method::Get, Some(&off)).status, 404);
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
            assert_eq!(d.header("allow"), Some("GET, HEAD"));
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

    proptest::proptest! {
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

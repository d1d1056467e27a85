//! The redirect decision: one pure function from what is known about a visit to the
//! response, used by the edge worker and by the origin's own redirect path alike.
//!
//! This module decides; `responses`, which it uses and which does not use it back,
//! writes each kind of answer out (statuses, headers, bodies). When a visit gets a page
//! instead of a redirect (a password form, a preview, an interstitial), the decision
//! names it, a `Page` with its data, and the page's own module draws it: none of those
//! modules imports the decision. The answer's types are `crate::answer`'s, re-exported
//! here, their public path.

use crate::access::{without_token, Access};
use crate::agent::is_previewer;
use crate::codes::is_plausible_code;
use crate::denylist::Denylist;
use crate::domain::{DomainSettings, DomainStatus};
use crate::page::Page;
use crate::password::Form;
use crate::preview::Preview;
use crate::record::{EdgeRecord, EdgeStatus, RedirectStatus};
use crate::route::RouteKey;
use crate::split::Split;
use crate::target::merge_query;
use crate::targeting::{first_match, Facts, Request, Rule};
use crate::visit_url::VisitUrl;
use responses::{private_max_age, DELETED, DISABLED, EXHAUSTED, EXPIRED, PRIVATE, VARY};
use std::borrow::Cow;
use std::sync::Arc;
use url::Url;

pub use crate::answer::{Body, Decision, Headers, Method, Outcome};
pub use responses::{DEFAULT_CACHE_CONTROL, RETRY_AFTER_S};

mod responses;
#[cfg(test)]
mod tests;

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
                no_scanner_check: record.no_scanner_check,
                exhausted: record.exhausted,
                limited: record.limited,
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

    /// The link has a visit limit not yet reached ([`EdgeRecord::limited`]).
    pub fn limited(&self) -> bool {
        self.basics.limited
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
            no_scanner_check,
            exhausted,
            limited,
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
            no_scanner_check,
            exhausted,
            limited,
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
    no_scanner_check: bool,
    exhausted: bool,
    limited: bool,
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
            no_scanner_check: r.no_scanner_check,
            exhausted: r.exhausted,
            limited: r.limited,
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
    /// The caller found the code on its domain's list of codes that lived at the
    /// shortener the domain moved from (`legacy_url`). Only such a code, with no link
    /// here, is sent on there; the caller looks only when the fallback runs
    /// ([`DomainSettings::legacy_base`]).
    pub legacy_known: bool,
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
            .unwrap_or_else(|| Decision::not_found(method).in_look_of(s)),
        Some((s, _)) => Decision::not_found(method).in_look_of(s),
        None => Decision::not_found(method),
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
    decide_with(visit, known, stored, deny, settings).in_look_of(settings)
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
    decide_with(visit, known, parsed, deny, settings).in_look_of(settings)
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

/// The decision itself, marked unrecorded (or its scanners unchecked) when the link asks
/// for that.
fn decide_with<'u>(
    visit: &Visit<'_>,
    record: Option<(Basics, Option<Extras<'u>>)>,
    target: impl FnOnce() -> Option<Target<'u>>,
    deny: &Denylist,
    settings: &DomainSettings,
) -> Decision {
    let mut decision = decide_known(visit, record, target, deny, settings);
    decision.unrecorded = record.is_some_and(|(basics, _)| basics.no_clicks);
    decision.scanners_unchecked = record.is_some_and(|(basics, _)| basics.no_scanner_check);
    decision.limited = record.is_some_and(|(basics, _)| basics.limited);
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
            _ => {
                let legacy = settings
                    .legacy_base(visit.now_ms.div_euclid(1000))
                    .filter(|_| visit.legacy_known);
                Decision::no_link(
                    visit.method,
                    visit.route,
                    visit.query,
                    legacy,
                    settings,
                    deny,
                )
            }
        };
    };
    if record.status == EdgeStatus::Banned {
        return Decision::banned(visit.method);
    }
    // The origin stored a validated URL; one that does not parse is a corrupt copy,
    // which the next publish repairs, so it is reported as temporary. A tombstone the
    // purge emptied keeps no target at all (docs/retention.md): it is gone.
    let Some((target, host)) = target().and_then(|t| t.host().map(|h| (t, h))) else {
        if record.status == EdgeStatus::Deleted {
            return Decision::new(visit.method, Outcome::Deleted, 410, Body::Html(DELETED));
        }
        return Decision::unavailable(visit.method, RETRY_AFTER_S);
    };
    if deny.blocks_host(host) || extras.is_some_and(|e| e.blocked_by(deny)) {
        return Decision::banned(visit.method);
    }
    match record.status {
        EdgeStatus::Deleted => {
            return Decision::new(visit.method, Outcome::Deleted, 410, Body::Html(DELETED))
        }
        EdgeStatus::Disabled => {
            return Decision::new(visit.method, Outcome::Disabled, 404, Body::Html(DISABLED))
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
            .unwrap_or_else(|| Decision::new(visit.method, Outcome::Expired, 410, Body::Html(why)))
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
            false => Decision::new(visit.method, Outcome::Private, 403, Body::Html(PRIVATE)),
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
        Some(preview) => Some(Page::Preview {
            preview,
            route: visit.route,
            target: &location,
            refresh: !interstitial,
        }),
        None if interstitial => Some(Page::Interstitial { target: &location }),
        None => None,
    };
    let varies = extras.is_some_and(|e| !e.rules.is_empty() || e.preview.is_some());
    let vary = varies.then_some(("vary", Cow::Borrowed(VARY)));
    if let Some(page) = page {
        let mut decision = Decision::drawn(visit.method, Outcome::Redirect, 200, &page);
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
        scanners_unchecked: false,
        limited: false,
    }
}

//! A visit of a short link at the origin: the same decision as the edge, from the
//! redirect cache and the database; its click handed to the recorder, a password
//! link's form checked. The service's one door for `GET|HEAD|POST /{code}`
//! ([`Redirects::answer_held`], [`Redirects::answer`], [`Redirects::posted`]), which
//! answer with the response itself (written in `redirects/answer.rs`); the route only
//! hands the request over.

use super::answer::{favicon, write};
use super::service::Redirects;
use crate::cache::Entry;
use crate::clicks::tally::{Clicked, Reduced};
use crate::error::AppError;
use crate::metrics::RedirectPath;
use crate::model::time::now_ms;
use axum::http::request::Parts;
use axum::http::{header, HeaderMap};
use axum::response::Response;
use shared::clicks::counts_as_click;
use shared::{
    decide_prepared, decide_root, reject_early, Client, Decision, Denylist, DomainSettings,
    RouteKey, Visit, VisitorHost,
};
use std::borrow::Cow;
use std::future::Future;
use std::net::SocketAddr;

impl Redirects {
    /// The answer to a visit when memory holds all it needs: the domain's settings,
    /// the denylist, and the link's entry (known or unknown). No future: a visit that
    /// waits on nothing carries no room for the reads it does not make. `None`:
    /// [`Self::answer`] it, which may read.
    #[inline]
    pub fn answer_held(&self, parts: &Parts, peer: Option<SocketAddr>) -> Option<Response> {
        answer_held(self, parts, peer)
    }

    /// The answer to a visit, reading what memory does not hold. The future is the
    /// function's own: an `async` wrapper would hold the request's head twice.
    #[inline]
    pub fn answer(
        &self,
        parts: Parts,
        peer: Option<SocketAddr>,
    ) -> impl Future<Output = Response> + Send + '_ {
        answer(self, parts, peer)
    }

    /// A `POST` to `/{code}`: a password link's form, answered by checking the password
    /// (`shared::password`); 405 for any other link.
    #[inline]
    pub fn posted(
        &self,
        parts: Parts,
        body: axum::body::Body,
        peer: Option<SocketAddr>,
    ) -> impl Future<Output = Response> + Send + '_ {
        posted(self, parts, body, peer)
    }
}

/// A `POST` to `/{code}`: a password link's form, answered by checking the password
/// (`shared::password`); 405 for any other link.
pub(super) async fn posted(
    state: &Redirects,
    parts: Parts,
    body: axum::body::Body,
    peer: Option<SocketAddr>,
) -> Response {
    let started = std::time::Instant::now();
    let method = shared::Method::Post;
    let code = parts.uri.path().strip_prefix('/').unwrap_or_default();
    let query = parts.uri.query();
    let decision = match reject_early(method, code) {
        Some(_) if code.is_empty() => decide_root(method, None),
        Some(early) => early,
        // The body is read within the same bound as the lookup: a client trickling it
        // holds nothing past it.
        None => match crate::deadline::within(REDIRECT_TIMEOUT, async {
            let (decision, _, form) =
                resolve(state, method, &parts.headers, peer, code, query).await?;
            let Some(form) = form else {
                return Ok(decision);
            };
            let client =
                shared::password::Client::of(state.proxies.client_ip(peer, &parts.headers));
            let body = axum::body::to_bytes(body, shared::password::MAX_FORM_BYTES)
                .await
                .unwrap_or_default();
            let tried = state
                .passwords
                .attempt(&form.access, &form.route, client, &body, now_ms())
                .await
                .map_err(AppError::Internal)?;
            Ok::<_, AppError>(
                Decision::password_tried(&form.route, query, tried).in_look_of(&form.settings),
            )
        })
        .await
        {
            Ok(Ok(decision)) => decision,
            Ok(Err(e)) => {
                tracing::error!(error = %e, "password check failed");
                Decision::unavailable(method, shared::decision::RETRY_AFTER_S)
            }
            Err(_) => Decision::unavailable(method, shared::decision::RETRY_AFTER_S),
        },
    };
    answered(state, decision, RedirectPath::Database, started)
}

/// The answer to a visit when memory holds all it needs: the domain's settings, the
/// denylist, and the link's entry (known or unknown). No future: a visit that waits on
/// nothing carries no room for the reads it does not make, where the redirect's future
/// was 2.6 KB, copied twice on every visit on its way into hyper. `None`: [`answer`]
/// it, which may read.
pub(super) fn answer_held(
    state: &Redirects,
    parts: &Parts,
    peer: Option<SocketAddr>,
) -> Option<Response> {
    let started = std::time::Instant::now();
    let method = shared::Method::parse(parts.method.as_str());
    if shared::is_favicon(method, parts.uri.path()) {
        return Some(favicon());
    }
    let code = parts.uri.path().strip_prefix('/').unwrap_or_default();
    let decision = match reject_early(method, code) {
        Some(_) if code.is_empty() => root_held(state, method, &parts.headers)?,
        Some(early) => early,
        None => {
            let (decision, visited, _) =
                resolve_held(state, method, &parts.headers, peer, code, parts.uri.query())?;
            if let Some(visited) = visited {
                record_click(state, &decision, visited, &parts.headers, peer);
            }
            decision
        }
    };
    Some(answered(state, decision, RedirectPath::Memory, started))
}

/// The answer to a visit, reading what memory does not hold.
pub(super) async fn answer(state: &Redirects, parts: Parts, peer: Option<SocketAddr>) -> Response {
    let started = std::time::Instant::now();
    let (method, headers, uri) = (parts.method, parts.headers, parts.uri);
    let method = shared::Method::parse(method.as_str());
    let code = uri.path().strip_prefix('/').unwrap_or_default();
    let decision = match reject_early(method, code) {
        Some(_) if code.is_empty() => {
            match crate::deadline::within(REDIRECT_TIMEOUT, root(state, method, &headers)).await {
                Ok(Ok(decision)) => decision,
                Ok(Err(e)) => {
                    tracing::error!(error = %e, "root lookup failed");
                    Decision::unavailable(method, shared::decision::RETRY_AFTER_S)
                }
                Err(_) => Decision::unavailable(method, shared::decision::RETRY_AFTER_S),
            }
        }
        Some(early) => early,
        None => match crate::deadline::within(
            REDIRECT_TIMEOUT,
            resolve(state, method, &headers, peer, code, uri.query()),
        )
        .await
        {
            Err(_) => {
                tracing::warn!("redirect lookup timed out");
                Decision::unavailable(method, shared::decision::RETRY_AFTER_S)
            }
            Ok(Ok((decision, visited, _))) => {
                if let Some(visited) = visited {
                    record_click(state, &decision, visited, &headers, peer);
                }
                decision
            }
            Ok(Err(e)) => {
                tracing::error!(error = %e, "redirect lookup failed");
                Decision::unavailable(method, shared::decision::RETRY_AFTER_S)
            }
        },
    };
    answered(state, decision, RedirectPath::Database, started)
}

/// The response to `decision`, counted and timed.
fn answered(
    state: &Redirects,
    decision: Decision,
    path: RedirectPath,
    started: std::time::Instant,
) -> Response {
    state.metrics.redirect_answered(decision.outcome);
    state.metrics.redirect_took(path, started.elapsed());
    write(decision)
}

/// The longest a visit waits on the database (its pool, its reads) before it is told
/// to retry (503 with `Retry-After`).
pub(crate) const REDIRECT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// Queues the click, when the visit was one, for the background writer: the response
/// does not wait for it.
fn record_click(
    state: &Redirects,
    decision: &Decision,
    (clicked, at, person): Visited,
    headers: &HeaderMap,
    peer: Option<SocketAddr>,
) {
    if decision.outcome == shared::Outcome::Legacy {
        if let Clicked::Route(route) = &clicked {
            let bot = Reduced::of(headers.get(header::USER_AGENT), None, None).bot;
            state.legacy.note(route.as_str(), 1, bot, at);
        }
        return;
    }
    if !state.recorder.enabled()
        || !counts_as_click(shared::Method::Get, decision.outcome)
        || decision.unrecorded
        || !state
            .recorder
            .admits(state.proxies.client_ip(peer, headers), at)
    {
        return;
    }
    let mut visitor = Reduced {
        variant: decision.variant,
        ..Reduced::of(
            headers.get(header::USER_AGENT),
            headers.get(header::REFERER),
            // Only a trusted proxy's word: anyone can send `CF-IPCountry`.
            state.proxies.country(peer, headers),
        )
    };
    // A prefetch nobody clicked is a scanner's visit, a bot's (docs/scanners.md), unless
    // the link's owner turned that off; the origin knows no network to judge by.
    if !visitor.bot && !decision.scanners_unchecked {
        if let Some(scanner) =
            shared::scanners::classify(None, |name| headers.get(name).and_then(|v| v.to_str().ok()))
        {
            visitor.bot = true;
            visitor.scanner = Some(scanner);
        }
    }
    if let (Some(person), Clicked::Link(link), false) = (person, &clicked, visitor.bot) {
        state.recorder.person(link.id, at, person);
    }
    state.recorder.record(clicked, at, decision.status, visitor);
}

/// The short domain a visit's `Host` names. Without one, or with an address (a health
/// checker, a curl at the origin's IP), it is the default domain: no short domain is an
/// IP address.
enum Host {
    Default,
    /// Another domain, normalized: served only if this origin knows it.
    Other(String),
    /// No name a short domain could have: not found, without a read.
    Malformed,
}

fn host_of(state: &Redirects, headers: &HeaderMap) -> Host {
    let default = state.settings.default_domain.as_str();
    match headers.get(header::HOST).map(|h| h.to_str()) {
        None => Host::Default,
        Some(Err(_)) => Host::Malformed,
        // The default domain as it was configured, already normal: nearly every visit
        // of a single-domain origin, and normalizing it again cost a tenth of a
        // cached redirect's instructions.
        Some(Ok(value)) if value == default => Host::Default,
        Some(Ok(value)) => match shared::visitor_host(value) {
            VisitorHost::Address => Host::Default,
            VisitorHost::Malformed => Host::Malformed,
            VisitorHost::Domain(d) if d == default => Host::Default,
            VisitorHost::Domain(d) => Host::Other(d),
        },
    }
}

/// The short domain a visit's `Host` names, when this origin serves it: the default
/// domain, or another it knows (learnt once, then from memory); `None` for any other
/// host, or none a short domain could have.
async fn served_domain<'a>(
    state: &'a Redirects,
    headers: &HeaderMap,
) -> Result<Option<Cow<'a, str>>, AppError> {
    Ok(match host_of(state, headers) {
        Host::Default => Some(Cow::Borrowed(state.settings.default_domain.as_str())),
        Host::Malformed => None,
        Host::Other(d) => state
            .cache
            .serves(&state.db, &d)
            .await?
            .then_some(Cow::Owned(d)),
    })
}

/// `GET|HEAD /` from memory alone: the domain's `root_url` (unless a host ban covers
/// it), or 404; `None` where it would read.
fn root_held(state: &Redirects, method: shared::Method, headers: &HeaderMap) -> Option<Decision> {
    let now = std::time::Instant::now();
    let settings = match host_of(state, headers) {
        Host::Default => state
            .cache
            .held_settings(&state.settings.default_domain, now)?,
        Host::Malformed => return Some(decide_root(method, None)),
        Host::Other(_) => return None,
    };
    let deny = state.cache.held_denylist(now)?;
    Some(decide_root(method, Some((&*settings, &*deny))))
}

/// `GET|HEAD /`: the domain's `root_url`, or 404 (a host this origin does not serve
/// costs no read).
async fn root(
    state: &Redirects,
    method: shared::Method,
    headers: &HeaderMap,
) -> Result<Decision, AppError> {
    let db = &state.db;
    let Some(domain) = served_domain(state, headers).await? else {
        return Ok(decide_root(method, None));
    };
    let now = std::time::Instant::now();
    let settings = state.cache.settings(db, &domain, now).await?;
    let deny = state.cache.denylist(db, now).await?;
    Ok(decide_root(method, Some((&*settings, &*deny))))
}

/// [`resolve`] from memory alone; `None` where it would read (the settings or the
/// denylist expired, an entry not held, a domain other than the default).
fn resolve_held(
    state: &Redirects,
    method: shared::Method,
    headers: &HeaderMap,
    peer: Option<SocketAddr>,
    code: &str,
    query: Option<&str>,
) -> Option<Decided> {
    let domain = match host_of(state, headers) {
        Host::Default => state.settings.default_domain.as_str(),
        Host::Malformed => return Some((Decision::not_found(method), None, None)),
        Host::Other(_) => return None,
    };
    // One reading of the clock for every freshness check of this visit.
    let clock = std::time::Instant::now();
    let settings = state.cache.held_settings(domain, clock)?;
    let code = settings.canonical_code(code);
    let Some(route) = RouteKey::new(domain, code.as_ref()) else {
        return Some((Decision::not_found(method), None, None));
    };
    let deny = state.cache.held_denylist(clock)?;
    let entry = match state.cache.cached(&route, clock) {
        Some(entry) => Some(entry),
        None if deny.blocks_code(&route) => None,
        // A generated code past the id ceiling: no such link. One that may exist is read.
        None => {
            let keys = state.settings.permutation_keys.as_ref();
            match state.cache.may_exist_held(keys, &settings, &route)? {
                false => None,
                true => return None,
            }
        }
    };
    // A code with no link on a moving domain may be one of its legacy codes: read.
    if entry.as_ref().is_none_or(|e| e.record.is_none()) && legacy_runs(&settings) {
        return None;
    }
    let client = Asked {
        state,
        headers,
        peer,
    };
    Some(decided(
        method, route, query, entry, &deny, &settings, client, false,
    ))
}

/// Whether `settings`' fallback to the shortener the domain moved from runs now.
fn legacy_runs(settings: &DomainSettings) -> bool {
    settings.legacy_base(now_ms().div_euclid(1000)).is_some()
}

async fn resolve(
    state: &Redirects,
    method: shared::Method,
    headers: &HeaderMap,
    peer: Option<SocketAddr>,
    code: &str,
    query: Option<&str>,
) -> Result<Decided, AppError> {
    // A host this origin does not serve is not found without a read.
    let db = &state.db;
    let Some(domain) = served_domain(state, headers).await? else {
        return Ok((Decision::not_found(method), None, None));
    };
    let clock = std::time::Instant::now();
    let settings = state.cache.settings(db, &domain, clock).await?;
    let code = settings.canonical_code(code);
    let Some(route) = RouteKey::new(&*domain, code.as_ref()) else {
        return Ok((Decision::not_found(method), None, None));
    };
    let deny = state.cache.denylist(db, clock).await?;
    // Memory first; then what can be answered without a read (a banned code, a generated
    // code past the id ceiling); then the database, once per key however many ask.
    let entry = match state.cache.cached(&route, clock) {
        Some(entry) => Some(entry),
        None if deny.blocks_code(&route) => None,
        // The ceiling boxes its own read (`IdCeiling::admits`); the load is boxed here,
        // so only a miss pays for its future's room (`RedirectCache::settings`).
        None if !state
            .cache
            .may_exist(
                db,
                state.settings.permutation_keys.as_ref(),
                &settings,
                &route,
            )
            .await? =>
        {
            None
        }
        None => Some(Box::pin(state.cache.entry(db, &route)).await?),
    };
    // Only a code on the domain's legacy list is sent on to its old shortener; the list
    // is read only for a code with no link while the fallback runs.
    let legacy_known = entry.as_ref().is_none_or(|e| e.record.is_none())
        && legacy_runs(&settings)
        && !deny.blocks_code(&route)
        && state.legacy_known(&route).await?;
    let client = Asked {
        state,
        headers,
        peer,
    };
    Ok(decided(
        method,
        route,
        query,
        entry,
        &deny,
        &settings,
        client,
        legacy_known,
    ))
}

/// Where a visit's client headers come from, read only for a record that needs them.
struct Asked<'a> {
    state: &'a Redirects,
    headers: &'a HeaderMap,
    peer: Option<SocketAddr>,
}

impl<'a> Asked<'a> {
    /// Who the visitor is on `route` on the day of `at`, as a visit limit counts people:
    /// by the address, as the edge does. Without one (a request that did not come
    /// through the listener), a person of its own.
    fn person(&self, route: &RouteKey, at: i64) -> u64 {
        match self.state.proxies.client_ip(self.peer, self.headers) {
            Some(ip) => self.state.settings.person_key.person(
                route.as_str(),
                shared::password::Client::of(Some(ip)),
                at,
            ),
            None => fastrand::u64(..),
        }
    }

    fn client(&self) -> Client<'a> {
        let text = |name| {
            self.headers
                .get(name)
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
        };
        Client {
            user_agent: text(header::USER_AGENT),
            accept_language: text(header::ACCEPT_LANGUAGE),
            // Only a trusted proxy's word: anyone can send `CF-IPCountry`.
            country: self
                .state
                .proxies
                .country(self.peer, self.headers)
                .and_then(|v| v.to_str().ok()),
        }
    }
}

/// The decision on a visit, the click it makes, and the form whose password a `POST`
/// brought.
type Decided = (Decision, Option<Visited>, Option<Box<Form>>);

/// A password link's form, posted: what checking the password takes.
pub(super) struct Form {
    route: RouteKey,
    access: shared::access::Access,
    /// The domain's settings: the form again is in its look.
    settings: DomainSettings,
}

/// The decision on a visit of `route` whose entry is known, and the click it makes;
/// `legacy_known`: the code is on its domain's legacy list.
#[allow(clippy::too_many_arguments)]
fn decided(
    method: shared::Method,
    route: RouteKey,
    query: Option<&str>,
    entry: Option<Entry>,
    deny: &Denylist,
    settings: &DomainSettings,
    asked: Asked<'_>,
    legacy_known: bool,
) -> Decided {
    let now = now_ms();
    let record = entry.as_ref().and_then(|e| e.record.as_ref());
    // One check for most links; what follows reads only the others.
    let special = record.filter(|r| !r.is_plain());
    let visit = Visit {
        method,
        route: &route,
        query,
        now_ms: now,
        client: match special {
            Some(r) if r.reads_client() => asked.client(),
            _ => Client::default(),
        },
        // A split's draw: a thread-local generator, no system call per visit.
        draw: match special {
            Some(r) if r.draws() => fastrand::u32(..),
            _ => 0,
        },
        access_granted: special.and_then(|r| r.access()).is_some_and(|access| {
            let cookie = access
                .is_password()
                .then(|| asked.headers.get(header::COOKIE)?.to_str().ok())
                .flatten();
            crate::links::access::opens(access, &route, query, cookie, now.div_euclid(1000))
        }),
        legacy_known,
    };
    if method == shared::Method::Post {
        let decision = decide_prepared(&visit, record, deny, settings);
        let access = special.and_then(|r| r.access());
        let form = access
            .filter(|_| decision.asks_password(method, access))
            .map(|access| {
                Box::new(Form {
                    route: route.clone(),
                    access: access.clone(),
                    settings: settings.clone(),
                })
            });
        return (decision, None, form);
    }
    // The link as the cache knows it; a banned code whose record was never read is
    // resolved from its route key when the click is written.
    let link = entry.as_ref().and_then(|e| e.link);
    // The decision is made where it is returned: made in a local first, it was copied
    // whole into the tuple on every visit.
    (
        decide_prepared(&visit, record, deny, settings),
        (method == shared::Method::Get).then(|| {
            // A visit of a link with a visit limit names its visitor (docs/api.md).
            let person = record
                .filter(|r| r.limited())
                .map(|_| asked.person(&route, now));
            let clicked = match link {
                Some(link) => Clicked::Link(link),
                None => Clicked::Route(route),
            };
            (clicked, now, person)
        }),
        None,
    )
}

/// The link a `GET` visited, when (Unix ms), and, for a link with a visit limit, who
/// (`shared::clicks::person`).
type Visited = (Clicked, i64, Option<u64>);

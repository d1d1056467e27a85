//! `GET|HEAD /{code}` on the origin: the same decision as the edge, from the database.

use crate::cache::Entry;
use crate::clicks::tally::{Clicked, Reduced};
use crate::error::AppError;
use crate::metrics::RedirectPath;
use crate::model::time::now_ms;
use crate::redirects::Redirects;
use axum::body::Bytes;
use axum::extract::{Request, State};
use axum::http::request::Parts;
use axum::http::{header, HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::response::Response;
use shared::clicks::counts_as_click;
use shared::decision::DEFAULT_CACHE_CONTROL;
use shared::{
    decide_prepared, decide_root, reject_early, Client, Decision, Denylist, DomainSettings,
    RouteKey, Visit, VisitorHost,
};
use std::borrow::Cow;
use std::net::SocketAddr;
use std::sync::Arc;

/// Answers every path the API does not claim.
#[utoipa::path(get, path = "/{code}", operation_id = "redirect", tag = "redirect",
    params(("code" = String, Path), ("Host" = Option<String>, Header, description = "The short domain; without one, or with an address, the origin's default domain. A host this origin does not serve is 404")),
    responses(
        (status = 200, description = "An HTML page instead of a redirect: the link's social preview for a link-preview crawler, or its interstitial (the destination and a link to it)"),
        (status = 204, description = "`/favicon.ico`, which browsers ask every site for: no content, `Cache-Control: public, max-age=604800`, never counted as a visit"),
        (status = 301, description = "Moved permanently, as the link says; `Location` is the target, with the visitor's query merged when the link forwards it"),
        (status = 302, description = "Found (the default); also where a domain sends an unknown code, `/` or an expired link when it names a page for them (never cached)"),
        (status = 307, description = "Temporary redirect, as the link says"),
        (status = 308, description = "Permanent redirect, as the link says"),
        (status = 403, description = "Banned: a short notice, never a Location. Or a private link visited without a valid token (a notice) or, for a password link, without its cookie (the password form, which posts back here)"),
        (status = 404, description = "No such link, a disabled link or domain, or `/` on a domain without a root_url"),
        (status = 405, description = "Neither GET nor HEAD (nor a POST to a password link's form)"),
        (status = 410, description = "Expired or deleted"),
        (status = 503, description = "The database cannot answer now; see Retry-After"),
    ))]
pub(crate) async fn redirect(State(state): State<Arc<Redirects>>, req: Request) -> Response {
    let (parts, body) = req.into_parts();
    let peer = crate::proxies::peer(&parts);
    if parts.method == axum::http::Method::POST {
        return posted(&state, parts, body, peer).await;
    }
    visit(&state, parts, peer).await
}

/// What a password link's form posts.
#[derive(utoipa::ToSchema)]
#[allow(dead_code)] // Documentation: `shared::password::form_password` reads the form.
pub(crate) struct PasswordForm {
    /// What the visitor typed.
    password: String,
}

/// The operation [`posted`] answers, for the API description.
#[utoipa::path(post, path = "/{code}", operation_id = "password_form", tag = "redirect",
    params(("code" = String, Path), ("Host" = Option<String>, Header, description = "The short domain, as for `GET /{code}`")),
    request_body(content = PasswordForm, content_type = "application/x-www-form-urlencoded"),
    responses(
        (status = 303, description = "The right password: `Set-Cookie` lets the visitor into this link alone for an hour; `Location` is the short URL again, which then redirects. Never the target"),
        (status = 400, description = "No password in the form: the form again"),
        (status = 403, description = "A wrong password: the form again, with a note; or a banned link's notice"),
        (status = 404, description = "No such link, or a disabled one"),
        (status = 405, description = "The link takes no password: only a password link's form posts"),
        (status = 410, description = "Expired or deleted"),
        (status = 429, description = "Ten wrong passwords for this link within a minute: the form again; see Retry-After"),
        (status = 503, description = "The database cannot answer now; see Retry-After"),
    ))]
#[allow(dead_code)]
pub(crate) fn password_form() {}

/// A `POST` to `/{code}`: a password link's form, answered by checking the password
/// (`shared::password`); 405 for any other link.
pub(crate) async fn posted(
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
        None => match crate::server::within(REDIRECT_TIMEOUT, async {
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

/// The answer to a visit, from its request's head and the client's address: from
/// memory when it holds all the visit needs, else through the reads it takes.
pub(crate) async fn visit(state: &Redirects, parts: Parts, peer: Option<SocketAddr>) -> Response {
    if let Some(answered) = answer_held(state, &parts, peer) {
        return answered;
    }
    // Boxed: only a visit that may read carries the room its reads need.
    Box::pin(answer(state, parts, peer)).await
}

/// The answer to a browser's ask for a short domain's icon: `204`, kept a week, and
/// never counted as a visit or an answer (`shared::is_favicon`); from memory, on
/// every path that answers visits.
fn favicon() -> Response {
    let mut res = Response::new(axum::body::Body::empty());
    *res.status_mut() = StatusCode::NO_CONTENT;
    res.headers_mut().insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static(shared::FAVICON_CACHE_CONTROL),
    );
    res
}

/// The answer to a visit when memory holds all it needs: the domain's settings, the
/// denylist, and the link's entry (known or unknown). No future: a visit that waits on
/// nothing carries no room for the reads it does not make, where the redirect's future
/// was 2.6 KB, copied twice on every visit on its way into hyper. `None`: [`answer`]
/// it, which may read.
pub(crate) fn answer_held(
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
pub(crate) async fn answer(state: &Redirects, parts: Parts, peer: Option<SocketAddr>) -> Response {
    let started = std::time::Instant::now();
    let (method, headers, uri) = (parts.method, parts.headers, parts.uri);
    let method = shared::Method::parse(method.as_str());
    let code = uri.path().strip_prefix('/').unwrap_or_default();
    let decision = match reject_early(method, code) {
        Some(_) if code.is_empty() => {
            match crate::server::within(REDIRECT_TIMEOUT, root(state, method, &headers)).await {
                Ok(Ok(decision)) => decision,
                Ok(Err(e)) => {
                    tracing::error!(error = %e, "root lookup failed");
                    Decision::unavailable(method, shared::decision::RETRY_AFTER_S)
                }
                Err(_) => Decision::unavailable(method, shared::decision::RETRY_AFTER_S),
            }
        }
        Some(early) => early,
        None => match crate::server::within(
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
    let host;
    let domain = match host_of(state, headers) {
        Host::Default => state.settings.default_domain.as_str(),
        Host::Malformed => return Ok(decide_root(method, None)),
        Host::Other(d) => {
            if !state.cache.serves(db, &d).await? {
                return Ok(decide_root(method, None));
            }
            host = d;
            host.as_str()
        }
    };
    let now = std::time::Instant::now();
    let settings = state.cache.settings(db, domain, now).await?;
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
    let host;
    let domain = match host_of(state, headers) {
        Host::Default => state.settings.default_domain.as_str(),
        Host::Malformed => return Ok((Decision::not_found(method), None, None)),
        Host::Other(d) => {
            if !state.cache.serves(db, &d).await? {
                return Ok((Decision::not_found(method), None, None));
            }
            host = d;
            host.as_str()
        }
    };
    let clock = std::time::Instant::now();
    let settings = state.cache.settings(db, domain, clock).await?;
    let code = settings.canonical_code(code);
    let Some(route) = RouteKey::new(domain, code.as_ref()) else {
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
pub(crate) struct Form {
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

/// The headers `shared::decide` writes, without parsing their names on every request.
fn header_name(name: &str) -> Option<HeaderName> {
    Some(match name {
        "location" => header::LOCATION,
        "cache-control" => header::CACHE_CONTROL,
        "content-type" => header::CONTENT_TYPE,
        "retry-after" => header::RETRY_AFTER,
        "allow" => header::ALLOW,
        "vary" => header::VARY,
        "set-cookie" => header::SET_COOKIE,
        "content-security-policy" => header::CONTENT_SECURITY_POLICY,
        other => return HeaderName::from_bytes(other.as_bytes()).ok(),
    })
}

fn write(mut decision: Decision) -> Response {
    let body = match decision.body {
        shared::Body::Empty => axum::body::Body::empty(),
        shared::Body::Text(s) | shared::Body::Html(s) => axum::body::Body::from(s),
        shared::Body::Page(page) => axum::body::Body::from(page),
    };
    let mut res = Response::new(body);
    *res.status_mut() =
        StatusCode::from_u16(decision.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let headers = res.headers_mut();
    for (name, value) in decision.headers.take_all() {
        // The decision's strings become the header values as they are, without a copy;
        // the usual cache header is checked once, at compile time.
        let value = match value {
            Cow::Borrowed(DEFAULT_CACHE_CONTROL) => Ok(DEFAULT_CACHE_HEADER),
            Cow::Borrowed(value) => {
                HeaderValue::from_maybe_shared(Bytes::from_static(value.as_bytes()))
            }
            Cow::Owned(value) => HeaderValue::from_maybe_shared(Bytes::from(value)),
        };
        if let (Some(name), Ok(value)) = (header_name(name), value) {
            headers.insert(name, value);
        }
    }
    res
}

const DEFAULT_CACHE_HEADER: HeaderValue = HeaderValue::from_static(DEFAULT_CACHE_CONTROL);

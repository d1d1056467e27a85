//! The domain registry's rules: what a registration may say, who sees which domain,
//! and the default domain registered at startup (D-008 to D-013 in docs/decisions/domains.md).

use crate::api_keys::valid_owner;
use crate::cache::RedirectCache;
use crate::db::Db;
use crate::error::AppError;
use crate::links::TargetPolicy;
use crate::links::{on_allowed_host, redirect_url, Lookups};
use crate::model::time::now_ms;
use crate::model::{Domain, DomainAccess, DomainStatus};
use crate::principal::Principal;
use crate::store;
use crate::store::StoreError;
use crate::views::domains::{
    BrandBody, CreateDomain, UpdateDomain, MAX_CODE_LENGTH, MAX_LIST, MAX_MAX_AGE_S,
    MIN_CODE_LENGTH,
};
use shared::codes::RANDOM_LENGTHS;
use shared::{normalize_short_domain, Alphabet, CodeSpace, RedirectStatus};

/// The domain registry: registering, changing and removing the short domains.
#[derive(Debug)]
pub struct Domains {
    /// The API's pool.
    db: Db,
    /// Told at once of every change, for this origin's own redirect.
    cache: RedirectCache,
    /// What the domain's own pages (not found, root, expired) must pass.
    policy: TargetPolicy,
}

impl Domains {
    pub fn new(db: Db, cache: RedirectCache, policy: TargetPolicy) -> Self {
        Domains { db, cache, policy }
    }

    /// The domains `who` sees: every one to an operator; to anyone else those its owner
    /// may use (a key limited to domains, only those).
    pub async fn visible(&self, who: &Principal) -> Result<Vec<Domain>, AppError> {
        let mut domains = match who.owner() {
            _ if who.is_operator() => store::domains::list(&self.db).await?,
            Some(owner) => store::domains::for_owner(&self.db, owner).await?,
            None => return Err(AppError::NotFound),
        };
        domains.retain(|d| who.reaches(&d.domain));
        Ok(domains)
    }

    /// The domain `raw` names, to an operator or to one whose owner may use it and that
    /// reaches it; not found for anyone else.
    pub async fn read(&self, who: &Principal, raw: &str) -> Result<Domain, AppError> {
        self.seen_by(who, raw, |d, owner| d.access.admits(owner))
            .await
    }

    /// The domain `raw` names, to an operator or to one of the owners it is registered
    /// to (a shared domain is its operators'); not found for anyone else.
    pub async fn held(&self, who: &Principal, raw: &str) -> Result<Domain, AppError> {
        self.seen_by(who, raw, |d, owner| {
            matches!(&d.access, DomainAccess::Owners(_)) && d.access.admits(owner)
        })
        .await
    }

    /// The domain `raw` names, if `who` reaches it and is an operator or acts for an
    /// owner `theirs` admits; not found otherwise.
    async fn seen_by(
        &self,
        who: &Principal,
        raw: &str,
        theirs: impl Fn(&Domain, &str) -> bool,
    ) -> Result<Domain, AppError> {
        let name = normalize_short_domain(raw).map_err(|_| AppError::NotFound)?;
        store::domains::get(&self.db, &name)
            .await?
            .filter(|d| {
                who.reaches(&d.domain)
                    && (who.is_operator() || who.owner().is_some_and(|o| theirs(d, o)))
            })
            .ok_or(AppError::NotFound)
    }

    /// The codes asked of `d` that its legacy list lacks, most visited first: up to
    /// `limit` after `after` (visits, code), from a domain [`Self::held`] gave.
    pub async fn legacy_misses(
        &self,
        d: &Domain,
        after: Option<(i64, &str)>,
        limit: i64,
    ) -> Result<Vec<store::legacy_misses::LegacyMiss>, AppError> {
        Ok(store::legacy_misses::list(&self.db, &d.domain, after, limit).await?)
    }

    /// Adds `codes` to a legacy list as its domain's admin gave them (not an import's).
    pub async fn list_legacy_codes(
        &self,
        name: &str,
        codes: &[String],
    ) -> Result<LegacyCodesAdded, AppError> {
        self.add_legacy_codes(name, codes, store::legacy_codes::Source::List)
            .await
    }

    /// Registers the domain `req` describes: every field checked, then stored; this
    /// origin's redirect hears of it at once, the others through the database.
    pub async fn register(&self, req: &CreateDomain) -> Result<Domain, AppError> {
        let now = crate::model::time::now_ms();
        let mut req = req.clone();
        if req.legacy_url.is_some() && req.legacy_until.is_none() {
            req.legacy_until = Some(default_legacy_until(now));
        }
        let mut domain = req.domain(self, now).await?;
        domain.version = store::domains::insert(&self.db, &domain).await?;
        self.cache.domains_changed();
        Ok(domain)
    }
}

impl CreateDomain {
    /// The domain this request registers, every field checked; each refusal names its
    /// field.
    pub async fn domain(&self, state: &Domains, now: i64) -> Result<Domain, AppError> {
        let name =
            normalize_short_domain(&self.domain).map_err(|e| AppError::invalid("domain", e))?;
        let access = match (self.shared, self.owners.is_empty()) {
            (true, true) => DomainAccess::Shared,
            (true, false) => {
                return Err(AppError::invalid(
                    "owners",
                    "a shared domain has no owners: send one or the other",
                ))
            }
            (false, true) => {
                return Err(AppError::invalid(
                    "owners",
                    "name the owners whose keys may use the domain, or send \"shared\": true",
                ))
            }
            (false, false) => {
                if self.owners.len() > MAX_LIST {
                    return Err(AppError::invalid("owners", format!("at most {MAX_LIST}")));
                }
                if let Some(bad) = self.owners.iter().find(|o| !valid_owner(o)) {
                    return Err(AppError::invalid(
                        "owners",
                        format!("{bad:?} is not an owner: 1 to 128 bytes, no control characters"),
                    ));
                }
                DomainAccess::owners(self.owners.iter().cloned())
            }
        };
        let mut d = Domain::new(&name, access, now);
        let alphabet = match &self.alphabet {
            None => d.settings.codes.alphabet(),
            Some(a) => a
                .parse::<Alphabet>()
                .map_err(|e| AppError::invalid("alphabet", e))?,
        };
        let random = match self.code_strategy.as_deref() {
            None | Some("sequential") => false,
            Some("random") => true,
            Some(_) => {
                return Err(AppError::invalid(
                    "code_strategy",
                    "use sequential or random",
                ))
            }
        };
        let lengths = if random {
            i64::from(*RANDOM_LENGTHS.start())..=i64::from(*RANDOM_LENGTHS.end())
        } else {
            MIN_CODE_LENGTH..=MAX_CODE_LENGTH
        };
        let length = match self.code_length {
            None => d.settings.codes.length(),
            Some(n) if lengths.contains(&n) => n as u8,
            Some(_) => {
                return Err(AppError::invalid(
                    "code_length",
                    format!(
                        "from {} to {} for {} codes",
                        lengths.start(),
                        lengths.end(),
                        if random { "random" } else { "sequential" }
                    ),
                ))
            }
        };
        d.settings.codes = if random {
            CodeSpace::random(alphabet, length)
        } else {
            CodeSpace::new(alphabet, length)
        }
        .map_err(|e| AppError::invalid("code_length", e))?;
        if let Some(ci) = self.case_insensitive {
            d.settings.case_insensitive = ci;
        }
        if d.settings.case_insensitive && alphabet != Alphabet::Base36 {
            return Err(AppError::invalid(
                "case_insensitive",
                format!(
                    "needs \"alphabet\": \"base36\": in {alphabet}, two codes that differ only \
                     in case are two links"
                ),
            ));
        }
        if let Some(f) = self.forward_query {
            d.settings.forward_query = f;
        }
        if let Some(i) = self.interstitial {
            d.settings.interstitial = i;
        }
        if let Some(code) = self.default_redirect {
            d.settings.default_redirect = u16::try_from(code)
                .ok()
                .and_then(|c| RedirectStatus::try_from(c).ok())
                .ok_or_else(|| AppError::invalid("default_redirect", "use 301, 302, 307 or 308"))?;
        }
        if let Some(s) = self.max_age_s {
            d.settings.max_age_s = u32::try_from(s)
                .ok()
                .filter(|&s| i64::from(s) <= MAX_MAX_AGE_S)
                .ok_or_else(|| {
                    AppError::invalid("max_age_s", format!("from 0 to {MAX_MAX_AGE_S} seconds"))
                })?;
        }
        if let Some(s) = &self.status {
            d.settings.status = DomainStatus::parse(s)
                .ok_or_else(|| AppError::invalid("status", "use active or disabled"))?;
        }
        if let Some(b) = &self.brand {
            d.settings.brand = Some(
                shared::Brand::check(&b.name, &b.colour)
                    .map_err(|e| AppError::invalid("brand", e))?,
            );
        }
        // The allowed hosts first: the domain's own pages must be on them too.
        if let Some(hosts) = &self.allowed_target_hosts {
            if hosts.is_empty() || hosts.len() > MAX_LIST {
                return Err(AppError::invalid(
                    "allowed_target_hosts",
                    format!("1 to {MAX_LIST} hosts, or leave it out to allow any"),
                ));
            }
            let mut normal = Vec::with_capacity(hosts.len());
            for h in hosts {
                normal.push(
                    normalize_short_domain(h)
                        .map_err(|e| AppError::invalid("allowed_target_hosts", e))?,
                );
            }
            normal.sort();
            normal.dedup();
            d.allowed_target_hosts = Some(normal);
        }
        let mut lookups = Lookups::new(&state.db, &state.policy);
        for (field, raw, slot) in [
            (
                "not_found_url",
                &self.not_found_url,
                &mut d.settings.not_found_url,
            ),
            ("root_url", &self.root_url, &mut d.settings.root_url),
            (
                "expired_url",
                &self.expired_url,
                &mut d.settings.expired_url,
            ),
        ] {
            if let Some(raw) = raw {
                let url = redirect_url(&mut lookups, &name, field, raw).await?;
                on_allowed_host(d.allowed_target_hosts.as_deref(), &name, field, &url)?;
                *slot = Some(url);
            }
        }
        if let Some(raw) = &self.legacy_url {
            // Target policy, but not the domain's allowed hosts: those say where its
            // links may point, and the old shortener is where its links were.
            let url = redirect_url(&mut lookups, &name, "legacy_url", raw).await?;
            d.settings.legacy_url = Some(legacy_base(&url)?);
            d.settings.legacy_until = self
                .legacy_until
                .as_deref()
                .map(|raw| legacy_until(raw, now))
                .transpose()?;
        } else if self.legacy_until.is_some() {
            return Err(AppError::invalid(
                "legacy_until",
                "ends the fallback to legacy_url: set that too",
            ));
        }
        Ok(d)
    }
}

/// The most codes one request adds to a domain's legacy list (a file loads in chunks).
pub const MAX_LEGACY_CODES_PER_REQUEST: usize = 10_000;

/// What adding codes to a domain's legacy list did.
#[derive(Debug, Clone, PartialEq)]
pub struct LegacyCodesAdded {
    /// Codes new to the list (each queued for the edge).
    pub added: u64,
    /// Codes the list holds now.
    pub listed: i64,
    /// The domain, as read for the change.
    pub domain: Domain,
}

impl Domains {
    /// Adds `codes` to the list of codes that lived at the shortener domain `name` moved
    /// from: only these are sent on there by its fallback. Each code is taken in the
    /// form the domain stores it (lowercase on a case-insensitive domain), may be a
    /// short URL on the old shortener or on the domain (its last path segment), and
    /// must be a code the domain could serve; the first that is not refuses the whole
    /// request, naming it, so that a list is loaded whole or not at all.
    pub async fn add_legacy_codes(
        &self,
        name: &str,
        codes: &[String],
        source: store::legacy_codes::Source,
    ) -> Result<LegacyCodesAdded, AppError> {
        if codes.is_empty() || codes.len() > MAX_LEGACY_CODES_PER_REQUEST {
            return Err(AppError::invalid(
                "codes",
                format!("1 to {MAX_LEGACY_CODES_PER_REQUEST} codes a request: send a longer list in parts"),
            ));
        }
        let domain = store::domains::get(&self.db, name)
            .await?
            .ok_or(AppError::NotFound)?;
        let mut canonical = Vec::with_capacity(codes.len());
        for (i, raw) in codes.iter().enumerate() {
            let code = legacy_code_of(raw);
            let code = domain.settings.canonical_code(code).into_owned();
            if !shared::codes::is_plausible_code(&code)
                || shared::RouteKey::new(&domain.domain, &code).is_none()
            {
                return Err(AppError::invalid(
                    "codes",
                    format!(
                        "item {i}: {raw:?} is no code a visitor could ask {name} for \
                         (letters, digits, - and _, at most 64, not a reserved word)"
                    ),
                ));
            }
            canonical.push(code);
        }
        canonical.sort_unstable();
        canonical.dedup();
        let refs: Vec<&str> = canonical.iter().map(String::as_str).collect();
        let added = store::legacy_codes::add(&self.db, name, &refs, source, now_ms()).await?;
        let listed = store::legacy_codes::count(&self.db, name).await?;
        Ok(LegacyCodesAdded {
            added,
            listed,
            domain,
        })
    }

    /// How many codes `d`'s legacy list holds and, for `code` (a code or a short URL
    /// ending in one, 1 to 256 characters), the code as the domain stores it and whether
    /// it is listed.
    pub async fn legacy_list(
        &self,
        d: &Domain,
        code: Option<&str>,
    ) -> Result<(i64, Option<(String, bool)>), AppError> {
        let listed = store::legacy_codes::count(&self.db, &d.domain).await?;
        let Some(raw) = code else {
            return Ok((listed, None));
        };
        if raw.is_empty() || raw.chars().count() > 256 {
            return Err(AppError::invalid("code", "1 to 256 characters"));
        }
        let code = d.settings.canonical_code(legacy_code_of(raw)).into_owned();
        let known = store::legacy_codes::known(&self.db, &d.domain, &code).await?;
        Ok((listed, Some((code, known))))
    }
}

/// The code a line of a legacy list names: the line itself, or the last path segment of
/// a short URL (`https://bit.ly/3AbCdEf`, `go.acme.example/Spring24`), trimmed.
pub fn legacy_code_of(raw: &str) -> &str {
    let raw = raw.trim();
    let path = raw.split(['?', '#']).next().unwrap_or_default();
    match path.contains('/') {
        true => path
            .trim_end_matches('/')
            .rsplit('/')
            .next()
            .unwrap_or_default(),
        false => path,
    }
}

/// The codes of a legacy list's text: a code or short URL a line, blank lines and what
/// follows `#` ignored.
pub fn legacy_list_lines(text: &str) -> Vec<String> {
    text.lines()
        .map(|l| l.split('#').next().unwrap_or_default().trim())
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect()
}

/// How long a fallback runs when it is set without an end date.
pub const LEGACY_DEFAULT_DAYS: i64 = 90;
/// The furthest ahead its end date may be: a move is weeks of work, and an old
/// shortener's codes keep being someone else's to change (docs/migrating.md).
pub const LEGACY_MAX_DAYS: i64 = 365;

/// A `legacy_until` (RFC 3339) as the settings hold it, Unix seconds: at most
/// [`LEGACY_MAX_DAYS`] after `now` (Unix ms). A moment past is taken: it ends the
/// fallback now and keeps the base on record.
fn legacy_until(raw: &str, now: i64) -> Result<i64, AppError> {
    let at = crate::model::time::parse_rfc3339(raw).ok_or_else(|| {
        AppError::invalid(
            "legacy_until",
            "an RFC 3339 time, e.g. 2027-03-01T00:00:00Z",
        )
    })?;
    if at > now + LEGACY_MAX_DAYS * 86_400_000 {
        return Err(AppError::invalid(
            "legacy_until",
            format!("at most {LEGACY_MAX_DAYS} days ahead: a fallback must end"),
        ));
    }
    Ok(at.div_euclid(1000))
}

/// The default end of a fallback set at `now` (Unix ms), RFC 3339.
fn default_legacy_until(now: i64) -> String {
    crate::model::time::rfc3339(now + LEGACY_DEFAULT_DAYS * 86_400_000)
}

/// A `legacy_url` as the fallback appends codes to it: a base without a query or a
/// fragment, and without its trailing slash.
fn legacy_base(url: &str) -> Result<String, AppError> {
    let parsed = url::Url::parse(url).map_err(|e| AppError::invalid("legacy_url", e))?;
    if parsed.query().is_some() || parsed.fragment().is_some() {
        return Err(AppError::invalid(
            "legacy_url",
            "the old shortener's base, without a query or a fragment: codes are appended to its path",
        ));
    }
    Ok(url.trim_end_matches('/').to_owned())
}

/// The registration that says what `d` is, every field set.
fn registration_of(d: &Domain) -> CreateDomain {
    let (shared, owners) = match &d.access {
        DomainAccess::Shared => (true, vec![]),
        DomainAccess::Owners(o) => (false, o.clone()),
    };
    CreateDomain {
        domain: d.domain.clone(),
        shared,
        owners,
        alphabet: Some(d.settings.codes.alphabet().name().to_owned()),
        code_length: Some(i64::from(d.settings.codes.length())),
        code_strategy: Some(
            if d.settings.codes.is_random() {
                "random"
            } else {
                "sequential"
            }
            .to_owned(),
        ),
        case_insensitive: Some(d.settings.case_insensitive),
        forward_query: Some(d.settings.forward_query),
        interstitial: Some(d.settings.interstitial),
        default_redirect: Some(i64::from(d.settings.default_redirect.code())),
        max_age_s: Some(i64::from(d.settings.max_age_s)),
        not_found_url: d.settings.not_found_url.clone(),
        legacy_url: d.settings.legacy_url.clone(),
        legacy_until: d
            .settings
            .legacy_until
            .map(|s| crate::model::time::rfc3339(s.saturating_mul(1000))),
        root_url: d.settings.root_url.clone(),
        expired_url: d.settings.expired_url.clone(),
        allowed_target_hosts: d.allowed_target_hosts.clone(),
        status: Some(d.settings.status.as_str().to_owned()),
        brand: d.settings.brand.as_ref().map(|b| BrandBody {
            name: b.name.clone(),
            colour: b.colour.clone(),
        }),
    }
}

/// Changes the domain `name` from version `expected` by `patch`, by the rules of a
/// registration (each field checked again); the domain as it is now.
pub async fn update_domain(
    state: &Domains,
    name: &str,
    expected: u64,
    patch: UpdateDomain,
) -> Result<Domain, AppError> {
    let current = store::domains::get(&state.db, name)
        .await?
        .ok_or(AppError::NotFound)?;
    let mut req = registration_of(&current);
    if let Some(shared) = patch.shared {
        req.shared = shared;
        if shared {
            req.owners.clear();
        }
    }
    if let Some(owners) = patch.owners {
        req.owners = owners;
    }
    req.alphabet = patch.alphabet.or(req.alphabet);
    req.code_length = patch.code_length.or(req.code_length);
    req.code_strategy = patch.code_strategy.or(req.code_strategy);
    req.case_insensitive = patch.case_insensitive.or(req.case_insensitive);
    req.forward_query = patch.forward_query.or(req.forward_query);
    req.interstitial = patch.interstitial.or(req.interstitial);
    req.default_redirect = patch.default_redirect.or(req.default_redirect);
    req.max_age_s = patch.max_age_s.or(req.max_age_s);
    req.status = patch.status.or(req.status);
    // `null` for the old shortener ends the fallback, and its end date with it; a new
    // one runs for the default time unless the change says how long (below).
    let now = now_ms();
    let until_given = patch.legacy_until.is_some();
    match (&patch.legacy_url, patch.legacy_until) {
        (_, Some(until)) => req.legacy_until = until,
        (Some(None), None) => req.legacy_until = None,
        _ => {}
    }
    for (slot, given) in [
        (&mut req.not_found_url, patch.not_found_url),
        (&mut req.legacy_url, patch.legacy_url),
        (&mut req.root_url, patch.root_url),
        (&mut req.expired_url, patch.expired_url),
    ] {
        if let Some(v) = given {
            *slot = v;
        }
    }
    if let Some(hosts) = patch.allowed_target_hosts {
        req.allowed_target_hosts = hosts;
    }
    if let Some(brand) = patch.brand {
        req.brand = brand;
    }
    let mut next = req.domain(state, now).await?;
    if !until_given
        && next.settings.legacy_url.is_some()
        && next.settings.legacy_url != current.settings.legacy_url
    {
        next.settings.legacy_until =
            Some((now + LEGACY_DEFAULT_DAYS * 86_400_000).div_euclid(1000));
    }
    // Compared once the change is known to be valid: one that no version would take is
    // refused as such (422), not sent back to be read again (D-235).
    if current.version != expected {
        return Err(AppError::Stale {
            current: Some(current.version),
        });
    }
    let shape = |d: &Domain| (d.settings.codes, d.settings.case_insensitive);
    let shape_changes = shape(&next) != shape(&current);
    next.version = current.version + 1;
    next.created_at = current.created_at;
    match store::domains::update(&state.db, &next, expected, shape_changes).await {
        Err(StoreError::HoldsLinks) => Err(AppError::InUse(format!(
            "{name} holds links: its alphabet, code length and case rule are fixed, so that \
             every published code keeps its meaning"
        ))),
        Err(e) => Err(e.into()),
        Ok(()) => {
            state.cache.domains_changed();
            Ok(next)
        }
    }
}

/// Removes the domain `name` when no link lives on it and it is not the default
/// domain; at version `expected` when one is given.
pub async fn delete_domain(
    state: &Domains,
    name: &str,
    expected: Option<u64>,
) -> Result<(), AppError> {
    let current = store::domains::get(&state.db, name)
        .await?
        .ok_or(AppError::NotFound)?;
    if expected.is_some_and(|e| e != current.version) {
        return Err(AppError::Stale {
            current: Some(current.version),
        });
    }
    if name == state.policy.default_domain {
        return Err(AppError::InUse(format!(
            "{name} is this origin's --default-domain: links created without a domain go there"
        )));
    }
    match store::domains::delete(&state.db, name, expected).await {
        Ok(true) => {
            state.cache.domains_changed();
            Ok(())
        }
        Ok(false) => Err(AppError::NotFound),
        Err(StoreError::HoldsLinks) => Err(AppError::InUse(format!(
            "{name} holds links, and their codes are kept for ever: disable it instead \
             (PATCH with \"status\": \"disabled\")"
        ))),
        Err(e) => Err(e.into()),
    }
}

/// The request `hop-origin domains add` stands for: its flags, and `settings`, a JSON
/// object of the API's setting fields.
pub fn cli_request(
    domain: &str,
    shared: bool,
    owners: &[String],
    settings: Option<&str>,
) -> Result<CreateDomain, String> {
    let mut body = match settings {
        None => serde_json::Value::Object(Default::default()),
        Some(text) => serde_json::from_str(text).map_err(|e| format!("--settings: {e}"))?,
    };
    let Some(fields) = body.as_object_mut() else {
        return Err("--settings takes a JSON object".into());
    };
    for name in ["domain", "shared", "owners"] {
        if fields.contains_key(name) {
            return Err(format!(
                "--settings: give {name} as the command's own argument"
            ));
        }
    }
    fields.insert("domain".into(), domain.into());
    fields.insert("shared".into(), shared.into());
    fields.insert("owners".into(), owners.into());
    serde_json::from_value(body).map_err(|e| format!("--settings: {e}"))
}

/// The change `hop-origin domains set` stands for: `changes`, a JSON object of the
/// PATCH body's fields.
pub fn cli_change(changes: &str) -> Result<UpdateDomain, String> {
    let body: serde_json::Value =
        serde_json::from_str(changes).map_err(|e| format!("--settings: {e}"))?;
    if !body.is_object() {
        return Err("--settings takes a JSON object".into());
    }
    serde_json::from_value(body).map_err(|e| format!("--settings: {e}"))
}

/// The registry made ready at startup: the default domain registered (shared), then
/// every domain that holds links but is not registered (for their owners), and the
/// settings of domains the edge has none of queued for it.
pub async fn prepare_registry(db: &Db, default_domain: &str) -> Result<(), AppError> {
    register_if_missing(db, default_domain).await?;
    for name in register_link_domains(db).await? {
        tracing::info!(domain = %name, "registered a domain that held links, for their owners");
    }
    let sent = store::domains::send_unsent_configs(db).await?;
    if sent > 0 {
        tracing::info!(
            domains = sent,
            "queued the settings of domains the edge had none for"
        );
    }
    Ok(())
}

/// Registers every domain that holds links but is not in the registry (links made
/// before it), owned by the owners of those links with every default setting, so that
/// they keep redirecting as they did and nobody else can start creating links there.
/// Run at startup after [`register_if_missing`] of the default domain, which stays
/// shared. Once every such domain is registered, it costs one probe per served domain.
pub async fn register_link_domains(db: &Db) -> Result<Vec<String>, StoreError> {
    let mut registered = Vec::new();
    for name in store::domains::served(db).await? {
        if store::domains::get(db, &name).await?.is_some() {
            continue;
        }
        let owners = store::domains::owners_of_links_on(db, &name).await?;
        let domain = Domain::new(&name, DomainAccess::owners(owners), now_ms());
        match store::domains::insert(db, &domain).await {
            Ok(_) => registered.push(name),
            Err(StoreError::Registered) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(registered)
}

/// Registers `domain` shared, with every default, unless it is registered: the default
/// domain at startup, so that a fresh install serves it with no step of its own.
pub async fn register_if_missing(db: &Db, domain: &str) -> Result<(), StoreError> {
    if store::domains::get(db, domain).await?.is_some() {
        return Ok(());
    }
    match store::domains::insert(db, &Domain::new(domain, DomainAccess::Shared, now_ms())).await {
        // Another origin registered it first.
        Err(StoreError::Registered) | Ok(_) => Ok(()),
        Err(e) => Err(e),
    }
}

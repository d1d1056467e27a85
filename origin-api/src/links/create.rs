//! Creating a link: validate everything first, then allocate, then one insert that the
//! unique index arbitrates. Bad input is refused with the field and the reason, and
//! nothing is stored.

use super::fields;
use super::fingerprint::Fingerprint;
use super::lookups::Lookups;
use super::service::Links;
use crate::error::AppError;
use crate::model::time::now_ms;
use crate::model::Creator;
use crate::model::{Domain, Refusal};
use crate::model::{Link, LinkState};
use crate::store;
use crate::store::{IdempotencyKey, Idempotent, StoreError};
use crate::views::links::CreateLink;
use shared::codes::validate_alias;
use shared::{normalize_short_domain, CodeCodec, CodeKind, CodeSpace, DomainSettings};

/// How long an idempotency key is remembered.
pub const IDEMPOTENCY_TTL_MS: i64 = 24 * 3600 * 1000;

/// What a create call produced.
#[derive(Debug, Clone)]
pub enum Created {
    New(Box<Link>),
    /// An earlier request with the same idempotency key and body made the link; this is
    /// its recorded response (a link view in JSON).
    Replayed(String),
    /// `dedupe` found the owner's live link to the same target: nothing was created.
    Existing(Box<Link>),
}

/// Checks an `Idempotency-Key` header value: 1 to 255 visible ASCII characters.
pub fn check_idempotency_key(key: &str) -> Result<&str, AppError> {
    if !key.is_empty() && key.len() <= 255 && key.bytes().all(|b| b.is_ascii_graphic()) {
        Ok(key)
    } else {
        Err(AppError::BadRequest(
            "Idempotency-Key is 1 to 255 visible ASCII characters".into(),
        ))
    }
}

/// Creates a link for `creator`'s owner from a request body, at most once per
/// idempotency key.
pub async fn create_link_once(
    state: &Links,
    creator: &Creator<'_>,
    req: CreateLink,
    idempotency_key: Option<&str>,
) -> Result<Created, AppError> {
    let Some(key) = idempotency_key else {
        if let Some(existing) = deduplicated(state, creator, &req).await? {
            return Ok(Created::Existing(Box::new(existing)));
        }
        return create_link(state, creator, req)
            .await
            .map(|link| Created::New(Box::new(link)));
    };
    let fingerprint = Fingerprint::of(state, &req)?;
    let idem = IdempotencyKey {
        owner_id: creator.owner,
        key,
        request_hash: fingerprint.as_str(),
        expired_before: now_ms() - IDEMPOTENCY_TTL_MS,
    };
    // A retry is answered from the record, whatever changed since.
    if let Some((hash, response)) = store::idempotency::find(&state.db, &idem).await? {
        return replay(&fingerprint, hash, response).map(Created::Replayed);
    }
    if let Some(existing) = deduplicated(state, creator, &req).await? {
        return Ok(Created::Existing(Box::new(existing)));
    }
    let mut lookups = Lookups::new(&state.db, &state.settings.policy);
    let link = prepare_link(state, &mut lookups, creator, &req).await?;
    let response = serde_json::to_string(&state.view(&link)).unwrap_or_default();
    match store::links::insert_idempotent(
        &state.db,
        &link,
        &lookups.judged_by(),
        &idem,
        &response,
        creator.actor,
        &state.limits_for(creator.owner).await?,
    )
    .await
    {
        Ok(Idempotent::Created) => {
            stored(state, &link).await;
            Ok(Created::New(Box::new(link)))
        }
        Ok(Idempotent::Replay {
            request_hash: hash,
            response,
        }) => replay(&fingerprint, hash, response).map(Created::Replayed),
        Err(e) => Err(write_failed(
            state,
            &link.route_key(),
            generated_taken(&link, e),
        )),
    }
}

/// With `dedupe`, the owner's oldest live public link on the request's domain to the
/// same target, as normalized (not disabled, expired, exhausted or private), if any.
/// The domain and the target are checked as a create would check them, so what a create
/// refuses is refused here too (a key limited to other domains learns nothing of the
/// links there). A request that asks for more than a plain public link is refused: the
/// link found would be weaker than the one asked for.
async fn deduplicated(
    state: &Links,
    creator: &Creator<'_>,
    req: &CreateLink,
) -> Result<Option<Link>, AppError> {
    if req.dedupe != Some(true) {
        return Ok(None);
    }
    if req.code.is_some() {
        return Err(AppError::invalid(
            "dedupe",
            "an alias names a new link: send dedupe or code, not both",
        ));
    }
    if let Some(field) = asks_more_than_a_plain_link(req) {
        return Err(AppError::invalid(
            "dedupe",
            format!(
                "dedupe answers an existing public link, which would not have the {field} asked for: \
                 send dedupe without it, or create a new link"
            ),
        ));
    }
    let domain = match &req.domain {
        Some(d) => normalize_short_domain(d).map_err(|e| AppError::invalid("domain", e))?,
        None => state.settings.policy.default_domain.clone(),
    };
    let mut lookups = Lookups::new(&state.db, &state.settings.policy);
    let registered = lookups.domain(&domain).await?;
    admit_new_link(&domain, registered.as_deref(), creator)?;
    let target = fields::target(&mut lookups, &domain, &req.target_url).await?;
    Ok(
        store::links::to_target(&state.db, creator.owner, &domain, &target)
            .await?
            .into_iter()
            .find(is_plain_public),
    )
}

/// Whether `link` is what a plain create would make: anyone may follow it, to its
/// target, for good, counted. A link that expires (or has), ends after a visit limit,
/// sends some visitors elsewhere, shows a page first or counts nothing is weaker than
/// a `dedupe` without those fields asks for. Cosmetic fields (title, tags, preview,
/// redirect status) do not matter.
fn is_plain_public(link: &Link) -> bool {
    let o = &link.options;
    link.expires_at.is_none()
        && o.access.is_none()
        && o.max_visits.is_none()
        && !o.exhausted
        && o.rules.is_empty()
        && o.split.is_none()
        && o.expired_url.is_none()
        && !o.interstitial
        && !o.no_clicks
}

/// The first field of `req` that asks for something a plain public link does not give a
/// visitor (who may visit, until when, where to, whether counted), if any.
fn asks_more_than_a_plain_link(req: &CreateLink) -> Option<&'static str> {
    let asked = [
        (
            req.access
                .is_some_and(|a| a != crate::views::links::AccessMode::Public),
            "access",
        ),
        (req.password.is_some(), "password"),
        (req.expires_at.is_some(), "expires_at"),
        (req.max_visits.is_some(), "max_visits"),
        (req.rules.as_ref().is_some_and(|r| !r.is_empty()), "rules"),
        (req.split.is_some(), "split"),
        (req.expired_url.is_some(), "expired_url"),
        (req.interstitial == Some(true), "interstitial"),
        (req.record_clicks == Some(false), "record_clicks"),
    ];
    asked.into_iter().find(|(a, _)| *a).map(|(_, field)| field)
}

/// The response recorded under an idempotency key, to answer again: only when the
/// earlier request had the same body (`recorded_hash`); a different body under the same
/// key is refused (single and bulk creates alike).
pub(super) fn replay(
    request: &Fingerprint,
    recorded_hash: String,
    response: String,
) -> Result<String, AppError> {
    if request.matches(&recorded_hash) {
        Ok(response)
    } else {
        Err(AppError::invalid(
            "Idempotency-Key",
            "this key was used with a different request body; use a new key for a new request",
        ))
    }
}

/// Creates a link for `creator`'s owner from a request body.
pub async fn create_link(
    state: &Links,
    creator: &Creator<'_>,
    req: CreateLink,
) -> Result<Link, AppError> {
    let mut lookups = Lookups::new(&state.db, &state.settings.policy);
    let mut link = prepare_link(state, &mut lookups, creator, &req).await?;
    let limits = state.limits_for(creator.owner).await?;
    let mut tries = 1;
    loop {
        match store::links::insert(
            &state.db,
            &link,
            &lookups.judged_by(),
            creator.actor,
            &limits,
        )
        .await
        {
            Ok(()) => {
                stored(state, &link).await;
                return Ok(link);
            }
            // Another link drew the same random code: the unique index refused this one,
            // and it draws again (docs/random-codes.md).
            Err(StoreError::Taken) if link.is_random_code() => {
                state.metrics.random_code_collisions.inc();
                let space = lookups
                    .domain(&link.domain)
                    .await?
                    .map(|d| d.settings.codes)
                    .unwrap_or_default();
                if tries == RANDOM_TRIES {
                    return Err(AppError::CodeSpaceFull {
                        domain: link.domain.clone(),
                        size: space.size(),
                    });
                }
                tries += 1;
                link.code = random_code(state, &space)?;
            }
            Err(e) => {
                return Err(write_failed(
                    state,
                    &link.route_key(),
                    generated_taken(&link, e),
                ))
            }
        }
    }
}

/// What a failed insert of `route` (a route key, or what a bulk call inserted) answers:
/// 409 when the code is taken. Any other collision (an id handed out twice) is a fault
/// of the system, never of the request: a 500, logged and counted in
/// `hop_write_conflicts_total`.
pub(crate) fn write_failed(state: &Links, route: &str, e: StoreError) -> AppError {
    if let StoreError::Conflict(detail) = &e {
        count_conflict(state, route, detail);
    }
    answer(route, e)
}

/// [`write_failed`]'s answer, without counting (a bulk call answers each link it could
/// not insert, and counts them once, apart).
pub(crate) fn answer(route: &str, e: StoreError) -> AppError {
    match e {
        StoreError::Taken => AppError::Taken {
            route: route.to_owned(),
        },
        other => other.into(),
    }
}

/// Logs and counts a write that collided with a row that is not its route key.
pub(crate) fn count_conflict(state: &Links, route: &str, detail: &str) {
    state.metrics.write_conflicts.inc();
    tracing::error!(%route, %detail,
        "a link write collided with a row that is not its route key");
}

/// A generated code is never taken unless its domain's sequence handed its number out
/// twice (a restored `id_segments`, say): a fault of the system, not of the request.
pub(crate) fn generated_taken(link: &Link, e: StoreError) -> StoreError {
    match e {
        StoreError::Taken if link.code_kind == CodeKind::Generated && !link.is_random_code() => {
            StoreError::Conflict(format!(
                "the generated code {} is held already: {}'s code sequence issued its number twice",
                link.route_key(),
                link.domain
            ))
        }
        other => other,
    }
}

/// What follows a committed create: visitors of this origin see the link at once (it
/// replaces any "unknown" the redirect cache held), and it is counted. The cache holds
/// the record unmarked: the redirect checks bans against the live denylist.
pub(crate) async fn stored(state: &Links, link: &Link) {
    state.cache.fence(link).await;
    state.metrics.links_created.inc();
}

/// Validates the request and allocates the link's id and code, storing nothing. (Whether
/// a ban covers the new link is decided by the store, inside the write.)
pub(crate) async fn prepare_link(
    state: &Links,
    lookups: &mut Lookups<'_>,
    creator: &Creator<'_>,
    req: &CreateLink,
) -> Result<Link, AppError> {
    prepare_link_as(state, lookups, creator, req, Codes::Alias).await
}

/// Which codes a new link may ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Codes {
    /// An alias: never of the domain's generated shape, so the two kinds never collide.
    Alias,
    /// A code another shortener printed ([`shared::codes::validate_imported_code`]): any
    /// shape; the import has made sure the domain has no ceiling and that the edge asks
    /// before it answers 404 ([`crate::store::foreign_codes`]).
    Imported,
    /// As `Imported`, for a dry run: the link is judged whole but spends no id (its
    /// `link_id` is 0) and is never stored.
    ImportedDryRun,
}

/// [`prepare_link`], with codes as `codes` says.
pub(crate) async fn prepare_link_as(
    state: &Links,
    lookups: &mut Lookups<'_>,
    creator: &Creator<'_>,
    req: &CreateLink,
    codes: Codes,
) -> Result<Link, AppError> {
    let now = now_ms();
    let domain = match &req.domain {
        Some(d) => normalize_short_domain(d).map_err(|e| AppError::invalid("domain", e))?,
        None => state.settings.policy.default_domain.clone(),
    };
    let registered = lookups.domain(&domain).await?;
    admit_new_link(&domain, registered.as_deref(), creator)?;
    let settings = registered.map(|d| d.settings.clone()).unwrap_or_default();

    let target_url = fields::target(lookups, &domain, &req.target_url).await?;
    let expires_at = req
        .expires_at
        .as_deref()
        .map(|e| fields::expiry(e, now))
        .transpose()?;
    let redirect = match req.redirect {
        None => settings.default_redirect,
        Some(code) => fields::redirect(code)?,
    };
    let title = fields::title(req.title.clone())?;
    let tags = fields::tags(req.tags.clone().unwrap_or_default())?;
    // A dry run's link is never stored: its password is checked, never hashed.
    let hashing = (!matches!(codes, Codes::ImportedDryRun)).then_some(&state.passwords.hashing);
    let options = fields::options(lookups, hashing, &domain, req).await?;

    // Validate a custom alias before spending an id on it.
    let alias = match &req.code {
        Some(code) => {
            let code = settings.canonical_code(code).into_owned();
            match codes {
                Codes::Alias => check_alias(state, &code, &settings.codes)?,
                Codes::Imported | Codes::ImportedDryRun => check_imported(state, &code)?,
            }
            Some(code)
        }
        None => None,
    };
    let (codec, key_version) = codec(state, &settings)?;
    let (link_id, code, code_number) = match (codes, alias) {
        (Codes::ImportedDryRun, Some(code)) => (0, code, None),
        (_, alias) => assign_code(state, &domain, &settings.codes, alias, &codec).await?,
    };
    // Generated: numbered by the sequence, or drawn at random on a random domain.
    let code_kind = if code_number.is_some() || (req.code.is_none() && settings.codes.is_random()) {
        CodeKind::Generated
    } else {
        CodeKind::Custom
    };

    let link = Link {
        link_id,
        domain,
        code,
        target_url,
        owner_id: creator.owner.to_owned(),
        status: LinkState::Active,
        redirect,
        expires_at,
        version: 1,
        key_version: (code_kind == CodeKind::Generated).then_some(key_version),
        code_kind,
        code_number,
        forward_query: req.forward_query.unwrap_or(settings.forward_query),
        title,
        tags,
        created_at: now,
        updated_at: now,
        published: None,
        options,
    };
    Ok(link)
}

/// The codec that turns ids into this domain's generated codes, under the key that
/// makes codes (`--code-key-version`, else the newest), and that key's version.
fn codec(state: &Links, settings: &DomainSettings) -> Result<(CodeCodec, u32), AppError> {
    let keys = state
        .settings
        .permutation_keys
        .as_ref()
        .ok_or(AppError::NotConfigured(
            "create links: HOP_PERMUTATION_KEYS is not set",
        ))?;
    let key_version = state
        .settings
        .code_key_version
        .unwrap_or_else(|| keys.current_version());
    let codec = CodeCodec::new(keys, key_version, settings.codes)
        .map_err(|e| AppError::Internal(e.to_string()))?;
    Ok((codec, key_version))
}

/// The new link's id and its code: the alias when one was asked for, else the first
/// generated code of the domain's own sequence that is not reserved, with its number.
async fn assign_code(
    state: &Links,
    domain: &str,
    space: &CodeSpace,
    alias: Option<String>,
    codec: &CodeCodec,
) -> Result<(u64, String, Option<u64>), AppError> {
    let link_id = state.ids.next_id().await?;
    if let Some(code) = alias {
        return Ok((link_id, code, None));
    }
    if space.is_random() {
        loop {
            let code = random_code(state, space)?;
            if state.foreign.holds(&state.db, domain).await?
                && store::links::get(&state.db, domain, &code).await?.is_some()
            {
                skipped(state, "imported");
                continue;
            }
            return Ok((link_id, code, None));
        }
    }
    loop {
        let number = state.codes.next_number(domain, space).await?;
        if number >= space.size() {
            return Err(AppError::CodeSpaceFull {
                domain: domain.to_owned(),
                size: space.size(),
            });
        }
        let code = codec
            .code_for(number)
            .map_err(|e| AppError::Internal(e.to_string()))?;
        if let Some(refused) = state.settings.words.refuse_generated(&code) {
            skipped(state, refused.rule.as_str());
            continue;
        }
        // A domain holding imported codes may hold this one already: skipped like a
        // reserved word (one read, on such domains only).
        if state.foreign.holds(&state.db, domain).await?
            && store::links::get(&state.db, domain, &code).await?.is_some()
        {
            tracing::info!(
                domain,
                code,
                "a generated code is held by an imported link: skipped"
            );
            skipped(state, "imported");
            continue;
        }
        return Ok((link_id, code, Some(number)));
    }
}

/// Inserts a random code gets before its domain counts as too full for them: each try
/// collides with probability (codes stored / codes of the shape), so five collisions in
/// a row mean a space far past what docs/random-codes.md sizes it for.
pub(crate) const RANDOM_TRIES: u32 = 5;

/// Draws from a random code's digits: about one code in 2,000 spells a word and is
/// drawn again, so this many draws in a row means a list that refuses almost everything.
const RANDOM_DRAWS: u32 = 1_000;

/// A code of the random `space`, from the system's CSPRNG (each digit by rejection
/// sampling, so no digit is likelier than another), that no word list refuses.
pub(crate) fn random_code(state: &Links, space: &CodeSpace) -> Result<String, AppError> {
    let digits = space.alphabet().digits();
    let radix = digits.len();
    // The largest multiple of the radix a byte holds: bytes at or past it are drawn again.
    let limit = 256 - 256 % radix;
    let length = usize::from(space.length());
    for _ in 0..RANDOM_DRAWS {
        let scripted = state
            .scripted_codes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .pop_front();
        let mut code = scripted.unwrap_or_default();
        while code.len() < length {
            let bytes = crate::random_ids::random_bytes::<32>()
                .map_err(|e| AppError::internal(format!("the system's random source: {e}")))?;
            for b in bytes.iter().map(|&b| usize::from(b)).filter(|&b| b < limit) {
                if code.len() == length {
                    break;
                }
                code.push(char::from(digits[b % radix]));
            }
        }
        match state.settings.words.refuse_generated(&code) {
            Some(refused) => skipped(state, refused.rule.as_str()),
            None => return Ok(code),
        }
    }
    Err(AppError::internal(
        "every random code drawn spelled a listed word: check --offensive-words",
    ))
}

/// Counts a generated code passed over for `reason`.
fn skipped(state: &Links, reason: &'static str) {
    state
        .metrics
        .codes_skipped
        .get_or_create(&crate::metrics::ReasonLabel { reason })
        .inc();
}

/// Checks an alias a person chose: its shape and Hop's reserved words, then the
/// operator's reserved words and the offensive ones (docs/words.md). 422 naming the rule.
pub(crate) fn check_alias(state: &Links, code: &str, space: &CodeSpace) -> Result<(), AppError> {
    validate_alias(code, space).map_err(|e| AppError::invalid("code", e))?;
    match state.settings.words.refuse_alias(code) {
        Some(refused) => Err(AppError::invalid("code", refused)),
        None => Ok(()),
    }
}

/// Checks a code another shortener printed: its characters, and the reserved words
/// (Hop's and the operator's); the offensive words do not refuse a code already printed.
fn check_imported(state: &Links, code: &str) -> Result<(), AppError> {
    shared::codes::validate_imported_code(code).map_err(|e| AppError::invalid("code", e))?;
    match state.settings.words.refuse_imported(code) {
        Some(refused) => Err(AppError::invalid("code", refused)),
        None => Ok(()),
    }
}

/// Whether `code` could be a new link of `creator` on `domain` (the default domain when
/// `None`): what the dashboard's alias field says as it is typed. Judged as creating
/// the link would judge it, except for its target: the domain, the alias's shape and
/// reserved words, then whether a link (a tombstone included) holds the code.
pub async fn alias_available(
    state: &Links,
    creator: &Creator<'_>,
    domain: Option<&str>,
    code: &str,
) -> Result<(), AppError> {
    let domain = match domain.filter(|d| !d.trim().is_empty()) {
        Some(d) => normalize_short_domain(d).map_err(|e| AppError::invalid("domain", e))?,
        None => state.settings.policy.default_domain.clone(),
    };
    let registered = store::domains::get(&state.db, &domain).await?;
    admit_new_link(&domain, registered.as_ref(), creator)?;
    let settings = registered.map(|d| d.settings).unwrap_or_default();
    let code = settings.canonical_code(code.trim()).into_owned();
    check_alias(state, &code, &settings.codes)?;
    match store::links::get(&state.db, &domain, &code).await? {
        Some(_) => Err(AppError::Taken {
            route: format!("{domain}/{code}"),
        }),
        None => Ok(()),
    }
}

/// Refuses a new link on `name` that the registry does not allow `creator`: 422 naming
/// the field when the domain is not registered or takes no links, 403 when it is
/// another owner's or outside the key's domains.
pub(crate) fn admit_new_link(
    name: &str,
    domain: Option<&Domain>,
    creator: &Creator<'_>,
) -> Result<(), AppError> {
    let Some(domain) = domain else {
        return Err(AppError::invalid(
            "domain",
            format!(
                "{name} is not a registered domain: an operator registers it first \
                 (POST /v1/domains, or hop-origin domains add)"
            ),
        ));
    };
    match domain.refuses(creator) {
        None => Ok(()),
        Some(Refusal::Disabled) => Err(AppError::invalid(
            "domain",
            format!("{name} is disabled: it takes no new links"),
        )),
        Some(Refusal::NotTheOwners) => Err(AppError::Forbidden(
            "this domain belongs to other owners: this key may not create links on it",
        )),
        Some(Refusal::OutsideTheKeysDomains) => Err(AppError::Forbidden(
            "this key is limited to other domains (keys create --domain)",
        )),
    }
}

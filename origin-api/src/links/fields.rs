//! The rules for a link's fields, shared by creating and changing links: each refusal
//! names the field and says what to send instead.

use super::lookups::Lookups;
use crate::error::AppError;
use crate::model::time::parse_rfc3339;
use crate::model::LinkOptions;
use crate::views::links::{MAX_NOTE_CHARS, MAX_TAGS, MAX_TAG_CHARS, MAX_TITLE_CHARS};
use shared::preview::Preview;
use shared::split::{Split, Variant};
use shared::targeting::{normalize_rules, Rule, RuleError, MAX_RULES};
use shared::{validate_target, RedirectStatus};

/// A valid target for a link on `domain`: a real http(s) URL on a public host (or one
/// the operator allows), not on one of this shortener's own domains or addresses (a
/// loop), not on a banned host, and on one of the domain's allowed hosts when it lists
/// them. Returns the normalized URL.
pub(crate) async fn target(
    lookups: &mut Lookups<'_>,
    domain: &str,
    raw: &str,
) -> Result<String, AppError> {
    link_url(lookups, domain, "target_url", raw).await
}

/// Any URL of a link on `domain` that a visitor may be sent to or shown, given in
/// `field`, by the rules of its target ([`target`]): its rules', its split's, its page
/// for when it has ended, its preview's image.
pub(crate) async fn link_url(
    lookups: &mut Lookups<'_>,
    domain: &str,
    field: &'static str,
    raw: &str,
) -> Result<String, AppError> {
    let url = redirect_url(lookups, domain, field, raw).await?;
    let registered = lookups.domain(domain).await?;
    let allowed = registered
        .as_ref()
        .and_then(|d| d.allowed_target_hosts.as_deref());
    on_allowed_host(allowed, domain, field, &url)?;
    Ok(url)
}

/// Refuses `url` (normalized), given in `field`, unless it is on one of the hosts (or
/// under one) that links on `domain` may point at, when the domain lists them.
pub(crate) fn on_allowed_host(
    allowed: Option<&[String]>,
    domain: &str,
    field: &'static str,
    url: &str,
) -> Result<(), AppError> {
    let Some(allowed) = allowed else {
        return Ok(());
    };
    let host = shared::VisitUrl::from_serialized(url)
        .map(|v| v.host)
        .unwrap_or_default();
    if allowed
        .iter()
        .any(|a| shared::denylist::host_is_or_is_under(host, a))
    {
        return Ok(());
    }
    Err(AppError::invalid(
        field,
        format!(
            "links on {domain} may point only at {} (and their subdomains), not {host}",
            allowed.join(", ")
        ),
    ))
}

/// A URL that visitors of `domain` are sent to, given in `field`, by the rules of a
/// link's target (see [`target`]) but the domain's allowed hosts, which the caller
/// checks ([`link_url`] for a link's, the registry for a domain's own pages).
pub(crate) async fn redirect_url(
    lookups: &mut Lookups<'_>,
    domain: &str,
    field: &'static str,
    raw: &str,
) -> Result<String, AppError> {
    let target = validate_target(raw).map_err(|e| AppError::invalid(field, e))?;
    let settings = lookups.policy();
    if let Some(why) = target.non_public() {
        if !settings
            .allow_target_hosts
            .iter()
            .any(|a| a.admits(&target))
        {
            return Err(AppError::invalid(
                field,
                format!(
                    "{} is {why}; links may point only at public hosts (an operator can allow \
                     private ones with --allow-target-hosts)",
                    target.host()
                ),
            ));
        }
    }
    if target
        .ip()
        .is_some_and(|ip| crate::proxies::reaches_listener(settings.listen, ip, target.port()))
    {
        return Err(AppError::invalid(
            field,
            format!(
                "{} is this shortener's own address; a link to it would loop",
                target.host()
            ),
        ));
    }
    if target.host() == domain || lookups.is_own_domain(target.host()).await? {
        return Err(AppError::invalid(
            field,
            format!(
                "{} is one of this shortener's own domains; a link to it would loop",
                target.host()
            ),
        ));
    }
    if let Some(feed) = lookups.listed(&target).await? {
        return Err(AppError::invalid(
            field,
            format!(
                "links to {} are not allowed: the threat feed {feed} lists it",
                target.host()
            ),
        ));
    }
    if lookups.deny().await?.blocks_host(target.host()) {
        return Err(AppError::invalid(
            field,
            format!(
                "links to {} are not allowed: the host is banned",
                target.host()
            ),
        ));
    }
    Ok(target.as_str().to_owned())
}

/// Targeting rules for a link on `domain`: each rule's target passes [`target`] as the
/// link's own does, then the rules are normalized ([`normalize_rules`]).
pub(crate) async fn rules(
    lookups: &mut Lookups<'_>,
    domain: &str,
    mut rules: Vec<Rule>,
) -> Result<Vec<Rule>, AppError> {
    // Before any target is looked up: a hundred rules cost no hundred lookups.
    if rules.len() > MAX_RULES {
        return Err(AppError::invalid("rules", RuleError::TooMany(rules.len())));
    }
    for (i, rule) in rules.iter_mut().enumerate() {
        rule.target_url = target(lookups, domain, &rule.target_url)
            .await
            .map_err(|e| within("rules", i, e))?;
    }
    normalize_rules(rules).map_err(|e| AppError::invalid("rules", e))
}

/// An A/B split for a link on `domain`: each variant's target passes [`target`].
pub(crate) async fn split(
    lookups: &mut Lookups<'_>,
    domain: &str,
    mut variants: Vec<Variant>,
) -> Result<Split, AppError> {
    for (i, v) in variants.iter_mut().enumerate() {
        v.target_url = target(lookups, domain, &v.target_url)
            .await
            .map_err(|e| within("split", i, e))?;
    }
    Split::try_from(variants).map_err(|e| AppError::invalid("split", e))
}

/// A refusal of item `i` of the list `field`, naming the item.
fn within(field: &'static str, i: usize, e: AppError) -> AppError {
    match e {
        AppError::Invalid {
            field: inner,
            detail,
        } => AppError::invalid(field, format!("{field}[{i}].{inner}: {detail}")),
        other => other,
    }
}

/// A social preview for a link on `domain`: its text within bounds, its image a URL
/// that passes [`link_url`] (a crawler fetches it, so it is held to the rules of a
/// target: public, no loop, not banned, on the domain's allowed hosts).
pub(crate) async fn preview(
    lookups: &mut Lookups<'_>,
    domain: &str,
    mut preview: Preview,
) -> Result<Preview, AppError> {
    preview
        .validate()
        .map_err(|e| AppError::invalid("preview", e))?;
    if let Some(image) = &preview.image_url {
        let image = link_url(lookups, domain, "image_url", image)
            .await
            .map_err(|e| match e {
                AppError::Invalid { detail, .. } => {
                    AppError::invalid("preview", format!("image_url: {detail}"))
                }
                other => other,
            })?;
        preview.image_url = Some(image);
    }
    Ok(preview)
}

/// The options a create asks for, validated; `hashing` as [`access`] takes it.
pub(crate) async fn options(
    lookups: &mut Lookups<'_>,
    hashing: Option<&super::access::Hashing>,
    domain: &str,
    asked: &crate::views::links::CreateLink,
) -> Result<LinkOptions, AppError> {
    let mut options = LinkOptions {
        interstitial: asked.interstitial.unwrap_or(false),
        no_clicks: !asked.record_clicks.unwrap_or(true),
        no_scanner_check: !asked.scanner_check.unwrap_or(true),
        ..LinkOptions::default()
    };
    if let Some(r) = &asked.rules {
        options.rules = rules(lookups, domain, r.clone()).await?;
    }
    if let Some(v) = &asked.split {
        options.split = Some(split(lookups, domain, v.clone()).await?);
    }
    if let Some(p) = &asked.preview {
        options.preview = Some(preview(lookups, domain, p.clone()).await?);
    }
    if let Some(url) = &asked.expired_url {
        options.expired_url = Some(link_url(lookups, domain, "expired_url", url).await?);
    }
    options.max_visits = asked.max_visits.map(max_visits).transpose()?;
    options.note = note(asked.note.clone())?;
    let mode = asked
        .access
        .unwrap_or(crate::views::links::AccessMode::Public);
    options.access = access(hashing, mode, asked.password.as_ref()).await?;
    Ok(options)
}

/// What `mode` keeps: for signed access, a new secret; for a password, its hash with a
/// new salt and a new cookie key (hashed through the process's one `hashing` gate: it
/// takes a while, on purpose; 503 when the gate's line is full). Without a gate (a dry
/// run, whose link is never stored) the password is checked and never hashed: judging
/// a file must not take the gate visitors' passwords need.
pub(crate) async fn access(
    hashing: Option<&super::access::Hashing>,
    mode: crate::views::links::AccessMode,
    password: Option<&crate::views::links::Password>,
) -> Result<Option<shared::access::Access>, AppError> {
    let no_randomness =
        |e: getrandom::Error| AppError::Internal(format!("no randomness for a link secret: {e}"));
    match (mode, password) {
        (crate::views::links::AccessMode::Password, None) => Err(AppError::invalid(
            "password",
            "a link with \"access\": \"password\" needs its password",
        )),
        (crate::views::links::AccessMode::Password, Some(password)) => {
            shared::password::check_new(password.expose())
                .map_err(|e| AppError::invalid("password", e))?;
            let Some(hashing) = hashing else {
                return Ok(Some(super::access::unhashed_password()));
            };
            let password = password.clone();
            hashing
                .run(move || super::access::new_password(password.expose()))
                .await
                .map_err(|_| AppError::Busy {
                    retry_after_s: super::access::BUSY_RETRY_AFTER_S,
                })?
                .map(Some)
                .map_err(no_randomness)
        }
        (_, Some(_)) => Err(AppError::invalid(
            "password",
            "only a link with \"access\": \"password\" takes a password",
        )),
        (crate::views::links::AccessMode::Public, None) => Ok(None),
        (crate::views::links::AccessMode::Signed, None) => {
            super::access::new_signed().map(Some).map_err(no_randomness)
        }
    }
}

/// A visit limit: at least one, and what the database's counts can hold.
pub(crate) fn max_visits(n: u64) -> Result<u64, AppError> {
    if n == 0 || i64::try_from(n).is_err() {
        return Err(AppError::invalid(
            "max_visits",
            format!("a number of visits from 1 to {}", i64::MAX),
        ));
    }
    Ok(n)
}

/// An expiry in the future, as Unix milliseconds.
pub(crate) fn expiry(raw: &str, now: i64) -> Result<i64, AppError> {
    let ms = parse_rfc3339(raw).ok_or_else(|| {
        AppError::invalid("expires_at", "use RFC 3339, e.g. 2030-01-31T23:59:59Z")
    })?;
    if ms <= now {
        return Err(AppError::invalid("expires_at", "is in the past"));
    }
    Ok(ms)
}

pub(crate) fn redirect(code: u16) -> Result<RedirectStatus, AppError> {
    RedirectStatus::try_from(code).map_err(|e| AppError::invalid("redirect", e))
}

/// Characters no title or tag may hold: control characters (a newline in a CSV cell, a
/// terminal escape in the CLI's output) and the bidirectional controls that make text
/// display other than it reads (`\u{202E}` turns `moc.elpmaxe` into `example.com`).
fn unsafe_char(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}'
        )
}

/// A title; empty means none.
pub(crate) fn title(raw: Option<String>) -> Result<Option<String>, AppError> {
    let title = raw.filter(|t| !t.is_empty());
    if title.as_ref().is_some_and(|t| t.chars().any(unsafe_char)) {
        return Err(AppError::invalid(
            "title",
            "control and bidirectional-override characters are not allowed",
        ));
    }
    if title
        .as_ref()
        .is_some_and(|t| t.chars().count() > MAX_TITLE_CHARS)
    {
        return Err(AppError::invalid(
            "title",
            format!("at most {MAX_TITLE_CHARS} characters"),
        ));
    }
    Ok(title)
}

/// A team note, trimmed, its line breaks kept (a browser's CR LF as LF); empty means
/// none. Tabs and line breaks are the only control characters it may hold.
pub(crate) fn note(raw: Option<String>) -> Result<Option<String>, AppError> {
    let note = raw
        .map(|n| n.replace("\r\n", "\n").trim().to_owned())
        .filter(|n| !n.is_empty());
    let Some(note) = note else {
        return Ok(None);
    };
    if note
        .chars()
        .any(|c| c != '\n' && c != '\t' && unsafe_char(c))
    {
        return Err(AppError::invalid(
            "note",
            "control and bidirectional-override characters are not allowed (line breaks are)",
        ));
    }
    if note.chars().count() > MAX_NOTE_CHARS {
        return Err(AppError::invalid(
            "note",
            format!("at most {MAX_NOTE_CHARS} characters"),
        ));
    }
    Ok(Some(note))
}

pub(crate) fn tags(tags: Vec<String>) -> Result<Vec<String>, AppError> {
    if tags.len() > MAX_TAGS {
        return Err(AppError::invalid(
            "tags",
            format!("at most {MAX_TAGS} tags"),
        ));
    }
    if let Some(bad) = tags
        .iter()
        .find(|t| t.is_empty() || t.chars().count() > MAX_TAG_CHARS)
    {
        return Err(AppError::invalid(
            "tags",
            format!("{bad:?}: a tag has 1 to {MAX_TAG_CHARS} characters"),
        ));
    }
    // A comma would split the tag in two in a CSV export and its import.
    if let Some(bad) = tags
        .iter()
        .find(|t| t.contains(',') || t.chars().any(unsafe_char))
    {
        return Err(AppError::invalid(
            "tags",
            format!("{bad:?}: a tag holds no comma, control or bidirectional-override character"),
        ));
    }
    Ok(tags)
}

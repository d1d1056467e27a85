//! The rules for a link's fields, shared by creating and changing links: each refusal
//! names the field and says what to send instead.

use super::lookups::Lookups;
use super::{parse_rfc3339, MAX_TAGS, MAX_TAG_CHARS, MAX_TITLE_CHARS};
use crate::error::AppError;
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
    let target = redirect_url(lookups, domain, "target_url", raw).await?;
    let registered = lookups.domain(domain).await?;
    if let Some(allowed) = registered
        .as_ref()
        .and_then(|d| d.allowed_target_hosts.as_ref())
    {
        let host = shared::VisitUrl::from_serialized(&target)
            .map(|v| v.host)
            .unwrap_or_default();
        if !allowed
            .iter()
            .any(|a| shared::denylist::host_is_or_is_under(host, a))
        {
            return Err(AppError::invalid(
                "target_url",
                format!(
                    "links on {domain} may point only at {} (and their subdomains), not {host}",
                    allowed.join(", ")
                ),
            ));
        }
    }
    Ok(target)
}

/// A URL that visitors of `domain` are sent to, given in `field`, by the rules of a
/// link's target (see [`target`]): a domain's not-found, root and expired URLs too.
pub(crate) async fn redirect_url(
    lookups: &mut Lookups<'_>,
    domain: &str,
    field: &'static str,
    raw: &str,
) -> Result<String, AppError> {
    let target = validate_target(raw).map_err(|e| AppError::invalid(field, e))?;
    let settings = &lookups.state().settings;
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
    let listen = settings.listen;
    if target.ip() == Some(listen.ip()) && target.port() == listen.port() {
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

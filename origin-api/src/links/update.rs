//! Changing and deleting a link: optimistic concurrency on `version`. The caller says
//! which version it saw (`If-Match`); the write succeeds only if that is still the
//! version in the database, and bumps it.

use super::fields;
use super::lookups::Lookups;
use super::service::Links;
use crate::error::AppError;
use crate::model::history::{Action, Actor, Change, Snapshot};
use crate::model::time::now_ms;
use crate::model::{Creator, Refusal};
use crate::model::{Link, LinkState};
use crate::store;
use crate::store::{ClickStore, StoreError};
use crate::views::links::UpdateLink;

/// Parses `If-Match: "<version>"`.
pub fn parse_if_match(value: Option<&str>) -> Result<u64, AppError> {
    let value = value.ok_or(AppError::PreconditionRequired)?;
    let trimmed = value.trim();
    // The ETag as sent, quoted; a bare version is taken too (clients often drop the
    // quotes), and means the same.
    trimmed
        .strip_prefix('"')
        .and_then(|v| v.strip_suffix('"'))
        .unwrap_or(trimmed)
        .parse::<u64>()
        .ok()
        // Versions are stored as BIGINT: a larger one was never handed out.
        .filter(|v| i64::try_from(*v).is_ok())
        .ok_or_else(|| {
            AppError::BadRequest(format!(
                "If-Match must be a version in quotes, like \"3\"; got {value}"
            ))
        })
}

/// What a caller is about to do with one of its owner's links.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Intent {
    /// Read it, its stats or its QR code; or delete it.
    ReadOrDelete,
    /// Change it or mint tokens for it: only while its domain still admits the owner
    /// and takes changes.
    Change,
}

/// Loads `domain/code` for `caller`: 404 for anyone else's link, and for a link on a
/// domain the caller's key is not limited to (so a limited key cannot learn what its
/// owner holds elsewhere). To [`Intent::Change`] it, the domain must still admit the
/// owner and not be disabled (403: such links are read and delete only).
pub async fn owned_link(
    db: &crate::db::Db,
    caller: &Creator<'_>,
    domain: &str,
    code: &str,
    intent: Intent,
) -> Result<Link, AppError> {
    let domain = shared::normalize_domain(domain).map_err(|_| AppError::NotFound)?;
    if !caller.reaches(&domain) {
        return Err(AppError::NotFound);
    }
    let settings = store::domains::settings(db, &domain).await?;
    let code = settings.canonical_code(code);
    let link = store::links::get(db, &domain, &code)
        .await?
        .filter(|l| l.owner_id == caller.owner)
        .ok_or(AppError::NotFound)?;
    if intent == Intent::Change {
        let refused = store::domains::get(db, &domain)
            .await?
            .and_then(|d| d.refuses(caller));
        if let Some(Refusal::Disabled | Refusal::NotTheOwners) = refused {
            return Err(AppError::Forbidden(
                "this link's domain no longer admits its owner, or is disabled: \
                 its links are read and delete only",
            ));
        }
    }
    Ok(link)
}

/// Applies `changes` to the link if it is still at `expected` version.
pub async fn update_link(
    state: &Links,
    current: Link,
    expected: u64,
    changes: UpdateLink,
    actor: Actor<'_>,
) -> Result<Link, AppError> {
    // Before anything else: each password change is a PBKDF2 on the gate visitors'
    // passwords share, so every door (the API, the dashboard, what comes next) takes the
    // same rate, per key or user.
    if changes.password.is_some() {
        state.password_changes.take(&actor.to_column(), 1)?;
    }
    if current.status == LinkState::Deleted {
        return Err(AppError::Deleted);
    }
    let now = now_ms();
    let mut next = current.clone();
    let mut lookups = Lookups::new(&state.db, &state.settings.policy);
    if let Some(target) = &changes.target_url {
        next.target_url = fields::target(&mut lookups, &next.domain, target).await?;
    }
    if let Some(expires_at) = &changes.expires_at {
        next.expires_at = expires_at
            .as_deref()
            .map(|e| fields::expiry(e, now))
            .transpose()?;
    }
    if let Some(code) = changes.redirect {
        next.redirect = fields::redirect(code)?;
    }
    match changes.status {
        None => {}
        Some(LinkState::Deleted) => {
            return Err(AppError::invalid("status", "use DELETE to delete a link"));
        }
        Some(s) => next.status = s,
    }
    if let Some(title) = &changes.title {
        next.title = fields::title(title.clone())?;
    }
    if let Some(tags) = &changes.tags {
        next.tags = fields::tags(tags.clone())?;
    }
    if let Some(f) = changes.forward_query {
        next.forward_query = f;
    }
    let options = &mut next.options;
    if let Some(rules) = changes.rules {
        options.rules =
            fields::rules(&mut lookups, &next.domain, rules.unwrap_or_default()).await?;
    }
    if let Some(split) = changes.split {
        options.split = match split {
            Some(variants) => Some(fields::split(&mut lookups, &next.domain, variants).await?),
            None => None,
        };
    }
    if let Some(preview) = changes.preview {
        options.preview = match preview {
            Some(p) => Some(fields::preview(&mut lookups, &next.domain, p).await?),
            None => None,
        };
    }
    if let Some(url) = changes.expired_url {
        options.expired_url = match url {
            Some(url) => {
                Some(fields::link_url(&mut lookups, &next.domain, "expired_url", &url).await?)
            }
            None => None,
        };
    }
    if let Some(i) = changes.interstitial {
        options.interstitial = i;
    }
    if let Some(r) = changes.record_clicks {
        options.no_clicks = !r;
    }
    if let Some(c) = changes.scanner_check {
        options.no_scanner_check = !c;
    }
    if let Some(note) = &changes.note {
        options.note = fields::note(note.clone())?;
    }
    let mode = match (changes.access, &options.access) {
        (Some(mode), _) => Some(mode),
        // A new password for a link that has one.
        (None, Some(shared::access::Access::Password { .. })) if changes.password.is_some() => {
            Some(crate::views::links::AccessMode::Password)
        }
        (None, _) => None,
    };
    if let Some(mode) = mode {
        options.access = fields::access(
            Some(&state.passwords.hashing),
            mode,
            changes.password.as_ref(),
        )
        .await?;
    } else if changes.password.is_some() {
        return Err(AppError::invalid(
            "password",
            "the link takes no password: set \"access\": \"password\" with it",
        ));
    }
    if let Some(max) = changes.max_visits {
        options.max_visits = max.map(fields::max_visits).transpose()?;
        options.exhausted = match options.max_visits {
            None => false,
            Some(max) => state.db.limit_count(next.link_id).await? >= max,
        };
    }
    // The version is compared once the changes are known to be valid: a change that can
    // never be made is refused as such (422), whichever version it names, and is not
    // sent back to be read again and retried in vain (412).
    if current.version != expected {
        return Err(AppError::Stale {
            current: Some(current.version),
        });
    }
    write(
        state,
        next,
        expected,
        now,
        &Change::new(Action::Edited, actor),
    )
    .await
}

/// Tombstones the link: status `deleted`, version bumped, code kept forever. Deleting a
/// tombstone changes nothing.
pub async fn delete_link(
    state: &Links,
    current: Link,
    expected: Option<u64>,
    actor: Actor<'_>,
) -> Result<(), AppError> {
    if current.status == LinkState::Deleted {
        return Ok(());
    }
    let expected = expected.unwrap_or(current.version);
    if current.version != expected {
        return Err(AppError::Stale {
            current: Some(current.version),
        });
    }
    let mut next = current;
    next.status = LinkState::Deleted;
    let change = Change::new(Action::Deleted, actor);
    write(state, next, expected, now_ms(), &change)
        .await
        .map(drop)
}

/// Brings a deleted link back, as a new version, with the status it had before (from its
/// history; `active` if that is not on record), within `--restore-window` of
/// its deletion: its targets pass today's policy and bans first (a host banned since is
/// refused, as a create would be). `DeletionFinal` after the window, `NotDeleted` for a
/// live link.
pub async fn restore_link(
    state: &Links,
    current: Link,
    expected: Option<u64>,
    actor: Actor<'_>,
) -> Result<Link, AppError> {
    if current.status != LinkState::Deleted {
        return Err(AppError::NotDeleted);
    }
    let now = now_ms();
    let window = i64::try_from(state.settings.restore_window.as_millis()).unwrap_or(i64::MAX);
    // A tombstone's `updated_at` is its deletion: nothing but the purge changes a
    // tombstone after it, and a purged one has nothing left to bring back.
    if current.is_purged() || now.saturating_sub(current.updated_at) > window {
        return Err(AppError::DeletionFinal {
            deleted_at: crate::model::time::rfc3339(current.updated_at),
            days: state.settings.restore_window.as_secs() / 86_400,
        });
    }
    let expected = expected.unwrap_or(current.version);
    revalidate(state, &current).await?;
    if current.version != expected {
        return Err(AppError::Stale {
            current: Some(current.version),
        });
    }
    // The status it had before its deletion, from its history: a link deleted while
    // disabled comes back disabled; `active` when the history does not reach so far.
    let link_id = i64::try_from(current.link_id).unwrap_or(i64::MAX);
    let deletion = i64::try_from(current.version).unwrap_or(i64::MAX);
    let before = store::history::of_link(&state.db, link_id, Some((deletion, 0)), 1).await?;
    let status = before
        .first()
        .and_then(|e| LinkState::parse(&e.state.status))
        .filter(|s| *s != LinkState::Deleted)
        .unwrap_or(LinkState::Active);
    let mut next = current;
    next.status = status;
    let change = Change::new(Action::Restored, actor);
    write(state, next, expected, now, &change).await
}

/// Sets the link's fields back to those of `version` from its history, as a new
/// version: its targets pass today's policy and bans, as an edit's would. Today's
/// secret stays (history keeps none): a version that needed a password or a token when
/// the link now needs the other, or nothing, cannot be brought back (422); nor can
/// the version of the link deleted (restore undoes a delete) or one whose expiry has passed.
pub async fn revert_link(
    state: &Links,
    current: Link,
    expected: Option<u64>,
    version: u64,
    actor: Actor<'_>,
) -> Result<Link, AppError> {
    if current.status == LinkState::Deleted {
        return Err(AppError::Deleted);
    }
    let now = now_ms();
    let link_id = i64::try_from(current.link_id).unwrap_or(i64::MAX);
    let wanted = i64::try_from(version).unwrap_or(i64::MAX);
    let entry = store::history::at_version(&state.db, link_id, wanted)
        .await?
        .ok_or_else(|| {
            AppError::invalid(
                "version",
                format!("this link's history holds no version {version}"),
            )
        })?;
    let old = &entry.state;
    if old.status == LinkState::Deleted.as_str() {
        return Err(AppError::invalid(
            "version",
            format!("version {version} is the link deleted: DELETE deletes a link"),
        ));
    }
    if old.access.is_some() && old.access != Snapshot::of(&current).access {
        return Err(AppError::invalid(
            "version",
            format!(
                "version {version} was {} with a secret the history does not keep: \
                 set its access with PATCH instead",
                match old.access.as_deref() {
                    Some("password") => "behind a password",
                    _ => "open to signed tokens only",
                }
            ),
        ));
    }
    if old.expires_at.is_some_and(|e| e <= now) {
        return Err(AppError::invalid(
            "version",
            format!(
                "version {version} expired at {}: set a new expiry with PATCH",
                crate::model::time::rfc3339(old.expires_at.unwrap_or_default())
            ),
        ));
    }
    let mut next = old.applied_to(&current).ok_or_else(|| {
        AppError::Internal(format!(
            "history entry {} cannot be read back",
            entry.entry_id
        ))
    })?;
    next.options.exhausted = match next.options.max_visits {
        None => false,
        Some(max) => state.db.limit_count(next.link_id).await? >= max,
    };
    revalidate(state, &next).await?;
    let expected = expected.unwrap_or(current.version);
    if current.version != expected {
        return Err(AppError::Stale {
            current: Some(current.version),
        });
    }
    let change = Change::new(Action::Reverted, actor).with_note(format!("to version {version}"));
    write(state, next, expected, now, &change).await
}

/// A link's every target judged by today's policy and bans, as a create's would be.
async fn revalidate(state: &Links, link: &Link) -> Result<(), AppError> {
    let mut lookups = Lookups::new(&state.db, &state.settings.policy);
    fields::target(&mut lookups, &link.domain, &link.target_url).await?;
    for url in link.options.targets() {
        fields::link_url(&mut lookups, &link.domain, "targets", url).await?;
    }
    Ok(())
}

async fn write(
    state: &Links,
    mut next: Link,
    expected: u64,
    now: i64,
    change: &Change<'_>,
) -> Result<Link, AppError> {
    next.updated_at = now;
    // Only a restore takes a link from the owner's quota (a delete gives one back).
    let limits = match change.action {
        Action::Restored => state.limits_for(&next.owner_id).await?,
        _ => crate::model::quota::Limits::default(),
    };
    match store::links::update(&state.db, &next, expected, change, &limits).await {
        Ok(written) => {
            // Unmarked: the redirect checks bans against the live denylist.
            state.cache.fence(&written).await;
            Ok(written)
        }
        // Someone else wrote first; say which version is there now.
        Err(StoreError::Stale) => {
            let current = store::links::get(&state.db, &next.domain, &next.code)
                .await?
                .map(|l| l.version);
            Err(AppError::Stale { current })
        }
        Err(e) => Err(e.into()),
    }
}

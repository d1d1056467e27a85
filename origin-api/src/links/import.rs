//! Importing another shortener's links (issue 39): each source's export or API page is
//! read into [`SourceLink`]s ([`crate::imports`]), and each link is judged against Hop as a
//! create would judge it, keeping its domain and code exactly as printed.
//!
//! An import never creates twice: a code is a link's identity, so a link an earlier run
//! (or an earlier page) made is found again by its code, and answered `unchanged`, or
//! `changed` to what the source says now. A code Hop holds for a link it made itself, for
//! another owner, or as a tombstone is refused, never overwritten. A dry run judges the
//! same way and stores nothing (it spends no id either).
//!
//! A code of the domain's generated shape, or one shorter than an alias, is accepted
//! (Bitly's hashes are seven base62 characters, exactly Hop's default shape). Its number
//! says nothing of when it was made, so the domain gets an import window first
//! ([`crate::store::foreign_codes`]): until the edge has learnt of it (about two
//! minutes), such links are `deferred`, to be sent again.

use super::create::{
    admit_new_link, generated_taken, prepare_link_as, stored, write_failed, Codes,
};
use super::fields;
use super::lookups::Lookups;
use super::service::Links;
use crate::error::AppError;
use crate::imports::read::{read, unused_columns};
use crate::imports::source::SourceLink;
use crate::model::time::now_ms;
use crate::model::{Creator, Imported, Link, LinkState};
use crate::store;
use crate::store::BulkInsert;
use crate::views::imports::{
    ImportReport, ImportRequest, ImportRow, ImportSummary, Outcome, MAX_IMPORT_LINKS,
};
use crate::views::links::{AccessMode, CreateLink, Password, UpdateLink, MAX_BULK_PASSWORDS};
use shared::codes::validate_alias;
use std::collections::HashMap;

/// What judging one link decided.
enum Judged {
    /// Ready to insert.
    Create(Box<Link>),
    /// An earlier import's link, to be changed.
    Change(Box<Link>, Box<UpdateLink>),
    Done(Outcome, Option<String>),
}

/// Imports `req` for `creator`, through the key `key_id`: see the module's documentation.
pub async fn run(
    links: &Links,
    creator: &Creator<'_>,
    key_id: &str,
    req: ImportRequest,
) -> Result<ImportReport, AppError> {
    let found =
        read(req.source, req.format, &req.content).map_err(|e| AppError::invalid("content", e))?;
    if found.len() > MAX_IMPORT_LINKS {
        return Err(AppError::invalid(
            "content",
            format!(
                "{} links in one call; send at most {MAX_IMPORT_LINKS} at a time",
                found.len()
            ),
        ));
    }
    // Each password is a PBKDF2 on the process's one hashing gate: a call is refused
    // whole, before any is hashed, as a bulk create is.
    let passwords = found.iter().filter(|l| l.password.is_some()).count();
    if passwords > MAX_BULK_PASSWORDS {
        return Err(AppError::invalid(
            "content",
            format!(
                "at most {MAX_BULK_PASSWORDS} links with a password a call, not {passwords}: \
                 send them in smaller parts"
            ),
        ));
    }
    // Each link counts against the key's creation rate, as in a bulk create; a dry run
    // too, since judging a file costs the reads an import does (it hashes nothing).
    links.take_creates(key_id, creator.owner, found.len())?;
    let default_domain = match &req.domain {
        Some(d) => shared::normalize_short_domain(d).map_err(|e| AppError::invalid("domain", e))?,
        None => links.settings.policy.default_domain.clone(),
    };
    let now = now_ms();
    let wait_ms = i64::try_from(links.settings.import_edge_wait.as_millis()).unwrap_or(i64::MAX);
    let mut lookups = Lookups::new(&links.db, &links.settings.policy);
    // Per domain: whether its import window lets foreign-shaped codes in, or in how long.
    let mut windows: HashMap<String, Option<i64>> = HashMap::new();
    let mut rows: Vec<ImportRow> = Vec::with_capacity(found.len());
    let mut judged: Vec<Judged> = Vec::with_capacity(found.len());
    let mut retry_after_ms: Option<i64> = None;
    lookups
        .know_targets(found.iter().map(|s| s.target_url.as_str()))
        .await?;
    let mut existing = existing_links(links, &mut lookups, &found, &default_domain).await?;
    for src in &found {
        let domain = src.domain.clone().unwrap_or_else(|| default_domain.clone());
        rows.push(ImportRow {
            row: src.row,
            domain: Some(domain.clone()),
            code: src.code.clone(),
            outcome: Outcome::Refused,
            reason: None,
            notes: src.notes.clone(),
            short_url: None,
        });
        let j = match judge(
            links,
            &mut lookups,
            creator,
            src,
            &domain,
            &req,
            now,
            &mut existing,
        )
        .await
        {
            Ok(j) => j,
            Err(e) if e.status().is_client_error() => {
                Judged::Done(Outcome::Refused, Some(detail(&e)))
            }
            Err(e) => return Err(e),
        };
        let j = match j {
            Judged::Create(link) if foreign_shaped(&link, &mut lookups).await? => {
                let wait = match windows.get(&link.domain) {
                    Some(w) => *w,
                    None => {
                        let w = if req.dry_run {
                            dry_window(links, &link.domain, now, wait_ms).await?
                        } else {
                            store::foreign_codes::prepare(&links.db, &link.domain, now, wait_ms)
                                .await?
                        };
                        if !req.dry_run {
                            links.foreign.noted(&link.domain, true);
                        }
                        windows.insert(link.domain.clone(), w);
                        w
                    }
                };
                if let (true, Some(ms), Some(row)) = (req.dry_run, wait, rows.last_mut()) {
                    row.notes.push(format!(
                        "its code has the shape of {}'s generated codes: it is created once                          the edge has learnt that the domain imports such codes (about {} s                          after the import starts)",
                        link.domain,
                        secs(ms)
                    ));
                }
                match wait {
                    Some(ms) if !req.dry_run => {
                        retry_after_ms = Some(retry_after_ms.unwrap_or(0).max(ms));
                        Judged::Done(
                            Outcome::Deferred,
                            Some(format!(
                                "{} has the shape of {}'s generated codes: the edge is being told \
                                 that the domain imports such codes; send it again in {} s",
                                link.code,
                                link.domain,
                                secs(ms)
                            )),
                        )
                    }
                    _ => Judged::Create(link),
                }
            }
            other => other,
        };
        judged.push(j);
    }

    let ready: Vec<Link> = judged
        .iter()
        .filter_map(|j| match j {
            Judged::Create(l) => Some(Link::clone(l)),
            _ => None,
        })
        .collect();
    let inserted = if req.dry_run || ready.is_empty() {
        vec![true; ready.len()]
    } else {
        let respond = |_: &[bool]| String::new();
        match store::links::insert_bulk(
            &links.db,
            &ready,
            &lookups.judged_by(),
            None,
            &respond,
            creator.actor,
            &links.limits_for(creator.owner).await?,
        )
        .await
        .map_err(|e| write_failed(links, &format!("an import of {} links", ready.len()), e))?
        {
            BulkInsert::Inserted(inserted) => inserted,
            BulkInsert::Replay { .. } => {
                return Err(AppError::Internal(
                    "an import without an idempotency key was answered a replay".into(),
                ))
            }
        }
    };
    let mut done = inserted.into_iter();
    for (row, j) in rows.iter_mut().zip(judged) {
        match j {
            Judged::Create(link) => {
                if done.next().unwrap_or(false) {
                    if !req.dry_run {
                        stored(links, &link).await;
                    }
                    row.outcome = Outcome::Created;
                    row.short_url = Some(links.short_url(&link));
                } else {
                    // Taken between the judging and the insert.
                    row.reason = Some(detail(&AppError::from(generated_taken(
                        &link,
                        store::StoreError::Taken,
                    ))));
                }
            }
            Judged::Change(current, changes) => {
                row.short_url = Some(links.short_url(&current));
                if req.dry_run {
                    row.outcome = Outcome::Changed;
                } else {
                    let version = current.version;
                    match crate::links::update_link(
                        links,
                        *current,
                        version,
                        *changes,
                        creator.actor,
                    )
                    .await
                    {
                        Ok(_) => row.outcome = Outcome::Changed,
                        Err(e) if e.status().is_client_error() => row.reason = Some(detail(&e)),
                        Err(e) => return Err(e),
                    }
                }
            }
            Judged::Done(outcome, reason) => {
                row.outcome = outcome;
                row.reason = reason;
                if outcome == Outcome::Unchanged {
                    row.short_url = Some(
                        links
                            .settings
                            .short_urls
                            .of(row.domain.as_deref().unwrap_or_default(), &row.code),
                    );
                }
            }
        }
    }
    if !req.dry_run {
        list_legacy_codes(links, creator.owner, &rows).await?;
    }
    let summary = ImportSummary::of(&rows);
    if !req.dry_run {
        tracing::info!(
            source = req.source.name(),
            owner = creator.owner,
            ?summary,
            "import"
        );
    }
    Ok(ImportReport {
        dry_run: req.dry_run,
        summary,
        unused_columns: unused_columns(req.source, req.format, &req.content),
        rows,
        retry_after_s: retry_after_ms.map(|ms| u64::try_from(secs(ms)).unwrap_or(1)),
    })
}

/// Adds the codes of the rows Hop took (created, changed, unchanged, deferred: their
/// targets passed Hop's checks) to their domain's legacy list, so that its fallback
/// sends such a code on to the old shortener while Hop lacks it (a deferred row, say).
/// Only on domains `owner` holds (a shared domain's list is its operators'), and only
/// while the domain has a `legacy_url`: each listed code is a KV write at the edge, not
/// worth paying for a domain that is not moving (D-275).
async fn list_legacy_codes(links: &Links, owner: &str, rows: &[ImportRow]) -> Result<(), AppError> {
    let mut by_domain: HashMap<&str, Vec<&str>> = HashMap::new();
    for row in rows.iter().filter(|r| {
        matches!(
            r.outcome,
            Outcome::Created | Outcome::Changed | Outcome::Unchanged | Outcome::Deferred
        )
    }) {
        if let Some(domain) = row.domain.as_deref() {
            by_domain.entry(domain).or_default().push(&row.code);
        }
    }
    for (domain, codes) in by_domain {
        let Some(d) = store::domains::get(&links.db, domain).await?.filter(|d| {
            d.settings.legacy_url.is_some()
                && matches!(&d.access, crate::model::DomainAccess::Owners(_) if d.access.admits(owner))
        }) else {
            continue;
        };
        let mut codes: Vec<String> = codes
            .into_iter()
            .map(|c| d.settings.canonical_code(c).into_owned())
            .collect();
        codes.sort_unstable();
        codes.dedup();
        let codes: Vec<&str> = codes.iter().map(String::as_str).collect();
        store::legacy_codes::add(
            &links.db,
            domain,
            &codes,
            store::legacy_codes::Source::Import,
            now_ms(),
        )
        .await?;
    }
    Ok(())
}

/// Milliseconds as whole seconds, rounded up.
fn secs(ms: i64) -> i64 {
    (ms.max(0) + 999) / 1000
}

/// A problem's words for a row of the report.
fn detail(e: &AppError) -> String {
    match e {
        AppError::Invalid { field, detail } => format!("{field}: {detail}"),
        other => other.to_string(),
    }
}

/// The links Hop already holds under the codes of `found`, read at once, by route key.
async fn existing_links(
    links: &Links,
    lookups: &mut Lookups<'_>,
    found: &[SourceLink],
    default_domain: &str,
) -> Result<HashMap<(String, String), Link>, AppError> {
    let mut keys = Vec::with_capacity(found.len());
    for src in found.iter().filter(|s| s.skip.is_none()) {
        let Ok(domain) =
            shared::normalize_short_domain(src.domain.as_deref().unwrap_or(default_domain))
        else {
            continue;
        };
        let settings = lookups
            .domain(&domain)
            .await?
            .map(|d| d.settings.clone())
            .unwrap_or_default();
        let code = settings.canonical_code(&src.code).into_owned();
        keys.push((domain, code));
    }
    Ok(store::links::get_many(&links.db, &keys)
        .await?
        .into_iter()
        .map(|l| ((l.domain.clone(), l.code.clone()), l))
        .collect())
}

/// Judges one link of the source: what creating (or changing) it would do, `existing`
/// holding the links Hop has under the import's codes.
#[allow(clippy::too_many_arguments)]
async fn judge(
    links: &Links,
    lookups: &mut Lookups<'_>,
    creator: &Creator<'_>,
    src: &SourceLink,
    domain: &str,
    req: &ImportRequest,
    now: i64,
    existing: &mut HashMap<(String, String), Link>,
) -> Result<Judged, AppError> {
    if let Some(why) = &src.skip {
        return Ok(Judged::Done(Outcome::Skipped, Some(why.clone())));
    }
    let domain =
        shared::normalize_short_domain(domain).map_err(|e| AppError::invalid("domain", e))?;
    let registered = lookups.domain(&domain).await?;
    admit_new_link(&domain, registered.as_deref(), creator)?;
    let settings = registered.map(|d| d.settings.clone()).unwrap_or_default();
    let code = settings.canonical_code(&src.code).into_owned();
    shared::codes::validate_imported_code(&code).map_err(|e| AppError::invalid("code", e))?;
    let imported = Imported {
        from: req.source.name().to_owned(),
        clicks: src.clicks,
        created_at: src.created_at,
    };
    let status = if src.disabled {
        LinkState::Disabled
    } else {
        LinkState::Active
    };
    if let Some(current) = existing.remove(&(domain.clone(), code.clone())) {
        return judge_existing(lookups, creator, src, current, status, now).await;
    }
    let create = CreateLink {
        target_url: src.target_url.clone(),
        domain: Some(domain.clone()),
        code: Some(code),
        title: src.title.clone(),
        tags: (!src.tags.is_empty()).then(|| src.tags.clone()),
        forward_query: src.forward_query,
        max_visits: src.max_visits,
        rules: (!src.rules.is_empty()).then(|| src.rules.clone()),
        expired_url: src.expired_url.clone(),
        access: src.password.as_ref().map(|_| AccessMode::Password),
        password: src.password.clone().map(Password::new),
        ..CreateLink::default()
    };
    let codes = if req.dry_run {
        Codes::ImportedDryRun
    } else {
        Codes::Imported
    };
    let mut link = prepare_link_as(links, lookups, creator, &create, codes).await?;
    link.status = status;
    // Kept as the source has it, even when it has passed: the code stays the link's,
    // answering as an expired link does.
    link.expires_at = src.expires_at;
    link.options.imported = Some(imported);
    Ok(Judged::Create(Box::new(link)))
}

/// A link the code already names: an earlier import's is brought to what the source says;
/// anything else holding the code is left alone.
async fn judge_existing(
    lookups: &mut Lookups<'_>,
    creator: &Creator<'_>,
    src: &SourceLink,
    current: Link,
    status: LinkState,
    now: i64,
) -> Result<Judged, AppError> {
    let route = current.route_key();
    if current.owner_id != creator.owner {
        return Err(AppError::Taken { route });
    }
    if current.status == LinkState::Deleted {
        return Ok(Judged::Done(
            Outcome::Refused,
            Some(format!(
                "{route} was deleted in Hop: a code is never given to another link"
            )),
        ));
    }
    if current.options.imported.is_none() {
        return Ok(Judged::Done(
            Outcome::Refused,
            Some(format!(
                "{route} is a link made in Hop: an import never overwrites it"
            )),
        ));
    }
    let target = fields::target(lookups, &current.domain, &src.target_url).await?;
    let title = fields::title(src.title.clone())?;
    let tags = fields::tags(src.tags.clone())?;
    let mut changes = UpdateLink::default();
    if target != current.target_url {
        changes.target_url = Some(target);
    }
    if title != current.title {
        changes.title = Some(title);
    }
    if tags != current.tags {
        changes.tags = Some(tags);
    }
    if status != current.status {
        changes.status = Some(status);
    }
    if src.max_visits != current.options.max_visits {
        changes.max_visits = Some(src.max_visits);
    }
    let rules = fields::rules(lookups, &current.domain, src.rules.clone()).await?;
    if rules != current.options.rules {
        changes.rules = Some((!rules.is_empty()).then_some(rules));
    }
    let expired_url = match &src.expired_url {
        Some(url) => Some(fields::link_url(lookups, &current.domain, "expired_url", url).await?),
        None => None,
    };
    if expired_url != current.options.expired_url {
        changes.expired_url = Some(expired_url);
    }
    // An expiry is changed only to one still ahead (a change may not set a past one).
    if src.expires_at != current.expires_at && src.expires_at.is_none_or(|at| at > now) {
        changes.expires_at = Some(src.expires_at.map(crate::model::time::rfc3339));
    }
    if changes == UpdateLink::default() {
        Ok(Judged::Done(Outcome::Unchanged, None))
    } else {
        Ok(Judged::Change(Box::new(current), Box::new(changes)))
    }
}

/// Whether `link`'s code is one a plain alias could not be on its domain (the generated
/// shape, or too short): one that needs the domain's import window.
async fn foreign_shaped(link: &Link, lookups: &mut Lookups<'_>) -> Result<bool, AppError> {
    let settings = lookups
        .domain(&link.domain)
        .await?
        .map(|d| d.settings.clone())
        .unwrap_or_default();
    Ok(validate_alias(&link.code, &settings.codes).is_err())
}

/// What a dry run says of `domain`'s window: `None` when foreign-shaped codes could be
/// created now, else about how long opening it would take.
async fn dry_window(
    links: &Links,
    domain: &str,
    now: i64,
    wait_ms: i64,
) -> Result<Option<i64>, AppError> {
    let window = store::foreign_codes::window(&links.db, domain).await?;
    Ok(match window {
        Some(w) if w.until_at >= now + wait_ms && w.opened_at + wait_ms <= now => None,
        Some(w) if w.until_at >= now + wait_ms => Some(w.opened_at + wait_ms - now),
        _ => Some(wait_ms),
    })
}

//! Bulk creation: up to 10,000 links in one call, each judged on its own, all written in
//! one transaction, answered in request order. One idempotency key covers the batch.

use super::create::{
    answer, count_conflict, generated_taken, prepare_link, random_code, replay, stored,
    write_failed, IDEMPOTENCY_TTL_MS, RANDOM_TRIES,
};
use super::fingerprint::Fingerprint;
use super::lookups::Lookups;
use super::service::Links;
use crate::error::AppError;
use crate::model::time::now_ms;
use crate::model::Creator;
use crate::model::{Link, ShortUrls};
use crate::store;
use crate::store::{BulkInsert, DomainAt, IdempotencyKey, StoreError};
use crate::views::links::{
    BulkCreate, BulkItem, BulkResponse, BulkResult, MAX_BULK, MAX_BULK_PASSWORDS,
};

/// What a bulk call produced: fresh results, or the recorded answer of the earlier call
/// with the same idempotency key (JSON).
#[derive(Debug, Clone)]
pub enum BulkOutcome {
    New(BulkResponse),
    Replayed(String),
}

fn failure(e: &AppError) -> BulkResult {
    BulkResult::Err {
        ok: false,
        error: e.problem(),
    }
}

/// The items of a bulk call, judged one by one: each either refused (a client error,
/// answered in its place) or ready to insert.
struct Judged {
    /// Per item: its place in `ready`, or its refusal.
    slots: Vec<Result<usize, BulkResult>>,
    ready: Vec<Link>,
    /// The registry rows they were judged by.
    domains: Vec<DomainAt>,
}

/// Judges every item; only client errors stay per item, anything else fails the call.
async fn judge(
    state: &Links,
    creator: &Creator<'_>,
    items: &[BulkItem],
) -> Result<Judged, AppError> {
    let mut lookups = Lookups::new(&state.db, &state.settings.policy);
    lookups
        .know_targets(items.iter().filter_map(|item| match item {
            BulkItem::Valid(req) => Some(req.target_url.as_str()),
            _ => None,
        }))
        .await?;
    let mut judged = Judged {
        slots: Vec::with_capacity(items.len()),
        ready: Vec::new(),
        domains: Vec::new(),
    };
    for item in items {
        let prepared = match item {
            BulkItem::Valid(req) if req.dedupe == Some(true) => Err(AppError::invalid(
                "dedupe",
                "not in a bulk create: send the link alone to dedupe it",
            )),
            BulkItem::Valid(req) => prepare_link(state, &mut lookups, creator, req).await,
            BulkItem::Invalid(why) => Err(AppError::invalid("links[]", why)),
        };
        match prepared {
            Ok(link) => {
                judged.slots.push(Ok(judged.ready.len()));
                judged.ready.push(link);
            }
            Err(e) if e.status().is_client_error() => judged.slots.push(Err(failure(&e))),
            Err(e) => return Err(e),
        }
    }
    judged.domains = lookups.judged_by();
    Ok(judged)
}

impl Judged {
    /// The answer, in request order, once `inserted` says which ready links went in (the
    /// others found their code taken).
    fn response(&self, inserted: &[bool], urls: &ShortUrls) -> BulkResponse {
        let results = self
            .slots
            .iter()
            .map(|slot| match slot {
                Err(failed) => failed.clone(),
                Ok(i) => {
                    let link = &self.ready[*i];
                    if inserted.get(*i).copied().unwrap_or(false) {
                        BulkResult::Ok {
                            ok: true,
                            link: Box::new(link.view(urls)),
                        }
                    } else {
                        failure(&answer(
                            &link.route_key(),
                            generated_taken(link, StoreError::Taken),
                        ))
                    }
                }
            })
            .collect();
        BulkResponse { results }
    }
}

/// Creates the batch for `creator`'s owner.
pub async fn create_bulk(
    state: &Links,
    creator: &Creator<'_>,
    body: BulkCreate,
    key: Option<&str>,
) -> Result<BulkOutcome, AppError> {
    if body.links.is_empty() || body.links.len() > MAX_BULK {
        return Err(AppError::invalid(
            "links",
            format!("send 1 to {MAX_BULK} links, not {}", body.links.len()),
        ));
    }
    // An item that is no create body (a property the description does not allow, a
    // value of the wrong type) is a request that breaks the published contract: refused
    // whole, naming it, as any other endpoint refuses such a body. Items that are create
    // bodies are still judged one by one (a bad URL, a taken alias: in their place).
    if let Some((i, why)) = body.links.iter().enumerate().find_map(|(i, l)| match l {
        BulkItem::Invalid(why) => Some((i, why.clone())),
        BulkItem::Valid(link) => link.beyond_schema().map(|why| (i, why)),
    }) {
        return Err(AppError::invalid(
            "links",
            format!("item {i} is no create body ({why}): nothing was created"),
        ));
    }
    // Each password is a PBKDF2 on the process's one hashing gate: a batch is refused
    // whole, before any is hashed, rather than holding the gate for minutes.
    let passwords = body
        .links
        .iter()
        .filter(|l| matches!(l, BulkItem::Valid(l) if l.password.is_some()))
        .count();
    if passwords > MAX_BULK_PASSWORDS {
        return Err(AppError::invalid(
            "links",
            format!(
                "at most {MAX_BULK_PASSWORDS} password links a call, not {passwords}: \
                 send them in smaller batches"
            ),
        ));
    }
    let fingerprint = key.map(|_| Fingerprint::of(state, &body)).transpose()?;
    let idem = match (key, &fingerprint) {
        (Some(key), Some(fp)) => Some(IdempotencyKey {
            owner_id: creator.owner,
            key,
            request_hash: fp.as_str(),
            expired_before: now_ms() - IDEMPOTENCY_TTL_MS,
        }),
        _ => None,
    };
    if let (Some(idem), Some(fp)) = (&idem, &fingerprint) {
        if let Some((hash, response)) = store::idempotency::find(&state.db, idem).await? {
            return replay(fp, hash, response).map(BulkOutcome::Replayed);
        }
    }

    let mut judged = judge(state, creator, &body.links).await?;
    redraw_taken(state, &mut judged.ready).await?;
    let assemble = |inserted: &[bool]| judged.response(inserted, &state.settings.short_urls);
    let respond =
        |inserted: &[bool]| serde_json::to_string(&assemble(inserted)).unwrap_or_default();
    let outcome = store::links::insert_bulk(
        &state.db,
        &judged.ready,
        &judged.domains,
        idem.as_ref(),
        &respond,
        creator.actor,
        &state.limits_for(creator.owner).await?,
    )
    .await;
    match outcome.map_err(|e| {
        write_failed(
            state,
            &format!("a bulk create of {} links", judged.ready.len()),
            e,
        )
    })? {
        BulkInsert::Inserted(inserted) => {
            // Replaces any negative entries visitors may have caused meanwhile.
            for (link, done) in judged.ready.iter().zip(&inserted) {
                if *done {
                    stored(state, link).await;
                } else if link.is_random_code() {
                    // Drawn by a create that committed after the batch's check.
                    state.metrics.random_code_collisions.inc();
                } else if let StoreError::Conflict(detail) =
                    generated_taken(link, StoreError::Taken)
                {
                    count_conflict(state, &link.route_key(), &detail);
                }
            }
            Ok(BulkOutcome::New(assemble(&inserted)))
        }
        BulkInsert::Replay {
            request_hash,
            response,
        } => match &fingerprint {
            Some(fp) => replay(fp, request_hash, response).map(BulkOutcome::Replayed),
            // Without a key nothing is recorded, so nothing is replayed.
            None => Err(AppError::Internal(
                "a bulk create without an idempotency key was answered a replay".into(),
            )),
        },
    }
}

/// Draws again the random codes of `ready` that a stored link or another item of the
/// batch holds, up to [`RANDOM_TRIES`] rounds, so that a batch, which inserts by skipping
/// what is taken, rarely meets a collision. One read of the batch's random codes a round.
async fn redraw_taken(state: &Links, ready: &mut [Link]) -> Result<(), AppError> {
    for _ in 0..RANDOM_TRIES {
        let routes: Vec<(String, String)> = ready
            .iter()
            .filter(|l| l.is_random_code())
            .map(|l| (l.domain.clone(), l.code.clone()))
            .collect();
        if routes.is_empty() {
            return Ok(());
        }
        let stored: std::collections::HashSet<(String, String)> =
            store::links::get_many(&state.db, &routes)
                .await?
                .into_iter()
                .map(|l| (l.domain, l.code))
                .collect();
        let mut seen = std::collections::HashSet::new();
        let mut redrawn = false;
        for link in ready.iter_mut().filter(|l| l.is_random_code()) {
            let route = (link.domain.clone(), link.code.clone());
            if stored.contains(&route) || !seen.insert(route) {
                state.metrics.random_code_collisions.inc();
                let space = store::domains::get(&state.db, &link.domain)
                    .await?
                    .map(|d| d.settings.codes)
                    .unwrap_or_default();
                link.code = random_code(state, &space)?;
                redrawn = true;
            }
        }
        if !redrawn {
            return Ok(());
        }
    }
    Ok(())
}

//! Webhooks (issue 39, docs/webhooks.md): endpoints an owner or an admin registers,
//! and the events of their links and domains delivered to them, signed per Standard
//! Webhooks, in order, retried on a schedule.
//!
//! - Events are written by the store in the transaction of each change ([`crate::store::webhooks`]),
//!   so bulk creates, imports, bans, edits and exhaustion each tell of every change
//!   once; expiry and hourly click counts, which change no row, are written by the
//!   dispatcher's sweeps.
//! - [`dispatch`] delivers them: its own task and lease, its own HTTP client, no
//!   transaction held across a request, so a slow or dead receiver delays nobody but
//!   itself (the publisher to the edge shares nothing with it but the database).

pub mod address;
pub mod dispatch;
pub mod signing;

use crate::auth::Caller;
use crate::db::Db;
use crate::error::AppError;
use crate::model::event::EventType;
use crate::model::time::{now_ms, rfc3339};
use crate::random_ids::random_hex;
use crate::store;
use crate::store::webhooks::{AttemptRow, EndpointRow, NewEndpoint};
use crate::views::links::Page;
use crate::views::webhooks::{
    AttemptView, CreateWebhook, Redeliver, Scope, UpdateWebhook, WebhookView, MAX_DESCRIPTION,
};
use std::time::Duration;

/// How long the secret an endpoint had before a rotation still signs.
pub const PREVIOUS_SECRET_FOR: Duration = Duration::from_secs(24 * 3600);
/// Endpoints one owner may hold (and the operators, for every owner's events): each
/// is a connection the dispatcher keeps making, and one tenant's thousand slow
/// endpoints would be everyone's delay.
pub const MAX_ENDPOINTS_PER_OWNER: i64 = 20;

/// The webhooks' settings (`--webhook-*`).
#[derive(Debug, Clone)]
pub struct WebhookSettings {
    /// The waits after each failed attempt at an event; the last repeats.
    pub schedule: Vec<Duration>,
    /// Failing this long disables an endpoint.
    pub give_up_after: Duration,
    /// Events and attempts are kept this long.
    pub retention: Duration,
    /// A receiver's time to answer.
    pub timeout: Duration,
    /// Plain http and non-public addresses allowed (a local setup).
    pub allow_private: bool,
}

impl Default for WebhookSettings {
    fn default() -> Self {
        WebhookSettings {
            schedule: [5, 300, 1_800, 7_200, 18_000, 36_000, 36_000, 43_200]
                .into_iter()
                .map(Duration::from_secs)
                .collect(),
            give_up_after: Duration::from_secs(3 * 86_400),
            retention: Duration::from_secs(14 * 86_400),
            timeout: Duration::from_secs(15),
            allow_private: false,
        }
    }
}

/// The webhooks' API: endpoints registered, changed, rotated, rewound; their attempts.
#[derive(Debug)]
pub struct Webhooks {
    db: Db,
    settings: WebhookSettings,
}

/// The id an event is sent with (`webhook-id`) and redelivered from.
pub fn event_id(seq: i64) -> String {
    format!("evt_{seq}")
}

fn parse_event_id(id: &str) -> Option<i64> {
    id.strip_prefix("evt_")?.parse().ok().filter(|s| *s > 0)
}

/// The event types an endpoint asked for, checked, in the docs' order, comma-joined.
fn event_types(asked: Option<&[String]>) -> Result<String, AppError> {
    let Some(asked) = asked else {
        return Ok(EventType::ALL.map(EventType::as_str).join(","));
    };
    if asked.is_empty() {
        return Err(AppError::invalid(
            "events",
            "name at least one event type (or leave events out for all)",
        ));
    }
    let mut types = Vec::new();
    for name in asked {
        let t = EventType::parse(name).ok_or_else(|| {
            AppError::invalid(
                "events",
                format!(
                    "{name:?} is not an event type; the types are {}",
                    EventType::ALL.map(EventType::as_str).join(", ")
                ),
            )
        })?;
        types.push(t);
    }
    types.sort();
    types.dedup();
    Ok(types
        .into_iter()
        .map(EventType::as_str)
        .collect::<Vec<_>>()
        .join(","))
}

fn description(asked: Option<String>) -> Result<String, AppError> {
    let d = asked.unwrap_or_default();
    if d.chars().count() > MAX_DESCRIPTION || d.chars().any(char::is_control) {
        return Err(AppError::invalid(
            "description",
            "at most 200 characters, no control characters",
        ));
    }
    Ok(d)
}

/// An endpoint as shown; `secret` only in the answer that made it.
pub fn view(e: &EndpointRow, secret: Option<String>) -> WebhookView {
    let failing = e.failing_since.is_some() && e.state == "active";
    WebhookView {
        id: e.endpoint_id.clone(),
        url: e.url.clone(),
        description: e.description.clone(),
        events: e.event_types.split(',').map(str::to_owned).collect(),
        scope: if e.owner_id.is_some() {
            Scope::Owner
        } else {
            Scope::All
        },
        owner: e.owner_id.clone(),
        state: e.state.clone(),
        disabled_reason: e.disabled_reason.clone(),
        failed_attempts: e.attempts,
        failing_since: e.failing_since.map(rfc3339),
        next_attempt_at: failing.then(|| rfc3339(e.next_attempt_at)),
        secret,
        previous_secret_until: e.previous_until.filter(|u| *u > now_ms()).map(rfc3339),
        created_at: rfc3339(e.created_at),
        updated_at: rfc3339(e.updated_at),
    }
}

fn attempt_view(a: &AttemptRow) -> AttemptView {
    AttemptView {
        event_id: event_id(a.event_seq),
        event_type: a.event_type.clone(),
        attempted_at: rfc3339(a.attempted_at),
        result: a.result.clone(),
        status: a.status,
        error: a.error.clone(),
        duration_ms: a.duration_ms,
    }
}

/// Webhooks tell of every domain's links: a key limited to some may not manage them.
fn unlimited(caller: &Caller) -> Result<(), AppError> {
    if caller.domains.is_some() {
        return Err(AppError::Forbidden(
            "a key limited to some domains cannot manage webhooks, which tell of every domain's links",
        ));
    }
    Ok(())
}

fn page_limit(limit: Option<i64>) -> Result<i64, AppError> {
    let limit = limit.unwrap_or(100);
    if !(1..=1000).contains(&limit) {
        return Err(AppError::invalid("limit", "between 1 and 1000"));
    }
    Ok(limit)
}

impl Webhooks {
    pub fn new(db: Db, settings: WebhookSettings) -> Self {
        Webhooks { db, settings }
    }

    fn check_url(&self, url: &str) -> Result<(), AppError> {
        match address::refuse(url, self.settings.allow_private) {
            Some(why) => Err(AppError::invalid("url", why)),
            None => Ok(()),
        }
    }

    /// The endpoint `id` if the caller may see it: its owner's keys, or any admin key
    /// (an `all` endpoint: admin keys only); 404 otherwise.
    async fn visible(&self, caller: &Caller, id: &str) -> Result<EndpointRow, AppError> {
        unlimited(caller)?;
        let found = store::webhooks::endpoint(&self.db, id).await?;
        found
            .filter(|e| caller.admin || e.owner_id.as_deref() == Some(caller.owner_id.as_str()))
            .ok_or(AppError::NotFound)
    }

    pub async fn create(
        &self,
        caller: &Caller,
        req: CreateWebhook,
    ) -> Result<WebhookView, AppError> {
        unlimited(caller)?;
        self.check_url(&req.url)?;
        let types = event_types(req.events.as_deref())?;
        let description = description(req.description)?;
        let owner = match req.scope.unwrap_or_default() {
            Scope::Owner => Some(caller.owner_id.as_str()),
            Scope::All => {
                caller.require_admin(
                    "only an admin key may register an endpoint for every owner's events",
                )?;
                None
            }
        };
        let random = |e: getrandom::Error| AppError::internal(format!("random: {e}"));
        let id = format!("wh_{}", random_hex::<8>().map_err(random)?);
        let secret = signing::new_secret().map_err(random)?;
        let now = now_ms();
        let written = store::webhooks::insert_endpoint(
            &self.db,
            &NewEndpoint {
                endpoint_id: &id,
                owner_id: owner,
                url: &req.url,
                description: &description,
                event_types: &types,
                secret: &secret,
                created_by: &caller.key_id,
                at: now,
            },
            MAX_ENDPOINTS_PER_OWNER,
        )
        .await?;
        if !written {
            return Err(AppError::TooManyEndpoints {
                limit: MAX_ENDPOINTS_PER_OWNER,
            });
        }
        let row = store::webhooks::endpoint(&self.db, &id)
            .await?
            .ok_or_else(|| AppError::internal("an endpoint just written is gone"))?;
        Ok(view(&row, Some(secret)))
    }

    pub async fn list(
        &self,
        caller: &Caller,
        cursor: Option<&str>,
        limit: Option<i64>,
    ) -> Result<Page<WebhookView>, AppError> {
        unlimited(caller)?;
        let limit = page_limit(limit)?;
        if cursor.is_some_and(|c| c.is_empty() || c.chars().count() > 40) {
            return Err(AppError::invalid(
                "cursor",
                "not a cursor this API gave out",
            ));
        }
        let owner = (!caller.admin).then_some(caller.owner_id.as_str());
        let mut rows =
            store::webhooks::endpoints(&self.db, owner, cursor.unwrap_or_default(), limit + 1)
                .await?;
        let more = rows.len() > usize::try_from(limit).unwrap_or(usize::MAX);
        rows.truncate(usize::try_from(limit).unwrap_or(usize::MAX));
        Ok(Page {
            next_cursor: more
                .then(|| rows.last().map(|e| e.endpoint_id.clone()))
                .flatten(),
            items: rows.iter().map(|e| view(e, None)).collect(),
        })
    }

    pub async fn get(&self, caller: &Caller, id: &str) -> Result<WebhookView, AppError> {
        Ok(view(&self.visible(caller, id).await?, None))
    }

    pub async fn update(
        &self,
        caller: &Caller,
        id: &str,
        req: UpdateWebhook,
    ) -> Result<WebhookView, AppError> {
        let mut e = self.visible(caller, id).await?;
        if let Some(url) = req.url {
            self.check_url(&url)?;
            e.url = url;
        }
        if req.events.is_some() {
            e.event_types = event_types(req.events.as_deref())?;
        }
        if req.description.is_some() {
            e.description = description(req.description)?;
        }
        match req.enabled {
            Some(true) if e.state != "active" => {
                e.state = "active".into();
                e.disabled_reason = None;
                e.attempts = 0;
                e.failing_since = None;
                e.next_attempt_at = 0;
            }
            Some(false) if e.state == "active" => {
                e.state = "disabled".into();
                e.disabled_reason = Some("disabled by request".into());
            }
            _ => {}
        }
        e.updated_at = now_ms();
        store::webhooks::update_endpoint(&self.db, &e).await?;
        self.get(caller, id).await
    }

    pub async fn delete(&self, caller: &Caller, id: &str) -> Result<(), AppError> {
        self.visible(caller, id).await?;
        store::webhooks::delete_endpoint(&self.db, id).await?;
        Ok(())
    }

    /// A new secret; the old one signs too for [`PREVIOUS_SECRET_FOR`].
    pub async fn rotate(&self, caller: &Caller, id: &str) -> Result<WebhookView, AppError> {
        self.visible(caller, id).await?;
        let secret =
            signing::new_secret().map_err(|e| AppError::internal(format!("random: {e}")))?;
        let now = now_ms();
        let until = now + i64::try_from(PREVIOUS_SECRET_FOR.as_millis()).unwrap_or(i64::MAX);
        store::webhooks::rotate_secret(&self.db, id, &secret, until, now).await?;
        let row = self.visible(caller, id).await?;
        Ok(view(&row, Some(secret)))
    }

    /// Sends event `since` and every later one the endpoint asks for again, in order,
    /// enabling the endpoint if it was disabled.
    pub async fn redeliver(
        &self,
        caller: &Caller,
        id: &str,
        req: Redeliver,
    ) -> Result<WebhookView, AppError> {
        let e = self.visible(caller, id).await?;
        let unknown = || {
            AppError::invalid(
                "since",
                "no such event: not an id a delivery was sent with, or older than --webhook-retention",
            )
        };
        let seq = parse_event_id(&req.since).ok_or_else(unknown)?;
        let through = match store::webhooks::event_ordinal(&self.db, seq).await? {
            None => return Err(unknown()),
            Some(Some(ordinal)) => ordinal - 1,
            // Not yet given its place: everything from it on is still to come.
            Some(None) => e.delivered_through,
        };
        store::webhooks::rewind(&self.db, id, through, now_ms()).await?;
        self.get(caller, id).await
    }

    /// A page of the endpoint's attempts, newest first.
    pub async fn attempts(
        &self,
        caller: &Caller,
        id: &str,
        cursor: Option<&str>,
        limit: Option<i64>,
    ) -> Result<Page<AttemptView>, AppError> {
        self.visible(caller, id).await?;
        let limit = page_limit(limit)?;
        let before = match cursor {
            None => i64::MAX,
            Some(c) => c
                .parse::<i64>()
                .ok()
                .filter(|c| *c > 0)
                .ok_or_else(|| AppError::invalid("cursor", "not a cursor this API gave out"))?,
        };
        let mut rows = store::webhooks::attempts(&self.db, id, before, limit + 1).await?;
        let more = rows.len() > usize::try_from(limit).unwrap_or(usize::MAX);
        rows.truncate(usize::try_from(limit).unwrap_or(usize::MAX));
        Ok(Page {
            next_cursor: more
                .then(|| rows.last().map(|a| a.attempt_id.to_string()))
                .flatten(),
            items: rows.iter().map(attempt_view).collect(),
        })
    }
}

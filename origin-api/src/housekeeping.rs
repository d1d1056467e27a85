//! What the origin forgets on a schedule, so that no table grows without bound:
//! idempotency keys after their 24 hours, click event ids after their retention, and
//! delivered outbox rows after `--outbox-retention` (the newest delivered row of each
//! key stays), webhook events and attempts after `--webhook-retention`, who visited a
//! link with a visit limit once no click of that day can arrive (their count stays).
//! Also the per-key rate budgets of idle keys.

use crate::db::Db;
use crate::links::IDEMPOTENCY_TTL_MS;
use crate::ratelimit::CreateLimit;
use crate::store;
use crate::store::{ClickStore, OutboxStore, StoreError};
use std::time::Duration;

const HOUR_MS: i64 = 3_600_000;
const DAY_MS: i64 = shared::clicks::person::DAY_MS;
/// People forgotten per sweep at most: a day of 144 million in a day of sweeps.
const PEOPLE_PER_SWEEP: i64 = 100_000;
/// Links published again per sweep at most (an edit's work each).
const REPUBLISHED_PER_SWEEP: i64 = 500;

/// How often the sweep runs.
pub const EVERY: Duration = Duration::from_secs(60);

/// What one sweep removed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Swept {
    pub idempotency_keys: u64,
    pub click_ids: u64,
    /// People of links with a visit limit forgotten (their links' counts stay).
    pub limit_people: u64,
    /// Links with a limit set before records said so, published again.
    pub limits_republished: u64,
    pub outbox_rows: u64,
    /// Dashboard sessions past their end.
    pub sessions: u64,
    /// Sign-in attempts against emails nobody tried for an hour.
    pub login_attempts: u64,
    /// Webhook events and delivery attempts past `--webhook-retention`.
    pub webhook_events: u64,
    pub webhook_attempts: u64,
    /// Resolved reports past `--report-retention`.
    pub resolved_reports: u64,
    /// Browsers remembered longer than `accounts::DEVICE_KEPT_MS`.
    pub known_devices: u64,
}

/// What the sweep reaches.
#[derive(Debug)]
pub struct Housekeeping {
    db: Db,
    /// The per-key budgets, whose idle keys are forgotten.
    pub create_limit: CreateLimit,
    /// The report form's budgets and its resolved reports past their retention.
    pub reports: std::sync::Arc<crate::abuse::reports::Reports>,
    /// How long click event ids are kept (`--click-id-retention-h`).
    pub click_retention_ms: i64,
    /// How long delivered outbox rows are kept (`--outbox-retention`).
    pub outbox_retention: Duration,
    /// How long webhook events and attempts are kept (`--webhook-retention`).
    pub webhook_retention: Duration,
}

impl Housekeeping {
    /// The sweep over `db`: the budgets and reports it forgets, and how long each kind
    /// of row is kept.
    pub fn new(
        db: Db,
        create_limit: CreateLimit,
        reports: std::sync::Arc<crate::abuse::reports::Reports>,
        click_retention_ms: i64,
        outbox_retention: Duration,
        webhook_retention: Duration,
    ) -> Self {
        Housekeeping {
            db,
            create_limit,
            reports,
            click_retention_ms,
            outbox_retention,
            webhook_retention,
        }
    }
}

/// Removes what is past its time at `now` (Unix ms). Each part goes on if another fails;
/// the first failure is returned after all ran.
pub async fn sweep(state: &Housekeeping, now: i64) -> Result<Swept, StoreError> {
    state.create_limit.shrink();
    let mut swept = Swept::default();
    let mut first_error = None;
    match store::idempotency::forget_before(&state.db, now - IDEMPOTENCY_TTL_MS).await {
        Ok(n) => swept.idempotency_keys = n,
        Err(e) => first_error = first_error.or(Some(e)),
    }
    match state
        .db
        .forget_click_ids(now - state.click_retention_ms)
        .await
    {
        Ok(n) => swept.click_ids = n,
        Err(e) => first_error = first_error.or(Some(e)),
    }
    // A row of a tally is taken while any of its hour is within the ids' retention:
    // people of the days before that hour's day cannot come again.
    let last_hour = now
        .saturating_sub(state.click_retention_ms)
        .saturating_sub(HOUR_MS);
    match state
        .db
        .forget_old_people(last_hour.div_euclid(DAY_MS) * DAY_MS, PEOPLE_PER_SWEEP)
        .await
    {
        Ok(n) => swept.limit_people = n,
        Err(e) => first_error = first_error.or(Some(e)),
    }
    match store::republish_limited(&state.db, REPUBLISHED_PER_SWEEP, now).await {
        Ok(n) => swept.limits_republished = n,
        Err(e) => first_error = first_error.or(Some(e)),
    }
    let retention = i64::try_from(state.outbox_retention.as_millis()).unwrap_or(i64::MAX);
    match state
        .db
        .prune_delivered(now.saturating_sub(retention))
        .await
    {
        Ok(n) => swept.outbox_rows = n,
        Err(e) => first_error = first_error.or(Some(e)),
    }
    match state.reports.sweep(now).await {
        Ok(n) => swept.resolved_reports = n,
        Err(e) => first_error = first_error.or(Some(e)),
    }
    match store::sessions::forget_expired(&state.db, now).await {
        Ok(n) => swept.sessions = n,
        Err(e) => first_error = first_error.or(Some(e)),
    }
    let stale = now - crate::accounts::FORGET_ATTEMPTS_MS;
    match store::users::forget_stale_login_attempts(&state.db, stale).await {
        Ok(n) => swept.login_attempts = n,
        Err(e) => first_error = first_error.or(Some(e)),
    }
    match store::users::forget_old_devices(&state.db, now - crate::accounts::DEVICE_KEPT_MS).await {
        Ok(n) => swept.known_devices = n,
        Err(e) => first_error = first_error.or(Some(e)),
    }
    let retention = i64::try_from(state.webhook_retention.as_millis()).unwrap_or(i64::MAX);
    match store::webhooks::prune(&state.db, now.saturating_sub(retention)).await {
        Ok((events, attempts)) => {
            swept.webhook_events = events;
            swept.webhook_attempts = attempts;
        }
        Err(e) => first_error = first_error.or(Some(e)),
    }
    match first_error {
        Some(e) => Err(e),
        None => Ok(swept),
    }
}

/// Sweeps every [`EVERY`] until aborted.
pub async fn run(state: std::sync::Arc<Housekeeping>) {
    let mut every = tokio::time::interval(EVERY);
    loop {
        every.tick().await;
        match sweep(&state, crate::model::time::now_ms()).await {
            Ok(swept) if swept != Swept::default() => tracing::debug!(?swept, "swept"),
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "housekeeping failed; will retry"),
        }
    }
}

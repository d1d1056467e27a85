//! The dispatcher: events to endpoints, in order, at least once.
//!
//! One origin leads, by a lease of its own (`leases.webhooks`), and every write it makes
//! is fenced by it. Each round it gives the committed events their ordinals, writes the
//! events no change wrote (expiry, hourly clicks), and serves the endpoints that are
//! due, several at once: each endpoint's events strictly one after another, so a
//! receiver sees them in order; a failure stops that endpoint (only it) until its next
//! attempt on the schedule. No transaction is open while a receiver is called.

use super::{address, event_id, signing, WebhookSettings};
use crate::db::Db;
use crate::metrics::{Metrics, ResultLabel};
use crate::model::event::EventType;
use crate::model::time::{now_ms, rfc3339};
use crate::model::ShortUrls;
use crate::random_ids::random_hex;
use crate::store::webhooks::{self as stored, AttemptRow, EndpointRow, EventRow, Outcome, LEASE};
use crate::store::{LeaseClaim, OutboxStore, StoreError};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use tokio::task::JoinSet;

/// How long the lease lasts unrenewed: longer than one round can take (an endpoint's
/// run stops starting attempts after [`RUN_FOR`], and one attempt lasts at most the
/// timeout).
const LEASE_TTL_MS: i64 = 90_000;
/// How often an idle dispatcher looks for work.
const IDLE: Duration = Duration::from_millis(250);
/// Events given ordinals per statement.
const SEQUENCE_BATCH: i64 = 5_000;
/// Events read per endpoint per run.
const EVENTS_PER_RUN: i64 = 100;
/// Ordinals an endpoint's read looks through at once (an owner's endpoint skips other
/// owners' events without reading them all in one go).
const SCAN_WINDOW: i64 = 10_000;
/// An endpoint's run starts no new attempt after this long.
const RUN_FOR: Duration = Duration::from_secs(10);
/// Endpoints served at once.
const CONCURRENT_ENDPOINTS: usize = 16;
/// Of them, one owner's at most: its slow receivers hold a quarter of the slots, and
/// the other owners' deliveries go on in the rest.
const PER_OWNER: usize = 4;
/// How often the sweeps run and the gauges are read.
const SWEEP_EVERY: Duration = Duration::from_secs(5);
/// Links per expiry sweep step, and per hourly roll-up step.
const SWEEP_BATCH: i64 = 1_000;
/// An hour's clicks are rolled up this long after it ends: the edge's tallies of it
/// have arrived by then (a tally window is a second, a queue batch a few).
pub const CLICKS_GRACE_MS: i64 = 5 * 60_000;
/// The answer body kept of a failed attempt, in bytes.
const ERROR_BODY: usize = 200;

/// What the dispatcher keeps between rounds.
#[derive(Default)]
struct Rounds {
    last_sweep: Option<tokio::time::Instant>,
    /// The lease's epoch while this process leads.
    epoch: Option<i64>,
    /// The endpoints' runs, and whose each is: (endpoint, owner).
    running: JoinSet<()>,
    serving: HashMap<tokio::task::Id, (String, String)>,
}

impl Rounds {
    fn finished(&mut self, done: Result<(tokio::task::Id, ()), tokio::task::JoinError>) {
        let id = match done {
            Ok((id, ())) => id,
            Err(e) => {
                tracing::warn!(error = %e, "webhook endpoint run ended abnormally");
                e.id()
            }
        };
        self.serving.remove(&id);
    }
}

/// What the dispatcher needs.
#[derive(Debug, Clone)]
pub struct Dispatcher {
    db: Db,
    pub settings: WebhookSettings,
    pub short_urls: ShortUrls,
    pub metrics: Metrics,
    client: reqwest::Client,
    holder: String,
}

/// Why the client could not be built.
#[derive(Debug, thiserror::Error)]
#[error("cannot build the webhooks' HTTP client: {0}")]
pub struct ClientError(#[from] reqwest::Error);

impl Dispatcher {
    pub fn new(
        db: Db,
        settings: WebhookSettings,
        short_urls: ShortUrls,
        metrics: Metrics,
    ) -> Result<Dispatcher, ClientError> {
        let mut builder = reqwest::Client::builder()
            .timeout(settings.timeout)
            .connect_timeout(settings.timeout.min(Duration::from_secs(10)))
            // A redirect is an answer, not a delivery: a receiver that moved says so
            // by failing, and Hop never follows a Location it was not registered with.
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("Hop-Webhooks/", env!("CARGO_PKG_VERSION")));
        if !settings.allow_private {
            builder = builder.dns_resolver(Arc::new(address::PublicOnly));
        }
        let holder = format!(
            "{}-{}",
            std::process::id(),
            random_hex::<8>().unwrap_or_else(|_| now_ms().to_string())
        );
        Ok(Dispatcher {
            db,
            settings,
            short_urls,
            metrics,
            client: builder.build()?,
            holder,
        })
    }

    /// Runs until `stop` turns true, leading whenever the lease is free.
    ///
    /// Each endpoint's run is a task of its own: a round starts runs for the due
    /// endpoints not already running and waits for none of them, so a receiver that
    /// holds a request for its whole timeout holds up only its own endpoint.
    pub async fn run(self, mut stop: watch::Receiver<bool>) {
        let me = Arc::new(self);
        let mut rounds = Rounds::default();
        loop {
            if *stop.borrow() {
                break;
            }
            while let Some(done) = rounds.running.try_join_next_with_id() {
                rounds.finished(done);
            }
            if let Err(e) = me.round(&mut rounds).await {
                tracing::warn!(error = %e, "webhook dispatch round failed");
            }
            tokio::select! {
                _ = tokio::time::sleep(IDLE) => {}
                _ = stop.changed() => {}
                Some(done) = rounds.running.join_next_with_id(), if !rounds.running.is_empty() => {
                    rounds.finished(done);
                }
            }
        }
        // An attempt cut off here is made again by whoever leads next (at least once).
        rounds.running.abort_all();
        while rounds.running.join_next().await.is_some() {}
        if let Some(epoch) = rounds.epoch {
            let claim = LeaseClaim {
                name: LEASE,
                holder: &me.holder,
                epoch,
            };
            let _ = me.db.release_lease(&claim).await;
        }
        me.metrics.webhook_leader.set(0);
    }

    /// One round: the lease renewed, the sweeps when due, ordinals given, and a run
    /// started for each due endpoint not already running (at most
    /// [`CONCURRENT_ENDPOINTS`] at once).
    async fn round(self: &Arc<Self>, rounds: &mut Rounds) -> Result<(), StoreError> {
        let Some(lease) = self
            .db
            .take_lease(LEASE, &self.holder, LEASE_TTL_MS)
            .await?
        else {
            self.metrics.webhook_leader.set(0);
            rounds.epoch = None;
            return Ok(());
        };
        self.metrics.webhook_leader.set(1);
        rounds.epoch = Some(lease.epoch);
        let claim = LeaseClaim {
            name: LEASE,
            holder: &self.holder,
            epoch: lease.epoch,
        };
        let now = now_ms();
        if rounds
            .last_sweep
            .is_none_or(|at| at.elapsed() >= SWEEP_EVERY)
        {
            rounds.last_sweep = Some(tokio::time::Instant::now());
            self.sweep(now).await?;
        }
        let last = stored::sequence(&self.db, &claim, SEQUENCE_BATCH).await?;
        let room = CONCURRENT_ENDPOINTS.saturating_sub(rounds.running.len());
        if room == 0 {
            return Ok(());
        }
        let due = stored::due(&self.db, now, 1_000).await?;
        let due = due
            .into_iter()
            .filter(|e| {
                e.delivered_through < last
                    && !rounds.serving.values().any(|(id, _)| *id == e.endpoint_id)
            })
            .collect::<Vec<_>>();
        let mut busy: HashMap<String, usize> = HashMap::new();
        for (_, owner) in rounds.serving.values() {
            *busy.entry(owner.clone()).or_default() += 1;
        }
        for e in fair_pick(due, &busy, room, PER_OWNER) {
            let me = Arc::clone(self);
            let id = (e.endpoint_id.clone(), owner_key(&e));
            let epoch = lease.epoch;
            let task = rounds.running.spawn(async move {
                let claim = LeaseClaim {
                    name: LEASE,
                    holder: &me.holder,
                    epoch,
                };
                if let Err(err) = me.serve(&claim, e, last).await {
                    tracing::warn!(error = %err, "webhook endpoint run failed");
                }
            });
            rounds.serving.insert(task.id(), id);
        }
        Ok(())
    }

    /// The events no change writes, and the gauges.
    async fn sweep(&self, now: i64) -> Result<(), StoreError> {
        stored::start_sweep(&self.db, "expired", now).await?;
        stored::start_sweep(&self.db, "clicks", now - now.rem_euclid(3_600_000)).await?;
        loop {
            let (_, done) = stored::sweep_expired(&self.db, now, SWEEP_BATCH).await?;
            if done {
                break;
            }
        }
        // Read before the roll-up: an hour that closed while no origin ran is told too.
        let active = stored::active(&self.db).await?;
        // Hourly counts are written only for the owners an endpoint wants them for (all
        // of them for an endpoint of every owner's events): an owner's many links cost
        // nobody else's endpoints a thing.
        let wanting: Vec<&EndpointRow> = active
            .iter()
            .filter(|e| {
                e.event_types
                    .split(',')
                    .any(|t| t == EventType::ClicksRolledUp.as_str())
            })
            .collect();
        let tell_clicks = match wanting.iter().any(|e| e.owner_id.is_none()) {
            true => stored::Tell::Everyone,
            false => {
                stored::Tell::Owners(wanting.iter().filter_map(|e| e.owner_id.clone()).collect())
            }
        };
        // Every closed hour not yet rolled up, a step at a time.
        while stored::roll_up_hour(&self.db, now, CLICKS_GRACE_MS, SWEEP_BATCH, &tell_clicks)
            .await?
            .is_some()
        {}
        let mut oldest: Option<i64> = stored::oldest_unsequenced(&self.db).await?;
        for e in &active {
            // Within the window a run reads: an owner's endpoint with nothing of its own
            // beyond that is moved past it by its next run, so it is not behind.
            let window = e.delivered_through.saturating_add(SCAN_WINDOW);
            let head = stored::events_for(&self.db, e, e.delivered_through, window, 1).await?;
            if let Some(ev) = head.first() {
                oldest = Some(oldest.map_or(ev.created_at, |o| o.min(ev.created_at)));
            }
        }
        let age = oldest.map_or(0.0, |o| (now - o).max(0) as f64 / 1000.0);
        self.metrics.webhook_oldest_undelivered.set(age);
        let disabled = stored::endpoints(&self.db, None, "", 100_000)
            .await?
            .iter()
            .filter(|e| e.state == "disabled")
            .count();
        self.metrics
            .webhook_endpoints_disabled
            .set(i64::try_from(disabled).unwrap_or(i64::MAX));
        Ok(())
    }

    /// One endpoint's run: its next events, one after another, until one fails, the
    /// run has taken [`RUN_FOR`], or none is left up to ordinal `last`.
    async fn serve(
        &self,
        claim: &LeaseClaim<'_>,
        e: EndpointRow,
        last: i64,
    ) -> Result<(), StoreError> {
        let upto = last.min(e.delivered_through.saturating_add(SCAN_WINDOW));
        let events =
            stored::events_for(&self.db, &e, e.delivered_through, upto, EVENTS_PER_RUN).await?;
        let started = tokio::time::Instant::now();
        let mut attempts = Vec::new();
        let mut outcome = Outcome {
            delivered_through: e.delivered_through,
            attempts: e.attempts,
            failing_since: e.failing_since,
            next_attempt_at: e.next_attempt_at,
            disabled_reason: None,
        };
        let mut stopped = false;
        for ev in &events {
            if started.elapsed() >= RUN_FOR {
                stopped = true;
                break;
            }
            let attempt = self.attempt(&e, ev).await;
            let result = attempt.result.clone();
            self.metrics
                .webhook_deliveries
                .get_or_create(&ResultLabel {
                    result: match result.as_str() {
                        "delivered" => "delivered",
                        "gone" => "gone",
                        _ => "failed",
                    },
                })
                .inc();
            let at = attempt.attempted_at;
            attempts.push(attempt);
            if result == "delivered" {
                outcome.delivered_through = ev.ordinal;
                outcome.attempts = 0;
                outcome.failing_since = None;
                outcome.next_attempt_at = 0;
                continue;
            }
            stopped = true;
            outcome.attempts += 1;
            let since = *outcome.failing_since.get_or_insert(at);
            let give_up =
                i64::try_from(self.settings.give_up_after.as_millis()).unwrap_or(i64::MAX);
            if result == "gone" {
                outcome.disabled_reason = Some(format!(
                    "the receiver answered 410 Gone to {} at {}",
                    event_id(ev.seq),
                    rfc3339(at)
                ));
            } else if at - since >= give_up {
                outcome.disabled_reason = Some(format!(
                    "every attempt failed since {} ({} attempts at {})",
                    rfc3339(since),
                    outcome.attempts,
                    event_id(ev.seq)
                ));
            } else {
                outcome.next_attempt_at = at + self.delay(outcome.attempts);
            }
            break;
        }
        // Nothing more of this endpoint's in the window: its cursor passes the rest.
        let whole = !stopped && i64::try_from(events.len()).unwrap_or(i64::MAX) < EVENTS_PER_RUN;
        if whole {
            outcome.delivered_through = upto;
        }
        if attempts.is_empty() && outcome.delivered_through == e.delivered_through {
            return Ok(());
        }
        stored::record_outcome(
            &self.db,
            claim,
            &e.endpoint_id,
            e.delivered_through,
            &attempts,
            &outcome,
            now_ms(),
        )
        .await
    }

    /// The wait after the `n`th failed attempt at an event (`n` ≥ 1), in ms.
    fn delay(&self, n: i64) -> i64 {
        let schedule = &self.settings.schedule;
        let i = usize::try_from(n - 1)
            .unwrap_or(0)
            .min(schedule.len().saturating_sub(1));
        schedule
            .get(i)
            .map_or(60_000, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
    }

    /// One delivery of `ev` to `e`.
    async fn attempt(&self, e: &EndpointRow, ev: &EventRow) -> AttemptRow {
        let started = tokio::time::Instant::now();
        let attempted_at = now_ms();
        let (result, status, error) = match self.post(e, ev, attempted_at).await {
            Ok((status, _)) if (200..300).contains(&status) => ("delivered", Some(status), None),
            Ok((410, _)) => ("gone", Some(410), None),
            Ok((status, body)) => ("failed", Some(status), Some(body).filter(|b| !b.is_empty())),
            Err(why) => ("failed", None, Some(why)),
        };
        AttemptRow {
            attempt_id: 0,
            event_seq: ev.seq,
            event_type: ev.kind.clone(),
            attempted_at,
            result: result.to_owned(),
            status: status.map(i64::from),
            error,
            duration_ms: i64::try_from(started.elapsed().as_millis()).unwrap_or(i64::MAX),
        }
    }

    /// POSTs the signed message; the status and the start of the body, or why no
    /// answer came.
    async fn post(
        &self,
        e: &EndpointRow,
        ev: &EventRow,
        now: i64,
    ) -> Result<(u16, String), String> {
        if let Some(why) = address::refuse(&e.url, self.settings.allow_private) {
            return Err(format!("the endpoint's URL is refused: {why}"));
        }
        let body = message(ev, &self.short_urls);
        let id = event_id(ev.seq);
        let timestamp = now.div_euclid(1000);
        let mut secrets = vec![e.secret.as_str()];
        if let (Some(previous), Some(until)) = (&e.previous_secret, e.previous_until) {
            if until > now {
                secrets.push(previous);
            }
        }
        let signature = signing::signature_header(secrets, &id, timestamp, body.as_bytes());
        let answer = self
            .client
            .post(&e.url)
            .header("content-type", "application/json")
            .header("webhook-id", &id)
            .header("webhook-timestamp", timestamp.to_string())
            .header("webhook-signature", signature)
            .body(body)
            .send()
            .await
            .map_err(|err| describe(&err))?;
        let status = answer.status().as_u16();
        let text = if (200..300).contains(&status) {
            String::new()
        } else {
            kept_start(answer).await
        };
        Ok((status, text))
    }
}

/// The start of a failed answer's body, at most [`ERROR_BODY`] bytes of it: read chunk
/// by chunk only until that much is in hand, and the rest never read (the connection
/// is dropped). A receiver answering a 500 with gigabytes costs the bytes kept and the
/// rest of the chunk they came in, never the body.
async fn kept_start(mut answer: reqwest::Response) -> String {
    let mut kept: Vec<u8> = Vec::with_capacity(ERROR_BODY);
    while kept.len() < ERROR_BODY {
        match answer.chunk().await {
            Ok(Some(chunk)) => {
                let room = ERROR_BODY - kept.len();
                kept.extend_from_slice(&chunk[..chunk.len().min(room)]);
            }
            Ok(None) | Err(_) => break,
        }
    }
    let mut text = String::from_utf8_lossy(&kept).into_owned();
    // A character cut at the end is no character: dropped, not shown as a replacement.
    if kept.len() == ERROR_BODY && text.ends_with('\u{fffd}') && std::str::from_utf8(&kept).is_err()
    {
        text.pop();
    }
    text
}

/// Whose an endpoint's runs count as: its owner, or the operators (`scope: all`).
fn owner_key(e: &EndpointRow) -> String {
    e.owner_id.clone().unwrap_or_default()
}

/// Up to `room` of `due` (longest waiting first) to run now, shared between owners in
/// turn: each owner's longest waiting endpoint, then each one's next, and so on, never
/// more than `per_owner` of one owner's running at once (`busy`: how many run now). A
/// thousand slow endpoints of one owner then delay nobody else's.
fn fair_pick(
    due: Vec<EndpointRow>,
    busy: &HashMap<String, usize>,
    room: usize,
    per_owner: usize,
) -> Vec<EndpointRow> {
    // Each owner's queue, owners in the order their first endpoint waits.
    let mut queues: Vec<(String, std::collections::VecDeque<EndpointRow>)> = Vec::new();
    for e in due {
        let owner = owner_key(&e);
        match queues.iter_mut().find(|(o, _)| *o == owner) {
            Some((_, q)) => q.push_back(e),
            None => queues.push((owner, std::collections::VecDeque::from([e]))),
        }
    }
    let mut picked = Vec::new();
    loop {
        let mut any = false;
        for (owner, q) in queues.iter_mut() {
            if picked.len() >= room {
                return picked;
            }
            let taken = picked.iter().filter(|e| owner_key(e) == *owner).count();
            if busy.get(owner.as_str()).copied().unwrap_or_default() + taken >= per_owner {
                continue;
            }
            if let Some(e) = q.pop_front() {
                picked.push(e);
                any = true;
            }
        }
        if !any {
            return picked;
        }
    }
}

/// What a failed request came to, in a few words (no secrets: the URL is the owner's).
fn describe(err: &reqwest::Error) -> String {
    if err.is_timeout() {
        "no answer within the timeout".to_owned()
    } else if err.is_connect() {
        format!("could not connect: {}", root_cause(err))
    } else {
        root_cause(err)
    }
}

fn root_cause(err: &(dyn std::error::Error + 'static)) -> String {
    let mut cause = err;
    while let Some(next) = cause.source() {
        cause = next;
    }
    cause.to_string()
}

/// The message sent for `ev`: Standard Webhooks' `{type, timestamp, data}`, `data`
/// with the link's full short URL.
pub fn message(ev: &EventRow, short_urls: &ShortUrls) -> String {
    let mut data: serde_json::Value =
        serde_json::from_str(&ev.data).unwrap_or(serde_json::Value::Null);
    if let (Some(code), Some(map)) = (&ev.code, data.as_object_mut()) {
        map.insert("short_url".into(), short_urls.of(&ev.domain, code).into());
    }
    serde_json::json!({
        "type": ev.kind,
        "timestamp": rfc3339(ev.created_at),
        "data": data,
    })
    .to_string()
}

#[cfg(test)]
mod fairness_tests {
    use super::*;

    fn endpoint(owner: &str, id: usize) -> EndpointRow {
        EndpointRow {
            endpoint_id: format!("{owner}-{id}"),
            owner_id: Some(owner.to_owned()),
            ..EndpointRow::default()
        }
    }

    fn ids(picked: &[EndpointRow]) -> Vec<&str> {
        picked.iter().map(|e| e.endpoint_id.as_str()).collect()
    }

    #[test]
    fn owners_take_turns_and_none_holds_more_than_its_share() {
        // A's hundred endpoints waited longest; B's one and C's two came after.
        let mut due: Vec<EndpointRow> = (0..100).map(|i| endpoint("a", i)).collect();
        due.push(endpoint("b", 0));
        due.extend((0..2).map(|i| endpoint("c", i)));
        let picked = fair_pick(due.clone(), &HashMap::new(), 16, 4);
        assert_eq!(
            ids(&picked),
            ["a-0", "b-0", "c-0", "a-1", "c-1", "a-2", "a-3"],
            "in turn, A at most 4"
        );
        // With A's four still running, A gets nothing more; the others go on.
        let busy = HashMap::from([("a".to_owned(), 4)]);
        assert_eq!(
            ids(&fair_pick(due.clone(), &busy, 16, 4)),
            ["b-0", "c-0", "c-1"]
        );
        // Room bounds it all.
        assert_eq!(ids(&fair_pick(due, &HashMap::new(), 2, 4)), ["a-0", "b-0"]);
    }
}

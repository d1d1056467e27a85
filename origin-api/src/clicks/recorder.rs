//! Clicks of the origin's own redirects.
//!
//! The redirect handler hands each click to a bounded queue without waiting ([`Recorder::record`]
//! never blocks, never fails the redirect), carrying only the request's header values
//! (cheap clones of the received bytes). A background task turns them into events (id,
//! user agent reduced to device and bot flag, referrer to its host) and ingests them in
//! batches, exactly as events from the edge. These clicks live in memory until written:
//! a crash loses at most the last batch; a full queue or a database down for longer than
//! the retries drops clicks and counts them in `hop_clicks_dropped_total`.

use super::{event_id, Clicks};
use crate::metrics::Metrics;
use crate::store::{now_ms, ClickStore};
use axum::http::HeaderValue;
use shared::clicks::{ClickEvent, Visitor};
use shared::RouteKey;
use std::sync::Mutex;
use std::time::Duration;
use tokio::sync::mpsc;

/// Clicks waiting to be written at most; beyond, new ones are dropped (and counted).
pub const QUEUE: usize = 65_536;
/// Clicks written per transaction at most.
const BATCH: usize = 1_000;
/// Waits between attempts at writing a batch the database refused.
const RETRIES: [Duration; 3] = [
    Duration::from_millis(100),
    Duration::from_millis(500),
    Duration::from_secs(2),
];

/// One click as the redirect path saw it.
#[derive(Debug)]
pub struct OwnClick {
    pub route: RouteKey,
    pub version: Option<u64>,
    /// Unix ms.
    pub at: i64,
    pub status: u16,
    pub user_agent: Option<HeaderValue>,
    pub referer: Option<HeaderValue>,
    /// `CF-IPCountry`, when Cloudflare proxies the origin.
    pub country: Option<HeaderValue>,
}

impl OwnClick {
    fn into_event(self) -> ClickEvent {
        let text =
            |v: &Option<HeaderValue>| v.as_ref().and_then(|v| v.to_str().ok()).map(str::to_owned);
        let (ua, referer, country) = (
            text(&self.user_agent),
            text(&self.referer),
            text(&self.country),
        );
        ClickEvent::new(
            event_id(),
            self.route.to_string(),
            self.version,
            self.at,
            self.status,
            Visitor::describe(ua.as_deref(), referer.as_deref(), country.as_deref()),
        )
    }
}

/// The redirect path's end of the queue.
#[derive(Debug)]
pub struct Recorder {
    tx: Option<mpsc::Sender<OwnClick>>,
    /// The other end, until the writer task takes it (tests without one drain it with
    /// [`Recorder::flush`]).
    rx: Mutex<Option<mpsc::Receiver<OwnClick>>>,
    metrics: Metrics,
}

impl Recorder {
    /// A recorder; a disabled one records nothing.
    pub fn new(enabled: bool, metrics: Metrics) -> Self {
        let (tx, rx) = if enabled {
            let (tx, rx) = mpsc::channel(QUEUE);
            (Some(tx), Some(rx))
        } else {
            (None, None)
        };
        Recorder {
            tx,
            rx: Mutex::new(rx),
            metrics,
        }
    }

    /// Whether clicks are being recorded.
    pub fn enabled(&self) -> bool {
        self.tx.is_some()
    }

    /// Queues a click without waiting.
    pub fn record(&self, click: OwnClick) {
        if let Some(tx) = &self.tx {
            if tx.try_send(click).is_err() {
                self.metrics.clicks_dropped.inc();
            }
        }
    }

    fn take_receiver(&self) -> Option<mpsc::Receiver<OwnClick>> {
        self.rx.lock().unwrap_or_else(|e| e.into_inner()).take()
    }

    /// Writes what is queued now, when no writer task runs (tests use it).
    pub async fn flush<S: ClickStore + ?Sized>(&self, clicks: &Clicks, store: &S) {
        let Some(mut rx) = self.take_receiver() else {
            return;
        };
        let mut batch = Vec::new();
        while let Ok(click) = rx.try_recv() {
            batch.push(click);
            if batch.len() == BATCH {
                self.write(clicks, store, std::mem::take(&mut batch)).await;
            }
        }
        self.write(clicks, store, batch).await;
        *self.rx.lock().unwrap_or_else(|e| e.into_inner()) = Some(rx);
    }

    /// Writes queued clicks until `stop` turns true, then what is left.
    pub async fn run<S: ClickStore + ?Sized>(
        &self,
        clicks: &Clicks,
        store: &S,
        mut stop: tokio::sync::watch::Receiver<bool>,
    ) {
        let Some(mut rx) = self.take_receiver() else {
            return;
        };
        let mut batch = Vec::with_capacity(BATCH);
        loop {
            tokio::select! {
                n = rx.recv_many(&mut batch, BATCH) => {
                    if n == 0 {
                        return;
                    }
                    self.write(clicks, store, std::mem::take(&mut batch)).await;
                }
                // The only change ever sent is the stop (or the sender went away).
                _ = stop.changed() => break,
            }
        }
        // Shutting down: what the last requests queued.
        rx.close();
        while rx.recv_many(&mut batch, BATCH).await > 0 {
            self.write(clicks, store, std::mem::take(&mut batch)).await;
        }
    }

    async fn write<S: ClickStore + ?Sized>(
        &self,
        clicks: &Clicks,
        store: &S,
        batch: Vec<OwnClick>,
    ) {
        if batch.is_empty() {
            return;
        }
        let events: Vec<ClickEvent> = batch.into_iter().map(OwnClick::into_event).collect();
        let mut waits = RETRIES.iter();
        loop {
            match clicks.ingest(store, &events, now_ms()).await {
                Ok(_) => return,
                Err(e) => match waits.next() {
                    Some(wait) => {
                        tracing::warn!(error = %e, "writing clicks failed; retrying");
                        tokio::time::sleep(*wait).await;
                    }
                    None => {
                        tracing::error!(error = %e, clicks = events.len(), "writing clicks failed; dropped");
                        self.metrics.clicks_dropped.inc_by(events.len() as u64);
                        return;
                    }
                },
            }
        }
    }
}

//! The origin's background work, in one list: [`start`] starts every task a serving
//! origin runs beside its listeners, and [`Background::stop`] stops them in an order
//! that loses nothing (what is queued is written before what reports it, the publisher
//! last, giving its lease up).

use super::{webhook_settings, AppState};
use crate::clicks::ClickService;
use crate::publisher::Publisher;
use crate::{clicks, config, freshness, housekeeping, webhooks};
use std::future::Future;
use std::sync::Arc;
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// The tasks started, by name, in the order they are stopped.
pub struct Background {
    stop: watch::Sender<bool>,
    tasks: Vec<(&'static str, JoinHandle<()>)>,
    /// Stopped first: it holds nothing to write.
    sweeper: JoinHandle<()>,
    /// After every task that writes clicks: how far this process wrote them.
    reporting: JoinHandle<()>,
    clicks: Arc<ClickService>,
    /// Last: it gives its lease up on the way out.
    publishing: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for Background {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Background")
            .field("tasks", &self.names())
            .finish()
    }
}

fn spawn(work: impl Future<Output = ()> + Send + 'static) -> JoinHandle<()> {
    tokio::spawn(work)
}

/// Starts every background task of a serving origin.
pub fn start(state: &AppState) -> std::io::Result<Background> {
    let (stop, stopped) = watch::channel(false);
    let publishing = publisher(state)?.map(|p| spawn(p.run(stopped)));
    let clicks = state.clicks.clone();
    let tasks: Vec<(&'static str, JoinHandle<()>)> = vec![
        // On PostgreSQL, other origins' changes reach this one's cache as they commit.
        (
            "freshness",
            spawn(freshness::listen(state.freshness.clone(), stop.subscribe())),
        ),
        // The origin's own clicks, written in the background; what is queued at shutdown
        // is written before the process exits.
        ("recording", {
            let (c, stop) = (clicks.clone(), stop.subscribe());
            spawn(async move { c.record(stop).await })
        }),
        // The edge's clicks, staged as they are acknowledged, folded into the rollups.
        ("folding", {
            let (c, stop) = (clicks.clone(), stop.subscribe());
            spawn(async move { c.fold(stop).await })
        }),
        // Codes sent on to a domain's old shortener, counted per code.
        (
            "legacy",
            spawn(clicks::legacy::run(
                state.db().clone(),
                state.clicks.counts.legacy.clone(),
                stop.subscribe(),
            )),
        ),
        // Webhook events to their endpoints: a lease of its own, so that a slow receiver
        // holds up nothing else.
        (
            "webhooks",
            spawn(
                webhooks::dispatch::Dispatcher::new(
                    state.db().clone(),
                    webhook_settings(&state.settings),
                    state.links.settings.short_urls.clone(),
                    state.metrics.clone(),
                )
                .map_err(std::io::Error::other)?
                .run(stop.subscribe()),
            ),
        ),
        // Threat feeds refreshed when due, and live links re-checked against them.
        ("abuse", spawn(state.abuse.clone().run(stop.subscribe()))),
        // Expired links and old tombstones purged under a lease of their own.
        ("purge", spawn(state.purge.clone().run(stop.subscribe()))),
    ];
    // How far this process has written clicks, for the stats' `data_as_of`.
    let reporting = {
        let (c, metrics, stop) = (clicks.clone(), state.metrics.clone(), stop.subscribe());
        spawn(async move { c.report(&metrics, stop).await })
    };
    // Once a minute, what is past its time is forgotten.
    let sweeper = spawn(housekeeping::run(state.housekeeping.clone()));
    Ok(Background {
        stop,
        tasks,
        sweeper,
        reporting,
        clicks,
        publishing,
    })
}

impl Background {
    /// Every task's name, in the order [`Background::stop`] waits for them.
    pub fn names(&self) -> Vec<&'static str> {
        let mut names = vec!["housekeeping"];
        names.extend(self.tasks.iter().map(|(name, _)| *name));
        names.push("reporting");
        if self.publishing.is_some() {
            names.push("publisher");
        }
        names
    }

    /// Stops every task and waits for each to finish what it holds.
    pub async fn stop(self) {
        self.sweeper.abort();
        let _ = self.stop.send(true);
        for (name, task) in self.tasks {
            if let Err(e) = task.await {
                tracing::error!(task = name, error = %e, "a background task failed");
            }
        }
        // Everything held is written (or counted as dropped): nothing is outstanding.
        let _ = self.reporting.await;
        self.clicks.forget_reports().await;
        if let Some(task) = self.publishing {
            let _ = task.await;
        }
    }
}

/// The publisher this origin runs, when it is configured to publish.
pub fn publisher(state: &AppState) -> std::io::Result<Option<Publisher>> {
    use crate::publisher::sink::{KvBulk, Sink, WorkerSync};
    use secrecy::ExposeSecret;
    let s = &state.settings;
    let sink: Arc<dyn Sink> = match s.publishing().map_err(std::io::Error::other)? {
        config::Publishing::Nowhere => return Ok(None),
        config::Publishing::Worker { url, token } => {
            Arc::new(WorkerSync::new(url, token.expose_secret()).map_err(std::io::Error::other)?)
        }
        config::Publishing::Kv {
            account,
            namespace,
            token,
        } => Arc::new(
            KvBulk::new(&s.cf_api_url, account, namespace, token.expose_secret())
                .map_err(std::io::Error::other)?,
        ),
    };
    Ok(Some(Publisher::new(
        Arc::new(state.db().clone()),
        sink,
        state.metrics.clone(),
    )))
}

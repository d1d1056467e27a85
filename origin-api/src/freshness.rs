//! Cross-process freshness on PostgreSQL: a change made through one origin reaches
//! every other origin's redirect cache at once, not after the cache's TTL.
//!
//! Every link write commits a notification on [`crate::store::LINKS_CHANNEL`] (`"<version> <route
//! key>"`), every ban or lift one on [`crate::store::BANS_CHANNEL`], and every change of
//! a domain one on [`crate::store::DOMAINS_CHANNEL`], in its own transaction, so
//! PostgreSQL delivers it exactly when the change becomes visible. Each origin listens:
//! a link it holds at an older version (or as unknown) is read again, a ban change
//! makes it read the denylist again, and a domain change its settings and the served
//! domains. Notifications are not durable: while the listening
//! connection is down they are lost, so every (re)connection forgets the whole cache
//! once it listens again (not when the loss is noticed: what visits read back in
//! between could change unannounced), and the TTL stays as the bound should one be lost
//! otherwise. SQLite has one process
//! per file, so it needs none of this.

use crate::cache::RedirectCache;
use crate::db::Db;
use crate::metrics::Metrics;
use crate::store::{BANS_CHANNEL, DOMAINS_CHANNEL, LINKS_CHANNEL};
use sqlx::postgres::PgListener;
use std::time::Duration;
use tokio::sync::watch;

/// The longest wait between two attempts to listen.
const MAX_BACKOFF: Duration = Duration::from_secs(5);

/// Where notifications come from: PostgreSQL's `LISTEN` in production, a script in the
/// tests (which is how the order of "listening again" and "forgetting" is tested
/// without racing a real connection).
trait Feed {
    /// Connects and listens on every channel; an error is retried with backoff.
    async fn listen(&mut self) -> Result<(), sqlx::Error>;
    /// The next `(channel, payload)`, or `None` once the connection is lost.
    async fn next(&mut self) -> Result<Option<(String, String)>, sqlx::Error>;
}

struct Postgres {
    pool: sqlx::PgPool,
    listener: Option<PgListener>,
}

impl Feed for Postgres {
    async fn listen(&mut self) -> Result<(), sqlx::Error> {
        self.listener = None;
        let mut listener = PgListener::connect_with(&self.pool).await?;
        listener
            .listen_all([LINKS_CHANNEL, BANS_CHANNEL, DOMAINS_CHANNEL])
            .await?;
        self.listener = Some(listener);
        Ok(())
    }

    async fn next(&mut self) -> Result<Option<(String, String)>, sqlx::Error> {
        let Some(listener) = self.listener.as_mut() else {
            return Ok(None);
        };
        // `try_recv` would reconnect by itself on the call after a loss, listening
        // again without telling; `None` hands the reconnection to `follow`, which
        // forgets the cache once it listens.
        Ok(listener
            .try_recv()
            .await?
            .map(|n| (n.channel().to_owned(), n.payload().to_owned())))
    }
}

/// What the loop tells: that it listens (again), and each notification.
trait Follower {
    fn listening(&self);
    async fn notified(&self, channel: &str, payload: &str);
}

/// What following other origins' changes reaches: the database to listen on, and this
/// origin's redirect cache, which each notification corrects.
#[derive(Debug)]
pub struct Freshness {
    db: Db,
    cache: RedirectCache,
    metrics: Metrics,
}

impl Freshness {
    pub fn new(db: Db, cache: RedirectCache, metrics: Metrics) -> Self {
        Freshness { db, cache, metrics }
    }
}

impl Follower for Freshness {
    fn listening(&self) {
        // Whatever was held may have changed while nobody listened.
        self.cache.forget_all();
        self.metrics.freshness_connects.inc();
    }

    async fn notified(&self, channel: &str, payload: &str) {
        handle(self, channel, payload).await;
    }
}

/// Listens until `stop` turns true (returns at once on SQLite).
pub async fn listen(state: std::sync::Arc<Freshness>, stop: watch::Receiver<bool>) {
    let Db::Postgres(pool) = &state.db else {
        return;
    };
    let feed = Postgres {
        pool: pool.clone(),
        listener: None,
    };
    follow(feed, state.as_ref(), stop).await;
}

/// The loop: listen (with backoff), then hand each notification to the follower until
/// the connection is lost, and again. `listening` is told each time it listens, after the
/// `LISTEN` took effect, and never when the loss is noticed: forgotten then, what visits
/// read back before it listens again could be changed unannounced and held to the TTL.
async fn follow(mut feed: impl Feed, follower: &impl Follower, mut stop: watch::Receiver<bool>) {
    let mut backoff = Duration::from_millis(100);
    loop {
        let connected = tokio::select! {
            c = feed.listen() => c,
            _ = stop.changed() => return,
        };
        if let Err(e) = connected {
            tracing::warn!("cannot listen for other origins' changes: {e}");
            tokio::select! {
                _ = tokio::time::sleep(backoff) => {}
                _ = stop.changed() => return,
            }
            backoff = (backoff * 2).min(MAX_BACKOFF);
            continue;
        }
        follower.listening();
        backoff = Duration::from_millis(100);
        loop {
            let next = tokio::select! {
                n = feed.next() => n,
                _ = stop.changed() => return,
            };
            match next {
                Ok(Some((channel, payload))) => follower.notified(&channel, &payload).await,
                // What is announced until it listens again is lost.
                Ok(None) => {
                    tracing::warn!(
                        "lost the notification connection; the redirect cache is forgotten once it listens again"
                    );
                    break;
                }
                Err(e) => {
                    tracing::warn!("listening for other origins' changes: {e}");
                    break;
                }
            }
        }
    }
}

async fn handle(state: &Freshness, channel: &str, payload: &str) {
    match channel {
        LINKS_CHANNEL => {
            let Some((version, key)) = payload.split_once(' ') else {
                return;
            };
            let (Ok(version), Some(route)) = (version.parse(), shared::RouteKey::parse(key)) else {
                return;
            };
            if let Err(e) = state
                .cache
                .changed_elsewhere(&state.db, &route, version)
                .await
            {
                // The entry was dropped instead; the next visit reads it.
                tracing::warn!(%route, "re-reading a changed link: {e}");
            }
        }
        BANS_CHANNEL => state.cache.bans_changed(),
        DOMAINS_CHANNEL => state.cache.domains_changed(),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use tokio::sync::mpsc;

    /// A feed played by the test: each step is what the next call returns, sent when
    /// the test decides.
    enum Step {
        Listens,
        Notifies(&'static str),
        Loses,
    }

    /// The steps to play, and the log it writes "lost" to when it plays a loss.
    struct Script(mpsc::UnboundedReceiver<Step>, Log);

    impl Script {
        async fn step(&mut self) -> Step {
            // A script that ran out waits for `stop`.
            let step = match self.0.recv().await {
                Some(step) => step,
                None => std::future::pending().await,
            };
            if let Step::Loses = step {
                push(&self.1, "lost");
            }
            step
        }
    }

    impl Feed for Script {
        async fn listen(&mut self) -> Result<(), sqlx::Error> {
            match self.step().await {
                Step::Listens => Ok(()),
                _ => Err(sqlx::Error::PoolClosed),
            }
        }
        async fn next(&mut self) -> Result<Option<(String, String)>, sqlx::Error> {
            Ok(match self.step().await {
                Step::Notifies(payload) => Some((LINKS_CHANNEL.to_owned(), payload.to_owned())),
                _ => None,
            })
        }
    }

    /// What happened, in order: "forgot", each notification, "lost", and the visits the
    /// test makes read a link back while the connection is down. A watch channel, so
    /// the test awaits an entry instead of spinning (a spinning test never lets paused
    /// time advance).
    type Log = Arc<watch::Sender<Vec<String>>>;

    fn new_log() -> Log {
        Arc::new(watch::Sender::new(Vec::new()))
    }

    fn push(log: &Log, what: &str) {
        log.send_modify(|l| l.push(what.to_owned()));
    }

    /// Logs what the loop tells it, as the redirect cache would act on it.
    struct Logged(Log);

    impl Follower for Logged {
        fn listening(&self) {
            push(&self.0, "forgot");
        }
        async fn notified(&self, _: &str, payload: &str) {
            push(&self.0, payload);
        }
    }

    async fn until_logged(log: &Log, n: usize) {
        log.subscribe()
            .wait_for(|l| l.len() >= n)
            .await
            .expect("the log outlives the test");
    }

    #[tokio::test]
    async fn a_lost_connection_forgets_the_cache_after_listening_again_not_before() {
        let (play, script) = mpsc::unbounded_channel();
        let (stop_tx, stop) = watch::channel(false);
        let log = new_log();
        let following = tokio::spawn({
            let log = log.clone();
            async move { follow(Script(script, log.clone()), &Logged(log), stop).await }
        });
        play.send(Step::Listens).expect("play");
        play.send(Step::Notifies("1 s.example/a")).expect("play");
        until_logged(&log, 2).await;
        play.send(Step::Loses).expect("play");
        until_logged(&log, 3).await;
        // While nobody listens, a visit reads a link back into the cache; a change made
        // now is announced to nobody.
        push(&log, "read back");
        play.send(Step::Listens).expect("play");
        until_logged(&log, 5).await;
        stop_tx.send(true).expect("stop");
        following.await.expect("follow");
        assert_eq!(
            *log.borrow(),
            ["forgot", "1 s.example/a", "lost", "read back", "forgot"],
            "the cache must be forgotten once it listens again, after what was read back meanwhile"
        );
    }

    #[tokio::test]
    async fn a_failed_listen_is_retried_and_forgets_only_once_it_listens() {
        let (play, script) = mpsc::unbounded_channel();
        let (stop_tx, stop) = watch::channel(false);
        let log = new_log();
        tokio::time::pause();
        let following = tokio::spawn({
            let log = log.clone();
            async move { follow(Script(script, log.clone()), &Logged(log), stop).await }
        });
        play.send(Step::Loses).expect("play"); // the first LISTEN fails
        play.send(Step::Listens).expect("play");
        until_logged(&log, 2).await;
        stop_tx.send(true).expect("stop");
        following.await.expect("follow");
        assert_eq!(*log.borrow(), ["lost", "forgot"]);
    }
}

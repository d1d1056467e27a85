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

use crate::db::Db;
use crate::state::AppState;
use crate::store::{BANS_CHANNEL, DOMAINS_CHANNEL, LINKS_CHANNEL};
use sqlx::postgres::PgListener;
use std::time::Duration;
use tokio::sync::watch;

/// The longest wait between two attempts to listen.
const MAX_BACKOFF: Duration = Duration::from_secs(5);

/// Listens until `stop` turns true (returns at once on SQLite).
pub async fn listen(state: AppState, mut stop: watch::Receiver<bool>) {
    let Db::Postgres(pool) = &state.db else {
        return;
    };
    let mut backoff = Duration::from_millis(100);
    loop {
        let connected = async {
            let mut listener = PgListener::connect_with(pool).await?;
            listener
                .listen_all([LINKS_CHANNEL, BANS_CHANNEL, DOMAINS_CHANNEL])
                .await?;
            Ok::<_, sqlx::Error>(listener)
        };
        let mut listener = tokio::select! {
            l = connected => match l {
                Ok(l) => l,
                Err(e) => {
                    tracing::warn!("cannot listen for other origins' changes: {e}");
                    tokio::select! {
                        _ = tokio::time::sleep(backoff) => {}
                        _ = stop.changed() => return,
                    }
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                    continue;
                }
            },
            _ = stop.changed() => return,
        };
        // Whatever was held may have changed while nobody listened.
        state.cache.forget_all();
        state.metrics.freshness_connects.inc();
        backoff = Duration::from_millis(100);
        loop {
            let next = tokio::select! {
                n = listener.try_recv() => n,
                _ = stop.changed() => return,
            };
            match next {
                Ok(Some(n)) => handle(&state, n.channel(), n.payload()).await,
                // The connection was lost: what is announced until it listens again is
                // lost. It is made again above, and the cache forgotten only once it
                // listens: forgotten now, the entries visits read back before then could
                // be changed unannounced and held to their TTL.
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

async fn handle(state: &AppState, channel: &str, payload: &str) {
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

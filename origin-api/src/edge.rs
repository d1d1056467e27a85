//! What the edge worker reaches at the origin: a record the edge asks about, the
//! denylist, the clicks' ingestion, all answered from the origin's own redirect cache and
//! its pool, and the token the edge must show. The endpoints are `routes::edge`.

use crate::cache::RedirectCache;
use crate::clicks::Clicks;
use crate::db::Db;
use crate::error::AppError;
use crate::metrics::Metrics;
use secrecy::{ExposeSecret, SecretString};
use shared::clicks::{ClickEvent, ClickReceipt};
use shared::tally::ClickTally;
use shared::{Denylist, EdgeRecord, EdgeStatus, RouteKey};
use std::sync::Arc;

/// The edge's service.
#[derive(Debug)]
pub struct Edge {
    db: Db,
    cache: RedirectCache,
    metrics: Metrics,
    counts: Arc<Clicks>,
    /// `HOP_EDGE_TOKEN`: without it, the endpoints answer 503.
    edge_token: Option<SecretString>,
}

impl Edge {
    pub fn new(
        db: Db,
        cache: RedirectCache,
        metrics: Metrics,
        counts: Arc<Clicks>,
        edge_token: Option<SecretString>,
    ) -> Self {
        Edge {
            db,
            cache,
            metrics,
            counts,
            edge_token,
        }
    }

    /// Refuses a caller without the edge token: 503 while none is configured, 401 for
    /// another.
    pub fn admit(&self, given: &str) -> Result<(), AppError> {
        let Some(expected) = self.edge_token.as_ref().map(ExposeSecret::expose_secret) else {
            return Err(AppError::NotConfigured(
                "answer the edge: set HOP_EDGE_TOKEN to the worker's ORIGIN_TOKEN",
            ));
        };
        if shared::sync::token_accepted(given, expected) {
            Ok(())
        } else {
            Err(AppError::EdgeUnauthorized)
        }
    }

    /// The edge record of `domain/code` (marked banned when a ban covers it); not found
    /// for no link, or a link on a disabled domain (nothing of it is new).
    pub async fn resolve(&self, domain: &str, code: &str) -> Result<EdgeRecord, AppError> {
        self.metrics.edge_resolves.inc();
        let domain = shared::normalize_domain(domain).map_err(|_| AppError::NotFound)?;
        let now = std::time::Instant::now();
        let settings = self.cache.settings(&self.db, &domain, now).await?;
        if settings.status == shared::DomainStatus::Disabled {
            return Err(AppError::NotFound);
        }
        let code = settings.canonical_code(code).into_owned();
        let route = RouteKey::new(domain, code).ok_or(AppError::NotFound)?;
        let deny = self.cache.denylist(&self.db, now).await?;
        let entry = self.cache.entry(&self.db, &route).await?;
        let prepared = entry.record.as_ref().ok_or(AppError::NotFound)?;
        let mut record = prepared.to_record();
        if prepared.banned_by(&route, &deny) {
            record.status = EdgeStatus::Banned;
        }
        Ok(record)
    }

    /// The active bans as the origin's redirects hold them, and whether the edge's copy
    /// (`held`, its `ETag`s) is current; counted.
    pub async fn denylist(
        &self,
        held: Option<&str>,
    ) -> Result<(Arc<Denylist>, String, bool), AppError> {
        let deny = self
            .cache
            .denylist(&self.db, std::time::Instant::now())
            .await?;
        let etag = format!("\"{}\"", deny.version());
        let unchanged = held.is_some_and(|held| held.split(',').any(|t| t.trim() == etag));
        self.metrics.edge_denylist_read(unchanged);
        Ok((deny, etag, unchanged))
    }

    /// Counts a batch of the edge's clicks (each tally and event once, by its id).
    pub async fn ingest(
        &self,
        events: &[ClickEvent],
        tallies: &[ClickTally],
    ) -> Result<ClickReceipt, AppError> {
        Ok(self
            .counts
            .ingest(&self.db, events, tallies, crate::model::time::now_ms())
            .await?)
    }
}

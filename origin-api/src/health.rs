//! What liveness, readiness and the metrics read. The endpoints are `routes::health`.

use crate::db::{Db, Readiness};
use crate::error::AppError;
use crate::metrics::{LaneLabel, Metrics, SegmentLabel, SequenceLabel};
use crate::model::time::now_ms;
use crate::segments::{CodeSequences, SegmentAllocator};
use crate::store;
use secrecy::{ExposeSecret, SecretString};

/// What liveness, readiness and the metrics read: the API's pool, the id sequences (their
/// gauges), and the metrics token.
#[derive(Debug)]
pub struct Health {
    db: Db,
    readiness: Readiness,
    metrics: Metrics,
    /// Numbers links.
    ids: SegmentAllocator,
    codes: CodeSequences,
    /// `HOP_METRICS_TOKEN`: lets a scraper read `/metrics` on the public listener.
    metrics_token: Option<SecretString>,
}

impl Health {
    pub fn new(
        db: Db,
        metrics: Metrics,
        ids: SegmentAllocator,
        codes: CodeSequences,
        metrics_token: Option<SecretString>,
    ) -> Self {
        Health {
            db,
            readiness: Readiness::default(),
            metrics,
            ids,
            codes,
            metrics_token,
        }
    }

    /// Whether the database answered a round trip within the last second.
    pub async fn ready(&self) -> bool {
        self.readiness.check(&self.db).await
    }

    /// Whether `/metrics` is served on the public listener (with the metrics token).
    pub fn serves_public_metrics(&self) -> bool {
        self.metrics_token.is_some()
    }

    /// Refuses a scraper on the public listener without the metrics token.
    pub fn admit_scraper(&self, given: &str) -> Result<(), AppError> {
        let Some(expected) = self.metrics_token.as_ref() else {
            return Err(AppError::NotHere(
                "/metrics is served on the metrics listener (--metrics-listen), or here with HOP_METRICS_TOKEN",
            ));
        };
        if shared::sync::token_accepted(given, expected.expose_secret()) {
            Ok(())
        } else {
            Err(AppError::MetricsUnauthorized)
        }
    }

    /// Reads what the gauges show at a scrape: the outbox's backlog per lane, and what
    /// is left of each id sequence's segments.
    pub async fn observe(&self) -> Result<(), AppError> {
        let m = &self.metrics;
        let now = now_ms();
        for backlog in store::outbox::pending(&self.db).await? {
            let lane = match backlog.lane.as_str() {
                "fast" => "fast",
                "normal" => "normal",
                _ => {
                    m.outbox_failed.set(backlog.rows);
                    continue;
                }
            };
            m.outbox_pending
                .get_or_create(&LaneLabel { lane })
                .set(backlog.rows);
            m.outbox_oldest_age.get_or_create(&LaneLabel { lane }).set(
                backlog
                    .oldest_at
                    .map_or(0.0, |at| (now - at).max(0) as f64 / 1_000.0),
            );
        }
        for alloc in std::iter::once(self.ids.clone()).chain(self.codes.allocators()) {
            let Some((current, next)) = alloc.remaining() else {
                continue;
            };
            m.segment_size
                .get_or_create(&SequenceLabel {
                    sequence: alloc.name().to_owned(),
                })
                .set(i64::try_from(alloc.step()).unwrap_or(i64::MAX));
            for (segment, left) in [("current", current), ("next", next)] {
                m.segment_remaining
                    .get_or_create(&SegmentLabel {
                        sequence: alloc.name().to_owned(),
                        segment,
                    })
                    .set(i64::try_from(left).unwrap_or(i64::MAX));
            }
        }
        Ok(())
    }

    /// Every series, as OpenMetrics text.
    pub fn encode(&self) -> String {
        self.metrics.encode()
    }
}

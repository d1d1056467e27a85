//! What liveness, readiness and the metrics read. The endpoints are `routes::health`.

use crate::db::{Db, Readiness};
use crate::metrics::Metrics;
use crate::segments::{CodeSequences, SegmentAllocator};
use secrecy::SecretString;

/// What liveness, readiness and the metrics read: the API's pool, the id sequences (their
/// gauges), and the metrics token.
#[derive(Debug)]
pub struct Health {
    pub db: Db,
    pub readiness: Readiness,
    pub metrics: Metrics,
    /// Numbers links.
    pub ids: SegmentAllocator,
    pub codes: CodeSequences,
    /// `HOP_METRICS_TOKEN`: lets a scraper read `/metrics` on the public listener.
    pub metrics_token: Option<SecretString>,
}

//! What the edge worker reaches at the origin: the API's pool, the redirect cache (the
//! edge's questions are answered from the origin's own), the clicks' ingestion, and the
//! token it must show. The endpoints are `routes::edge`.

use crate::cache::RedirectCache;
use crate::clicks::Clicks;
use crate::db::Db;
use crate::metrics::Metrics;
use secrecy::SecretString;
use std::sync::Arc;

/// The edge's service.
#[derive(Debug)]
pub struct Edge {
    pub db: Db,
    pub cache: RedirectCache,
    pub metrics: Metrics,
    pub counts: Arc<Clicks>,
    /// `HOP_EDGE_TOKEN`: without it, the endpoints answer 503.
    pub edge_token: Option<SecretString>,
}

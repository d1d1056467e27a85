//! Click analytics: ingesting events exactly once into hourly rollups, the origin's own
//! redirects as a source of events, and the stats read back from the rollups.
//!
//! Events arrive from the edge (`POST /v1/edge/clicks`, posted by the worker's queue
//! consumer, which retries until the origin acknowledges) and from this origin's own
//! redirect path ([`recorder`]). The edge's go through [`Clicks::ingest`]: a tally or
//! event is counted when its id is claimed for the first time, in the same transaction
//! that stages its clicks, so a retried or replayed batch counts nothing twice; [`fold`]
//! then adds what is staged to the rollups, many deliveries in one write. The origin's
//! own are tallied in memory and written by the recorder.

pub mod budget;
pub mod fold;
mod ingest;
pub mod lateness;
pub mod legacy;
pub mod recorder;
mod service;
pub mod stats;
pub mod tally;

pub use ingest::{Clicks, MAX_CLOCK_AHEAD_MS};
pub use service::ClickService;

//! The system of record: plain functions per table over [`crate::db::Db`]
//! (`links::get(&db, domain, code)`, `domains::update(&db, ..)`, `bans::insert(&db, ..)`),
//! each statement written once and run through [`sql`]'s functions on whichever
//! database the origin uses. Traits remain only where a test puts a fake in the
//! database's place: [`ClickStore`], [`OutboxStore`] and [`SegmentSource`] (and the
//! redirect's `cache::RedirectSource`). Both databases pass the same conformance tests
//! (`tests/store_conformance.rs`).

mod activation;
pub use activation::{ActivationPromise, MIN_HEADROOM, SKEW_MARGIN_MS};
pub mod api_keys;
pub mod bans;
mod clicks;
mod contract;
pub mod domains;
mod events;
pub mod feeds;
mod fencing;
pub mod foreign_codes;
pub mod history;
pub mod idempotency;
pub mod invitations;
pub mod legacy_codes;
pub mod legacy_misses;
pub use clicks::{
    human_visits_by_day, republish_limited, Attributed, ClickDims, ClickStore, DimCount, Folded,
    Increments, LinkRef, Rollup, Totals, FOLD_PARTS, OTHER_REFERRERS,
};
pub use outbox::OutboxStore;
mod link_rows;
pub mod links;
pub mod outbox;
pub mod purge;
pub mod quotas;
pub mod reports;
mod segments;
pub mod sessions;
pub mod sql;
mod unique;
pub mod users;
pub mod webhooks;
pub use contract::*;

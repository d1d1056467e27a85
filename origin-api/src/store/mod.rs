//! The system of record, behind traits implemented once for both databases: each
//! statement is written once and run through [`sql`]'s plain functions on whichever
//! database the origin uses. Both pass the same conformance tests
//! (`tests/store_conformance.rs`).

mod activation;
pub use activation::{ActivationPromise, MIN_HEADROOM, SKEW_MARGIN_MS};
mod bans;
mod clicks;
mod contract;
mod domains;
mod fencing;
pub use clicks::{
    Attributed, ClickDims, ClickStore, DimCount, Folded, Increments, LinkRef, Rollup, Totals,
    FOLD_PARTS, OTHER_REFERRERS,
};
pub use outbox::OutboxStore;
mod link_rows;
mod links;
mod outbox;
mod segments;
pub mod sql;
mod unique;
pub use contract::*;

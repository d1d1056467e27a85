//! The system of record, behind traits with one implementation per database. Both pass
//! the same conformance tests (`tests/store_conformance.rs`).

mod bans;
mod clicks;
pub use clicks::{ClickDims, Increments};
mod links;
mod outbox;
mod segments;

use crate::bans::{Ban, BanTarget};
use crate::keys::ApiKey;
use crate::links::{Link, ListFilter};
use async_trait::async_trait;
use shared::DomainSettings;
use std::fmt::Debug;
use std::ops::Range;

/// Why the store could not do what was asked.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("database error: {0}")]
    Database(#[from] sqlx::Error),
    #[error("the database holds a value this version cannot read: {0}")]
    Corrupt(String),
    /// The unique route key is held by another link (live or tombstoned).
    #[error("that code is taken")]
    Taken,
    /// A conditional write found another version than expected.
    #[error("the row changed since it was read")]
    Stale,
}

/// Where segments of ids come from: one atomic advance of a named row per segment.
#[async_trait]
pub trait SegmentSource: Send + Sync + Debug + 'static {
    /// Reserves the next segment of the sequence `name`, writing its outbox row (fast
    /// lane: the edge's activation window needs it) in the same transaction.
    async fn next_segment(&self, name: &str) -> Result<Range<u64>, StoreError>;

    /// The end of the newest segment of `name` (0 before the first): no id at or past it
    /// has been issued. Unknown by default, which admits every id.
    async fn segment_ceiling(&self, _name: &str) -> Result<u64, StoreError> {
        Ok(u64::MAX)
    }
}

/// One change waiting in (or delivered from) the outbox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutboxRow {
    pub seq: i64,
    pub lane: String,
    /// `link`, `deny` or `segment`.
    pub kind: String,
    /// `domain/code` for links; `deny`; the sequence name for segments.
    pub route_key: String,
    pub version: i64,
    pub payload: String,
    pub created_at: i64,
}

/// What the publisher reads and writes.
#[async_trait]
pub trait OutboxStore: Send + Sync + Debug + 'static {
    /// Takes or renews the lease `name` for `holder` until `until` (Unix ms); `false` when
    /// another holder's lease is still running at `now`.
    async fn take_lease(
        &self,
        name: &str,
        holder: &str,
        until: i64,
        now: i64,
    ) -> Result<bool, StoreError>;
    /// Gives the lease up (on shutdown), so a standby need not wait for it to lapse.
    async fn release_lease(&self, name: &str, holder: &str) -> Result<(), StoreError>;
    /// Up to `limit` undelivered rows: the whole fast lane first, then the normal lane,
    /// each in `seq` order.
    async fn pending(&self, limit: i64) -> Result<Vec<OutboxRow>, StoreError>;
    /// Records rows as delivered (and, for links, what the edge now has), in one
    /// transaction.
    async fn mark_published(&self, rows: &[OutboxRow], at: i64) -> Result<(), StoreError>;
    /// Marks delivered, without pushing them, the undelivered rows of a key for which a
    /// newer version was already delivered; returns how many.
    async fn retire_superseded(&self, at: i64) -> Result<u64, StoreError>;
    /// Counts a failed attempt on each row.
    async fn mark_failed(&self, rows: &[OutboxRow], error: &str) -> Result<(), StoreError>;
    /// The payloads of the segments reserved since `since` (Unix ms), oldest first.
    async fn segments_since(&self, since: i64) -> Result<Vec<String>, StoreError>;
    /// When the oldest undelivered row was written.
    async fn oldest_pending(&self) -> Result<Option<i64>, StoreError>;
}

/// Links, keys, domain settings and bans.
#[async_trait]
pub trait LinkStore: Send + Sync + Debug + 'static {
    /// Inserts a link and its outbox row (normal lane) in one transaction; `Taken` when
    /// the route key exists, in which case nothing is written.
    async fn insert_link(&self, link: &Link, edge_payload: &str) -> Result<(), StoreError>;
    /// Like `insert_link`, under an idempotency key: in the same transaction the key is
    /// claimed for `owner` and `response` recorded. When the key is already held, nothing
    /// is written and the earlier request's hash and response come back instead. A
    /// concurrent duplicate waits for the first to commit (the key's unique index), so
    /// two requests with one key can never make two links.
    async fn insert_link_idempotent(
        &self,
        link: &Link,
        edge_payload: &str,
        key: &IdempotencyKey<'_>,
        response: &str,
    ) -> Result<Idempotent, StoreError>;
    /// Inserts many links in one transaction, each with its outbox row; a link whose
    /// route key is taken is skipped (`false` at its index), the others go in. Under an
    /// idempotency key, the key is claimed first and `respond(&inserted)` recorded last,
    /// in the same transaction, as for single creates.
    async fn insert_links_bulk(
        &self,
        items: &[(Link, String)],
        key: Option<&IdempotencyKey<'_>>,
        respond: &(dyn for<'x> Fn(&'x [bool]) -> String + Send + Sync),
    ) -> Result<BulkInsert, StoreError>;
    /// The hash and response recorded under an unexpired idempotency key.
    async fn find_idempotent(
        &self,
        key: &IdempotencyKey<'_>,
    ) -> Result<Option<(String, String)>, StoreError>;
    async fn get_link(&self, domain: &str, code: &str) -> Result<Option<Link>, StoreError>;
    /// Up to `filter.limit + 1` links, newest first (the extra one tells that there is
    /// a next page).
    async fn list_links(&self, filter: &ListFilter) -> Result<Vec<Link>, StoreError>;
    /// Writes `link`'s mutable fields and version if the stored version is still
    /// `expected`, with its outbox row, in one transaction; `Stale` otherwise.
    async fn update_link(
        &self,
        link: &Link,
        expected: u64,
        edge_payload: &str,
    ) -> Result<(), StoreError>;
    /// The domain's settings, or the defaults when it has no row.
    async fn domain_settings(&self, domain: &str) -> Result<DomainSettings, StoreError>;
    /// Whether `host` is one of the short domains this origin serves (has a row).
    async fn is_own_domain(&self, host: &str) -> Result<bool, StoreError>;
    /// Whether an active host ban covers `host` (the host itself or a parent).
    async fn host_banned(&self, host: &str) -> Result<bool, StoreError>;
    async fn code_banned(&self, domain: &str, code: &str) -> Result<bool, StoreError>;
    /// Unpublished outbox rows per lane.
    async fn outbox_pending(&self) -> Result<Vec<(String, i64)>, StoreError>;
    async fn insert_key(&self, key: &ApiKey) -> Result<(), StoreError>;
    async fn find_key(&self, key_id: &str) -> Result<Option<ApiKey>, StoreError>;
    /// Marks a key revoked; `false` when there is no such live key.
    async fn revoke_key(&self, key_id: &str, now: i64) -> Result<bool, StoreError>;
}

/// An idempotency key as the store needs it.
#[derive(Debug, Clone, Copy)]
pub struct IdempotencyKey<'a> {
    pub owner_id: &'a str,
    pub key: &'a str,
    /// SHA-256 of the request body, to tell a retry from a different request.
    pub request_hash: &'a str,
    /// Keys older than this (Unix ms) are forgotten.
    pub expired_before: i64,
}

/// The outcome of an idempotent insert.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Idempotent {
    Created,
    /// The key was used before: its request hash and recorded response.
    Replay {
        request_hash: String,
        response: String,
    },
}

/// The outcome of a bulk insert.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BulkInsert {
    /// Per item: inserted, or skipped because its route key was taken.
    Inserted(Vec<bool>),
    Replay {
        request_hash: String,
        response: String,
    },
}

/// What lifting a ban did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LiftOutcome {
    Lifted(Ban),
    AlreadyLifted,
    NotFound,
}

/// Bans, each written with its denylist snapshot (fast lane) and the re-published
/// records of the links it covers (normal lane), in one transaction.
#[async_trait]
pub trait BanStore: Send + Sync + Debug + 'static {
    async fn insert_ban(
        &self,
        target: &BanTarget,
        reason: &str,
        created_by: &str,
        now: i64,
    ) -> Result<Ban, StoreError>;
    async fn lift_ban(&self, ban_id: i64, now: i64) -> Result<LiftOutcome, StoreError>;
    /// Newest first; lifted ones only when asked.
    async fn list_bans(&self, include_lifted: bool) -> Result<Vec<Ban>, StoreError>;
}

/// A link as click ingestion and stats need it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkRef {
    pub link_id: u64,
    pub domain: String,
    pub code: String,
    pub owner_id: String,
}

/// An event and the link it is about.
#[derive(Debug, Clone, Copy)]
pub struct Attributed<'a> {
    pub link_id: u64,
    pub owner_id: &'a str,
    pub event: &'a shared::clicks::ClickEvent,
}

/// Visits and the redirects among them, of people and of bots.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Totals {
    pub visits: i64,
    pub redirects: i64,
    pub bots: i64,
    pub bot_redirects: i64,
}

/// One bucket's counts for bots or for people.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rollup {
    /// Unix ms of the bucket's start.
    pub start: i64,
    pub bot: bool,
    pub visits: i64,
    pub redirects: i64,
}

/// Visits with one value of one dimension (`country`, `referrer`, `device`, `status`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DimCount {
    pub dim: String,
    /// Empty when unknown (no country, no referrer).
    pub value: String,
    pub visits: i64,
}

/// Click rollups: hourly counts per link and dimension, with no foreign key to links.
#[async_trait]
pub trait ClickStore: Send + Sync + Debug + 'static {
    /// The links some route keys name (tombstones included); unknown keys are absent.
    async fn link_refs(&self, keys: &[shared::RouteKey]) -> Result<Vec<LinkRef>, StoreError>;
    /// The links some ids name.
    async fn link_refs_by_id(&self, ids: &[u64]) -> Result<Vec<LinkRef>, StoreError>;
    /// Counts the events whose ids were never counted, in one transaction with claiming
    /// those ids; returns how many were counted.
    async fn record_clicks(&self, events: &[Attributed<'_>], now: i64) -> Result<u64, StoreError>;
    /// Adds counts gathered in memory (the origin's own clicks), in one transaction.
    async fn add_rollups(&self, increments: &Increments) -> Result<(), StoreError>;
    /// Forgets the ids of events received before `before` (Unix ms); returns how many.
    async fn forget_click_ids(&self, before: i64) -> Result<u64, StoreError>;
    /// A link's counts in `[from, to)` per bucket of `bucket_ms` and bot flag, oldest
    /// first; empty buckets are absent.
    async fn click_series(
        &self,
        link: u64,
        from: i64,
        to: i64,
        bucket_ms: i64,
    ) -> Result<Vec<Rollup>, StoreError>;
    /// A link's visits in `[from, to)` per dimension value, most first.
    async fn click_dims(
        &self,
        link: u64,
        from: i64,
        to: i64,
        include_bots: bool,
    ) -> Result<Vec<DimCount>, StoreError>;
    /// An owner's most visited links in `[from, to)`.
    async fn owner_top_links(
        &self,
        owner: &str,
        from: i64,
        to: i64,
        include_bots: bool,
        limit: i64,
    ) -> Result<Vec<(u64, Totals)>, StoreError>;
    /// All of an owner's visits in `[from, to)`.
    async fn owner_totals(&self, owner: &str, from: i64, to: i64) -> Result<Totals, StoreError>;
}

/// Current time as Unix milliseconds, the unit of every time column.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or_default()
}

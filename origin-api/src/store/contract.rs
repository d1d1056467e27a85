//! What the store offers whatever the database: its error, its traits, and the rows
//! they take and give. The implementations, one file per table, are beside it.

pub use crate::model::sequence::LINK_SEQUENCE;
/// Where the outbox gauges stop counting: a scrape costs the same however large the
/// backlog (a gauge at the cap means at least that many rows).
pub const OUTBOX_COUNT_CAP: i64 = 10_000;

/// One lane's undelivered outbox rows, as `/metrics` reports them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Backlog {
    /// `fast`, `normal`, or `failed` (rows set aside, whatever their lane).
    pub lane: String,
    /// How many, up to [`OUTBOX_COUNT_CAP`].
    pub rows: i64,
    /// When the oldest was written (Unix ms); `None` with none.
    pub oldest_at: Option<i64>,
}

/// Where link writes are announced on PostgreSQL, as they commit: `"<version>
/// <domain>/<code>"` (`freshness` listens).
pub const LINKS_CHANNEL: &str = "hop_links";
/// Where ban changes are announced.
pub const BANS_CHANNEL: &str = "hop_bans";
/// The PostgreSQL channel on which every change of the domain registry is announced
/// (the domain's name), in the transaction that makes it.
pub const DOMAINS_CHANNEL: &str = "hop_domains";

use crate::model::Ban;
use async_trait::async_trait;
use std::fmt::Debug;
use std::ops::Range;

/// Why the store could not do what was asked.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("database error: {0}")]
    Database(sqlx::Error),
    /// The database cannot be reached now (no connection within the pool's wait, the
    /// connection lost): worth retrying, and answered 503.
    #[error("the database is unavailable: {0}")]
    Unavailable(String),
    #[error("the database holds a value this version cannot read: {0}")]
    Corrupt(String),
    /// The unique route key is held by another link (live or tombstoned).
    #[error("that code is taken")]
    Taken,
    /// The domain is in the registry already.
    #[error("that domain is registered already")]
    Registered,
    /// A user has that email already.
    #[error("an account with that email exists already")]
    EmailTaken,
    /// A domain a link was judged by changed, or went, before the link was written.
    #[error("the link's domain changed while the link was being created: send it again")]
    DomainChanged,
    /// The change needs a domain no link lives on, and links live on it.
    #[error("links live on that domain")]
    HoldsLinks,
    /// A conditional write found another version than expected.
    #[error("the row changed since it was read")]
    Stale,
    /// The write would take an owner past a quota; nothing of it was written.
    #[error("the owner's {} quota ({limit}) is used up", quota.as_str())]
    OverQuota {
        quota: crate::model::quota::Quota,
        limit: i64,
    },
    /// A unique index other than the route key's refused a write: a fault of the
    /// system (two processes handed the same ids, say), never of the request.
    #[error("a write collided with an existing row: {0}")]
    Conflict(String),
    /// The publisher no longer holds its lease (another took it over): it must stop.
    #[error("the publisher lease is no longer held by this process")]
    LeaseLost,
    /// No new ids may be issued yet: they would pass what a meta the edge may hold
    /// promised (the activation window), until that promise runs out.
    #[error("new links are held back until the edge has caught up; retry in {retry_after_s} s")]
    ActivationFull { retry_after_s: u64 },
    /// The same failure, handed to several waiters at once.
    #[error(transparent)]
    Shared(std::sync::Arc<StoreError>),
}

impl From<sqlx::Error> for StoreError {
    fn from(e: sqlx::Error) -> Self {
        match e {
            sqlx::Error::PoolTimedOut
            | sqlx::Error::PoolClosed
            | sqlx::Error::Io(_)
            | sqlx::Error::Tls(_)
            | sqlx::Error::WorkerCrashed => StoreError::Unavailable(e.to_string()),
            other => StoreError::Database(other),
        }
    }
}

impl StoreError {
    /// A failed write: a unique index's refusal becomes what it means
    /// ([`super::unique::refused`]), anything else a database failure.
    pub(crate) fn from_write(e: sqlx::Error) -> Self {
        match super::unique::refused(&e) {
            Some(super::unique::Refused::Route) => StoreError::Taken,
            Some(super::unique::Refused::Domain) => StoreError::Registered,
            Some(super::unique::Refused::Email) => StoreError::EmailTaken,
            Some(super::unique::Refused::Other(message)) => StoreError::Conflict(message),
            None => StoreError::from(e),
        }
    }

    /// Whether the database could not be reached, or new ids are held back (worth
    /// answering 503 and retrying).
    pub fn is_unavailable(&self) -> bool {
        match self {
            StoreError::Unavailable(_) | StoreError::ActivationFull { .. } => true,
            StoreError::Shared(inner) => inner.is_unavailable(),
            _ => false,
        }
    }

    /// The error itself, seen through [`StoreError::Shared`].
    pub fn inner(&self) -> &StoreError {
        match self {
            StoreError::Shared(inner) => inner.inner(),
            other => other,
        }
    }
}

/// Where segments of ids come from: one atomic advance of a named row per segment.
#[async_trait]
pub trait SegmentSource: Send + Sync + Debug + 'static {
    /// Reserves the next segment of the sequence `name`, `step` ids long (the step a
    /// sequence is given is the one its next segment takes). A domain's code sequence
    /// writes its outbox row (fast lane: the edge's activation window needs it) in the
    /// same transaction.
    async fn next_segment(&self, name: &str, step: u64) -> Result<Range<u64>, StoreError>;

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
    /// Times the edge refused this row itself (not counting pushes that failed whole).
    pub attempts: i64,
}

/// A row set aside after the edge refused it too often (a dead letter).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FailedRow {
    pub seq: i64,
    pub lane: String,
    pub kind: String,
    pub route_key: String,
    pub version: i64,
    pub attempts: i64,
    pub last_error: String,
    pub created_at: i64,
    pub failed_at: i64,
}

/// A lease as taken or renewed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lease {
    pub epoch: i64,
    /// The lease was free when this epoch took it (given up by its last holder, whose
    /// pushes had all ended, or never held), not taken over after it lapsed.
    pub clean: bool,
}

/// Who claims to hold a lease, at which epoch: the condition of every fenced write.
#[derive(Debug, Clone, Copy)]
pub struct LeaseClaim<'a> {
    pub name: &'a str,
    pub holder: &'a str,
    pub epoch: i64,
}

/// An outbox row the edge refused: counted, retried from `retry_at` (Unix ms), or set
/// aside for good when `dead`.
#[derive(Debug, Clone)]
pub struct RowFailure {
    pub seq: i64,
    pub error: String,
    pub retry_at: i64,
    pub dead: bool,
}

/// The database's clock in Unix milliseconds, as SQL of `db`'s dialect.
pub(crate) fn db_now_sql(db: &crate::db::Db) -> &'static str {
    if db.is_postgres() {
        "CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000 AS BIGINT)"
    } else {
        "CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER)"
    }
}

/// A registered domain at the version a write was judged by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DomainAt {
    pub domain: String,
    pub version: u64,
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

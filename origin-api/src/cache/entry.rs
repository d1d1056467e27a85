//! What the cache holds of one route key, and how long the shared copies of the domains'
//! settings and the denylist live: read by the shared cache and by each thread's front
//! copy alike.

use crate::owners::OwnerId;
use shared::PreparedRecord;
use std::time::{Duration, Instant};

/// Domain settings change rarely.
pub const SETTINGS_TTL: Duration = Duration::from_secs(60);

/// How long other processes' ban changes may take to reach this one's redirects.
pub const DENYLIST_TTL: Duration = Duration::from_secs(5);

/// What the redirect path knows about one route key. Held by value in the cache's
/// table and cloned on every read: a copy and a reference count on the target's text,
/// where an `Arc` of the entry was one more allocation to reach (a cache miss per visit
/// at a million links).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The link's record, its target parsed once here rather than on every visit;
    /// `None`: no such link.
    pub record: Option<PreparedRecord>,
    /// Which link it is and whose, so that a click on it is counted without a read.
    pub link: Option<LinkTag>,
    pub(super) expires: Instant,
}

/// A link as a click needs it: its id and its owner.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LinkTag {
    pub id: u64,
    pub owner: OwnerId,
}

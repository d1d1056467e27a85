//! The types the store, the cache and the services all speak: a link, a ban, a domain,
//! an API key, a listing, and time as stored. The bottom layer: it depends on `shared` and on
//! nothing else of the origin, so the store can depend on it without depending on the
//! services above (`tests/layers.rs` checks the direction).

pub mod api_key;
pub mod ban;
pub mod domain;
pub mod event;
pub mod history;
pub mod link;
pub mod quota;
pub mod sequence;
pub mod short_url;
pub mod time;
pub mod user;

pub use api_key::ApiKey;
pub use ban::{denylist, denylist_snapshot, Ban, BanTarget};
pub use domain::{Creator, Domain, DomainAccess, DomainStatus, Refusal};
pub use link::{
    AccessKind, Condition, Feature, Imported, Link, LinkOptions, LinkState, ListFilter, OptionPart,
    Published, EXPIRING_WITHIN_MS, KV_PROPAGATION_MS,
};
pub use short_url::{ShortUrlBase, ShortUrls};
pub use user::{Invitation, LoginAttempts, Membership, Role, Session, User};

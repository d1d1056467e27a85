//! The links service: creating, changing, listing and deleting links, and the rules each
//! field passes. The API's bodies are in [`crate::views::links`].

mod bulk;
mod create;
pub(crate) mod fields;
mod fingerprint;
pub mod history;
pub mod import;
pub(crate) use fields::{on_allowed_host, redirect_url};
mod list;
mod lookups;
pub mod quota;
pub(crate) use lookups::Lookups;
pub mod access;
pub mod qr;
mod reads;
mod service;
mod update;

pub use service::{ForeignDomains, LinkSettings, Links, TargetPolicy};

pub use bulk::{create_bulk, BulkOutcome};
pub use create::{
    alias_available, check_idempotency_key, create_link, create_link_once, Created,
    IDEMPOTENCY_TTL_MS,
};
pub use update::{
    delete_link, owned_link, parse_if_match, restore_link, revert_link, update_link, Intent,
};

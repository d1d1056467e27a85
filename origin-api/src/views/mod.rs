//! The API's request and response bodies, apart from the services that judge and make
//! them: plain data with its JSON form and its description (`utoipa`), shared by the
//! routes, the services and the command line's importer.

pub mod bans;
pub mod domains;
pub mod history;
pub mod imports;
pub mod link_fields;
pub mod links;
pub mod problem;
pub mod stats;
pub mod webhooks;

use serde::{Deserialize, Deserializer};

/// Tells "absent" (`None`) from "null" (`Some(None)`).
pub(crate) fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> Result<Option<Option<T>>, D::Error> {
    Option::<T>::deserialize(d).map(Some)
}

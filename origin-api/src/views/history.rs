//! A link's history as the API shows it (docs/history.md), and the body of a revert.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// One change of a link, newest first in a page.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct HistoryEntry {
    /// The link's version after the change (an expiry is recorded at the version that
    /// expired, and does not make a new one).
    pub version: u64,
    /// `created`, `imported`, `edited`, `deleted`, `restored`, `reverted`, `banned`,
    /// `unbanned`, `expired` or `exhausted`.
    pub action: String,
    /// RFC 3339.
    pub at: String,
    /// `key:ID` (an API key), `user:ID` (a dashboard user) or `system` (Hop itself).
    pub actor: String,
    /// A ban's number and reason; the version a revert went back to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// The link's fields as the change left them, as `GET` shows them (`access` is
    /// `public`, `password` or `signed`; a secret never appears).
    #[schema(value_type = Object)]
    pub fields: Map<String, Value>,
    /// What changed against the entry before: `{"field": {"from": …, "to": …}}`;
    /// `"secret": {"changed": true}` when a password or a private link's key was
    /// replaced. Absent for the first entry the history holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub changes: Option<Map<String, Value>>,
}

/// `?cursor&limit` of a link's history.
#[derive(Debug, Clone, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct HistoryParams {
    /// From a previous page's `next_cursor`.
    #[param(pattern = "^[0-9]{1,18}\\.[0-9]{1,18}$")]
    pub cursor: Option<String>,
    /// Entries per page: 1 to 1000 (default 50).
    #[param(minimum = 1, maximum = 1000)]
    pub limit: Option<i64>,
}

/// The body of `POST /v1/links/{domain}/{code}/revert`.
#[derive(Debug, Clone, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Revert {
    /// The version whose fields the link takes again, as a new version.
    #[schema(minimum = 1)]
    pub version: u64,
}

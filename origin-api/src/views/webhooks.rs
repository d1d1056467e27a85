//! The webhooks API's bodies: an endpoint registered, changed and shown, a redelivery,
//! and an attempt at a delivery (docs/webhooks.md).

use serde::{Deserialize, Serialize};

/// The longest endpoint URL accepted, in bytes.
pub const MAX_URL_LEN: usize = 2048;
/// The longest description, in characters.
pub const MAX_DESCRIPTION: usize = 200;

/// Whose events an endpoint gets.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    /// The key's owner's links and the domains it owns.
    #[default]
    Owner,
    /// Every owner's (admin keys only).
    All,
}

/// The body of `POST /v1/webhooks`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateWebhook {
    /// Where events are POSTed: `https` on a public address.
    #[schema(min_length = 1, max_length = 2048)]
    pub url: String,
    /// The event types wanted (default: every type).
    #[serde(default)]
    #[schema(min_items = 1, max_items = 9)]
    pub events: Option<Vec<String>>,
    /// Up to 200 characters, for people.
    #[serde(default)]
    #[schema(max_length = 200)]
    pub description: Option<String>,
    /// `owner` (default) or `all` (every owner's events; admin keys only).
    #[serde(default)]
    pub scope: Option<Scope>,
}

/// The body of `PATCH /v1/webhooks/{id}`: absent fields stay as they are.
#[derive(Debug, Clone, Default, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateWebhook {
    #[serde(default)]
    #[schema(min_length = 1, max_length = 2048)]
    pub url: Option<String>,
    #[serde(default)]
    #[schema(min_items = 1, max_items = 9)]
    pub events: Option<Vec<String>>,
    #[serde(default)]
    #[schema(max_length = 200)]
    pub description: Option<String>,
    /// `false` stops deliveries (events are kept); `true` starts them again from the
    /// event that was next, at once.
    #[serde(default)]
    pub enabled: Option<bool>,
}

/// The body of `POST /v1/webhooks/{id}/redeliver`.
#[derive(Debug, Clone, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Redeliver {
    /// An event's id (`evt_…`, the `webhook-id` it was sent with): it and every event
    /// after it are sent again, in order.
    #[schema(min_length = 5, max_length = 40)]
    pub since: String,
}

/// An endpoint as the API shows it. The secret is shown only when it is made (create,
/// rotate).
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct WebhookView {
    /// `wh_…`.
    pub id: String,
    pub url: String,
    pub description: String,
    pub events: Vec<String>,
    pub scope: Scope,
    /// The owner whose events it gets (absent for `all`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    /// `active` or `disabled`.
    pub state: String,
    /// Why it was disabled: `410 Gone`, failing for too long, or by request.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disabled_reason: Option<String>,
    /// Failed attempts at the event it is stuck at (0 when all is well).
    pub failed_attempts: i64,
    /// Since when every attempt failed, if they do (RFC 3339).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failing_since: Option<String>,
    /// When the next attempt is due, while attempts fail (RFC 3339).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_attempt_at: Option<String>,
    /// `whsec_…`: only in the answer that made it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
    /// Until when the secret it had before the last rotation also signs (RFC 3339).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub previous_secret_until: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

/// One attempt at delivering an event to an endpoint.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct AttemptView {
    /// The event's id (`evt_…`), as sent in `webhook-id`.
    pub event_id: String,
    pub event_type: String,
    /// RFC 3339.
    pub attempted_at: String,
    /// `delivered` (2xx), `failed` (retried on the schedule) or `gone` (410: the
    /// endpoint was disabled).
    pub result: String,
    /// The receiver's HTTP status, when it answered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<i64>,
    /// What went wrong, when no status says it (a timeout, a refused connection).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub duration_ms: i64,
}

/// `?cursor&limit` of the lists.
#[derive(Debug, Clone, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct WebhookPageParams {
    /// From a previous page's `next_cursor`.
    #[param(min_length = 1, max_length = 40)]
    pub cursor: Option<String>,
    /// 1 to 1000 (default 100).
    #[param(minimum = 1, maximum = 1000)]
    pub limit: Option<i64>,
}

/// `?cursor&limit` of the attempts.
#[derive(Debug, Clone, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AttemptPageParams {
    /// From a previous page's `next_cursor`.
    #[param(pattern = "^[1-9][0-9]{0,17}$")]
    pub cursor: Option<String>,
    /// 1 to 1000 (default 100).
    #[param(minimum = 1, maximum = 1000)]
    pub limit: Option<i64>,
}

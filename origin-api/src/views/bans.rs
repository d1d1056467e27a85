//! The bans API's bodies: a ban asked for, and a ban as it is shown.

use crate::model::time::rfc3339;
use crate::model::{Ban, BanTarget};
use serde::{Deserialize, Serialize};

/// The longest reason kept.
pub const MAX_REASON_CHARS: usize = 500;

/// The body of `POST /v1/bans`.
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateBan {
    /// `code` or `host`.
    #[schema(pattern = "^(code|host)$")]
    pub kind: String,
    #[serde(default)]
    pub domain: Option<String>,
    #[serde(default)]
    pub code: Option<String>,
    #[serde(default)]
    pub host: Option<String>,
    #[schema(min_length = 1, max_length = 500)]
    pub reason: String,
}

/// A ban as the API shows it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, utoipa::ToSchema)]
pub struct BanView {
    pub id: i64,
    pub kind: String,
    pub domain: Option<String>,
    pub code: Option<String>,
    pub host: Option<String>,
    pub reason: String,
    pub created_by: String,
    pub created_at: String,
    pub lifted_at: Option<String>,
}

impl Ban {
    pub fn view(&self) -> BanView {
        let (kind, domain, code, host) = match &self.target {
            BanTarget::Code { domain, code } => {
                ("code", Some(domain.clone()), Some(code.clone()), None)
            }
            BanTarget::Host { host } => ("host", None, None, Some(host.clone())),
        };
        BanView {
            id: self.ban_id,
            kind: kind.to_owned(),
            domain,
            code,
            host,
            reason: self.reason.clone(),
            created_by: self.created_by.clone(),
            created_at: rfc3339(self.created_at),
            lifted_at: self.lifted_at.map(rfc3339),
        }
    }
}

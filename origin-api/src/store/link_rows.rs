//! A link as a row of `links`: the columns a read selects, and the row read back into a
//! [`Link`]. Read by the links' statements and by the bans' (the links a ban covers).

use super::contract::StoreError;
use crate::model::{Link, LinkOptions, LinkState, Published};
use shared::{CodeKind, RedirectStatus};

/// What a read selects: the written columns and what the publisher recorded.
pub(super) const SELECT_COLUMNS: &str = "link_id, domain, code, target_url, owner_id, status, redirect_status, \
     expires_at, version, key_version, code_kind, forward_query, title, tags, created_at, updated_at, \
     published_version, published_at, code_number, options";

#[derive(sqlx::FromRow)]
pub(super) struct LinkRow {
    link_id: i64,
    domain: String,
    code: String,
    target_url: String,
    owner_id: String,
    status: String,
    redirect_status: i64,
    expires_at: Option<i64>,
    version: i64,
    key_version: Option<i64>,
    code_kind: String,
    forward_query: bool,
    title: Option<String>,
    tags: String,
    created_at: i64,
    updated_at: i64,
    published_version: Option<i64>,
    published_at: Option<i64>,
    code_number: Option<i64>,
    options: Option<String>,
}

impl TryFrom<LinkRow> for Link {
    type Error = StoreError;
    fn try_from(r: LinkRow) -> Result<Self, StoreError> {
        let corrupt = |what: &str| StoreError::Corrupt(format!("link {}: {what}", r.link_id));
        Ok(Link {
            link_id: u64::try_from(r.link_id).map_err(|_| corrupt("link_id"))?,
            status: LinkState::parse(&r.status).ok_or_else(|| corrupt("status"))?,
            redirect: u16::try_from(r.redirect_status)
                .ok()
                .and_then(|c| RedirectStatus::try_from(c).ok())
                .ok_or_else(|| corrupt("redirect_status"))?,
            version: u64::try_from(r.version).map_err(|_| corrupt("version"))?,
            key_version: r
                .key_version
                .map(u32::try_from)
                .transpose()
                .map_err(|_| corrupt("key_version"))?,
            code_number: r
                .code_number
                .map(u64::try_from)
                .transpose()
                .map_err(|_| corrupt("code_number"))?,
            code_kind: match r.code_kind.as_str() {
                "generated" => CodeKind::Generated,
                "custom" => CodeKind::Custom,
                _ => return Err(corrupt("code_kind")),
            },
            tags: serde_json::from_str(&r.tags).map_err(|_| corrupt("tags"))?,
            options: LinkOptions::from_column(r.options.as_deref())
                .map_err(|e| corrupt(&format!("options: {e}")))?,
            domain: r.domain,
            code: r.code,
            target_url: r.target_url,
            owner_id: r.owner_id,
            expires_at: r.expires_at,
            forward_query: r.forward_query,
            title: r.title,
            created_at: r.created_at,
            updated_at: r.updated_at,
            published: match (r.published_version, r.published_at) {
                (Some(v), Some(at)) => Some(Published {
                    version: u64::try_from(v).map_err(|_| corrupt("published_version"))?,
                    at,
                }),
                _ => None,
            },
        })
    }
}

pub(super) fn to_i64(v: u64, what: &str) -> Result<i64, StoreError> {
    i64::try_from(v)
        .map_err(|_| StoreError::Corrupt(format!("{what} {v} does not fit the database")))
}

//! `legacy_codes`: the codes that lived at the shortener a domain moved from. Only these
//! are sent on there by the domain's fallback (`legacy_url`), so a link someone makes
//! on the old, shared shortener tomorrow never reaches the domain's visitors (D-275).
//! Each code added is queued for the edge as `lg:{domain}/{code}` in the transaction
//! that adds it; a code is added once and never changed.

use super::contract::StoreError;
use super::outbox::{insert_outbox, OutboxInsert};
use super::sql::{values_placeholders, Arg, ROWS_PER_STATEMENT};
use crate::db::Db;
use shared::sync::LegacyCode;

const KNOWN: &str = include_str!("queries/legacy_code_known.sql");
const COUNT: &str = include_str!("queries/count_legacy_codes.sql");

/// Where a legacy code came from, as the table says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// A list an operator loaded (API, CLI).
    List,
    /// A row of an import that moved the domain.
    Import,
}

impl Source {
    pub fn as_str(self) -> &'static str {
        match self {
            Source::List => "list",
            Source::Import => "import",
        }
    }
}

/// Adds `codes` (each already in the form the domain stores it) to `domain`'s legacy
/// codes, and queues each new one for the edge, in one transaction. A code already
/// listed is left as it is. The number of codes added.
pub async fn add(
    db: &Db,
    domain: &str,
    codes: &[&str],
    source: Source,
    at: i64,
) -> Result<u64, StoreError> {
    let mut tx = db.begin_write().await?;
    let mut c = tx.conn();
    let mut added: Vec<String> = Vec::new();
    for chunk in codes.chunks(ROWS_PER_STATEMENT) {
        let args: Vec<Arg<'_>> = chunk
            .iter()
            .flat_map(|code| {
                [
                    domain.into(),
                    (*code).into(),
                    source.as_str().into(),
                    at.into(),
                ]
            })
            .collect();
        // Built at run time: one VALUES tuple per code.
        let sql = format!(
            "INSERT INTO legacy_codes (domain, code, source, added_at) VALUES {} \
             ON CONFLICT (domain, code) DO NOTHING RETURNING code",
            values_placeholders(1, chunk.len(), 4)
        );
        let rows: Vec<(String,)> = c.fetch_all(&sql, &args).await?;
        added.extend(rows.into_iter().map(|(code,)| format!("{domain}/{code}")));
    }
    let payload = LegacyCode::json();
    let version = i64::try_from(LegacyCode::VERSION).unwrap_or(1);
    let rows: Vec<OutboxInsert<'_>> = added
        .iter()
        .map(|route_key| OutboxInsert {
            lane: "normal",
            kind: "legacy",
            route_key,
            version,
            payload: &payload,
            created_at: at,
        })
        .collect();
    insert_outbox(&mut c, &rows).await?;
    tx.commit().await?;
    Ok(added.len() as u64)
}

/// Whether `code` is one of `domain`'s legacy codes.
pub async fn known(db: &Db, domain: &str, code: &str) -> Result<bool, StoreError> {
    let row: Option<(String,)> = db
        .read_optional(KNOWN, &[domain.into(), code.into()])
        .await?;
    Ok(row.is_some())
}

/// How many legacy codes `domain` lists.
pub async fn count(db: &Db, domain: &str) -> Result<i64, StoreError> {
    let row: Option<(i64,)> = db.read_optional(COUNT, &[domain.into()]).await?;
    Ok(row.map_or(0, |(n,)| n))
}

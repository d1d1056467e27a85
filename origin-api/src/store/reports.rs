//! Reports from the public form, for admins (docs/abuse.md).

use super::contract::StoreError;
use crate::db::Db;

const INSERT_REPORT: &str = include_str!("queries/insert_report.sql");
const LIST_REPORTS: &str = include_str!("queries/list_reports.sql");
const RESOLVE_REPORT: &str = include_str!("queries/resolve_report.sql");
const REPORT_EXISTS: &str = include_str!("queries/report_exists.sql");
const OPEN_REPORTS_OF_LINK: &str = include_str!("queries/open_reports_of_link.sql");
const FORGET_RESOLVED: &str = include_str!("queries/forget_resolved_reports.sql");

/// How many reports of `domain/code` are open.
pub async fn open_of_link(db: &Db, domain: &str, code: &str) -> Result<i64, StoreError> {
    let row: Option<(i64,)> = db
        .read_optional(OPEN_REPORTS_OF_LINK, &[domain.into(), code.into()])
        .await?;
    Ok(row.map_or(0, |(n,)| n))
}

/// Deletes the reports resolved before `before` (Unix ms); how many.
pub async fn forget_resolved(db: &Db, before: i64) -> Result<u64, StoreError> {
    Ok(db.write(FORGET_RESOLVED, &[before.into()]).await?)
}

/// A report to record.
#[derive(Debug, Clone)]
pub struct NewReport<'a> {
    pub domain: &'a str,
    pub code: &'a str,
    pub link_id: Option<i64>,
    pub category: &'a str,
    pub details: &'a str,
    pub contact: Option<&'a str>,
    pub at: i64,
}

pub async fn insert(db: &Db, r: &NewReport<'_>) -> Result<i64, StoreError> {
    let mut tx = db.begin_write().await?;
    let (id,): (i64,) = tx
        .conn()
        .fetch_one(
            INSERT_REPORT,
            &[
                r.domain.into(),
                r.code.into(),
                r.link_id.into(),
                r.category.into(),
                r.details.into(),
                r.contact.into(),
                r.at.into(),
            ],
        )
        .await?;
    tx.commit().await?;
    Ok(id)
}

/// A report as an admin reads it, with the link it names as it is now.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ReportRow {
    pub report_id: i64,
    pub domain: String,
    pub code: String,
    pub category: String,
    pub details: String,
    pub contact: Option<String>,
    pub created_at: i64,
    pub resolved_at: Option<i64>,
    pub resolution: Option<String>,
    pub owner_id: Option<String>,
    pub target_url: Option<String>,
    pub status: Option<String>,
    pub reports_of_link: i64,
}

/// Up to `limit` reports before `before` (a report id), newest first; resolved ones
/// only when `all`.
pub async fn list(
    db: &Db,
    before: i64,
    all: bool,
    limit: i64,
) -> Result<Vec<ReportRow>, StoreError> {
    Ok(db
        .read_all(LIST_REPORTS, &[before.into(), all.into(), limit.into()])
        .await?)
}

/// Closes report `id` with `resolution`; `None` when there is no such report, `false`
/// when it was closed already.
pub async fn resolve(
    db: &Db,
    id: i64,
    resolution: &str,
    now: i64,
) -> Result<Option<bool>, StoreError> {
    let closed = db
        .write(RESOLVE_REPORT, &[id.into(), now.into(), resolution.into()])
        .await?;
    if closed == 1 {
        return Ok(Some(true));
    }
    let exists: Option<(i64,)> = db.read_optional(REPORT_EXISTS, &[id.into()]).await?;
    Ok(exists.map(|_| false))
}

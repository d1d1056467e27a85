//! `legacy_misses`: per code, how often visitors of a moving domain were sent on to its
//! old shortener because Hop had no link for the code (the domain's `legacy_url`).

use super::contract::StoreError;
use crate::db::Db;

const UPSERT: &str = include_str!("queries/upsert_legacy_miss.sql");
const ADD_TO: &str = include_str!("queries/add_to_legacy_miss.sql");
const COUNT: &str = include_str!("queries/count_legacy_misses.sql");
const LIST: &str = include_str!("queries/list_legacy_misses.sql");

/// Codes kept per domain. A scan of made-up codes on a moving domain would otherwise
/// grow the table without end: past this, codes already kept still count and new ones
/// are dropped (one flush may overshoot it by what it holds).
pub const MAX_CODES_PER_DOMAIN: i64 = 100_000;

/// Visits of one code sent on to the old shortener.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LegacyMiss {
    pub code: String,
    /// Every visit, bots' included.
    pub visits: i64,
    /// Of them, bots' (by user agent).
    pub bot_visits: i64,
    /// Unix milliseconds.
    pub first_seen_at: i64,
    pub last_seen_at: i64,
}

#[derive(sqlx::FromRow)]
struct MissRow {
    code: String,
    visits: i64,
    bot_visits: i64,
    first_seen_at: i64,
    last_seen_at: i64,
}

/// Adds `misses` (of one domain each entry says) to the table in one transaction: a code
/// already kept is added to; a new one is kept while its domain holds fewer than
/// [`MAX_CODES_PER_DOMAIN`]. The visits dropped for that cap.
pub async fn add(db: &Db, misses: &[(String, LegacyMiss)]) -> Result<u64, StoreError> {
    let mut tx = db.begin_write().await?;
    let mut c = tx.conn();
    let mut dropped = 0u64;
    let mut room: Option<(&str, bool)> = None;
    for (domain, m) in misses {
        let open = match room {
            Some((d, open)) if d == domain => open,
            _ => {
                let (codes,): (i64,) = c.fetch_one(COUNT, &[domain.as_str().into()]).await?;
                let open = codes < MAX_CODES_PER_DOMAIN;
                room = Some((domain.as_str(), open));
                open
            }
        };
        let (d, code) = (domain.as_str(), m.code.as_str());
        if open {
            let args = [
                d.into(),
                code.into(),
                m.visits.into(),
                m.bot_visits.into(),
                m.first_seen_at.into(),
                m.last_seen_at.into(),
            ];
            c.execute(UPSERT, &args).await?;
        } else {
            let args = [
                d.into(),
                code.into(),
                m.visits.into(),
                m.bot_visits.into(),
                m.last_seen_at.into(),
            ];
            if c.execute(ADD_TO, &args).await? == 0 {
                dropped += u64::try_from(m.visits).unwrap_or_default();
            }
        }
    }
    tx.commit().await?;
    Ok(dropped)
}

/// A page of `domain`'s codes still visited at the old shortener and still without a
/// link here, most visited first, after the position `after` (visits, code).
pub async fn list(
    db: &Db,
    domain: &str,
    after: Option<(i64, &str)>,
    limit: i64,
) -> Result<Vec<LegacyMiss>, StoreError> {
    let (visits, code) = after.unwrap_or((i64::MAX, ""));
    let rows: Vec<MissRow> = db
        .read_all(
            LIST,
            &[domain.into(), visits.into(), code.into(), limit.into()],
        )
        .await?;
    Ok(rows
        .into_iter()
        .map(|r| LegacyMiss {
            code: r.code,
            visits: r.visits,
            bot_visits: r.bot_visits,
            first_seen_at: r.first_seen_at,
            last_seen_at: r.last_seen_at,
        })
        .collect())
}

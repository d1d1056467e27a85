//! Click rollups: counting new events exactly once, and reading the counts back.

use super::{Attributed, ClickStore, DimCount, LinkRef, Rollup, StoreError, Totals};
use crate::db::Db;
use async_trait::async_trait;
use shared::clicks::ClickEvent;
use shared::RouteKey;
use std::collections::{BTreeMap, HashMap, HashSet};

/// Rows per multi-row statement: well under both databases' limits on bound values.
const CHUNK: usize = 500;
const HOUR_MS: i64 = 3_600_000;
const DAY_MS: i64 = 24 * HOUR_MS;

type HourKey = (u64, i64, bool);
type DayKey = (String, i64, u64, bool);
type DimKey = (u64, &'static str, i64, bool, String);

/// Rollup increments, gathered before they are written: by new events from the edge, or
/// by the origin's own tally. Keyed so that each row is written once per statement and,
/// across concurrent writers, in one global order (no deadlocks).
#[derive(Debug)]
pub struct Increments {
    hours: BTreeMap<HourKey, (String, i64, i64)>,
    days: BTreeMap<DayKey, (i64, i64)>,
    dims: BTreeMap<DimKey, i64>,
    visits: u64,
    /// Distinct referrer hosts kept per link and hour; visits from others count as
    /// [`OTHER_REFERRERS`].
    referrer_cap: i64,
}

/// The referrer value that stands for every host past a link-hour's cap: a name no
/// host can have.
pub const OTHER_REFERRERS: &str = "(other)";

/// What one visit (or `n` alike) adds to the rollups.
#[derive(Debug, Clone, Copy)]
pub struct ClickDims<'a> {
    /// Unix ms.
    pub at: i64,
    pub bot: bool,
    pub status: u16,
    /// Empty when unknown.
    pub country: &'a str,
    /// Empty when there was none.
    pub referrer: &'a str,
    pub device: &'static str,
}

impl<'a> ClickDims<'a> {
    pub fn of(e: &'a ClickEvent) -> Self {
        ClickDims {
            at: e.at,
            bot: e.bot,
            status: e.status,
            country: e.country.as_deref().unwrap_or_default(),
            referrer: e.referrer_host.as_deref().unwrap_or_default(),
            device: e.device.as_str(),
        }
    }
}

impl Increments {
    /// Nothing yet; at most `referrer_cap` distinct referrer hosts per link and hour.
    pub fn new(referrer_cap: u32) -> Self {
        Increments {
            hours: BTreeMap::new(),
            days: BTreeMap::new(),
            dims: BTreeMap::new(),
            visits: 0,
            referrer_cap: i64::from(referrer_cap),
        }
    }

    /// Adds `n` visits of the link `link_id` (owned by `owner_id`) with `dims`.
    pub fn add(&mut self, link_id: u64, owner_id: &str, dims: &ClickDims<'_>, n: i64) {
        let hour = dims.at.div_euclid(HOUR_MS) * HOUR_MS;
        let redirects = if (300..400).contains(&dims.status) {
            n
        } else {
            0
        };
        let h = self
            .hours
            .entry((link_id, hour, dims.bot))
            .or_insert_with(|| (owner_id.to_owned(), 0, 0));
        h.1 += n;
        h.2 += redirects;
        let day = dims.at.div_euclid(DAY_MS) * DAY_MS;
        let d = self
            .days
            .entry((owner_id.to_owned(), day, link_id, dims.bot))
            .or_default();
        d.0 += n;
        d.1 += redirects;
        for (dim, value) in [
            ("country", dims.country.to_owned()),
            ("referrer", dims.referrer.to_owned()),
            ("device", dims.device.to_owned()),
            ("status", dims.status.to_string()),
        ] {
            *self
                .dims
                .entry((link_id, dim, hour, dims.bot, value))
                .or_default() += n;
        }
        self.visits += u64::try_from(n).unwrap_or_default();
    }

    /// The visits added.
    pub fn visits(&self) -> u64 {
        self.visits
    }
}

/// Writes `inc` inside `tx`.
macro_rules! write_increments {
    ($tx:expr, $inc:expr) => {{
        let inc: &Increments = $inc;
        let hours: Vec<_> = inc.hours.iter().collect();
        for chunk in hours.chunks(CHUNK) {
            let mut q = sqlx::QueryBuilder::new(
                "INSERT INTO click_hours (link_id, hour, bot, owner_id, visits, redirects) ",
            );
            q.push_values(
                chunk,
                |mut row, ((link, hour, bot), (owner, visits, redirects))| {
                    row.push_bind(*link as i64)
                        .push_bind(*hour)
                        .push_bind(*bot)
                        .push_bind(owner.as_str())
                        .push_bind(*visits)
                        .push_bind(*redirects);
                },
            );
            q.push(
                " ON CONFLICT (link_id, hour, bot) DO UPDATE SET \
                 visits = click_hours.visits + excluded.visits, \
                 redirects = click_hours.redirects + excluded.redirects",
            );
            q.build().execute(&mut *$tx).await?;
        }
        let days: Vec<_> = inc.days.iter().collect();
        for chunk in days.chunks(CHUNK) {
            let mut q = sqlx::QueryBuilder::new(
                "INSERT INTO click_days (owner_id, day, link_id, bot, visits, redirects) ",
            );
            q.push_values(
                chunk,
                |mut row, ((owner, day, link, bot), (visits, redirects))| {
                    row.push_bind(owner.as_str())
                        .push_bind(*day)
                        .push_bind(*link as i64)
                        .push_bind(*bot)
                        .push_bind(*visits)
                        .push_bind(*redirects);
                },
            );
            q.push(
                " ON CONFLICT (owner_id, day, link_id, bot) DO UPDATE SET \
                 visits = click_days.visits + excluded.visits, \
                 redirects = click_days.redirects + excluded.redirects",
            );
            q.build().execute(&mut *$tx).await?;
        }
        // Referrers are capped per link and hour: the value is kept if the link-hour has
        // it already or has room, else counted under OTHER_REFERRERS. Anyone can send any
        // Referer, so without the cap one link's hour could hold a row per forged host.
        // What the link-hours of this write hold already is read in two queries per few
        // hundred, and the cap is applied here: a statement per referrer, as before,
        // cost a round trip to the database per link-hour written.
        let referrers: Vec<_> = inc
            .dims
            .iter()
            .filter(|((_, dim, _, _, value), _)| *dim == "referrer" && !value.is_empty())
            .collect();
        let mut rows: BTreeMap<(u64, &str, i64, bool, &str), i64> = inc
            .dims
            .iter()
            .filter(|((_, dim, _, _, value), _)| *dim != "referrer" || value.is_empty())
            .map(|((link, dim, hour, bot, value), n)| {
                ((*link, *dim, *hour, *bot, value.as_str()), *n)
            })
            .collect();
        if !referrers.is_empty() {
            let (first, last) = referrers
                .iter()
                .fold((i64::MAX, i64::MIN), |(lo, hi), ((_, _, h, _, _), _)| {
                    (lo.min(*h), hi.max(*h))
                });
            let links: Vec<u64> = referrers
                .iter()
                .map(|((link, ..), _)| *link)
                .collect::<std::collections::BTreeSet<u64>>()
                .into_iter()
                .collect();
            // Per link-hour: how many distinct hosts it holds (counted by the database,
            // one row back per link-hour), and which of the hosts written now it holds
            // already (looked up by key). Reading every value held instead cost the
            // edge's batches of 100 a third of their throughput (`bench_clicks`).
            let mut held: HashMap<(u64, i64, bool), (i64, HashSet<String>)> = HashMap::new();
            for chunk in links.chunks(CHUNK) {
                let mut q = sqlx::QueryBuilder::new(
                    "SELECT link_id, hour, bot, CAST(COUNT(*) AS BIGINT), \
                     CAST(SUM(CASE WHEN value = ",
                );
                q.push_bind(OTHER_REFERRERS)
                    .push(
                        " THEN 1 ELSE 0 END) AS BIGINT) FROM click_dims \
                     WHERE dim = 'referrer' AND value <> '' AND hour >= ",
                    )
                    .push_bind(first)
                    .push(" AND hour <= ")
                    .push_bind(last)
                    .push(" AND link_id IN (");
                let mut list = q.separated(", ");
                for link in chunk {
                    list.push_bind(*link as i64);
                }
                q.push(") GROUP BY link_id, hour, bot");
                let found: Vec<(i64, i64, bool, i64, i64)> =
                    q.build_query_as().fetch_all(&mut *$tx).await?;
                for (link, hour, bot, values, other) in found {
                    held.entry((link_id(link)?, hour, bot)).or_default().0 = values - other;
                }
            }
            for chunk in referrers.chunks(CHUNK) {
                let mut q = sqlx::QueryBuilder::new(
                    "SELECT link_id, hour, bot, value FROM click_dims \
                     WHERE dim = 'referrer' AND (link_id, hour, bot, value) IN (VALUES ",
                );
                let mut list = q.separated(", ");
                for ((link, _, hour, bot, value), _) in chunk {
                    list.push("(")
                        .push_bind_unseparated(*link as i64)
                        .push_unseparated(", ")
                        .push_bind_unseparated(*hour)
                        .push_unseparated(", ")
                        .push_bind_unseparated(*bot)
                        .push_unseparated(", ")
                        .push_bind_unseparated(value.as_str())
                        .push_unseparated(")");
                }
                q.push(")");
                let found: Vec<(i64, i64, bool, String)> =
                    q.build_query_as().fetch_all(&mut *$tx).await?;
                for (link, hour, bot, value) in found {
                    held.entry((link_id(link)?, hour, bot))
                        .or_default()
                        .1
                        .insert(value);
                }
            }
            for ((link, _, hour, bot, value), n) in referrers {
                let (distinct, values) = held.entry((*link, *hour, *bot)).or_default();
                let kept = if values.contains(value.as_str()) {
                    value.as_str()
                } else if value != OTHER_REFERRERS && *distinct < inc.referrer_cap {
                    // Each (link-hour, host) comes once: `inc.dims` is keyed by it.
                    *distinct += 1;
                    value.as_str()
                } else {
                    OTHER_REFERRERS
                };
                *rows
                    .entry((*link, "referrer", *hour, *bot, kept))
                    .or_default() += *n;
            }
        }
        let rows: Vec<_> = rows.into_iter().collect();
        for chunk in rows.chunks(CHUNK) {
            let mut q = sqlx::QueryBuilder::new(
                "INSERT INTO click_dims (link_id, dim, hour, bot, value, visits) ",
            );
            q.push_values(chunk, |mut row, ((link, dim, hour, bot, value), visits)| {
                row.push_bind(*link as i64)
                    .push_bind(*dim)
                    .push_bind(*hour)
                    .push_bind(*bot)
                    .push_bind(*value)
                    .push_bind(*visits);
            });
            q.push(
                " ON CONFLICT (link_id, dim, hour, bot, value) DO UPDATE SET \
                 visits = click_dims.visits + excluded.visits",
            );
            q.build().execute(&mut *$tx).await?;
        }
    }};
}

fn link_id(v: i64) -> Result<u64, StoreError> {
    u64::try_from(v).map_err(|_| StoreError::Corrupt(format!("link_id {v}")))
}

/// A `(link_id, domain, code, owner_id)` row.
fn link_ref(
    (id, domain, code, owner_id): (i64, String, String, String),
) -> Result<LinkRef, StoreError> {
    Ok(LinkRef {
        link_id: link_id(id)?,
        domain,
        code,
        owner_id,
    })
}

/// An owner's rows over `[$4, $5)`: whole days `[$2, $3)` from `click_days`, and the
/// hours before and after them from `click_hours`.
const OWNER_ROWS: &str = "SELECT link_id, bot, visits, redirects FROM click_days \
     WHERE owner_id = $1 AND day >= $2 AND day < $3 \
     UNION ALL \
     SELECT link_id, bot, visits, redirects FROM click_hours \
     WHERE owner_id = $1 AND ((hour >= $4 AND hour < $2) OR (hour >= $3 AND hour < $5))";

/// People's visits and redirects, then bots', summed.
const SUMS: &str = "CAST(SUM(CASE WHEN bot THEN 0 ELSE visits END) AS BIGINT), \
     CAST(SUM(CASE WHEN bot THEN 0 ELSE redirects END) AS BIGINT), \
     CAST(SUM(CASE WHEN bot THEN visits ELSE 0 END) AS BIGINT), \
     CAST(SUM(CASE WHEN bot THEN redirects ELSE 0 END) AS BIGINT)";

/// The whole UTC days inside `[from, to)` (hour boundaries), as `[first, end)`; when
/// there are none, an empty range at `to`, so that the hours cover all of `[from, to)`.
fn whole_days(from: i64, to: i64) -> (i64, i64) {
    let first = from.saturating_add(DAY_MS - 1).div_euclid(DAY_MS) * DAY_MS;
    let end = to.div_euclid(DAY_MS) * DAY_MS;
    if first < end {
        (first, end)
    } else {
        (to, to)
    }
}

#[async_trait]
impl ClickStore for Db {
    async fn link_refs(&self, keys: &[RouteKey]) -> Result<Vec<LinkRef>, StoreError> {
        let mut found = Vec::with_capacity(keys.len());
        for chunk in keys.chunks(CHUNK) {
            let rows: Vec<(i64, String, String, String)> = crate::on_pool!(self, pool => {
                let mut q = sqlx::QueryBuilder::new(
                    "SELECT link_id, domain, code, owner_id FROM links WHERE (domain, code) IN (",
                );
                let mut list = q.separated(", ");
                for key in chunk {
                    list.push("(")
                        .push_bind_unseparated(key.domain())
                        .push_unseparated(", ")
                        .push_bind_unseparated(key.code())
                        .push_unseparated(")");
                }
                q.push(")");
                q.build_query_as().fetch_all(pool).await?
            });
            for row in rows {
                found.push(link_ref(row)?);
            }
        }
        Ok(found)
    }

    async fn link_refs_by_id(&self, ids: &[u64]) -> Result<Vec<LinkRef>, StoreError> {
        let mut found = Vec::with_capacity(ids.len());
        for chunk in ids.chunks(CHUNK) {
            let rows: Vec<(i64, String, String, String)> = crate::on_pool!(self, pool => {
                let mut q = sqlx::QueryBuilder::new(
                    "SELECT link_id, domain, code, owner_id FROM links WHERE link_id IN (",
                );
                let mut list = q.separated(", ");
                for id in chunk {
                    list.push_bind(*id as i64);
                }
                q.push(")");
                q.build_query_as().fetch_all(pool).await?
            });
            for row in rows {
                found.push(link_ref(row)?);
            }
        }
        Ok(found)
    }

    async fn record_clicks(
        &self,
        events: &[Attributed<'_>],
        now: i64,
        referrer_cap: u32,
    ) -> Result<u64, StoreError> {
        // One id once, even within a batch.
        let mut ids = HashSet::with_capacity(events.len());
        let events: Vec<&Attributed<'_>> = events
            .iter()
            .filter(|a| ids.insert(a.event.event_id.as_str()))
            .collect();
        if events.is_empty() {
            return Ok(0);
        }
        crate::on_writer!(self, pool => {
            let mut tx = pool.begin().await?;
            // Claim the ids: only those nobody claimed before are counted. A concurrent
            // batch holding one of them waits for us on its unique index.
            let mut fresh: HashSet<String> = HashSet::with_capacity(events.len());
            for chunk in events.chunks(CHUNK) {
                let mut q = sqlx::QueryBuilder::new("INSERT INTO click_seen (event_id, received_at) ");
                q.push_values(chunk, |mut row, a| {
                    row.push_bind(a.event.event_id.as_str()).push_bind(now);
                });
                q.push(" ON CONFLICT (event_id) DO NOTHING RETURNING event_id");
                let claimed: Vec<String> = q.build_query_scalar().fetch_all(&mut *tx).await?;
                fresh.extend(claimed);
            }
            let mut inc = Increments::new(referrer_cap);
            for a in events.iter().filter(|a| fresh.contains(&a.event.event_id)) {
                inc.add(a.link_id, a.owner_id, &ClickDims::of(a.event), 1);
            }
            write_increments!(tx, &inc);
            tx.commit().await?;
            Ok(fresh.len() as u64)
        })
    }

    async fn add_rollups(&self, inc: &Increments) -> Result<(), StoreError> {
        crate::on_writer!(self, pool => {
            let mut tx = pool.begin().await?;
            write_increments!(tx, inc);
            tx.commit().await?;
        });
        Ok(())
    }

    async fn forget_click_ids(&self, before: i64) -> Result<u64, StoreError> {
        let done = crate::on_writer!(self, pool => {
            sqlx::query("DELETE FROM click_seen WHERE received_at < $1")
                .bind(before)
                .execute(pool)
                .await?
                .rows_affected()
        });
        Ok(done)
    }

    async fn click_series(
        &self,
        link: u64,
        from: i64,
        to: i64,
        bucket_ms: i64,
    ) -> Result<Vec<Rollup>, StoreError> {
        let rows: Vec<(i64, bool, i64, i64)> = crate::on_pool!(self, pool => {
            sqlx::query_as(
                "SELECT hour - (hour % $4) AS bucket, bot, \
                 CAST(SUM(visits) AS BIGINT), CAST(SUM(redirects) AS BIGINT) \
                 FROM click_hours WHERE link_id = $1 AND hour >= $2 AND hour < $3 \
                 GROUP BY bucket, bot ORDER BY bucket",
            )
            .bind(link as i64)
            .bind(from)
            .bind(to)
            .bind(bucket_ms)
            .fetch_all(pool)
            .await?
        });
        Ok(rows
            .into_iter()
            .map(|(start, bot, visits, redirects)| Rollup {
                start,
                bot,
                visits,
                redirects,
            })
            .collect())
    }

    async fn click_dims(
        &self,
        link: u64,
        from: i64,
        to: i64,
        include_bots: bool,
        top: i64,
    ) -> Result<Vec<DimCount>, StoreError> {
        // The top of each dimension is chosen by the database: only `top` rows per
        // dimension come back, however many values the range holds.
        let rows: Vec<(String, String, i64)> = crate::on_pool!(self, pool => {
            sqlx::query_as(
                "SELECT dim, value, n FROM ( \
                   SELECT dim, value, CAST(SUM(visits) AS BIGINT) AS n, \
                     ROW_NUMBER() OVER (PARTITION BY dim ORDER BY SUM(visits) DESC, value) AS r \
                   FROM click_dims \
                   WHERE link_id = $1 AND hour >= $2 AND hour < $3 AND (bot = FALSE OR $4) \
                   GROUP BY dim, value) ranked \
                 WHERE r <= $5 ORDER BY dim, n DESC, value",
            )
            .bind(link as i64)
            .bind(from)
            .bind(to)
            .bind(include_bots)
            .bind(top)
            .fetch_all(pool)
            .await?
        });
        Ok(rows
            .into_iter()
            .map(|(dim, value, visits)| DimCount { dim, value, visits })
            .collect())
    }

    async fn owner_top_links(
        &self,
        owner: &str,
        from: i64,
        to: i64,
        include_bots: bool,
        limit: i64,
    ) -> Result<Vec<(u64, Totals)>, StoreError> {
        let (days_from, days_to) = whole_days(from, to);
        let sql = format!(
            "SELECT link_id, {SUMS} FROM ({OWNER_ROWS}) r GROUP BY link_id \
             ORDER BY CASE WHEN $6 THEN SUM(visits) ELSE SUM(CASE WHEN bot THEN 0 ELSE visits END) END DESC, link_id \
             LIMIT $7"
        );
        let rows: Vec<(i64, i64, i64, i64, i64)> = crate::on_pool!(self, pool => {
            sqlx::query_as(&sql)
                .bind(owner)
                .bind(days_from)
                .bind(days_to)
                .bind(from)
                .bind(to)
                .bind(include_bots)
                .bind(limit)
                .fetch_all(pool)
                .await?
        });
        rows.into_iter()
            .map(|(id, visits, redirects, bots, bot_redirects)| {
                Ok((
                    link_id(id)?,
                    Totals {
                        visits,
                        redirects,
                        bots,
                        bot_redirects,
                    },
                ))
            })
            .collect()
    }

    async fn owner_totals(&self, owner: &str, from: i64, to: i64) -> Result<Totals, StoreError> {
        let (days_from, days_to) = whole_days(from, to);
        let sql = format!("SELECT {SUMS} FROM ({OWNER_ROWS}) r");
        let row: (Option<i64>, Option<i64>, Option<i64>, Option<i64>) = crate::on_pool!(self, pool => {
            sqlx::query_as(&sql)
                .bind(owner)
                .bind(days_from)
                .bind(days_to)
                .bind(from)
                .bind(to)
                .fetch_one(pool)
                .await?
        });
        Ok(Totals {
            visits: row.0.unwrap_or_default(),
            redirects: row.1.unwrap_or_default(),
            bots: row.2.unwrap_or_default(),
            bot_redirects: row.3.unwrap_or_default(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_days_leave_the_edges_to_hours() {
        let day = DAY_MS;
        assert_eq!(whole_days(0, 3 * day), (0, 3 * day));
        assert_eq!(whole_days(HOUR_MS, 3 * day + HOUR_MS), (day, 3 * day));
        // Within one day, or across one midnight: no whole day, all hours.
        assert_eq!(whole_days(HOUR_MS, 5 * HOUR_MS), (5 * HOUR_MS, 5 * HOUR_MS));
        assert_eq!(
            whole_days(day - HOUR_MS, day + HOUR_MS),
            (day + HOUR_MS, day + HOUR_MS)
        );
    }
}

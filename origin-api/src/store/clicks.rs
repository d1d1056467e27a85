//! Click rollups: counting new events exactly once, and reading the counts back.

use super::sql::{insert_rows, list_placeholders, values_placeholders, Arg, Conn};
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

/// `link_id` as the database stores it.
fn db_id(link: u64) -> i64 {
    link as i64
}

/// Writes `inc` in the transaction: its hours, days and dimensions, each a multi-row
/// upsert of 500 rows, with referrers capped per link-hour.
async fn write_increments(c: &mut Conn<'_>, inc: &Increments) -> Result<(), StoreError> {
    let hours: Vec<Arg<'_>> = inc
        .hours
        .iter()
        .flat_map(|((link, hour, bot), (owner, visits, redirects))| {
            [
                db_id(*link).into(),
                (*hour).into(),
                (*bot).into(),
                owner.into(),
                (*visits).into(),
                (*redirects).into(),
            ]
        })
        .collect();
    let days: Vec<Arg<'_>> = inc
        .days
        .iter()
        .flat_map(|((owner, day, link, bot), (visits, redirects))| {
            [
                owner.into(),
                (*day).into(),
                db_id(*link).into(),
                (*bot).into(),
                (*visits).into(),
                (*redirects).into(),
            ]
        })
        .collect();
    // Referrers are capped per link and hour: the value is kept if the link-hour has it
    // already or has room, else counted under OTHER_REFERRERS. Anyone can send any
    // Referer, so without the cap one link's hour could hold a row per forged host.
    // What the link-hours of this write hold already is read in two queries per few
    // hundred, and the cap is applied here: a statement per referrer cost a round trip
    // to the database per link-hour written.
    let referrers: Vec<_> = inc
        .dims
        .iter()
        .filter(|((_, dim, _, _, value), _)| *dim == "referrer" && !value.is_empty())
        .collect();
    let mut rows: BTreeMap<(u64, &str, i64, bool, &str), i64> = inc
        .dims
        .iter()
        .filter(|((_, dim, _, _, value), _)| *dim != "referrer" || value.is_empty())
        .map(|((link, dim, hour, bot, value), n)| ((*link, *dim, *hour, *bot, value.as_str()), *n))
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
        // Per link-hour: how many distinct hosts it holds (counted by the database, one
        // row back per link-hour), and which of the hosts written now it holds already
        // (looked up by key). Reading every value held instead cost the edge's batches
        // of 100 a third of their throughput (`bench_clicks`).
        let mut held: HashMap<(u64, i64, bool), (i64, HashSet<String>)> = HashMap::new();
        for chunk in links.chunks(CHUNK) {
            let sql = format!(
                "SELECT link_id, hour, bot, CAST(COUNT(*) AS BIGINT), \
                 CAST(SUM(CASE WHEN value = $1 THEN 1 ELSE 0 END) AS BIGINT) FROM click_dims \
                 WHERE dim = 'referrer' AND value <> '' AND hour >= $2 AND hour <= $3 \
                 AND link_id IN ({}) GROUP BY link_id, hour, bot",
                list_placeholders(4, chunk.len())
            );
            let mut args: Vec<Arg<'_>> = vec![OTHER_REFERRERS.into(), first.into(), last.into()];
            args.extend(chunk.iter().map(|l| Arg::from(db_id(*l))));
            let found: Vec<(i64, i64, bool, i64, i64)> = c.fetch_all(&sql, &args).await?;
            for (link, hour, bot, values, other) in found {
                held.entry((link_id(link)?, hour, bot)).or_default().0 = values - other;
            }
        }
        for chunk in referrers.chunks(CHUNK) {
            let sql = format!(
                "SELECT link_id, hour, bot, value FROM click_dims \
                 WHERE dim = 'referrer' AND (link_id, hour, bot, value) IN (VALUES {})",
                values_placeholders(1, chunk.len(), 4)
            );
            let args: Vec<Arg<'_>> = chunk
                .iter()
                .flat_map(|((link, _, hour, bot, value), _)| {
                    [
                        db_id(*link).into(),
                        (*hour).into(),
                        (*bot).into(),
                        value.into(),
                    ]
                })
                .collect();
            let found: Vec<(i64, i64, bool, String)> = c.fetch_all(&sql, &args).await?;
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
    let dims: Vec<Arg<'_>> = rows
        .iter()
        .flat_map(|((link, dim, hour, bot, value), visits)| {
            [
                db_id(*link).into(),
                (*dim).into(),
                (*hour).into(),
                (*bot).into(),
                (*value).into(),
                (*visits).into(),
            ]
        })
        .collect();
    // Upserts in one order across writers (no deadlocks): hours, days, dimensions.
    for (insert, conflict, args) in [
        (
            "INSERT INTO click_hours (link_id, hour, bot, owner_id, visits, redirects)",
            "ON CONFLICT (link_id, hour, bot) DO UPDATE SET \
             visits = click_hours.visits + excluded.visits, \
             redirects = click_hours.redirects + excluded.redirects",
            &hours,
        ),
        (
            "INSERT INTO click_days (owner_id, day, link_id, bot, visits, redirects)",
            "ON CONFLICT (owner_id, day, link_id, bot) DO UPDATE SET \
             visits = click_days.visits + excluded.visits, \
             redirects = click_days.redirects + excluded.redirects",
            &days,
        ),
        (
            "INSERT INTO click_dims (link_id, dim, hour, bot, value, visits)",
            "ON CONFLICT (link_id, dim, hour, bot, value) DO UPDATE SET \
             visits = click_dims.visits + excluded.visits",
            &dims,
        ),
    ] {
        insert_rows(c, insert, conflict, 6, args).await?;
    }
    Ok(())
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
        let mut r = self.reader().await?;
        for chunk in keys.chunks(CHUNK) {
            let sql = format!(
                "SELECT link_id, domain, code, owner_id FROM links WHERE (domain, code) IN ({})",
                values_placeholders(1, chunk.len(), 2)
            );
            let args: Vec<Arg<'_>> = chunk
                .iter()
                .flat_map(|k| [k.domain().into(), k.code().into()])
                .collect();
            let rows: Vec<(i64, String, String, String)> = r.conn().fetch_all(&sql, &args).await?;
            for row in rows {
                found.push(link_ref(row)?);
            }
        }
        Ok(found)
    }

    async fn link_refs_by_id(&self, ids: &[u64]) -> Result<Vec<LinkRef>, StoreError> {
        let mut found = Vec::with_capacity(ids.len());
        let mut r = self.reader().await?;
        for chunk in ids.chunks(CHUNK) {
            let sql = format!(
                "SELECT link_id, domain, code, owner_id FROM links WHERE link_id IN ({})",
                list_placeholders(1, chunk.len())
            );
            let args: Vec<Arg<'_>> = chunk.iter().map(|id| Arg::from(db_id(*id))).collect();
            let rows: Vec<(i64, String, String, String)> = r.conn().fetch_all(&sql, &args).await?;
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
        let mut tx = self.begin_write().await?;
        let mut c = tx.conn();
        // Claim the ids: only those nobody claimed before are counted. A concurrent batch
        // holding one of them waits for us on its unique index.
        let mut fresh: HashSet<String> = HashSet::with_capacity(events.len());
        for chunk in events.chunks(CHUNK) {
            let sql = format!(
                "INSERT INTO click_seen (event_id, received_at) VALUES {} \
                 ON CONFLICT (event_id) DO NOTHING RETURNING event_id",
                values_placeholders(1, chunk.len(), 2)
            );
            let args: Vec<Arg<'_>> = chunk
                .iter()
                .flat_map(|a| [a.event.event_id.as_str().into(), now.into()])
                .collect();
            let claimed: Vec<(String,)> = c.fetch_all(&sql, &args).await?;
            fresh.extend(claimed.into_iter().map(|(id,)| id));
        }
        let mut inc = Increments::new(referrer_cap);
        for a in events.iter().filter(|a| fresh.contains(&a.event.event_id)) {
            inc.add(a.link_id, a.owner_id, &ClickDims::of(a.event), 1);
        }
        write_increments(&mut c, &inc).await?;
        tx.commit().await?;
        Ok(fresh.len() as u64)
    }

    async fn add_rollups(&self, inc: &Increments) -> Result<(), StoreError> {
        let mut tx = self.begin_write().await?;
        write_increments(&mut tx.conn(), inc).await?;
        tx.commit().await?;
        Ok(())
    }

    async fn forget_click_ids(&self, before: i64) -> Result<u64, StoreError> {
        Ok(self
            .write(
                "DELETE FROM click_seen WHERE received_at < $1",
                &[before.into()],
            )
            .await?)
    }

    async fn click_series(
        &self,
        link: u64,
        from: i64,
        to: i64,
        bucket_ms: i64,
    ) -> Result<Vec<Rollup>, StoreError> {
        let rows: Vec<(i64, bool, i64, i64)> = self
            .read_all(
                "SELECT hour - (hour % $4) AS bucket, bot, \
                 CAST(SUM(visits) AS BIGINT), CAST(SUM(redirects) AS BIGINT) \
                 FROM click_hours WHERE link_id = $1 AND hour >= $2 AND hour < $3 \
                 GROUP BY bucket, bot ORDER BY bucket",
                &[db_id(link).into(), from.into(), to.into(), bucket_ms.into()],
            )
            .await?;
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
        let rows: Vec<(String, String, i64)> = self
            .read_all(
                "SELECT dim, value, n FROM ( \
                   SELECT dim, value, CAST(SUM(visits) AS BIGINT) AS n, \
                     ROW_NUMBER() OVER (PARTITION BY dim ORDER BY SUM(visits) DESC, value) AS r \
                   FROM click_dims \
                   WHERE link_id = $1 AND hour >= $2 AND hour < $3 AND (bot = FALSE OR $4) \
                   GROUP BY dim, value) ranked \
                 WHERE r <= $5 ORDER BY dim, n DESC, value",
                &[
                    db_id(link).into(),
                    from.into(),
                    to.into(),
                    include_bots.into(),
                    top.into(),
                ],
            )
            .await?;
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
        let rows: Vec<(i64, i64, i64, i64, i64)> = self
            .read_all(
                &sql,
                &[
                    owner.into(),
                    days_from.into(),
                    days_to.into(),
                    from.into(),
                    to.into(),
                    include_bots.into(),
                    limit.into(),
                ],
            )
            .await?;
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
        let row: (Option<i64>, Option<i64>, Option<i64>, Option<i64>) = self
            .reader()
            .await?
            .conn()
            .fetch_one(
                &sql,
                &[
                    owner.into(),
                    days_from.into(),
                    days_to.into(),
                    from.into(),
                    to.into(),
                ],
            )
            .await?;
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

//! Click rollups: counting new events exactly once, and reading the counts back.

use super::contract::StoreError;
use super::link_rows::{LinkRow, SELECT_COLUMNS};
use super::links::update_one;
use super::sql::{insert_rows, list_placeholders, values_placeholders, Arg, Conn};
use crate::db::Db;
use crate::model::history::{Action, Actor, Change};
use crate::model::Link;
use async_trait::async_trait;
use shared::clicks::ClickEvent;
use shared::scanners::Scanner;
use shared::tally::TallyRow;
use shared::RouteKey;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt::Debug;

/// A link as click ingestion and stats need it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkRef {
    pub link_id: u64,
    pub domain: String,
    pub code: String,
    pub owner_id: String,
}

/// Clicks to count under one claim, and the link they are about: one event (claimed by
/// its id), or one row of an edge's tally (claimed by the tally's id, with its other
/// rows). Rows whose claim was taken before are not counted.
#[derive(Debug, Clone, Copy)]
pub struct Attributed<'a> {
    pub link_id: u64,
    pub owner_id: &'a str,
    /// The id counted once: an event's, or a tally's for each of its rows.
    pub claim: &'a str,
    pub dims: ClickDims<'a>,
    /// Alike clicks: 1 for an event, a row's count for a tally.
    pub n: i64,
    /// Who made them, on a link with a visit limit (`shared::clicks::person`); `None`
    /// where the edge named nobody (each of those clicks is a person of its own).
    pub person: Option<u64>,
}

/// Visits and the redirects among them, of people and of bots.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Totals {
    pub visits: i64,
    pub redirects: i64,
    pub bots: i64,
    pub bot_redirects: i64,
}

/// One bucket's counts for bots or for people.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rollup {
    /// Unix ms of the bucket's start.
    pub start: i64,
    pub bot: bool,
    pub visits: i64,
    pub redirects: i64,
}

/// Visits with one value of one dimension (`country`, `referrer`, `device`, `status`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DimCount {
    pub dim: String,
    /// Empty when unknown (no country, no referrer).
    pub value: String,
    pub visits: i64,
}

/// What one fold of staged clicks added to the rollups.
#[derive(Debug, Default)]
pub struct Folded {
    /// Staged rows folded (each one delivery from the edge).
    pub rows: usize,
    /// Clicks they held.
    pub visits: u64,
    /// Link-hours written.
    pub link_hours: usize,
    /// Whether it stopped at its bound with rows left staged.
    pub more: bool,
    /// Links whose visit limit the clicks reached, marked exhausted.
    pub exhausted: Vec<Link>,
}

/// Click rollups: hourly counts per link and dimension, with no foreign key to links.
#[async_trait]
pub trait ClickStore: Send + Sync + Debug + 'static {
    /// The links some route keys name (tombstones included); unknown keys are absent.
    async fn link_refs(&self, keys: &[shared::RouteKey]) -> Result<Vec<LinkRef>, StoreError>;
    /// The links some ids name.
    async fn link_refs_by_id(&self, ids: &[u64]) -> Result<Vec<LinkRef>, StoreError>;
    /// Takes the `claims` (event and tally ids) nobody took before and stages the
    /// `clicks` under them, as one row, in one transaction (made no later than `made`,
    /// Unix ms); returns the claims taken now. Staged clicks reach the rollups when they
    /// are folded ([`ClickStore::fold_staged`]).
    async fn stage_clicks(
        &self,
        claims: &[&str],
        clicks: &[Attributed<'_>],
        made: i64,
        now: i64,
    ) -> Result<std::collections::HashSet<String>, StoreError>;
    /// Adds the staged rows of `part` (of [`FOLD_PARTS`]), oldest first, to the rollups
    /// and deletes them, in one transaction, at most `referrer_cap` distinct referrer hosts per link and hour;
    /// stops taking rows once they hold `max_link_hours` link-hours (the rest is left
    /// for the next fold, [`Folded::more`]), and leaves rows another origin is folding
    /// to it. Marks the links whose visit limit the clicks reached exhausted and
    /// re-publishes them in the same transaction.
    async fn fold_staged(
        &self,
        part: u16,
        max_link_hours: usize,
        now: i64,
        referrer_cap: u32,
    ) -> Result<Folded, StoreError>;
    /// When the clicks of the oldest staged row were made (Unix ms); `None` when none is.
    async fn staged_since(&self) -> Result<Option<i64>, StoreError>;
    /// Adds counts gathered in memory (the origin's own clicks), in one transaction;
    /// the links whose visit limit they reached, as for [`ClickStore::fold_staged`].
    async fn add_rollups(&self, increments: &Increments, now: i64)
        -> Result<Vec<Link>, StoreError>;
    /// The people counted against a link's visit limit so far: one a day each, while
    /// the link had a limit (docs/api.md, `max_visits`).
    async fn limit_count(&self, link_id: u64) -> Result<u64, StoreError>;
    /// Forgets who the people of days before `before` (Unix ms) were, at most `limit`
    /// of them (their links' counts stay); returns how many.
    async fn forget_old_people(&self, before: i64, limit: i64) -> Result<u64, StoreError>;
    /// Forgets the ids of events received before `before` (Unix ms); returns how many.
    async fn forget_click_ids(&self, before: i64) -> Result<u64, StoreError>;
    /// Records, for each `(source, complete_to)`, how far that source has written its
    /// clicks (`None`: nothing outstanding), as of `at`; forgets sources not reported
    /// since `forget_before` (processes gone).
    async fn report_click_sources(
        &self,
        sources: &[(String, Option<i64>)],
        at: i64,
        forget_before: i64,
    ) -> Result<(), StoreError>;
    /// The sources reported since `since`, and how far each has written.
    async fn click_sources(&self, since: i64) -> Result<Vec<(String, Option<i64>)>, StoreError>;
    /// Forgets these sources (a process shutting down, having written all it held).
    async fn forget_click_sources(&self, sources: &[String]) -> Result<(), StoreError>;
    /// A link's counts in `[from, to)` per bucket of `bucket_ms` and bot flag, oldest
    /// first; empty buckets are absent.
    async fn click_series(
        &self,
        link: u64,
        from: i64,
        to: i64,
        bucket_ms: i64,
    ) -> Result<Vec<Rollup>, StoreError>;
    /// A link's visits in `[from, to)` per dimension value, most first.
    /// The `top` most visited values of each dimension of a link in `[from, to)`.
    async fn click_dims(
        &self,
        link: u64,
        from: i64,
        to: i64,
        include_bots: bool,
        top: i64,
    ) -> Result<Vec<DimCount>, StoreError>;
    /// An owner's most visited links in `[from, to)` (only those on `domains`, unless
    /// it is empty).
    async fn owner_top_links(
        &self,
        owner: &str,
        domains: &[String],
        from: i64,
        to: i64,
        include_bots: bool,
        limit: i64,
    ) -> Result<Vec<(u64, Totals)>, StoreError>;
    /// All of an owner's visits in `[from, to)` (only to links on `domains`, unless it
    /// is empty).
    async fn owner_totals(
        &self,
        owner: &str,
        domains: &[String],
        from: i64,
        to: i64,
    ) -> Result<Totals, StoreError>;
}

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
    /// The split variant the visit got, if the link has a split.
    pub variant: Option<u8>,
    /// Why a bot's visit was a scanner's, when it was.
    pub scanner: Option<Scanner>,
}

/// Rows per multi-row statement: well under both databases' limits on bound values.
const CHUNK: usize = 500;
/// Staged rows a fold takes per statement: each a delivery of up to 200 tallies.
const STAGED_PAGE: usize = 20;
/// The parts staged clicks are folded in, side by side: a link's clicks are always in
/// the same part (its id modulo the parts), so two parts' folds never write the same
/// rollup row, and on PostgreSQL they use as many cores.
pub const FOLD_PARTS: u16 = 4;

/// The part a link's staged clicks are in.
fn part_of(link: u64) -> i64 {
    (link % u64::from(FOLD_PARTS)) as i64
}
const HOUR_MS: i64 = 3_600_000;
const DAY_MS: i64 = 24 * HOUR_MS;

/// The people counted against a link's visit limit.
const LIMIT_COUNT: &str = include_str!("queries/limit_count.sql");
/// Up to `$2` people of days before `$1`, forgotten.
const FORGET_OLD_PEOPLE: &str = include_str!("queries/forget_old_people.sql");
/// The next `$1` links with a limit to publish again.
const LIMIT_REPUBLISH_NEXT: &str = include_str!("queries/limit_republish_next.sql");
/// A link published again (or no longer to be).
const LIMIT_REPUBLISHED: &str = include_str!("queries/limit_republished.sql");
/// The last row staged in a part.
const LAST_STAGED: &str = include_str!("queries/last_staged.sql");
/// When the clicks of the oldest staged row were made.
const STAGED_SINCE: &str = include_str!("queries/staged_since.sql");
const FORGET_CLICK_IDS: &str = include_str!("queries/forget_click_ids.sql");
/// How far a source has written its clicks, as of `$3`.
const REPORT_CLICK_SOURCE: &str = include_str!("queries/report_click_source.sql");
/// The sources not reported since `$1`.
const FORGET_STALE_CLICK_SOURCES: &str = include_str!("queries/forget_stale_click_sources.sql");
/// The sources reported since `$1`, and how far each has written.
const CLICK_SOURCES: &str = include_str!("queries/click_sources.sql");
const CLICK_SERIES: &str = include_str!("queries/click_series.sql");

type HourKey = (u64, i64, bool);
type DayKey = (String, i64, u64, bool);

/// One link-hour's increments: its visits and redirects, and its visits per dimension
/// value keyed as its `dims` column holds them ([`dim_key`]).
#[derive(Debug)]
struct HourRow {
    owner: String,
    visits: i64,
    redirects: i64,
    dims: BTreeMap<String, i64>,
    /// People's visits that named no person: each one a person for a visit limit.
    unnamed: i64,
}

/// Rollup increments, gathered before they are written: by new events from the edge, or
/// by the origin's own tally. Keyed so that each row is written once per statement and,
/// across concurrent writers, in one global order (no deadlocks).
#[derive(Debug)]
pub struct Increments {
    hours: BTreeMap<HourKey, HourRow>,
    days: BTreeMap<DayKey, (i64, i64)>,
    visits: u64,
    /// Distinct referrer hosts kept per link and hour; visits from others count as
    /// [`OTHER_REFERRERS`].
    referrer_cap: i64,
    /// People who visited links with a visit limit: `(link, day, person)`.
    people: std::collections::BTreeSet<(u64, i64, u64)>,
}

/// The referrer value that stands for every host past a link-hour's cap: a name no
/// host can have.
pub const OTHER_REFERRERS: &str = "(other)";

/// The dimensions a link-hour counts, by the initial that keys them in its `dims`
/// column: `{"c:DE": 3, "r:": 1, "r:news.example": 2, "d:mobile": 3, "s:302": 3,
/// "v:1": 3}` (nothing after the colon when the value is unknown). The split variant is
/// counted only for visits that got one: a link without a split keeps no `v:` key. The
/// scanner kind (`k:network`, `k:prefetch`) likewise only for scanners' visits, which
/// are bots' (docs/scanners.md).
const DIMENSIONS: [(char, &str); 6] = [
    ('c', "country"),
    ('r', "referrer"),
    ('d', "device"),
    ('s', "status"),
    ('v', "variant"),
    ('k', "scanner"),
];

/// `value` of the dimension keyed by `initial`, as a `dims` key.
fn dim_key(initial: char, value: &str) -> String {
    let mut key = String::with_capacity(2 + value.len());
    key.push(initial);
    key.push(':');
    key.push_str(value);
    key
}

/// Whether a `dims` key is a referrer host (not the absence of one).
fn is_referrer_host(key: &str) -> bool {
    key.len() > 2 && key.starts_with("r:")
}

impl<'a> ClickDims<'a> {
    /// A row of an edge's tally: its clicks fell in its hour.
    pub fn of_row(r: &'a TallyRow) -> Self {
        ClickDims {
            at: r.hour,
            bot: r.bot,
            status: r.status,
            country: r.country.as_deref().unwrap_or_default(),
            referrer: r.referrer_host.as_deref().unwrap_or_default(),
            device: r.device.as_str(),
            variant: r.variant,
            scanner: r.scanner,
        }
    }

    pub fn of(e: &'a ClickEvent) -> Self {
        ClickDims {
            at: e.at,
            bot: e.bot,
            status: e.status,
            country: e.country.as_deref().unwrap_or_default(),
            referrer: e.referrer_host.as_deref().unwrap_or_default(),
            device: e.device.as_str(),
            variant: e.variant,
            scanner: e.scanner,
        }
    }
}

impl Increments {
    /// Nothing yet; at most `referrer_cap` distinct referrer hosts per link and hour.
    pub fn new(referrer_cap: u32) -> Self {
        Increments {
            hours: BTreeMap::new(),
            days: BTreeMap::new(),
            visits: 0,
            referrer_cap: i64::from(referrer_cap),
            people: std::collections::BTreeSet::new(),
        }
    }

    /// Counts who made `n` people's visits of `link` at `at` for a visit limit: the
    /// `person` once a day, or, when the visits named nobody, each of them.
    pub fn add_person(&mut self, link: u64, at: i64, person: Option<u64>, n: i64) {
        match person {
            Some(person) => {
                self.people
                    .insert((link, at.div_euclid(DAY_MS) * DAY_MS, person));
            }
            None => {
                // The visits' own link-hour, added just before ([`Increments::add`]).
                let hour = at.div_euclid(HOUR_MS) * HOUR_MS;
                if let Some(h) = self.hours.get_mut(&(link, hour, false)) {
                    h.unnamed += n;
                }
            }
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
        let h = self.count(link_id, hour, dims.bot, owner_id, n, redirects);
        let status = dims.status.to_string();
        for (initial, value) in [
            ('c', dims.country),
            ('r', dims.referrer),
            ('d', dims.device),
            ('s', status.as_str()),
        ] {
            let key = dim_key(initial, value);
            *h.dims.entry(key).or_default() += n;
        }
        if let Some(v) = dims.variant {
            *h.dims.entry(dim_key('v', &v.to_string())).or_default() += n;
        }
        if let Some(s) = dims.scanner {
            *h.dims.entry(dim_key('k', s.as_str())).or_default() += n;
        }
    }

    /// Adds `visits` and `redirects` to a link-hour and its day, and to the visits
    /// counted; returns the link-hour, for its dimensions.
    fn count(
        &mut self,
        link: u64,
        hour: i64,
        bot: bool,
        owner: &str,
        visits: i64,
        redirects: i64,
    ) -> &mut HourRow {
        let day = hour.div_euclid(DAY_MS) * DAY_MS;
        let d = self
            .days
            .entry((owner.to_owned(), day, link, bot))
            .or_default();
        d.0 += visits;
        d.1 += redirects;
        self.visits += u64::try_from(visits).unwrap_or_default();
        let h = self
            .hours
            .entry((link, hour, bot))
            .or_insert_with(|| HourRow {
                owner: owner.to_owned(),
                visits: 0,
                redirects: 0,
                dims: BTreeMap::new(),
                unnamed: 0,
            });
        h.visits += visits;
        h.redirects += redirects;
        h
    }

    /// The counts as staged ([`ClickStore::stage_clicks`]), one body per [`FOLD_PARTS`]
    /// part that has any, by the links' ids: each link-hour as
    /// `[link_id, hour, bot, owner_id, visits, redirects, dims, unnamed]` (the days
    /// follow from the hours; the people named are written when staged).
    fn staged(&self) -> Result<Vec<(i64, String)>, StoreError> {
        let mut parts: BTreeMap<i64, Vec<_>> = BTreeMap::new();
        for (&(link, hour, bot), h) in &self.hours {
            parts.entry(part_of(link)).or_default().push((
                link,
                hour,
                bot,
                &h.owner,
                h.visits,
                h.redirects,
                &h.dims,
                h.unnamed,
            ));
        }
        parts
            .into_iter()
            .map(|(part, rows)| {
                serde_json::to_string(&rows)
                    .map(|body| (part, body))
                    .map_err(|e| StoreError::Corrupt(format!("staged clicks: {e}")))
            })
            .collect()
    }

    /// Adds a staged row's counts.
    fn add_staged(&mut self, body: &str) -> Result<(), StoreError> {
        type Dims = BTreeMap<String, i64>;
        type Row = (u64, i64, bool, String, i64, i64, Dims, i64);
        /// A link-hour as an origin before visit limits counted people staged it
        /// (without `unnamed`): every people's visit of it counts.
        type Before = (u64, i64, bool, String, i64, i64, Dims);
        let rows: Vec<Row> = match serde_json::from_str(body) {
            Ok(rows) => rows,
            Err(e) => serde_json::from_str::<Vec<Before>>(body)
                .map_err(|_| StoreError::Corrupt(format!("staged clicks: {e}")))?
                .into_iter()
                .map(|(l, h, b, o, v, r, d)| (l, h, b, o, v, r, d, if b { 0 } else { v }))
                .collect(),
        };
        for (link, hour, bot, owner, visits, redirects, dims, unnamed) in rows {
            let h = self.count(link, hour, bot, &owner, visits, redirects);
            h.unnamed += unnamed;
            for (k, n) in dims {
                *h.dims.entry(k).or_default() += n;
            }
        }
        Ok(())
    }

    /// The visits added.
    pub fn visits(&self) -> u64 {
        self.visits
    }

    /// The link-hours they fall in: the rows written, one each.
    pub fn link_hours(&self) -> usize {
        self.hours.len()
    }

    /// The links people visited (not bots), each once.
    fn visited_by_people(&self) -> Vec<u64> {
        let mut ids: Vec<u64> = self
            .hours
            .keys()
            .filter(|(_, _, bot)| !bot)
            .map(|(link, _, _)| *link)
            .chain(self.people.iter().map(|(link, _, _)| *link))
            .collect();
        ids.sort_unstable();
        ids.dedup();
        ids
    }

    /// People's visits of `link` that named no person.
    fn unnamed(&self, link: u64) -> i64 {
        self.hours
            .range((link, i64::MIN, false)..=(link, i64::MAX, true))
            .map(|(_, h)| h.unnamed)
            .sum()
    }
}

/// Writes the people `inc` names, each once a link and day, and adds the new ones to
/// their links' counts: a person written before, by this origin or by another at the
/// same moment (whose row the insert waits for), is not new.
async fn write_people(c: &mut Conn<'_>, inc: &Increments) -> Result<(), StoreError> {
    let people: Vec<&(u64, i64, u64)> = inc.people.iter().collect();
    let mut new: BTreeMap<u64, i64> = BTreeMap::new();
    for chunk in people.chunks(CHUNK) {
        // Built at run time: one VALUES tuple per person.
        let sql = format!(
            "INSERT INTO visit_limit_people (link_id, day, person) VALUES {} \
             ON CONFLICT (link_id, day, person) DO NOTHING RETURNING link_id",
            values_placeholders(1, chunk.len(), 3)
        );
        let args: Vec<Arg<'_>> = chunk
            .iter()
            // A person is 64 bits of hash, kept as the signed integer of the same bits.
            .flat_map(|&&(link, day, person)| {
                [db_id(link).into(), day.into(), (person as i64).into()]
            })
            .collect();
        let written: Vec<(i64,)> = c.fetch_all(&sql, &args).await?;
        for (link,) in written {
            *new.entry(link_id(link)?).or_default() += 1;
        }
    }
    count_people(c, &new).await
}

/// Adds `counts` to their links' visit-limit counts (each link's row of day 0, person
/// 0), in link order: concurrent writers lock the rows in one order (no deadlocks).
async fn count_people(c: &mut Conn<'_>, counts: &BTreeMap<u64, i64>) -> Result<(), StoreError> {
    let rows: Vec<Arg<'_>> = counts
        .iter()
        .flat_map(|(&link, &n)| [db_id(link).into(), 0i64.into(), 0i64.into(), n.into()])
        .collect();
    insert_rows(
        c,
        "INSERT INTO visit_limit_people (link_id, day, person, n)",
        "ON CONFLICT (link_id, day, person) DO UPDATE SET n = visit_limit_people.n + excluded.n",
        4,
        &rows,
    )
    .await?;
    Ok(())
}

/// The people counted against `link_id`'s visit limit so far (bots never count).
pub(super) async fn limit_count(c: &mut Conn<'_>, link_id: u64) -> Result<u64, StoreError> {
    let (n,): (Option<i64>,) = c.fetch_one(LIMIT_COUNT, &[db_id(link_id).into()]).await?;
    Ok(u64::try_from(n.unwrap_or_default()).unwrap_or_default())
}

/// After `inc` is written, in its transaction: the links people visited in it that have
/// a visit limit, not yet reached, and have now reached it, marked exhausted and
/// re-published (version bumped, outbox row) as any edit is. Returned as written.
///
/// Only links with options are read, by id. Each limited one's visits that named no
/// person are added to its count (one row, read by its key). A link edited meanwhile
/// is left for the next write of its clicks: a count is never lost, only its
/// enforcement put off.
async fn exhaust_reached(
    c: &mut Conn<'_>,
    inc: &Increments,
    now: i64,
) -> Result<Vec<Link>, StoreError> {
    let ids = inc.visited_by_people();
    let mut exhausted = Vec::new();
    for chunk in ids.chunks(CHUNK) {
        // Built at run time: one placeholder per link.
        let sql = format!(
            "SELECT {SELECT_COLUMNS} FROM links WHERE link_id IN ({}) \
             AND options IS NOT NULL AND status = 'active'",
            list_placeholders(1, chunk.len())
        );
        let args: Vec<Arg<'_>> = chunk.iter().map(|id| Arg::from(db_id(*id))).collect();
        let rows: Vec<LinkRow> = c.fetch_all(&sql, &args).await?;
        for row in rows {
            let mut link = Link::try_from(row)?;
            let Some(max) = link.options.max_visits.filter(|_| !link.options.exhausted) else {
                continue;
            };
            let unnamed = inc.unnamed(link.link_id);
            if unnamed > 0 {
                count_people(c, &BTreeMap::from([(link.link_id, unnamed)])).await?;
            }
            if limit_count(c, link.link_id).await? < max {
                continue;
            }
            let exhausted_change = Change::new(Action::Exhausted, Actor::System);
            link.options.exhausted = true;
            link.updated_at = now;
            let version = i64::try_from(link.version).unwrap_or(i64::MAX);
            match update_one(
                c,
                &link,
                version,
                &exhausted_change,
                &crate::model::quota::Limits::default(),
            )
            .await
            {
                Ok(written) => exhausted.push(written),
                Err(StoreError::Stale) => {}
                Err(e) => return Err(e),
            }
        }
    }
    Ok(exhausted)
}

/// People's visits per UTC day to each of `links` in `[from, to)` (on day boundaries),
/// as `(link, day, visits)`, from each link's own rows of `click_hours` (an index range
/// per link, whatever the owner's size): the sparklines of a page of the dashboard.
pub async fn human_visits_by_day(
    db: &Db,
    links: &[u64],
    from: i64,
    to: i64,
) -> Result<Vec<(u64, i64, i64)>, StoreError> {
    let mut found = Vec::new();
    for chunk in links.chunks(CHUNK) {
        // Built at run time: one placeholder per link.
        let sql = format!(
            "SELECT link_id, hour - (hour % 86400000), CAST(SUM(visits) AS BIGINT) \
             FROM click_hours WHERE hour >= $1 AND hour < $2 AND bot = $3 \
             AND link_id IN ({}) GROUP BY link_id, hour - (hour % 86400000)",
            list_placeholders(4, chunk.len())
        );
        let mut args: Vec<Arg<'_>> = vec![from.into(), to.into(), false.into()];
        args.extend(chunk.iter().map(|id| Arg::from(db_id(*id))));
        let rows: Vec<(i64, i64, i64)> = db.read_all(&sql, &args).await?;
        for (id, day, visits) in rows {
            found.push((link_id(id)?, day, visits));
        }
    }
    Ok(found)
}

/// Publishes again, each at a new version in a transaction of its own, up to `max` of
/// the links whose visit limit was set before records said so (`"lm"`, D-280), listed
/// by the migration that made people count: their copies at the edge would otherwise
/// name no visitor, so that every refresh kept counting, until their next edit. A link
/// no longer live with a limit is only taken off the list. Returns how many went.
pub async fn republish_limited(db: &Db, max: i64, now: i64) -> Result<u64, StoreError> {
    let ids: Vec<(i64,)> = db.read_all(LIMIT_REPUBLISH_NEXT, &[max.into()]).await?;
    let select = format!("SELECT {SELECT_COLUMNS} FROM links WHERE link_id = $1");
    let mut done = 0;
    for (id,) in ids {
        let mut tx = db.begin_write().await?;
        let mut c = tx.conn();
        let row: Option<LinkRow> = c.fetch_optional(&select, &[id.into()]).await?;
        if let Some(mut link) = row.map(Link::try_from).transpose()? {
            if link.status == crate::model::LinkState::Active
                && link.options.max_visits.is_some()
                && !link.options.exhausted
            {
                let change = Change::new(Action::Edited, Actor::System)
                    .with_note("published again: its visit limit counts people (D-280)");
                let version = i64::try_from(link.version).unwrap_or(i64::MAX);
                link.updated_at = now;
                let limits = crate::model::quota::Limits::default();
                match update_one(&mut c, &link, version, &change, &limits).await {
                    Ok(_) => done += 1,
                    // Edited meanwhile: that edit published the record as it is now.
                    Err(StoreError::Stale) => {}
                    Err(e) => return Err(e),
                }
            }
        }
        c.execute(LIMIT_REPUBLISHED, &[id.into()]).await?;
        tx.commit().await?;
    }
    Ok(done)
}

/// `link_id` as the database stores it.
fn db_id(link: u64) -> i64 {
    link as i64
}

/// The `dims` of a link-hour row already written, merged with those being added: the
/// sum per key. PostgreSQL's `jsonb` and SQLite's JSON text have functions of their
/// own names, the rest is the same (SQLite merges in Rust, [`write_increments`]).
const PG_MERGED_DIMS: &str = "COALESCE((SELECT jsonb_object_agg(key, n) FROM \
     (SELECT key, SUM(CAST(value AS BIGINT)) AS n \
     FROM (SELECT key, value FROM jsonb_each_text(click_hours.dims) \
     UNION ALL SELECT key, value FROM jsonb_each_text(excluded.dims)) e GROUP BY key) s), '{}')";

/// What the link-hours of `keys` hold already in their `dims`, read in one query per
/// few hundred link-hours; those absent hold nothing yet.
async fn dims_held(
    c: &mut Conn<'_>,
    keys: &[HourKey],
) -> Result<HashMap<HourKey, BTreeMap<String, i64>>, StoreError> {
    let mut held = HashMap::with_capacity(keys.len());
    for chunk in keys.chunks(CHUNK) {
        // Built at run time: one VALUES tuple per link-hour.
        let sql = format!(
            "SELECT link_id, hour, bot, CAST(dims AS TEXT) FROM click_hours \
             WHERE (link_id, hour, bot) IN (VALUES {})",
            values_placeholders(1, chunk.len(), 3)
        );
        let args: Vec<Arg<'_>> = chunk
            .iter()
            .flat_map(|(link, hour, bot)| [db_id(*link).into(), (*hour).into(), (*bot).into()])
            .collect();
        let found: Vec<(i64, i64, bool, String)> = c.fetch_all(&sql, &args).await?;
        for (link, hour, bot, dims) in found {
            let dims = serde_json::from_str(&dims)
                .map_err(|e| StoreError::Corrupt(format!("dims of link {link}: {e}")))?;
            held.insert((link_id(link)?, hour, bot), dims);
        }
    }
    Ok(held)
}

/// Writes `inc` in the transaction: its link-hours (each one row, its dimensions in
/// it) and its days, each a multi-row upsert of 500 rows, with referrers capped per
/// link-hour.
async fn write_increments(c: &mut Conn<'_>, inc: &Increments) -> Result<(), StoreError> {
    // What the link-hours being written hold already is read first, in one query per
    // few hundred of them. On SQLite that is all of them: the counts are merged here
    // and each row written whole, because its one writer holds the transaction and
    // nothing can change a row in between (merging in SQL, through `json_each`, cost a
    // third more per key, `bench_rollup_writer`). On PostgreSQL writers run concurrently, so the database merges
    // the counts in the upsert, and only the link-hours with referrer hosts are read,
    // for their cap.
    let postgres = c.is_postgres();
    let read: Vec<HourKey> = inc
        .hours
        .iter()
        .filter(|(_, h)| !postgres || h.dims.keys().any(|k| is_referrer_host(k)))
        .map(|(k, _)| *k)
        .collect();
    let mut held = if read.is_empty() {
        HashMap::new()
    } else {
        dims_held(c, &read).await?
    };
    // Referrers are capped per link and hour: a host is kept if the link-hour has it
    // already or has room, else counted under OTHER_REFERRERS. Anyone can send any
    // Referer, so without the cap one link's hour could hold a key per forged host.
    let other = dim_key('r', OTHER_REFERRERS);
    let mut dims_json = Vec::with_capacity(inc.hours.len());
    for (key, h) in &inc.hours {
        let have = held.remove(key).unwrap_or_default();
        let mut distinct = have
            .keys()
            .filter(|k| is_referrer_host(k) && **k != other)
            .count() as i64;
        let mut dims: BTreeMap<&str, i64> = if postgres {
            BTreeMap::new()
        } else {
            have.iter().map(|(k, n)| (k.as_str(), *n)).collect()
        };
        // Hosts come in key order, each once (the map is keyed by it).
        for (k, n) in &h.dims {
            let kept = if !is_referrer_host(k) || have.contains_key(k) {
                k.as_str()
            } else if *k != other && distinct < inc.referrer_cap {
                distinct += 1;
                k.as_str()
            } else {
                other.as_str()
            };
            *dims.entry(kept).or_default() += *n;
        }
        dims_json.push(
            serde_json::to_string(&dims)
                .map_err(|e| StoreError::Corrupt(format!("dims of link {}: {e}", key.0)))?,
        );
    }
    let hours: Vec<Arg<'_>> = inc
        .hours
        .iter()
        .zip(&dims_json)
        .flat_map(|((&(link, hour, bot), h), dims)| {
            [
                db_id(link).into(),
                hour.into(),
                bot.into(),
                (&h.owner).into(),
                h.visits.into(),
                h.redirects.into(),
                Arg::Json(dims),
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
    // Upserts in one order across writers (no deadlocks): hours, then days. Built at run
    // time: one VALUES tuple per row, and the merge of `dims` each dialect's own.
    let hours_conflict = format!(
        "ON CONFLICT (link_id, hour, bot) DO UPDATE SET \
         visits = click_hours.visits + excluded.visits, \
         redirects = click_hours.redirects + excluded.redirects, \
         dims = {}",
        if postgres {
            PG_MERGED_DIMS
        } else {
            "excluded.dims"
        }
    );
    insert_rows(
        c,
        "INSERT INTO click_hours (link_id, hour, bot, owner_id, visits, redirects, dims)",
        &hours_conflict,
        7,
        &hours,
    )
    .await?;
    insert_rows(
        c,
        "INSERT INTO click_days (owner_id, day, link_id, bot, visits, redirects)",
        "ON CONFLICT (owner_id, day, link_id, bot) DO UPDATE SET \
         visits = click_days.visits + excluded.visits, \
         redirects = click_days.redirects + excluded.redirects",
        6,
        &days,
    )
    .await?;
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
/// hours before and after them from `click_hours`; with `domains` domains, only those of
/// links on the domains bound from `$first` on (a key limited to domains sees no more).
/// Built at run time: the domains' filter is optional, one placeholder per domain.
fn owner_rows(first: usize, domains: usize) -> String {
    let scope = if domains == 0 {
        String::new()
    } else {
        format!(
            " AND link_id IN (SELECT link_id FROM links WHERE owner_id = $1 AND domain IN ({}))",
            list_placeholders(first, domains)
        )
    };
    format!(
        "SELECT link_id, bot, visits, redirects FROM click_days \
         WHERE owner_id = $1 AND day >= $2 AND day < $3{scope} \
         UNION ALL \
         SELECT link_id, bot, visits, redirects FROM click_hours \
         WHERE owner_id = $1 AND ((hour >= $4 AND hour < $2) OR (hour >= $3 AND hour < $5)){scope}"
    )
}

/// The values of [`owner_rows`]' `$1` to `$5` for `owner`'s visits in `[from, to)`.
fn owner_args(owner: &str, from: i64, to: i64) -> [Arg<'_>; 5] {
    let (days_from, days_to) = whole_days(from, to);
    [
        owner.into(),
        days_from.into(),
        days_to.into(),
        from.into(),
        to.into(),
    ]
}

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
        if self.is_postgres() {
            // The keys as one JSON array: planning 500 pairs of parameters took
            // PostgreSQL 20 ms a statement, four times what running it did
            // (`scripts/bench-clicks`, part tallies), on every miss of the edge's links.
            // Inline: PostgreSQL only (`jsonb`), no file to check on both.
            for chunk in keys.chunks(CHUNK * 4) {
                let pairs: Vec<[&str; 2]> = chunk.iter().map(|k| [k.domain(), k.code()]).collect();
                let json = serde_json::to_string(&pairs)
                    .map_err(|e| StoreError::Corrupt(format!("route keys: {e}")))?;
                let rows: Vec<(i64, String, String, String)> = r
                    .conn()
                    .fetch_all(
                        "SELECT l.link_id, l.domain, l.code, l.owner_id \
                         FROM jsonb_array_elements($1) k \
                         JOIN links l ON l.domain = k->>0 AND l.code = k->>1",
                        &[Arg::Json(&json)],
                    )
                    .await?;
                for row in rows {
                    found.push(link_ref(row)?);
                }
            }
            return Ok(found);
        }
        for chunk in keys.chunks(CHUNK) {
            // Built at run time: one VALUES tuple per route key.
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
            // Built at run time: one placeholder per link.
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

    async fn stage_clicks(
        &self,
        claims: &[&str],
        clicks: &[Attributed<'_>],
        made: i64,
        now: i64,
    ) -> Result<HashSet<String>, StoreError> {
        if claims.is_empty() {
            return Ok(HashSet::new());
        }
        let mut claims = claims.to_vec();
        claims.sort_unstable();
        claims.dedup();
        let mut tx = self.begin_write().await?;
        let mut c = tx.conn();
        // Claim the ids: only those nobody claimed before are counted. A concurrent batch
        // holding one of them waits for us on its unique index.
        let mut fresh: HashSet<String> = HashSet::with_capacity(claims.len());
        for chunk in claims.chunks(CHUNK) {
            // Built at run time: one VALUES tuple per claim.
            let sql = format!(
                "INSERT INTO click_seen (event_id, received_at) VALUES {} \
                 ON CONFLICT (event_id) DO NOTHING RETURNING event_id",
                values_placeholders(1, chunk.len(), 2)
            );
            let args: Vec<Arg<'_>> = chunk
                .iter()
                .flat_map(|claim| [(*claim).into(), now.into()])
                .collect();
            let claimed: Vec<(String,)> = c.fetch_all(&sql, &args).await?;
            fresh.extend(claimed.into_iter().map(|(id,)| id));
        }
        // Alike clicks of the whole delivery in one row per link-hour: a delivery of a
        // hundred tallies is one insert, whatever it holds.
        let mut inc = Increments::new(0);
        for a in clicks.iter().filter(|a| fresh.contains(a.claim)) {
            inc.add(a.link_id, a.owner_id, &a.dims, a.n);
            if !a.dims.bot {
                inc.add_person(a.link_id, a.dims.at, a.person, a.n);
            }
        }
        // The people are written now, with the claim, each new one counted against its
        // link's limit; the fold checks the limits.
        write_people(&mut c, &inc).await?;
        let parts = inc.staged()?;
        if !parts.is_empty() {
            // Built at run time: one VALUES tuple per part.
            let sql = format!(
                "INSERT INTO click_staged (part, made_at, staged_at, body) VALUES {}",
                values_placeholders(1, parts.len(), 4)
            );
            let args: Vec<Arg<'_>> = parts
                .iter()
                .flat_map(|(part, body)| {
                    [
                        (*part).into(),
                        made.into(),
                        now.into(),
                        body.as_str().into(),
                    ]
                })
                .collect();
            c.execute(&sql, &args).await?;
        }
        tx.commit().await?;
        Ok(fresh)
    }

    async fn fold_staged(
        &self,
        part: u16,
        max_link_hours: usize,
        now: i64,
        referrer_cap: u32,
    ) -> Result<Folded, StoreError> {
        let mut tx = self.begin_write().await?;
        let mut c = tx.conn();
        // What is staged now, and no later row: a fold that chased new deliveries
        // would never end under load.
        let part = i64::from(part);
        let (upto,): (Option<i64>,) = c.fetch_one(LAST_STAGED, &[part.into()]).await?;
        let Some(upto) = upto else {
            return Ok(Folded::default());
        };
        // Taken and deleted at once, a page at a time (a page's bodies are all a fold
        // holds besides its sums): a row is counted by the transaction that deletes it,
        // and by no other. On PostgreSQL another origin's fold skips the rows this one
        // holds rather than wait for them (SQLite has one writer). Built at run time:
        // PostgreSQL's `FOR UPDATE SKIP LOCKED`, which SQLite has not.
        let lock = if c.is_postgres() {
            " FOR UPDATE SKIP LOCKED"
        } else {
            ""
        };
        let sql = format!(
            "DELETE FROM click_staged WHERE staged_id IN \
             (SELECT staged_id FROM click_staged WHERE part = $1 AND staged_id <= $2 \
              ORDER BY staged_id LIMIT {STAGED_PAGE}{lock}) \
             RETURNING body"
        );
        let mut inc = Increments::new(referrer_cap);
        let mut rows = 0;
        let mut more = false;
        loop {
            let bodies: Vec<(String,)> = c.fetch_all(&sql, &[part.into(), upto.into()]).await?;
            if bodies.is_empty() {
                break;
            }
            rows += bodies.len();
            for (body,) in &bodies {
                inc.add_staged(body)?;
            }
            if inc.link_hours() >= max_link_hours {
                more = true;
                break;
            }
        }
        if rows == 0 {
            return Ok(Folded::default());
        }
        write_increments(&mut c, &inc).await?;
        let exhausted = exhaust_reached(&mut c, &inc, now).await?;
        tx.commit().await?;
        Ok(Folded {
            rows,
            visits: inc.visits(),
            link_hours: inc.link_hours(),
            more,
            exhausted,
        })
    }

    async fn staged_since(&self) -> Result<Option<i64>, StoreError> {
        let (oldest,): (Option<i64>,) = self
            .reader()
            .await?
            .conn()
            .fetch_one(STAGED_SINCE, &[])
            .await?;
        Ok(oldest)
    }

    async fn add_rollups(&self, inc: &Increments, now: i64) -> Result<Vec<Link>, StoreError> {
        let mut tx = self.begin_write().await?;
        let mut c = tx.conn();
        write_increments(&mut c, inc).await?;
        write_people(&mut c, inc).await?;
        let exhausted = exhaust_reached(&mut c, inc, now).await?;
        tx.commit().await?;
        Ok(exhausted)
    }

    async fn limit_count(&self, link_id: u64) -> Result<u64, StoreError> {
        let mut r = self.reader().await?;
        limit_count(&mut r.conn(), link_id).await
    }

    async fn forget_old_people(&self, before: i64, limit: i64) -> Result<u64, StoreError> {
        Ok(self
            .write(FORGET_OLD_PEOPLE, &[before.into(), limit.into()])
            .await?)
    }

    async fn forget_click_ids(&self, before: i64) -> Result<u64, StoreError> {
        Ok(self.write(FORGET_CLICK_IDS, &[before.into()]).await?)
    }

    async fn report_click_sources(
        &self,
        sources: &[(String, Option<i64>)],
        at: i64,
        forget_before: i64,
    ) -> Result<(), StoreError> {
        let mut tx = self.begin_write().await?;
        let mut c = tx.conn();
        for (source, complete_to) in sources {
            c.execute(
                REPORT_CLICK_SOURCE,
                &[source.as_str().into(), (*complete_to).into(), at.into()],
            )
            .await?;
        }
        c.execute(FORGET_STALE_CLICK_SOURCES, &[forget_before.into()])
            .await?;
        tx.commit().await?;
        Ok(())
    }

    async fn click_sources(&self, since: i64) -> Result<Vec<(String, Option<i64>)>, StoreError> {
        Ok(self.read_all(CLICK_SOURCES, &[since.into()]).await?)
    }

    async fn forget_click_sources(&self, sources: &[String]) -> Result<(), StoreError> {
        if sources.is_empty() {
            return Ok(());
        }
        // Built at run time: one placeholder per source.
        let sql = format!(
            "DELETE FROM click_sources WHERE source IN ({})",
            list_placeholders(1, sources.len())
        );
        let args: Vec<Arg<'_>> = sources.iter().map(|s| s.as_str().into()).collect();
        self.write(&sql, &args).await?;
        Ok(())
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
                CLICK_SERIES,
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
        // dimension come back, however many values the range holds. Each link-hour row
        // holds its dimensions as one JSON object, expanded here. Built at run time: the
        // function that expands it is each dialect's own. The scanner dimension is
        // read whatever `include_bots` says: it says how many of the bots were scanners.
        let each = if self.is_postgres() {
            "jsonb_each_text"
        } else {
            "json_each"
        };
        let sql = format!(
            "SELECT k, n FROM ( \
               SELECT j.key AS k, CAST(SUM(CAST(j.value AS BIGINT)) AS BIGINT) AS n, \
                 ROW_NUMBER() OVER (PARTITION BY substr(j.key, 1, 1) \
                   ORDER BY SUM(CAST(j.value AS BIGINT)) DESC, j.key) AS r \
               FROM click_hours h, {each}(h.dims) j \
               WHERE h.link_id = $1 AND h.hour >= $2 AND h.hour < $3 AND (h.bot = FALSE OR $4 OR j.key LIKE 'k:%') \
               GROUP BY j.key) ranked \
             WHERE r <= $5 ORDER BY substr(k, 1, 1), n DESC, k"
        );
        let rows: Vec<(String, i64)> = self
            .read_all(
                &sql,
                &[
                    db_id(link).into(),
                    from.into(),
                    to.into(),
                    include_bots.into(),
                    top.into(),
                ],
            )
            .await?;
        let mut counts = Vec::with_capacity(rows.len());
        for (key, visits) in rows {
            let Some((initial, value)) = key.split_once(':') else {
                return Err(StoreError::Corrupt(format!("dimension key {key:?}")));
            };
            // A dimension a newer origin on the same database writes (during a rolling
            // upgrade, or after a rollback) is not this one's to show: skipped, not an
            // error that would fail the whole answer.
            let Some((_, dim)) = DIMENSIONS
                .iter()
                .find(|(i, _)| initial.len() == 1 && initial.starts_with(*i))
            else {
                continue;
            };
            counts.push(DimCount {
                dim: (*dim).to_owned(),
                value: value.to_owned(),
                visits,
            });
        }
        Ok(counts)
    }

    async fn owner_top_links(
        &self,
        owner: &str,
        domains: &[String],
        from: i64,
        to: i64,
        include_bots: bool,
        limit: i64,
    ) -> Result<Vec<(u64, Totals)>, StoreError> {
        // Built at run time: the rows of [`owner_rows`].
        let rows_sql = owner_rows(8, domains.len());
        let sql = format!(
            "SELECT link_id, {SUMS} FROM ({rows_sql}) r GROUP BY link_id \
             ORDER BY CASE WHEN $6 THEN SUM(visits) ELSE SUM(CASE WHEN bot THEN 0 ELSE visits END) END DESC, link_id \
             LIMIT $7"
        );
        let mut args = owner_args(owner, from, to).to_vec();
        args.extend([Arg::from(include_bots), Arg::from(limit)]);
        args.extend(domains.iter().map(Arg::from));
        let rows: Vec<(i64, i64, i64, i64, i64)> = self.read_all(&sql, &args).await?;
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

    async fn owner_totals(
        &self,
        owner: &str,
        domains: &[String],
        from: i64,
        to: i64,
    ) -> Result<Totals, StoreError> {
        // Built at run time: the rows of [`owner_rows`].
        let sql = format!("SELECT {SUMS} FROM ({}) r", owner_rows(6, domains.len()));
        let mut args = owner_args(owner, from, to).to_vec();
        args.extend(domains.iter().map(Arg::from));
        let row: (Option<i64>, Option<i64>, Option<i64>, Option<i64>) =
            self.reader().await?.conn().fetch_one(&sql, &args).await?;
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

    fn dims(at: i64, bot: bool) -> ClickDims<'static> {
        ClickDims {
            at,
            bot,
            status: 302,
            country: "",
            referrer: "",
            device: "desktop",
            variant: None,
            scanner: None,
        }
    }

    /// A visit limit's count through staging: named people once a link and day, the
    /// visits that named nobody each, bots never; and a row staged by an origin before
    /// people were counted still counts each of its people's visits.
    #[test]
    fn staged_clicks_keep_who_a_visit_limit_counts() {
        let at = 20_000 * DAY_MS + 5 * HOUR_MS;
        let mut inc = Increments::new(0);
        for (person, n, bot) in [
            (Some(7), 40, false),
            (Some(7), 3, false),
            (None, 2, false),
            (None, 9, true),
        ] {
            inc.add(1, "ana", &dims(at, bot), n);
            if !bot {
                inc.add_person(1, at, person, n);
            }
        }
        assert_eq!(inc.people.len(), 1, "one person, however many visits");
        assert_eq!(inc.unnamed(1), 2);
        let (_, body) = inc.staged().unwrap().pop().unwrap();
        let mut folded = Increments::new(0);
        folded.add_staged(&body).unwrap();
        assert_eq!((folded.unnamed(1), folded.visits()), (2, 54));
        let before = format!(
            r#"[[1,{},false,"ana",5,5,{{}}],[1,{},true,"ana",4,4,{{}}]]"#,
            at / HOUR_MS * HOUR_MS,
            at / HOUR_MS * HOUR_MS
        );
        let mut old = Increments::new(0);
        old.add_staged(&before).unwrap();
        assert_eq!((old.unnamed(1), old.visits()), (5, 9));
        assert!(Increments::new(0).add_staged("[[1]]").is_err());
    }
}

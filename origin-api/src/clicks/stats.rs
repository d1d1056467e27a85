//! What the stats API answers: a link's time series and top dimensions, and an owner's
//! summary, read from the hourly rollups.

use crate::error::AppError;
use crate::model::time::{parse_rfc3339, rfc3339};
use crate::model::{Creator, Link};
use crate::store::{ClickStore, Rollup, Totals};
use crate::views::stats::{
    Granularity, LinkStats, LinkTotals, OwnerStats, Point, Ranked, StatsParams, Top, TotalsView,
    VisitLimit,
};
use std::collections::BTreeMap;

const HOUR_MS: i64 = 3_600_000;
const DAY_MS: i64 = 24 * HOUR_MS;
/// The range asked for when none is given.
pub const DEFAULT_RANGE_MS: i64 = 7 * DAY_MS;
/// Buckets one answer may hold: 31 days by the hour, or about 3 years by the day.
pub const MAX_BUCKETS: i64 = 31 * 24;
pub const MAX_DAY_BUCKETS: i64 = 1_100;
/// Values listed per dimension unless asked otherwise, and at most.
pub const DEFAULT_TOP: u32 = 10;
pub const MAX_TOP: u32 = 100;

impl Granularity {
    fn bucket_ms(self) -> i64 {
        match self {
            Granularity::Hour => HOUR_MS,
            Granularity::Day => DAY_MS,
        }
    }
}

/// A validated range: `[from, to)`, both on bucket boundaries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Range {
    pub from: i64,
    pub to: i64,
    pub granularity: Granularity,
    pub include_bots: bool,
    pub top: u32,
}

impl Range {
    pub fn new(params: &StatsParams, now: i64) -> Result<Range, AppError> {
        let granularity = params.granularity.unwrap_or_default();
        let bucket = granularity.bucket_ms();
        let time = |field: &'static str, raw: &Option<String>| {
            raw.as_deref()
                .map(|s| {
                    parse_rfc3339(s).ok_or_else(|| {
                        AppError::invalid(field, "use RFC 3339, e.g. 2026-11-01T00:00:00Z")
                    })
                })
                .transpose()
        };
        let to = time("to", &params.to)?.unwrap_or(now);
        let from = time("from", &params.from)?.unwrap_or(to.saturating_sub(DEFAULT_RANGE_MS));
        if from >= to {
            return Err(AppError::invalid("from", "must be before to"));
        }
        let from = from.div_euclid(bucket) * bucket;
        let to = to.saturating_add(bucket - 1).div_euclid(bucket) * bucket;
        let most = match granularity {
            Granularity::Hour => MAX_BUCKETS,
            Granularity::Day => MAX_DAY_BUCKETS,
        };
        if (to - from) / bucket > most {
            return Err(AppError::invalid(
                "from",
                format!(
                    "at most {most} {}s per request: narrow the range{}",
                    match granularity {
                        Granularity::Hour => "hour",
                        Granularity::Day => "day",
                    },
                    if granularity == Granularity::Hour {
                        " or ask for granularity=day"
                    } else {
                        ""
                    }
                ),
            ));
        }
        let top = params.top.unwrap_or(DEFAULT_TOP);
        if !(1..=MAX_TOP).contains(&top) {
            return Err(AppError::invalid("top", format!("1 to {MAX_TOP}")));
        }
        Ok(Range {
            from,
            to,
            granularity,
            include_bots: params.include_bots.unwrap_or(false),
            top,
        })
    }
}

/// People's counts, with bots added when asked.
fn view(people: (i64, i64), bots: (i64, i64), include_bots: bool) -> TotalsView {
    let (mut visits, mut redirects) = people;
    if include_bots {
        visits += bots.0;
        redirects += bots.1;
    }
    TotalsView {
        visits,
        redirects,
        bots: bots.0,
    }
}

fn totals_view(t: Totals, include_bots: bool) -> TotalsView {
    view(
        (t.visits, t.redirects),
        (t.bots, t.bot_redirects),
        include_bots,
    )
}

/// The stats of `link` over `range`, complete to `as_of` (Unix ms, [`super::lateness`]).
pub async fn link_stats<S: ClickStore + ?Sized>(
    store: &S,
    link: &Link,
    range: Range,
    as_of: i64,
) -> Result<LinkStats, AppError> {
    let bucket = range.granularity.bucket_ms();
    let rows = store
        .click_series(link.link_id, range.from, range.to, bucket)
        .await?;
    let series = fill(&rows, range, bucket);
    let mut totals = TotalsView::default();
    for p in &series {
        totals.visits += p.counts.visits;
        totals.redirects += p.counts.redirects;
        totals.bots += p.counts.bots;
    }
    let mut top = Top::default();
    for d in store
        .click_dims(
            link.link_id,
            range.from,
            range.to,
            range.include_bots,
            i64::from(range.top),
        )
        .await?
    {
        let list = match d.dim.as_str() {
            "country" => &mut top.countries,
            "referrer" => &mut top.referrers,
            "device" => &mut top.devices,
            "status" => &mut top.statuses,
            "variant" => &mut top.variants,
            "scanner" => &mut top.scanners,
            _ => continue,
        };
        // The store lists most visited first.
        if list.len() < range.top as usize {
            list.push(Ranked {
                value: Some(d.value).filter(|v| !v.is_empty()),
                visits: d.visits,
            });
        }
    }
    Ok(LinkStats {
        domain: link.domain.clone(),
        code: link.code.clone(),
        from: rfc3339(range.from),
        to: rfc3339(range.to),
        granularity: range.granularity,
        data_as_of: rfc3339(as_of),
        include_bots: range.include_bots,
        totals,
        series,
        top,
        visit_limit: match link.options.max_visits {
            Some(max_visits) => Some(VisitLimit {
                max_visits,
                counted: store.limit_count(link.link_id).await?,
            }),
            None => None,
        },
    })
}

/// Every bucket of `range`, with the rows' counts where there are any.
fn fill(rows: &[Rollup], range: Range, bucket: i64) -> Vec<Point> {
    // Bucket start → ((people's visits, redirects), (bots' visits, redirects)).
    type Sides = ((i64, i64), (i64, i64));
    let mut by_start: BTreeMap<i64, Sides> = BTreeMap::new();
    for r in rows {
        let slot = by_start.entry(r.start).or_default();
        let side = if r.bot { &mut slot.1 } else { &mut slot.0 };
        side.0 += r.visits;
        side.1 += r.redirects;
    }
    let mut points = Vec::new();
    let mut start = range.from;
    while start < range.to {
        let (people, bots) = by_start.get(&start).copied().unwrap_or_default();
        points.push(Point {
            start: rfc3339(start),
            counts: view(people, bots, range.include_bots),
        });
        start += bucket;
    }
    points
}

/// An owner's totals and most visited links over `range`, complete to `as_of`.
pub async fn owner_stats<S: ClickStore + ?Sized>(
    store: &S,
    caller: &Creator<'_>,
    range: Range,
    as_of: i64,
) -> Result<OwnerStats, AppError> {
    let (owner, domains) = (caller.owner, caller.domains.unwrap_or_default());
    let totals = store
        .owner_totals(owner, domains, range.from, range.to)
        .await?;
    let top = store
        .owner_top_links(
            owner,
            domains,
            range.from,
            range.to,
            range.include_bots,
            i64::from(range.top),
        )
        .await?;
    let ids: Vec<u64> = top.iter().map(|(id, _)| *id).collect();
    let refs = store.link_refs_by_id(&ids).await?;
    let top_links = top
        .into_iter()
        .filter_map(|(id, t)| {
            let link = refs.iter().find(|r| r.link_id == id)?;
            Some(LinkTotals {
                domain: link.domain.clone(),
                code: link.code.clone(),
                counts: totals_view(t, range.include_bots),
            })
        })
        .collect();
    Ok(OwnerStats {
        from: rfc3339(range.from),
        to: rfc3339(range.to),
        data_as_of: rfc3339(as_of),
        include_bots: range.include_bots,
        totals: totals_view(totals, range.include_bots),
        top_links,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: i64 = 1_780_000_000_000; // some instant, not on an hour

    fn params(from: Option<&str>, to: Option<&str>, g: Option<Granularity>) -> StatsParams {
        StatsParams {
            from: from.map(str::to_owned),
            to: to.map(str::to_owned),
            granularity: g,
            ..StatsParams::default()
        }
    }

    #[test]
    fn ranges_snap_to_whole_buckets_and_default_to_a_week() {
        let r = Range::new(&StatsParams::default(), T).unwrap();
        assert_eq!(r.from % HOUR_MS, 0);
        assert_eq!(r.to % HOUR_MS, 0);
        assert!(
            r.to > T && r.to - T < HOUR_MS,
            "the current hour is included"
        );
        assert_eq!((r.to - r.from) / HOUR_MS, 7 * 24 + 1);
        let d = Range::new(
            &params(
                Some("2026-11-01T10:30:00Z"),
                Some("2026-11-03T00:00:00Z"),
                Some(Granularity::Day),
            ),
            T,
        )
        .unwrap();
        assert_eq!(rfc3339(d.from), "2026-11-01T00:00:00Z");
        assert_eq!(rfc3339(d.to), "2026-11-03T00:00:00Z");
    }

    #[test]
    fn bad_ranges_are_refused_with_the_field() {
        let err = |p: StatsParams| Range::new(&p, T).unwrap_err().to_string();
        assert!(err(params(Some("yesterday"), None, None)).starts_with("from:"));
        assert!(err(params(
            Some("2026-11-02T00:00:00Z"),
            Some("2026-11-01T00:00:00Z"),
            None
        ))
        .contains("before"));
        assert!(err(params(
            Some("2026-01-01T00:00:00Z"),
            Some("2026-11-01T00:00:00Z"),
            None
        ))
        .contains("granularity=day"));
        assert!(Range::new(
            &params(
                Some("2026-01-01T00:00:00Z"),
                Some("2026-11-01T00:00:00Z"),
                Some(Granularity::Day)
            ),
            T
        )
        .is_ok());
        let top = StatsParams {
            top: Some(0),
            ..StatsParams::default()
        };
        assert!(err(top).starts_with("top:"));
    }

    #[test]
    fn series_has_every_bucket_and_bots_apart() {
        let range = Range {
            from: 0,
            to: 3 * HOUR_MS,
            granularity: Granularity::Hour,
            include_bots: false,
            top: 10,
        };
        let rows = [
            Rollup {
                start: HOUR_MS,
                bot: false,
                visits: 5,
                redirects: 4,
            },
            Rollup {
                start: HOUR_MS,
                bot: true,
                visits: 2,
                redirects: 2,
            },
        ];
        let points = fill(&rows, range, HOUR_MS);
        let counts: Vec<_> = points
            .iter()
            .map(|p| (p.counts.visits, p.counts.redirects, p.counts.bots))
            .collect();
        assert_eq!(counts, [(0, 0, 0), (5, 4, 2), (0, 0, 0)]);
        let with_bots = fill(
            &rows,
            Range {
                include_bots: true,
                ..range
            },
            HOUR_MS,
        );
        assert_eq!(
            (with_bots[1].counts.visits, with_bots[1].counts.bots),
            (7, 2)
        );
    }
}

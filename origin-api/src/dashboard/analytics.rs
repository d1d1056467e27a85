//! A link's analytics page and its CSV: the stats API's numbers (`clicks::stats`), for
//! a range chosen by preset or by dates, people by default and bots apart.

use super::chart::{BarChart, Bucket};
use super::link_form::link_path;
use super::link_tools::readable;
use super::page_error::failed;
use super::render::{choices, download, render, utc, Choice, Nav};
use super::session::Signed;
use crate::clicks::stats::Range;
use crate::clicks::ClickService;
use crate::error::AppError;
use crate::links::Links;
use crate::model::time::{now_ms, parse_rfc3339, rfc3339};
use crate::model::Link;
use crate::views::stats::{Granularity, LinkStats, Ranked, StatsParams};
use askama::Template;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use std::sync::Arc;

const HOUR_MS: i64 = 3_600_000;
const DAY_MS: i64 = 24 * HOUR_MS;
/// Data older than this behind now is said to be late on the page.
const LATE_MS: i64 = 5 * 60_000;

/// The ranges offered, and their spans.
const PRESETS: [(&str, &str, i64); 4] = [
    ("24h", "Last 24 hours", DAY_MS),
    ("7d", "Last 7 days", 7 * DAY_MS),
    ("30d", "Last 30 days", 30 * DAY_MS),
    ("90d", "Last 90 days", 90 * DAY_MS),
];

/// The form above the chart, as the query string carries it.
#[derive(Debug, Default, Deserialize)]
pub(super) struct StatsQuery {
    /// A preset (`24h`, `7d`, `30d`, `90d`) or `custom`, for `from` and `to`.
    #[serde(default)]
    range: String,
    /// `YYYY-MM-DD`, UTC, the first day shown.
    #[serde(default)]
    from: String,
    /// `YYYY-MM-DD`, UTC, the last day shown.
    #[serde(default)]
    to: String,
    /// `hour`, `day`, or empty: hours up to 7 days, days beyond.
    #[serde(default)]
    granularity: String,
    /// Present when bots are counted in with people.
    #[serde(default)]
    bots: String,
}

/// What the query asks for, as the stats API takes it; or what is wrong with it.
fn params(q: &StatsQuery, now: i64) -> Result<StatsParams, AppError> {
    let day = |field: &'static str, s: &str| {
        parse_rfc3339(&format!("{}T00:00:00Z", s.trim()))
            .ok_or_else(|| AppError::invalid(field, "a date, as 2026-11-30"))
    };
    let (from, to) = if q.range == "custom" {
        // The last day is shown whole.
        let (from, to) = (day("from", &q.from)?, day("to", &q.to)? + DAY_MS);
        if from >= to {
            return Err(AppError::invalid(
                "from",
                "must be on or before the last day",
            ));
        }
        (from, to)
    } else {
        let span = PRESETS
            .iter()
            .find(|(key, _, _)| *key == q.range)
            .map_or(7 * DAY_MS, |(_, _, span)| *span);
        (now - span, now)
    };
    let granularity = match q.granularity.as_str() {
        "hour" => Granularity::Hour,
        "day" => Granularity::Day,
        _ if to - from <= 7 * DAY_MS => Granularity::Hour,
        _ => Granularity::Day,
    };
    Ok(StatsParams {
        from: Some(rfc3339(from)),
        to: Some(rfc3339(to)),
        granularity: Some(granularity),
        include_bots: Some(!q.bots.is_empty()),
        top: None,
    })
}

#[derive(Template)]
#[template(path = "dashboard/analytics.html")]
struct AnalyticsPage {
    nav: Option<Nav>,
    short_url: String,
    link_path: String,
    presets: Vec<Choice>,
    from: String,
    to: String,
    granularities: Vec<Choice>,
    bots: bool,
    error: Option<String>,
    stats: Option<Shown>,
    /// What the shortener the link was imported from had counted, said apart.
    imported: Option<String>,
}

/// What the source of an imported link had counted before the move: never added to
/// Hop's numbers (each shortener counts bots its own way; D-251).
fn imported_note(link: &Link) -> Option<String> {
    let i = link.options.imported.as_ref()?;
    Some(match i.clicks {
        Some(clicks) => format!(
            "Imported from {}, which had counted {clicks} visits before the move: they are not in the numbers here (each shortener counts bots its own way).",
            i.from
        ),
        None => format!("Imported from {}, which said nothing of its visits.", i.from),
    })
}

/// The numbers, when the range could be read.
struct Shown {
    people: i64,
    redirects: i64,
    bots: i64,
    chart: BarChart,
    buckets: Vec<Bucket>,
    granularity: &'static str,
    as_of: String,
    late: bool,
    csv: String,
    tops: Vec<TopList>,
}

struct TopList {
    heading: &'static str,
    rows: Vec<(String, i64)>,
}

/// `GET /o/{owner}/links/{domain}/{code}/stats`: any member's view of a link's visits.
pub(super) async fn page(
    Signed(signed): Signed,
    State(links): State<Arc<Links>>,
    State(clicks): State<Arc<ClickService>>,
    Path((owner, domain, code)): Path<(String, String, String)>,
    Query(q): Query<StatsQuery>,
) -> Response {
    let link = match readable(&signed, &links, (&owner, &domain, &code)).await {
        Ok(link) => link,
        Err(refused) => return refused,
    };
    let now = now_ms();
    let mut page = AnalyticsPage {
        nav: Nav::of(&signed, Some(&owner)),
        short_url: links.short_url(&link),
        link_path: link_path(&owner, &link.domain, &link.code),
        presets: choices(
            &PRESETS
                .iter()
                .map(|(value, label, _)| (*value, *label))
                .chain([("custom", "Dates below")])
                .collect::<Vec<_>>(),
            if q.range.is_empty() { "7d" } else { &q.range },
        ),
        from: q.from.trim().to_owned(),
        to: q.to.trim().to_owned(),
        granularities: choices(
            &[("", "Automatic"), ("hour", "Hours"), ("day", "Days")],
            &q.granularity,
        ),
        bots: !q.bots.is_empty(),
        error: None,
        stats: None,
        imported: imported_note(&link),
    };
    match stats_of(&clicks, &link, &q, now).await {
        Ok(stats) => {
            page.stats = Some(shown(&stats, &page, &q, now));
            render(StatusCode::OK, &page)
        }
        Err(AppError::Invalid { field, detail }) => {
            page.error = Some(format!("{}: {detail}", field_label(field)));
            render(StatusCode::UNPROCESSABLE_ENTITY, &page)
        }
        Err(e) => failed(e),
    }
}

/// `GET /o/{owner}/links/{domain}/{code}/stats.csv`: the series of the same query, one
/// row per bucket.
pub(super) async fn csv(
    Signed(signed): Signed,
    State(links): State<Arc<Links>>,
    State(clicks): State<Arc<ClickService>>,
    Path((owner, domain, code)): Path<(String, String, String)>,
    Query(q): Query<StatsQuery>,
) -> Response {
    let link = match readable(&signed, &links, (&owner, &domain, &code)).await {
        Ok(link) => link,
        Err(refused) => return refused,
    };
    let stats = match stats_of(&clicks, &link, &q, now_ms()).await {
        Ok(stats) => stats,
        Err(e @ AppError::Invalid { .. }) => {
            return (StatusCode::UNPROCESSABLE_ENTITY, e.to_string()).into_response()
        }
        Err(e) => return failed(e),
    };
    let mut body = String::from("start,visits,redirects,bots\n");
    for p in &stats.series {
        // Times and counts only: nothing a spreadsheet could take for a formula.
        body.push_str(&format!(
            "{},{},{},{}\n",
            p.start, p.counts.visits, p.counts.redirects, p.counts.bots
        ));
    }
    download(
        "text/csv; charset=utf-8",
        &format!("{}-{}-visits.csv", link.domain, link.code),
        body,
    )
}

async fn stats_of(
    clicks: &ClickService,
    link: &Link,
    q: &StatsQuery,
    now: i64,
) -> Result<LinkStats, AppError> {
    let range = Range::new(&params(q, now)?, now)?;
    let as_of = clicks.data_as_of().await?;
    clicks.link_stats(link, range, as_of).await
}

/// A field of the query as the form names it.
fn field_label(field: &str) -> &'static str {
    match field {
        "from" => "First day",
        "to" => "Last day",
        _ => "Range",
    }
}

fn shown(stats: &LinkStats, page: &AnalyticsPage, q: &StatsQuery, now: i64) -> Shown {
    let hourly = stats.granularity == Granularity::Hour;
    let buckets: Vec<Bucket> = stats
        .series
        .iter()
        .map(|p| {
            // "2026-12-06T08:00:00Z": "12-06 08:00" by the hour, "12-06" by the day.
            let label = if hourly {
                p.start.get(5..16).unwrap_or_default().replace('T', " ")
            } else {
                p.start.get(5..10).unwrap_or_default().to_owned()
            };
            let people = if stats.include_bots {
                p.counts.visits - p.counts.bots
            } else {
                p.counts.visits
            };
            Bucket {
                label,
                people,
                bots: p.counts.bots,
            }
        })
        .collect();
    let as_of = parse_rfc3339(&stats.data_as_of).unwrap_or(now);
    let people = if stats.include_bots {
        stats.totals.visits - stats.totals.bots
    } else {
        stats.totals.visits
    };
    let top = &stats.top;
    let tops = [
        ("Countries", &top.countries),
        ("Referrers", &top.referrers),
        ("Devices", &top.devices),
        ("Answers", &top.statuses),
        ("Split variants", &top.variants),
        ("Scanners (among bots)", &top.scanners),
    ]
    .into_iter()
    .filter(|(_, list)| !list.is_empty())
    .map(|(heading, list)| TopList {
        heading,
        rows: list.iter().map(ranked_row).collect(),
    })
    .collect();
    Shown {
        people,
        redirects: stats.totals.redirects,
        bots: stats.totals.bots,
        chart: BarChart::of(&buckets, stats.include_bots),
        buckets,
        granularity: if hourly { "hour" } else { "day" },
        as_of: utc(as_of),
        late: now - as_of > LATE_MS,
        csv: format!("{}/stats.csv?{}", page.link_path, query_string(q)),
        tops,
    }
}

fn ranked_row(r: &Ranked) -> (String, i64) {
    (
        r.value
            .clone()
            .unwrap_or_else(|| "(unknown or none)".into()),
        r.visits,
    )
}

/// The query again, for the CSV link.
fn query_string(q: &StatsQuery) -> String {
    url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs([
            ("range", q.range.as_str()),
            ("from", q.from.as_str()),
            ("to", q.to.as_str()),
            ("granularity", q.granularity.as_str()),
            ("bots", q.bots.as_str()),
        ])
        .finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_780_000_000_000;

    fn query(range: &str, from: &str, to: &str, granularity: &str) -> StatsQuery {
        StatsQuery {
            range: range.into(),
            from: from.into(),
            to: to.into(),
            granularity: granularity.into(),
            bots: String::new(),
        }
    }

    #[test]
    fn presets_pick_hours_up_to_a_week_and_days_beyond() {
        let week = params(&query("", "", "", ""), NOW).expect("default");
        assert_eq!(week.granularity, Some(Granularity::Hour));
        assert_eq!(week.from, Some(rfc3339(NOW - 7 * DAY_MS)));
        let quarter = params(&query("90d", "", "", ""), NOW).expect("90 days");
        assert_eq!(quarter.granularity, Some(Granularity::Day));
        assert_eq!(quarter.include_bots, Some(false));
    }

    #[test]
    fn custom_dates_include_the_last_day_and_bad_ones_say_which() {
        let p = params(&query("custom", "2026-11-01", "2026-11-30", ""), NOW).expect("dates");
        assert_eq!(p.from.as_deref(), Some("2026-11-01T00:00:00Z"));
        assert_eq!(p.to.as_deref(), Some("2026-12-01T00:00:00Z"));
        assert_eq!(p.granularity, Some(Granularity::Day));
        let one_day =
            params(&query("custom", "2026-11-01", "2026-11-01", ""), NOW).expect("a single day");
        assert_eq!(one_day.granularity, Some(Granularity::Hour));
        for (from, to, field) in [
            ("yesterday", "2026-11-30", "from"),
            ("2026-11-01", "2026-13-01", "to"),
            ("2026-11-30", "2026-11-01", "from"),
        ] {
            match params(&query("custom", from, to, ""), NOW) {
                Err(AppError::Invalid { field: f, .. }) => assert_eq!(f, field, "{from}..{to}"),
                other => panic!("{from}..{to}: {other:?}"),
            }
        }
    }
}

//! An owner's overview: people's visits today and over 7 days against the period before,
//! the most visited links, the newest, and what needs attention (links expiring soon,
//! at their visit limit or banned; domains disabled).

use super::page_error::{failed, not_found_for};
use super::render::{render, utc, Nav};
use super::session::Signed;
use crate::accounts::SignedIn;
use crate::clicks::stats::Range;
use crate::clicks::ClickService;
use crate::error::AppError;
use crate::links::Links;
use crate::model::time::{now_ms, rfc3339};
use crate::model::{Condition, Creator, DomainStatus, Link, ListFilter, Role};
use crate::views::stats::{Granularity, OwnerStats, StatsParams};
use askama::Template;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use std::sync::Arc;

const DAY_MS: i64 = 86_400_000;
/// Rows each list of the page shows; each links to the whole list.
const SHOWN: u32 = 5;

#[derive(Template)]
#[template(path = "dashboard/overview.html")]
struct OverviewPage {
    nav: Option<Nav>,
    owner: String,
    today: Compared,
    week: Compared,
    as_of: String,
    top: Vec<Listed>,
    recent: Vec<Listed>,
    attention: Vec<Attention>,
    disabled_domains: Vec<String>,
    may_edit: bool,
}

/// A count beside the same count over the period before.
struct Compared {
    now: i64,
    before: i64,
    /// "+25%", "−10%", "new", "no change".
    change: String,
    /// `up`, `down` or `same`: the change's class.
    trend: &'static str,
}

impl Compared {
    fn of(now: i64, before: i64) -> Compared {
        let (change, trend) = match (now, before) {
            (n, b) if n == b => ("no change".to_owned(), "same"),
            (_, 0) => ("new".to_owned(), "up"),
            (n, b) => {
                // Rounded to whole percents, half away from zero.
                let pct = ((n - b) as f64 / b as f64 * 100.0).round() as i64;
                if pct >= 0 {
                    (format!("+{pct}%"), "up")
                } else {
                    (format!("−{}%", -pct), "down")
                }
            }
        };
        Compared {
            now,
            before,
            change,
            trend,
        }
    }
}

/// A link in a list of the page.
struct Listed {
    route: String,
    path: String,
    /// Visits by people, or when it was created, or when it expires.
    said: String,
}

/// Links in one condition that needs someone to look.
struct Attention {
    heading: &'static str,
    /// The links list, filtered to all of them.
    all: String,
    links: Vec<Listed>,
}

/// `GET /o/{owner}`: any member's overview of the owner.
pub(super) async fn page(
    Signed(signed): Signed,
    State(links): State<Arc<Links>>,
    State(clicks): State<Arc<ClickService>>,
    Path(owner): Path<String>,
) -> Response {
    if signed.allows(&owner, Role::Viewer) != Some(true) {
        return not_found_for(&signed);
    }
    match build(&links, &clicks, &signed, &owner).await {
        Ok((today, week, as_of, top, lists, disabled_domains)) => {
            let base = format!("/o/{}/links", super::pages::path_segment(&owner));
            let listed = |l: &Link, said: String| Listed {
                route: format!("{}/{}", l.domain, l.code),
                path: super::link_form::link_path(&owner, &l.domain, &l.code),
                said,
            };
            let [recent, expiring, exhausted, banned] = lists;
            let attention = [
                ("Expiring within 7 days", "expiring", expiring),
                ("At their visit limit", "exhausted", exhausted),
                ("Banned", "banned", banned),
            ]
            .into_iter()
            .filter(|(_, _, found)| !found.is_empty())
            .map(|(heading, condition, found)| Attention {
                heading,
                all: format!("{base}?condition={condition}"),
                links: found
                    .iter()
                    .map(|l| {
                        let said = l
                            .expires_at
                            .map(|at| format!("expires {}", utc(at)))
                            .unwrap_or_default();
                        listed(l, said)
                    })
                    .collect(),
            })
            .collect();
            let page = OverviewPage {
                nav: Nav::of(&signed, Some(&owner)),
                today,
                week,
                as_of,
                top: top
                    .top_links
                    .iter()
                    .map(|t| Listed {
                        route: format!("{}/{}", t.domain, t.code),
                        path: format!(
                            "{}/stats",
                            super::link_form::link_path(&owner, &t.domain, &t.code)
                        ),
                        said: format!("{} by people", t.counts.visits),
                    })
                    .collect(),
                recent: recent
                    .iter()
                    .map(|l| listed(l, format!("created {}", utc(l.created_at))))
                    .collect(),
                attention,
                disabled_domains,
                may_edit: signed.allows(&owner, Role::Editor) == Some(true),
                owner,
            };
            render(StatusCode::OK, &page)
        }
        Err(e) => failed(e),
    }
}

type Built = (
    Compared,
    Compared,
    String,
    OwnerStats,
    [Vec<Link>; 4],
    Vec<String>,
);

async fn build(
    links: &Links,
    clicks: &ClickService,
    signed: &SignedIn,
    owner: &str,
) -> Result<Built, AppError> {
    let now = now_ms();
    let today = now.div_euclid(DAY_MS) * DAY_MS;
    let creator = Creator {
        owner,
        admin: false,
        domains: None,
        actor: crate::model::history::Actor::System,
    };
    let as_of = clicks.data_as_of().await?;
    let people = |from: i64, to: i64, top: u32| {
        let params = StatsParams {
            from: Some(rfc3339(from)),
            to: Some(rfc3339(to)),
            granularity: Some(Granularity::Hour),
            include_bots: Some(false),
            top: Some(top),
        };
        let creator = &creator;
        async move {
            let range = Range::new(&params, now)?;
            clicks.owner_stats(creator, range, as_of).await
        }
    };
    // Today so far against yesterday up to the same hour; the last 7 days against the
    // 7 before.
    let (today_now, today_before, week_now, week_before) = tokio::try_join!(
        people(today, now, 1),
        people(today - DAY_MS, now - DAY_MS, 1),
        people(now - 7 * DAY_MS, now, SHOWN),
        people(now - 14 * DAY_MS, now - 7 * DAY_MS, 1),
    )?;
    let list = |condition: Option<Condition>| ListFilter {
        owner_id: owner.to_owned(),
        domains: Vec::new(),
        tag: None,
        status: None,
        search: None,
        condition,
        access: None,
        feature: None,
        created_from: None,
        created_to: None,
        now,
        after: None,
        limit: SHOWN,
    };
    let filters = [
        list(None),
        list(Some(Condition::Expiring)),
        list(Some(Condition::Exhausted)),
        list(Some(Condition::Banned)),
    ];
    // "Banned" asks every link against the active bans (D-245): with none, nothing to ask.
    let any_ban = !links.denylist().await?.is_empty();
    let banned = async {
        if any_ban {
            links.list(&filters[3]).await
        } else {
            Ok(Vec::new())
        }
    };
    let (recent, expiring, exhausted, banned) = tokio::try_join!(
        links.list(&filters[0]),
        links.list(&filters[1]),
        links.list(&filters[2]),
        banned,
    )?;
    let shown = |mut found: Vec<Link>| {
        found.truncate(SHOWN as usize);
        found
    };
    let disabled = links
        .usable_domains(&signed.principal(Some(owner)), owner)
        .await?
        .into_iter()
        .filter(|d| d.settings.status == DomainStatus::Disabled)
        .map(|d| d.domain)
        .collect();
    Ok((
        Compared::of(today_now.totals.visits, today_before.totals.visits),
        Compared::of(week_now.totals.visits, week_before.totals.visits),
        utc(as_of),
        week_now,
        [
            shown(recent),
            shown(expiring),
            shown(exhausted),
            shown(banned),
        ],
        disabled,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_are_said_in_whole_percents_or_words() {
        let said = |n, b| Compared::of(n, b).change;
        assert_eq!(said(5, 4), "+25%");
        assert_eq!(said(9, 10), "−10%");
        assert_eq!(said(3, 0), "new");
        assert_eq!(said(0, 0), "no change");
        assert_eq!(said(0, 7), "−100%");
        assert_eq!(Compared::of(1, 3).trend, "down");
    }
}

//! The decision's tests, by theme; the helpers they share are here, with the tests of
//! the answers themselves (their headers, outcomes and cache header).

use super::*;
use crate::denylist::DenylistSnapshot;
use crate::domain::DEFAULT_MAX_AGE_S;
use crate::password::Tried;
use crate::record::RedirectStatus;
use crate::split::Split;

mod domains;
mod links;
mod pages;
mod private;
mod properties;
mod targeting;

/// A client over its lookups is told 429 and when to come back, never 404.
#[test]
fn a_client_over_its_lookups_is_told_to_come_back() {
    let d = Decision::too_many_lookups(Method::Get, 60);
    assert_eq!(d.status, 429);
    assert_eq!(d.header("retry-after"), Some("60"));
}

/// Headers are held inline: a decision with more than their room would lose one.
#[test]
fn every_kind_of_decision_fits_its_headers() {
    let route = route();
    let expected: [(Decision, &[&str]); 9] = [
        (
            Decision::not_found(Method::Get),
            &["cache-control", "content-type"],
        ),
        (
            Decision::unavailable(Method::Get, 5),
            &["cache-control", "content-type", "retry-after"],
        ),
        (
            Decision::too_many_lookups(Method::Get, 60),
            &["cache-control", "content-type", "retry-after"],
        ),
        (
            Decision::method_not_allowed(),
            &["cache-control", "content-type", "allow"],
        ),
        (
            Decision::banned(Method::Get),
            &["cache-control", "content-type"],
        ),
        (
            run(
                Some(&active("https://e.example/")),
                Method::Get,
                None,
                &Denylist::default(),
            ),
            &["location", "cache-control"],
        ),
        (
            Decision::password_tried(&route, None, Tried::Wrong),
            &["cache-control", "content-type", "content-security-policy"],
        ),
        (
            Decision::password_tried(&route, None, Tried::Limited(9)),
            &[
                "cache-control",
                "content-type",
                "content-security-policy",
                "retry-after",
            ],
        ),
        (
            Decision::password_tried(&route, None, Tried::Right("c".into())),
            &["location", "cache-control", "set-cookie"],
        ),
    ];
    for (decision, names) in expected {
        let held: Vec<&str> = decision.headers.iter().map(|(n, _)| n).collect();
        assert_eq!(held, names, "{decision:?}");
        assert!(decision.headers.len() <= Headers::ROOM);
    }
}

/// Metrics count outcomes in an array indexed by the discriminant.
#[test]
fn every_outcome_is_listed_once_in_its_place_with_its_own_name() {
    let mut names = std::collections::HashSet::new();
    for (i, outcome) in Outcome::ALL.iter().enumerate() {
        assert_eq!(*outcome as usize, i, "{outcome:?}");
        assert!(names.insert(outcome.name()), "{outcome:?}");
    }
}

#[test]
fn the_default_cache_header_is_the_one_its_age_gives() {
    assert_eq!(
        private_max_age(i64::from(DEFAULT_MAX_AGE_S)),
        format!("private, max-age={DEFAULT_MAX_AGE_S}")
    );
    assert_eq!(private_max_age(7), "private, max-age=7");
}

const NOW: i64 = 1_800_000_000;

fn route() -> RouteKey {
    RouteKey::new("s.example", "7Fk3aQx").unwrap()
}

fn active(target: &str) -> EdgeRecord {
    EdgeRecord {
        target: target.into(),
        status: EdgeStatus::Active,
        redirect: RedirectStatus::Found,
        expires_at: None,
        version: 1,
        forward_query: false,
        ..EdgeRecord::default()
    }
}

fn visit<'a>(route: &'a RouteKey, method: Method, query: Option<&'a str>) -> Visit<'a> {
    Visit {
        method,
        route,
        query,
        now_ms: NOW * 1000,
        client: Client::default(),
        draw: 0,
        access_granted: false,
        legacy_known: false,
    }
}

fn run(
    record: Option<&EdgeRecord>,
    method: Method,
    query: Option<&str>,
    deny: &Denylist,
) -> Decision {
    run_on(record, method, query, deny, &DomainSettings::default())
}

/// [`run`] on a domain with `settings`.
fn run_on(
    record: Option<&EdgeRecord>,
    method: Method,
    query: Option<&str>,
    deny: &Denylist,
    settings: &DomainSettings,
) -> Decision {
    run_legacy(record, method, query, deny, settings, false)
}

/// [`run_on`] for a code that is (or is not) on its domain's list of codes that lived
/// at the shortener it moved from.
fn run_legacy(
    record: Option<&EdgeRecord>,
    method: Method,
    query: Option<&str>,
    deny: &Denylist,
    settings: &DomainSettings,
    legacy_known: bool,
) -> Decision {
    let route = route();
    let visit = Visit {
        legacy_known,
        ..visit(&route, method, query)
    };
    let decided = decide(&visit, record, deny, settings);
    // Every row of the table holds for a record parsed ahead of time too.
    let prepared = record.cloned().map(PreparedRecord::new);
    assert_eq!(
        decide_prepared(&visit, prepared.as_ref(), deny, settings),
        decided
    );
    decided
}

fn with_pages() -> DomainSettings {
    DomainSettings {
        not_found_url: Some("https://www.acme.example/missing".into()),
        root_url: Some("https://www.acme.example/".into()),
        expired_url: Some("https://www.acme.example/ended".into()),
        ..DomainSettings::default()
    }
}

fn deny(codes: &[&str], hosts: &[&str]) -> Denylist {
    Denylist::from(DenylistSnapshot {
        v: 1,
        codes: codes.iter().map(|s| s.to_string()).collect(),
        hosts: hosts.iter().map(|s| s.to_string()).collect(),
    })
}

const IPHONE: &str = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1";
const DESKTOP: &str = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Safari/537.36";
const SLACKBOT: &str = "Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)";

fn rule(when: &str, target: &str) -> Rule {
    Rule {
        when: serde_json::from_str(when).unwrap(),
        target_url: target.into(),
    }
}

/// A link with rules for iOS, German speakers and `?ref=tv`, in that order.
fn targeted() -> EdgeRecord {
    EdgeRecord {
        rules: vec![
            rule(r#"{"device":["ios"]}"#, "https://apps.example/ios"),
            rule(r#"{"language":["de"]}"#, "https://shop.example/de"),
            rule(
                r#"{"query":[{"name":"ref","equals":"tv"}]}"#,
                "https://shop.example/tv",
            ),
        ],
        ..active("https://shop.example/")
    }
}

/// Decides `record` for a visit with `client`, `query` and `draw`, both ways (the
/// stored and the prepared record must agree).
fn run_as(
    record: &EdgeRecord,
    client: Client<'_>,
    query: Option<&str>,
    draw: u32,
    deny: &Denylist,
) -> Decision {
    let route = route();
    let visit = Visit {
        client,
        draw,
        ..visit(&route, Method::Get, query)
    };
    let settings = DomainSettings::default();
    let decided = decide(&visit, Some(record), deny, &settings);
    let prepared = PreparedRecord::new(record.clone());
    assert_eq!(prepared.to_record(), *record);
    assert_eq!(
        decide_prepared(&visit, Some(&prepared), deny, &settings),
        decided
    );
    decided
}

fn ua(user_agent: &str) -> Client<'_> {
    Client {
        user_agent,
        ..Client::default()
    }
}

fn split(weights: &[u32]) -> Split {
    Split::try_from(
        weights
            .iter()
            .enumerate()
            .map(|(i, w)| crate::split::Variant {
                target_url: format!("https://v{i}.example/"),
                weight: *w,
            })
            .collect::<Vec<_>>(),
    )
    .unwrap()
}

fn private(target: &str) -> EdgeRecord {
    EdgeRecord {
        access: Some(Access::Signed { key: "k".into() }),
        forward_query: true,
        preview: Some(Preview {
            title: Some("Secret".into()),
            ..Preview::default()
        }),
        interstitial: false,
        ..active(target)
    }
}

/// Decides `record` for a `GET` with `query`, as `client`, the access as given.
fn run_private(
    record: &EdgeRecord,
    query: Option<&str>,
    client: Client<'_>,
    granted: bool,
) -> Decision {
    let route = route();
    let visit = Visit {
        client,
        access_granted: granted,
        legacy_known: false,
        ..visit(&route, Method::Get, query)
    };
    let settings = DomainSettings::default();
    let decided = decide(&visit, Some(record), &Denylist::default(), &settings);
    let prepared = PreparedRecord::new(record.clone());
    assert_eq!(
        decide_prepared(&visit, Some(&prepared), &Denylist::default(), &settings),
        decided
    );
    decided
}

fn password_link(target: &str) -> EdgeRecord {
    EdgeRecord {
        access: Some(Access::Password {
            salt: "00".into(),
            hash: "00".into(),
            iterations: 1,
            key: "00".into(),
        }),
        ..private(target)
    }
}

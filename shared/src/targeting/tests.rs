//! The targeting rules' tests: normalization, matching, and what rules read.

use super::*;
use proptest::prelude::*;

const IPHONE: &str = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1";
const PIXEL: &str = "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0 Mobile Safari/537.36";
const WINDOWS: &str = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0 Safari/537.36";
const MAC: &str = "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_4) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Safari/605.1.15";
const LINUX: &str = "Mozilla/5.0 (X11; Linux x86_64; rv:125.0) Gecko/20100101 Firefox/125.0";
const CHROMEBOOK: &str = "Mozilla/5.0 (X11; CrOS x86_64 15633.69.0) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/119.0 Safari/537.36";

fn rule(when: Conditions, target: &str) -> Rule {
    Rule {
        when,
        target_url: target.into(),
    }
}

fn devices(ua: &str) -> Vec<Device> {
    let bits = devices_of(ua);
    Device::ALL
        .into_iter()
        .filter(|d| bits & d.bit() != 0)
        .collect()
}

#[test]
fn each_user_agent_is_one_platform_and_one_class() {
    use Device::*;
    assert_eq!(devices(IPHONE), [Ios, Mobile]);
    assert_eq!(devices(PIXEL), [Android, Mobile]);
    assert_eq!(devices(WINDOWS), [Desktop, Windows]);
    assert_eq!(devices(MAC), [Desktop, Macos]);
    assert_eq!(devices(LINUX), [Desktop, Linux]);
    assert_eq!(devices(CHROMEBOOK), [Desktop, Chromeos]);
    assert_eq!(devices("curl/8.5"), []);
}

#[test]
fn the_first_choice_language_is_the_highest_q_and_the_first_on_a_tie() {
    assert_eq!(
        first_language("de-CH,de;q=0.9,en;q=0.8").as_deref(),
        Some("de-ch")
    );
    assert_eq!(first_language("en;q=0.5, fr;q=0.7").as_deref(), Some("fr"));
    assert_eq!(first_language("fr, en").as_deref(), Some("fr"));
    assert_eq!(first_language("*, de;q=0.1").as_deref(), Some("de"));
    assert_eq!(first_language("de;q=0, en;q=0.001").as_deref(), Some("en"));
    assert_eq!(first_language("de;q=2, en;q=1.5, x!;q=1"), None);
    assert_eq!(first_language(""), None);
    assert!(language_holds("de", "de-ch"));
    assert!(language_holds("de-ch", "de-ch"));
    assert!(!language_holds("de-ch", "de"));
    assert!(!language_holds("de", "den"));
}

#[test]
fn the_first_rule_that_holds_wins() {
    let rules = normalize_rules(vec![
        rule(
            Conditions {
                device: vec![Device::Ios],
                ..Conditions::default()
            },
            "https://apps.apple.example/",
        ),
        rule(
            Conditions {
                language: vec!["DE".into()],
                ..Conditions::default()
            },
            "https://de.example/",
        ),
        rule(
            Conditions {
                query: vec![QueryTest {
                    name: "ref".into(),
                    equals: Some("tv".into()),
                    present: None,
                }],
                ..Conditions::default()
            },
            "https://tv.example/",
        ),
        rule(
            Conditions {
                country: vec!["ch".into()],
                after: Some(1_000),
                before: Some(2_000),
                ..Conditions::default()
            },
            "https://ch-campaign.example/",
        ),
    ])
    .expect("valid");
    let winner = |req: Request<'_>| first_match(&rules, &Facts::of(&req));
    let base = Request {
        user_agent: WINDOWS,
        now_ms: 5_000,
        ..Request::default()
    };
    assert_eq!(winner(base), None);
    assert_eq!(
        winner(Request {
            user_agent: IPHONE,
            accept_language: "de",
            ..base
        }),
        Some(0)
    );
    assert_eq!(
        winner(Request {
            accept_language: "de-CH,de;q=0.9",
            ..base
        }),
        Some(1)
    );
    assert_eq!(
        winner(Request {
            accept_language: "en-US,de;q=0.9",
            ..base
        }),
        None
    );
    assert_eq!(
        winner(Request {
            query: Some("utm=x&ref=tv"),
            ..base
        }),
        Some(2)
    );
    assert_eq!(
        winner(Request {
            query: Some("ref=TV"),
            ..base
        }),
        None
    );
    assert_eq!(
        winner(Request {
            query: Some("ref=t%76"),
            ..base
        }),
        Some(2),
        "decoded"
    );
    assert_eq!(
        winner(Request {
            country: Some("CH"),
            ..base
        }),
        None,
        "after the window"
    );
    assert_eq!(
        winner(Request {
            country: Some("CH"),
            now_ms: 1_000,
            ..base
        }),
        Some(3)
    );
    assert_eq!(
        winner(Request {
            country: Some("CH"),
            now_ms: 2_000,
            ..base
        }),
        None
    );
}

#[test]
fn a_query_parameter_can_be_required_or_refused() {
    let test = |present| Conditions {
        query: vec![QueryTest {
            name: "preview".into(),
            equals: None,
            present: Some(present),
        }],
        ..Conditions::default()
    };
    let facts = |query| {
        Facts::of(&Request {
            query,
            ..Request::default()
        })
    };
    assert!(facts(Some("a=1&preview")).satisfy(&test(true)));
    assert!(!facts(Some("a=1")).satisfy(&test(true)));
    assert!(facts(Some("a=1")).satisfy(&test(false)));
    assert!(facts(None).satisfy(&test(false)));
    assert!(!facts(Some("preview=")).satisfy(&test(false)));
}

/// The worst a link may ask of a visit's query (20 rules of 50 tests) against a
/// hostile query of 10,000 pairs: the query is parsed once, and only its first
/// [`MAX_QUERY_PAIRS`] pairs are read.
#[test]
fn rules_parse_a_visit_s_query_once_and_read_a_bounded_part_of_it() {
    let tests: Vec<QueryTest> = (0..MAX_VALUES)
        .map(|i| QueryTest {
            name: format!("p{i}"),
            equals: Some("x".into()),
            present: None,
        })
        .collect();
    let rules: Vec<Rule> = (0..MAX_RULES)
        .map(|i| Rule {
            when: Conditions {
                query: tests.clone(),
                ..Conditions::default()
            },
            target_url: format!("https://e.example/{i}"),
        })
        .collect();
    let query: String = (0..10_000)
        .map(|i| format!("p{}=y", i % 60))
        .collect::<Vec<_>>()
        .join("&");
    QUERY_PARSES.with(|n| n.set(0));
    let facts = Facts::of(&Request {
        query: Some(&query),
        ..Request::default()
    });
    assert_eq!(first_match(&rules, &facts), None);
    assert_eq!(QUERY_PARSES.with(|n| n.get()), 1);

    // What the rules see is the first MAX_QUERY_PAIRS pairs, decoded, by name.
    let holds = |query: &str, name: &str, value: &str| {
        Facts::of(&Request {
            query: Some(query),
            ..Request::default()
        })
        .satisfy(&Conditions {
            query: vec![QueryTest {
                name: name.into(),
                equals: Some(value.into()),
                present: None,
            }],
            ..Conditions::default()
        })
    };
    assert!(holds("a=1&ref=t%76&a=2", "ref", "tv"));
    assert!(holds("a=1&ref=tv&a=2", "a", "2"), "any of a repeated name");
    let late = format!("{}&ref=tv", "z=0&".repeat(MAX_QUERY_PAIRS));
    assert!(!holds(&late, "ref", "tv"), "past the pairs read");
}

#[test]
fn bad_rules_are_refused_naming_the_rule_and_field() {
    let one = |when| normalize_rules(vec![rule(when, "https://e.example/")]);
    let field_of = |r: Result<Vec<Rule>, RuleError>| match r {
        Err(RuleError::Invalid { field, .. }) => field,
        other => panic!("{other:?}"),
    };
    assert_eq!(field_of(one(Conditions::default())), "when");
    assert_eq!(
        field_of(one(Conditions {
            language: vec!["deutsch!".into()],
            ..Conditions::default()
        })),
        "when.language"
    );
    assert_eq!(
        field_of(one(Conditions {
            country: vec!["DEU".into()],
            ..Conditions::default()
        })),
        "when.country"
    );
    assert_eq!(
        field_of(one(Conditions {
            query: vec![QueryTest {
                name: "a".into(),
                equals: Some("b".into()),
                present: Some(true),
            }],
            ..Conditions::default()
        })),
        "when.query"
    );
    assert_eq!(
        field_of(one(Conditions {
            after: Some(5),
            before: Some(5),
            ..Conditions::default()
        })),
        "when.before"
    );
    let many = vec![
        rule(
            Conditions {
                after: Some(0),
                ..Conditions::default()
            },
            "https://e.example/"
        );
        MAX_RULES + 1
    ];
    assert_eq!(
        normalize_rules(many),
        Err(RuleError::TooMany(MAX_RULES + 1))
    );
    // JSON with a field no rule has is refused, not ignored.
    assert!(serde_json::from_str::<Rule>(
        r#"{"when": {"devices": ["ios"]}, "target_url": "https://e.example/"}"#
    )
    .is_err());
}

fn conditions() -> impl Strategy<Value = Conditions> {
    (
        prop::collection::vec(prop::sample::select(Device::ALL.to_vec()), 0..3),
        prop::collection::vec(
            prop::sample::select(vec!["de", "en", "fr-ch", "pt-br"]),
            0..3,
        ),
        prop::collection::vec(prop::sample::select(vec!["DE", "CH", "US"]), 0..3),
        prop::collection::vec(
            (
                prop::sample::select(vec!["ref", "a"]),
                prop::option::of("[a-z]{0,3}"),
                any::<bool>(),
            ),
            0..2,
        ),
        prop::option::of(0i64..10),
        prop::option::of(10i64..20),
    )
        .prop_map(
            |(device, language, country, query, after, before)| Conditions {
                device,
                language: language.into_iter().map(String::from).collect(),
                country: country.into_iter().map(String::from).collect(),
                query: query
                    .into_iter()
                    .map(|(name, equals, present)| QueryTest {
                        name: name.into(),
                        present: equals.is_none().then_some(present),
                        equals,
                    })
                    .collect(),
                after,
                before,
            },
        )
}

fn requests() -> impl Strategy<Value = (String, String, Option<String>, Option<String>, i64)> {
    (
        prop::sample::select(vec![
            IPHONE, PIXEL, WINDOWS, MAC, LINUX, CHROMEBOOK, "", "curl/8",
        ]),
        prop::sample::select(vec![
            "de-CH,de;q=0.9",
            "en",
            "fr-CH;q=0.5, en;q=0.4",
            "",
            "*",
        ]),
        prop::option::of(prop::sample::select(vec!["DE", "CH", "US"])),
        prop::option::of(prop::sample::select(vec![
            "ref=tv", "a=b&ref", "ref=", "x=1",
        ])),
        0i64..25,
    )
        .prop_map(|(ua, lang, country, query, now)| {
            (
                ua.into(),
                lang.into(),
                country.map(String::from),
                query.map(String::from),
                now,
            )
        })
}

proptest! {
    /// Given the same request facts, the same rule wins, and it is the first whose
    /// conditions hold; without rules nothing wins.
    #[test]
    fn evaluation_is_deterministic_and_first_match(
        whens in prop::collection::vec(conditions(), 0..6),
        (ua, lang, country, query, now) in requests(),
    ) {
        let rules: Vec<Rule> = whens.into_iter().map(|w| rule(w, "https://e.example/")).collect();
        let req = Request {
            user_agent: &ua,
            accept_language: &lang,
            country: country.as_deref(),
            query: query.as_deref(),
            now_ms: now,
        };
        let facts = Facts::of(&req);
        let won = first_match(&rules, &facts);
        prop_assert_eq!(won, first_match(&rules, &Facts::of(&req)));
        prop_assert_eq!(won, rules.iter().position(|r| facts.satisfy(&r.when)));
        if let Some(i) = won {
            prop_assert!(rules[..i].iter().all(|r| !facts.satisfy(&r.when)));
        }
        prop_assert_eq!(first_match(&[], &facts), None);
    }

    /// Whatever a client sends, reading it never panics.
    #[test]
    fn any_header_is_read_without_panicking(ua in ".{0,600}", lang in ".{0,600}", query in ".{0,100}") {
        let facts = Facts::of(&Request {
            user_agent: &ua,
            accept_language: &lang,
            country: Some("DE"),
            query: Some(&query),
            now_ms: 0,
        });
        let _ = facts.satisfy(&Conditions { language: vec!["de".into()], ..Conditions::default() });
    }
}

//! Targeting rules (issue 17): which target a visit gets, decided from facts of its own
//! request alone (its user agent, `Accept-Language`, country, query and the time), so
//! the edge and the origin decide alike and nothing waits on anything.
//!
//! A link's rules are an ordered list of at most [`MAX_RULES`]; the first whose
//! conditions all hold wins, else the link's own target. Within one condition a list is
//! "any of" (`device: [ios, android]`); across conditions, "all of".

use core::cell::OnceCell;
use serde::{Deserialize, Serialize};
use std::borrow::Cow;

/// Rules a link may carry.
pub const MAX_RULES: usize = 20;
/// Values one condition may list (devices, languages, countries, query tests).
pub const MAX_VALUES: usize = 50;
/// The longest query parameter name, and value, a condition may name.
pub const MAX_QUERY_NAME: usize = 64;
pub const MAX_QUERY_VALUE: usize = 256;
/// The most a link's rules may take as stored (compact JSON): the edge reads them on
/// every cold visit, so the lists above cannot all be full at once.
pub const MAX_RULES_BYTES: usize = 64 * 1024;
/// How much of `Accept-Language` is read: a browser sends well under this.
const MAX_ACCEPT_LANGUAGE: usize = 512;

/// A device or platform a rule can ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum Device {
    Ios,
    Android,
    /// Phones and tablets.
    Mobile,
    Desktop,
    Windows,
    Macos,
    Linux,
    Chromeos,
}

impl Device {
    pub const ALL: [Device; 8] = [
        Device::Ios,
        Device::Android,
        Device::Mobile,
        Device::Desktop,
        Device::Windows,
        Device::Macos,
        Device::Linux,
        Device::Chromeos,
    ];

    fn bit(self) -> u8 {
        1 << (self as u8)
    }
}

/// A test of one query parameter: `equals` a value, or `present` (true) / absent (false).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct QueryTest {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub equals: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub present: Option<bool>,
}

/// What must hold for a rule to win. Every field given must hold.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct Conditions {
    /// Any of these devices or platforms.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub device: Vec<Device>,
    /// Any of these languages, compared with the visitor's first choice: `de` holds for
    /// `de-CH`; `de-ch` only for `de-CH` (and its own subtags).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub language: Vec<String>,
    /// Any of these countries (two letters, as the edge's `request.cf.country`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub country: Vec<String>,
    /// All of these query tests.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub query: Vec<QueryTest>,
    /// From this instant (Unix ms), inclusive.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<i64>,
    /// Until this instant (Unix ms), exclusive.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before: Option<i64>,
}

impl Conditions {
    fn is_empty(&self) -> bool {
        self.device.is_empty()
            && self.language.is_empty()
            && self.country.is_empty()
            && self.query.is_empty()
            && self.after.is_none()
            && self.before.is_none()
    }
}

/// One rule: when its conditions hold, the visit goes to its target.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct Rule {
    pub when: Conditions,
    pub target_url: String,
}

/// Why rules were refused: which rule, which field, what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RuleError {
    #[error("at most {MAX_RULES} rules, not {0}")]
    TooMany(usize),
    #[error("the rules take {0} bytes as stored; at most {MAX_RULES_BYTES}: use shorter lists")]
    TooLarge(usize),
    #[error("rules[{index}].{field}: {detail}")]
    Invalid {
        index: usize,
        field: &'static str,
        detail: String,
    },
}

/// The rules as they are kept: languages in lower case, countries in upper case, every
/// list without repeats; or why they cannot be. Targets are the caller's to validate
/// (the same validation and bans as a link's own target).
pub fn normalize_rules(rules: Vec<Rule>) -> Result<Vec<Rule>, RuleError> {
    if rules.len() > MAX_RULES {
        return Err(RuleError::TooMany(rules.len()));
    }
    let rules = rules
        .into_iter()
        .enumerate()
        .map(|(index, rule)| normalize_rule(index, rule))
        .collect::<Result<Vec<_>, _>>()?;
    let size = serde_json::to_string(&rules).map_or(usize::MAX, |s| s.len());
    if size > MAX_RULES_BYTES {
        return Err(RuleError::TooLarge(size));
    }
    Ok(rules)
}

fn normalize_rule(index: usize, mut rule: Rule) -> Result<Rule, RuleError> {
    let invalid = |field, detail: String| RuleError::Invalid {
        index,
        field,
        detail,
    };
    let w = &mut rule.when;
    if w.is_empty() {
        return Err(invalid(
            "when",
            "a rule needs a condition (without one it would always win: set the link's target_url instead)".into(),
        ));
    }
    for (field, len) in [
        ("when.device", w.device.len()),
        ("when.language", w.language.len()),
        ("when.country", w.country.len()),
        ("when.query", w.query.len()),
    ] {
        if len > MAX_VALUES {
            return Err(invalid(field, format!("at most {MAX_VALUES} values")));
        }
    }
    w.device.sort_unstable();
    w.device.dedup();
    for tag in &mut w.language {
        *tag = tag.trim().to_ascii_lowercase();
        if !is_language_tag(tag) {
            return Err(invalid(
                "when.language",
                format!("{tag:?} is not a language tag (e.g. de, de-ch, pt-br)"),
            ));
        }
    }
    dedup_keeping_order(&mut w.language);
    for country in &mut w.country {
        *country = country.trim().to_ascii_uppercase();
        if country.len() != 2 || !country.bytes().all(|b| b.is_ascii_uppercase()) {
            return Err(invalid(
                "when.country",
                format!("{country:?} is not a two-letter country code (e.g. DE)"),
            ));
        }
    }
    dedup_keeping_order(&mut w.country);
    for q in &w.query {
        if q.name.is_empty() || q.name.len() > MAX_QUERY_NAME {
            return Err(invalid(
                "when.query",
                format!("a parameter name of 1 to {MAX_QUERY_NAME} bytes"),
            ));
        }
        match (&q.equals, q.present) {
            (Some(v), None) if v.len() <= MAX_QUERY_VALUE => {}
            (Some(_), None) => {
                return Err(invalid(
                    "when.query",
                    format!("a value of at most {MAX_QUERY_VALUE} bytes"),
                ))
            }
            (None, Some(_)) => {}
            _ => {
                return Err(invalid(
                    "when.query",
                    format!(
                        "{:?}: give either equals (a value) or present (true or false)",
                        q.name
                    ),
                ))
            }
        }
    }
    if let (Some(after), Some(before)) = (w.after, w.before) {
        if after >= before {
            return Err(invalid("when.before", "must be later than after".into()));
        }
    }
    Ok(rule)
}

fn dedup_keeping_order(values: &mut Vec<String>) {
    let mut seen = Vec::with_capacity(values.len());
    values.retain(|v| {
        let new = !seen.contains(v);
        if new {
            seen.push(v.clone());
        }
        new
    });
}

/// A lower-case language tag: a primary subtag of 2–3 letters, then subtags of 1–8
/// letters or digits.
fn is_language_tag(tag: &str) -> bool {
    let mut parts = tag.split('-');
    let primary_ok = parts
        .next()
        .is_some_and(|p| (2..=3).contains(&p.len()) && p.bytes().all(|b| b.is_ascii_lowercase()));
    primary_ok
        && tag.len() <= 35
        && parts.all(|p| {
            (1..=8).contains(&p.len())
                && p.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        })
}

/// What a visit offers the rules, read from its request.
#[derive(Debug, Clone, Copy, Default)]
pub struct Request<'a> {
    pub user_agent: &'a str,
    pub accept_language: &'a str,
    /// Two letters, as trusted by the caller (the edge's own `cf.country`; at the origin
    /// only from a trusted proxy).
    pub country: Option<&'a str>,
    /// The visit's raw query, without `?`.
    pub query: Option<&'a str>,
    /// Unix ms.
    pub now_ms: i64,
}

/// The query pairs rules read: the first this many of a visit's query. A query test
/// costs a lookup in them, so the worst a link may ask (20 rules of 50 tests) costs a
/// visit one parse of a bounded part of its query, whatever the query's length.
pub const MAX_QUERY_PAIRS: usize = 256;

/// A visit's query as rules read it: its first [`MAX_QUERY_PAIRS`] pairs, decoded, in
/// order of name, so that each test is a binary search.
type QueryPairs<'a> = Vec<(Cow<'a, str>, Cow<'a, str>)>;

#[cfg(test)]
thread_local! {
    /// Parses of a visit's query, counted in tests.
    static QUERY_PARSES: core::cell::Cell<usize> = const { core::cell::Cell::new(0) };
}

/// The facts rules test, derived from a [`Request`] once per visit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Facts<'a> {
    devices: u8,
    /// The visitor's first-choice language, lower case.
    language: Option<String>,
    country: Option<&'a str>,
    query: Option<&'a str>,
    /// The query, parsed at the first test that reads it and never again.
    pairs: OnceCell<QueryPairs<'a>>,
    now_ms: i64,
}

impl<'a> Facts<'a> {
    pub fn of(req: &Request<'a>) -> Facts<'a> {
        Facts {
            devices: devices_of(req.user_agent),
            language: first_language(req.accept_language),
            country: req.country.filter(|c| c.len() == 2),
            query: req.query,
            pairs: OnceCell::new(),
            now_ms: req.now_ms,
        }
    }

    /// The query's pairs, parsed once.
    fn pairs(&self) -> &QueryPairs<'a> {
        self.pairs.get_or_init(|| {
            #[cfg(test)]
            QUERY_PARSES.with(|n| n.set(n.get() + 1));
            let mut pairs: QueryPairs<'a> =
                url::form_urlencoded::parse(self.query.unwrap_or_default().as_bytes())
                    .take(MAX_QUERY_PAIRS)
                    .collect();
            // An insertion sort: at most 256 pairs (32,640 steps at worst), and a
            // fraction of the edge's WebAssembly a library sort costs (1.8 KB gzip).
            for i in 1..pairs.len() {
                let mut j = i;
                while j > 0 && pairs[j - 1].0 > pairs[j].0 {
                    pairs.swap(j - 1, j);
                    j -= 1;
                }
            }
            pairs
        })
    }

    /// Whether every condition of `when` holds.
    pub fn satisfy(&self, when: &Conditions) -> bool {
        (when.device.is_empty() || when.device.iter().any(|d| self.devices & d.bit() != 0))
            && (when.language.is_empty()
                || self
                    .language
                    .as_deref()
                    .is_some_and(|l| when.language.iter().any(|want| language_holds(want, l))))
            && (when.country.is_empty()
                || self
                    .country
                    .is_some_and(|c| when.country.iter().any(|want| want.eq_ignore_ascii_case(c))))
            && when.after.is_none_or(|t| self.now_ms >= t)
            && when.before.is_none_or(|t| self.now_ms < t)
            && when.query.iter().all(|q| self.query_holds(q))
    }

    fn query_holds(&self, test: &QueryTest) -> bool {
        let pairs = self.pairs();
        let name = test.name.as_str();
        let first = pairs.partition_point(|(n, _)| n.as_ref() < name);
        let mut named = pairs[first..].iter().take_while(|(n, _)| n == name);
        match (&test.equals, test.present) {
            (Some(value), _) => named.any(|(_, v)| v == value.as_str()),
            (None, Some(present)) => named.next().is_some() == present,
            (None, None) => false,
        }
    }
}

/// Which of a visit's headers some rule reads: a caller for which reading one costs
/// (the edge: a call into the runtime, `cf` built afresh) reads only these.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Reads {
    pub user_agent: bool,
    pub accept_language: bool,
    pub country: bool,
}

/// What `rules` read of a visit.
pub fn reads(rules: &[Rule]) -> Reads {
    rules.iter().fold(Reads::default(), |r, rule| Reads {
        user_agent: r.user_agent || !rule.when.device.is_empty(),
        accept_language: r.accept_language || !rule.when.language.is_empty(),
        country: r.country || !rule.when.country.is_empty(),
    })
}

/// The URLs besides a link's own target that a visitor may be sent to or shown: its
/// rules' targets, its split's variants', its page for when it has ended, and its
/// preview's image (which a crawler fetches). What host bans must cover too.
pub fn other_targets<'a>(
    rules: &'a [Rule],
    split: Option<&'a crate::split::Split>,
    expired_url: Option<&'a str>,
    preview: Option<&'a crate::preview::Preview>,
) -> impl Iterator<Item = &'a str> {
    let variants = split.map(crate::split::Split::variants).unwrap_or_default();
    rules
        .iter()
        .map(|r| r.target_url.as_str())
        .chain(variants.iter().map(|v| v.target_url.as_str()))
        .chain(expired_url)
        .chain(preview.and_then(|p| p.image_url.as_deref()))
}

/// The index of the first rule whose conditions hold for `facts`, if any.
pub fn first_match(rules: &[Rule], facts: &Facts<'_>) -> Option<usize> {
    rules.iter().position(|r| facts.satisfy(&r.when))
}

/// `want` (a rule's tag) holds for the visitor's tag `have` when they are equal or
/// `have` is a more specific tag of `want` (`de` for `de-ch`).
fn language_holds(want: &str, have: &str) -> bool {
    have == want
        || have
            .strip_prefix(want)
            .is_some_and(|rest| rest.starts_with('-'))
}

/// The language a visitor prefers most: the highest `q` of `Accept-Language`, the first
/// on a tie; languages refused (`q=0`), `*` and malformed entries are skipped.
pub fn first_language(header: &str) -> Option<String> {
    let mut best: Option<(&str, u16)> = None;
    for item in crate::clicks::head(header, MAX_ACCEPT_LANGUAGE).split(',') {
        let mut parts = item.split(';');
        let tag = parts.next().unwrap_or_default().trim();
        let mut q = Some(1000u16);
        for param in parts {
            if let Some(v) = param.trim().strip_prefix("q=") {
                q = parse_q(v.trim());
            }
        }
        let Some(q) = q.filter(|q| *q > 0) else {
            continue;
        };
        if tag == "*" || !is_language_tag(&tag.to_ascii_lowercase()) {
            continue;
        }
        if best.is_none_or(|(_, b)| q > b) {
            best = Some((tag, q));
        }
    }
    best.map(|(tag, _)| tag.to_ascii_lowercase())
}

/// A quality value, in thousandths (`1`, `0.9`, `0.125`); `None` if malformed.
fn parse_q(v: &str) -> Option<u16> {
    let (int, frac) = v.split_once('.').unwrap_or((v, ""));
    if frac.len() > 3 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let thousandths: u16 = format!("{frac:0<3}").parse().ok()?;
    match int {
        "0" => Some(thousandths),
        "1" if thousandths == 0 => Some(1000),
        _ => None,
    }
}

/// Every [`Device`] a user agent is, as bits: a platform and a class (an iPhone is
/// `ios` and `mobile`; a Windows PC `windows` and `desktop`).
fn devices_of(ua: &str) -> u8 {
    let lower = crate::clicks::head(ua, crate::clicks::MAX_UA_BYTES).to_ascii_lowercase();
    let has = |s: &str| lower.contains(s);
    let mut bits = 0;
    let ios = has("iphone") || has("ipad") || has("ipod");
    let android = has("android");
    let chromeos = has("cros");
    if ios {
        bits |= Device::Ios.bit();
    } else if android {
        bits |= Device::Android.bit();
    } else if chromeos {
        bits |= Device::Chromeos.bit();
    } else if has("windows") {
        bits |= Device::Windows.bit();
    } else if has("macintosh") || has("mac os x") {
        bits |= Device::Macos.bit();
    } else if has("linux") || has("x11") {
        bits |= Device::Linux.bit();
    }
    let (class, _) = crate::clicks::classify_user_agent(ua);
    bits |= match class {
        crate::clicks::Device::Mobile | crate::clicks::Device::Tablet => Device::Mobile.bit(),
        crate::clicks::Device::Desktop => Device::Desktop.bit(),
        crate::clicks::Device::Other => 0,
    };
    bits
}

#[cfg(test)]
mod tests {
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
}

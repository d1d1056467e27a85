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
    for item in crate::agent::head(header, MAX_ACCEPT_LANGUAGE).split(',') {
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
    let lower = crate::agent::head(ua, crate::agent::MAX_UA_BYTES).to_ascii_lowercase();
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
    let (class, _) = crate::agent::classify_user_agent(ua);
    bits |= match class {
        crate::agent::Device::Mobile | crate::agent::Device::Tablet => Device::Mobile.bit(),
        crate::agent::Device::Desktop => Device::Desktop.bit(),
        crate::agent::Device::Other => 0,
    };
    bits
}

#[cfg(test)]
mod tests;

//! Shlink: its REST API's `GET /rest/v3/short-urls` pages (each item may carry its
//! `redirectRules` as `GET …/{shortCode}/redirect-rules` answers them, which the command
//! line adds), and the web client's CSV export (tags joined with `|`).
//!
//! Mapped onto Hop: `meta.validUntil` is the expiry, `meta.maxVisits` the visit limit
//! (Shlink counts bots, Hop counts people: said on the row), `forwardQuery`, tags, title,
//! and redirect rules onto targeting rules (device, language, query, country, dates).
//! What Hop has no equivalent for is said per link, never dropped silently:
//! `meta.validSince`, a rule on an IP address, a city or a browser (that rule is left
//! out whole: without its condition it would catch visitors it never caught), and
//! `crawlable`.

use super::source::{csv_records, parse_time, split_short_link, SourceLink, Unreadable};
use serde::Deserialize;
use shared::targeting::{Conditions, Device, QueryTest, Rule};

/// One page of the short URLs list, and whether another follows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiPage {
    pub links: Vec<SourceLink>,
    /// The next page's number, when there is one.
    pub next_page: Option<u64>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Page {
    short_urls: List,
}

#[derive(Deserialize)]
struct List {
    #[serde(default)]
    data: Vec<ShortUrl>,
    #[serde(default)]
    pagination: Option<Pagination>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Pagination {
    current_page: u64,
    pages_count: u64,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ShortUrl {
    short_code: String,
    long_url: String,
    #[serde(default)]
    date_created: Option<String>,
    #[serde(default)]
    tags: Vec<String>,
    #[serde(default)]
    meta: Meta,
    #[serde(default)]
    domain: Option<String>,
    #[serde(default)]
    short_url: Option<String>,
    #[serde(default)]
    title: Option<String>,
    #[serde(default)]
    crawlable: bool,
    #[serde(default)]
    forward_query: Option<bool>,
    #[serde(default)]
    visits_summary: Option<VisitsSummary>,
    /// Shlink 3.x.
    #[serde(default)]
    visits_count: Option<u64>,
    /// Shlink 3.x: a target per device.
    #[serde(default)]
    device_long_urls: Option<DeviceLongUrls>,
    #[serde(default)]
    has_redirect_rules: bool,
    /// Added by the command line from `…/redirect-rules`.
    #[serde(default)]
    redirect_rules: Option<Vec<RedirectRule>>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct Meta {
    #[serde(default)]
    valid_since: Option<String>,
    #[serde(default)]
    valid_until: Option<String>,
    #[serde(default)]
    max_visits: Option<u64>,
}

#[derive(Deserialize)]
struct VisitsSummary {
    total: u64,
}

#[derive(Deserialize, Default)]
struct DeviceLongUrls {
    #[serde(default)]
    android: Option<String>,
    #[serde(default)]
    ios: Option<String>,
    #[serde(default)]
    desktop: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RedirectRule {
    long_url: String,
    #[serde(default)]
    priority: i64,
    #[serde(default)]
    conditions: Vec<Condition>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Condition {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    match_key: Option<String>,
    #[serde(default)]
    match_value: Option<String>,
}

/// Reads one page of `GET /rest/v3/short-urls`.
pub fn read_api_page(json: &str) -> Result<ApiPage, Unreadable> {
    let page: Page = serde_json::from_str(json)
        .map_err(|e| Unreadable(format!("not a page of Shlink's short URLs: {e}")))?;
    let links = page
        .short_urls
        .data
        .into_iter()
        .enumerate()
        .map(|(i, s)| link_of(i + 1, s))
        .collect();
    let next_page = page
        .short_urls
        .pagination
        .filter(|p| p.current_page < p.pages_count)
        .map(|p| p.current_page + 1);
    Ok(ApiPage { links, next_page })
}

fn link_of(row: usize, s: ShortUrl) -> SourceLink {
    let mut notes = Vec::new();
    // The default domain is `null`; its short URL still names it.
    let domain = s.domain.clone().or_else(|| {
        s.short_url
            .as_deref()
            .and_then(split_short_link)
            .map(|(d, _)| d)
    });
    if let Some(since) = &s.meta.valid_since {
        notes.push(format!(
            "validSince {since} has no equivalent in Hop: the link answers from its import on"
        ));
    }
    if s.meta.max_visits.is_some() {
        notes.push(
            "maxVisits: Shlink counted bots' visits too, Hop counts people's only, so the limit \
             is reached later here"
                .into(),
        );
    }
    if s.crawlable {
        notes.push(
            "crawlable has no equivalent: Hop answers crawlers as it answers anyone (robots.txt \
             is the domain's own)"
                .into(),
        );
    }
    let mut rules = Vec::new();
    if let Some(by_device) = s.device_long_urls {
        for (device, url) in [
            (Device::Android, by_device.android),
            (Device::Ios, by_device.ios),
            (Device::Desktop, by_device.desktop),
        ] {
            if let Some(url) = url {
                rules.push(Rule {
                    when: Conditions {
                        device: vec![device],
                        ..Conditions::default()
                    },
                    target_url: url,
                });
            }
        }
    }
    match s.redirect_rules {
        Some(mut list) => {
            list.sort_by_key(|r| r.priority);
            for (i, r) in list.into_iter().enumerate() {
                match rule_of(&r) {
                    Ok(rule) => rules.push(rule),
                    Err(why) => notes.push(format!(
                        "redirect rule {} (to {}) is not imported: {why}",
                        i + 1,
                        r.long_url
                    )),
                }
            }
        }
        None if s.has_redirect_rules => notes.push(
            "has redirect rules, which a page of the list does not carry: import with \
             `hop-origin import --from shlink URL`, which fetches them"
                .into(),
        ),
        None => {}
    }
    SourceLink {
        row,
        domain,
        code: s.short_code,
        target_url: s.long_url,
        title: s.title.filter(|t| !t.trim().is_empty()),
        tags: s.tags,
        created_at: s.date_created.as_deref().and_then(parse_time),
        expires_at: s.meta.valid_until.as_deref().and_then(parse_time),
        max_visits: s.meta.max_visits,
        forward_query: s.forward_query,
        clicks: s.visits_summary.map(|v| v.total).or(s.visits_count),
        rules,
        notes,
        ..SourceLink::default()
    }
}

/// A redirect rule as Hop's targeting rule, or why it cannot be one.
fn rule_of(r: &RedirectRule) -> Result<Rule, String> {
    let mut when = Conditions::default();
    for c in &r.conditions {
        let value = c.match_value.clone().unwrap_or_default();
        let key = c.match_key.clone().unwrap_or_default();
        match c.kind.as_str() {
            "device" => when.device.push(
                device(&value)
                    .ok_or_else(|| format!("device {value:?} is not one Hop tells apart"))?,
            ),
            "language" => when.language.push(value),
            "geolocation-country-code" => when.country.push(value),
            "query-param" => when.query.push(QueryTest {
                name: key,
                equals: Some(value),
                present: None,
            }),
            "any-value-query-param" => when.query.push(QueryTest {
                name: key,
                equals: None,
                present: Some(true),
            }),
            "valueless-query-param" => when.query.push(QueryTest {
                name: key,
                equals: Some(String::new()),
                present: None,
            }),
            "after-date" => when.after = Some(parse_time(&value).ok_or("a date Hop cannot read")?),
            "before-date" => {
                when.before = Some(parse_time(&value).ok_or("a date Hop cannot read")?)
            }
            "ip-address" => return Err("Hop has no condition on the visitor's IP address".into()),
            "geolocation-city-name" => {
                return Err("Hop has no condition on the visitor's city".into())
            }
            "browser" => return Err("Hop has no condition on the visitor's browser".into()),
            other => return Err(format!("Hop has no {other:?} condition")),
        }
    }
    Ok(Rule {
        when,
        target_url: r.long_url.clone(),
    })
}

fn device(value: &str) -> Option<Device> {
    Some(match value {
        "android" => Device::Android,
        "ios" => Device::Ios,
        "mobile" => Device::Mobile,
        "desktop" => Device::Desktop,
        "windows" => Device::Windows,
        "macos" => Device::Macos,
        "linux" => Device::Linux,
        "chromeos" => Device::Chromeos,
        _ => return None,
    })
}

/// The web client's export columns.
pub(super) const FIELDS: &[(&str, &[&str])] = &[
    ("created", &["createdAt", "Created at", "dateCreated"]),
    ("domain", &["domain"]),
    ("code", &["shortCode", "Short code"]),
    ("short_url", &["shortUrl", "Short URL"]),
    ("long_url", &["longUrl", "Long URL"]),
    ("title", &["title"]),
    ("tags", &["tags"]),
    ("visits", &["visits", "visitsCount"]),
];

/// Reads the web client's CSV export.
pub fn read_csv(content: &str) -> Result<Vec<SourceLink>, Unreadable> {
    let (columns, records) = csv_records(
        content,
        FIELDS,
        &[&["long_url"], &["code", "short_url"]],
        "not Shlink's export: it names shortCode (or shortUrl) and longUrl",
    )?;
    let mut links = Vec::new();
    for (row, record) in records {
        let cell = |f: &str| columns.cell(&record, f);
        let from_url = cell("short_url").and_then(split_short_link);
        let code = cell("code")
            .map(str::to_owned)
            .or_else(|| from_url.as_ref().map(|(_, c)| c.clone()))
            .unwrap_or_default();
        links.push(SourceLink {
            row,
            domain: cell("domain")
                .map(str::to_ascii_lowercase)
                .or_else(|| from_url.map(|(d, _)| d)),
            code,
            target_url: cell("long_url").unwrap_or_default().to_owned(),
            title: cell("title").map(str::to_owned),
            tags: cell("tags")
                .unwrap_or_default()
                .split('|')
                .map(str::trim)
                .filter(|t| !t.is_empty())
                .map(str::to_owned)
                .collect(),
            created_at: cell("created").and_then(parse_time),
            clicks: cell("visits").and_then(|v| v.parse().ok()),
            notes: vec![
                "the web client's export carries no expiry, visit limit, query forwarding or \
                 redirect rules: import from the API to keep them"
                    .into(),
            ],
            ..SourceLink::default()
        });
    }
    Ok(links)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A page as Shlink's API documentation shows one, with rules the command line added.
    const PAGE: &str = r#"{"shortUrls":{"data":[
      {"shortCode":"12C18","shortUrl":"https://s.test/12C18","longUrl":"https://store.steampowered.com",
       "dateCreated":"2016-08-21T20:34:16+02:00","tags":["games","tech"],
       "meta":{"validSince":"2017-01-21T00:00:00+02:00","validUntil":"2030-01-01T00:00:00+00:00","maxVisits":100},
       "domain":null,"title":"Welcome to Steam","crawlable":true,"forwardQuery":true,
       "visitsSummary":{"total":328,"nonBots":300,"bots":28},"hasRedirectRules":true,
       "redirectRules":[
         {"longUrl":"https://example.com/q","priority":2,"conditions":[{"type":"query-param","matchKey":"foo","matchValue":"bar"}]},
         {"longUrl":"https://example.com/android-en","priority":1,"conditions":[{"type":"device","matchKey":null,"matchValue":"android"},{"type":"language","matchKey":null,"matchValue":"en-US"}]},
         {"longUrl":"https://example.com/office","priority":3,"conditions":[{"type":"ip-address","matchKey":null,"matchValue":"11.22.*.*"}]},
         {"longUrl":"https://example.com/de","priority":4,"conditions":[{"type":"geolocation-country-code","matchKey":null,"matchValue":"DE"}]}
       ]},
      {"shortCode":"old3x","shortUrl":"https://go.example/old3x","longUrl":"https://example.org/",
       "dateCreated":"2019-01-01T00:00:00+00:00","tags":[],"meta":{"validSince":null,"validUntil":null,"maxVisits":null},
       "domain":"go.example","title":null,"crawlable":false,"forwardQuery":false,"visitsCount":7,
       "deviceLongUrls":{"android":"https://play.example/app","ios":null,"desktop":null}}
    ],"pagination":{"currentPage":1,"pagesCount":12,"itemsPerPage":2,"itemsInCurrentPage":2,"totalItems":23}}}"#;

    #[test]
    fn a_page_keeps_everything_hop_can_and_says_what_it_cannot() {
        let page = read_api_page(PAGE).unwrap();
        assert_eq!(page.next_page, Some(2));
        let steam = &page.links[0];
        assert_eq!(
            steam.domain.as_deref(),
            Some("s.test"),
            "the default domain, from shortUrl"
        );
        assert_eq!(steam.code, "12C18");
        assert_eq!(steam.max_visits, Some(100));
        assert_eq!(steam.clicks, Some(328));
        assert_eq!(steam.forward_query, Some(true));
        assert!(steam.expires_at.is_some());
        let targets: Vec<&str> = steam.rules.iter().map(|r| r.target_url.as_str()).collect();
        assert_eq!(
            targets,
            [
                "https://example.com/android-en",
                "https://example.com/q",
                "https://example.com/de"
            ],
            "in priority order, the IP rule left out"
        );
        assert_eq!(steam.rules[0].when.device, [Device::Android]);
        assert_eq!(steam.rules[0].when.language, ["en-US"]);
        assert_eq!(steam.rules[1].when.query[0].equals.as_deref(), Some("bar"));
        assert_eq!(steam.rules[2].when.country, ["DE"]);
        let notes = steam.notes.join("\n");
        for said in ["validSince", "bots", "crawlable", "IP address"] {
            assert!(notes.contains(said), "{said}: {notes}");
        }
        let old = &page.links[1];
        assert_eq!(old.clicks, Some(7), "Shlink 3's visitsCount");
        assert_eq!(old.rules[0].when.device, [Device::Android]);
        assert!(old.notes.is_empty(), "{:?}", old.notes);
    }

    #[test]
    fn the_web_clients_export_is_read_with_its_pipe_joined_tags() {
        let csv = "\"createdAt\",\"domain\",\"shortCode\",\"shortUrl\",\"longUrl\",\"title\",\"tags\",\"visits\"\n\
                   \"2016-08-21T20:34:16+02:00\",\"s.test\",\"12C18\",\"https://s.test/12C18\",\"https://store.steampowered.com\",\"Welcome to Steam\",\"games|tech\",328\n\
                   \"2015-10-01T20:34:16+02:00\",\"example.com\",\"123bA\",\"https://example.com/123bA\",\"https://www.google.com\",\"\",\"\",25\n";
        let links = read_csv(csv).unwrap();
        assert_eq!(links.len(), 2);
        assert_eq!(links[0].tags, ["games", "tech"]);
        assert_eq!(links[0].clicks, Some(328));
        assert_eq!(links[1].domain.as_deref(), Some("example.com"));
        assert_eq!(links[1].title, None);
        assert!(read_csv("a,b\n1,2\n").is_err());
    }
}

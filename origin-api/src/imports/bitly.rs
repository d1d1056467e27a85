//! Bitly: the web interface's CSV export and the API v4's
//! `GET /v4/groups/{group_guid}/bitlinks` pages.
//!
//! A Bitlink lives on Bitly's own domains (`bit.ly`, `j.mp`, `bitly.is`) or on a branded
//! one; only a branded domain can be pointed at Hop, so only its links move: a
//! `bit.ly/…` code is reported as skipped, saying why. Every custom back-half
//! (`custom_bitlinks`) is a link of its own, on its own domain (Shlink's importer kept
//! the first and its users lost the rest). Archived links arrive disabled.

use super::source::{csv_records, parse_time, split_short_link, SourceLink, Unreadable};
use serde::Deserialize;

/// Bitly's own short domains: no customer can point them elsewhere.
const BITLY_DOMAINS: [&str; 4] = ["bit.ly", "j.mp", "bitly.is", "bitly.com"];

/// The reason a code on a Bitly domain stays there.
fn on_bitlys_domain(domain: &str) -> Option<String> {
    BITLY_DOMAINS.contains(&domain).then(|| {
        format!(
            "on Bitly's own domain {domain}, which cannot be pointed at Hop: only links on a \
             branded domain move (visitors of this code keep going to Bitly)"
        )
    })
}

/// The CSV columns Bitly's exports have used, each with its synonyms (compared without
/// case, spaces, `_` or `-`).
pub(super) const FIELDS: &[(&str, &[&str])] = &[
    (
        "link",
        &[
            "Bitlink",
            "Short link",
            "Short URL",
            "Link",
            "Bitly link",
            "Shortlink",
        ],
    ),
    (
        "long_url",
        &[
            "Long URL",
            "Destination URL",
            "Destination",
            "Original URL",
            "Long link",
            "URL",
        ],
    ),
    ("title", &["Title", "Name"]),
    (
        "created",
        &[
            "Date created",
            "Created",
            "Created at",
            "Creation date",
            "Date",
        ],
    ),
    ("tags", &["Tags", "Tag"]),
    (
        "clicks",
        &["Clicks", "Engagements", "Total clicks", "Total engagements"],
    ),
    (
        "custom",
        &[
            "Custom Bitlinks",
            "Custom back-halves",
            "Custom back-half",
            "Custom links",
            "Custom bitlink",
        ],
    ),
    ("archived", &["Archived", "Hidden"]),
];

/// Reads Bitly's CSV export: one row per Bitlink, its custom back-halves in one cell.
pub fn read_csv(content: &str) -> Result<Vec<SourceLink>, Unreadable> {
    let (columns, records) = csv_records(
        content,
        FIELDS,
        &[&["link"], &["long_url"]],
        "not a Bitly export: it names its short link (\"Bitlink\") and its destination (\"Long URL\")",
    )?;
    let mut links = Vec::new();
    for (row, record) in records {
        let cell = |f: &str| columns.cell(&record, f);
        let base = SourceLink {
            row,
            target_url: cell("long_url").unwrap_or_default().to_owned(),
            title: cell("title").map(str::to_owned),
            tags: list(cell("tags").unwrap_or_default()),
            created_at: cell("created").and_then(parse_time),
            clicks: cell("clicks").and_then(|c| c.replace(',', "").parse().ok()),
            disabled: cell("archived").is_some_and(truthy),
            ..SourceLink::default()
        };
        let custom = list(cell("custom").unwrap_or_default());
        links.extend(links_of(base, cell("link").unwrap_or_default(), &custom));
    }
    Ok(links)
}

/// The links one Bitlink brings: itself, and each custom back-half.
fn links_of(base: SourceLink, bitlink: &str, custom: &[String]) -> Vec<SourceLink> {
    let mut out = Vec::new();
    for short in std::iter::once(bitlink).chain(custom.iter().map(String::as_str)) {
        let mut link = base.clone();
        match split_short_link(short) {
            Some((domain, code)) => {
                link.skip = on_bitlys_domain(&domain);
                link.domain = Some(domain);
                link.code = code;
            }
            None => {
                link.code = short.to_owned();
                link.skip = Some(format!("{short:?} is not a short link (domain/code)"));
            }
        }
        // The source's count is the Bitlink's; its back-halves share it, so it is kept
        // on the first link only.
        if !out.is_empty() {
            link.clicks = None;
        }
        out.push(link);
    }
    out
}

/// A cell of several values: Bitly writes them with commas, some exports with `|` or
/// spaces.
fn list(cell: &str) -> Vec<String> {
    cell.split([',', '|', ';', ' '])
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

fn truthy(cell: &str) -> bool {
    matches!(
        cell.to_ascii_lowercase().as_str(),
        "true" | "yes" | "1" | "archived" | "hidden"
    )
}

/// One page of `GET /v4/groups/{group_guid}/bitlinks`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiPage {
    pub links: Vec<SourceLink>,
    /// The next page's `search_after`, when there is one.
    pub search_after: Option<String>,
}

#[derive(Deserialize)]
struct Page {
    #[serde(default)]
    links: Vec<Bitlink>,
    #[serde(default)]
    pagination: Option<Pagination>,
}

#[derive(Deserialize)]
struct Pagination {
    #[serde(default)]
    search_after: Option<String>,
    #[serde(default)]
    next: Option<String>,
}

#[derive(Deserialize)]
struct Bitlink {
    /// `bit.ly/3xYz` or `go.acme.co/3xYz`.
    id: String,
    long_url: String,
    #[serde(default)]
    title: Option<String>,
    #[serde(default)]
    archived: bool,
    #[serde(default)]
    tags: Vec<String>,
    #[serde(default)]
    created_at: Option<String>,
    #[serde(default)]
    custom_bitlinks: Vec<String>,
}

/// Reads one page the API answered, as it answered it.
pub fn read_api_page(json: &str) -> Result<ApiPage, Unreadable> {
    let page: Page = serde_json::from_str(json)
        .map_err(|e| Unreadable(format!("not a page of Bitly's bitlinks: {e}")))?;
    let mut links = Vec::new();
    for (i, b) in page.links.into_iter().enumerate() {
        let base = SourceLink {
            row: i + 1,
            target_url: b.long_url,
            title: b.title.filter(|t| !t.trim().is_empty()),
            tags: b.tags,
            created_at: b.created_at.as_deref().and_then(parse_time),
            disabled: b.archived,
            ..SourceLink::default()
        };
        links.extend(links_of(base, &b.id, &b.custom_bitlinks));
    }
    let search_after = page.pagination.and_then(|p| {
        p.search_after
            .filter(|s| !s.is_empty())
            // Older answers carried only the next page's URL.
            .or_else(|| {
                let next = url::Url::parse(p.next.as_deref()?).ok()?;
                let found = next
                    .query_pairs()
                    .find(|(k, _)| k == "search_after")
                    .map(|(_, v)| v.into_owned());
                found
            })
    });
    Ok(ApiPage {
        links,
        search_after,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A page as Bitly's API reference documents it.
    const PAGE: &str = r#"{
      "links": [
        {"created_at": "2024-03-01T10:00:00+0000", "id": "go.acme.co/3xYzAbC",
         "link": "https://go.acme.co/3xYzAbC", "custom_bitlinks":
           ["https://go.acme.co/summer", "https://go.acme.co/Summer-Sale", "https://bit.ly/acme-summer"],
         "long_url": "https://acme.example/summer?x=1", "title": "Summer", "archived": false,
         "created_by": "ana", "client_id": "c", "tags": ["summer", "2024"], "deeplinks": [],
         "references": {"group": "https://api-ssl.bitly.com/v4/groups/Bg1"}},
        {"created_at": "2023-01-01T00:00:00+0000", "id": "bit.ly/4aBcDeF",
         "link": "https://bit.ly/4aBcDeF", "custom_bitlinks": [],
         "long_url": "https://acme.example/old", "title": "", "archived": true, "tags": []}
      ],
      "pagination": {"prev": "", "next": "https://api-ssl.bitly.com/v4/groups/Bg1/bitlinks?search_after=abc%3D%3D&size=50",
                     "size": 50, "page": 1, "total": 7, "search_after": "abc=="}
    }"#;

    #[test]
    fn every_back_half_is_a_link_and_bitlys_own_domain_stays() {
        let page = read_api_page(PAGE).unwrap();
        assert_eq!(page.search_after.as_deref(), Some("abc=="));
        let codes: Vec<(Option<&str>, &str, bool)> = page
            .links
            .iter()
            .map(|l| (l.domain.as_deref(), l.code.as_str(), l.skip.is_some()))
            .collect();
        assert_eq!(
            codes,
            [
                (Some("go.acme.co"), "3xYzAbC", false),
                (Some("go.acme.co"), "summer", false),
                (Some("go.acme.co"), "Summer-Sale", false),
                (Some("bit.ly"), "acme-summer", true),
                (Some("bit.ly"), "4aBcDeF", true),
            ]
        );
        let first = &page.links[0];
        assert_eq!(first.target_url, "https://acme.example/summer?x=1");
        assert_eq!(first.tags, ["summer", "2024"]);
        assert_eq!(first.created_at, Some(1_709_287_200_000));
        assert!(page.links[4].disabled, "archived arrives disabled");
        assert_eq!(page.links[4].title, None);
        assert!(page.links[3].skip.as_deref().unwrap().contains("bit.ly"));
    }

    #[test]
    fn the_next_page_is_found_in_older_answers_too() {
        let old = r#"{"links": [], "pagination": {"next": "https://api-ssl.bitly.com/v4/groups/Bg1/bitlinks?size=50&search_after=x%2By"}}"#;
        assert_eq!(
            read_api_page(old).unwrap().search_after.as_deref(),
            Some("x+y")
        );
        let last = r#"{"links": [], "pagination": {"next": "", "search_after": ""}}"#;
        assert_eq!(read_api_page(last).unwrap().search_after, None);
        assert!(read_api_page("<html>").is_err());
    }

    #[test]
    fn the_web_export_is_read_by_its_headers_whatever_their_spelling() {
        let csv = "\u{feff}TITLE,long_url,Date Created,bitlink,Custom Bitlinks,Tags,Engagements,Archived\n\
                   Summer,https://acme.example/summer,2024-03-01 10:00:00,https://go.acme.co/3xYzAbC,\"https://go.acme.co/summer, https://go.acme.co/sale\",\"summer,2024\",\"1,204\",false\n\
                   Old,https://acme.example/old,2023-01-01,bit.ly/4aBcDeF,,,3,true\n";
        let links = read_csv(csv).unwrap();
        let got: Vec<(usize, &str, Option<u64>)> = links
            .iter()
            .map(|l| (l.row, l.code.as_str(), l.clicks))
            .collect();
        assert_eq!(
            got,
            [
                (1, "3xYzAbC", Some(1204)),
                (1, "summer", None),
                (1, "sale", None),
                (2, "4aBcDeF", Some(3)),
            ]
        );
        assert_eq!(links[0].title.as_deref(), Some("Summer"));
        assert_eq!(links[0].created_at, Some(1_709_287_200_000));
        assert!(links[3].disabled && links[3].skip.is_some());
        let missing = read_csv("Title,Clicks\nA,1\n").unwrap_err();
        assert!(
            missing.0.contains("short link") && missing.0.contains("Clicks"),
            "{missing}"
        );
    }
}

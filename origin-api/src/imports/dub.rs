//! Dub: its links CSV export (`/api/links/export`: `Short link`, `Destination URL`,
//! `Clicks`, `Created at`, `Link ID`, `Updated at`, `Tags` joined with `, `, `Archived`;
//! a cell that would be a formula has a leading `'`) and its API's `GET /links` pages (a
//! bare JSON array, `page` and `pageSize` up to 100).
//!
//! From the API: `expiresAt` and `expiredUrl`, a password (Dub gives it in the clear;
//! Hop keeps only its slow hash), `ios`/`android` targets and `geo` (country → target) as
//! targeting rules. What Hop has no equivalent for is said per link: a custom social
//! preview (`proxy` with its `title`, `description`, `image`), link cloaking
//! (`rewrite`), Dub's A/B test variants and conversion tracking.

use super::source::{csv_records, parse_time, split_short_link, unguarded, SourceLink, Unreadable};
use serde::Deserialize;
use shared::targeting::{Conditions, Device, Rule};
use std::collections::BTreeMap;

pub(super) const FIELDS: &[(&str, &[&str])] = &[
    ("link", &["Short link", "shortLink"]),
    ("url", &["Destination URL", "url"]),
    ("clicks", &["Clicks"]),
    ("created", &["Created at", "createdAt"]),
    ("tags", &["Tags"]),
    ("archived", &["Archived"]),
];

/// Reads Dub's CSV export.
pub fn read_csv(content: &str) -> Result<Vec<SourceLink>, Unreadable> {
    let (columns, records) = csv_records(
        content,
        FIELDS,
        &[&["link"], &["url"]],
        "not Dub's export: it names \"Short link\" and \"Destination URL\"",
    )?;
    let mut links = Vec::new();
    for (row, record) in records {
        let cell = |f: &str| columns.cell(&record, f).map(unguarded);
        let short = cell("link").unwrap_or_default();
        let (domain, code, skip) = match split_short_link(short) {
            Some((d, c)) => (Some(d), c, None),
            None => (
                None,
                short.to_owned(),
                Some(format!("{short:?} is not a short link")),
            ),
        };
        links.push(SourceLink {
            row,
            domain,
            code,
            target_url: cell("url").unwrap_or_default().to_owned(),
            tags: cell("tags")
                .unwrap_or_default()
                .split(',')
                .map(str::trim)
                .filter(|t| !t.is_empty())
                .map(str::to_owned)
                .collect(),
            created_at: cell("created").and_then(parse_time),
            clicks: cell("clicks").and_then(|c| c.parse().ok()),
            disabled: cell("archived").is_some_and(|a| a.eq_ignore_ascii_case("yes")),
            skip,
            notes: vec![
                "Dub's export carries no expiry, password or device and country targets: \
                 import from its API to keep them"
                    .into(),
            ],
            ..SourceLink::default()
        });
    }
    Ok(links)
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct DubLink {
    domain: String,
    key: String,
    url: String,
    #[serde(default)]
    archived: bool,
    #[serde(default)]
    expires_at: Option<String>,
    #[serde(default)]
    expired_url: Option<String>,
    #[serde(default)]
    password: Option<String>,
    #[serde(default)]
    proxy: bool,
    #[serde(default)]
    rewrite: bool,
    #[serde(default)]
    title: Option<String>,
    #[serde(default)]
    ios: Option<String>,
    #[serde(default)]
    android: Option<String>,
    #[serde(default)]
    geo: Option<BTreeMap<String, String>>,
    #[serde(default)]
    tags: Vec<Tag>,
    #[serde(default)]
    clicks: Option<u64>,
    #[serde(default)]
    created_at: Option<String>,
    #[serde(default)]
    test_variants: Option<serde_json::Value>,
    #[serde(default)]
    track_conversion: bool,
}

#[derive(Deserialize)]
struct Tag {
    name: String,
}

/// Reads one page of `GET /links` (a JSON array of links).
pub fn read_api_page(json: &str) -> Result<Vec<SourceLink>, Unreadable> {
    let page: Vec<DubLink> = serde_json::from_str(json)
        .map_err(|e| Unreadable(format!("not a page of Dub's links: {e}")))?;
    Ok(page
        .into_iter()
        .enumerate()
        .map(|(i, d)| {
            let mut notes = Vec::new();
            if d.proxy {
                notes.push(
                    "a custom social preview (proxy) at Dub: set the link's preview in Hop".into(),
                );
            }
            if d.rewrite {
                notes.push("link cloaking (rewrite) has no equivalent in Hop: it redirects".into());
            }
            if d.test_variants.as_ref().is_some_and(|v| !v.is_null()) {
                notes.push("Dub's A/B test variants are not imported: set a split in Hop".into());
            }
            if d.track_conversion {
                notes.push("conversion tracking has no equivalent in Hop".into());
            }
            let mut rules = Vec::new();
            for (device, target) in [(Device::Ios, d.ios), (Device::Android, d.android)] {
                if let Some(target) = target.filter(|t| !t.is_empty()) {
                    rules.push(Rule {
                        when: Conditions {
                            device: vec![device],
                            ..Conditions::default()
                        },
                        target_url: target,
                    });
                }
            }
            for (country, target) in d.geo.unwrap_or_default() {
                rules.push(Rule {
                    when: Conditions {
                        country: vec![country],
                        ..Conditions::default()
                    },
                    target_url: target,
                });
            }
            SourceLink {
                row: i + 1,
                domain: Some(d.domain.to_ascii_lowercase()),
                code: d.key,
                target_url: d.url,
                title: d.title.filter(|t| !t.trim().is_empty()),
                tags: d.tags.into_iter().map(|t| t.name).collect(),
                created_at: d.created_at.as_deref().and_then(parse_time),
                expires_at: d.expires_at.as_deref().and_then(parse_time),
                expired_url: d.expired_url.filter(|u| !u.is_empty()),
                password: d.password.filter(|p| !p.is_empty()),
                disabled: d.archived,
                clicks: d.clicks,
                rules,
                notes,
                ..SourceLink::default()
            }
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_export_is_read_with_its_tags_and_guarded_cells() {
        let csv = "Short link,Destination URL,Clicks,Created at,Link ID,Tags\n\
                   https://dub.sh/try,https://dub.co/,120,2024-05-01T12:00:00.000Z,link_1KAP,\"marketing, launch\"\n\
                   https://go.acme.example/eq,'=https://acme.example/?a=1,3,2024-05-02T12:00:00.000Z,link_2,\n";
        let links = read_csv(csv).unwrap();
        assert_eq!(links[0].domain.as_deref(), Some("dub.sh"));
        assert_eq!(links[0].code, "try");
        assert_eq!(links[0].tags, ["marketing", "launch"]);
        assert_eq!(links[0].clicks, Some(120));
        assert_eq!(
            links[1].target_url, "=https://acme.example/?a=1",
            "the guard is taken off"
        );
        assert!(read_csv("Link ID\nx\n").is_err());
    }

    #[test]
    fn an_api_page_brings_expiry_password_and_targets() {
        let page = r#"[{"id":"link_1KAP","domain":"dub.sh","key":"try","url":"https://dub.co/","shortLink":"https://dub.sh/try",
          "archived":false,"expiresAt":"2030-01-01T00:00:00.000Z","expiredUrl":"https://dub.co/ended","password":"s3cret",
          "proxy":true,"title":"Try Dub","description":null,"image":null,"rewrite":false,
          "ios":"https://apps.apple.com/app/id1","android":null,"geo":{"DE":"https://dub.co/de"},
          "tags":[{"id":"tag_1J","name":"marketing","color":"blue"}],"clicks":120,"createdAt":"2024-05-01T12:00:00.000Z",
          "testVariants":null,"trackConversion":false}]"#;
        let links = read_api_page(page).unwrap();
        let l = &links[0];
        assert_eq!(l.password.as_deref(), Some("s3cret"));
        assert_eq!(l.expired_url.as_deref(), Some("https://dub.co/ended"));
        assert!(l.expires_at.is_some());
        assert_eq!(l.rules.len(), 2);
        assert_eq!(l.rules[0].when.device, [Device::Ios]);
        assert_eq!(l.rules[1].when.country, ["DE"]);
        assert_eq!(l.tags, ["marketing"]);
        assert!(l.notes[0].contains("preview"));
    }
}

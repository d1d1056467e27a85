//! Kutt: its API v2's `GET /api/v2/links` pages (`limit` at most 50, `skip`, with
//! `total`). Kutt has no export file.
//!
//! `address` is the code, `domain` its domain (`null`: Kutt's default, which the short
//! URL in `link` names), `description` the title, `expire_in` the expiry and
//! `visit_count` the source's count. A link Kutt banned is skipped. A link with a
//! password arrives disabled: Kutt never gives the password out, and importing it open
//! would publish what its owner had closed.

use super::source::{parse_time, split_short_link, SourceLink, Unreadable};
use serde::Deserialize;

/// One page, and where the next starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiPage {
    pub links: Vec<SourceLink>,
    /// `skip` for the next page, when there is one.
    pub next_skip: Option<u64>,
}

#[derive(Deserialize)]
struct Page {
    #[serde(default)]
    total: u64,
    #[serde(default)]
    skip: u64,
    #[serde(default)]
    data: Vec<KuttLink>,
}

#[derive(Deserialize)]
struct KuttLink {
    address: String,
    target: String,
    #[serde(default)]
    banned: bool,
    #[serde(default)]
    password: bool,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    expire_in: Option<String>,
    #[serde(default)]
    visit_count: Option<u64>,
    #[serde(default)]
    domain: Option<String>,
    #[serde(default)]
    link: Option<String>,
    #[serde(default)]
    created_at: Option<String>,
}

/// Reads one page of `GET /api/v2/links`.
pub fn read_api_page(json: &str) -> Result<ApiPage, Unreadable> {
    let page: Page = serde_json::from_str(json)
        .map_err(|e| Unreadable(format!("not a page of Kutt's links: {e}")))?;
    let seen = page.skip + page.data.len() as u64;
    let next_skip = (!page.data.is_empty() && seen < page.total).then_some(seen);
    let links = page
        .data
        .into_iter()
        .enumerate()
        .map(|(i, k)| {
            let mut notes = Vec::new();
            let skip = k.banned.then(|| {
                "banned at Kutt: a link its operators took down is not brought back".to_owned()
            });
            if k.password {
                notes.push(
                    "protected by a password at Kutt, which Kutt never gives out: imported \
                     disabled; give it a password (or make it public) in Hop, then enable it"
                        .into(),
                );
            }
            SourceLink {
                row: i + 1,
                domain: k
                    .domain
                    .map(|d| d.to_ascii_lowercase())
                    .or_else(|| k.link.as_deref().and_then(split_short_link).map(|(d, _)| d)),
                code: k.address,
                target_url: k.target,
                title: k.description.filter(|d| !d.trim().is_empty()),
                created_at: k.created_at.as_deref().and_then(parse_time),
                expires_at: k.expire_in.as_deref().and_then(parse_time),
                clicks: k.visit_count,
                disabled: k.password,
                notes,
                skip,
                ..SourceLink::default()
            }
        })
        .collect();
    Ok(ApiPage { links, next_skip })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_is_read_and_banned_or_closed_links_are_not_opened() {
        let page = r#"{"total":3,"limit":2,"skip":0,"data":[
          {"id":"8c1e5b3a-3f9b-4c1e-9a55-0d6a3c2e7f10","address":"gh","banned":false,"created_at":"2024-12-01T10:00:00.000Z",
           "updated_at":"2024-12-01T10:00:00.000Z","password":false,"description":"GitHub","expire_in":"2030-01-01 00:00:00",
           "target":"https://github.com/","visit_count":17,"domain":null,"link":"https://kutt.it/gh"},
          {"id":"9d","address":"Secret","banned":true,"created_at":"2024-12-02T10:00:00.000Z","password":true,
           "description":null,"expire_in":null,"target":"https://example.com/s","visit_count":3,"domain":"go.acme.example",
           "link":"https://go.acme.example/Secret"}]}"#;
        let read = read_api_page(page).unwrap();
        assert_eq!(read.next_skip, Some(2));
        let gh = &read.links[0];
        assert_eq!(
            (gh.domain.as_deref(), gh.code.as_str()),
            (Some("kutt.it"), "gh")
        );
        assert_eq!(gh.title.as_deref(), Some("GitHub"));
        assert_eq!(gh.clicks, Some(17));
        assert!(gh.expires_at.is_some() && gh.skip.is_none());
        let secret = &read.links[1];
        assert!(secret.skip.as_deref().unwrap().contains("banned"));
        assert!(secret.disabled && secret.notes[0].contains("password"));
        let last = r#"{"total":3,"limit":2,"skip":2,"data":[{"address":"x","target":"https://x.example/"}]}"#;
        assert_eq!(read_api_page(last).unwrap().next_skip, None);
    }
}

//! YOURLS: its database table `yourls_url` exported as CSV with a header row
//! (`keyword, url, title, timestamp, ip, clicks`; phpMyAdmin's or `mysql`'s export), and
//! its API: `action=stats` answers (`links.link_1…`, paged by `limit` and `start`) and the
//! `api-list-extended` plugin's `action=list` (`result[]`, paged by `offset`).
//!
//! A keyword is case-sensitive in YOURLS (a binary collation) and may be one letter: it is
//! kept exactly. The table names no domain: the import's domain applies. Timestamps are
//! UTC (`Y-m-d H:i:s`). The visitor's IP address YOURLS stored with each link is never
//! imported.

use super::source::{csv_records, parse_time, split_short_link, SourceLink, Unreadable};
use serde::Deserialize;
use std::collections::BTreeMap;

pub(super) const FIELDS: &[(&str, &[&str])] = &[
    ("keyword", &["keyword"]),
    ("url", &["url"]),
    ("title", &["title"]),
    ("timestamp", &["timestamp"]),
    ("clicks", &["clicks"]),
];

/// Reads `yourls_url` exported as CSV with its column names.
pub fn read_csv(content: &str) -> Result<Vec<SourceLink>, Unreadable> {
    let (columns, records) = csv_records(
        content,
        FIELDS,
        &[&["keyword"], &["url"]],
        "not an export of yourls_url: it names keyword and url",
    )?;
    let mut links = Vec::new();
    for (row, record) in records {
        let cell = |f: &str| columns.cell(&record, f);
        links.push(SourceLink {
            row,
            // Exactly as stored: case and all (`cell` trims only the cell's spaces).
            code: cell("keyword").unwrap_or_default().to_owned(),
            target_url: cell("url").unwrap_or_default().to_owned(),
            title: cell("title").filter(|t| *t != "NULL").map(str::to_owned),
            created_at: cell("timestamp").and_then(parse_time),
            clicks: cell("clicks").and_then(|c| c.parse().ok()),
            ..SourceLink::default()
        });
    }
    Ok(links)
}

/// A count YOURLS sends as a number or a string.
#[derive(Deserialize)]
#[serde(untagged)]
enum Count {
    N(u64),
    S(String),
}

impl Count {
    fn get(&self) -> Option<u64> {
        match self {
            Count::N(n) => Some(*n),
            Count::S(s) => s.trim().parse().ok(),
        }
    }
}

#[derive(Deserialize)]
struct Stat {
    #[serde(default)]
    shorturl: Option<String>,
    #[serde(default)]
    keyword: Option<String>,
    url: String,
    #[serde(default)]
    title: Option<String>,
    #[serde(default)]
    timestamp: Option<String>,
    #[serde(default)]
    clicks: Option<Count>,
}

#[derive(Deserialize)]
struct Answer {
    /// `action=stats`: `link_1`, `link_2`, … in the order returned.
    #[serde(default)]
    links: Option<BTreeMap<String, Stat>>,
    /// `action=list` (api-list-extended).
    #[serde(default)]
    result: Option<Vec<Stat>>,
}

/// Reads an answer of YOURLS' API (`action=stats`, or the plugin's `action=list`).
pub fn read_api(json: &str) -> Result<Vec<SourceLink>, Unreadable> {
    let answer: Answer = serde_json::from_str(json)
        .map_err(|e| Unreadable(format!("not an answer of YOURLS' API: {e}")))?;
    let stats: Vec<Stat> = match (answer.links, answer.result) {
        (Some(links), _) => {
            // `link_10` after `link_9`: ordered by the number, as YOURLS numbered them.
            let mut numbered: Vec<(u64, Stat)> = links
                .into_iter()
                .map(|(k, v)| {
                    let n = k.trim_start_matches("link_").parse().unwrap_or(u64::MAX);
                    (n, v)
                })
                .collect();
            numbered.sort_by_key(|(n, _)| *n);
            numbered.into_iter().map(|(_, v)| v).collect()
        }
        (None, Some(result)) => result,
        (None, None) => {
            return Err(Unreadable(
                "the answer lists no links (action=stats needs a limit, e.g. limit=1000)".into(),
            ))
        }
    };
    Ok(stats
        .into_iter()
        .enumerate()
        .map(|(i, s)| {
            let from_url = s.shorturl.as_deref().and_then(split_short_link);
            SourceLink {
                row: i + 1,
                domain: from_url.as_ref().map(|(d, _)| d.clone()),
                code: s
                    .keyword
                    .or_else(|| from_url.map(|(_, c)| c))
                    .unwrap_or_default(),
                target_url: s.url,
                title: s.title.filter(|t| !t.trim().is_empty()),
                created_at: s.timestamp.as_deref().and_then(parse_time),
                clicks: s.clicks.as_ref().and_then(Count::get),
                ..SourceLink::default()
            }
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_export_keeps_each_keyword_exactly() {
        let csv = "keyword,url,title,timestamp,ip,clicks\n\
                   ozh,https://ozh.org/,Ozh,2024-03-05 14:07:33,127.0.0.1,42\n\
                   Ozh,https://ozh.org/other,NULL,2024-03-05 14:07:34,127.0.0.1,0\n\
                   a,https://example.com/a,,2024-01-02 09:00:00,10.0.0.2,7\n";
        let links = read_csv(csv).unwrap();
        let codes: Vec<&str> = links.iter().map(|l| l.code.as_str()).collect();
        assert_eq!(codes, ["ozh", "Ozh", "a"], "case kept, one letter kept");
        assert_eq!(links[0].created_at, Some(1_709_647_653_000));
        assert_eq!(links[0].clicks, Some(42));
        assert_eq!(links[1].title, None);
        assert_eq!(links[0].domain, None, "the import's domain applies");
        assert!(read_csv("url\nhttps://a/\n").is_err());
    }

    #[test]
    fn stats_and_list_answers_are_read_in_their_order() {
        let stats = r#"{"links":{"link_2":{"shorturl":"https://sho.rt/Abc","url":"https://example.com/a","title":null,"timestamp":"2024-01-02 09:00:00","ip":"10.0.0.2","clicks":"7"},
            "link_10":{"shorturl":"https://sho.rt/z","url":"https://example.com/z","title":"","timestamp":"2024-01-03 09:00:00","ip":"10.0.0.2","clicks":1},
            "link_1":{"shorturl":"https://sho.rt/ozh","url":"https://ozh.org/","title":"Ozh","timestamp":"2024-03-05 14:07:33","ip":"127.0.0.1","clicks":"42"}},
            "stats":{"total_links":3,"total_clicks":50},"statusCode":"200","message":"success"}"#;
        let links = read_api(stats).unwrap();
        let got: Vec<(&str, Option<u64>)> =
            links.iter().map(|l| (l.code.as_str(), l.clicks)).collect();
        assert_eq!(got, [("ozh", Some(42)), ("Abc", Some(7)), ("z", Some(1))]);
        assert_eq!(links[0].domain.as_deref(), Some("sho.rt"));
        let list = r#"{"statusCode":200,"message":"success","result":[{"keyword":"ozh","url":"https://ozh.org/","title":"Ozh","timestamp":"2024-03-05 14:07:33","ip":"127.0.0.1","clicks":42}],"total":"100","offset":0,"perpage":50}"#;
        assert_eq!(read_api(list).unwrap()[0].code, "ozh");
        let no_limit = r#"{"stats":{"total_links":3},"statusCode":"200"}"#;
        assert!(read_api(no_limit).unwrap_err().0.contains("limit"));
    }
}

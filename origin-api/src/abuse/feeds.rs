//! Threat feeds as their publishers write them, read into hosts and URLs (docs/abuse.md).
//! Pure: the desk fetches the text and stores what this returns.

use std::collections::BTreeSet;

/// The most a feed may hold: more is refused, not cut (a cut list would silently stop
/// protecting against its tail).
pub const MAX_ENTRIES: usize = 2_000_000;
/// The most bytes a feed's text may have.
pub const MAX_BYTES: usize = 128 * 1024 * 1024;

/// How a feed is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FeedFormat {
    /// abuse.ch URLhaus' CSV dump: `# ` comments, then quoted rows whose third field is
    /// the URL. Its plain-text lists (one URL a line) read as `plain`.
    Urlhaus,
    /// PhishTank's CSV: a header naming `url`, one phish a row.
    Phishtank,
    /// OpenPhish's feed: one URL a line.
    Openphish,
    /// A hosts file: `0.0.0.0 host` (or `127.0.0.1`, or a host alone) a line, `#`
    /// comments.
    Hosts,
    /// One host or URL a line (a line with `://` is a URL), `#` comments.
    Plain,
}

impl FeedFormat {
    pub const ALL: [FeedFormat; 5] = [
        FeedFormat::Urlhaus,
        FeedFormat::Phishtank,
        FeedFormat::Openphish,
        FeedFormat::Hosts,
        FeedFormat::Plain,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            FeedFormat::Urlhaus => "urlhaus",
            FeedFormat::Phishtank => "phishtank",
            FeedFormat::Openphish => "openphish",
            FeedFormat::Hosts => "hosts",
            FeedFormat::Plain => "plain",
        }
    }

    pub fn parse(s: &str) -> Option<FeedFormat> {
        FeedFormat::ALL.into_iter().find(|f| f.as_str() == s)
    }
}

/// What a feed lists, normalized as Hop normalizes targets, without repeats.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Entries {
    /// Hosts: each matches itself and every host under it.
    pub hosts: BTreeSet<String>,
    /// URLs: each matches that URL exactly.
    pub urls: BTreeSet<String>,
    /// Lines that named nothing Hop could match (not a URL, a private address, ...).
    pub skipped: usize,
}

impl Entries {
    pub fn len(&self) -> usize {
        self.hosts.len() + self.urls.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Why a feed's text was refused whole.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum FeedError {
    #[error("the feed has more than {MAX_ENTRIES} entries")]
    TooManyEntries,
    #[error("the feed is larger than {MAX_BYTES} bytes")]
    TooLarge,
    #[error("the {format} feed's CSV cannot be read: {why}")]
    Csv { format: &'static str, why: String },
    #[error("the phishtank feed has no `url` column in its header")]
    NoUrlColumn,
}

/// Reads `text`, written as `format`.
pub fn parse(format: FeedFormat, text: &str) -> Result<Entries, FeedError> {
    if text.len() > MAX_BYTES {
        return Err(FeedError::TooLarge);
    }
    let mut entries = Entries::default();
    match format {
        FeedFormat::Urlhaus => {
            let rows = text.lines().filter(|l| !l.trim_start().starts_with('#'));
            let body = rows.collect::<Vec<_>>().join("\n");
            for record in csv_reader(&body, false).records() {
                let record = record.map_err(|e| csv_error(format, e))?;
                add_url(&mut entries, record.get(2).unwrap_or_default())?;
            }
        }
        FeedFormat::Phishtank => {
            let mut reader = csv_reader(text, true);
            let column = reader
                .headers()
                .map_err(|e| csv_error(format, e))?
                .iter()
                .position(|h| h.trim() == "url")
                .ok_or(FeedError::NoUrlColumn)?;
            for record in reader.records() {
                let record = record.map_err(|e| csv_error(format, e))?;
                add_url(&mut entries, record.get(column).unwrap_or_default())?;
            }
        }
        FeedFormat::Openphish => {
            for line in lines(text) {
                add_url(&mut entries, line)?;
            }
        }
        FeedFormat::Hosts => {
            for line in lines(text) {
                let mut words = line.split_whitespace();
                let first = words.next().unwrap_or_default();
                // `0.0.0.0 a.example b.example`: the address, then hosts.
                if first.parse::<std::net::IpAddr>().is_ok() {
                    for host in words {
                        add_host(&mut entries, host)?;
                    }
                } else {
                    add_host(&mut entries, first)?;
                }
            }
        }
        FeedFormat::Plain => {
            for line in lines(text) {
                if line.contains("://") {
                    add_url(&mut entries, line)?;
                } else {
                    add_host(&mut entries, line)?;
                }
            }
        }
    }
    Ok(entries)
}

/// The lines that say something: trimmed, without `#` comments.
fn lines(text: &str) -> impl Iterator<Item = &str> {
    text.lines()
        .map(|l| l.split('#').next().unwrap_or_default().trim())
        .filter(|l| !l.is_empty())
}

fn csv_reader(text: &str, headers: bool) -> csv::Reader<&[u8]> {
    csv::ReaderBuilder::new()
        .has_headers(headers)
        .flexible(true)
        .from_reader(text.as_bytes())
}

fn csv_error(format: FeedFormat, e: csv::Error) -> FeedError {
    FeedError::Csv {
        format: format.as_str(),
        why: e.to_string(),
    }
}

fn full(entries: &Entries) -> Result<(), FeedError> {
    if entries.len() >= MAX_ENTRIES {
        return Err(FeedError::TooManyEntries);
    }
    Ok(())
}

/// A URL as Hop stores a target; one it could never store (not http(s), no host) is
/// skipped.
fn add_url(entries: &mut Entries, raw: &str) -> Result<(), FeedError> {
    full(entries)?;
    match shared::validate_target(raw.trim()) {
        Ok(url) => {
            entries.urls.insert(url.as_str().to_owned());
        }
        Err(_) => entries.skipped += 1,
    }
    Ok(())
}

/// A host as Hop normalizes domains; addresses and names that are no public host are
/// skipped (a hosts file lists `localhost` and the like), and so is a public suffix
/// (`co.uk`, `github.io`): banning one would ban every site under it, and a feed that
/// lists one is wrong or hostile.
fn add_host(entries: &mut Entries, raw: &str) -> Result<(), FeedError> {
    full(entries)?;
    let host = raw.trim().trim_end_matches('.');
    match shared::normalize_domain(host) {
        Ok(h)
            if h.contains('.')
                && h.parse::<std::net::IpAddr>().is_err()
                && !is_public_suffix(&h) =>
        {
            entries.hosts.insert(h);
        }
        _ => entries.skipped += 1,
    }
    Ok(())
}

/// Whether `host` (normalized) is itself a public suffix, by the Public Suffix List's
/// rules, its private section included (`github.io`, `blogspot.com`).
fn is_public_suffix(host: &str) -> bool {
    psl::suffix(host.as_bytes()).is_some_and(|s| s.as_bytes() == host.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_public_suffix_is_never_a_listed_host() {
        let e = parse(
            FeedFormat::Hosts,
            "0.0.0.0 co.uk\n0.0.0.0 github.io\n0.0.0.0 evil.example\n0.0.0.0 phish.github.io\n",
        )
        .expect("parsed");
        assert_eq!(e.hosts, set(&["evil.example", "phish.github.io"]));
        assert_eq!(e.skipped, 2);
    }

    fn set(items: &[&str]) -> BTreeSet<String> {
        items.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn urlhaus_rows_give_their_urls() {
        let text = "################\n# abuse.ch URLhaus Database Dump (CSV)\n\
            # id,dateadded,url,url_status,last_online,threat,tags,urlhaus_link,reporter\n\
            \"3272929\",\"2024-10-30 11:38:07\",\"http://203.0.113.9:56208/i\",\"online\",\"2024-10-30\",\"malware_download\",\"32-bit,elf\",\"https://urlhaus.abuse.ch/url/3272929/\",\"geenensp\"\n\
            \"3272930\",\"2024-10-30 11:38:08\",\"https://Evil.Example/pay?x=1\",\"online\",\"\",\"malware_download\",\"\",\"\",\"r\"\n";
        let e = parse(FeedFormat::Urlhaus, text).expect("parsed");
        assert_eq!(
            e.urls,
            set(&["http://203.0.113.9:56208/i", "https://evil.example/pay?x=1"])
        );
        assert!(e.hosts.is_empty());
    }

    #[test]
    fn phishtank_reads_the_url_column_by_its_header() {
        let text = "phish_id,url,phish_detail_url,submission_time,verified,verification_time,online,target\n\
            123,https://login.bank.example.evil.example/,http://www.phishtank.com/phish_detail.php?phish_id=123,2024-01-01,yes,2024-01-01,yes,Other\n";
        let e = parse(FeedFormat::Phishtank, text).expect("parsed");
        assert_eq!(e.urls, set(&["https://login.bank.example.evil.example/"]));
        assert_eq!(
            parse(FeedFormat::Phishtank, "id,link\n1,https://a.example/\n"),
            Err(FeedError::NoUrlColumn)
        );
    }

    #[test]
    fn hosts_files_and_plain_lists_give_hosts_and_urls() {
        let hosts = "# blocklist\n127.0.0.1 localhost\n0.0.0.0 Bad.Example. other.example # inline\nlone.example\n0.0.0.0 10.0.0.1\n";
        let e = parse(FeedFormat::Hosts, hosts).expect("parsed");
        assert_eq!(
            e.hosts,
            set(&["bad.example", "lone.example", "other.example"])
        );
        assert_eq!(e.skipped, 2, "localhost and an address");
        let plain = "evil.example\nhttps://drive.example/file/d/abc\nftp://x.example/\n\n";
        let e = parse(FeedFormat::Plain, plain).expect("parsed");
        assert_eq!(e.hosts, set(&["evil.example"]));
        assert_eq!(e.urls, set(&["https://drive.example/file/d/abc"]));
        assert_eq!(e.skipped, 1);
        let e = parse(
            FeedFormat::Openphish,
            "https://a.example/x\nhttps://a.example/x\n",
        )
        .expect("parsed");
        assert_eq!(e.urls.len(), 1);
    }

    #[test]
    fn a_feed_too_large_is_refused_whole() {
        let text: String = (0..MAX_ENTRIES + 1)
            .map(|i| format!("h{i}.example\n"))
            .collect();
        assert_eq!(
            parse(FeedFormat::Plain, &text),
            Err(FeedError::TooManyEntries)
        );
    }
}

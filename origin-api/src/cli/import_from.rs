//! `import --from SOURCE FILE-or-URL`: another shortener's links, sent to a running
//! origin's `POST /v1/imports` a part at a time: a file in parts of `--rows-per-call`
//! rows, an API a page at a time, fetched from here (the source's token never reaches
//! the origin).
//!
//! A re-run resumes: a journal beside the file (or in the working directory for an API)
//! records the parts done and, for an API, the next page's cursor; it is rewritten whole
//! (to a temporary file, then renamed) after each part. Sending a part again is harmless:
//! the origin finds the links an import made by their codes. Links the origin defers
//! (codes of the generated shape, while the edge learns of the import) are sent again
//! after the `Retry-After` it gives.

use super::api_client::{ApiClient, ClientError};
use crate::imports::bitly;
use crate::views::imports::{
    Format, ImportReport, ImportRequest, ImportRow, ImportSummary, Outcome, Source,
};
use indicatif::ProgressBar;
use reqwest::header::{AUTHORIZATION, RETRY_AFTER};
use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Bitly's API allows 150 calls a minute to a token's group listing (its published
/// rate limit); calls are spaced so that a long import never meets it.
pub const BITLY_CALLS_PER_MINUTE: u32 = 150;
/// Links a Bitly API page carries at most.
const BITLY_PAGE_SIZE: &str = "100";
/// How often a source's `429` or `5xx` is waited out before the import stops.
const SOURCE_ATTEMPTS: u32 = 8;
/// The longest a source's `Retry-After` is honoured as given.
const MAX_SOURCE_WAIT: Duration = Duration::from_secs(120);
/// How many times deferred links are sent again before the import stops and says so.
const DEFERRED_ROUNDS: u32 = 20;

/// What to import and how.
#[derive(Debug, Clone)]
pub struct FromOptions {
    pub source: Source,
    /// A file, or (`http://`, `https://`) the source's API listing.
    pub input: String,
    pub dry_run: bool,
    pub domain: Option<String>,
    /// Defaults to `FILE.hop-import-from`, or `hop-import-{source}.journal` for an API.
    pub journal: Option<PathBuf>,
    /// Where every link's line is written as CSV (`row,domain,code,outcome,reason,notes`).
    pub report: Option<PathBuf>,
    /// The source's API token (`HOP_SOURCE_TOKEN`).
    pub source_token: Option<SecretString>,
    /// Rows of a file per call.
    pub rows_per_call: usize,
    /// The spacing of calls to the source's API (Bitly: 60 s / 150).
    pub source_interval: Duration,
}

/// Why an import from another shortener stopped.
#[derive(Debug, thiserror::Error)]
pub enum FromError {
    #[error("{path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("{0}")]
    Source(String),
    #[error("{path}: {detail}")]
    BadJournal { path: String, detail: String },
    #[error(transparent)]
    Client(#[from] ClientError),
}

/// What a run did, every part's report merged.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FromSummary {
    pub summary: ImportSummary,
    /// Every link's line, in the source's order (rows numbered across parts).
    pub rows: Vec<ImportRow>,
    /// Parts (or pages) sent by this run, and skipped as done by an earlier one.
    pub parts: usize,
    pub resumed_from: usize,
    /// The file's columns the importer does not read, as the origin said.
    pub unused_columns: Vec<String>,
}

/// The journal: how far an import got.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
struct Journal {
    source: String,
    input: String,
    /// Parts (pages) done.
    done: usize,
    /// The source's rows (items) they held: the next part's are numbered after them.
    #[serde(default)]
    rows: usize,
    /// The next page's cursor (an API).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    cursor: Option<String>,
    /// The last part was the last: nothing is left.
    #[serde(default)]
    finished: bool,
}

fn io_err(path: &Path) -> impl Fn(std::io::Error) -> FromError + '_ {
    move |source| FromError::Io {
        path: path.display().to_string(),
        source,
    }
}

impl Journal {
    fn load(path: &Path, source: Source, input: &str) -> Result<Journal, FromError> {
        let fresh = Journal {
            source: source.name().to_owned(),
            input: input.to_owned(),
            ..Journal::default()
        };
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(fresh),
            Err(e) => return Err(io_err(path)(e)),
        };
        let journal: Journal = serde_json::from_str(&text).map_err(|e| FromError::BadJournal {
            path: path.display().to_string(),
            detail: format!("not a journal of this command ({e}); move it away to start over"),
        })?;
        if journal.source != fresh.source || journal.input != fresh.input {
            return Err(FromError::BadJournal {
                path: path.display().to_string(),
                detail: format!(
                    "records an import of {} from {}; give another --journal",
                    journal.input, journal.source
                ),
            });
        }
        Ok(journal)
    }

    /// Written whole: a crash leaves the old journal or the new one, never half of one.
    fn save(&self, path: &Path) -> Result<(), FromError> {
        let tmp = path.with_extension("tmp");
        let text = serde_json::to_string(self).unwrap_or_default();
        std::fs::write(&tmp, text).map_err(io_err(&tmp))?;
        std::fs::rename(&tmp, path).map_err(io_err(path))
    }
}

/// Imports as `options` say, through `client`.
pub async fn import_from(
    client: &ApiClient,
    options: &FromOptions,
    progress: &ProgressBar,
) -> Result<FromSummary, FromError> {
    let is_api = options.input.starts_with("http://") || options.input.starts_with("https://");
    let journal_path = options.journal.clone().unwrap_or_else(|| {
        if is_api {
            PathBuf::from(format!("hop-import-{}.journal", options.source.name()))
        } else {
            PathBuf::from(format!("{}.hop-import-from", options.input))
        }
    });
    // A dry run records nothing: it may be run any number of times before the import.
    let mut journal = if options.dry_run {
        Journal::default()
    } else {
        Journal::load(&journal_path, options.source, &options.input)?
    };
    let mut out = FromSummary {
        resumed_from: journal.done,
        ..FromSummary::default()
    };
    if journal.finished {
        return Ok(out);
    }
    if is_api {
        import_api(
            client,
            options,
            &mut journal,
            &journal_path,
            &mut out,
            progress,
        )
        .await?;
    } else {
        import_file(
            client,
            options,
            &mut journal,
            &journal_path,
            &mut out,
            progress,
        )
        .await?;
    }
    if let Some(path) = &options.report {
        write_report(path, &out.rows)?;
    }
    Ok(out)
}

/// A file, in parts.
async fn import_file(
    client: &ApiClient,
    options: &FromOptions,
    journal: &mut Journal,
    journal_path: &Path,
    out: &mut FromSummary,
    progress: &ProgressBar,
) -> Result<(), FromError> {
    let path = Path::new(&options.input);
    let text = std::fs::read_to_string(path).map_err(io_err(path))?;
    let parts = if text.trim_start().starts_with(['{', '[']) {
        // A page of the source's API saved to a file.
        vec![(Format::Api, text, 0)]
    } else {
        csv_parts(&text, options.rows_per_call.max(1))
            .map_err(|e| FromError::Source(format!("{}: {e}", path.display())))?
            .into_iter()
            .map(|(part, offset)| (Format::Csv, part, offset))
            .collect()
    };
    progress.set_length(parts.len() as u64);
    for (i, (format, content, offset)) in parts.into_iter().enumerate() {
        if i < journal.done {
            progress.inc(1);
            continue;
        }
        let report = send(client, options, format, content).await?;
        merge(out, report, offset);
        out.parts += 1;
        progress.inc(1);
        if !options.dry_run {
            journal.done = i + 1;
            journal.save(journal_path)?;
        }
    }
    if !options.dry_run {
        journal.finished = true;
        journal.save(journal_path)?;
    }
    Ok(())
}

/// A CSV file as parts of at most `rows` records, each with the header row, and the
/// number of records before it. Cut by the CSV reader, so a quoted newline stays inside
/// its cell.
fn csv_parts(text: &str, rows: usize) -> Result<Vec<(String, usize)>, csv::Error> {
    let mut reader = csv::ReaderBuilder::new()
        .flexible(true)
        .from_reader(text.as_bytes());
    let header = reader.headers()?.clone();
    let mut parts = Vec::new();
    let mut writer: Option<csv::Writer<Vec<u8>>> = None;
    let mut in_part = 0;
    let mut before = 0;
    for record in reader.records() {
        let record = record?;
        let w = writer.get_or_insert_with(|| {
            let mut w = csv::Writer::from_writer(Vec::new());
            w.write_record(&header).ok();
            w
        });
        w.write_record(&record)?;
        in_part += 1;
        if in_part == rows {
            let bytes = writer
                .take()
                .and_then(|w| w.into_inner().ok())
                .unwrap_or_default();
            parts.push((String::from_utf8_lossy(&bytes).into_owned(), before));
            before += in_part;
            in_part = 0;
        }
    }
    if let Some(w) = writer {
        let bytes = w.into_inner().unwrap_or_default();
        parts.push((String::from_utf8_lossy(&bytes).into_owned(), before));
    }
    if parts.is_empty() {
        let mut w = csv::Writer::from_writer(Vec::new());
        w.write_record(&header)?;
        parts.push((
            String::from_utf8_lossy(&w.into_inner().unwrap_or_default()).into_owned(),
            0,
        ));
    }
    Ok(parts)
}

/// How a source's API wants its token.
enum Auth<'t> {
    Bearer(&'t SecretString),
    Header(&'static str, &'t SecretString),
    /// YOURLS signs its requests in the URL (`signature=…`).
    InUrl,
}

/// What a source's API is asked for, page after page.
struct Pager {
    source: Source,
    base: url::Url,
}

impl Pager {
    /// The URL of the page at `cursor` (`None`: the first).
    fn page(&self, cursor: Option<&str>) -> url::Url {
        let mut url = self.base.clone();
        {
            let mut q = url.query_pairs_mut();
            match self.source {
                Source::Bitly => {
                    q.append_pair("size", BITLY_PAGE_SIZE);
                    if let Some(c) = cursor {
                        q.append_pair("search_after", c);
                    }
                }
                Source::Shlink => {
                    q.append_pair("itemsPerPage", "100");
                    q.append_pair("page", cursor.unwrap_or("1"));
                }
                Source::Kutt => {
                    q.append_pair("limit", "50");
                    q.append_pair("skip", cursor.unwrap_or("0"));
                }
                Source::Dub => {
                    q.append_pair("pageSize", "100");
                    q.append_pair("page", cursor.unwrap_or("1"));
                }
                Source::Yourls => {
                    q.append_pair("limit", "1000");
                    q.append_pair("start", cursor.unwrap_or("0"));
                    q.append_pair("format", "json");
                }
            }
        }
        url
    }

    /// How many of the source's items `page` holds, and the next page's cursor.
    fn next(&self, page: &str, cursor: Option<&str>) -> Result<(usize, Option<String>), String> {
        let n =
            |c: Option<&str>, first: u64| c.and_then(|c| c.parse::<u64>().ok()).unwrap_or(first);
        Ok(match self.source {
            Source::Bitly => {
                let p = bitly::read_api_page(page).map_err(|e| e.0)?;
                (p.links.last().map_or(0, |l| l.row), p.search_after)
            }
            Source::Shlink => {
                let p = crate::imports::shlink::read_api_page(page).map_err(|e| e.0)?;
                (p.links.len(), p.next_page.map(|p| p.to_string()))
            }
            Source::Kutt => {
                let p = crate::imports::kutt::read_api_page(page).map_err(|e| e.0)?;
                (p.links.len(), p.next_skip.map(|s| s.to_string()))
            }
            Source::Dub => {
                let items = crate::imports::dub::read_api_page(page)
                    .map_err(|e| e.0)?
                    .len();
                (
                    items,
                    (items == 100).then(|| (n(cursor, 1) + 1).to_string()),
                )
            }
            Source::Yourls => {
                let items = crate::imports::yourls::read_api(page)
                    .map_err(|e| e.0)?
                    .len();
                (
                    items,
                    (items == 1000).then(|| (n(cursor, 0) + 1000).to_string()),
                )
            }
        })
    }
}

/// An API, a page at a time.
async fn import_api(
    client: &ApiClient,
    options: &FromOptions,
    journal: &mut Journal,
    journal_path: &Path,
    out: &mut FromSummary,
    progress: &ProgressBar,
) -> Result<(), FromError> {
    let token = options.source_token.as_ref();
    let needs_token = || {
        FromError::Source(format!(
            "set HOP_SOURCE_TOKEN to {}'s API token",
            options.source.name()
        ))
    };
    let auth = match options.source {
        Source::Bitly | Source::Dub => Auth::Bearer(token.ok_or_else(needs_token)?),
        Source::Shlink => Auth::Header("x-api-key", token.ok_or_else(needs_token)?),
        Source::Kutt => Auth::Header("x-api-key", token.ok_or_else(needs_token)?),
        Source::Yourls => Auth::InUrl,
    };
    let pager = Pager {
        source: options.source,
        base: url::Url::parse(&options.input)
            .map_err(|e| FromError::Source(format!("{}: {e}", options.input)))?,
    };
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(60))
        .user_agent(concat!("hop-origin/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| FromError::Source(e.to_string()))?;
    let mut last_call: Option<Instant> = None;
    loop {
        let url = pager.page(journal.cursor.as_deref());
        let mut page = fetch(&http, &url, &auth, options.source_interval, &mut last_call).await?;
        if options.source == Source::Shlink {
            page = with_redirect_rules(&http, &pager.base, page, &auth, options, &mut last_call)
                .await?;
        }
        let (count, next) = pager
            .next(&page, journal.cursor.as_deref())
            .map_err(|e| FromError::Source(format!("{url}: {e}")))?;
        let report = send(client, options, Format::Api, page).await?;
        merge(out, report, journal.rows);
        journal.rows += count;
        out.parts += 1;
        progress.inc(count as u64);
        journal.done += 1;
        journal.cursor = next;
        journal.finished = journal.cursor.is_none() || count == 0;
        if !options.dry_run {
            journal.save(journal_path)?;
        }
        if journal.finished {
            return Ok(());
        }
    }
}

/// A Shlink page whose links have redirect rules, each with its rules as
/// `GET …/short-urls/{shortCode}/redirect-rules` answers them (`redirectRules`).
async fn with_redirect_rules(
    http: &reqwest::Client,
    base: &url::Url,
    page: String,
    auth: &Auth<'_>,
    options: &FromOptions,
    last_call: &mut Option<Instant>,
) -> Result<String, FromError> {
    let mut value: serde_json::Value = match serde_json::from_str(&page) {
        Ok(v) => v,
        // Not JSON: the origin says what is wrong with it.
        Err(_) => return Ok(page),
    };
    let Some(items) = value
        .pointer_mut("/shortUrls/data")
        .and_then(|d| d.as_array_mut())
    else {
        return Ok(page);
    };
    for item in items.iter_mut() {
        if item.get("hasRedirectRules").and_then(|h| h.as_bool()) != Some(true) {
            continue;
        }
        let Some(code) = item.get("shortCode").and_then(|c| c.as_str()) else {
            continue;
        };
        let mut url = base.clone();
        url.set_query(None);
        if let Ok(mut segments) = url.path_segments_mut() {
            segments.pop_if_empty().push(code).push("redirect-rules");
        }
        if let Some(domain) = item.get("domain").and_then(|d| d.as_str()) {
            url.query_pairs_mut().append_pair("domain", domain);
        }
        let rules = fetch(http, &url, auth, options.source_interval, last_call).await?;
        let rules: serde_json::Value =
            serde_json::from_str(&rules).map_err(|e| FromError::Source(format!("{url}: {e}")))?;
        item["redirectRules"] = rules
            .get("redirectRules")
            .cloned()
            .unwrap_or(serde_json::Value::Null);
    }
    Ok(value.to_string())
}

/// One page of the source's API, as text: calls spaced by `interval`, a `429` or `5xx`
/// waited out (its `Retry-After`, else a growing wait), anything else refused at once.
async fn fetch(
    http: &reqwest::Client,
    url: &url::Url,
    auth: &Auth<'_>,
    interval: Duration,
    last_call: &mut Option<Instant>,
) -> Result<String, FromError> {
    let mut wait = Duration::from_secs(1);
    for attempt in 1..=SOURCE_ATTEMPTS {
        if let Some(at) = last_call {
            let next = *at + interval;
            let now = Instant::now();
            if next > now {
                tokio::time::sleep(next - now).await;
            }
        }
        *last_call = Some(Instant::now());
        let request = match auth {
            Auth::Bearer(token) => http
                .get(url.clone())
                .header(AUTHORIZATION, format!("Bearer {}", token.expose_secret())),
            Auth::Header(name, token) => http.get(url.clone()).header(*name, token.expose_secret()),
            Auth::InUrl => http.get(url.clone()),
        };
        let sent = request.send().await;
        let response = match sent {
            Ok(r) => r,
            Err(e) if attempt < SOURCE_ATTEMPTS => {
                tracing::warn!("{url}: {e}; trying again in {wait:?}");
                tokio::time::sleep(wait).await;
                wait = (wait * 2).min(MAX_SOURCE_WAIT);
                continue;
            }
            Err(e) => return Err(FromError::Source(format!("{url}: {e}"))),
        };
        let status = response.status();
        if status.is_success() {
            return response
                .text()
                .await
                .map_err(|e| FromError::Source(format!("{url}: {e}")));
        }
        if status == reqwest::StatusCode::TOO_MANY_REQUESTS || status.is_server_error() {
            let asked = response
                .headers()
                .get(RETRY_AFTER)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.trim().parse::<u64>().ok())
                .map(Duration::from_secs);
            let pause = asked.unwrap_or(wait).min(MAX_SOURCE_WAIT);
            tracing::warn!("{url}: {status}; trying again in {pause:?}");
            tokio::time::sleep(pause).await;
            wait = (wait * 2).min(MAX_SOURCE_WAIT);
            continue;
        }
        let body = response.text().await.unwrap_or_default();
        return Err(FromError::Source(format!(
            "{url} refused the request ({status}): {}",
            body.chars().take(300).collect::<String>()
        )));
    }
    Err(FromError::Source(format!(
        "{url} kept failing; run the same command again later to resume"
    )))
}

/// Sends one part, and sends it again while the origin defers some of its links.
async fn send(
    client: &ApiClient,
    options: &FromOptions,
    format: Format,
    content: String,
) -> Result<ImportReport, FromError> {
    let request = ImportRequest {
        source: options.source,
        format,
        content,
        dry_run: options.dry_run,
        domain: options.domain.clone(),
    };
    let mut report = client.import(&request).await?;
    for _ in 0..DEFERRED_ROUNDS {
        let Some(wait) = report.retry_after_s.filter(|_| report.summary.deferred > 0) else {
            return Ok(report);
        };
        tracing::info!(
            "{} links wait for the edge to learn of the import; sending them again in {wait} s",
            report.summary.deferred
        );
        tokio::time::sleep(Duration::from_secs(wait.max(1))).await;
        let again = client.import(&request).await?;
        // What was decided before stays decided; what was deferred takes the new line.
        for (row, new) in report.rows.iter_mut().zip(again.rows) {
            if row.outcome == Outcome::Deferred {
                *row = new;
            }
        }
        report.retry_after_s = again.retry_after_s;
        report.summary = ImportSummary::of(&report.rows);
    }
    Ok(report)
}

/// Adds a part's report, its rows numbered after the `offset` rows before it.
fn merge(out: &mut FromSummary, report: ImportReport, offset: usize) {
    for column in report.unused_columns {
        if !out.unused_columns.contains(&column) {
            out.unused_columns.push(column);
        }
    }
    for mut row in report.rows {
        row.row += offset;
        out.rows.push(row);
    }
    out.summary = ImportSummary::of(&out.rows);
}

/// Every link's line as CSV.
fn write_report(path: &Path, rows: &[ImportRow]) -> Result<(), FromError> {
    let mut w = csv::Writer::from_path(path)
        .map_err(|e| FromError::Source(format!("{}: {e}", path.display())))?;
    let write = |w: &mut csv::Writer<std::fs::File>, cells: [&str; 7]| {
        w.write_record(cells)
            .map_err(|e| FromError::Source(format!("{}: {e}", path.display())))
    };
    write(
        &mut w,
        [
            "row",
            "domain",
            "code",
            "outcome",
            "reason",
            "notes",
            "short_url",
        ],
    )?;
    for r in rows {
        let outcome = serde_json::to_value(r.outcome)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default();
        write(
            &mut w,
            [
                &r.row.to_string(),
                r.domain.as_deref().unwrap_or_default(),
                &crate::views::link_fields::neutralized(&r.code),
                &outcome,
                &crate::views::link_fields::neutralized(r.reason.as_deref().unwrap_or_default()),
                &crate::views::link_fields::neutralized(&r.notes.join("; ")),
                r.short_url.as_deref().unwrap_or_default(),
            ],
        )?;
    }
    w.flush().map_err(io_err(path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_cut_into_parts_that_each_carry_the_header() {
        let text = "Bitlink,Long URL\ngo.a/1,https://a/1\ngo.a/2,\"https://a/2\nstill the cell\"\ngo.a/3,https://a/3\n";
        let parts = csv_parts(text, 2).unwrap();
        assert_eq!(parts.len(), 2);
        assert_eq!(parts[0].1, 0);
        assert_eq!(parts[1].1, 2);
        assert!(parts[0].0.starts_with("Bitlink,Long URL\n"));
        assert!(parts[0].0.contains("still the cell"));
        assert!(parts[1].0.starts_with("Bitlink,Long URL\ngo.a/3"));
        assert_eq!(csv_parts("Bitlink,Long URL\n", 2).unwrap().len(), 1);
    }
}

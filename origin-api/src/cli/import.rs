//! `import FILE.csv`: creates one link per row through the bulk API of a running origin,
//! and can be re-run until it has done everything, creating nothing twice.
//!
//! How it stays exactly-once:
//! - the whole file is parsed and checked before anything is sent, so a malformed file
//!   is refused and creates nothing;
//! - rows go in fixed ranges of `batch_size` rows; each call carries an
//!   `Idempotency-Key` made of the import's id, the range and a hash of the body, so a
//!   call whose answer was lost (origin killed, connection cut) returns the links it
//!   created when it is sent again, instead of creating them again;
//! - each answered call appends one line to a journal next to the file, written and
//!   synced before the next call. A re-run skips the rows the journal records and sends
//!   the rest in the same ranges, hence with the same keys. A line cut short by a crash
//!   is dropped (its call is then replayed through its key).
//!
//! A row may carry a link's password, so neither the journal's row fingerprints nor the
//! hash in an idempotency key (which the origin stores) is taken of it: each is taken
//! with the password replaced by its HMAC under a secret of the journal's own
//! ([`Fingerprints`]), which never leaves this machine. The journal, which holds that
//! secret, is made readable by its owner only; it lives beside a file that holds the
//! passwords in the clear.

use super::api_client::{ApiClient, ClientError};
use crate::model::api_key::{hmac_sha256, sha256_hex};
use crate::views::link_fields;
use crate::views::links::{BulkResult, CreateLink};
use indicatif::ProgressBar;
use serde::{Deserialize, Serialize};
use shared::access::hex_decode;
use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

/// The journal format this code writes; it also reads version 1, whose imports finish
/// as they started (with unkeyed fingerprints, which their calls' keys were made of).
const JOURNAL_VERSION: u32 = 2;

/// What to import and how.
#[derive(Debug, Clone)]
pub struct ImportOptions {
    pub file: PathBuf,
    /// Defaults to `FILE.hop-import`.
    pub journal: Option<PathBuf>,
    /// The domain of rows that do not name one (else the origin's default).
    pub domain: Option<String>,
    /// Rows per bulk call, 1 to 10,000.
    pub batch_size: usize,
    /// Send again the rows a previous run recorded as refused.
    pub retry_failed: bool,
}

/// Why an import stopped before it was done.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    #[error("{path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}: {detail}; nothing was sent")]
    BadFile { path: String, detail: String },
    #[error("{path}: {detail}")]
    BadJournal { path: String, detail: String },
    #[error("row {row} changed since it was imported as {route}; edit that link through the API instead, or import the file as new links with another --journal")]
    RowChanged { row: usize, route: String },
    #[error(transparent)]
    Client(#[from] ClientError),
}

/// What an import run did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Summary {
    pub rows: usize,
    /// Links created by this run.
    pub created: usize,
    /// Rows a previous run had already imported.
    pub already: usize,
    /// Rows refused (by this run or, unless retried, an earlier one).
    pub failed: usize,
    /// The first refusals: row number and the origin's reason.
    pub failures: Vec<(usize, String)>,
}

/// How many refusals the summary spells out.
const SHOWN_FAILURES: usize = 10;

/// One data row: its number (1 is the first row after the header), the body to send or
/// why it cannot be sent, and a fingerprint of its content.
#[derive(Debug, Clone)]
struct Row {
    number: usize,
    body: Result<CreateLink, String>,
    /// The row's cells as read, and which holds a password, if one does.
    cells: Vec<String>,
    password: Option<usize>,
    /// Of the cells, the password's replaced ([`Fingerprints::row`]); set once the
    /// journal that keys it is open.
    fingerprint: String,
}

/// The journal's first line.
#[derive(Debug, Serialize, Deserialize)]
struct JournalHeader {
    hop_import: u32,
    /// Random, so two imports of one file (with two journals) are two sets of links.
    import_id: String,
    origin: String,
    /// The key of the import's fingerprints (hex); absent from version 1 journals.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    secret: Option<String>,
}

/// How an import fingerprints its rows and calls: with every password replaced by its
/// HMAC under the journal's secret, so that neither a fingerprint in the journal nor a
/// key the origin stores can be used to test guesses of a password. A version 1
/// journal has no secret: its rows were fingerprinted whole, and its import finishes
/// that way, so that a call whose answer was lost is sent again under the same key.
struct Fingerprints {
    secret: Option<Vec<u8>>,
}

impl Fingerprints {
    /// What stands in for `password` in a fingerprint.
    fn password(&self, password: &str) -> Option<String> {
        let secret = self.secret.as_ref()?;
        Some(crate::random_ids::hex(&hmac_sha256(
            secret,
            password.as_bytes(),
        )))
    }

    /// A row's fingerprint: its cells, its password replaced.
    fn row(&self, cells: &[String], password: Option<usize>) -> String {
        let mut cells = cells.to_vec();
        if let Some(cell) = password.and_then(|i| cells.get_mut(i)) {
            if let Some(keyed) = self.password(cell) {
                *cell = keyed;
            }
        }
        sha256_hex(&serde_json::to_string(&cells).unwrap_or_default())[..32].to_owned()
    }

    /// The hash in the idempotency key of one call sending `links`: of its body, each
    /// password replaced.
    fn call(&self, links: &[&CreateLink]) -> String {
        let keyed: Vec<CreateLink> = links
            .iter()
            .map(|l| {
                let mut l = (*l).clone();
                if let Some(keyed) = l.password.as_ref().and_then(|p| self.password(p.expose())) {
                    l.password = Some(crate::views::links::Password::new(keyed));
                }
                l
            })
            .collect();
        let body = serde_json::json!({ "links": keyed }).to_string();
        sha256_hex(&body)[..16].to_owned()
    }
}

/// One answered call.
#[derive(Debug, Serialize, Deserialize)]
struct JournalBatch {
    range: usize,
    rows: Vec<RowResult>,
}

/// What became of one row.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct RowResult {
    row: usize,
    fp: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    route: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

/// The journal of one import: read once, then appended to.
struct Journal {
    path: PathBuf,
    file: File,
    import_id: String,
    fingerprints: Fingerprints,
    done: HashMap<usize, RowResult>,
}

impl Journal {
    /// Opens the journal at `path`, creating it for `origin` if missing.
    fn open(path: &Path, origin: &str) -> Result<Journal, ImportError> {
        let io = |source| ImportError::Io {
            path: path.display().to_string(),
            source,
        };
        let bad = |detail: String| ImportError::BadJournal {
            path: path.display().to_string(),
            detail,
        };
        if !path.exists() {
            let secret = crate::random_ids::random_bytes::<32>()
                .map_err(|e| bad(format!("no randomness for the journal's secret: {e}")))?;
            let header = JournalHeader {
                hop_import: JOURNAL_VERSION,
                import_id: random_id(),
                origin: origin.to_owned(),
                secret: Some(crate::random_ids::hex(&secret)),
            };
            let mut options = OpenOptions::new();
            options.write(true).create_new(true);
            // It holds the secret of the import's fingerprints: for its owner only.
            #[cfg(unix)]
            std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
            let mut file = options.open(path).map_err(io)?;
            let line = serde_json::to_string(&header).map_err(|e| bad(e.to_string()))?;
            file.write_all(format!("{line}\n").as_bytes())
                .and_then(|()| file.sync_all())
                .map_err(io)?;
            return Ok(Journal {
                path: path.to_owned(),
                file,
                import_id: header.import_id,
                fingerprints: Fingerprints {
                    secret: Some(secret.to_vec()),
                },
                done: HashMap::new(),
            });
        }

        let mut reader = BufReader::new(File::open(path).map_err(io)?);
        let mut line = String::new();
        let mut good_len = 0u64;
        reader.read_line(&mut line).map_err(io)?;
        let header: JournalHeader = serde_json::from_str(line.trim_end())
            .ok()
            .filter(|h: &JournalHeader| {
                // Version 1 had no secret; a later one must have it.
                let secret_as_versioned = match h.hop_import {
                    1 => h.secret.is_none(),
                    JOURNAL_VERSION => h.secret.as_deref().is_some_and(|s| hex_decode(s).is_some()),
                    _ => false,
                };
                secret_as_versioned && line.ends_with('\n')
            })
            .ok_or_else(|| bad("not a Hop import journal (delete it to start over)".into()))?;
        let fingerprints = Fingerprints {
            secret: header.secret.as_deref().and_then(hex_decode),
        };
        if header.origin != origin {
            return Err(bad(format!(
                "this journal belongs to an import into {}, not {origin}; pass another --journal to import there",
                header.origin
            )));
        }
        good_len += line.len() as u64;
        let mut done = HashMap::new();
        loop {
            line.clear();
            if reader.read_line(&mut line).map_err(io)? == 0 {
                break;
            }
            let complete = line.ends_with('\n');
            match serde_json::from_str::<JournalBatch>(line.trim_end()) {
                Ok(batch) if complete => {
                    good_len += line.len() as u64;
                    for result in batch.rows {
                        done.insert(result.row, result);
                    }
                }
                // A line cut short by a crash: its call is replayed by its key.
                _ if !complete => break,
                _ => return Err(bad(format!("line after byte {good_len} is damaged"))),
            }
        }
        let file = OpenOptions::new().write(true).open(path).map_err(io)?;
        file.set_len(good_len).map_err(io)?;
        let mut file = file;
        std::io::Seek::seek(&mut file, std::io::SeekFrom::End(0)).map_err(io)?;
        Ok(Journal {
            path: path.to_owned(),
            file,
            import_id: header.import_id,
            fingerprints,
            done,
        })
    }

    /// Records one answered call durably.
    fn append(&mut self, batch: &JournalBatch) -> Result<(), ImportError> {
        let io = |source| ImportError::Io {
            path: self.path.display().to_string(),
            source,
        };
        let line = serde_json::to_string(batch).map_err(|e| ImportError::BadJournal {
            path: self.path.display().to_string(),
            detail: e.to_string(),
        })?;
        self.file
            .write_all(format!("{line}\n").as_bytes())
            .and_then(|()| self.file.sync_data())
            .map_err(io)?;
        for result in &batch.rows {
            self.done.insert(result.row, result.clone());
        }
        Ok(())
    }
}

/// Imports `options.file` through `client`, showing progress on `progress`.
pub async fn import(
    client: &ApiClient,
    origin: &str,
    options: &ImportOptions,
    progress: &ProgressBar,
) -> Result<Summary, ImportError> {
    let bytes = std::fs::read(&options.file).map_err(|source| ImportError::Io {
        path: options.file.display().to_string(),
        source,
    })?;
    let mut rows =
        parse(&bytes, options.domain.as_deref()).map_err(|detail| ImportError::BadFile {
            path: options.file.display().to_string(),
            detail,
        })?;
    let journal_path = options.journal.clone().unwrap_or_else(|| {
        let mut name = options.file.clone().into_os_string();
        name.push(".hop-import");
        PathBuf::from(name)
    });
    let mut journal = Journal::open(&journal_path, origin)?;
    for row in &mut rows {
        row.fingerprint = journal.fingerprints.row(&row.cells, row.password);
    }

    let mut summary = Summary {
        rows: rows.len(),
        ..Summary::default()
    };
    let pending = plan(&rows, &journal, options.retry_failed, &mut summary)?;
    progress.set_length(rows.len() as u64);
    progress.set_position((rows.len() - pending.len()) as u64);
    for (range, batch) in ranges(&pending, options.batch_size.max(1)) {
        let results = send(client, &journal, range, batch, &mut summary).await?;
        journal.append(&JournalBatch {
            range,
            rows: results,
        })?;
        progress.inc(batch.len() as u64);
    }
    Ok(summary)
}

/// Which rows to send, decided before anything is sent: those the journal does not
/// record, and those it records as refused when asked to retry them. A row imported
/// before and changed in the file since is refused whole.
fn plan<'r>(
    rows: &'r [Row],
    journal: &Journal,
    retry_failed: bool,
    summary: &mut Summary,
) -> Result<Vec<&'r Row>, ImportError> {
    let mut pending = Vec::new();
    for row in rows {
        match journal.done.get(&row.number) {
            Some(done) if done.fp == row.fingerprint => match (&done.route, &done.error) {
                (Some(_), _) => summary.already += 1,
                (None, error) if !retry_failed => {
                    note_failure(summary, row.number, error.as_deref().unwrap_or(""));
                }
                _ => pending.push(row),
            },
            Some(RowResult {
                route: Some(route), ..
            }) => {
                return Err(ImportError::RowChanged {
                    row: row.number,
                    route: route.clone(),
                })
            }
            _ => pending.push(row),
        }
    }
    Ok(pending)
}

/// `pending` cut at the file's fixed ranges of `batch_size` rows: a re-run sends the rows
/// of a range in the same call, under the same idempotency key.
fn ranges<'p, 'r>(
    pending: &'p [&'r Row],
    batch_size: usize,
) -> impl Iterator<Item = (usize, &'p [&'r Row])> {
    let mut rest = pending;
    std::iter::from_fn(move || {
        let first = rest.first()?;
        let range = (first.number - 1) / batch_size;
        let end = rest
            .iter()
            .position(|r| (r.number - 1) / batch_size != range)
            .unwrap_or(rest.len());
        let (batch, after) = rest.split_at(end);
        rest = after;
        Some((range, batch))
    })
}

/// Sends one range's rows in one bulk call (the rows refused locally are not sent) and
/// says what became of each.
async fn send(
    client: &ApiClient,
    journal: &Journal,
    range: usize,
    batch: &[&Row],
    summary: &mut Summary,
) -> Result<Vec<RowResult>, ImportError> {
    let sendable: Vec<&CreateLink> = batch.iter().filter_map(|r| r.body.as_ref().ok()).collect();
    let mut answers = Vec::new().into_iter();
    if !sendable.is_empty() {
        let body = serde_json::json!({ "links": sendable }).to_string();
        let key = format!(
            "hop-import-{}-{range}-{}",
            journal.import_id,
            journal.fingerprints.call(&sendable)
        );
        let response = client.create_bulk(body, &key).await?;
        if response.results.len() != sendable.len() {
            return Err(ClientError::BadResponse(format!(
                "{} results for {} links",
                response.results.len(),
                sendable.len()
            ))
            .into());
        }
        answers = response.results.into_iter();
    }
    let mut results = Vec::with_capacity(batch.len());
    for row in batch {
        let (route, error) = match &row.body {
            Err(local) => (None, Some(local.clone())),
            Ok(_) => match answers.next() {
                Some(BulkResult::Ok { link, .. }) => {
                    summary.created += 1;
                    (Some(format!("{}/{}", link.domain, link.code)), None)
                }
                Some(BulkResult::Err { error, .. }) => (None, Some(problem_text(&error))),
                None => (None, Some("no answer for this row".into())),
            },
        };
        if let Some(error) = &error {
            note_failure(summary, row.number, error);
        }
        results.push(RowResult {
            row: row.number,
            fp: row.fingerprint.clone(),
            route,
            error,
        });
    }
    Ok(results)
}

fn note_failure(summary: &mut Summary, row: usize, error: &str) {
    summary.failed += 1;
    if summary.failures.len() < SHOWN_FAILURES {
        summary.failures.push((row, error.to_owned()));
    }
}

/// A problem document as one line: its detail, prefixed by the field it concerns.
fn problem_text(problem: &serde_json::Value) -> String {
    let detail = problem
        .get("detail")
        .and_then(|d| d.as_str())
        .unwrap_or("refused");
    // Details already name their field ("target_url: …").
    detail.replace(['\n', '\r'], " ")
}

/// 128 random bits as hex.
fn random_id() -> String {
    // Without randomness, fall back to the clock: ids only need to differ per import.
    crate::random_ids::random_hex::<16>().unwrap_or_else(|_| {
        let mut bytes = [0u8; 16];
        bytes[..8].copy_from_slice(&crate::model::time::now_ms().to_le_bytes());
        crate::random_ids::hex(&bytes)
    })
}

/// Parses the file into rows, refusing it as a whole when its structure is wrong.
fn parse(bytes: &[u8], default_domain: Option<&str>) -> Result<Vec<Row>, String> {
    let mut reader = csv::ReaderBuilder::new()
        .trim(csv::Trim::All)
        .from_reader(bytes);
    let headers = reader
        .headers()
        .map_err(|e| format!("cannot read the header row: {e}"))?
        .clone();
    let columns = || {
        link_fields::imported()
            .map(|f| f.name)
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut index: HashMap<&str, usize> = HashMap::new();
    for (i, name) in headers.iter().enumerate() {
        let Some(known) = link_fields::imported().find(|f| f.name.eq_ignore_ascii_case(name))
        else {
            return Err(format!(
                "unknown column {name:?}; the columns are {}",
                columns()
            ));
        };
        if index.insert(known.name, i).is_some() {
            return Err(format!("column {} appears twice", known.name));
        }
    }
    if !index.contains_key("target_url") {
        return Err(format!(
            "the header row must name a target_url column (columns: {})",
            columns()
        ));
    }
    let mut rows = Vec::new();
    for (i, record) in reader.records().enumerate() {
        let number = i + 1;
        let record = record.map_err(|e| format!("row {number}: {e}"))?;
        let cell = |name: &str| {
            index
                .get(name)
                .and_then(|&i| record.get(i))
                .filter(|v| !v.is_empty())
                .map(str::to_owned)
        };
        let body = row_body(&cell, default_domain);
        rows.push(Row {
            number,
            body,
            cells: record.iter().map(str::to_owned).collect(),
            password: index.get("password").copied(),
            fingerprint: String::new(),
        });
    }
    if rows.is_empty() {
        return Err("the file has a header but no rows".into());
    }
    Ok(rows)
}

/// The create body of one row, or why the row cannot be sent: each non-empty cell
/// written by its field ([`link_fields`]), text a person typed with `export`'s
/// neutralizing undone.
fn row_body(
    cell: &dyn Fn(&str) -> Option<String>,
    default_domain: Option<&str>,
) -> Result<CreateLink, String> {
    if cell("target_url").is_none() {
        return Err("target_url: the cell is empty".into());
    }
    let mut body = CreateLink::default();
    for field in link_fields::imported() {
        let (Some(write), Some(text)) = (field.write, cell(field.name)) else {
            continue;
        };
        let text = if field.typed {
            link_fields::unneutralized(text)
        } else {
            text
        };
        write(&mut body, text)?;
    }
    if body.domain.is_none() {
        body.domain = default_domain.map(str::to_owned);
    }
    // Imports go in bulk, where dedupe is refused; an export carries no password (nor
    // its hash): a password link's row needs its password added, or the origin refuses
    // the row and says why.
    Ok(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_become_create_bodies_with_empty_cells_left_out() {
        let file = b"Target_URL,code,tags,redirect,forward_query\n\
            https://a.example/x,,\"spring, sale ,\",301,TRUE\n\
            https://b.example/y,promo,,,\n";
        let rows = parse(file, Some("s.example")).unwrap();
        assert_eq!(rows.len(), 2);
        let a = rows[0].body.as_ref().unwrap();
        assert_eq!(a.target_url, "https://a.example/x");
        assert_eq!(a.code, None);
        assert_eq!(a.domain.as_deref(), Some("s.example"));
        assert_eq!(a.tags, Some(vec!["spring".into(), "sale".into()]));
        assert_eq!((a.redirect, a.forward_query), (Some(301), Some(true)));
        let b = rows[1].body.as_ref().unwrap();
        assert_eq!((b.code.as_deref(), b.tags.as_ref()), (Some("promo"), None));
        let keyed = Fingerprints {
            secret: Some(vec![7; 32]),
        };
        assert_ne!(
            keyed.row(&rows[0].cells, rows[0].password),
            keyed.row(&rows[1].cells, rows[1].password)
        );
    }

    /// A resumed import sends its calls under the keys the interrupted one used, made of
    /// the bodies: a field added to the API since must not change the body of a row that
    /// does not use it (this call's key is pinned: the same bytes as before `scanner_check`
    /// existed, whose `None` is not written).
    #[test]
    fn a_row_that_uses_no_newer_field_is_keyed_as_before() {
        let rows = parse(
            b"target_url,code
https://a.example/x,promo
",
            Some("s.example"),
        )
        .unwrap();
        let body = rows[0].body.as_ref().unwrap();
        let json = serde_json::to_string(body).unwrap();
        assert!(!json.contains("scanner_check"), "{json}");
        assert_eq!(
            Fingerprints { secret: None }.call(&[body]),
            "234f62e5fc647a97"
        );
    }

    /// An export carries no password: a password link's row takes it in a column of
    /// its own, which the create body carries as the API reads it.
    #[test]
    fn a_password_link_s_row_carries_its_password() {
        let rows = parse(
            b"target_url,code,access,password\nhttps://a.example/,pw,password,correct horse\n",
            None,
        )
        .unwrap();
        let body = rows[0].body.as_ref().unwrap();
        assert_eq!(body.access, Some(crate::views::links::AccessMode::Password));
        assert_eq!(
            body.password.as_ref().map(|p| p.expose()),
            Some("correct horse")
        );
        let json = serde_json::to_value(body).unwrap();
        assert_eq!(json["password"], "correct horse");
        assert!(!format!("{body:?}").contains("correct"), "never in a log");
    }

    #[test]
    fn a_file_with_a_wrong_structure_is_refused_whole() {
        let unknown = parse(b"target_url,expires\nhttps://a.example/,2030-01-01\n", None);
        assert!(unknown.unwrap_err().contains("unknown column \"expires\""));
        let missing = parse(b"code,title\nabc,t\n", None);
        assert!(missing.unwrap_err().contains("target_url"));
        let twice = parse(b"target_url,TARGET_URL\nx,y\n", None);
        assert!(twice.unwrap_err().contains("twice"));
        let ragged = parse(
            b"target_url,code\nhttps://a.example/,a\nhttps://b.example/\n",
            None,
        );
        assert!(ragged.unwrap_err().contains("row 2"));
        assert!(parse(b"target_url\n", None).is_err());
    }

    #[test]
    fn a_bad_cell_fails_its_row_only() {
        let rows = parse(
            b"target_url,redirect\nhttps://a.example/,30x\n,\nhttps://c.example/,307\n",
            None,
        )
        .unwrap();
        assert!(rows[0].body.as_ref().unwrap_err().contains("redirect"));
        assert!(rows[1].body.as_ref().unwrap_err().contains("target_url"));
        assert!(rows[2].body.is_ok());
    }

    #[test]
    fn a_journal_line_cut_short_by_a_crash_is_dropped_and_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("links.csv.hop-import");
        let mut journal = Journal::open(&path, "http://o/").unwrap();
        let id = journal.import_id.clone();
        journal
            .append(&JournalBatch {
                range: 0,
                rows: vec![RowResult {
                    row: 1,
                    fp: "f".into(),
                    route: Some("s.example/abc".into()),
                    error: None,
                }],
            })
            .unwrap();
        drop(journal);
        let mut file = OpenOptions::new().append(true).open(&path).unwrap();
        file.write_all(b"{\"range\":1,\"rows\":[{\"row\":2,\"fp\"")
            .unwrap();
        drop(file);

        let mut journal = Journal::open(&path, "http://o/").unwrap();
        assert_eq!(journal.import_id, id);
        assert_eq!(journal.done.len(), 1);
        assert_eq!(journal.done[&1].route.as_deref(), Some("s.example/abc"));
        journal
            .append(&JournalBatch {
                range: 1,
                rows: vec![],
            })
            .unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().count(), 3);
        assert!(text.ends_with("{\"range\":1,\"rows\":[]}\n"));

        let elsewhere = Journal::open(&path, "http://other/").err().unwrap();
        assert!(elsewhere
            .to_string()
            .contains("belongs to an import into http://o/"));
    }

    /// The plain fingerprints version 1 journals hold: of the cells as read, and of
    /// a call's body.
    fn unkeyed(row: &Row, body: &str) -> (String, String) {
        (
            sha256_hex(&serde_json::to_string(&row.cells).unwrap())[..32].to_owned(),
            sha256_hex(body)[..16].to_owned(),
        )
    }

    /// No fingerprint of a row or of a call is a fast hash of a password: each is
    /// taken with the password replaced by its HMAC under the journal's secret. Two
    /// rows that differ only in their password still differ; the same row under the
    /// same journal fingerprints the same on every run.
    #[test]
    fn fingerprints_of_rows_and_calls_never_hash_a_password_in_the_clear() {
        let rows = parse(
            b"target_url,code,access,password\n\
              https://a.example/,pw,password,correct horse\n\
              https://a.example/,pw,password,correct horsf\n",
            None,
        )
        .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("links.csv.hop-import");
        let journal = Journal::open(&path, "http://o/").unwrap();
        let keyed = &journal.fingerprints;
        let fp = |row: &Row| keyed.row(&row.cells, row.password);
        assert_ne!(fp(&rows[0]), fp(&rows[1]), "a changed password is a change");
        for row in &rows {
            let body = row.body.as_ref().unwrap();
            let sent = serde_json::json!({ "links": [body] }).to_string();
            let (plain_row, plain_call) = unkeyed(row, &sent);
            assert_ne!(fp(row), plain_row);
            assert_ne!(keyed.call(&[body]), plain_call);
        }
        // The secret is the journal's: the same again when it is opened again, and the
        // journal is for its owner's eyes only.
        let first = fp(&rows[0]);
        drop(journal);
        let again = Journal::open(&path, "http://o/").unwrap();
        assert_eq!(
            again.fingerprints.row(&rows[0].cells, rows[0].password),
            first
        );
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o077, 0, "{mode:o}");
        }
        // Another journal, another secret.
        let other = Journal::open(&dir.path().join("other"), "http://o/").unwrap();
        assert_ne!(
            other.fingerprints.row(&rows[0].cells, rows[0].password),
            first
        );
    }

    /// An import begun by the release before (a version 1 journal, without a secret)
    /// finishes as it began, so a call whose answer was lost is sent again under the
    /// same key; a version 2 journal without its secret is refused.
    #[test]
    fn a_version_1_journal_finishes_with_the_fingerprints_it_began_with() {
        let rows = parse(
            b"target_url,access,password\nhttps://a.example/,password,correct horse\n",
            None,
        )
        .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("old.hop-import");
        std::fs::write(
            &path,
            "{\"hop_import\":1,\"import_id\":\"abc\",\"origin\":\"http://o/\"}\n",
        )
        .unwrap();
        let journal = Journal::open(&path, "http://o/").unwrap();
        let body = rows[0].body.as_ref().unwrap();
        let sent = serde_json::json!({ "links": [body] }).to_string();
        let (plain_row, plain_call) = unkeyed(&rows[0], &sent);
        assert_eq!(
            journal.fingerprints.row(&rows[0].cells, rows[0].password),
            plain_row
        );
        assert_eq!(journal.fingerprints.call(&[body]), plain_call);

        let keyless = dir.path().join("keyless.hop-import");
        std::fs::write(
            &keyless,
            "{\"hop_import\":2,\"import_id\":\"abc\",\"origin\":\"http://o/\"}\n",
        )
        .unwrap();
        assert!(Journal::open(&keyless, "http://o/").is_err());
    }
}

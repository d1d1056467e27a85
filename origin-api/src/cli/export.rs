//! `export`: every link of the key's owner, newest first, as CSV or JSON lines, read a
//! page at a time through the API's keyset pagination (so links created meanwhile
//! neither shift nor repeat what is written).

use super::api_client::{ApiClient, ClientError};
use crate::config::ExportFormat;
use crate::views::link_fields;
use indicatif::ProgressBar;
use std::io::Write;

/// Links per API call: the largest page the API serves.
const PAGE: &str = "1000";

/// What to export.
#[derive(Debug, Clone)]
pub struct ExportOptions {
    pub format: ExportFormat,
    pub domain: Option<String>,
    pub tag: Option<String>,
    /// Tombstones too, after the live links.
    pub include_deleted: bool,
}

/// Why an export stopped.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error("cannot write the export: {0}")]
    Write(#[from] std::io::Error),
    #[error("cannot write the export: {0}")]
    Csv(#[from] csv::Error),
    #[error(transparent)]
    Client(#[from] ClientError),
}

/// Writes the links to `out` and returns how many were written.
pub async fn export(
    client: &ApiClient,
    options: &ExportOptions,
    out: &mut dyn Write,
    progress: &ProgressBar,
) -> Result<u64, ExportError> {
    if options.format == ExportFormat::Csv {
        let mut w = csv::Writer::from_writer(&mut *out);
        w.write_record(link_fields::exported().map(|f| f.name))?;
        w.flush()?;
    }
    let mut written = 0u64;
    let statuses: &[Option<&str>] = if options.include_deleted {
        &[None, Some("deleted")]
    } else {
        &[None]
    };
    for status in statuses {
        let mut cursor: Option<String> = None;
        loop {
            let mut query = vec![("limit", PAGE)];
            if let Some(domain) = &options.domain {
                query.push(("domain", domain));
            }
            if let Some(tag) = &options.tag {
                query.push(("tag", tag));
            }
            if let Some(status) = status {
                query.push(("status", status));
            }
            if let Some(cursor) = &cursor {
                query.push(("cursor", cursor));
            }
            let page = client.list(&query).await?;
            match options.format {
                ExportFormat::Csv => {
                    let mut w = csv::WriterBuilder::new()
                        .has_headers(false)
                        .from_writer(&mut *out);
                    for link in &page.items {
                        w.write_record(link_fields::csv_row(link))?;
                    }
                    w.flush()?;
                }
                ExportFormat::Jsonl => {
                    for link in &page.items {
                        serde_json::to_writer(&mut *out, link).map_err(std::io::Error::from)?;
                        out.write_all(b"\n")?;
                    }
                }
            }
            written += page.items.len() as u64;
            progress.set_position(written);
            match page.next_cursor {
                Some(next) => cursor = Some(next),
                None => break,
            }
        }
    }
    out.flush()?;
    Ok(written)
}

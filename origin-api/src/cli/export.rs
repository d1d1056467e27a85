//! `export`: every link of the key's owner, newest first, as CSV or JSON lines, read a
//! page at a time through the API's keyset pagination (so links created meanwhile
//! neither shift nor repeat what is written).

use super::api_client::{ApiClient, ClientError};
use crate::config::ExportFormat;
use crate::views::links::LinkView;
use indicatif::ProgressBar;
use std::io::Write;

/// Links per API call: the largest page the API serves.
const PAGE: &str = "1000";

/// The CSV columns, in order.
pub const CSV_COLUMNS: &[&str] = &[
    "short_url",
    "domain",
    "code",
    "target_url",
    "status",
    "redirect",
    "expires_at",
    "title",
    "tags",
    "forward_query",
    "code_kind",
    "version",
    "created_at",
    "updated_at",
    "rules",
    "split",
    "preview",
    "expired_url",
    "interstitial",
    "record_clicks",
    "max_visits",
    "exhausted",
    "access",
    "scanner_check",
];

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
        w.write_record(CSV_COLUMNS)?;
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
                        w.write_record(csv_row(link))?;
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

/// A cell a spreadsheet would run as a formula (`=HYPERLINK(…)`, `+`, `-`, `@`, or a
/// leading tab or carriage return) gets a leading `'`, which spreadsheets show as text
/// and `import` takes off again (OWASP's advice for CSV injection).
pub fn neutralized(cell: &str) -> String {
    if cell.starts_with(['=', '+', '-', '@', '\t', '\r']) {
        format!("'{cell}")
    } else {
        cell.to_owned()
    }
}

/// What `import` makes of a cell `export` wrote: [`neutralized`] undone.
pub fn unneutralized(cell: String) -> String {
    match cell.strip_prefix('\'') {
        Some(rest) if rest.starts_with(['=', '+', '-', '@', '\t', '\r']) => rest.to_owned(),
        _ => cell,
    }
}

fn csv_row(link: &LinkView) -> Vec<String> {
    vec![
        link.short_url.clone(),
        link.domain.clone(),
        link.code.clone(),
        link.target_url.clone(),
        link.status.as_str().to_owned(),
        link.redirect.to_string(),
        link.expires_at.clone().unwrap_or_default(),
        neutralized(link.title.as_deref().unwrap_or_default()),
        neutralized(&link.tags.join(",")),
        link.forward_query.to_string(),
        serde_json::to_value(link.code_kind)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default(),
        link.version.to_string(),
        link.created_at.clone(),
        link.updated_at.clone(),
        json_cell(&link.rules, link.rules.is_empty()),
        json_cell(&link.split, link.split.is_none()),
        json_cell(&link.preview, link.preview.is_none()),
        link.expired_url.clone().unwrap_or_default(),
        link.interstitial.to_string(),
        link.record_clicks.to_string(),
        link.max_visits.map(|n| n.to_string()).unwrap_or_default(),
        link.exhausted.to_string(),
        match link.access {
            crate::views::links::AccessMode::Public => "public",
            crate::views::links::AccessMode::Signed => "signed",
            crate::views::links::AccessMode::Password => "password",
        }
        .to_owned(),
        link.scanner_check.to_string(),
    ]
}

/// A structured field as one cell of compact JSON (which `import` reads back), empty
/// when the link has none.
fn json_cell<T: serde::Serialize>(value: &T, none: bool) -> String {
    if none {
        String::new()
    } else {
        serde_json::to_string(value).unwrap_or_default()
    }
}

#[cfg(test)]
mod neutralizing {
    use super::*;

    #[test]
    fn formulas_are_exported_as_text_and_imported_as_they_were() {
        for formula in [
            "=HYPERLINK(\"http://evil\",\"x\")",
            "+1",
            "-2",
            "@SUM(A1)",
            "\tx",
        ] {
            let cell = neutralized(formula);
            assert!(cell.starts_with('\''), "{cell}");
            assert_eq!(unneutralized(cell), formula);
        }
        assert_eq!(neutralized("Spring sale"), "Spring sale");
        assert_eq!(unneutralized("'quoted".into()), "'quoted");
    }
}

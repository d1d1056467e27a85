//! The imports API's bodies: what `POST /v1/imports` takes and answers. The importers
//! that read each source are [`crate::imports`]'s.

use serde::{Deserialize, Serialize};

/// The shorteners Hop imports from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    Bitly,
    Shlink,
    Yourls,
    Kutt,
    Dub,
}

impl Source {
    pub fn name(self) -> &'static str {
        match self {
            Source::Bitly => "bitly",
            Source::Shlink => "shlink",
            Source::Yourls => "yourls",
            Source::Kutt => "kutt",
            Source::Dub => "dub",
        }
    }

    pub fn parse(name: &str) -> Option<Source> {
        [
            Source::Bitly,
            Source::Shlink,
            Source::Yourls,
            Source::Kutt,
            Source::Dub,
        ]
        .into_iter()
        .find(|s| s.name() == name)
    }
}

/// What is being read: a file the source's web interface exports, or one page its API
/// answered (as the API sent it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    Csv,
    /// A page of the source's API, its JSON body as received.
    Api,
}

/// The body of `POST /v1/imports`.
#[derive(Debug, Clone, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ImportRequest {
    pub source: Source,
    pub format: Format,
    /// The file (CSV) or the API page (its JSON body), as text.
    pub content: String,
    /// Judge every link and say what would happen, changing nothing.
    #[serde(default)]
    pub dry_run: bool,
    /// The domain of links whose source names none (YOURLS, Kutt, Dub's CSV without a
    /// domain column); default: the origin's default domain.
    #[serde(default)]
    pub domain: Option<String>,
}

/// What became (or, in a dry run, would become) of one link of the source.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// A new link, code and domain as the source printed them.
    Created,
    /// An earlier import's link, changed to what the source says now.
    Changed,
    /// An earlier import's link, already as the source says.
    Unchanged,
    /// Not imported: `reason` says why (a bad URL, a code taken, a banned host, …).
    Refused,
    /// Not to be moved: `reason` says why (a code on Bitly's own domain, …).
    Skipped,
    /// Its code has the domain's generated shape (or is shorter than an alias), and the
    /// edge is still learning that the domain imports such codes: send it again after
    /// `retry_after_s`.
    Deferred,
}

/// One link's line of the report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ImportRow {
    /// The source's row or item (1 is the first); one row may bring several links.
    pub row: usize,
    pub domain: Option<String>,
    pub code: String,
    pub outcome: Outcome,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// What the source says of the link that Hop has no equivalent for, or counts
    /// otherwise: said, never dropped silently.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// The link's short URL, for a created, changed or unchanged link.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub short_url: Option<String>,
}

/// How many links had each outcome.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ImportSummary {
    pub created: usize,
    pub changed: usize,
    pub unchanged: usize,
    pub refused: usize,
    pub skipped: usize,
    pub deferred: usize,
}

impl ImportSummary {
    /// The count of each outcome among `rows`.
    pub fn of(rows: &[ImportRow]) -> ImportSummary {
        let mut s = ImportSummary::default();
        for r in rows {
            *match r.outcome {
                Outcome::Created => &mut s.created,
                Outcome::Changed => &mut s.changed,
                Outcome::Unchanged => &mut s.unchanged,
                Outcome::Refused => &mut s.refused,
                Outcome::Skipped => &mut s.skipped,
                Outcome::Deferred => &mut s.deferred,
            } += 1;
        }
        s
    }
}

/// The answer of `POST /v1/imports`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ImportReport {
    pub dry_run: bool,
    pub summary: ImportSummary,
    /// The columns of an export file that the importer does not read (their cells are
    /// not imported), as the file names them; absent when every column is read, and
    /// for an API page.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unused_columns: Vec<String>,
    /// One line per link the source listed, in its order.
    pub rows: Vec<ImportRow>,
    /// When links were deferred: send the same content again after this long.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_s: Option<u64>,
}

/// Links one call may bring at most (a bulk create's bound).
pub const MAX_IMPORT_LINKS: usize = 10_000;

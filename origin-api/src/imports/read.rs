//! A source's export or API page read into its links, whichever the source.

use super::source::{self, SourceLink, Unreadable};
use super::{bitly, dub, kutt, shlink, yourls};
use crate::views::imports::{Format, Source};

/// Reads `content` of `source` in `format` into its links.
pub fn read(source: Source, format: Format, content: &str) -> Result<Vec<SourceLink>, Unreadable> {
    match (source, format) {
        (Source::Bitly, Format::Csv) => bitly::read_csv(content),
        (Source::Bitly, Format::Api) => bitly::read_api_page(content).map(|p| p.links),
        (Source::Shlink, Format::Csv) => shlink::read_csv(content),
        (Source::Shlink, Format::Api) => shlink::read_api_page(content).map(|p| p.links),
        (Source::Yourls, Format::Csv) => yourls::read_csv(content),
        (Source::Yourls, Format::Api) => yourls::read_api(content),
        (Source::Kutt, Format::Api) => kutt::read_api_page(content).map(|p| p.links),
        (Source::Kutt, Format::Csv) => Err(Unreadable(
            "Kutt has no export file: import from its API (GET /api/v2/links pages)".into(),
        )),
        (Source::Dub, Format::Csv) => dub::read_csv(content),
        (Source::Dub, Format::Api) => dub::read_api_page(content),
    }
}

/// The columns of `content` (an export file of `source`) that its importer does not
/// read: said with every import and dry run, never dropped silently. An API page's
/// fields are the source's documented ones, read by name; there is nothing to say.
pub fn unused_columns(source: Source, format: Format, content: &str) -> Vec<String> {
    let fields = match (source, format) {
        (_, Format::Api) | (Source::Kutt, _) => return Vec::new(),
        (Source::Bitly, Format::Csv) => bitly::FIELDS,
        (Source::Shlink, Format::Csv) => shlink::FIELDS,
        (Source::Yourls, Format::Csv) => yourls::FIELDS,
        (Source::Dub, Format::Csv) => dub::FIELDS,
    };
    source::unused_columns(content, fields)
}

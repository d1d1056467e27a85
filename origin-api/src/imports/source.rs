//! A link as another shortener describes it, read from its export or its API: what every
//! importer turns its source's rows into, and what the import judges against Hop.

/// One link of the source. `row` numbers what the source listed (1 is its first row or
/// item); one row may bring several links (a Bitly link's custom back-halves).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SourceLink {
    pub row: usize,
    /// As the source names it (`bit.ly`, `go.acme.example`); `None` when the source does
    /// not say (the import's domain applies).
    pub domain: Option<String>,
    /// Exactly as printed: codes are case-sensitive on most shorteners.
    pub code: String,
    pub target_url: String,
    pub title: Option<String>,
    pub tags: Vec<String>,
    /// Unix ms.
    pub created_at: Option<i64>,
    pub expires_at: Option<i64>,
    pub max_visits: Option<u64>,
    /// Archived or disabled at the source: imported disabled.
    pub disabled: bool,
    pub forward_query: Option<bool>,
    /// The source's own count of visits, kept apart from Hop's (`imported_clicks`).
    pub clicks: Option<u64>,
    /// Targeting rules mapped onto Hop's, in the order they are tried.
    pub rules: Vec<shared::targeting::Rule>,
    /// Where visitors go once the link has expired.
    pub expired_url: Option<String>,
    /// The link's password, when the source exports it in the clear (Dub's API).
    pub password: Option<String>,
    /// What the source says of the link that Hop has no equivalent for: reported on
    /// the row, never dropped silently.
    pub notes: Vec<String>,
    /// Why the link is not to be moved at all, when it is not.
    pub skip: Option<String>,
}

/// Why a file or page cannot be read at all (nothing of it is imported).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Unreadable(pub String);

/// A CSV file's records with their columns found: refused whole (saying `what` it
/// should have been, and its header row) when no column of a field in each of `needed`
/// is there. Each record comes with its number (1 is the first after the header).
pub fn csv_records<'f>(
    content: &str,
    fields: &[(&'f str, &[&str])],
    needed: &[&[&str]],
    what: &str,
) -> Result<(Columns<'f>, Vec<(usize, csv::StringRecord)>), Unreadable> {
    let mut reader = csv::ReaderBuilder::new()
        .flexible(true)
        .from_reader(content.as_bytes());
    let headers = reader
        .headers()
        .map_err(|e| Unreadable(format!("cannot read the header row: {e}")))?
        .clone();
    let columns = Columns::find(&headers, fields);
    if !needed.iter().all(|any| any.iter().any(|f| columns.has(f))) {
        return Err(Unreadable(format!(
            "{what}; the header row is {:?}",
            headers.iter().collect::<Vec<_>>()
        )));
    }
    let mut records = Vec::new();
    for (i, record) in reader.records().enumerate() {
        let row = i + 1;
        records.push((
            row,
            record.map_err(|e| Unreadable(format!("row {row}: {e}")))?,
        ));
    }
    Ok((columns, records))
}

/// A header as compared: lowercase, with spaces, underscores and hyphens dropped, and
/// singular (`Long URL`, `long_url` and `long-url` are one; so are `Custom Links` and
/// `Custom Link`: exports have spelt the same column both ways, and a column matched
/// in one spelling only lost every cell of the other without a word).
pub fn header_key(name: &str) -> String {
    let mut key: String = name
        .chars()
        .filter(|c| !matches!(c, ' ' | '_' | '-' | '\u{feff}'))
        .flat_map(char::to_lowercase)
        .collect();
    // Both sides of a comparison are keys, so a word that merely ends in `s` (`status`)
    // still matches itself.
    if key.len() > 1 && key.ends_with('s') {
        key.pop();
    }
    key
}

/// The columns of a CSV export's header row that none of `fields` reads, as the file
/// names them (empty ones left out): an import says them, in its dry run and its
/// result, so that nothing a file holds is dropped without a word. Empty for a file
/// whose header cannot be read (the import refuses it anyway).
pub fn unused_columns(content: &str, fields: &[(&str, &[&str])]) -> Vec<String> {
    let mut reader = csv::ReaderBuilder::new()
        .flexible(true)
        .from_reader(content.as_bytes());
    let Ok(headers) = reader.headers() else {
        return Vec::new();
    };
    let read = Columns::find(headers, fields);
    headers
        .iter()
        .enumerate()
        .filter(|(i, _)| !read.found.iter().any(|(_, at)| at == i))
        .map(|(_, name)| name.trim_matches(|c: char| c.is_whitespace() || c == '\u{feff}'))
        .filter(|name| !name.is_empty())
        .map(str::to_owned)
        .collect()
}

/// A CSV file's columns found by their names or synonyms: per field, its index.
#[derive(Debug)]
pub struct Columns<'f> {
    found: Vec<(&'f str, usize)>,
}

impl<'f> Columns<'f> {
    /// Matches `headers` against `fields` (each a name with its synonyms); a column no
    /// field claims is ignored, a field no column names is absent.
    pub fn find(headers: &csv::StringRecord, fields: &[(&'f str, &[&str])]) -> Columns<'f> {
        let mut found = Vec::new();
        for (field, names) in fields {
            let keys: Vec<String> = names.iter().map(|n| header_key(n)).collect();
            if let Some(i) = headers.iter().position(|h| keys.contains(&header_key(h))) {
                found.push((*field, i));
            }
        }
        Columns { found }
    }

    pub fn has(&self, field: &str) -> bool {
        self.found.iter().any(|(f, _)| *f == field)
    }

    /// The non-empty cell of `field` in `record`.
    pub fn cell<'r>(&self, record: &'r csv::StringRecord, field: &str) -> Option<&'r str> {
        let (_, i) = self.found.iter().find(|(f, _)| *f == field)?;
        record.get(*i).map(str::trim).filter(|v| !v.is_empty())
    }
}

/// A cell as a spreadsheet-safe export wrote it: a leading `'` that guards a formula
/// (`'=…`, `'+…`, `'-…`, `'@…`) taken off again.
pub fn unguarded(cell: &str) -> &str {
    match cell.strip_prefix('\'') {
        Some(rest) if rest.starts_with(['=', '+', '-', '@', '\t', '\r']) => rest,
        _ => cell,
    }
}

/// A date as exports write them: RFC 3339, Bitly's `2024-03-01T10:00:00+0000`, or a
/// plain `2024-03-01 10:00:00` / `2024-03-01` (UTC); Unix ms.
pub fn parse_time(raw: &str) -> Option<i64> {
    use time::format_description::well_known::Rfc3339;
    use time::format_description::{parse_borrowed, BorrowedFormatItem};
    let raw = raw.trim();
    if let Ok(t) = time::OffsetDateTime::parse(raw, &Rfc3339) {
        return Some(ms(t));
    }
    fn shape(d: &'static str) -> Vec<BorrowedFormatItem<'static>> {
        parse_borrowed::<2>(d).unwrap_or_default()
    }
    let offset = shape(
        "[year]-[month]-[day]T[hour]:[minute]:[second][offset_hour sign:mandatory][offset_minute]",
    );
    if let Ok(t) = time::OffsetDateTime::parse(raw, &offset) {
        return Some(ms(t));
    }
    let plain = shape("[year]-[month]-[day] [hour]:[minute]:[second]");
    if let Ok(t) = time::PrimitiveDateTime::parse(raw, &plain) {
        return Some(ms(t.assume_utc()));
    }
    let day = shape("[year]-[month]-[day]");
    time::Date::parse(raw, &day)
        .ok()
        .map(|d| ms(d.midnight().assume_utc()))
}

fn ms(t: time::OffsetDateTime) -> i64 {
    i64::try_from(t.unix_timestamp_nanos() / 1_000_000).unwrap_or(i64::MAX)
}

/// Splits a short link as exports write it (`https://bit.ly/3xY`, `bit.ly/3xY`) into its
/// host (lowercased) and code (as written).
pub fn split_short_link(raw: &str) -> Option<(String, String)> {
    let raw = raw.trim();
    let rest = raw
        .strip_prefix("https://")
        .or_else(|| raw.strip_prefix("http://"))
        .unwrap_or(raw);
    let (host, code) = rest.split_once('/')?;
    let code = code.trim_end_matches('/');
    (!host.is_empty() && !code.is_empty() && !code.contains(['/', '?', '#']))
        .then(|| (host.to_ascii_lowercase(), code.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_match_whatever_their_case_spacing_and_number() {
        assert_eq!(header_key("Long URL"), "longurl");
        assert_eq!(header_key("long_url"), "longurl");
        assert_eq!(header_key("\u{feff}Long-Url "), "longurl");
        assert_eq!(header_key("Custom Link"), header_key("Custom links"));
        assert_eq!(header_key("CUSTOM BITLINKS"), header_key("custom_bitlink"));
        assert_eq!(header_key("Tags"), header_key("tag"));
        assert_eq!(header_key("Status"), header_key("status"));
    }

    #[test]
    fn the_columns_no_field_reads_are_named_as_the_file_names_them() {
        let fields: &[(&str, &[&str])] =
            &[("link", &["Short link"]), ("url", &["Long URL", "URL"])];
        // A second column of a field already read is not read either: it is said too.
        let csv = "\u{feff}Short Links,long_url,Notes, ,Owner,URL\na,b,c,,d,e\n";
        assert_eq!(unused_columns(csv, fields), ["Notes", "Owner", "URL"]);
        assert!(unused_columns("Short link,Long URL\n", fields).is_empty());
    }

    #[test]
    fn dates_in_every_shape_exports_write() {
        let at = 1_709_287_200_000; // 2024-03-01T10:00:00Z
        assert_eq!(parse_time("2024-03-01T10:00:00Z"), Some(at));
        assert_eq!(parse_time("2024-03-01T10:00:00+0000"), Some(at));
        assert_eq!(parse_time("2024-03-01T11:00:00+01:00"), Some(at));
        assert_eq!(parse_time("2024-03-01 10:00:00"), Some(at));
        assert_eq!(parse_time("2024-03-01"), Some(at - 36_000_000));
        assert_eq!(parse_time("yesterday"), None);
    }

    #[test]
    fn short_links_split_into_host_and_code_as_written() {
        assert_eq!(
            split_short_link("https://Go.Acme.co/Summer-24"),
            Some(("go.acme.co".into(), "Summer-24".into()))
        );
        assert_eq!(
            split_short_link("bit.ly/3xYz"),
            Some(("bit.ly".into(), "3xYz".into()))
        );
        for bad in ["https://bit.ly/", "bit.ly", "https://bit.ly/a/b", ""] {
            assert_eq!(split_short_link(bad), None, "{bad}");
        }
    }
}

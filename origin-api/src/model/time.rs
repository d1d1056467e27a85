//! Time as the origin stores it (Unix milliseconds) and as the API shows it (RFC 3339).

use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

/// Current time as Unix milliseconds, the unit of every time column.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or_default()
}

/// Unix milliseconds as RFC 3339 in UTC.
pub fn rfc3339(ms: i64) -> String {
    OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
        .ok()
        .and_then(|t| t.format(&Rfc3339).ok())
        .unwrap_or_default()
}

/// RFC 3339 (any offset) as Unix milliseconds.
pub fn parse_rfc3339(s: &str) -> Option<i64> {
    let t = OffsetDateTime::parse(s, &Rfc3339).ok()?;
    i64::try_from(t.unix_timestamp_nanos() / 1_000_000).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_round_trip_through_rfc3339_with_any_offset() {
        let ms = parse_rfc3339("2030-01-02T03:04:05.678+02:00").unwrap();
        assert_eq!(rfc3339(ms), "2030-01-02T01:04:05.678Z");
        assert_eq!(parse_rfc3339("2030-01-02"), None);
        assert_eq!(parse_rfc3339("tomorrow"), None);
    }
}

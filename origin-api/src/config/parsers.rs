//! The parsers of setting values that are more than a number or a string: durations,
//! schedules, networks, hosts, word files, the database URL (kept out of logs).

use std::net::SocketAddr;

/// One entry of `--allow-target-hosts`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AllowedHost {
    /// Exactly this name.
    Name(String),
    /// This domain and every name under it.
    Suffix(String),
    /// Any address in this network.
    Network(ipnet::IpNet),
}

impl AllowedHost {
    /// Whether this entry lets a link point at `target`.
    pub fn admits(&self, target: &shared::TargetUrl) -> bool {
        match (self, target.ip()) {
            (AllowedHost::Network(net), Some(ip)) => net.contains(&ip),
            (AllowedHost::Name(name), None) => target.host() == name,
            (AllowedHost::Suffix(domain), None) => {
                let host = target.host();
                host == domain
                    || host
                        .strip_suffix(domain.as_str())
                        .is_some_and(|rest| rest.ends_with('.'))
            }
            _ => false,
        }
    }
}

pub(super) fn parse_network(s: &str) -> Result<ipnet::IpNet, String> {
    let s = s.trim();
    s.parse::<ipnet::IpNet>()
        .or_else(|_| s.parse::<std::net::IpAddr>().map(ipnet::IpNet::from))
        .map_err(|_| format!("{s:?}: give an address or a network, e.g. 10.0.0.0/8"))
}

pub(super) fn parse_allowed_host(s: &str) -> Result<AllowedHost, String> {
    let s = s.trim();
    if let Ok(net) = s.parse::<ipnet::IpNet>() {
        return Ok(AllowedHost::Network(net));
    }
    if let Ok(ip) = s.parse::<std::net::IpAddr>() {
        return Ok(AllowedHost::Network(ipnet::IpNet::from(ip)));
    }
    let (suffix, name) = match s.strip_prefix('.') {
        Some(rest) => (true, rest),
        None => (false, s),
    };
    let name = shared::normalize_domain(name).map_err(|e| format!("{s:?}: {e}"))?;
    Ok(if suffix {
        AllowedHost::Suffix(name)
    } else {
        AllowedHost::Name(name)
    })
}

/// An address to listen on, or none (`off`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OptionalAddr(pub Option<SocketAddr>);

pub(super) fn parse_optional_addr(s: &str) -> Result<OptionalAddr, String> {
    if s.eq_ignore_ascii_case("off") {
        return Ok(OptionalAddr(None));
    }
    s.parse()
        .map(|a| OptionalAddr(Some(a)))
        .map_err(|_| format!("{s:?}: give an address such as 127.0.0.1:9464, or off"))
}

/// `7d`, `36h`, `90m`, `600s`, or a bare number of days.
/// A retention: a duration, or `keep` / `never` for none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Keep(pub Option<std::time::Duration>);

pub(super) fn parse_keep(s: &str) -> Result<Keep, String> {
    match s.trim() {
        "keep" | "never" => Ok(Keep(None)),
        other => {
            let d = parse_duration(other)?;
            if d.as_secs() < 86_400 {
                return Err(format!("{s:?}: keep at least a day (or `keep`)"));
            }
            Ok(Keep(Some(d)))
        }
    }
}

/// `--reserved-words FILE`: the file's words, checked.
#[derive(Debug, Clone)]
pub struct ReservedWords(pub Vec<String>);

/// `--offensive-words FILE`: the file's changes, checked.
#[derive(Debug, Clone)]
pub struct OffensiveWords(pub shared::words::OffensiveChanges);

fn read_word_file<T>(
    path: &str,
    parse: impl Fn(&str) -> Result<T, shared::words::WordsError>,
) -> Result<T, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {path}: {e}"))?;
    parse(&text).map_err(|e| format!("{path}: {e}"))
}

pub(super) fn parse_reserved_words(path: &str) -> Result<ReservedWords, String> {
    read_word_file(path, shared::words::parse_reserved).map(ReservedWords)
}

pub(super) fn parse_offensive_words(path: &str) -> Result<OffensiveWords, String> {
    read_word_file(path, shared::words::parse_offensive).map(OffensiveWords)
}

pub(super) fn parse_retention(s: &str) -> Result<std::time::Duration, String> {
    let d = parse_duration(s)?;
    if d.as_secs() < 3_600 {
        return Err(format!(
            "{s:?}: keep delivered rows at least an hour (they settle late pushes)"
        ));
    }
    Ok(d)
}

/// The webhooks' waits after each failed attempt at an event; the last one repeats.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Schedule(pub Vec<std::time::Duration>);

/// The webhooks' retry delays: durations separated by commas, the last one repeated.
pub(super) fn parse_schedule(s: &str) -> Result<Schedule, String> {
    let delays = s
        .split(',')
        .map(parse_duration)
        .collect::<Result<Vec<_>, _>>()?;
    if delays.iter().any(std::time::Duration::is_zero) {
        return Err(format!("{s:?}: every delay must be at least a second"));
    }
    Ok(Schedule(delays))
}

/// A number with `d`, `h`, `m` or `s` (a bare number is days).
pub(super) fn parse_duration(s: &str) -> Result<std::time::Duration, String> {
    let s = s.trim();
    let (number, unit) = match s.find(|c: char| !c.is_ascii_digit()) {
        Some(i) => s.split_at(i),
        None => (s, "d"),
    };
    let n: u64 = number
        .parse()
        .map_err(|_| format!("{s:?}: use a number with d, h, m or s, e.g. 7d"))?;
    let seconds = match unit {
        "d" => n.checked_mul(86_400),
        "h" => n.checked_mul(3_600),
        "m" => n.checked_mul(60),
        "s" => Some(n),
        _ => None,
    }
    .ok_or_else(|| format!("{s:?}: use a number with d, h, m or s, e.g. 7d"))?;
    Ok(std::time::Duration::from_secs(seconds))
}

pub(super) fn parse_short_domain(s: &str) -> Result<String, String> {
    shared::normalize_short_domain(s).map_err(|e| e.to_string())
}

pub(super) fn parse_domain(s: &str) -> Result<String, String> {
    shared::normalize_domain(s).map_err(|e| e.to_string())
}

/// The database's URL. It may carry a password, so it is a secret: its `Debug` is the
/// URL without any ([`redact_database_url`]), and only [`DatabaseUrl::expose`] gives
/// it whole, to the database driver.
#[derive(Clone, PartialEq, Eq)]
pub struct DatabaseUrl(String);

impl DatabaseUrl {
    pub fn new(url: impl Into<String>) -> Self {
        DatabaseUrl(url.into())
    }

    /// The URL whole, password included: for the driver alone.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::str::FromStr for DatabaseUrl {
    type Err = std::convert::Infallible;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(DatabaseUrl(s.to_owned()))
    }
}

impl std::fmt::Debug for DatabaseUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&redact_database_url(&self.0))
    }
}

/// `url` without its secrets: the password of its user part and of its `password=`
/// (or `sslpassword=`) parameter; a URL that does not parse is not shown at all, since
/// where its password sits cannot be told.
pub fn redact_database_url(url: &str) -> String {
    let Ok(mut parsed) = url::Url::parse(url) else {
        return "(a database URL that does not parse; not shown)".to_owned();
    };
    if parsed.password().is_some() {
        let _ = parsed.set_password(Some("***"));
    }
    let secret = |name: &str| matches!(name, "password" | "sslpassword");
    if parsed.query_pairs().any(|(k, _)| secret(&k)) {
        let pairs: Vec<(String, String)> = parsed
            .query_pairs()
            .map(|(k, v)| {
                let v = if secret(&k) {
                    "***".into()
                } else {
                    v.into_owned()
                };
                (k.into_owned(), v)
            })
            .collect();
        parsed.query_pairs_mut().clear().extend_pairs(pairs);
    }
    parsed.to_string()
}

pub(super) fn parse_http_url(s: &str) -> Result<url::Url, String> {
    let url = url::Url::parse(s).map_err(|e| format!("{s:?} is not a URL: {e}"))?;
    match url.scheme() {
        "http" | "https" => Ok(url),
        other => Err(format!("{s:?} must be http or https, not {other}")),
    }
}

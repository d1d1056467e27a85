//! The origin's settings: every flag with its environment variable (and its key in
//! `--config FILE`), as parsed, with what is derived from them.

use super::parsers::*;
use super::secrets::Secrets;
use clap::Args;
use secrecy::SecretString;
use std::net::SocketAddr;

/// Settings shared by every subcommand.
#[derive(Debug, Clone, Args)]
pub struct Settings {
    /// A TOML file of settings (and secrets), each key a setting's variable without
    /// `HOP_` in lower case (`database_url = "postgres://…"`). Flags and the environment
    /// win over it.
    #[arg(long, env = "HOP_CONFIG", global = true)]
    pub config: Option<std::path::PathBuf>,

    /// Address to listen on.
    #[arg(
        long,
        env = "HOP_LISTEN",
        default_value = "127.0.0.1:3000",
        global = true
    )]
    pub listen: SocketAddr,

    /// `sqlite://PATH` (created if missing) or `postgres://…` (`?sslmode=verify-full`
    /// for TLS). A secret when it holds a password: never shown whole.
    #[arg(
        long,
        env = "HOP_DATABASE_URL",
        default_value = "sqlite://hop.db",
        global = true
    )]
    pub database_url: DatabaseUrl,

    /// A file holding the database URL (a mounted secret, a systemd credential), instead
    /// of --database-url.
    #[arg(
        long,
        env = "HOP_DATABASE_URL_FILE",
        value_name = "FILE",
        global = true
    )]
    pub database_url_file: Option<std::path::PathBuf>,

    /// The short domain of links created without one.
    #[arg(long, env = "HOP_DEFAULT_DOMAIN", default_value = "localhost", value_parser = parse_short_domain, global = true)]
    pub default_domain: String,

    /// Where the edge worker accepts pushed changes; unset, nothing is published (the
    /// outbox still fills, and drains once this is set).
    #[arg(long, env = "HOP_EDGE_SYNC_URL", value_parser = parse_http_url, global = true)]
    pub edge_sync_url: Option<url::Url>,

    /// Publish through Cloudflare's KV bulk API instead of the worker: the account id.
    #[arg(long, env = "HOP_CF_ACCOUNT_ID", global = true)]
    pub cf_account_id: Option<String>,

    /// The KV namespace the worker's `LINKS` binding names.
    #[arg(long, env = "HOP_CF_KV_NAMESPACE_ID", global = true)]
    pub cf_kv_namespace_id: Option<String>,

    /// Cloudflare's API base URL (a test server can stand in for it).
    #[arg(long, env = "HOP_CF_API_URL", default_value = "https://api.cloudflare.com/client/v4", value_parser = parse_http_url, global = true)]
    pub cf_api_url: url::Url,

    /// Route keys the redirect cache holds (about 300 bytes each); size it to the links
    /// visitors use, or every visit past it reads the database.
    #[arg(
        long,
        env = "HOP_REDIRECT_CACHE_ENTRIES",
        default_value = "1000000",
        global = true
    )]
    pub redirect_cache_entries: u64,

    /// Seconds the redirect serves a link from memory before reading it again: how long
    /// other origin processes' changes may take to show here (this process's own show at
    /// once). Longer means fewer database reads per link.
    #[arg(
        long,
        env = "HOP_REDIRECT_CACHE_TTL",
        default_value = "60",
        value_parser = clap::value_parser!(u64).range(1..=86_400),
        global = true
    )]
    pub redirect_cache_ttl: u64,

    /// Links an API key may create per second (bursts of twice as many); more get 429.
    #[arg(long, env = "HOP_CREATE_RATE", default_value = "10000", global = true)]
    pub create_rate: std::num::NonZeroU32,

    /// Links an owner may create per second, whatever its keys and people (bursts of
    /// twice as many); more get 429 `owner-rate-limited`.
    #[arg(
        long,
        env = "HOP_OWNER_CREATE_RATE",
        default_value = "10000",
        global = true
    )]
    pub owner_create_rate: std::num::NonZeroU32,

    /// Live links each owner may hold, unless the operator set its own
    /// (`hop-origin owners set`); 0: no limit. More get 403 `quota-links`.
    #[arg(long, env = "HOP_OWNER_MAX_LINKS", default_value_t = 0, global = true)]
    pub owner_max_links: u64,

    /// Links each owner may create a UTC day, unless the operator set its own; 0: no
    /// limit. More get 403 `quota-links-per-day`.
    #[arg(
        long,
        env = "HOP_OWNER_MAX_LINKS_PER_DAY",
        default_value_t = 0,
        global = true
    )]
    pub owner_max_links_per_day: u64,

    /// Whether the origin's own redirect path records clicks (the edge's arrive through
    /// `/v1/edge/clicks` either way).
    #[arg(long, env = "HOP_RECORD_CLICKS", default_value = "true", action = clap::ArgAction::Set, global = true)]
    pub record_clicks: bool,

    /// MiB the origin's clicks not yet written may take in memory (one window of them).
    /// A full window is written at once; what still finds no room is dropped and
    /// counted. 96 MiB holds a window over two million links' worth of keys.
    #[arg(
        long,
        env = "HOP_CLICK_TALLY_MIB",
        default_value = "96",
        value_parser = clap::value_parser!(u64).range(1..=65_536),
        global = true
    )]
    pub click_tally_mib: u64,

    /// Hours a click event's id is kept to refuse it a second time; events older than
    /// this are refused, since they could no longer be told from a replay. It must cover
    /// how long the edge's queue may hold and retry a batch (4 days on Cloudflare).
    #[arg(
        long,
        env = "HOP_CLICK_ID_RETENTION_H",
        default_value = "96",
        value_parser = clap::value_parser!(u64).range(1..=8_760),
        global = true
    )]
    pub click_id_retention_h: u64,

    /// Distinct referrer hosts counted per link and hour; visits from any other host
    /// are counted as `(other)`, so forged referrers cannot grow a link's statistics.
    #[arg(
        long,
        env = "HOP_REFERRERS_PER_HOUR",
        default_value = "100",
        value_parser = clap::value_parser!(u32).range(1..=100_000),
        global = true
    )]
    pub referrers_per_hour: u32,

    /// How long delivered outbox rows are kept before they are pruned (a number with
    /// `d`, `h`, `m` or `s`; a bare number is days). The newest delivered row of each key
    /// is kept regardless.
    #[arg(long, env = "HOP_OUTBOX_RETENTION", default_value = "7d", value_parser = parse_retention, global = true)]
    pub outbox_retention: std::time::Duration,

    /// Seconds a client has to send a request's line and headers, counted from when its
    /// connection starts waiting for one; an idle keep-alive connection is closed after
    /// as long.
    #[arg(
        long,
        env = "HOP_HEADER_READ_TIMEOUT",
        default_value = "10",
        value_parser = clap::value_parser!(u64).range(1..=300),
        global = true
    )]
    pub header_read_timeout: u64,

    /// Connections open at once; past it, new ones wait in the kernel's backlog.
    #[arg(
        long,
        env = "HOP_MAX_CONNECTIONS",
        default_value = "10000",
        value_parser = clap::value_parser!(u32).range(1..=1_000_000),
        global = true
    )]
    pub max_connections: u32,

    /// Requests handled at once that may wait (API calls, visits that read; a visit
    /// answered from memory takes no slot); the next one is answered 503 with Retry-After.
    #[arg(
        long,
        env = "HOP_MAX_IN_FLIGHT",
        default_value = "1024",
        value_parser = clap::value_parser!(u32).range(1..=1_000_000),
        global = true
    )]
    pub max_in_flight: u32,

    /// Where `/metrics` is served without credentials, or `off`. Keep it on loopback or
    /// a private network: the public listener serves `/metrics` only to a caller with
    /// `HOP_METRICS_TOKEN`.
    #[arg(
        long,
        env = "HOP_METRICS_LISTEN",
        default_value = "127.0.0.1:9464",
        value_parser = parse_optional_addr,
        global = true
    )]
    pub metrics_listen: OptionalAddr,

    /// Where the dashboard is served (its own listener, never the short domains'), or
    /// `off`. Put it behind the TLS proxy (docs/dashboard.md).
    #[arg(
        long,
        env = "HOP_DASHBOARD_LISTEN",
        default_value = "off",
        value_parser = parse_optional_addr,
        global = true
    )]
    pub dashboard_listen: OptionalAddr,

    /// Whether the dashboard's cookies are `Secure` (sent over HTTPS only). Only a
    /// development machine reaching the dashboard over plain HTTP turns it off.
    #[arg(long, env = "HOP_DASHBOARD_SECURE_COOKIES", default_value = "true", action = clap::ArgAction::Set, global = true)]
    pub dashboard_secure_cookies: bool,

    /// Hosts a link may point at although they are not public (an intranet's "go
    /// links"), comma-separated: a name (`wiki`), a domain and its subdomains
    /// (`.corp.example`), or an address or network (`10.0.0.0/8`, `fd00::/8`). Loops and
    /// bans are refused regardless.
    #[arg(
        long,
        env = "HOP_ALLOW_TARGET_HOSTS",
        value_delimiter = ',',
        value_parser = parse_allowed_host,
        global = true
    )]
    pub allow_target_hosts: Vec<AllowedHost>,

    /// How a domain's short URLs are written where it is not served on
    /// `https://{domain}` (the API's `short_url`), comma-separated `DOMAIN=BASE` pairs:
    /// `localhost=http://localhost:8787` for `wrangler dev`. Only the scheme, host and
    /// port of a base count.
    #[arg(
        long,
        env = "HOP_SHORT_URL_BASES",
        value_delimiter = ',',
        global = true
    )]
    pub short_url_bases: Vec<crate::model::ShortUrlBase>,

    /// Seconds an import waits, before it creates links whose codes have their domain's
    /// generated shape, for the edge to learn that the domain imports such codes: KV's
    /// 60 s to show a write everywhere, a location's 30 s cache of it, and room for
    /// clocks. 0 for an origin with no edge in front of it.
    #[arg(
        long,
        env = "HOP_IMPORT_EDGE_WAIT",
        default_value = "120",
        value_parser = clap::value_parser!(u64).range(0..=900),
        global = true
    )]
    pub import_edge_wait: u64,

    /// How long a deleted link stays restorable by its owner (`POST …/restore`); after
    /// it, its deletion is final (its code is never given out again either way).
    #[arg(long, env = "HOP_RESTORE_WINDOW", default_value = "30d", value_parser = parse_duration, global = true)]
    pub restore_window: std::time::Duration,

    /// Live links the abuse desk re-checks against the threat feeds and the bans, per
    /// second, in the background (0: no re-check). A pass over a million links at the
    /// default takes about three hours; nothing of Hop requests a target.
    #[arg(long, env = "HOP_RECHECK_RATE", default_value_t = 100, global = true)]
    pub recheck_rate: u32,

    /// Lets a threat feed be downloaded over plain `http` (a feed on your own machine,
    /// tests). Off, a feed's URL must be `https`: a feed read in the clear could be
    /// changed on its way, and it decides what Hop bans.
    #[arg(long, env = "HOP_FEED_ALLOW_HTTP", default_value = "false", action = clap::ArgAction::Set, global = true)]
    pub feed_allow_http: bool,

    /// Reports a client address may send through the public form (`/_hop/report`), per
    /// minute.
    #[arg(long, env = "HOP_REPORT_RATE", default_value = "5", global = true)]
    pub report_rate: std::num::NonZeroU32,

    /// Reports the public form takes from everyone together, per minute: a flood from
    /// many addresses is refused (429) past it.
    #[arg(
        long,
        env = "HOP_REPORT_RATE_GLOBAL",
        default_value = "120",
        global = true
    )]
    pub report_rate_global: std::num::NonZeroU32,

    /// How long a resolved report (with its reporter's contact) is kept before it is
    /// deleted (a number with `d`, `h`, `m` or `s`; a bare number is days).
    #[arg(long, env = "HOP_REPORT_RETENTION", default_value = "180d", value_parser = parse_retention, global = true)]
    pub report_retention: std::time::Duration,

    /// How long after its expiry a link is purged: its target, title, tags and options
    /// removed, its code kept as a tombstone (never given out again); `never` keeps
    /// expired links whole (docs/retention.md).
    #[arg(long, env = "HOP_PURGE_EXPIRED_AFTER", default_value = "90d", value_parser = parse_keep, global = true)]
    pub purge_expired_after: Keep,

    /// How long click rollups (hourly and daily visits) are kept; `keep` keeps them for
    /// ever (docs/retention.md).
    #[arg(long, env = "HOP_CLICK_ROLLUP_RETENTION", default_value = "keep", value_parser = parse_keep, global = true)]
    pub click_rollup_retention: Keep,

    /// Links the purge takes per second at most, in transactions of 100 (0: no purge).
    #[arg(long, env = "HOP_PURGE_RATE", default_value_t = 500, global = true)]
    pub purge_rate: u32,

    /// A file of words no alias may be and no generated code is, beyond Hop's own
    /// reserved words: one a line, `#` starting a comment (docs/words.md). Read at start.
    #[arg(long, env = "HOP_RESERVED_WORDS", value_name = "FILE", value_parser = parse_reserved_words, global = true)]
    pub reserved_words: Option<ReservedWords>,

    /// A file of changes to Hop's offensive words: a word a line adds it, `!word` takes a
    /// built-in one out (docs/words.md). Read at start.
    #[arg(long, env = "HOP_OFFENSIVE_WORDS", value_name = "FILE", value_parser = parse_offensive_words, global = true)]
    pub offensive_words: Option<OffensiveWords>,

    /// The webhooks' waits after each failed delivery of an event, before it is tried
    /// again (durations with `d`, `h`, `m` or `s`, comma-separated; the last repeats).
    /// The default is Standard Webhooks' schedule, then every 12 hours.
    #[arg(
        long,
        env = "HOP_WEBHOOK_RETRY_SCHEDULE",
        default_value = "5s,5m,30m,2h,5h,10h,10h,12h",
        value_parser = parse_schedule,
        global = true
    )]
    pub webhook_retry_schedule: Schedule,

    /// How long an endpoint may fail every attempt at an event before it is disabled
    /// (its events are kept for a redelivery).
    #[arg(long, env = "HOP_WEBHOOK_GIVE_UP_AFTER", default_value = "3d", value_parser = parse_duration, global = true)]
    pub webhook_give_up_after: std::time::Duration,

    /// How long webhook events and delivery attempts are kept (a redelivery reaches back
    /// this far).
    #[arg(long, env = "HOP_WEBHOOK_RETENTION", default_value = "14d", value_parser = parse_retention, global = true)]
    pub webhook_retention: std::time::Duration,

    /// Seconds a webhook receiver has to answer a delivery before it counts as failed.
    #[arg(
        long,
        env = "HOP_WEBHOOK_TIMEOUT",
        default_value = "15",
        value_parser = clap::value_parser!(u64).range(1..=60),
        global = true
    )]
    pub webhook_timeout: u64,

    /// Lets webhook endpoints be plain `http` and on private, loopback or link-local
    /// addresses (a local setup, tests). Off, an endpoint must be `https` on a public
    /// address, checked when it is registered and again at every connection.
    #[arg(long, env = "HOP_WEBHOOK_ALLOW_PRIVATE", default_value = "false", action = clap::ArgAction::Set, global = true)]
    pub webhook_allow_private: bool,

    /// Failed authentications a client address may make per minute (in bursts of as
    /// many); past them it is answered 429 until a failure's worth of time has passed.
    #[arg(
        long,
        env = "HOP_AUTH_FAILURES_PER_MINUTE",
        default_value = "30",
        value_parser = clap::value_parser!(u32).range(1..=60_000),
        global = true
    )]
    pub auth_failures_per_minute: u32,

    /// Seconds a key that verified is used without reading it again, so that valid keys
    /// need no read while guessed ones flood the database; a key revoked by another
    /// process (the CLI) is refused within this long. 0: read every time.
    #[arg(
        long,
        env = "HOP_KEY_HOLD",
        default_value = "10",
        value_parser = clap::value_parser!(u64).range(0..=300),
        global = true
    )]
    pub key_hold: u64,

    /// Proxies in front of the origin whose forwarding headers are believed, as
    /// addresses or networks, comma-separated (a load balancer, Cloudflare's ranges).
    /// From any other peer, `--client-ip-header` and `--country-header` are ignored.
    #[arg(long, env = "HOP_TRUSTED_PROXIES", value_delimiter = ',', value_parser = parse_network, global = true)]
    pub trusted_proxies: Vec<ipnet::IpNet>,

    /// The header a trusted proxy names the client's address in.
    #[arg(
        long,
        env = "HOP_CLIENT_IP_HEADER",
        default_value = "x-forwarded-for",
        global = true
    )]
    pub client_ip_header: axum::http::HeaderName,

    /// The header a trusted proxy names the visitor's country in (two letters).
    #[arg(
        long,
        env = "HOP_COUNTRY_HEADER",
        default_value = "cf-ipcountry",
        global = true
    )]
    pub country_header: axum::http::HeaderName,

    /// The version of `HOP_PERMUTATION_KEYS` that makes new codes [default: the highest].
    /// While a new key is rolled out, every process first gets the ring with it and
    /// this set to the old version; only once all hold it is it made current
    /// (docs/deploy.md#rotating-the-permutation-key).
    #[arg(long, env = "HOP_CODE_KEY_VERSION", global = true)]
    pub code_key_version: Option<u32>,

    /// Secrets: read from the environment or files only ([`Secrets::read`]).
    #[arg(skip)]
    pub secrets: Secrets,
}

/// Where this origin publishes its changes, by its settings.
#[derive(Debug)]
pub enum Publishing<'s> {
    /// Nowhere: no edge (the outbox fills, and drains once one is set).
    Nowhere,
    /// Through the worker's sync endpoint.
    Worker {
        url: &'s url::Url,
        token: &'s SecretString,
    },
    /// Straight to KV through Cloudflare's bulk API.
    Kv {
        account: &'s str,
        namespace: &'s str,
        token: &'s SecretString,
    },
}

impl Settings {
    /// Where to publish, or why these settings cannot.
    pub fn publishing(&self) -> Result<Publishing<'_>, &'static str> {
        let kv = (
            self.cf_account_id.as_deref(),
            self.cf_kv_namespace_id.as_deref(),
        );
        match (&self.edge_sync_url, kv) {
            (None, (None, None)) => Ok(Publishing::Nowhere),
            (Some(_), (Some(_), _) | (_, Some(_))) => Err(
                "publish either to the worker (HOP_EDGE_SYNC_URL) or to KV (HOP_CF_*), not both",
            ),
            (Some(url), _) => match &self.secrets.edge_sync_token {
                Some(token) => Ok(Publishing::Worker { url, token }),
                None => Err(
                    "HOP_EDGE_SYNC_URL is set but HOP_EDGE_SYNC_TOKEN is not: set the worker's SYNC_TOKEN",
                ),
            },
            (None, (Some(account), Some(namespace))) => match &self.secrets.cf_api_token {
                Some(token) => Ok(Publishing::Kv {
                    account,
                    namespace,
                    token,
                }),
                None => Err("HOP_CF_ACCOUNT_ID and HOP_CF_KV_NAMESPACE_ID need HOP_CF_API_TOKEN"),
            },
            (None, _) => {
                Err("set both HOP_CF_ACCOUNT_ID and HOP_CF_KV_NAMESPACE_ID to publish to KV")
            }
        }
    }
}

impl Settings {
    /// The word lists codes are judged by: Hop's, with the operator's files.
    pub fn words(&self) -> shared::words::Words {
        shared::words::Words::new(
            self.reserved_words.clone().map(|r| r.0).unwrap_or_default(),
            &self
                .offensive_words
                .clone()
                .map(|o| o.0)
                .unwrap_or_default(),
        )
    }
}

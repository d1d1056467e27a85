//! Command line, environment and configuration file: every setting is a flag with an
//! environment variable of the same meaning (docs/architecture.md, "Configuration names"),
//! so scripts and containers configure alike, and a key of the same name in `--config FILE`
//! ([`file`]).

pub mod file;

/// `--version`: the release and the commit it was built from, which `scripts/release`
/// passes in `HOP_BUILD_COMMIT`; other builds say they have none.
pub fn version() -> String {
    format!(
        "{} (commit {})",
        env!("CARGO_PKG_VERSION"),
        option_env!("HOP_BUILD_COMMIT").unwrap_or("unknown: not a release build")
    )
}

use clap::{Args, Parser, Subcommand};
use secrecy::SecretString;
use shared::KeyRing;
use std::net::SocketAddr;

/// Hop's origin: the control plane of the shortener, and a complete shortener on its own.
#[derive(Debug, Parser)]
#[command(name = "hop-origin", version = version(), about)]
pub struct Cli {
    #[command(flatten)]
    pub settings: Settings,
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Apply migrations, then serve the API and redirects (the default).
    Serve,
    /// Apply pending migrations and exit.
    Migrate,
    /// Manage API keys.
    #[command(subcommand)]
    Keys(KeysCommand),
    /// The people who sign in to the dashboard, and their roles in owners.
    #[command(subcommand)]
    Users(UsersCommand),
    /// The configuration this process would run with.
    #[command(subcommand)]
    Config(ConfigCommand),
    /// The publisher's outbox: rows set aside after the edge refused them.
    #[command(subcommand)]
    Outbox(OutboxCommand),
    /// The domain registry, by the rules of POST /v1/domains.
    #[command(subcommand)]
    Domains(DomainsCommand),
    /// Webhook endpoints, as the API registers them (docs/webhooks.md).
    #[command(subcommand)]
    Webhooks(WebhooksCommand),
    /// Owners' quotas (docs/quotas.md).
    #[command(subcommand)]
    Owners(OwnersCommand),
    /// Threat feeds: lists of hosts and URLs whose links are banned (docs/abuse.md).
    #[command(subcommand)]
    Feeds(FeedsCommand),
    /// Reports from the public form (docs/abuse.md).
    #[command(subcommand)]
    Reports(ReportsCommand),
    /// Create links from a CSV file through a running origin's API. Re-running the same
    /// command resumes: rows already imported are skipped, nothing is created twice.
    Import(ImportArgs),
    /// Write the key owner's links, newest first, as CSV or JSON lines.
    Export(ExportArgs),
}

/// How `import` and `export` reach an origin.
#[derive(Debug, Clone, Args)]
pub struct ApiArgs {
    /// The origin's base URL; defaults to the address of `--listen`.
    #[arg(long, env = "HOP_ORIGIN_URL", value_parser = parse_http_url)]
    pub origin_url: Option<url::Url>,
    /// The API key (its owner gets the links), from `HOP_API_KEY` or the file
    /// `HOP_API_KEY_FILE` names: never a flag, which anyone on the machine can read.
    #[arg(skip)]
    pub api_key: Option<SecretString>,
    /// Seconds to keep retrying while the origin is unreachable, failing or busy.
    #[arg(long, default_value = "60")]
    pub retry_for: u64,
}

#[derive(Debug, Clone, Args)]
pub struct ImportArgs {
    /// A CSV file with a header row. Columns: target_url (required), code, domain,
    /// expires_at (RFC 3339), redirect, title, tags (comma-separated), forward_query.
    /// With --from: the other shortener's export file (or a saved API page), or the URL
    /// of its API listing (Bitly: https://api-ssl.bitly.com/v4/groups/GUID/bitlinks,
    /// with its token in HOP_SOURCE_TOKEN or the file HOP_SOURCE_TOKEN_FILE names).
    pub file: std::path::PathBuf,
    /// Import another shortener's links, codes and domains exactly
    /// (docs/migrating.md).
    #[arg(long, value_enum)]
    pub from: Option<ImportSource>,
    /// With --from: say per link what would be created, changed, refused and why,
    /// changing nothing.
    #[arg(long, requires = "from")]
    pub dry_run: bool,
    /// With --from: write every link's line (row, domain, code, outcome, reason, notes,
    /// short URL) to this CSV file.
    #[arg(long, requires = "from")]
    pub report: Option<std::path::PathBuf>,
    #[command(flatten)]
    pub api: ApiArgs,
    /// Where progress is recorded, so a re-run resumes [default: FILE.hop-import].
    #[arg(long)]
    pub journal: Option<std::path::PathBuf>,
    /// The domain of rows without one [default: the origin's default domain].
    #[arg(long, value_parser = parse_domain)]
    pub domain: Option<String>,
    /// Rows per bulk call.
    #[arg(long, default_value = "1000", value_parser = clap::value_parser!(u16).range(1..=10_000))]
    pub batch_size: u16,
    /// Send again rows that an earlier run had refused (after fixing a ban, say).
    #[arg(long)]
    pub retry_failed: bool,
}

#[derive(Debug, Clone, Args)]
pub struct ExportArgs {
    #[command(flatten)]
    pub api: ApiArgs,
    #[arg(long, value_enum, default_value = "csv")]
    pub format: ExportFormat,
    /// A file to write (complete or not at all); standard output without it.
    #[arg(long, short)]
    pub output: Option<std::path::PathBuf>,
    /// Only links of this domain.
    #[arg(long, value_parser = parse_domain)]
    pub domain: Option<String>,
    /// Only links with this tag.
    #[arg(long)]
    pub tag: Option<String>,
    /// Deleted links too (after the others).
    #[arg(long)]
    pub include_deleted: bool,
}

/// The shorteners `import --from` reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ImportSource {
    Bitly,
    Shlink,
    Yourls,
    Kutt,
    Dub,
}

impl From<ImportSource> for crate::views::imports::Source {
    fn from(s: ImportSource) -> Self {
        use crate::views::imports::Source;
        match s {
            ImportSource::Bitly => Source::Bitly,
            ImportSource::Shlink => Source::Shlink,
            ImportSource::Yourls => Source::Yourls,
            ImportSource::Kutt => Source::Kutt,
            ImportSource::Dub => Source::Dub,
        }
    }
}

/// How `export` writes links.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ExportFormat {
    /// One row per link, tags joined by commas.
    Csv,
    /// One JSON object per line, as the API shows a link.
    Jsonl,
}

#[derive(Debug, Subcommand)]
pub enum DomainsCommand {
    /// Register a domain, shared by every key or owned by the owners named.
    Add {
        /// The host name visitors use, e.g. go.example.
        domain: String,
        /// Any API key may create links on it.
        #[arg(long, conflicts_with = "owner", required_unless_present = "owner")]
        shared: bool,
        /// An owner whose keys may create links on it (repeat for more).
        #[arg(long)]
        owner: Vec<String>,
        /// Settings as POST /v1/domains takes them, a JSON object, e.g.
        /// '{"alphabet": "base36", "code_length": 6, "case_insensitive": true}'.
        #[arg(long)]
        settings: Option<String>,
    },
    /// List the registered domains.
    List,
    /// Change a domain, as PATCH /v1/domains/{domain} does, at its current version.
    Set {
        domain: String,
        /// The changes, a JSON object of the PATCH body's fields, e.g.
        /// '{"status": "disabled"}' or '{"not_found_url": null}'.
        #[arg(long)]
        settings: String,
    },
    /// Remove a domain that no link lives on (one that holds links is disabled instead).
    Remove { domain: String },
    /// Add the codes that lived at the shortener the domain moved from to its legacy
    /// list: only these are sent on there by its fallback (legacy_url, until
    /// legacy_until). FILE has a code, or a short URL ending in one, per line; `#`
    /// starts a comment; `-` reads standard input. A code listed already is left as it is.
    LegacyCodes {
        domain: String,
        file: std::path::PathBuf,
    },
}

#[derive(Debug, Subcommand)]
pub enum WebhooksCommand {
    /// Register an endpoint for an owner's events (or, with --all, everyone's); prints
    /// its secret, once.
    Add {
        /// Where events are POSTed (https on a public address, unless the origin runs
        /// with --webhook-allow-private).
        url: String,
        /// The owner whose links' and domains' events it gets.
        #[arg(long, conflicts_with = "all", required_unless_present = "all")]
        owner: Option<String>,
        /// Every owner's events.
        #[arg(long)]
        all: bool,
        /// The event types wanted, comma-separated (default: all).
        #[arg(long, value_delimiter = ',')]
        events: Vec<String>,
        #[arg(long)]
        description: Option<String>,
    },
    /// List the endpoints (an owner's, or all).
    List {
        #[arg(long)]
        owner: Option<String>,
    },
    /// Change an endpoint; --enable starts deliveries again from the event it stopped at.
    Set {
        id: String,
        #[arg(long)]
        url: Option<String>,
        #[arg(long, value_delimiter = ',')]
        events: Vec<String>,
        #[arg(long)]
        description: Option<String>,
        #[arg(long, conflicts_with = "disable")]
        enable: bool,
        #[arg(long)]
        disable: bool,
    },
    /// Remove an endpoint and its attempts.
    Remove { id: String },
    /// A new secret (printed once); the old one also signs for 24 hours.
    Rotate { id: String },
    /// Send an event (the webhook-id it was sent with) and every later one again.
    Redeliver {
        id: String,
        #[arg(long)]
        since: String,
    },
    /// The endpoint's delivery attempts, newest first.
    Attempts {
        id: String,
        #[arg(long, default_value = "20", value_parser = clap::value_parser!(i64).range(1..=1000))]
        limit: i64,
    },
}

#[derive(Debug, Subcommand)]
pub enum OwnersCommand {
    /// Set an owner's own quotas: a number, `none` (no limit) or `default` (the
    /// --owner-* flags'). What is not named stays as it was.
    Set {
        owner: String,
        #[arg(long, value_parser = parse_limit)]
        max_links: Option<OwnLimit>,
        #[arg(long, value_parser = parse_limit)]
        max_links_per_day: Option<OwnLimit>,
    },
    /// An owner's quotas and what it uses.
    Show { owner: String },
}

/// An owner's own limit as `hop-origin owners set` takes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OwnLimit {
    /// The --owner-* flag's.
    Default,
    /// No limit.
    None,
    At(u64),
}

impl OwnLimit {
    /// As `owner_quotas` stores it: `NULL` for the default, -1 for none.
    pub fn to_column(self) -> Option<i64> {
        match self {
            OwnLimit::Default => None,
            OwnLimit::None => Some(-1),
            OwnLimit::At(n) => Some(i64::try_from(n).unwrap_or(i64::MAX)),
        }
    }
}

fn parse_limit(s: &str) -> Result<OwnLimit, String> {
    match s {
        "default" => Ok(OwnLimit::Default),
        "none" => Ok(OwnLimit::None),
        n => n
            .parse::<u64>()
            .map(OwnLimit::At)
            .map_err(|_| format!("{s}: a number, `none` or `default`")),
    }
}

#[derive(Debug, Subcommand)]
pub enum FeedsCommand {
    /// Register a feed, read from a file on the serving origin's machine or an http(s)
    /// URL: a serving origin reads it at once and again every --every; its listed hosts
    /// and URLs are refused for new links, and the live links it lists are banned.
    Add {
        /// What bans and refusals cite: lowercase letters, digits and '-'.
        name: String,
        /// A file path or an http(s) URL.
        source: String,
        /// urlhaus, phishtank, openphish, hosts or plain.
        #[arg(long)]
        format: String,
        /// How often a serving origin reads it again.
        #[arg(long, default_value = "1h", value_parser = parse_duration)]
        every: std::time::Duration,
    },
    /// The feeds: entries, last read, last error.
    List,
    /// Read a feed again now, and ban the live links it lists.
    Refresh { name: String },
    /// Remove a feed and its entries (the bans it placed stay: lift them with the API).
    Remove { name: String },
}

#[derive(Debug, Subcommand)]
pub enum ReportsCommand {
    /// The reports, newest first (open ones, or all).
    List {
        #[arg(long)]
        all: bool,
        #[arg(long, default_value = "50", value_parser = clap::value_parser!(i64).range(1..=1000))]
        limit: i64,
    },
    /// Close a report, saying what was done.
    Resolve { id: i64, resolution: String },
}

#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// Check the settings, secrets and database, and print what `serve` would run with
    /// (secrets redacted); exits non-zero when anything would stop it from serving.
    Check,
}

#[derive(Debug, Subcommand)]
pub enum KeysCommand {
    /// Create an API key for an owner; the secret is printed once, alone on the last line.
    Create {
        /// Whose links the key manages.
        #[arg(long)]
        owner: String,
        /// A name to recognise the key by.
        #[arg(long, default_value = "default")]
        name: String,
        /// Allow bans (trust & safety), the outbox, and every registered domain; not with
        /// --domain.
        #[arg(long, conflicts_with = "domains")]
        admin: bool,
        /// Limit the key to links on this registered domain (repeat for several); without
        /// it, the key may use every domain its owner may.
        #[arg(long = "domain", value_name = "DOMAIN")]
        domains: Vec<String>,
    },
    /// Revoke a key by its id; requests with it are refused from then on.
    Revoke {
        /// The key id printed by `keys create`.
        key_id: String,
    },
}

/// `hop-origin users …`. A password is read from `HOP_USER_PASSWORD` or, without it,
/// as one line of standard input: never a flag, which anyone on the machine can read.
#[derive(Debug, Subcommand)]
pub enum UsersCommand {
    /// Create a user who signs in with an email and a password.
    Create {
        #[arg(long)]
        email: String,
        /// An operator of this Hop: every owner, bans and domains.
        #[arg(long)]
        operator: bool,
        /// Make them a member of this owner (with --role).
        #[arg(long, requires = "role")]
        owner: Option<String>,
        /// Their role in --owner: admin, editor or viewer.
        #[arg(long, requires = "owner", value_parser = parse_role)]
        role: Option<crate::model::Role>,
    },
    /// List the users, their roles and whether they are disabled.
    List,
    /// Give a user a role in an owner (or change the role they have there).
    Grant {
        #[command(flatten)]
        member: MemberArgs,
        /// Grant it even to an account another owner's invitation made (whoever opened
        /// that link chose its password): only when you know who holds it.
        #[arg(long)]
        trust_invited_account: bool,
    },
    /// Set a user's password (they are signed out everywhere).
    ResetPassword {
        #[arg(long)]
        email: String,
    },
    /// Invite someone by email to an owner with a role: prints a one-time link, valid
    /// for 7 days, that joins their account or makes one.
    Invite {
        #[command(flatten)]
        member: MemberArgs,
        /// The dashboard's address as its users reach it (`https://admin.example.com`),
        /// to print the whole link.
        #[arg(long, env = "HOP_DASHBOARD_URL")]
        dashboard_url: Option<String>,
    },
    /// Disable a user: they cannot sign in, and every session of theirs ends.
    Disable {
        #[arg(long)]
        email: String,
    },
}

/// Someone's role in an owner: `--email`, `--owner`, `--role`.
#[derive(Debug, Args)]
pub struct MemberArgs {
    #[arg(long)]
    pub email: String,
    #[arg(long)]
    pub owner: String,
    /// admin, editor or viewer.
    #[arg(long, value_parser = parse_role)]
    pub role: crate::model::Role,
}

fn parse_role(s: &str) -> Result<crate::model::Role, String> {
    crate::model::Role::parse(s).ok_or_else(|| format!("{s:?}: a role is admin, editor or viewer"))
}

#[derive(Debug, Subcommand)]
pub enum OutboxCommand {
    /// List the rows set aside as failed, with why.
    Failed,
    /// Put rows set aside back in line: the publisher pushes them again.
    Retry {
        /// One row, by the `seq` that `outbox failed` (or GET /v1/admin/outbox) shows.
        #[arg(long, conflicts_with = "all", required_unless_present = "all")]
        seq: Option<i64>,
        /// Every row set aside.
        #[arg(long)]
        all: bool,
    },
}

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

/// Where a setting's value came from, for `config check`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    Flag,
    Environment,
    File,
    Default,
}

impl Source {
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Flag => "flag",
            Source::Environment => "environment",
            Source::File => "file",
            Source::Default => "default",
        }
    }
}

/// The command line as parsed with its configuration file, and where each value came
/// from.
pub struct Loaded {
    pub cli: Cli,
    pub file: Option<file::ConfigFile>,
    /// Per setting key (`database_url`), its value as given (lists joined by commas;
    /// absent when unset) and where it came from.
    pub sources: std::collections::BTreeMap<String, (Option<String>, Source)>,
    /// Per secret key (`edge_token`), where it came from, if set.
    pub secret_sources: std::collections::BTreeMap<&'static str, Source>,
}

/// Where each setting came from, without the values (`sources` holds the database URL
/// as given); the settings themselves redact their secrets.
impl std::fmt::Debug for Loaded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let sources: std::collections::BTreeMap<&str, &Source> = self
            .sources
            .iter()
            .map(|(k, (_, s))| (k.as_str(), s))
            .collect();
        f.debug_struct("Loaded")
            .field("cli", &self.cli)
            .field("file", &self.file)
            .field("sources", &sources)
            .field("secret_sources", &self.secret_sources)
            .finish()
    }
}

/// Why the configuration could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error(transparent)]
    File(#[from] file::FileError),
    /// Print with `exit()`: clap's own message and usage.
    #[error(transparent)]
    Arguments(#[from] clap::Error),
    #[error(transparent)]
    Secret(#[from] SecretError),
    #[error("{0}")]
    Settings(String),
}

/// Parses `args` (the first is the program) with the configuration file they or `env`
/// name, and reads the secrets from `env`, then the file.
pub fn load(
    args: Vec<std::ffi::OsString>,
    env: impl Fn(&str) -> Option<String>,
) -> Result<Loaded, LoadError> {
    use clap::CommandFactory;
    load_from(Cli::command(), args, env)
}

/// As [`load`], parsing with `cmd` (the tests' has no environment variables).
fn load_from(
    mut cmd: clap::Command,
    args: Vec<std::ffi::OsString>,
    env: impl Fn(&str) -> Option<String>,
) -> Result<Loaded, LoadError> {
    use clap::{CommandFactory, FromArgMatches};
    let config = match file::path_from(&args, &env) {
        Some(path) => Some(file::ConfigFile::load(&path, &cmd)?),
        None => None,
    };
    if let Some(f) = &config {
        cmd = f.apply(cmd);
    }
    let matches = cmd.try_get_matches_from(args)?;
    let mut cli = Cli::from_arg_matches(&matches)?;
    let mut sources = std::collections::BTreeMap::new();
    for (key, id) in file::setting_keys(&Cli::command()) {
        let source = match matches.value_source(&id) {
            Some(clap::parser::ValueSource::CommandLine) => Source::Flag,
            Some(clap::parser::ValueSource::EnvVariable) => Source::Environment,
            _ if config.as_ref().is_some_and(|f| f.sets(&id)) => Source::File,
            _ => Source::Default,
        };
        let value = matches.get_raw(&id).map(|values| {
            values
                .map(|v| v.to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join(",")
        });
        sources.insert(key, (value, source));
    }
    // A secret set in the environment (directly or by `_FILE`) wins over the file's,
    // whichever form the file uses.
    let in_env = |base: &str| {
        env(base).is_some_and(|v| !v.is_empty())
            || env(&format!("{base}_FILE")).is_some_and(|v| !v.is_empty())
    };
    let lookup = |name: &str| {
        let base = name.strip_suffix("_FILE").unwrap_or(name);
        if in_env(base) {
            env(name)
        } else {
            config.as_ref().and_then(|f| f.secret(name))
        }
    };
    cli.settings.secrets = Secrets::read(lookup)?;
    if let Some(path) = cli.settings.database_url_file.clone() {
        let shown = path.display();
        if sources
            .get("database_url")
            .is_some_and(|(_, source)| *source != Source::Default)
        {
            return Err(LoadError::Settings(format!(
                "set database_url or database_url_file ({shown}), not both"
            )));
        }
        let url = std::fs::read_to_string(&path).map_err(|e| {
            LoadError::Settings(format!("cannot read database_url_file {shown}: {e}"))
        })?;
        let url = url.trim_end_matches(['\n', '\r']);
        if url.is_empty() {
            return Err(LoadError::Settings(format!(
                "database_url_file {shown} is empty"
            )));
        }
        cli.settings.database_url = DatabaseUrl::new(url);
        let from = sources
            .get("database_url_file")
            .map_or(Source::Default, |(_, source)| *source);
        sources.insert("database_url".into(), (Some(url.to_owned()), from));
    }
    if let (Some(version), Some(ring)) = (
        cli.settings.code_key_version,
        &cli.settings.secrets.permutation_keys,
    ) {
        if !ring.has_version(version) {
            return Err(LoadError::Settings(format!(
                "--code-key-version {version}: HOP_PERMUTATION_KEYS has no key of that version"
            )));
        }
    }
    let mut secret_sources = std::collections::BTreeMap::new();
    for key in file::SECRET_KEYS {
        let base = format!("HOP_{}", key.to_ascii_uppercase());
        let source = if in_env(&base) {
            Some(Source::Environment)
        } else if config.as_ref().is_some_and(|f| {
            f.secret(&base).is_some() || f.secret(&format!("{base}_FILE")).is_some()
        }) {
            Some(Source::File)
        } else {
            None
        };
        if let Some(source) = source {
            secret_sources.insert(key, source);
        }
    }
    Ok(Loaded {
        cli,
        file: config,
        sources,
        secret_sources,
    })
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

fn parse_network(s: &str) -> Result<ipnet::IpNet, String> {
    let s = s.trim();
    s.parse::<ipnet::IpNet>()
        .or_else(|_| s.parse::<std::net::IpAddr>().map(ipnet::IpNet::from))
        .map_err(|_| format!("{s:?}: give an address or a network, e.g. 10.0.0.0/8"))
}

fn parse_allowed_host(s: &str) -> Result<AllowedHost, String> {
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

fn parse_optional_addr(s: &str) -> Result<OptionalAddr, String> {
    if s.eq_ignore_ascii_case("off") {
        return Ok(OptionalAddr(None));
    }
    s.parse()
        .map(|a| OptionalAddr(Some(a)))
        .map_err(|_| format!("{s:?}: give an address such as 127.0.0.1:9464, or off"))
}

pub use shared::sync::MIN_TOKEN_BYTES;

/// What this process must keep secret. Never a flag, where any user of the machine can
/// read it in `ps`; each comes from `HOP_<NAME>`, or from the file `HOP_<NAME>_FILE`
/// names (a mounted secret). `Debug` shows none of them.
#[derive(Debug, Clone, Default)]
pub struct Secrets {
    /// `HOP_PERMUTATION_KEYS`: `VERSION:32-HEX[,…]`; the highest version makes new
    /// codes. Required to create links.
    pub permutation_keys: Option<KeyRing>,
    /// `HOP_EDGE_TOKEN`: what the edge worker sends when it asks about a link (its
    /// `ORIGIN_TOKEN`); without it, `/v1/edge/*` answers 503. Several, comma-separated,
    /// are all accepted (while the worker's is rotated).
    pub edge_token: Option<SecretString>,
    /// `HOP_EDGE_SYNC_TOKEN`: the worker's `SYNC_TOKEN`; required with `--edge-sync-url`.
    pub edge_sync_token: Option<SecretString>,
    /// `HOP_CF_API_TOKEN`: a Cloudflare API token allowed to write the KV namespace.
    pub cf_api_token: Option<SecretString>,
    /// `HOP_METRICS_TOKEN`: lets a scraper read `/metrics` on the public listener (one,
    /// or several comma-separated while it is rotated).
    pub metrics_token: Option<SecretString>,
}

/// Why a secret could not be read.
#[derive(Debug, thiserror::Error)]
pub enum SecretError {
    #[error("set {name} or {name}_FILE, not both")]
    Both { name: &'static str },
    #[error("cannot read {name}_FILE ({path}): {source}")]
    File {
        name: &'static str,
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{name} is {len} bytes; use at least {MIN_TOKEN_BYTES} (e.g. openssl rand -hex 16)")]
    TooShort { name: &'static str, len: usize },
    #[error("{name}: {detail}")]
    Invalid { name: &'static str, detail: String },
}

impl Secrets {
    /// Reads every secret through `env` (the process's environment, in production).
    pub fn read(env: impl Fn(&str) -> Option<String>) -> Result<Secrets, SecretError> {
        let token = |name| -> Result<Option<SecretString>, SecretError> {
            read_secret(&env, name)?
                .map(|value| token_of(name, value))
                .transpose()
        };
        let permutation_keys = read_secret(&env, "HOP_PERMUTATION_KEYS")?
            .map(|raw| {
                KeyRing::parse(&raw).map_err(|e| SecretError::Invalid {
                    name: "HOP_PERMUTATION_KEYS",
                    detail: e.to_string(),
                })
            })
            .transpose()?;
        // Tokens this origin checks may list several while one is rotated.
        let accepted = |name| -> Result<Option<SecretString>, SecretError> {
            read_secret(&env, name)?
                .map(|value| accepted_tokens_of(name, value))
                .transpose()
        };
        Ok(Secrets {
            permutation_keys,
            edge_token: accepted("HOP_EDGE_TOKEN")?,
            edge_sync_token: token("HOP_EDGE_SYNC_TOKEN")?,
            cf_api_token: token("HOP_CF_API_TOKEN")?,
            metrics_token: accepted("HOP_METRICS_TOKEN")?,
        })
    }

    /// From the process's environment.
    pub fn from_env() -> Result<Secrets, SecretError> {
        Secrets::read(|name| std::env::var(name).ok())
    }
}

/// A token of at least [`MIN_TOKEN_BYTES`].
pub fn token_of(name: &'static str, value: String) -> Result<SecretString, SecretError> {
    if value.len() < MIN_TOKEN_BYTES {
        return Err(SecretError::TooShort {
            name,
            len: value.len(),
        });
    }
    Ok(SecretString::from(value))
}

/// Tokens a caller may present, comma-separated while one is rotated, each at least
/// [`MIN_TOKEN_BYTES`].
pub fn accepted_tokens_of(name: &'static str, value: String) -> Result<SecretString, SecretError> {
    if !shared::sync::tokens_long_enough(&value) {
        let len = shared::sync::accepted_tokens(&value)
            .map(str::len)
            .min()
            .unwrap_or(0);
        return Err(SecretError::TooShort { name, len });
    }
    Ok(SecretString::from(value))
}

/// `name`'s value, or the contents of the file `name_FILE` names (without the trailing
/// newline an editor adds); empty counts as unset.
pub fn read_secret(
    env: &impl Fn(&str) -> Option<String>,
    name: &'static str,
) -> Result<Option<String>, SecretError> {
    let direct = env(name).filter(|v| !v.is_empty());
    let file = env(&format!("{name}_FILE")).filter(|v| !v.is_empty());
    let value = match (direct, file) {
        (Some(_), Some(_)) => return Err(SecretError::Both { name }),
        (Some(v), None) => v,
        (None, Some(path)) => std::fs::read_to_string(&path)
            .map_err(|source| SecretError::File { name, path, source })?
            .trim_end_matches(['\n', '\r'])
            .to_owned(),
        (None, None) => return Ok(None),
    };
    Ok(Some(value).filter(|v| !v.is_empty()))
}

/// `7d`, `36h`, `90m`, `600s`, or a bare number of days.
/// A retention: a duration, or `keep` / `never` for none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Keep(pub Option<std::time::Duration>);

fn parse_keep(s: &str) -> Result<Keep, String> {
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

fn parse_reserved_words(path: &str) -> Result<ReservedWords, String> {
    read_word_file(path, shared::words::parse_reserved).map(ReservedWords)
}

fn parse_offensive_words(path: &str) -> Result<OffensiveWords, String> {
    read_word_file(path, shared::words::parse_offensive).map(OffensiveWords)
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

fn parse_retention(s: &str) -> Result<std::time::Duration, String> {
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
fn parse_schedule(s: &str) -> Result<Schedule, String> {
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
fn parse_duration(s: &str) -> Result<std::time::Duration, String> {
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

fn parse_short_domain(s: &str) -> Result<String, String> {
    shared::normalize_short_domain(s).map_err(|e| e.to_string())
}

fn parse_domain(s: &str) -> Result<String, String> {
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

fn parse_http_url(s: &str) -> Result<url::Url, String> {
    let url = url::Url::parse(s).map_err(|e| format!("{s:?} is not a URL: {e}"))?;
    match url.scheme() {
        "http" | "https" => Ok(url),
        other => Err(format!("{s:?} must be http or https, not {other}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The command line with no environment variables read: the tests hold whatever
    /// `HOP_*` variables the developer running them has set.
    fn without_env(cmd: clap::Command) -> clap::Command {
        cmd.mut_args(|a| a.env(None)).mut_subcommands(without_env)
    }

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        use clap::{CommandFactory, FromArgMatches};
        let matches = without_env(Cli::command())
            .try_get_matches_from(std::iter::once("hop-origin").chain(args.iter().copied()))?;
        Cli::from_arg_matches(&matches)
    }

    /// `load` as `main` calls it, with `vars` as the environment (clap's own reading of
    /// the process's environment off, as in [`parse`]).
    fn load_with(args: &[&str], vars: &[(&str, &str)]) -> Result<Loaded, LoadError> {
        use clap::CommandFactory;
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        let args = std::iter::once("hop-origin")
            .chain(args.iter().copied())
            .map(std::ffi::OsString::from)
            .collect();
        load_from(without_env(Cli::command()), args, move |name| {
            vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
        })
    }

    fn config_file(text: &str) -> (tempfile::TempDir, String) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("hop.toml");
        std::fs::write(&path, text).unwrap();
        (dir, path.display().to_string())
    }

    /// The database URL is a secret: no `Debug` of the settings shows its password,
    /// whichever way it is written; it may come from a file (a mounted secret, a
    /// systemd credential) named by `database_url_file`, but not from both.
    #[test]
    fn the_database_url_is_a_secret_that_may_come_from_a_file() {
        for url in [
            "postgres://hop:s3cret@db.internal/hop",
            "postgres://hop@db.internal/hop?password=s3cret",
            "postgres://hop:s3cret@[not a url",
        ] {
            let cli = parse(&["--database-url", url]).unwrap();
            let shown = format!("{:?}", cli.settings);
            assert!(!shown.contains("s3cret"), "{shown}");
            assert_eq!(cli.settings.database_url.expose(), url);
        }
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("database-url");
        std::fs::write(&file, "postgres://hop:s3cret@db.internal/hop\n").unwrap();
        let file = file.display().to_string();
        let loaded = load_with(&["--database-url-file", &file], &[]).unwrap();
        assert_eq!(
            loaded.cli.settings.database_url.expose(),
            "postgres://hop:s3cret@db.internal/hop"
        );
        let (_dir, path) = config_file(&format!("database_url_file = {file:?}\n"));
        let from_file = load_with(&["--config", &path], &[]).unwrap();
        assert_eq!(
            from_file.sources["database_url"].1,
            Source::File,
            "config check says where it came from"
        );
        let both = load_with(
            &[
                "--database-url",
                "sqlite://x.db",
                "--database-url-file",
                &file,
            ],
            &[],
        );
        assert!(both.err().unwrap().to_string().contains("not both"));
        let missing = load_with(&["--database-url-file", "/nonexistent/url"], &[]);
        assert!(missing.err().unwrap().to_string().contains("cannot read"));
    }

    /// Nothing loaded from a file or the command line shows a secret in `Debug`: not
    /// the file's tokens, not the database URL among the settings' sources.
    #[test]
    fn no_debug_of_what_was_loaded_shows_a_secret() {
        let (_dir, path) = config_file(
            "database_url = \"postgres://hop:s3cret-url@db.internal/hop\"\n\
             edge_token = \"s3cret-edge-token-0123456789abcdef\"\n",
        );
        let loaded = load_with(&["--config", &path], &[]).unwrap();
        let shown = format!("{loaded:?}");
        assert!(!shown.contains("s3cret"), "{shown}");
        assert!(shown.contains("edge_token"), "the keys still show: {shown}");
        let file = loaded.file.as_ref().expect("the file");
        let shown = format!("{file:?}");
        assert!(!shown.contains("s3cret"), "{shown}");
    }

    #[test]
    fn a_config_file_sets_what_flags_do_and_flags_win_over_it() {
        let (_dir, path) = config_file(
            r#"
listen = "127.0.0.1:4000"
default_domain = "Go.Example"
record_clicks = false
click_id_retention_h = 48
trusted_proxies = ["10.0.0.0/8", "192.0.2.1"]
outbox_retention = "36h"
"#,
        );
        let loaded = load_with(&["--config", &path, "--listen", "127.0.0.1:5000"], &[]).unwrap();
        let s = &loaded.cli.settings;
        assert_eq!(s.listen.to_string(), "127.0.0.1:5000", "the flag wins");
        assert_eq!(
            s.default_domain, "go.example",
            "normalized as the flag's value is"
        );
        assert!(!s.record_clicks);
        assert_eq!(s.click_id_retention_h, 48);
        assert_eq!(s.trusted_proxies.len(), 2);
        assert_eq!(s.outbox_retention.as_secs(), 36 * 3_600);
        let source = |k: &str| loaded.sources.get(k).map(|(_, s)| *s);
        assert_eq!(source("listen"), Some(Source::Flag));
        assert_eq!(source("default_domain"), Some(Source::File));
        assert_eq!(source("max_in_flight"), Some(Source::Default));
        // HOP_CONFIG names the file when no flag does.
        let by_env = load_with(&["migrate"], &[("HOP_CONFIG", &path)]).unwrap();
        assert_eq!(by_env.cli.settings.listen.to_string(), "127.0.0.1:4000");
        assert!(matches!(by_env.cli.command, Some(Command::Migrate)));
    }

    #[test]
    fn a_config_file_is_refused_whole_for_an_unknown_key_a_bad_type_or_a_bad_value() {
        let refused = |text: &str| {
            let (_dir, path) = config_file(text);
            load_with(&["--config", &path], &[])
                .map(|_| ())
                .unwrap_err()
                .to_string()
        };
        let typo = refused("databse_url = \"sqlite://x.db\"\n");
        assert!(
            typo.contains("unknown setting 'databse_url' (did you mean 'database_url'?)"),
            "{typo}"
        );
        assert!(refused("config = \"other.toml\"\n").contains("unknown setting 'config'"));
        assert!(refused("listen = { port = 3 }\n").contains("'listen' must be a string"));
        assert!(refused("listen = \n").contains("not valid TOML"));
        // Values are checked as the flag's are.
        let bad = refused("listen = \"localhost\"\n");
        assert!(bad.contains("localhost"), "{bad}");
        assert!(refused("outbox_retention = \"10m\"\n").contains("at least an hour"));
        let missing = load_with(&["--config", "/nonexistent/hop.toml"], &[]).unwrap_err();
        assert!(
            missing.to_string().contains("/nonexistent/hop.toml"),
            "{missing}"
        );
    }

    #[test]
    fn secrets_come_from_the_environment_before_the_file() {
        use secrecy::ExposeSecret;
        let (dir, path) = config_file("");
        let token_file = dir.path().join("sync");
        std::fs::write(
            &token_file,
            "sync-token-from-its-file
",
        )
        .unwrap();
        std::fs::write(
            &path,
            format!(
                "edge_token = \"edge-token-in-the-config\"\nedge_sync_token_file = \"{}\"\npermutation_keys = \"1:000102030405060708090a0b0c0d0e0f\"\n",
                token_file.display()
            ),
        )
        .unwrap();
        let loaded = load_with(
            &["--config", &path],
            &[("HOP_EDGE_TOKEN", "edge-token-from-the-environment")],
        )
        .unwrap();
        let secrets = &loaded.cli.settings.secrets;
        let shown = |t: &Option<SecretString>| t.as_ref().map(|t| t.expose_secret().to_owned());
        assert_eq!(
            shown(&secrets.edge_token).as_deref(),
            Some("edge-token-from-the-environment")
        );
        assert_eq!(
            shown(&secrets.edge_sync_token).as_deref(),
            Some("sync-token-from-its-file")
        );
        assert!(secrets.permutation_keys.is_some());
        assert_eq!(
            loaded.secret_sources.get("edge_token"),
            Some(&Source::Environment)
        );
        assert_eq!(
            loaded.secret_sources.get("edge_sync_token"),
            Some(&Source::File)
        );
        assert_eq!(loaded.secret_sources.get("metrics_token"), None);
        // A short token in the file is refused as one in the environment is.
        let (_dir, short) = config_file("metrics_token = \"short\"\n");
        assert!(load_with(&["--config", &short], &[]).is_err());
    }

    /// What lets a file key, a flag and a variable name the same setting.
    #[test]
    fn every_setting_has_its_flag_variable_and_file_key_named_alike() {
        use clap::CommandFactory;
        let cmd = Cli::command();
        let keys = file::setting_keys(&cmd);
        assert!(keys.len() >= 25, "{keys:?}");
        for arg in cmd.get_arguments().filter(|a| a.is_global_set()) {
            let long = arg.get_long().expect("a long flag");
            let env = arg.get_env().and_then(|e| e.to_str()).expect("a variable");
            assert_eq!(
                env,
                format!("HOP_{}", long.to_uppercase().replace('-', "_"))
            );
        }
    }

    #[test]
    fn the_version_names_the_release() {
        assert!(
            version().starts_with(env!("CARGO_PKG_VERSION")),
            "{}",
            version()
        );
        assert!(version().contains("commit "), "{}", version());
    }

    #[test]
    fn defaults_match_the_documented_ones() {
        let cli = parse(&[]).unwrap();
        assert_eq!(cli.settings.listen.to_string(), "127.0.0.1:3000");
        assert_eq!(cli.settings.database_url.expose(), "sqlite://hop.db");
        assert_eq!(cli.settings.default_domain, "localhost");
        assert!(cli.settings.edge_sync_url.is_none());
        assert!(cli.settings.record_clicks);
        assert_eq!(cli.settings.click_id_retention_h, 96);
        assert_eq!(
            cli.settings.outbox_retention,
            std::time::Duration::from_secs(7 * 86_400)
        );
        assert!(cli.command.is_none());
    }

    #[test]
    fn flags_are_validated_and_normalized() {
        let cli = parse(&[
            "migrate",
            "--default-domain",
            "S.Example.",
            "--edge-sync-url",
            "http://127.0.0.1:8787",
        ])
        .unwrap();
        assert!(matches!(cli.command, Some(Command::Migrate)));
        assert_eq!(cli.settings.default_domain, "s.example");
        assert!(parse(&["--listen", "localhost"]).is_err());
        assert!(parse(&["--edge-sync-url", "ftp://x"]).is_err());
        assert!(parse(&["--default-domain", "a/b"]).is_err());
        assert!(
            !parse(&["--record-clicks", "false"])
                .unwrap()
                .settings
                .record_clicks
        );
        assert!(parse(&["--click-id-retention-h", "0"]).is_err());
        let retention = |v: &str| {
            parse(&["--outbox-retention", v]).map(|c| c.settings.outbox_retention.as_secs())
        };
        assert_eq!(retention("36h").unwrap(), 36 * 3_600);
        assert_eq!(retention("2").unwrap(), 2 * 86_400);
        assert!(retention("10m").is_err(), "shorter than an hour");
        assert!(retention("7w").is_err());
    }

    #[test]
    fn secrets_are_never_flags_and_never_short() {
        // A flag is visible to every user of the machine in `ps`.
        for flag in [
            "--edge-token",
            "--edge-sync-token",
            "--cf-api-token",
            "--permutation-keys",
            "--api-key",
        ] {
            assert!(
                parse(&[flag, "0123456789abcdef0123"]).is_err(),
                "{flag} is accepted"
            );
            assert!(
                parse(&["import", "f.csv", flag, "0123456789abcdef0123"]).is_err(),
                "{flag}"
            );
        }
        let env = |vars: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                vars.iter()
                    .find(|(n, _)| *n == name)
                    .map(|(_, v)| v.to_string())
            }
        };
        let short = Secrets::read(env(&[("HOP_EDGE_TOKEN", "short")])).unwrap_err();
        assert_eq!(
            short.to_string(),
            "HOP_EDGE_TOKEN is 5 bytes; use at least 16 (e.g. openssl rand -hex 16)"
        );
        assert!(Secrets::read(env(&[
            ("HOP_METRICS_TOKEN", "0123456789abcdef"),
            ("HOP_METRICS_TOKEN_FILE", "/x")
        ]))
        .is_err());
        assert!(Secrets::read(env(&[("HOP_PERMUTATION_KEYS", "1:zz")])).is_err());
        // From a file, as a mounted secret.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("token");
        std::fs::write(&path, "sync-token-from-a-file-0123\n").unwrap();
        let path = path.display().to_string();
        let secrets =
            Secrets::read(|name| (name == "HOP_EDGE_SYNC_TOKEN_FILE").then(|| path.clone()))
                .unwrap();
        use secrecy::ExposeSecret;
        assert_eq!(
            secrets.edge_sync_token.as_ref().map(|t| t.expose_secret()),
            Some("sync-token-from-a-file-0123")
        );
        // And nothing of it in Debug (logs, panics).
        let shown = format!("{secrets:?}");
        assert!(!shown.contains("sync-token"), "{shown}");
    }
}

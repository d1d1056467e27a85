//! The command tree: `hop-origin` and its subcommands with their arguments, as clap
//! parses them. The settings every command shares are [`super::settings::Settings`].

use super::parsers::{parse_domain, parse_duration, parse_http_url};
use super::settings::Settings;
use clap::{Args, Parser, Subcommand};
use secrecy::SecretString;

/// `--version`: the release and the commit it was built from, which `scripts/release`
/// passes in `HOP_BUILD_COMMIT`; other builds say they have none.
pub fn version() -> String {
    format!(
        "{} (commit {})",
        env!("CARGO_PKG_VERSION"),
        option_env!("HOP_BUILD_COMMIT").unwrap_or("unknown: not a release build")
    )
}

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

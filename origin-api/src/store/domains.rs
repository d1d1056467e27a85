//! The domain registry: a row of `domains` per registered domain, its owners in
//! `domain_owners` when it is not shared.

use super::contract::{DomainAt, StoreError};
use super::outbox::{insert_outbox, OutboxInsert};
use super::sql::{list_placeholders, Arg, Conn};
use crate::db::Db;
use crate::model::event::NewEvent;
use crate::model::link::host_suffixes;
use crate::model::sequence::{code_sequence, code_step};
use crate::model::time::now_ms;
use crate::model::{Domain, DomainAccess};
use shared::{
    Alphabet, Brand, CodeSpace, DomainConfig, DomainSettings, DomainStatus, RedirectStatus,
};
use std::collections::HashMap;

/// The columns of what visitors get (`shared::DomainSettings`), as
/// `domain_settings.sql` reads them.
#[derive(sqlx::FromRow)]
pub(super) struct SettingsRow {
    alphabet: String,
    code_length: i64,
    case_insensitive: bool,
    forward_query: bool,
    default_redirect: i64,
    max_age_s: i64,
    status: String,
    not_found_url: Option<String>,
    root_url: Option<String>,
    expired_url: Option<String>,
    interstitial: bool,
    brand_name: Option<String>,
    brand_colour: Option<String>,
    legacy_url: Option<String>,
    code_strategy: String,
    /// Unix seconds, as visitors' decisions read it.
    legacy_until: Option<i64>,
}

impl SettingsRow {
    /// The settings these columns of `domain` hold.
    pub(super) fn settings(&self, domain: &str) -> Result<DomainSettings, StoreError> {
        let corrupt = |what: &str| StoreError::Corrupt(format!("domain {domain}: {what}"));
        let alphabet: Alphabet = self.alphabet.parse().map_err(|_| corrupt("alphabet"))?;
        let length = u8::try_from(self.code_length).map_err(|_| corrupt("code_length"))?;
        Ok(DomainSettings {
            codes: match self.code_strategy.as_str() {
                "random" => CodeSpace::random(alphabet, length),
                _ => CodeSpace::new(alphabet, length),
            }
            .map_err(|_| corrupt("code_length"))?,
            case_insensitive: self.case_insensitive,
            forward_query: self.forward_query,
            default_redirect: u16::try_from(self.default_redirect)
                .ok()
                .and_then(|c| RedirectStatus::try_from(c).ok())
                .ok_or_else(|| corrupt("default_redirect"))?,
            max_age_s: u32::try_from(self.max_age_s).map_err(|_| corrupt("max_age_s"))?,
            status: DomainStatus::parse(&self.status).ok_or_else(|| corrupt("status"))?,
            not_found_url: self.not_found_url.clone(),
            root_url: self.root_url.clone(),
            expired_url: self.expired_url.clone(),
            interstitial: self.interstitial,
            brand: match (&self.brand_name, &self.brand_colour) {
                (Some(name), Some(colour)) => Some(Brand {
                    name: name.clone(),
                    colour: colour.clone(),
                }),
                _ => None,
            },
            legacy_url: self.legacy_url.clone(),
            legacy_until: self.legacy_until,
        })
    }
}

/// Reads, and on PostgreSQL locks, the row of `name` for a change in this transaction:
/// its version, if it exists; `Stale` when it is not at `expected`; with `only_without_links`,
/// `HoldsLinks` when a link lives on it. A new link reads the row under a shared lock
/// ([`check_domains`]), so the two are ordered: a link committed first is seen here, and
/// a link after this change sees the new version and fails.
async fn lock_for_change(
    c: &mut Conn<'_>,
    name: &str,
    expected: Option<i64>,
    only_without_links: bool,
) -> Result<Option<i64>, StoreError> {
    // Built at run time: PostgreSQL's row lock (`FOR UPDATE`), which SQLite has not.
    let lock = if c.is_postgres() { " FOR UPDATE" } else { "" };
    let row: Option<(i64,)> = c
        .fetch_optional(
            &format!("SELECT version FROM domains WHERE domain = $1{lock}"),
            &[name.into()],
        )
        .await?;
    let Some((version,)) = row else {
        return match expected {
            Some(_) => Err(StoreError::Stale),
            None => Ok(None),
        };
    };
    if expected.is_some_and(|e| e != version) {
        return Err(StoreError::Stale);
    }
    if only_without_links {
        let link: Option<(i64,)> = c.fetch_optional(A_LINK_ON_DOMAIN, &[name.into()]).await?;
        if link.is_some() {
            return Err(StoreError::HoldsLinks);
        }
    }
    Ok(Some(version))
}

/// Queues `config` for the edge as `cfg:{domain}` on the fast lane, and announces the
/// change to the other origins on PostgreSQL, in the transaction that changed the domain.
async fn send_config(
    c: &mut Conn<'_>,
    domain: &str,
    config: &DomainConfig,
    at: i64,
) -> Result<(), StoreError> {
    let payload = config.to_json();
    let version = i64::try_from(config.v)
        .map_err(|_| StoreError::Corrupt(format!("domain {domain}: version")))?;
    insert_outbox(
        c,
        &[OutboxInsert {
            lane: "fast",
            kind: "cfg",
            route_key: domain,
            version,
            payload: &payload,
            created_at: at,
        }],
    )
    .await?;
    // The other origins' redirects read the domain's settings again at once.
    if c.is_postgres() {
        // Inline: PostgreSQL only (SQLite has no notifications), no file to check on both.
        c.execute(
            "SELECT pg_notify($1, $2)",
            &[super::contract::DOMAINS_CHANNEL.into(), domain.into()],
        )
        .await?;
    }
    Ok(())
}

/// Checks, first thing in a transaction that writes links, that each domain they were
/// judged by is still at that version, holding its row under a shared lock on
/// PostgreSQL until the commit (SQLite has one writer at a time); `DomainChanged` when
/// one moved on or went. See [`lock_for_change`].
pub(super) async fn check_domains(
    c: &mut Conn<'_>,
    domains: &[DomainAt],
) -> Result<(), StoreError> {
    // Built at run time: PostgreSQL's row lock (`FOR SHARE`), which SQLite has not.
    let lock = if c.is_postgres() { " FOR SHARE" } else { "" };
    let sql = format!("SELECT version FROM domains WHERE domain = $1{lock}");
    for d in domains {
        let row: Option<(i64,)> = c.fetch_optional(&sql, &[(&d.domain).into()]).await?;
        if row.and_then(|(v,)| u64::try_from(v).ok()) != Some(d.version) {
            return Err(StoreError::DomainChanged);
        }
    }
    Ok(())
}

const A_LINK_ON_DOMAIN: &str = include_str!("queries/a_link_on_domain.sql");
const INSERT_DOMAIN_OWNER: &str = include_str!("queries/insert_domain_owner.sql");
/// The newest version of a domain's settings ever queued for the edge.
const DOMAIN_CONFIG_SENT: &str = include_str!("queries/domain_config_sent.sql");
/// A new domain: the values of [`row_args`].
const INSERT_DOMAIN: &str = include_str!("queries/insert_domain.sql");
/// A domain's code sequence, unless it has one.
const INSERT_CODE_SEQUENCE: &str = include_str!("queries/insert_code_sequence.sql");
/// A domain's row rewritten with the values of [`row_args`] (its strategy as `$22`, its fallback's end as `$23`), if it is at version `$21`.
const UPDATE_DOMAIN: &str = include_str!("queries/update_domain.sql");
const DELETE_DOMAIN_OWNERS: &str = include_str!("queries/delete_domain_owners.sql");
/// The domains whose settings were never queued for the edge.
const DOMAINS_WITHOUT_CONFIG: &str = include_str!("queries/domains_without_config.sql");
const OWNERS_OF_LINKS_ON: &str = include_str!("queries/owners_of_links_on.sql");
const DELETE_DOMAIN: &str = include_str!("queries/delete_domain.sql");
const DOMAIN_BY_NAME: &str = include_str!("queries/domain_by_name.sql");
const LIST_DOMAINS: &str = include_str!("queries/list_domains.sql");
/// The shared domains and those of an owner, by name.
const DOMAINS_FOR_OWNER: &str = include_str!("queries/domains_for_owner.sql");

#[derive(sqlx::FromRow)]
struct DomainRow {
    domain: String,
    #[sqlx(flatten)]
    settings: SettingsRow,
    shared: bool,
    allowed_target_hosts: Option<String>,
    version: i64,
    created_at: i64,
    updated_at: i64,
}

impl DomainRow {
    /// The domain, with `owners` when it is not shared.
    fn into_domain(self, owners: Vec<String>) -> Result<Domain, StoreError> {
        let corrupt = |what: &str| StoreError::Corrupt(format!("domain {}: {what}", self.domain));
        let settings = self.settings.settings(&self.domain)?;
        let allowed_target_hosts = match &self.allowed_target_hosts {
            None => None,
            Some(json) => Some(
                serde_json::from_str::<Vec<String>>(json)
                    .map_err(|_| corrupt("allowed_target_hosts"))?,
            ),
        };
        let version = u64::try_from(self.version).map_err(|_| corrupt("version"))?;
        Ok(Domain {
            access: if self.shared {
                DomainAccess::Shared
            } else {
                DomainAccess::owners(owners)
            },
            settings,
            allowed_target_hosts,
            version,
            created_at: self.created_at,
            updated_at: self.updated_at,
            domain: self.domain,
        })
    }
}

/// A domain's allowed hosts as stored (JSON text) and its version as a BIGINT.
fn encoded(d: &Domain) -> Result<(Option<String>, i64), StoreError> {
    let hosts = d
        .allowed_target_hosts
        .as_ref()
        .map(|h| serde_json::Value::from(h.clone()).to_string());
    let version = i64::try_from(d.version)
        .map_err(|_| StoreError::Corrupt(format!("domain {}: version", d.domain)))?;
    Ok((hosts, version))
}

/// The values of a domain's columns, in the order [`INSERT_DOMAIN`] lists them.
fn row_args<'a>(d: &'a Domain, hosts: &'a Option<String>, version: i64) -> Vec<Arg<'a>> {
    vec![
        (&d.domain).into(),
        d.settings.codes.alphabet().name().into(),
        i64::from(d.settings.codes.length()).into(),
        d.settings.case_insensitive.into(),
        d.settings.forward_query.into(),
        i64::from(d.settings.default_redirect.code()).into(),
        i64::from(d.settings.max_age_s).into(),
        d.settings.status.as_str().into(),
        (&d.settings.not_found_url).into(),
        (&d.settings.root_url).into(),
        (&d.settings.expired_url).into(),
        matches!(d.access, DomainAccess::Shared).into(),
        hosts.into(),
        version.into(),
        d.created_at.into(),
        d.updated_at.into(),
        d.settings.interstitial.into(),
        d.settings.brand.as_ref().map(|b| b.name.as_str()).into(),
        d.settings.brand.as_ref().map(|b| b.colour.as_str()).into(),
        d.settings.legacy_url.as_deref().into(),
        strategy_name(&d.settings.codes).into(),
        d.settings.legacy_until.into(),
    ]
}

/// The `code_strategy` column of a code space.
fn strategy_name(codes: &CodeSpace) -> &'static str {
    if codes.is_random() {
        "random"
    } else {
        "sequential"
    }
}

/// The owner rows of an owned domain.
async fn write_owners(c: &mut Conn<'_>, d: &Domain) -> Result<(), StoreError> {
    if let DomainAccess::Owners(owners) = &d.access {
        for owner in owners {
            c.execute(INSERT_DOMAIN_OWNER, &[(&d.domain).into(), owner.into()])
                .await?;
        }
    }
    Ok(())
}

impl Db {
    /// The rows `sql` selects (a domain's columns, as [`DOMAIN_BY_NAME`] lists them),
    /// each with its owners.
    async fn domains_where(&self, sql: &str, args: &[Arg<'_>]) -> Result<Vec<Domain>, StoreError> {
        let rows: Vec<DomainRow> = self.read_all(sql, args).await?;
        let owned: Vec<&str> = rows
            .iter()
            .filter(|r| !r.shared)
            .map(|r| r.domain.as_str())
            .collect();
        let mut owners: HashMap<String, Vec<String>> = HashMap::new();
        if !owned.is_empty() {
            let names: Vec<Arg<'_>> = owned.iter().map(|&d| d.into()).collect();
            // Built at run time: one placeholder per domain.
            let pairs: Vec<(String, String)> = self
                .read_all(
                    &format!(
                        "SELECT domain, owner_id FROM domain_owners WHERE domain IN ({})",
                        list_placeholders(1, names.len())
                    ),
                    &names,
                )
                .await?;
            for (domain, owner) in pairs {
                owners.entry(domain).or_default().push(owner);
            }
        }
        rows.into_iter()
            .map(|r| {
                let its = owners.remove(&r.domain).unwrap_or_default();
                r.into_domain(its)
            })
            .collect()
    }
}

/// Registers `domain` with its owners, and queues its settings for the edge
/// (`cfg:{domain}`), in one transaction; `Registered` when it is in the registry
/// already, in which case nothing is written. The version it is registered at: 1,
/// or one past the last its name had at the edge, if it was registered before.
pub async fn insert(db: &Db, d: &Domain) -> Result<u64, StoreError> {
    let mut tx = db.begin_write().await?;
    let mut c = tx.conn();
    // A name registered before, then removed, goes on from the versions its settings
    // had at the edge, which keeps the newest copy of a key it was sent.
    let sent: Option<(Option<i64>,)> = c
        .fetch_optional(DOMAIN_CONFIG_SENT, &[(&d.domain).into()])
        .await?;
    let d = &Domain {
        version: match sent.and_then(|(v,)| v) {
            Some(v) => u64::try_from(v).unwrap_or_default() + 1,
            None => d.version,
        },
        ..d.clone()
    };
    let (hosts, version) = encoded(d)?;
    c.execute(INSERT_DOMAIN, &row_args(d, &hosts, version))
        .await
        .map_err(StoreError::from_write)?;
    write_owners(&mut c, d).await?;
    // The domain's own code sequence, so the heartbeat dates its codes at the edge
    // before its first generated link. A name registered again goes on numbering.
    let step = i64::try_from(code_step(&d.settings.codes)).unwrap_or(1);
    let sequence = code_sequence(&d.domain);
    c.execute(
        INSERT_CODE_SEQUENCE,
        &[(&sequence).into(), step.into(), d.updated_at.into()],
    )
    .await?;
    send_config(&mut c, &d.domain, &d.config(), d.updated_at).await?;
    tx.commit().await?;
    Ok(d.version)
}

/// Replaces the row and owners of `domain.domain`, and queues its settings for the
/// edge, in one transaction while its
/// version is still `expected`; `Stale`, with nothing written, once it moved on. With
/// `only_without_links` (a change of the code shape), `HoldsLinks` when a link lives
/// on it, checked after the row is locked, so that no first link slips in between.
pub async fn update(
    db: &Db,
    d: &Domain,
    expected: u64,
    only_without_links: bool,
) -> Result<(), StoreError> {
    let (hosts, version) = encoded(d)?;
    let expected = i64::try_from(expected).map_err(|_| StoreError::Stale)?;
    let mut args = row_args(d, &hosts, version);
    // The version expected, then the columns added after it ($21, $22, $23).
    let legacy_until = args.pop().ok_or(StoreError::Stale)?;
    let strategy = args.pop().ok_or(StoreError::Stale)?;
    args.push(expected.into());
    args.push(strategy);
    args.push(legacy_until);
    let mut tx = db.begin_write().await?;
    let mut c = tx.conn();
    lock_for_change(&mut c, &d.domain, Some(expected), only_without_links).await?;
    let changed = c.execute(UPDATE_DOMAIN, &args).await?;
    if changed == 0 {
        return Err(StoreError::Stale);
    }
    c.execute(DELETE_DOMAIN_OWNERS, &[(&d.domain).into()])
        .await?;
    write_owners(&mut c, d).await?;
    send_config(&mut c, &d.domain, &d.config(), d.updated_at).await?;
    super::events::record(&mut c, &[NewEvent::of_domain(d, d.updated_at)]).await?;
    tx.commit().await?;
    Ok(())
}

/// Queues the settings of every registered domain the edge was never sent any for
/// (registered before domains were published); how many.
pub async fn send_unsent_configs(db: &Db) -> Result<u64, StoreError> {
    let mut tx = db.begin_write().await?;
    let mut c = tx.conn();
    let rows: Vec<DomainRow> = c.fetch_all(DOMAINS_WITHOUT_CONFIG, &[]).await?;
    let mut sent = 0;
    for row in rows {
        // Owners do not travel to the edge.
        let d = row.into_domain(Vec::new())?;
        send_config(&mut c, &d.domain, &d.config(), now_ms()).await?;
        sent += 1;
    }
    tx.commit().await?;
    Ok(sent)
}

/// The owners of the links on `name`, sorted: who a domain from before the
/// registry is registered for.
pub async fn owners_of_links_on(db: &Db, name: &str) -> Result<Vec<String>, StoreError> {
    let rows: Vec<(String,)> = db.read_all(OWNERS_OF_LINKS_ON, &[name.into()]).await?;
    Ok(rows.into_iter().map(|(o,)| o).collect())
}

/// Removes a registered domain and its owners, and queues a disabled `cfg:` for the
/// edge, when no link lives on it
/// (`HoldsLinks` otherwise, checked after the row is locked) and, when `expected`
/// is given, at that version (`Stale`); whether there was one to remove.
pub async fn delete(db: &Db, name: &str, expected: Option<u64>) -> Result<bool, StoreError> {
    let expected = expected
        .map(|v| i64::try_from(v).map_err(|_| StoreError::Stale))
        .transpose()?;
    let mut tx = db.begin_write().await?;
    let mut c = tx.conn();
    let Some(version) = lock_for_change(&mut c, name, expected, true).await? else {
        return Ok(false);
    };
    c.execute(DELETE_DOMAIN_OWNERS, &[name.into()]).await?;
    let gone = c.execute(DELETE_DOMAIN, &[name.into()]).await?;
    // The edge stops serving it: a disabled domain answers 404 to everything.
    let removed = DomainConfig {
        v: u64::try_from(version).unwrap_or_default() + 1,
        settings: DomainSettings {
            status: DomainStatus::Disabled,
            ..DomainSettings::default()
        },
    };
    send_config(&mut c, name, &removed, now_ms()).await?;
    tx.commit().await?;
    Ok(gone > 0)
}

/// A registered domain.
pub async fn get(db: &Db, name: &str) -> Result<Option<Domain>, StoreError> {
    let mut found = db.domains_where(DOMAIN_BY_NAME, &[name.into()]).await?;
    Ok(found.pop())
}

/// Every registered domain, by name.
pub async fn list(db: &Db) -> Result<Vec<Domain>, StoreError> {
    db.domains_where(LIST_DOMAINS, &[]).await
}

/// The domains keys of `owner` may create links on: the shared ones and its own.
pub async fn for_owner(db: &Db, owner: &str) -> Result<Vec<Domain>, StoreError> {
    db.domains_where(DOMAINS_FOR_OWNER, &[owner.into()]).await
}
/// The domain's settings, or the defaults when it has no row.
pub async fn settings(db: &Db, domain: &str) -> Result<DomainSettings, StoreError> {
    let row: Option<SettingsRow> = db.read_optional(DOMAIN_SETTINGS, &[domain.into()]).await?;
    match row {
        Some(r) => r.settings(domain),
        None => Ok(DomainSettings::default()),
    }
}

/// Every domain that holds a link or has settings: the hosts the redirect answers
/// for. One index probe per domain, however many links there are.
pub async fn served(db: &Db) -> Result<Vec<String>, StoreError> {
    // A skip scan of the (domain, code) index: each step finds the next domain
    // after the last, so a million links on three domains cost three probes.
    let rows: Vec<(String,)> = db.read_all(SERVED_DOMAINS, &[]).await?;
    Ok(rows.into_iter().map(|(d,)| d).collect())
}

/// Whether `host` is one of the short domains this origin serves or under one
/// (the registry holds it or a parent of it, label-wise), or holds a link.
pub async fn is_own(db: &Db, host: &str) -> Result<bool, StoreError> {
    // The host and each of its parents (`a.go.example`, `go.example`, `example`):
    // a registered domain serves its subdomains' visitors too, were DNS to send them.
    // A host holding links is served as well (links from before the registry).
    let mut names = vec![host];
    let mut rest = host;
    while let Some((_, parent)) = rest.split_once('.') {
        names.push(parent);
        rest = parent;
    }
    // Built at run time: one placeholder per name.
    let sql = format!(
        "SELECT CAST(1 AS BIGINT) FROM domains WHERE domain IN ({}) \
         UNION ALL SELECT CAST(1 AS BIGINT) FROM (SELECT 1 FROM links WHERE domain = $1 LIMIT 1) AS l \
         LIMIT 1",
        list_placeholders(1, names.len())
    );
    let args: Vec<Arg<'_>> = names.iter().map(|n| (*n).into()).collect();
    let found: Option<(i64,)> = db.read_optional(&sql, &args).await?;
    Ok(found.is_some())
}

/// Which of `hosts` are served by this shortener, as [`is_own`] judges one, in two
/// statements per 500 names rather than one per host: an import's or a bulk create's
/// targets name hundreds of hosts, each a round trip on PostgreSQL.
pub async fn own_hosts(
    db: &Db,
    hosts: &[String],
) -> Result<std::collections::HashSet<String>, StoreError> {
    use std::collections::HashSet;
    let suffixes: Vec<Vec<String>> = hosts.iter().map(|h| host_suffixes(h)).collect();
    let mut names: Vec<&str> = suffixes.iter().flatten().map(String::as_str).collect();
    names.sort_unstable();
    names.dedup();
    let mut registered: HashSet<String> = HashSet::new();
    for chunk in names.chunks(500) {
        // Built at run time: one placeholder per name.
        let sql = format!(
            "SELECT domain FROM domains WHERE domain IN ({})",
            list_placeholders(1, chunk.len())
        );
        let args: Vec<Arg<'_>> = chunk.iter().map(|n| (*n).into()).collect();
        let rows: Vec<(String,)> = db.read_all(&sql, &args).await?;
        registered.extend(rows.into_iter().map(|(d,)| d));
    }
    let mut holding: HashSet<String> = HashSet::new();
    for chunk in hosts.chunks(500) {
        // Built at run time: one placeholder per host.
        let sql = format!(
            "SELECT DISTINCT domain FROM links WHERE domain IN ({})",
            list_placeholders(1, chunk.len())
        );
        let args: Vec<Arg<'_>> = chunk.iter().map(Arg::from).collect();
        let rows: Vec<(String,)> = db.read_all(&sql, &args).await?;
        holding.extend(rows.into_iter().map(|(d,)| d));
    }
    Ok(hosts
        .iter()
        .zip(&suffixes)
        .filter(|(host, names)| {
            holding.contains(host.as_str()) || names.iter().any(|n| registered.contains(n))
        })
        .map(|(host, _)| host.clone())
        .collect())
}

/// A domain's code rules.
const DOMAIN_SETTINGS: &str = include_str!("queries/domain_settings.sql");

/// The domains holding links, or registered.
const SERVED_DOMAINS: &str = include_str!("queries/served_domains.sql");

#[cfg(test)]
mod tests {
    use super::*;

    /// What [`DomainRow`] reads, and what [`row_args`] binds, in its order.
    const COLUMNS: &str = "domain, alphabet, code_length, case_insensitive, forward_query, \
         default_redirect, max_age_s, status, not_found_url, root_url, expired_url, shared, \
         allowed_target_hosts, version, created_at, updated_at, interstitial, brand_name, \
         brand_colour, legacy_url, code_strategy, legacy_until";

    fn words(s: &str) -> String {
        s.split_whitespace().collect::<Vec<_>>().join(" ")
    }

    #[test]
    fn every_statement_of_a_row_lists_the_columns_of_the_row() {
        for sql in [
            INSERT_DOMAIN,
            DOMAINS_WITHOUT_CONFIG,
            DOMAIN_BY_NAME,
            LIST_DOMAINS,
            DOMAINS_FOR_OWNER,
        ] {
            assert!(words(sql).contains(&words(COLUMNS)), "{sql}");
        }
        assert!(words(INSERT_DOMAIN).contains(&format!("VALUES ({})", list_placeholders(1, 22))));
    }
}

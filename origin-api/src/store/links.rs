//! Links, keys, domains and bans in SQL. The unique index on `(domain, code)` is the
//! only arbiter of who gets a code: inserts never check first.

use super::{BulkInsert, IdempotencyKey, Idempotent, LinkStore, StoreError};
use crate::db::Db;
use crate::keys::ApiKey;
use crate::links::{Link, LinkState, ListFilter, Published};
use async_trait::async_trait;
use shared::{Alphabet, CodeKind, CodeSpace, DomainSettings, RedirectStatus};

/// The columns `LinkRow` reads, for queries built elsewhere in the store.
pub(super) fn link_row_columns() -> &'static str {
    SELECT_COLUMNS
}

/// What a read selects: the written columns and what the publisher recorded.
const SELECT_COLUMNS: &str = "link_id, domain, code, target_url, owner_id, status, redirect_status, \
     expires_at, version, key_version, code_kind, forward_query, title, tags, created_at, updated_at, \
     published_version, published_at";

const LINK_COLUMNS: &str = "link_id, domain, code, target_url, owner_id, status, redirect_status, \
     expires_at, version, key_version, code_kind, forward_query, title, tags, created_at, updated_at";

#[derive(sqlx::FromRow)]
pub(super) struct LinkRow {
    link_id: i64,
    domain: String,
    code: String,
    target_url: String,
    owner_id: String,
    status: String,
    redirect_status: i64,
    expires_at: Option<i64>,
    version: i64,
    key_version: Option<i64>,
    code_kind: String,
    forward_query: bool,
    title: Option<String>,
    tags: String,
    created_at: i64,
    updated_at: i64,
    published_version: Option<i64>,
    published_at: Option<i64>,
}

impl TryFrom<LinkRow> for Link {
    type Error = StoreError;
    fn try_from(r: LinkRow) -> Result<Self, StoreError> {
        let corrupt = |what: &str| StoreError::Corrupt(format!("link {}: {what}", r.link_id));
        Ok(Link {
            link_id: u64::try_from(r.link_id).map_err(|_| corrupt("link_id"))?,
            status: LinkState::parse(&r.status).ok_or_else(|| corrupt("status"))?,
            redirect: u16::try_from(r.redirect_status)
                .ok()
                .and_then(|c| RedirectStatus::try_from(c).ok())
                .ok_or_else(|| corrupt("redirect_status"))?,
            version: u64::try_from(r.version).map_err(|_| corrupt("version"))?,
            key_version: r
                .key_version
                .map(u32::try_from)
                .transpose()
                .map_err(|_| corrupt("key_version"))?,
            code_kind: match r.code_kind.as_str() {
                "generated" => CodeKind::Generated,
                "custom" => CodeKind::Custom,
                _ => return Err(corrupt("code_kind")),
            },
            tags: serde_json::from_str(&r.tags).map_err(|_| corrupt("tags"))?,
            domain: r.domain,
            code: r.code,
            target_url: r.target_url,
            owner_id: r.owner_id,
            expires_at: r.expires_at,
            forward_query: r.forward_query,
            title: r.title,
            created_at: r.created_at,
            updated_at: r.updated_at,
            published: match (r.published_version, r.published_at) {
                (Some(v), Some(at)) => Some(Published {
                    version: u64::try_from(v).map_err(|_| corrupt("published_version"))?,
                    at,
                }),
                _ => None,
            },
        })
    }
}

#[derive(sqlx::FromRow)]
struct KeyRow {
    key_id: String,
    owner_id: String,
    name: String,
    secret_hash: String,
    scopes: String,
    created_at: i64,
    revoked_at: Option<i64>,
}

#[derive(sqlx::FromRow)]
struct DomainRow {
    alphabet: String,
    code_length: i64,
    case_insensitive: bool,
    forward_query: bool,
    default_redirect: i64,
    max_age_s: i64,
}

/// Links per multi-row statement in a bulk insert: 17 parameters each stays well under
/// SQLite's 32,766 and PostgreSQL's 65,535.
const BULK_CHUNK: usize = 500;

/// A link's values in the database's types.
struct NewLinkRow {
    link_id: i64,
    version: i64,
    tags: String,
    code_kind: &'static str,
}

impl NewLinkRow {
    fn new(link: &Link) -> Result<Self, StoreError> {
        Ok(NewLinkRow {
            link_id: to_i64(link.link_id, "link_id")?,
            version: to_i64(link.version, "version")?,
            tags: serde_json::to_string(&link.tags).unwrap_or_else(|_| "[]".into()),
            code_kind: match link.code_kind {
                CodeKind::Generated => "generated",
                CodeKind::Custom => "custom",
            },
        })
    }
}

/// Claims an idempotency key inside `tx` (after forgetting it if expired). Evaluates to
/// `None` when this transaction now holds the key, or to the earlier request's hash and
/// recorded response when another holds it (a concurrent claim waits on the unique
/// index until the holder commits).
macro_rules! claim_key {
    ($tx:expr, $key:expr, $link_id:expr, $response:expr, $now:expr) => {{
        sqlx::query("DELETE FROM idempotency WHERE owner_id = $1 AND key = $2 AND created_at < $3")
            .bind($key.owner_id)
            .bind($key.key)
            .bind($key.expired_before)
            .execute(&mut *$tx)
            .await?;
        let claimed = sqlx::query(
            "INSERT INTO idempotency (owner_id, key, request_hash, state, link_id, response, created_at) \
             VALUES ($1, $2, $3, 'succeeded', $4, $5, $6) ON CONFLICT (owner_id, key) DO NOTHING",
        )
        .bind($key.owner_id)
        .bind($key.key)
        .bind($key.request_hash)
        .bind($link_id)
        .bind($response)
        .bind($now)
        .execute(&mut *$tx)
        .await?
        .rows_affected();
        if claimed == 0 {
            let (hash, response): (String, Option<String>) =
                sqlx::query_as("SELECT request_hash, response FROM idempotency WHERE owner_id = $1 AND key = $2")
                    .bind($key.owner_id)
                    .bind($key.key)
                    .fetch_one(&mut *$tx)
                    .await?;
            Some((hash, response.unwrap_or_default()))
        } else {
            None
        }
    }};
}

/// The advisory lock that orders ban changes against link writes on PostgreSQL: a
/// write of a link holds it shared while it decides whether a ban covers the link, and a
/// ban or lift holds it exclusively, so that each sees the other whole or not at all.
/// (SQLite has one writer at a time, which orders them already.)
pub(super) const BAN_LOCK: i64 = 0x686f_705f_6261_6e73; // "hop_bans"

/// Takes the ban lock inside `$tx` on PostgreSQL, shared or exclusive (`$function`).
macro_rules! ban_lock {
    ($tx:expr, $pg:expr, $function:literal) => {
        if $pg {
            sqlx::query(concat!("SELECT ", $function, "($1)"))
                .bind($crate::store::links::BAN_LOCK)
                .execute(&mut *$tx)
                .await?;
        }
    };
}
pub(super) use ban_lock;

/// Announces, on PostgreSQL, that `$route` is now at `$version` (delivered to the other
/// origins when `$tx` commits; `freshness` listens).
macro_rules! announce {
    ($tx:expr, $pg:expr, $version:expr, $route:expr) => {
        if $pg {
            sqlx::query("SELECT pg_notify($1, $2)")
                .bind($crate::freshness::LINKS_CHANNEL)
                .bind(format!("{} {}", $version, $route))
                .execute(&mut *$tx)
                .await?;
        }
    };
}

/// Whether an active ban covers `domain/code` or the target host `host`, read inside
/// `$tx` (after the ban lock).
macro_rules! covered_in_tx {
    ($tx:expr, $domain:expr, $code:expr, $host:expr) => {{
        let suffixes = host_suffixes($host);
        let sql = ban_cover_sql(suffixes.len());
        let mut q = sqlx::query_scalar::<_, i64>(&sql).bind($domain).bind($code);
        for s in &suffixes {
            q = q.bind(s);
        }
        q.fetch_optional(&mut *$tx).await?.is_some()
    }};
}

/// `SELECT` of any active ban of a code ($1/$2) or of one of `suffixes` hosts ($3…).
fn ban_cover_sql(suffixes: usize) -> String {
    let hosts: Vec<String> = (3..3 + suffixes).map(|i| format!("${i}")).collect();
    format!(
        "SELECT CAST(1 AS BIGINT) FROM bans WHERE lifted_at IS NULL AND \
         ((kind = 'code' AND domain = $1 AND code = $2) OR (kind = 'host' AND host IN ({}))) LIMIT 1",
        hosts.join(", ")
    )
}

/// Inserts the link and its outbox row inside `tx`, the record marked `banned` when a
/// ban covers it at this moment; evaluates to that mark. Returns `Taken` from the
/// enclosing function when the route key exists.
macro_rules! insert_in_tx {
    ($tx:expr, $pg:expr, $row:expr, $link:expr) => {{
        ban_lock!($tx, $pg, "pg_advisory_xact_lock_shared");
        let banned = covered_in_tx!($tx, &$link.domain, &$link.code, &$link.target_host());
        let inserted = sqlx::query(&format!(
            "INSERT INTO links ({LINK_COLUMNS}, target_host) VALUES \
             ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)"
        ))
        .bind($row.link_id)
        .bind(&$link.domain)
        .bind(&$link.code)
        .bind(&$link.target_url)
        .bind(&$link.owner_id)
        .bind($link.status.as_str())
        .bind(i64::from($link.redirect.code()))
        .bind($link.expires_at)
        .bind($row.version)
        .bind($link.key_version.map(i64::from))
        .bind($row.code_kind)
        .bind($link.forward_query)
        .bind(&$link.title)
        .bind(&$row.tags)
        .bind($link.created_at)
        .bind($link.updated_at)
        .bind($link.target_host())
        .execute(&mut *$tx)
        .await;
        match inserted {
            Err(e) if is_route_taken(&e) => return Err(StoreError::Taken),
            other => other.map_err(StoreError::from_write)?,
        };
        sqlx::query(
            "INSERT INTO outbox (lane, kind, route_key, version, payload, created_at) \
             VALUES ('normal', 'link', $1, $2, $3, $4)",
        )
        .bind($link.route_key())
        .bind($row.version)
        .bind($link.edge_record(banned).to_json())
        .bind($link.created_at)
        .execute(&mut *$tx)
        .await?;
        announce!($tx, $pg, $row.version, $link.route_key());
        banned
    }};
}

/// Whether `e` is the `(domain, code)` unique index refusing a second link: the only
/// conflict that means "this code is taken". Any other (a primary key reused, say, as
/// when two processes were handed the same ids) is a fault, not the caller's.
fn is_route_taken(e: &sqlx::Error) -> bool {
    let Some(d) = e.as_database_error() else {
        return false;
    };
    if !d.is_unique_violation() {
        return false;
    }
    match d.constraint() {
        // PostgreSQL names the constraint.
        Some(name) => name == ROUTE_CONSTRAINT,
        // SQLite names the columns in its message.
        None => d.message().contains("links.domain, links.code"),
    }
}

/// PostgreSQL's name for `UNIQUE (domain, code)` on `links`.
const ROUTE_CONSTRAINT: &str = "links_domain_code_key";

fn to_i64(v: u64, what: &str) -> Result<i64, StoreError> {
    i64::try_from(v)
        .map_err(|_| StoreError::Corrupt(format!("{what} {v} does not fit the database")))
}

/// Every suffix of `host` at a label boundary: `a.b.c` gives `a.b.c`, `b.c`, `c`.
fn host_suffixes(host: &str) -> Vec<String> {
    let mut out = vec![host.to_owned()];
    let mut rest = host;
    while let Some((_, parent)) = rest.split_once('.') {
        if parent.is_empty() {
            break;
        }
        out.push(parent.to_owned());
        rest = parent;
    }
    out
}

/// A ban as `(kind, domain, code, host)`.
type BanColumns = (String, Option<String>, Option<String>, Option<String>);

/// The active bans, as a denylist.
pub(super) fn denylist_of(rows: Vec<BanColumns>) -> shared::Denylist {
    let mut snap = shared::DenylistSnapshot::default();
    for (kind, domain, code, host) in rows {
        match (kind.as_str(), domain, code, host) {
            ("code", Some(d), Some(c), _) => snap.codes.push(format!("{d}/{c}")),
            ("host", _, _, Some(h)) => snap.hosts.push(h),
            _ => {}
        }
    }
    shared::Denylist::from(snap)
}

#[async_trait]
impl LinkStore for Db {
    async fn insert_link(&self, link: &Link) -> Result<(), StoreError> {
        let row = NewLinkRow::new(link)?;
        let pg = self.is_postgres();
        crate::on_writer!(self, pool => {
            let mut tx = pool.begin().await?;
            insert_in_tx!(tx, pg, row, link);
            tx.commit().await?;
        });
        Ok(())
    }

    async fn insert_link_idempotent(
        &self,
        link: &Link,
        key: &IdempotencyKey<'_>,
        response: &str,
    ) -> Result<Idempotent, StoreError> {
        let row = NewLinkRow::new(link)?;
        let pg = self.is_postgres();
        crate::on_writer!(self, pool => {
            let mut tx = pool.begin().await?;
            if let Some((request_hash, response)) =
                claim_key!(tx, key, Some(row.link_id), Some(response), link.created_at)
            {
                return Ok(Idempotent::Replay { request_hash, response });
            }
            insert_in_tx!(tx, pg, row, link);
            tx.commit().await?;
        });
        Ok(Idempotent::Created)
    }

    async fn insert_links_bulk(
        &self,
        items: &[Link],
        key: Option<&IdempotencyKey<'_>>,
        respond: &(dyn for<'x> Fn(&'x [bool]) -> String + Send + Sync),
    ) -> Result<BulkInsert, StoreError> {
        let rows: Vec<NewLinkRow> = items
            .iter()
            .map(NewLinkRow::new)
            .collect::<Result<_, _>>()?;
        let now = items.first().map(|l| l.created_at).unwrap_or_default();
        let pg = self.is_postgres();
        crate::on_writer!(self, pool => {
            let mut tx = pool.begin().await?;
            if let Some(key) = key {
                if let Some((request_hash, response)) = claim_key!(tx, key, None::<i64>, None::<&str>, now) {
                    return Ok(BulkInsert::Replay { request_hash, response });
                }
            }
            // Whether a ban covers each link is decided here, under the ban lock, so that
            // a ban committing meanwhile is either seen or sees these links.
            ban_lock!(tx, pg, "pg_advisory_xact_lock_shared");
            let active: Vec<BanColumns> = sqlx::query_as(
                "SELECT kind, domain, code, host FROM bans WHERE lifted_at IS NULL",
            )
            .fetch_all(&mut *tx)
            .await?;
            let deny = denylist_of(active);
            // Multi-row statements, a chunk at a time: one round trip per chunk instead of
            // two per link. RETURNING tells which rows went in (the rest were taken).
            let mut inserted = vec![false; items.len()];
            for (chunk_no, chunk) in items.chunks(BULK_CHUNK).enumerate() {
                let base = chunk_no * BULK_CHUNK;
                let chunk_rows = &rows[base..base + chunk.len()];
                let mut insert = sqlx::QueryBuilder::new(format!("INSERT INTO links ({LINK_COLUMNS}, target_host) "));
                insert.push_values(chunk.iter().zip(chunk_rows), |mut b, (link, row)| {
                    b.push_bind(row.link_id)
                        .push_bind(link.domain.clone())
                        .push_bind(link.code.clone())
                        .push_bind(link.target_url.clone())
                        .push_bind(link.owner_id.clone())
                        .push_bind(link.status.as_str())
                        .push_bind(i64::from(link.redirect.code()))
                        .push_bind(link.expires_at)
                        .push_bind(row.version)
                        .push_bind(link.key_version.map(i64::from))
                        .push_bind(row.code_kind)
                        .push_bind(link.forward_query)
                        .push_bind(link.title.clone())
                        .push_bind(row.tags.clone())
                        .push_bind(link.created_at)
                        .push_bind(link.updated_at)
                        .push_bind(link.target_host());
                });
                // Only the route key may be taken; any other conflict fails the batch.
                insert.push(" ON CONFLICT (domain, code) DO NOTHING RETURNING link_id");
                let ids: Vec<i64> = insert
                    .build_query_scalar()
                    .fetch_all(&mut *tx)
                    .await
                    .map_err(StoreError::from_write)?;
                let ids: std::collections::HashSet<i64> = ids.into_iter().collect();
                let mut outbox = sqlx::QueryBuilder::new(
                    "INSERT INTO outbox (lane, kind, route_key, version, payload, created_at) ",
                );
                let went_in: Vec<usize> = (0..chunk.len()).filter(|i| ids.contains(&chunk_rows[*i].link_id)).collect();
                if !went_in.is_empty() {
                    outbox.push_values(&went_in, |mut b, &i| {
                        let link = &chunk[i];
                        b.push_bind("normal")
                            .push_bind("link")
                            .push_bind(link.route_key())
                            .push_bind(chunk_rows[i].version)
                            .push_bind(link.edge_record(link.banned_by(&deny)).to_json())
                            .push_bind(link.created_at);
                    });
                    outbox.build().execute(&mut *tx).await?;
                    if pg {
                        // One statement announces the chunk's links.
                        let mut notify = sqlx::QueryBuilder::new("SELECT pg_notify(");
                        notify.push_bind(crate::freshness::LINKS_CHANNEL).push(", p) FROM (");
                        notify.push_values(&went_in, |mut b, &i| {
                            b.push_bind(format!("1 {}", chunk[i].route_key()));
                        });
                        notify.push(") AS announced (p)");
                        notify.build().execute(&mut *tx).await?;
                    }
                }
                for i in went_in {
                    inserted[base + i] = true;
                }
            }
            if let Some(key) = key {
                sqlx::query("UPDATE idempotency SET response = $1 WHERE owner_id = $2 AND key = $3")
                    .bind(respond(&inserted))
                    .bind(key.owner_id)
                    .bind(key.key)
                    .execute(&mut *tx)
                    .await?;
            }
            tx.commit().await?;
            Ok(BulkInsert::Inserted(inserted))
        })
    }

    async fn find_idempotent(
        &self,
        key: &IdempotencyKey<'_>,
    ) -> Result<Option<(String, String)>, StoreError> {
        let row: Option<(String, Option<String>)> = crate::on_pool!(self, pool => {
            sqlx::query_as(
                "SELECT request_hash, response FROM idempotency \
                 WHERE owner_id = $1 AND key = $2 AND created_at >= $3",
            )
            .bind(key.owner_id)
            .bind(key.key)
            .bind(key.expired_before)
            .fetch_optional(pool)
            .await?
        });
        Ok(row.map(|(hash, response)| (hash, response.unwrap_or_default())))
    }

    async fn update_link(&self, link: &Link, expected: u64) -> Result<Link, StoreError> {
        let tags = serde_json::to_string(&link.tags).unwrap_or_else(|_| "[]".into());
        let expected = to_i64(expected, "version")?;
        let pg = self.is_postgres();
        let update = format!(
            "UPDATE links SET target_url = $1, status = $2, redirect_status = $3, expires_at = $4, \
             forward_query = $5, title = $6, tags = $7, version = version + 1, updated_at = $8, \
             target_host = $12 WHERE domain = $9 AND code = $10 AND version = $11 \
             RETURNING {SELECT_COLUMNS}"
        );
        crate::on_writer!(self, pool => {
            let mut tx = pool.begin().await?;
            // The ban lock before the row's: a ban takes them in the same order.
            ban_lock!(tx, pg, "pg_advisory_xact_lock_shared");
            let written: Option<LinkRow> = sqlx::query_as(&update)
                .bind(&link.target_url)
                .bind(link.status.as_str())
                .bind(i64::from(link.redirect.code()))
                .bind(link.expires_at)
                .bind(link.forward_query)
                .bind(&link.title)
                .bind(&tags)
                .bind(link.updated_at)
                .bind(&link.domain)
                .bind(&link.code)
                .bind(expected)
                .bind(link.target_host())
                .fetch_optional(&mut *tx)
                .await?;
            let Some(written) = written else {
                return Err(StoreError::Stale);
            };
            // The copy for the edge is built from the row as written, version included.
            let written = Link::try_from(written)?;
            let banned = covered_in_tx!(tx, &written.domain, &written.code, &written.target_host());
            sqlx::query(
                "INSERT INTO outbox (lane, kind, route_key, version, payload, created_at) \
                 VALUES ('normal', 'link', $1, $2, $3, $4)",
            )
            .bind(written.route_key())
            .bind(to_i64(written.version, "version")?)
            .bind(written.edge_record(banned).to_json())
            .bind(written.updated_at)
            .execute(&mut *tx)
            .await?;
            announce!(tx, pg, written.version, written.route_key());
            tx.commit().await?;
            Ok(written)
        })
    }

    async fn get_link(&self, domain: &str, code: &str) -> Result<Option<Link>, StoreError> {
        let select = format!("SELECT {SELECT_COLUMNS} FROM links WHERE domain = $1 AND code = $2");
        let row: Option<LinkRow> = crate::on_pool!(self, pool => {
            sqlx::query_as(&select).bind(domain).bind(code).fetch_optional(pool).await?
        });
        row.map(Link::try_from).transpose()
    }

    async fn list_links(&self, filter: &ListFilter) -> Result<Vec<Link>, StoreError> {
        // Built from fixed fragments; every value is a bound parameter.
        let mut sql = format!("SELECT {SELECT_COLUMNS} FROM links WHERE owner_id = $1");
        let mut n = 1;
        let mut next = |sql: &mut String, fragment: &str| {
            n += 1;
            sql.push_str(&fragment.replace('?', &format!("${n}")));
        };
        if filter.domain.is_some() {
            next(&mut sql, " AND domain = ?");
        }
        match filter.status {
            Some(_) => next(&mut sql, " AND status = ?"),
            None => sql.push_str(" AND status <> 'deleted'"),
        }
        // Tags are a JSON array in text: match the element, quotes included, with the
        // LIKE wildcards escaped.
        let tag_pattern = filter.tag.as_ref().map(|t| {
            let json = serde_json::to_string(t).unwrap_or_default();
            let escaped = json
                .replace('!', "!!")
                .replace('%', "!%")
                .replace('_', "!_");
            format!("%{escaped}%")
        });
        if tag_pattern.is_some() {
            next(&mut sql, " AND tags LIKE ? ESCAPE '!'");
        }
        if filter.after.is_some() {
            n += 2;
            sql.push_str(&format!(
                " AND (created_at < ${} OR (created_at = ${} AND link_id < ${}))",
                n - 1,
                n - 1,
                n
            ));
        }
        sql.push_str(&format!(
            " ORDER BY created_at DESC, link_id DESC LIMIT {}",
            u64::from(filter.limit) + 1
        ));
        let rows: Vec<LinkRow> = crate::on_pool!(self, pool => {
            let mut q = sqlx::query_as(&sql).bind(&filter.owner_id);
            if let Some(d) = &filter.domain {
                q = q.bind(d);
            }
            if let Some(s) = filter.status {
                q = q.bind(s.as_str());
            }
            if let Some(p) = &tag_pattern {
                q = q.bind(p);
            }
            if let Some((at, id)) = filter.after {
                q = q.bind(at).bind(to_i64(id, "cursor")?);
            }
            q.fetch_all(pool).await?
        });
        rows.into_iter().map(Link::try_from).collect()
    }

    async fn domain_settings(&self, domain: &str) -> Result<DomainSettings, StoreError> {
        let row: Option<DomainRow> = crate::on_pool!(self, pool => {
            sqlx::query_as(
                "SELECT alphabet, code_length, case_insensitive, forward_query, default_redirect, \
                 max_age_s FROM domains WHERE domain = $1",
            )
            .bind(domain)
            .fetch_optional(pool)
            .await?
        });
        let Some(r) = row else {
            return Ok(DomainSettings::default());
        };
        let corrupt = |what: &str| StoreError::Corrupt(format!("domain {domain}: {what}"));
        let alphabet: Alphabet = r.alphabet.parse().map_err(|_| corrupt("alphabet"))?;
        let length = u8::try_from(r.code_length).map_err(|_| corrupt("code_length"))?;
        Ok(DomainSettings {
            codes: CodeSpace::new(alphabet, length).map_err(|_| corrupt("code_length"))?,
            case_insensitive: r.case_insensitive,
            forward_query: r.forward_query,
            default_redirect: u16::try_from(r.default_redirect)
                .ok()
                .and_then(|c| RedirectStatus::try_from(c).ok())
                .ok_or_else(|| corrupt("default_redirect"))?,
            max_age_s: u32::try_from(r.max_age_s).map_err(|_| corrupt("max_age_s"))?,
        })
    }

    async fn served_domains(&self) -> Result<Vec<String>, StoreError> {
        // A skip scan of the (domain, code) index: each step finds the next domain
        // after the last, so a million links on three domains cost three probes.
        Ok(crate::on_pool!(self, pool => {
            sqlx::query_scalar(
                "WITH RECURSIVE d(domain) AS ( \
                   SELECT MIN(domain) FROM links \
                   UNION ALL \
                   SELECT (SELECT MIN(l.domain) FROM links l WHERE l.domain > d.domain) \
                   FROM d WHERE d.domain IS NOT NULL) \
                 SELECT domain FROM d WHERE domain IS NOT NULL \
                 UNION SELECT domain FROM domains",
            )
            .fetch_all(pool)
            .await?
        }))
    }

    async fn is_own_domain(&self, host: &str) -> Result<bool, StoreError> {
        let found: Option<i64> = crate::on_pool!(self, pool => {
            // A row in `domains`, or any link on it: both are served.
            sqlx::query_scalar(
                "SELECT CAST(1 AS BIGINT) FROM domains WHERE domain = $1 \
                 UNION ALL SELECT CAST(1 AS BIGINT) FROM (SELECT 1 FROM links WHERE domain = $1 LIMIT 1) AS l \
                 LIMIT 1",
            )
                .bind(host)
                .fetch_optional(pool)
                .await?
        });
        Ok(found.is_some())
    }

    async fn host_banned(&self, host: &str) -> Result<bool, StoreError> {
        let suffixes = host_suffixes(host);
        let placeholders: Vec<String> = (1..=suffixes.len()).map(|i| format!("${i}")).collect();
        let sql = format!(
            "SELECT CAST(1 AS BIGINT) FROM bans WHERE kind = 'host' AND lifted_at IS NULL AND host IN ({}) LIMIT 1",
            placeholders.join(", ")
        );
        let found: Option<i64> = crate::on_pool!(self, pool => {
            let mut q = sqlx::query_scalar(&sql);
            for s in &suffixes {
                q = q.bind(s);
            }
            q.fetch_optional(pool).await?
        });
        Ok(found.is_some())
    }

    async fn code_banned(&self, domain: &str, code: &str) -> Result<bool, StoreError> {
        let found: Option<i64> = crate::on_pool!(self, pool => {
            sqlx::query_scalar(
                "SELECT CAST(1 AS BIGINT) FROM bans WHERE kind = 'code' AND lifted_at IS NULL \
                 AND domain = $1 AND code = $2 LIMIT 1",
            )
            .bind(domain)
            .bind(code)
            .fetch_optional(pool)
            .await?
        });
        Ok(found.is_some())
    }

    async fn outbox_pending(&self) -> Result<Vec<(String, i64)>, StoreError> {
        Ok(crate::on_pool!(self, pool => {
            sqlx::query_as(
                "SELECT CASE WHEN failed_at IS NULL THEN lane ELSE 'failed' END AS state, COUNT(*) \
                 FROM outbox WHERE published_at IS NULL GROUP BY state",
            )
            .fetch_all(pool)
            .await?
        }))
    }

    async fn forget_idempotency_keys(&self, before: i64) -> Result<u64, StoreError> {
        Ok(crate::on_writer!(self, pool => {
            sqlx::query("DELETE FROM idempotency WHERE created_at < $1")
                .bind(before)
                .execute(pool)
                .await?
                .rows_affected()
        }))
    }

    async fn insert_key(&self, key: &ApiKey) -> Result<(), StoreError> {
        crate::on_writer!(self, pool => {
            sqlx::query(
                "INSERT INTO api_keys (key_id, owner_id, name, secret_hash, scopes, created_at) \
                 VALUES ($1, $2, $3, $4, $5, $6)",
            )
            .bind(&key.key_id)
            .bind(&key.owner_id)
            .bind(&key.name)
            .bind(&key.secret_hash)
            .bind(&key.scopes)
            .bind(key.created_at)
            .execute(pool)
            .await?;
        });
        Ok(())
    }

    async fn find_key(&self, key_id: &str) -> Result<Option<ApiKey>, StoreError> {
        let row: Option<KeyRow> = crate::on_pool!(self, pool => {
            sqlx::query_as(
                "SELECT key_id, owner_id, name, secret_hash, scopes, created_at, revoked_at \
                 FROM api_keys WHERE key_id = $1",
            )
            .bind(key_id)
            .fetch_optional(pool)
            .await?
        });
        Ok(row.map(|r| ApiKey {
            key_id: r.key_id,
            owner_id: r.owner_id,
            name: r.name,
            secret_hash: r.secret_hash,
            scopes: r.scopes,
            created_at: r.created_at,
            revoked_at: r.revoked_at,
        }))
    }

    async fn revoke_key(&self, key_id: &str, now: i64) -> Result<bool, StoreError> {
        let done = crate::on_writer!(self, pool => {
            sqlx::query("UPDATE api_keys SET revoked_at = $1 WHERE key_id = $2 AND revoked_at IS NULL")
                .bind(now)
                .bind(key_id)
                .execute(pool)
                .await?
                .rows_affected()
        });
        Ok(done == 1)
    }
}

#[cfg(test)]
mod tests {
    use super::host_suffixes;

    #[test]
    fn suffixes_stop_at_labels() {
        assert_eq!(
            host_suffixes("a.b.example"),
            ["a.b.example", "b.example", "example"]
        );
        assert_eq!(host_suffixes("localhost"), ["localhost"]);
    }
}

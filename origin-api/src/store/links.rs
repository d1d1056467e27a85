//! Links, keys, domains and bans in SQL. The unique index on `(domain, code)` is the
//! only arbiter of who gets a code: inserts never check first.

use super::bans::{active_bans, ban_lock, BanLock};
use super::contract::{BulkInsert, DomainAt, IdempotencyKey, Idempotent, StoreError};
use super::domains::check_domains;
use super::events;
use super::history;
use super::link_rows::{to_i64, LinkRow, SELECT_COLUMNS};
use super::outbox::{insert_outbox, link_row, OutboxInsert};
use super::sql::{list_placeholders, values_placeholders, Arg, Conn};
use crate::db::Db;
use crate::model::event::{EventType, NewEvent};
use crate::model::history::{Action, Actor, Change, NewEntry};
use crate::model::link::host_suffixes;
use crate::model::quota::Limits;
use crate::model::{
    AccessKind, Condition, Link, LinkOptions, ListFilter, OptionPart, EXPIRING_WITHIN_MS,
};
use shared::CodeKind;

/// Links per multi-row statement in a bulk insert: 18 parameters each stays well under
/// SQLite's 32,766 and PostgreSQL's 65,535.
const BULK_CHUNK: usize = 500;

/// A link's values in the database's types, the ones computed from the link held here
/// so that its arguments can borrow them.
struct NewLinkRow<'a> {
    link: &'a Link,
    link_id: i64,
    version: i64,
    tags: String,
    code_kind: &'static str,
    target_host: String,
    code_number: Option<i64>,
    options: Option<String>,
    other_hosts: Vec<String>,
}

impl<'a> NewLinkRow<'a> {
    fn new(link: &'a Link) -> Result<Self, StoreError> {
        Ok(NewLinkRow {
            link,
            link_id: to_i64(link.link_id, "link_id")?,
            version: to_i64(link.version, "version")?,
            tags: tags_json(&link.tags),
            code_kind: match link.code_kind {
                CodeKind::Generated => "generated",
                CodeKind::Custom => "custom",
            },
            target_host: link.target_host(),
            code_number: link
                .code_number
                .map(|n| to_i64(n, "code_number"))
                .transpose()?,
            options: link.options.to_column(),
            other_hosts: link.other_hosts(),
        })
    }

    /// The values of [`INSERT_COLUMNS`], in order: the one place they are listed.
    fn args(&self) -> [Arg<'_>; INSERT_ARGS] {
        let link = self.link;
        [
            self.link_id.into(),
            (&link.domain).into(),
            (&link.code).into(),
            (&link.target_url).into(),
            (&link.owner_id).into(),
            link.status.as_str().into(),
            i64::from(link.redirect.code()).into(),
            link.expires_at.into(),
            self.version.into(),
            link.key_version.map(i64::from).into(),
            self.code_kind.into(),
            link.forward_query.into(),
            (&link.title).into(),
            (&self.tags).into(),
            link.created_at.into(),
            link.updated_at.into(),
            (&self.target_host).into(),
            self.code_number.into(),
            (&self.options).into(),
        ]
    }
}

/// The columns a new link writes, in the order of [`NewLinkRow::args`].
const INSERT_COLUMNS: &str = "link_id, domain, code, target_url, owner_id, status, redirect_status, \
     expires_at, version, key_version, code_kind, forward_query, title, tags, created_at, updated_at, \
     target_host, code_number, options";
/// How many they are.
const INSERT_ARGS: usize = 19;

const DELETE_LINK_HOSTS: &str = include_str!("queries/delete_link_hosts.sql");
/// An idempotency key of an owner, if it expired before `$3`.
const FORGET_EXPIRED_IDEMPOTENCY_KEY: &str =
    include_str!("queries/forget_expired_idempotency_key.sql");
/// An idempotency key claimed, unless another request holds it.
const CLAIM_IDEMPOTENCY_KEY: &str = include_str!("queries/claim_idempotency_key.sql");
/// The answer kept for an idempotency key.
const IDEMPOTENCY_ANSWER: &str = include_str!("queries/idempotency_answer.sql");
/// A new link: the values of [`NewLinkRow::args`].
const INSERT_LINK: &str = include_str!("queries/insert_link.sql");
/// A link edited, if it is at version `$11`, and returned as written.
const UPDATE_LINK: &str = include_str!("queries/update_link.sql");
/// The answer recorded for an idempotency key.
const RECORD_IDEMPOTENCY_RESPONSE: &str = include_str!("queries/record_idempotency_response.sql");
/// An owner's first 20 active links to a target on a domain.
const LINKS_TO: &str = include_str!("queries/links_to.sql");

/// Writes the hosts of `link_id`'s other targets, replacing what was there (a link
/// without any has no rows, and costs no statement unless it had some).
async fn write_other_hosts(
    c: &mut Conn<'_>,
    link_id: i64,
    hosts: &[String],
    had_any: bool,
) -> Result<(), StoreError> {
    if had_any {
        c.execute(DELETE_LINK_HOSTS, &[link_id.into()]).await?;
    }
    if hosts.is_empty() {
        return Ok(());
    }
    // Built at run time: one VALUES tuple per host.
    let sql = format!(
        "INSERT INTO link_hosts (host, link_id) VALUES {}",
        values_placeholders(1, hosts.len(), 2)
    );
    let args: Vec<Arg<'_>> = hosts
        .iter()
        .flat_map(|h| [Arg::from(h), link_id.into()])
        .collect();
    c.execute(&sql, &args).await?;
    Ok(())
}

fn tags_json(tags: &[String]) -> String {
    serde_json::to_string(tags).unwrap_or_else(|_| "[]".into())
}

/// Claims an idempotency key inside a transaction (after forgetting it if expired):
/// `None` when this transaction now holds the key, or the earlier request's hash and
/// recorded response when another holds it (a concurrent claim waits on the unique
/// index until the holder commits).
async fn claim_key(
    c: &mut Conn<'_>,
    key: &IdempotencyKey<'_>,
    link_id: Option<i64>,
    response: Option<&str>,
    now: i64,
) -> Result<Option<(String, String)>, StoreError> {
    c.execute(
        FORGET_EXPIRED_IDEMPOTENCY_KEY,
        &[
            key.owner_id.into(),
            key.key.into(),
            key.expired_before.into(),
        ],
    )
    .await?;
    let claimed = c
        .execute(
            CLAIM_IDEMPOTENCY_KEY,
            &[
                key.owner_id.into(),
                key.key.into(),
                key.request_hash.into(),
                link_id.into(),
                response.into(),
                now.into(),
            ],
        )
        .await?;
    if claimed != 0 {
        return Ok(None);
    }
    let (hash, response): (String, Option<String>) = c
        .fetch_one(IDEMPOTENCY_ANSWER, &[key.owner_id.into(), key.key.into()])
        .await?;
    Ok(Some((hash, response.unwrap_or_default())))
}

/// Announces, on PostgreSQL, that `route` is now at `version` (delivered to the other
/// origins when the transaction commits; `freshness` listens).
pub(super) async fn announce(
    c: &mut Conn<'_>,
    version: u64,
    route: &str,
) -> Result<(), StoreError> {
    if c.is_postgres() {
        // Inline: PostgreSQL only (SQLite has no notifications), no file to check on both.
        let note = format!("{version} {route}");
        c.execute(
            "SELECT pg_notify($1, $2)",
            &[super::contract::LINKS_CHANNEL.into(), (&note).into()],
        )
        .await?;
    }
    Ok(())
}

/// Whether an active ban covers `domain/code` or any of the target hosts `hosts`, read
/// inside the transaction (after the ban lock).
async fn covered(
    c: &mut Conn<'_>,
    domain: &str,
    code: &str,
    hosts: &[String],
) -> Result<bool, StoreError> {
    let mut suffixes: Vec<String> = hosts.iter().flat_map(|h| host_suffixes(h)).collect();
    suffixes.sort_unstable();
    suffixes.dedup();
    // Built at run time: one placeholder per host suffix.
    let sql = format!(
        "SELECT CAST(1 AS BIGINT) FROM bans WHERE lifted_at IS NULL AND \
         ((kind = 'code' AND domain = $1 AND code = $2) OR (kind = 'host' AND host IN ({}))) LIMIT 1",
        list_placeholders(3, suffixes.len())
    );
    let mut args: Vec<Arg<'_>> = vec![domain.into(), code.into()];
    args.extend(suffixes.iter().map(Arg::from));
    let found: Option<(i64,)> = c.fetch_optional(&sql, &args).await?;
    Ok(found.is_some())
}

/// Inserts the link and its outbox row, the record marked `banned` when a ban covers it
/// at this moment; `Taken` when the route key exists.
async fn insert_one(
    c: &mut Conn<'_>,
    row: &NewLinkRow<'_>,
    actor: Actor<'_>,
) -> Result<(), StoreError> {
    let link = row.link;
    ban_lock(c, BanLock::Shared).await?;
    let banned = covered(c, &link.domain, &link.code, &link.all_hosts()).await?;
    c.execute(INSERT_LINK, &row.args())
        .await
        .map_err(StoreError::from_write)?;
    write_other_hosts(c, row.link_id, &row.other_hosts, false).await?;
    let route = link.route_key();
    let payload = link.edge_record(banned).to_json();
    insert_outbox(
        c,
        &[link_row(&route, row.version, &payload, link.created_at)],
    )
    .await?;
    let change = Change::new(Action::of_insert(link), actor);
    let created = NewEvent::of_link(
        EventType::of_action(change.action, link),
        link,
        banned,
        link.created_at,
    );
    events::record(c, &[created]).await?;
    history::record(c, &[NewEntry::of(link, &change, link.created_at)]).await?;
    announce(c, link.version, &route).await
}

/// Inserts a chunk of links in one statement, skipping those whose route key is taken,
/// with the outbox rows of those that went in (ban marks from `deny`); which went in.
async fn insert_chunk(
    c: &mut Conn<'_>,
    rows: &[NewLinkRow<'_>],
    deny: &shared::Denylist,
    actor: Actor<'_>,
) -> Result<Vec<bool>, StoreError> {
    // Built at run time: one VALUES tuple per link.
    let sql = format!(
        "INSERT INTO links ({INSERT_COLUMNS}) VALUES {} \
         ON CONFLICT (domain, code) DO NOTHING RETURNING link_id",
        values_placeholders(1, rows.len(), INSERT_ARGS)
    );
    // Only the route key may be taken; any other conflict fails the batch.
    let args: Vec<Arg<'_>> = rows.iter().flat_map(|r| r.args()).collect();
    let ids: Vec<(i64,)> = c
        .fetch_all(&sql, &args)
        .await
        .map_err(StoreError::from_write)?;
    let ids: std::collections::HashSet<i64> = ids.into_iter().map(|(id,)| id).collect();
    let went_in: Vec<bool> = rows.iter().map(|r| ids.contains(&r.link_id)).collect();
    for (row, _) in rows.iter().zip(&went_in).filter(|(_, went)| **went) {
        write_other_hosts(c, row.link_id, &row.other_hosts, false).await?;
    }
    let routes: Vec<String> = rows.iter().map(|r| r.link.route_key()).collect();
    let banned: Vec<bool> = rows.iter().map(|r| r.link.banned_by(deny)).collect();
    let payloads: Vec<String> = rows
        .iter()
        .zip(&banned)
        .map(|(r, banned)| r.link.edge_record(*banned).to_json())
        .collect();
    let outbox: Vec<OutboxInsert<'_>> = rows
        .iter()
        .enumerate()
        .filter(|(i, _)| went_in[*i])
        .map(|(i, r)| link_row(&routes[i], r.version, &payloads[i], r.link.created_at))
        .collect();
    insert_outbox(c, &outbox).await?;
    let changes: Vec<(usize, Change<'_>)> = (0..rows.len())
        .filter(|i| went_in[*i])
        .map(|i| (i, Change::new(Action::of_insert(rows[i].link), actor)))
        .collect();
    let created: Vec<NewEvent> = changes
        .iter()
        .map(|(i, change)| {
            let link = rows[*i].link;
            NewEvent::of_link(
                EventType::of_action(change.action, link),
                link,
                banned[*i],
                link.created_at,
            )
        })
        .collect();
    events::record(c, &created).await?;
    let entries: Vec<NewEntry> = changes
        .iter()
        .map(|(i, change)| NewEntry::of(rows[*i].link, change, rows[*i].link.created_at))
        .collect();
    history::record(c, &entries).await?;
    if c.is_postgres() && !outbox.is_empty() {
        // One statement announces the chunk's links (all at version 1). Inline:
        // PostgreSQL only, and built at run time with one VALUES tuple per link.
        let notes: Vec<String> = outbox
            .iter()
            .map(|o| format!("1 {}", o.route_key))
            .collect();
        let sql = format!(
            "SELECT pg_notify($1, p) FROM (VALUES {}) AS announced (p)",
            values_placeholders(2, notes.len(), 1)
        );
        let mut args: Vec<Arg<'_>> = vec![super::contract::LINKS_CHANNEL.into()];
        args.extend(notes.iter().map(Arg::from));
        c.execute(&sql, &args).await?;
    }
    Ok(went_in)
}

/// The link as written by `update_link`'s statement, its outbox row, its event and its
/// history entry, all telling of `change`.
pub(super) async fn update_one(
    c: &mut Conn<'_>,
    link: &Link,
    expected: i64,
    change: &Change<'_>,
    limits: &Limits,
) -> Result<Link, StoreError> {
    let tags = tags_json(&link.tags);
    let host = link.target_host();
    let options = link.options.to_column();
    // The ban lock before the row's: a ban takes them in the same order.
    ban_lock(c, BanLock::Shared).await?;
    let written: Option<LinkRow> = c
        .fetch_optional(
            UPDATE_LINK,
            &[
                (&link.target_url).into(),
                link.status.as_str().into(),
                i64::from(link.redirect.code()).into(),
                link.expires_at.into(),
                link.forward_query.into(),
                (&link.title).into(),
                (&tags).into(),
                link.updated_at.into(),
                (&link.domain).into(),
                (&link.code).into(),
                expected.into(),
                (&host).into(),
                (&options).into(),
            ],
        )
        .await?;
    let Some(written) = written else {
        return Err(StoreError::Stale);
    };
    // The copy for the edge is built from the row as written, version included.
    let written = Link::try_from(written)?;
    let link_id = to_i64(written.link_id, "link_id")?;
    // Whether the row had other hosts before is not known here: always rewritten.
    write_other_hosts(c, link_id, &written.other_hosts(), true).await?;
    let banned = covered(c, &written.domain, &written.code, &written.all_hosts()).await?;
    let route = written.route_key();
    let payload = written.edge_record(banned).to_json();
    insert_outbox(
        c,
        &[link_row(
            &route,
            to_i64(written.version, "version")?,
            &payload,
            written.updated_at,
        )],
    )
    .await?;
    // A delete gives the owner's quota a link back; a restore takes one (not today's).
    match change.action {
        Action::Deleted => super::quotas::release(c, &written.owner_id).await?,
        Action::Restored => {
            super::quotas::claim(c, &written.owner_id, 1, false, limits, written.updated_at).await?
        }
        _ => {}
    }
    let kind = EventType::of_action(change.action, &written);
    let event = NewEvent::of_link(kind, &written, banned, written.updated_at);
    events::record(c, &[event]).await?;
    history::record(c, &[NewEntry::of(&written, change, written.updated_at)]).await?;
    announce(c, written.version, &route).await?;
    Ok(written)
}

/// Inserts a link and its outbox row (normal lane) in one transaction; `Taken` when
/// the route key exists, in which case nothing is written. The edge record is marked
/// `banned` when a ban covers the link as the transaction commits. `domains`: the
/// registry rows the link was judged by, each read (and on PostgreSQL locked) in the
/// transaction first: `DomainChanged`, with nothing written, when one moved on.
pub async fn insert(
    db: &Db,
    link: &Link,
    domains: &[DomainAt],
    actor: Actor<'_>,
    limits: &Limits,
) -> Result<(), StoreError> {
    let row = NewLinkRow::new(link)?;
    let mut tx = db.begin_write().await?;
    let mut c = tx.conn();
    check_domains(&mut c, domains).await?;
    insert_one(&mut c, &row, actor).await?;
    super::quotas::claim(&mut c, &link.owner_id, 1, true, limits, link.created_at).await?;
    tx.commit().await?;
    Ok(())
}

/// Like `insert_link`, under an idempotency key: in the same transaction the key is
/// claimed for `owner` and `response` recorded. When the key is already held, nothing
/// is written and the earlier request's hash and response come back instead. A
/// concurrent duplicate waits for the first to commit (the key's unique index), so
/// two requests with one key can never make two links.
pub async fn insert_idempotent(
    db: &Db,
    link: &Link,
    domains: &[DomainAt],
    key: &IdempotencyKey<'_>,
    response: &str,
    actor: Actor<'_>,
    limits: &Limits,
) -> Result<Idempotent, StoreError> {
    let row = NewLinkRow::new(link)?;
    let mut tx = db.begin_write().await?;
    let mut c = tx.conn();
    let claim = claim_key(
        &mut c,
        key,
        Some(row.link_id),
        Some(response),
        link.created_at,
    );
    if let Some((request_hash, response)) = claim.await? {
        return Ok(Idempotent::Replay {
            request_hash,
            response,
        });
    }
    check_domains(&mut c, domains).await?;
    insert_one(&mut c, &row, actor).await?;
    super::quotas::claim(&mut c, &link.owner_id, 1, true, limits, link.created_at).await?;
    tx.commit().await?;
    Ok(Idempotent::Created)
}

/// Inserts many links in one transaction, each with its outbox row; a link whose
/// route key is taken is skipped (`false` at its index), the others go in. Under an
/// idempotency key, the key is claimed first and `respond(&inserted)` recorded last,
/// in the same transaction, as for single creates.
pub async fn insert_bulk(
    db: &Db,
    items: &[Link],
    domains: &[DomainAt],
    key: Option<&IdempotencyKey<'_>>,
    respond: &(dyn for<'x> Fn(&'x [bool]) -> String + Send + Sync),
    actor: Actor<'_>,
    limits: &Limits,
) -> Result<BulkInsert, StoreError> {
    let rows: Vec<NewLinkRow<'_>> = items
        .iter()
        .map(NewLinkRow::new)
        .collect::<Result<_, _>>()?;
    let now = items.first().map(|l| l.created_at).unwrap_or_default();
    let mut tx = db.begin_write().await?;
    let mut c = tx.conn();
    if let Some(key) = key {
        if let Some((request_hash, response)) = claim_key(&mut c, key, None, None, now).await? {
            return Ok(BulkInsert::Replay {
                request_hash,
                response,
            });
        }
    }
    check_domains(&mut c, domains).await?;
    // Whether a ban covers each link is decided here, under the ban lock, so that a
    // ban committing meanwhile is either seen or sees these links.
    ban_lock(&mut c, BanLock::Shared).await?;
    let deny = crate::model::denylist(&active_bans(&mut c).await?);
    // Multi-row statements, a chunk at a time: one round trip per chunk instead of
    // two per link. RETURNING tells which rows went in (the rest were taken).
    let mut inserted = Vec::with_capacity(items.len());
    for chunk in rows.chunks(BULK_CHUNK) {
        inserted.extend(insert_chunk(&mut c, chunk, &deny, actor).await?);
    }
    // One owner's links: counted against its quotas, all or none.
    if let Some(first) = items.first() {
        let n = inserted.iter().filter(|went| **went).count();
        let n = i64::try_from(n).unwrap_or(i64::MAX);
        super::quotas::claim(&mut c, &first.owner_id, n, true, limits, now).await?;
    }
    if let Some(key) = key {
        let response = respond(&inserted);
        c.execute(
            RECORD_IDEMPOTENCY_RESPONSE,
            &[(&response).into(), key.owner_id.into(), key.key.into()],
        )
        .await?;
    }
    tx.commit().await?;
    Ok(BulkInsert::Inserted(inserted))
}

/// Writes `link`'s mutable fields if the stored version is still `expected`, bumping
/// the version in the database, with its outbox row built from the row as written
/// (marked `banned` when a ban covers it then), in one transaction; `Stale`
/// otherwise. Returns the row as written. `change` is what the history records.
pub async fn update(
    db: &Db,
    link: &Link,
    expected: u64,
    change: &Change<'_>,
    limits: &Limits,
) -> Result<Link, StoreError> {
    let expected = to_i64(expected, "version")?;
    let mut tx = db.begin_write().await?;
    let written = update_one(&mut tx.conn(), link, expected, change, limits).await?;
    tx.commit().await?;
    Ok(written)
}

pub async fn get(db: &Db, domain: &str, code: &str) -> Result<Option<Link>, StoreError> {
    let row: Option<LinkRow> = db
        .read_optional(GET_LINK, &[domain.into(), code.into()])
        .await?;
    row.map(Link::try_from).transpose()
}

/// The links (tombstones too) of the route keys `routes` (`(domain, code)` pairs) that
/// exist, in a few statements however many are asked: an import checks ten thousand
/// codes at a time, and a read each cost PostgreSQL half a millisecond apiece.
pub async fn get_many(db: &Db, routes: &[(String, String)]) -> Result<Vec<Link>, StoreError> {
    let mut found = Vec::new();
    let mut r = db.reader().await?;
    for chunk in routes.chunks(BULK_CHUNK) {
        let rows: Vec<LinkRow> = if db.is_postgres() {
            // The keys as one JSON array, as the click path reads route keys: planning
            // hundreds of parameter pairs costs PostgreSQL more than running it.
            let json = serde_json::to_string(chunk)
                .map_err(|e| StoreError::Corrupt(format!("route keys: {e}")))?;
            let sql = format!(
                "SELECT {} FROM jsonb_array_elements($1) k JOIN links l \
                 ON l.domain = k->>0 AND l.code = k->>1",
                SELECT_COLUMNS
                    .split(", ")
                    .map(|c| format!("l.{}", c.trim()))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            r.conn().fetch_all(&sql, &[Arg::Json(&json)]).await?
        } else {
            let sql = format!(
                "SELECT {SELECT_COLUMNS} FROM links WHERE (domain, code) IN ({})",
                values_placeholders(1, chunk.len(), 2)
            );
            let args: Vec<Arg<'_>> = chunk
                .iter()
                .flat_map(|(d, c)| [d.as_str().into(), c.as_str().into()])
                .collect();
            r.conn().fetch_all(&sql, &args).await?
        };
        for row in rows {
            found.push(Link::try_from(row)?);
        }
    }
    Ok(found)
}

/// `owner`'s live links on `domain` to exactly `target_url` (at most 20, oldest
/// first): what `dedupe` looks for. Found by the target's host (indexed).
pub async fn to_target(
    db: &Db,
    owner: &str,
    domain: &str,
    target_url: &str,
) -> Result<Vec<Link>, StoreError> {
    let host = crate::model::link::host_of(target_url);
    let rows: Vec<LinkRow> = db
        .read_all(
            LINKS_TO,
            &[
                (&host).into(),
                target_url.into(),
                owner.into(),
                domain.into(),
            ],
        )
        .await?;
    rows.into_iter().map(Link::try_from).collect()
}

/// Up to `filter.limit + 1` links, newest first (the extra one tells that there is
/// a next page).
///
/// Every filter narrows the walk down the owner's index (`links_by_owner`, newest
/// first), which stops once a page is full: a page of a common filter reads about a
/// page of rows, a rare one reads further (docs/dashboard.md, "Searching").
pub async fn list(db: &Db, filter: &ListFilter) -> Result<Vec<Link>, StoreError> {
    // Built at run time: optional filters, one placeholder per domain and the limit
    // inlined; from fixed fragments, every value a bound parameter.
    let mut sql = format!("SELECT {SELECT_COLUMNS} FROM links WHERE owner_id = $1");
    // Tags are a JSON array in text: match the element, quotes included.
    let tag_pattern = filter.tag.as_ref().map(|t| {
        format!(
            "%{}%",
            like_escaped(&serde_json::to_string(t).unwrap_or_default())
        )
    });
    let search_pattern = filter
        .search
        .as_ref()
        .map(|q| format!("%{}%", like_escaped(q)));
    let cursor_id = filter
        .after
        .map(|(_, id)| to_i64(id, "cursor"))
        .transpose()?;
    let mut args: Vec<Arg<'_>> = vec![(&filter.owner_id).into()];
    if !filter.domains.is_empty() {
        sql.push_str(&format!(
            " AND domain IN ({})",
            list_placeholders(args.len() + 1, filter.domains.len())
        ));
        args.extend(filter.domains.iter().map(Arg::from));
    }
    match filter.status {
        Some(s) => {
            args.push(s.as_str().into());
            sql.push_str(&format!(" AND status = ${}", args.len()));
        }
        None => sql.push_str(" AND status <> 'deleted'"),
    }
    if let Some(p) = &tag_pattern {
        args.push(p.into());
        sql.push_str(&format!(" AND tags LIKE ${} ESCAPE '!'", args.len()));
    }
    if let Some(p) = &search_pattern {
        // Lowercased on both sides: PostgreSQL's LIKE minds case, SQLite's does not
        // (and SQLite lowers ASCII letters only). The expression is the one
        // `links_search` indexes on PostgreSQL (migration 0016), word for word.
        args.push(p.into());
        sql.push_str(&format!(" AND {SEARCHED} LIKE ${} ESCAPE '!'", args.len()));
    }
    // The patterns are the code's own constants, written into the statement so that a
    // partial index on one (`links_exhausted`) is seen to apply.
    let mut option = |part: OptionPart, negated: bool| {
        let pattern = LinkOptions::column_pattern(part);
        sql.push_str(&if negated {
            format!(" AND (options IS NULL OR options NOT LIKE '{pattern}')")
        } else {
            format!(" AND options LIKE '{pattern}'")
        });
    };
    match filter.access {
        Some(AccessKind::Public) => option(OptionPart::Access(AccessKind::Public), true),
        Some(kind) => option(OptionPart::Access(kind), false),
        None => {}
    }
    if let Some(feature) = filter.feature {
        option(OptionPart::Feature(feature), false);
    }
    match filter.condition {
        Some(Condition::Exhausted) => option(OptionPart::Exhausted, false),
        Some(Condition::Expired) => {
            args.push(filter.now.into());
            sql.push_str(&format!(
                " AND expires_at IS NOT NULL AND expires_at <= ${}",
                args.len()
            ));
        }
        Some(Condition::Banned) => sql.push_str(BANNED),
        Some(Condition::Expiring) => {
            args.push(filter.now.into());
            args.push(filter.now.saturating_add(EXPIRING_WITHIN_MS).into());
            let (now, until) = (args.len() - 1, args.len());
            sql.push_str(&format!(
                " AND status = 'active' AND expires_at > ${now} AND expires_at <= ${until}"
            ));
        }
        None => {}
    }
    if let Some(from) = filter.created_from {
        args.push(from.into());
        sql.push_str(&format!(" AND created_at >= ${}", args.len()));
    }
    if let Some(to) = filter.created_to {
        args.push(to.into());
        sql.push_str(&format!(" AND created_at < ${}", args.len()));
    }
    if let (Some((at, _)), Some(id)) = (filter.after, cursor_id) {
        args.push(at.into());
        args.push(id.into());
        let (at, id) = (args.len() - 1, args.len());
        sql.push_str(&format!(
            " AND (created_at < ${at} OR (created_at = ${at} AND link_id < ${id}))"
        ));
    }
    sql.push_str(&format!(
        " ORDER BY created_at DESC, link_id DESC LIMIT {}",
        u64::from(filter.limit) + 1
    ));
    let rows: Vec<LinkRow> = db.read_all(&sql, &args).await?;
    rows.into_iter().map(Link::try_from).collect()
}

/// The text a search looks in: the code, the target, the title and the tags, lowercased.
const SEARCHED: &str =
    "LOWER(code || ' ' || target_url || ' ' || COALESCE(title, '') || ' ' || tags)";

/// `s` in a `LIKE` pattern with `ESCAPE '!'`, its wildcards taken literally.
fn like_escaped(s: &str) -> String {
    s.replace('!', "!!").replace('%', "!%").replace('_', "!_")
}

/// A link an active ban matches, as the edge's denylist matches it: its code on its
/// domain, or the host of its target or of any other target (`link_hosts`), or a
/// domain above that host (`evil.example` matches `cdn.evil.example`).
const BANNED: &str = " AND (EXISTS (SELECT 1 FROM bans b WHERE b.lifted_at IS NULL \
     AND b.kind = 'code' AND b.domain = links.domain AND b.code = links.code) \
     OR EXISTS (SELECT 1 FROM bans b WHERE b.lifted_at IS NULL AND b.kind = 'host' \
     AND (links.target_host = b.host OR SUBSTR(links.target_host, LENGTH(links.target_host) - LENGTH(b.host)) = '.' || b.host)) \
     OR EXISTS (SELECT 1 FROM link_hosts h, bans b WHERE h.link_id = links.link_id \
     AND b.lifted_at IS NULL AND b.kind = 'host' \
     AND (h.host = b.host OR SUBSTR(h.host, LENGTH(h.host) - LENGTH(b.host)) = '.' || b.host)))";

/// A link by its route key, as the redirect reads it on a miss.
const GET_LINK: &str = include_str!("queries/link_by_route.sql");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suffixes_stop_at_labels() {
        assert_eq!(
            host_suffixes("a.b.example"),
            ["a.b.example", "b.example", "example"]
        );
        assert_eq!(host_suffixes("localhost"), ["localhost"]);
    }

    fn words(s: &str) -> String {
        s.split_whitespace().collect::<Vec<_>>().join(" ")
    }

    #[test]
    fn the_read_of_one_link_selects_what_every_read_selects() {
        assert_eq!(
            words(GET_LINK),
            words(&format!(
                "SELECT {SELECT_COLUMNS} FROM links WHERE domain = $1 AND code = $2"
            ))
        );
        assert!(words(LINKS_TO).starts_with(&words(&format!("SELECT {SELECT_COLUMNS} FROM"))));
        assert!(words(UPDATE_LINK).ends_with(&words(&format!("RETURNING {SELECT_COLUMNS}"))));
    }

    #[test]
    fn the_insert_of_one_link_writes_what_every_insert_writes() {
        assert_eq!(
            words(INSERT_LINK),
            words(&format!(
                "INSERT INTO links ({INSERT_COLUMNS}) VALUES {}",
                values_placeholders(1, 1, INSERT_ARGS)
            ))
        );
    }
}

//! Bans in SQL. Each ban or lift is one transaction that (1) records it, (2) advances
//! the denylist version — a row lock that serializes concurrent bans, so every snapshot
//! includes everything committed before it — (3) writes the new snapshot to the fast
//! lane, and (4) re-publishes every affected link with its version bumped.

use super::links::{ban_lock, link_row_columns, LinkRow};
use super::{BanStore, LiftOutcome, StoreError};
use crate::bans::{Ban, BanTarget};
use crate::db::Db;
use crate::links::{Link, LinkState};
use async_trait::async_trait;
use shared::{Denylist, DenylistSnapshot};

#[derive(sqlx::FromRow)]
struct BanRow {
    ban_id: i64,
    kind: String,
    domain: Option<String>,
    code: Option<String>,
    host: Option<String>,
    reason: String,
    created_by: String,
    created_at: i64,
    lifted_at: Option<i64>,
}

impl TryFrom<BanRow> for Ban {
    type Error = StoreError;
    fn try_from(r: BanRow) -> Result<Self, StoreError> {
        let target = match (r.kind.as_str(), r.domain, r.code, r.host) {
            ("code", Some(domain), Some(code), None) => BanTarget::Code { domain, code },
            ("host", None, None, Some(host)) => BanTarget::Host { host },
            _ => return Err(StoreError::Corrupt(format!("ban {}", r.ban_id))),
        };
        Ok(Ban {
            ban_id: r.ban_id,
            target,
            reason: r.reason,
            created_by: r.created_by,
            created_at: r.created_at,
            lifted_at: r.lifted_at,
        })
    }
}

const BAN_COLUMNS: &str =
    "ban_id, kind, domain, code, host, reason, created_by, created_at, lifted_at";

/// The denylist's version counter: a sequence of step 1 in `id_segments`.
const ADVANCE_DENY: &str = "INSERT INTO id_segments (name, max_id, step, updated_at) VALUES ('deny', 1, 1, $1) \
     ON CONFLICT (name) DO UPDATE SET max_id = id_segments.max_id + 1, updated_at = excluded.updated_at \
     RETURNING max_id";

const OUTBOX: &str = "INSERT INTO outbox (lane, kind, route_key, version, payload, created_at) VALUES ($1, $2, $3, $4, $5, $6)";

/// LIKE pattern for hosts under `host`, wildcards escaped with `!`.
fn under(host: &str) -> String {
    format!(
        "%.{}",
        host.replace('!', "!!")
            .replace('%', "!%")
            .replace('_', "!_")
    )
}

fn snapshot(version: i64, bans: &[Ban]) -> DenylistSnapshot {
    let mut snap = DenylistSnapshot {
        v: u64::try_from(version).unwrap_or_default(),
        ..DenylistSnapshot::default()
    };
    for ban in bans {
        match &ban.target {
            BanTarget::Code { domain, code } => snap.codes.push(format!("{domain}/{code}")),
            BanTarget::Host { host } => snap.hosts.push(host.clone()),
        }
    }
    snap.codes.sort();
    snap.codes.dedup();
    snap.hosts.sort();
    snap.hosts.dedup();
    snap
}

/// Runs steps 2–4 inside `tx` after the ban row changed, and announces the change to
/// the other origins on PostgreSQL.
macro_rules! propagate {
    ($tx:expr, $pg:expr, $target:expr, $now:expr) => {{
        if $pg {
            sqlx::query("SELECT pg_notify($1, '')")
                .bind(crate::freshness::BANS_CHANNEL)
                .execute(&mut *$tx)
                .await?;
        }
        let version: i64 = sqlx::query_scalar(ADVANCE_DENY)
            .bind($now)
            .fetch_one(&mut *$tx)
            .await?;
        let active: Vec<BanRow> = sqlx::query_as(&format!(
            "SELECT {BAN_COLUMNS} FROM bans WHERE lifted_at IS NULL"
        ))
        .fetch_all(&mut *$tx)
        .await?;
        let active: Vec<Ban> = active
            .into_iter()
            .map(Ban::try_from)
            .collect::<Result<_, _>>()?;
        let snap = snapshot(version, &active);
        let payload = serde_json::to_string(&snap).unwrap_or_default();
        sqlx::query(OUTBOX)
            .bind("fast")
            .bind("deny")
            .bind("deny")
            .bind(version)
            .bind(payload)
            .bind($now)
            .execute(&mut *$tx)
            .await?;
        let deny = Denylist::from(snap);
        // Every covered link's version is bumped by the database, and its copy for the
        // edge built from the row as written: a concurrent edit can neither be lost nor
        // share a version with this one.
        let bump =
            "UPDATE links SET version = version + 1, updated_at = $1 WHERE status <> 'deleted' AND ";
        let returning = format!(" RETURNING {}", link_row_columns());
        let rows: Vec<LinkRow> = match $target {
            BanTarget::Code { domain, code } => {
                sqlx::query_as(&format!("{bump} domain = $2 AND code = $3{returning}"))
                    .bind($now)
                    .bind(domain)
                    .bind(code)
                    .fetch_all(&mut *$tx)
                    .await?
            }
            BanTarget::Host { host } => {
                sqlx::query_as(&format!(
                    "{bump} (target_host = $2 OR target_host LIKE $3 ESCAPE '!'){returning}"
                ))
                .bind($now)
                .bind(host)
                .bind(under(host))
                .fetch_all(&mut *$tx)
                .await?
            }
        };
        for row in rows {
            let link = Link::try_from(row)?;
            let version =
                i64::try_from(link.version).map_err(|_| StoreError::Corrupt("version".into()))?;
            let banned = link.banned_by(&deny);
            sqlx::query(OUTBOX)
                .bind("normal")
                .bind("link")
                .bind(link.route_key())
                .bind(version)
                .bind(link.edge_record(banned).to_json())
                .bind($now)
                .execute(&mut *$tx)
                .await?;
            debug_assert!(link.status != LinkState::Deleted);
        }
    }};
}

#[async_trait]
impl BanStore for Db {
    async fn insert_ban(
        &self,
        target: &BanTarget,
        reason: &str,
        created_by: &str,
        now: i64,
    ) -> Result<Ban, StoreError> {
        let (kind, domain, code, host) = match target {
            BanTarget::Code { domain, code } => {
                ("code", Some(domain.as_str()), Some(code.as_str()), None)
            }
            BanTarget::Host { host } => ("host", None, None, Some(host.as_str())),
        };
        let pg = self.is_postgres();
        crate::on_writer!(self, pool => {
            let mut tx = pool.begin().await?;
            // Exclusive: no link write is deciding its ban mark meanwhile.
            ban_lock!(tx, pg, "pg_advisory_xact_lock");
            let row: BanRow = sqlx::query_as(&format!(
                "INSERT INTO bans (kind, domain, code, host, reason, created_by, created_at) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING {BAN_COLUMNS}"
            ))
            .bind(kind)
            .bind(domain)
            .bind(code)
            .bind(host)
            .bind(reason)
            .bind(created_by)
            .bind(now)
            .fetch_one(&mut *tx)
            .await?;
            propagate!(tx, pg, target, now);
            tx.commit().await?;
            Ban::try_from(row)
        })
    }

    async fn lift_ban(&self, ban_id: i64, now: i64) -> Result<LiftOutcome, StoreError> {
        let pg = self.is_postgres();
        crate::on_writer!(self, pool => {
            let mut tx = pool.begin().await?;
            ban_lock!(tx, pg, "pg_advisory_xact_lock");
            let row: Option<BanRow> = sqlx::query_as(&format!(
                "UPDATE bans SET lifted_at = $1 WHERE ban_id = $2 AND lifted_at IS NULL RETURNING {BAN_COLUMNS}"
            ))
            .bind(now)
            .bind(ban_id)
            .fetch_optional(&mut *tx)
            .await?;
            let Some(row) = row else {
                let exists: Option<i64> = sqlx::query_scalar("SELECT ban_id FROM bans WHERE ban_id = $1")
                    .bind(ban_id)
                    .fetch_optional(&mut *tx)
                    .await?;
                return Ok(if exists.is_some() { LiftOutcome::AlreadyLifted } else { LiftOutcome::NotFound });
            };
            let ban = Ban::try_from(row)?;
            propagate!(tx, pg, &ban.target, now);
            tx.commit().await?;
            Ok(LiftOutcome::Lifted(ban))
        })
    }

    async fn list_bans(&self, include_lifted: bool) -> Result<Vec<Ban>, StoreError> {
        let sql = format!(
            "SELECT {BAN_COLUMNS} FROM bans {} ORDER BY ban_id DESC",
            if include_lifted {
                ""
            } else {
                "WHERE lifted_at IS NULL"
            }
        );
        let rows: Vec<BanRow> =
            crate::on_pool!(self, pool => sqlx::query_as(&sql).fetch_all(pool).await?);
        rows.into_iter().map(Ban::try_from).collect()
    }
}

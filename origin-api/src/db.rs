//! The database connection: SQLite for one machine, PostgreSQL for production. Each has
//! its own migrations under `migrations/`, applied at start.

use sqlx::postgres::{PgPool, PgPoolOptions};
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};
use std::str::FromStr;
use std::time::Duration;

static SQLITE_MIGRATIONS: sqlx::migrate::Migrator = sqlx::migrate!("../migrations/sqlite");
static POSTGRES_MIGRATIONS: sqlx::migrate::Migrator = sqlx::migrate!("../migrations/postgres");

/// Why the database could not be used.
#[derive(Debug, thiserror::Error)]
pub enum DbError {
    #[error("unsupported database URL {0:?}: expected sqlite://PATH or postgres://…")]
    UnsupportedUrl(String),
    #[error("cannot connect to the database: {0}")]
    Connect(#[source] sqlx::Error),
    #[error("cannot apply migrations: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    #[error(transparent)]
    Query(#[from] sqlx::Error),
}

/// How much of a SQLite file is mapped into memory (address space, not memory: pages are
/// read on demand and shared with the OS's cache).
const SQLITE_MMAP_BYTES: u64 = 4 << 30;
/// The writer connection's page cache, in KiB (SQLite's default is 2 MiB). It is
/// anonymous memory, held for the process's life: 64 MiB cost a million-link origin a
/// sixth of its `RssAnon`, and measured no faster than 16 at the rollup writer's work or
/// the edge's ingestion (`docs/benchmarks/history/redirect.md`); the rollups' pages are mapped besides.
const SQLITE_WRITER_CACHE_KIB: u64 = 16 * 1024;

/// SQLite allows one writer at a time. Readers get a pool of their own, so redirects
/// never wait behind an import; writers share one connection.
#[derive(Debug, Clone)]
pub struct SqlitePools {
    pub read: SqlitePool,
    pub write: SqlitePool,
}

impl SqlitePools {
    pub async fn close(&self) {
        self.write.close().await;
        self.read.close().await;
    }
}

/// A pool for one of the two supported databases.
#[derive(Debug, Clone)]
pub enum Db {
    Sqlite(SqlitePools),
    Postgres(PgPool),
}

impl Db {
    /// Connects; a SQLite file that does not exist yet is created.
    pub async fn connect(url: &str) -> Result<Db, DbError> {
        if url.starts_with("sqlite:") {
            let options = SqliteConnectOptions::from_str(url)
                .map_err(DbError::Connect)?
                .create_if_missing(true)
                // WAL lets readers (redirects) proceed while one writer commits.
                .journal_mode(SqliteJournalMode::Wal)
                .synchronous(SqliteSynchronous::Normal)
                .foreign_keys(true)
                .busy_timeout(Duration::from_secs(5))
                // Reads through the OS's page cache without a system call per page: the
                // click rollups grow to gigabytes, and SQLite's own cache (2 MB by
                // default) turned their random updates into a read and a write call per
                // page (`scripts/bench-clicks`).
                .pragma("mmap_size", SQLITE_MMAP_BYTES.to_string());
            // The writer first: it creates the file and switches it to WAL. Neither pool
            // pings a connection before handing it out: a local file does not drop
            // connections, and the ping was one more trip to the connection's thread
            // per query (about a tenth of a single create's CPU, measured with perf).
            // The writer's page cache holds the hot part of the rollups between commits.
            let write = SqlitePoolOptions::new()
                .max_connections(1)
                .test_before_acquire(false)
                .acquire_timeout(Duration::from_secs(30))
                .connect_with(
                    options
                        .clone()
                        .pragma("cache_size", format!("-{}", SQLITE_WRITER_CACHE_KIB)),
                )
                .await
                .map_err(DbError::Connect)?;
            let read = SqlitePoolOptions::new()
                .max_connections(8)
                .test_before_acquire(false)
                .connect_with(options)
                .await
                .map_err(DbError::Connect)?;
            Ok(Db::Sqlite(SqlitePools { read, write }))
        } else if url.starts_with("postgres:") || url.starts_with("postgresql:") {
            let pool = PgPoolOptions::new()
                .max_connections(16)
                .acquire_timeout(Duration::from_secs(30))
                .connect(url)
                .await
                .map_err(DbError::Connect)?;
            Ok(Db::Postgres(pool))
        } else {
            Err(DbError::UnsupportedUrl(url.to_owned()))
        }
    }

    /// The same database through a pool of its own for one kind of work, so that a flood
    /// of one kind (redirects of unknown codes, guessed API keys) cannot take the
    /// connections the others need. It waits at most `acquire_timeout` for one of its
    /// `connections`; on SQLite it reads through them and shares the one writer.
    /// Connections open on first use.
    pub fn with_own_pool(&self, connections: u32, acquire_timeout: Duration) -> Db {
        match self {
            Db::Sqlite(pools) => Db::Sqlite(SqlitePools {
                read: SqlitePoolOptions::new()
                    .max_connections(connections)
                    .test_before_acquire(false)
                    .acquire_timeout(acquire_timeout)
                    .connect_lazy_with((*pools.read.connect_options()).clone()),
                write: pools.write.clone(),
            }),
            Db::Postgres(pool) => Db::Postgres(
                PgPoolOptions::new()
                    .max_connections(connections)
                    .acquire_timeout(acquire_timeout)
                    .connect_lazy_with((*pool.connect_options()).clone()),
            ),
        }
    }

    /// Applies the migrations this binary carries that the database lacks.
    pub async fn migrate(&self) -> Result<(), DbError> {
        match self {
            Db::Sqlite(pools) => SQLITE_MIGRATIONS.run(&pools.write).await?,
            Db::Postgres(pool) => POSTGRES_MIGRATIONS.run(pool).await?,
        }
        Ok(())
    }

    /// Applies this binary's migrations up to `version` only, for tests of an upgrade
    /// from an older schema. (It builds a `Migrator` from its fields, which sqlx keeps
    /// public for its macro but outside its semver promise: a test helper only.)
    #[doc(hidden)]
    pub async fn migrate_to(&self, version: i64) -> Result<(), DbError> {
        let upto = |all: &sqlx::migrate::Migrator| sqlx::migrate::Migrator {
            migrations: all
                .iter()
                .filter(|m| m.version <= version)
                .cloned()
                .collect::<Vec<_>>()
                .into(),
            ignore_missing: false,
            locking: true,
            no_tx: false,
        };
        match self {
            Db::Sqlite(pools) => upto(&SQLITE_MIGRATIONS).run(&pools.write).await?,
            Db::Postgres(pool) => upto(&POSTGRES_MIGRATIONS).run(pool).await?,
        }
        Ok(())
    }

    /// The versions of this binary's migrations the database has not applied, and the
    /// versions it has applied that this binary does not know (a newer binary ran on it).
    pub async fn migration_status(&self) -> Result<(Vec<i64>, Vec<i64>), DbError> {
        const APPLIED: &str = "SELECT version FROM _sqlx_migrations WHERE success";
        let (known, applied): (&sqlx::migrate::Migrator, Result<Vec<i64>, sqlx::Error>) = match self
        {
            Db::Sqlite(pools) => (
                &SQLITE_MIGRATIONS,
                sqlx::query_scalar(APPLIED).fetch_all(&pools.read).await,
            ),
            Db::Postgres(pool) => (
                &POSTGRES_MIGRATIONS,
                sqlx::query_scalar(APPLIED).fetch_all(pool).await,
            ),
        };
        // No table yet: a database never migrated.
        let applied = match applied {
            Ok(versions) => versions,
            Err(sqlx::Error::Database(e)) if e.message().contains("_sqlx_migrations") => Vec::new(),
            Err(e) => return Err(DbError::Query(e)),
        };
        let pending = known
            .iter()
            .map(|m| m.version)
            .filter(|v| !applied.contains(v))
            .collect();
        let unknown = applied
            .iter()
            .copied()
            .filter(|v| !known.iter().any(|m| m.version == *v))
            .collect();
        Ok((pending, unknown))
    }

    /// A round trip to the database, for readiness.
    pub async fn ping(&self) -> Result<(), DbError> {
        self.reader()
            .await
            .map_err(DbError::Query)?
            .conn()
            .execute("SELECT 1", &[])
            .await?;
        Ok(())
    }

    /// Closes every connection.
    pub async fn close(&self) {
        match self {
            Db::Sqlite(pools) => pools.close().await,
            Db::Postgres(pool) => pool.close().await,
        }
    }

    /// Whether this is PostgreSQL (for the few statements only it has).
    pub fn is_postgres(&self) -> bool {
        matches!(self, Db::Postgres(_))
    }

    /// The name of the backend, for logs.
    pub fn kind(&self) -> &'static str {
        match self {
            Db::Sqlite(_) => "sqlite",
            Db::Postgres(_) => "postgres",
        }
    }
}

/// The last readiness check and when it ran: anyone may ask `/readyz`, so its answer is
/// reused for a second rather than costing the database a round trip per caller.
#[derive(Debug, Default)]
pub struct Readiness {
    last: tokio::sync::Mutex<Option<(tokio::time::Instant, bool)>>,
}

/// How long one readiness check is reused.
pub const READINESS_TTL: std::time::Duration = std::time::Duration::from_secs(1);

impl Readiness {
    /// Whether the database answered, asking it only if the last answer is older than
    /// [`READINESS_TTL`]. Callers arriving while it is asked wait for that answer.
    pub async fn check(&self, db: &Db) -> bool {
        let mut last = self.last.lock().await;
        if let Some((at, ready)) = *last {
            if at.elapsed() < READINESS_TTL {
                return ready;
            }
        }
        let ready = match db.ping().await {
            Ok(()) => true,
            Err(e) => {
                tracing::warn!(error = %e, "not ready: the database does not answer");
                false
            }
        };
        *last = Some((tokio::time::Instant::now(), ready));
        ready
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn readiness_asks_the_database_at_most_once_a_second() {
        let dir = tempfile::tempdir().expect("temp dir");
        let url = format!("sqlite://{}", dir.path().join("r.db").display());
        let db = Db::connect(&url).await.expect("connect");
        let readiness = Readiness::default();
        assert!(readiness.check(&db).await);
        // The database goes away; then the clock stops (a closed pool answers at once,
        // so nothing waits on it). For the rest of the second, nobody's call reaches it.
        db.close().await;
        tokio::time::pause();
        for _ in 0..1_000 {
            assert!(readiness.check(&db).await, "a call reached the database");
        }
        tokio::time::advance(READINESS_TTL).await;
        assert!(!readiness.check(&db).await);
    }
}

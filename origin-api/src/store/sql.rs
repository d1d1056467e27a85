//! Statements written once for both databases, run through plain functions instead of
//! macros that compile a body twice.
//!
//! A statement is its SQL (with `$n` placeholders, which PostgreSQL reads as written and
//! SQLite gets rewritten to `?` by [`positional`]) and a slice of [`Arg`]s: the few types the store binds, each bound to
//! whichever driver's arguments the connection needs. Rows decode with each driver's own
//! `FromRow`, so nothing is converted on the way out. The cost over a typed `bind` chain
//! is one match per value, against a database round trip.
//!
//! A connection is a [`Conn`]: borrowed from a transaction ([`Tx::conn`]) or from a
//! pooled connection ([`Pooled::conn`]). Functions of the store take `&mut Conn<'_>`,
//! and so compose inside one transaction.

use crate::db::Db;
use futures_util::stream::BoxStream;
use futures_util::TryStreamExt;
use sqlx::pool::PoolConnection;
use sqlx::postgres::{PgArguments, PgConnection, PgRow};
use sqlx::sqlite::{SqliteArguments, SqliteConnection, SqliteRow};
use sqlx::{Arguments, Encode, FromRow, Postgres, Sqlite, Transaction, Type};
use std::borrow::Cow;

/// A value bound to a placeholder. `None` binds SQL `NULL` of the value's type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arg<'a> {
    Int(Option<i64>),
    Text(Option<&'a str>),
    Bool(Option<bool>),
    /// JSON text the caller wrote: PostgreSQL gets it as `jsonb`, SQLite as text.
    Json(&'a str),
}

/// JSON text bound as PostgreSQL's `jsonb` (its binary form is a version byte and the
/// text) and as SQLite's text; not parsed here, the database checks it.
#[derive(Debug, Clone, Copy)]
struct JsonText<'a>(&'a str);

/// PostgreSQL's `jsonb` type.
const JSONB_OID: sqlx::postgres::types::Oid = sqlx::postgres::types::Oid(3802);

impl Type<Postgres> for JsonText<'_> {
    fn type_info() -> sqlx::postgres::PgTypeInfo {
        sqlx::postgres::PgTypeInfo::with_oid(JSONB_OID)
    }
}

impl Encode<'_, Postgres> for JsonText<'_> {
    fn encode_by_ref(
        &self,
        buf: &mut sqlx::postgres::PgArgumentBuffer,
    ) -> Result<sqlx::encode::IsNull, sqlx::error::BoxDynError> {
        buf.push(1);
        buf.extend_from_slice(self.0.as_bytes());
        Ok(sqlx::encode::IsNull::No)
    }
}

impl Type<Sqlite> for JsonText<'_> {
    fn type_info() -> sqlx::sqlite::SqliteTypeInfo {
        <&str as Type<Sqlite>>::type_info()
    }
}

impl<'q> Encode<'q, Sqlite> for JsonText<'q> {
    fn encode_by_ref(
        &self,
        buf: &mut Vec<sqlx::sqlite::SqliteArgumentValue<'q>>,
    ) -> Result<sqlx::encode::IsNull, sqlx::error::BoxDynError> {
        <&str as Encode<'q, Sqlite>>::encode_by_ref(&self.0, buf)
    }
}

impl From<i64> for Arg<'_> {
    fn from(v: i64) -> Self {
        Arg::Int(Some(v))
    }
}

impl From<Option<i64>> for Arg<'_> {
    fn from(v: Option<i64>) -> Self {
        Arg::Int(v)
    }
}

impl From<bool> for Arg<'_> {
    fn from(v: bool) -> Self {
        Arg::Bool(Some(v))
    }
}

impl<'a> From<&'a str> for Arg<'a> {
    fn from(v: &'a str) -> Self {
        Arg::Text(Some(v))
    }
}

impl<'a> From<&'a String> for Arg<'a> {
    fn from(v: &'a String) -> Self {
        Arg::Text(Some(v))
    }
}

impl<'a> From<Option<&'a str>> for Arg<'a> {
    fn from(v: Option<&'a str>) -> Self {
        Arg::Text(v)
    }
}

impl<'a> From<&'a Option<String>> for Arg<'a> {
    fn from(v: &'a Option<String>) -> Self {
        Arg::Text(v.as_deref())
    }
}

/// The driver's arguments for `args`, in order.
fn arguments<'q, A>(args: &[Arg<'q>]) -> Result<A, sqlx::Error>
where
    A: Arguments<'q>,
    Option<i64>: Encode<'q, A::Database> + Type<A::Database>,
    Option<&'q str>: Encode<'q, A::Database> + Type<A::Database>,
    Option<bool>: Encode<'q, A::Database> + Type<A::Database>,
    JsonText<'q>: Encode<'q, A::Database> + Type<A::Database>,
{
    let mut out = A::default();
    out.reserve(args.len(), 0);
    for arg in args {
        match *arg {
            Arg::Int(v) => out.add(v),
            Arg::Text(v) => out.add(v),
            Arg::Bool(v) => out.add(v),
            Arg::Json(v) => out.add(JsonText(v)),
        }
        .map_err(sqlx::Error::Encode)?;
    }
    Ok(out)
}

/// `sql` with each `$n` turned into an anonymous `?` and `args` laid out in the order
/// the placeholders appear (a value used twice is bound twice), for SQLite.
///
/// sqlx-sqlite finds the value of each named placeholder by asking SQLite its name, and
/// SQLite looks names up by a linear scan: binding a statement of n named values costs
/// n² steps, and a bulk insert of 500 links (8,500 values) took 0.3 s to bind against
/// 10 ms to run. Anonymous placeholders bind by position. Literals in quotes are left as
/// they are.
fn positional<'s, 'q>(
    sql: &'s str,
    args: &'s [Arg<'q>],
) -> Result<(Cow<'s, str>, Cow<'s, [Arg<'q>]>), sqlx::Error> {
    if !sql.contains('$') {
        return Ok((Cow::Borrowed(sql), Cow::Borrowed(args)));
    }
    let bytes = sql.as_bytes();
    let mut out = String::with_capacity(sql.len());
    let mut bound = Vec::with_capacity(args.len());
    let mut quote: Option<u8> = None;
    let (mut i, mut copied) = (0, 0);
    while i < bytes.len() {
        let b = bytes[i];
        match quote {
            // A doubled quote inside a literal reads as a closing and an opening one.
            Some(q) if b == q => quote = None,
            Some(_) => {}
            None if b == b'\'' || b == b'"' => quote = Some(b),
            // A comment runs to the end of its line: a quote in it opens nothing.
            None if b == b'-' && bytes.get(i + 1) == Some(&b'-') => {
                i += bytes[i..].iter().take_while(|c| **c != b'\n').count();
                continue;
            }
            None if b == b'$' => {
                let digits = bytes[i + 1..]
                    .iter()
                    .take_while(|d| d.is_ascii_digit())
                    .count();
                if digits > 0 {
                    let n: usize = sql[i + 1..i + 1 + digits].parse().unwrap_or(0);
                    let arg = n.checked_sub(1).and_then(|k| args.get(k)).ok_or_else(|| {
                        sqlx::Error::Protocol(format!(
                            "placeholder ${n} has no value ({} given)",
                            args.len()
                        ))
                    })?;
                    out.push_str(&sql[copied..i]);
                    out.push('?');
                    bound.push(*arg);
                    i += 1 + digits;
                    copied = i;
                    continue;
                }
            }
            None => {}
        }
        i += 1;
    }
    out.push_str(&sql[copied..]);
    Ok((Cow::Owned(out), Cow::Owned(bound)))
}

/// A row type both drivers can decode (a `#[derive(FromRow)]` struct, a tuple).
pub trait Row: for<'r> FromRow<'r, SqliteRow> + for<'r> FromRow<'r, PgRow> + Send + Unpin {}

impl<T> Row for T where T: for<'r> FromRow<'r, SqliteRow> + for<'r> FromRow<'r, PgRow> + Send + Unpin
{}

/// A connection of either database, borrowed for some statements.
#[derive(Debug)]
pub enum Conn<'c> {
    Sqlite(&'c mut SqliteConnection),
    Postgres(&'c mut PgConnection),
}

impl Conn<'_> {
    pub fn is_postgres(&self) -> bool {
        matches!(self, Conn::Postgres(_))
    }

    /// Runs a statement; the rows it changed.
    pub async fn execute(&mut self, sql: &str, args: &[Arg<'_>]) -> Result<u64, sqlx::Error> {
        let (sql, args) = self.dialect(sql, args)?;
        Ok(match self {
            Conn::Sqlite(c) => sqlx::query_with(&sql, arguments::<SqliteArguments<'_>>(&args)?)
                .execute(&mut **c)
                .await?
                .rows_affected(),
            Conn::Postgres(c) => sqlx::query_with(&sql, arguments::<PgArguments>(&args)?)
                .execute(&mut **c)
                .await?
                .rows_affected(),
        })
    }

    /// The rows a statement returns, as they come; on SQLite `sql` and `args` are
    /// already [`positional`].
    fn rows<'s, T: Row + 's>(
        &'s mut self,
        sql: &'s str,
        args: &'s [Arg<'s>],
    ) -> Result<BoxStream<'s, Result<T, sqlx::Error>>, sqlx::Error> {
        Ok(match self {
            Conn::Sqlite(c) => {
                sqlx::query_as_with::<_, T, _>(sql, arguments::<SqliteArguments<'_>>(args)?)
                    .fetch(&mut **c)
            }
            Conn::Postgres(c) => {
                sqlx::query_as_with::<_, T, _>(sql, arguments::<PgArguments>(args)?).fetch(&mut **c)
            }
        })
    }

    /// The statement as this connection's driver is to get it.
    fn dialect<'s, 'q>(
        &self,
        sql: &'s str,
        args: &'s [Arg<'q>],
    ) -> Result<(Cow<'s, str>, Cow<'s, [Arg<'q>]>), sqlx::Error> {
        match self {
            Conn::Sqlite(_) => positional(sql, args),
            Conn::Postgres(_) => Ok((Cow::Borrowed(sql), Cow::Borrowed(args))),
        }
    }

    /// The first row a statement returns, if any; the rest are not read.
    pub async fn fetch_optional<T: Row>(
        &mut self,
        sql: &str,
        args: &[Arg<'_>],
    ) -> Result<Option<T>, sqlx::Error> {
        let (sql, args) = self.dialect(sql, args)?;
        let found = self.rows(&sql, &args)?.try_next().await;
        found
    }

    pub async fn fetch_one<T: Row>(
        &mut self,
        sql: &str,
        args: &[Arg<'_>],
    ) -> Result<T, sqlx::Error> {
        self.fetch_optional(sql, args)
            .await?
            .ok_or(sqlx::Error::RowNotFound)
    }

    pub async fn fetch_all<T: Row>(
        &mut self,
        sql: &str,
        args: &[Arg<'_>],
    ) -> Result<Vec<T>, sqlx::Error> {
        let (sql, args) = self.dialect(sql, args)?;
        let found = self.rows(&sql, &args)?.try_collect().await;
        found
    }
}

/// A transaction of either database; rolled back when dropped uncommitted.
#[derive(Debug)]
pub enum Tx {
    Sqlite(Transaction<'static, Sqlite>),
    Postgres(Transaction<'static, Postgres>),
}

impl Tx {
    pub fn conn(&mut self) -> Conn<'_> {
        match self {
            Tx::Sqlite(tx) => Conn::Sqlite(&mut *tx),
            Tx::Postgres(tx) => Conn::Postgres(&mut *tx),
        }
    }

    pub async fn commit(self) -> Result<(), sqlx::Error> {
        match self {
            Tx::Sqlite(tx) => tx.commit().await,
            Tx::Postgres(tx) => tx.commit().await,
        }
    }
}

/// A connection held from a pool for a few statements outside a transaction.
#[derive(Debug)]
pub enum Pooled {
    Sqlite(PoolConnection<Sqlite>),
    Postgres(PoolConnection<Postgres>),
}

impl Pooled {
    pub fn conn(&mut self) -> Conn<'_> {
        match self {
            Pooled::Sqlite(c) => Conn::Sqlite(&mut *c),
            Pooled::Postgres(c) => Conn::Postgres(&mut *c),
        }
    }
}

impl Db {
    /// A transaction on the writer (SQLite's single writer connection; any PostgreSQL
    /// connection).
    pub async fn begin_write(&self) -> Result<Tx, sqlx::Error> {
        Ok(match self {
            Db::Sqlite(pools) => Tx::Sqlite(pools.write.begin().await?),
            Db::Postgres(pool) => Tx::Postgres(pool.begin().await?),
        })
    }

    /// A connection for reads (SQLite's reader pool).
    pub async fn reader(&self) -> Result<Pooled, sqlx::Error> {
        Ok(match self {
            Db::Sqlite(pools) => Pooled::Sqlite(pools.read.acquire().await?),
            Db::Postgres(pool) => Pooled::Postgres(pool.acquire().await?),
        })
    }

    /// The writer outside a transaction, for one statement that commits alone.
    pub async fn writer(&self) -> Result<Pooled, sqlx::Error> {
        Ok(match self {
            Db::Sqlite(pools) => Pooled::Sqlite(pools.write.acquire().await?),
            Db::Postgres(pool) => Pooled::Postgres(pool.acquire().await?),
        })
    }
}

/// One statement on a connection of its own, for reads and writes that need no
/// transaction.
impl Db {
    /// Every row a read returns.
    pub async fn read_all<T: Row>(
        &self,
        sql: &str,
        args: &[Arg<'_>],
    ) -> Result<Vec<T>, sqlx::Error> {
        self.reader().await?.conn().fetch_all(sql, args).await
    }

    /// The row a read returns, if any.
    pub async fn read_optional<T: Row>(
        &self,
        sql: &str,
        args: &[Arg<'_>],
    ) -> Result<Option<T>, sqlx::Error> {
        self.reader().await?.conn().fetch_optional(sql, args).await
    }

    /// A statement on the writer, committed alone; the rows it changed.
    pub async fn write(&self, sql: &str, args: &[Arg<'_>]) -> Result<u64, sqlx::Error> {
        self.writer().await?.conn().execute(sql, args).await
    }
}

/// Rows per multi-row statement: well under both databases' limits on bound values for
/// the widest rows the store writes (18 values).
pub const ROWS_PER_STATEMENT: usize = 500;

/// A multi-row `INSERT`: `head` (`INSERT INTO t (a, b)`), then `VALUES` for `args`
/// taken `columns` at a time, then `tail` (an `ON CONFLICT …`, or nothing), one
/// statement per [`ROWS_PER_STATEMENT`] rows, in order.
pub async fn insert_rows(
    c: &mut Conn<'_>,
    head: &str,
    tail: &str,
    columns: usize,
    args: &[Arg<'_>],
) -> Result<(), sqlx::Error> {
    for chunk in args.chunks(ROWS_PER_STATEMENT * columns.max(1)) {
        let rows = chunk.len() / columns.max(1);
        let sql = format!(
            "{head} VALUES {} {tail}",
            values_placeholders(1, rows, columns)
        );
        c.execute(&sql, chunk).await?;
    }
    Ok(())
}

/// `($start, $start+1, …), (…)`: the placeholders of `rows` rows of `columns` values for
/// a multi-row `VALUES`, numbered from `start`.
pub fn values_placeholders(start: usize, rows: usize, columns: usize) -> String {
    let mut out = String::with_capacity(rows * columns * 5);
    for r in 0..rows {
        if r > 0 {
            out.push_str(", ");
        }
        out.push('(');
        for c in 0..columns {
            if c > 0 {
                out.push_str(", ");
            }
            out.push('$');
            out.push_str(&(start + r * columns + c).to_string());
        }
        out.push(')');
    }
    out
}

/// `$start, $start+1, …` for an `IN (…)` list of `n` values.
pub fn list_placeholders(start: usize, n: usize) -> String {
    (start..start + n)
        .map(|i| format!("${i}"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A SQLite database in a directory of its own, gone when the directory is dropped.
    async fn scratch_sqlite() -> (tempfile::TempDir, Db) {
        let dir = tempfile::tempdir().expect("temp dir");
        let db = Db::connect(&format!("sqlite://{}", dir.path().join("s.db").display()))
            .await
            .expect("connect");
        (dir, db)
    }

    #[test]
    fn placeholders_number_rows_in_order() {
        assert_eq!(values_placeholders(1, 2, 3), "($1, $2, $3), ($4, $5, $6)");
        assert_eq!(values_placeholders(4, 1, 2), "($4, $5)");
        assert_eq!(values_placeholders(1, 0, 3), "");
        assert_eq!(list_placeholders(3, 3), "$3, $4, $5");
        assert_eq!(list_placeholders(1, 0), "");
    }

    #[test]
    fn sqlite_gets_positional_placeholders_with_the_values_in_text_order() {
        let args = [Arg::from(1), Arg::from("a"), Arg::from(true)];
        let (sql, bound) = positional(
            "SELECT $2, $1 WHERE x = $2 AND y = '$3' AND \"$1\" = $3",
            &args,
        )
        .expect("rewrite");
        assert_eq!(sql, "SELECT ?, ? WHERE x = ? AND y = '$3' AND \"$1\" = ?");
        assert_eq!(*bound, [args[1], args[0], args[1], args[2]]);
        // A literal with a doubled quote stays one literal.
        let (sql, bound) = positional("SELECT 'it''s $1', $1", &args[..1]).expect("rewrite");
        assert_eq!(sql, "SELECT 'it''s $1', ?");
        assert_eq!(*bound, [args[0]]);
        // A quote in a comment is no literal: the placeholders after it are rewritten.
        let (sql, _) = positional("-- the link's page\nSELECT $1", &args[..1]).expect("rewrite");
        assert_eq!(sql, "-- the link's page\nSELECT ?");
    }

    #[tokio::test]
    async fn a_sqlite_connection_sends_its_statements_positional() {
        let (_dir, db) = scratch_sqlite().await;
        let mut pooled = db.reader().await.expect("reader");
        let args = [Arg::from(7)];
        let (sql, bound) = pooled
            .conn()
            .dialect("SELECT $1 + $1", &args)
            .expect("rewrite");
        assert_eq!((&*sql, &*bound), ("SELECT ? + ?", &[args[0], args[0]][..]));
    }

    #[test]
    fn a_placeholder_without_a_value_is_refused() {
        assert!(positional("SELECT $2", &[Arg::from(1)]).is_err());
        assert!(positional("SELECT $0", &[Arg::from(1)]).is_err());
    }

    #[tokio::test]
    async fn a_statement_of_thousands_of_values_binds_each_where_it_belongs() {
        let (_dir, db) = scratch_sqlite().await;
        let mut tx = db.begin_write().await.expect("begin");
        let mut c = tx.conn();
        c.execute("CREATE TABLE t (i BIGINT, s TEXT)", &[])
            .await
            .expect("create");
        let texts: Vec<String> = (0..4_000).map(|i| format!("t{i}")).collect();
        let args: Vec<Arg<'_>> = texts
            .iter()
            .enumerate()
            .flat_map(|(i, t)| [Arg::from(i as i64), Arg::from(t)])
            .collect();
        insert_rows(&mut c, "INSERT INTO t (i, s)", "", 2, &args)
            .await
            .expect("insert");
        let wrong: Vec<(i64, String)> = c
            .fetch_all("SELECT i, s FROM t WHERE s <> 't' || i", &[])
            .await
            .expect("select");
        assert_eq!(wrong, []);
        let (n,): (i64,) = c
            .fetch_one("SELECT COUNT(*) FROM t", &[])
            .await
            .expect("count");
        assert_eq!(n, 4_000);
    }

    #[tokio::test]
    async fn one_statement_runs_on_sqlite_with_every_kind_of_value() {
        let (_dir, db) = scratch_sqlite().await;
        let mut tx = db.begin_write().await.expect("begin");
        let mut c = tx.conn();
        c.execute("CREATE TABLE t (i BIGINT, s TEXT, b BOOLEAN)", &[])
            .await
            .expect("create");
        let text = String::from("x");
        let absent: Option<String> = None;
        for args in [
            [Arg::from(1), Arg::from(&text), Arg::from(true)],
            [Arg::from(None::<i64>), Arg::from(&absent), Arg::Bool(None)],
        ] {
            assert_eq!(
                c.execute("INSERT INTO t VALUES ($1, $2, $3)", &args)
                    .await
                    .expect("insert"),
                1
            );
        }
        let rows: Vec<(Option<i64>, Option<String>, Option<bool>)> = c
            .fetch_all("SELECT i, s, b FROM t ORDER BY i IS NULL", &[])
            .await
            .expect("select");
        assert_eq!(
            rows,
            [(Some(1), Some("x".into()), Some(true)), (None, None, None)]
        );
        let none: Option<(i64,)> = c
            .fetch_optional("SELECT i FROM t WHERE s = $1", &["y".into()])
            .await
            .expect("select");
        assert_eq!(none, None);
        tx.commit().await.expect("commit");
    }
}

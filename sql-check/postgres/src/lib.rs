//! The origin store's static statements, checked by `sqlx::query_file!` against
//! PostgreSQL's schema (column names and the types of every parameter) when this crate
//! compiles: see `sql-check/checks.rs`.

/// The connection the checks run on.
pub type Conn = sqlx::PgConnection;

include!("../../checks.rs");

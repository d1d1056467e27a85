//! The origin store's static statements, checked by `sqlx::query_file!` against SQLite's
//! schema when this crate compiles: see `sql-check/checks.rs`.

/// The connection the checks run on.
pub type Conn = sqlx::SqliteConnection;

include!("../../checks.rs");

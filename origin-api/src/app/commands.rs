//! The operator's commands over the database (`keys`, `domains`, `outbox`, `users`,
//! `webhooks`, `owners`, `feeds`, `reports`, `migrate`): the root builds the one service
//! each uses, and the command (`crate::cli`) calls it as the operator.

use crate::app;
use crate::cli;
use crate::config::{Command, Settings};
use crate::db::Db;

/// Runs `command` against the migrated database `db`.
pub async fn run(
    command: Command,
    db: Db,
    settings: &Settings,
) -> Result<(), Box<dyn std::error::Error>> {
    match command {
        Command::Migrate => {
            tracing::info!(database = db.kind(), "migrations applied");
        }
        Command::Keys(command) => cli::keys::run(&app::api_keys_only(db), command).await?,
        Command::Outbox(command) => cli::outbox::run(&app::outbox_only(db), command).await?,
        Command::Domains(command) => {
            cli::domains::run(&app::domains_only(db, settings), command).await?
        }
        Command::Users(command) => {
            cli::users::run(&app::accounts_only(db, settings), command).await?
        }
        Command::Webhooks(command) => {
            cli::webhooks::run(&app::webhooks_only(db, settings), command).await?
        }
        Command::Owners(command) => {
            cli::owners::run(&app::links_only(db, settings), command).await?
        }
        Command::Feeds(command) => {
            cli::abuse::feeds(&app::abuse_only(db, settings), command).await?
        }
        Command::Reports(command) => {
            cli::abuse::reports(&app::reports_only(db, settings), command).await?
        }
        Command::Serve | Command::Import(_) | Command::Export(_) | Command::Config(_) => {
            return Err("not an operator's command over the database".into())
        }
    }
    Ok(())
}

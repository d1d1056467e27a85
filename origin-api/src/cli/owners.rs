//! `hop-origin owners …`: an owner's quotas from the operator's shell (docs/quotas.md).

use crate::config::OwnersCommand;
use crate::error::AppError;
use crate::links::quota::{quotas_of, set_limits};
use crate::links::Links;
use crate::principal::Principal;

/// Runs one `owners` command against the database.
pub async fn run(links: &Links, command: OwnersCommand) -> Result<(), AppError> {
    match command {
        OwnersCommand::Set {
            owner,
            max_links,
            max_links_per_day,
        } => {
            set_limits(
                links,
                &Principal::Operator,
                &owner,
                max_links.map(|l| l.to_column()),
                max_links_per_day.map(|l| l.to_column()),
            )
            .await?;
            show(links, &owner).await
        }
        OwnersCommand::Show { owner } => show(links, &owner).await,
    }
}

async fn show(links: &Links, owner: &str) -> Result<(), AppError> {
    let q = quotas_of(links, owner).await?;
    let limit = |l: Option<i64>| l.map_or_else(|| "no limit".to_owned(), |n| n.to_string());
    println!("owner {}", q.owner);
    println!("links: {} of {}", q.links.used, limit(q.links.limit));
    println!(
        "links today: {} of {}",
        q.links_per_day.used,
        limit(q.links_per_day.limit)
    );
    println!(
        "create rate: {}/s per key, {}/s per owner",
        q.create_rate_per_key, q.create_rate_per_owner
    );
    Ok(())
}

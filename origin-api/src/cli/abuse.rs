//! `hop-origin feeds …` and `hop-origin reports …`: the abuse desk from the operator's
//! shell (docs/abuse.md).

use crate::abuse::reports::Reports;
use crate::abuse::AbuseDesk;
use crate::config::{FeedsCommand, ReportsCommand};
use crate::error::AppError;
use crate::model::time::rfc3339;

/// Runs one `feeds` command against the database.
pub async fn feeds(desk: &AbuseDesk, command: FeedsCommand) -> Result<(), AppError> {
    match command {
        FeedsCommand::Add {
            name,
            source,
            format,
            every,
        } => {
            desk.add_feed(&name, &source, &format, every).await?;
            println!("added {name}");
            refresh(desk, &name).await?;
        }
        FeedsCommand::List => {
            for f in desk.list().await? {
                println!(
                    "{}\t{}\t{}\t{} hosts\t{} urls\tread {}\t{}",
                    f.name,
                    f.format,
                    f.source,
                    f.hosts,
                    f.urls,
                    f.refreshed_at.map_or_else(|| "never".to_owned(), rfc3339),
                    f.last_error.unwrap_or_default()
                );
            }
        }
        FeedsCommand::Refresh { name } => refresh(desk, &name).await?,
        FeedsCommand::Remove { name } => {
            desk.remove(&name).await?;
            println!("removed {name}");
        }
    }
    Ok(())
}

async fn refresh(desk: &AbuseDesk, name: &str) -> Result<(), AppError> {
    let done = desk.refresh(name).await?;
    println!(
        "{name}: {} hosts, {} urls ({} lines skipped); banned {} hosts, {} links",
        done.hosts,
        done.urls,
        done.skipped,
        done.hosts_banned.len(),
        done.links_banned.len()
    );
    for host in &done.hosts_banned {
        println!("banned host {host}");
    }
    for link in &done.links_banned {
        println!("banned link {link}");
    }
    Ok(())
}

/// Runs one `reports` command against the database.
pub async fn reports(reports: &Reports, command: ReportsCommand) -> Result<(), AppError> {
    match command {
        ReportsCommand::List { all, limit } => {
            let (items, _) = reports.list(all, None, limit).await?;
            for r in items {
                println!(
                    "{}\t{}\t{}\t{}\t{} reports\towner {}\t{}\t{}",
                    r.id,
                    r.created_at,
                    r.link,
                    r.category,
                    r.reports_of_link,
                    r.owner.as_deref().unwrap_or("(no such link)"),
                    r.resolution.as_deref().unwrap_or("open"),
                    r.details.replace(['\n', '\t'], " ")
                );
            }
        }
        ReportsCommand::Resolve { id, resolution } => {
            reports.resolve(id, &resolution).await?;
            println!("resolved {id}");
        }
    }
    Ok(())
}

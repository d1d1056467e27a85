//! `hop-origin feeds …` and `hop-origin reports …`: the abuse desk from the operator's
//! shell (docs/abuse.md).

use crate::abuse::reports::Reports;
use crate::abuse::AbuseDesk;
use crate::config::{FeedsCommand, ReportsCommand};
use crate::error::AppError;
use crate::model::time::rfc3339;
use crate::principal::Principal;

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
            // A serving origin reads it within a second (it is due at once), and bans
            // what it lists; reading it here too would race that origin for the same
            // writes.
            println!(
                "added {name}: a serving origin reads it now and every {}; \
                 `hop-origin feeds refresh {name}` reads it from here",
                humantime(every)
            );
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

fn humantime(d: std::time::Duration) -> String {
    let s = d.as_secs();
    match s {
        s if s % 3600 == 0 => format!("{}h", s / 3600),
        s if s % 60 == 0 => format!("{}m", s / 60),
        s => format!("{s}s"),
    }
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
            let (items, _) = reports.list(&Principal::Operator, all, None, limit).await?;
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
            reports
                .resolve(&Principal::Operator, id, &resolution)
                .await?;
            println!("resolved {id}");
        }
    }
    Ok(())
}

//! `hop-origin domains …`: the domain registry from the operator's shell, through the
//! domains service.

use crate::config::DomainsCommand;
use crate::domains::{self, Domains};
use crate::error::AppError;
use crate::model::DomainAccess;
use crate::principal::Principal;

/// Why a `domains` command failed.
#[derive(Debug, thiserror::Error)]
pub enum DomainsCliError {
    #[error("{0}")]
    Usage(String),
    #[error("{0} is not registered")]
    NotRegistered(String),
    #[error(transparent)]
    App(#[from] AppError),
}

/// Runs one `domains` command as the operator.
pub async fn run(registry: &Domains, command: DomainsCommand) -> Result<(), DomainsCliError> {
    let operator = Principal::Operator;
    let usage = DomainsCliError::Usage;
    let normalized =
        |raw: &str| shared::normalize_short_domain(raw).map_err(|e| usage(e.to_string()));
    match command {
        DomainsCommand::Add {
            domain,
            shared,
            owner,
            settings,
        } => {
            let request = domains::cli_request(&domain, shared, &owner, settings.as_deref())
                .map_err(usage)?;
            let d = registry.register(&request).await?;
            println!("registered {}", d.domain);
        }
        DomainsCommand::Set { domain, settings } => {
            let change = domains::cli_change(&settings).map_err(usage)?;
            let name = normalized(&domain)?;
            let current = match registry.read(&operator, &name).await {
                Err(AppError::NotFound) => return Err(DomainsCliError::NotRegistered(name)),
                other => other?,
            };
            let d = domains::update_domain(registry, &name, current.version, change).await?;
            println!("changed {} (v{})", d.domain, d.version);
        }
        DomainsCommand::Remove { domain } => {
            let name = normalized(&domain)?;
            match domains::delete_domain(registry, &name, None).await {
                Err(AppError::NotFound) => return Err(DomainsCliError::NotRegistered(name)),
                other => other?,
            };
            println!("removed {name}");
        }
        DomainsCommand::LegacyCodes { domain, file } => {
            let name = normalized(&domain)?;
            let text = match file.to_str() {
                Some("-") => std::io::read_to_string(std::io::stdin())
                    .map_err(|e| usage(format!("standard input: {e}")))?,
                _ => std::fs::read_to_string(&file)
                    .map_err(|e| usage(format!("{}: {e}", file.display())))?,
            };
            let codes = domains::legacy_list_lines(&text);
            if codes.is_empty() {
                return Err(usage(format!("{}: no codes in it", file.display())));
            }
            let (mut added, mut listed) = (0, 0);
            for chunk in codes.chunks(domains::MAX_LEGACY_CODES_PER_REQUEST) {
                let done = registry.list_legacy_codes(&name, chunk).await?;
                added += done.added;
                listed = done.listed;
            }
            println!("{name}: {added} codes added, {listed} listed");
        }
        DomainsCommand::List => {
            for d in registry.visible(&operator).await? {
                let access = match &d.access {
                    DomainAccess::Shared => "shared".to_owned(),
                    DomainAccess::Owners(o) => format!("owners {}", o.join(",")),
                };
                println!(
                    "{}\t{}\t{}\t{} x{}\tv{}",
                    d.domain,
                    d.settings.status.as_str(),
                    access,
                    d.settings.codes.alphabet(),
                    d.settings.codes.length(),
                    d.version
                );
            }
        }
    }
    Ok(())
}

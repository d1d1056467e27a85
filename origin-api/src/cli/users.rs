//! `hop-origin users …`: the dashboard's accounts, from the operator's shell.

use crate::accounts::{AccountError, Accounts};
use crate::config::{MemberArgs, UsersCommand};
use crate::model::time::rfc3339;
use crate::principal::Principal;
use std::io::BufRead;

/// Runs one `users` command against the database.
pub async fn run(accounts: &Accounts, command: UsersCommand) -> Result<(), AccountError> {
    match command {
        UsersCommand::Create {
            email,
            operator,
            owner,
            role,
        } => {
            let password = read_password()?;
            let user = accounts.create_user(&email, &password, operator).await?;
            if let (Some(owner), Some(role)) = (owner, role) {
                accounts.grant(&user, &owner, role, false).await?;
            }
            println!(
                "created {} ({}){}",
                user.email,
                user.user_id,
                if operator { ", an operator" } else { "" }
            );
        }
        UsersCommand::List => {
            for (user, memberships) in accounts.users(&Principal::Operator).await? {
                let roles = memberships
                    .iter()
                    .map(|m| format!("{}:{}", m.owner_id, m.role))
                    .collect::<Vec<_>>()
                    .join(",");
                println!(
                    "{}\t{}\t{}\t{}\t{}",
                    user.email,
                    user.user_id,
                    if user.operator { "operator" } else { "-" },
                    user.disabled_at
                        .map_or("enabled".to_owned(), |t| format!("disabled {}", rfc3339(t))),
                    if roles.is_empty() { "-" } else { &roles },
                );
            }
        }
        UsersCommand::Grant {
            member: MemberArgs { email, owner, role },
            trust_invited_account,
        } => {
            let user = accounts.user(&email).await?;
            accounts
                .grant(&user, &owner, role, trust_invited_account)
                .await?;
            println!("{} is {role} of {owner}", user.email);
        }
        UsersCommand::ResetPassword { email } => {
            let user = accounts.user(&email).await?;
            let password = read_password()?;
            accounts.reset_password(&user, &password).await?;
            println!(
                "password of {} set; every session of theirs ended",
                user.email
            );
        }
        UsersCommand::Invite {
            member: MemberArgs { email, owner, role },
            dashboard_url,
        } => {
            let new = accounts.invite(&owner, role, &email, "cli").await?;
            let base = dashboard_url.as_deref().unwrap_or("").trim_end_matches('/');
            println!(
                "invitation for {} to {owner} as {role}, once, for 7 days:",
                new.invitation.email
            );
            println!("{base}/invite/{}", new.token);
        }
        UsersCommand::Disable { email } => {
            let user = accounts.user(&email).await?;
            if !accounts.disable(&user).await? {
                return Err(AccountError::Internal(format!(
                    "{} is disabled already",
                    user.email
                )));
            }
            println!("disabled {}; every session of theirs ended", user.email);
        }
    }
    Ok(())
}

/// `HOP_USER_PASSWORD`, or one line of standard input.
fn read_password() -> Result<String, AccountError> {
    if let Ok(p) = std::env::var("HOP_USER_PASSWORD") {
        return Ok(p);
    }
    let mut line = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut line)
        .map_err(|e| AccountError::Internal(format!("reading the password: {e}")))?;
    Ok(line.trim_end_matches(['\r', '\n']).to_owned())
}

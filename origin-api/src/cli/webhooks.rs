//! `hop-origin webhooks …`: endpoints from the operator's shell, by the API's own rules
//! (the operator acts as an admin key would, for the owner named).

use crate::auth::Caller;
use crate::config::WebhooksCommand;
use crate::error::AppError;
use crate::views::webhooks::{CreateWebhook, Redeliver, Scope, UpdateWebhook, WebhookView};
use crate::webhooks::Webhooks;

/// The operator, acting for `owner`.
fn operator(owner: Option<&str>) -> Caller {
    Caller {
        owner_id: owner.unwrap_or("operator").to_owned(),
        key_id: "cli".to_owned(),
        admin: true,
        domains: None,
    }
}

fn print(e: &WebhookView) {
    println!(
        "{}\t{}\t{}\t{}\t{}{}",
        e.id,
        e.owner.as_deref().unwrap_or("(all owners)"),
        e.state,
        e.url,
        e.events.join(","),
        e.disabled_reason
            .as_deref()
            .map(|r| format!("\t{r}"))
            .unwrap_or_default()
    );
}

fn listed(events: Vec<String>) -> Option<Vec<String>> {
    (!events.is_empty()).then_some(events)
}

/// Runs one `webhooks` command against the database.
pub async fn run(webhooks: &Webhooks, command: WebhooksCommand) -> Result<(), AppError> {
    let caller = operator(None);
    match command {
        WebhooksCommand::Add {
            url,
            owner,
            all,
            events,
            description,
        } => {
            let req = CreateWebhook {
                url,
                events: listed(events),
                description,
                scope: Some(if all { Scope::All } else { Scope::Owner }),
            };
            let made = webhooks.create(&operator(owner.as_deref()), req).await?;
            print(&made);
            println!("secret (shown once):");
            println!("{}", made.secret.unwrap_or_default());
        }
        WebhooksCommand::List { owner } => {
            let mut cursor: Option<String> = None;
            loop {
                let page = webhooks
                    .list(&caller, cursor.as_deref(), Some(1000))
                    .await?;
                for e in page
                    .items
                    .iter()
                    .filter(|e| owner.is_none() || e.owner == owner)
                {
                    print(e);
                }
                match page.next_cursor {
                    Some(c) => cursor = Some(c),
                    None => break,
                }
            }
        }
        WebhooksCommand::Set {
            id,
            url,
            events,
            description,
            enable,
            disable,
        } => {
            let req = UpdateWebhook {
                url,
                events: listed(events),
                description,
                enabled: (enable || disable).then_some(enable),
            };
            print(&webhooks.update(&caller, &id, req).await?);
        }
        WebhooksCommand::Remove { id } => {
            webhooks.delete(&caller, &id).await?;
            println!("removed {id}");
        }
        WebhooksCommand::Rotate { id } => {
            let e = webhooks.rotate(&caller, &id).await?;
            println!(
                "new secret (shown once; the old one signs too until {}):",
                e.previous_secret_until.as_deref().unwrap_or("now")
            );
            println!("{}", e.secret.unwrap_or_default());
        }
        WebhooksCommand::Redeliver { id, since } => {
            let e = webhooks
                .redeliver(
                    &caller,
                    &id,
                    Redeliver {
                        since: since.clone(),
                    },
                )
                .await?;
            println!("{}: sending {since} and every later event again", e.id);
        }
        WebhooksCommand::Attempts { id, limit } => {
            let page = webhooks.attempts(&caller, &id, None, Some(limit)).await?;
            for a in page.items {
                println!(
                    "{}\t{}\t{}\t{}\t{}\t{} ms{}",
                    a.attempted_at,
                    a.event_id,
                    a.event_type,
                    a.result,
                    a.status.map_or("-".to_owned(), |s| s.to_string()),
                    a.duration_ms,
                    a.error.map(|e| format!("\t{e}")).unwrap_or_default()
                );
            }
        }
    }
    Ok(())
}

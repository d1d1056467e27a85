//! `hop-origin keys …`: API keys from the operator's shell, through the keys service.

use crate::api_keys::{ApiKeys, Grant, KeysError};
use crate::config::KeysCommand;
use crate::principal::Principal;

/// Runs one `keys` command as the operator.
pub async fn run(keys: &ApiKeys, command: KeysCommand) -> Result<(), KeysError> {
    let operator = Principal::Operator;
    match command {
        KeysCommand::Create {
            owner,
            name,
            admin,
            domains,
        } => {
            let grant = Grant { admin, domains };
            let made = keys.issue(&operator, &owner, &name, &grant).await?;
            let key = &made.key;
            println!("key id: {}", key.key_id);
            println!(
                "owner: {}{}",
                key.owner_id,
                if admin { " (admin)" } else { "" }
            );
            if let Some(domains) = key.domains() {
                println!("domains: {}", domains.join(", "));
            }
            println!("secret (shown once):");
            println!("{}", made.token);
        }
        KeysCommand::Revoke { key_id } => {
            if !keys.revoke(&operator, &key_id).await?.was_live {
                return Err(KeysError::NoLiveKey(key_id));
            }
            println!("revoked {key_id}");
        }
    }
    Ok(())
}

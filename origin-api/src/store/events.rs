//! Webhook events written with the changes they tell of (docs/webhooks.md, D-253): the
//! one thing of webhooks the links', bans' and domains' writes call, kept apart from
//! the endpoints and sweeps so that those may read bans and links without a cycle.

use super::contract::StoreError;
use super::sql::{insert_rows, Arg, Conn};
use crate::model::event::NewEvent;

const WANTED: &str = include_str!("queries/webhooks_wanted.sql");

/// Writes `events` in the transaction of the change they tell of, in order, if any
/// endpoint is active (none asked for them otherwise: nothing is kept).
pub(super) async fn record(c: &mut Conn<'_>, events: &[NewEvent]) -> Result<(), StoreError> {
    if events.is_empty() {
        return Ok(());
    }
    let wanted: Option<(String,)> = c.fetch_optional(WANTED, &[]).await?;
    if wanted.is_none() {
        return Ok(());
    }
    let args: Vec<Arg<'_>> = events
        .iter()
        .flat_map(|e| {
            [
                e.kind.as_str().into(),
                e.owner_id.as_deref().into(),
                e.domain.as_str().into(),
                e.code.as_deref().into(),
                e.version.into(),
                e.data.as_str().into(),
                e.at.into(),
            ]
        })
        .collect();
    // Built at run time: one VALUES tuple per event.
    insert_rows(
        c,
        "INSERT INTO webhook_events (type, owner_id, domain, code, version, data, created_at)",
        "",
        7,
        &args,
    )
    .await?;
    Ok(())
}

//! Webhook events: what happened, as a receiver is told it (docs/webhooks.md).
//!
//! An event's `data` is written with the change it tells of, so it says what the link
//! was at that version, whenever it is delivered. The full short URL is added at
//! delivery (it is the operator's configuration, not the link's).

use super::history::Action;
use super::link::{Link, LinkState};
use super::time::rfc3339;
use serde::Serialize;

/// The kinds of event an endpoint may ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum EventType {
    LinkCreated,
    LinkUpdated,
    LinkDeleted,
    LinkBanned,
    LinkUnbanned,
    LinkExpired,
    LinkExhausted,
    DomainUpdated,
    ClicksRolledUp,
}

impl EventType {
    /// Every kind, in the order the docs list them.
    pub const ALL: [EventType; 9] = [
        EventType::LinkCreated,
        EventType::LinkUpdated,
        EventType::LinkDeleted,
        EventType::LinkBanned,
        EventType::LinkUnbanned,
        EventType::LinkExpired,
        EventType::LinkExhausted,
        EventType::DomainUpdated,
        EventType::ClicksRolledUp,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            EventType::LinkCreated => "link.created",
            EventType::LinkUpdated => "link.updated",
            EventType::LinkDeleted => "link.deleted",
            EventType::LinkBanned => "link.banned",
            EventType::LinkUnbanned => "link.unbanned",
            EventType::LinkExpired => "link.expired",
            EventType::LinkExhausted => "link.exhausted",
            EventType::DomainUpdated => "domain.updated",
            EventType::ClicksRolledUp => "clicks.rolled_up",
        }
    }

    pub fn parse(s: &str) -> Option<EventType> {
        EventType::ALL.into_iter().find(|t| t.as_str() == s)
    }

    /// The event a write of the link as `link` by `action` tells.
    pub fn of_action(action: Action, link: &Link) -> EventType {
        match action {
            Action::Created | Action::Imported => EventType::LinkCreated,
            Action::Banned => EventType::LinkBanned,
            Action::Unbanned => EventType::LinkUnbanned,
            Action::Expired => EventType::LinkExpired,
            Action::Exhausted => EventType::LinkExhausted,
            Action::Edited | Action::Deleted | Action::Restored | Action::Reverted => {
                EventType::of_edit(link)
            }
        }
    }

    /// A link's change other than a ban's: deleted when the change left it a tombstone.
    pub fn of_edit(link: &Link) -> EventType {
        if link.status == LinkState::Deleted {
            EventType::LinkDeleted
        } else {
            EventType::LinkUpdated
        }
    }
}

/// A link as an event tells of it: what a receiver keeps in step with, never its
/// secrets (a password or a private link's key is only said to exist).
#[derive(Debug, Clone, Serialize)]
pub struct LinkData<'a> {
    pub domain: &'a str,
    pub code: &'a str,
    pub version: u64,
    pub owner: &'a str,
    pub target_url: &'a str,
    pub status: &'static str,
    /// Whether an active ban covers it (its code, or a host a visit could reach).
    pub banned: bool,
    pub exhausted: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<&'a str>,
    pub tags: &'a [String],
    /// The team's note: receivers are the owner's own systems.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_visits: Option<u64>,
    /// `password` or `token` when visitors need one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub access: Option<&'static str>,
    pub created_at: String,
    pub updated_at: String,
}

impl<'a> LinkData<'a> {
    pub fn of(link: &'a Link, banned: bool) -> LinkData<'a> {
        LinkData {
            domain: &link.domain,
            code: &link.code,
            version: link.version,
            owner: &link.owner_id,
            target_url: &link.target_url,
            status: link.status.as_str(),
            banned,
            exhausted: link.options.exhausted,
            title: link.title.as_deref(),
            tags: &link.tags,
            note: link.options.note.as_deref(),
            expires_at: link.expires_at.map(rfc3339),
            max_visits: link.options.max_visits,
            access: link.options.access.as_ref().map(|a| match a {
                shared::access::Access::Password { .. } => "password",
                _ => "token",
            }),
            created_at: rfc3339(link.created_at),
            updated_at: rfc3339(link.updated_at),
        }
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// One link's visits in one closed hour (`clicks.rolled_up`): counts only, never who.
#[derive(Debug, Clone, Serialize)]
pub struct ClicksData<'a> {
    pub domain: &'a str,
    pub code: &'a str,
    pub version: u64,
    pub owner: &'a str,
    /// The hour's start (UTC).
    pub hour: String,
    /// People's visits.
    pub visits: i64,
    pub bot_visits: i64,
}

/// An event to write with the change it tells of.
#[derive(Debug, Clone)]
pub struct NewEvent {
    pub kind: EventType,
    /// The link's owner; `None` for a domain's event.
    pub owner_id: Option<String>,
    pub domain: String,
    pub code: Option<String>,
    pub version: i64,
    /// The JSON of the event's `data`, `short_url` to be added.
    pub data: String,
    pub at: i64,
}

impl NewEvent {
    /// `kind` of `link` as written (`banned`: whether a ban covers it then).
    pub fn of_link(kind: EventType, link: &Link, banned: bool, at: i64) -> NewEvent {
        NewEvent {
            kind,
            owner_id: Some(link.owner_id.clone()),
            domain: link.domain.clone(),
            code: Some(link.code.clone()),
            version: i64::try_from(link.version).unwrap_or(i64::MAX),
            data: LinkData::of(link, banned).to_json(),
            at,
        }
    }
}

impl NewEvent {
    /// `domain.updated` of `d` as written: its settings as the edge gets them, and the
    /// hosts its links may point at (never its owners).
    pub fn of_domain(d: &super::domain::Domain, at: i64) -> NewEvent {
        let data = serde_json::json!({
            "domain": d.domain,
            "version": d.version,
            "settings": d.settings,
            "allowed_target_hosts": d.allowed_target_hosts,
            "updated_at": rfc3339(d.updated_at),
        });
        NewEvent {
            kind: EventType::DomainUpdated,
            owner_id: None,
            domain: d.domain.clone(),
            code: None,
            version: i64::try_from(d.version).unwrap_or(i64::MAX),
            data: data.to_string(),
            at,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_type_reads_back_as_itself() {
        for t in EventType::ALL {
            assert_eq!(EventType::parse(t.as_str()), Some(t));
        }
        assert_eq!(EventType::parse("link.created "), None);
        assert_eq!(EventType::parse("*"), None);
    }
}

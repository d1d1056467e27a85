//! A link's history (docs/history.md): every change of a link, written in the
//! transaction of the change, with its version, time, who made it and the link's fields
//! as they became. What changed is the difference between an entry's fields and the
//! entry's before it, worked out when the history is read.
//!
//! Secrets are never kept here: a password's hash or a private link's key is recorded
//! as the kind of access and a short fingerprint, enough to say that it changed and
//! never enough to bring it back (a reverted link keeps today's secret, D-260).

use super::link::{Link, LinkOptions, LinkState};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// Who made a change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Actor<'a> {
    /// An API key, by its id.
    Key(&'a str),
    /// A dashboard user, by their id.
    User(&'a str),
    /// A threat feed's refresh or the re-check, by the feed's name.
    Feed(&'a str),
    /// Hop itself: an expiry, a link used up, a sweep.
    System,
}

impl Actor<'_> {
    /// As stored and shown: `key:ID`, `user:ID` or `system`.
    pub fn to_column(self) -> String {
        match self {
            Actor::Key(id) => format!("key:{id}"),
            Actor::User(id) => format!("user:{id}"),
            Actor::Feed(name) => format!("feed:{name}"),
            Actor::System => "system".to_owned(),
        }
    }
}

/// What a change did to a link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Created,
    Imported,
    Edited,
    Deleted,
    Restored,
    Reverted,
    Banned,
    Unbanned,
    Expired,
    Exhausted,
}

impl Action {
    pub const ALL: [Action; 10] = [
        Action::Created,
        Action::Imported,
        Action::Edited,
        Action::Deleted,
        Action::Restored,
        Action::Reverted,
        Action::Banned,
        Action::Unbanned,
        Action::Expired,
        Action::Exhausted,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Action::Created => "created",
            Action::Imported => "imported",
            Action::Edited => "edited",
            Action::Deleted => "deleted",
            Action::Restored => "restored",
            Action::Reverted => "reverted",
            Action::Banned => "banned",
            Action::Unbanned => "unbanned",
            Action::Expired => "expired",
            Action::Exhausted => "exhausted",
        }
    }

    pub fn parse(s: &str) -> Option<Action> {
        Action::ALL.into_iter().find(|a| a.as_str() == s)
    }

    /// A new link's: `imported` when an import made it.
    pub fn of_insert(link: &Link) -> Action {
        if link.options.imported.is_some() {
            Action::Imported
        } else {
            Action::Created
        }
    }
}

/// A change as the store records it: what it did, who did it, and a note (a ban's
/// reason, the version a revert went back to).
#[derive(Debug, Clone)]
pub struct Change<'a> {
    pub action: Action,
    pub actor: Actor<'a>,
    pub note: Option<String>,
}

impl<'a> Change<'a> {
    pub fn new(action: Action, actor: Actor<'a>) -> Change<'a> {
        Change {
            action,
            actor,
            note: None,
        }
    }

    pub fn with_note(mut self, note: impl Into<String>) -> Change<'a> {
        self.note = Some(note.into());
        self
    }
}

/// The fields of a link at one version, as its history keeps them: everything an owner
/// sets, no secret.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Snapshot {
    pub target_url: String,
    pub status: String,
    pub redirect: u16,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<i64>,
    #[serde(default)]
    pub forward_query: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default)]
    pub tags: Vec<String>,
    /// The options without their secret and without the import's record.
    #[serde(default)]
    pub options: LinkOptions,
    /// `password` or `signed` (the API's names) when visitors needed one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access: Option<String>,
    /// The first 16 hex digits of SHA-256 over the access's secret: it tells that a
    /// secret changed, and is never shown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
}

impl Snapshot {
    pub fn of(link: &Link) -> Snapshot {
        let mut options = link.options.clone();
        let access = options.access.take();
        options.imported = None;
        Snapshot {
            target_url: link.target_url.clone(),
            status: link.status.as_str().to_owned(),
            redirect: link.redirect.code(),
            expires_at: link.expires_at,
            forward_query: link.forward_query,
            title: link.title.clone(),
            tags: link.tags.clone(),
            options,
            access: access.as_ref().map(|a| access_mode(a).to_owned()),
            secret: access.as_ref().map(fingerprint),
        }
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// `link` with this version's fields, its access as it is now (a secret is not kept:
    /// the caller decides whether the two agree, [`Snapshot::same_access`]).
    pub fn applied_to(&self, link: &Link) -> Option<Link> {
        let mut next = link.clone();
        next.target_url = self.target_url.clone();
        next.status = LinkState::parse(&self.status)?;
        next.redirect = shared::RedirectStatus::try_from(self.redirect).ok()?;
        next.expires_at = self.expires_at;
        next.forward_query = self.forward_query;
        next.title = self.title.clone();
        next.tags = self.tags.clone();
        let mut options = self.options.clone();
        options.access = if self.access.is_some() {
            link.options.access.clone()
        } else {
            None
        };
        options.imported = link.options.imported.clone();
        next.options = options;
        Some(next)
    }

    /// Whether `link`'s access is this version's: the same kind and the same secret.
    pub fn same_access(&self, link: &Link) -> bool {
        let now = Snapshot::of(link);
        now.access == self.access && now.secret == self.secret
    }
}

fn access_mode(a: &shared::access::Access) -> &'static str {
    match a {
        shared::access::Access::Password { .. } => "password",
        shared::access::Access::Signed { .. } => "signed",
    }
}

fn fingerprint(a: &shared::access::Access) -> String {
    let material = match a {
        shared::access::Access::Signed { key } => format!("signed\n{key}"),
        shared::access::Access::Password {
            salt, hash, key, ..
        } => format!("password\n{salt}\n{hash}\n{key}"),
    };
    let digest = Sha256::digest(material.as_bytes());
    digest[..8].iter().map(|b| format!("{b:02x}")).collect()
}

/// An entry to write with the change it records.
#[derive(Debug, Clone)]
pub struct NewEntry {
    pub link_id: i64,
    pub version: i64,
    pub action: Action,
    pub actor: String,
    pub at: i64,
    pub state: String,
    pub note: Option<String>,
}

impl NewEntry {
    /// `change` to `link` (as written), at `at`.
    pub fn of(link: &Link, change: &Change<'_>, at: i64) -> NewEntry {
        NewEntry {
            link_id: i64::try_from(link.link_id).unwrap_or(i64::MAX),
            version: i64::try_from(link.version).unwrap_or(i64::MAX),
            action: change.action,
            actor: change.actor.to_column(),
            at,
            state: Snapshot::of(link).to_json(),
            note: change.note.clone(),
        }
    }
}

/// An entry as read back.
#[derive(Debug, Clone)]
pub struct Entry {
    pub entry_id: i64,
    pub version: u64,
    pub action: Action,
    pub actor: String,
    pub at: i64,
    pub state: Snapshot,
    pub note: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use shared::access::Access;

    fn link() -> Link {
        Link {
            link_id: 1,
            domain: "s.example".into(),
            code: "abc".into(),
            target_url: "https://example.com/a".into(),
            owner_id: "o".into(),
            status: LinkState::Active,
            redirect: shared::RedirectStatus::Found,
            expires_at: None,
            version: 2,
            key_version: None,
            code_kind: shared::CodeKind::Custom,
            code_number: None,
            forward_query: true,
            title: Some("old".into()),
            tags: vec!["a".into()],
            created_at: 0,
            updated_at: 0,
            published: None,
            options: LinkOptions::default(),
        }
    }

    #[test]
    fn a_snapshot_holds_no_secret_and_tells_when_one_changed() {
        let mut l = link();
        l.options.access = Some(Access::Signed {
            key: "00112233445566778899aabbccddeeff".into(),
        });
        let before = Snapshot::of(&l);
        let json = before.to_json();
        assert!(!json.contains("00112233445566778899aabbccddeeff"), "{json}");
        assert_eq!(before.access.as_deref(), Some("signed"));
        l.options.access = Some(Access::Signed {
            key: "ffeeddccbbaa99887766554433221100".into(),
        });
        let after = Snapshot::of(&l);
        assert_eq!(after.access, before.access);
        assert_ne!(after.secret, before.secret);
        assert!(!before.same_access(&l));
        assert!(after.same_access(&l));
    }

    #[test]
    fn a_snapshot_applied_brings_back_the_fields_and_keeps_todays_secret_and_import() {
        let old = link();
        let snap = Snapshot::of(&old);
        let mut now = link();
        now.target_url = "https://example.org/b".into();
        now.title = Some("new".into());
        now.options.imported = Some(crate::model::link::Imported {
            from: "bitly".into(),
            clicks: Some(3),
            created_at: None,
        });
        let back = snap.applied_to(&now).expect("a valid snapshot");
        assert_eq!(back.target_url, old.target_url);
        assert_eq!(back.title, old.title);
        assert_eq!(back.options.imported, now.options.imported);
        assert_eq!(Snapshot::of(&back), snap);
    }
}

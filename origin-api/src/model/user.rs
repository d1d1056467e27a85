//! A person who signs in to the dashboard, and what they may do for which owner.

use std::fmt;

/// A role in an owner: what a member may do there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Role {
    /// Reading links and their statistics.
    Viewer,
    /// Creating and changing links, besides.
    Editor,
    /// Everything of the owner: links, members and API keys.
    Admin,
}

impl Role {
    pub const ALL: [Role; 3] = [Role::Admin, Role::Editor, Role::Viewer];

    pub fn as_str(self) -> &'static str {
        match self {
            Role::Viewer => "viewer",
            Role::Editor => "editor",
            Role::Admin => "admin",
        }
    }

    pub fn parse(s: &str) -> Option<Role> {
        Role::ALL.into_iter().find(|r| r.as_str() == s)
    }

    /// Whether this role may do what `needed` may.
    pub fn allows(self, needed: Role) -> bool {
        self >= needed
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A stored user. The password is only ever held as its argon2id hash.
#[derive(Clone, PartialEq, Eq)]
pub struct User {
    pub user_id: String,
    /// Lowercased.
    pub email: String,
    /// An argon2id PHC string.
    pub password_hash: String,
    /// An instance administrator: every owner, bans and domains.
    pub operator: bool,
    pub created_at: i64,
    pub disabled_at: Option<i64>,
    /// Moves on whenever every session of the user must end; a session begun under
    /// another opens nothing.
    pub session_epoch: i64,
}

impl fmt::Debug for User {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("User")
            .field("user_id", &self.user_id)
            .field("email", &self.email)
            .field("operator", &self.operator)
            .field("disabled_at", &self.disabled_at)
            .finish_non_exhaustive()
    }
}

/// The sign-in attempts booked against one email lately.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoginAttempts {
    /// Attempts since the last success (each booked before its password was verified).
    pub failures: i64,
    /// No attempt is booked before this (Unix ms).
    pub locked_until: Option<i64>,
    pub last_at: i64,
}

/// An invitation to join an owner with a role, as stored (only its token's hash).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invitation {
    pub token_hash: String,
    pub owner_id: String,
    pub role: Role,
    /// Whom it was made for (lowercased): the account it makes or joins.
    pub email: String,
    /// The user id of the admin who made it, or `cli`.
    pub created_by: String,
    pub created_at: i64,
    pub expires_at: i64,
    pub used_at: Option<i64>,
}

/// A user's role in one owner.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Membership {
    pub owner_id: String,
    pub role: Role,
}

/// A signed-in browser as stored: the SHA-256 of its cookie's secret, whose it is, its
/// form token and its times (Unix ms).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Session {
    pub session_hash: String,
    pub user_id: String,
    pub csrf_token: String,
    /// The user's `session_epoch` when the session began.
    pub epoch: i64,
    pub created_at: i64,
    pub last_seen_at: i64,
    pub expires_at: i64,
}

#[cfg(test)]
mod tests {
    use super::Role;

    #[test]
    fn an_admin_may_do_what_an_editor_may_and_a_viewer_only_read() {
        assert!(Role::Admin.allows(Role::Editor));
        assert!(Role::Editor.allows(Role::Viewer));
        assert!(!Role::Viewer.allows(Role::Editor));
        assert!(!Role::Editor.allows(Role::Admin));
        for r in Role::ALL {
            assert_eq!(Role::parse(r.as_str()), Some(r));
        }
        assert_eq!(Role::parse("owner"), None);
    }
}

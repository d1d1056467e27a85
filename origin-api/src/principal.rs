//! Who acts: the one value every door (the API, the dashboard, the command line, the
//! background tasks) turns its credentials into, and that a service method reading or
//! changing an owner's data takes. The service decides with it; no door holds a policy
//! of its own (D-281).

use crate::error::AppError;
use crate::model::history::Actor;
use crate::model::Role;

/// Who acts, and for which owner.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Principal {
    /// An API key (`Authorization: Bearer hop_…`). It acts for its owner with every right
    /// the API offers there (an editor's, if it is limited to some domains: it manages
    /// links, not the owner); an admin key reaches every owner and the operator's
    /// endpoints.
    Key {
        key_id: String,
        owner: String,
        admin: bool,
        /// The domains the key is limited to, if it is.
        domains: Option<Vec<String>>,
    },
    /// A signed-in dashboard user acting in one owner (`None` on the operators' pages):
    /// their role there, if they are a member. An operator is an admin of every owner.
    User {
        user_id: String,
        owner: Option<String>,
        role: Option<Role>,
        operator: bool,
    },
    /// The operator at the command line (`hop-origin …`): whoever runs it holds the
    /// database's credentials already, so it may do anything.
    Operator,
    /// Hop itself: a feed's refresh (by the feed's name) or a sweep.
    System { feed: Option<String> },
}

impl Principal {
    /// The owner it acts for: `None` for the operator and Hop itself, which act for all.
    pub fn owner(&self) -> Option<&str> {
        match self {
            Principal::Key { owner, .. } => Some(owner),
            Principal::User { owner, .. } => owner.as_deref(),
            Principal::Operator | Principal::System { .. } => None,
        }
    }

    /// Its role in `owner`: a key is an admin of its own owner (an editor, if it is
    /// limited to some domains), an admin key, an operator and Hop itself are admins of
    /// every owner; `None` when it is no member (the owner's data is not found for it).
    pub fn role_in(&self, owner: &str) -> Option<Role> {
        match self {
            // A key limited to some domains manages links there, not the owner.
            Principal::Key {
                owner: own,
                admin,
                domains,
                ..
            } => (*admin || own == owner).then_some(if domains.is_some() {
                Role::Editor
            } else {
                Role::Admin
            }),
            Principal::User {
                owner: own,
                role,
                operator,
                ..
            } => {
                if *operator {
                    Some(Role::Admin)
                } else if own.as_deref() == Some(owner) {
                    *role
                } else {
                    None
                }
            }
            Principal::Operator | Principal::System { .. } => Some(Role::Admin),
        }
    }

    /// Refuses what `needed` may not do in `owner`: not found for a stranger (nothing
    /// of the owner is shown to them, not even that it exists), 403 saying `why` to a
    /// member whose role is short of it.
    pub fn require(&self, owner: &str, needed: Role, why: &'static str) -> Result<(), AppError> {
        match self.role_in(owner) {
            None => Err(AppError::NotFound),
            Some(role) if role.allows(needed) => Ok(()),
            Some(_) => Err(AppError::Forbidden(why)),
        }
    }

    /// Whether it speaks for the whole instance: an admin key, an operator (signed in
    /// or at the command line), Hop itself.
    pub fn is_operator(&self) -> bool {
        match self {
            Principal::Key { admin, .. } => *admin,
            Principal::User { operator, .. } => *operator,
            Principal::Operator | Principal::System { .. } => true,
        }
    }

    /// Refuses anyone who does not speak for the whole instance: a key is told `why`
    /// (403: its holder reads the API's reference, where the operator's endpoints are);
    /// to a signed-in user the operator's pages are not there (404).
    pub fn require_operator(&self, why: &'static str) -> Result<(), AppError> {
        match self {
            _ if self.is_operator() => Ok(()),
            Principal::User { .. } => Err(AppError::NotFound),
            _ => Err(AppError::Forbidden(why)),
        }
    }

    /// Whether it may reach links on `domain` (normalized): every domain, unless it is a
    /// key limited to some.
    pub fn reaches(&self, domain: &str) -> bool {
        match self {
            Principal::Key {
                domains: Some(limited),
                ..
            } => limited.iter().any(|d| d == domain),
            _ => true,
        }
    }

    /// As a link's history records it.
    pub fn actor(&self) -> Actor<'_> {
        match self {
            Principal::Key { key_id, .. } => Actor::Key(key_id),
            Principal::User { user_id, .. } => Actor::User(user_id),
            Principal::System { feed: Some(feed) } => Actor::Feed(feed),
            Principal::Operator | Principal::System { feed: None } => Actor::System,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(owner: &str, admin: bool) -> Principal {
        Principal::Key {
            key_id: "k".into(),
            owner: owner.into(),
            admin,
            domains: None,
        }
    }

    fn user(owner: &str, role: Option<Role>, operator: bool) -> Principal {
        Principal::User {
            user_id: "u".into(),
            owner: Some(owner.into()),
            role,
            operator,
        }
    }

    #[test]
    fn a_key_is_an_admin_of_its_own_owner_only_unless_it_is_an_admin_key() {
        assert_eq!(key("acme", false).role_in("acme"), Some(Role::Admin));
        assert_eq!(key("acme", false).role_in("globex"), None);
        assert_eq!(key("acme", true).role_in("globex"), Some(Role::Admin));
        let limited = Principal::Key {
            key_id: "k".into(),
            owner: "acme".into(),
            admin: false,
            domains: Some(vec!["s.example".into()]),
        };
        assert_eq!(limited.role_in("acme"), Some(Role::Editor));
    }

    #[test]
    fn a_user_has_their_role_in_the_owner_they_act_in_and_nowhere_else() {
        let editor = user("acme", Some(Role::Editor), false);
        assert_eq!(editor.role_in("acme"), Some(Role::Editor));
        assert_eq!(editor.role_in("globex"), None);
        assert!(editor.require("acme", Role::Editor, "x").is_ok());
        assert!(matches!(
            editor.require("acme", Role::Admin, "admins only"),
            Err(AppError::Forbidden("admins only"))
        ));
        assert!(matches!(
            editor.require("globex", Role::Viewer, "x"),
            Err(AppError::NotFound)
        ));
        assert_eq!(
            user("acme", None, true).role_in("globex"),
            Some(Role::Admin)
        );
    }

    #[test]
    fn only_admin_keys_operators_and_hop_itself_speak_for_the_instance() {
        assert!(!key("acme", false).is_operator());
        assert!(!user("acme", Some(Role::Admin), false).is_operator());
        assert!(key("acme", true).is_operator());
        assert!(user("acme", None, true).is_operator());
        assert!(Principal::Operator.is_operator());
        assert!(Principal::System { feed: None }.is_operator());
        assert!(matches!(
            key("acme", false).require_operator("use an admin key"),
            Err(AppError::Forbidden("use an admin key"))
        ));
        assert!(matches!(
            user("acme", Some(Role::Admin), false).require_operator("x"),
            Err(AppError::NotFound)
        ));
    }

    #[test]
    fn history_names_the_key_the_user_the_feed_or_hop() {
        assert_eq!(key("acme", false).actor().to_column(), "key:k");
        assert_eq!(user("acme", None, false).actor().to_column(), "user:u");
        let feed = Principal::System {
            feed: Some("urlhaus".into()),
        };
        assert_eq!(feed.actor().to_column(), "feed:urlhaus");
        assert_eq!(Principal::Operator.actor().to_column(), "system");
    }
}

//! A domain in the registry: who may create links on it, whether it serves, and how it
//! answers what is not a link.

use super::history::Actor;
pub use shared::DomainStatus;
use shared::{DomainConfig, DomainSettings};

/// Who may create links on a domain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DomainAccess {
    /// Any API key.
    Shared,
    /// The keys of these owners (sorted, without repeats) and admin keys.
    Owners(Vec<String>),
}

impl DomainAccess {
    /// Owned by `owners`, sorted and without repeats.
    pub fn owners<I: IntoIterator<Item = String>>(owners: I) -> DomainAccess {
        let mut owners: Vec<String> = owners.into_iter().collect();
        owners.sort();
        owners.dedup();
        DomainAccess::Owners(owners)
    }

    /// Whether keys of `owner` may create links on the domain.
    pub fn admits(&self, owner: &str) -> bool {
        match self {
            DomainAccess::Shared => true,
            DomainAccess::Owners(owners) => {
                owners.binary_search_by(|o| o.as_str().cmp(owner)).is_ok()
            }
        }
    }
}

/// Who creates a link, as the registry's rules see them.
#[derive(Debug, Clone, Copy)]
pub struct Creator<'a> {
    pub owner: &'a str,
    /// Admin keys may use every registered domain.
    pub admin: bool,
    /// The domains the key is limited to, if it is (`keys create --domain`).
    pub domains: Option<&'a [String]>,
    /// Who acts: the key or the dashboard's user, as the link's history records it.
    pub actor: Actor<'a>,
}

impl<'a> Creator<'a> {
    /// Whether the key may reach links on `domain` (normalized): every domain, unless it
    /// is limited to some.
    pub fn reaches(&self, domain: &str) -> bool {
        self.domains
            .is_none_or(|limited| limited.iter().any(|d| d == domain))
    }

    /// A key of `owner` with no admin rights and no limit of its own.
    pub fn owner(owner: &'a str) -> Creator<'a> {
        Creator {
            owner,
            admin: false,
            domains: None,
            actor: Actor::System,
        }
    }
}

/// Why a creator may not create a link on a registered domain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The domain takes no new links.
    Disabled,
    /// The domain is owned, and not by the creator's owner.
    NotTheOwners,
    /// The key is limited to other domains.
    OutsideTheKeysDomains,
}

/// A registered domain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Domain {
    /// The normalized host name.
    pub domain: String,
    pub access: DomainAccess,
    /// What visitors get: code shape, redirect defaults, status and the domain's own
    /// pages, as the edge is told of them (`cfg:{domain}`).
    pub settings: DomainSettings,
    /// The hosts (each with its subdomains) links on it may point at; `None`: any.
    pub allowed_target_hosts: Option<Vec<String>>,
    /// Moves on with every change of the row.
    pub version: u64,
    pub created_at: i64,
    pub updated_at: i64,
}

impl Domain {
    /// Why `creator` may not create a link here; `None`: it may. An admin key passes
    /// the owners, never a disabled domain or the key's own limit.
    pub fn refuses(&self, creator: &Creator<'_>) -> Option<Refusal> {
        if self.settings.status == DomainStatus::Disabled {
            return Some(Refusal::Disabled);
        }
        if !creator.reaches(&self.domain) {
            return Some(Refusal::OutsideTheKeysDomains);
        }
        if !creator.admin && !self.access.admits(creator.owner) {
            return Some(Refusal::NotTheOwners);
        }
        None
    }

    /// What the edge holds of it under `cfg:{domain}`.
    pub fn config(&self) -> DomainConfig {
        DomainConfig {
            v: self.version,
            settings: self.settings.clone(),
        }
    }

    /// A domain with the defaults every domain had before the registry, version 1.
    pub fn new(domain: &str, access: DomainAccess, now: i64) -> Domain {
        Domain {
            domain: domain.to_owned(),
            access,
            settings: DomainSettings::default(),
            allowed_target_hosts: None,
            version: 1,
            created_at: now,
            updated_at: now,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owners_are_sorted_once_and_admitted_by_exact_name() {
        let access = DomainAccess::owners(["zeta".into(), "acme".into(), "zeta".into()]);
        assert_eq!(
            access,
            DomainAccess::Owners(vec!["acme".into(), "zeta".into()])
        );
        assert!(access.admits("acme") && access.admits("zeta"));
        assert!(!access.admits("Acme") && !access.admits("acm") && !access.admits(""));
        assert!(DomainAccess::Shared.admits("anyone"));
    }

    #[test]
    fn who_may_create_on_a_domain() {
        let mut d = Domain::new("go.acme.example", DomainAccess::owners(["acme".into()]), 0);
        let acme = Creator::owner("acme");
        let other = Creator::owner("zeta");
        let admin = Creator {
            admin: true,
            ..other
        };
        let brand = ["go.acme.example".to_owned()];
        let elsewhere = ["b.example".to_owned()];
        assert_eq!(d.refuses(&acme), None);
        assert_eq!(d.refuses(&other), Some(Refusal::NotTheOwners));
        assert_eq!(d.refuses(&admin), None);
        let scoped = |domains| Creator {
            domains: Some(domains),
            ..acme
        };
        assert_eq!(d.refuses(&scoped(&brand)), None);
        assert_eq!(
            d.refuses(&scoped(&elsewhere)),
            Some(Refusal::OutsideTheKeysDomains)
        );
        let scoped_admin = Creator {
            domains: Some(&elsewhere),
            ..admin
        };
        assert_eq!(
            d.refuses(&scoped_admin),
            Some(Refusal::OutsideTheKeysDomains)
        );
        d.settings.status = DomainStatus::Disabled;
        for c in [acme, admin] {
            assert_eq!(d.refuses(&c), Some(Refusal::Disabled));
        }
        d.settings.status = DomainStatus::Active;
        d.access = DomainAccess::Shared;
        assert_eq!(d.refuses(&other), None);
    }
}

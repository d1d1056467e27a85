//! What creating links needs to read besides the request — domain settings, which hosts
//! are Hop's own, the active bans — read once per request (or per bulk batch) and then
//! answered from memory.

use crate::state::AppState;
use crate::store::{BanStore, LinkStore, StoreError};
use shared::{Denylist, DomainSettings};
use std::collections::HashMap;

pub(crate) struct Lookups<'a> {
    state: &'a AppState,
    deny: Option<Denylist>,
    domains: HashMap<String, DomainSettings>,
    own: HashMap<String, bool>,
}

impl<'a> Lookups<'a> {
    pub(crate) fn new(state: &'a AppState) -> Self {
        Lookups {
            state,
            deny: None,
            domains: HashMap::new(),
            own: HashMap::new(),
        }
    }

    pub(crate) fn state(&self) -> &'a AppState {
        self.state
    }

    pub(crate) async fn settings(&mut self, domain: &str) -> Result<DomainSettings, StoreError> {
        if let Some(s) = self.domains.get(domain) {
            return Ok(s.clone());
        }
        let s = self.state.db.domain_settings(domain).await?;
        self.domains.insert(domain.to_owned(), s.clone());
        Ok(s)
    }

    /// Whether `host` is a short domain of this shortener: the default one or any with
    /// settings.
    pub(crate) async fn is_own_domain(&mut self, host: &str) -> Result<bool, StoreError> {
        if host == self.state.settings.default_domain {
            return Ok(true);
        }
        if let Some(&own) = self.own.get(host) {
            return Ok(own);
        }
        let own = self.state.db.is_own_domain(host).await?;
        self.own.insert(host.to_owned(), own);
        Ok(own)
    }

    /// The active bans, as a denylist.
    pub(crate) async fn deny(&mut self) -> Result<&Denylist, StoreError> {
        if self.deny.is_none() {
            self.deny = Some(crate::model::denylist(
                &self.state.db.list_bans(false).await?,
            ));
        }
        Ok(self.deny.get_or_insert_with(Denylist::default))
    }
}

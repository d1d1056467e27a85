//! What the doors read of links through the service: a listing, one owned link, the
//! domains an owner may use, the bans as the redirects hold them, the visits behind a
//! list's sparklines. The API, the dashboard and the CLI ask here, never the store.

use super::update::{owned_link, Intent};
use super::Links;
use crate::error::AppError;
use crate::model::{Creator, Domain, Link, ListFilter, Role};
use crate::principal::Principal;
use crate::store::{self, StoreError};
use shared::{Denylist, DomainSettings};
use std::sync::Arc;

impl Links {
    /// The links `filter` selects: it was built for its caller ([`ListFilter::new`]), so
    /// it reaches only their owner's links on the domains they may.
    pub async fn list(&self, filter: &ListFilter) -> Result<Vec<Link>, StoreError> {
        store::links::list(&self.db, filter).await
    }

    /// `domain/code` of `caller`'s owner: not found for anyone else's link
    /// ([`owned_link`]).
    pub async fn owned(
        &self,
        caller: &Creator<'_>,
        domain: &str,
        code: &str,
        intent: Intent,
    ) -> Result<Link, AppError> {
        owned_link(&self.db, caller, domain, code, intent).await
    }

    /// The domains `owner`'s links may be made on (the shared ones and its own), for
    /// whoever may read its links.
    pub async fn usable_domains(
        &self,
        who: &Principal,
        owner: &str,
    ) -> Result<Vec<Domain>, AppError> {
        who.require(
            owner,
            Role::Viewer,
            "only the owner's members see its domains",
        )?;
        Ok(store::domains::for_owner(&self.db, owner).await?)
    }

    /// A domain's settings (the defaults for a domain with no row).
    pub async fn domain_settings(&self, domain: &str) -> Result<DomainSettings, StoreError> {
        store::domains::settings(&self.db, domain).await
    }

    /// The active bans as this origin's redirects hold them: read at most once a few
    /// seconds, and at once after a ban changes here.
    pub async fn denylist(&self) -> Result<Arc<Denylist>, StoreError> {
        self.cache
            .denylist(&self.db, std::time::Instant::now())
            .await
    }

    /// People's visits per link and UTC day in `[from, to)`, of `links`.
    pub async fn human_visits_by_day(
        &self,
        links: &[u64],
        from: i64,
        to: i64,
    ) -> Result<Vec<(u64, i64, i64)>, StoreError> {
        store::human_visits_by_day(&self.db, links, from, to).await
    }
}

//! What creating links needs to read besides the request — the domain's row, which hosts
//! are Hop's own, the active bans — read once per request (or per bulk batch) and then
//! answered from memory.

use super::service::TargetPolicy;
use crate::db::Db;
use crate::model::Domain;
use crate::store;
use crate::store::{DomainAt, StoreError};
use shared::Denylist;
use std::collections::HashMap;
use std::sync::Arc;

pub(crate) struct Lookups<'a> {
    db: &'a Db,
    policy: &'a TargetPolicy,
    deny: Option<Denylist>,
    domains: HashMap<String, Option<Arc<Domain>>>,
    own: HashMap<String, bool>,
    /// Per host: the threat feed listing it (or a host above it), if any.
    feed_hosts: HashMap<String, Option<String>>,
    /// Per URL: the threat feed listing it, if any.
    feed_urls: HashMap<String, Option<String>>,
}

impl<'a> Lookups<'a> {
    pub(crate) fn new(db: &'a Db, policy: &'a TargetPolicy) -> Self {
        Lookups {
            db,
            policy,
            deny: None,
            domains: HashMap::new(),
            own: HashMap::new(),
            feed_hosts: HashMap::new(),
            feed_urls: HashMap::new(),
        }
    }

    /// The rules the URLs judged with these lookups pass.
    pub(crate) fn policy(&self) -> &'a TargetPolicy {
        self.policy
    }

    /// The registry's row for `domain`, if it is registered.
    pub(crate) async fn domain(&mut self, domain: &str) -> Result<Option<Arc<Domain>>, StoreError> {
        if let Some(d) = self.domains.get(domain) {
            return Ok(d.clone());
        }
        let d = store::domains::get(self.db, domain).await?.map(Arc::new);
        self.domains.insert(domain.to_owned(), d.clone());
        Ok(d)
    }

    /// The registered domains looked up so far, at the versions read: what the links
    /// judged with them are written against.
    pub(crate) fn judged_by(&self) -> Vec<DomainAt> {
        self.domains
            .values()
            .flatten()
            .map(|d| DomainAt {
                domain: d.domain.clone(),
                version: d.version,
            })
            .collect()
    }

    /// Whether `host` is a short domain of this shortener or under one: the default one
    /// or any registered.
    pub(crate) async fn is_own_domain(&mut self, host: &str) -> Result<bool, StoreError> {
        if shared::denylist::host_is_or_is_under(host, &self.policy.default_domain) {
            return Ok(true);
        }
        if let Some(&own) = self.own.get(host) {
            return Ok(own);
        }
        let own = store::domains::is_own(self.db, host).await?;
        self.own.insert(host.to_owned(), own);
        Ok(own)
    }

    /// Learns at once which of the targets' hosts are Hop's own and which targets a
    /// threat feed lists (a read or two for all, not one per host), so that judging a
    /// batch of links reads no more per link.
    pub(crate) async fn know_targets<'t>(
        &mut self,
        targets: impl IntoIterator<Item = &'t str>,
    ) -> Result<(), StoreError> {
        let targets: Vec<&str> = targets.into_iter().collect();
        self.know_listed(targets.iter().copied()).await?;
        let mut hosts: Vec<String> = targets
            .into_iter()
            .filter_map(|t| shared::validate_target(t).ok())
            .map(|t| t.host().to_owned())
            .filter(|h| {
                !self.own.contains_key(h)
                    && !shared::denylist::host_is_or_is_under(h, &self.policy.default_domain)
            })
            .collect();
        hosts.sort_unstable();
        hosts.dedup();
        if hosts.is_empty() {
            return Ok(());
        }
        let own = store::domains::own_hosts(self.db, &hosts).await?;
        for host in hosts {
            let is_own = own.contains(&host);
            self.own.insert(host, is_own);
        }
        Ok(())
    }

    /// Learns at once which of `targets` (and their hosts) a threat feed lists.
    async fn know_listed<'t>(
        &mut self,
        targets: impl IntoIterator<Item = &'t str>,
    ) -> Result<(), StoreError> {
        let valid: Vec<shared::TargetUrl> = targets
            .into_iter()
            .filter_map(|t| shared::validate_target(t).ok())
            .collect();
        let mut hosts: Vec<String> = valid.iter().map(|t| t.host().to_owned()).collect();
        let mut urls: Vec<String> = valid.iter().map(|t| t.as_str().to_owned()).collect();
        hosts.sort_unstable();
        hosts.dedup();
        urls.sort_unstable();
        urls.dedup();
        self.learn_listed(hosts, urls).await
    }

    /// The threat feed that lists `target` or its host (or a host above it), if any.
    pub(crate) async fn listed(
        &mut self,
        target: &shared::TargetUrl,
    ) -> Result<Option<String>, StoreError> {
        let (host, url) = (target.host(), target.as_str());
        if !self.feed_hosts.contains_key(host) || !self.feed_urls.contains_key(url) {
            self.learn_listed(vec![host.to_owned()], vec![url.to_owned()])
                .await?;
        }
        let by_host = self.feed_hosts.get(host).cloned().flatten();
        Ok(by_host.or_else(|| self.feed_urls.get(url).cloned().flatten()))
    }

    async fn learn_listed(
        &mut self,
        hosts: Vec<String>,
        urls: Vec<String>,
    ) -> Result<(), StoreError> {
        if hosts.is_empty() && urls.is_empty() {
            return Ok(());
        }
        let hits = store::feeds::hits(self.db, &hosts, &urls).await?;
        for host in hosts {
            let above = crate::model::link::host_suffixes(&host);
            let feed = hits
                .iter()
                .find(|h| h.kind == "host" && above.contains(&h.value))
                .map(|h| h.feed.clone());
            self.feed_hosts.insert(host, feed);
        }
        for url in urls {
            let feed = hits
                .iter()
                .find(|h| h.kind == "url" && h.value == url)
                .map(|h| h.feed.clone());
            self.feed_urls.insert(url, feed);
        }
        Ok(())
    }

    /// The active bans, as a denylist.
    pub(crate) async fn deny(&mut self) -> Result<&Denylist, StoreError> {
        if self.deny.is_none() {
            self.deny = Some(crate::model::denylist(
                &store::bans::list(self.db, false).await?,
            ));
        }
        Ok(self.deny.get_or_insert_with(Denylist::default))
    }
}

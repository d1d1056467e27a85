//! The abuse desk (docs/abuse.md): threat feeds that ban the live links they list and
//! refuse new ones, a background re-check of every live link against them, and the
//! public report form's reports for admins.
//!
//! Nothing here ever requests a link's target: matching is by host and URL only.

pub mod feeds;
pub mod reports;

use crate::bans::Bans;
use crate::db::Db;
use crate::error::AppError;
use crate::metrics::Metrics;
use crate::model::link::host_suffixes;
use crate::model::time::now_ms;
use crate::model::Link;
use crate::principal::Principal;
use crate::store;
use crate::store::feeds::FeedRow;
use crate::views::bans::CreateBan;
use feeds::{Entries, FeedFormat};
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// The lease one origin holds to refresh feeds and run the re-check.
pub const LEASE: &str = "abuse";
const LEASE_TTL_MS: i64 = 120_000;
/// How often the desk looks for due feeds and takes a re-check step.
const TICK: Duration = Duration::from_secs(1);
/// How long a feed's download may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(120);
/// The shortest refresh interval a feed may ask for.
pub const MIN_REFRESH: Duration = Duration::from_secs(60);
/// A failed refresh is tried again after this long (or the feed's own interval, if
/// shorter).
const RETRY_AFTER_FAILURE_MS: i64 = 5 * 60_000;

/// What the desk is told by the configuration.
#[derive(Debug, Clone)]
pub struct AbuseSettings {
    /// Live links re-checked per second (`--recheck-rate`; 0: none).
    pub recheck_per_second: u32,
    /// Feeds may be downloaded over plain `http` (`--feed-allow-http`: a local setup).
    pub allow_http: bool,
}

/// The abuse desk's service.
#[derive(Debug)]
pub struct AbuseDesk {
    db: Db,
    pub bans: Arc<Bans>,
    pub metrics: Metrics,
    pub settings: AbuseSettings,
    client: reqwest::Client,
}

/// What a refresh did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Refreshed {
    pub hosts: usize,
    pub urls: usize,
    pub skipped: usize,
    /// Host bans placed for listed hosts that links point at.
    pub hosts_banned: Vec<String>,
    /// Code bans placed for links whose URL is listed, as `domain/code`.
    pub links_banned: Vec<String>,
}

/// Whether a feed's source is downloaded (else it is a file on this machine).
fn is_url(source: &str) -> bool {
    source.starts_with("https://") || source.starts_with("http://")
}

/// A feed's name: what bans and refusals cite.
fn check_name(name: &str) -> Result<(), AppError> {
    let ok = (1..=40).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    if ok {
        Ok(())
    } else {
        Err(AppError::invalid(
            "name",
            "1 to 40 characters: lowercase letters, digits and '-'",
        ))
    }
}

impl AbuseDesk {
    pub fn new(db: Db, bans: Arc<Bans>, metrics: Metrics, settings: AbuseSettings) -> Self {
        // No redirect is followed: a feed that moved says so (its refresh fails, naming
        // the answer), rather than Hop taking its bans from wherever it points now.
        let client = reqwest::Client::builder()
            .timeout(FETCH_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .https_only(!settings.allow_http)
            .user_agent(concat!("hop-feeds/", env!("CARGO_PKG_VERSION")))
            .build()
            .unwrap_or_default();
        AbuseDesk {
            db,
            bans,
            metrics,
            settings,
            client,
        }
    }

    /// Registers a feed (a file on this machine or an `http(s)` URL), refreshed every
    /// `every` from now on. Its first refresh is [`AbuseDesk::refresh`]'s to make.
    pub async fn add_feed(
        &self,
        name: &str,
        source: &str,
        format: &str,
        every: Duration,
    ) -> Result<(), AppError> {
        check_name(name)?;
        FeedFormat::parse(format).ok_or_else(|| {
            AppError::invalid(
                "format",
                "one of urlhaus, phishtank, openphish, hosts, plain",
            )
        })?;
        if source.starts_with("http://") && !self.settings.allow_http {
            return Err(AppError::invalid(
                "source",
                "a feed is downloaded over https only: one read in the clear could be \
                 changed on its way, and it decides what Hop bans",
            ));
        }
        if !is_url(source) && !std::path::Path::new(source).is_file() {
            return Err(AppError::invalid(
                "source",
                format!("{source} is neither an http(s) URL nor a readable file"),
            ));
        }
        if every < MIN_REFRESH {
            return Err(AppError::invalid("every", "at least 1 minute"));
        }
        let every_s = i64::try_from(every.as_secs()).unwrap_or(i64::MAX);
        if !store::feeds::insert(&self.db, name, source, format, every_s, now_ms()).await? {
            return Err(AppError::invalid(
                "name",
                format!("a feed named {name} exists"),
            ));
        }
        Ok(())
    }

    pub async fn list(&self) -> Result<Vec<FeedRow>, AppError> {
        Ok(store::feeds::list(&self.db).await?)
    }

    /// Removes a feed and its entries; the bans it placed stay (lift them by hand).
    pub async fn remove(&self, name: &str) -> Result<(), AppError> {
        if store::feeds::remove(&self.db, name).await? {
            Ok(())
        } else {
            Err(AppError::NotFound)
        }
    }

    /// Reads feed `name` again, replaces its entries, and bans what live links it lists.
    pub async fn refresh(&self, name: &str) -> Result<Refreshed, AppError> {
        let feed = store::feeds::list(&self.db)
            .await?
            .into_iter()
            .find(|f| f.name == name)
            .ok_or(AppError::NotFound)?;
        self.refresh_feed(&feed).await
    }

    async fn refresh_feed(&self, feed: &FeedRow) -> Result<Refreshed, AppError> {
        let started = std::time::Instant::now();
        let now = now_ms();
        let every_ms = feed.refresh_every_s.saturating_mul(1000);
        let entries = match self.read(feed).await {
            Ok(entries) => entries,
            Err(why) => {
                self.metrics.feed_refresh_failures.inc();
                let retry = now + every_ms.min(RETRY_AFTER_FAILURE_MS);
                store::feeds::failed(&self.db, &feed.name, &why, retry).await?;
                return Err(AppError::invalid("source", why));
            }
        };
        store::feeds::replace_entries(
            &self.db,
            &feed.name,
            &entries.hosts,
            &entries.urls,
            now,
            now.saturating_add(every_ms),
        )
        .await?;
        let mut done = self.ban_listed(&feed.name, &entries).await?;
        done.hosts = entries.hosts.len();
        done.urls = entries.urls.len();
        done.skipped = entries.skipped;
        tracing::info!(feed = %feed.name, hosts = done.hosts, urls = done.urls,
            hosts_banned = done.hosts_banned.len(), links_banned = done.links_banned.len(),
            took_ms = started.elapsed().as_millis() as u64, "feed refreshed");
        Ok(done)
    }

    /// The feed's text, read and parsed; why not, in words.
    async fn read(&self, feed: &FeedRow) -> Result<Entries, String> {
        let format = FeedFormat::parse(&feed.format)
            .ok_or_else(|| format!("unknown format {}", feed.format))?;
        let text = if is_url(&feed.source) {
            self.fetch(&feed.source).await?
        } else {
            let meta = tokio::fs::metadata(&feed.source)
                .await
                .map_err(|e| format!("{}: {e}", feed.source))?;
            if meta.len() > feeds::MAX_BYTES as u64 {
                return Err(feeds::FeedError::TooLarge.to_string());
            }
            tokio::fs::read_to_string(&feed.source)
                .await
                .map_err(|e| format!("{}: {e}", feed.source))?
        };
        feeds::parse(format, &text).map_err(|e| e.to_string())
    }

    /// Downloads a feed, refusing more than [`feeds::MAX_BYTES`] as it arrives.
    async fn fetch(&self, url: &str) -> Result<String, String> {
        let mut res = self
            .client
            .get(url)
            .send()
            .await
            .map_err(|e| format!("{url}: {e}"))?;
        if !res.status().is_success() {
            return Err(format!("{url} answered {}", res.status()));
        }
        let mut body: Vec<u8> = Vec::new();
        while let Some(chunk) = res.chunk().await.map_err(|e| format!("{url}: {e}"))? {
            if body.len() + chunk.len() > feeds::MAX_BYTES {
                return Err(feeds::FeedError::TooLarge.to_string());
            }
            body.extend_from_slice(&chunk);
        }
        String::from_utf8(body).map_err(|_| format!("{url}: the feed is not UTF-8 text"))
    }

    /// Bans, through the ordinary ban lane, every listed host a link points at (a host
    /// ban of the listed host) and every live link whose URL is listed (a code ban),
    /// unless a ban covers it already.
    async fn ban_listed(&self, feed: &str, entries: &Entries) -> Result<Refreshed, AppError> {
        let mut done = Refreshed::default();
        let mut deny = crate::model::denylist(&store::bans::list(&self.db, false).await?);
        let mut listed_hosts: BTreeSet<String> = BTreeSet::new();
        if !entries.hosts.is_empty() {
            for host in store::feeds::linked_hosts(&self.db).await? {
                for suffix in host_suffixes(&host) {
                    if entries.hosts.contains(&suffix) {
                        listed_hosts.insert(suffix);
                    }
                }
            }
        }
        for host in listed_hosts {
            if deny.blocks_host(&host) {
                continue;
            }
            self.ban(feed, BanWhat::Host(&host), &host).await?;
            done.hosts_banned.push(host);
        }
        if !done.hosts_banned.is_empty() {
            // A link on a host just banned is covered: no code ban of it as well.
            deny = crate::model::denylist(&store::bans::list(&self.db, false).await?);
        }
        let url_hosts: BTreeSet<String> = entries
            .urls
            .iter()
            .filter_map(|u| shared::validate_target(u).ok())
            .map(|u| u.host().to_owned())
            .collect();
        let url_hosts: Vec<String> = url_hosts.into_iter().collect();
        for link in store::feeds::live_links_on(&self.db, &url_hosts).await? {
            if link.banned_by(&deny) {
                continue;
            }
            let listed = link.urls().find(|u| entries.urls.contains(*u));
            if let Some(url) = listed {
                let url = url.to_owned();
                self.ban(feed, BanWhat::Link(&link), &url).await?;
                done.links_banned.push(link.route_key());
            }
        }
        Ok(done)
    }

    async fn ban(&self, feed: &str, what: BanWhat<'_>, entry: &str) -> Result<(), AppError> {
        let mut reason = format!("threat feed {feed}: {entry}");
        if reason.chars().count() > crate::views::bans::MAX_REASON_CHARS {
            reason = reason
                .chars()
                .take(crate::views::bans::MAX_REASON_CHARS)
                .collect();
        }
        let req = match what {
            BanWhat::Host(host) => CreateBan {
                kind: "host".to_owned(),
                domain: None,
                code: None,
                host: Some(host.to_owned()),
                reason,
            },
            BanWhat::Link(link) => CreateBan {
                kind: "code".to_owned(),
                domain: Some(link.domain.clone()),
                code: Some(link.code.clone()),
                host: None,
                reason,
            },
        };
        let by = format!("feed:{feed}");
        let who = Principal::System {
            feed: Some(feed.to_owned()),
        };
        self.bans.create(&who, &req, &by).await?;
        self.metrics.feed_bans.inc();
        Ok(())
    }

    /// Checks the next `limit` live links against every feed and the active bans, and
    /// bans those a feed lists that no ban covers yet; moves the re-check on (to the
    /// start again after the last link). How many were checked.
    pub async fn recheck_step(&self, limit: i64) -> Result<usize, AppError> {
        let (after, rounds) = store::feeds::recheck_position(&self.db).await?;
        let links = store::feeds::live_links_after(&self.db, after, limit).await?;
        let Some(last) = links.last() else {
            store::feeds::set_recheck_position(&self.db, -1, rounds + 1).await?;
            return Ok(0);
        };
        let last = i64::try_from(last.link_id).unwrap_or(i64::MAX);
        let deny = crate::model::denylist(&store::bans::list(&self.db, false).await?);
        let open: Vec<&Link> = links.iter().filter(|l| !l.banned_by(&deny)).collect();
        let hosts: Vec<Vec<String>> = open.iter().map(|l| l.all_hosts()).collect();
        let urls: Vec<String> = open
            .iter()
            .flat_map(|l| l.urls().map(String::from))
            .collect();
        let hits = store::feeds::hits(&self.db, &hosts.concat(), &urls).await?;
        let mut banned_hosts: BTreeSet<String> = BTreeSet::new();
        for (link, hosts) in open.into_iter().zip(&hosts) {
            let link_hosts: BTreeSet<String> =
                hosts.iter().flat_map(|h| host_suffixes(h)).collect();
            let link_urls: Vec<&str> = link.urls().collect();
            let host_hit = hits
                .iter()
                .find(|h| h.kind == "host" && link_hosts.contains(&h.value));
            if let Some(hit) = host_hit {
                if banned_hosts.insert(hit.value.clone()) {
                    self.ban(&hit.feed, BanWhat::Host(&hit.value), &hit.value)
                        .await?;
                }
                continue;
            }
            let url_hit = hits
                .iter()
                .find(|h| h.kind == "url" && link_urls.contains(&h.value.as_str()));
            if let Some(hit) = url_hit {
                self.ban(&hit.feed, BanWhat::Link(link), &hit.value).await?;
            }
        }
        store::feeds::set_recheck_position(&self.db, last, rounds).await?;
        self.metrics
            .rechecked_links
            .inc_by(u64::try_from(links.len()).unwrap_or(0));
        Ok(links.len())
    }

    /// Runs until `stop` turns true: while this origin holds the desk's lease, refreshes
    /// the feeds that are due and re-checks `--recheck-rate` live links a second.
    pub async fn run(self: Arc<Self>, stop: watch::Receiver<bool>) {
        let lease = crate::leased::Lease {
            name: LEASE,
            ttl_ms: LEASE_TTL_MS,
            tick: TICK,
        };
        let db = self.db.clone();
        crate::leased::run(&db, lease, true, stop, |held| {
            let desk = Arc::clone(&self);
            async move {
                if held {
                    if let Err(e) = desk.tick().await {
                        tracing::warn!(error = %e, "abuse desk step failed");
                    }
                }
            }
        })
        .await;
    }

    async fn tick(&self) -> Result<(), AppError> {
        for feed in store::feeds::due(&self.db, now_ms()).await? {
            if let Err(e) = self.refresh_feed(&feed).await {
                tracing::warn!(feed = %feed.name, error = %e, "feed refresh failed");
            }
        }
        let rate = i64::from(self.settings.recheck_per_second);
        if rate > 0 {
            self.recheck_step(rate).await?;
        }
        Ok(())
    }
}

enum BanWhat<'a> {
    Host(&'a str),
    Link(&'a Link),
}

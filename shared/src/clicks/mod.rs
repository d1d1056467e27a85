//! Click events: what a visit reports about itself, coarse by construction, and how the
//! edge sends them to the origin.
//!
//! The edge and the origin's own redirect path build events with the same functions, so
//! a click counts the same wherever it was answered. Nothing here can hold a visitor's
//! IP address, user agent or full referrer: [`Visitor::describe`] reduces them to a
//! country code, a referrer host, a device class and a bot flag before anything is kept
//! or sent (docs/architecture.md, "Security").
//!
//! The event itself is `event`'s (re-exported here), below the tally that counts alike
//! events ([`crate::tally`]); this module has what carries both to the origin (the
//! batch, the receipt) and what decides which visits are clicks at all.

pub use crate::agent::{classify_user_agent, Device, MAX_UA_BYTES};
use crate::answer::{Method, Outcome};
use crate::tally::ClickTally;
use serde::{Deserialize, Serialize};

pub(crate) mod event;
pub mod person;

pub use event::{
    country_code, referrer_host, referrer_site, ClickEvent, Visitor, MAX_EVENT_ID_LEN,
    MAX_REFERRER_READ,
};

/// Where the edge posts batches of events on the origin.
pub const CLICKS_PATH: &str = "/v1/edge/clicks";
/// Events per `POST /v1/edge/clicks` at most.
pub const MAX_CLICK_BATCH: usize = 1_000;

/// Whether a visit answered with `outcome` is a click on a link: a `GET` that found a
/// link, or a banned code (which is one, even when its record is gone). Unknown codes are
/// scans, not clicks, except one sent on to the domain's old shortener: that visit is
/// reported so the origin can list the codes still visited there (the tally's row for
/// a route with no link, answered 302, is a legacy miss). `HEAD` is how previewers and
/// monitors check a link, not a visit.
pub fn counts_as_click(method: Method, outcome: Outcome) -> bool {
    method == Method::Get
        && matches!(
            outcome,
            Outcome::Redirect
                | Outcome::Disabled
                | Outcome::Expired
                | Outcome::Deleted
                | Outcome::Banned
                | Outcome::Legacy
        )
}

/// A batch of queue messages, as posted to [`CLICKS_PATH`]: tallies, and single events
/// (what an edge sent before it tallied, still in its queue during an upgrade).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct ClickBatch {
    /// Single events, from an edge before tallies: 1,000 at most.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[cfg_attr(feature = "openapi", schema(max_items = 1000))]
    pub events: Vec<ClickEvent>,
    /// Tallies: 200 at most.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[cfg_attr(feature = "openapi", schema(max_items = 200))]
    pub tallies: Vec<ClickTally>,
}

/// What the origin did with a batch, in clicks.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ClickReceipt {
    /// Counted now.
    pub counted: u64,
    /// Counted before (a retried or replayed batch).
    pub duplicates: u64,
    /// For no link the origin knows (a banned code with no link, say): not counted.
    pub unknown_links: u64,
    /// Malformed, or too old or too new to count exactly once: not counted.
    pub refused: u64,
    /// Clicks the edge reported it had to drop (its outbox was full while the queue
    /// refused it), in the tallies counted now. Always written (as the description
    /// says); absent from an older origin's receipt, read as 0.
    #[serde(default)]
    pub dropped: u64,
}

/// Clicks one visitor may add per minute at one edge isolate; visits past it are still
/// answered, and not counted. A person does not follow sixty short links a minute.
pub const CLICKS_PER_VISITOR_MINUTE: u16 = 60;

/// Per-visitor click budgets in a table of fixed size, so a flood from many addresses
/// costs no more memory than one from a single address (visitors beyond the table share
/// slots, by a seeded hash; one whose slot another holds this minute is admitted
/// uncounted). A fixed window per minute: simple, and one visitor can add
/// at most twice the budget across a minute's boundary.
#[derive(Debug, Clone)]
pub struct VisitorBudget {
    /// Each slot: the minute, the clicks counted in it, and whose they are (16 bits of
    /// the visitor's hash).
    slots: Vec<(u32, u16, u16)>,
    seed: u64,
}

impl VisitorBudget {
    /// `slots` budgets; `seed` keeps an attacker from choosing addresses that collide
    /// with a victim's.
    pub fn new(slots: usize, seed: u64) -> Self {
        VisitorBudget {
            slots: vec![(u32::MAX, 0, 0); slots.max(1)],
            seed,
        }
    }

    /// `visitor`'s slot, and who it is there.
    fn slot_of(&self, visitor: &str) -> (usize, u16) {
        // FNV-1a, seeded: enough to spread addresses, and small in WebAssembly.
        let mut h = 0xcbf2_9ce4_8422_2325u64 ^ self.seed;
        for b in visitor.bytes() {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        let len = self.slots.len() as u64;
        ((h % len) as usize, (h >> 48) as u16)
    }

    /// Whether `visitor` (its address) may add one more click at `now_s`. A visitor
    /// whose slot another holds this minute is admitted uncounted: never refused for
    /// the other's clicks.
    pub fn admit(&mut self, visitor: &str, now_s: u64, per_minute: u16) -> bool {
        let (at, who) = self.slot_of(visitor);
        let Some((minute, used, holder)) = self.slots.get_mut(at) else {
            return true;
        };
        let now = u32::try_from(now_s / 60).unwrap_or(u32::MAX);
        if *minute != now {
            (*minute, *used, *holder) = (now, 0, who);
        } else if *holder != who {
            return true;
        }
        if *used >= per_minute {
            return false;
        }
        *used += 1;
        true
    }
}

/// How long the edge waits before it sends a refused batch of clicks again: `base_s`
/// doubled for each attempt after the first, at most `max_s` (a down origin is not
/// hammered, and a batch is never put off for hours).
pub fn retry_delay_s(base_s: u32, attempts: u32, max_s: u32) -> u32 {
    base_s
        .saturating_mul(1 << attempts.saturating_sub(1).min(16))
        .min(max_s)
}

#[cfg(test)]
mod tests {
    use super::*;

    const CHROME_WINDOWS: &str = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36";
    const SAFARI_IPHONE: &str = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1";

    #[test]
    fn retry_delays_double_from_the_base_up_to_the_cap() {
        let delays: Vec<u32> = (0..=8).map(|a| retry_delay_s(5, a, 300)).collect();
        assert_eq!(delays, [5, 5, 10, 20, 40, 80, 160, 300, 300]);
        // However many attempts, and however large the base, never past the cap.
        assert_eq!(retry_delay_s(5, u32::MAX, 300), 300);
        assert_eq!(retry_delay_s(u32::MAX, 3, 300), 300);
        assert_eq!(retry_delay_s(0, 9, 300), 0);
    }
    use proptest::prelude::*;

    #[test]
    fn a_visitor_adds_at_most_its_budget_a_minute() {
        let mut budget = VisitorBudget::new(4096, 7);
        let now = 1_800_000_000;
        let admitted = (0..100)
            .filter(|_| budget.admit("203.0.113.9", now, CLICKS_PER_VISITOR_MINUTE))
            .count();
        assert_eq!(admitted, usize::from(CLICKS_PER_VISITOR_MINUTE));
        assert!(budget.admit("198.51.100.1", now, CLICKS_PER_VISITOR_MINUTE));
        // The next minute, a new budget.
        assert!(budget.admit("203.0.113.9", now + 60, CLICKS_PER_VISITOR_MINUTE));
        // A million addresses take no more room than the table.
        for i in 0..1_000_000u32 {
            budget.admit(&i.to_string(), now, 1);
        }
        assert_eq!(budget.slots.len(), 4096);
    }

    /// Visitors beyond the table share slots: one whose slot another holds this minute
    /// is not refused for the other's clicks.
    #[test]
    fn a_visitor_sharing_a_slot_is_not_refused_for_the_others_clicks() {
        let mut budget = VisitorBudget::new(16, 7);
        let now = 1_800_000_000;
        let first = "203.0.113.9";
        let second = (0..1_000)
            .map(|i| format!("198.51.100.{i}"))
            .find(|v| budget.slot_of(v).0 == budget.slot_of(first).0)
            .expect("a neighbour in one of 16 slots");
        let admitted = (0..100)
            .filter(|_| budget.admit(first, now, CLICKS_PER_VISITOR_MINUTE))
            .count();
        assert_eq!(admitted, usize::from(CLICKS_PER_VISITOR_MINUTE));
        assert!(budget.admit(&second, now, CLICKS_PER_VISITOR_MINUTE));
        assert!(!budget.admit(first, now, CLICKS_PER_VISITOR_MINUTE));
    }

    #[test]
    fn only_the_referrers_host_is_kept() {
        let host = |r| referrer_host(r);
        assert_eq!(
            host("https://www.Example.com/private/path?token=secret#x").as_deref(),
            Some("example.com")
        );
        assert_eq!(
            host("http://news.ycombinator.com/item?id=1").as_deref(),
            Some("news.ycombinator.com")
        );
        assert_eq!(host("android-app://com.google.android.gm/"), None);
        assert_eq!(host("not a url"), None);
        assert_eq!(host("https://user:pass@t.co/abc").as_deref(), Some("t.co"));
        // Only the site is read: what follows it, however long, changes nothing.
        let long_path = format!("https://t.co/{}", "a".repeat(100_000));
        assert_eq!(referrer_site(&long_path), Some("https://t.co"));
        assert_eq!(host(&long_path).as_deref(), Some("t.co"));
        assert_eq!(referrer_site("https://t.co?q=1"), Some("https://t.co"));
        let long_host = format!("https://{}.example/", "a".repeat(400));
        assert_eq!(referrer_site(&long_host), None);
        assert_eq!(host(&long_host), None);
    }

    proptest! {
        /// The byte scan finds what `str::find` finds, in any text (multi-byte
        /// characters included).
        #[test]
        fn the_referrers_site_is_cut_where_a_string_search_would(
            r in "[ \\t]{0,2}[a-zé:/?#.]{0,12}(://)?[a-zé/?#.:]{0,12}",
            // Long enough, sometimes, to put the scheme's end or the site's near the
            // bound, or past it.
            pad in prop_oneof![Just(0usize), 300usize..330],
            at_start in any::<bool>(),
        ) {
            let filler = "a".repeat(pad);
            let r = if at_start { format!("{filler}{r}") } else { format!("{r}{filler}") };
            let want = (|| {
                let r = r.trim_start();
                let after = r.find("://")? + 3;
                let end = r[after..].find(['/', '?', '#']).map_or(r.len(), |i| after + i);
                (end <= MAX_REFERRER_READ).then(|| r[..end].trim_end())
            })();
            prop_assert_eq!(referrer_site(&r), want);
        }
    }

    #[test]
    fn describe_keeps_only_coarse_facts() {
        let v = Visitor::describe(Some(SAFARI_IPHONE), Some("https://t.co/x?y=1"), Some("de"));
        assert_eq!(
            v,
            Visitor {
                country: Some("DE".into()),
                referrer_host: Some("t.co".into()),
                device: Device::Mobile,
                bot: false,
                scanner: None,
            }
        );
        let none = Visitor::describe(None, None, Some("Germany"));
        assert_eq!(
            (none.country, none.device, none.bot),
            (None, Device::Other, true)
        );
    }

    #[test]
    fn clicks_are_gets_that_found_a_link() {
        assert!(counts_as_click(Method::Get, Outcome::Redirect));
        assert!(counts_as_click(Method::Get, Outcome::Expired));
        assert!(counts_as_click(Method::Get, Outcome::Banned));
        assert!(!counts_as_click(Method::Head, Outcome::Redirect));
        assert!(!counts_as_click(Method::Get, Outcome::NotFound));
        assert!(!counts_as_click(Method::Get, Outcome::Unavailable));
    }

    fn event() -> ClickEvent {
        ClickEvent::new(
            "0b9d1c9e-4d3c-4c3e-9d6a-1f2e3d4c5b6a".into(),
            "s.example/abc1234".into(),
            Some(3),
            1_700_000_000_000,
            302,
            Visitor::describe(
                Some(CHROME_WINDOWS),
                Some("https://example.com/"),
                Some("FR"),
            ),
        )
    }

    #[test]
    fn a_described_event_passes_its_own_checks_and_round_trips() {
        let e = event();
        assert_eq!(e.problem(), None);
        let json = serde_json::to_string(&ClickBatch {
            events: vec![e.clone()],
            ..ClickBatch::default()
        })
        .unwrap();
        let back: ClickBatch = serde_json::from_str(&json).unwrap();
        assert_eq!(back.events, vec![e]);
    }

    #[test]
    fn an_event_says_its_variant_only_when_it_has_one() {
        let plain = serde_json::to_string(&event()).unwrap();
        assert!(!plain.contains("variant"), "{plain}");
        let e = event().with_variant(Some(3));
        let json = serde_json::to_string(&e).unwrap();
        assert!(json.contains(r#""variant":3"#), "{json}");
        assert_eq!(serde_json::from_str::<ClickEvent>(&json).unwrap(), e);
        assert_eq!(e.problem(), None);
        let past = event().with_variant(Some(crate::split::MAX_VARIANTS as u8));
        assert!(past.problem().unwrap().contains("variant"));
    }

    /// A scanner's visit is a bot's, and says why only when the user agent did not
    /// already say it was a bot; the field travels in the event and its tally row, and
    /// a claim that a person's visit was a scanner's is refused.
    #[test]
    fn a_screened_visitor_is_a_bot_that_says_why() {
        use crate::scanners::Scanner;
        let person = Visitor::describe(Some(CHROME_WINDOWS), None, None);
        assert_eq!(person.clone().screened(None), person);
        let scanner = person.screened(Some(Scanner::Network));
        assert_eq!(
            (scanner.bot, scanner.scanner),
            (true, Some(Scanner::Network))
        );
        let crawler = Visitor::describe(Some("Googlebot/2.1"), None, None);
        assert_eq!(crawler.clone().screened(Some(Scanner::Prefetch)), crawler);
        let e = ClickEvent::new(
            "e-1".into(),
            "s.example/abc1234".into(),
            Some(1),
            1_700_000_000_000,
            302,
            scanner,
        );
        let json = serde_json::to_string(&e).unwrap();
        assert!(json.contains(r#""scanner":"network""#), "{json}");
        assert_eq!(serde_json::from_str::<ClickEvent>(&json).unwrap(), e);
        assert_eq!(e.problem(), None);
        let row = crate::tally::TallyRow::of(e.clone());
        let json = serde_json::to_string(&row).unwrap();
        assert!(json.contains(r#""scanner":"network""#), "{json}");
        assert!(!serde_json::to_string(&event()).unwrap().contains("scanner"));
        let lying = ClickEvent { bot: false, ..e };
        assert!(lying.problem().unwrap().contains("scanner"));
        assert!(serde_json::from_str::<Scanner>(r#""robot""#).is_err());
    }

    #[test]
    fn malformed_events_say_why() {
        let mut e = event();
        e.event_id = "a b".into();
        assert!(e.problem().unwrap().contains("event_id"));
        let mut e = event();
        e.link = "no-slash".into();
        assert!(e.problem().unwrap().contains("link"));
        let mut e = event();
        e.country = Some("de".into());
        assert!(e.problem().unwrap().contains("country"));
        let mut e = event();
        e.referrer_host = Some("https://full.url/path".into());
        assert!(e.problem().unwrap().contains("referrer_host"));
        let mut e = event();
        e.status = 42;
        assert!(e.problem().unwrap().contains("status"));
        assert!(serde_json::from_str::<ClickBatch>(r#"{"events":[],"ip":"1.2.3.4"}"#).is_err());
    }

    proptest! {
        // Whatever a visitor sends, what is kept passes the origin's checks: the edge
        // can never produce an event the origin refuses.
        #[test]
        fn any_request_describes_to_an_acceptable_event(
            ua in any::<String>(), referer in any::<String>(), country in any::<String>(),
            host in "[a-z0-9]{1,20}(\\.[a-z]{2,6})?",
        ) {
            let referer = format!("https://{host}/{referer}");
            let v = Visitor::describe(Some(&ua), Some(&referer), Some(&country));
            let mut e = event();
            e.country = v.country;
            e.referrer_host = v.referrer_host;
            prop_assert_eq!(e.problem(), None);
        }
    }
}

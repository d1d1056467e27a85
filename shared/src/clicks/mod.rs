//! Click events: what a visit reports about itself, coarse by construction.
//!
//! The edge and the origin's own redirect path build events with the same functions, so
//! a click counts the same wherever it was answered. Nothing here can hold a visitor's
//! IP address, user agent or full referrer: [`Visitor::describe`] reduces them to a
//! country code, a referrer host, a device class and a bot flag before anything is kept
//! or sent (ARCHITECTURE §8).

use crate::decision::{Method, Outcome};
use serde::{Deserialize, Serialize};

/// Where the edge posts batches of events on the origin.
pub const CLICKS_PATH: &str = "/v1/edge/clicks";
/// Events per `POST /v1/edge/clicks` at most.
pub const MAX_CLICK_BATCH: usize = 1_000;
/// The longest event id accepted (a UUID is 36 characters).
pub const MAX_EVENT_ID_LEN: usize = 64;
/// User agents are looked at up to this many bytes; real ones are shorter.
pub const MAX_UA_BYTES: usize = 512;
/// The longest referrer host kept (a DNS name's limit).
const MAX_HOST_LEN: usize = 253;

/// The kind of device a visit came from, as far as its user agent tells.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Device {
    Desktop,
    Mobile,
    Tablet,
    /// No user agent, or one naming no known platform (TVs, consoles, tools).
    Other,
}

impl Device {
    pub fn as_str(self) -> &'static str {
        match self {
            Device::Desktop => "desktop",
            Device::Mobile => "mobile",
            Device::Tablet => "tablet",
            Device::Other => "other",
        }
    }
}

/// The coarse facts about who visited: all that is ever kept of a visitor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Visitor {
    /// ISO 3166-1 alpha-2, uppercase (Cloudflare's `cf.country`; `T1` is Tor).
    pub country: Option<String>,
    /// The referring page's host, lowercased, without `www.`.
    pub referrer_host: Option<String>,
    pub device: Device,
    pub bot: bool,
}

impl Visitor {
    /// Reduces what a request says about its sender to the kept dimensions.
    pub fn describe(
        user_agent: Option<&str>,
        referer: Option<&str>,
        country: Option<&str>,
    ) -> Self {
        let (device, bot) = classify_user_agent(user_agent.unwrap_or_default());
        Visitor {
            country: country.and_then(country_code),
            referrer_host: referer.and_then(referrer_host),
            device,
            bot,
        }
    }
}

/// Whether a visit answered with `outcome` is a click on a link: a `GET` that found a
/// link, or a banned code (which is one, even when its record is gone). Unknown codes are
/// scans, not clicks; `HEAD` is how previewers and monitors check a link, not a visit.
pub fn counts_as_click(method: Method, outcome: Outcome) -> bool {
    method == Method::Get
        && matches!(
            outcome,
            Outcome::Redirect
                | Outcome::Disabled
                | Outcome::Expired
                | Outcome::Deleted
                | Outcome::Banned
        )
}

/// One click, as the edge sends it and the origin ingests it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClickEvent {
    /// Unique per visit, made where the visit was answered; ingestion counts an id once.
    pub event_id: String,
    /// The route key, `domain/code`.
    pub link: String,
    /// The version of the record the answer came from; absent when there was none (a
    /// banned code whose record is gone).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<u64>,
    /// When the visit was answered, Unix milliseconds.
    pub at: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub country: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub referrer_host: Option<String>,
    pub device: Device,
    pub bot: bool,
    /// The status the visitor got.
    pub status: u16,
    /// The split variant the visit was sent to (its index), when the link has a split.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variant: Option<u8>,
}

impl ClickEvent {
    /// The event for a visit to `link` answered with `status` at `at` (Unix ms).
    pub fn new(
        event_id: String,
        link: String,
        version: Option<u64>,
        at: i64,
        status: u16,
        visitor: Visitor,
    ) -> Self {
        ClickEvent {
            event_id,
            link,
            version,
            at,
            country: visitor.country,
            referrer_host: visitor.referrer_host,
            device: visitor.device,
            bot: visitor.bot,
            status,
            variant: None,
        }
    }

    /// The event, saying which split variant the visit got.
    pub fn with_variant(self, variant: Option<u8>) -> Self {
        ClickEvent { variant, ..self }
    }

    /// Why this event cannot be counted, if it cannot. A sender may be out of date or
    /// hostile: every field is checked against what `describe` can produce.
    pub fn problem(&self) -> Option<&'static str> {
        let id_ok = !self.event_id.is_empty()
            && self.event_id.len() <= MAX_EVENT_ID_LEN
            && self
                .event_id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        if !id_ok {
            return Some("event_id must be 1 to 64 letters, digits, '-' or '_'");
        }
        if crate::RouteKey::parse(&self.link).is_none() {
            return Some("link must be a route key, domain/code");
        }
        if !(100..=599).contains(&self.status) {
            return Some("status must be an HTTP status");
        }
        if self
            .country
            .as_deref()
            .is_some_and(|c| country_code(c).as_deref() != Some(c))
        {
            return Some("country must be two uppercase letters or digits");
        }
        if self.referrer_host.as_deref().is_some_and(|h| {
            h.is_empty()
                || h.len() > MAX_HOST_LEN
                || !h
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"-._[]:".contains(&b))
        }) {
            return Some("referrer_host must be a lowercase host name");
        }
        if self
            .variant
            .is_some_and(|v| usize::from(v) >= crate::split::MAX_VARIANTS)
        {
            return Some("variant must be the index of a split's variant");
        }
        None
    }
}

/// A batch of queue messages, as posted to [`CLICKS_PATH`]: tallies, and single events
/// (what an edge sent before it tallied, still in its queue during an upgrade).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClickBatch {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<ClickEvent>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tallies: Vec<crate::tally::ClickTally>,
}

/// What the origin did with a batch, in clicks.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
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

/// `cf.country` (or `CF-IPCountry`) when it is a code: two ASCII letters or digits
/// (`T1` is Tor, `XX` unknown), uppercased.
pub fn country_code(raw: &str) -> Option<String> {
    let raw = raw.trim();
    (raw.len() == 2 && raw.bytes().all(|b| b.is_ascii_alphanumeric()))
        .then(|| raw.to_ascii_uppercase())
}

/// The most of a `Referer` that is ever read: a scheme, `://`, a DNS name and a port
/// fit. A reduction that reads no further can be remembered under this prefix.
pub const MAX_REFERRER_READ: usize = 320;

/// The part of a `Referer` that names its site: up to the end of its authority. `None`
/// when that is longer than [`MAX_REFERRER_READ`] (no valid host is that long).
pub fn referrer_site(referer: &str) -> Option<&str> {
    let referer = referer.trim_start();
    // Bytes: what is searched for is ASCII, so each match is at a character boundary;
    // a substring searcher cost recording a click more than the rest of this function.
    // Nothing past the bound is read (a header of kilobytes is not scanned to its end):
    // a site that reaches it is too long whatever follows.
    let bytes = referer.as_bytes();
    let within = &bytes[..bytes.len().min(MAX_REFERRER_READ + 1)];
    let mut from = 0;
    let after_scheme = loop {
        let colon = from + within[from..].iter().position(|&b| b == b':')?;
        if bytes[colon + 1..].starts_with(b"//") {
            break colon + 3;
        }
        from = colon + 1;
    };
    let end = match within
        .get(after_scheme..)?
        .iter()
        .position(|b| matches!(b, b'/' | b'?' | b'#'))
    {
        Some(i) => after_scheme + i,
        None if bytes.len() <= MAX_REFERRER_READ => bytes.len(),
        None => return None,
    };
    Some(referer[..end].trim_end())
}

/// The host of a `Referer` header, and nothing else of it: lowercased, without a leading
/// `www.`, for http(s) referrers only (an app's `android-app://…` names no site). Only
/// [`referrer_site`] is read.
pub fn referrer_host(referer: &str) -> Option<String> {
    let url = url::Url::parse(referrer_site(referer)?).ok()?;
    if !matches!(url.scheme(), "http" | "https") {
        return None;
    }
    let host = url.host_str()?.trim_end_matches('.');
    let host = host.strip_prefix("www.").unwrap_or(host);
    (!host.is_empty() && host.len() <= MAX_HOST_LEN).then(|| host.to_ascii_lowercase())
}

/// Words in a user agent that mark an automated client: crawlers, link previewers,
/// monitors, HTTP libraries and headless browsers.
const BOT_MARKERS: &[&str] = &[
    "bot",
    "crawl",
    "spider",
    "slurp",
    "preview",
    "facebookexternalhit",
    "facebookcatalog",
    "embedly",
    "whatsapp",
    "headless",
    "lighthouse",
    "pingdom",
    "uptime",
    "monitor",
    "curl/",
    "wget/",
    "python",
    "go-http-client",
    "java/",
    "okhttp",
    "axios",
    "node-fetch",
    "httpclient",
    "libwww",
    "scrapy",
    "phantomjs",
];

/// The device class and bot flag of a user agent, by a compact rule set rather than a
/// full parser (which would cost the edge's WebAssembly far more than these few hundred
/// bytes; docs/analytics.md). A client is a bot when it names itself one of
/// [`BOT_MARKERS`], or does not present itself as a browser at all: every browser's agent
/// starts `Mozilla/` (or `Opera/`, for old Opera), and an empty agent is a script.
pub fn classify_user_agent(ua: &str) -> (Device, bool) {
    let ua = head(ua, MAX_UA_BYTES).to_ascii_lowercase();
    let browser = ua.starts_with("mozilla/") || ua.starts_with("opera/");
    // Link-preview crawlers are bots whatever they call themselves (several present a
    // browser's agent with the app's name in it).
    let bot = !browser
        || BOT_MARKERS.iter().any(|m| ua.contains(m))
        || crate::preview::names_previewer(&ua);
    let has = |s: &str| ua.contains(s);
    let device = if has("ipad") || has("tablet") || (has("android") && !has("mobile")) {
        Device::Tablet
    } else if has("mobi") || has("iphone") || has("ipod") || has("android") || has("phone") {
        Device::Mobile
    } else if has("windows nt") || has("macintosh") || has("cros") || has("x11") || has("linux") {
        Device::Desktop
    } else {
        Device::Other
    };
    (device, bot)
}

/// At most the first `max` bytes of a header value, cut at a character boundary: what
/// is read of values a client controls.
pub(crate) fn head(value: &str, max: usize) -> &str {
    let mut end = value.len().min(max);
    while !value.is_char_boundary(end) {
        end -= 1;
    }
    &value[..end]
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

    const CHROME_WINDOWS: &str = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36";
    const SAFARI_IPHONE: &str = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1";
    const CHROME_ANDROID: &str = "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Mobile Safari/537.36";
    const ANDROID_TABLET: &str = "Mozilla/5.0 (Linux; Android 13; SM-X710) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36";
    const IPAD: &str = "Mozilla/5.0 (iPad; CPU OS 16_6 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/16.6 Mobile/15E148 Safari/604.1";
    const FIREFOX_LINUX: &str =
        "Mozilla/5.0 (X11; Linux x86_64; rv:125.0) Gecko/20100101 Firefox/125.0";
    const SAFARI_MAC: &str = "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_4) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Safari/605.1.15";

    #[test]
    fn browsers_are_people_on_their_devices() {
        for (ua, device) in [
            (CHROME_WINDOWS, Device::Desktop),
            (FIREFOX_LINUX, Device::Desktop),
            (SAFARI_MAC, Device::Desktop),
            (SAFARI_IPHONE, Device::Mobile),
            (CHROME_ANDROID, Device::Mobile),
            (ANDROID_TABLET, Device::Tablet),
            (IPAD, Device::Tablet),
        ] {
            assert_eq!(classify_user_agent(ua), (device, false), "{ua}");
        }
    }

    #[test]
    fn crawlers_previewers_and_tools_are_bots() {
        for ua in [
            "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
            "Mozilla/5.0 (Linux; Android 6.0.1; Nexus 5X Build/MMB29P) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Mobile Safari/537.36 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
            "facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)",
            "Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)",
            "WhatsApp/2.23.20.0",
            "TelegramBot (like TwitterBot)",
            "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/124.0.0.0 Safari/537.36",
            "curl/8.5.0",
            "python-requests/2.31.0",
            "Go-http-client/1.1",
            "",
        ] {
            assert!(classify_user_agent(ua).1, "{ua:?} should be a bot");
        }
    }

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
                bot: false
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

//! Alike clicks counted where they happen: an edge isolate keeps a tally of its clicks
//! and sends it as one queue message a window, instead of one message a click.
//!
//! A Cloudflare queue takes at most 5,000 messages a second; at one message a click,
//! clicks past that were lost. Alike clicks (the same link, version, hour, status,
//! visitor description and split variant) become one [`TallyRow`] with a count, and a
//! window's rows one [`ClickTally`] with an id of its own, which the origin counts once.
//! What the queue refuses is kept ([`Outbox`], bounded in bytes) and sent again with the
//! next window; what finally falls out of it is counted and reported in the next tally
//! (`dropped`), never lost silently.
//!
//! The edge keeps each row as its JSON text without the count (the key of its tally),
//! so a click costs one small serialization and a hash lookup, and a window's message is
//! written by joining texts.
//!
//! The same message carries how the isolate is doing ([`Health`]): its answers by
//! status, its faults by kind, its location and the age of its denylist, so the edge's
//! own state reaches the origin's metrics without a channel of its own.

use crate::agent::Device;
use crate::clicks::event::ClickEvent;
use crate::scanners::Scanner;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap, VecDeque};

/// The largest tally message, in bytes: half a queue message's limit (128 KB), so the
/// consumer's batch of 100 messages is a POST of at most 6.4 MB.
pub const MAX_TALLY_BYTES: usize = 64 * 1024;
/// Messages kept for sending again per isolate, in bytes; past it the oldest go, and
/// their clicks are reported as dropped.
pub const MAX_OUTBOX_BYTES: usize = 1024 * 1024;
/// How long an isolate tallies before it sends: the first click of a window schedules
/// the send this long after it.
pub const TALLY_WINDOW_MS: u64 = 1_000;
/// Tallies per `POST /v1/edge/clicks` at most (the consumer's batch is 100 messages).
pub const MAX_TALLIES_PER_POST: usize = 200;
/// The largest count one row may claim (a window of a hot link at one isolate is far
/// below it; more means a broken or lying sender).
pub const MAX_ROW_COUNT: u32 = 10_000_000;

const HOUR_MS: i64 = 3_600_000;

/// Alike clicks: everything a click event says but its id and exact time, and how many.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct TallyRow {
    /// The route key, `domain/code`.
    pub link: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(maximum = 9007199254740991.0))]
    pub version: Option<u64>,
    /// The start of the hour the clicks fell in, Unix ms.
    #[cfg_attr(feature = "openapi", schema(minimum = -9007199254740991.0, maximum = 9007199254740991.0))]
    pub hour: i64,
    #[cfg_attr(feature = "openapi", schema(maximum = 65535))]
    pub status: u16,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub country: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub referrer_host: Option<String>,
    pub device: Device,
    pub bot: bool,
    /// Why these bots' visits were a scanner's (absent for every other row).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scanner: Option<Scanner>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(maximum = 255))]
    pub variant: Option<u8>,
    /// Who made these clicks, on a link with a visit limit (`crate::clicks::person`: a
    /// keyed hash of the visitor's address, the link and the day, 16 hex digits): the
    /// limit counts them once. Absent for every other row.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(pattern = "^[0-9a-f]{16}$"))]
    pub person: Option<String>,
    /// How many (absent only in the edge's key of a row).
    #[serde(default, skip_serializing_if = "is_zero")]
    #[cfg_attr(feature = "openapi", schema(maximum = 4294967295.0))]
    pub n: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl TallyRow {
    /// The row `event` falls in, with a count of zero (the tally counts).
    pub fn of(event: ClickEvent) -> Self {
        TallyRow {
            link: event.link,
            version: event.version,
            hour: event.at.div_euclid(HOUR_MS) * HOUR_MS,
            status: event.status,
            country: event.country,
            referrer_host: event.referrer_host,
            device: event.device,
            bot: event.bot,
            scanner: event.scanner,
            variant: event.variant,
            person: None,
            n: 0,
        }
    }

    /// The row as one click event of its own, for the checks events pass
    /// ([`ClickEvent::problem`]); its id stands for the tally's.
    pub fn as_event(&self, batch_id: &str) -> ClickEvent {
        ClickEvent {
            event_id: batch_id.to_owned(),
            link: self.link.clone(),
            version: self.version,
            at: self.hour,
            country: self.country.clone(),
            referrer_host: self.referrer_host.clone(),
            device: self.device,
            bot: self.bot,
            scanner: self.scanner,
            status: self.status,
            variant: self.variant,
        }
    }

    /// Why this row cannot be counted, if it cannot: an event's checks, an hour's
    /// start, and a count from 1 to [`MAX_ROW_COUNT`].
    pub fn problem(&self, batch_id: &str) -> Option<&'static str> {
        if self.n == 0 || self.n > MAX_ROW_COUNT {
            return Some("n must be from 1 to 10,000,000");
        }
        if self.hour.rem_euclid(HOUR_MS) != 0 {
            return Some("hour must be the start of an hour, Unix ms");
        }
        if self
            .person
            .as_deref()
            .is_some_and(|p| crate::clicks::person::parse(p).is_none())
        {
            return Some("person must be 16 lowercase hex digits");
        }
        self.as_event(batch_id).problem()
    }
}

/// One window of an isolate's clicks, as a queue message carries it and the origin
/// ingests it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct ClickTally {
    /// Unique per message; the origin counts a tally once, by this id.
    pub batch_id: String,
    /// When the tally was sealed, Unix ms.
    #[cfg_attr(feature = "openapi", schema(minimum = -9007199254740991.0, maximum = 9007199254740991.0))]
    pub at: i64,
    /// Clicks this isolate had to drop since its last tally (its outbox was full while
    /// the queue refused it): counted by the origin, not added to any link.
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    #[cfg_attr(feature = "openapi", schema(maximum = 9007199254740991.0))]
    pub dropped: u64,
    /// How the isolate did over the window (absent from an edge before health reports).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health: Option<Health>,
    pub rows: Vec<TallyRow>,
}

/// Something that went wrong at the edge (or that an operator wants counted beside the
/// faults: asking the origin), as a health report counts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum Fault {
    /// A KV read of a record or a domain's settings failed.
    KvRead,
    /// The denylist could not be read: the last copy held (or none) was used.
    DenylistUnreadable,
    /// A record in KV did not parse.
    CorruptRecord,
    /// The origin was asked about a code KV does not hold (the activation window; many
    /// mean KV is late).
    OriginAsked,
    /// The origin was not asked: the isolate's budget for codes it cannot date was spent.
    OriginBudgetSpent,
    /// The origin did not answer usefully (unreachable, too slow, an error).
    OriginFailed,
    /// One client address asked about more codes that cannot be dated than its own
    /// budget allows: refused (429) without spending the isolate's.
    ClientLimited,
    /// The queue refused a tally (kept to send again).
    QueueRefused,
    /// A kind this origin does not know (sent by a newer edge).
    #[serde(other)]
    Other,
}

impl Fault {
    /// Every kind, for metrics that list them all from the start.
    pub const ALL: [Fault; 9] = [
        Fault::KvRead,
        Fault::DenylistUnreadable,
        Fault::CorruptRecord,
        Fault::OriginAsked,
        Fault::OriginBudgetSpent,
        Fault::OriginFailed,
        Fault::ClientLimited,
        Fault::QueueRefused,
        Fault::Other,
    ];

    /// The kind as it is written in a report and a metric's label.
    pub fn as_str(self) -> &'static str {
        match self {
            Fault::KvRead => "kv_read",
            Fault::DenylistUnreadable => "denylist_unreadable",
            Fault::CorruptRecord => "corrupt_record",
            Fault::OriginAsked => "origin_asked",
            Fault::OriginBudgetSpent => "origin_budget_spent",
            Fault::OriginFailed => "origin_failed",
            Fault::QueueRefused => "queue_refused",
            Fault::ClientLimited => "client_limited",
            Fault::Other => "other",
        }
    }
}

/// How an isolate did over a window: what it answered, what went wrong, where it runs
/// and how old the denylist it used was.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct Health {
    /// The Cloudflare location (its IATA code), when the runtime says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub colo: Option<String>,
    /// Answers by HTTP status.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[cfg_attr(feature = "openapi", schema(schema_with = schema::status_counts))]
    pub answers: BTreeMap<u16, u64>,
    /// Faults by kind.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[cfg_attr(feature = "openapi", schema(schema_with = schema::fault_counts))]
    pub faults: BTreeMap<Fault, u64>,
    /// How long before the report the isolate last read its denylist, ms; absent when
    /// it never could.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(maximum = 9007199254740991.0))]
    pub denylist_age_ms: Option<u64>,
}

/// An isolate's counts for its next [`Health`] report, kept without maps and written
/// without serde: the worker's size budget (its report is read back as a `Health`).
#[derive(Debug, Default, Clone)]
pub struct HealthCounts {
    /// By status, in the order first seen (a handful of statuses).
    answers: Vec<(u16, u64)>,
    /// By [`Fault`], indexed by its discriminant.
    faults: [u64; Fault::ALL.len()],
}

impl HealthCounts {
    /// Counts an answer with `status`.
    pub fn answered(&mut self, status: u16) {
        match self.answers.iter_mut().find(|(s, _)| *s == status) {
            Some((_, n)) => *n += 1,
            None => self.answers.push((status, 1)),
        }
    }

    /// Counts a fault.
    pub fn fault(&mut self, fault: Fault) {
        self.faults[fault as usize] += 1;
    }

    /// Whether nothing was counted (such a report is not sent).
    pub fn is_empty(&self) -> bool {
        self.answers.is_empty() && self.faults.iter().all(|n| *n == 0)
    }

    /// The report as JSON: a [`Health`] with `colo` (letters and digits only: anything
    /// else is left out) and the denylist's age.
    pub fn to_json(&self, colo: Option<&str>, denylist_age_ms: Option<u64>) -> String {
        let mut json = String::from("{");
        let field = |json: &mut String, name: &str| {
            if json.len() > 1 {
                json.push(',');
            }
            json.push('"');
            json.push_str(name);
            json.push_str("\":");
        };
        if let Some(colo) =
            colo.filter(|c| !c.is_empty() && c.bytes().all(|b| b.is_ascii_alphanumeric()))
        {
            field(&mut json, "colo");
            json.push('"');
            json.push_str(colo);
            json.push('"');
        }
        let answers = self.answers.iter().map(|(s, n)| (s.to_string(), *n));
        let faults = Fault::ALL
            .iter()
            .map(|f| (f.as_str().to_owned(), self.faults[*f as usize]))
            .filter(|(_, n)| *n > 0);
        for (name, counts) in [
            ("answers", answers.collect::<Vec<_>>()),
            ("faults", faults.collect::<Vec<_>>()),
        ] {
            if counts.is_empty() {
                continue;
            }
            field(&mut json, name);
            json.push('{');
            for (i, (key, n)) in counts.iter().enumerate() {
                if i > 0 {
                    json.push(',');
                }
                json.push_str(&format!("\"{key}\":{n}"));
            }
            json.push('}');
        }
        if let Some(age) = denylist_age_ms {
            field(&mut json, "denylist_age_ms");
            json.push_str(&age.to_string());
        }
        json.push('}');
        json
    }
}

fn is_zero_u64(n: &u64) -> bool {
    *n == 0
}

impl ClickTally {
    /// The clicks the tally adds.
    pub fn visits(&self) -> u64 {
        self.rows.iter().map(|r| u64::from(r.n)).sum()
    }
}

/// A tally written as a queue message, and the clicks it carries (for the count of
/// what is dropped, should it be).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sealed {
    pub body: String,
    /// The clicks in its rows plus the drops it reports.
    pub clicks: u64,
}

/// An isolate's clicks since its last window: each row's JSON text (without a count)
/// and its count.
#[derive(Debug, Default)]
pub struct Tally {
    counts: HashMap<String, u32>,
    clicks: u64,
}

impl Tally {
    /// Counts one click of `row`.
    pub fn add(&mut self, row: &TallyRow) {
        // Infallible for this type: strings, numbers and enums only.
        let Ok(key) = serde_json::to_string(row) else {
            return;
        };
        let n = self.counts.entry(key).or_default();
        *n = n.saturating_add(1);
        self.clicks += 1;
    }

    /// Whether no click was counted since the last seal.
    pub fn is_empty(&self) -> bool {
        self.counts.is_empty()
    }

    /// The clicks counted since the last seal.
    pub fn clicks(&self) -> u64 {
        self.clicks
    }

    /// Writes what was counted as messages of at most [`MAX_TALLY_BYTES`], each with an
    /// id from `new_id`, the first reporting `dropped` and `health` (a [`Health`]'s JSON,
    /// from [`HealthCounts::to_json`]; a message is sent for these alone when no click
    /// was counted); empties the tally.
    pub fn seal(
        &mut self,
        at_ms: i64,
        dropped: u64,
        health: Option<String>,
        mut new_id: impl FnMut() -> String,
    ) -> Vec<Sealed> {
        let mut sealed = Vec::new();
        let mut rows = std::mem::take(&mut self.counts).into_iter().peekable();
        self.clicks = 0;
        let mut dropped = dropped;
        let mut health = health;
        while rows.peek().is_some() || dropped > 0 || health.is_some() {
            let mut body = format!(r#"{{"batch_id":"{}","at":{at_ms}"#, new_id());
            let mut clicks = dropped;
            if dropped > 0 {
                body.push_str(&format!(r#","dropped":{dropped}"#));
                dropped = 0;
            }
            if let Some(health) = health.take() {
                body.push_str(r#","health":"#);
                body.push_str(&health);
            }
            body.push_str(r#","rows":["#);
            let mut first = true;
            while let Some((key, _)) = rows.peek() {
                // A row's text plus its count and the closing brackets.
                if !first && body.len() + key.len() + 20 > MAX_TALLY_BYTES {
                    break;
                }
                let Some((key, n)) = rows.next() else { break };
                if !first {
                    body.push(',');
                }
                // `{…}` becomes `{…,"n":N}`.
                body.push_str(&key[..key.len() - 1]);
                body.push_str(&format!(r#","n":{n}}}"#));
                clicks += u64::from(n);
                first = false;
            }
            body.push_str("]}");
            sealed.push(Sealed { body, clicks });
        }
        sealed
    }
}

/// The clicks a sealed tally's text carries, read off the text without parsing it (for
/// the consumer's log; the origin parses tallies properly). Nothing in a row's text but
/// its count follows `,"n":` (hosts, codes and countries hold no quotes).
pub fn clicks_in(body: &str) -> u64 {
    body.match_indices(r#","n":"#)
        .filter_map(|(i, m)| {
            let digits = &body[i + m.len()..];
            let end = digits
                .find(|c: char| !c.is_ascii_digit())
                .unwrap_or(digits.len());
            digits[..end].parse::<u64>().ok()
        })
        .sum()
}

/// Sealed tallies not yet taken by the queue, oldest first, at most
/// [`MAX_OUTBOX_BYTES`]; what falls out is counted in `dropped`.
#[derive(Debug, Default)]
pub struct Outbox {
    messages: VecDeque<Sealed>,
    bytes: usize,
    dropped: u64,
}

impl Outbox {
    /// Keeps `message` to send; the oldest go while the outbox is over its bound.
    pub fn keep(&mut self, message: Sealed) {
        self.bytes += message.body.len();
        self.messages.push_back(message);
        while self.bytes > MAX_OUTBOX_BYTES {
            let Some(old) = self.messages.pop_front() else {
                break;
            };
            self.bytes -= old.body.len();
            self.dropped += old.clicks;
        }
    }

    /// Everything kept, to send now; what fails goes back through [`Outbox::keep`].
    pub fn take(&mut self) -> Vec<Sealed> {
        self.bytes = 0;
        self.messages.drain(..).collect()
    }

    /// The clicks dropped since this was last asked, for the next tally to report.
    pub fn take_dropped(&mut self) -> u64 {
        std::mem::take(&mut self.dropped)
    }

    pub fn is_empty(&self) -> bool {
        self.messages.is_empty()
    }
}

/// The health report's maps as the API describes them (origin only): keyed by a status
/// or a fault's name in JSON's strings, each count bounded to the integers JSON carries
/// exactly. The derive would describe a `u16` key as a number, which no JSON key is.
#[cfg(feature = "openapi")]
mod schema {
    use super::Fault;
    use utoipa::openapi::schema::{ObjectBuilder, Schema, SchemaType, Type};
    use utoipa::openapi::RefOr;

    /// The largest integer the click types' schemas allow (2^53 - 1, exact in every JSON
    /// reader).
    const SAFE_INTEGER: f64 = 9_007_199_254_740_991.0;

    fn count() -> ObjectBuilder {
        ObjectBuilder::new()
            .schema_type(SchemaType::Type(Type::Integer))
            .minimum(Some(0.0))
            .maximum(Some(SAFE_INTEGER))
    }

    fn counts_by(names: ObjectBuilder, description: &str) -> Schema {
        Schema::Object(
            ObjectBuilder::new()
                .schema_type(SchemaType::Type(Type::Object))
                .description(Some(description))
                .property_names(Some(names.build()))
                .additional_properties(Some(RefOr::T(Schema::Object(count().build()))))
                .build(),
        )
    }

    /// `Health::answers`: counts by HTTP status, each key three digits.
    pub(crate) fn status_counts() -> Schema {
        counts_by(
            ObjectBuilder::new()
                .schema_type(SchemaType::Type(Type::String))
                .pattern(Some("^[1-5][0-9]{2}$")),
            "Answers by HTTP status",
        )
    }

    /// `Health::faults`: counts by the name of a fault.
    pub(crate) fn fault_counts() -> Schema {
        let names = Fault::ALL
            .iter()
            .filter_map(|f| serde_json::to_value(f).ok())
            .collect::<Vec<_>>();
        counts_by(
            ObjectBuilder::new()
                .schema_type(SchemaType::Type(Type::String))
                .enum_values(Some(names)),
            "Faults by kind",
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clicks::event::Visitor;
    use proptest::prelude::*;

    fn event(link: &str, at: i64, status: u16, country: Option<&str>) -> ClickEvent {
        ClickEvent::new(
            "x".into(),
            link.into(),
            Some(3),
            at,
            status,
            Visitor::describe(
                Some("Mozilla/5.0 (iPhone)"),
                Some("https://news.example/a"),
                country,
            ),
        )
    }

    fn ids() -> impl FnMut() -> String {
        let mut i = 0;
        move || {
            i += 1;
            format!("b{i}")
        }
    }

    fn parse(sealed: &[Sealed]) -> Vec<ClickTally> {
        sealed
            .iter()
            .map(|s| serde_json::from_str(&s.body).expect("a tally"))
            .collect()
    }

    #[test]
    fn alike_clicks_become_one_row_with_their_count() {
        let mut tally = Tally::default();
        let hour = 1_790_000_000_000 / HOUR_MS * HOUR_MS;
        for i in 0..1_000 {
            tally.add(&TallyRow::of(event(
                "s.example/hot",
                hour + i,
                302,
                Some("DE"),
            )));
        }
        tally.add(&TallyRow::of(event(
            "s.example/hot",
            hour + 5,
            302,
            Some("FR"),
        )));
        tally.add(&TallyRow::of(event(
            "s.example/hot",
            hour + HOUR_MS,
            302,
            Some("DE"),
        )));
        tally.add(&TallyRow::of(
            event("s.example/hot", hour, 302, Some("DE")).with_variant(Some(1)),
        ));
        assert_eq!(tally.clicks(), 1_003);
        let sealed = tally.seal(hour + 1_000, 0, None, ids());
        assert!(tally.is_empty());
        assert_eq!(sealed.len(), 1, "one message for a window's clicks");
        let tallies = parse(&sealed);
        let mut counts: Vec<u32> = tallies[0].rows.iter().map(|r| r.n).collect();
        counts.sort();
        assert_eq!(counts, [1, 1, 1, 1_000]);
        let big = tallies[0]
            .rows
            .iter()
            .find(|r| r.n == 1_000)
            .expect("the hot row");
        assert_eq!(big.hour, hour);
        assert_eq!(big.country.as_deref(), Some("DE"));
        assert_eq!(big.referrer_host.as_deref(), Some("news.example"));
        assert!(tallies[0].rows.iter().all(|r| r.problem("b1").is_none()));
        assert_eq!(sealed[0].clicks, 1_003);
        assert_eq!(clicks_in(&sealed[0].body), 1_003);
    }

    #[test]
    fn a_large_window_is_split_into_messages_under_the_bound_with_ids_of_their_own() {
        let mut tally = Tally::default();
        for i in 0..5_000 {
            tally.add(&TallyRow::of(event(
                &format!("s.example/c{i}"),
                0,
                302,
                None,
            )));
        }
        let sealed = tally.seal(1, 0, None, ids());
        assert!(sealed.len() > 1);
        assert!(sealed.iter().all(|s| s.body.len() <= MAX_TALLY_BYTES));
        let tallies = parse(&sealed);
        let mut batch_ids: Vec<&str> = tallies.iter().map(|t| t.batch_id.as_str()).collect();
        batch_ids.dedup();
        assert_eq!(batch_ids.len(), sealed.len());
        assert_eq!(tallies.iter().map(ClickTally::visits).sum::<u64>(), 5_000);
    }

    #[test]
    fn what_falls_out_of_a_full_outbox_is_reported_by_the_next_tally() {
        let mut outbox = Outbox::default();
        let mut tally = Tally::default();
        let mut kept = 0;
        // The queue refuses everything: windows of 1,000 distinct clicks pile up.
        for w in 0..40 {
            for i in 0..1_000 {
                tally.add(&TallyRow::of(event(
                    &format!("s.example/w{w}c{i}"),
                    0,
                    302,
                    None,
                )));
            }
            for s in tally.seal(w, outbox.take_dropped(), None, ids()) {
                kept += s.clicks;
                outbox.keep(s);
            }
        }
        let held: u64 = outbox.take().iter().map(|s| s.clicks).sum();
        let dropped = outbox.take_dropped();
        assert!(dropped > 0, "the outbox is bounded");
        assert_eq!(
            held + dropped,
            40_000,
            "every click is held or counted as dropped"
        );
        assert!(kept >= 40_000);
        // The next window says so, even with no click of its own.
        let next = parse(&tally.seal(99, dropped, None, ids()));
        assert_eq!(next.len(), 1);
        assert_eq!(next[0].dropped, dropped);
        assert!(next[0].rows.is_empty());
    }

    #[test]
    fn an_isolates_health_rides_with_its_first_message_or_alone() {
        let mut counts = HealthCounts::default();
        for status in [302, 302, 404, 503] {
            counts.answered(status);
        }
        counts.fault(Fault::KvRead);
        counts.fault(Fault::QueueRefused);
        counts.fault(Fault::QueueRefused);
        let json = counts.to_json(Some("FRA"), Some(1_500));
        let health: Health = serde_json::from_str(&json).expect("a report reads as Health");
        assert_eq!(
            health,
            Health {
                colo: Some("FRA".into()),
                answers: [(302, 2), (404, 1), (503, 1)].into_iter().collect(),
                faults: [(Fault::KvRead, 1), (Fault::QueueRefused, 2)]
                    .into_iter()
                    .collect(),
                denylist_age_ms: Some(1_500),
            }
        );
        // A location name that is not one is left out, not written into the JSON.
        let odd: Health =
            serde_json::from_str(&counts.to_json(Some("F\"R"), None)).expect("still a report");
        assert_eq!((odd.colo, odd.denylist_age_ms), (None, None));
        assert!(HealthCounts::default().is_empty() && !counts.is_empty());
        let mut tally = Tally::default();
        let alone = parse(&tally.seal(7, 0, Some(json.clone()), ids()));
        assert_eq!(alone.len(), 1, "a window without clicks still reports");
        assert_eq!(alone[0].health.as_ref(), Some(&health));
        assert_eq!(alone[0].health.as_ref().map(|h| h.answers[&302]), Some(2));
        for i in 0..5_000 {
            tally.add(&TallyRow::of(event(
                &format!("s.example/c{i}"),
                0,
                302,
                None,
            )));
        }
        let sealed = tally.seal(8, 0, Some(json), ids());
        let tallies = parse(&sealed);
        assert!(tallies.len() > 1);
        let reports: Vec<&Health> = tallies.iter().filter_map(|t| t.health.as_ref()).collect();
        assert_eq!(reports, [&health], "reported once, not once a message");
        assert!(sealed.iter().all(|s| s.body.len() <= MAX_TALLY_BYTES));
        assert_eq!(clicks_in(&sealed[0].body), sealed[0].clicks);
        // Nothing to say, nothing sent.
        assert!(tally.seal(9, 0, None, ids()).is_empty());
    }

    #[test]
    fn a_fault_a_newer_edge_names_is_counted_as_other() {
        let health: Health =
            serde_json::from_str(r#"{"answers":{"302":4},"faults":{"kv_read":1,"made_up":2}}"#)
                .expect("a report from a newer edge still reads");
        assert_eq!(health.answers[&302], 4);
        assert_eq!(health.faults[&Fault::KvRead], 1);
        assert_eq!(health.faults[&Fault::Other], 2);
        for (i, f) in Fault::ALL.into_iter().enumerate() {
            assert_eq!(
                serde_json::to_string(&f).ok(),
                Some(format!(r#""{}""#, f.as_str()))
            );
            assert_eq!(f as usize, i, "ALL is in discriminant order");
        }
    }

    #[test]
    fn a_row_the_origin_cannot_count_says_why() {
        let mut row = TallyRow::of(event("s.example/a", 0, 302, None));
        assert_eq!(row.problem("b1"), Some("n must be from 1 to 10,000,000"));
        row.n = 2;
        assert_eq!(row.problem("b1"), None);
        row.hour += 1;
        assert!(row.problem("b1").is_some());
        row.hour -= 1;
        row.link = "no-route".into();
        assert!(row.problem("b1").is_some());
    }

    proptest! {
        /// Whatever clicks come, the sealed messages carry each exactly once.
        #[test]
        fn sealing_keeps_every_click(
            clicks in proptest::collection::vec((0usize..300, 0i64..3, 0usize..3), 0..3_000),
            dropped in 0u64..5,
        ) {
            let mut tally = Tally::default();
            let statuses = [302u16, 404, 410];
            for (link, hour, status) in &clicks {
                tally.add(&TallyRow::of(event(
                    &format!("s.example/{link}"),
                    hour * HOUR_MS,
                    statuses[*status],
                    None,
                )));
            }
            let sealed = tally.seal(0, dropped, None, ids());
            let tallies = parse(&sealed);
            prop_assert_eq!(tallies.iter().map(ClickTally::visits).sum::<u64>(), clicks.len() as u64);
            prop_assert_eq!(tallies.iter().map(|t| t.dropped).sum::<u64>(), dropped);
            prop_assert!(sealed.iter().all(|s| s.body.len() <= MAX_TALLY_BYTES));
        }
    }
}

//! Clicks: counted after the response is chosen, delivered to the origin by the
//! worker's own queue consumer.
//!
//! The redirect path adds each click to the isolate's tally (`shared::tally`); once a
//! window, inside `waitUntil`, the tally goes to the `CLICKS` queue as a few messages
//! with the isolate's health report, so the visitor's response never waits on it and
//! the queue takes a message a window instead of one a click (docs/analytics.md). The
//! queue keeps what it accepted: its consumer ([`consume`]) posts batches to the
//! origin's `/v1/edge/clicks` and asks for them again, later, while the origin cannot
//! take them. The origin counts each message's id once, so a batch delivered twice
//! counts once.

use crate::{names, random};
use futures_util::future::{select, Either};
use shared::clicks::person::{self, PersonKey};
use shared::clicks::{ClickEvent, Visitor, VisitorBudget, CLICKS_PATH, CLICKS_PER_VISITOR_MINUTE};
use shared::password::Client;
use shared::scanners;
use shared::tally::{Fault, Outbox, Tally, TallyRow, TALLY_WINDOW_MS};
use shared::RouteKey;
use std::time::Duration;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use worker::js_sys::{Array, Object, Promise, Reflect};
use worker::wasm_bindgen_futures::{future_to_promise, JsFuture};
use worker::worker_sys::Context;
use worker::{
    console_error, console_log, web_sys, Delay, Env, Fetch, Headers, Method, Request, RequestInit,
};

/// The queue binding (producer and consumer).
const CLICKS: &str = "CLICKS";
/// The longest the consumer waits for the origin before retrying the batch later.
const POST_TIMEOUT: Duration = Duration::from_secs(10);
/// Retry delays: `CLICK_RETRY_BASE_S` (default 5 s) doubled per attempt, up to this.
const MAX_RETRY_DELAY_S: u32 = 300;
const RETRY_BASE_S: u32 = 5;

#[wasm_bindgen]
extern "C" {
    /// A queue producer binding.
    type Queue;
    #[wasm_bindgen(method, catch)]
    fn send(this: &Queue, body: &str) -> Result<Promise, JsValue>;

    /// A batch handed to the consumer.
    pub type MessageBatch;
    #[wasm_bindgen(method, getter)]
    fn messages(this: &MessageBatch) -> Array;
    #[wasm_bindgen(method, js_name = retryAll)]
    fn retry_all(this: &MessageBatch, options: &Object);

    type Message;
    #[wasm_bindgen(method, getter)]
    fn body(this: &Message) -> JsValue;
    #[wasm_bindgen(method, getter)]
    fn attempts(this: &Message) -> f64;
}

/// Visitors whose click budgets the isolate tracks apart (8 bytes each).
const BUDGET_SLOTS: usize = 4096;

thread_local! {
    // The isolate's per-visitor click budgets, made on the first click.
    static BUDGET: std::cell::RefCell<Option<VisitorBudget>> = const { std::cell::RefCell::new(None) };
    // The key that names a visit-limited link's visitors, derived on the first such click.
    static PERSON_KEY: std::cell::RefCell<Option<PersonKey>> = const { std::cell::RefCell::new(None) };
}

/// What a visit reports: the link, the version answered from, and the response's status.
pub(crate) struct Click<'a> {
    pub(crate) route: &'a RouteKey,
    pub(crate) version: Option<u64>,
    pub(crate) status: u16,
    pub(crate) at_ms: u64,
    /// The split variant the visit got.
    pub(crate) variant: Option<u8>,
    /// The visitor's country, when the decision already read it (`None`: read it here).
    pub(crate) country: Option<Option<&'a str>>,
    /// The link counts scanners' visits as people's (`scanner_check: false`).
    pub(crate) scanners_unchecked: bool,
    /// The link has a visit limit not yet reached: a person's click names them.
    pub(crate) limited: bool,
}

/// Schedules the window's send if none is: the first visit of a window does,
/// [`TALLY_WINDOW_MS`] later, inside its `waitUntil`, so an isolate that goes idle still
/// sends what it counted (its clicks, and its health). One check of a flag per visit.
pub(crate) fn schedule(env: &Env, ctx: &Context, request: &web_sys::Request) {
    if TALLYING.with_borrow(|t| t.scheduled) {
        return;
    }
    let Ok(queue) = Reflect::get(env, &names::js(CLICKS)) else {
        return;
    };
    if queue.is_undefined() {
        // A deployment without the queue binding records no clicks and reports nothing.
        return;
    }
    crate::health::note_location(request);
    TALLYING.with_borrow_mut(|t| t.scheduled = true);
    let queue: Queue = queue.unchecked_into();
    let window = future_to_promise(async move {
        Delay::from(Duration::from_millis(TALLY_WINDOW_MS)).await;
        send_window(&queue).await;
        Ok(JsValue::UNDEFINED)
    });
    if let Err(e) = ctx.wait_until(&window) {
        TALLYING.with_borrow_mut(|t| t.scheduled = false);
        console_error!("clicks: cannot schedule the window's send: {e:?}");
    }
}

/// Counts the click in the isolate's tally, sent by the window [`schedule`] set up.
/// Whatever fails here is logged; the visitor already has their answer.
pub(crate) fn report(env: &Env, request: &web_sys::Request, click: Click<'_>) {
    let Ok(queue) = Reflect::get(env, &names::js(CLICKS)) else {
        return;
    };
    if queue.is_undefined() {
        // A deployment without the queue binding records no clicks.
        return;
    }
    let headers = request.headers();
    let header = |name: &'static str| headers.get(name).ok().flatten();
    // One visitor's flood is answered but not counted past its budget. Cloudflare sets
    // `CF-Connecting-IP` itself (so does `wrangler dev`); a request without it is not
    // limited.
    let ip = header("cf-connecting-ip");
    if let Some(ip) = &ip {
        let now_s = click.at_ms / 1000;
        let admitted = BUDGET.with_borrow_mut(|b| {
            b.get_or_insert_with(|| VisitorBudget::new(BUDGET_SLOTS, random::seed()))
                .admit(ip, now_s, CLICKS_PER_VISITOR_MINUTE)
        });
        if !admitted {
            return;
        }
    }
    // `request.cf`, read at most once for the country and the network.
    let cf = std::cell::OnceCell::new();
    let cf = || cf.get_or_init(|| crate::client::cf(request)).as_ref();
    let read;
    let country = match click.country {
        Some(country) => country,
        None => {
            read = cf().and_then(crate::client::country_of);
            read.as_deref()
        }
    };
    let mut visitor = Visitor::describe(
        header("user-agent").as_deref(),
        header("referer").as_deref(),
        country,
    );
    // A scanner's visit (a mail gateway's network, a prefetch) is a bot's: it never uses
    // up a `max_visits` link (docs/scanners.md), unless the link's owner turned that off.
    if !visitor.bot && !click.scanners_unchecked {
        visitor = visitor.screened(scanners::classify(
            cf().and_then(crate::client::asn_of),
            header,
        ));
    }
    // A person's click on a link with a visit limit names them, so a refresh does not
    // use the limit up (docs/api.md). Without an address each click is a person of its
    // own, as every click was before.
    let person = (click.limited && !visitor.bot).then(|| {
        let at = i64::try_from(click.at_ms).unwrap_or(i64::MAX);
        person::format(match &ip {
            Some(ip) => PERSON_KEY.with_borrow_mut(|k| {
                k.get_or_insert_with(|| {
                    PersonKey::derive(crate::keys::keys(env).as_ref().and_then(|r| r.oldest()))
                })
                .person(click.route.as_str(), Client::named(Some(ip)), at)
            }),
            None => random::seed(),
        })
    });
    let mut row = TallyRow::of(
        ClickEvent::new(
            String::new(),
            click.route.to_string(),
            click.version,
            i64::try_from(click.at_ms).unwrap_or(i64::MAX),
            click.status,
            visitor,
        )
        .with_variant(click.variant),
    );
    row.person = person;
    TALLYING.with_borrow_mut(|t| t.tally.add(&row));
}

/// An isolate's clicks: the window being counted, the messages the queue has not taken
/// yet, and whether the window's send is scheduled.
#[derive(Default)]
struct Tallying {
    tally: Tally,
    outbox: Outbox,
    scheduled: bool,
}

thread_local! {
    static TALLYING: std::cell::RefCell<Tallying> = std::cell::RefCell::new(Tallying::default());
}

/// Seals the window and sends it with whatever the queue refused before; what it
/// refuses now is kept for the next window (and tried again here a few times, within
/// `waitUntil`'s 30 s, in case no click comes to schedule one).
async fn send_window(queue: &Queue) {
    let now_ms = worker::Date::now().as_millis();
    let health = crate::health::take(crate::denylist::age_ms(now_ms));
    let mut messages = TALLYING.with_borrow_mut(|t| {
        t.scheduled = false;
        let dropped = t.outbox.take_dropped();
        for sealed in t.tally.seal(
            i64::try_from(now_ms).unwrap_or(i64::MAX),
            dropped,
            health,
            random::uuid,
        ) {
            t.outbox.keep(sealed);
        }
        t.outbox.take()
    });
    for retry_s in [0, 2, 8] {
        if retry_s > 0 {
            Delay::from(Duration::from_secs(retry_s)).await;
            // Another window may have sent what was kept meanwhile.
            messages = TALLYING.with_borrow_mut(|t| t.outbox.take());
        }
        for message in messages.drain(..) {
            let sent = match queue.send(&message.body) {
                Ok(promise) => JsFuture::from(promise).await.map(|_| ()),
                Err(e) => Err(e),
            };
            if let Err(e) = sent {
                console_error!(
                    "clicks: the queue refused a tally of {} clicks ({e:?}); kept to send again",
                    message.clicks
                );
                crate::health::fault(Fault::QueueRefused);
                TALLYING.with_borrow_mut(|t| t.outbox.keep(message));
            }
        }
        if TALLYING.with_borrow(|t| t.outbox.is_empty()) {
            return;
        }
    }
}

/// How the origin answered a batch.
enum Delivery {
    Done,
    /// Worth sending again later: the origin is down, busy, or not yet configured.
    Retry(String),
    /// The origin will never take it (a malformed batch): dropped, and said so.
    Refused(String),
}

/// The queue consumer: posts a batch to the origin, or has the queue deliver it again.
pub(crate) async fn consume(batch: MessageBatch, env: Env) -> Result<(), JsValue> {
    let messages = batch.messages();
    // Tallies, and single events an edge before tallies may have left in the queue.
    let mut tallies = String::new();
    let mut events = String::new();
    let mut attempts = 1u32;
    let mut clicks = 0u64;
    for m in messages.iter() {
        let m: Message = m.unchecked_into();
        attempts = attempts.max(m.attempts() as u32);
        // Each body is one tally's or one event's JSON, written by this worker;
        // anything else is not ours.
        let Some(body) = m.body().as_string() else {
            continue;
        };
        let list = if body.starts_with(r#"{"batch_id":"#) {
            clicks += shared::tally::clicks_in(&body);
            &mut tallies
        } else if body.starts_with(r#"{"event_id":"#) {
            clicks += 1;
            &mut events
        } else {
            continue;
        };
        list.push(if list.is_empty() { '[' } else { ',' });
        list.push_str(&body);
    }
    if tallies.is_empty() && events.is_empty() {
        return Ok(());
    }
    let mut body = String::from("{");
    for (name, list) in [("tallies", tallies), ("events", events)] {
        if !list.is_empty() {
            if body.len() > 1 {
                body.push(',');
            }
            body.push_str(&format!(r#""{name}":{list}]"#));
        }
    }
    body.push('}');
    match post(&env, body).await {
        Delivery::Done => {
            // One line per batch acknowledged: what an operator tailing the worker (and
            // a test waiting for the queue to drain) counts deliveries by.
            console_log!(
                "clicks: delivered {clicks} clicks in {} messages",
                messages.length()
            );
            Ok(())
        }
        Delivery::Refused(why) => {
            console_error!(
                "clicks: the origin refused a batch of {} messages ({clicks} clicks): {why}",
                messages.length()
            );
            Ok(())
        }
        Delivery::Retry(why) => {
            let base = env
                .var("CLICK_RETRY_BASE_S")
                .ok()
                .and_then(|v| v.to_string().parse().ok())
                .unwrap_or(RETRY_BASE_S);
            let delay = shared::clicks::retry_delay_s(base, attempts, MAX_RETRY_DELAY_S);
            console_error!(
                "clicks: delivering {} messages ({clicks} clicks) failed ({why}); retrying in {delay} s",
                messages.length()
            );
            let options = Object::new();
            Reflect::set(&options, &names::js("delaySeconds"), &JsValue::from(delay))?;
            batch.retry_all(&options);
            Ok(())
        }
    }
}

async fn post(env: &Env, body: String) -> Delivery {
    let (Ok(origin), Ok(token)) = (env.var("ORIGIN_URL"), env.secret("ORIGIN_TOKEN")) else {
        return Delivery::Retry("ORIGIN_URL or ORIGIN_TOKEN is not set".into());
    };
    let url = format!("{}{CLICKS_PATH}", origin.to_string().trim_end_matches('/'));
    let headers = Headers::new();
    let set = headers
        .set("authorization", &format!("Bearer {token}"))
        .and_then(|()| headers.set("content-type", "application/json"));
    if let Err(e) = set {
        return Delivery::Retry(e.to_string());
    }
    let mut init = RequestInit::new();
    init.with_method(Method::Post)
        .with_headers(headers)
        .with_body(Some(JsValue::from_str(&body)));
    let request = match Request::new_with_init(&url, &init) {
        Ok(request) => request,
        Err(e) => return Delivery::Retry(e.to_string()),
    };
    let fetcher = Fetch::Request(request);
    let sent = fetcher.send();
    let status = match select(Box::pin(sent), Box::pin(Delay::from(POST_TIMEOUT))).await {
        Either::Left((Ok(response), _)) => response.status_code(),
        Either::Left((Err(e), _)) => return Delivery::Retry(e.to_string()),
        Either::Right(_) => return Delivery::Retry(format!("no answer within {POST_TIMEOUT:?}")),
    };
    match status {
        200..=299 => Delivery::Done,
        // Malformed: sending it again cannot help.
        400 | 413 | 422 => Delivery::Refused(format!("status {status}")),
        // Down, busy, or the token not yet set: worth another try.
        status => Delivery::Retry(format!("status {status}")),
    }
}

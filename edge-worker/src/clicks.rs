//! Click events: reported after the response is chosen, delivered to the origin by the
//! worker's own queue consumer.
//!
//! The redirect path hands each click to the `CLICKS` queue inside `waitUntil`, so the
//! visitor's response never waits on it (docs/analytics.md). The queue keeps what it
//! accepted: its consumer ([`consume`]) posts batches to the origin's
//! `/v1/edge/clicks` and asks for them again, later, while the origin cannot take them.
//! The origin counts each event id once, so a batch delivered twice counts once.

use crate::names;
use futures_util::future::{select, Either};
use shared::clicks::{ClickEvent, Visitor, VisitorBudget, CLICKS_PATH, CLICKS_PER_VISITOR_MINUTE};
use shared::RouteKey;
use std::time::Duration;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use worker::js_sys::{Array, Object, Promise, Reflect};
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
    #[wasm_bindgen(js_namespace = crypto, js_name = randomUUID)]
    fn random_uuid() -> String;

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
}

/// A seed no visitor can predict: from the runtime's random UUID.
fn seed() -> u64 {
    random_uuid()
        .bytes()
        .fold(0u64, |h, b| h.rotate_left(5) ^ u64::from(b))
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
}

/// Sends the click to the queue in the background. Whatever fails here is logged; the
/// visitor already has their answer.
pub(crate) fn report(env: &Env, ctx: &Context, request: &web_sys::Request, click: Click<'_>) {
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
    // `CF-Connecting-IP` itself; a request without it (only in local development) is
    // not limited.
    if let Some(ip) = header("cf-connecting-ip") {
        let now_s = click.at_ms / 1000;
        let admitted = BUDGET.with_borrow_mut(|b| {
            b.get_or_insert_with(|| VisitorBudget::new(BUDGET_SLOTS, seed()))
                .admit(&ip, now_s, CLICKS_PER_VISITOR_MINUTE)
        });
        if !admitted {
            return;
        }
    }
    let read;
    let country = match click.country {
        Some(country) => country,
        None => {
            read = crate::client::country(request);
            read.as_deref()
        }
    };
    let visitor = Visitor::describe(
        header("user-agent").as_deref(),
        header("referer").as_deref(),
        country,
    );
    let event = ClickEvent::new(
        random_uuid(),
        click.route.to_string(),
        click.version,
        i64::try_from(click.at_ms).unwrap_or(i64::MAX),
        click.status,
        visitor,
    )
    .with_variant(click.variant);
    let Ok(body) = serde_json::to_string(&event) else {
        return;
    };
    match queue.unchecked_into::<Queue>().send(&body) {
        Ok(sent) => {
            if let Err(e) = ctx.wait_until(&sent) {
                console_error!("click for {}: {e:?}", click.route);
            }
        }
        Err(e) => console_error!("click for {}: the queue refused it: {e:?}", click.route),
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
    let mut body = String::from(r#"{"events":["#);
    let mut attempts = 1u32;
    let mut first = true;
    for m in messages.iter() {
        let m: Message = m.unchecked_into();
        attempts = attempts.max(m.attempts() as u32);
        // Each body is one event's JSON, written by `report`; anything else is not ours.
        let Some(event) = m.body().as_string().filter(|b| b.starts_with('{')) else {
            continue;
        };
        if !first {
            body.push(',');
        }
        body.push_str(&event);
        first = false;
    }
    body.push_str("]}");
    if first {
        return Ok(());
    }
    match post(&env, body).await {
        Delivery::Done => {
            // One line per batch acknowledged: what an operator tailing the worker (and
            // a test waiting for the queue to drain) counts deliveries by.
            console_log!("clicks: delivered {} events", messages.length());
            Ok(())
        }
        Delivery::Refused(why) => {
            console_error!(
                "clicks: the origin refused a batch of {}: {why}",
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
                "clicks: delivering {} events failed ({why}); retrying in {delay} s",
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

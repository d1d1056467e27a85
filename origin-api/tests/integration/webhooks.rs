//! Webhooks on every database available: endpoints registered, checked and kept to
//! their owner; every change told once, signed, in order, to a receiver that was down
//! for a while; 410 disables; failing for too long disables; a redelivery sends again.

use crate::common::{apis_with, Api, Reply};
use axum::http::StatusCode;
use hop_e2e::poll;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// One delivery as the receiver saw it.
#[derive(Debug, Clone)]
struct Received {
    id: String,
    timestamp: i64,
    signature: String,
    body: String,
}

impl Received {
    fn json(&self) -> Value {
        serde_json::from_str(&self.body).expect("a JSON body")
    }

    /// `type code version` of the event.
    fn summary(&self) -> String {
        let v = self.json();
        let data = &v["data"];
        format!(
            "{} {} {}",
            v["type"].as_str().unwrap_or_default(),
            data["code"]
                .as_str()
                .or(data["domain"].as_str())
                .unwrap_or_default(),
            data["version"]
        )
    }

    /// Whether one of the signatures it carries is `secret`'s, checked as
    /// docs/webhooks.md tells a receiver in Rust to (not with Hop's own signing code).
    fn signed_with(&self, secret: &str) -> bool {
        let now = origin_api::model::time::now_ms() / 1000;
        let ts = self.timestamp.to_string();
        verify(
            secret,
            &self.id,
            &ts,
            &self.signature,
            self.body.as_bytes(),
            now,
        )
    }
}

// docs/webhooks.md, "Verifying a delivery", Rust: keep the two the same.
use base64::{engine::general_purpose::STANDARD, Engine};
use hmac::{Hmac, Mac};
use sha2::Sha256;

/// Whether a delivery is Hop's: `body` exactly as received, `now` in Unix seconds.
fn verify(
    secret: &str,
    id: &str,
    timestamp: &str,
    signatures: &str,
    body: &[u8],
    now: i64,
) -> bool {
    let fresh = timestamp
        .parse::<i64>()
        .is_ok_and(|t| (now - t).abs() <= 300);
    let key = secret
        .strip_prefix("whsec_")
        .and_then(|k| STANDARD.decode(k).ok());
    let (true, Some(key)) = (fresh, key) else {
        return false;
    };
    let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(&key) else {
        return false;
    };
    mac.update(format!("{id}.{timestamp}.").as_bytes());
    mac.update(body);
    signatures
        .split(' ')
        .filter_map(|s| s.strip_prefix("v1,"))
        .filter_map(|s| STANDARD.decode(s).ok())
        .any(|sig| mac.clone().verify_slice(&sig).is_ok()) // constant time
}

#[test]
fn the_docs_check_accepts_the_specifications_example_and_nothing_else() {
    let (secret, id, body) = (
        "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
        "msg_p5jXN8AQM9LWM0D4loKWxJek",
        br#"{"test": 2432232314}"#,
    );
    let sig = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";
    assert!(verify(secret, id, "1614265330", sig, body, 1_614_265_330));
    assert!(verify(
        secret,
        id,
        "1614265330",
        &format!("v1,bm90IHRoaXM= {sig}"),
        body,
        1_614_265_400
    ));
    assert!(!verify(
        secret,
        id,
        "1614265330",
        sig,
        body,
        1_614_265_330 + 301
    ));
    assert!(!verify(
        secret,
        id,
        "1614265330",
        sig,
        br#"{"test": 2432232315}"#,
        1_614_265_330
    ));
    assert!(!verify(
        secret,
        "msg_other",
        "1614265330",
        sig,
        body,
        1_614_265_330
    ));
}

/// A local receiver answering every delivery with `status` (settable), keeping what
/// it got while it answered 2xx.
#[derive(Clone)]
struct Receiver {
    url: String,
    status: Arc<AtomicU16>,
    got: Arc<Mutex<Vec<Received>>>,
    tried: Arc<AtomicU16>,
}

impl Receiver {
    async fn start(status: u16) -> Receiver {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("test setup");
        let url = format!("http://{}/hook", listener.local_addr().expect("test setup"));
        let r = Receiver {
            url,
            status: Arc::new(AtomicU16::new(status)),
            got: Arc::default(),
            tried: Arc::default(),
        };
        let app = axum::Router::new().route(
            "/hook",
            axum::routing::post({
                let r = r.clone();
                move |headers: axum::http::HeaderMap, body: String| {
                    let r = r.clone();
                    async move {
                        r.tried.fetch_add(1, Ordering::SeqCst);
                        let status = r.status.load(Ordering::SeqCst);
                        if (200..300).contains(&status) {
                            let h = |n: &str| {
                                headers
                                    .get(n)
                                    .and_then(|v| v.to_str().ok())
                                    .unwrap_or_default()
                                    .to_owned()
                            };
                            r.got.lock().expect("lock").push(Received {
                                id: h("webhook-id"),
                                timestamp: h("webhook-timestamp").parse().unwrap_or(0),
                                signature: h("webhook-signature"),
                                body,
                            });
                        }
                        StatusCode::from_u16(status).unwrap_or(StatusCode::OK)
                    }
                }
            }),
        );
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        r
    }

    fn set(&self, status: u16) {
        self.status.store(status, Ordering::SeqCst);
    }

    fn got(&self) -> Vec<Received> {
        self.got.lock().expect("lock").clone()
    }
}

const FLAGS: &[&str] = &[
    "--webhook-allow-private",
    "true",
    "--webhook-retry-schedule",
    "1s",
    "--edge-token",
    "edge-token-webhooks",
];

async fn hooks(api: &Api, token: &str, body: Value) -> Reply {
    api.post_json(token, "/v1/webhooks", &body).await
}

#[tokio::test]
async fn endpoints_are_checked_and_kept_to_their_owner() {
    for (api, t) in apis_with("webhooks-endpoints", &[]).await {
        let acme = api.key("acme", false).await;
        let other = api.key("other", false).await;
        let admin = api.key("ops", true).await;
        let limited = api.key_limited_to("acme", &["s.example"]).await;
        for (url, why) in [
            ("http://hooks.example.com/hop", "https"),
            ("https://127.0.0.1/hop", "loopback"),
            ("https://169.254.169.254/latest", "link-local"),
            ("https://localhost/hop", "network"),
            ("not a url", "valid"),
        ] {
            let r = hooks(&api, &acme, json!({"url": url})).await;
            assert_eq!(
                r.status,
                StatusCode::UNPROCESSABLE_ENTITY,
                "{url}: {}",
                r.text
            );
            assert!(r.text.contains(why), "{url}: {}", r.text);
        }
        let r = hooks(
            &api,
            &acme,
            json!({"url": "https://hooks.example.com/hop", "events": ["link.created", "link.create"]}),
        )
        .await;
        assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.text);
        assert!(
            r.text.contains("link.create\\\"") || r.text.contains("\"link.create\""),
            "{}",
            r.text
        );
        let r = hooks(
            &api,
            &acme,
            json!({"url": "https://hooks.example.com/hop", "scope": "all"}),
        )
        .await;
        assert_eq!(r.status, StatusCode::FORBIDDEN, "{}", r.text);
        let r = hooks(
            &api,
            &limited,
            json!({"url": "https://hooks.example.com/hop"}),
        )
        .await;
        assert_eq!(r.status, StatusCode::FORBIDDEN, "{}", r.text);

        let made = hooks(
            &api,
            &acme,
            json!({"url": "https://hooks.example.com/hop", "events": ["link.deleted", "link.created"], "description": "CRM"}),
        )
        .await;
        assert_eq!(made.status, StatusCode::CREATED, "{}", made.text);
        let id = made.body["id"].as_str().expect("an id").to_owned();
        let secret = made.body["secret"].as_str().expect("a secret").to_owned();
        assert!(secret.starts_with("whsec_"), "{secret}");
        assert_eq!(made.body["events"], json!(["link.created", "link.deleted"]));
        assert_eq!(made.body["scope"], "owner");
        assert_eq!(made.body["state"], "active");

        // The secret is shown once; the owner sees its endpoint, nobody else's key does.
        let read = api
            .call_as(&acme, "GET", &format!("/v1/webhooks/{id}"))
            .await;
        assert_eq!(read.status, StatusCode::OK, "{}", read.text);
        assert!(read.body.get("secret").is_none(), "{}", read.text);
        for path in [
            format!("/v1/webhooks/{id}"),
            format!("/v1/webhooks/{id}/attempts"),
        ] {
            let r = api.call_as(&other, "GET", &path).await;
            assert_eq!(r.status, StatusCode::NOT_FOUND, "{path}: {}", r.text);
        }
        let r = api
            .call_as(&other, "DELETE", &format!("/v1/webhooks/{id}"))
            .await;
        assert_eq!(r.status, StatusCode::NOT_FOUND, "{}", r.text);
        let mine = api.call_as(&other, "GET", "/v1/webhooks").await;
        assert_eq!(mine.body["items"], json!([]), "{}", mine.text);
        let all = hooks(
            &api,
            &admin,
            json!({"url": "https://ops.example.com/hop", "scope": "all"}),
        )
        .await;
        assert_eq!(all.status, StatusCode::CREATED, "{}", all.text);
        assert_eq!(all.body["scope"], "all");
        let listed = api.call_as(&admin, "GET", "/v1/webhooks").await;
        assert_eq!(
            listed.body["items"].as_array().map(Vec::len),
            Some(2),
            "{}",
            listed.text
        );
        let listed = api.call_as(&acme, "GET", "/v1/webhooks").await;
        assert_eq!(
            listed.body["items"].as_array().map(Vec::len),
            Some(1),
            "{}",
            listed.text
        );

        // Changed, rotated (the old secret signs for a while yet), removed.
        let changed = api
            .patch_json(
                &acme,
                &format!("/v1/webhooks/{id}"),
                None,
                json!({"events": ["domain.updated"], "enabled": false}),
            )
            .await;
        assert_eq!(changed.status, StatusCode::OK, "{}", changed.text);
        assert_eq!(changed.body["events"], json!(["domain.updated"]));
        assert_eq!(changed.body["state"], "disabled");
        let rotated = api
            .call_as(&acme, "POST", &format!("/v1/webhooks/{id}/rotate"))
            .await;
        assert_eq!(rotated.status, StatusCode::OK, "{}", rotated.text);
        let new_secret = rotated.body["secret"].as_str().expect("a new secret");
        assert_ne!(new_secret, secret);
        assert!(
            rotated.body["previous_secret_until"].is_string(),
            "{}",
            rotated.text
        );
        let bad = api
            .post_json(
                &acme,
                &format!("/v1/webhooks/{id}/redeliver"),
                &json!({"since": "evt_999999"}),
            )
            .await;
        assert_eq!(bad.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", bad.text);
        let gone = api
            .call_as(&acme, "DELETE", &format!("/v1/webhooks/{id}"))
            .await;
        assert_eq!(gone.status, StatusCode::NO_CONTENT, "{}", gone.text);
        let r = api
            .call_as(&acme, "GET", &format!("/v1/webhooks/{id}"))
            .await;
        assert_eq!(r.status, StatusCode::NOT_FOUND, "{}", r.text);
        t.cleanup().await;
    }
}

/// Waits until endpoint `id` is disabled, for a reason that says `why`.
async fn until_disabled(api: &Api, token: &str, id: &str, why: &str) {
    let disabled = poll(format!("the endpoint is disabled ({why})"))
        .within(Duration::from_secs(30))
        .until(|| async {
            let r = api
                .call_as(token, "GET", &format!("/v1/webhooks/{id}"))
                .await;
            (r.body["state"] == "disabled").then_some(r)
        })
        .await;
    let reason = disabled.body["disabled_reason"]
        .as_str()
        .unwrap_or_default();
    assert!(reason.contains(why), "{}", disabled.text);
}

/// A visit from a person, through the origin's own redirect.
async fn visit(api: &Api, path: &str) -> StatusCode {
    api.visit_as_person(path).await.status
}

#[tokio::test]
async fn every_change_reaches_a_receiver_signed_and_in_order_after_it_was_down() {
    for (api, t) in apis_with("webhooks-deliveries", FLAGS).await {
        let acme = api.key("acme", false).await;
        let admin = api.key("ops", true).await;
        let receiver = Receiver::start(503).await;
        let made = hooks(&api, &acme, json!({"url": receiver.url})).await;
        assert_eq!(made.status, StatusCode::CREATED, "{}", made.text);
        let id = made.body["id"].as_str().expect("an id").to_owned();
        let secret = made.body["secret"].as_str().expect("a secret").to_owned();
        // Another owner's changes are not acme's to hear of.
        let other = api.key("other", false).await;
        let _stop = api.run_dispatcher();

        let create = |code: &str, extra: Value| {
            let mut body =
                json!({"target_url": format!("https://shop.example/{code}"), "code": code});
            if let (Some(b), Some(e)) = (body.as_object_mut(), extra.as_object()) {
                b.extend(e.clone());
            }
            body
        };
        let r = api.create(&acme, create("spring", json!({}))).await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
        let r = api.create(&other, create("theirs", json!({}))).await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
        let r = api
            .post_json(
                &acme,
                "/v1/links/bulk",
                &json!({"links": [create("bulk-a", json!({})), create("bulk-b", json!({}))]}),
            )
            .await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.text);
        let r = api
            .patch_json(
                &acme,
                "/v1/links/s.example/spring",
                Some("\"1\""),
                json!({"target_url": "https://shop.example/spring-2"}),
            )
            .await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.text);
        let ban = api
            .post_json(
                &admin,
                "/v1/bans",
                &json!({"kind": "code", "domain": "s.example", "code": "spring", "reason": "test"}),
            )
            .await;
        assert_eq!(ban.status, StatusCode::CREATED, "{}", ban.text);
        let lift = api
            .call_as(&admin, "DELETE", &format!("/v1/bans/{}", ban.body["id"]))
            .await;
        assert_eq!(lift.status, StatusCode::NO_CONTENT, "{}", lift.text);
        let r = api
            .call_as(&acme, "DELETE", "/v1/links/s.example/bulk-b")
            .await;
        assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.text);
        let r = api
            .create(&acme, create("once", json!({"max_visits": 1})))
            .await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
        assert_eq!(visit(&api, "/once").await, StatusCode::FOUND);
        api.flush_clicks().await;
        let soon = origin_api::model::time::rfc3339(origin_api::model::time::now_ms() + 1_500);
        let r = api
            .create(&acme, create("flash", json!({"expires_at": soon})))
            .await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);

        // While the receiver answers 503, the first event is tried again and again on
        // the schedule, and nothing after it is sent.
        // (The log is read, not the receiver's count: an attempt is logged once its
        // answer is in.)
        let log = poll("three refused attempts in the endpoint's log")
            .within(Duration::from_secs(20))
            .until(|| async {
                let log = api
                    .call_as(&acme, "GET", &format!("/v1/webhooks/{id}/attempts"))
                    .await;
                let n = log.body["items"].as_array().map_or(0, Vec::len);
                (n >= 3).then_some(log)
            })
            .await;
        let attempts = log.body["items"].as_array().cloned().unwrap_or_default();
        assert!(
            attempts.iter().all(|a| a["result"] == "failed"
                && a["status"] == 503
                && a["event_type"] == "link.created"),
            "{}",
            log.text
        );
        let stuck = api
            .call_as(&acme, "GET", &format!("/v1/webhooks/{id}"))
            .await;
        assert!(stuck.body["failing_since"].is_string(), "{}", stuck.text);
        assert!(
            stuck.body["failed_attempts"].as_i64().unwrap_or(0) >= 3,
            "{}",
            stuck.text
        );

        receiver.set(204);
        let expected = [
            "link.created spring 1",
            "link.created bulk-a 1",
            "link.created bulk-b 1",
            "link.updated spring 2",
            "link.banned spring 3",
            "link.unbanned spring 4",
            "link.deleted bulk-b 2",
            "link.created once 1",
            "link.exhausted once 2",
            "link.created flash 1",
            "link.expired flash 1",
        ];
        let got = poll("every event reaches the receiver once it is back")
            .within(Duration::from_secs(30))
            .explain(|| {
                format!(
                    "received: {:?}",
                    receiver
                        .got()
                        .iter()
                        .map(Received::summary)
                        .collect::<Vec<_>>()
                )
            })
            .until(|| async {
                let got = receiver.got();
                (got.len() >= expected.len()).then_some(got)
            })
            .await;
        let summaries: Vec<String> = got.iter().map(Received::summary).collect();
        assert_eq!(summaries, expected, "{}", t.kind());
        for r in &got {
            assert!(r.signed_with(&secret), "{r:?}");
            let v = r.json();
            assert_eq!(
                v["data"]["short_url"],
                format!(
                    "https://s.example/{}",
                    v["data"]["code"].as_str().unwrap_or_default()
                )
            );
            assert!(v["timestamp"].is_string());
            assert_eq!(v["data"]["owner"], "acme");
        }
        let ids: Vec<i64> = got
            .iter()
            .map(|r| {
                r.id.trim_start_matches("evt_")
                    .parse()
                    .expect("an event id")
            })
            .collect();
        assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
        assert_eq!(got[4].json()["data"]["banned"], true);
        assert_eq!(got[5].json()["data"]["banned"], false);
        assert_eq!(
            got[3].json()["data"]["target_url"],
            "https://shop.example/spring-2"
        );
        let healthy = api
            .call_as(&acme, "GET", &format!("/v1/webhooks/{id}"))
            .await;
        assert_eq!(healthy.body["failed_attempts"], 0, "{}", healthy.text);
        assert!(
            healthy.body.get("failing_since").is_none(),
            "{}",
            healthy.text
        );

        // A redelivery sends an event and all after it again, in the same order.
        let since = &got[7].id;
        let r = api
            .post_json(
                &acme,
                &format!("/v1/webhooks/{id}/redeliver"),
                &json!({"since": since}),
            )
            .await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.text);
        let again = poll("the redelivery")
            .within(Duration::from_secs(20))
            .until(|| async {
                let got = receiver.got();
                (got.len() >= expected.len() + 4).then_some(got)
            })
            .await;
        let again: Vec<String> = again[expected.len()..]
            .iter()
            .map(Received::summary)
            .collect();
        assert_eq!(again, expected[7..], "{}", t.kind());

        // A rotation: both secrets sign until the old one's day is over.
        let rotated = api
            .call_as(&acme, "POST", &format!("/v1/webhooks/{id}/rotate"))
            .await;
        let new_secret = rotated.body["secret"]
            .as_str()
            .expect("a secret")
            .to_owned();
        let r = api.create(&acme, create("after-rotation", json!({}))).await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
        let last = poll("the event after the rotation")
            .within(Duration::from_secs(20))
            .until(|| async {
                let got = receiver.got();
                got.last()
                    .filter(|r| r.summary() == "link.created after-rotation 1")
                    .cloned()
            })
            .await;
        assert!(
            last.signed_with(&new_secret) && last.signed_with(&secret),
            "{last:?}"
        );
        assert_eq!(last.signature.split(' ').count(), 2, "{last:?}");

        // 410: the receiver is gone for good, and the endpoint is disabled at once.
        receiver.set(410);
        let r = api.create(&acme, create("after-gone", json!({}))).await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
        until_disabled(&api, &acme, &id, "410").await;
        let tried = receiver.tried.load(Ordering::SeqCst);
        // A witness endpoint registered now: once it has the next event, the dispatcher
        // has had its rounds in which the disabled endpoint could have been called.
        let witness = Receiver::start(204).await;
        let made = hooks(&api, &acme, json!({"url": witness.url})).await;
        assert_eq!(made.status, StatusCode::CREATED, "{}", made.text);
        let r = api.create(&acme, create("not-heard", json!({}))).await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
        poll("the witness hears of the next link")
            .within(Duration::from_secs(20))
            .until(|| async { witness.got().first().cloned() })
            .await;
        let metrics = api.metrics().await;
        assert!(
            metrics.contains("hop_webhook_deliveries_total{result=\"gone\"} 1"),
            "{metrics}"
        );
        assert_eq!(
            receiver.tried.load(Ordering::SeqCst),
            tried,
            "a disabled endpoint is not called"
        );
        t.cleanup().await;
    }
}

#[tokio::test]
async fn an_endpoint_failing_past_the_give_up_time_is_disabled_and_its_events_kept() {
    let mut flags = FLAGS.to_vec();
    flags.extend(["--webhook-give-up-after", "3s"]);
    for (api, t) in apis_with("webhooks-give-up", &flags).await {
        let acme = api.key("acme", false).await;
        let receiver = Receiver::start(500).await;
        let made = hooks(
            &api,
            &acme,
            json!({"url": receiver.url, "events": ["link.created"]}),
        )
        .await;
        let id = made.body["id"].as_str().expect("an id").to_owned();
        let _stop = api.run_dispatcher();
        let r = api
            .create(
                &acme,
                json!({"target_url": "https://shop.example/a", "code": "kept"}),
            )
            .await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
        until_disabled(&api, &acme, &id, "every attempt failed").await;
        // Enabled again, it starts from the event it was stuck at.
        receiver.set(200);
        let r = api
            .patch_json(
                &acme,
                &format!("/v1/webhooks/{id}"),
                None,
                json!({"enabled": true}),
            )
            .await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.text);
        let got = poll("the kept event")
            .within(Duration::from_secs(20))
            .until(|| async { receiver.got().first().cloned() })
            .await;
        assert_eq!(got.summary(), "link.created kept 1");
        t.cleanup().await;
    }
}

#[tokio::test]
async fn a_receiver_that_never_answers_holds_up_no_other_endpoint() {
    let mut flags = FLAGS.to_vec();
    flags.extend(["--webhook-timeout", "60"]);
    for (api, t) in apis_with("webhooks-silent", &flags).await {
        let acme = api.key("acme", false).await;
        let silent = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("test setup");
        let silent_url = format!("http://{}/hook", silent.local_addr().expect("test setup"));
        let holding = tokio::spawn(async move {
            let mut held = Vec::new();
            while let Ok((socket, _)) = silent.accept().await {
                held.push(socket);
            }
        });
        let receiver = Receiver::start(204).await;
        let r = hooks(&api, &acme, json!({"url": silent_url})).await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
        let r = hooks(&api, &acme, json!({"url": receiver.url})).await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
        let _stop = api.run_dispatcher();
        for (i, code) in ["first-one", "second-one", "third-one"]
            .into_iter()
            .enumerate()
        {
            let r = api
                .create(
                    &acme,
                    json!({"target_url": "https://shop.example/x", "code": code}),
                )
                .await;
            assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
            // Well within the silent receiver's 60 seconds.
            poll(format!("{code} reaches the answering receiver"))
                .within(Duration::from_secs(15))
                .until(|| async { (receiver.got().len() > i).then_some(()) })
                .await;
        }
        holding.abort();
        t.cleanup().await;
    }
}

#[tokio::test]
async fn the_operators_command_line_registers_changes_and_removes_by_the_apis_rules() {
    use origin_api::cli::webhooks::run;
    use origin_api::config::WebhooksCommand;
    for (api, t) in apis_with("webhooks-cli", &[]).await {
        let acme = api.key("acme", false).await;
        let webhooks = origin_api::app::webhooks_only(api.state.db().clone(), &api.state.settings);
        let add = |url: &str| WebhooksCommand::Add {
            url: url.to_owned(),
            owner: Some("acme".to_owned()),
            all: false,
            events: vec!["link.banned".to_owned(), "link.unbanned".to_owned()],
            description: Some("SIEM".to_owned()),
        };
        // The same checks as the API's: no endpoint inside the network.
        let refused = run(&webhooks, add("https://10.1.2.3/hook")).await;
        assert!(refused.is_err(), "{refused:?}");
        run(&webhooks, add("https://siem.acme.example/hook"))
            .await
            .expect("registered");
        let listed = api.call_as(&acme, "GET", "/v1/webhooks").await;
        let items = listed.body["items"].as_array().cloned().unwrap_or_default();
        assert_eq!(items.len(), 1, "{}", listed.text);
        assert_eq!(items[0]["events"], json!(["link.banned", "link.unbanned"]));
        assert_eq!(items[0]["owner"], "acme");
        let id = items[0]["id"].as_str().expect("an id").to_owned();
        run(
            &webhooks,
            WebhooksCommand::Set {
                id: id.clone(),
                url: None,
                events: vec![],
                description: None,
                enable: false,
                disable: true,
            },
        )
        .await
        .expect("disabled");
        let read = api
            .call_as(&acme, "GET", &format!("/v1/webhooks/{id}"))
            .await;
        assert_eq!(read.body["state"], "disabled", "{}", read.text);
        run(&webhooks, WebhooksCommand::Remove { id: id.clone() })
            .await
            .expect("removed");
        let read = api
            .call_as(&acme, "GET", &format!("/v1/webhooks/{id}"))
            .await;
        assert_eq!(read.status, StatusCode::NOT_FOUND, "{}", read.text);
        t.cleanup().await;
    }
}

#[tokio::test]
async fn a_closed_hour_of_visits_is_told_once_per_link_with_counts_only() {
    const HOUR: i64 = 3_600_000;
    for (api, t) in apis_with("webhooks-clicks", FLAGS).await {
        let acme = api.key("acme", false).await;
        let receiver = Receiver::start(204).await;
        let made = hooks(
            &api,
            &acme,
            json!({"url": receiver.url, "events": ["clicks.rolled_up"]}),
        )
        .await;
        assert_eq!(made.status, StatusCode::CREATED, "{}", made.text);
        let r = api
            .create(
                &acme,
                json!({"target_url": "https://shop.example/x", "code": "counted-link"}),
            )
            .await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
        // Another owner's link, visited in the same hour: nobody wants its counts.
        let globex = api.key("globex", false).await;
        let r = api
            .create(
                &globex,
                json!({"target_url": "https://shop.example/g", "code": "quiet-link"}),
            )
            .await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
        // Three visits at the edge two hours ago: two people, one bot.
        let now = origin_api::model::time::now_ms();
        let hour = (now - 2 * HOUR) - (now - 2 * HOUR).rem_euclid(HOUR);
        let event = |id: &str, bot: bool| {
            json!({"event_id": id, "link": "s.example/counted-link", "version": 1, "at": hour + 60_000,
                "country": "NL", "referrer_host": "news.example", "device": "mobile", "bot": bot, "status": 302})
        };
        let mut quiet = event("c-4", false);
        quiet["link"] = json!("s.example/quiet-link");
        let batch = json!({"events": [event("c-1", false), event("c-2", false), event("c-3", true),
            quiet]});
        let r = api
            .post_json("edge-token-webhooks", "/v1/edge/clicks", &batch)
            .await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.text);
        api.fold_clicks().await;

        // The sweep starts at the hour the dispatcher first runs in; moved back to the
        // hour of the visits, it tells that hour and every closed one after it.
        let _stop = api.run_dispatcher();
        poll("the hourly sweep starts")
            .within(Duration::from_secs(20))
            .until(|| async { (api.count("webhook_marks").await >= 4).then_some(()) })
            .await;
        api.exec(&format!(
            "UPDATE webhook_marks SET at = {hour} WHERE name = 'clicks'"
        ))
        .await;
        api.exec("UPDATE webhook_marks SET at = -1 WHERE name = 'clicks.link'")
            .await;
        let hours: Vec<(i64, i64)> = api.rows("SELECT hour, visits FROM click_hours").await;
        assert!(
            hours.iter().any(|(h, _)| *h == hour),
            "{hours:?} has no row of hour {hour}"
        );
        let got = poll("the hour's counts")
            .within(Duration::from_secs(20))
            .until(|| async { receiver.got().first().cloned() })
            .await;
        let v = got.json();
        assert_eq!(v["type"], "clicks.rolled_up", "{v}");
        let data = &v["data"];
        assert_eq!(data["code"], "counted-link");
        assert_eq!(data["short_url"], "https://s.example/counted-link");
        assert_eq!(data["hour"], origin_api::model::time::rfc3339(hour));
        assert_eq!(
            (data["visits"].as_i64(), data["bot_visits"].as_i64()),
            (Some(2), Some(1)),
            "{v}"
        );
        let mut keys: Vec<&str> = data
            .as_object()
            .map(|o| o.keys().map(String::as_str).collect())
            .unwrap_or_default();
        keys.sort_unstable();
        assert_eq!(
            keys,
            [
                "bot_visits",
                "code",
                "domain",
                "hour",
                "owner",
                "short_url",
                "version",
                "visits"
            ]
        );
        // Told once: the sweep moved on to the hour still open, past every closed one.
        let open = now - now.rem_euclid(HOUR);
        poll("the sweep reaches the open hour")
            .within(Duration::from_secs(20))
            .until(|| async {
                let at: Vec<(i64,)> = api
                    .rows("SELECT at FROM webhook_marks WHERE name = 'clicks'")
                    .await;
                at.first().filter(|(at,)| *at >= open - HOUR).map(|_| ())
            })
            .await;
        assert_eq!(
            receiver.got().len(),
            1,
            "{:?}",
            receiver
                .got()
                .iter()
                .map(Received::summary)
                .collect::<Vec<_>>()
        );
        // Only the owner whose endpoint asks for them has its counts written.
        assert_eq!(
            api.count("webhook_events WHERE type = 'clicks.rolled_up'")
                .await,
            1,
            "{}",
            t.kind()
        );
        t.cleanup().await;
    }
}

#[tokio::test]
async fn a_domains_change_is_told_to_its_owners_and_to_every_owner_endpoints_only() {
    for (api, t) in apis_with("webhooks-domain", FLAGS).await {
        let admin = api.key("ops", true).await;
        let acme = api.key("acme", false).await;
        let other = api.key("other", false).await;
        let (mine, theirs, ops) = (
            Receiver::start(204).await,
            Receiver::start(204).await,
            Receiver::start(204).await,
        );
        for (token, r, scope) in [
            (&acme, &mine, "owner"),
            (&other, &theirs, "owner"),
            (&admin, &ops, "all"),
        ] {
            let made = hooks(
                &api,
                token,
                json!({"url": r.url, "events": ["domain.updated"], "scope": scope}),
            )
            .await;
            assert_eq!(made.status, StatusCode::CREATED, "{}", made.text);
        }
        let _stop = api.run_dispatcher();
        let made = api
            .post_json(
                &admin,
                "/v1/domains",
                &json!({"domain": "go.acme.example", "owners": ["acme"]}),
            )
            .await;
        assert_eq!(made.status, StatusCode::CREATED, "{}", made.text);
        let changed = api
            .patch_json(
                &admin,
                "/v1/domains/go.acme.example",
                Some("\"1\""),
                json!({"max_age_s": 120}),
            )
            .await;
        assert_eq!(changed.status, StatusCode::OK, "{}", changed.text);
        for r in [&mine, &ops] {
            let got = poll("the domain's change")
                .within(Duration::from_secs(20))
                .until(|| async { r.got().first().cloned() })
                .await;
            let v = got.json();
            assert_eq!(v["type"], "domain.updated", "{v}");
            assert_eq!(v["data"]["domain"], "go.acme.example");
            assert_eq!(v["data"]["version"], changed.body["version"], "{v}");
            assert!(v["data"].get("owners").is_none(), "{v}");
        }
        // The other owner's endpoint went past the event without being told of it.
        poll("every endpoint is past the event")
            .within(Duration::from_secs(20))
            .until(|| async {
                let behind: Vec<(i64,)> = api
                    .rows("SELECT COUNT(*) FROM webhook_endpoints WHERE delivered_through < (SELECT MAX(ordinal) FROM webhook_events)")
                    .await;
                (behind.first() == Some(&(0,))).then_some(())
            })
            .await;
        assert!(theirs.got().is_empty(), "{:?}", theirs.got());
        t.cleanup().await;
    }
}

/// A receiver answering 500 with 200 MB is read only as far as the 200 bytes an attempt
/// keeps: the attempt is logged with them well within the timeout, and the receiver is
/// never asked for more than the socket buffers hold (reading the whole answer, as
/// before, pulled all 200 MB through before the attempt was logged).
#[tokio::test]
async fn a_failing_receivers_huge_answer_is_read_no_further_than_what_is_kept() {
    const ANSWER: u64 = 200 * 1024 * 1024;
    let mut flags = FLAGS.to_vec();
    flags.extend(["--webhook-timeout", "60"]);
    for (api, t) in apis_with("webhooks-huge-answer", &flags).await {
        let acme = api.key("acme", false).await;
        let sent = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("test setup");
        let url = format!("http://{}/hook", listener.local_addr().expect("test setup"));
        let app = axum::Router::new().route(
            "/hook",
            axum::routing::post({
                let sent = sent.clone();
                move || {
                    let sent = sent.clone();
                    async move {
                        let chunk = bytes_of(64 * 1024);
                        let body = futures_util::stream::unfold(0u64, move |at| {
                            let (chunk, sent) = (chunk.clone(), sent.clone());
                            async move {
                                (at < ANSWER).then(|| {
                                    sent.fetch_add(chunk.len() as u64, Ordering::SeqCst);
                                    (Ok::<_, std::io::Error>(chunk), at + 64 * 1024)
                                })
                            }
                        });
                        (
                            StatusCode::INTERNAL_SERVER_ERROR,
                            axum::body::Body::from_stream(body),
                        )
                    }
                }
            }),
        );
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        let made = hooks(&api, &acme, json!({"url": url, "events": ["link.created"]})).await;
        assert_eq!(made.status, StatusCode::CREATED, "{}", made.text);
        let id = made.body["id"].as_str().expect("an id").to_owned();
        let _stop = api.run_dispatcher();
        let r = api
            .create(
                &acme,
                json!({"target_url": "https://shop.example/a", "code": "huge"}),
            )
            .await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
        let attempt = poll("the failed attempt, logged")
            .within(Duration::from_secs(60))
            .until(|| async {
                let log = api
                    .call_as(&acme, "GET", &format!("/v1/webhooks/{id}/attempts"))
                    .await;
                log.body["items"]
                    .as_array()
                    .and_then(|a| a.first().cloned())
            })
            .await;
        assert_eq!(
            (&attempt["result"], &attempt["status"]),
            (&json!("failed"), &json!(500))
        );
        assert_eq!(
            attempt["error"].as_str().map(str::len),
            Some(200),
            "{attempt}"
        );
        let pulled = sent.load(Ordering::SeqCst);
        assert!(
            pulled < 32 * 1024 * 1024,
            "{pulled} bytes of the answer were pulled ({}): more than the buffers hold",
            t.kind()
        );
        server.abort();
        t.cleanup().await;
    }
}

/// 64 KiB of a receiver's answer.
fn bytes_of(n: usize) -> axum::body::Bytes {
    axum::body::Bytes::from(vec![b'x'; n])
}

/// An owner holds at most 20 endpoints (409 for the 21st, nothing written); another
/// owner's are counted apart.
#[tokio::test]
async fn an_owner_holds_at_most_twenty_endpoints() {
    for (api, t) in apis_with("webhooks-cap", FLAGS).await {
        let acme = api.key("acme", false).await;
        let other = api.key("other", false).await;
        let cap = origin_api::webhooks::MAX_ENDPOINTS_PER_OWNER;
        for i in 0..cap {
            let r = hooks(
                &api,
                &acme,
                json!({"url": format!("http://127.0.0.1:9/hook-{i}")}),
            )
            .await;
            assert_eq!(r.status, StatusCode::CREATED, "{i}: {}", r.text);
        }
        let over = hooks(&api, &acme, json!({"url": "http://127.0.0.1:9/one-more"})).await;
        assert_eq!(
            over.status,
            StatusCode::CONFLICT,
            "{}: {}",
            t.kind(),
            over.text
        );
        assert!(over.text.contains("at most 20"), "{}", over.text);
        assert_eq!(api.count("webhook_endpoints").await, cap);
        let theirs = hooks(&api, &other, json!({"url": "http://127.0.0.1:9/theirs"})).await;
        assert_eq!(theirs.status, StatusCode::CREATED, "{}", theirs.text);
        t.cleanup().await;
    }
}

/// One owner's slow receivers hold at most a quarter of the dispatcher's slots: while
/// owner A's twenty endpoints each take 14 s to answer, owner B's deliveries go on at
/// once (before, A's runs took all sixteen slots and B waited for them).
#[tokio::test]
async fn one_owners_slow_endpoints_do_not_delay_anothers() {
    let mut flags = FLAGS.to_vec();
    flags.extend(["--webhook-timeout", "60"]);
    for (api, t) in apis_with("webhooks-fair", &flags).await {
        let slow_owner = api.key("acme", false).await;
        let other = api.key("globex", false).await;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("test setup");
        let base = format!("http://{}", listener.local_addr().expect("test setup"));
        let asked = Arc::new(AtomicU16::new(0));
        let app = axum::Router::new().route(
            "/slow/{n}",
            axum::routing::post({
                let asked = asked.clone();
                move || {
                    let asked = asked.clone();
                    async move {
                        asked.fetch_add(1, Ordering::SeqCst);
                        tokio::time::sleep(Duration::from_secs(14)).await;
                        StatusCode::NO_CONTENT
                    }
                }
            }),
        );
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        for i in 0..origin_api::webhooks::MAX_ENDPOINTS_PER_OWNER {
            let r = hooks(
                &api,
                &slow_owner,
                json!({"url": format!("{base}/slow/{i}")}),
            )
            .await;
            assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
        }
        let receiver = Receiver::start(204).await;
        let r = hooks(&api, &other, json!({"url": receiver.url})).await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
        let _stop = api.run_dispatcher();
        let r = api
            .create(
                &slow_owner,
                json!({"target_url": "https://shop.example/a", "code": "slow-one"}),
            )
            .await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
        // A's deliveries are under way (each holds its slot for 14 s) …
        poll("the slow owner's deliveries start")
            .within(Duration::from_secs(10))
            .until(|| async { (asked.load(Ordering::SeqCst) >= 4).then_some(()) })
            .await;
        let r = api
            .create(
                &other,
                json!({"target_url": "https://shop.example/b", "code": "prompt-one"}),
            )
            .await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
        // … and B's arrives well before any of them could free a slot.
        poll("the other owner's delivery")
            .within(Duration::from_secs(8))
            .until(|| async { receiver.got().first().cloned() })
            .await;
        server.abort();
        t.cleanup().await;
    }
}

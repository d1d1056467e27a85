//! Links that decide per visit (issue 17): targeting rules, splits, previews, an
//! interstitial, a link's own expired page and its click switch, through the API and
//! the origin's own redirect, on every database available.

use crate::common::{apis_with, Api, Reply};
use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use serde_json::{json, Value};

const EDGE_TOKEN: &str = "edge-click-token";
const FLAGS: &[&str] = &[
    "--trusted-proxies",
    "10.0.0.0/8",
    "--edge-token",
    EDGE_TOKEN,
];
const PROXY: &str = "10.0.0.2:40000";
const STRANGER: &str = "203.0.113.50:40000";
const IPHONE: &str = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1";
const DESKTOP: &str = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Safari/537.36";
const SLACKBOT: &str = "Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)";
const GOOGLEBOT: &str = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)";

/// A link with a rule for each kind of condition the e2e test checks too.
fn targeted(code: &str) -> Value {
    json!({
        "target_url": "https://shop.example/",
        "code": code,
        "rules": [
            { "when": { "device": ["ios"] }, "target_url": "https://Apps.Example/ios" },
            { "when": { "language": ["DE"] }, "target_url": "https://shop.example/de" },
            { "when": { "query": [{ "name": "ref", "equals": "tv" }] }, "target_url": "https://shop.example/tv" },
            { "when": { "country": ["nl"] }, "target_url": "https://shop.example/nl" },
        ],
        "preview": { "title": "Spring sale", "description": "Everything must go" },
    })
}

impl Api {
    /// A `GET` of `path` on s.example with `headers`, from `peer`.
    async fn visit_with(&self, path: &str, headers: &[(&str, &str)], peer: &str) -> Reply {
        let mut req = Request::get(path).header(header::HOST, "s.example");
        for (name, value) in headers {
            req = req.header(*name, *value);
        }
        let mut req = req.body(Body::empty()).expect("request");
        let peer: std::net::SocketAddr = peer.parse().expect("address");
        req.extensions_mut()
            .insert(axum::extract::ConnectInfo(peer));
        self.send(req).await
    }

    /// A password link's form posted to `path` on s.example with `body`.
    async fn post_form(&self, path: &str, body: &str) -> Reply {
        self.post_form_from(PROXY, path, body).await
    }

    /// A form posted by a client whose connection comes from `peer`.
    async fn post_form_from(&self, peer: &str, path: &str, body: &str) -> Reply {
        let mut req = Request::post(path)
            .header(header::HOST, "s.example")
            .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .body(Body::from(body.to_owned()))
            .expect("request");
        let peer: std::net::SocketAddr = peer.parse().expect("address");
        req.extensions_mut()
            .insert(axum::extract::ConnectInfo(peer));
        self.send(req).await
    }

    /// Where a visit with `headers` is sent (the `Location`), from the trusted proxy.
    async fn sent_to(&self, path: &str, headers: &[(&str, &str)]) -> String {
        let res = self.visit_with(path, headers, PROXY).await;
        assert_eq!(
            res.status,
            StatusCode::FOUND,
            "{path} {headers:?}: {}",
            res.text
        );
        res.headers[header::LOCATION]
            .to_str()
            .expect("text")
            .to_owned()
    }
}

#[tokio::test]
async fn rules_pick_each_visit_s_target_from_its_own_request() {
    for (api, t) in apis_with("targeting", FLAGS).await {
        let token = api.key("acme", false).await;
        let res = api.create(&token, targeted("spring")).await;
        assert_eq!(
            res.status,
            StatusCode::CREATED,
            "{}: {}",
            t.kind(),
            res.text
        );
        // Kept normalized: targets as URLs are written, languages lower, countries upper.
        assert_eq!(
            res.body["rules"][0]["target_url"],
            "https://apps.example/ios"
        );
        assert_eq!(res.body["rules"][1]["when"], json!({ "language": ["de"] }));
        assert_eq!(res.body["rules"][3]["when"], json!({ "country": ["NL"] }));
        assert_eq!(res.body["record_clicks"], true);
        assert_eq!(res.body["split"], Value::Null);

        let ua = |ua| (header::USER_AGENT.as_str(), ua);
        assert_eq!(
            api.sent_to("/spring", &[ua(IPHONE)]).await,
            "https://apps.example/ios"
        );
        assert_eq!(
            api.sent_to(
                "/spring",
                &[ua(DESKTOP), ("accept-language", "de-CH,de;q=0.9,en;q=0.8")]
            )
            .await,
            "https://shop.example/de"
        );
        assert_eq!(
            api.sent_to("/spring?ref=tv", &[ua(DESKTOP)]).await,
            "https://shop.example/tv"
        );
        assert_eq!(
            api.sent_to("/spring?ref=radio", &[ua(DESKTOP)]).await,
            "https://shop.example/"
        );
        // The country only from the trusted proxy: anyone can send the header.
        assert_eq!(
            api.sent_to("/spring", &[ua(DESKTOP), ("cf-ipcountry", "NL")])
                .await,
            "https://shop.example/nl"
        );
        let forged = api
            .visit_with("/spring", &[ua(DESKTOP), ("cf-ipcountry", "NL")], STRANGER)
            .await;
        assert_eq!(forged.headers[header::LOCATION], "https://shop.example/");
        assert_eq!(forged.headers[header::VARY], "User-Agent, Accept-Language");

        // A link-preview crawler gets the card, not the redirect.
        let card = api.visit_with("/spring", &[ua(SLACKBOT)], PROXY).await;
        assert_eq!(card.status, StatusCode::OK);
        assert!(
            card.text
                .contains(r#"<meta property="og:title" content="Spring sale">"#),
            "{}",
            card.text
        );
        assert!(card.text.contains("https://s.example/spring"));
        t.cleanup().await;
    }
}

#[tokio::test]
async fn bad_rules_splits_and_previews_are_refused_naming_what_to_fix() {
    for (api, t) in apis_with("targeting refusals", FLAGS).await {
        let token = api.key("acme", false).await;
        let ops = api.key("trust-and-safety", true).await;
        let res = api
            .post_json(
                &ops,
                "/v1/bans",
                &json!({ "kind": "host", "host": "evil.example", "reason": "phishing" }),
            )
            .await;
        assert_eq!(res.status, StatusCode::CREATED, "{}", res.text);
        let rule = |when: Value, target: &str| json!([{ "when": when, "target_url": target }]);
        for (body, field, says) in [
            (
                json!({ "rules": rule(json!({ "device": ["ios"] }), "https://www.evil.example/x") }),
                "rules",
                "rules[0].target_url",
            ),
            (
                json!({ "rules": rule(json!({ "device": ["ios"] }), "javascript:alert(1)") }),
                "rules",
                "rules[0].target_url",
            ),
            (
                json!({ "rules": rule(json!({ "device": ["ios"] }), "https://s.example/loop") }),
                "rules",
                "loop",
            ),
            (
                json!({ "rules": rule(json!({}), "https://a.example/") }),
                "rules",
                "needs a condition",
            ),
            (
                json!({ "rules": rule(json!({ "language": ["not a tag"] }), "https://a.example/") }),
                "rules",
                "language tag",
            ),
            (
                json!({ "rules": (0..21).map(|_| json!({ "when": { "device": ["ios"] }, "target_url": "https://a.example/" })).collect::<Vec<_>>() }),
                "rules",
                "at most 20",
            ),
            (
                json!({ "split": [{ "target_url": "https://a.example/", "weight": 60 }, { "target_url": "https://b.example/", "weight": 30 }] }),
                "split",
                "sum to 90",
            ),
            (
                json!({ "split": [{ "target_url": "https://a.example/", "weight": 100 }] }),
                "split",
                "2 to 10",
            ),
            (
                json!({ "split": [{ "target_url": "https://a.example/", "weight": 50 }, { "target_url": "https://evil.example/", "weight": 50 }] }),
                "split",
                "split[1].target_url",
            ),
            (
                json!({ "preview": { "title": "x".repeat(201) } }),
                "preview",
                "200",
            ),
            (json!({ "preview": {} }), "preview", "needs a title"),
            (
                json!({ "preview": { "title": "t", "image_url": "ftp://img.example/a.png" } }),
                "preview",
                "image_url",
            ),
            (
                json!({ "expired_url": "https://evil.example/" }),
                "expired_url",
                "banned",
            ),
        ] {
            let mut create = body.clone();
            create["target_url"] = json!("https://shop.example/");
            let res = api.create(&token, create).await;
            assert_eq!(
                res.status,
                StatusCode::UNPROCESSABLE_ENTITY,
                "{body}: {}",
                res.text
            );
            assert_eq!(res.body["field"], field, "{body}: {}", res.text);
            assert!(res.text.contains(says), "{body}: {}", res.text);
        }
        // Unknown condition fields are refused too, not ignored.
        let res = api
            .create(&token, json!({ "target_url": "https://shop.example/", "rules": rule(json!({ "devise": ["ios"] }), "https://a.example/") }))
            .await;
        assert_eq!(res.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", res.text);
        assert_eq!(api.count("links").await, 0, "nothing stored");
        t.cleanup().await;
    }
}

#[tokio::test]
async fn patch_edits_the_new_fields_and_null_clears_them() {
    for (api, t) in apis_with("targeting patch", FLAGS).await {
        let token = api.key("acme", false).await;
        let res = api.create(&token, targeted("edit-me")).await;
        assert_eq!(res.status, StatusCode::CREATED, "{}", res.text);
        let path = "/v1/links/s.example/edit-me";
        let res = api
            .patch_json(
                &token,
                path,
                Some("\"1\""),
                json!({
                    "split": [
                        { "target_url": "https://a.example/", "weight": 50 },
                        { "target_url": "https://b.example/", "weight": 50 },
                    ],
                    "rules": null,
                    "expired_url": "https://shop.example/ended",
                    "interstitial": true,
                    "record_clicks": false,
                }),
            )
            .await;
        assert_eq!(res.status, StatusCode::OK, "{}: {}", t.kind(), res.text);
        assert_eq!(res.body["rules"], json!([]));
        assert_eq!(res.body["split"][1]["weight"], 50);
        assert_eq!(res.body["preview"]["title"], "Spring sale", "untouched");
        assert_eq!(res.body["expired_url"], "https://shop.example/ended");
        assert_eq!(
            (
                res.body["interstitial"].clone(),
                res.body["record_clicks"].clone()
            ),
            (json!(true), json!(false))
        );
        // The interstitial names the destination instead of redirecting.
        let page = api
            .visit_with("/edit-me", &[(header::USER_AGENT.as_str(), IPHONE)], PROXY)
            .await;
        assert_eq!(page.status, StatusCode::OK, "{}", page.text);
        assert!(page.text.contains(".example"), "{}", page.text);
        assert!(page.headers.get(header::LOCATION).is_none());
        // The edge's copy carries it all.
        let record = api.edge_record("s.example/edit-me").await;
        assert_eq!(
            (
                record.split.is_some(),
                record.interstitial,
                record.no_clicks
            ),
            (true, true, true)
        );
        assert!(record.rules.is_empty());

        let res = api
            .patch_json(&token, path, Some("\"2\""), json!({ "split": null, "preview": null, "expired_url": null, "interstitial": false }))
            .await;
        assert_eq!(res.status, StatusCode::OK, "{}", res.text);
        for field in ["split", "preview", "expired_url"] {
            assert_eq!(res.body[field], Value::Null, "{field}");
        }
        assert_eq!(api.sent_to("/edit-me", &[]).await, "https://shop.example/");
        // A stale version is refused, as for every edit.
        let res = api
            .patch_json(&token, path, Some("\"2\""), json!({ "interstitial": true }))
            .await;
        assert_eq!(res.status, StatusCode::PRECONDITION_FAILED, "{}", res.text);
        t.cleanup().await;
    }
}

#[tokio::test]
async fn a_host_ban_of_a_rule_s_or_a_variant_s_target_blocks_the_whole_link() {
    for (api, t) in apis_with("targeting bans", FLAGS).await {
        let token = api.key("acme", false).await;
        let ops = api.key("trust-and-safety", true).await;
        let res = api.create(&token, targeted("ruled")).await;
        assert_eq!(res.status, StatusCode::CREATED, "{}", res.text);
        let split = json!({
            "target_url": "https://shop.example/",
            "code": "split",
            "split": [
                { "target_url": "https://a.example/", "weight": 50 },
                { "target_url": "https://www.apps.example/b", "weight": 50 },
            ],
        });
        let res = api.create(&token, split).await;
        assert_eq!(res.status, StatusCode::CREATED, "{}", res.text);
        let res = api
            .post_json(
                &ops,
                "/v1/bans",
                &json!({ "kind": "host", "host": "apps.example", "reason": "phishing" }),
            )
            .await;
        assert_eq!(res.status, StatusCode::CREATED, "{}", res.text);
        for code in ["ruled", "split"] {
            // Every visit, not only those the banned target would get.
            let res = api
                .visit_with(
                    &format!("/{code}"),
                    &[(header::USER_AGENT.as_str(), DESKTOP)],
                    PROXY,
                )
                .await;
            assert_eq!(res.status, StatusCode::FORBIDDEN, "{}: {code}", t.kind());
            // And the edge's copy is marked, so it fails closed without the denylist.
            let record = api.edge_record(&format!("s.example/{code}")).await;
            assert_eq!(record.status, shared::EdgeStatus::Banned, "{code}");
        }
        t.cleanup().await;
    }
}

impl Api {
    /// The newest copy of `route` in the outbox.
    async fn edge_record(&self, route: &str) -> shared::EdgeRecord {
        let rows: Vec<(String,)> = self
            .state
            .db()
            .read_all(
                "SELECT payload FROM outbox WHERE kind = 'link' AND route_key = $1 ORDER BY seq DESC",
                &[route.into()],
            )
            .await
            .expect("outbox");
        let (payload,) = rows.first().expect("a copy in the outbox");
        shared::EdgeRecord::from_json(payload).expect("an edge record")
    }
}

impl Api {
    async fn link_view(&self, token: &str, code: &str) -> Value {
        let res = self.read(token, "s.example", code).await;
        assert_eq!(res.status, StatusCode::OK, "{}", res.text);
        res.body
    }
}

#[tokio::test]
async fn a_visit_limit_counts_people_only_and_then_ends_the_link() {
    for (api, t) in apis_with("visit limits", FLAGS).await {
        let token = api.key("acme", false).await;
        let body = json!({
            "target_url": "https://shop.example/",
            "code": "three",
            "max_visits": 3,
            "expired_url": "https://shop.example/sold-out",
        });
        let res = api.create(&token, body).await;
        assert_eq!(
            res.status,
            StatusCode::CREATED,
            "{}: {}",
            t.kind(),
            res.text
        );
        assert_eq!(
            (
                res.body["max_visits"].clone(),
                res.body["exhausted"].clone()
            ),
            (json!(3), json!(false))
        );
        let ua = |ua| [(header::USER_AGENT.as_str(), ua)];

        // Crawlers never count, however many.
        for _ in 0..10 {
            assert_eq!(
                api.sent_to("/three", &ua(GOOGLEBOT)).await,
                "https://shop.example/"
            );
        }
        api.flush_clicks().await;
        assert_eq!(
            api.link_view(&token, "three").await["exhausted"],
            false,
            "{}",
            t.kind()
        );
        // Three people (a person is an address: docs/api.md).
        for i in 1..=3 {
            let res = api
                .visit_with("/three", &ua(DESKTOP), &format!("203.0.113.{i}:40000"))
                .await;
            assert_eq!(res.status, StatusCode::FOUND, "{}", res.text);
        }
        api.flush_clicks().await;
        let link = api.link_view(&token, "three").await;
        assert_eq!(
            (link["exhausted"].clone(), link["version"].clone()),
            (json!(true), json!(2)),
            "{}",
            t.kind()
        );
        // This origin's own redirect stops at once; the edge's copy says so too.
        assert_eq!(
            api.sent_to("/three", &ua(DESKTOP)).await,
            "https://shop.example/sold-out"
        );
        assert!(api.edge_record("s.example/three").await.exhausted);

        // Raising the limit brings it back; lowering it under the count ends it at once.
        let path = "/v1/links/s.example/three";
        let res = api
            .patch_json(&token, path, Some("\"2\""), json!({ "max_visits": 10 }))
            .await;
        assert_eq!(
            (res.status, res.body["exhausted"].clone()),
            (StatusCode::OK, json!(false)),
            "{}",
            res.text
        );
        assert_eq!(
            api.sent_to("/three", &ua(DESKTOP)).await,
            "https://shop.example/"
        );
        api.flush_clicks().await;
        let res = api
            .patch_json(&token, path, Some("\"3\""), json!({ "max_visits": 4 }))
            .await;
        assert_eq!(
            res.body["exhausted"], true,
            "4 people visited: {}",
            res.text
        );
        let res = api
            .patch_json(&token, path, Some("\"4\""), json!({ "max_visits": null }))
            .await;
        assert_eq!(
            (
                res.body["exhausted"].clone(),
                res.body["max_visits"].clone()
            ),
            (json!(false), Value::Null)
        );
        let res = api
            .patch_json(&token, path, Some("\"5\""), json!({ "max_visits": 0 }))
            .await;
        assert_eq!(
            (res.status, res.body["field"].clone()),
            (StatusCode::UNPROCESSABLE_ENTITY, json!("max_visits"))
        );

        // The edge's clicks count alike: its bots are not people either.
        let res = api
            .create(
                &token,
                json!({ "target_url": "https://shop.example/", "code": "two", "max_visits": 2 }),
            )
            .await;
        assert_eq!(res.status, StatusCode::CREATED, "{}", res.text);
        let event = |i: usize, bot: bool| {
            json!({
                "event_id": format!("e-{i}"), "link": "s.example/two", "version": 1,
                "at": origin_api::model::time::now_ms(), "country": null, "referrer_host": null,
                "device": "desktop", "bot": bot, "status": 302,
            })
        };
        let bots: Vec<Value> = (0..20).map(|i| event(i, true)).collect();
        let res = api
            .post_json(EDGE_TOKEN, "/v1/edge/clicks", &json!({ "events": bots }))
            .await;
        assert_eq!(res.body["counted"], 20, "{}", res.text);
        api.fold_clicks().await;
        assert_eq!(api.link_view(&token, "two").await["exhausted"], false);
        let people: Vec<Value> = (20..22).map(|i| event(i, false)).collect();
        let res = api
            .post_json(EDGE_TOKEN, "/v1/edge/clicks", &json!({ "events": people }))
            .await;
        assert_eq!(res.body["counted"], 2, "{}", res.text);
        api.fold_clicks().await;
        assert_eq!(
            api.link_view(&token, "two").await["exhausted"],
            true,
            "{}",
            t.kind()
        );
        let gone = api.visit_with("/two", &ua(DESKTOP), PROXY).await;
        assert_eq!(gone.status, StatusCode::GONE, "{}", gone.text);
        assert!(gone.text.contains("limit"), "{}", gone.text);
        t.cleanup().await;
    }
}

/// Whether the link `code` is still open (not exhausted).
async fn open(api: &Api, token: &str, code: &str) -> bool {
    api.link_view(token, code).await["exhausted"] == false
}

/// A visit limit counts people, not refreshes (issue 54): one address refreshing a
/// 3-visit link a hundred times is one person, and so are two addresses of one IPv6 /64;
/// a third person closes it. At the origin's own redirect, and from the edge's tallies,
/// whose rows name their visitor by a keyed hash (`person`) for a link with a limit.
#[tokio::test]
async fn a_visit_limit_counts_people_not_refreshes() {
    for (api, t) in apis_with("visit-limit-people", FLAGS).await {
        let token = api.key("acme", false).await;
        for code in ["people", "edge-people"] {
            let body =
                json!({ "target_url": "https://shop.example/", "code": code, "max_visits": 3 });
            let res = api.create(&token, body).await;
            assert_eq!(res.status, StatusCode::CREATED, "{}", res.text);
        }
        let desktop = [(header::USER_AGENT.as_str(), DESKTOP)];
        for _ in 0..100 {
            let res = api.visit_with("/people", &desktop, STRANGER).await;
            assert_eq!(res.status, StatusCode::FOUND, "{}", res.text);
        }
        api.flush_clicks().await;
        assert!(
            open(&api, &token, "people").await,
            "{}: 100 visits of one person closed it",
            t.kind()
        );
        // Two addresses of one IPv6 /64 are one person; the first address again is not new.
        for peer in [
            "[2001:db8:1:2::1]:40000",
            "[2001:db8:1:2:ffff::9]:40000",
            STRANGER,
        ] {
            let res = api.visit_with("/people", &desktop, peer).await;
            assert_eq!(res.status, StatusCode::FOUND, "{}", res.text);
        }
        api.flush_clicks().await;
        assert!(
            open(&api, &token, "people").await,
            "{}: two people closed a 3-visit link",
            t.kind()
        );
        let stats = api
            .call_as(&token, "GET", "/v1/links/s.example/people/stats")
            .await;
        assert_eq!(
            stats.body["visit_limit"],
            json!({ "max_visits": 3, "counted": 2 }),
            "{}",
            stats.text
        );
        let res = api
            .visit_with("/people", &desktop, "198.51.100.20:40000")
            .await;
        assert_eq!(res.status, StatusCode::FOUND, "{}", res.text);
        api.flush_clicks().await;
        assert!(
            !open(&api, &token, "people").await,
            "{}: the third person closes it",
            t.kind()
        );

        // The edge's rows: a hundred visits of one person, then the same person and a
        // second, then a third. A `person` that is not 16 hex digits is refused.
        let hour = origin_api::model::time::now_ms() / 3_600_000 * 3_600_000;
        let row = |person: &str, n: u32| {
            json!({ "link": "s.example/edge-people", "version": 1, "hour": hour, "device": "desktop",
                    "bot": false, "status": 302, "person": person, "n": n })
        };
        let (p1, p2, p3) = ("00000000000000a1", "00000000000000b2", "00000000000000c3");
        let mut tallies = Vec::new();
        for (i, rows) in [
            vec![row(p1, 100), row("not-a-key", 1)],
            vec![row(p1, 5), row(p2, 1)],
            vec![row(p3, 1)],
        ]
        .into_iter()
        .enumerate()
        {
            tallies.push(json!({ "batch_id": format!("people-{i}"), "at": origin_api::model::time::now_ms(), "rows": rows }));
        }
        for (i, tally) in tallies.iter().enumerate() {
            let res = api
                .post_json(
                    EDGE_TOKEN,
                    "/v1/edge/clicks",
                    &json!({ "tallies": [tally] }),
                )
                .await;
            assert_eq!(res.status, StatusCode::OK, "{}", res.text);
            if i == 0 {
                assert_eq!(
                    (res.body["counted"].clone(), res.body["refused"].clone()),
                    (json!(100), json!(1)),
                    "{}",
                    res.text
                );
            }
            api.fold_clicks().await;
            assert_eq!(
                open(&api, &token, "edge-people").await,
                i < 2,
                "{}: after tally {i}",
                t.kind()
            );
        }

        // Who the people were is kept while a click of their day may still arrive, then
        // only how many: the counts stay, the hashes go.
        let counted = |stats: Reply| stats.body["visit_limit"]["counted"].clone();
        let stats_path = |code: &str| format!("/v1/links/s.example/{code}/stats");
        let now = origin_api::model::time::now_ms();
        let swept = origin_api::housekeeping::sweep(&api.state.housekeeping, now)
            .await
            .expect("sweep");
        assert_eq!(swept.limit_people, 0, "{}: today's people stay", t.kind());
        let later = now + 6 * 86_400_000;
        let swept = origin_api::housekeeping::sweep(&api.state.housekeeping, later)
            .await
            .expect("sweep");
        assert_eq!(swept.limit_people, 6, "{}", t.kind());
        assert_eq!(api.count("visit_limit_people WHERE day > 0").await, 0);
        for code in ["people", "edge-people"] {
            let stats = api.call_as(&token, "GET", &stats_path(code)).await;
            assert_eq!(counted(stats), json!(3), "{}: {code}", t.kind());
        }
        t.cleanup().await;
    }
}

/// A link whose limit was set before records said so (`"lm"`, an upgrade: the
/// migration lists them) is published again by the sweep, once, as a system edit: its
/// copy at the edge then names visitors. A link without a limit on the list is only
/// taken off it.
#[tokio::test]
async fn a_limit_set_before_people_counted_is_published_again_once() {
    for (api, t) in apis_with("visit-limit-republish", FLAGS).await {
        let token = api.key("acme", false).await;
        let mut ids = Vec::new();
        for (code, limit) in [("old-limit", json!(3)), ("old-plain", Value::Null)] {
            let body =
                json!({ "target_url": "https://shop.example/", "code": code, "max_visits": limit });
            let res = api.create(&token, body).await;
            assert_eq!(res.status, StatusCode::CREATED, "{}", res.text);
            let link = origin_api::store::links::get(api.state.db(), "s.example", code)
                .await
                .expect("read")
                .expect("the link");
            ids.push(link.link_id.to_string());
        }
        api.exec(&format!(
            "INSERT INTO limit_republish (link_id) VALUES ({})",
            ids.join("), (")
        ))
        .await;
        let now = origin_api::model::time::now_ms();
        let swept = origin_api::housekeeping::sweep(&api.state.housekeeping, now)
            .await
            .expect("sweep");
        assert_eq!(swept.limits_republished, 1, "{}", t.kind());
        assert_eq!(api.count("limit_republish").await, 0);
        let link = api.link_view(&token, "old-limit").await;
        assert_eq!(
            (link["version"].clone(), link["max_visits"].clone()),
            (json!(2), json!(3)),
            "{}: {link}",
            t.kind()
        );
        let record = api.edge_record("s.example/old-limit").await;
        assert!(record.limited && record.version == 2, "{record:?}");
        assert_eq!(api.link_view(&token, "old-plain").await["version"], 1);
        let history = api
            .call_as(&token, "GET", "/v1/links/s.example/old-limit/history")
            .await;
        let newest = &history.body["items"][0];
        assert_eq!(
            (newest["action"].clone(), newest["actor"].clone()),
            (json!("edited"), json!("system")),
            "{}",
            history.text
        );
        assert!(
            newest["note"].as_str().is_some_and(|n| n.contains("D-280")),
            "{newest}"
        );
        let swept = origin_api::housekeeping::sweep(&api.state.housekeeping, now)
            .await
            .expect("sweep");
        assert_eq!(swept.limits_republished, 0, "once");
        t.cleanup().await;
    }
}

#[tokio::test]
async fn the_stats_break_a_split_link_s_visits_down_by_variant() {
    for (api, t) in apis_with("split stats", FLAGS).await {
        let token = api.key("acme", false).await;
        let body = json!({
            "target_url": "https://shop.example/",
            "code": "ab-test",
            "split": [
                { "target_url": "https://a.example/", "weight": 20 },
                { "target_url": "https://b.example/", "weight": 80 },
            ],
        });
        let res = api.create(&token, body).await;
        assert_eq!(res.status, StatusCode::CREATED, "{}", res.text);
        // The origin's own visits, each counted under the variant it got (from 200
        // visitors: one visitor's clicks count 60 a minute).
        let mut sent = [0i64; 2];
        for i in 0..200 {
            let peer = format!("203.0.113.{}:40000", i % 250);
            let res = api
                .visit_with("/ab-test", &[(header::USER_AGENT.as_str(), DESKTOP)], &peer)
                .await;
            match res
                .headers
                .get(header::LOCATION)
                .and_then(|l| l.to_str().ok())
            {
                Some("https://a.example/") => sent[0] += 1,
                Some("https://b.example/") => sent[1] += 1,
                other => panic!("sent to {other:?}"),
            }
        }
        api.flush_clicks().await;
        // The edge's events say their variant too; one naming no possible variant is
        // refused, not counted.
        let event = |i: usize, variant: u8| {
            json!({
                "event_id": format!("v-{i}"), "link": "s.example/ab-test", "version": 1,
                "at": origin_api::model::time::now_ms(), "device": "desktop", "bot": false,
                "status": 302, "variant": variant,
            })
        };
        let events: Vec<Value> = (0..5).map(|i| event(i, 1)).chain([event(5, 10)]).collect();
        let res = api
            .post_json(EDGE_TOKEN, "/v1/edge/clicks", &json!({ "events": events }))
            .await;
        assert_eq!(
            (res.body["counted"].clone(), res.body["refused"].clone()),
            (json!(5), json!(1)),
            "{}",
            res.text
        );
        sent[1] += 5;
        api.fold_clicks().await;

        let stats = api
            .call_as(&token, "GET", "/v1/links/s.example/ab-test/stats")
            .await;
        assert_eq!(stats.status, StatusCode::OK, "{}", stats.text);
        let by_variant: Vec<(String, i64)> = stats.body["top"]["variants"]
            .as_array()
            .expect("variants")
            .iter()
            .map(|r| {
                (
                    r["value"].as_str().unwrap_or_default().to_owned(),
                    r["visits"].as_i64().unwrap_or_default(),
                )
            })
            .collect();
        let mut expected = vec![("0".to_owned(), sent[0]), ("1".to_owned(), sent[1])];
        expected.sort_by_key(|(_, n)| -n);
        assert_eq!(by_variant, expected, "{}: {}", t.kind(), stats.text);
        // A link without a split has no variant breakdown.
        let res = api
            .create(
                &token,
                json!({ "target_url": "https://shop.example/", "code": "plain" }),
            )
            .await;
        assert_eq!(res.status, StatusCode::CREATED);
        api.sent_to("/plain", &[]).await;
        api.flush_clicks().await;
        let stats = api
            .call_as(&token, "GET", "/v1/links/s.example/plain/stats")
            .await;
        assert_eq!(stats.body["top"]["variants"], json!([]), "{}", stats.text);
        t.cleanup().await;
    }
}

#[tokio::test]
async fn a_link_s_qr_code_is_its_short_url_for_its_owner_only() {
    for (api, t) in apis_with("qr", FLAGS).await {
        let token = api.key("acme", false).await;
        let res = api
            .create(
                &token,
                json!({ "target_url": "https://shop.example/", "code": "scan-me" }),
            )
            .await;
        assert_eq!(res.status, StatusCode::CREATED, "{}", res.text);
        let png = api
            .call_as(
                &token,
                "GET",
                "/v1/links/s.example/scan-me/qr?format=png&size=300&ecc=H",
            )
            .await;
        assert_eq!(png.status, StatusCode::OK, "{}: {}", t.kind(), png.text);
        assert_eq!(png.headers[header::CONTENT_TYPE], "image/png");
        let res = api
            .send(
                Request::get("/v1/links/s.example/scan-me/qr?format=png")
                    .header(header::AUTHORIZATION, format!("Bearer {token}"))
                    .body(Body::empty())
                    .expect("request"),
            )
            .await;
        assert_eq!(res.status, StatusCode::OK);
        let svg = api
            .call_as(&token, "GET", "/v1/links/s.example/scan-me/qr")
            .await;
        assert_eq!(svg.headers[header::CONTENT_TYPE], "image/svg+xml");
        assert!(svg.text.starts_with("<?xml"), "{}", svg.text);
        // Someone else's link is not found; a bad parameter names itself.
        let other = api.key("globex", false).await;
        let res = api
            .call_as(&other, "GET", "/v1/links/s.example/scan-me/qr")
            .await;
        assert_eq!(res.status, StatusCode::NOT_FOUND);
        for (query, field) in [("size=9", "size"), ("margin=99", "margin")] {
            let res = api
                .call_as(
                    &token,
                    "GET",
                    &format!("/v1/links/s.example/scan-me/qr?{query}"),
                )
                .await;
            assert_eq!(
                (res.status, res.body["field"].clone()),
                (StatusCode::UNPROCESSABLE_ENTITY, json!(field)),
                "{query}: {}",
                res.text
            );
        }
        let res = api
            .call_as(&token, "GET", "/v1/links/s.example/scan-me/qr?format=gif")
            .await;
        assert_eq!(res.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", res.text);
        t.cleanup().await;
    }
}

#[tokio::test]
async fn a_signed_link_opens_only_with_an_unexpired_token_of_its_current_secret() {
    for (api, t) in apis_with("signed links", FLAGS).await {
        let token = api.key("acme", false).await;
        let body = json!({
            "target_url": "https://plans.example/q3",
            "code": "secret-plans",
            "access": "signed",
            "forward_query": true,
            "preview": { "title": "Q3 plans" },
        });
        let res = api.create(&token, body).await;
        assert_eq!(
            res.status,
            StatusCode::CREATED,
            "{}: {}",
            t.kind(),
            res.text
        );
        assert_eq!(res.body["access"], "signed");
        assert!(
            !res.text.contains("key"),
            "the secret never leaves: {}",
            res.text
        );
        let ua = [(header::USER_AGENT.as_str(), DESKTOP)];

        // Without a token, with a forged one, or as a crawler: 403, nothing of the target.
        for path in [
            "/secret-plans",
            "/secret-plans?t=99999999999.00",
            "/secret-plans?t=1.abc",
        ] {
            let res = api.visit_with(path, &ua, PROXY).await;
            assert_eq!(res.status, StatusCode::FORBIDDEN, "{path}");
            assert!(res.headers.get(header::LOCATION).is_none());
            assert!(!res.text.contains("plans.example"), "{}", res.text);
        }
        let card = api
            .visit_with(
                "/secret-plans",
                &[(header::USER_AGENT.as_str(), SLACKBOT)],
                PROXY,
            )
            .await;
        assert_eq!(card.status, StatusCode::FORBIDDEN);
        assert!(!card.text.contains("Q3 plans"), "{}", card.text);

        // An issued token opens it; the token is not passed on to the target.
        let issued = api
            .post_json(
                &token,
                "/v1/links/s.example/secret-plans/tokens",
                &json!({ "ttl_s": 3600 }),
            )
            .await;
        assert_eq!(issued.status, StatusCode::CREATED, "{}", issued.text);
        // JSON (and its schema) call 3600.0 a whole number too: a client that writes
        // numbers as floats is not refused.
        let as_float = api
            .post_json(
                &token,
                "/v1/links/s.example/secret-plans/tokens",
                &serde_json::from_str::<Value>(r#"{"ttl_s": 3600.0}"#).expect("JSON"),
            )
            .await;
        assert_eq!(as_float.status, StatusCode::CREATED, "{}", as_float.text);
        let t1 = issued.body["token"].as_str().expect("token").to_owned();
        assert_eq!(
            issued.body["url"],
            format!("https://s.example/secret-plans?t={t1}")
        );
        let res = api
            .visit_with(&format!("/secret-plans?utm=mail&t={t1}"), &ua, PROXY)
            .await;
        assert_eq!(res.status, StatusCode::FOUND, "{}", res.text);
        assert_eq!(
            res.headers[header::LOCATION],
            "https://plans.example/q3?utm=mail"
        );

        // The token is for this link only, and only until it expires.
        let (expiry, mac) = t1.split_once('.').expect("expiry.mac");
        let later: i64 = expiry.parse::<i64>().expect("expiry") + 1;
        let res = api
            .visit_with(&format!("/secret-plans?t={later}.{mac}"), &ua, PROXY)
            .await;
        assert_eq!(res.status, StatusCode::FORBIDDEN, "a stretched expiry");
        let res = api.create(&token, json!({ "target_url": "https://x.example/", "code": "other-secret", "access": "signed" })).await;
        assert_eq!(res.status, StatusCode::CREATED);
        let res = api
            .visit_with(&format!("/other-secret?t={t1}"), &ua, PROXY)
            .await;
        assert_eq!(res.status, StatusCode::FORBIDDEN, "another link's token");

        // Setting signed access again rotates the secret: the old token stops working.
        let res = api
            .patch_json(
                &token,
                "/v1/links/s.example/secret-plans",
                Some("\"1\""),
                json!({ "access": "signed" }),
            )
            .await;
        assert_eq!(res.status, StatusCode::OK, "{}", res.text);
        let res = api
            .visit_with(&format!("/secret-plans?t={t1}"), &ua, PROXY)
            .await;
        assert_eq!(res.status, StatusCode::FORBIDDEN, "revoked");

        // Tokens only for signed links, with a sane expiry; only the owner issues them.
        let res = api
            .create(
                &token,
                json!({ "target_url": "https://x.example/", "code": "open-link" }),
            )
            .await;
        assert_eq!(res.body["access"], "public");
        let res = api
            .post_json(&token, "/v1/links/s.example/open-link/tokens", &json!({}))
            .await;
        assert_eq!(
            (res.status, res.body["field"].clone()),
            (StatusCode::UNPROCESSABLE_ENTITY, json!("access")),
            "{}",
            res.text
        );
        for (body, field) in [
            (json!({ "ttl_s": 0 }), "ttl_s"),
            (json!({ "ttl_s": 40_000_000 }), "ttl_s"),
            (
                json!({ "expires_at": "2001-01-01T00:00:00Z" }),
                "expires_at",
            ),
            (
                json!({ "expires_at": "2099-01-01T00:00:00Z", "ttl_s": 5 }),
                "expires_at",
            ),
        ] {
            let res = api
                .post_json(&token, "/v1/links/s.example/secret-plans/tokens", &body)
                .await;
            assert_eq!(
                (res.status, res.body["field"].clone()),
                (StatusCode::UNPROCESSABLE_ENTITY, json!(field)),
                "{body}: {}",
                res.text
            );
        }
        let other = api.key("globex", false).await;
        let res = api
            .post_json(
                &other,
                "/v1/links/s.example/secret-plans/tokens",
                &json!({}),
            )
            .await;
        assert_eq!(res.status, StatusCode::NOT_FOUND);
        // Public again: anyone with the code.
        let res = api
            .patch_json(
                &token,
                "/v1/links/s.example/secret-plans",
                Some("\"2\""),
                json!({ "access": "public" }),
            )
            .await;
        assert_eq!(res.status, StatusCode::OK, "{}", res.text);
        assert_eq!(
            api.sent_to("/secret-plans", &ua).await,
            "https://plans.example/q3"
        );
        t.cleanup().await;
    }
}

#[tokio::test]
async fn dedupe_answers_the_owner_s_live_link_to_the_same_target_and_says_so() {
    for (api, t) in apis_with("dedupe", FLAGS).await {
        let token = api.key("acme", false).await;
        let first = api
            .create(
                &token,
                json!({ "target_url": "https://Shop.Example/spring?a=1" }),
            )
            .await;
        assert_eq!(first.status, StatusCode::CREATED, "{}", first.text);
        // The same target as normalized: the existing link, nothing created.
        let again = api
            .create(&token, json!({ "target_url": "https://shop.example/spring?a=1", "dedupe": true, "title": "ignored" }))
            .await;
        assert_eq!(again.status, StatusCode::OK, "{}: {}", t.kind(), again.text);
        assert_eq!(again.headers["hop-deduplicated"], "true");
        assert_eq!(again.body["code"], first.body["code"]);
        assert_eq!(
            again.body["title"],
            Value::Null,
            "the existing link as it is"
        );
        assert_eq!(api.count("links").await, 1);
        // Without dedupe, another owner, another target, or a disabled link: a new link.
        let res = api
            .create(
                &token,
                json!({ "target_url": "https://shop.example/spring?a=1" }),
            )
            .await;
        assert_eq!(res.status, StatusCode::CREATED);
        let other = api.key("globex", false).await;
        let res = api
            .create(
                &other,
                json!({ "target_url": "https://shop.example/spring?a=1", "dedupe": true }),
            )
            .await;
        assert_eq!(
            res.status,
            StatusCode::CREATED,
            "another owner's link is never answered"
        );
        let res = api
            .create(
                &token,
                json!({ "target_url": "https://shop.example/summer", "dedupe": true }),
            )
            .await;
        assert_eq!(res.status, StatusCode::CREATED);
        let code = res.body["code"].as_str().expect("code").to_owned();
        let res = api
            .patch_json(
                &token,
                &format!("/v1/links/s.example/{code}"),
                Some("\"1\""),
                json!({ "status": "disabled" }),
            )
            .await;
        assert_eq!(res.status, StatusCode::OK);
        let res = api
            .create(
                &token,
                json!({ "target_url": "https://shop.example/summer", "dedupe": true }),
            )
            .await;
        assert_eq!(
            res.status,
            StatusCode::CREATED,
            "a disabled link is not live"
        );
        // Not with an alias, nor in bulk; a refused target is refused as for a create.
        let res = api
            .create(
                &token,
                json!({ "target_url": "https://shop.example/", "dedupe": true, "code": "mine" }),
            )
            .await;
        assert_eq!(
            (res.status, res.body["field"].clone()),
            (StatusCode::UNPROCESSABLE_ENTITY, json!("dedupe"))
        );
        let res = api
            .post_json(
                &token,
                "/v1/links/bulk",
                &json!({ "links": [{ "target_url": "https://shop.example/", "dedupe": true }] }),
            )
            .await;
        assert_eq!(res.body["results"][0]["ok"], false, "{}", res.text);
        let res = api
            .create(
                &token,
                json!({ "target_url": "ftp://shop.example/", "dedupe": true }),
            )
            .await;
        assert_eq!(res.status, StatusCode::UNPROCESSABLE_ENTITY);
        t.cleanup().await;
    }
}

/// Public links' fields that give a visitor something other than a plain link: an
/// expiry, a visit limit, rules, a split, an expired page, an interstitial, no counting.
fn more_than_plain() -> [Value; 7] {
    [
        json!({ "expires_at": "2099-01-01T00:00:00Z" }),
        json!({ "max_visits": 10 }),
        json!({ "rules": [{ "when": { "device": ["ios"] }, "target_url": "https://shop.example/ios" }] }),
        json!({ "split": [{ "target_url": "https://a.example/", "weight": 50 }, { "target_url": "https://b.example/", "weight": 50 }] }),
        json!({ "expired_url": "https://shop.example/over" }),
        json!({ "interstitial": true }),
        json!({ "record_clicks": false }),
    ]
}

/// `dedupe` never answers a link weaker than the one asked for: with private access, a
/// password, an expiry, a visit limit, rules, a split, an expired page, an interstitial
/// or clicks not recorded, it is refused naming `dedupe`, and the public link to the
/// same target is not shown.
#[tokio::test]
async fn dedupe_never_answers_a_weaker_link_than_the_one_asked_for() {
    for (api, t) in apis_with("dedupe-weaker", FLAGS).await {
        let token = api.key("acme", false).await;
        let target = "https://shop.example/launch";
        let public = api.create(&token, json!({ "target_url": target })).await;
        assert_eq!(public.status, StatusCode::CREATED, "{}", public.text);
        let code = public.body["code"].as_str().expect("code").to_owned();
        let asks = [
            json!({ "access": "signed" }),
            json!({ "access": "password", "password": "correct horse" }),
        ]
        .into_iter()
        .chain(more_than_plain());
        for ask in asks {
            let mut body = ask.clone();
            body["target_url"] = json!(target);
            body["dedupe"] = json!(true);
            let res = api.create(&token, body).await;
            assert_eq!(
                (res.status, res.body["field"].clone()),
                (StatusCode::UNPROCESSABLE_ENTITY, json!("dedupe")),
                "{}: {ask}: {}",
                t.kind(),
                res.text
            );
            assert!(!res.text.contains(&code), "{}", res.text);
        }
        assert_eq!(api.count("links").await, 1, "{}", t.kind());
        t.cleanup().await;
    }
}

/// The converse: a plain `dedupe` answers only a plain public link. An existing link to
/// the target that expires, ends after a visit limit, sends some visitors elsewhere,
/// shows a page first or counts nothing is not what was asked for: a new link is made.
#[tokio::test]
async fn dedupe_answers_only_a_plain_public_link() {
    for (api, t) in apis_with("dedupe-plain", FLAGS).await {
        let token = api.key("acme", false).await;
        let target = "https://shop.example/launch";
        for kind in &more_than_plain() {
            let mut body = kind.clone();
            body["target_url"] = json!(target);
            let made = api.create(&token, body).await;
            assert_eq!(made.status, StatusCode::CREATED, "{kind}: {}", made.text);
            let res = api
                .create(&token, json!({ "target_url": target, "dedupe": true }))
                .await;
            assert_eq!(
                res.status,
                StatusCode::CREATED,
                "{}: a link with {kind} answered a plain dedupe: {}",
                t.kind(),
                res.text
            );
            // The plain link just made is the one the next dedupe finds; start afresh.
            let code = res.body["code"].as_str().expect("code");
            let gone = api
                .call_as(&token, "DELETE", &format!("/v1/links/s.example/{code}"))
                .await;
            assert!(gone.status.is_success(), "{}", gone.text);
        }
        t.cleanup().await;
    }
}

#[tokio::test]
async fn a_domain_of_untrusted_targets_shows_every_link_s_interstitial() {
    for (api, t) in apis_with("domain interstitial", FLAGS).await {
        let admin = api.key("ops", true).await;
        let token = api.key("acme", false).await;
        let res = api
            .post_json(
                &admin,
                "/v1/domains",
                &json!({ "domain": "warn.example", "shared": true, "interstitial": true }),
            )
            .await;
        assert_eq!(
            res.status,
            StatusCode::CREATED,
            "{}: {}",
            t.kind(),
            res.text
        );
        assert_eq!(res.body["interstitial"], true);
        let res = api
            .create(&token, json!({ "target_url": "https://untrusted.example/file", "domain": "warn.example", "code": "file-1" }))
            .await;
        assert_eq!(res.status, StatusCode::CREATED, "{}", res.text);
        let visit = || {
            Request::get("/file-1")
                .header(header::HOST, "warn.example")
                .body(Body::empty())
                .expect("request")
        };
        let page = api.send(visit()).await;
        assert_eq!(page.status, StatusCode::OK, "{}", page.text);
        assert!(
            page.text.contains("<strong>untrusted.example</strong>"),
            "{}",
            page.text
        );
        // The edge gets the setting with the domain's config.
        let rows: Vec<(String,)> = api
            .state
            .db()
            .read_all(
                "SELECT payload FROM outbox WHERE kind = 'cfg' AND route_key = $1 ORDER BY seq DESC",
                &["warn.example".into()],
            )
            .await
            .expect("outbox");
        assert!(
            rows.first()
                .is_some_and(|(p,)| p.contains(r#""interstitial":true"#)),
            "{rows:?}"
        );
        // Switched off, links redirect again.
        let res = api
            .patch_json(
                &admin,
                "/v1/domains/warn.example",
                Some("\"1\""),
                json!({ "interstitial": false }),
            )
            .await;
        assert_eq!(
            (res.status, res.body["interstitial"].clone()),
            (StatusCode::OK, json!(false)),
            "{}",
            res.text
        );
        let res = api.send(visit()).await;
        assert_eq!(res.status, StatusCode::FOUND, "{}", res.text);
        t.cleanup().await;
    }
}

#[tokio::test]
async fn a_link_that_records_no_clicks_counts_none_of_its_visits() {
    for (api, t) in apis_with("no clicks", FLAGS).await {
        let token = api.key("acme", false).await;
        for (code, record) in [("quiet-link", false), ("loud-link", true)] {
            let body = json!({ "target_url": "https://shop.example/", "code": code, "record_clicks": record });
            let res = api.create(&token, body).await;
            assert_eq!(res.status, StatusCode::CREATED, "{}", res.text);
            for _ in 0..3 {
                api.sent_to(
                    &format!("/{code}"),
                    &[(header::USER_AGENT.as_str(), DESKTOP)],
                )
                .await;
            }
        }
        api.flush_clicks().await;
        for (code, visits) in [("quiet-link", 0), ("loud-link", 3)] {
            let stats = api
                .call_as(&token, "GET", &format!("/v1/links/s.example/{code}/stats"))
                .await;
            assert_eq!(
                stats.body["totals"]["visits"],
                visits,
                "{}: {code}: {}",
                t.kind(),
                stats.text
            );
        }
        t.cleanup().await;
    }
}

#[tokio::test]
async fn a_password_link_lets_in_only_who_gives_its_password_and_only_that_link() {
    for (api, t) in apis_with("password links", FLAGS).await {
        let token = api.key("acme", false).await;
        let body = json!({
            "target_url": "https://plans.example/q3",
            "code": "pw-plans",
            "access": "password",
            "password": "correct horse",
            "forward_query": true,
            "preview": { "title": "Q3 plans" },
        });
        let res = api.create(&token, body).await;
        assert_eq!(
            res.status,
            StatusCode::CREATED,
            "{}: {}",
            t.kind(),
            res.text
        );
        assert_eq!(res.body["access"], "password");
        for secret in ["correct", "hash", "salt", "key"] {
            assert!(!res.text.contains(secret), "{secret} shown: {}", res.text);
        }
        let ua = [(header::USER_AGENT.as_str(), DESKTOP)];

        // Without the cookie: the form, nothing of the target, not even for a crawler.
        for agent in [DESKTOP, SLACKBOT] {
            let res = api
                .visit_with(
                    "/pw-plans?utm=mail",
                    &[(header::USER_AGENT.as_str(), agent)],
                    PROXY,
                )
                .await;
            assert_eq!(res.status, StatusCode::FORBIDDEN);
            assert!(res.text.contains("<form method=\"post\""), "{}", res.text);
            assert!(res.headers.get(header::LOCATION).is_none());
            assert!(
                !res.text.contains("plans.example") && !res.text.contains("Q3"),
                "{}",
                res.text
            );
            assert!(res.headers[header::CONTENT_SECURITY_POLICY]
                .to_str()
                .expect("text")
                .contains("frame-ancestors 'none'"));
        }

        // A wrong password: the form again. The right one: a cookie, and back to look.
        let res = api
            .post_form("/pw-plans?utm=mail", "password=wrong+horse")
            .await;
        assert_eq!(res.status, StatusCode::FORBIDDEN);
        assert!(res.text.contains("not right"), "{}", res.text);
        assert!(res.headers.get(header::SET_COOKIE).is_none());
        let res = api
            .post_form("/pw-plans?utm=mail", "password=correct+horse")
            .await;
        assert_eq!(res.status, StatusCode::SEE_OTHER, "{}", res.text);
        assert_eq!(res.headers[header::LOCATION], "/pw-plans?utm=mail");
        let set = res.headers[header::SET_COOKIE]
            .to_str()
            .expect("text")
            .to_owned();
        for part in [
            "Path=/pw-plans",
            "HttpOnly",
            "Secure",
            "SameSite=Lax",
            "Max-Age=3600",
        ] {
            assert!(set.contains(part), "{part} missing: {set}");
        }
        assert!(!res.text.contains("plans.example"));
        let cookie = set.split(';').next().expect("pair").to_owned();
        let with_cookie = [
            (header::USER_AGENT.as_str(), DESKTOP),
            (header::COOKIE.as_str(), cookie.as_str()),
        ];
        let res = api
            .visit_with("/pw-plans?utm=mail", &with_cookie, PROXY)
            .await;
        assert_eq!(res.status, StatusCode::FOUND, "{}", res.text);
        assert_eq!(
            res.headers[header::LOCATION],
            "https://plans.example/q3?utm=mail"
        );

        // The cookie is for that link alone.
        let res = api
            .create(
                &token,
                json!({ "target_url": "https://x.example/", "code": "pw-other", "access": "password", "password": "correct horse" }),
            )
            .await;
        assert_eq!(res.status, StatusCode::CREATED, "{}", res.text);
        let res = api.visit_with("/pw-other", &with_cookie, PROXY).await;
        assert_eq!(res.status, StatusCode::FORBIDDEN, "another link's cookie");

        // Five wrong passwords a minute per client and link; then even its right one
        // waits. Another client is not held back: its right password lets it in.
        for _ in 0..shared::password::CLIENT_FAILURES_PER_WINDOW {
            let res = api.post_form("/pw-other", "password=guess1234").await;
            assert_eq!(res.status, StatusCode::FORBIDDEN);
        }
        let res = api.post_form("/pw-other", "password=correct+horse").await;
        assert_eq!(res.status, StatusCode::TOO_MANY_REQUESTS, "{}", res.text);
        assert!(res.headers.contains_key(header::RETRY_AFTER));
        assert!(res.headers.get(header::SET_COOKIE).is_none());
        let res = api
            .post_form_from("203.0.113.77:40000", "/pw-other", "password=correct+horse")
            .await;
        assert_eq!(
            res.status,
            StatusCode::SEE_OTHER,
            "another client: {}",
            res.text
        );
        // Another link's attempts are its own.
        let res = api.post_form("/pw-plans", "password=correct+horse").await;
        assert_eq!(res.status, StatusCode::SEE_OTHER);

        // A new password: whoever was let in under the old one must give the new one.
        let res = api
            .patch_json(
                &token,
                "/v1/links/s.example/pw-plans",
                Some("\"1\""),
                json!({ "password": "battery staple" }),
            )
            .await;
        assert_eq!(res.status, StatusCode::OK, "{}", res.text);
        let res = api.visit_with("/pw-plans", &with_cookie, PROXY).await;
        assert_eq!(res.status, StatusCode::FORBIDDEN, "the old cookie");
        let res = api.post_form("/pw-plans", "password=correct+horse").await;
        assert_eq!(res.status, StatusCode::FORBIDDEN, "the old password");
        let res = api.post_form("/pw-plans", "password=battery+staple").await;
        assert_eq!(res.status, StatusCode::SEE_OTHER);

        // Only a password link's form takes a POST.
        let res = api
            .create(
                &token,
                json!({ "target_url": "https://x.example/", "code": "pw-public" }),
            )
            .await;
        assert_eq!(res.status, StatusCode::CREATED);
        let res = api.post_form("/pw-public", "password=correct+horse").await;
        assert_eq!(res.status, StatusCode::METHOD_NOT_ALLOWED);
        assert!(res.headers.get(header::LOCATION).is_none());
        assert_eq!(api.sent_to("/pw-public", &ua).await, "https://x.example/");

        // What a password link needs, refused with the field named.
        for (body, why) in [
            (
                json!({ "target_url": "https://x.example/", "access": "password" }),
                "no password",
            ),
            (
                json!({ "target_url": "https://x.example/", "access": "password", "password": "short" }),
                "too short",
            ),
            (
                json!({ "target_url": "https://x.example/", "password": "correct horse" }),
                "a public link",
            ),
            (
                json!({ "target_url": "https://x.example/", "access": "signed", "password": "correct horse" }),
                "a signed link",
            ),
        ] {
            let res = api.create(&token, body).await;
            assert_eq!(
                (res.status, res.body["field"].clone()),
                (StatusCode::UNPROCESSABLE_ENTITY, json!("password")),
                "{why}: {}",
                res.text
            );
        }
        let res = api
            .patch_json(
                &token,
                "/v1/links/s.example/pw-public",
                Some("\"1\""),
                json!({ "password": "correct horse" }),
            )
            .await;
        assert_eq!(
            (res.status, res.body["field"].clone()),
            (StatusCode::UNPROCESSABLE_ENTITY, json!("password")),
            "{}",
            res.text
        );
        // A password link issues no tokens.
        let res = api
            .post_json(&token, "/v1/links/s.example/pw-plans/tokens", &json!({}))
            .await;
        assert_eq!(res.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", res.text);
        t.cleanup().await;
    }
}

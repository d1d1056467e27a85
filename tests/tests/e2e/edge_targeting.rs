//! Links that decide at the edge (issue 17), through the real origin and the real
//! `wrangler dev`: each visit's target picked by the link's rules from the visit's own
//! request, splits by weight, link-preview crawlers shown the card, interstitials and a
//! link's own expired page.

use hop_e2e::{client, poll, read_link, wait_published, Wired};
use reqwest::header::{
    ACCEPT_LANGUAGE, CONTENT_TYPE, COOKIE, LOCATION, RETRY_AFTER, SET_COOKIE, USER_AGENT,
};
use reqwest::StatusCode;
use serde_json::json;
use std::cell::{Cell, RefCell};
use std::time::Duration;
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

const IPHONE: &str = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1";
const DESKTOP: &str = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Safari/537.36";
const SLACKBOT: &str = "Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)";
const GOOGLEBOT: &str = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)";
/// Visits of the split link.
const SPLIT_VISITS: usize = 1_000;

/// Creates `body` and waits until the edge holds it (so the edge's own KV copy is what
/// decides, not the origin's answer in the activation window).
async fn published(w: &Wired, body: serde_json::Value) -> String {
    let link = w.origin.create(&w.key, body).await;
    let code = link["code"].as_str().expect("code").to_owned();
    wait_published(&w.origin.url(""), &w.key, "s.example", &code).await;
    code
}

/// A `GET` of `/{path}` at the edge with `headers`.
async fn visit(
    w: &Wired,
    path: &str,
    headers: &[(reqwest::header::HeaderName, &str)],
) -> reqwest::Response {
    let mut req = client()
        .get(w.edge.url(&format!("/{path}")))
        .header("host", "s.example");
    for (name, value) in headers {
        req = req.header(name, *value);
    }
    req.send().await.expect("visit")
}

async fn location(
    w: &Wired,
    path: &str,
    headers: &[(reqwest::header::HeaderName, &str)],
) -> String {
    let res = visit(w, path, headers).await;
    assert_eq!(res.status(), StatusCode::FOUND, "{path} {headers:?}");
    res.headers()[LOCATION].to_str().expect("text").to_owned()
}

/// The link's stats at the origin, as its owner reads them.
async fn stats(w: &Wired, code: &str) -> serde_json::Value {
    read_link(
        &w.origin.url(&format!("/v1/links/s.example/{code}/stats")),
        &w.key,
    )
    .await
}

/// A browser's prefetch of the link (a person's user agent, `Sec-Purpose: prefetch`):
/// redirected like any visit.
/// From the `n`th address: each a person of its own, were it counted as one (a visit
/// limit counts an address once a day, D-280).
async fn prefetch(w: &Wired, code: &str, n: u8) {
    let purpose = reqwest::header::HeaderName::from_static("sec-purpose");
    let ip = reqwest::header::HeaderName::from_static("cf-connecting-ip");
    let addr = format!("198.51.100.{n}");
    assert_eq!(
        location(
            w,
            code,
            &[(USER_AGENT, DESKTOP), (purpose, "prefetch"), (ip, &addr)]
        )
        .await,
        "https://shop.example/"
    );
}

#[tokio::test]
async fn the_edge_picks_each_visit_s_target_by_the_link_s_rules() {
    let w = Wired::start("marketing", false).await;
    let code = published(
        &w,
        json!({
            "target_url": "https://shop.example/",
            "code": "spring",
            "forward_query": true,
            "rules": [
                { "when": { "device": ["ios"] }, "target_url": "https://apps.example/ios" },
                { "when": { "language": ["de"] }, "target_url": "https://shop.example/de" },
                { "when": { "query": [{ "name": "ref", "equals": "tv" }] }, "target_url": "https://shop.example/tv" },
            ],
            "preview": { "title": "Spring sale", "description": "Everything must go", "image_url": "https://img.example/spring.png" },
        }),
    )
    .await;
    assert_eq!(
        location(&w, &code, &[(USER_AGENT, IPHONE)]).await,
        "https://apps.example/ios"
    );
    assert_eq!(
        location(
            &w,
            &code,
            &[(USER_AGENT, DESKTOP), (ACCEPT_LANGUAGE, "de-CH,de;q=0.9")]
        )
        .await,
        "https://shop.example/de"
    );
    // The winning rule's target gets the visitor's query, as the link forwards it.
    assert_eq!(
        location(&w, &format!("{code}?ref=tv"), &[(USER_AGENT, DESKTOP)]).await,
        "https://shop.example/tv?ref=tv"
    );
    assert_eq!(
        location(
            &w,
            &code,
            &[(USER_AGENT, DESKTOP), (ACCEPT_LANGUAGE, "fr-FR,fr;q=0.9")]
        )
        .await,
        "https://shop.example/"
    );

    // A link-preview crawler gets the card, with the target only in its refresh.
    let card = visit(&w, &code, &[(USER_AGENT, SLACKBOT)]).await;
    assert_eq!(card.status(), StatusCode::OK);
    assert!(card.headers().get(LOCATION).is_none());
    let page = card.text().await.expect("page");
    for tag in [
        r#"<meta property="og:title" content="Spring sale">"#,
        r#"<meta property="og:description" content="Everything must go">"#,
        r#"<meta property="og:image" content="https://img.example/spring.png">"#,
        r#"<meta http-equiv="refresh" content="0; url=https://shop.example/">"#,
    ] {
        assert!(page.contains(tag), "{tag} in {page}");
    }
}

#[tokio::test]
async fn a_fifty_fifty_split_lands_within_five_points_over_a_thousand_visits() {
    let w = Wired::start("marketing", false).await;
    let code = published(
        &w,
        json!({
            "target_url": "https://shop.example/",
            "split": [
                { "target_url": "https://a.example/", "weight": 50 },
                { "target_url": "https://b.example/", "weight": 50 },
            ],
        }),
    )
    .await;
    let url = w.edge.url(&format!("/{code}"));
    let mut a = 0;
    for batch in 0..SPLIT_VISITS / 50 {
        let mut visits = tokio::task::JoinSet::new();
        for _ in 0..50 {
            let req = client()
                .get(&url)
                .header("host", "s.example")
                .header(USER_AGENT, DESKTOP);
            visits.spawn(async move { req.send().await.expect("visit") });
        }
        while let Some(res) = visits.join_next().await {
            let res = res.expect("visit task");
            assert_eq!(res.status(), StatusCode::FOUND, "batch {batch}");
            match res.headers()[LOCATION].to_str().expect("text") {
                "https://a.example/" => a += 1,
                "https://b.example/" => {}
                other => panic!("batch {batch}: a visit went to {other}"),
            }
        }
    }
    let share = a as f64 / SPLIT_VISITS as f64;
    println!(
        "split: {a} of {SPLIT_VISITS} visits to variant a ({:.1}%)",
        share * 100.0
    );
    // Five points is more than three standard deviations at 1,000 visits.
    assert!((0.45..=0.55).contains(&share), "{a} of {SPLIT_VISITS} to a");
}

#[tokio::test]
async fn an_interstitial_names_the_destination_and_an_ended_link_goes_to_its_own_page() {
    let w = Wired::start("marketing", false).await;
    let warned = published(
        &w,
        json!({ "target_url": "https://xn--bcher-kva.example/book", "interstitial": true }),
    )
    .await;
    let res = visit(&w, &warned, &[(USER_AGENT, DESKTOP)]).await;
    assert_eq!(res.status(), StatusCode::OK);
    assert!(res.headers().get(LOCATION).is_none());
    let page = res.text().await.expect("page");
    assert!(
        page.contains("<strong>bücher.example</strong> <code>(xn--bcher-kva.example)</code>"),
        "{page}"
    );
    assert!(
        page.contains(r#"href="https://xn--bcher-kva.example/book""#),
        "{page}"
    );

    // Two seconds from now: by the time it is published it may have ended already, and
    // it goes to its own page from then on (the edge decides from the record's own
    // expiry: no edit travels).
    let ending = std::time::SystemTime::now() + std::time::Duration::from_secs(2);
    let ending = OffsetDateTime::from(ending)
        .format(&Rfc3339)
        .expect("format");
    let ended = published(
        &w,
        json!({
            "target_url": "https://shop.example/spring",
            "expires_at": ending,
            "expired_url": "https://shop.example/ended",
        }),
    )
    .await;
    // Where it went last, for the failure message.
    let last = RefCell::new(String::new());
    poll("the link ends")
        .within(Duration::from_secs(30))
        .every(Duration::from_millis(200))
        .explain(|| format!("still going to {}", last.borrow()))
        .until_true(|| async {
            let to = location(&w, &ended, &[]).await;
            let ended_now = to == "https://shop.example/ended";
            *last.borrow_mut() = to;
            ended_now
        })
        .await;
}

/// `max_visits: 5` ignores twenty crawler visits, then ends after five people. The
/// count travels as clicks do (the edge's queue, the origin's rollups), and the end as
/// any edit does (outbox, publisher, KV): visits that land meanwhile still redirect.
/// That overshoot is measured here, at a visitor every 50 ms, and printed.
#[tokio::test]
async fn a_visit_limit_ignores_crawlers_and_ends_the_link_at_the_edge() {
    let w = Wired::start("marketing", false).await;
    let code = published(
        &w,
        json!({ "target_url": "https://shop.example/", "max_visits": 5 }),
    )
    .await;
    for _ in 0..20 {
        assert_eq!(
            location(&w, &code, &[(USER_AGENT, GOOGLEBOT)]).await,
            "https://shop.example/"
        );
    }
    // Five people: five addresses (a visit limit counts an address once a day, D-280).
    let ip = reqwest::header::HeaderName::from_static("cf-connecting-ip");
    let people = [
        "203.0.113.1",
        "203.0.113.2",
        "203.0.113.3",
        "203.0.113.4",
        "203.0.113.5",
    ];
    for addr in people {
        assert_eq!(
            location(&w, &code, &[(USER_AGENT, DESKTOP), (ip.clone(), addr)]).await,
            "https://shop.example/"
        );
    }
    let reached = std::time::Instant::now();
    let overshoot = Cell::new(0);
    poll("the edge ends the link past its limit")
        .within(Duration::from_secs(60))
        .every(Duration::from_millis(50))
        .explain(|| format!("still redirecting ({} visits over)", overshoot.get()))
        .until_true(|| async {
            // The fifth person refreshing: visits over the limit, not people.
            let res = visit(&w, &code, &[(USER_AGENT, DESKTOP), (ip.clone(), people[4])]).await;
            match res.status() {
                StatusCode::FOUND => {
                    overshoot.set(overshoot.get() + 1);
                    false
                }
                StatusCode::GONE => true,
                other => panic!("a visit past the limit got {other}"),
            }
        })
        .await;
    let overshoot = overshoot.get();
    println!(
        "visit limit: {overshoot} visits over the limit, the edge ended the link {} ms after the limit was reached",
        reached.elapsed().as_millis()
    );
    let link = read_link(
        &w.origin.url(&format!("/v1/links/s.example/{code}")),
        &w.key,
    )
    .await;
    assert_eq!(link["exhausted"], true, "{link}");
    // Crawlers get the end too.
    assert_eq!(
        visit(&w, &code, &[(USER_AGENT, GOOGLEBOT)]).await.status(),
        StatusCode::GONE
    );
}

/// A visit limit counts people, not refreshes (issue 54, D-280): a hundred visits from
/// one address to a 3-visit link leave it open, and three other addresses close it. The
/// edge names each visitor of a limited link by a keyed hash of the address (as
/// Cloudflare sets `CF-Connecting-IP`), which the origin counts once a day.
#[tokio::test]
async fn a_visit_limit_counts_people_not_refreshes_at_the_edge() {
    let w = Wired::start("marketing", false).await;
    let code = published(
        &w,
        json!({ "target_url": "https://shop.example/", "max_visits": 3 }),
    )
    .await;
    let ip = reqwest::header::HeaderName::from_static("cf-connecting-ip");
    let from = |addr: &'static str| [(USER_AGENT, DESKTOP), (ip.clone(), addr)];
    for _ in 0..100 {
        assert_eq!(
            location(&w, &code, &from("203.0.113.10")).await,
            "https://shop.example/"
        );
    }
    // The edge counts an address's first 60 clicks a minute (its budget): once they
    // reached the origin, the limit has counted one person, and the link is open.
    poll("the refreshes reach the origin")
        .within(Duration::from_secs(60))
        .every(Duration::from_millis(200))
        .until_true(|| async { stats(&w, &code).await["totals"]["visits"].as_i64() >= Some(60) })
        .await;
    let counted = stats(&w, &code).await;
    assert_eq!(
        counted["visit_limit"],
        json!({ "max_visits": 3, "counted": 1 }),
        "{}",
        counted["totals"]
    );
    let link = read_link(
        &w.origin.url(&format!("/v1/links/s.example/{code}")),
        &w.key,
    )
    .await;
    assert_eq!(link["exhausted"], false, "{link}");
    // Two addresses of one IPv6 /64 are one person: two, and the link stays open.
    for addr in ["2001:db8:7::1", "2001:db8:7::ffff"] {
        assert_eq!(
            location(&w, &code, &from(addr)).await,
            "https://shop.example/"
        );
    }
    poll("the second person reaches the origin")
        .within(Duration::from_secs(60))
        .every(Duration::from_millis(200))
        .until_true(|| async { stats(&w, &code).await["visit_limit"]["counted"] == 2 })
        .await;
    let link = read_link(
        &w.origin.url(&format!("/v1/links/s.example/{code}")),
        &w.key,
    )
    .await;
    assert_eq!(link["exhausted"], false, "{link}");
    // A third address is the third person: the edge ends the link. It refreshes until
    // then, which adds no one.
    poll("the edge ends the link after the third person")
        .within(Duration::from_secs(60))
        .every(Duration::from_millis(100))
        .until_true(|| async {
            match visit(&w, &code, &from("198.51.100.12")).await.status() {
                StatusCode::FOUND => false,
                StatusCode::GONE => true,
                other => panic!("a visit past the limit got {other}"),
            }
        })
        .await;
    let counted = stats(&w, &code).await;
    assert_eq!(
        counted["visit_limit"],
        json!({ "max_visits": 3, "counted": 3 }),
        "{}",
        counted["totals"]
    );
}

/// A browser's prefetch (`Sec-Purpose: prefetch`, a person's user agent) is a scanner's
/// visit: counted, as a bot's, and never using up a `max_visits` link; a person's visits
/// then do. The stats say why they were bots: `prefetch`.
#[tokio::test]
async fn a_prefetch_is_counted_as_a_bot_and_never_uses_up_a_visit_limit() {
    let w = Wired::start("marketing", false).await;
    let code = published(
        &w,
        json!({ "target_url": "https://shop.example/", "max_visits": 2 }),
    )
    .await;
    for n in 1..=10 {
        prefetch(&w, &code, n).await;
    }
    // Every prefetch arrives at the origin, as a bot's visit.
    poll("the prefetches are counted as bots")
        .within(Duration::from_secs(60))
        .every(Duration::from_millis(200))
        .until_true(|| async {
            let stats = stats(&w, &code).await;
            // People's visits stay at none: every prefetch is a bot's.
            assert_eq!(stats["totals"]["visits"].as_i64(), Some(0), "{stats}");
            let counted = stats["totals"]["bots"].as_i64() == Some(10);
            if counted {
                // The stats say why: all ten were prefetches.
                assert_eq!(
                    stats["top"]["scanners"],
                    json!([{ "value": "prefetch", "visits": 10 }]),
                    "{stats}"
                );
            }
            counted
        })
        .await;
    let link = read_link(
        &w.origin.url(&format!("/v1/links/s.example/{code}")),
        &w.key,
    )
    .await;
    assert_eq!(link["exhausted"], false, "{link}");
    assert_eq!(
        location(&w, &code, &[(USER_AGENT, DESKTOP)]).await,
        "https://shop.example/"
    );
}

/// A visit from a network that serves no people (Microsoft's, 8075: where Defender's
/// Safe Links opens every link of a mail) is a scanner's: a bot's, listed as `network`,
/// never using up a visit limit; one from a home network is a person's. `wrangler dev`
/// takes a request's `cf` object from its `MF-CF-Blob` header (miniflare's entry worker,
/// as Cloudflare's edge sets `request.cf`), which simulates the network per request.
#[tokio::test]
async fn a_visit_from_a_scanners_network_is_a_bot_and_says_so_in_the_stats() {
    let w = Wired::start("marketing", false).await;
    let code = published(
        &w,
        json!({ "target_url": "https://shop.example/", "max_visits": 2 }),
    )
    .await;
    let cf = reqwest::header::HeaderName::from_static("mf-cf-blob");
    for _ in 0..6 {
        assert_eq!(
            location(
                &w,
                &code,
                &[
                    (USER_AGENT, DESKTOP),
                    (cf.clone(), r#"{"asn":8075,"country":"US"}"#)
                ]
            )
            .await,
            "https://shop.example/"
        );
    }
    assert_eq!(
        location(
            &w,
            &code,
            &[
                (USER_AGENT, DESKTOP),
                (cf.clone(), r#"{"asn":3320,"country":"DE"}"#)
            ]
        )
        .await,
        "https://shop.example/"
    );
    let last = RefCell::new(serde_json::Value::Null);
    poll("the visits arrive, the network's as a scanner's")
        .within(Duration::from_secs(60))
        .every(Duration::from_millis(200))
        .explain(|| last.borrow().to_string())
        .until_true(|| async {
            let stats = stats(&w, &code).await;
            let arrived = stats["totals"]["visits"].as_i64() == Some(1)
                && stats["totals"]["bots"].as_i64() == Some(6)
                && stats["top"]["scanners"] == json!([{ "value": "network", "visits": 6 }])
                && stats["top"]["countries"] == json!([{ "value": "DE", "visits": 1 }]);
            *last.borrow_mut() = stats;
            arrived
        })
        .await;
    let link = read_link(
        &w.origin.url(&format!("/v1/links/s.example/{code}")),
        &w.key,
    )
    .await;
    assert_eq!(link["exhausted"], false, "{link}");
}

/// A link whose owner turned the scanner check off (`scanner_check: false`, carried in
/// its edge record) counts a prefetch as a person's visit: two use up a limit of two,
/// and the edge ends the link.
#[tokio::test]
async fn a_link_without_the_scanner_check_counts_a_prefetch_as_a_person() {
    let w = Wired::start("marketing", false).await;
    let code = published(
        &w,
        json!({ "target_url": "https://shop.example/", "max_visits": 2, "scanner_check": false }),
    )
    .await;
    for n in 1..=2 {
        prefetch(&w, &code, n).await;
    }
    // Asked as a crawler, whose visits never count: only the prefetches can end it.
    poll("the edge ends the link after two prefetches counted as people")
        .within(Duration::from_secs(90))
        .every(Duration::from_millis(250))
        .until_true(|| async {
            visit(&w, &code, &[(USER_AGENT, GOOGLEBOT)]).await.status() == StatusCode::GONE
        })
        .await;
    let stats = stats(&w, &code).await;
    assert_eq!(stats["totals"]["visits"].as_i64(), Some(2), "{stats}");
    assert_eq!(stats["top"]["scanners"], json!([]), "{stats}");
}

/// Each click says which variant it got, and the link's stats break its visits down so.
/// Forty visits: one visitor's clicks are counted up to 60 a minute (the per-visitor
/// budget), so the 1,000 of the split test are not all counted.
#[tokio::test]
async fn the_stats_count_each_edge_visit_under_the_variant_it_got() {
    const VISITS: usize = 40;
    let w = Wired::start("marketing", false).await;
    let code = published(
        &w,
        json!({
            "target_url": "https://shop.example/",
            "split": [
                { "target_url": "https://a.example/", "weight": 50 },
                { "target_url": "https://b.example/", "weight": 50 },
            ],
        }),
    )
    .await;
    let mut a = 0;
    for _ in 0..VISITS {
        if location(&w, &code, &[(USER_AGENT, DESKTOP)]).await == "https://a.example/" {
            a += 1;
        }
    }
    let (a, b) = (a as i64, (VISITS - a) as i64);
    let mut expected = vec![("0".to_owned(), a), ("1".to_owned(), b)];
    expected.retain(|(_, n)| *n > 0);
    expected.sort_by_key(|(_, n)| -n);
    // The stats as last read, for the failure message.
    let last = RefCell::new(serde_json::Value::Null);
    let (by_variant, stats) = poll("the clicks all arrive")
        .within(Duration::from_secs(60))
        .every(Duration::from_millis(200))
        .explain(|| last.borrow().to_string())
        .until(|| async {
            let stats = stats(&w, &code).await;
            let by_variant: Vec<(String, i64)> = stats["top"]["variants"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .map(|r| {
                            let value = r["value"].as_str().unwrap_or_default().to_owned();
                            (value, r["visits"].as_i64().unwrap_or_default())
                        })
                        .collect()
                })
                .unwrap_or_default();
            if by_variant.iter().map(|(_, n)| n).sum::<i64>() == VISITS as i64 {
                return Some((by_variant, stats));
            }
            *last.borrow_mut() = stats;
            None
        })
        .await;
    assert_eq!(by_variant, expected, "{stats}");
}

/// A signed link at the edge: 403 without a token, 302 with one the origin issued
/// (checked by WebCrypto in the worker), 403 again once the token has expired.
#[tokio::test]
async fn a_signed_link_opens_at_the_edge_only_with_an_unexpired_token() {
    let w = Wired::start("marketing", false).await;
    let code = published(
        &w,
        json!({ "target_url": "https://plans.example/q3", "access": "signed" }),
    )
    .await;
    let res = visit(&w, &code, &[(USER_AGENT, DESKTOP)]).await;
    assert_eq!(res.status(), StatusCode::FORBIDDEN);
    assert!(res.headers().get(LOCATION).is_none());
    assert!(!res.text().await.expect("body").contains("plans.example"));

    let issue = |ttl_s: u64| {
        client()
            .post(w.origin.url(&format!("/v1/links/s.example/{code}/tokens")))
            .bearer_auth(&w.key)
            .json(&json!({ "ttl_s": ttl_s }))
            .send()
    };
    let long: serde_json::Value = issue(3600)
        .await
        .expect("issue")
        .json()
        .await
        .expect("token");
    let token = long["token"].as_str().expect("token");
    assert_eq!(
        location(&w, &format!("{code}?t={token}"), &[(USER_AGENT, DESKTOP)]).await,
        "https://plans.example/q3"
    );
    // A forged MAC is refused.
    let (expiry, _) = token.split_once('.').expect("expiry.mac");
    let forged = format!("{code}?t={expiry}.{}", "ab".repeat(32));
    assert_eq!(
        visit(&w, &forged, &[]).await.status(),
        StatusCode::FORBIDDEN
    );

    // A token of two seconds opens it, then stops.
    let short: serde_json::Value = issue(2).await.expect("issue").json().await.expect("token");
    let path = format!("{code}?t={}", short["token"].as_str().expect("token"));
    poll("the token expires")
        .within(Duration::from_secs(30))
        .every(Duration::from_millis(200))
        .until_true(|| async {
            let status = visit(&w, &path, &[]).await.status();
            if status != StatusCode::FORBIDDEN {
                assert_eq!(status, StatusCode::FOUND);
            }
            status == StatusCode::FORBIDDEN
        })
        .await;
}

/// A password link at the edge: the form, a wrong password, the right one (hashed by
/// WebCrypto's PBKDF2 in the worker), then the cookie, which opens that link alone; a
/// flood of wrong passwords is cut off by the isolate.
#[tokio::test]
async fn a_password_link_opens_at_the_edge_with_its_password_then_its_cookie() {
    let w = Wired::start("marketing", false).await;
    let body = |code: &str| {
        json!({
            "target_url": "https://plans.example/q3",
            "code": code,
            "access": "password",
            "password": "correct horse",
            "forward_query": true,
        })
    };
    let code = published(&w, body("pw-plans")).await;
    let res = visit(&w, &format!("{code}?utm=mail"), &[(USER_AGENT, DESKTOP)]).await;
    assert_eq!(res.status(), StatusCode::FORBIDDEN);
    assert!(res.headers().get(LOCATION).is_none());
    let form = res.text().await.expect("body");
    assert!(form.contains("<form method=\"post\""), "{form}");
    assert!(!form.contains("plans.example"), "{form}");

    let post = |code: String, password: &'static str| {
        client()
            .post(w.edge.url(&format!("/{code}?utm=mail")))
            .header("host", "s.example")
            .header(CONTENT_TYPE, "application/x-www-form-urlencoded")
            .body(format!("password={password}"))
            .send()
    };
    let res = post(code.clone(), "wrong+horse").await.expect("post");
    assert_eq!(res.status(), StatusCode::FORBIDDEN);
    assert!(res.headers().get(SET_COOKIE).is_none());
    assert!(res.text().await.expect("body").contains("not right"));

    let res = post(code.clone(), "correct+horse").await.expect("post");
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    assert_eq!(res.headers()[LOCATION], format!("/{code}?utm=mail"));
    let set = res.headers()[SET_COOKIE].to_str().expect("text").to_owned();
    for part in [
        format!("Path=/{code}"),
        "HttpOnly".into(),
        "Secure".into(),
        "SameSite=Lax".into(),
    ] {
        assert!(set.contains(&part), "{part} missing: {set}");
    }
    let cookie = set.split(';').next().expect("pair").to_owned();
    assert_eq!(
        location(
            &w,
            &format!("{code}?utm=mail"),
            &[(USER_AGENT, DESKTOP), (COOKIE, &cookie)]
        )
        .await,
        "https://plans.example/q3?utm=mail"
    );

    // Another link with the same password is not opened by this one's cookie.
    let other = published(&w, body("pw-other")).await;
    let res = visit(&w, &other, &[(COOKIE, &cookie)]).await;
    assert_eq!(res.status(), StatusCode::FORBIDDEN);
    // Five wrong passwords a minute per client and link in an isolate; then even the
    // client's right one waits.
    for _ in 0..shared::password::CLIENT_FAILURES_PER_WINDOW {
        let res = post(other.clone(), "guess1234").await.expect("post");
        assert_eq!(res.status(), StatusCode::FORBIDDEN);
    }
    let res = post(other.clone(), "correct+horse").await.expect("post");
    assert_eq!(res.status(), StatusCode::TOO_MANY_REQUESTS);
    assert!(res.headers().contains_key(RETRY_AFTER));
    assert!(res.headers().get(SET_COOKIE).is_none());
    // Another visitor (another address, as Cloudflare names it) is not held back.
    let res = client()
        .post(w.edge.url(&format!("/{other}")))
        .header("host", "s.example")
        .header("cf-connecting-ip", "203.0.113.77")
        .header(CONTENT_TYPE, "application/x-www-form-urlencoded")
        .body("password=correct+horse")
        .send()
        .await
        .expect("post");
    assert_eq!(res.status(), StatusCode::SEE_OTHER, "{}", w.edge.log());

    // No other link takes a POST.
    let public = published(&w, json!({ "target_url": "https://x.example/" })).await;
    let res = post(public, "correct+horse").await.expect("post");
    assert_eq!(res.status(), StatusCode::METHOD_NOT_ALLOWED);
}

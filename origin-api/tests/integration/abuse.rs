//! The abuse desk on every database available: a threat feed refuses new links to what
//! it lists and bans the live links it lists (and only those) through the ban lane; the
//! background re-check bans what a feed lists that no refresh matched; reports are taken
//! from anyone, tell them nothing, and are read by admins only.

use crate::common::{apis, apis_with, Api};
use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use serde_json::{json, Value};
use std::time::Duration;

/// A feed file in a directory of its own, removed with it.
fn feed_file(text: &str) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().expect("a directory");
    let path = dir.path().join("feed.txt");
    std::fs::write(&path, text).expect("write the feed");
    let path = path.to_str().expect("a path").to_owned();
    (dir, path)
}

async fn make(api: &Api, key: &str, code: &str, body: Value) {
    let mut body = body;
    body["code"] = json!(code);
    let r = api.create(key, body).await;
    assert_eq!(r.status, StatusCode::CREATED, "{code}: {}", r.text);
}

async fn visit(api: &Api, code: &str) -> StatusCode {
    api.visit("GET", "s.example", &format!("/{code}"))
        .await
        .status
}

/// The reasons of the active bans.
async fn ban_reasons(api: &Api, admin: &str) -> Vec<String> {
    let bans = api.call_as(admin, "GET", "/v1/bans").await;
    bans.body
        .as_array()
        .or_else(|| bans.body["items"].as_array())
        .cloned()
        .unwrap_or_default()
        .iter()
        .map(|b| b["reason"].as_str().unwrap_or("").to_owned())
        .collect()
}

#[tokio::test]
async fn a_feed_refuses_what_it_lists_and_bans_only_the_live_links_it_lists() {
    for (api, t) in apis("abuse-feeds").await {
        let owner = api.key("acme", false).await;
        let admin = api.key("ops", true).await;
        make(
            &api,
            &owner,
            "under-host",
            json!({"target_url": "https://cdn.evil.example/x"}),
        )
        .await;
        make(
            &api,
            &owner,
            "listed-url",
            json!({"target_url": "https://drive.example/file/abc"}),
        )
        .await;
        make(
            &api,
            &owner,
            "same-host",
            json!({"target_url": "https://drive.example/file/other"}),
        )
        .await;
        make(
            &api,
            &owner,
            "by-rule",
            json!({"target_url": "https://shop.example/",
                   "rules": [{"when": {"device": ["ios"]}, "target_url": "https://apps.rules-evil.example/"}]}),
        )
        .await;
        make(
            &api,
            &owner,
            "clean-link",
            json!({"target_url": "https://shop.example/ok"}),
        )
        .await;
        for code in [
            "under-host",
            "listed-url",
            "same-host",
            "by-rule",
            "clean-link",
        ] {
            assert_eq!(visit(&api, code).await, StatusCode::FOUND, "{code}");
        }

        let (_dir, path) = feed_file(
            "# a test list\nevil.example\nrules-evil.example\nhttps://drive.example/file/abc\nnever-linked.example\nnot a host\n",
        );
        let desk = &api.state.abuse;
        desk.add_feed("test-feed", &path, "plain", Duration::from_secs(3600))
            .await
            .expect("added");
        let done = desk.refresh("test-feed").await.expect("refreshed");
        assert_eq!(
            (done.hosts, done.urls, done.skipped),
            (3, 1, 1),
            "{}",
            t.kind()
        );
        assert_eq!(
            done.hosts_banned,
            vec!["evil.example", "rules-evil.example"]
        );
        assert_eq!(done.links_banned, vec!["s.example/listed-url"]);
        for (code, status) in [
            ("under-host", StatusCode::FORBIDDEN),
            ("listed-url", StatusCode::FORBIDDEN),
            ("same-host", StatusCode::FOUND),
            ("by-rule", StatusCode::FORBIDDEN),
            ("clean-link", StatusCode::FOUND),
        ] {
            assert_eq!(visit(&api, code).await, status, "{code} ({})", t.kind());
        }
        let reasons = ban_reasons(&api, &admin).await;
        assert!(
            reasons.contains(&"threat feed test-feed: evil.example".to_owned())
                && reasons
                    .contains(&"threat feed test-feed: https://drive.example/file/abc".to_owned()),
            "{reasons:?}"
        );
        let history = api
            .call_as(&owner, "GET", "/v1/links/s.example/under-host/history")
            .await;
        assert_eq!(
            history.body["items"][0]["action"], "banned",
            "{}",
            history.text
        );
        assert_eq!(
            history.body["items"][0]["actor"], "feed:test-feed",
            "{}",
            history.text
        );

        // A second refresh finds them banned already: nothing twice.
        let again = desk.refresh("test-feed").await.expect("refreshed");
        assert!(
            again.hosts_banned.is_empty() && again.links_banned.is_empty(),
            "{again:?}"
        );

        // New links to what it lists are refused, naming the feed; a listed host's
        // neighbours are not.
        for target in [
            "https://never-linked.example/",
            "https://deep.never-linked.example/a",
            "https://drive.example/file/abc",
        ] {
            let r = api.create(&owner, json!({"target_url": target})).await;
            assert_eq!(
                r.status,
                StatusCode::UNPROCESSABLE_ENTITY,
                "{target}: {}",
                r.text
            );
            assert!(r.text.contains("test-feed"), "{target}: {}", r.text);
        }
        let fine = api
            .create(
                &owner,
                json!({"target_url": "https://drive.example/file/new"}),
            )
            .await;
        assert_eq!(fine.status, StatusCode::CREATED, "{}", fine.text);
        let bulk = api
            .post_json(
                &owner,
                "/v1/links/bulk",
                &json!({"links": [
                    {"target_url": "https://never-linked.example/b"},
                    {"target_url": "https://shop.example/bulk"}]}),
            )
            .await;
        assert_eq!(bulk.status, StatusCode::OK, "{}", bulk.text);
        let results = bulk.body["results"].as_array().cloned().unwrap_or_default();
        assert_eq!(results.len(), 2, "{}", bulk.text);
        assert!(
            results[0].to_string().contains("test-feed"),
            "{}",
            bulk.text
        );
        assert!(
            !results[1].to_string().contains("test-feed"),
            "{}",
            bulk.text
        );

        // Bad input is refused, saying why; a feed that cannot be read keeps its list.
        for (name, source, format, field) in [
            ("Bad Name", path.as_str(), "plain", "name"),
            ("other", path.as_str(), "csv", "format"),
            ("other", "/nonexistent/feed.txt", "plain", "source"),
            ("test-feed", path.as_str(), "plain", "name"),
        ] {
            let e = desk
                .add_feed(name, source, format, Duration::from_secs(3600))
                .await
                .expect_err("refused");
            assert!(e.to_string().contains(field), "{name}: {e}");
        }
        std::fs::remove_file(&path).expect("remove the feed file");
        assert!(desk.refresh("test-feed").await.is_err());
        let listed = desk.list().await.expect("list");
        assert!(listed[0].last_error.is_some(), "{listed:?}");
        let r = api
            .create(
                &owner,
                json!({"target_url": "https://never-linked.example/c"}),
            )
            .await;
        assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.text);
        t.cleanup().await;
    }
}

/// A feed served over HTTP (allowed by `--feed-allow-http`, as on a developer's
/// machine), in URLhaus' CSV, is downloaded and read; a feed that answers with a
/// redirect is not followed there: its refresh fails, naming the answer.
#[tokio::test]
async fn a_feed_is_downloaded_from_its_url() {
    let csv = "# abuse.ch URLhaus\n# id,dateadded,url,url_status,last_online,threat,tags,urlhaus_link,reporter\n\
        \"1\",\"2026-12-01 00:00:00\",\"https://payload.example/run.sh\",\"online\",\"\",\"malware_download\",\"\",\"\",\"x\"\n";
    let app = axum::Router::new()
        .route("/feed.csv", axum::routing::get(move || async move { csv }))
        .route(
            "/moved.csv",
            axum::routing::get(|| async { axum::response::Redirect::to("/feed.csv") }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a port");
    let addr = listener.local_addr().expect("an address");
    tokio::spawn(async move { axum::serve(listener, app).await });
    for (api, t) in apis_with("abuse-feed-url", &["--feed-allow-http", "true"]).await {
        let owner = api.key("acme", false).await;
        make(
            &api,
            &owner,
            "payload-x",
            json!({"target_url": "https://payload.example/run.sh"}),
        )
        .await;
        let desk = &api.state.abuse;
        desk.add_feed(
            "urlhaus",
            &format!("http://{addr}/feed.csv"),
            "urlhaus",
            Duration::from_secs(3600),
        )
        .await
        .expect("added");
        let done = desk.refresh("urlhaus").await.expect("refreshed");
        assert_eq!(
            done.links_banned,
            vec!["s.example/payload-x"],
            "{}",
            t.kind()
        );
        assert_eq!(visit(&api, "payload-x").await, StatusCode::FORBIDDEN);
        desk.add_feed(
            "moved",
            &format!("http://{addr}/moved.csv"),
            "urlhaus",
            Duration::from_secs(3600),
        )
        .await
        .expect("added");
        let moved = desk.refresh("moved").await.expect_err("not followed");
        assert!(moved.to_string().contains("303"), "{moved}");
        t.cleanup().await;
    }
}

/// Without `--feed-allow-http`, a feed is downloaded over https only: one read in the
/// clear could be changed on its way, and it decides what Hop bans.
#[tokio::test]
async fn a_feed_in_the_clear_is_refused() {
    for (api, t) in apis("abuse-feed-https").await {
        let refused = api
            .state
            .abuse
            .add_feed(
                "clear",
                "http://feeds.example/list.txt",
                "plain",
                Duration::from_secs(3600),
            )
            .await
            .expect_err("refused");
        assert!(
            refused.to_string().contains("https only"),
            "{}: {refused}",
            t.kind()
        );
        assert!(api.state.abuse.list().await.expect("list").is_empty());
        t.cleanup().await;
    }
}

/// A link a feed lists that no refresh matched (the entry written without one) is banned
/// by the re-check, which walks every live link and starts again at the end.
#[tokio::test]
async fn the_recheck_bans_what_a_feed_lists_and_walks_every_link() {
    for (api, t) in apis("abuse-recheck").await {
        let owner = api.key("acme", false).await;
        make(
            &api,
            &owner,
            "first-one",
            json!({"target_url": "https://shop.example/1"}),
        )
        .await;
        make(
            &api,
            &owner,
            "quiet-bad",
            json!({"target_url": "https://quiet.bad.example/x"}),
        )
        .await;
        make(
            &api,
            &owner,
            "third-one",
            json!({"target_url": "https://shop.example/3"}),
        )
        .await;
        let (_dir, path) = feed_file("nothing.example\n");
        let desk = &api.state.abuse;
        desk.add_feed("quiet", &path, "plain", Duration::from_secs(3600))
            .await
            .expect("added");
        let hosts = ["bad.example".to_owned()].into_iter().collect();
        origin_api::store::feeds::replace_entries(
            api.state.db(),
            "quiet",
            &hosts,
            &Default::default(),
            0,
            i64::MAX,
        )
        .await
        .expect("entries");
        assert_eq!(visit(&api, "quiet-bad").await, StatusCode::FOUND);
        assert_eq!(desk.recheck_step(2).await.expect("a step"), 2);
        assert_eq!(
            visit(&api, "quiet-bad").await,
            StatusCode::FORBIDDEN,
            "{}",
            t.kind()
        );
        assert_eq!(visit(&api, "first-one").await, StatusCode::FOUND);
        // The banned link is skipped from now on; the walk ends and starts again.
        assert_eq!(desk.recheck_step(2).await.expect("a step"), 1);
        assert_eq!(desk.recheck_step(2).await.expect("a step"), 0);
        let (at, rounds) = origin_api::store::feeds::recheck_position(api.state.db())
            .await
            .expect("position");
        assert_eq!((at, rounds), (-1, 1));
        assert_eq!(desk.recheck_step(10).await.expect("a step"), 3);
        t.cleanup().await;
    }
}

async fn report(api: &Api, peer: &str, form: &[(&str, &str)]) -> (StatusCode, String) {
    report_with(api, peer, form, &[]).await
}

/// [`report`], with more request headers.
async fn report_with(
    api: &Api,
    peer: &str,
    form: &[(&str, &str)],
    headers: &[(&str, &str)],
) -> (StatusCode, String) {
    let body = form
        .iter()
        .map(|(k, v)| format!("{k}={}", urlencoding(v)))
        .collect::<Vec<_>>()
        .join("&");
    let mut req = Request::post("/_hop/report")
        .header(header::HOST, "api.example")
        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded");
    for (name, value) in headers {
        req = req.header(*name, *value);
    }
    let mut req = req.body(Body::from(body)).expect("request");
    let peer: std::net::SocketAddr = peer.parse().expect("address");
    req.extensions_mut()
        .insert(axum::extract::ConnectInfo(peer));
    let r = api.send(req).await;
    (r.status, r.text)
}

fn urlencoding(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'.' | b'_' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[tokio::test]
async fn reports_are_taken_from_anyone_tell_nothing_and_are_read_by_admins() {
    for (api, t) in apis_with("abuse-reports", &["--report-rate", "3"]).await {
        let owner = api.key("acme-secret-owner", false).await;
        let admin = api.key("ops", true).await;
        make(
            &api,
            &owner,
            "reported",
            json!({"target_url": "https://shop.example/r"}),
        )
        .await;
        let form = api
            .visit(
                "GET",
                "api.example",
                "/_hop/report?url=https://s.example/reported",
            )
            .await;
        assert_eq!(form.status, StatusCode::OK, "{}", form.text);
        assert!(
            form.text.contains("value=\"https://s.example/reported\""),
            "{}",
            form.text
        );

        let (s1, known) = report(
            &api,
            "198.51.100.1:1000",
            &[
                ("url", "https://s.example/reported"),
                ("category", "phishing"),
                ("details", "asks for my bank password"),
                ("contact", "me@mail.example"),
            ],
        )
        .await;
        let (s2, unknown) = report(
            &api,
            "198.51.100.1:1000",
            &[("url", "s.example/no-such-link"), ("category", "spam")],
        )
        .await;
        assert_eq!(
            (s1, s2),
            (StatusCode::OK, StatusCode::OK),
            "{known}\n{unknown}"
        );
        assert_eq!(known, unknown, "the answer tells nothing about the link");
        assert!(!known.contains("acme-secret-owner") && !known.contains("shop.example"));

        let (bad, text) = report(
            &api,
            "198.51.100.2:1000",
            &[("url", "https://s.example/x"), ("category", "rude")],
        )
        .await;
        assert_eq!(bad, StatusCode::UNPROCESSABLE_ENTITY, "{text}");
        assert!(text.contains("category"), "{text}");
        let (bad, text) = report(
            &api,
            "198.51.100.2:1000",
            &[("url", "https://elsewhere.example/x"), ("category", "spam")],
        )
        .await;
        assert_eq!(bad, StatusCode::UNPROCESSABLE_ENTITY, "{text}");
        assert!(text.contains("not a domain of this shortener"), "{text}");
        // The address that sent two has one more this minute; then 429.
        let (third, _) = report(
            &api,
            "198.51.100.1:1000",
            &[("url", "s.example/reported"), ("category", "other")],
        )
        .await;
        assert_eq!(third, StatusCode::OK);
        let (limited, text) = report(
            &api,
            "198.51.100.1:1000",
            &[("url", "s.example/reported"), ("category", "other")],
        )
        .await;
        assert_eq!(limited, StatusCode::TOO_MANY_REQUESTS, "{text}");

        let refused = api.call_as(&owner, "GET", "/v1/admin/reports").await;
        assert_eq!(refused.status, StatusCode::FORBIDDEN, "{}", refused.text);
        let open = api.call_as(&admin, "GET", "/v1/admin/reports").await;
        assert_eq!(open.status, StatusCode::OK, "{}", open.text);
        let items = open.body["items"].as_array().cloned().unwrap_or_default();
        assert_eq!(items.len(), 3, "{} {}", t.kind(), open.text);
        let first = items
            .iter()
            .find(|r| r["details"] == "asks for my bank password")
            .expect("the report");
        assert_eq!(first["owner"], "acme-secret-owner");
        assert_eq!(first["link"], "s.example/reported");
        assert_eq!(first["reports_of_link"], 2);
        assert_eq!(first["contact"], "me@mail.example");
        let missing = items
            .iter()
            .find(|r| r["link"] == "s.example/no-such-link")
            .expect("the report");
        assert!(missing["owner"].is_null(), "{missing}");

        let id = first["id"].as_i64().expect("an id");
        let done = api
            .post_json(
                &admin,
                &format!("/v1/admin/reports/{id}/resolve"),
                &json!({"resolution": "banned"}),
            )
            .await;
        assert_eq!(done.status, StatusCode::NO_CONTENT, "{}", done.text);
        let open = api
            .call_as(&admin, "GET", "/v1/admin/reports?limit=1")
            .await;
        assert_eq!(
            open.body["items"].as_array().map(Vec::len),
            Some(1),
            "{}",
            open.text
        );
        assert!(open.body["next_cursor"].is_string(), "{}", open.text);
        let all = api
            .call_as(&admin, "GET", "/v1/admin/reports?all=true")
            .await;
        let closed = all.body["items"].as_array().cloned().unwrap_or_default();
        assert_eq!(closed.len(), 3, "{}", all.text);
        assert!(
            closed.iter().any(|r| r["resolution"] == "banned"),
            "{}",
            all.text
        );
        let nothing = api
            .post_json(
                &admin,
                "/v1/admin/reports/999999/resolve",
                &json!({"resolution": "x"}),
            )
            .await;
        assert_eq!(nothing.status, StatusCode::NOT_FOUND, "{}", nothing.text);
        t.cleanup().await;
    }
}

/// A serving origin reads a feed when it is due, without anyone asking: the desk's own
/// loop, under its lease.
#[tokio::test]
async fn a_serving_origin_reads_a_feed_when_it_is_due() {
    for (api, t) in apis("abuse-due").await {
        let owner = api.key("acme", false).await;
        make(
            &api,
            &owner,
            "due-link",
            json!({"target_url": "https://due.bad.example/"}),
        )
        .await;
        let (_dir, path) = feed_file("bad.example\n");
        api.state
            .abuse
            .add_feed("due-feed", &path, "plain", Duration::from_secs(60))
            .await
            .expect("added");
        let (stop, stopped) = tokio::sync::watch::channel(false);
        let running = tokio::spawn(api.state.abuse.clone().run(stopped));
        hop_e2e::poll("the due feed read and its link banned")
            .within(Duration::from_secs(20))
            .until_true(|| async { visit(&api, "due-link").await == StatusCode::FORBIDDEN })
            .await;
        let feeds = api.state.abuse.list().await.expect("feeds");
        assert_eq!(feeds[0].hosts, 1, "{}", t.kind());
        assert!(
            feeds[0].due_at > feeds[0].refreshed_at.unwrap_or(0),
            "{feeds:?}"
        );
        stop.send(true).expect("stop");
        running.await.expect("the desk stops");
        t.cleanup().await;
    }
}

/// A feed that lists a host and a URL on it bans the host once, not also each link on it.
#[tokio::test]
async fn a_link_on_a_host_the_feed_bans_gets_no_ban_of_its_own() {
    for (api, t) in apis("abuse-once").await {
        let owner = api.key("acme", false).await;
        let admin = api.key("ops", true).await;
        make(
            &api,
            &owner,
            "pay-page",
            json!({"target_url": "https://evil.example/pay"}),
        )
        .await;
        let (_dir, path) = feed_file("evil.example\nhttps://evil.example/pay\n");
        let desk = &api.state.abuse;
        desk.add_feed("both-kinds", &path, "plain", Duration::from_secs(3600))
            .await
            .expect("added");
        let done = desk.refresh("both-kinds").await.expect("refreshed");
        assert_eq!(done.hosts_banned, vec!["evil.example"], "{}", t.kind());
        assert!(done.links_banned.is_empty(), "{done:?}");
        assert_eq!(ban_reasons(&api, &admin).await.len(), 1);
        assert_eq!(visit(&api, "pay-page").await, StatusCode::FORBIDDEN);
        t.cleanup().await;
    }
}

/// The report form cannot be flooded or forged: a client's budget is its IPv4 address
/// or its whole IPv6 /64; everyone together has a budget a minute; a link keeps at most
/// 100 open reports (more are thanked alike and not kept); a post from another site's
/// page is refused; and resolved reports are forgotten after their retention, open ones
/// never.
#[tokio::test]
async fn the_report_form_cannot_be_flooded_or_forged() {
    for (api, t) in apis_with(
        "abuse-report-flood",
        &[
            "--report-rate",
            "2",
            "--report-rate-global",
            "400",
            "--report-retention",
            "30d",
        ],
    )
    .await
    {
        let form = [("url", "https://s.example/target-1"), ("category", "spam")];
        // One IPv6 /64 is one client, however many of its addresses it uses.
        for peer in ["[2001:db8::1]:1000", "[2001:db8::ffff:1]:1000"] {
            assert_eq!(report(&api, peer, &form).await.0, StatusCode::OK, "{peer}");
        }
        let (moved, text) = report(&api, "[2001:db8::abcd:9]:1000", &form).await;
        assert_eq!(moved, StatusCode::TOO_MANY_REQUESTS, "{}: {text}", t.kind());
        let (other, _) = report(&api, "[2001:db8:0:1::1]:1000", &form).await;
        assert_eq!(other, StatusCode::OK, "another /64 is another client");

        // A page elsewhere cannot make its visitors post reports; this site's own can.
        for forged in [
            vec![("sec-fetch-site", "cross-site")],
            vec![("origin", "https://evil.example")],
        ] {
            let (status, text) = report_with(&api, "198.51.100.9:1000", &form, &forged).await;
            assert_eq!(status, StatusCode::FORBIDDEN, "{forged:?}: {text}");
        }
        let own = [
            ("sec-fetch-site", "same-origin"),
            ("origin", "https://api.example"),
        ];
        assert_eq!(
            report_with(&api, "198.51.100.9:1000", &form, &own).await.0,
            StatusCode::OK
        );
        assert_eq!(api.count("reports").await, 4, "nothing forged was kept");

        // One link keeps at most 100 open reports; the 101st is thanked alike.
        let flood = [("url", "https://s.example/rival"), ("category", "phishing")];
        let mut answers = std::collections::BTreeSet::new();
        for i in 0..origin_api::abuse::reports::MAX_OPEN_PER_LINK + 3 {
            let peer = format!("203.0.113.{}:1000", i / 2);
            let (status, text) = report(&api, &peer, &flood).await;
            assert_eq!(status, StatusCode::OK, "{i}: {text}");
            answers.insert(text);
        }
        assert_eq!(
            answers.len(),
            1,
            "every report of the flood got the same answer"
        );
        assert_eq!(
            api.count("reports WHERE code = 'rival'").await,
            origin_api::abuse::reports::MAX_OPEN_PER_LINK
        );
        assert!(
            api.metrics().await.contains("hop_reports_not_kept_total 3"),
            "{}",
            t.kind()
        );

        // Resolved reports go after the retention; open ones stay.
        let now = origin_api::model::time::now_ms();
        let day = 86_400_000;
        api.exec(&format!(
            "UPDATE reports SET resolved_at = {}, resolution = 'dismissed' WHERE code = 'rival'",
            now - 31 * day
        ))
        .await;
        api.exec(&format!(
            "UPDATE reports SET resolved_at = {}, resolution = 'banned' WHERE code = 'target-1' \
             AND report_id = (SELECT MIN(report_id) FROM reports WHERE code = 'target-1')",
            now - 29 * day
        ))
        .await;
        let swept = origin_api::housekeeping::sweep(&api.state.housekeeping, now)
            .await
            .expect("sweep");
        assert_eq!(swept.resolved_reports, 100, "{}", t.kind());
        assert_eq!(api.count("reports").await, 4, "the rest are open or recent");
        // The link's count starts again once its reports are closed.
        assert_eq!(
            report(&api, "203.0.113.200:1000", &flood).await.0,
            StatusCode::OK
        );
        assert_eq!(api.count("reports WHERE code = 'rival'").await, 1);
        t.cleanup().await;
    }
}

/// The bans service judges who asks, whatever the door: a key that is not an admin's is
/// told why, a signed-in member who is no operator finds nothing, and neither bans,
/// lists nor lifts; an admin key, the operator and a feed do.
#[tokio::test]
async fn the_bans_service_refuses_whoever_is_not_an_operator_whatever_the_door() {
    use origin_api::error::AppError;
    use origin_api::model::Role;
    use origin_api::principal::Principal;
    use origin_api::views::bans::CreateBan;
    for (api, t) in apis("bans-principal").await {
        let key = |admin| Principal::Key {
            key_id: "k1".into(),
            owner: "acme".into(),
            admin,
            domains: None,
        };
        let member = Principal::User {
            user_id: "u1".into(),
            owner: Some("acme".into()),
            role: Some(Role::Admin),
            operator: false,
        };
        let req = CreateBan {
            kind: "host".into(),
            domain: None,
            code: None,
            host: Some("evil.example".into()),
            reason: "phishing".into(),
        };
        let bans = &api.state.bans;
        let refused = bans.create(&key(false), &req, "acme/k1").await;
        assert!(
            matches!(refused, Err(AppError::Forbidden(_))),
            "{refused:?}"
        );
        let refused = bans.create(&member, &req, "user:ana").await;
        assert!(matches!(refused, Err(AppError::NotFound)), "{refused:?}");
        assert!(matches!(
            bans.list(&key(false), true).await,
            Err(AppError::Forbidden(_))
        ));
        assert_eq!(api.count("bans").await, 0, "{}", t.kind());

        let made = bans
            .create(&key(true), &req, "ops/k2")
            .await
            .expect("an admin key bans");
        let refused = bans.lift(&member, made.ban_id).await;
        assert!(matches!(refused, Err(AppError::NotFound)), "{refused:?}");
        let listed = bans
            .list(&Principal::System { feed: None }, false)
            .await
            .expect("Hop itself reads them");
        assert_eq!(listed.len(), 1);
        bans.lift(&Principal::Operator, made.ban_id)
            .await
            .expect("the operator lifts it");
        t.cleanup().await;
    }
}

/// The reports service judges who asks before what is asked, whatever the door: a key
/// that is not an admin's is told it may not read reports even with a bad cursor, a
/// signed-in member finds nothing, and neither closes one.
#[tokio::test]
async fn the_reports_service_judges_who_asks_before_what_is_asked() {
    use origin_api::error::AppError;
    use origin_api::model::Role;
    use origin_api::principal::Principal;
    for (api, t) in apis("reports-principal").await {
        let key = api.key("acme", false).await;
        let admin = api.key("ops", true).await;
        let r = api
            .call_as(&key, "GET", "/v1/admin/reports?cursor=nonsense")
            .await;
        assert_eq!(r.status, StatusCode::FORBIDDEN, "{}: {}", t.kind(), r.text);
        let r = api
            .call_as(&admin, "GET", "/v1/admin/reports?cursor=nonsense")
            .await;
        assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.text);
        let member = Principal::User {
            user_id: "u1".into(),
            owner: Some("acme".into()),
            role: Some(Role::Admin),
            operator: false,
        };
        let reports = &api.state.reports;
        let refused = reports.list(&member, true, None, 10).await;
        assert!(matches!(refused, Err(AppError::NotFound)), "{refused:?}");
        let refused = reports.resolve(&member, 1, "dismissed").await;
        assert!(matches!(refused, Err(AppError::NotFound)), "{refused:?}");
        let (none, _) = reports
            .list(&Principal::Operator, true, None, 10)
            .await
            .expect("the operator reads them");
        assert!(none.is_empty());
        t.cleanup().await;
    }
}

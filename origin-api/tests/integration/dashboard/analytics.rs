//! A link's visits and the owner's overview, as a viewer reads them.

use super::*;

#[tokio::test]
async fn a_viewer_sees_a_links_visits_by_people_with_bots_apart_and_downloads_them() {
    for (api, t) in apis_with("dash-stats", &["--edge-token", EDGE_TOKEN]).await {
        member(&api, "vic@acme.example", "acme", Role::Viewer).await;
        member(&api, "gil@globex.example", "globex", Role::Admin).await;
        let key = api.key("acme", false).await;
        for code in ["spring", "quiet"] {
            let made = api
                .create(
                    &key,
                    json!({"target_url": "https://shop.example/", "code": code}),
                )
                .await;
            assert_eq!(made.status, StatusCode::CREATED, "{}", made.text);
        }
        let batch = json!({"events": [
            click("c-1", "s.example/spring", "DE", false),
            click("c-2", "s.example/spring", "DE", false),
            click("c-3", "s.example/spring", "US", false),
            click("c-4", "s.example/spring", "US", true),
        ]});
        let sent = api.post_json(EDGE_TOKEN, "/v1/edge/clicks", &batch).await;
        assert_eq!(sent.status, StatusCode::OK, "{}", sent.text);
        api.fold_clicks().await;

        let mut viewer = Browser::new(&api);
        viewer.sign_in("vic@acme.example", PASSWORD).await;
        let page = viewer.get("/o/acme/links/s.example/spring/stats").await;
        assert_eq!(page.status, StatusCode::OK, "{}", page.html);
        assert!(
            page.html.contains("Visits by people</dt><dd>3</dd>"),
            "people only by default: {}",
            page.html
        );
        assert!(page.html.contains("Visits by bots</dt><dd>1</dd>"));
        assert!(page.html.contains("<td>DE</td><td>2</td>"), "{}", page.html);
        assert!(page.html.contains("<svg") && page.html.contains(": 3 by people"));
        assert!(!page.html.contains("by bots</title>"));
        let with_bots = viewer
            .get("/o/acme/links/s.example/spring/stats?range=24h&bots=1")
            .await;
        assert!(
            with_bots.html.contains(": 3 by people, 1 by bots"),
            "{}",
            with_bots.html
        );
        assert!(with_bots.html.contains("<td>US</td><td>2</td>"));

        // The list draws each link's week, and says its total.
        let list = viewer.get("/o/acme/links").await;
        assert!(
            list.html
                .contains("aria-label=\"Analytics: 3 visits by people in 7 days\""),
            "{}",
            list.html
        );
        assert!(list
            .html
            .contains("aria-label=\"Analytics: 0 visits by people in 7 days\""));

        let csv = viewer
            .get("/o/acme/links/s.example/spring/stats.csv?range=7d")
            .await;
        assert_eq!(csv.status, StatusCode::OK);
        assert!(csv.headers[header::CONTENT_TYPE]
            .to_str()
            .expect("ASCII")
            .starts_with("text/csv"));
        let mut lines = csv.html.lines();
        assert_eq!(lines.next(), Some("start,visits,redirects,bots"));
        let sums = lines.fold([0_i64; 3], |mut sums, line| {
            for (sum, cell) in sums.iter_mut().zip(line.split(',').skip(1)) {
                *sum += cell.parse::<i64>().expect("a count");
            }
            sums
        });
        assert_eq!(sums, [3, 3, 1], "{}", csv.html);

        // A range too long for hours says so and keeps the form.
        let refused = viewer
            .get("/o/acme/links/s.example/spring/stats?range=custom&from=2026-01-01&to=2026-06-30&granularity=hour")
            .await;
        assert_eq!(
            refused.status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{}",
            t.kind()
        );
        assert!(
            refused.html.contains("hours per request"),
            "{}",
            refused.html
        );
        assert!(refused.html.contains("value=\"2026-01-01\""));

        // Another owner's member sees nothing of it, through either owner's path.
        let mut other = Browser::new(&api);
        other.sign_in("gil@globex.example", PASSWORD).await;
        for path in [
            "/o/acme/links/s.example/spring/stats",
            "/o/globex/links/s.example/spring/stats",
            "/o/globex/links/s.example/spring/stats.csv",
        ] {
            assert_eq!(
                other.get(path).await.status,
                StatusCode::NOT_FOUND,
                "{path}"
            );
        }
        t.cleanup().await;
    }
}

#[tokio::test]
async fn the_overview_compares_visits_and_says_what_needs_attention() {
    // Clicks up to 16 days old are taken: the week before this one is seeded too.
    let flags = ["--edge-token", EDGE_TOKEN, "--click-id-retention-h", "400"];
    for (api, t) in apis_with("dash-overview", &flags).await {
        member(&api, "vic@acme.example", "acme", Role::Viewer).await;
        let key = api.key("acme", false).await;
        let ops = api.key("ops", true).await;
        let soon =
            origin_api::model::time::rfc3339(origin_api::model::time::now_ms() + 2 * 86_400_000);
        for body in [
            json!({"target_url": "https://shop.example/", "code": "popular-one"}),
            json!({"target_url": "https://shop.example/", "code": "ending", "expires_at": soon}),
            json!({"target_url": "https://bad.example/", "code": "phish"}),
        ] {
            let made = api.create(&key, body).await;
            assert_eq!(made.status, StatusCode::CREATED, "{}", made.text);
        }
        let ban = json!({"kind": "host", "host": "bad.example", "reason": "phishing"});
        assert_eq!(
            api.post_json(&ops, "/v1/bans", &ban).await.status,
            StatusCode::CREATED
        );
        const DAY: i64 = 86_400_000;
        let batch = json!({"events": [
            click_ago("o-1", "s.example/popular-one", 0),
            click_ago("o-2", "s.example/popular-one", 0),
            click_ago("o-3", "s.example/ending", 0),
            click_ago("o-4", "s.example/popular-one", 3 * DAY),
            click_ago("o-5", "s.example/popular-one", 10 * DAY),
        ]});
        let sent = api.post_json(EDGE_TOKEN, "/v1/edge/clicks", &batch).await;
        assert_eq!(sent.body["counted"], 5, "{}", sent.text);
        api.fold_clicks().await;

        let mut viewer = Browser::new(&api);
        viewer.sign_in("vic@acme.example", PASSWORD).await;
        assert_eq!(viewer.get("/").await.location(), "/o/acme");
        let page = viewer.get("/o/acme").await;
        assert_eq!(page.status, StatusCode::OK, "{}", page.html);
        let html = &page.html;
        // Today 3 (yesterday none by this hour); 7 days 4 against 1 the week before.
        assert!(
            html.contains("Visits by people today</dt><dd>3</dd>"),
            "{} {html}",
            t.kind()
        );
        assert!(
            html.contains(">new <span class=\"muted\">against 0 yesterday"),
            "{html}"
        );
        assert!(html.contains("Over the last 7 days</dt><dd>4</dd>"));
        assert!(
            html.contains("+300% <span class=\"muted\">against 1 the 7 days before"),
            "{html}"
        );
        let top = &html[html.find("Most visited").expect("top list")..];
        assert!(
            top.find("s.example/popular-one") < top.find("s.example/ending"),
            "most visited first"
        );
        let attention = &html[html.find("Needs attention").expect("attention")..];
        assert!(attention.contains("Expiring within 7 days"), "{attention}");
        assert!(attention.contains("s.example/ending"));
        assert!(attention.contains("<h3>Banned</h3>"));
        assert!(attention.contains("s.example/phish"));
        assert!(attention.contains("/o/acme/links?condition=banned"));
        assert_eq!(viewer.get("/o/globex").await.status, StatusCode::NOT_FOUND);
        t.cleanup().await;
    }
}

//! The links page, bulk changes over a selection, and importing another shortener's export from the browser.

use super::*;

#[tokio::test]
async fn the_links_page_finds_links_and_says_where_each_stands() {
    for (api, t) in apis("dash-find").await {
        member(&api, "vic@acme.example", "acme", Role::Viewer).await;
        let key = api.key("acme", false).await;
        let ops = api.key("ops", true).await;
        for (code, target) in [
            ("spring-sale", "https://shop.example/spring"),
            ("autumn", "https://evil.example/fall"),
            ("winter", "https://shop.example/winter"),
        ] {
            let made = api
                .create(&key, json!({"target_url": target, "code": code}))
                .await;
            assert_eq!(made.status, StatusCode::CREATED, "{}", made.text);
        }
        let ban = json!({"kind": "host", "host": "evil.example", "reason": "phishing"});
        assert_eq!(
            api.post_json(&ops, "/v1/bans", &ban).await.status,
            StatusCode::CREATED
        );
        let mut viewer = Browser::new(&api);
        viewer.sign_in("vic@acme.example", PASSWORD).await;

        let found = viewer.get("/o/acme/links?q=SPRING").await;
        assert_eq!(found.status, StatusCode::OK, "{}", found.html);
        assert!(found.html.contains("https://s.example/spring-sale"));
        assert!(
            !found.html.contains("https://s.example/winter"),
            "{}",
            t.kind()
        );
        assert!(
            found.html.contains("value=\"SPRING\""),
            "the search stays in its box"
        );

        let banned = viewer.get("/o/acme/links?condition=banned").await;
        assert!(
            banned.html.contains("https://s.example/autumn"),
            "{}",
            banned.html
        );
        assert!(!banned.html.contains("https://s.example/spring-sale"));
        assert!(banned
            .html
            .contains("<span class=\"badge bad\">banned</span>"));
        // Nothing was published in this test: every link is still on its way to the edge.
        assert!(banned.html.contains("<td>pending</td>"), "{}", banned.html);

        // A date that is not one says which field, keeps the others, and lists nothing.
        let refused = viewer.get("/o/acme/links?q=spring&from=someday").await;
        assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY);
        assert!(
            refused.html.contains("Created from: a date"),
            "{}",
            refused.html
        );
        assert!(refused.html.contains("value=\"spring\""));
        assert!(!refused.html.contains("https://s.example/spring-sale"));

        let page = viewer.get("/o/acme/links?q=shop&status=active").await;
        assert!(page.html.contains("<option value=\"active\" selected>"));
        assert!(page.html.contains("https://s.example/winter"));
        assert!(!page.html.contains("https://s.example/autumn"));
        t.cleanup().await;
    }
}

#[tokio::test]
async fn a_bulk_tag_changes_each_link_at_the_version_shown_and_reports_the_one_changed_meanwhile() {
    for (api, t) in apis("dash-bulk").await {
        member(&api, "ana@acme.example", "acme", Role::Editor).await;
        member(&api, "vic@acme.example", "acme", Role::Viewer).await;
        let key = api.key("acme", false).await;
        for code in ["one-link", "two-link", "three-link"] {
            let made = api
                .create(&key, json!({"target_url": "https://shop.example/", "code": code, "title": "=HYPERLINK(\"https://evil.example\")"}))
                .await;
            assert_eq!(made.status, StatusCode::CREATED, "{}", made.text);
        }
        let mut browser = Browser::new(&api);
        browser.sign_in("ana@acme.example", PASSWORD).await;
        let list = browser.get("/o/acme/links").await;
        let picked: Vec<String> = ["one-link", "two-link", "three-link"]
            .iter()
            .map(|c| selection(&list, &format!("s.example/{c}")))
            .collect();
        // A colleague's script changes one of them after the page was loaded.
        let theirs = api
            .patch_json(
                &key,
                "/v1/links/s.example/two-link",
                Some("\"1\""),
                json!({"title": "Theirs"}),
            )
            .await;
        assert_eq!(theirs.status, StatusCode::OK, "{}", theirs.text);
        let csrf = list.csrf();
        let mut form = vec![
            ("csrf", csrf.as_str()),
            ("action", "add_tag"),
            ("tag", "spring"),
        ];
        form.extend(picked.iter().map(|p| ("select", p.as_str())));
        let done = browser.post("/o/acme/links/bulk", &form).await;
        assert_eq!(done.status, StatusCode::OK, "{}", done.html);
        assert!(
            done.html
                .contains("2 changed, 1 changed by someone else meanwhile"),
            "{} {}",
            t.kind(),
            done.html
        );
        assert!(done.html.contains("class=\"result conflict\""));
        for (code, tags, title) in [
            (
                "one-link",
                json!(["spring"]),
                json!("=HYPERLINK(\"https://evil.example\")"),
            ),
            ("two-link", json!([]), json!("Theirs")),
            (
                "three-link",
                json!(["spring"]),
                json!("=HYPERLINK(\"https://evil.example\")"),
            ),
        ] {
            let read = api.read(&key, "s.example", code).await;
            assert_eq!(
                (&read.body["tags"], &read.body["title"]),
                (&tags, &title),
                "{code}"
            );
        }
        // The same selection again: the two changed are now at a newer version too.
        let again = browser.post("/o/acme/links/bulk", &form).await;
        assert!(
            again
                .html
                .contains("0 changed, 3 changed by someone else meanwhile"),
            "{}",
            again.html
        );

        // A viewer may export a selection, not change it; a cell stays text.
        let mut viewer = Browser::new(&api);
        viewer.sign_in("vic@acme.example", PASSWORD).await;
        let list = viewer.get("/o/acme/links").await;
        assert!(
            !list.html.contains("value=\"add_tag\""),
            "a viewer is offered no change"
        );
        let csrf = list.csrf();
        let one = selection(&list, "s.example/one-link");
        let refused = viewer
            .post(
                "/o/acme/links/bulk",
                &[("csrf", &csrf), ("action", "delete"), ("select", &one)],
            )
            .await;
        assert_eq!(refused.status, StatusCode::FORBIDDEN);
        assert_eq!(
            api.read(&key, "s.example", "one-link").await.body["status"],
            "active"
        );
        let csv = viewer
            .post(
                "/o/acme/links/bulk",
                &[("csrf", &csrf), ("action", "export"), ("select", &one)],
            )
            .await;
        assert_eq!(csv.status, StatusCode::OK);
        assert!(
            csv.html
                .starts_with("short_url,domain,code,target_url,title"),
            "{}",
            csv.html
        );
        assert!(
            csv.html
                .contains(",\"'=HYPERLINK(\"\"https://evil.example\"\")\","),
            "{}",
            csv.html
        );

        // Deleting through the list, and nothing without a selection or a token.
        let list = browser.get("/o/acme/links").await;
        let three = selection(&list, "s.example/three-link");
        let csrf = list.csrf();
        let none = browser
            .post(
                "/o/acme/links/bulk",
                &[("csrf", &csrf), ("action", "delete")],
            )
            .await;
        assert_eq!(none.status, StatusCode::UNPROCESSABLE_ENTITY);
        let forged = browser
            .post(
                "/o/acme/links/bulk",
                &[("action", "delete"), ("select", &three)],
            )
            .await;
        assert_eq!(forged.status, StatusCode::FORBIDDEN);
        let deleted = browser
            .post(
                "/o/acme/links/bulk",
                &[("csrf", &csrf), ("action", "delete"), ("select", &three)],
            )
            .await;
        assert!(deleted.html.contains("Deleted."), "{}", deleted.html);
        assert_eq!(
            api.read(&key, "s.example", "three-link").await.body["status"],
            "deleted"
        );
        t.cleanup().await;
    }
}

/// The import page: a file is checked first (nothing changes, each link's fate shown,
/// the ones that would not arrive first), then imported, by an editor; a viewer may not
/// import; another site's post is refused.
#[tokio::test]
async fn an_editor_checks_then_imports_a_bitly_export_from_the_browser() {
    for (api, t) in apis("dash-import").await {
        member(&api, "ed@acme.example", "acme", Role::Editor).await;
        member(&api, "vic@acme.example", "acme", Role::Viewer).await;
        let admin = api.key("ops", true).await;
        let made = api
            .post_json(
                &admin,
                "/v1/domains",
                &json!({"domain": "go.acme.co", "owners": ["acme"]}),
            )
            .await;
        assert_eq!(made.status, StatusCode::CREATED, "{}", made.text);
        // `Custom Link`, singular, as some exports spell it; and a column Hop does not read.
        let file = "Title,Bitlink,Long URL,Custom Link,Clicks,Owner\n\
                    Spring,https://go.acme.co/spring,https://acme.example/spring,https://go.acme.co/spring-sale,\"1,234\",ana\n\
                    Old,https://bit.ly/4aBcDeF,https://acme.example/old,,7,ana\n";
        let mut ed = Browser::new(&api);
        ed.sign_in("ed@acme.example", PASSWORD).await;
        let form = ed.get("/o/acme/import").await;
        assert_eq!(form.status, StatusCode::OK, "{}", form.html);
        let csrf = form.csrf();
        let fields = |action: &'static str| -> Vec<(&'static str, String)> {
            vec![
                ("csrf", csrf.clone()),
                ("source", "bitly".into()),
                ("domain", String::new()),
                ("action", action.into()),
                ("file", file.into()),
            ]
        };
        let check = fields("check");
        let pairs: Vec<(&str, &str)> = check.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let checked = ed.post_multipart("/o/acme/import", &pairs).await;
        assert_eq!(checked.status, StatusCode::OK, "{}", checked.html);
        assert!(
            checked.html.contains("Checked, nothing changed"),
            "{}",
            checked.html
        );
        assert!(
            checked.html.contains("2 would be created"),
            "{}",
            checked.html
        );
        assert!(
            checked
                .html
                .contains("Columns not imported (no field of Hop&#39;s reads them): Owner")
                || checked
                    .html
                    .contains("Columns not imported (no field of Hop's reads them): Owner"),
            "{}",
            checked.html
        );
        // The link that would not arrive comes first, saying why.
        let skipped = checked
            .html
            .find("bit.ly/4aBcDeF")
            .expect("the skipped row");
        let created = checked
            .html
            .find("go.acme.co/spring<")
            .expect("a created row");
        assert!(skipped < created, "{}", checked.html);
        let key = api.key("acme", false).await;
        assert_eq!(
            api.read(&key, "go.acme.co", "spring").await.status,
            StatusCode::NOT_FOUND
        );

        let import = fields("import");
        let pairs: Vec<(&str, &str)> = import.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let imported = ed.post_multipart("/o/acme/import", &pairs).await;
        assert!(
            imported.html.contains("Imported: 3 links: 2 created"),
            "{}",
            imported.html
        );
        for code in ["spring", "spring-sale"] {
            let link = api.read(&key, "go.acme.co", code).await;
            assert_eq!(
                link.body["imported"]["from"],
                "bitly",
                "{}: {}",
                t.kind(),
                link.text
            );
        }

        // Bitly's count, on the link's analytics page, apart from Hop's own.
        let page = ed.get("/o/acme/links/go.acme.co/spring/stats").await;
        assert_eq!(page.status, StatusCode::OK, "{}", page.html);
        assert!(
            page.html
                .contains("Imported from bitly, which had counted 1234 visits"),
            "{}",
            page.html
        );
        let own = ed.get("/o/acme/links/go.acme.co/spring-sale/stats").await;
        assert!(!own.html.contains("1234"), "{}", own.html);

        let mut vic = Browser::new(&api);
        vic.sign_in("vic@acme.example", PASSWORD).await;
        let csrf = vic.get("/o/acme/import").await.csrf();
        let refused = vic
            .post_multipart(
                "/o/acme/import",
                &[
                    ("csrf", &csrf),
                    ("source", "bitly"),
                    ("action", "import"),
                    ("file", file),
                ],
            )
            .await;
        assert_eq!(refused.status, StatusCode::FORBIDDEN, "{}", refused.html);
        let forged = ed
            .post_multipart(
                "/o/acme/import",
                &[("csrf", "forged"), ("source", "bitly"), ("file", file)],
            )
            .await;
        assert_eq!(forged.status, StatusCode::FORBIDDEN);
        t.cleanup().await;
    }
}

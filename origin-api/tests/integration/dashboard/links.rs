//! Making, changing, deleting and reverting one link with plain forms; what a refused or raced form shows.

use super::*;

#[tokio::test]
async fn an_editor_creates_changes_and_deletes_a_link_with_plain_forms() {
    for (api, t) in apis("dash-link-forms").await {
        member(&api, "ana@acme.example", "acme", Role::Editor).await;
        let key = api.key("acme", false).await;
        let mut browser = Browser::new(&api);
        browser.sign_in("ana@acme.example", PASSWORD).await;
        let new = browser.get("/o/acme/links/new").await;
        assert_eq!(new.status, StatusCode::OK, "{}", new.html);
        assert!(
            new.html.contains("<option value=\"s.example\""),
            "{}",
            new.html
        );
        let form = link_form(
            &new,
            &[
                ("target_url", "https://shop.example/spring"),
                ("domain", "s.example"),
                ("code", "spring"),
                ("title", "Spring sale"),
                ("tags", "launch, q2 ,"),
                ("expires_at", "2099-01-02T03:04"),
                ("redirect", "301"),
            ],
        );
        let created = browser.post_owned("/o/acme/links", &form).await;
        assert_eq!(created.status, StatusCode::SEE_OTHER, "{}", created.html);
        assert_eq!(
            created.location(),
            "/o/acme/links/s.example/spring",
            "{}",
            t.kind()
        );
        let read = api.read(&key, "s.example", "spring").await;
        assert_eq!(read.body["title"], "Spring sale");
        assert_eq!(read.body["tags"], json!(["launch", "q2"]));
        assert_eq!(read.body["expires_at"], "2099-01-02T03:04:00Z");
        assert_eq!(read.body["redirect"], 301);

        let page = browser.get("/o/acme/links/s.example/spring").await;
        assert!(page.html.contains("value=\"Spring sale\""), "{}", page.html);
        assert!(page.html.contains("value=\"2099-01-02T03:04\""));
        let form = link_form(
            &page,
            &[
                ("target_url", "https://shop.example/summer"),
                ("title", ""),
                ("tags", "launch"),
                ("expires_at", ""),
                ("redirect", "302"),
                ("status", "disabled"),
            ],
        );
        let saved = browser
            .post_owned("/o/acme/links/s.example/spring", &form)
            .await;
        assert_eq!(saved.status, StatusCode::SEE_OTHER, "{}", saved.html);
        assert!(browser.get(saved.location()).await.html.contains("Saved."));
        let read = api.read(&key, "s.example", "spring").await;
        assert_eq!(read.body["target_url"], "https://shop.example/summer");
        assert_eq!(
            read.body["title"],
            Value::Null,
            "an emptied title is removed"
        );
        assert_eq!(read.body["expires_at"], Value::Null);
        assert_eq!(read.body["status"], "disabled");
        assert_eq!(read.body["version"], 2);

        let page = browser.get("/o/acme/links/s.example/spring").await;
        let deleted = browser
            .post_owned(
                "/o/acme/links/s.example/spring/delete",
                &link_form(&page, &[]),
            )
            .await;
        assert_eq!(deleted.status, StatusCode::SEE_OTHER, "{}", deleted.html);
        assert_eq!(
            api.read(&key, "s.example", "spring").await.body["status"],
            "deleted"
        );

        // Undone from the same page.
        let page = browser.get("/o/acme/links/s.example/spring").await;
        assert!(page.html.contains("Restore this link"), "{}", page.html);
        assert!(!page.html.contains("Delete this link"), "{}", page.html);
        let csrf = page.csrf();
        let restored = browser
            .post(
                "/o/acme/links/s.example/spring/restore",
                &[("csrf", &csrf), ("version", "3")],
            )
            .await;
        assert_eq!(restored.status, StatusCode::SEE_OTHER, "{}", restored.html);
        let read = api.read(&key, "s.example", "spring").await;
        assert_eq!(
            (&read.body["status"], &read.body["version"]),
            // Disabled when it was deleted, so disabled again: its history says so.
            (&json!("disabled"), &json!(4))
        );
        t.cleanup().await;
    }
}

/// The history page says who changed what, by their email for people and their key
/// for the API; an editor reverts from it, a viewer only reads it.
#[tokio::test]
async fn a_links_history_page_says_who_changed_what_and_an_editor_reverts_from_it() {
    for (api, t) in apis("dash-link-history").await {
        member(&api, "ana@acme.example", "acme", Role::Editor).await;
        member(&api, "vic@acme.example", "acme", Role::Viewer).await;
        let key = api.key("acme", false).await;
        let made = api
            .create(
                &key,
                json!({"target_url": "https://shop.example/spring", "code": "spring", "title": "Spring"}),
            )
            .await;
        assert_eq!(made.status, StatusCode::CREATED, "{}", made.text);
        let mut browser = Browser::new(&api);
        browser.sign_in("ana@acme.example", PASSWORD).await;
        let page = browser.get("/o/acme/links/s.example/spring").await;
        assert!(
            page.html.contains("/o/acme/links/s.example/spring/history"),
            "{}",
            page.html
        );
        let form = link_form(&page, &[("target_url", "https://wrong.example/oops")]);
        let saved = browser
            .post_owned("/o/acme/links/s.example/spring", &form)
            .await;
        assert_eq!(saved.status, StatusCode::SEE_OTHER, "{}", saved.html);

        let history = browser.get("/o/acme/links/s.example/spring/history").await;
        assert_eq!(history.status, StatusCode::OK, "{}", history.html);
        let (key_id, _) = origin_api::api_keys::parse_token(&key).expect("token");
        for said in [
            "ana@acme.example",
            &format!("key:{key_id}"),
            "target_url: &#34;https://shop.example/spring&#34; → &#34;https://wrong.example/oops&#34;",
            "Revert to version 1",
        ] {
            assert!(history.html.contains(said), "{said} in {}", history.html);
        }
        assert!(
            !history.html.contains("Revert to version 2"),
            "{}",
            history.html
        );
        let csrf = history.csrf();
        let reverted = browser
            .post(
                "/o/acme/links/s.example/spring/revert",
                &[("csrf", &csrf), ("version", "2"), ("to", "1")],
            )
            .await;
        assert_eq!(reverted.status, StatusCode::SEE_OTHER, "{}", reverted.html);
        let read = api.read(&key, "s.example", "spring").await;
        assert_eq!(
            (&read.body["target_url"], &read.body["version"]),
            (&json!("https://shop.example/spring"), &json!(3)),
            "{}",
            t.kind()
        );
        // A second revert from the stale page is refused.
        let stale = browser
            .post(
                "/o/acme/links/s.example/spring/revert",
                &[("csrf", &csrf), ("version", "2"), ("to", "1")],
            )
            .await;
        assert_eq!(stale.status, StatusCode::CONFLICT, "{}", stale.html);

        let mut viewer = Browser::new(&api);
        viewer.sign_in("vic@acme.example", PASSWORD).await;
        let seen = viewer.get("/o/acme/links/s.example/spring/history").await;
        assert_eq!(seen.status, StatusCode::OK, "{}", seen.html);
        assert!(seen.html.contains("reverted"), "{}", seen.html);
        assert!(!seen.html.contains("Revert to version"), "{}", seen.html);
        let csrf = seen.csrf();
        let refused = viewer
            .post(
                "/o/acme/links/s.example/spring/revert",
                &[("csrf", &csrf), ("version", "3"), ("to", "2")],
            )
            .await;
        assert_eq!(refused.status, StatusCode::FORBIDDEN, "{}", refused.html);
        t.cleanup().await;
    }
}

/// A password change from the dashboard is a PBKDF2 on the gate visitors' passwords
/// share, as one through the API is: the same rate per person (its burst, then 429 with
/// the form again and `Retry-After`). A change the password check refuses counts too,
/// so the loop hashes nothing.
#[tokio::test]
async fn a_dashboard_edit_takes_the_same_password_change_rate_as_the_api() {
    for (api, t) in apis("dash-password-rate").await {
        member(&api, "ana@acme.example", "acme", Role::Editor).await;
        let key = api.key("acme", false).await;
        let made = api
            .create(
                &key,
                json!({"target_url": "https://shop.example/", "code": "locked",
                    "access": "password", "password": "correct horse"}),
            )
            .await;
        assert_eq!(made.status, StatusCode::CREATED, "{}", made.text);
        let mut browser = Browser::new(&api);
        browser.sign_in("ana@acme.example", PASSWORD).await;
        let page = browser.get("/o/acme/links/s.example/locked").await;
        let form = link_form(
            &page,
            &[
                ("target_url", "https://shop.example/"),
                ("redirect", "302"),
                ("status", "active"),
                ("options", "1"),
                ("access", "password"),
                ("access_was", "password"),
                ("password", "x"),
            ],
        );
        let mut limited = None;
        for round in 0..64 {
            let r = browser
                .post_owned("/o/acme/links/s.example/locked", &form)
                .await;
            if r.status == StatusCode::TOO_MANY_REQUESTS {
                limited = Some((round, r));
                break;
            }
            assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.html);
        }
        let (round, r) = limited.expect("the dashboard's password changes are limited");
        assert!(round >= 1, "the first change was refused, {}", t.kind());
        assert!(r.html.contains("changes passwords"), "{}", r.html);
        t.cleanup().await;
    }
}

#[tokio::test]
async fn a_refused_form_keeps_what_was_typed_and_says_why() {
    for (api, t) in apis("dash-link-refused").await {
        member(&api, "ana@acme.example", "acme", Role::Admin).await;
        let mut browser = Browser::new(&api);
        browser.sign_in("ana@acme.example", PASSWORD).await;
        let new = browser.get("/o/acme/links/new").await;
        let typed = [
            ("target_url", "javascript:alert(1)"),
            ("domain", "s.example"),
            ("code", "mine"),
            ("title", "My <b>careful</b> title"),
        ];
        let refused = browser
            .post_owned("/o/acme/links", &link_form(&new, &typed))
            .await;
        assert_eq!(
            refused.status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{}",
            t.kind()
        );
        assert!(
            refused.html.contains("Target URL:"),
            "the field is named: {}",
            refused.html
        );
        assert!(
            refused
                .html
                .contains("My &#60;b&#62;careful&#60;/b&#62; title")
                || refused.html.contains("My &lt;b&gt;careful&lt;/b&gt; title"),
            "{}",
            refused.html
        );
        assert!(refused.html.contains("value=\"mine\""), "the alias is kept");

        let ok = [
            ("target_url", "https://shop.example/"),
            ("domain", "s.example"),
            ("code", "mine"),
        ];
        let created = browser
            .post_owned("/o/acme/links", &link_form(&new, &ok))
            .await;
        assert_eq!(created.status, StatusCode::SEE_OTHER, "{}", created.html);
        let taken = browser
            .post_owned("/o/acme/links", &link_form(&new, &ok))
            .await;
        assert_eq!(taken.status, StatusCode::CONFLICT);
        assert!(taken.html.contains("is taken"), "{}", taken.html);
        t.cleanup().await;
    }
}

#[tokio::test]
async fn a_viewer_reads_a_link_but_cannot_change_it_and_others_links_are_not_found() {
    for (api, t) in apis("dash-link-viewer").await {
        member(&api, "vic@acme.example", "acme", Role::Viewer).await;
        member(&api, "gil@globex.example", "globex", Role::Admin).await;
        let key = api.key("acme", false).await;
        let made = api
            .create(
                &key,
                json!({"target_url": "https://shop.example/", "code": "readonly"}),
            )
            .await;
        assert_eq!(made.status, StatusCode::CREATED);
        let mut viewer = Browser::new(&api);
        viewer.sign_in("vic@acme.example", PASSWORD).await;
        let page = viewer.get("/o/acme/links/s.example/readonly").await;
        assert_eq!(page.status, StatusCode::OK, "{}", page.html);
        assert!(!page.html.contains(">Save<"), "{}", page.html);
        assert!(!page.html.contains("Delete this link"));
        assert_eq!(
            viewer.get("/o/acme/links/new").await.status,
            StatusCode::NOT_FOUND
        );
        let form = link_form(&page, &[("target_url", "https://evil.example/")]);
        let refused = viewer
            .post_owned("/o/acme/links/s.example/readonly", &form)
            .await;
        assert_eq!(refused.status, StatusCode::FORBIDDEN, "{}", t.kind());
        let refused = viewer
            .post_owned(
                "/o/acme/links/s.example/readonly/delete",
                &link_form(&page, &[]),
            )
            .await;
        assert_eq!(refused.status, StatusCode::FORBIDDEN);
        let created = viewer
            .post_owned(
                "/o/acme/links",
                &link_form(&page, &[("target_url", "https://x.example/")]),
            )
            .await;
        assert_eq!(created.status, StatusCode::FORBIDDEN);
        let read = api.read(&key, "s.example", "readonly").await;
        assert_eq!(
            (
                read.body["target_url"].as_str(),
                read.body["version"].as_u64()
            ),
            (Some("https://shop.example/"), Some(1))
        );

        // Another owner's admin, through acme's paths or its own, finds nothing of acme's.
        let mut other = Browser::new(&api);
        other.sign_in("gil@globex.example", PASSWORD).await;
        assert_eq!(
            other.get("/o/acme/links/s.example/readonly").await.status,
            StatusCode::NOT_FOUND
        );
        assert_eq!(
            other.get("/o/globex/links/s.example/readonly").await.status,
            StatusCode::NOT_FOUND
        );
        let page = other.get("/o/globex/links/new").await;
        let form = link_form(&page, &[("target_url", "https://evil.example/")]);
        let refused = other
            .post_owned("/o/globex/links/s.example/readonly", &form)
            .await;
        assert_eq!(refused.status, StatusCode::NOT_FOUND);
        let refused = other
            .post_owned("/o/acme/links/s.example/readonly", &form)
            .await;
        assert_eq!(refused.status, StatusCode::NOT_FOUND);
        assert_eq!(
            api.read(&key, "s.example", "readonly").await.body["version"],
            1
        );
        t.cleanup().await;
    }
}

#[tokio::test]
async fn a_change_that_lost_a_race_shows_what_changed_and_overwrites_nothing() {
    for (api, t) in apis("dash-link-race").await {
        member(&api, "ana@acme.example", "acme", Role::Editor).await;
        let key = api.key("acme", false).await;
        let made = api
            .create(
                &key,
                json!({"target_url": "https://shop.example/", "code": "race", "title": "First"}),
            )
            .await;
        assert_eq!(made.status, StatusCode::CREATED);
        let mut browser = Browser::new(&api);
        browser.sign_in("ana@acme.example", PASSWORD).await;
        let page = browser.get("/o/acme/links/s.example/race").await;
        // A colleague's script changes the title while the form is open.
        let theirs = api
            .patch_json(
                &key,
                "/v1/links/s.example/race",
                Some("\"1\""),
                json!({"title": "Theirs"}),
            )
            .await;
        assert_eq!(theirs.status, StatusCode::OK, "{}", theirs.text);
        let mine = link_form(
            &page,
            &[("target_url", "https://shop.example/"), ("title", "Mine")],
        );
        let lost = browser
            .post_owned("/o/acme/links/s.example/race", &mine)
            .await;
        assert_eq!(
            lost.status,
            StatusCode::CONFLICT,
            "{} {}",
            t.kind(),
            lost.html
        );
        assert!(
            lost.html.contains("Someone changed this link"),
            "{}",
            lost.html
        );
        assert!(
            lost.html.contains("<dt>Title</dt><dd>Theirs</dd>"),
            "{}",
            lost.html
        );
        assert!(
            lost.html.contains("value=\"Mine\""),
            "what was typed is kept"
        );
        assert_eq!(
            api.read(&key, "s.example", "race").await.body["title"],
            "Theirs"
        );
        // Saving the page again replaces their change, knowingly.
        let again = link_form(
            &lost,
            &[("target_url", "https://shop.example/"), ("title", "Mine")],
        );
        let saved = browser
            .post_owned("/o/acme/links/s.example/race", &again)
            .await;
        assert_eq!(saved.status, StatusCode::SEE_OTHER, "{}", saved.html);
        assert_eq!(
            api.read(&key, "s.example", "race").await.body["title"],
            "Mine"
        );
        t.cleanup().await;
    }
}

#[tokio::test]
async fn an_editor_sets_every_option_a_link_has_and_tries_it_before_sharing_it() {
    for (api, t) in apis("dash-link-options").await {
        member(&api, "ana@acme.example", "acme", Role::Editor).await;
        let key = api.key("acme", false).await;
        let mut browser = Browser::new(&api);
        browser.sign_in("ana@acme.example", PASSWORD).await;
        let new = browser.get("/o/acme/links/new").await;
        for shown in [
            "name=\"rule-0-target\"",
            "name=\"variant-1-weight\"",
            "name=\"utm_campaign\"",
            "name=\"preview_title\"",
        ] {
            assert!(new.html.contains(shown), "{shown}: {}", new.html);
        }

        // Without JavaScript, "Add a rule" shows the form again with one more row, saving
        // nothing.
        let typed = options_form(&[
            ("target_url", "https://shop.example/spring"),
            ("code", "spring"),
            ("rule-0-target", "https://apps.example/ios"),
            ("rule-0-device", "ios"),
            ("add", "rule"),
        ]);
        let more = browser
            .post_owned("/o/acme/links", &link_form(&new, &typed))
            .await;
        assert_eq!(more.status, StatusCode::OK, "{}", more.html);
        assert!(more.html.contains("name=\"rule-1-target\""));
        assert!(more.html.contains("value=\"https://apps.example/ios\""));
        assert_eq!(
            api.read(&key, "s.example", "spring").await.status,
            StatusCode::NOT_FOUND
        );

        let fields = options_form(&[
            ("target_url", "https://shop.example/spring?ref=mail"),
            ("utm_source", "newsletter"),
            ("utm_campaign", "spring"),
            ("domain", "s.example"),
            ("code", "spring"),
            ("title", "Spring sale"),
            ("rule-0-target", "https://apps.example/ios"),
            ("rule-0-device", "ios"),
            ("rule-0-country", "nl, de"),
            ("rule-1-target", ""),
            ("variant-0-target", "https://shop.example/a"),
            ("variant-0-weight", "50"),
            ("variant-1-target", "https://shop.example/b"),
            ("variant-1-weight", "50"),
            ("max_visits", "1000"),
            ("access", "public"),
            ("access_was", "public"),
            ("preview_title", "Everything must go"),
        ]);
        let created = browser
            .post_owned("/o/acme/links", &link_form(&new, &fields))
            .await;
        assert_eq!(
            created.status,
            StatusCode::SEE_OTHER,
            "{} {}",
            t.kind(),
            created.html
        );
        let read = api.read(&key, "s.example", "spring").await;
        assert_eq!(
            read.body["target_url"],
            "https://shop.example/spring?ref=mail&utm_source=newsletter&utm_campaign=spring"
        );
        assert_eq!(
            read.body["rules"][0]["when"],
            json!({"device": ["ios"], "country": ["NL", "DE"]})
        );
        assert_eq!(read.body["split"][1]["weight"], 50);
        assert_eq!(read.body["max_visits"], 1000);
        assert_eq!(read.body["preview"]["title"], "Everything must go");
        assert_eq!(read.body["record_clicks"], true);

        // The page shows them back, the UTM parameters in their own fields.
        let page = browser.get("/o/acme/links/s.example/spring").await;
        assert!(
            page.html
                .contains("value=\"https://shop.example/spring?ref=mail\""),
            "{}",
            page.html
        );
        assert!(page
            .html
            .contains("id=\"utm_source\" name=\"utm_source\" value=\"newsletter\""));
        assert!(page
            .html
            .contains("id=\"rule-0-device-ios\" name=\"rule-0-device\" value=\"ios\" checked"));

        // The tester runs the edge's decision: an iPhone in NL follows the rule, a
        // computer falls to the split.
        let iphone = browser
            .get("/o/acme/links/s.example/spring/test?run=1&agent=iphone&country=nl")
            .await;
        assert_eq!(iphone.status, StatusCode::OK, "{}", iphone.html);
        assert!(
            iphone.html.contains("Sent to https://apps.example/ios"),
            "{}",
            iphone.html
        );
        let desk = browser
            .get("/o/acme/links/s.example/spring/test?run=1&agent=windows&country=NL")
            .await;
        assert!(
            desk.html.contains(
                "Chance picks one of: https://shop.example/a (50%); https://shop.example/b (50%)"
            ),
            "{}",
            desk.html
        );
        let bad = browser
            .get("/o/acme/links/s.example/spring/test?run=1&agent=windows&country=Netherlands")
            .await;
        assert_eq!(bad.status, StatusCode::UNPROCESSABLE_ENTITY);

        // Removing the rule and the split: their rows sent blank.
        let page = browser.get("/o/acme/links/s.example/spring").await;
        let cleared = options_form(&[
            ("target_url", "https://shop.example/spring?ref=mail"),
            ("utm_source", "newsletter"),
            ("utm_campaign", "spring"),
            ("title", "Spring sale"),
            ("rule-0-target", ""),
            ("access", "signed"),
            ("access_was", "public"),
        ]);
        let saved = browser
            .post_owned(
                "/o/acme/links/s.example/spring",
                &link_form(&page, &cleared),
            )
            .await;
        assert_eq!(saved.status, StatusCode::SEE_OTHER, "{}", saved.html);
        let read = api.read(&key, "s.example", "spring").await;
        assert_eq!(read.body["rules"], json!([]));
        assert_eq!(read.body["split"], Value::Null);
        assert_eq!(read.body["max_visits"], Value::Null);
        assert_eq!(read.body["access"], "signed");

        // A token issued on the page opens the link; saving the page again keeps it valid.
        let page = browser.get("/o/acme/links/s.example/spring").await;
        let issued = browser
            .post(
                "/o/acme/links/s.example/spring/tokens",
                &[("csrf", &page.csrf()), ("hours", "2")],
            )
            .await;
        assert_eq!(issued.status, StatusCode::CREATED, "{}", issued.html);
        let url = issued
            .html
            .split("https://s.example/spring?t=")
            .nth(1)
            .and_then(|rest| {
                rest.split(|c: char| !c.is_ascii_alphanumeric() && c != '.' && c != '-' && c != '_')
                    .next()
            })
            .expect("the token's address")
            .to_owned();
        let path = format!("/spring?t={url}");
        assert_eq!(
            api.visit("GET", "s.example", &path).await.status,
            StatusCode::FOUND
        );
        let page = browser.get("/o/acme/links/s.example/spring").await;
        let again = options_form(&[
            ("target_url", "https://shop.example/spring"),
            ("access", "signed"),
            ("access_was", "signed"),
        ]);
        let saved = browser
            .post_owned("/o/acme/links/s.example/spring", &link_form(&page, &again))
            .await;
        assert_eq!(saved.status, StatusCode::SEE_OTHER, "{}", saved.html);
        assert_eq!(
            api.visit("GET", "s.example", &path).await.status,
            StatusCode::FOUND,
            "the token still opens the link"
        );

        // The QR code, as a file.
        let qr = browser
            .get("/o/acme/links/s.example/spring/qr?format=svg&size=256&margin=2&ecc=H")
            .await;
        assert_eq!(qr.status, StatusCode::OK);
        assert_eq!(qr.headers[header::CONTENT_TYPE], "image/svg+xml");
        assert!(qr.headers[header::CONTENT_DISPOSITION]
            .to_str()
            .expect("ASCII")
            .contains("s.example-spring-qr.svg"));
        let bad = browser
            .get("/o/acme/links/s.example/spring/qr?format=svg&size=9&margin=2&ecc=H")
            .await;
        assert_eq!(bad.status, StatusCode::UNPROCESSABLE_ENTITY);

        // The alias field says, as it is typed, whether an alias is free.
        let taken = browser
            .get("/o/acme/alias?domain=s.example&code=spring")
            .await;
        assert!(taken.html.contains("is taken"), "{}", taken.html);
        let free = browser
            .get("/o/acme/alias?domain=s.example&code=autumn-sale")
            .await;
        assert!(free.html.contains("is free"), "{}", free.html);
        let short = browser.get("/o/acme/alias?domain=s.example&code=a").await;
        assert!(short.html.contains("class=\"error\""), "{}", short.html);
        t.cleanup().await;
    }
}

/// The team's note is typed in the form, kept as typed and shown again; a form from a
/// page made before the note existed (it has no such field) leaves it alone, and an
/// emptied one removes it.
#[tokio::test]
async fn an_editor_writes_the_teams_note_and_a_form_without_it_leaves_it_alone() {
    for (api, t) in apis("dash-link-note").await {
        member(&api, "ana@acme.example", "acme", Role::Editor).await;
        let key = api.key("acme", false).await;
        let mut browser = Browser::new(&api);
        browser.sign_in("ana@acme.example", PASSWORD).await;
        let new = browser.get("/o/acme/links/new").await;
        assert!(new.html.contains("name=\"note\""), "{}", new.html);
        let form = link_form(
            &new,
            &[
                ("target_url", "https://shop.example/spring"),
                ("domain", "s.example"),
                ("code", "spring"),
                ("note", "Legal <ok>\r\nask Ana"),
            ],
        );
        let created = browser.post_owned("/o/acme/links", &form).await;
        assert_eq!(created.status, StatusCode::SEE_OTHER, "{}", created.html);
        let read = api.read(&key, "s.example", "spring").await;
        assert_eq!(read.body["note"], "Legal <ok>\nask Ana", "{}", t.kind());

        let page = browser.get("/o/acme/links/s.example/spring").await;
        assert!(
            page.html
                .contains(">Legal &#60;ok&#62;\nask Ana</textarea>"),
            "{}",
            page.html
        );
        let older = link_form(
            &page,
            &[
                ("target_url", "https://shop.example/spring"),
                ("title", "Spring"),
            ],
        );
        let saved = browser
            .post_owned("/o/acme/links/s.example/spring", &older)
            .await;
        assert_eq!(saved.status, StatusCode::SEE_OTHER, "{}", saved.html);
        let read = api.read(&key, "s.example", "spring").await;
        assert_eq!(
            (&read.body["title"], &read.body["note"]),
            (&json!("Spring"), &json!("Legal <ok>\nask Ana"))
        );

        let page = browser.get("/o/acme/links/s.example/spring").await;
        let emptied = link_form(
            &page,
            &[
                ("target_url", "https://shop.example/spring"),
                ("title", "Spring"),
                ("note", " "),
            ],
        );
        let saved = browser
            .post_owned("/o/acme/links/s.example/spring", &emptied)
            .await;
        assert_eq!(saved.status, StatusCode::SEE_OTHER, "{}", saved.html);
        assert_eq!(
            api.read(&key, "s.example", "spring").await.body["note"],
            Value::Null
        );
        let history = browser.get("/o/acme/links/s.example/spring/history").await;
        assert!(
            history
                .html
                .contains("note: &#34;Legal &#60;ok&#62;\nask Ana&#34; → (none)"),
            "{}",
            history.html
        );
        t.cleanup().await;
    }
}

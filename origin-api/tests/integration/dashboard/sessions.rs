//! Signing in and out, sessions, guessing, and the checks every post must pass.

use super::*;

#[tokio::test]
async fn signing_in_shows_the_owners_links_and_signing_out_ends_the_session() {
    for (api, t) in apis("dash-sign-in").await {
        member(&api, "Ana@Acme.example", "acme", Role::Editor).await;
        let key = api.key("acme", false).await;
        let created = api
            .create(
                &key,
                json!({"target_url": "https://shop.example/spring?utm_source=x", "code": "spring", "title": "Spring <sale>", "tags": ["launch"]}),
            )
            .await;
        assert_eq!(created.status, StatusCode::CREATED, "{}", created.text);

        let mut browser = Browser::new(&api);
        let signed_in = browser.sign_in("ana@acme.example", PASSWORD).await;
        assert_eq!(
            signed_in.status,
            StatusCode::SEE_OTHER,
            "{}",
            signed_in.html
        );
        assert_eq!(signed_in.location(), "/");
        let cookie = signed_in
            .set_cookies()
            .into_iter()
            .find(|c| c.starts_with("__Host-hop_session="))
            .expect("a session cookie");
        for attribute in ["HttpOnly", "SameSite=Lax", "Secure", "Path=/"] {
            assert!(cookie.contains(attribute), "{attribute} in {cookie}");
        }

        let home = browser.get("/").await;
        assert_eq!(home.location(), "/o/acme", "{}", t.kind());
        let links = browser.get("/o/acme/links").await;
        assert_eq!(links.status, StatusCode::OK, "{}", links.html);
        assert!(
            links.html.contains("https://s.example/spring"),
            "{}",
            links.html
        );
        assert!(links.html.contains("shop.example"));
        assert!(
            links.html.contains("Spring &#60;sale&#62;")
                || links.html.contains("Spring &lt;sale&gt;"),
            "a title is escaped: {}",
            links.html
        );
        assert!(!links.html.contains("Spring <sale>"));
        let csp = links.headers[header::CONTENT_SECURITY_POLICY]
            .to_str()
            .expect("ASCII");
        assert!(csp.starts_with("default-src 'self'"), "{csp}");
        assert_eq!(links.headers[header::CACHE_CONTROL], "no-store");
        assert_eq!(links.headers[header::X_FRAME_OPTIONS], "DENY");

        let stolen = browser.session().cloned().expect("session");
        let csrf = links.csrf();
        let out = browser.post("/logout", &[("csrf", &csrf)]).await;
        assert_eq!(out.status, StatusCode::SEE_OTHER);
        assert_eq!(out.location(), "/login");
        assert!(browser.session().is_none(), "the cookie is removed");
        // The old cookie, replayed, opens nothing: the session is gone, not just forgotten.
        browser.cookies.insert("__Host-hop_session".into(), stolen);
        let after = browser.get("/o/acme/links").await;
        assert_eq!(after.status, StatusCode::SEE_OTHER);
        assert_eq!(after.location(), "/login");
        t.cleanup().await;
    }
}

#[tokio::test]
async fn a_wrong_password_and_an_unknown_email_look_alike_and_guessing_slows_down() {
    for (api, t) in apis("dash-guessing").await {
        member(&api, "ana@acme.example", "acme", Role::Viewer).await;
        let mut browser = Browser::new(&api);
        let wrong = browser
            .sign_in("ana@acme.example", "not the password")
            .await;
        let unknown = browser
            .sign_in("nobody@acme.example", "not the password")
            .await;
        assert_eq!(wrong.status, StatusCode::UNAUTHORIZED);
        assert_eq!(unknown.status, StatusCode::UNAUTHORIZED);
        assert!(
            wrong.html.contains("The email or the password is wrong"),
            "{}",
            wrong.html
        );
        assert_eq!(
            wrong.html.replace(&wrong.csrf(), ""),
            unknown
                .html
                .replace(&unknown.csrf(), "")
                .replace("nobody@", "ana@"),
            "the two answers differ only in what the browser sent"
        );
        // Four more wrong passwords are free (another address, so that only the
        // account's own count is at work)...
        browser.from = "198.51.100.9:40000".parse().expect("address");
        for _ in 0..4 {
            let page = browser.sign_in("ana@acme.example", "still not it").await;
            assert_eq!(page.status, StatusCode::UNAUTHORIZED, "{}", t.kind());
        }
        // ...and from the sixth on each doubles a wait, during which even the right
        // password is not tried: after the eleventh, 32 s (the count set as if the
        // others had been made, rather than waiting out the first waits).
        seed_attempts(&api, "ana@acme.example", 10).await;
        let eleventh = browser.sign_in("ana@acme.example", "still not it").await;
        assert_eq!(eleventh.status, StatusCode::UNAUTHORIZED);
        let locked = browser.sign_in("ana@acme.example", PASSWORD).await;
        assert_eq!(
            locked.status,
            StatusCode::TOO_MANY_REQUESTS,
            "{}",
            locked.html
        );
        assert!(locked.html.contains("try again in"), "{}", locked.html);
        assert!(browser.session().is_none());

        // One address spreading guesses over many accounts is stopped by its own count.
        let mut scanner = Browser::new(&api);
        scanner.from = "192.0.2.50:40000".parse().expect("address");
        let mut statuses = Vec::new();
        for i in 0..25 {
            let page = scanner
                .sign_in(&format!("user{i}@acme.example"), "guess")
                .await;
            statuses.push(page.status);
        }
        assert_eq!(statuses[0], StatusCode::UNAUTHORIZED);
        assert_eq!(
            statuses.last(),
            Some(&StatusCode::TOO_MANY_REQUESTS),
            "{statuses:?}"
        );
        t.cleanup().await;
    }
}

#[tokio::test]
async fn posts_without_the_form_token_or_from_another_site_are_refused() {
    for (api, t) in apis("dash-csrf").await {
        member(&api, "ana@acme.example", "acme", Role::Admin).await;
        let mut attacker = Browser::new(&api);
        // A sign-in posted without the form's cookie (from another site's page).
        let forged = attacker
            .post(
                "/login",
                &[
                    ("email", "ana@acme.example"),
                    ("password", PASSWORD),
                    ("csrf", "x"),
                ],
            )
            .await;
        assert_eq!(forged.status, StatusCode::FORBIDDEN, "{}", t.kind());

        let mut browser = Browser::new(&api);
        let signed_in = browser.sign_in("ana@acme.example", PASSWORD).await;
        assert_eq!(signed_in.status, StatusCode::SEE_OTHER);
        let csrf = browser.get("/account").await.csrf();
        for (why, form) in [
            ("no token", vec![]),
            (
                "another token",
                vec![("csrf", "0123456789abcdef0123456789abcdef")],
            ),
        ] {
            let page = browser.post("/logout/everywhere", &form).await;
            assert_eq!(page.status, StatusCode::FORBIDDEN, "{why}");
        }
        // The right token, from another site's page.
        for (name, value) in [
            ("sec-fetch-site", "cross-site".to_owned()),
            ("origin", "https://evil.example".to_owned()),
        ] {
            browser.headers = vec![(name, value)];
            let page = browser.post("/logout/everywhere", &[("csrf", &csrf)]).await;
            assert_eq!(page.status, StatusCode::FORBIDDEN, "{name}");
        }
        browser.headers.clear();
        assert_eq!(
            browser.get("/account").await.status,
            StatusCode::OK,
            "nothing refused ended the session"
        );
        // From this site, with the token: done.
        browser.headers = vec![
            ("sec-fetch-site", "same-origin".to_owned()),
            ("origin", "https://dash.example".to_owned()),
        ];
        let out = browser.post("/logout/everywhere", &[("csrf", &csrf)]).await;
        assert_eq!(out.status, StatusCode::SEE_OTHER);
        assert_eq!(browser.get("/account").await.location(), "/login");
        t.cleanup().await;
    }
}

#[tokio::test]
async fn a_session_id_planted_before_sign_in_is_worth_nothing_after() {
    for (api, t) in apis("dash-fixation").await {
        member(&api, "ana@acme.example", "acme", Role::Editor).await;
        let planted = "ab".repeat(32);
        let mut browser = Browser::new(&api);
        browser
            .cookies
            .insert("__Host-hop_session".into(), planted.clone());
        let signed_in = browser.sign_in("ana@acme.example", PASSWORD).await;
        assert_eq!(signed_in.status, StatusCode::SEE_OTHER);
        let issued = browser.session().cloned().expect("session");
        assert_ne!(issued, planted, "{}", t.kind());
        let mut attacker = Browser::new(&api);
        attacker
            .cookies
            .insert("__Host-hop_session".into(), planted);
        assert_eq!(attacker.get("/o/acme/links").await.location(), "/login");
        t.cleanup().await;
    }
}

#[tokio::test]
async fn another_owners_links_are_not_found_and_a_disabled_user_is_out() {
    for (api, t) in apis("dash-owners").await {
        let ana = member(&api, "ana@acme.example", "acme", Role::Viewer).await;
        member(&api, "gil@globex.example", "globex", Role::Admin).await;
        let mut browser = Browser::new(&api);
        browser.sign_in("ana@acme.example", PASSWORD).await;
        assert_eq!(browser.get("/o/acme/links").await.status, StatusCode::OK);
        let other = browser.get("/o/globex/links").await;
        assert_eq!(other.status, StatusCode::NOT_FOUND, "{}", t.kind());
        assert!(!other.html.contains("globex.example"));

        let accounts = api.state.accounts.clone();
        assert!(accounts.disable(&ana).await.expect("disable"));
        assert_eq!(browser.get("/o/acme/links").await.location(), "/login");
        let again = browser.sign_in("ana@acme.example", PASSWORD).await;
        assert_eq!(again.status, StatusCode::FORBIDDEN);
        assert!(again.html.contains("disabled"), "{}", again.html);
        let wrong = browser
            .sign_in("ana@acme.example", "not the password")
            .await;
        assert_eq!(
            wrong.status,
            StatusCode::UNAUTHORIZED,
            "without the password, a disabled account looks like any other"
        );
        t.cleanup().await;
    }
}

#[tokio::test]
async fn a_new_password_ends_the_other_sessions_and_expired_sessions_open_nothing() {
    for (api, t) in apis("dash-password").await {
        member(&api, "ana@acme.example", "acme", Role::Editor).await;
        let (mut laptop, mut phone) = (Browser::new(&api), Browser::new(&api));
        laptop.sign_in("ana@acme.example", PASSWORD).await;
        phone.sign_in("ana@acme.example", PASSWORD).await;
        let csrf = laptop.get("/account").await.csrf();

        let refused = laptop
            .post(
                "/account/password",
                &[
                    ("csrf", &csrf),
                    ("current", "wrong one"),
                    ("new", "a brand new passphrase"),
                ],
            )
            .await;
        assert_eq!(refused.status, StatusCode::FORBIDDEN, "{}", refused.html);
        let short = laptop
            .post(
                "/account/password",
                &[("csrf", &csrf), ("current", PASSWORD), ("new", "short")],
            )
            .await;
        assert_eq!(short.status, StatusCode::UNPROCESSABLE_ENTITY);
        assert!(
            short.html.contains("at least 12 characters"),
            "{}",
            short.html
        );
        assert_eq!(phone.get("/account").await.status, StatusCode::OK);

        let changed = laptop
            .post(
                "/account/password",
                &[
                    ("csrf", &csrf),
                    ("current", PASSWORD),
                    ("new", "a brand new passphrase"),
                ],
            )
            .await;
        assert_eq!(changed.status, StatusCode::OK, "{}", changed.html);
        assert!(changed.html.contains("Your password is changed"));
        assert_eq!(
            laptop.get("/account").await.status,
            StatusCode::OK,
            "{}",
            t.kind()
        );
        assert_eq!(phone.get("/account").await.location(), "/login");
        assert_eq!(
            phone.sign_in("ana@acme.example", PASSWORD).await.status,
            StatusCode::UNAUTHORIZED
        );

        // A session past its end opens nothing, whatever the cookie's own expiry says.
        api.exec("UPDATE sessions SET expires_at = 0").await;
        assert_eq!(laptop.get("/account").await.location(), "/login");
        t.cleanup().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sign_ins_sent_at_once_get_one_turn_between_them() {
    for (api, t) in apis("dash-burst").await {
        member(&api, "ana@acme.example", "acme", Role::Viewer).await;
        // Ten wrong passwords made, the last one's wait over: the next booked starts a
        // wait of 32 s, and every other sent with it must find the count moved on.
        seed_attempts(&api, "ana@acme.example", 10).await;
        let tasks = 20;
        let start = Arc::new(tokio::sync::Barrier::new(tasks));
        let mut running = tokio::task::JoinSet::new();
        for i in 0..tasks {
            let (state, start) = (api.state.clone(), start.clone());
            running.spawn(async move {
                let api = Api { state };
                let mut browser = Browser::new(&api);
                browser.from = format!("192.0.2.{i}:40000").parse().expect("address");
                let form = browser.get("/login").await;
                let csrf = form.csrf();
                // Every form loaded, then every post sent at once.
                start.wait().await;
                let fields = [
                    ("email", "ana@acme.example"),
                    ("password", "a guess"),
                    ("csrf", csrf.as_str()),
                ];
                browser.post("/login", &fields).await.status
            });
        }
        let mut statuses = Vec::new();
        while let Some(status) = running.join_next().await {
            statuses.push(status.expect("task"));
        }
        let verified = statuses
            .iter()
            .filter(|s| **s == StatusCode::UNAUTHORIZED)
            .count();
        assert_eq!(verified, 1, "{} {statuses:?}", t.kind());
        let rows: Vec<(i64,)> = api
            .rows("SELECT failures FROM login_attempts WHERE email = 'ana@acme.example'")
            .await;
        assert_eq!(rows, [(11,)], "one attempt booked, not twenty");
        t.cleanup().await;
    }
}

#[tokio::test]
async fn an_unknown_email_is_locked_like_an_account() {
    for (api, t) in apis("dash-lock-alike").await {
        member(&api, "ana@acme.example", "acme", Role::Viewer).await;
        for email in ["ana@acme.example", "nobody@acme.example"] {
            seed_attempts(&api, email, 10).await;
        }
        let mut pages = Vec::new();
        for email in ["ana@acme.example", "nobody@acme.example"] {
            let mut browser = Browser::new(&api);
            browser.from = format!("198.51.100.{}:4000", pages.len() + 1)
                .parse()
                .expect("address");
            let wrong = browser.sign_in(email, "a guess").await;
            assert_eq!(wrong.status, StatusCode::UNAUTHORIZED, "{email}");
            let locked = browser.sign_in(email, "another guess").await;
            assert_eq!(
                locked.status,
                StatusCode::TOO_MANY_REQUESTS,
                "{email} {}",
                t.kind()
            );
            pages.push(
                locked
                    .html
                    .replace(&locked.csrf(), "")
                    .replace(email, "EMAIL"),
            );
        }
        let strip_wait = |p: &str| {
            p.split("try again in")
                .next()
                .unwrap_or_default()
                .to_owned()
        };
        assert_eq!(
            strip_wait(&pages[0]),
            strip_wait(&pages[1]),
            "a lock tells nothing of accounts"
        );
        t.cleanup().await;
    }
}

#[tokio::test]
async fn a_session_begun_before_its_users_sessions_ended_opens_nothing() {
    for (api, t) in apis("dash-epoch").await {
        member(&api, "ana@acme.example", "acme", Role::Editor).await;
        let mut browser = Browser::new(&api);
        browser.sign_in("ana@acme.example", PASSWORD).await;
        assert_eq!(browser.get("/account").await.status, StatusCode::OK);
        // What a sign-in verifying while the password changed would leave: a session
        // under the old epoch, whose row a "delete every session" ran too early to see.
        api.exec("UPDATE users SET session_epoch = session_epoch + 1")
            .await;
        assert_eq!(
            browser.get("/account").await.location(),
            "/login",
            "{}",
            t.kind()
        );
        t.cleanup().await;
    }
}

#[tokio::test]
async fn another_site_cannot_post_even_without_cookies_and_big_forms_are_refused() {
    for (api, t) in apis("dash-cross-site").await {
        member(&api, "ana@acme.example", "acme", Role::Editor).await;
        // A page of evil.example posting to the dashboard: a real browser sends no
        // SameSite=Lax cookie with it. Refused before anything, no cookie touched.
        let mut evil = Browser::new(&api);
        evil.headers = vec![("sec-fetch-site", "cross-site".to_owned())];
        for path in ["/logout", "/login", "/account/password", "/o/acme/links"] {
            let page = evil.post(path, &[("csrf", "x")]).await;
            assert_eq!(page.status, StatusCode::FORBIDDEN, "{path} {}", t.kind());
            assert!(
                page.set_cookies().is_empty(),
                "{path}: {:?}",
                page.set_cookies()
            );
        }
        // Over HTTPS (secure cookies), a page of the same host over plain HTTP is another
        // site too.
        let mut browser = Browser::new(&api);
        browser.sign_in("ana@acme.example", PASSWORD).await;
        let csrf = browser.get("/account").await.csrf();
        browser.headers = vec![("origin", "http://dash.example".to_owned())];
        let page = browser.post("/logout", &[("csrf", &csrf)]).await;
        assert_eq!(page.status, StatusCode::FORBIDDEN);
        browser.headers.clear();
        assert_eq!(browser.get("/account").await.status, StatusCode::OK);
        // A form is a few hundred bytes: 20 KiB is refused before it is parsed.
        let huge = "x".repeat(20 * 1024);
        let page = browser
            .post(
                "/login",
                &[("email", "ana@acme.example"), ("password", &huge)],
            )
            .await;
        assert_eq!(page.status, StatusCode::PAYLOAD_TOO_LARGE);
        t.cleanup().await;
    }
}

#[tokio::test]
async fn the_current_password_is_guessed_no_faster_than_at_sign_in() {
    for (api, t) in apis("dash-change-guess").await {
        member(&api, "ana@acme.example", "acme", Role::Editor).await;
        let mut stolen = Browser::new(&api);
        stolen.sign_in("ana@acme.example", PASSWORD).await;
        let csrf = stolen.get("/account").await.csrf();
        seed_attempts(&api, "ana@acme.example", 10).await;
        let guess = |current: &'static str| {
            vec![
                ("csrf".to_owned(), csrf.clone()),
                ("current".to_owned(), current.to_owned()),
                ("new".to_owned(), "a brand new passphrase".to_owned()),
            ]
        };
        let wrong = stolen
            .post_owned("/account/password", &guess("guess one"))
            .await;
        assert_eq!(wrong.status, StatusCode::FORBIDDEN, "{}", t.kind());
        let locked = stolen
            .post_owned("/account/password", &guess("guess two"))
            .await;
        assert_eq!(
            locked.status,
            StatusCode::TOO_MANY_REQUESTS,
            "{}",
            locked.html
        );
        let right = stolen
            .post_owned("/account/password", &guess(PASSWORD))
            .await;
        assert_eq!(
            right.status,
            StatusCode::TOO_MANY_REQUESTS,
            "not even the right one during the wait"
        );
        t.cleanup().await;
    }
}

/// Strangers guessing cannot lock an account's owner out for good: while their guesses
/// hold the account's wait, the right password from a browser the account signed in
/// from still gets in (any other browser waits, the right password included). A wrong
/// password from that browser forgets it: a stolen cookie is worth one guess.
#[tokio::test]
async fn the_right_password_from_a_known_browser_gets_in_while_strangers_hold_the_wait() {
    for (api, t) in apis("dash-known-device").await {
        member(&api, "ana@acme.example", "acme", Role::Viewer).await;
        let mut ana = Browser::new(&api);
        ana.from = "198.51.100.20:40000".parse().expect("address");
        let first = ana.sign_in("ana@acme.example", PASSWORD).await;
        assert_eq!(first.status, StatusCode::SEE_OTHER, "{}", first.html);
        assert!(
            ana.cookies.contains_key("__Host-hop_device"),
            "{:?}",
            ana.cookies
        );
        let mut stranger = Browser::new(&api);
        stranger.from = "192.0.2.77:40000".parse().expect("address");
        seed_attempts(&api, "ana@acme.example", 10).await;
        let guess = stranger.sign_in("ana@acme.example", "a guess").await;
        assert_eq!(guess.status, StatusCode::UNAUTHORIZED);
        let waits = stranger.sign_in("ana@acme.example", PASSWORD).await;
        assert_eq!(waits.status, StatusCode::TOO_MANY_REQUESTS, "{}", t.kind());
        // Her own browser gets in, and the wait is over for everyone.
        let back = ana.sign_in("ana@acme.example", PASSWORD).await;
        assert_eq!(back.status, StatusCode::SEE_OTHER, "{}", back.html);

        seed_attempts(&api, "ana@acme.example", 10).await;
        stranger.sign_in("ana@acme.example", "a guess").await;
        let wrong = ana.sign_in("ana@acme.example", "not my password").await;
        assert_eq!(wrong.status, StatusCode::UNAUTHORIZED);
        let forgotten = ana.sign_in("ana@acme.example", PASSWORD).await;
        assert_eq!(forgotten.status, StatusCode::TOO_MANY_REQUESTS);
        t.cleanup().await;
    }
}

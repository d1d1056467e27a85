//! The dashboard as a browser sees it: signing in and out, sessions, and the checks a
//! post must pass. Each test attacks one promise of docs/dashboard.md, on both
//! databases, through the dashboard's real router.

use crate::common::{apis, apis_with, Api};
use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{header, Request, StatusCode};
use origin_api::model::Role;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use tower::ServiceExt;

const PASSWORD: &str = "correct horse battery staple";

/// A browser: its cookies, and the address it connects from.
struct Browser<'a> {
    api: &'a Api,
    cookies: BTreeMap<String, String>,
    from: SocketAddr,
    /// Extra headers on every request (`Sec-Fetch-Site`, `Origin`).
    headers: Vec<(&'static str, String)>,
}

struct Page {
    status: StatusCode,
    headers: axum::http::HeaderMap,
    html: String,
}

impl Page {
    fn location(&self) -> &str {
        self.headers
            .get(header::LOCATION)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
    }

    /// The form token the page carries.
    fn csrf(&self) -> String {
        let at = self
            .html
            .find("name=\"csrf\" value=\"")
            .expect("a form token");
        let rest = &self.html[at + "name=\"csrf\" value=\"".len()..];
        rest[..rest.find('"').expect("closing quote")].to_owned()
    }

    fn set_cookies(&self) -> Vec<&str> {
        self.headers
            .get_all(header::SET_COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .collect()
    }
}

impl<'a> Browser<'a> {
    fn new(api: &'a Api) -> Self {
        Browser {
            api,
            cookies: BTreeMap::new(),
            from: "203.0.113.7:40000".parse().expect("address"),
            headers: Vec::new(),
        }
    }

    async fn send(&mut self, method: &str, path: &str, form: Option<&[(&str, &str)]>) -> Page {
        let body = form.map(|fields| {
            (
                "application/x-www-form-urlencoded".to_owned(),
                url::form_urlencoded::Serializer::new(String::new())
                    .extend_pairs(fields)
                    .finish(),
            )
        });
        self.send_body(method, path, body).await
    }

    /// `POST path` as a form with `enctype="multipart/form-data"` sends it.
    async fn post_multipart(&mut self, path: &str, fields: &[(&str, &str)]) -> Page {
        let boundary = "hop-test-boundary-7MA4YWxkTrZu0gW";
        let mut body = String::new();
        for (name, value) in fields {
            let file = if *name == "file" {
                "; filename=\"links.csv\""
            } else {
                ""
            };
            body.push_str(&format!(
                "--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"{file}\r\n\r\n{value}\r\n"
            ));
        }
        body.push_str(&format!("--{boundary}--\r\n"));
        let kind = format!("multipart/form-data; boundary={boundary}");
        self.send_body("POST", path, Some((kind, body))).await
    }

    async fn send_body(
        &mut self,
        method: &str,
        path: &str,
        body: Option<(String, String)>,
    ) -> Page {
        let mut req = Request::builder()
            .method(method)
            .uri(path)
            .header(header::HOST, "dash.example");
        if !self.cookies.is_empty() {
            let jar = self
                .cookies
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join("; ");
            req = req.header(header::COOKIE, jar);
        }
        for (name, value) in &self.headers {
            req = req.header(*name, value);
        }
        let body = match body {
            Some((kind, text)) => {
                req = req.header(header::CONTENT_TYPE, kind);
                Body::from(text)
            }
            None => Body::empty(),
        };
        let mut req = req.body(body).expect("request");
        req.extensions_mut().insert(ConnectInfo(self.from));
        let res = origin_api::dashboard::router(self.api.state.clone())
            .oneshot(req)
            .await
            .expect("infallible");
        let status = res.status();
        let headers = res.headers().clone();
        let bytes = axum::body::to_bytes(res.into_body(), usize::MAX)
            .await
            .expect("body");
        let page = Page {
            status,
            headers,
            html: String::from_utf8_lossy(&bytes).into_owned(),
        };
        for cookie in page.set_cookies() {
            let pair = cookie.split(';').next().unwrap_or_default();
            if let Some((name, value)) = pair.split_once('=') {
                if value.is_empty() {
                    self.cookies.remove(name);
                } else {
                    self.cookies.insert(name.to_owned(), value.to_owned());
                }
            }
        }
        page
    }

    async fn get(&mut self, path: &str) -> Page {
        self.send("GET", path, None).await
    }

    async fn post(&mut self, path: &str, form: &[(&str, &str)]) -> Page {
        self.send("POST", path, Some(form)).await
    }

    /// Loads the sign-in form and posts it.
    async fn sign_in(&mut self, email: &str, password: &str) -> Page {
        let form = self.get("/login").await;
        assert_eq!(form.status, StatusCode::OK);
        let csrf = form.csrf();
        self.post(
            "/login",
            &[("email", email), ("password", password), ("csrf", &csrf)],
        )
        .await
    }

    fn session(&self) -> Option<&String> {
        self.cookies.get("__Host-hop_session")
    }
}

/// Records `failures` sign-in attempts against `email`, the last just now and its wait
/// over: as if they had been made, without waiting out the waits between them.
async fn seed_attempts(api: &Api, email: &str, failures: i64) {
    let now = origin_api::model::time::now_ms();
    api.exec(&format!(
        "DELETE FROM login_attempts WHERE email = '{email}'"
    ))
    .await;
    api.exec(&format!(
        "INSERT INTO login_attempts (email, failures, locked_until, last_at) \
         VALUES ('{email}', {failures}, NULL, {now})"
    ))
    .await;
}

/// A user who is `role` of `owner`.
async fn member(api: &Api, email: &str, owner: &str, role: Role) -> origin_api::model::User {
    let accounts = api.state.accounts.clone();
    let user = accounts
        .create_user(email, PASSWORD, false)
        .await
        .expect("create user");
    accounts
        .grant(&user, owner, role, false)
        .await
        .expect("grant");
    user
}

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

/// The form of a link page, ready to post back: its token and version, and `fields`.
fn link_form<'f>(page: &Page, fields: &[(&'f str, &'f str)]) -> Vec<(String, String)> {
    let version = page
        .html
        .split("name=\"version\" value=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap_or_default()
        .to_owned();
    let mut form = vec![
        ("csrf".to_owned(), page.csrf()),
        ("version".to_owned(), version),
    ];
    form.extend(
        fields
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned())),
    );
    form
}

impl Browser<'_> {
    /// Posts the members page's form: `email`'s role in `owner` set to `role` (or
    /// `remove`).
    async fn set_role(&mut self, owner: &str, csrf: &str, email: &str, role: &str) -> Page {
        let path = format!("/o/{owner}/members");
        self.post(&path, &[("csrf", csrf), ("email", email), ("role", role)])
            .await
    }

    async fn post_owned(&mut self, path: &str, form: &[(String, String)]) -> Page {
        let pairs: Vec<(&str, &str)> = form.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        self.post(path, &pairs).await
    }
}

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

/// The invitation link a members page shows, as a path.
fn invitation_path(page: &Page) -> String {
    let at = page.html.find("/invite/").expect("an invitation link");
    page.html[at..at + "/invite/".len() + 64].to_owned()
}

#[tokio::test]
async fn an_admin_invites_a_new_member_who_joins_once() {
    for (api, t) in apis("dash-invite-new").await {
        member(&api, "ana@acme.example", "acme", Role::Admin).await;
        let mut admin = Browser::new(&api);
        admin.sign_in("ana@acme.example", PASSWORD).await;
        let page = admin.get("/o/acme/members").await;
        assert_eq!(page.status, StatusCode::OK, "{}", page.html);
        let csrf = page.csrf();
        let made = admin
            .post(
                "/o/acme/invitations",
                &[
                    ("csrf", &csrf),
                    ("email", "Bob@Acme.example"),
                    ("role", "editor"),
                ],
            )
            .await;
        assert_eq!(made.status, StatusCode::OK, "{}", made.html);
        let link = invitation_path(&made);
        assert!(
            made.html.contains("https://dash.example/invite/"),
            "{}",
            made.html
        );

        let mut bob = Browser::new(&api);
        let form = bob.get(&link).await;
        assert_eq!(form.status, StatusCode::OK, "{}", form.html);
        assert!(form.html.contains("Choose a password"));
        let short = bob
            .post(&link, &[("csrf", &form.csrf()), ("password", "short")])
            .await;
        assert_eq!(
            short.status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{}",
            short.html
        );
        let joined = bob
            .post(
                &link,
                &[
                    ("csrf", &short.csrf()),
                    ("password", "bob's long passphrase"),
                ],
            )
            .await;
        assert_eq!(
            joined.status,
            StatusCode::SEE_OTHER,
            "{} {}",
            t.kind(),
            joined.html
        );
        assert_eq!(joined.location(), "/o/acme/links");
        assert_eq!(
            bob.get("/o/acme/links/new").await.status,
            StatusCode::OK,
            "an editor"
        );

        // Once: the link joins nobody else.
        let mut eve = Browser::new(&api);
        assert_eq!(eve.get(&link).await.status, StatusCode::GONE);
        let members = admin.get("/o/acme/members").await;
        assert!(
            members.html.contains("bob@acme.example"),
            "{}",
            members.html
        );
        t.cleanup().await;
    }
}

#[tokio::test]
async fn an_existing_user_joins_with_their_own_password_and_links_expire() {
    for (api, t) in apis("dash-invite-existing").await {
        member(&api, "gil@globex.example", "globex", Role::Admin).await;
        let accounts = api.state.accounts.clone();
        let new = accounts
            .invite("acme", Role::Viewer, "gil@globex.example", "cli")
            .await
            .expect("invite");
        let link = format!("/invite/{}", new.token);
        let mut gil = Browser::new(&api);
        let form = gil.get(&link).await;
        assert!(
            form.html.contains("The password of your account"),
            "{}",
            form.html
        );
        let wrong = gil
            .post(
                &link,
                &[("csrf", &form.csrf()), ("password", "not it at all")],
            )
            .await;
        assert_eq!(wrong.status, StatusCode::UNAUTHORIZED, "{}", t.kind());
        let joined = gil
            .post(&link, &[("csrf", &wrong.csrf()), ("password", PASSWORD)])
            .await;
        assert_eq!(joined.status, StatusCode::SEE_OTHER, "{}", joined.html);
        let links = gil.get("/o/acme/links").await;
        assert_eq!(links.status, StatusCode::OK);
        assert!(
            links.html.contains("href=\"/o/globex\""),
            "both owners in the bar"
        );
        assert_eq!(
            gil.get("/o/acme/links/new").await.status,
            StatusCode::NOT_FOUND,
            "a viewer"
        );

        let late = accounts
            .invite("acme", Role::Admin, "gil@globex.example", "cli")
            .await
            .expect("invite");
        api.exec("UPDATE invitations SET expires_at = 0 WHERE used_at IS NULL")
            .await;
        assert_eq!(
            gil.get(&format!("/invite/{}", late.token)).await.status,
            StatusCode::GONE
        );
        t.cleanup().await;
    }
}

#[tokio::test]
async fn only_an_owners_admins_see_and_invite_its_members() {
    for (api, t) in apis("dash-invite-who").await {
        member(&api, "ed@acme.example", "acme", Role::Editor).await;
        member(&api, "gil@globex.example", "globex", Role::Admin).await;
        let mut editor = Browser::new(&api);
        editor.sign_in("ed@acme.example", PASSWORD).await;
        assert_eq!(
            editor.get("/o/acme/members").await.status,
            StatusCode::FORBIDDEN
        );
        let csrf = editor.get("/account").await.csrf();
        let refused = editor
            .post(
                "/o/acme/invitations",
                &[
                    ("csrf", &csrf),
                    ("email", "x@acme.example"),
                    ("role", "admin"),
                ],
            )
            .await;
        assert_eq!(refused.status, StatusCode::FORBIDDEN, "{}", t.kind());
        let mut outsider = Browser::new(&api);
        outsider.sign_in("gil@globex.example", PASSWORD).await;
        assert_eq!(
            outsider.get("/o/acme/members").await.status,
            StatusCode::NOT_FOUND
        );
        let rows: Vec<(i64,)> = api.rows("SELECT COUNT(*) FROM invitations").await;
        assert_eq!(rows, [(0,)]);
        t.cleanup().await;
    }
}

const EDGE_TOKEN: &str = "dashboard-edge-token-0123456789";

/// A click on `link` (`domain/code`) as the edge reports it.
fn click(id: &str, link: &str, country: &str, bot: bool) -> Value {
    json!({
        "event_id": id, "link": link, "version": 1, "at": origin_api::model::time::now_ms(),
        "country": country, "referrer_host": "news.example",
        "device": if bot { "other" } else { "mobile" }, "bot": bot, "status": 302,
    })
}

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

/// The options part of a link form: what a browser sends with every box as shown.
fn options_form<'f>(fields: &[(&'f str, &'f str)]) -> Vec<(&'f str, &'f str)> {
    let mut all = vec![
        ("options", "1"),
        ("record_clicks", "1"),
        ("forward_query", "1"),
    ];
    all.extend_from_slice(fields);
    all
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

/// The selection value the list page gives a link: `domain/code@version`.
fn selection(page: &Page, route: &str) -> String {
    let at = page
        .html
        .find(&format!("value=\"{route}@"))
        .unwrap_or_else(|| panic!("{route} is listed: {}", page.html));
    let rest = &page.html[at + "value=\"".len()..];
    rest[..rest.find('"').expect("closing quote")].to_owned()
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

/// A click on `link` made `ago_ms` before now.
fn click_ago(id: &str, link: &str, ago_ms: i64) -> Value {
    let mut c = click(id, link, "NL", false);
    c["at"] = json!(origin_api::model::time::now_ms() - ago_ms);
    c
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

#[tokio::test]
async fn an_admin_changes_roles_and_never_leaves_the_owner_without_an_admin() {
    for (api, t) in apis("dash-roles").await {
        member(&api, "ada@acme.example", "acme", Role::Admin).await;
        member(&api, "vic@acme.example", "acme", Role::Viewer).await;
        member(&api, "eve@acme.example", "acme", Role::Editor).await;
        member(&api, "gil@globex.example", "globex", Role::Admin).await;
        let mut admin = Browser::new(&api);
        admin.sign_in("ada@acme.example", PASSWORD).await;
        let page = admin.get("/o/acme/members").await;
        let csrf = page.csrf();
        let promoted = admin
            .set_role("acme", &csrf, "vic@acme.example", "editor")
            .await;
        assert_eq!(
            promoted.status,
            StatusCode::SEE_OTHER,
            "{} {}",
            t.kind(),
            promoted.html
        );
        // The member's next page already has the new role: roles are read per request.
        let mut vic = Browser::new(&api);
        vic.sign_in("vic@acme.example", PASSWORD).await;
        assert_eq!(vic.get("/o/acme/links/new").await.status, StatusCode::OK);
        let removed = admin
            .set_role("acme", &csrf, "vic@acme.example", "remove")
            .await;
        assert_eq!(removed.status, StatusCode::SEE_OTHER);
        assert_eq!(vic.get("/o/acme/links").await.status, StatusCode::NOT_FOUND);

        // The last admin can neither leave nor step down.
        for role in ["remove", "editor"] {
            let refused = admin
                .set_role("acme", &csrf, "ada@acme.example", role)
                .await;
            assert_eq!(
                refused.status,
                StatusCode::CONFLICT,
                "{role}: {}",
                refused.html
            );
            assert!(refused.html.contains("at least one admin"));
        }
        // With a second admin, the first may step down.
        let second = admin
            .set_role("acme", &csrf, "eve@acme.example", "admin")
            .await;
        assert_eq!(second.status, StatusCode::SEE_OTHER);
        let down = admin
            .set_role("acme", &csrf, "ada@acme.example", "viewer")
            .await;
        assert_eq!(down.status, StatusCode::SEE_OTHER);
        assert_eq!(
            admin.get("/o/acme/members").await.status,
            StatusCode::FORBIDDEN
        );

        // Another owner's admin reaches nothing of acme's, and nobody outside it.
        let mut gil = Browser::new(&api);
        gil.sign_in("gil@globex.example", PASSWORD).await;
        let csrf = gil.get("/o/globex/members").await.csrf();
        let foreign = gil
            .set_role("acme", &csrf, "eve@acme.example", "viewer")
            .await;
        assert_eq!(foreign.status, StatusCode::NOT_FOUND);
        let outsider = gil
            .set_role("globex", &csrf, "eve@acme.example", "viewer")
            .await;
        assert_eq!(outsider.status, StatusCode::NOT_FOUND, "{}", outsider.html);
        t.cleanup().await;
    }
}

#[tokio::test]
async fn an_admin_makes_a_key_seen_once_and_revokes_it() {
    for (api, t) in apis("dash-keys").await {
        member(&api, "ada@acme.example", "acme", Role::Admin).await;
        member(&api, "eve@acme.example", "acme", Role::Editor).await;
        member(&api, "gil@globex.example", "globex", Role::Admin).await;
        let mut admin = Browser::new(&api);
        admin.sign_in("ada@acme.example", PASSWORD).await;
        let page = admin.get("/o/acme/keys").await;
        assert_eq!(page.status, StatusCode::OK, "{}", page.html);
        let csrf = page.csrf();
        let made = admin
            .post(
                "/o/acme/keys",
                &[
                    ("csrf", &csrf),
                    ("name", "Newsletter sync"),
                    ("domain", "s.example"),
                ],
            )
            .await;
        assert_eq!(
            made.status,
            StatusCode::CREATED,
            "{} {}",
            t.kind(),
            made.html
        );
        let token = made
            .html
            .split("aria-label=\"The new key\" readonly value=\"")
            .nth(1)
            .and_then(|rest| rest.split('"').next())
            .expect("the token, shown once")
            .to_owned();
        assert!(token.starts_with("hop_"));
        assert!(made.html.contains("<td>s.example</td>"), "{}", made.html);
        let listed = api.call_as(&token, "GET", "/v1/links").await;
        assert_eq!(
            listed.status,
            StatusCode::OK,
            "the key works: {}",
            listed.text
        );
        let again = admin.get("/o/acme/keys").await;
        assert!(
            !again.html.contains(&token),
            "the token is never shown again"
        );
        let refused = admin
            .post(
                "/o/acme/keys",
                &[("csrf", &csrf), ("name", "x"), ("domain", "other.example")],
            )
            .await;
        assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY);
        // Whether another domain is registered at all is none of an owner's business.
        assert!(
            refused
                .html
                .contains("other.example is not a domain of acme"),
            "{}",
            refused.html
        );
        assert!(!refused.html.contains("registered"), "{}", refused.html);

        let key_id = token.split('_').nth(1).expect("key id").to_owned();
        // Nobody else revokes it: an editor is told, another owner's admin finds nothing.
        let mut eve = Browser::new(&api);
        eve.sign_in("eve@acme.example", PASSWORD).await;
        assert_eq!(eve.get("/o/acme/keys").await.status, StatusCode::FORBIDDEN);
        let mut gil = Browser::new(&api);
        gil.sign_in("gil@globex.example", PASSWORD).await;
        let gil_csrf = gil.get("/o/globex/keys").await.csrf();
        let path = format!("/o/globex/keys/{key_id}/revoke");
        assert_eq!(
            gil.post(&path, &[("csrf", &gil_csrf)]).await.status,
            StatusCode::NOT_FOUND
        );
        assert_eq!(
            api.call_as(&token, "GET", "/v1/links").await.status,
            StatusCode::OK
        );

        let path = format!("/o/acme/keys/{key_id}/revoke");
        let revoked = admin.post(&path, &[("csrf", &csrf)]).await;
        assert_eq!(revoked.status, StatusCode::SEE_OTHER, "{}", revoked.html);
        assert_eq!(
            api.call_as(&token, "GET", "/v1/links").await.status,
            StatusCode::UNAUTHORIZED
        );
        assert!(admin.get("/o/acme/keys").await.html.contains("revoked "));
        t.cleanup().await;
    }
}

#[tokio::test]
async fn an_operator_bans_lifts_disables_a_domain_and_a_user_and_nobody_else_can() {
    for (api, t) in apis("dash-admin").await {
        let accounts = api.state.accounts.clone();
        accounts
            .create_user("op@hop.example", PASSWORD, true)
            .await
            .expect("operator");
        member(&api, "ada@acme.example", "acme", Role::Admin).await;
        let key = api.key("acme", false).await;
        let mut ada = Browser::new(&api);
        ada.sign_in("ada@acme.example", PASSWORD).await;
        for path in ["/admin", "/admin/bans", "/admin/domains", "/admin/users"] {
            assert_eq!(ada.get(path).await.status, StatusCode::NOT_FOUND, "{path}");
        }
        let ada_csrf = ada.get("/o/acme/links").await.csrf();
        let forged = ada
            .post(
                "/admin/bans",
                &[
                    ("csrf", &ada_csrf),
                    ("kind", "host"),
                    ("host", "x.example"),
                    ("reason", "r"),
                ],
            )
            .await;
        assert_eq!(forged.status, StatusCode::NOT_FOUND);

        let mut op = Browser::new(&api);
        op.sign_in("op@hop.example", PASSWORD).await;
        let home = op.get("/admin").await;
        assert_eq!(home.status, StatusCode::OK, "{}", home.html);
        assert!(home.html.contains("Refused by the edge"));
        let csrf = home.csrf();
        let retried = op.post("/admin/outbox/retry", &[("csrf", &csrf)]).await;
        assert!(
            retried.html.contains("0 put back in line"),
            "{}",
            retried.html
        );

        // A ban needs its reason; made, it is the API's ban too, and lifted the same.
        let refused = op
            .post(
                "/admin/bans",
                &[
                    ("csrf", &csrf),
                    ("kind", "host"),
                    ("host", "evil.example"),
                    ("reason", " "),
                ],
            )
            .await;
        assert_eq!(
            refused.status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{} {}",
            t.kind(),
            refused.html
        );
        assert!(
            refused.html.contains("value=\"evil.example\""),
            "the form is kept"
        );
        let banned = op
            .post(
                "/admin/bans",
                &[
                    ("csrf", &csrf),
                    ("kind", "host"),
                    ("host", "evil.example"),
                    ("reason", "phishing kit"),
                ],
            )
            .await;
        assert_eq!(banned.status, StatusCode::SEE_OTHER, "{}", banned.html);
        let ops_key = api.key("ops", true).await;
        let listed = api.call_as(&ops_key, "GET", "/v1/bans").await;
        let id = listed
            .body
            .as_array()
            .and_then(|a| a.iter().find(|b| b["host"] == "evil.example"))
            .map(|b| b["id"].clone())
            .unwrap_or_else(|| panic!("the ban is listed: {}", listed.text));
        assert!(
            listed.text.contains("user:op@hop.example"),
            "who banned: {}",
            listed.text
        );
        let made = api
            .create(&key, json!({"target_url": "https://evil.example/x"}))
            .await;
        assert!(made.text.contains("the host is banned"), "{}", made.text);
        let lifted = op
            .post(&format!("/admin/bans/{id}/lift"), &[("csrf", &csrf)])
            .await;
        assert_eq!(lifted.status, StatusCode::SEE_OTHER);
        let made = api
            .create(&key, json!({"target_url": "https://evil.example/x"}))
            .await;
        assert_eq!(made.status, StatusCode::CREATED, "{}", made.text);

        // Disabling a domain: it takes no new link; a stale page changes nothing.
        let page = op.get("/admin/domains").await;
        let version = page
            .html
            .split("/admin/domains/s.example\"")
            .nth(1)
            .and_then(|rest| rest.split("name=\"version\" value=\"").nth(1))
            .and_then(|rest| rest.split('"').next())
            .expect("the domain's version")
            .to_owned();
        let off = [
            ("csrf", csrf.as_str()),
            ("version", version.as_str()),
            ("shared", "1"),
            ("default_redirect", "302"),
            ("forward_query", "1"),
        ];
        let saved = op.post("/admin/domains/s.example", &off).await;
        assert_eq!(saved.status, StatusCode::SEE_OTHER, "{}", saved.html);
        let made = api
            .create(&key, json!({"target_url": "https://shop.example/"}))
            .await;
        assert_eq!(
            made.status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{}",
            made.text
        );
        assert!(made.text.contains("disabled"));
        let stale = op.post("/admin/domains/s.example", &off).await;
        assert_eq!(stale.status, StatusCode::CONFLICT, "{}", stale.html);

        // Disabling a user ends their sessions at once.
        let users = op.get("/admin/users").await;
        assert!(users.html.contains("acme (admin)"), "{}", users.html);
        let out = op
            .post(
                "/admin/users/disable",
                &[("csrf", &csrf), ("email", "ada@acme.example")],
            )
            .await;
        assert_eq!(out.status, StatusCode::SEE_OTHER);
        assert_eq!(ada.get("/o/acme/links").await.location(), "/login");
        t.cleanup().await;
    }
}

#[tokio::test]
async fn assets_travel_compressed_and_pages_never_do() {
    for (api, t) in apis("dash-gzip").await {
        member(&api, "vic@acme.example", "acme", Role::Viewer).await;
        let mut browser = Browser::new(&api);
        browser.headers.push(("accept-encoding", "gzip".into()));
        let htmx = browser.get("/assets/htmx.min.js").await;
        assert_eq!(htmx.status, StatusCode::OK);
        assert_eq!(
            htmx.headers
                .get(header::CONTENT_ENCODING)
                .map(|v| v.as_bytes()),
            Some(&b"gzip"[..]),
            "{}",
            t.kind()
        );
        // A page carries the session's form token beside what the visitor typed: it is
        // sent as it is, so its length tells nothing of the token (BREACH).
        browser.sign_in("vic@acme.example", PASSWORD).await;
        let page = browser.get("/o/acme/links?q=abc").await;
        assert_eq!(page.status, StatusCode::OK);
        assert!(page.headers.get(header::CONTENT_ENCODING).is_none());
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

/// An account an owner's invitation made had its password chosen by whoever opened the
/// link (that owner's admin, say, for anyone's email): the operator's grant of another
/// owner's rights to it is refused, naming where it came from, unless the operator says
/// they know who holds it. Within the inviting owner, and for accounts an operator
/// made, grants go on as before.
#[tokio::test]
async fn an_account_another_owners_invitation_made_is_not_granted_by_a_slip() {
    for (api, t) in apis("dash-squatting").await {
        let accounts = api.state.accounts.clone();
        let admin = member(&api, "mallory@acme.example", "acme", Role::Admin).await;
        // Acme's admin invites the CFO of globex and opens the link himself.
        let invited = accounts
            .invite("acme", Role::Viewer, "cfo@globex.example", &admin.user_id)
            .await
            .expect("invited");
        accounts
            .accept(&invited.token, "mallorys own passphrase", None)
            .await
            .expect("accepted");
        let cfo = accounts.user("cfo@globex.example").await.expect("made");
        let refused = accounts
            .grant(&cfo, "globex", Role::Admin, false)
            .await
            .expect_err("refused");
        let said = refused.to_string();
        assert!(
            said.contains("invitation of acme") && said.contains(&admin.user_id),
            "{said}"
        );
        assert!(
            api.count("memberships WHERE owner_id = 'globex'").await == 0,
            "{}",
            t.kind()
        );
        // Its own owner may change its role; an operator who knows may grant it.
        accounts
            .grant(&cfo, "acme", Role::Editor, false)
            .await
            .expect("the inviting owner");
        accounts
            .grant(&cfo, "globex", Role::Admin, true)
            .await
            .expect("trusted");
        // An account an operator made carries no such record.
        let made = accounts
            .create_user("ops@globex.example", PASSWORD, false)
            .await
            .expect("made");
        accounts
            .grant(&made, "globex", Role::Admin, false)
            .await
            .expect("an operator's account");
        t.cleanup().await;
    }
}

/// Makes a key in the dashboard as `browser`'s admin of `owner`; its token.
async fn dashboard_key(browser: &mut Browser<'_>, owner: &str, name: &str) -> String {
    let page = browser.get(&format!("/o/{owner}/keys")).await;
    let csrf = page.csrf();
    let made = browser
        .post(
            &format!("/o/{owner}/keys"),
            &[("csrf", &csrf), ("name", name)],
        )
        .await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.html);
    made.html
        .split("aria-label=\"The new key\" readonly value=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .expect("the token, shown once")
        .to_owned()
}

/// A key made in the dashboard ends when its maker loses access: removed from the
/// owner, their keys for it stop (a departing member may have kept a copy), the other
/// admins' go on; disabled, every key they made stops.
#[tokio::test]
async fn keys_made_in_the_dashboard_end_when_their_maker_loses_access() {
    for (api, t) in apis_with("dash-key-makers", &["--key-hold", "0"]).await {
        member(&api, "ada@acme.example", "acme", Role::Admin).await;
        member(&api, "bo@acme.example", "acme", Role::Admin).await;
        let mut ada = Browser::new(&api);
        ada.sign_in("ada@acme.example", PASSWORD).await;
        let adas = dashboard_key(&mut ada, "acme", "Ada's sync").await;
        let mut bo = Browser::new(&api);
        bo.sign_in("bo@acme.example", PASSWORD).await;
        let bos = dashboard_key(&mut bo, "acme", "Bo's sync").await;
        for token in [&adas, &bos] {
            assert_eq!(
                api.call_as(token, "GET", "/v1/links").await.status,
                StatusCode::OK
            );
        }
        let accounts = api.state.accounts.clone();
        accounts
            .remove_member("acme", "ada@acme.example")
            .await
            .expect("removed");
        assert_eq!(
            api.call_as(&adas, "GET", "/v1/links").await.status,
            StatusCode::UNAUTHORIZED,
            "{}",
            t.kind()
        );
        assert_eq!(
            api.call_as(&bos, "GET", "/v1/links").await.status,
            StatusCode::OK
        );
        let bo_user = accounts.user("bo@acme.example").await.expect("bo");
        accounts.disable(&bo_user).await.expect("disabled");
        assert_eq!(
            api.call_as(&bos, "GET", "/v1/links").await.status,
            StatusCode::UNAUTHORIZED
        );
        t.cleanup().await;
    }
}

/// The keys of a member removed on the members page stop at once in this origin, though
/// it holds verified keys (`--key-hold`, 10 s by default) so they need no read: the
/// removal tells the holder, not only the database.
#[tokio::test]
async fn a_removed_members_keys_stop_at_once_though_the_origin_holds_them() {
    for (api, t) in apis("dash-key-held").await {
        member(&api, "ada@acme.example", "acme", Role::Admin).await;
        member(&api, "bo@acme.example", "acme", Role::Admin).await;
        let mut bo = Browser::new(&api);
        bo.sign_in("bo@acme.example", PASSWORD).await;
        let bos = dashboard_key(&mut bo, "acme", "Bo's sync").await;
        // Verified once, so held.
        assert_eq!(
            api.call_as(&bos, "GET", "/v1/links").await.status,
            StatusCode::OK
        );
        let mut ada = Browser::new(&api);
        ada.sign_in("ada@acme.example", PASSWORD).await;
        let csrf = ada.get("/o/acme/members").await.csrf();
        let removed = ada
            .set_role("acme", &csrf, "bo@acme.example", "remove")
            .await;
        assert_eq!(removed.status, StatusCode::SEE_OTHER, "{}", removed.html);
        assert_eq!(
            api.call_as(&bos, "GET", "/v1/links").await.status,
            StatusCode::UNAUTHORIZED,
            "{}",
            t.kind()
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

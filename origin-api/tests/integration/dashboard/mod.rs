//! The dashboard as a browser sees it: signing in and out, sessions, and the checks a
//! post must pass. Each test attacks one promise of docs/dashboard.md, on both
//! databases, through the dashboard's real router.
//!
//! The browser and its helpers are here; the tests, one file per part of the dashboard.

mod analytics;
mod keys;
mod links;
mod lists;
mod members;
mod operators;
mod sessions;

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

/// The invitation link a members page shows, as a path.
fn invitation_path(page: &Page) -> String {
    let at = page.html.find("/invite/").expect("an invitation link");
    page.html[at..at + "/invite/".len() + 64].to_owned()
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

/// The selection value the list page gives a link: `domain/code@version`.
fn selection(page: &Page, route: &str) -> String {
    let at = page
        .html
        .find(&format!("value=\"{route}@"))
        .unwrap_or_else(|| panic!("{route} is listed: {}", page.html));
    let rest = &page.html[at + "value=\"".len()..];
    rest[..rest.find('"').expect("closing quote")].to_owned()
}

/// A click on `link` made `ago_ms` before now.
fn click_ago(id: &str, link: &str, ago_ms: i64) -> Value {
    let mut c = click(id, link, "NL", false);
    c["at"] = json!(origin_api::model::time::now_ms() - ago_ms);
    c
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

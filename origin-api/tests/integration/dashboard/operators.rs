//! The operator's pages, and how pages and assets travel.

use super::*;

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

/// A failure's page names the request its log line names and shows nothing internal;
/// every answer carries its request id; the dashboard's routes are counted by template
/// as the API's are.
#[tokio::test]
async fn a_failure_names_its_request_and_the_dashboards_routes_are_counted() {
    for (api, t) in apis("dash-failure").await {
        member(&api, "ana@acme.example", "acme", Role::Admin).await;
        let mut browser = Browser::new(&api);
        browser.sign_in("ana@acme.example", PASSWORD).await;
        let id_of = |page: &Page| {
            page.headers
                .get("x-request-id")
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .to_owned()
        };
        let keys = browser.get("/o/acme/keys").await;
        assert_eq!(keys.status, StatusCode::OK, "{}", keys.html);
        let first = id_of(&keys);
        assert_eq!(first.len(), 16, "{:?}", keys.headers);

        api.exec("DROP TABLE api_keys").await;
        let failed = browser.get("/o/acme/keys").await;
        assert_eq!(
            failed.status,
            StatusCode::INTERNAL_SERVER_ERROR,
            "{}: {}",
            t.kind(),
            failed.html
        );
        let id = id_of(&failed);
        assert!(id.len() == 16 && id != first, "{:?}", failed.headers);
        assert!(failed.html.contains(&id), "{}", failed.html);
        assert!(!failed.html.contains("api_keys"), "{}", failed.html);

        let metrics = api.metrics().await;
        let counted = |status: &str| {
            metrics.lines().any(|l| {
                l.starts_with("hop_api_responses_total{")
                    && l.contains("route=\"/o/{owner}/keys\"")
                    && l.contains(&format!("status=\"{status}\""))
            })
        };
        assert!(counted("200") && counted("500"), "{metrics}");
        t.cleanup().await;
    }
}

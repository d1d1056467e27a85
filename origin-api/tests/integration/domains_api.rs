//! The domain registry through the real router, on every database available: admin
//! keys register domains with their settings, each field checked; every key sees the
//! domains it may use and no other; a fresh install has its default domain registered.

use crate::common::{apis, settings, TestDb};
use axum::http::StatusCode;
use origin_api::store::DomainStore;
use serde_json::{json, Value};

fn names(body: &Value) -> Vec<&str> {
    body.as_array()
        .expect("a list")
        .iter()
        .map(|d| d["domain"].as_str().expect("a name"))
        .collect()
}

#[tokio::test]
async fn an_admin_registers_a_domain_with_its_settings_and_keys_see_only_what_they_may_use() {
    for (api, t) in apis("domains-register").await {
        let admin = api.key("ops", true).await;
        let acme = api.key("acme", false).await;
        let other = api.key("other", false).await;

        let brand = json!({
            "domain": "Go.Acme.Example.",
            "owners": ["acme", "acme-eu", "acme"],
            "alphabet": "base36",
            "code_length": 6,
            "case_insensitive": true,
            "forward_query": true,
            "default_redirect": 307,
            "max_age_s": 300,
            "not_found_url": "https://acme.example/missing",
            "root_url": "https://acme.example/",
            "expired_url": "https://acme.example/expired",
            "allowed_target_hosts": ["ACME.example", "acme.test"],
        });
        // Only an admin key registers.
        let refused = api.post_json(&acme, "/v1/domains", &brand).await;
        assert_eq!(refused.status, StatusCode::FORBIDDEN, "{}", refused.text);
        let made = api.post_json(&admin, "/v1/domains", &brand).await;
        assert_eq!(
            made.status,
            StatusCode::CREATED,
            "{}: {}",
            t.kind(),
            made.text
        );
        assert_eq!(made.headers["etag"], "\"1\"");
        let view = &made.body;
        assert_eq!(view["domain"], "go.acme.example");
        assert_eq!(view["shared"], false);
        assert_eq!(view["owners"], json!(["acme", "acme-eu"]));
        assert_eq!(view["status"], "active");
        assert_eq!(
            (
                &view["alphabet"],
                &view["code_length"],
                &view["case_insensitive"]
            ),
            (&json!("base36"), &json!(6), &json!(true))
        );
        assert_eq!(
            (
                &view["forward_query"],
                &view["default_redirect"],
                &view["max_age_s"]
            ),
            (&json!(true), &json!(307), &json!(300))
        );
        assert_eq!(view["not_found_url"], "https://acme.example/missing");
        assert_eq!(
            view["allowed_target_hosts"],
            json!(["acme.example", "acme.test"])
        );
        assert_eq!(view["version"], 1);

        // The same name again, in another spelling: 409, and the first registration
        // stands.
        let again = api
            .post_json(
                &admin,
                "/v1/domains",
                &json!({"domain": "go.acme.example", "shared": true}),
            )
            .await;
        assert_eq!(again.status, StatusCode::CONFLICT, "{}", again.text);
        assert!(again.text.contains("domain-registered"), "{}", again.text);

        let shared = api
            .post_json(
                &admin,
                "/v1/domains",
                &json!({"domain": "s.example", "shared": true}),
            )
            .await;
        assert_eq!(shared.status, StatusCode::CREATED, "{}", shared.text);
        assert_eq!(shared.body["alphabet"], "base62");
        assert_eq!(shared.body["code_length"], 7);
        assert_eq!(shared.body["max_age_s"], 60);
        assert_eq!(shared.body["default_redirect"], 302);

        let all = api.call_as(&admin, "GET", "/v1/domains").await;
        assert_eq!(names(&all.body), ["go.acme.example", "s.example"]);
        let mine = api.call_as(&acme, "GET", "/v1/domains").await;
        assert_eq!(names(&mine.body), ["go.acme.example", "s.example"]);
        let theirs = api.call_as(&other, "GET", "/v1/domains").await;
        assert_eq!(names(&theirs.body), ["s.example"]);

        let read = api
            .call_as(&acme, "GET", "/v1/domains/GO.acme.example")
            .await;
        assert_eq!(read.status, StatusCode::OK, "{}", read.text);
        assert_eq!(&read.body, view);
        // Another owner's domain is not even said to exist.
        let hidden = api
            .call_as(&other, "GET", "/v1/domains/go.acme.example")
            .await;
        assert_eq!(hidden.status, StatusCode::NOT_FOUND, "{}", hidden.text);
        let nowhere = api
            .call_as(&admin, "GET", "/v1/domains/nowhere.example")
            .await;
        assert_eq!(nowhere.status, StatusCode::NOT_FOUND);
        t.cleanup().await;
    }
}

#[tokio::test]
async fn every_bad_field_is_refused_naming_it_and_registers_nothing() {
    for (api, t) in apis("domains-invalid").await {
        let admin = api.key("ops", true).await;
        let ok = |more: Value| {
            let mut body = json!({"domain": "b.example", "shared": true});
            for (k, v) in more.as_object().expect("object") {
                body[k] = v.clone();
            }
            body
        };
        let cases = [
            ("domain", json!({"domain": "10.0.0.1", "shared": true})),
            ("domain", json!({"domain": "not a host", "shared": true})),
            ("owners", json!({"domain": "b.example"})),
            (
                "owners",
                json!({"domain": "b.example", "shared": false, "owners": []}),
            ),
            (
                "owners",
                json!({"domain": "b.example", "shared": true, "owners": ["acme"]}),
            ),
            ("owners", json!({"domain": "b.example", "owners": [""]})),
            ("alphabet", ok(json!({"alphabet": "base64"}))),
            ("code_length", ok(json!({"code_length": 3}))),
            ("code_length", ok(json!({"code_length": 11}))),
            ("case_insensitive", ok(json!({"case_insensitive": true}))),
            ("default_redirect", ok(json!({"default_redirect": 303}))),
            ("max_age_s", ok(json!({"max_age_s": -1}))),
            ("max_age_s", ok(json!({"max_age_s": 3601}))),
            ("status", ok(json!({"status": "paused"}))),
            (
                "not_found_url",
                ok(json!({"not_found_url": "ftp://files.example/"})),
            ),
            ("root_url", ok(json!({"root_url": "http://10.1.2.3/"}))),
            // A redirect of the domain to itself would loop.
            (
                "expired_url",
                ok(json!({"expired_url": "https://b.example/x"})),
            ),
            (
                "allowed_target_hosts",
                ok(json!({"allowed_target_hosts": []})),
            ),
            (
                "allowed_target_hosts",
                ok(json!({"allowed_target_hosts": ["127.0.0.1"]})),
            ),
        ];
        for (field, body) in cases {
            let res = api.post_json(&admin, "/v1/domains", &body).await;
            assert_eq!(
                res.status,
                StatusCode::UNPROCESSABLE_ENTITY,
                "{}: {body}: {}",
                t.kind(),
                res.text
            );
            assert!(
                res.text.contains(field),
                "{body} should name {field}: {}",
                res.text
            );
        }
        let unknown = api
            .post_json(&admin, "/v1/domains", &ok(json!({"colour": "blue"})))
            .await;
        assert!(unknown.status.is_client_error(), "{}", unknown.text);
        assert_eq!(api.count("domains").await, 0, "{}", t.kind());
        assert_eq!(api.count("domain_owners").await, 0, "{}", t.kind());
        t.cleanup().await;
    }
}

#[tokio::test]
async fn a_fresh_install_has_its_default_domain_registered_shared_once() {
    let t = TestDb::sqlite().await;
    let mut s = settings(&t.url);
    s.default_domain = "go.fresh.example".into();
    let db = origin_api::prepare(&s).await.expect("prepare");
    // A second start finds it and changes nothing.
    let again = origin_api::prepare(&s).await.expect("prepare again");
    let domains = again.list_domains().await.expect("list");
    assert_eq!(domains.len(), 1, "{domains:?}");
    let d = &domains[0];
    assert_eq!(d.domain, "go.fresh.example");
    assert_eq!(d.access, origin_api::model::DomainAccess::Shared);
    assert_eq!(d.settings, shared::DomainSettings::default());
    db.close().await;
    again.close().await;
    t.cleanup().await;
}

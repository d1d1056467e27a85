//! The domain registry through the real router, on every database available: admin
//! keys register domains with their settings, each field checked; every key sees the
//! domains it may use and no other; a fresh install has its default domain registered.

use crate::common::{apis, settings, TestDb};
use axum::http::StatusCode;
use hop_e2e::poll;
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
                &json!({"domain": "shared.example", "shared": true}),
            )
            .await;
        assert_eq!(shared.status, StatusCode::CREATED, "{}", shared.text);
        assert_eq!(shared.body["alphabet"], "base62");
        assert_eq!(shared.body["code_length"], 7);
        assert_eq!(shared.body["max_age_s"], 60);
        assert_eq!(shared.body["default_redirect"], 302);

        // s.example is the test origin's default domain, registered shared at startup.
        let all = api.call_as(&admin, "GET", "/v1/domains").await;
        let everyone = ["go.acme.example", "s.example", "shared.example"];
        assert_eq!(names(&all.body), everyone);
        let mine = api.call_as(&acme, "GET", "/v1/domains").await;
        assert_eq!(names(&mine.body), everyone);
        let theirs = api.call_as(&other, "GET", "/v1/domains").await;
        assert_eq!(names(&theirs.body), ["s.example", "shared.example"]);

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
        // Only the default domain, registered at startup.
        assert_eq!(api.count("domains").await, 1, "{}", t.kind());
        assert_eq!(api.count("domain_owners").await, 0, "{}", t.kind());
        t.cleanup().await;
    }
}

#[tokio::test]
async fn a_fresh_install_has_its_default_domain_registered_shared_once() {
    let dir = tempfile::tempdir().expect("temp dir");
    let url = format!("sqlite://{}", dir.path().join("fresh.db").display());
    let mut s = settings(&url);
    s.default_domain = "go.fresh.example".into();
    let db = origin_api::prepare(&s).await.expect("prepare");
    // A second start finds it and changes nothing.
    let again = origin_api::prepare(&s).await.expect("prepare again");
    let domains = origin_api::store::domains::list(&again)
        .await
        .expect("list");
    assert_eq!(domains.len(), 1, "{domains:?}");
    let d = &domains[0];
    assert_eq!(d.domain, "go.fresh.example");
    assert_eq!(d.access, origin_api::model::DomainAccess::Shared);
    assert_eq!(d.settings, shared::DomainSettings::default());
    db.close().await;
    again.close().await;
}

#[tokio::test]
async fn changes_need_the_current_version_and_a_domain_with_links_keeps_its_code_shape() {
    for (api, t) in apis("domains-update").await {
        let admin = api.key("ops", true).await;
        let acme = api.key("acme", false).await;
        let made = api
            .post_json(
                &admin,
                "/v1/domains",
                &json!({"domain": "go.acme.example", "owners": ["acme"], "root_url": "https://acme.example/"}),
            )
            .await;
        assert_eq!(made.status, StatusCode::CREATED, "{}", made.text);
        let path = "/v1/domains/go.acme.example";

        let change = json!({"alphabet": "base36", "code_length": 6, "case_insensitive": true, "root_url": null});
        assert_eq!(
            api.patch_json(&acme, path, Some("\"1\""), change.clone())
                .await
                .status,
            StatusCode::FORBIDDEN
        );
        assert_eq!(
            api.patch_json(&admin, path, None, change.clone())
                .await
                .status,
            StatusCode::PRECONDITION_REQUIRED
        );
        assert_eq!(
            api.patch_json(&admin, path, Some("\"7\""), change.clone())
                .await
                .status,
            StatusCode::PRECONDITION_FAILED
        );
        // A change no version would take is refused as such, whichever version it names.
        for invalid in [
            json!({"status": "paused"}),
            json!({"code_length": 2}),
            json!({"max_age_s": 86_400}),
        ] {
            let refused = api
                .patch_json(&admin, path, Some("\"7\""), invalid.clone())
                .await;
            assert_eq!(
                refused.status,
                StatusCode::UNPROCESSABLE_ENTITY,
                "{invalid}: {}",
                refused.text
            );
        }
        // While no link lives on it, even its code shape may change; null clears a URL.
        let changed = api
            .patch_json(&admin, path, Some("\"1\""), change.clone())
            .await;
        assert_eq!(
            changed.status,
            StatusCode::OK,
            "{}: {}",
            t.kind(),
            changed.text
        );
        assert_eq!(changed.headers["etag"], "\"2\"");
        assert_eq!(
            (&changed.body["alphabet"], &changed.body["code_length"]),
            (&json!("base36"), &json!(6))
        );
        assert_eq!(changed.body["root_url"], Value::Null);
        assert_eq!(changed.body["owners"], json!(["acme"]));
        assert_eq!(changed.body["created_at"], made.body["created_at"]);
        // The version read before is stale now.
        let stale = api
            .patch_json(&admin, path, Some("\"1\""), json!({"max_age_s": 10}))
            .await;
        assert_eq!(
            stale.status,
            StatusCode::PRECONDITION_FAILED,
            "{}",
            stale.text
        );
        let bad = api
            .patch_json(
                &admin,
                path,
                Some("\"2\""),
                json!({"case_insensitive": true, "alphabet": "base62"}),
            )
            .await;
        assert_eq!(bad.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", bad.text);

        // A link lives on it: the shape is fixed, everything else may change.
        let link = api
            .create(&acme, json!({"target_url": "https://acme.example/a", "domain": "go.acme.example", "code": "promo-1"}))
            .await;
        assert_eq!(link.status, StatusCode::CREATED, "{}", link.text);
        let fixed = api
            .patch_json(&admin, path, Some("\"2\""), json!({"code_length": 8}))
            .await;
        assert_eq!(fixed.status, StatusCode::CONFLICT, "{}", fixed.text);
        assert!(fixed.text.contains("domain-in-use"), "{}", fixed.text);
        let shared = api
            .patch_json(
                &admin,
                path,
                Some("\"2\""),
                json!({"shared": true, "max_age_s": 10}),
            )
            .await;
        assert_eq!(shared.status, StatusCode::OK, "{}", shared.text);
        assert_eq!(
            (
                &shared.body["shared"],
                &shared.body["owners"],
                &shared.body["version"]
            ),
            (&json!(true), &json!([]), &json!(3))
        );
        let other = api.key("other", false).await;
        let theirs = api.call_as(&other, "GET", "/v1/domains").await;
        assert_eq!(
            names(&theirs.body),
            ["go.acme.example", "s.example"],
            "shared now"
        );

        // A domain that holds links is disabled, not removed.
        let refused = api.call_as(&admin, "DELETE", path).await;
        assert_eq!(refused.status, StatusCode::CONFLICT, "{}", refused.text);
        assert!(
            refused.text.contains("disable it instead"),
            "{}",
            refused.text
        );
        t.cleanup().await;
    }
}

#[tokio::test]
async fn an_empty_domain_is_removed_but_the_default_domain_never() {
    for (api, t) in apis("domains-delete").await {
        let admin = api.key("ops", true).await;
        let body = json!({"domain": "old.example", "owners": ["acme"]});
        let made = api.post_json(&admin, "/v1/domains", &body).await;
        assert_eq!(made.status, StatusCode::CREATED, "{}", made.text);
        let acme = api.key("acme", false).await;
        assert_eq!(
            api.call_as(&acme, "DELETE", "/v1/domains/old.example")
                .await
                .status,
            StatusCode::FORBIDDEN
        );
        // s.example is the test origin's --default-domain.
        let default = api.call_as(&admin, "DELETE", "/v1/domains/s.example").await;
        assert_eq!(default.status, StatusCode::CONFLICT, "{}", default.text);
        let gone = api
            .call_as(&admin, "DELETE", "/v1/domains/old.example")
            .await;
        assert_eq!(
            gone.status,
            StatusCode::NO_CONTENT,
            "{}: {}",
            t.kind(),
            gone.text
        );
        assert_eq!(
            api.call_as(&admin, "DELETE", "/v1/domains/old.example")
                .await
                .status,
            StatusCode::NOT_FOUND
        );
        assert_eq!(api.count("domain_owners").await, 0, "{}", t.kind());
        assert_eq!(
            names(&api.call_as(&admin, "GET", "/v1/domains").await.body),
            ["s.example"]
        );
        t.cleanup().await;
    }
}

/// Found by schemathesis: serde reads a struct from a JSON array too, so `[null, null]`
/// was a change and `["https://…"]` a link. Every body is an object, or 422.
#[tokio::test]
async fn a_body_that_is_not_a_json_object_is_refused_and_changes_nothing() {
    let t = TestDb::sqlite().await;
    let api = crate::common::Api::of(&t);
    let admin = api.key("ops", true).await;
    let change = api
        .patch_json(
            &admin,
            "/v1/domains/s.example",
            Some("\"1\""),
            json!([null, null]),
        )
        .await;
    assert_eq!(
        change.status,
        StatusCode::UNPROCESSABLE_ENTITY,
        "{}",
        change.text
    );
    let link = api.create(&admin, json!(["https://dest.example/"])).await;
    assert_eq!(
        link.status,
        StatusCode::UNPROCESSABLE_ENTITY,
        "{}",
        link.text
    );
    let domain = api
        .post_json(&admin, "/v1/domains", &json!(["b.example", true]))
        .await;
    assert_eq!(
        domain.status,
        StatusCode::UNPROCESSABLE_ENTITY,
        "{}",
        domain.text
    );
    assert_eq!(api.count("links").await, 0);
    assert_eq!(api.count("domains").await, 1);
    let read = api.call_as(&admin, "GET", "/v1/domains/s.example").await;
    assert_eq!(read.body["version"], 1, "{}", read.text);
    t.cleanup().await;
}

/// The registry decides where links may be created: an unregistered domain is 422
/// naming the field, another owner's 403, a key limited to other domains 403, a
/// disabled domain 422; admin keys may use every domain; an allowlist of target hosts
/// holds; and a target on a served domain or under one is a loop. Single and bulk
/// creates alike, and nothing refused is stored.
#[tokio::test]
async fn links_are_created_only_where_the_registry_allows_the_key() {
    for (api, t) in apis("domain-rules").await {
        let admin = api.key("ops", true).await;
        let acme = api.key("acme", false).await;
        let other = api.key("other", false).await;
        let acme_default_only = api.key_limited_to("acme", &["s.example"]).await;
        let brand = json!({
            "domain": "go.acme.example",
            "owners": ["acme"],
            "allowed_target_hosts": ["acme.example"],
        });
        let made = api.post_json(&admin, "/v1/domains", &brand).await;
        assert_eq!(made.status, StatusCode::CREATED, "{}", made.text);
        let on = |domain: &str, target: &str| json!({"domain": domain, "target_url": target});
        let shop = "https://shop.acme.example/spring";

        let refused = [
            (
                &acme,
                on("nowhere.example", shop),
                StatusCode::UNPROCESSABLE_ENTITY,
                "not a registered domain",
            ),
            (
                &other,
                on("go.acme.example", shop),
                StatusCode::FORBIDDEN,
                "other owners",
            ),
            (
                &acme_default_only,
                on("go.acme.example", shop),
                StatusCode::FORBIDDEN,
                "limited to other domains",
            ),
            (
                &acme,
                on("go.acme.example", "https://elsewhere.example/"),
                StatusCode::UNPROCESSABLE_ENTITY,
                "may point only at acme.example",
            ),
            (
                &acme,
                on("s.example", "https://x.go.acme.example/"),
                StatusCode::UNPROCESSABLE_ENTITY,
                "own domains",
            ),
        ];
        for (token, body, status, says) in &refused {
            let res = api.create(token, body.clone()).await;
            assert_eq!(res.status, *status, "{}: {body} {}", t.kind(), res.text);
            assert!(res.text.contains(says), "{body}: {}", res.text);
            if *status == StatusCode::UNPROCESSABLE_ENTITY {
                let field = if says.contains("registered") {
                    "domain"
                } else {
                    "target_url"
                };
                assert!(
                    res.text.contains(field),
                    "{body} names {field}: {}",
                    res.text
                );
            }
        }
        assert_eq!(api.count("links").await, 0, "{}", t.kind());

        for (token, body) in [
            (&acme, on("go.acme.example", shop)),
            (&admin, on("go.acme.example", "https://acme.example/")),
            (
                &acme_default_only,
                on("s.example", "https://elsewhere.example/"),
            ),
        ] {
            let res = api.create(token, body.clone()).await;
            assert_eq!(
                res.status,
                StatusCode::CREATED,
                "{}: {body} {}",
                t.kind(),
                res.text
            );
        }

        // Bulk: each item judged by the same rules, in its place.
        let bulk = api
            .post_json(
                &other,
                "/v1/links/bulk",
                &json!({"links": [
                    on("nowhere.example", shop),
                    on("go.acme.example", shop),
                    on("s.example", "https://other.example/"),
                ]}),
            )
            .await;
        assert_eq!(bulk.status, StatusCode::OK, "{}", bulk.text);
        let results = bulk.body["results"].as_array().expect("results");
        let statuses: Vec<&Value> = results.iter().map(|r| &r["error"]["status"]).collect();
        assert_eq!(
            statuses,
            [&json!(422), &json!(403), &Value::Null],
            "{}",
            bulk.text
        );
        assert_eq!(results[2]["ok"], true);

        // A disabled domain takes no new links, not even an admin's.
        let disabled = api
            .patch_json(
                &admin,
                "/v1/domains/go.acme.example",
                Some("\"1\""),
                json!({"status": "disabled"}),
            )
            .await;
        assert_eq!(disabled.status, StatusCode::OK, "{}", disabled.text);
        for token in [&acme, &admin] {
            let res = api.create(token, on("go.acme.example", shop)).await;
            assert_eq!(res.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", res.text);
            assert!(res.text.contains("disabled"), "{}", res.text);
        }
        assert_eq!(api.count("links").await, 4, "{}", t.kind());
        t.cleanup().await;
    }
}

/// Links made before the registry keep redirecting after the upgrade: their domains are
/// registered at startup, for the owners of their links, and the default domain stays
/// open to every key.
#[tokio::test]
async fn an_upgrade_registers_the_domains_links_live_on_for_their_owners() {
    let t = TestDb::sqlite().await;
    let api = crate::common::Api::of(&t);
    crate::common::register(&t.db, "old.example").await;
    let acme = api.key("acme", false).await;
    let made = api
        .create(
            &acme,
            json!({"domain": "old.example", "target_url": "https://e.example/", "code": "kept"}),
        )
        .await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.text);
    // As the database was before the registry: links, and no row for their domain.
    api.exec("DELETE FROM domains WHERE domain = 'old.example'")
        .await;

    let db = origin_api::prepare(&settings(&t.url))
        .await
        .expect("prepare");
    let d = origin_api::store::domains::get(&db, "old.example")
        .await
        .expect("read")
        .expect("registered");
    assert_eq!(
        d.access,
        origin_api::model::DomainAccess::Owners(vec!["acme".into()])
    );
    assert_eq!(d.settings, shared::DomainSettings::default());
    db.close().await;
    assert_eq!(
        api.visit("GET", "old.example", "/kept").await.status,
        StatusCode::FOUND
    );
    let other = api.key("other", false).await;
    let squat = api
        .create(
            &other,
            json!({"domain": "old.example", "target_url": "https://e.example/"}),
        )
        .await;
    assert_eq!(squat.status, StatusCode::FORBIDDEN, "{}", squat.text);
    t.cleanup().await;
}

/// The origin's own redirect obeys a domain's settings as the edge does: its pages for
/// an unknown code, for `/` and for an expired link (302, never cached), its browser
/// caching, its case rule; and once disabled, 404 for everything on it.
#[tokio::test]
async fn a_domains_settings_decide_the_origins_own_redirect() {
    for (api, t) in apis("domain-pages").await {
        let admin = api.key("ops", true).await;
        let brand = json!({
            "domain": "go.acme.example",
            "shared": true,
            "alphabet": "base36",
            "code_length": 6,
            "case_insensitive": true,
            "max_age_s": 300,
            "not_found_url": "https://www.acme.example/missing",
            "root_url": "https://www.acme.example/",
            "expired_url": "https://www.acme.example/ended",
        });
        let made = api.post_json(&admin, "/v1/domains", &brand).await;
        assert_eq!(made.status, StatusCode::CREATED, "{}", made.text);
        let on = |more: Value| {
            let mut body =
                json!({"domain": "go.acme.example", "target_url": "https://acme.example/"});
            body.as_object_mut()
                .expect("object")
                .extend(more.as_object().expect("object").clone());
            body
        };
        let link = api.create(&admin, on(json!({}))).await;
        assert_eq!(link.status, StatusCode::CREATED, "{}", link.text);
        let code = link.body["code"].as_str().expect("code").to_owned();
        assert_eq!(code.len(), 6);
        let soon = (time::OffsetDateTime::now_utc() + time::Duration::seconds(2))
            .format(&time::format_description::well_known::Rfc3339)
            .expect("format");
        let ending = api
            .create(&admin, on(json!({"code": "Sale", "expires_at": soon})))
            .await;
        assert_eq!(ending.status, StatusCode::CREATED, "{}", ending.text);
        assert_eq!(ending.body["code"], "sale", "aliases are folded too");

        let host = "go.acme.example";
        let upper = format!("/{}", code.to_ascii_uppercase());
        let found = api.visit("GET", host, &upper).await;
        assert_eq!(found.status, StatusCode::FOUND, "{}", t.kind());
        assert_eq!(found.headers["location"], "https://acme.example/");
        assert_eq!(found.headers["cache-control"], "private, max-age=300");
        for (path, page) in [
            ("/nothing", "https://www.acme.example/missing"),
            ("/", "https://www.acme.example/"),
        ] {
            let res = api.visit("GET", host, path).await;
            assert_eq!(res.status, StatusCode::FOUND, "{path}");
            assert_eq!(res.headers["location"], page, "{path}");
            assert_eq!(res.headers["cache-control"], "no-store", "{path}");
        }
        // The default domain has no pages.
        assert_eq!(
            api.visit("GET", "s.example", "/").await.status,
            StatusCode::NOT_FOUND
        );
        assert_eq!(
            api.visit("HEAD", "s.example", "/").await.status,
            StatusCode::NOT_FOUND
        );
        assert_eq!(
            api.visit("POST", host, "/").await.status,
            StatusCode::METHOD_NOT_ALLOWED
        );

        // Once the alias has expired, its visitors go to the domain's page for it.
        let expired = poll("the alias expires")
            .within(std::time::Duration::from_secs(10))
            .every(std::time::Duration::from_millis(200))
            .until(|| async {
                let res = api.visit("GET", host, "/SALE").await;
                let still = res.status == StatusCode::FOUND
                    && res.headers["location"] == "https://acme.example/";
                (!still).then_some(res)
            })
            .await;
        assert_eq!(expired.status, StatusCode::FOUND, "{}", expired.text);
        assert_eq!(
            expired.headers["location"],
            "https://www.acme.example/ended"
        );

        let off = api
            .patch_json(
                &admin,
                "/v1/domains/go.acme.example",
                Some("\"1\""),
                json!({"status": "disabled"}),
            )
            .await;
        assert_eq!(off.status, StatusCode::OK, "{}", off.text);
        // At once: this origin's own change drops the settings it held.
        for path in [upper.as_str(), "/nothing", "/"] {
            let res = api.visit("GET", host, path).await;
            assert_eq!(res.status, StatusCode::NOT_FOUND, "{path}: {}", res.text);
            assert!(res.headers.get("location").is_none(), "{path}");
        }
        t.cleanup().await;
    }
}

/// Every change of a domain queues its settings for the edge (`cfg:{domain}`, fast
/// lane) in the same transaction, at versions that only grow: a removal queues a
/// disabled copy, and a name registered again goes on from there, so the edge never
/// refuses its new settings as older.
#[tokio::test]
async fn each_change_of_a_domain_queues_its_settings_for_the_edge_at_a_higher_version() {
    for (api, t) in apis("domain-cfg").await {
        let admin = api.key("ops", true).await;
        let cfg = || async {
            let rows: Vec<(String, i64, String)> = api
                .state
                .db()
                .read_all(
                    "SELECT lane, version, payload FROM outbox WHERE kind = 'cfg' \
                     AND route_key = 'b.example' ORDER BY seq",
                    &[],
                )
                .await
                .expect("outbox");
            rows
        };
        let body = json!({"domain": "b.example", "shared": true, "max_age_s": 5});
        assert_eq!(
            api.post_json(&admin, "/v1/domains", &body).await.status,
            StatusCode::CREATED
        );
        let changed = api
            .patch_json(
                &admin,
                "/v1/domains/b.example",
                Some("\"1\""),
                json!({"root_url": "https://b-corp.example/"}),
            )
            .await;
        assert_eq!(changed.status, StatusCode::OK, "{}", changed.text);
        assert_eq!(
            api.call_as(&admin, "DELETE", "/v1/domains/b.example")
                .await
                .status,
            StatusCode::NO_CONTENT
        );
        let again = api.post_json(&admin, "/v1/domains", &body).await;
        assert_eq!(again.status, StatusCode::CREATED, "{}", again.text);
        assert_eq!(again.body["version"], 4, "{}", again.text);
        assert_eq!(again.headers["etag"], "\"4\"");

        let rows = cfg().await;
        let versions: Vec<i64> = rows.iter().map(|(_, v, _)| *v).collect();
        assert_eq!(versions, [1, 2, 3, 4], "{}", t.kind());
        assert!(rows.iter().all(|(lane, ..)| lane == "fast"));
        let configs: Vec<shared::DomainConfig> = rows
            .iter()
            .map(|(_, _, p)| shared::DomainConfig::from_json(p).expect("a config"))
            .collect();
        assert_eq!(configs[0].settings.max_age_s, 5);
        assert_eq!(
            configs[1].settings.root_url.as_deref(),
            Some("https://b-corp.example/")
        );
        assert_eq!(configs[2].settings.status, shared::DomainStatus::Disabled);
        assert_eq!(configs[3].settings.status, shared::DomainStatus::Active);
        for (config, (_, v, _)) in configs.iter().zip(&rows) {
            assert_eq!(config.v as i64, *v);
            // The edge accepts each, over the one before.
            let item = shared::sync::SyncItem {
                key: "cfg:b.example".into(),
                value: config.to_json(),
                version: config.v,
                expiration: None,
            };
            assert_eq!(shared::sync::judge(&item, None), Ok(()));
        }
        t.cleanup().await;
    }
}

/// Domains registered before their settings were published get them queued at
/// startup, once.
#[tokio::test]
async fn a_start_queues_the_settings_of_domains_the_edge_never_got() {
    let t = TestDb::sqlite().await;
    // As a database from before: the default domain registered, no cfg row.
    t.db.write("DELETE FROM outbox WHERE kind = 'cfg'", &[])
        .await
        .expect("delete");
    let count = || async {
        let rows: Vec<(i64,)> =
            t.db.read_all(
                "SELECT version FROM outbox WHERE kind = 'cfg' AND route_key = 's.example'",
                &[],
            )
            .await
            .expect("count");
        rows.len()
    };
    assert_eq!(count().await, 0);
    for _ in 0..2 {
        let db = origin_api::prepare(&settings(&t.url))
            .await
            .expect("prepare");
        db.close().await;
        assert_eq!(count().await, 1);
    }
    t.cleanup().await;
}

#[tokio::test]
async fn a_brand_domains_visitors_see_its_name_and_colour_and_a_light_colour_is_refused() {
    for (api, t) in apis("domain-brand").await {
        let admin = api.key("ops", true).await;
        let light = json!({"domain": "go.acme.example", "shared": true,
            "brand": {"name": "Acme", "colour": "#ffcc00"}});
        let refused = api.post_json(&admin, "/v1/domains", &light).await;
        assert_eq!(
            refused.status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{}",
            refused.text
        );
        assert!(
            refused.text.contains("1.5:1") && refused.text.contains("4.5:1"),
            "{}",
            refused.text
        );
        let body = json!({"domain": "go.acme.example", "shared": true,
            "brand": {"name": "Acme <Shop>", "colour": "#8A1C1C"}});
        let made = api.post_json(&admin, "/v1/domains", &body).await;
        assert_eq!(made.status, StatusCode::CREATED, "{}", made.text);
        assert_eq!(
            made.body["brand"],
            json!({"name": "Acme <Shop>", "colour": "#8a1c1c"})
        );

        let page = api.visit("GET", "go.acme.example", "/nothing-here").await;
        assert_eq!(page.status, StatusCode::NOT_FOUND, "{}", t.kind());
        assert!(
            page.text
                .contains("<p class=\"brand\">Acme &lt;Shop&gt;</p>"),
            "{}",
            page.text
        );
        assert!(page.text.contains("a{color:#8a1c1c}"), "{}", page.text);
        // Another domain keeps Hop's look.
        let plain = api.visit("GET", "s.example", "/nothing-here").await;
        assert!(!plain.text.contains("class=\"brand\""));

        // null gives the domain Hop's look again.
        let cleared = api
            .patch_json(
                &admin,
                "/v1/domains/go.acme.example",
                Some("\"1\""),
                json!({"brand": null}),
            )
            .await;
        assert_eq!(cleared.status, StatusCode::OK, "{}", cleared.text);
        assert_eq!(cleared.body["brand"], Value::Null);
        let page = api.visit("GET", "go.acme.example", "/nothing-here").await;
        assert!(!page.text.contains("class=\"brand\""), "{}", page.text);
        t.cleanup().await;
    }
}

/// Changes domain `name` by `body`, at the version it is at now.
async fn change_domain(
    api: &crate::common::Api,
    admin: &str,
    name: &str,
    body: Value,
) -> crate::common::Reply {
    let path = format!("/v1/domains/{name}");
    let read = api.call_as(admin, "GET", &path).await;
    let etag = format!("\"{}\"", read.body["version"]);
    api.patch_json(admin, &path, Some(&etag), body).await
}

/// A domain moving from another shortener: while `legacy_url` is set and its end date
/// is ahead, a code with no link that is on the domain's legacy list goes to the same
/// code there (with the query), at the origin; any other code is not found (the old,
/// shared shortener is anyone's to make links on). Each visit sent on, the origin's own
/// and those the edge reports, is counted per code, and the codes are listed most
/// visited first until a link takes them. An interstitial domain shows its interstitial;
/// a banned code stays 403, the old shortener's host banned turns the fallback off, its
/// end date ends it by itself, and `null` ends it. The URL is held to the target policy
/// and must be a base.
#[tokio::test]
async fn a_moving_domain_sends_its_listed_old_codes_to_its_old_shortener_and_counts_them() {
    const EDGE: &str = "edge-legacy-token";
    for (api, t) in crate::common::apis_with("domain-legacy", &["--edge-token", EDGE]).await {
        let admin = api.key("ops", true).await;
        let body = json!({"domain": "go.acme.example", "owners": ["acme"]});
        let made = api.post_json(&admin, "/v1/domains", &body).await;
        assert_eq!(made.status, StatusCode::CREATED, "{}", made.text);
        for (bad, why) in [
            ("https://old.example/?x=1", "without a query"),
            ("https://go.acme.example", "own domains"),
            ("http://10.0.0.7", "links may point only at public hosts"),
            ("ftp://old.example", ""),
        ] {
            let refused = api
                .patch_json(
                    &admin,
                    "/v1/domains/go.acme.example",
                    Some("\"1\""),
                    json!({ "legacy_url": bad }),
                )
                .await;
            assert_eq!(
                refused.status,
                StatusCode::UNPROCESSABLE_ENTITY,
                "{bad}: {}",
                refused.text
            );
            assert!(
                refused.text.contains("legacy_url") && refused.text.contains(why),
                "{}",
                refused.text
            );
        }
        // A fallback must end: at most a year ahead.
        let forever = api
            .patch_json(
                &admin,
                "/v1/domains/go.acme.example",
                Some("\"1\""),
                json!({ "legacy_url": "https://old.example/s/", "legacy_until": "2999-01-01T00:00:00Z" }),
            )
            .await;
        assert_eq!(
            forever.status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{}",
            forever.text
        );
        assert!(forever.text.contains("legacy_until"), "{}", forever.text);
        let set = api
            .patch_json(
                &admin,
                "/v1/domains/go.acme.example",
                Some("\"1\""),
                json!({ "legacy_url": "https://old.example/s/" }),
            )
            .await;
        assert_eq!(set.status, StatusCode::OK, "{}", set.text);
        assert_eq!(
            set.body["legacy_url"],
            "https://old.example/s",
            "{}",
            t.kind()
        );
        // Without an end date of its own, 90 days.
        let until = origin_api::model::time::parse_rfc3339(
            set.body["legacy_until"].as_str().expect("an end date"),
        )
        .expect("RFC 3339");
        let days = (until - origin_api::model::time::now_ms()) as f64 / 86_400_000.0;
        assert!((89.9..=90.0).contains(&days), "{days}");

        // No code is on the list yet: none is sent on, whatever the old shortener holds.
        let unknown = api
            .visit("GET", "go.acme.example", "/Spring24?utm_source=mail")
            .await;
        assert_eq!(
            unknown.status,
            StatusCode::NOT_FOUND,
            "{:?}",
            unknown.headers
        );
        assert!(unknown.headers.get("location").is_none());

        // The list: admin keys only; loaded whole or not at all.
        let acme = api.key("acme", false).await;
        let codes = "/v1/domains/go.acme.example/legacy-codes";
        let owner_try = api
            .post_json(&acme, codes, &json!({"codes": ["Spring24"]}))
            .await;
        assert_eq!(
            owner_try.status,
            StatusCode::FORBIDDEN,
            "{}",
            owner_try.text
        );
        let with_bad = api
            .post_json(
                &admin,
                codes,
                &json!({"codes": ["Spring24", "https://old.example/s/rare", "no code!"]}),
            )
            .await;
        assert_eq!(
            with_bad.status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{}",
            with_bad.text
        );
        assert!(with_bad.text.contains("item 2"), "{}", with_bad.text);
        assert_eq!(api.call_as(&acme, "GET", codes).await.body["listed"], 0);
        let listed = api
            .post_json(
                &admin,
                codes,
                &json!({"codes": ["Spring24", "https://old.example/s/rare", "headonly",
                    "other", "banned-one", "Spring24"]}),
            )
            .await;
        assert_eq!(listed.status, StatusCode::OK, "{}", listed.text);
        assert_eq!(
            (
                &listed.body["added"],
                &listed.body["listed"],
                &listed.body["running"]
            ),
            (&json!(5), &json!(5), &json!(true)),
            "{}",
            listed.text
        );
        let again = api
            .post_json(&admin, codes, &json!({"codes": ["rare", "Autumn25"]}))
            .await;
        assert_eq!(
            (&again.body["added"], &again.body["listed"]),
            (&json!(1), &json!(6))
        );
        let one = api
            .call_as(&acme, "GET", &format!("{codes}?code=rare"))
            .await;
        assert_eq!(
            (&one.body["code"], &one.body["known"]),
            (&json!("rare"), &json!(true)),
            "{}",
            one.text
        );
        let none = api
            .call_as(&acme, "GET", &format!("{codes}?code=Summer26"))
            .await;
        assert_eq!(none.body["known"], false, "{}", none.text);

        let sent = api
            .visit("GET", "go.acme.example", "/Spring24?utm_source=mail")
            .await;
        assert_eq!(sent.status, StatusCode::FOUND);
        assert_eq!(
            sent.headers["location"],
            "https://old.example/s/Spring24?utm_source=mail"
        );
        assert_eq!(sent.headers["cache-control"], "no-store");
        api.visit("GET", "go.acme.example", "/Spring24").await;
        api.visit("GET", "go.acme.example", "/rare").await;
        assert_eq!(
            api.visit("HEAD", "go.acme.example", "/headonly")
                .await
                .status,
            StatusCode::FOUND
        );
        // The origin's own visits above had no user agent: bots. The edge's tally: rows of
        // a route with no link, answered 302.
        let hour = origin_api::model::time::now_ms() / 3_600_000 * 3_600_000;
        let row = |code: &str, bot: bool, n: u32| {
            json!({"link": format!("go.acme.example/{code}"),
            "hour": hour, "device": if bot { "other" } else { "desktop" }, "bot": bot, "status": 302, "n": n})
        };
        let tally = json!({"tallies": [{"batch_id": "legacy-1", "at": origin_api::model::time::now_ms(),
            "rows": [row("Spring24", false, 5), row("Spring24", true, 2), row("edge-only", false, 1),
                // Shown behind an interstitial domain's page, not redirected.
                json!({"link": "go.acme.example/edge-shown", "hour": hour, "device": "desktop",
                    "bot": false, "status": 200, "n": 1})]}]});
        let taken = api.post_json(EDGE, "/v1/edge/clicks", &tally).await;
        assert_eq!(taken.status, StatusCode::OK, "{}", taken.text);
        // Delivered again, counted once.
        api.post_json(EDGE, "/v1/edge/clicks", &tally).await;
        api.flush_legacy_misses().await;

        let acme = api.key("acme", false).await;
        let misses = api
            .call_as(&acme, "GET", "/v1/domains/go.acme.example/legacy-misses")
            .await;
        assert_eq!(misses.status, StatusCode::OK, "{}", misses.text);
        let seen: Vec<(&str, i64, i64)> = misses.body["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| {
                (
                    m["code"].as_str().unwrap(),
                    m["visits"].as_i64().unwrap(),
                    m["bot_visits"].as_i64().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            seen,
            [
                ("Spring24", 9, 4),
                ("edge-only", 1, 0),
                ("edge-shown", 1, 0),
                ("rare", 1, 1)
            ],
            "{}",
            t.kind()
        );
        assert_eq!(
            misses.body["items"][0]["legacy_url"],
            "https://old.example/s/Spring24"
        );
        // Pages: one at a time, the cursor carrying on where the last stopped.
        let first = api
            .call_as(
                &acme,
                "GET",
                "/v1/domains/go.acme.example/legacy-misses?limit=2",
            )
            .await;
        let cursor = first.body["next_cursor"]
            .as_str()
            .expect("a next page")
            .to_owned();
        let second = api
            .call_as(
                &acme,
                "GET",
                &format!("/v1/domains/go.acme.example/legacy-misses?limit=2&cursor={cursor}"),
            )
            .await;
        assert_eq!(
            second.body["items"][0]["code"], "edge-shown",
            "{}",
            second.text
        );
        assert_eq!(second.body["next_cursor"], Value::Null);
        // Another owner's key learns nothing of the domain.
        let other = api.key("globex", false).await;
        assert_eq!(
            api.call_as(&other, "GET", "/v1/domains/go.acme.example/legacy-misses")
                .await
                .status,
            StatusCode::NOT_FOUND
        );

        // Imported: the link answers, and the code leaves the list.
        let imported = api
            .create(&acme, json!({"target_url": "https://acme.example/spring", "domain": "go.acme.example", "code": "Spring24"}))
            .await;
        assert_eq!(imported.status, StatusCode::CREATED, "{}", imported.text);
        let visit = api.visit("GET", "go.acme.example", "/Spring24").await;
        assert_eq!(visit.headers["location"], "https://acme.example/spring");
        let misses = api
            .call_as(&acme, "GET", "/v1/domains/go.acme.example/legacy-misses")
            .await;
        assert_eq!(
            misses.body["items"][0]["code"], "edge-only",
            "{}",
            misses.text
        );

        // Bans hold: a banned code is 403; the old shortener banned, no fallback.
        let ban = api
            .post_json(&admin, "/v1/bans", &json!({"kind": "code", "domain": "go.acme.example", "code": "banned-one", "reason": "phishing"}))
            .await;
        assert_eq!(ban.status, StatusCode::CREATED, "{}", ban.text);
        assert_eq!(
            api.visit("GET", "go.acme.example", "/banned-one")
                .await
                .status,
            StatusCode::FORBIDDEN
        );
        let ban = api
            .post_json(
                &admin,
                "/v1/bans",
                &json!({"kind": "host", "host": "old.example", "reason": "taken over"}),
            )
            .await;
        assert_eq!(ban.status, StatusCode::CREATED, "{}", ban.text);
        assert_eq!(
            api.visit("GET", "go.acme.example", "/other").await.status,
            StatusCode::NOT_FOUND
        );
        let lift = api
            .call_as(&admin, "DELETE", &format!("/v1/bans/{}", ban.body["id"]))
            .await;
        assert_eq!(lift.status, StatusCode::NO_CONTENT, "{}", lift.text);
        assert_eq!(
            api.visit("GET", "go.acme.example", "/other").await.status,
            StatusCode::FOUND
        );

        // A code never listed is still not found.
        assert_eq!(
            api.visit("GET", "go.acme.example", "/Summer26")
                .await
                .status,
            StatusCode::NOT_FOUND
        );
        // An interstitial domain shows where a listed code goes before anyone goes on.
        let careful = change_domain(
            &api,
            &admin,
            "go.acme.example",
            json!({ "interstitial": true }),
        )
        .await;
        assert_eq!(careful.status, StatusCode::OK, "{}", careful.text);
        let page = api.visit("GET", "go.acme.example", "/other?a=1").await;
        assert_eq!(page.status, StatusCode::OK, "{}", page.text);
        assert!(page.headers.get("location").is_none());
        assert!(
            page.text
                .contains(r#"href="https://old.example/s/other?a=1""#),
            "{}",
            page.text
        );
        assert_eq!(
            api.visit("GET", "go.acme.example", "/Summer26")
                .await
                .status,
            StatusCode::NOT_FOUND
        );
        // Past its end date the fallback stops by itself.
        let ended = change_domain(
            &api,
            &admin,
            "go.acme.example",
            json!({ "interstitial": false, "legacy_until": "2020-01-01T00:00:00Z" }),
        )
        .await;
        assert_eq!(ended.status, StatusCode::OK, "{}", ended.text);
        assert_eq!(
            api.visit("GET", "go.acme.example", "/other").await.status,
            StatusCode::NOT_FOUND
        );
        assert_eq!(
            api.call_as(&acme, "GET", codes).await.body["running"],
            false
        );

        // Unset: the fallback ends.
        let unset = change_domain(
            &api,
            &admin,
            "go.acme.example",
            json!({ "legacy_url": null }),
        )
        .await;
        assert_eq!(unset.status, StatusCode::OK, "{}", unset.text);
        assert_eq!(
            api.visit("GET", "go.acme.example", "/other").await.status,
            StatusCode::NOT_FOUND
        );
        t.cleanup().await;
    }
}

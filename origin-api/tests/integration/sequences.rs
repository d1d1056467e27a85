//! Each domain numbers its generated codes in a sequence of its own, on every database
//! available: a small code space is not used up by the other domains' links, says so
//! when it is used up, and an upgrade keeps every code of the shared sequence of old
//! while numbering new ones past them.

use crate::common::{Api, TestDb, TEST_KEYS};
use axum::http::StatusCode;
use serde_json::json;
use shared::{Alphabet, CodeCodec, CodeSpace, KeyRing};

/// The number `code` encodes in `space`, as the edge and the origin's redirect read it.
fn number_of(code: &str, space: CodeSpace) -> u64 {
    let keys = KeyRing::parse(TEST_KEYS).expect("keys");
    CodeCodec::new(&keys, 1, space)
        .expect("codec")
        .link_id_of(code)
        .expect("a generated code")
}

/// The `code_number` the store kept for `domain/code`.
async fn stored_number(t: &TestDb, domain: &str, code: &str) -> Option<i64> {
    let row: Option<(Option<i64>,)> =
        t.db.read_optional(
            "SELECT code_number FROM links WHERE domain = $1 AND code = $2",
            &[domain.into(), code.into()],
        )
        .await
        .expect("read");
    row.expect("the link").0
}

#[tokio::test]
async fn a_domain_of_five_character_codes_is_not_used_up_by_the_others_and_says_when_full() {
    let tiny = CodeSpace::new(Alphabet::Base36, 5).expect("space");
    for t in TestDb::all("sequences-own").await {
        let api = Api::of(&t);
        let admin = api.key("ops", true).await;
        let made = api
            .post_json(
                &admin,
                "/v1/domains",
                &json!({ "domain": "tiny.example", "shared": true,
                         "alphabet": "base36", "code_length": 5 }),
            )
            .await;
        assert_eq!(made.status, StatusCode::CREATED, "{}", made.text);
        // The other domains have issued far more ids than five base36 characters hold.
        for name in ["links", "code:s.example"] {
            api.exec(&format!(
                "INSERT INTO id_segments (name, max_id, step, updated_at) \
                 VALUES ('{name}', 1000000000, 10000, 0) \
                 ON CONFLICT (name) DO UPDATE SET max_id = 1000000000"
            ))
            .await;
        }
        let fresh = Api::of(&t);
        let key = fresh.key("acme", false).await;
        let small = fresh
            .create(
                &key,
                json!({ "target_url": "https://dest.example/t", "domain": "tiny.example" }),
            )
            .await;
        assert_eq!(
            small.status,
            StatusCode::CREATED,
            "{}: {}",
            t.kind(),
            small.text
        );
        let code = small.body["code"].as_str().expect("code");
        assert_eq!(code.len(), 5);
        // Its own sequence, from 0, in segments sized for its space (60 numbers).
        let n = number_of(code, tiny);
        assert!(n < 60, "{}: {code} is number {n}", t.kind());
        assert_eq!(
            stored_number(&t, "tiny.example", code).await,
            Some(n as i64)
        );
        let wide = fresh
            .create(&key, json!({ "target_url": "https://dest.example/w" }))
            .await;
        assert_eq!(wide.status, StatusCode::CREATED, "{}", wide.text);
        let wide_code = wide.body["code"].as_str().expect("code");
        assert!(number_of(wide_code, CodeSpace::default()) >= 1_000_000_000);
        // An alias has no number.
        let alias = fresh
            .create(
                &key,
                json!({ "target_url": "https://dest.example/a", "code": "spring" }),
            )
            .await;
        assert_eq!(alias.status, StatusCode::CREATED, "{}", alias.text);
        assert_eq!(stored_number(&t, "s.example", "spring").await, None);

        // Its last code issued, the domain says so, naming why, and issues no other.
        api.exec(&format!(
            "UPDATE id_segments SET max_id = {} WHERE name = 'code:tiny.example'",
            tiny.size() - 1
        ))
        .await;
        let last = Api::of(&t);
        let body = json!({ "target_url": "https://dest.example/l", "domain": "tiny.example" });
        let made = last.create(&key, body.clone()).await;
        assert_eq!(made.status, StatusCode::CREATED, "{}", made.text);
        let last_code = made.body["code"].as_str().expect("code");
        assert_eq!(number_of(last_code, tiny), tiny.size() - 1);
        let full = last.create(&key, body).await;
        assert_eq!(
            full.status,
            StatusCode::CONFLICT,
            "{}: {}",
            t.kind(),
            full.text
        );
        assert_eq!(full.body["type"], "/problems/code-space-full");
        assert!(full.body["detail"]
            .as_str()
            .expect("detail")
            .contains("alias"));
        t.cleanup().await;
    }
}

#[tokio::test]
async fn an_upgrade_keeps_every_code_and_numbers_new_ones_past_those_of_the_shared_sequence() {
    let keys = KeyRing::parse(TEST_KEYS).expect("keys");
    let codec = CodeCodec::new(&keys, 1, CodeSpace::default()).expect("codec");
    for t in TestDb::all_at("sequences-upgrade", 9).await {
        // The release before: one sequence numbered links and codes alike; two domains
        // hold generated codes of it, a third only an alias.
        let old = [
            (5_u64, "s.example"),
            (12_345, "old.example"),
            (19_999, "s.example"),
        ];
        for (id, domain) in old {
            let code = codec.code_for(id).expect("code");
            let target = format!("https://dest.example/{id}");
            t.db.write(
                "INSERT INTO links (link_id, domain, code, target_url, owner_id, status, \
                 redirect_status, version, key_version, code_kind, forward_query, tags, \
                 created_at, updated_at, target_host) VALUES ($1, $2, $3, $4, 'acme', 'active', \
                 302, 1, 1, 'generated', FALSE, '[]', 1, 1, 'dest.example')",
                &[
                    (id as i64).into(),
                    domain.into(),
                    (&code).into(),
                    (&target).into(),
                ],
            )
            .await
            .expect("an old link");
        }
        t.db.write(
            "INSERT INTO links (link_id, domain, code, target_url, owner_id, status, \
             redirect_status, version, code_kind, forward_query, tags, created_at, updated_at, \
             target_host) VALUES (20001, 'alias.example', 'spring', 'https://dest.example/a', \
             'acme', 'active', 302, 1, 'custom', FALSE, '[]', 1, 1, 'dest.example')",
            &[],
        )
        .await
        .expect("an old alias");
        t.db.write(
            "INSERT INTO id_segments (name, max_id, step, updated_at) VALUES ('links', 30000, 10000, 1)",
            &[],
        )
        .await
        .expect("the shared sequence");

        t.db.migrate().await.expect("upgrade");
        origin_api::domains::register_link_domains(&t.db)
            .await
            .expect("register");
        let api = Api::of(&t);
        // Every old code keeps its link, and its number is its old id.
        for (id, domain) in old {
            let code = codec.code_for(id).expect("code");
            let visit = api.visit("GET", domain, &format!("/{code}")).await;
            assert_eq!(
                visit.status,
                StatusCode::FOUND,
                "{}: {domain}/{code}",
                t.kind()
            );
            assert_eq!(stored_number(&t, domain, &code).await, Some(id as i64));
        }
        // New codes of a domain that held generated ones come after every number the
        // shared sequence gave out; a domain that held none starts at 0.
        let key = api.key("acme", false).await;
        for (domain, from) in [
            ("s.example", 30_000),
            ("old.example", 30_000),
            ("alias.example", 0),
        ] {
            let made = api
                .create(
                    &key,
                    json!({ "target_url": "https://dest.example/new", "domain": domain }),
                )
                .await;
            assert_eq!(
                made.status,
                StatusCode::CREATED,
                "{}: {domain}: {}",
                t.kind(),
                made.text
            );
            let n = number_of(
                made.body["code"].as_str().expect("code"),
                CodeSpace::default(),
            );
            assert!(
                (from..from + 10_000).contains(&n),
                "{}: {domain}'s first new code is number {n}",
                t.kind()
            );
        }
        t.cleanup().await;
    }
}

//! Words that are never codes, on every database available: an operator's reserved and
//! offensive words (files named by `--reserved-words` and `--offensive-words`) refuse
//! aliases naming the rule, generated codes that spell one are skipped and counted, and an
//! import keeps a printed code unless it is reserved.

use crate::common::{apis_with, Api, TEST_KEYS};
use axum::http::StatusCode;
use clap::Parser;
use serde_json::json;
use shared::codes::CodeSpace;
use shared::{CodeCodec, KeyRing};

/// The default domain's generated codes for the numbers `range`: what its sequence, new
/// in each test database, hands out first.
fn first_codes(range: std::ops::Range<u64>) -> Vec<String> {
    let keys = KeyRing::parse(TEST_KEYS).expect("keys");
    let codec = CodeCodec::new(&keys, 1, CodeSpace::default()).expect("codec");
    range.map(|n| codec.code_for(n).expect("code")).collect()
}

/// The value of the series `name{reason="…"}` in the origin's metrics.
async fn skipped(api: &Api, reason: &str) -> f64 {
    let text = api.metrics().await;
    let series = format!("hop_generated_codes_skipped_total{{reason=\"{reason}\"}} ");
    text.lines()
        .find_map(|l| l.strip_prefix(&series))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {series} in\n{text}"))
}

#[tokio::test]
async fn the_word_lists_refuse_aliases_by_rule_and_generated_codes_skip_them() {
    let dir = tempfile::tempdir().expect("dir");
    let codes = first_codes(0..13);
    // The operator's lists hold words of their own, and the first ten codes the sequence
    // would give: five as reserved words, five (in lower case) as offensive ones.
    let reserved = dir.path().join("reserved.txt");
    let offensive = dir.path().join("offensive.txt");
    std::fs::write(
        &reserved,
        format!("# our site\nAbout\n{}\n", codes[..5].join("\n")),
    )
    .expect("write");
    std::fs::write(
        &offensive,
        format!(
            "frobnicate\n!goo  # a word in our brand\n{}\n",
            codes[5..10].join("\n").to_lowercase()
        ),
    )
    .expect("write");
    let flags = [
        "--reserved-words",
        reserved.to_str().expect("path"),
        "--offensive-words",
        offensive.to_str().expect("path"),
    ];
    for (api, t) in apis_with("words", &flags).await {
        let key = api.key("acme", false).await;
        let alias = |code: &str| json!({"target_url": "https://shop.example/", "code": code});
        for (code, rule) in [
            ("about", "operator_reserved"),
            ("FROBNICATE", "offensive"),
            ("free-fr0bn1cate", "offensive"),
            ("sh1t", "offensive"),
            ("login", "reserved"),
        ] {
            let r = api.create(&key, alias(code)).await;
            assert_eq!(
                r.status,
                StatusCode::UNPROCESSABLE_ENTITY,
                "{code}: {}",
                r.text
            );
            assert!(
                r.text.contains(&format!("rule: {rule}")),
                "{}: {code}: {}",
                t.kind(),
                r.text
            );
            assert_eq!(
                api.read(&key, "s.example", code).await.status,
                StatusCode::NOT_FOUND
            );
        }
        // Words inside an alias are the person's choice; a built-in word taken out is free.
        for code in ["analytics-2026", "cocktail-week", "goo"] {
            let r = api.create(&key, alias(code)).await;
            assert_eq!(r.status, StatusCode::CREATED, "{code}: {}", r.text);
        }

        // Generated codes pass over the ten the lists hold, and say so.
        let mut made = Vec::new();
        for _ in 0..3 {
            let r = api
                .create(&key, json!({"target_url": "https://shop.example/g"}))
                .await;
            assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
            made.push(r.body["code"].as_str().expect("code").to_owned());
        }
        assert_eq!(made, codes[10..13], "{}", t.kind());
        assert_eq!(skipped(&api, "operator_reserved").await, 5.0);
        assert_eq!(skipped(&api, "offensive").await, 5.0);

        // An import keeps a printed code whatever it spells, but never a reserved word.
        let admin = api.key("ops", true).await;
        let domain = api
            .post_json(
                &admin,
                "/v1/domains",
                &json!({"domain": "go.acme.co", "owners": ["acme"]}),
            )
            .await;
        assert_eq!(domain.status, StatusCode::CREATED, "{}", domain.text);
        let csv = "Title,Bitlink,Long URL,Date Created,Custom Bitlinks,Tags,Clicks,Archived\n\
                   A,https://go.acme.co/about,https://acme.example/a,2024-01-01 00:00:00,,,1,false\n\
                   B,https://go.acme.co/sh1t,https://acme.example/b,2024-01-01 00:00:00,,,1,false\n";
        let report = api
            .post_json(
                &key,
                "/v1/imports",
                &json!({"source": "bitly", "format": "csv", "content": csv}),
            )
            .await;
        assert_eq!(report.status, StatusCode::OK, "{}", report.text);
        let rows = report.body["rows"].as_array().expect("rows");
        assert_eq!(rows[0]["outcome"], "refused", "{}", report.text);
        assert!(
            rows[0]["reason"]
                .as_str()
                .is_some_and(|r| r.contains("operator_reserved")),
            "{}",
            report.text
        );
        assert_eq!(rows[1]["outcome"], "created", "{}", report.text);
    }
}

#[test]
fn a_word_list_that_cannot_be_read_stops_the_origin_naming_its_line() {
    let dir = tempfile::tempdir().expect("dir");
    let bad = dir.path().join("words.txt");
    std::fs::write(&bad, "fine\nnot/a-code\n").expect("write");
    let parse = |flag: &str, path: &str| {
        origin_api::config::Cli::try_parse_from(["hop-origin", flag, path])
            .map(|_| ())
            .map_err(|e| e.to_string())
    };
    let err = parse("--reserved-words", bad.to_str().expect("path")).unwrap_err();
    assert!(
        err.contains("line 2") && err.contains("not/a-code"),
        "{err}"
    );
    let err = parse("--offensive-words", "/no/such/file").unwrap_err();
    assert!(err.contains("cannot read /no/such/file"), "{err}");
}

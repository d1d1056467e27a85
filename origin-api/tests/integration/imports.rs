//! `POST /v1/imports` on every database available: another shortener's links arrive with
//! their codes and domains exactly, never twice; a dry run stores nothing; what cannot
//! move is said per link; codes of the generated shape wait for the edge's import window
//! and then answer at the origin, also after a restart, and never collide with the
//! codes Hop generates itself.

use crate::common::{apis, Api, Reply, TEST_KEYS};
use axum::http::StatusCode;
use serde_json::{json, Value};

fn fixture(name: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/imports")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

async fn import(api: &Api, key: &str, format: &str, content: &str, dry_run: bool) -> Reply {
    api.post_json(
        key,
        "/v1/imports",
        &json!({"source": "bitly", "format": format, "content": content, "dry_run": dry_run}),
    )
    .await
}

/// Each row's (code, outcome).
fn outcomes(report: &Value) -> Vec<(String, String)> {
    report["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| {
            (
                r["code"].as_str().expect("a code").to_owned(),
                r["outcome"].as_str().expect("an outcome").to_owned(),
            )
        })
        .collect()
}

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

/// As if the domain's import window had opened long enough ago for the edge to know.
async fn window_known(api: &Api) {
    api.exec("UPDATE foreign_codes SET opened_at = opened_at - 600000")
        .await;
}

#[tokio::test]
async fn a_bitly_page_moves_its_branded_links_once_with_every_back_half() {
    for (api, t) in apis("import-bitly").await {
        owned_domain(&api, "go.acme.co", "acme").await;
        let key = api.key("acme", false).await;
        let page = fixture("bitly-page-1.json");
        // The domain is moving from the old shortener, as the guide's first step says.
        let admin = api.key("ops", true).await;
        let moving = api
            .patch_json(
                &admin,
                "/v1/domains/go.acme.co",
                Some("\"1\""),
                json!({"legacy_url": "https://old.example"}),
            )
            .await;
        assert_eq!(moving.status, StatusCode::OK, "{}", moving.text);

        // A dry run says what would happen and changes nothing.
        let dry = import(&api, &key, "api", &page, true).await;
        assert_eq!(dry.status, StatusCode::OK, "{}", dry.text);
        let expected = pairs(&[
            ("3xYzAbC", "created"),
            ("summer", "created"),
            ("Summer-Sale", "created"),
            ("acme-summer", "skipped"),
            ("4aBcDeF", "skipped"),
            ("winter", "created"),
        ]);
        assert_eq!(outcomes(&dry.body), expected, "{}", t.kind());
        assert!(dry.body["rows"][0]["notes"][0]
            .as_str()
            .unwrap()
            .contains("generated codes"));
        assert!(dry.body["rows"][3]["reason"]
            .as_str()
            .unwrap()
            .contains("bit.ly"));
        assert_eq!(
            api.read(&key, "go.acme.co", "summer").await.status,
            StatusCode::NOT_FOUND
        );
        assert_eq!(
            api.count("foreign_codes").await,
            0,
            "a dry run opens no window"
        );
        assert_eq!(
            api.count("legacy_codes").await,
            0,
            "a dry run lists no legacy code"
        );

        // The real run: the code of the generated shape waits for the edge.
        let first = import(&api, &key, "api", &page, false).await;
        assert_eq!(first.status, StatusCode::OK, "{}", first.text);
        assert_eq!(
            first.body["rows"][0]["outcome"], "deferred",
            "{}",
            first.text
        );
        assert_eq!(first.body["summary"]["created"], 3);
        let retry: u64 = first.headers["retry-after"]
            .to_str()
            .unwrap()
            .parse()
            .unwrap();
        assert!((100..=121).contains(&retry), "{retry}");
        // What the import took (the deferred code too) is on the moving domain's legacy
        // list, what it skipped is not: while the deferred link waits, the fallback to
        // the old shortener sends its code on, and no other.
        assert_eq!(api.count("legacy_codes").await, 4, "{}", t.kind());
        let waiting = api.visit("GET", "go.acme.co", "/3xYzAbC").await;
        assert_eq!(
            (waiting.status, waiting.headers.get("location")),
            (
                StatusCode::FOUND,
                Some(&axum::http::HeaderValue::from_static(
                    "https://old.example/3xYzAbC"
                ))
            ),
            "{}",
            t.kind()
        );
        assert_eq!(
            api.visit("GET", "go.acme.co", "/9zZzZzZ").await.status,
            StatusCode::NOT_FOUND
        );
        let summer = api.read(&key, "go.acme.co", "summer").await;
        assert_eq!(summer.body["target_url"], "https://acme.example/summer?x=1");
        assert_eq!(summer.body["short_url"], "https://go.acme.co/summer");
        assert_eq!(summer.body["code_kind"], "custom");
        assert_eq!(summer.body["imported"]["from"], "bitly");
        assert_eq!(
            summer.body["imported"]["created_at"],
            "2024-03-01T10:00:00Z"
        );
        assert_eq!(summer.body["tags"], json!(["summer", "2024"]));
        assert_eq!(
            api.read(&key, "go.acme.co", "winter").await.body["status"],
            "disabled",
            "archived arrives disabled"
        );

        // Sent again once the edge knows: the rest arrives, nothing twice.
        window_known(&api).await;
        let again = import(&api, &key, "api", &page, false).await;
        assert_eq!(
            outcomes(&again.body),
            pairs(&[
                ("3xYzAbC", "created"),
                ("summer", "unchanged"),
                ("Summer-Sale", "unchanged"),
                ("acme-summer", "skipped"),
                ("4aBcDeF", "skipped"),
                ("winter", "unchanged"),
            ]),
            "{}",
            again.text
        );
        let visit = api.visit("GET", "go.acme.co", "/3xYzAbC").await;
        assert_eq!(visit.status, StatusCode::FOUND, "{}", t.kind());
        // A fresh origin (nothing cached): the code's number is past the domain's
        // sequence, yet it is no 404.
        let restarted = Api::of(&t);
        let visit = restarted.visit("GET", "go.acme.co", "/3xYzAbC").await;
        assert_eq!(visit.status, StatusCode::FOUND, "{}", t.kind());
        assert_eq!(visit.headers["location"], "https://acme.example/summer?x=1");

        // The source changed: the import follows it.
        let moved = page.replace(
            "https://acme.example/winter",
            "https://acme.example/winter-2",
        );
        let changed = import(&api, &key, "api", &moved, false).await;
        assert_eq!(changed.body["summary"]["changed"], 1, "{}", changed.text);
        assert_eq!(
            api.read(&key, "go.acme.co", "winter").await.body["target_url"],
            "https://acme.example/winter-2"
        );
        t.cleanup().await;
    }
}

#[tokio::test]
async fn what_hop_holds_is_never_overwritten_and_each_refusal_says_why() {
    for (api, t) in apis("import-refusals").await {
        for (domain, owner) in [("go.acme.co", "acme"), ("go.globex.example", "globex")] {
            owned_domain(&api, domain, owner).await;
        }
        let key = api.key("acme", false).await;
        let native = api
            .create(&key, json!({"target_url": "https://acme.example/", "domain": "go.acme.co", "code": "spring-sale"}))
            .await;
        assert_eq!(native.status, StatusCode::CREATED, "{}", native.text);
        let csv = fixture("bitly-export.csv")
            + "Theirs,https://go.globex.example/theirs,https://globex.example/,2024-01-01,,,1,false\n";
        let report = import(&api, &key, "csv", &csv, false).await;
        assert_eq!(report.status, StatusCode::OK, "{}", report.text);
        assert_eq!(
            outcomes(&report.body),
            pairs(&[
                ("spring", "created"),
                ("spring-sale", "refused"),
                ("4aBcDeF", "skipped"),
                ("broken", "refused"),
                ("theirs", "refused"),
            ]),
            "{}",
            t.kind()
        );
        let reason = |i: usize| {
            report.body["rows"][i]["reason"]
                .as_str()
                .unwrap()
                .to_owned()
        };
        assert!(reason(1).contains("made in Hop"), "{}", reason(1));
        assert!(reason(3).contains("target_url"), "{}", reason(3));
        assert!(reason(4).contains("other owners"), "{}", reason(4));
        assert_eq!(
            api.read(&key, "go.acme.co", "spring-sale").await.body["target_url"],
            "https://acme.example/",
            "untouched"
        );
        let spring = api.read(&key, "go.acme.co", "spring").await;
        assert_eq!(spring.body["imported"]["clicks"], 1204);
        // A deleted import is not brought back by the next run.
        let gone = api
            .call_as(&key, "DELETE", "/v1/links/go.acme.co/spring")
            .await;
        assert_eq!(gone.status, StatusCode::NO_CONTENT);
        let again = import(&api, &key, "csv", &csv, false).await;
        assert_eq!(again.body["rows"][0]["outcome"], "refused");
        assert!(again.body["rows"][0]["reason"]
            .as_str()
            .unwrap()
            .contains("deleted"));
        // A file that is no Bitly export is refused whole.
        let bad = import(&api, &key, "csv", "Name,Count\nA,1\n", false).await;
        assert_eq!(bad.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", bad.text);
        assert!(bad.text.contains("content"), "{}", bad.text);
        t.cleanup().await;
    }
}

/// Codes Hop generates skip the ones an import brought: the first of the numbers the
/// domain's sequence will issue next are taken by imported links, and creating links
/// still works, each with a code of its own.
#[tokio::test]
async fn generated_codes_step_around_imported_ones() {
    for (api, t) in apis("import-collide").await {
        let key = api.key("acme", false).await;
        let first = api
            .create(&key, json!({"target_url": "https://acme.example/1"}))
            .await;
        assert_eq!(first.status, StatusCode::CREATED, "{}", first.text);
        let code = first.body["code"].as_str().unwrap().to_owned();
        let keys = shared::KeyRing::parse(TEST_KEYS).unwrap();
        let codec = shared::CodeCodec::new(&keys, 1, shared::CodeSpace::default()).unwrap();
        let n = codec.link_id_of(&code).unwrap();
        let next: Vec<String> = (n + 1..=n + 3)
            .map(|i| codec.code_for(i).unwrap())
            .collect();
        let page = json!({"links": next.iter().map(|c| json!({
            "id": format!("s.example/{c}"), "long_url": "https://imported.example/", "custom_bitlinks": []
        })).collect::<Vec<_>>()});
        let opened = import(&api, &key, "api", &page.to_string(), false).await;
        assert_eq!(opened.body["summary"]["deferred"], 3, "{}", opened.text);
        window_known(&api).await;
        let done = import(&api, &key, "api", &page.to_string(), false).await;
        assert_eq!(done.body["summary"]["created"], 3, "{}", done.text);
        for i in 0..3 {
            let made = api
                .create(
                    &key,
                    json!({"target_url": format!("https://acme.example/n{i}")}),
                )
                .await;
            assert_eq!(
                made.status,
                StatusCode::CREATED,
                "{}: {}",
                t.kind(),
                made.text
            );
            let code = made.body["code"].as_str().unwrap();
            assert!(!next.iter().any(|c| c == code), "{code} issued again");
        }
        for c in &next {
            let visit = api.visit("GET", "s.example", &format!("/{c}")).await;
            assert_eq!(visit.headers["location"], "https://imported.example/");
        }
        t.cleanup().await;
    }
}

/// A stub of Bitly's API: `GET /v4/groups/Bg1/bitlinks`, paged by `search_after`, with
/// its token checked; the second page is refused once as rate-limited (429,
/// `Retry-After: 1`), and, while `broken`, answered 401.
#[derive(Clone, Default)]
struct BitlyStub {
    calls: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    broken: std::sync::Arc<std::sync::atomic::AtomicBool>,
    limited: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

async fn bitly_stub(
    axum::extract::State(stub): axum::extract::State<BitlyStub>,
    headers: axum::http::HeaderMap,
    axum::extract::Query(q): axum::extract::Query<std::collections::HashMap<String, String>>,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    if headers.get("authorization").and_then(|v| v.to_str().ok()) != Some("Bearer bitly-token") {
        return (StatusCode::FORBIDDEN, "FORBIDDEN").into_response();
    }
    let after = q.get("search_after").cloned().unwrap_or_default();
    stub.calls
        .lock()
        .expect("the stub's log")
        .push(after.clone());
    assert_eq!(q.get("size").map(String::as_str), Some("100"));
    let link = |id: &str, url: &str, custom: &[&str]| {
        json!({"id": id, "long_url": url,
        "custom_bitlinks": custom, "tags": [], "archived": false, "created_at": "2024-01-01T00:00:00+0000"})
    };
    match after.as_str() {
        "" => Json(json!({"links": [
                link("go.acme.co/one", "https://acme.example/1", &["https://go.acme.co/uno"]),
                link("bit.ly/2bCdEfG", "https://acme.example/2", &[]),
            ], "pagination": {"search_after": "p2", "size": 2}}))
        .into_response(),
        "p2" if stub.broken.load(std::sync::atomic::Ordering::SeqCst) => {
            (StatusCode::UNAUTHORIZED, "INVALID_ACCESS_TOKEN").into_response()
        }
        "p2" if !stub.limited.swap(true, std::sync::atomic::Ordering::SeqCst) => (
            StatusCode::TOO_MANY_REQUESTS,
            [("retry-after", "1")],
            "RATE_LIMIT_EXCEEDED",
        )
            .into_response(),
        "p2" => Json(json!({"links": [
                link("go.acme.co/Rt5Yu8K", "https://acme.example/3", &[]),
            ], "pagination": {"search_after": "", "size": 2}}))
        .into_response(),
        _ => (StatusCode::BAD_REQUEST, "bad cursor").into_response(),
    }
}

use axum::Json;

/// Registers `domain`, owned by `owner`, with an admin key.
async fn owned_domain(api: &Api, domain: &str, owner: &str) {
    let admin = api.key("ops", true).await;
    let made = api
        .post_json(
            &admin,
            "/v1/domains",
            &json!({"domain": domain, "owners": [owner]}),
        )
        .await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.text);
}

/// A served origin (with `flags`) for `acme`, `domain` owned by `acme` on it, and the
/// API over the same database; `None` without a database to run on.
async fn served_for(
    test: &str,
    domain: &str,
    flags: &[&str],
) -> Option<(crate::common::TestDb, crate::import_export::Served, Api)> {
    let t = crate::common::TestDb::all(test).await.into_iter().next()?;
    let served = crate::import_export::serve_with(&t, "acme", flags).await;
    let api = Api::of(&t);
    owned_domain(&api, domain, "acme").await;
    Some((t, served, api))
}

/// `app` served on a free port of loopback: its address, and its task.
async fn stub_server(
    app: axum::Router,
) -> (
    std::net::SocketAddr,
    tokio::task::JoinHandle<std::io::Result<()>>,
) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a port");
    let addr = listener.local_addr().expect("its address");
    (
        addr,
        tokio::spawn(async move { axum::serve(listener, app).await }),
    )
}

/// `import --from bitly URL`: pages fetched as Bitly's API pages them, its rate limit
/// waited out, a refused page ends the run with its cursor kept, and the next run
/// resumes from it; a code of the generated shape is deferred and sent again.
#[tokio::test]
async fn the_bitly_api_is_paged_waited_out_and_resumed() {
    use origin_api::cli::import_from::{import_from, FromOptions};
    use origin_api::views::imports::Source;
    let Some((t, served, admin)) = served_for(
        "import-bitly-api",
        "go.acme.co",
        &["--import-edge-wait", "1"],
    )
    .await
    else {
        return;
    };
    let ops = admin.key("ops", true).await;
    let stub = BitlyStub::default();
    stub.broken.store(true, std::sync::atomic::Ordering::SeqCst);
    let app = axum::Router::new()
        .route("/v4/groups/Bg1/bitlinks", axum::routing::get(bitly_stub))
        .with_state(stub.clone());
    let (addr, server) = stub_server(app).await;
    let dir = tempfile::tempdir().unwrap();
    let options = FromOptions {
        source: Source::Bitly,
        input: format!("http://{addr}/v4/groups/Bg1/bitlinks"),
        dry_run: false,
        domain: None,
        journal: Some(dir.path().join("bitly.journal")),
        report: Some(dir.path().join("report.csv")),
        source_token: Some("bitly-token".into()),
        rows_per_call: 1000,
        source_interval: std::time::Duration::from_millis(10),
    };
    let bar = indicatif::ProgressBar::hidden();
    let first = import_from(&served.client, &options, &bar).await;
    let err = first.expect_err("the second page is refused").to_string();
    assert!(err.contains("401"), "{err}");
    assert_eq!(
        admin.read(&ops, "go.acme.co", "uno").await.status,
        StatusCode::NOT_FOUND,
        "another owner's key sees nothing"
    );

    stub.broken
        .store(false, std::sync::atomic::Ordering::SeqCst);
    let done = import_from(&served.client, &options, &bar)
        .await
        .expect("resumed");
    assert_eq!(done.resumed_from, 1, "the first page is not fetched again");
    let got: Vec<(usize, &str, Outcome)> = done
        .rows
        .iter()
        .map(|r| (r.row, r.code.as_str(), r.outcome))
        .collect();
    use origin_api::views::imports::Outcome;
    assert_eq!(got, [(3, "Rt5Yu8K", Outcome::Created)], "{:?}", done.rows);
    assert_eq!(
        *stub.calls.lock().unwrap(),
        ["", "p2", "p2", "p2"],
        "page 1 once; page 2 refused, rate-limited, then served"
    );
    let report = std::fs::read_to_string(dir.path().join("report.csv")).unwrap();
    assert!(
        report.starts_with("row,domain,code,outcome,reason,notes,short_url\n"),
        "{report}"
    );
    assert!(report.contains("3,go.acme.co,Rt5Yu8K,created,"), "{report}");
    let key = admin.key("acme", false).await;
    for code in ["one", "uno", "Rt5Yu8K"] {
        let link = admin.read(&key, "go.acme.co", code).await;
        assert_eq!(link.status, StatusCode::OK, "{code}");
    }
    assert_eq!(
        import_from(&served.client, &options, &bar)
            .await
            .unwrap()
            .rows
            .len(),
        0,
        "a finished import does nothing again"
    );
    server.abort();
    drop(served);
    t.cleanup().await;
}

async fn import_as(
    api: &Api,
    key: &str,
    source: &str,
    format: &str,
    content: &str,
    domain: Option<&str>,
) -> Reply {
    let mut body = json!({"source": source, "format": format, "content": content});
    if let Some(d) = domain {
        body["domain"] = json!(d);
    }
    api.post_json(key, "/v1/imports", &body).await
}

/// Shlink, YOURLS, Kutt and Dub, from files written from each one's documented format:
/// each keeps what Hop can (rules, limits, expiries, a password) and says what it cannot.
#[tokio::test]
async fn shlink_yourls_kutt_and_dub_keep_what_hop_can_and_say_what_it_cannot() {
    for (api, t) in apis("import-others").await {
        for domain in ["s.test", "sho.rt", "kutt.example", "dub.example"] {
            owned_domain(&api, domain, "acme").await;
        }
        let key = api.key("acme", false).await;

        let shlink = import_as(
            &api,
            &key,
            "shlink",
            "api",
            &fixture("shlink-page.json"),
            None,
        )
        .await;
        assert_eq!(
            outcomes(&shlink.body),
            pairs(&[("12C18", "created")]),
            "{}",
            shlink.text
        );
        let notes = shlink.body["rows"][0]["notes"].to_string();
        assert!(
            notes.contains("bots") && notes.contains("IP address"),
            "{notes}"
        );
        let link = api.read(&key, "s.test", "12C18").await.body;
        assert_eq!(link["max_visits"], 100);
        assert_eq!(link["forward_query"], true);
        assert_eq!(
            link["rules"].as_array().map(Vec::len),
            Some(1),
            "the IP rule is left out"
        );
        assert_eq!(link["imported"]["clicks"], 328);

        let yourls = import_as(
            &api,
            &key,
            "yourls",
            "csv",
            &fixture("yourls_url.csv"),
            Some("sho.rt"),
        )
        .await;
        assert_eq!(
            outcomes(&yourls.body),
            pairs(&[("ozh", "created"), ("Ozh", "created"), ("a", "deferred")]),
            "{}: case kept; a one-letter keyword waits for the edge",
            t.kind()
        );
        let upper = api.visit("GET", "sho.rt", "/Ozh").await;
        assert_eq!(upper.headers["location"], "https://ozh.example/other");

        let kutt = import_as(&api, &key, "kutt", "api", &fixture("kutt-page.json"), None).await;
        assert_eq!(
            outcomes(&kutt.body),
            pairs(&[
                ("gh", "deferred"),
                ("taken-down", "skipped"),
                ("closed", "created")
            ]),
            "{}: a two-letter code waits for the edge too",
            kutt.text
        );
        assert_eq!(
            api.read(&key, "kutt.example", "closed").await.body["status"],
            "disabled"
        );
        window_known(&api).await;
        let again = import_as(&api, &key, "kutt", "api", &fixture("kutt-page.json"), None).await;
        assert_eq!(
            again.body["rows"][0]["outcome"], "created",
            "{}",
            again.text
        );
        assert_eq!(
            api.read(&key, "kutt.example", "gh").await.body["title"],
            "GitHub"
        );

        let dub = import_as(&api, &key, "dub", "api", &fixture("dub-links.json"), None).await;
        assert_eq!(
            outcomes(&dub.body),
            pairs(&[("try", "created")]),
            "{}",
            dub.text
        );
        let link = api.read(&key, "dub.example", "try").await.body;
        assert_eq!(link["access"], "password");
        assert_eq!(link["expired_url"], "https://dub.co.example/ended");
        assert_eq!(link["rules"].as_array().map(Vec::len), Some(2));
        let asked = api.visit("GET", "dub.example", "/try").await;
        assert_eq!(asked.status, StatusCode::FORBIDDEN, "the password form");

        // Kutt has no export file: said, nothing imported.
        let no_file = import_as(&api, &key, "kutt", "csv", "a,b\n", None).await;
        assert_eq!(no_file.status, StatusCode::UNPROCESSABLE_ENTITY);
        t.cleanup().await;
    }
}

/// A stub of Shlink's REST API: two pages of short URLs (`X-Api-Key` checked), the
/// second link with redirect rules served at their own address.
async fn shlink_stub(
    headers: axum::http::HeaderMap,
    axum::extract::Query(q): axum::extract::Query<std::collections::HashMap<String, String>>,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    if headers.get("x-api-key").and_then(|v| v.to_str().ok()) != Some("shlink-key") {
        return (StatusCode::UNAUTHORIZED, "no key").into_response();
    }
    assert_eq!(q.get("itemsPerPage").map(String::as_str), Some("100"));
    let item = |code: &str, rules: bool| {
        json!({"shortCode": code, "shortUrl": format!("https://s.test/{code}"),
        "longUrl": format!("https://shop.example/{code}"), "dateCreated": "2024-01-01T00:00:00+00:00", "tags": [],
        "meta": {"validSince": null, "validUntil": null, "maxVisits": null}, "domain": null, "title": null,
        "crawlable": false, "forwardQuery": true, "visitsSummary": {"total": 1, "nonBots": 1, "bots": 0},
        "hasRedirectRules": rules})
    };
    let page = q.get("page").map(String::as_str).unwrap_or("1");
    let (data, current) = match page {
        "1" => (vec![item("first", false)], 1),
        _ => (vec![item("ruled", true)], 2),
    };
    Json(
        json!({"shortUrls": {"data": data, "pagination": {"currentPage": current, "pagesCount": 2,
        "itemsPerPage": 100, "itemsInCurrentPage": 1, "totalItems": 2}}}),
    )
    .into_response()
}

async fn shlink_rules(headers: axum::http::HeaderMap) -> axum::response::Response {
    use axum::response::IntoResponse;
    if headers.get("x-api-key").is_none() {
        return (StatusCode::UNAUTHORIZED, "no key").into_response();
    }
    Json(
        json!({"defaultLongUrl": "https://shop.example/ruled", "redirectRules": [
        {"longUrl": "https://shop.example/ios", "priority": 1,
         "conditions": [{"type": "device", "matchKey": null, "matchValue": "ios"}]}]}),
    )
    .into_response()
}

/// `import --from shlink URL`: every page, and each link's redirect rules fetched from
/// their own address and kept as targeting rules.
#[tokio::test]
async fn the_shlink_api_brings_each_links_redirect_rules() {
    use origin_api::cli::import_from::{import_from, FromOptions};
    use origin_api::views::imports::Source;
    let Some((t, served, admin)) = served_for("import-shlink-api", "s.test", &[]).await else {
        return;
    };
    let app = axum::Router::new()
        .route("/rest/v3/short-urls", axum::routing::get(shlink_stub))
        .route(
            "/rest/v3/short-urls/ruled/redirect-rules",
            axum::routing::get(shlink_rules),
        );
    let (addr, server) = stub_server(app).await;
    let dir = tempfile::tempdir().unwrap();
    let options = FromOptions {
        source: Source::Shlink,
        input: format!("http://{addr}/rest/v3/short-urls"),
        dry_run: false,
        domain: None,
        journal: Some(dir.path().join("shlink.journal")),
        report: None,
        source_token: Some("shlink-key".into()),
        rows_per_call: 1000,
        source_interval: std::time::Duration::from_millis(1),
    };
    let done = import_from(&served.client, &options, &indicatif::ProgressBar::hidden())
        .await
        .expect("imported");
    assert_eq!(done.summary.created, 2, "{:?}", done.rows);
    let key = admin.key("acme", false).await;
    let ruled = admin.read(&key, "s.test", "ruled").await.body;
    assert_eq!(
        ruled["rules"][0]["target_url"], "https://shop.example/ios",
        "{ruled}"
    );
    assert_eq!(ruled["rules"][0]["when"]["device"], json!(["ios"]));
    server.abort();
    drop(served);
    t.cleanup().await;
}

/// Dub's API gives passwords in the clear: each is a PBKDF2 on the process's one hashing
/// gate, which visitors of password links wait on too. A call with more password links
/// than a bulk create takes is refused whole, naming the cap, before anything is
/// hashed or created; a dry run checks passwords and hashes none (and is charged to the
/// key's creation rate as the import would be); the real import hashes each.
#[tokio::test]
async fn an_imports_passwords_are_capped_and_a_dry_run_hashes_none() {
    for (api, t) in apis("import-passwords").await {
        owned_domain(&api, "go.acme.co", "acme").await;
        let key = api.key("acme", false).await;
        let cap = origin_api::views::links::MAX_BULK_PASSWORDS;
        let page = |n: usize| {
            let links: Vec<Value> = (0..n)
                .map(|i| {
                    json!({"id": format!("link_{i}"), "domain": "go.acme.co", "key": format!("locked-{i}"),
                        "url": "https://acme.example/", "shortLink": format!("https://go.acme.co/locked-{i}"),
                        "archived": false, "password": "correct horse battery", "clicks": 0,
                        "createdAt": "2024-05-01T12:00:00.000Z"})
                })
                .collect();
            Value::Array(links).to_string()
        };
        let import = |content: String, dry_run: bool| {
            let body =
                json!({"source": "dub", "format": "api", "content": content, "dry_run": dry_run});
            let (api, key) = (&api, &key);
            async move { api.post_json(key, "/v1/imports", &body).await }
        };
        let gate = &api.state.links.passwords.hashing;
        let hashed = gate.started();
        let over = import(page(cap + 1), false).await;
        assert_eq!(
            over.status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{}",
            over.text
        );
        assert!(
            over.text.contains(&format!("at most {cap}")),
            "{}",
            over.text
        );
        assert_eq!(gate.started(), hashed, "nothing hashed");
        assert_eq!(api.count("links").await, 0, "nothing created");

        let dry = import(page(cap), true).await;
        assert_eq!(dry.status, StatusCode::OK, "{}", dry.text);
        assert_eq!(dry.body["summary"]["created"], cap, "{}", dry.text);
        assert_eq!(
            gate.started(),
            hashed,
            "a dry run hashes nothing, {}",
            t.kind()
        );
        // A password the import could not take is said in the dry run all the same.
        let weak = page(1).replace("correct horse battery", "x");
        let weak = import(weak, true).await;
        assert_eq!(weak.body["rows"][0]["outcome"], "refused", "{}", weak.text);
        assert!(weak.text.contains("password"), "{}", weak.text);

        let real = import(page(2), false).await;
        assert_eq!(real.body["summary"]["created"], 2, "{}", real.text);
        assert_eq!(
            gate.started(),
            hashed + 2,
            "each password of a real import is hashed"
        );
        t.cleanup().await;
    }
}

/// An export's columns are found in the spellings exports use, singular or plural and
/// in any case (a Bitly export headed `Custom Link` lost every custom back-half without
/// a word), and every column the importer does not read is said, in the dry run and in
/// the result, for each source that has an export file.
#[tokio::test]
async fn an_exports_columns_are_found_however_spelt_and_the_unread_ones_are_said() {
    for (api, t) in apis("import-columns").await {
        for domain in ["go.acme.co", "s.test", "sho.rt", "dub.example"] {
            owned_domain(&api, domain, "acme").await;
        }
        let key = api.key("acme", false).await;
        let files = [
            (
                "bitly",
                "Title,BITLINK,long url,Custom Link,Tag,Notes\n\
                 Spring,https://go.acme.co/spring,https://acme.example/spring,https://go.acme.co/spring-sale,q2,internal\n",
                None,
                vec!["spring", "spring-sale"],
                vec!["Notes"],
            ),
            (
                "shlink",
                "createdAt,domain,shortCode,shortUrl,longUrl,title,tag,visit,crawlable\n\
                 2024-01-01T00:00:00+00:00,s.test,abc,https://s.test/abc,https://acme.example/a,A,x,3,true\n",
                None,
                vec!["abc"],
                vec!["crawlable"],
            ),
            (
                "yourls",
                "Keyword,URL,Title,Timestamp,IP,Click\n\
                 ozh,https://ozh.example/,Ozh,2024-03-05 14:07:33,127.0.0.1,42\n",
                Some("sho.rt"),
                vec!["ozh"],
                vec!["IP"],
            ),
            (
                "dub",
                "Link ID,Short link,Destination URL,Click,Created at,Tag,Archived\n\
                 link_1,https://dub.example/try,https://dub.co/,120,2024-05-01T12:00:00.000Z,x,false\n",
                None,
                vec!["try"],
                vec!["Link ID"],
            ),
        ];
        for (source, file, domain, codes, unused) in files {
            for dry_run in [true, false] {
                let mut body = json!({"source": source, "format": "csv", "content": file,
                    "dry_run": dry_run});
                if let Some(d) = domain {
                    body["domain"] = json!(d);
                }
                let report = api.post_json(&key, "/v1/imports", &body).await;
                assert_eq!(report.status, StatusCode::OK, "{source}: {}", report.text);
                let got: Vec<&str> = report.body["rows"]
                    .as_array()
                    .expect("rows")
                    .iter()
                    .map(|r| r["code"].as_str().unwrap_or_default())
                    .collect();
                assert_eq!(got, codes, "{source}: {}", report.text);
                assert_eq!(
                    report.body["summary"]["created"],
                    codes.len(),
                    "{source} (dry run {dry_run}), {}: {}",
                    t.kind(),
                    report.text
                );
                assert_eq!(
                    report.body["unused_columns"],
                    json!(unused),
                    "{source}: {}",
                    report.text
                );
            }
        }
        // None of these domains is moving: nothing was listed for a fallback (each
        // listed code is a KV write at the edge).
        assert_eq!(api.count("legacy_codes").await, 0);
        // A file whose every column is read says nothing of columns.
        let plain = "Bitlink,Long URL\nhttps://go.acme.co/plain,https://acme.example/p\n";
        let report = api
            .post_json(
                &key,
                "/v1/imports",
                &json!({"source": "bitly", "format": "csv", "content": plain, "dry_run": true}),
            )
            .await;
        assert!(
            report.body.get("unused_columns").is_none(),
            "{}",
            report.text
        );
        t.cleanup().await;
    }
}

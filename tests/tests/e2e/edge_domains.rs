//! A domain's settings at the real edge: registered at the origin, they reach `wrangler
//! dev` as `cfg:{domain}` on the fast lane, and the edge decides by them as the origin
//! does: codes in any case on a case-insensitive domain, the domain's browser caching,
//! its pages for unknown codes and for `/` (never on a banned host), and 404 for
//! everything once disabled. A
//! link created on a domain the edge knows nothing of yet still redirects, through the
//! fallback.

use hop_e2e::{client, poll, Wired};
use reqwest::header::{CACHE_CONTROL, LOCATION};
use reqwest::StatusCode;
use serde_json::json;
use std::cell::RefCell;
use std::time::Duration;

/// The longest a change may take to reach the edge here: the publisher's push, the
/// worker's hold of a domain's settings, with room for a loaded machine.
const DEADLINE: Duration = Duration::from_secs(60);

/// A visitor's `GET path` on `host` at the edge.
async fn visit(w: &Wired, host: &str, path: &str) -> reqwest::Response {
    client()
        .get(w.edge.url(path))
        .header("host", host)
        .send()
        .await
        .expect("edge answers")
}

/// Visits until `done` holds for the answer, or fails after [`DEADLINE`] saying `what`.
async fn until(
    w: &Wired,
    host: &str,
    path: &str,
    what: &str,
    done: impl Fn(&reqwest::Response) -> bool,
) -> reqwest::Response {
    // The last answer, for the failure message.
    let last = RefCell::new(String::new());
    poll(what)
        .within(DEADLINE)
        .every(Duration::from_millis(200))
        .explain(|| format!("still {}\n{}", last.borrow(), w.edge.log()))
        .until(|| async {
            let res = visit(w, host, path).await;
            if done(&res) {
                return Some(res);
            }
            *last.borrow_mut() = format!("{} {:?}", res.status(), res.headers());
            None
        })
        .await
}

fn header(res: &reqwest::Response, name: reqwest::header::HeaderName) -> &str {
    res.headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
}

#[tokio::test]
async fn a_domains_settings_decide_at_the_edge_once_published() {
    let w = Wired::start("ops", true).await;
    let registered = client()
        .post(w.origin.url("/v1/domains"))
        .bearer_auth(&w.key)
        .json(&json!({
            "domain": "go.example",
            "shared": true,
            "alphabet": "base36",
            "code_length": 6,
            "case_insensitive": true,
            "max_age_s": 120,
            "not_found_url": "https://www.example.org/missing",
            "root_url": "https://www.example.org/",
        }))
        .send()
        .await
        .expect("register");
    assert_eq!(registered.status(), StatusCode::CREATED);

    // Created and visited at once, before the edge holds the domain's settings or the
    // link: the fallback asks the origin.
    let link = w
        .origin
        .create(
            &w.key,
            json!({"domain": "go.example", "target_url": "https://dest.example/go"}),
        )
        .await;
    let code = link["code"].as_str().expect("code").to_owned();
    assert_eq!(code.len(), 6, "{link}");
    assert!(
        code.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit()),
        "{code}"
    );
    let first = visit(&w, "go.example", &format!("/{code}")).await;
    assert_eq!(first.status(), StatusCode::FOUND, "{}", w.edge.log());
    assert_eq!(header(&first, LOCATION), "https://dest.example/go");

    // Once the settings arrive, the edge keeps a redirect for the domain's 120 s, and
    // finds the code typed in upper case.
    let upper = format!("/{}", code.to_ascii_uppercase());
    let res = until(&w, "go.example", &upper, "the domain's max-age", |r| {
        header(r, CACHE_CONTROL) == "private, max-age=120"
    })
    .await;
    assert_eq!(res.status(), StatusCode::FOUND);
    assert_eq!(header(&res, LOCATION), "https://dest.example/go");

    // Its pages: an unknown code and `/` go there, never kept by a browser.
    for (path, page) in [
        ("/zzzzzz", "https://www.example.org/missing"),
        ("/", "https://www.example.org/"),
    ] {
        let res = visit(&w, "go.example", path).await;
        assert_eq!(res.status(), StatusCode::FOUND, "{path}");
        assert_eq!(header(&res, LOCATION), page, "{path}");
        assert_eq!(header(&res, CACHE_CONTROL), "no-store", "{path}");
    }
    // A ban of the pages' host: once the edge holds the new denylist, no visitor is
    // sent there (404, without a `Location`).
    let ban = client()
        .post(w.origin.url("/v1/bans"))
        .bearer_auth(&w.key)
        .json(&json!({"kind": "host", "host": "example.org", "reason": "e2e"}))
        .send()
        .await
        .expect("ban");
    assert_eq!(ban.status(), StatusCode::CREATED);
    for path in ["/zzzzzz", "/"] {
        let res = until(&w, "go.example", path, "the ban of the pages' host", |r| {
            r.status() == StatusCode::NOT_FOUND
        })
        .await;
        assert!(res.headers().get(LOCATION).is_none(), "{path}");
    }
    // Lifted (a change of the domain checks its pages again, and would refuse a banned one).
    let ban_id = ban.json::<serde_json::Value>().await.expect("ban")["id"].clone();
    let lifted = client()
        .delete(w.origin.url(&format!("/v1/bans/{ban_id}")))
        .bearer_auth(&w.key)
        .send()
        .await
        .expect("lift");
    assert_eq!(lifted.status(), StatusCode::NO_CONTENT);
    // The default domain has no pages: `/` is a 404 there.
    assert_eq!(
        visit(&w, "s.example", "/").await.status(),
        StatusCode::NOT_FOUND
    );

    // Disabled: everything on it answers 404 once the edge has the new settings.
    let disabled = client()
        .patch(w.origin.url("/v1/domains/go.example"))
        .bearer_auth(&w.key)
        .header("if-match", "\"1\"")
        .json(&json!({"status": "disabled"}))
        .send()
        .await
        .expect("disable");
    assert_eq!(disabled.status(), StatusCode::OK);
    until(&w, "go.example", &format!("/{code}"), "disabled", |r| {
        r.status() == StatusCode::NOT_FOUND
    })
    .await;
    for path in ["/", "/zzzzzz", upper.as_str()] {
        let res = visit(&w, "go.example", path).await;
        assert_eq!(res.status(), StatusCode::NOT_FOUND, "{path}");
        assert!(res.headers().get(LOCATION).is_none(), "{path}");
    }
}

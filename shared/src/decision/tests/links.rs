//! A link's plain answers: redirects, their statuses and cache ages, links gone, bans,
//! methods, the query, corrupt records, and visits not to be recorded.

use super::*;
use crate::decision::responses::NOT_FOUND;

#[test]
fn a_corrupt_target_is_never_a_location_either_way() {
    // Found by fuzzing: the origin's prepared path parsed any scheme and redirected
    // where the edge refused. `run` checks both paths decide alike.
    for target in [
        "javascript:alert(1)",
        "httzs://e.example/a",
        "data:text/html,x",
    ] {
        let d = run(
            Some(&active(target)),
            Method::Get,
            None,
            &Denylist::default(),
        );
        assert_eq!(d.header("location"), None, "{target}");
        assert!(!(300..400).contains(&d.status), "{target}: {}", d.status);
    }
}

#[test]
fn active_link_redirects_with_its_status_and_a_private_max_age() {
    let d = run(
        Some(&active("https://dest.example/x")),
        Method::Get,
        None,
        &Denylist::default(),
    );
    assert_eq!((d.status, d.outcome), (302, Outcome::Redirect));
    assert_eq!(d.header("location"), Some("https://dest.example/x"));
    assert_eq!(d.header("cache-control"), Some("private, max-age=60"));
    assert_eq!(d.body, Body::Empty);

    for code in [301, 307, 308] {
        let rec = EdgeRecord {
            redirect: RedirectStatus::try_from(code).unwrap(),
            ..active("https://dest.example/")
        };
        assert_eq!(
            run(Some(&rec), Method::Head, None, &Denylist::default()).status,
            code
        );
    }
}

#[test]
fn max_age_never_outlives_the_link() {
    let rec = EdgeRecord {
        expires_at: Some(NOW + 40),
        ..active("https://dest.example/")
    };
    let d = run(Some(&rec), Method::Get, None, &Denylist::default());
    assert_eq!(d.header("cache-control"), Some("private, max-age=40"));
    let settings = DomainSettings {
        max_age_s: 30,
        ..DomainSettings::default()
    };
    let route = route();
    let d = decide(
        &visit(&route, Method::Get, None),
        Some(&rec),
        &Denylist::default(),
        &settings,
    );
    assert_eq!(d.header("cache-control"), Some("private, max-age=30"));
}

#[test]
fn expired_and_deleted_links_are_gone() {
    let expired = EdgeRecord {
        expires_at: Some(NOW),
        ..active("https://dest.example/")
    };
    let d = run(Some(&expired), Method::Get, None, &Denylist::default());
    assert_eq!((d.status, d.outcome), (410, Outcome::Expired));
    assert_eq!(d.header("cache-control"), Some("no-store"));
    assert_eq!(d.header("location"), None);

    let deleted = EdgeRecord {
        status: EdgeStatus::Deleted,
        ..active("https://dest.example/")
    };
    let d = run(Some(&deleted), Method::Get, None, &Denylist::default());
    assert_eq!((d.status, d.outcome), (410, Outcome::Deleted));

    // A tombstone the purge emptied has no target: gone, not a corrupt copy (503).
    let purged = EdgeRecord {
        status: EdgeStatus::Deleted,
        ..active("")
    };
    let d = run(Some(&purged), Method::Get, None, &Denylist::default());
    assert_eq!((d.status, d.outcome), (410, Outcome::Deleted));
    let corrupt = active("");
    let d = run(Some(&corrupt), Method::Get, None, &Denylist::default());
    assert_eq!(d.status, 503);
}

#[test]
fn disabled_and_unknown_links_are_not_found() {
    let disabled = EdgeRecord {
        status: EdgeStatus::Disabled,
        ..active("https://dest.example/")
    };
    let d = run(Some(&disabled), Method::Get, None, &Denylist::default());
    assert_eq!((d.status, d.outcome), (404, Outcome::Disabled));
    assert_eq!(d.header("cache-control"), Some("no-store"));
    let d = run(None, Method::Get, None, &Denylist::default());
    assert_eq!((d.status, d.outcome), (404, Outcome::NotFound));
    assert_eq!(d.body, Body::Html(NOT_FOUND));
}

#[test]
fn bans_block_without_a_location_whatever_the_record_says() {
    let rec = active("https://www.evil.example/login");
    for (record, deny) in [
        (Some(&rec), deny(&["s.example/7Fk3aQx"], &[])),
        (None, deny(&["s.example/7Fk3aQx"], &[])),
        (Some(&rec), deny(&[], &["evil.example"])),
        (
            Some(&EdgeRecord {
                status: EdgeStatus::Banned,
                ..active("https://fine.example/")
            }),
            Denylist::default(),
        ),
        (
            Some(&EdgeRecord {
                status: EdgeStatus::Deleted,
                ..rec.clone()
            }),
            deny(&[], &["evil.example"]),
        ),
    ] {
        let d = run(record, Method::Get, None, &deny);
        assert_eq!((d.status, d.outcome), (403, Outcome::Banned), "{record:?}");
        assert_eq!(d.header("location"), None);
        assert_eq!(d.header("cache-control"), Some("no-store"));
        assert_eq!(d.header("content-type"), Some("text/html; charset=utf-8"));
        assert!(matches!(d.body, Body::Html(html) if html.contains("blocked")));
    }
    // A ban of another code or an unrelated host changes nothing.
    let d = run(
        Some(&rec),
        Method::Get,
        None,
        &deny(&["s.example/other12"], &["notevil.example"]),
    );
    assert_eq!(d.status, 302);
}

#[test]
fn head_gets_the_same_status_and_headers_without_a_body() {
    let rec = EdgeRecord {
        status: EdgeStatus::Deleted,
        ..active("https://dest.example/")
    };
    let get = run(Some(&rec), Method::Get, None, &Denylist::default());
    let head = run(Some(&rec), Method::Head, None, &Denylist::default());
    assert_eq!((head.status, &head.headers), (get.status, &get.headers));
    assert_eq!(head.body, Body::Empty);
    assert_ne!(get.body, Body::Empty);
}

#[test]
fn other_methods_are_not_allowed() {
    for method in ["POST", "PUT", "DELETE", "OPTIONS", "get"] {
        let d = run(
            Some(&active("https://dest.example/")),
            Method::parse(method),
            None,
            &Denylist::default(),
        );
        assert_eq!(d.status, 405, "{method}");
        // A code's URL takes a POST only for a password link's form.
        let allow = match method {
            "POST" => "GET, HEAD",
            _ => "GET, HEAD, POST",
        };
        assert_eq!(d.header("allow"), Some(allow), "{method}");
    }
}

#[test]
fn paths_that_cannot_be_codes_are_404_before_any_lookup() {
    for bad in ["", "robots.txt", "a/b", "x%20y", "_hop", "-abc", "é"] {
        let d = reject_early(Method::Get, bad).expect(bad);
        assert_eq!(d.status, 404, "{bad:?}");
    }
    assert_eq!(reject_early(Method::Get, "7Fk3aQx"), None);
    assert_eq!(
        reject_early(Method::Other, "7Fk3aQx").map(|d| d.status),
        Some(405)
    );
}

#[test]
fn query_is_forwarded_only_when_the_link_says_so() {
    let plain = active("https://dest.example/p?a=1#f");
    let d = run(
        Some(&plain),
        Method::Get,
        Some("a=2&b=3"),
        &Denylist::default(),
    );
    assert_eq!(d.header("location"), Some("https://dest.example/p?a=1#f"));
    let fwd = EdgeRecord {
        forward_query: true,
        ..plain
    };
    let d = run(
        Some(&fwd),
        Method::Get,
        Some("a=2&b=3"),
        &Denylist::default(),
    );
    assert_eq!(
        d.header("location"),
        Some("https://dest.example/p?a=1&b=3#f")
    );
}

#[test]
fn a_corrupt_record_is_temporary_trouble_not_a_404() {
    let d = run(
        Some(&active("not a url")),
        Method::Get,
        None,
        &Denylist::default(),
    );
    assert_eq!(d.status, 503);
    assert_eq!(d.header("retry-after"), Some("5"));
}

#[test]
fn a_link_that_asks_not_to_be_recorded_says_so_on_every_answer() {
    let rec = EdgeRecord {
        no_clicks: true,
        ..active("https://shop.example/")
    };
    let none = Denylist::default();
    assert!(run(Some(&rec), Method::Get, None, &none).unrecorded);
    assert!(
        !run(
            Some(&active("https://shop.example/")),
            Method::Get,
            None,
            &none
        )
        .unrecorded
    );
    let gone = EdgeRecord {
        status: EdgeStatus::Deleted,
        ..rec
    };
    assert!(run(Some(&gone), Method::Get, None, &none).unrecorded);
}

/// `scanner_check: false` reaches the edge in the record and every answer of the link
/// says so, through the record's prepared form too (what the edge and origin cache).
#[test]
fn a_link_whose_scanners_count_as_people_says_so_on_every_answer() {
    let rec = EdgeRecord {
        no_scanner_check: true,
        ..active("https://shop.example/")
    };
    assert!(rec.to_json().contains(r#""ns":true"#));
    assert_eq!(EdgeRecord::from_json(&rec.to_json()).unwrap(), rec);
    let prepared = crate::decision::PreparedRecord::new(rec.clone());
    assert_eq!(prepared.to_record(), rec);
    let none = Denylist::default();
    let d = run(Some(&rec), Method::Get, None, &none);
    assert!(d.scanners_unchecked && !d.unrecorded);
    assert!(
        !run(
            Some(&active("https://shop.example/")),
            Method::Get,
            None,
            &none
        )
        .scanners_unchecked
    );
    // A plain link's record does not carry the field at all.
    assert!(!active("https://shop.example/").to_json().contains("ns"));
}

/// A visit limit not yet reached reaches the edge in the record (`lm`), and the
/// answers of the link say so, so that its clicks name their visitor; through the
/// prepared form too. A plain link's record does not carry the field.
#[test]
fn a_link_with_a_visit_limit_says_so_on_its_answers() {
    let rec = EdgeRecord {
        limited: true,
        ..active("https://shop.example/")
    };
    assert!(rec.to_json().contains(r#""lm":true"#));
    assert_eq!(EdgeRecord::from_json(&rec.to_json()).unwrap(), rec);
    let prepared = crate::decision::PreparedRecord::new(rec.clone());
    assert_eq!(prepared.to_record(), rec);
    let none = Denylist::default();
    assert!(run(Some(&rec), Method::Get, None, &none).limited);
    let plain = active("https://shop.example/");
    assert!(!run(Some(&plain), Method::Get, None, &none).limited);
    assert!(!plain.to_json().contains("lm"));
}

//! A domain's own pages (for unknown codes, its root, ended links), a disabled domain,
//! and links that have ended.

use super::*;

#[test]
fn a_domain_sends_unknown_codes_its_root_and_expired_links_to_its_own_pages() {
    let pages = with_pages();
    let none = Denylist::default();
    let d = run_on(None, Method::Get, Some("a=1"), &none, &pages);
    assert_eq!((d.status, d.outcome), (302, Outcome::NotFound));
    assert_eq!(
        d.header("location"),
        Some("https://www.acme.example/missing")
    );
    assert_eq!(d.header("cache-control"), Some("no-store"));
    let expired = EdgeRecord {
        expires_at: Some(NOW - 1),
        ..active("https://dest.example/")
    };
    let d = run_on(Some(&expired), Method::Get, None, &none, &pages);
    assert_eq!((d.status, d.outcome), (302, Outcome::Expired));
    assert_eq!(d.header("location"), Some("https://www.acme.example/ended"));
    // A deleted link is gone, not expired; a banned code is blocked, not unknown.
    let deleted = EdgeRecord {
        status: EdgeStatus::Deleted,
        ..active("https://dest.example/")
    };
    assert_eq!(
        run_on(Some(&deleted), Method::Get, None, &none, &pages).status,
        410
    );
    let banned = deny(&["s.example/7Fk3aQx"], &[]);
    assert_eq!(run_on(None, Method::Get, None, &banned, &pages).status, 403);
    // A path that cannot be a code is a plain 404, decided before any settings.
    let route = RouteKey::new("s.example", "robots.txt").unwrap();
    let d = decide(&visit(&route, Method::Get, None), None, &none, &pages);
    assert_eq!(d.status, 404);

    let root = decide_root(Method::Get, Some((&pages, &none)));
    assert_eq!(
        (root.status, root.header("location")),
        (302, Some("https://www.acme.example/"))
    );
    assert_eq!(root.header("cache-control"), Some("no-store"));
    assert_eq!(
        decide_root(Method::Head, Some((&DomainSettings::default(), &none))).status,
        404
    );
    assert_eq!(decide_root(Method::Get, None).status, 404);
    assert_eq!(
        decide_root(Method::Other, Some((&pages, &none))).status,
        405
    );
}

/// No visitor is sent to a banned host by way of a page: the domain's pages for an
/// unknown code, `/` and an ended link answer as if there were none, and a link
/// whose own page for when it has ended, or whose preview's image, is on a banned
/// host is blocked (the origin marks it banned too).
#[test]
fn no_page_sends_a_visitor_to_a_banned_host() {
    let pages = with_pages();
    let banned = deny(&[], &["acme.example"]);
    let d = run_on(None, Method::Get, None, &banned, &pages);
    assert_eq!((d.status, d.header("location")), (404, None));
    let root = decide_root(Method::Get, Some((&pages, &banned)));
    assert_eq!((root.status, root.header("location")), (404, None));
    let expired = EdgeRecord {
        expires_at: Some(NOW - 1),
        ..active("https://dest.example/")
    };
    let d = run_on(Some(&expired), Method::Get, None, &banned, &pages);
    assert_eq!(
        (d.status, d.outcome, d.header("location")),
        (410, Outcome::Expired, None)
    );
    let exhausted = EdgeRecord {
        exhausted: true,
        ..active("https://dest.example/")
    };
    let d = run_on(Some(&exhausted), Method::Get, None, &banned, &pages);
    assert_eq!((d.status, d.header("location")), (410, None));

    let own_page = EdgeRecord {
        expired_url: Some("https://ended.evil.example/".into()),
        ..active("https://dest.example/")
    };
    let image = EdgeRecord {
        preview: Some(crate::preview::Preview {
            title: Some("t".into()),
            description: None,
            image_url: Some("https://img.evil.example/a.png".into()),
        }),
        ..active("https://dest.example/")
    };
    let evil = deny(&[], &["evil.example"]);
    for record in [own_page, image] {
        let live = run_on(Some(&record), Method::Get, None, &evil, &pages);
        assert_eq!(
            (live.status, live.header("location")),
            (403, None),
            "{record:?}"
        );
        let ended = EdgeRecord {
            expires_at: Some(NOW - 1),
            ..record.clone()
        };
        let d = run_on(Some(&ended), Method::Get, None, &evil, &pages);
        assert_eq!((d.status, d.header("location")), (403, None), "{record:?}");
        // Unbanned, the same link redirects as before.
        let free = run_on(
            Some(&record),
            Method::Get,
            None,
            &Denylist::default(),
            &pages,
        );
        assert_eq!(free.status, 302, "{record:?}");
    }
}

#[test]
fn a_disabled_domain_answers_404_to_everything() {
    let off = DomainSettings {
        status: DomainStatus::Disabled,
        ..with_pages()
    };
    let none = Denylist::default();
    let link = active("https://dest.example/");
    for (record, deny) in [
        (Some(&link), &none),
        (None, &none),
        (Some(&link), &deny(&["s.example/7Fk3aQx"], &[])),
    ] {
        let d = run_on(record, Method::Get, None, deny, &off);
        assert_eq!(
            (d.status, d.outcome),
            (404, Outcome::NotFound),
            "{record:?}"
        );
        assert_eq!(d.header("location"), None);
    }
    assert_eq!(decide_root(Method::Get, Some((&off, &none))).status, 404);
}

#[test]
fn an_expired_link_goes_to_its_own_page_before_its_domain_s() {
    let rec = EdgeRecord {
        expires_at: Some(NOW - 1),
        expired_url: Some("https://shop.example/ended".into()),
        ..active("https://shop.example/")
    };
    let none = Denylist::default();
    for settings in [DomainSettings::default(), with_pages()] {
        let d = run_on(Some(&rec), Method::Get, None, &none, &settings);
        assert_eq!(
            (d.status, d.outcome, d.header("location")),
            (302, Outcome::Expired, Some("https://shop.example/ended"))
        );
    }
}

#[test]
fn a_link_past_its_visit_limit_has_ended_like_an_expired_one() {
    let rec = EdgeRecord {
        exhausted: true,
        ..active("https://shop.example/")
    };
    let none = Denylist::default();
    let d = run(Some(&rec), Method::Get, None, &none);
    assert_eq!((d.status, d.outcome), (410, Outcome::Expired));
    assert_eq!(d.body, Body::Html(EXHAUSTED));
    assert_eq!(d.header("location"), None);
    let with_page = EdgeRecord {
        expired_url: Some("https://shop.example/sold-out".into()),
        ..rec.clone()
    };
    let d = run(Some(&with_page), Method::Get, None, &none);
    assert_eq!(
        (d.status, d.header("location")),
        (302, Some("https://shop.example/sold-out"))
    );
    let d = run_on(Some(&rec), Method::Get, None, &none, &with_pages());
    assert_eq!(d.header("location"), Some("https://www.acme.example/ended"));
    // A ban still comes first.
    let d = run(Some(&rec), Method::Get, None, &deny(&[], &["shop.example"]));
    assert_eq!(d.status, 403);
}

/// A domain moving from another shortener sends a code it has no link for to the same
/// code there, with the visitor's query, never to be kept by a browser (the link may be
/// imported a moment later); ahead of its page for unknown codes. Only a code known to
/// have lived there goes on, and only until the fallback's end date: any other code is
/// the domain's own not-found answer, or anyone with a free link on the old, shared
/// shortener could send the brand's visitors anywhere. An interstitial domain shows
/// its interstitial. A link, a banned code, a ban of the old shortener's host, a
/// disabled domain and a `POST` are answered as without it.
#[test]
fn a_moving_domain_sends_only_its_known_old_codes_to_its_old_shortener() {
    let moving = DomainSettings {
        legacy_url: Some("https://old.example/s".into()),
        legacy_until: Some(NOW + 60),
        ..with_pages()
    };
    let none = Denylist::default();
    let known =
        |record: Option<&EdgeRecord>, method, query, deny: &Denylist, s: &DomainSettings| {
            run_legacy(record, method, query, deny, s, true)
        };
    let d = known(
        None,
        Method::Get,
        Some("utm_source=mail&a=1"),
        &none,
        &moving,
    );
    assert_eq!((d.status, d.outcome), (302, Outcome::Legacy));
    assert_eq!(
        d.header("location"),
        Some("https://old.example/s/7Fk3aQx?utm_source=mail&a=1")
    );
    assert_eq!(d.header("cache-control"), Some("no-store"));
    assert!(
        crate::clicks::counts_as_click(Method::Get, d.outcome),
        "counted per code"
    );
    let head = known(None, Method::Head, None, &none, &moving);
    assert_eq!(
        (head.status, head.header("location")),
        (302, Some("https://old.example/s/7Fk3aQx"))
    );
    assert!(!crate::clicks::counts_as_click(Method::Head, head.outcome));

    // A code nobody said lived there: the domain's page for unknown codes, or 404.
    let d = run_on(None, Method::Get, Some("a=1"), &none, &moving);
    assert_eq!(
        (d.outcome, d.header("location")),
        (Outcome::NotFound, Some("https://www.acme.example/missing"))
    );
    let bare = DomainSettings {
        not_found_url: None,
        ..moving.clone()
    };
    assert_eq!(run_on(None, Method::Get, None, &none, &bare).status, 404);
    // Past its end date, or without one, the fallback stops by itself.
    for ended in [Some(NOW), Some(NOW - 1), None] {
        let s = DomainSettings {
            legacy_until: ended,
            ..bare.clone()
        };
        let d = known(None, Method::Get, None, &none, &s);
        assert_eq!((d.status, d.outcome), (404, Outcome::NotFound), "{ended:?}");
    }
    // An interstitial domain shows the old shortener's address before sending anyone
    // on, as it does for its own links.
    let careful = DomainSettings {
        interstitial: true,
        ..moving.clone()
    };
    let d = known(None, Method::Get, Some("a=1"), &none, &careful);
    assert_eq!((d.status, d.outcome), (200, Outcome::Legacy));
    assert_eq!(d.header("location"), None);
    assert_eq!(d.header("cache-control"), Some("no-store"));
    let page = d.body.text().unwrap_or_default();
    assert!(
        page.contains(r#"href="https://old.example/s/7Fk3aQx?a=1""#),
        "{page}"
    );

    let link = active("https://dest.example/");
    let d = known(Some(&link), Method::Get, None, &none, &moving);
    assert_eq!(d.header("location"), Some("https://dest.example/"));
    let code_banned = deny(&["s.example/7Fk3aQx"], &[]);
    assert_eq!(
        known(None, Method::Get, None, &code_banned, &moving).status,
        403
    );
    // The old shortener banned: the domain's own page for unknown codes, as without it,
    // interstitial or not.
    let host_banned = deny(&[], &["old.example"]);
    for s in [&moving, &careful] {
        let d = known(None, Method::Get, None, &host_banned, s);
        assert_eq!(
            (d.outcome, d.header("location")),
            (Outcome::NotFound, Some("https://www.acme.example/missing"))
        );
    }
    let disabled = DomainSettings {
        status: DomainStatus::Disabled,
        ..moving.clone()
    };
    assert_eq!(known(None, Method::Get, None, &none, &disabled).status, 404);
    assert_eq!(known(None, Method::Post, None, &none, &moving).status, 405);
}

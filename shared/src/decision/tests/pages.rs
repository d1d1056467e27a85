//! Pages instead of a redirect: social previews for crawlers, and interstitials.

use super::*;

#[test]
fn a_previewer_gets_the_preview_page_and_a_browser_the_redirect() {
    let rec = EdgeRecord {
        preview: Some(Preview {
            title: Some("Spring sale".into()),
            ..Preview::default()
        }),
        ..active("https://shop.example/spring")
    };
    let none = Denylist::default();
    let d = run_as(&rec, ua(SLACKBOT), None, 0, &none);
    assert_eq!((d.status, d.outcome), (200, Outcome::Redirect));
    assert_eq!(d.header("content-type"), Some("text/html; charset=utf-8"));
    let page = d.body.text().unwrap();
    assert!(
        page.contains(r#"<meta property="og:title" content="Spring sale">"#),
        "{page}"
    );
    assert!(page.contains(r#"<meta property="og:url" content="https://s.example/7Fk3aQx">"#));
    assert!(page.contains("url=https://shop.example/spring"));
    assert_eq!(d.header("vary"), Some(VARY));
    let d = run_as(&rec, ua(IPHONE), None, 0, &none);
    assert_eq!(
        (d.status, d.header("location")),
        (302, Some("https://shop.example/spring"))
    );
    // A link without a preview redirects previewers like anyone.
    let d = run_as(
        &active("https://shop.example/"),
        ua(SLACKBOT),
        None,
        0,
        &none,
    );
    assert_eq!(d.status, 302);
}

#[test]
fn an_interstitial_link_shows_where_it_goes_instead_of_redirecting() {
    let rec = EdgeRecord {
        interstitial: true,
        ..active("https://xn--bcher-kva.example/x")
    };
    let d = run_as(&rec, ua(DESKTOP), None, 0, &Denylist::default());
    assert_eq!((d.status, d.header("location")), (200, None));
    let page = d.body.text().unwrap();
    assert!(page.contains("bücher.example"), "{page}");
    assert!(page.contains(r#"href="https://xn--bcher-kva.example/x""#));
    // A banned target is blocked before any page names it.
    let d = run_as(
        &rec,
        ua(DESKTOP),
        None,
        0,
        &deny(&[], &["xn--bcher-kva.example"]),
    );
    assert_eq!(d.status, 403);
}

#[test]
fn a_domain_of_untrusted_targets_shows_every_link_s_interstitial() {
    let warned = DomainSettings {
        interstitial: true,
        ..DomainSettings::default()
    };
    let rec = active("https://shop.example/x");
    let d = run_on(Some(&rec), Method::Get, None, &Denylist::default(), &warned);
    assert_eq!((d.status, d.header("location")), (200, None));
    assert!(d.body.text().unwrap_or_default().contains("shop.example"));
    // The setting travels in the domain's config, and an edge that predates it
    // reads the config all the same.
    let json = serde_json::to_string(&warned).unwrap();
    assert!(json.contains(r#""interstitial":true"#), "{json}");
    assert!(!serde_json::to_string(&DomainSettings::default())
        .unwrap()
        .contains("interstitial"));
}

/// On a domain of untrusted targets, a preview never carries a visitor past the
/// interstitial: people (in-app browsers of LINE and Snapchat among them) get the
/// interstitial, and a known crawler gets the preview's tags without the refresh to
/// the target (one that only claims to be a crawler gets no way past either).
#[test]
fn a_domain_s_interstitial_wins_over_a_preview_for_anyone_but_a_crawler() {
    let warned = DomainSettings {
        interstitial: true,
        ..DomainSettings::default()
    };
    let rec = EdgeRecord {
        preview: Some(Preview {
            title: Some("Spring sale".into()),
            ..Preview::default()
        }),
        ..active("https://shop.example/x")
    };
    let route = route();
    let decide_for = |agent: &str| {
        let visit = Visit {
            client: ua(agent),
            ..visit(&route, Method::Get, None)
        };
        decide(&visit, Some(&rec), &Denylist::default(), &warned)
    };
    for person in [
        IPHONE,
        "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148 Safari Line/13.17.0",
        "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/120.0 Mobile Safari/537.36 Snapchat/12.70.0.40 (like Safari/604.1)",
    ] {
        let d = decide_for(person);
        let page = d.body.text().unwrap_or_default().to_owned();
        assert_eq!((d.status, d.header("location")), (200, None), "{person}");
        assert!(!page.contains("og:title"), "{person}: the preview, not the interstitial");
        assert!(!page.contains("http-equiv=\"refresh\""), "{person}: {page}");
    }
    let d = decide_for(SLACKBOT);
    let page = d.body.text().unwrap_or_default();
    assert!(page.contains(r#"content="Spring sale""#), "{page}");
    assert!(!page.contains("http-equiv=\"refresh\""), "{page}");
    // Without the interstitial, the crawler's page still refreshes to the target.
    let plain = run_as(&rec, ua(SLACKBOT), None, 0, &Denylist::default());
    assert!(plain
        .body
        .text()
        .unwrap_or_default()
        .contains("url=https://shop.example/x"));
}

/// Every page a visitor may be answered with, by what brings it on.
fn every_visitor_page() -> Vec<(&'static str, String)> {
    use crate::decision::responses::{DELETED, DISABLED, EXHAUSTED, EXPIRED, NOT_FOUND, PRIVATE};
    let route = RouteKey::new("s.example", "pass1").expect("route");
    let preview = Preview {
        title: Some("Spring sale".into()),
        ..Preview::default()
    };
    let mut pages: Vec<(&'static str, String)> = [
        ("not found", NOT_FOUND),
        ("disabled", DISABLED),
        ("expired", EXPIRED),
        ("exhausted", EXHAUSTED),
        ("deleted", DELETED),
        ("private", PRIVATE),
    ]
    .into_iter()
    .map(|(name, page)| (name, page.to_owned()))
    .collect();
    for (name, d) in [
        ("blocked", Decision::banned(Method::Get)),
        ("unavailable", Decision::unavailable(Method::Get, 5)),
    ] {
        pages.push((name, d.body.text().unwrap_or_default().to_owned()));
    }
    pages.push((
        "interstitial",
        crate::interstitial::page("https://shop.example/"),
    ));
    pages.push((
        "password",
        crate::password::form(&route, crate::password::Form::Wrong),
    ));
    pages.push((
        "preview's fallback",
        preview.page("https://s.example/x", "https://shop.example/", false),
    ));
    pages
}

#[test]
fn every_page_a_visitor_may_get_has_the_one_style_and_loads_nothing() {
    let style = crate::html::visitor_style!();
    for (name, page) in every_visitor_page() {
        for must in [
            "<!doctype html>",
            "<html lang=\"en\">",
            "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">",
            style,
            "<h1>",
            "<main>",
        ] {
            assert!(page.contains(must), "{name} lacks {must}: {page}");
        }
        // Nothing from anywhere else: no script, no stylesheet, no image, no frame.
        for never in [
            "<script", "<link", "<img", "<iframe", "src=", "@import", "url(",
        ] {
            assert!(!page.contains(never), "{name} has {never}: {page}");
        }
    }
}

#[test]
fn a_brand_domains_visitors_get_its_name_and_colour_and_others_hops_look() {
    let brand = crate::brand::Brand::check("Acme Shop", "#8A1C1C").expect("a brand");
    let settings = DomainSettings {
        brand: Some(brand),
        ..DomainSettings::default()
    };
    let none = Denylist::default();
    let route = RouteKey::new("s.example", "7Fk3aQx").expect("route");
    let visit = Visit {
        method: Method::Get,
        route: &route,
        query: None,
        now_ms: 0,
        client: Client::default(),
        draw: 0,
        access_granted: false,
        legacy_known: false,
    };
    let unknown = decide(&visit, None, &none, &settings);
    assert_eq!(unknown.status, 404);
    let page = unknown.body.text().expect("a page");
    assert!(page.contains("<p class=\"brand\">Acme Shop</p>"), "{page}");
    assert!(page.contains("#8a1c1c"), "{page}");
    let plain = decide(&visit, None, &none, &DomainSettings::default());
    assert!(!plain
        .body
        .text()
        .expect("a page")
        .contains("class=\"brand\""));
    // A HEAD has no page to dress.
    let head = decide(
        &Visit {
            method: Method::Head,
            ..visit
        },
        None,
        &none,
        &settings,
    );
    assert_eq!(head.body, Body::Empty);
    let root = decide_root(Method::Get, Some((&settings, &none)));
    assert!(root.body.text().expect("a page").contains("Acme Shop"));
}

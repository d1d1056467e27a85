//! Targeting rules and splits: which target a visit gets.

use super::*;

#[test]
fn the_first_rule_that_holds_picks_the_target_else_the_link_s_own() {
    let rec = targeted();
    let none = Denylist::default();
    let to = |client, query| {
        let d = run_as(&rec, client, query, 0, &none);
        assert_eq!(d.status, 302);
        d.header("location").map(str::to_owned)
    };
    assert_eq!(
        to(ua(IPHONE), None).as_deref(),
        Some("https://apps.example/ios")
    );
    let german = Client {
        user_agent: DESKTOP,
        accept_language: "de-CH,de;q=0.9,en;q=0.8",
        country: None,
    };
    assert_eq!(to(german, None).as_deref(), Some("https://shop.example/de"));
    // An iPhone in German still gets the first rule.
    let german_iphone = Client {
        user_agent: IPHONE,
        ..german
    };
    assert_eq!(
        to(german_iphone, None).as_deref(),
        Some("https://apps.example/ios")
    );
    assert_eq!(
        to(ua(DESKTOP), Some("ref=tv")).as_deref(),
        Some("https://shop.example/tv")
    );
    assert_eq!(
        to(ua(DESKTOP), Some("ref=radio")).as_deref(),
        Some("https://shop.example/")
    );
    assert_eq!(
        to(Client::default(), None).as_deref(),
        Some("https://shop.example/")
    );
    // The answer depends on the request's headers: caches are told.
    let d = run_as(&rec, ua(DESKTOP), None, 0, &none);
    assert_eq!(d.header("vary"), Some(VARY));
    assert_eq!(d.variant, None);
}

#[test]
fn the_winning_target_gets_the_visitor_s_query_when_the_link_forwards_it() {
    let rec = EdgeRecord {
        forward_query: true,
        ..targeted()
    };
    let d = run_as(
        &rec,
        ua(IPHONE),
        Some("utm_source=x"),
        0,
        &Denylist::default(),
    );
    assert_eq!(
        d.header("location"),
        Some("https://apps.example/ios?utm_source=x")
    );
}

#[test]
fn a_ban_of_any_target_s_host_blocks_every_visit_of_the_link() {
    let split_to_banned = EdgeRecord {
        split: Some(split(&[50, 50])),
        ..active("https://shop.example/")
    };
    for (rec, banned) in [
        (targeted(), "apps.example"),
        (split_to_banned, "v1.example"),
    ] {
        let deny = deny(&[], &[banned]);
        for client in [ua(IPHONE), ua(DESKTOP), Client::default()] {
            for draw in [0, 50] {
                let d = run_as(&rec, client, None, draw, &deny);
                assert_eq!((d.status, d.outcome), (403, Outcome::Banned), "{banned}");
                assert_eq!(d.header("location"), None);
            }
        }
    }
    // Unrelated hosts change nothing.
    let d = run_as(
        &targeted(),
        ua(IPHONE),
        None,
        0,
        &deny(&[], &["other.example"]),
    );
    assert_eq!(d.header("location"), Some("https://apps.example/ios"));
    // A corrupt rule target is never a location.
    let rec = EdgeRecord {
        rules: vec![rule(r#"{"device":["ios"]}"#, "javascript:alert(1)")],
        ..active("https://shop.example/")
    };
    let d = run_as(&rec, ua(IPHONE), None, 0, &Denylist::default());
    assert_eq!((d.status, d.header("location")), (503, None));
}

#[test]
fn no_cache_keeps_an_answer_past_a_rule_s_start_or_end() {
    let rec = EdgeRecord {
        rules: vec![rule(
            &format!(r#"{{"after":{}}}"#, NOW * 1000 + 12_500),
            "https://shop.example/launch",
        )],
        ..active("https://shop.example/")
    };
    let d = run_as(&rec, Client::default(), None, 0, &Denylist::default());
    assert_eq!(d.header("location"), Some("https://shop.example/"));
    assert_eq!(d.header("cache-control"), Some("private, max-age=13"));
}

#[test]
fn a_split_sends_each_draw_to_its_variant_and_says_which() {
    let rec = EdgeRecord {
        split: Some(split(&[30, 70])),
        ..active("https://shop.example/")
    };
    let none = Denylist::default();
    for (draw, variant) in [(0, 0), (29, 0), (30, 1), (99, 1), (100, 0), (130, 1)] {
        let d = run_as(&rec, Client::default(), None, draw, &none);
        let expected = format!("https://v{variant}.example/");
        assert_eq!(d.header("location"), Some(expected.as_str()), "{draw}");
        assert_eq!(d.variant, Some(variant), "{draw}");
    }
    // A rule that holds wins over the split, and no variant is reported.
    let both = EdgeRecord {
        rules: targeted().rules,
        ..rec
    };
    let d = run_as(&both, ua(IPHONE), None, 30, &none);
    assert_eq!(
        (d.header("location"), d.variant),
        (Some("https://apps.example/ios"), None)
    );
    let d = run_as(&both, ua(DESKTOP), None, 30, &none);
    assert_eq!(d.variant, Some(1));
}

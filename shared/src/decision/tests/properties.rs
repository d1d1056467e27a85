//! Properties of the decision over generated visits and records.

use super::*;

proptest::proptest! {
    /// A link without rules, split, preview or interstitial decides exactly as
    /// before they existed: nothing of the visitor's headers or draw matters.
    #[test]
    fn a_plain_link_ignores_the_client_and_the_draw(
        user_agent in ".{0,80}",
        accept_language in ".{0,40}",
        country in proptest::option::of("[A-Z]{2}"),
        draw in proptest::num::u32::ANY,
        query in proptest::option::of("[a-z0-9=&]{0,10}"),
        forward_query in proptest::bool::ANY,
    ) {
        let rec = EdgeRecord { forward_query, ..active("https://shop.example/p?a=1") };
        let client = Client { user_agent: &user_agent, accept_language: &accept_language, country: country.as_deref() };
        let with = run_as(&rec, client, query.as_deref(), draw, &Denylist::default());
        let without = run_as(&rec, Client::default(), query.as_deref(), 0, &Denylist::default());
        proptest::prop_assert_eq!(with, without);
    }

    /// Whatever the visit, the location is the link's own target, a rule's or a
    /// variant's (with the query merged as the link says): never anything else.
    #[test]
    fn the_location_is_always_one_of_the_link_s_targets(
        ios in proptest::bool::ANY,
        lang in proptest::sample::select(vec!["", "de-CH,de;q=0.9", "fr", "en-US"]),
        query in proptest::option::of(proptest::sample::select(vec!["ref=tv", "ref=x", "a=1"])),
        draw in proptest::num::u32::ANY,
        with_split in proptest::bool::ANY,
        forward_query in proptest::bool::ANY,
    ) {
        let rec = EdgeRecord {
            forward_query,
            split: with_split.then(|| split(&[50, 25, 25])),
            ..targeted()
        };
        let client = Client { user_agent: if ios { IPHONE } else { DESKTOP }, accept_language: lang, country: None };
        let d = run_as(&rec, client, query, draw, &Denylist::default());
        let location = d.header("location").unwrap_or_default();
        let mut targets: Vec<String> = rec.rules.iter().map(|r| r.target_url.clone()).collect();
        targets.push(rec.target.clone());
        targets.extend(rec.split.iter().flat_map(|s| s.variants().iter().map(|v| v.target_url.clone())));
        let base = location.split('?').next().unwrap_or_default();
        proptest::prop_assert!(targets.iter().any(|t| t.split('?').next() == Some(base)), "{}", location);
        proptest::prop_assert!(crate::target::validate_target(location).is_ok());
    }

    /// Reading the host off the stored target and parsing it only to merge a query
    /// decides exactly as parsing it up front does, bans on its host included.
    #[test]
    fn the_stored_target_decides_as_the_parsed_one(
        host in "[a-z]{1,8}(\\.[a-z]{1,8}){1,2}",
        port in proptest::option::of(1u16..),
        path in "(/[a-zA-Z0-9%. é]{0,6}){0,3}",
        target_query in proptest::option::of("[a-z0-9=&%]{0,10}"),
        visitor_query in proptest::option::of("[a-z0-9=&%é ]{0,10}"),
        forward_query: bool,
        ban_host: bool,
        max_age_s in 0u32..4000,
        disabled: bool,
        pages: bool,
        expires_in in proptest::option::of(-5i64..100),
    ) {
        let raw = format!(
            "https://{host}{}{path}{}",
            port.map(|p| format!(":{p}")).unwrap_or_default(),
            target_query.map(|q| format!("?{q}")).unwrap_or_default(),
        );
        let Ok(url) = Url::parse(&raw) else { return Ok(()) };
        let record = EdgeRecord {
            forward_query,
            expires_at: expires_in.map(|s| NOW + s),
            ..active(url.as_str())
        };
        let hosts: &[&str] = if ban_host { &[host.as_str()] } else { &[] };
        let deny = deny(&[], hosts);
        // Any settings a domain may have: `run_on` checks that the edge's path (the
        // stored record) and the origin's (the prepared one) decide alike.
        let settings = DomainSettings {
            max_age_s,
            status: if disabled { DomainStatus::Disabled } else { DomainStatus::Active },
            ..if pages { with_pages() } else { DomainSettings::default() }
        };
        let d = run_on(Some(&record), Method::Get, visitor_query.as_deref(), &deny, &settings);
        let expired = expires_in.is_some_and(|s| s <= 0);
        let expected = match () {
            _ if disabled => 404,
            _ if ban_host => 403,
            _ if expired && !pages => 410,
            _ => 302,
        };
        proptest::prop_assert_eq!(d.status, expected);
        let unknown = run_on(None, Method::Get, None, &deny, &settings);
        proptest::prop_assert_eq!(unknown.status, if pages && !disabled { 302 } else { 404 });
    }
}

//! A stored edge record, as KV may hold it (or as a corrupted copy): parsed and decided
//! for a visit (GET, HEAD, and the POST of a password link's form) without a panic, and
//! a record that parses survives its own round trip.
#![no_main]

use libfuzzer_sys::fuzz_target;
use shared::{decide, Denylist, DomainSettings, EdgeRecord, Method, RouteKey, Visit};

fuzz_target!(|data: &[u8]| {
    let Ok(raw) = std::str::from_utf8(data) else {
        return;
    };
    let (json, query) = raw.split_once('\u{0}').unwrap_or((raw, ""));
    let Ok(record) = EdgeRecord::from_json(json) else {
        return;
    };
    assert_eq!(
        EdgeRecord::from_json(&record.to_json()).ok().as_ref(),
        Some(&record)
    );
    let Some(route) = RouteKey::new("s.example", "abc1234") else {
        return;
    };
    for method in [Method::Get, Method::Head, Method::Post] {
        let visit = Visit {
            method,
            route: &route,
            query: Some(query),
            now_ms: 1_800_000_000_000,
            client: shared::decision::Client {
                user_agent: query,
                accept_language: query,
                country: query.get(..2),
            },
            draw: u32::from(data.first().copied().unwrap_or_default()),
            access_granted: data.len() % 2 == 0,
            legacy_known: data.len() % 3 == 0,
        };
        let d = decide(
            &visit,
            Some(&record),
            &Denylist::default(),
            &DomainSettings::default(),
        );
        // A POST (a password link's form) is sent back to the short URL to look again,
        // never on to the target: a 307 or 308 would post the password there.
        if method == Method::Post && d.status == 303 {
            let location = d.header("location").expect("a Location");
            assert!(location.starts_with("/abc1234"), "{location}");
        // A redirect always says where to, and only to an http(s) URL.
        } else if (300..400).contains(&d.status) {
            let location = d.header("location").expect("a Location");
            assert!(location.starts_with("http://") || location.starts_with("https://"));
        }
        let prepared = shared::PreparedRecord::new(record.clone());
        let p = shared::decide_prepared(
            &visit,
            Some(&prepared),
            &Denylist::default(),
            &DomainSettings::default(),
        );
        assert_eq!(p.status, d.status, "both ways decide alike");
        assert_eq!(p.header("location"), d.header("location"));
    }
});

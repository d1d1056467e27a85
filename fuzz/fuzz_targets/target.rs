//! A link's target as a marketer (or an attacker) writes it: validated, judged public or
//! not, and merged with a visitor's query without a panic. Validation is idempotent, and
//! a host the policy calls public is never an address outside the public internet.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(raw) = std::str::from_utf8(data) else {
        return;
    };
    let (target, query) = raw.split_once('\u{0}').unwrap_or((raw, ""));
    let Ok(valid) = shared::validate_target(target) else {
        return;
    };
    let again = shared::validate_target(valid.as_str()).expect("a normalized target is valid");
    assert_eq!(again.as_str(), valid.as_str());
    assert_eq!(again.non_public(), valid.non_public());
    if valid.non_public().is_none() {
        if let Some(ip) = valid.ip() {
            assert!(
                !ip.is_loopback() && !ip.is_unspecified() && !ip.is_multicast(),
                "{ip}"
            );
            if let std::net::IpAddr::V4(v4) = ip {
                assert!(!v4.is_private() && !v4.is_link_local(), "{v4}");
            }
        }
    }
    let mut url = url::Url::parse(valid.as_str()).expect("parses");
    shared::target::merge_query(&mut url, Some(query));
});

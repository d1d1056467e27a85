//! The denylist snapshot as KV may hold it: parsed and asked about hosts and codes
//! without a panic; a banned host also blocks its subdomains.
#![no_main]

use libfuzzer_sys::fuzz_target;
use shared::{Denylist, RouteKey};

fuzz_target!(|data: &[u8]| {
    let Ok(raw) = std::str::from_utf8(data) else {
        return;
    };
    let (json, probe) = raw.split_once('\u{0}').unwrap_or((raw, "evil.example"));
    let Ok(deny) = Denylist::from_json(json) else {
        return;
    };
    let _ = deny.version();
    if deny.blocks_host(probe) && !probe.is_empty() {
        assert!(deny.blocks_host(&format!("www.{probe}")), "{probe}");
    }
    if let Some(route) = RouteKey::parse(probe) {
        let _ = deny.blocks_code(&route);
    }
});

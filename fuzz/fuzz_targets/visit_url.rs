//! A visited URL as the runtime serializes it: split without a panic, and whatever is
//! accepted has a host and a path that starts with `/`, both inside the input.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(raw) = std::str::from_utf8(data) else {
        return;
    };
    if let Some(v) = shared::VisitUrl::from_serialized(raw) {
        assert!(!v.host.is_empty());
        assert!(v.path.starts_with('/'));
        assert!(raw.contains(v.host) && raw.contains(v.path));
    }
    // What a real parser serializes is always accepted, with the same host.
    if let Ok(url) = url::Url::parse(raw) {
        if matches!(url.scheme(), "http" | "https") && url.host_str().is_some_and(|h| !h.is_empty())
        {
            let serialized = url.as_str();
            let v = shared::VisitUrl::from_serialized(serialized).expect("a serialization");
            assert_eq!(Some(v.host), url.host_str());
        }
    }
});

//! A sync push item, as a sync-token holder could send it: judged without a panic, and
//! an item judged writable carries a value whose own version is the one offered, and
//! is never judged writable over itself.
#![no_main]

use libfuzzer_sys::fuzz_target;
use shared::sync::{judge, version_of, SyncItem};

fuzz_target!(|data: &[u8]| {
    let Ok(raw) = std::str::from_utf8(data) else {
        return;
    };
    let mut parts = raw.splitn(3, '\u{0}');
    let (Some(key), Some(value)) = (parts.next(), parts.next()) else {
        return;
    };
    let held = parts.next();
    let version = version_of(key, value).unwrap_or(1);
    let item = SyncItem {
        key: key.to_owned(),
        value: value.to_owned(),
        version,
        expiration: None,
    };
    if judge(&item, held).is_ok() {
        assert_eq!(version_of(key, value), Some(version));
        assert!(judge(&item, Some(value)).is_err(), "the same version twice");
    }
});

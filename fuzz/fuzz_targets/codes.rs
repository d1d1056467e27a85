//! A visitor's path as a code: classified, decoded and checked as an alias without a
//! panic, and a generated-looking code decodes to a value that encodes back to it.
#![no_main]

use libfuzzer_sys::fuzz_target;
use shared::{Alphabet, CodeKind, CodeSpace};

fuzz_target!(|data: &[u8]| {
    let Ok(code) = std::str::from_utf8(data) else {
        return;
    };
    let _ = shared::codes::is_plausible_code(code);
    let _ = shared::reject_early(shared::Method::Get, code);
    for alphabet in Alphabet::ALL {
        for length in [5u8, 7, 9] {
            let Ok(space) = CodeSpace::new(alphabet, length) else {
                continue;
            };
            let kind = shared::codes::classify(code, &space);
            let _ = shared::codes::validate_alias(code, &space);
            if kind == Some(CodeKind::Generated) {
                let value = space.decode(code).expect("a generated shape decodes");
                assert_eq!(space.encode(value).expect("re-encodes"), code);
            }
        }
    }
});

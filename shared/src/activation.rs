//! The activation window: which unknown codes the edge asks the origin about.
//!
//! KV catches up with new links after a while; until then the edge must not answer 404
//! for them. A generated code decodes to a link id, and the origin publishes the range of
//! ids issued recently (`meta:activation`). A code whose id falls in that range (plus a
//! margin for segments reserved since the meta was read) may be new: the edge asks the
//! origin. Any other generated code — a random or enumerated one, almost always — is
//! answered 404 at the edge without calling anyone.

use crate::codes::{classify, CodeKind, CodeSpace};
use crate::permutation::{CodeCodec, KeyRing};
use serde::{Deserialize, Serialize};

/// `meta:activation`, as the publisher writes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActivationMeta {
    /// The first id of the oldest segment reserved within the window.
    pub low: u64,
    /// The end of the newest segment reserved.
    pub high: u64,
    /// Ids past `high` that may have been issued since (one segment).
    pub headroom: u64,
    /// When the meta was computed, Unix seconds.
    pub at: i64,
}

impl ActivationMeta {
    pub fn from_json(json: &str) -> Result<Self, serde_json::Error> {
        serde_json::from_str(json)
    }

    /// Whether `id` may belong to a link too new for KV.
    pub fn covers(&self, id: u64) -> bool {
        self.low <= id && id < self.high.saturating_add(self.headroom)
    }
}

/// Whether the edge should ask the origin about `code`, which KV does not hold.
///
/// - No code in this space (bad shape, reserved word): no.
/// - A custom-shaped code cannot be dated: yes (the caller limits how often).
/// - A generated code: yes when, under some key version, its id is in the window. With
///   no meta yet (nothing published) or no keys to decode with, it cannot be dated
///   either: yes, since a missing meta must never hide a new link.
pub fn may_be_new(
    code: &str,
    space: &CodeSpace,
    keys: Option<&KeyRing>,
    meta: Option<&ActivationMeta>,
) -> bool {
    match classify(code, space) {
        None => false,
        Some(CodeKind::Custom) => true,
        Some(CodeKind::Generated) => {
            let (Some(keys), Some(meta)) = (keys, meta) else {
                return true;
            };
            link_ids(code, space, keys).any(|id| meta.covers(id))
        }
    }
}

/// The ids a generated code stands for, one per key version that decodes it, newest
/// key first.
pub fn link_ids<'a>(
    code: &'a str,
    space: &'a CodeSpace,
    keys: &'a KeyRing,
) -> impl Iterator<Item = u64> + 'a {
    keys.versions_newest_first().filter_map(move |version| {
        CodeCodec::new(keys, version, *space)
            .ok()?
            .link_id_of(code)
            .ok()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const RING: &str = "1:000102030405060708090a0b0c0d0e0f";

    fn setup() -> (CodeSpace, KeyRing) {
        (CodeSpace::default(), KeyRing::parse(RING).unwrap())
    }

    #[test]
    fn codes_of_recent_ids_ask_the_origin_and_others_do_not() {
        let (space, keys) = setup();
        let codec = CodeCodec::new(&keys, 1, space).unwrap();
        let meta = ActivationMeta {
            low: 10_000,
            high: 30_000,
            headroom: 10_000,
            at: 0,
        };
        for id in [10_000, 29_999, 30_000, 39_999] {
            let code = codec.code_for(id).unwrap();
            assert!(may_be_new(&code, &space, Some(&keys), Some(&meta)), "{id}");
        }
        for id in [0, 9_999, 40_000, 3_000_000_000] {
            let code = codec.code_for(id).unwrap();
            assert!(!may_be_new(&code, &space, Some(&keys), Some(&meta)), "{id}");
        }
    }

    #[test]
    fn what_cannot_be_dated_asks_and_what_is_no_code_does_not() {
        let (space, keys) = setup();
        let code = CodeCodec::new(&keys, 1, space)
            .unwrap()
            .code_for(5)
            .unwrap();
        assert!(may_be_new(&code, &space, Some(&keys), None), "no meta yet");
        assert!(may_be_new(&code, &space, None, None), "no keys");
        assert!(
            may_be_new("spring-sale", &space, Some(&keys), None),
            "custom alias"
        );
        assert!(!may_be_new("a/b", &space, Some(&keys), None));
        assert!(
            !may_be_new("metrics", &space, Some(&keys), None),
            "reserved"
        );
    }

    #[test]
    fn the_meta_is_read_as_the_publisher_writes_it() {
        let meta =
            ActivationMeta::from_json(r#"{"low":1,"high":20000,"headroom":10000,"at":7}"#).unwrap();
        assert_eq!((meta.low, meta.high, meta.headroom), (1, 20_000, 10_000));
        assert!(meta.covers(29_999) && !meta.covers(30_000) && !meta.covers(0));
    }
}

//! The activation window: which unknown codes the edge asks the origin about.
//!
//! KV catches up with new links after a while; until then the edge must not answer 404
//! for them. A generated code decodes to a number of its domain's code sequence, and the
//! origin publishes, per domain, the range of numbers issued recently
//! (`meta:activation:{domain}`). A code whose number falls in that range (plus a margin
//! for segments reserved since the meta was read) may be new: the edge asks the origin. Any other generated code — a random or enumerated one, almost always — is
//! answered 404 at the edge without calling anyone.

use crate::codes::{classify, CodeKind, CodeSpace};
use crate::permutation::{CodeCodec, KeyRing};
use serde::{Deserialize, Serialize};

/// How long a meta's promise holds unless it says otherwise, in seconds.
pub const DEFAULT_WINDOW_S: u64 = 600;

fn default_window() -> u64 {
    DEFAULT_WINDOW_S
}

/// `meta:activation:{domain}`, as the publisher writes it: a promise that, until `at +
/// w`, no number of the domain's code sequence at or past `high + headroom` is issued,
/// and that every number below `low` belongs to a link KV already holds everywhere (or
/// to none).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActivationMeta {
    /// Ids below this are settled: KV holds their links (or there are none).
    pub low: u64,
    /// The end of the newest segment reserved.
    pub high: u64,
    /// Ids past `high` that may be issued before the promise runs out.
    pub headroom: u64,
    /// When the meta was computed, Unix seconds (the database's clock).
    pub at: i64,
    /// How long the promise holds, in seconds.
    #[serde(rename = "w", default = "default_window")]
    pub window_s: u64,
    /// The meta's version (newer metas have higher ones); older metas carried none and
    /// were versioned by `high`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub v: Option<u64>,
    /// Until when (Unix seconds) the domain may hold codes imported from another
    /// shortener that KV does not hold yet: their numbers are anyone's, so until then
    /// no code the window does not cover is answered 404 unasked (it cannot be dated).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub f: Option<i64>,
}

/// What the edge may conclude about a code KV does not hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NewCode {
    /// No link can have it: answer 404 without asking anyone.
    No,
    /// A generated code in the activation window: it may be a link too new for KV.
    InWindow,
    /// It cannot be dated (a custom alias; no meta or keys; a meta older than its own
    /// promise): it may exist, and asking costs the origin, so the caller limits it.
    Undatable,
}

impl ActivationMeta {
    pub fn from_json(json: &str) -> Result<Self, serde_json::Error> {
        serde_json::from_str(json)
    }

    /// The JSON stored in KV.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// The version the sync endpoint compares.
    pub fn version(&self) -> u64 {
        self.v.unwrap_or(self.high)
    }

    /// Whether the promise has run out at `now_s` (Unix seconds): the origin may have
    /// issued any id since.
    pub fn is_stale(&self, now_s: i64) -> bool {
        let until = self
            .at
            .saturating_add(i64::try_from(self.window_s).unwrap_or(i64::MAX));
        now_s > until
    }

    /// Whether `id` lies in the window `[low, high + headroom)`.
    pub fn covers(&self, id: u64) -> bool {
        self.low <= id && id < self.high.saturating_add(self.headroom)
    }

    /// Whether codes imported from another shortener may still be missing from KV at
    /// `now_s` (see [`ActivationMeta::f`]).
    pub fn importing(&self, now_s: i64) -> bool {
        self.f.is_some_and(|until| now_s <= until)
    }

    /// What a generated code of link id `id` may be at `now_s`.
    pub fn date(&self, id: u64, now_s: i64) -> NewCode {
        if self.importing(now_s) && (self.is_stale(now_s) || !self.covers(id)) {
            // An imported code's number says nothing of when it was made.
            NewCode::Undatable
        } else if id < self.low {
            NewCode::No
        } else if self.is_stale(now_s) {
            // The promise ran out: any id at or past `low` may be new.
            NewCode::Undatable
        } else if self.covers(id) {
            NewCode::InWindow
        } else {
            NewCode::No
        }
    }
}

/// What the edge may conclude about `code`, which KV does not hold, at `now_s`.
///
/// - No code in this space (bad shape, reserved word): [`NewCode::No`].
/// - A custom-shaped code cannot be dated.
/// - A generated code is dated by its id under each key version: in the window under
///   any, it may be new; with no meta (nothing published yet), no keys to decode with,
///   or a meta past its promise, it cannot be dated, since a missing or stale meta must
///   never hide a new link.
pub fn may_be_new(
    code: &str,
    space: &CodeSpace,
    keys: Option<&KeyRing>,
    meta: Option<&ActivationMeta>,
    now_s: i64,
) -> NewCode {
    match classify(code, space) {
        // A code too short for an alias may be an imported one.
        None if meta.is_some_and(|m| m.importing(now_s))
            && crate::codes::validate_imported_code(code).is_ok() =>
        {
            NewCode::Undatable
        }
        None => NewCode::No,
        Some(CodeKind::Custom) => NewCode::Undatable,
        // A random code stands for no number of a sequence (docs/random-codes.md).
        Some(CodeKind::Generated) if space.is_random() => NewCode::Undatable,
        Some(CodeKind::Generated) => {
            let (Some(keys), Some(meta)) = (keys, meta) else {
                return NewCode::Undatable;
            };
            code_numbers(code, space, keys)
                .map(|id| meta.date(id, now_s))
                .fold(NewCode::No, |best, d| match (best, d) {
                    (NewCode::InWindow, _) | (_, NewCode::InWindow) => NewCode::InWindow,
                    (NewCode::Undatable, _) | (_, NewCode::Undatable) => NewCode::Undatable,
                    _ => NewCode::No,
                })
        }
    }
}

/// The numbers of its domain's code sequence a generated code stands for, one per key
/// version that decodes it, newest key first.
pub fn code_numbers<'a>(
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
    const NOW: i64 = 1_800_000_000;

    fn setup() -> (CodeSpace, KeyRing) {
        (CodeSpace::default(), KeyRing::parse(RING).unwrap())
    }

    fn meta(at: i64) -> ActivationMeta {
        ActivationMeta {
            low: 10_000,
            high: 30_000,
            headroom: 10_000,
            at,
            window_s: 600,
            v: Some(7),
            f: None,
        }
    }

    /// While a domain imports codes from another shortener, no code it may hold is
    /// answered 404 unasked: not one of the generated shape outside the window (below
    /// `low` too), nor one shorter than an alias; a random path still is, and so is
    /// everything once the import's window has passed.
    /// A random domain's codes stand for no number: an unknown one of the generated
    /// shape cannot be dated, whatever the meta says; other paths are still refused.
    #[test]
    fn a_random_domains_codes_cannot_be_dated() {
        let (_, keys) = setup();
        let space = CodeSpace::random(crate::Alphabet::Base62, 10).unwrap();
        let m = meta(NOW);
        for code in ["Ab3dEf9hIj", "0000000000"] {
            assert_eq!(
                may_be_new(code, &space, Some(&keys), Some(&m), NOW),
                NewCode::Undatable
            );
        }
        assert_eq!(
            may_be_new("has/slash", &space, Some(&keys), Some(&m), NOW),
            NewCode::No
        );
        assert_eq!(
            may_be_new("api", &space, Some(&keys), Some(&m), NOW),
            NewCode::No
        );
    }

    #[test]
    fn while_a_domain_imports_codes_no_code_it_may_hold_is_dated_away() {
        let (space, keys) = setup();
        let codec = CodeCodec::new(&keys, 1, space).unwrap();
        let importing = ActivationMeta {
            f: Some(NOW + 60),
            ..meta(NOW)
        };
        for id in [0, 9_999, 40_000, 3_000_000_000] {
            let code = codec.code_for(id).unwrap();
            assert_eq!(
                may_be_new(&code, &space, Some(&keys), Some(&importing), NOW),
                NewCode::Undatable,
                "{id}"
            );
            assert_eq!(
                may_be_new(&code, &space, Some(&keys), Some(&importing), NOW + 61),
                NewCode::No,
                "{id} after the import's window"
            );
        }
        let in_window = codec.code_for(20_000).unwrap();
        assert_eq!(
            may_be_new(&in_window, &space, Some(&keys), Some(&importing), NOW),
            NewCode::InWindow
        );
        for short in ["a", "x9"] {
            assert_eq!(
                may_be_new(short, &space, Some(&keys), Some(&importing), NOW),
                NewCode::Undatable,
                "{short}"
            );
            assert_eq!(
                may_be_new(short, &space, Some(&keys), Some(&meta(NOW)), NOW),
                NewCode::No
            );
        }
        for never in ["robots.txt", "-x", "metrics"] {
            assert_eq!(
                may_be_new(never, &space, Some(&keys), Some(&importing), NOW),
                NewCode::No,
                "{never}"
            );
        }
    }

    #[test]
    fn codes_of_recent_ids_ask_the_origin_and_others_do_not() {
        let (space, keys) = setup();
        let codec = CodeCodec::new(&keys, 1, space).unwrap();
        let m = meta(NOW);
        for id in [10_000, 29_999, 30_000, 39_999] {
            let code = codec.code_for(id).unwrap();
            assert_eq!(
                may_be_new(&code, &space, Some(&keys), Some(&m), NOW),
                NewCode::InWindow,
                "{id}"
            );
        }
        for id in [0, 9_999, 40_000, 3_000_000_000] {
            let code = codec.code_for(id).unwrap();
            assert_eq!(
                may_be_new(&code, &space, Some(&keys), Some(&m), NOW),
                NewCode::No,
                "{id}"
            );
        }
    }

    #[test]
    fn a_meta_past_its_promise_dates_nothing_at_or_past_low() {
        let (space, keys) = setup();
        let codec = CodeCodec::new(&keys, 1, space).unwrap();
        let m = meta(NOW - 601);
        assert!(m.is_stale(NOW) && !meta(NOW - 600).is_stale(NOW));
        for id in [10_000, 40_000, 3_000_000_000] {
            let code = codec.code_for(id).unwrap();
            assert_eq!(
                may_be_new(&code, &space, Some(&keys), Some(&m), NOW),
                NewCode::Undatable,
                "{id}"
            );
        }
        let settled = codec.code_for(9_999).unwrap();
        assert_eq!(
            may_be_new(&settled, &space, Some(&keys), Some(&m), NOW),
            NewCode::No
        );
    }

    #[test]
    fn what_cannot_be_dated_says_so_and_what_is_no_code_does_not_ask() {
        let (space, keys) = setup();
        let code = CodeCodec::new(&keys, 1, space)
            .unwrap()
            .code_for(5)
            .unwrap();
        assert_eq!(
            may_be_new(&code, &space, Some(&keys), None, NOW),
            NewCode::Undatable,
            "no meta yet"
        );
        assert_eq!(
            may_be_new(&code, &space, None, None, NOW),
            NewCode::Undatable,
            "no keys"
        );
        assert_eq!(
            may_be_new("spring-sale", &space, Some(&keys), None, NOW),
            NewCode::Undatable,
            "alias"
        );
        assert_eq!(
            may_be_new("a/b", &space, Some(&keys), None, NOW),
            NewCode::No
        );
        assert_eq!(
            may_be_new("metrics", &space, Some(&keys), None, NOW),
            NewCode::No,
            "reserved"
        );
    }

    #[test]
    fn the_meta_is_read_as_the_publisher_writes_it_and_as_older_ones_did() {
        let m = ActivationMeta::from_json(&meta(NOW).to_json()).unwrap();
        assert_eq!(m, meta(NOW));
        assert_eq!(m.version(), 7);
        // An older publisher wrote neither a window nor a version.
        let old =
            ActivationMeta::from_json(r#"{"low":1,"high":20000,"headroom":10000,"at":7}"#).unwrap();
        assert_eq!(
            (old.low, old.high, old.headroom, old.window_s),
            (1, 20_000, 10_000, 600)
        );
        assert_eq!(old.version(), 20_000);
        assert!(old.covers(29_999) && !old.covers(30_000) && !old.covers(0));
    }
}

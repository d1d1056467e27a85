//! The numbered sequences of `id_segments`: one numbers links (`link_id`, the internal
//! key, for every link), and one per domain numbers that domain's generated codes, so
//! that each domain's code space is its own: a domain of five-character codes is not
//! used up by the links of the others (D-014 in docs/decisions/codes-and-ids.md).

use shared::CodeSpace;

/// The `id_segments` row that numbers links.
pub const LINK_SEQUENCE: &str = "links";

/// Ids per segment of the link sequence, and the most a code sequence takes at once.
pub const DEFAULT_STEP: u64 = 10_000;

/// What precedes a domain's name in the name of its code sequence.
const CODE_PREFIX: &str = "code:";

/// The `id_segments` row that numbers `domain`'s generated codes.
pub fn code_sequence(domain: &str) -> String {
    format!("{CODE_PREFIX}{domain}")
}

/// The domain a code sequence numbers; `None` for any other sequence.
pub fn domain_of_sequence(name: &str) -> Option<&str> {
    name.strip_prefix(CODE_PREFIX)
}

/// Numbers per segment of a code sequence over `space`: a millionth of the space, at
/// least one and at most [`DEFAULT_STEP`]. A segment abandoned unused (a restart, or one
/// older than its age bound) wastes at most this much, so even a small space outlives a
/// million such abandonments, while the default space (62^7) keeps full segments.
pub fn code_step(space: &CodeSpace) -> u64 {
    (space.size() / 1_000_000).clamp(1, DEFAULT_STEP)
}

#[cfg(test)]
mod tests {
    use super::*;
    use shared::Alphabet;

    #[test]
    fn small_spaces_take_small_segments_and_the_default_full_ones() {
        let step = |a, l| code_step(&CodeSpace::new(a, l).expect("space"));
        assert_eq!(step(Alphabet::Base62, 7), DEFAULT_STEP);
        assert_eq!(step(Alphabet::Base36, 6), 2_176);
        assert_eq!(step(Alphabet::Base36, 5), 60);
        assert_eq!(step(Alphabet::Base36, 4), 1);
    }

    #[test]
    fn a_code_sequence_names_its_domain_and_no_other_sequence_does() {
        assert_eq!(code_sequence("go.example"), "code:go.example");
        assert_eq!(domain_of_sequence("code:go.example"), Some("go.example"));
        assert_eq!(domain_of_sequence(LINK_SEQUENCE), None);
    }
}

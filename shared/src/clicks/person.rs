//! Who a click on a link with a visit limit was, as the limit counts people: a keyed
//! hash of the visitor's address (an IPv4 address, or the /64 of an IPv6 one, as
//! [`Client`] has it), the link and the UTC day.
//!
//! A refresh is not a person: one address visiting a 3-visit link a hundred times in a
//! day counts once against the limit (docs/api.md, `max_visits`). The edge and the
//! origin hash alike, with a key both derive from the oldest permutation key
//! (`PERMUTATION_KEYS`, which both hold and which never changes), so a visitor answered
//! by both is still one person. What reaches the origin reveals neither the address
//! (without the key) nor, since the link and the day are hashed in, whether two links
//! or two days had the same visitor; the origin keeps each for the days a late tally
//! may still arrive, then only its count (docs/analytics.md, "Visit limits count
//! people").

use crate::password::Client;
use crate::permutation::PermutationKey;
use siphasher::sip::SipHasher13;
use std::hash::Hasher;

/// A person's key is the same for a day: UTC days, in ms.
pub const DAY_MS: i64 = 86_400_000;

/// What derives the persons' key from a permutation key: a label of its own, so the key
/// is never the permutation's.
const LABEL: &[u8] = b"hop visit-limit persons v1";

/// The key that names persons.
#[derive(Clone)]
pub struct PersonKey(SipHasher13);

impl std::fmt::Debug for PersonKey {
    // Derived from a secret: kept out of logs.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PersonKey(..)")
    }
}

impl PersonKey {
    /// The key derived from `root` (the ring's oldest permutation key); `None`, a fixed
    /// key, where no ring is set (local development): persons are still told apart,
    /// only not hidden from whoever reads the code.
    pub fn derive(root: Option<&PermutationKey>) -> PersonKey {
        // Two halves of 64 bits, each the root's hash of the label and its half: the
        // 64-bit SipHash the permutation links already, no 128-bit variant besides.
        let root = SipHasher13::new_with_key(root.map_or(&[0; 16], |k| k.as_bytes()));
        let mut key = [0u8; 16];
        for (half, out) in key.chunks_exact_mut(8).enumerate() {
            let mut h = root;
            h.write(LABEL);
            h.write_u8(half as u8);
            out.copy_from_slice(&h.finish().to_le_bytes());
        }
        PersonKey(SipHasher13::new_with_key(&key))
    }

    /// The person `client` is on the link `route` on the day of `at_ms` (Unix ms).
    pub fn person(&self, route: &str, client: Client, at_ms: i64) -> u64 {
        let mut h = self.0;
        h.write(&client.bits().to_le_bytes());
        h.write(&at_ms.div_euclid(DAY_MS).to_le_bytes());
        h.write(route.as_bytes());
        h.finish()
    }
}

/// A person as a click carries it: 16 lowercase hex digits.
pub fn format(person: u64) -> String {
    format!("{person:016x}")
}

/// A person as [`format`] writes it; `None` for anything else.
pub fn parse(text: &str) -> Option<u64> {
    if text.len() != 16 || !text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        return None;
    }
    u64::from_str_radix(text, 16).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client(ip: &str) -> Client {
        Client::named(Some(ip))
    }

    const NOON: i64 = 1_767_268_800_000; // 2026-01-01T12:00:00Z

    #[test]
    fn one_address_is_one_person_all_day_on_one_link() {
        let key = PersonKey::derive(Some(&PermutationKey::from_bytes([7; 16])));
        let p = key.person("s.example/a", client("203.0.113.5"), NOON);
        // Later the same day, and from elsewhere in the same IPv6 /64: the same person.
        assert_eq!(
            p,
            key.person("s.example/a", client("203.0.113.5"), NOON + 11 * 3_600_000)
        );
        // An IPv4 address as a dual-stack listener sees it is that address.
        assert_eq!(
            p,
            key.person("s.example/a", client("::ffff:203.0.113.5"), NOON)
        );
        let v6 = key.person("s.example/a", client("2001:db8:1:2::1"), NOON);
        assert_eq!(
            v6,
            key.person("s.example/a", client("2001:db8:1:2:ffff::9"), NOON)
        );
        // Another address, another /64, another day, another link: another person.
        for other in [
            key.person("s.example/a", client("203.0.113.6"), NOON),
            key.person("s.example/a", client("2001:db8:1:3::1"), NOON),
            key.person("s.example/a", client("203.0.113.5"), NOON + 12 * 3_600_000),
            key.person("s.example/b", client("203.0.113.5"), NOON),
        ] {
            assert_ne!(p, other);
        }
        assert_ne!(v6, p);
    }

    #[test]
    fn the_key_is_the_root_s_and_no_other() {
        let root = PermutationKey::from_bytes([7; 16]);
        let at = |key: &PersonKey| key.person("s.example/a", client("203.0.113.5"), NOON);
        assert_eq!(
            at(&PersonKey::derive(Some(&root))),
            at(&PersonKey::derive(Some(&root)))
        );
        assert_ne!(
            at(&PersonKey::derive(Some(&root))),
            at(&PersonKey::derive(Some(&PermutationKey::from_bytes(
                [8; 16]
            ))))
        );
        assert_ne!(
            at(&PersonKey::derive(Some(&root))),
            at(&PersonKey::derive(None))
        );
    }

    #[test]
    fn a_person_reads_back_as_written_and_nothing_else_reads() {
        for p in [0, 1, u64::MAX, 0x00ab_cdef_0123_4567] {
            assert_eq!(parse(&format(p)), Some(p));
        }
        for bad in [
            "",
            "abc",
            "00000000000000A1",
            "+000000000000001",
            "0000000000000000a",
            "000000000000000g",
        ] {
            assert_eq!(parse(bad), None, "{bad}");
        }
    }
}

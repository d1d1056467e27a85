//! The keyed, reversible permutation that turns dense `link_id`s into codes that do not
//! reveal their neighbours or the volume of links.
//!
//! It is a balanced Feistel network over the smallest even number of bits that covers
//! the code space, with SipHash-1-3 as the round function, and cycle walking to stay
//! inside `[0, size)`. It hides the sequence; it is not encryption of anything secret,
//! and codes are not credentials.

use crate::codes::{CodeError, CodeSpace};
use siphasher::sip::SipHasher13;
use std::collections::BTreeMap;
use std::fmt;
use std::hash::Hasher;

/// Feistel rounds. Four already give a pseudo-random permutation; eight leave margin for
/// a round function that is keyed but deliberately cheap.
const ROUNDS: u8 = 8;

/// A 128-bit permutation key.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct PermutationKey([u8; 16]);

impl PermutationKey {
    pub fn from_bytes(bytes: [u8; 16]) -> Self {
        PermutationKey(bytes)
    }

    /// The key's bytes, for deriving the origin's other keys from it.
    pub fn as_bytes(&self) -> &[u8; 16] {
        &self.0
    }
}

impl fmt::Debug for PermutationKey {
    // Keys come from the environment; they stay out of logs.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("PermutationKey(..)")
    }
}

/// A bijection of `[0, size)` chosen by a key.
#[derive(Debug, Clone)]
pub struct Permutation {
    hasher: SipHasher13,
    size: u64,
    half_bits: u32,
    half_mask: u64,
}

impl Permutation {
    pub fn new(key: &PermutationKey, size: u64) -> Self {
        // Bits needed for values < size, rounded up to even so both halves match.
        let bits = 64 - size.saturating_sub(1).leading_zeros();
        let half_bits = bits.div_ceil(2);
        Permutation {
            hasher: SipHasher13::new_with_key(&key.0),
            size,
            half_bits,
            half_mask: (1u64 << half_bits) - 1,
        }
    }

    /// The size of the permuted range.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Maps `x` to its image; both are in `[0, size)`.
    pub fn forward(&self, x: u64) -> Result<u64, CodeError> {
        self.check(x)?;
        Ok(self.walk(x, |p, v| p.feistel(v, false)))
    }

    /// The inverse of [`Permutation::forward`].
    pub fn backward(&self, y: u64) -> Result<u64, CodeError> {
        self.check(y)?;
        Ok(self.walk(y, |p, v| p.feistel(v, true)))
    }

    fn check(&self, v: u64) -> Result<(), CodeError> {
        if v < self.size {
            Ok(())
        } else {
            Err(CodeError::OutOfRange {
                value: v,
                size: self.size,
            })
        }
    }

    /// Cycle walking: the Feistel network permutes `[0, 2^(2*half_bits))`, which is at
    /// most four times larger than the range; re-applying it until the value lands back
    /// in range yields a permutation of the range itself. It terminates because the
    /// cycle through the starting value contains that value, which is in range.
    fn walk(&self, mut v: u64, step: impl Fn(&Self, u64) -> u64) -> u64 {
        loop {
            v = step(self, v);
            if v < self.size {
                return v;
            }
        }
    }

    fn feistel(&self, v: u64, inverse: bool) -> u64 {
        let mut left = v >> self.half_bits;
        let mut right = v & self.half_mask;
        if inverse {
            for round in (0..ROUNDS).rev() {
                (left, right) = (right ^ self.round(round, left), left);
            }
        } else {
            for round in 0..ROUNDS {
                (left, right) = (right, left ^ self.round(round, right));
            }
        }
        (left << self.half_bits) | right
    }

    fn round(&self, round: u8, half: u64) -> u64 {
        let mut h = self.hasher;
        h.write_u8(round);
        h.write_u64(half);
        h.finish() & self.half_mask
    }
}

/// Why `HOP_PERMUTATION_KEYS` / `PERMUTATION_KEYS` could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyRingError {
    #[error("no permutation key given: expected VERSION:32-HEX-DIGITS[,VERSION:32-HEX-DIGITS…]")]
    Empty,
    #[error("permutation key entry {index} is not VERSION:32-HEX-DIGITS")]
    Malformed { index: usize },
    #[error("permutation key version {0} appears twice")]
    DuplicateVersion(u32),
    #[error("no permutation key has version {0}")]
    UnknownVersion(u32),
}

/// Every permutation key ever used, by version. New codes use the newest (unless the
/// origin is told another, while a new key is rolled out); old versions are kept
/// forever so that every published code stays decodable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyRing {
    keys: BTreeMap<u32, PermutationKey>,
}

impl KeyRing {
    /// Parses `1:00112233445566778899aabbccddeeff,2:…`.
    pub fn parse(s: &str) -> Result<Self, KeyRingError> {
        let mut keys = BTreeMap::new();
        for (index, entry) in s.split(',').map(str::trim).enumerate() {
            if entry.is_empty() {
                continue;
            }
            let malformed = KeyRingError::Malformed { index };
            let (version, hex) = entry.split_once(':').ok_or(malformed.clone())?;
            let version: u32 = version.trim().parse().map_err(|_| malformed.clone())?;
            let key = parse_hex_key(hex.trim()).ok_or(malformed)?;
            if keys.insert(version, key).is_some() {
                return Err(KeyRingError::DuplicateVersion(version));
            }
        }
        if keys.is_empty() {
            return Err(KeyRingError::Empty);
        }
        Ok(KeyRing { keys })
    }

    /// The version new codes are made with: the highest.
    pub fn current_version(&self) -> u32 {
        // `parse` refuses an empty ring.
        self.keys.keys().next_back().copied().unwrap_or_default()
    }

    /// Whether the ring holds a key of `version`.
    pub fn has_version(&self, version: u32) -> bool {
        self.keys.contains_key(&version)
    }

    /// The permutation of `space` under key `version`.
    pub fn permutation(
        &self,
        version: u32,
        space: &CodeSpace,
    ) -> Result<Permutation, KeyRingError> {
        let key = self
            .keys
            .get(&version)
            .ok_or(KeyRingError::UnknownVersion(version))?;
        Ok(Permutation::new(key, space.size()))
    }

    /// The oldest key: kept for ever like every version, so what is derived from it
    /// stays the same across rotations.
    pub fn oldest(&self) -> Option<&PermutationKey> {
        self.keys.values().next()
    }

    /// Every version, newest first: the order in which to try decoding a code whose
    /// version is not known.
    pub fn versions_newest_first(&self) -> impl Iterator<Item = u32> + '_ {
        self.keys.keys().rev().copied()
    }
}

fn parse_hex_key(hex: &str) -> Option<PermutationKey> {
    let bytes = hex.as_bytes();
    if bytes.len() != 32 {
        return None;
    }
    let mut key = [0u8; 16];
    for (slot, pair) in key.iter_mut().zip(bytes.chunks_exact(2)) {
        let digits = std::str::from_utf8(pair).ok()?;
        *slot = u8::from_str_radix(digits, 16).ok()?;
    }
    Some(PermutationKey(key))
}

/// Codes from ids and back, for one domain's space under one key.
#[derive(Debug, Clone)]
pub struct CodeCodec {
    space: CodeSpace,
    permutation: Permutation,
}

impl CodeCodec {
    pub fn new(keys: &KeyRing, version: u32, space: CodeSpace) -> Result<Self, KeyRingError> {
        Ok(CodeCodec {
            permutation: keys.permutation(version, &space)?,
            space,
        })
    }

    /// The generated code of `link_id`.
    pub fn code_for(&self, link_id: u64) -> Result<String, CodeError> {
        self.space.encode(self.permutation.forward(link_id)?)
    }

    /// The number (of its domain's code sequence) a generated code stands for.
    pub fn link_id_of(&self, code: &str) -> Result<u64, CodeError> {
        self.permutation.backward(self.space.decode(code)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::alphabet::Alphabet;
    use proptest::prelude::*;

    const RING: &str = "1:000102030405060708090a0b0c0d0e0f,2:f0e1d2c3b4a5968778695a4b3c2d1e0f";

    fn key(n: u8) -> PermutationKey {
        PermutationKey([n; 16])
    }

    #[test]
    fn is_a_bijection_on_small_ranges_exhaustively() {
        for size in [1u64, 2, 3, 5, 64, 100, 1000, 1296, 4097] {
            let p = Permutation::new(&key(7), size);
            let mut images: Vec<u64> = (0..size).map(|x| p.forward(x).unwrap()).collect();
            for (x, &y) in images.iter().enumerate() {
                assert_eq!(p.backward(y).unwrap(), x as u64);
            }
            images.sort_unstable();
            assert!(images.iter().copied().eq(0..size), "size {size}");
        }
    }

    #[test]
    fn hides_the_sequence() {
        let codec =
            CodeCodec::new(&KeyRing::parse(RING).unwrap(), 2, CodeSpace::default()).unwrap();
        let codes: Vec<String> = (1000..1010).map(|id| codec.code_for(id).unwrap()).collect();
        // Consecutive ids share no long common prefix, as an enumerating visitor would hope.
        for pair in codes.windows(2) {
            let common = pair[0]
                .bytes()
                .zip(pair[1].bytes())
                .take_while(|(a, b)| a == b)
                .count();
            assert!(common < 4, "{codes:?}");
        }
    }

    #[test]
    fn different_keys_give_different_permutations() {
        let a = Permutation::new(&key(1), 1 << 20);
        let b = Permutation::new(&key(2), 1 << 20);
        let same = (0..1000)
            .filter(|&x| a.forward(x).unwrap() == b.forward(x).unwrap())
            .count();
        assert!(same < 5, "{same} fixed points shared");
    }

    #[test]
    fn codes_are_stable_across_releases() {
        // A published code must decode to the same id forever: pin a few outputs.
        let codec =
            CodeCodec::new(&KeyRing::parse(RING).unwrap(), 1, CodeSpace::default()).unwrap();
        let pinned: Vec<String> = [0u64, 1, 2, 1_000_000]
            .iter()
            .map(|&id| codec.code_for(id).unwrap())
            .collect();
        assert_eq!(pinned, PINNED_CODES);
    }

    const PINNED_CODES: [&str; 4] = ["sZl6uUR", "OkzqrYT", "UNJ7Uhj", "3oiSqOU"];

    #[test]
    fn out_of_range_values_are_refused() {
        let p = Permutation::new(&key(3), 10);
        assert_eq!(
            p.forward(10),
            Err(CodeError::OutOfRange {
                value: 10,
                size: 10
            })
        );
        assert_eq!(
            p.backward(u64::MAX),
            Err(CodeError::OutOfRange {
                value: u64::MAX,
                size: 10
            })
        );
    }

    #[test]
    fn key_rings_parse_and_pick_the_newest_version() {
        let ring = KeyRing::parse(RING).unwrap();
        assert_eq!(ring.current_version(), 2);
        assert_eq!(ring.versions_newest_first().collect::<Vec<_>>(), vec![2, 1]);
        assert_eq!(KeyRing::parse(""), Err(KeyRingError::Empty));
        assert_eq!(
            KeyRing::parse("1:abcd"),
            Err(KeyRingError::Malformed { index: 0 })
        );
        assert_eq!(
            KeyRing::parse("1:000102030405060708090a0b0c0d0e0f,x:000102030405060708090a0b0c0d0e0f"),
            Err(KeyRingError::Malformed { index: 1 })
        );
        assert_eq!(
            KeyRing::parse("3:000102030405060708090a0b0c0d0e0f,3:000102030405060708090a0b0c0d0e0f"),
            Err(KeyRingError::DuplicateVersion(3))
        );
        assert!(matches!(
            ring.permutation(9, &CodeSpace::default()),
            Err(KeyRingError::UnknownVersion(9))
        ));
        assert!(
            !format!("{ring:?}").contains("0102"),
            "keys never appear in Debug output"
        );
    }

    proptest! {
        #[test]
        fn backward_inverts_forward(k: [u8; 16], size in 1u64..=u64::MAX, seed: u64) {
            let p = Permutation::new(&PermutationKey(k), size);
            let x = seed % size;
            let y = p.forward(x).unwrap();
            prop_assert!(y < size);
            prop_assert_eq!(p.backward(y).unwrap(), x);
        }

        #[test]
        fn codes_round_trip_to_their_ids(
            alphabet in prop::sample::select(Alphabet::ALL.to_vec()),
            length in 4u8..=9,
            seed: u64,
        ) {
            let space = CodeSpace::new(alphabet, length).unwrap();
            let codec = CodeCodec::new(&KeyRing::parse(RING).unwrap(), 1, space).unwrap();
            let id = seed % space.size();
            let code = codec.code_for(id).unwrap();
            prop_assert!(space.is_generated_shape(&code));
            prop_assert_eq!(codec.link_id_of(&code).unwrap(), id);
        }
    }
}

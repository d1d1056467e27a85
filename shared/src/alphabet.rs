//! The digit alphabets of generated codes.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// The set of digits a domain's generated codes are written in.
///
/// Digits are ordered, so a code is a fixed-length number in base `len()`; the first
/// digit is the "zero" used to pad short numbers on the left.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Alphabet {
    /// `0-9A-Za-z`: the densest alphabet that survives any URL unescaped (the default).
    #[default]
    Base62,
    /// Base62 without `0 O 1 l I`, for codes people read off paper.
    Base58,
    /// `0-9a-z`, for domains whose codes are case-insensitive.
    Base36,
}

const BASE62: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
const BASE58: &[u8; 58] = b"123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";
const BASE36: &[u8; 36] = b"0123456789abcdefghijklmnopqrstuvwxyz";

/// `NONE` marks a byte that is not a digit in the table built by [`reverse_table`].
const NONE: u8 = u8::MAX;

const fn reverse_table(digits: &[u8]) -> [u8; 256] {
    let mut table = [NONE; 256];
    let mut i = 0;
    while i < digits.len() {
        table[digits[i] as usize] = i as u8;
        i += 1;
    }
    table
}

static BASE62_REV: [u8; 256] = reverse_table(BASE62);
static BASE58_REV: [u8; 256] = reverse_table(BASE58);
static BASE36_REV: [u8; 256] = reverse_table(BASE36);

impl Alphabet {
    /// Every alphabet, for tests and for documentation.
    pub const ALL: [Alphabet; 3] = [Alphabet::Base62, Alphabet::Base58, Alphabet::Base36];

    /// The digits, in value order.
    pub fn digits(self) -> &'static [u8] {
        match self {
            Alphabet::Base62 => BASE62,
            Alphabet::Base58 => BASE58,
            Alphabet::Base36 => BASE36,
        }
    }

    /// The base: how many digits there are.
    pub fn radix(self) -> u64 {
        self.digits().len() as u64
    }

    /// The value of one digit, or `None` when the byte is not in this alphabet.
    pub fn value_of(self, byte: u8) -> Option<u8> {
        let table = match self {
            Alphabet::Base62 => &BASE62_REV,
            Alphabet::Base58 => &BASE58_REV,
            Alphabet::Base36 => &BASE36_REV,
        };
        match table[byte as usize] {
            NONE => None,
            v => Some(v),
        }
    }

    /// The name used in configuration and in the edge's `cfg:` records.
    pub fn name(self) -> &'static str {
        match self {
            Alphabet::Base62 => "base62",
            Alphabet::Base58 => "base58",
            Alphabet::Base36 => "base36",
        }
    }
}

impl fmt::Display for Alphabet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The error for an alphabet name that is not one of `base62`, `base58`, `base36`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown alphabet {0:?}: expected base62, base58 or base36")]
pub struct UnknownAlphabet(pub String);

impl FromStr for Alphabet {
    type Err = UnknownAlphabet;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Alphabet::ALL
            .into_iter()
            .find(|a| a.name() == s)
            .ok_or_else(|| UnknownAlphabet(s.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digits_are_distinct_and_reverse_lookup_agrees() {
        for alphabet in Alphabet::ALL {
            for (i, &d) in alphabet.digits().iter().enumerate() {
                assert_eq!(alphabet.value_of(d), Some(i as u8), "{alphabet} digit {d}");
            }
            let known = (0..=255u8)
                .filter(|&b| alphabet.value_of(b).is_some())
                .count();
            assert_eq!(known as u64, alphabet.radix());
        }
    }

    #[test]
    fn base58_leaves_out_look_alike_characters() {
        for c in b"0OIl" {
            assert_eq!(Alphabet::Base58.value_of(*c), None);
        }
        assert_eq!(Alphabet::Base58.radix(), 58);
    }

    #[test]
    fn names_round_trip_and_unknown_names_are_refused() {
        for alphabet in Alphabet::ALL {
            assert_eq!(alphabet.name().parse::<Alphabet>(), Ok(alphabet));
        }
        assert!("base64".parse::<Alphabet>().is_err());
    }
}

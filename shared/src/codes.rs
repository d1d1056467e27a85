//! Short codes: fixed-length numbers in a domain's alphabet, and the rules that keep
//! generated codes and custom aliases apart.

use crate::alphabet::Alphabet;
use serde::{Deserialize, Serialize};

/// Length of a generated code unless a domain says otherwise: 62^7 ≈ 3.5 × 10^12 codes.
pub const DEFAULT_CODE_LENGTH: u8 = 7;

/// Custom aliases are 3 to 64 characters long.
pub const ALIAS_MIN_LEN: usize = 3;
/// See [`ALIAS_MIN_LEN`].
pub const ALIAS_MAX_LEN: usize = 64;

/// Paths that a short domain serves itself or that people expect to mean something else.
/// Compared without regard to ASCII case.
pub const RESERVED_WORDS: &[&str] = &[
    "_hop",
    ".well-known",
    "admin",
    "api",
    "app",
    "assets",
    "favicon.ico",
    "healthz",
    "login",
    "metrics",
    "openapi.json",
    "readyz",
    "robots.txt",
    "static",
    "v1",
    "v2",
    "www",
];

/// Why a number or a string is not a code of a given [`CodeSpace`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CodeError {
    #[error("{length} {alphabet} digits hold more than 2^64 codes; use fewer digits")]
    SpaceTooLarge { alphabet: Alphabet, length: u8 },
    #[error("a code needs at least one digit")]
    ZeroLength,
    #[error("random codes have 7 to 10 characters, not {found}")]
    RandomLength { found: u8 },
    #[error("{value} is outside the code space [0, {size})")]
    OutOfRange { value: u64, size: u64 },
    #[error("a code of this domain has exactly {expected} characters, not {found}")]
    WrongLength { expected: u8, found: usize },
    #[error("{found:?} is not a {alphabet} digit")]
    BadDigit { found: char, alphabet: Alphabet },
}

/// The set of generated codes of one domain: every string of exactly `length` digits of
/// `alphabet`, read as a number in `[0, size())`, with leading "zero" digits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "RawCodeSpace", into = "RawCodeSpace")]
pub struct CodeSpace {
    alphabet: Alphabet,
    length: u8,
    size: u64,
    /// Codes drawn at random rather than numbered (a domain's `code_strategy: random`):
    /// they decode to no number of a sequence, so the edge cannot date them.
    random: bool,
}

/// Random codes are 7 to 10 characters long ([`CodeSpace::random`]): shorter ones
/// collide too soon (docs/random-codes.md), and 10 is the database's bound on a domain's
/// code length.
pub const RANDOM_LENGTHS: std::ops::RangeInclusive<u8> = 7..=10;

#[derive(Serialize, Deserialize)]
struct RawCodeSpace {
    alphabet: Alphabet,
    length: u8,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    random: bool,
}

impl TryFrom<RawCodeSpace> for CodeSpace {
    type Error = CodeError;
    fn try_from(raw: RawCodeSpace) -> Result<Self, Self::Error> {
        if raw.random {
            CodeSpace::random(raw.alphabet, raw.length)
        } else {
            CodeSpace::new(raw.alphabet, raw.length)
        }
    }
}

impl From<CodeSpace> for RawCodeSpace {
    fn from(space: CodeSpace) -> Self {
        RawCodeSpace {
            alphabet: space.alphabet,
            length: space.length,
            random: space.random,
        }
    }
}

impl Default for CodeSpace {
    fn default() -> Self {
        CodeSpace {
            alphabet: Alphabet::Base62,
            length: DEFAULT_CODE_LENGTH,
            size: 62u64.pow(DEFAULT_CODE_LENGTH as u32),
            random: false,
        }
    }
}

impl CodeSpace {
    /// A space of `length` digits; refused when it is empty or holds more than 2^64 codes.
    pub fn new(alphabet: Alphabet, length: u8) -> Result<Self, CodeError> {
        if length == 0 {
            return Err(CodeError::ZeroLength);
        }
        let size = alphabet
            .radix()
            .checked_pow(u32::from(length))
            .ok_or(CodeError::SpaceTooLarge { alphabet, length })?;
        Ok(CodeSpace {
            alphabet,
            length,
            size,
            random: false,
        })
    }

    /// A space of random codes of `length` ([`RANDOM_LENGTHS`]) digits: drawn, never
    /// numbered by a sequence.
    pub fn random(alphabet: Alphabet, length: u8) -> Result<Self, CodeError> {
        if !RANDOM_LENGTHS.contains(&length) {
            return Err(CodeError::RandomLength { found: length });
        }
        Ok(CodeSpace {
            random: true,
            ..CodeSpace::new(alphabet, length)?
        })
    }

    /// Whether the domain's codes are drawn at random ([`CodeSpace::random`]).
    pub fn is_random(&self) -> bool {
        self.random
    }

    pub fn alphabet(&self) -> Alphabet {
        self.alphabet
    }

    pub fn length(&self) -> u8 {
        self.length
    }

    /// How many codes there are: `radix ^ length`.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Writes `value` as exactly `length` digits, most significant first.
    pub fn encode(&self, value: u64) -> Result<String, CodeError> {
        if value >= self.size {
            return Err(CodeError::OutOfRange {
                value,
                size: self.size,
            });
        }
        let digits = self.alphabet.digits();
        let radix = self.alphabet.radix();
        let mut out = vec![digits[0]; usize::from(self.length)];
        let mut rest = value;
        for slot in out.iter_mut().rev() {
            *slot = digits[(rest % radix) as usize];
            rest /= radix;
        }
        // Every byte came from an ASCII table.
        Ok(out.into_iter().map(char::from).collect())
    }

    /// Reads a code back into its number: the exact inverse of [`CodeSpace::encode`].
    pub fn decode(&self, code: &str) -> Result<u64, CodeError> {
        let bytes = code.as_bytes();
        if bytes.len() != usize::from(self.length) {
            return Err(CodeError::WrongLength {
                expected: self.length,
                found: code.chars().count(),
            });
        }
        let radix = self.alphabet.radix();
        let mut value: u64 = 0;
        for (i, &b) in bytes.iter().enumerate() {
            let digit = self
                .alphabet
                .value_of(b)
                .ok_or_else(|| CodeError::BadDigit {
                    found: code[i..]
                        .chars()
                        .next()
                        .unwrap_or(char::REPLACEMENT_CHARACTER),
                    alphabet: self.alphabet,
                })?;
            // Checked, although length digits of this radix stay below size, which fits
            // in u64: a wrong assumption here would be a panic in the worker.
            value = value
                .checked_mul(radix)
                .and_then(|v| v.checked_add(u64::from(digit)))
                .ok_or(CodeError::OutOfRange {
                    value,
                    size: self.size,
                })?;
        }
        Ok(value)
    }

    /// Whether `code` has the generated shape: exactly `length` digits of the alphabet.
    pub fn is_generated_shape(&self, code: &str) -> bool {
        code.len() == usize::from(self.length)
            && code.bytes().all(|b| self.alphabet.value_of(b).is_some())
    }
}

/// What kind of code a path segment is, for one domain.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CodeKind {
    /// Allocated by Hop: decodes to a `link_id` through the domain's permutation.
    Generated,
    /// Chosen by a person.
    Custom,
}

/// Why a string cannot be a custom alias.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AliasError {
    #[error("an alias has {min} to {max} characters, not {found}", min = ALIAS_MIN_LEN, max = ALIAS_MAX_LEN)]
    Length { found: usize },
    #[error("an alias starts with a letter or a digit")]
    BadStart,
    #[error("an alias may contain only letters, digits, '_' and '-'; {found:?} is not allowed")]
    BadCharacter { found: char },
    #[error("{0:?} is a reserved word (rule: reserved)")]
    Reserved(String),
    #[error("an alias may not look like a generated code ({length} {alphabet} characters); add or remove a character, or use '-' or '_'")]
    GeneratedShape { alphabet: Alphabet, length: u8 },
}

/// Checks a custom alias against the rules: `[A-Za-z0-9][A-Za-z0-9_-]{2,63}`, not a
/// reserved word, and not of `space`'s generated shape (so the two kinds never collide).
pub fn validate_alias(alias: &str, space: &CodeSpace) -> Result<(), AliasError> {
    let len = alias.chars().count();
    if !(ALIAS_MIN_LEN..=ALIAS_MAX_LEN).contains(&len) {
        return Err(AliasError::Length { found: len });
    }
    if let Some(bad) = alias.chars().find(|&c| !is_alias_char(c)) {
        return Err(AliasError::BadCharacter { found: bad });
    }
    if !alias.starts_with(|c: char| c.is_ascii_alphanumeric()) {
        return Err(AliasError::BadStart);
    }
    if is_reserved(alias) {
        return Err(AliasError::Reserved(alias.to_owned()));
    }
    if space.is_generated_shape(alias) {
        return Err(AliasError::GeneratedShape {
            alphabet: space.alphabet(),
            length: space.length(),
        });
    }
    Ok(())
}

/// Checks a code brought from another shortener (an import): the characters and start of
/// an alias, 1 to 64 of them, and not a reserved word; it may have the generated shape
/// or be shorter than an alias (YOURLS keywords of one letter exist), since it was
/// printed elsewhere and must be kept exactly. Such codes are dated at the edge as
/// `shared::activation` says for a domain with foreign codes.
pub fn validate_imported_code(code: &str) -> Result<(), AliasError> {
    let len = code.chars().count();
    if !(1..=ALIAS_MAX_LEN).contains(&len) {
        return Err(AliasError::Length { found: len });
    }
    if let Some(bad) = code.chars().find(|&c| !is_alias_char(c)) {
        return Err(AliasError::BadCharacter { found: bad });
    }
    if !code.starts_with(|c: char| c.is_ascii_alphanumeric()) {
        return Err(AliasError::BadStart);
    }
    if is_reserved(code) {
        return Err(AliasError::Reserved(code.to_owned()));
    }
    Ok(())
}

/// Classifies a requested code for a domain, or `None` when it can be neither kind (the
/// edge answers 404 at once, without reading anything).
///
/// A reserved word is never a code, even where it has the generated shape (`metrics` is
/// seven base62 digits): the allocator skips the ids whose code would be one.
pub fn classify(code: &str, space: &CodeSpace) -> Option<CodeKind> {
    if is_reserved(code) {
        None
    } else if space.is_generated_shape(code) {
        Some(CodeKind::Generated)
    } else if validate_alias(code, space).is_ok() {
        Some(CodeKind::Custom)
    } else {
        None
    }
}

/// A check that needs no domain settings: `false` means the segment is no code of any
/// domain (every alphabet's digits and every alias are `[A-Za-z0-9][A-Za-z0-9_-]*`, at
/// most 64 long, and never a reserved word).
pub fn is_plausible_code(code: &str) -> bool {
    // Bytes, not chars: every allowed character is ASCII, so a byte of a multi-byte
    // character fails the test as its character would.
    let bytes = code.as_bytes();
    bytes.len() <= ALIAS_MAX_LEN
        && bytes.first().is_some_and(u8::is_ascii_alphanumeric)
        && bytes.iter().all(|&b| is_alias_byte(b))
        && !is_reserved(code)
}

fn is_alias_char(c: char) -> bool {
    u8::try_from(c).is_ok_and(is_alias_byte)
}

fn is_alias_byte(b: u8) -> bool {
    ALIAS_BYTES[usize::from(b)]
}

/// Which bytes an alias may hold, by value: one load per byte of every visited code,
/// where the comparisons cost each visit about a hundred instructions.
const ALIAS_BYTES: [bool; 256] = {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        table[b] = c.is_ascii_alphanumeric() || c == b'_' || c == b'-';
        b += 1;
    }
    table
};

/// Whether `word` is one of [`RESERVED_WORDS`], ignoring ASCII case.
pub fn is_reserved(word: &str) -> bool {
    // Every visit asks, twice, and comparing with each word in turn was 1.7% of a cached
    // redirect's instructions: a word whose length and first byte no reserved word has
    // (nearly every code) is answered from one table.
    let bytes = word.as_bytes();
    let (Some(&first), Some(firsts)) = (bytes.first(), RESERVED_FIRSTS.get(bytes.len())) else {
        return false;
    };
    firsts & first_bit(first) != 0 && RESERVED_WORDS.iter().any(|r| r.eq_ignore_ascii_case(word))
}

/// A bit for a byte, by its low five bits: an ASCII letter's two cases share one, and a
/// digit or sign shares one with a letter (the table only filters).
const fn first_bit(b: u8) -> u32 {
    1 << (b & 31)
}

/// By length: the [`first_bit`]s of the reserved words of that length. A reserved word
/// longer than the table fails the build here.
const RESERVED_FIRSTS: [u32; 16] = {
    let mut table = [0u32; 16];
    let mut i = 0;
    while i < RESERVED_WORDS.len() {
        let word = RESERVED_WORDS[i].as_bytes();
        table[word.len()] |= first_bit(word[0]);
        i += 1;
    }
    table
};

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The table says what the rule says, for every byte.
    #[test]
    fn random_spaces_take_seven_to_ten_digits() {
        let space = CodeSpace::random(Alphabet::Base62, 10).unwrap();
        assert!(space.is_random());
        assert_eq!(space.size(), 62u64.pow(10));
        assert!(space.is_generated_shape("zzzzzzzzzz"));
        assert_eq!(classify("Ab3dEf9hIj", &space), Some(CodeKind::Generated));
        for length in [6, 11] {
            assert_eq!(
                CodeSpace::random(Alphabet::Base36, length),
                Err(CodeError::RandomLength { found: length })
            );
        }
        assert!(CodeSpace::random(Alphabet::Base58, 7).is_ok());
        // Kept apart from the numbered space of the same shape, and through JSON.
        let json = serde_json::to_string(&space).unwrap();
        assert_eq!(json, r#"{"alphabet":"base62","length":10,"random":true}"#);
        assert_eq!(serde_json::from_str::<CodeSpace>(&json).unwrap(), space);
        let numbered = CodeSpace::new(Alphabet::Base62, 7).unwrap();
        assert_eq!(
            serde_json::to_string(&numbered).unwrap(),
            r#"{"alphabet":"base62","length":7}"#
        );
        assert_ne!(CodeSpace::random(Alphabet::Base62, 7).unwrap(), numbered);
    }

    #[test]
    fn the_alias_byte_table_is_the_rule() {
        for b in 0..=u8::MAX {
            let rule = b.is_ascii_alphanumeric() || b == b'_' || b == b'-';
            assert_eq!(is_alias_byte(b), rule, "{b}");
        }
    }

    fn spaces() -> impl Strategy<Value = CodeSpace> {
        (prop::sample::select(Alphabet::ALL.to_vec()), 1u8..=10)
            .prop_filter_map("fits in u64", |(a, l)| CodeSpace::new(a, l).ok())
    }

    #[test]
    fn default_space_is_seven_base62_digits() {
        let space = CodeSpace::default();
        assert_eq!(space, CodeSpace::new(Alphabet::Base62, 7).unwrap());
        assert_eq!(space.size(), 3_521_614_606_208);
    }

    #[test]
    fn leading_zero_digits_pad_small_numbers() {
        let space = CodeSpace::default();
        assert_eq!(space.encode(0).unwrap(), "0000000");
        assert_eq!(space.encode(61).unwrap(), "000000z");
        assert_eq!(space.encode(62).unwrap(), "0000010");
        assert_eq!(space.encode(space.size() - 1).unwrap(), "zzzzzzz");
        let b58 = CodeSpace::new(Alphabet::Base58, 4).unwrap();
        assert_eq!(b58.encode(0).unwrap(), "1111");
    }

    #[test]
    fn out_of_range_numbers_and_bad_codes_are_refused_with_a_reason() {
        let space = CodeSpace::default();
        assert_eq!(
            space.encode(space.size()),
            Err(CodeError::OutOfRange {
                value: space.size(),
                size: space.size()
            })
        );
        assert_eq!(
            space.decode("abc"),
            Err(CodeError::WrongLength {
                expected: 7,
                found: 3
            })
        );
        assert_eq!(
            space.decode("abc-efg"),
            Err(CodeError::BadDigit {
                found: '-',
                alphabet: Alphabet::Base62
            })
        );
        // A multi-byte character is reported whole, never split.
        let err = space.decode("aé12").unwrap_err();
        assert!(
            matches!(err, CodeError::WrongLength { found: 4, .. }),
            "{err}"
        );
        let b58 = CodeSpace::new(Alphabet::Base58, 7).unwrap();
        assert!(matches!(
            b58.decode("0000000"),
            Err(CodeError::BadDigit { found: '0', .. })
        ));
    }

    #[test]
    fn spaces_that_overflow_64_bits_are_refused() {
        assert!(CodeSpace::new(Alphabet::Base62, 10).is_ok());
        assert_eq!(
            CodeSpace::new(Alphabet::Base62, 11),
            Err(CodeError::SpaceTooLarge {
                alphabet: Alphabet::Base62,
                length: 11
            })
        );
        assert_eq!(
            CodeSpace::new(Alphabet::Base36, 0),
            Err(CodeError::ZeroLength)
        );
    }

    #[test]
    fn every_code_of_a_small_space_round_trips() {
        let space = CodeSpace::new(Alphabet::Base36, 3).unwrap();
        let mut seen = std::collections::HashSet::new();
        for v in 0..space.size() {
            let code = space.encode(v).unwrap();
            assert!(space.is_generated_shape(&code));
            assert_eq!(space.decode(&code).unwrap(), v);
            assert!(seen.insert(code));
        }
    }

    #[test]
    fn code_space_serializes_as_alphabet_and_length_and_is_validated_on_read() {
        let json = serde_json::to_string(&CodeSpace::default()).unwrap();
        assert_eq!(json, r#"{"alphabet":"base62","length":7}"#);
        assert_eq!(
            serde_json::from_str::<CodeSpace>(&json).unwrap(),
            CodeSpace::default()
        );
        assert!(serde_json::from_str::<CodeSpace>(r#"{"alphabet":"base62","length":12}"#).is_err());
    }

    #[test]
    fn aliases_follow_the_rules_and_say_why_not() {
        let space = CodeSpace::default();
        assert_eq!(validate_alias("spring-sale", &space), Ok(()));
        assert_eq!(validate_alias("a_b", &space), Ok(()));
        assert_eq!(
            validate_alias("ab", &space),
            Err(AliasError::Length { found: 2 })
        );
        assert_eq!(
            validate_alias(&"a".repeat(65), &space),
            Err(AliasError::Length { found: 65 })
        );
        assert_eq!(validate_alias("-abc", &space), Err(AliasError::BadStart));
        assert_eq!(
            validate_alias("sale!", &space),
            Err(AliasError::BadCharacter { found: '!' })
        );
        assert_eq!(
            validate_alias("héllo", &space),
            Err(AliasError::BadCharacter { found: 'é' })
        );
        assert_eq!(
            validate_alias("API", &space),
            Err(AliasError::Reserved("API".into()))
        );
        assert!(matches!(
            validate_alias("Summer7", &space),
            Err(AliasError::GeneratedShape { length: 7, .. })
        ));
        // The same word is a fine alias where generated codes are shorter.
        let short = CodeSpace::new(Alphabet::Base62, 6).unwrap();
        assert_eq!(validate_alias("Summer7", &short), Ok(()));
    }

    #[test]
    fn classify_tells_generated_from_custom_from_garbage() {
        let space = CodeSpace::default();
        assert_eq!(classify("7Fk3aQx", &space), Some(CodeKind::Generated));
        assert_eq!(classify("spring-sale", &space), Some(CodeKind::Custom));
        assert_eq!(classify("robots.txt", &space), None);
        assert_eq!(classify("healthz", &space), None);
        assert_eq!(
            classify("Metrics", &space),
            None,
            "reserved despite its generated shape"
        );
        assert_eq!(classify("", &space), None);
    }

    #[test]
    fn every_reserved_word_is_reserved_in_any_case() {
        for word in RESERVED_WORDS {
            assert!(is_reserved(word), "{word}");
            assert!(is_reserved(&word.to_ascii_uppercase()), "{word}");
            // Same length and first byte, one byte off: the table lets it through and
            // the comparison refuses it.
            let mut near = word.to_string();
            near.push('x');
            near.remove(near.len() - 2);
            assert!(
                !is_reserved(&near) || RESERVED_WORDS.contains(&near.as_str()),
                "{near}"
            );
        }
        assert!(!is_reserved(""));
        assert!(!is_reserved(&"a".repeat(40)));
    }

    proptest! {
        /// The table only filters: the answer is the one a comparison with every word gives.
        #[test]
        fn is_reserved_answers_as_comparing_with_every_word(
            word in prop::sample::select(RESERVED_WORDS.to_vec()),
            flips in prop::collection::vec(any::<bool>(), 16),
            other in "[ -~]{0,20}",
        ) {
            let mixed: String = word
                .chars()
                .zip(flips.iter().cycle())
                .map(|(c, &up)| if up { c.to_ascii_uppercase() } else { c })
                .collect();
            for w in [mixed.as_str(), other.as_str()] {
                let naive = RESERVED_WORDS.iter().any(|r| r.eq_ignore_ascii_case(w));
                prop_assert_eq!(is_reserved(w), naive, "{:?}", w);
            }
        }

        #[test]
        fn decode_inverts_encode(space in spaces(), seed: u64) {
            let value = seed % space.size();
            let code = space.encode(value).unwrap();
            prop_assert_eq!(code.len(), usize::from(space.length()));
            prop_assert_eq!(space.decode(&code).unwrap(), value);
        }

        #[test]
        fn encode_inverts_decode(space in spaces(), seed: u64) {
            let code = space.encode(seed % space.size()).unwrap();
            let value = space.decode(&code).unwrap();
            prop_assert_eq!(space.encode(value).unwrap(), code);
        }

        #[test]
        fn encoding_preserves_order(space in spaces(), a: u64, b: u64) {
            let (a, b) = (a % space.size(), b % space.size());
            let (ca, cb) = (space.encode(a).unwrap(), space.encode(b).unwrap());
            // Every alphabet table is in ASCII order, so codes sort like their numbers.
            prop_assert_eq!(a.cmp(&b), ca.cmp(&cb));
        }

        #[test]
        fn every_valid_alias_and_generated_code_is_plausible(
            alias in "[A-Za-z0-9][A-Za-z0-9_-]{2,63}",
            space in spaces(),
            seed: u64,
        ) {
            if validate_alias(&alias, &space).is_ok() {
                prop_assert!(is_plausible_code(&alias));
                prop_assert_eq!(classify(&alias, &space), Some(CodeKind::Custom));
            }
            let code = space.encode(seed % space.size()).unwrap();
            prop_assert!(is_plausible_code(&code) || is_reserved(&code));
        }

        #[test]
        fn no_alias_has_the_generated_shape(alias in "[A-Za-z0-9][A-Za-z0-9_-]{2,12}", space in spaces()) {
            if validate_alias(&alias, &space).is_ok() {
                prop_assert!(!space.is_generated_shape(&alias));
            }
        }
    }
}

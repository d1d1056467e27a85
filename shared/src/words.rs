//! Words that are never codes: the reserved words (Hop's own, [`crate::codes::RESERVED_WORDS`],
//! and an operator's) and the offensive words (a built-in list and an operator's changes
//! to it).
//!
//! The two kinds of code are judged differently, since one is chosen by a person and the
//! other by a counter:
//!
//! - An **alias** is refused when it *is* a reserved word, or when it or one of its parts
//!   between `-` and `_` (or all its parts run together) *is* an offensive word. Finding
//!   the word anywhere inside would refuse `analytics-2026` and `cocktail-week`; the
//!   person who typed an alias chose its words.
//! - A **generated code** is skipped when it is a reserved word, or when an offensive
//!   word of four letters or more appears anywhere in it (shorter words only when they
//!   are the whole code, as Sqids does: most three-letter strings turn up in random
//!   codes). Skipping costs one number of the domain's space.
//!
//! Offensive words match whatever the case and with the digits people write for letters
//! (`0` o, `1` i or l, `3` e, `4` a, `5` s, `7` t, `8` b, `9` g). Reserved words are paths
//! and match exactly, ignoring ASCII case.

use crate::codes::{is_reserved, ALIAS_MAX_LEN};

/// Hop's own offensive words, one a line (the file says where they come from).
pub const BUILTIN_OFFENSIVE: &str = include_str!("offensive-words.txt");

/// Offensive words shorter than this count only as a whole code (or an alias's part).
const SUBSTRING_MIN: usize = 4;

/// The word lists a shortener judges codes by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Words {
    /// An operator's reserved words, lower case, beyond Hop's own.
    reserved: Vec<String>,
    /// The offensive words, lower case ASCII letters and digits.
    offensive: Vec<String>,
}

/// Which list refused a code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// Hop's own reserved words: paths a short domain serves or that mean something else.
    Reserved,
    /// The operator's reserved words.
    OperatorReserved,
    /// The offensive words.
    Offensive,
}

impl Rule {
    /// The rule's name in metrics and problem documents.
    pub fn as_str(self) -> &'static str {
        match self {
            Rule::Reserved => "reserved",
            Rule::OperatorReserved => "operator_reserved",
            Rule::Offensive => "offensive",
        }
    }
}

/// A code a list refuses: the rule and the word.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.describe())]
pub struct Refused {
    pub rule: Rule,
    /// The word as the list has it (an offensive word as listed, not as the code spells it).
    pub word: String,
}

impl Refused {
    fn describe(&self) -> String {
        match self.rule {
            Rule::Reserved => format!("{:?} is a reserved word (rule: reserved)", self.word),
            Rule::OperatorReserved => format!(
                "{:?} is one of this shortener's reserved words (rule: operator_reserved)",
                self.word
            ),
            Rule::Offensive => format!(
                "the code spells {:?}, a word on this shortener's list of offensive words \
                 (rule: offensive); choose another",
                self.word
            ),
        }
    }
}

/// Why a word list was refused, by its line (1-based).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WordsError {
    #[error("line {line}: {word:?} can never be a code (letters, digits, '-' and '_', starting with a letter or digit, at most {ALIAS_MAX_LEN}): nothing to reserve")]
    NotACode { line: usize, word: String },
    #[error(
        "line {line}: an offensive word has 3 to {ALIAS_MAX_LEN} letters or digits, not {word:?}"
    )]
    BadOffensive { line: usize, word: String },
    #[error("line {line}: {word:?} is not on the built-in list, so '!' cannot take it out")]
    NotBuiltIn { line: usize, word: String },
    #[error("line {line}: Hop's own reserved words cannot be taken out ('!{word}')")]
    OwnReserved { line: usize, word: String },
}

impl Default for Words {
    /// Hop's own lists, unchanged.
    fn default() -> Self {
        Words {
            reserved: Vec::new(),
            offensive: lines(BUILTIN_OFFENSIVE)
                .map(|(_, w)| w.to_owned())
                .collect(),
        }
    }
}

/// The words of a list's text: `(line number, word)`, without blank lines and `#` comments.
fn lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l.split('#').next().unwrap_or("").trim()))
        .filter(|(_, w)| !w.is_empty())
}

/// An operator's changes to the offensive words: words added, built-in words taken out.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OffensiveChanges {
    pub add: Vec<String>,
    pub remove: Vec<String>,
}

/// Reads an operator's reserved words: one a line, `#` starting a comment. Each must be
/// something a code could be; Hop's own cannot be taken out.
pub fn parse_reserved(text: &str) -> Result<Vec<String>, WordsError> {
    let mut words: Vec<String> = Vec::new();
    for (line, word) in lines(text) {
        if let Some(own) = word.strip_prefix('!') {
            return Err(WordsError::OwnReserved {
                line,
                word: own.trim().to_owned(),
            });
        }
        let possible = word.len() <= ALIAS_MAX_LEN
            && word.starts_with(|c: char| c.is_ascii_alphanumeric())
            && word
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        if !possible {
            return Err(WordsError::NotACode {
                line,
                word: word.to_owned(),
            });
        }
        let word = word.to_ascii_lowercase();
        if !is_reserved(&word) && !words.contains(&word) {
            words.push(word);
        }
    }
    Ok(words)
}

/// Reads an operator's changes to the offensive words: a word a line adds it, `!word`
/// takes a built-in one out, `#` starts a comment.
pub fn parse_offensive(text: &str) -> Result<OffensiveChanges, WordsError> {
    let builtin = Words::default().offensive;
    let mut changes = OffensiveChanges::default();
    for (line, entry) in lines(text) {
        let (remove, word) = match entry.strip_prefix('!') {
            Some(w) => (true, w.trim()),
            None => (false, entry),
        };
        let word = word.to_ascii_lowercase();
        if !(3..=ALIAS_MAX_LEN).contains(&word.len())
            || !word.bytes().all(|b| b.is_ascii_alphanumeric())
        {
            return Err(WordsError::BadOffensive { line, word });
        }
        if !remove {
            changes.add.push(word);
        } else if builtin.contains(&word) {
            changes.remove.push(word);
        } else {
            return Err(WordsError::NotBuiltIn { line, word });
        }
    }
    Ok(changes)
}

impl Words {
    /// Hop's lists with an operator's reserved words and changes to the offensive ones.
    pub fn new(reserved: Vec<String>, offensive: &OffensiveChanges) -> Words {
        let mut words = Words {
            reserved,
            ..Words::default()
        };
        words.offensive.retain(|w| !offensive.remove.contains(w));
        for word in &offensive.add {
            if !words.offensive.contains(word) {
                words.offensive.push(word.clone());
            }
        }
        words
    }

    /// [`Words::new`] from the two lists' text.
    pub fn with_operator_lists(reserved: &str, offensive: &str) -> Result<Words, WordsError> {
        Ok(Words::new(
            parse_reserved(reserved)?,
            &parse_offensive(offensive)?,
        ))
    }

    /// Why a person may not choose `alias`, if a list refuses it (its shape is judged
    /// elsewhere: [`crate::codes::validate_alias`]).
    pub fn refuse_alias(&self, alias: &str) -> Option<Refused> {
        if let Some(refused) = self.reserved_word(alias) {
            return Some(refused);
        }
        let joined: String = alias.chars().filter(|&c| c != '-' && c != '_').collect();
        let parts = alias
            .split(['-', '_'])
            .chain(std::iter::once(joined.as_str()));
        // A part of digits alone is a number (`sale-455`), not a word spelled in digits.
        for part in parts.filter(|p| p.bytes().any(|b| b.is_ascii_alphabetic())) {
            if let Some(word) = self
                .offensive
                .iter()
                .find(|w| part.len() == w.len() && spells_at(part, 0, w))
            {
                return Some(offensive(word));
            }
        }
        None
    }

    /// Why the allocator must skip the generated `code`, if a list refuses it.
    pub fn refuse_generated(&self, code: &str) -> Option<Refused> {
        if let Some(refused) = self.reserved_word(code) {
            return Some(refused);
        }
        self.offensive
            .iter()
            .find(|w| {
                if w.len() < SUBSTRING_MIN {
                    code.len() == w.len() && spells_at(code, 0, w)
                } else {
                    (0..=code.len().saturating_sub(w.len())).any(|at| spells_at(code, at, w))
                }
            })
            .map(|w| offensive(w))
    }

    /// Why an imported code may not be kept: only the reserved words count, since the
    /// code was printed elsewhere and is kept exactly, offensive or not.
    pub fn refuse_imported(&self, code: &str) -> Option<Refused> {
        self.reserved_word(code)
    }

    /// Whether `word` is a reserved word, Hop's or the operator's (ASCII case ignored).
    fn reserved_word(&self, word: &str) -> Option<Refused> {
        if is_reserved(word) {
            Some(Refused {
                rule: Rule::Reserved,
                word: word.to_ascii_lowercase(),
            })
        } else {
            self.reserved
                .iter()
                .find(|r| r.eq_ignore_ascii_case(word))
                .map(|r| Refused {
                    rule: Rule::OperatorReserved,
                    word: r.clone(),
                })
        }
    }
}

fn offensive(word: &str) -> Refused {
    Refused {
        rule: Rule::Offensive,
        word: word.to_owned(),
    }
}

/// Whether `text` spells `word` starting at byte `at`: each byte equal ignoring ASCII
/// case, or a digit written for the word's letter. `word` is lower case.
fn spells_at(text: &str, at: usize, word: &str) -> bool {
    let Some(slice) = text.as_bytes().get(at..at + word.len()) else {
        return false;
    };
    slice
        .iter()
        .zip(word.bytes())
        .all(|(&c, w)| c.to_ascii_lowercase() == w || stands_for(c, w))
}

/// Whether the digit `c` is commonly written for the letter `w`.
fn stands_for(c: u8, w: u8) -> bool {
    matches!(
        (c, w),
        (b'0', b'o')
            | (b'1', b'i')
            | (b'1', b'l')
            | (b'3', b'e')
            | (b'4', b'a')
            | (b'5', b's')
            | (b'7', b't')
            | (b'8', b'b')
            | (b'9', b'g')
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn refused(rule: Rule, word: &str) -> Option<Refused> {
        Some(Refused {
            rule,
            word: word.to_owned(),
        })
    }

    #[test]
    fn the_builtin_list_is_read_whole() {
        let words = Words::default();
        let (reserved, offensive) = (words.reserved.len(), words.offensive.len());
        assert_eq!(reserved, 0);
        assert!(offensive > 150, "{offensive}");
        assert!(words
            .offensive
            .iter()
            .all(|w| !w.contains('#') && w.len() >= 3));
    }

    #[test]
    fn a_generated_code_that_spells_a_word_in_any_case_or_with_digits_is_refused() {
        let words = Words::default();
        for code in [
            "xxFUCKx", "aFuCkzz", "zB1TCHz", "Zsh1tQQ", "5H1Tabc", "b00bAAA", "a8oobzz",
        ] {
            assert!(
                words
                    .refuse_generated(code)
                    .is_some_and(|r| r.rule == Rule::Offensive),
                "{code}"
            );
        }
        assert_eq!(
            words.refuse_generated("xxFUCKx"),
            refused(Rule::Offensive, "fuck")
        );
        // Short words count only as the whole code; Hop's reserved words as well.
        assert_eq!(words.refuse_generated("aassaaa"), None);
        assert_eq!(
            words.refuse_generated("A55"),
            refused(Rule::Offensive, "ass")
        );
        assert_eq!(
            words.refuse_generated("Metrics"),
            refused(Rule::Reserved, "metrics")
        );
        assert_eq!(words.refuse_generated("aB3xY9q"), None);
    }

    #[test]
    fn an_alias_is_refused_for_being_a_word_not_for_holding_one() {
        let words = Words::default();
        assert_eq!(words.refuse_alias("analytics-2026"), None);
        assert_eq!(words.refuse_alias("cocktail-week"), None);
        assert_eq!(words.refuse_alias("classic"), None);
        assert_eq!(
            words.refuse_alias("kiss-my-a55"),
            refused(Rule::Offensive, "ass")
        );
        // Numbers are numbers: an e2e test's `spread-455` was refused as `ass`.
        assert_eq!(words.refuse_alias("spread-455"), None);
        assert_eq!(words.refuse_alias("sale-8008-5"), None);
        assert_eq!(words.refuse_alias("Sh1t"), refused(Rule::Offensive, "shit"));
        assert_eq!(
            words.refuse_alias("s-h_i-t"),
            refused(Rule::Offensive, "shit")
        );
        assert_eq!(
            words.refuse_alias("Login"),
            refused(Rule::Reserved, "login")
        );
    }

    #[test]
    fn an_operator_adds_words_and_takes_builtin_offensive_ones_out() {
        let words = Words::with_operator_lists(
            "# our own paths\nPricing\n\nblog # the marketing site\napi\n",
            "!goo\nfrobnicate\n",
        )
        .unwrap();
        assert_eq!(
            words.refuse_alias("pricing"),
            refused(Rule::OperatorReserved, "pricing")
        );
        assert_eq!(
            words.refuse_generated("BLOG"),
            refused(Rule::OperatorReserved, "blog")
        );
        // Hop's own word stays Hop's, once.
        assert_eq!(words.reserved.len(), 2);
        assert_eq!(words.refuse_alias("goo"), None);
        assert_eq!(
            Words::default().refuse_alias("goo"),
            refused(Rule::Offensive, "goo")
        );
        assert_eq!(
            words.refuse_generated("xfr0bn1cate"),
            refused(Rule::Offensive, "frobnicate")
        );
        // Reserved words are paths: no digit spellings.
        assert_eq!(words.refuse_alias("pr1cing"), None);
    }

    #[test]
    fn a_bad_list_is_refused_by_its_line() {
        assert_eq!(
            Words::with_operator_lists("ok\nno/slash\n", ""),
            Err(WordsError::NotACode {
                line: 2,
                word: "no/slash".into()
            })
        );
        assert_eq!(
            Words::with_operator_lists("!api", ""),
            Err(WordsError::OwnReserved {
                line: 1,
                word: "api".into()
            })
        );
        assert_eq!(
            Words::with_operator_lists("", "\n\nab\n"),
            Err(WordsError::BadOffensive {
                line: 3,
                word: "ab".into()
            })
        );
        assert_eq!(
            Words::with_operator_lists("", "!notonthelist"),
            Err(WordsError::NotBuiltIn {
                line: 1,
                word: "notonthelist".into()
            })
        );
        assert_eq!(
            Words::with_operator_lists("", "two words"),
            Err(WordsError::BadOffensive {
                line: 1,
                word: "two words".into()
            })
        );
    }

    /// The digit spellings, one by one, against a list of one word.
    #[test]
    fn every_digit_spelling_is_read_as_its_letter() {
        let words = Words::with_operator_lists("", "oiletasbg").unwrap();
        assert!(
            words.refuse_generated("01137458 9").is_none(),
            "a space is no letter"
        );
        assert_eq!(
            words.refuse_generated("x011374589"),
            refused(Rule::Offensive, "oiletasbg")
        );
    }

    /// Reference: the word, in lower case, with each digit replaced by every letter it
    /// stands for, found in the code the plain way.
    fn naive_generated(code: &str, word: &str) -> bool {
        let letters = |c: char| -> Vec<char> {
            match c.to_ascii_lowercase() {
                '0' => vec!['0', 'o'],
                '1' => vec!['1', 'i', 'l'],
                '3' => vec!['3', 'e'],
                '4' => vec!['4', 'a'],
                '5' => vec!['5', 's'],
                '7' => vec!['7', 't'],
                '8' => vec!['8', 'b'],
                '9' => vec!['9', 'g'],
                c => vec![c],
            }
        };
        let code: Vec<Vec<char>> = code.chars().map(letters).collect();
        let word: Vec<char> = word.chars().collect();
        if word.len() < SUBSTRING_MIN && word.len() != code.len() {
            return false;
        }
        code.windows(word.len()).any(|window| {
            window
                .iter()
                .zip(&word)
                .all(|(options, w)| options.contains(w))
        })
    }

    proptest! {
        #[test]
        fn generated_codes_are_judged_as_the_plain_reading_judges_them(
            code in "[0-9a-zA-Z]{3,10}",
        ) {
            let words = Words::default();
            let plain = words.offensive.iter().find(|w| naive_generated(&code, w));
            let judged = words.refuse_generated(&code).filter(|r| r.rule == Rule::Offensive);
            prop_assert_eq!(judged.is_some(), plain.is_some() && !is_reserved(&code), "{}", code);
        }

        #[test]
        fn a_listed_word_in_a_code_is_always_found(
            before in "[0-9a-zA-Z]{0,4}",
            after in "[0-9a-zA-Z]{0,4}",
            index in 0usize..1000,
            upper in any::<bool>(),
        ) {
            let words = Words::default();
            let long: Vec<&String> = words.offensive.iter().filter(|w| w.len() >= SUBSTRING_MIN).collect();
            let word = long[index % long.len()];
            let word = if upper { word.to_ascii_uppercase() } else { word.clone() };
            let code = format!("{before}{word}{after}");
            prop_assert!(words.refuse_generated(&code).is_some(), "{}", code);
        }
    }
}

//! Passwords, hashed with argon2id (RFC 9106) at the parameters OWASP recommends
//! (19 MiB, two passes, one lane: the `argon2` crate's defaults), and what a password
//! must be. Hashing is deliberately slow (tens of milliseconds): callers run it on a
//! blocking thread.

use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::Argon2;
use std::sync::OnceLock;

/// The shortest password taken. Accounts can ban links everywhere and issue API keys:
/// twelve characters, whatever they are (no composition rules, as NIST SP 800-63B says).
pub const MIN_PASSWORD_CHARS: usize = 12;
/// The longest: enough for any passphrase or generated password.
pub const MAX_PASSWORD_CHARS: usize = 256;

/// Why a password is not taken.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PasswordRefused {
    #[error("a password is at least {MIN_PASSWORD_CHARS} characters")]
    TooShort,
    #[error("a password is at most {MAX_PASSWORD_CHARS} characters")]
    TooLong,
    #[error("the password may not be the email address")]
    IsTheEmail,
}

/// Whether `password` may be `email`'s.
pub fn check(password: &str, email: &str) -> Result<(), PasswordRefused> {
    let chars = password.chars().count();
    if chars < MIN_PASSWORD_CHARS {
        return Err(PasswordRefused::TooShort);
    }
    if chars > MAX_PASSWORD_CHARS {
        return Err(PasswordRefused::TooLong);
    }
    if password.trim().eq_ignore_ascii_case(email.trim()) {
        return Err(PasswordRefused::IsTheEmail);
    }
    Ok(())
}

/// The PHC string of `password` under a fresh random salt.
pub fn hash(password: &str) -> Result<String, String> {
    let salt = crate::random_ids::random_bytes::<16>().map_err(|e| e.to_string())?;
    let salt = SaltString::encode_b64(&salt).map_err(|e| e.to_string())?;
    Argon2::default()
        .hash_password(password.as_bytes(), &salt)
        .map(|h| h.to_string())
        .map_err(|e| e.to_string())
}

/// Whether `password` is the one `phc` was made from. A stored hash that does not
/// parse verifies nothing.
pub fn verify(password: &str, phc: &str) -> bool {
    PasswordHash::new(phc).is_ok_and(|parsed| {
        Argon2::default()
            .verify_password(password.as_bytes(), &parsed)
            .is_ok()
    })
}

/// A hash nobody's password makes: what a sign-in with an unknown email is verified
/// against, so that its answer takes as long as a wrong password's and does not tell
/// which emails have accounts.
pub fn nobody() -> &'static str {
    static NOBODY: OnceLock<String> = OnceLock::new();
    NOBODY.get_or_init(|| hash("nobody has this password").unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hash_verifies_its_password_and_no_other() {
        let phc = hash("correct horse battery").expect("hash");
        assert!(phc.starts_with("$argon2id$v=19$m=19456,t=2,p=1$"), "{phc}");
        assert!(verify("correct horse battery", &phc));
        assert!(!verify("correct horse batterz", &phc));
        assert!(!verify("correct horse battery", "not a hash"));
        assert_ne!(hash("correct horse battery").expect("hash"), phc, "salted");
    }

    #[test]
    fn passwords_are_long_enough_and_not_the_email() {
        assert_eq!(
            check("short", "a@b.example"),
            Err(PasswordRefused::TooShort)
        );
        assert_eq!(
            check(&"x".repeat(257), "a@b.example"),
            Err(PasswordRefused::TooLong)
        );
        assert_eq!(
            check("Ana@Acme.example", "ana@acme.example"),
            Err(PasswordRefused::IsTheEmail)
        );
        // Twelve characters, counted as characters, not bytes.
        assert_eq!(
            check("ñññññññññññ", "a@b.example"),
            Err(PasswordRefused::TooShort)
        );
        assert_eq!(check("ññññññññññññ", "a@b.example"), Ok(()));
    }
}

//! Standard Webhooks signatures (<https://www.standardwebhooks.com>): what a receiver's
//! reference library checks.
//!
//! A secret reads `whsec_` and the base64 of its key; the signature of a message is
//! `v1,` and the base64 of HMAC-SHA256 over `{id}.{timestamp}.{body}` with that key.
//! During a rotation both secrets sign, space-separated, so a receiver holding either
//! one accepts the message.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use hmac::{Hmac, Mac};
use sha2::Sha256;

/// The prefix every secret carries.
pub const SECRET_PREFIX: &str = "whsec_";
/// Key bytes of a secret Hop makes (the specification asks for 24 to 64).
const KEY_BYTES: usize = 32;

/// A new secret: 32 random bytes.
pub fn new_secret() -> Result<String, getrandom::Error> {
    let key = crate::random_ids::random_bytes::<KEY_BYTES>()?;
    Ok(format!("{SECRET_PREFIX}{}", STANDARD.encode(key)))
}

/// The key of a secret; `None` when it is not one.
fn key_of(secret: &str) -> Option<Vec<u8>> {
    STANDARD
        .decode(secret.strip_prefix(SECRET_PREFIX)?)
        .ok()
        .filter(|k| !k.is_empty())
}

/// One `v1,` signature of the message with `secret`; `None` when the secret is not one.
pub fn sign(secret: &str, id: &str, timestamp: i64, body: &[u8]) -> Option<String> {
    let key = key_of(secret)?;
    let mut mac = Hmac::<Sha256>::new_from_slice(&key).ok()?;
    mac.update(id.as_bytes());
    mac.update(b".");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    Some(format!(
        "v1,{}",
        STANDARD.encode(mac.finalize().into_bytes())
    ))
}

/// The `webhook-signature` header: a signature with each secret given, space-separated.
pub fn signature_header<'a>(
    secrets: impl IntoIterator<Item = &'a str>,
    id: &str,
    timestamp: i64,
    body: &[u8],
) -> String {
    secrets
        .into_iter()
        .filter_map(|s| sign(s, id, timestamp, body))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The specification's own example (its reference libraries test against it).
    #[test]
    fn signs_the_specifications_example_as_its_libraries_do() {
        let got = sign(
            "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
            "msg_p5jXN8AQM9LWM0D4loKWxJek",
            1_614_265_330,
            br#"{"test": 2432232314}"#,
        );
        assert_eq!(
            got.as_deref(),
            Some("v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=")
        );
    }

    #[test]
    fn a_rotation_signs_with_both_secrets_and_a_bad_secret_with_none() {
        let (a, b) = (new_secret().expect("random"), new_secret().expect("random"));
        assert!(a.starts_with(SECRET_PREFIX) && a != b);
        let header = signature_header([a.as_str(), b.as_str()], "msg_1", 1, b"{}");
        let parts: Vec<&str> = header.split(' ').collect();
        assert_eq!(parts.len(), 2);
        assert_eq!(Some(parts[0]), sign(&a, "msg_1", 1, b"{}").as_deref());
        assert_eq!(Some(parts[1]), sign(&b, "msg_1", 1, b"{}").as_deref());
        assert_ne!(parts[0], parts[1]);
        assert_eq!(sign("not-a-secret", "msg_1", 1, b"{}"), None);
        assert_eq!(sign("whsec_", "msg_1", 1, b"{}"), None);
    }
}

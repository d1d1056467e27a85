//! Random identifiers (API keys, import runs, the publisher's holder id) and their hex
//! form: one source of randomness and one encoder for all of them.

/// `N` bytes from the system's random number generator.
pub fn random_bytes<const N: usize>() -> Result<[u8; N], getrandom::Error> {
    let mut bytes = [0u8; N];
    getrandom::getrandom(&mut bytes)?;
    Ok(bytes)
}

/// `N` random bytes as lowercase hex (`2 * N` characters).
pub fn random_hex<const N: usize>() -> Result<String, getrandom::Error> {
    random_bytes::<N>().map(|b| hex(&b))
}

/// Bytes as lowercase hex.
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 0xf)]));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_is_two_lowercase_digits_per_byte_in_order() {
        assert_eq!(hex(&[0x00, 0x0f, 0xa5, 0xff]), "000fa5ff");
        assert_eq!(hex(&[]), "");
    }

    #[test]
    fn random_hex_has_twice_its_bytes_in_digits() {
        let id = random_hex::<16>().expect("randomness");
        assert_eq!(id.len(), 32);
        assert!(id
            .bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()));
    }
}

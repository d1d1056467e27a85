//! Route keys: the identity of a link as visitors see it, `domain/code`. Below every
//! module that names a link (domains, access, the password form, bans, clicks).

use std::fmt;

/// A normalized domain and code: the identity of a link as visitors see it.
///
/// Held as its text, `domain/code`, in one allocation: the origin's redirect path makes
/// one per visit and looks its entry up by that text.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RouteKey {
    key: String,
    /// Where the `/` is.
    slash: usize,
}

impl RouteKey {
    /// Builds a key from an already normalized domain and a code; neither may contain `/`.
    pub fn new(domain: impl AsRef<str>, code: impl AsRef<str>) -> Option<Self> {
        let (domain, code) = (domain.as_ref(), code.as_ref());
        // By byte: `/` is ASCII, and `str::contains` ran a char searcher on every visit.
        let has_slash = |s: &str| s.as_bytes().contains(&b'/');
        if domain.is_empty() || code.is_empty() || has_slash(domain) || has_slash(code) {
            return None;
        }
        let mut key = String::with_capacity(domain.len() + 1 + code.len());
        key.push_str(domain);
        key.push('/');
        key.push_str(code);
        Some(RouteKey {
            key,
            slash: domain.len(),
        })
    }

    /// Reads a key written by `Display`: `domain/code`.
    pub fn parse(key: &str) -> Option<Self> {
        let (domain, code) = key.split_once('/')?;
        RouteKey::new(domain, code)
    }

    pub fn domain(&self) -> &str {
        &self.key[..self.slash]
    }

    pub fn code(&self) -> &str {
        &self.key[self.slash + 1..]
    }

    /// `domain/code`, as `Display` writes it.
    pub fn as_str(&self) -> &str {
        &self.key
    }

    /// The KV key of the link's edge record: `l:{domain}/{code}`.
    pub fn kv_key(&self) -> String {
        format!("l:{self}")
    }
}

/// By domain, then code (not by the text: `a-b/x` sorts after `a/y`).
impl Ord for RouteKey {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.domain(), self.code()).cmp(&(other.domain(), other.code()))
    }
}

impl PartialOrd for RouteKey {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Display for RouteKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn route_keys_join_domain_and_code() {
        let key = RouteKey::new("s.example", "7Fk3aQx").unwrap();
        assert_eq!(key.to_string(), "s.example/7Fk3aQx");
        assert_eq!(key.kv_key(), "l:s.example/7Fk3aQx");
        assert!(RouteKey::new("s.example", "a/b").is_none());
        assert!(RouteKey::new("", "abc").is_none());
    }
}

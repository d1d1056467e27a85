//! Target URLs: what a link may point at, and how the visitor's query joins it.

use url::Url;

/// The longest target accepted, in bytes after normalization. Longer URLs break in
/// browsers, proxies and mail clients, and are a favourite of abuse.
pub const MAX_TARGET_LEN: usize = 2048;

/// Why a target URL was refused. Each says exactly what to fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TargetError {
    #[error("target_url is not a valid absolute URL: {0}")]
    Unparseable(String),
    #[error("target_url must use http or https, not {0:?}")]
    UnsupportedScheme(String),
    #[error("target_url must not contain a user name or password")]
    Userinfo,
    #[error("target_url must name a host")]
    MissingHost,
    #[error("target_url is {len} bytes long after normalization; the limit is {max}", max = MAX_TARGET_LEN)]
    TooLong { len: usize },
}

/// A target URL that passed validation, in normalized form (scheme and host lowercase,
/// international hosts in punycode, default port dropped, path escaped).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetUrl {
    url: Url,
}

impl TargetUrl {
    /// The normalized URL, as stored and published.
    pub fn as_str(&self) -> &str {
        self.url.as_str()
    }

    /// The host, in the normalized form host bans are matched against.
    pub fn host(&self) -> &str {
        // Validation guarantees a host.
        self.url.host_str().unwrap_or_default()
    }
}

/// Validates and normalizes a target URL.
pub fn validate_target(input: &str) -> Result<TargetUrl, TargetError> {
    let url = Url::parse(input.trim()).map_err(|e| TargetError::Unparseable(e.to_string()))?;
    match url.scheme() {
        "http" | "https" => {}
        other => return Err(TargetError::UnsupportedScheme(other.to_owned())),
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(TargetError::Userinfo);
    }
    match url.host_str() {
        Some(h) if !h.is_empty() => {}
        _ => return Err(TargetError::MissingHost),
    }
    let len = url.as_str().len();
    if len > MAX_TARGET_LEN {
        return Err(TargetError::TooLong { len });
    }
    Ok(TargetUrl { url })
}

/// Appends the visitor's query parameters to `target`'s. A parameter the target already
/// has keeps the target's value; the visitor's parameters keep their own order and exact
/// encoding; the target's fragment stays at the end.
pub fn merge_query(target: &mut Url, visitor_query: Option<&str>) {
    let Some(visitor) = visitor_query.filter(|q| !q.is_empty()) else {
        return;
    };
    let taken: Vec<String> = target
        .query_pairs()
        .map(|(name, _)| name.into_owned())
        .collect();
    let mut merged = target.query().unwrap_or_default().to_owned();
    for pair in visitor.split('&').filter(|p| !p.is_empty()) {
        // Decode the name as a form parser would, so `utm%5Fsource` and `utm_source`
        // are the same parameter.
        let name = url::form_urlencoded::parse(pair.as_bytes())
            .next()
            .map(|(name, _)| name.into_owned())
            .unwrap_or_default();
        if taken.contains(&name) {
            continue;
        }
        if !merged.is_empty() {
            merged.push('&');
        }
        merged.push_str(pair);
    }
    if !merged.is_empty() {
        target.set_query(Some(&merged));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn accepts_and_normalizes_http_targets() {
        let t = validate_target("  HTTPS://Bücher.Example:443/a b?x=1#top ").unwrap();
        assert_eq!(t.as_str(), "https://xn--bcher-kva.example/a%20b?x=1#top");
        assert_eq!(t.host(), "xn--bcher-kva.example");
        assert_eq!(
            validate_target("http://127.0.0.1:8080").unwrap().as_str(),
            "http://127.0.0.1:8080/"
        );
    }

    #[test]
    fn refuses_with_the_reason() {
        assert!(matches!(
            validate_target("not a url"),
            Err(TargetError::Unparseable(_))
        ));
        assert!(matches!(
            validate_target("/relative/path"),
            Err(TargetError::Unparseable(_))
        ));
        assert_eq!(
            validate_target("javascript:alert(1)"),
            Err(TargetError::UnsupportedScheme("javascript".into()))
        );
        assert_eq!(
            validate_target("ftp://files.example/x"),
            Err(TargetError::UnsupportedScheme("ftp".into()))
        );
        assert_eq!(
            validate_target("https://bob:pw@bank.example/"),
            Err(TargetError::Userinfo)
        );
        assert_eq!(
            validate_target("https://bob@bank.example/"),
            Err(TargetError::Userinfo)
        );
        assert!(matches!(
            validate_target("http://"),
            Err(TargetError::Unparseable(_))
        ));
        // The URL standard reads extra slashes after a special scheme as nothing.
        assert_eq!(
            validate_target("http:///h.example").unwrap().host(),
            "h.example"
        );
        let long = format!("https://e.example/{}", "a".repeat(MAX_TARGET_LEN));
        assert!(matches!(
            validate_target(&long),
            Err(TargetError::TooLong { .. })
        ));
        let fits = format!("https://e.example/{}", "a".repeat(MAX_TARGET_LEN - 18));
        assert_eq!(
            validate_target(&fits).unwrap().as_str().len(),
            MAX_TARGET_LEN
        );
    }

    fn merged(target: &str, visitor: Option<&str>) -> String {
        let mut url = Url::parse(target).unwrap();
        merge_query(&mut url, visitor);
        url.into()
    }

    #[test]
    fn query_merge_rules() {
        // Appended after the target's own parameters.
        assert_eq!(
            merged("https://e.example/p?a=1", Some("b=2")),
            "https://e.example/p?a=1&b=2"
        );
        // The target keeps its value for a parameter it already has.
        assert_eq!(
            merged("https://e.example/p?a=1", Some("a=9&b=2")),
            "https://e.example/p?a=1&b=2"
        );
        // Names are compared decoded.
        assert_eq!(
            merged("https://e.example/?utm_source=x", Some("utm%5Fsource=y")),
            "https://e.example/?utm_source=x"
        );
        // A target without a query gains one; the fragment stays last.
        assert_eq!(
            merged("https://e.example/p#frag", Some("b=2&c")),
            "https://e.example/p?b=2&c#frag"
        );
        // The visitor's encoding and repeated names survive untouched.
        assert_eq!(
            merged("https://e.example/", Some("q=a%20b&q=c+d")),
            "https://e.example/?q=a%20b&q=c+d"
        );
        // Nothing to forward.
        assert_eq!(
            merged("https://e.example/?a=1", None),
            "https://e.example/?a=1"
        );
        assert_eq!(
            merged("https://e.example/?a=1", Some("")),
            "https://e.example/?a=1"
        );
        assert_eq!(
            merged("https://e.example/", Some("&&")),
            "https://e.example/"
        );
    }

    proptest! {
        #[test]
        fn merge_keeps_every_target_pair_and_adds_only_new_names(
            target_pairs in prop::collection::vec(("[a-c]{1,2}", "[a-z0-9]{0,3}"), 0..4),
            visitor_pairs in prop::collection::vec(("[a-d]{1,2}", "[a-z0-9 %]{0,3}"), 0..4),
            fragment in prop::option::of("[a-z]{1,4}"),
        ) {
            let enc = |pairs: &[(String, String)]| {
                url::form_urlencoded::Serializer::new(String::new()).extend_pairs(pairs).finish()
            };
            let mut target = Url::parse("https://e.example/path").unwrap();
            if !target_pairs.is_empty() { target.set_query(Some(&enc(&target_pairs))); }
            target.set_fragment(fragment.as_deref());
            let mut out = target.clone();
            merge_query(&mut out, Some(&enc(&visitor_pairs)));

            let got: Vec<(String, String)> = out.query_pairs().map(|(k, v)| (k.into(), v.into())).collect();
            let mut expected: Vec<(String, String)> = target.query_pairs().map(|(k, v)| (k.into(), v.into())).collect();
            let target_names: Vec<String> = expected.iter().map(|(k, _)| k.clone()).collect();
            expected.extend(visitor_pairs.iter().filter(|(k, _)| !target_names.contains(k)).cloned());
            prop_assert_eq!(got, expected);
            prop_assert_eq!(out.fragment(), fragment.as_deref());
            prop_assert_eq!(out.path(), "/path");
        }
    }
}

//! The parts of a visited URL a redirect needs, read off the runtime's serialization.
//!
//! The edge runtime hands the worker `request.url` already parsed and serialized by its
//! WHATWG URL parser: the host lowercased and in punycode, the path percent-encoded, the
//! port dropped when it is the scheme's default. Parsing that string again with the `url`
//! crate only repeats the work (it was a measurable part of a redirect's CPU in wasm), so
//! this splits it at the delimiters the serialization guarantees. Anything that is not
//! such a serialization is refused, never guessed at.

/// Host, path and query of an `http:` or `https:` URL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VisitUrl<'a> {
    /// Without port; an IPv6 address keeps its brackets, as `url::Url::host_str` does.
    pub host: &'a str,
    /// Starts with `/`.
    pub path: &'a str,
    /// Without `?`; `Some("")` for a URL ending in `?`.
    pub query: Option<&'a str>,
}

impl<'a> VisitUrl<'a> {
    /// Splits a WHATWG-serialized `http:`/`https:` URL; `None` for anything else.
    pub fn from_serialized(url: &'a str) -> Option<VisitUrl<'a>> {
        let rest = url
            .strip_prefix("https://")
            .or_else(|| url.strip_prefix("http://"))?;
        // The fragment is never sent, but a serialization may carry one.
        let rest = rest.split_once('#').map_or(rest, |(before, _)| before);
        let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
        let (authority, rest) = rest.split_at(authority_end);
        // Userinfo, when present, ends at the last `@` (one inside it is escaped).
        let host_port = authority.rsplit_once('@').map_or(authority, |(_, hp)| hp);
        let host = if host_port.starts_with('[') {
            &host_port[..host_port.find(']')? + 1]
        } else {
            host_port
                .split_once(':')
                .map_or(host_port, |(host, _)| host)
        };
        if host.is_empty() {
            return None;
        }
        let (path, query) = match rest.split_once('?') {
            Some((path, query)) => (path, Some(query)),
            None => (rest, None),
        };
        // Special schemes always serialize a path, at least `/`.
        if !path.starts_with('/') {
            return None;
        }
        Some(VisitUrl { host, path, query })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn parts(url: &str) -> Option<(&str, &str, Option<&str>)> {
        VisitUrl::from_serialized(url).map(|v| (v.host, v.path, v.query))
    }

    #[test]
    fn splits_the_shapes_a_visit_has() {
        assert_eq!(
            parts("https://s.example/abc"),
            Some(("s.example", "/abc", None))
        );
        assert_eq!(
            parts("http://s.example:8787/abc?utm=1&x=%20#frag"),
            Some(("s.example", "/abc", Some("utm=1&x=%20")))
        );
        assert_eq!(
            parts("https://s.example/?"),
            Some(("s.example", "/", Some("")))
        );
        assert_eq!(parts("http://[::1]:8787/x"), Some(("[::1]", "/x", None)));
        assert_eq!(
            parts("https://u:p@s.example/x"),
            Some(("s.example", "/x", None))
        );
        assert_eq!(
            parts("https://xn--bcher-kva.example/a/b"),
            Some(("xn--bcher-kva.example", "/a/b", None))
        );
    }

    #[test]
    fn refuses_what_is_not_a_web_url() {
        for url in [
            "",
            "ftp://s.example/x",
            "https://",
            "https:///x",
            "https://s.example?x",
            "s.example/x",
        ] {
            assert_eq!(parts(url), None, "{url}");
        }
    }

    proptest! {
        /// Whatever the `url` crate serializes, this reads the same host, path and query
        /// that the `url` crate reads back.
        #[test]
        fn agrees_with_the_url_crate(
            scheme in prop::sample::select(vec!["http", "https"]),
            userinfo in prop::option::of("[a-z]{1,5}(:[a-z@]{0,5})?"),
            host in prop_oneof![
                "[a-zA-Z0-9]{1,10}(\\.[a-zA-Z0-9-]{1,10}){0,3}",
                "[a-z]{1,5}\\.bücher",
                Just("[::1]".to_owned()),
                Just("127.0.0.1".to_owned()),
            ],
            port in prop::option::of(1u16..),
            path in "(/[a-zA-Z0-9%._~ é-]{0,8}){0,4}",
            query in prop::option::of("[a-zA-Z0-9=&%/? é]{0,12}"),
            fragment in prop::option::of("[a-z#?]{0,5}"),
        ) {
            let mut raw = format!("{scheme}://");
            if let Some(userinfo) = &userinfo {
                raw.push_str(userinfo);
                raw.push('@');
            }
            raw.push_str(&host);
            if let Some(port) = port {
                raw.push_str(&format!(":{port}"));
            }
            raw.push_str(&path);
            if let Some(query) = &query {
                raw.push('?');
                raw.push_str(query);
            }
            if let Some(fragment) = &fragment {
                raw.push('#');
                raw.push_str(fragment);
            }
            let Ok(parsed) = url::Url::parse(&raw) else {
                return Ok(());
            };
            let split = VisitUrl::from_serialized(parsed.as_str());
            prop_assert_eq!(
                split.map(|v| (v.host, v.path, v.query)),
                parsed.host_str().map(|h| (h, parsed.path(), parsed.query())),
                "{}", parsed.as_str()
            );
        }
    }
}

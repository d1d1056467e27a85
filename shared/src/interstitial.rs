//! The interstitial (issue 17): for a link its owner or its domain marks untrusted, a
//! page that names where the visitor is about to go, and a link to continue, instead
//! of a redirect.
//!
//! The destination's host is what a visitor must be able to judge, so it is shown as
//! people read it: an international name in Unicode, with its punycode beside it (the
//! form a lookalike cannot fake: `аpple.example` with a Cyrillic `а` reads
//! `xn--pple-43d.example`). Every international name gets both, rather than only those
//! that mix scripts: telling scripts apart needs Unicode's script tables, which would
//! cost the edge's WebAssembly more than the rest of this page.

use crate::html::{escape, visitor_head, VISITOR_TAIL};
use crate::visit_url::VisitUrl;

/// The host of `target` as the page shows it: `(readable, punycode)`, the second only
/// when they differ.
pub fn readable_host(target: &str) -> (String, Option<String>) {
    let host = VisitUrl::from_serialized(target)
        .map(|v| v.host)
        .unwrap_or_default();
    let (unicode, ok) = idna::domain_to_unicode(host);
    if ok.is_ok() && unicode != host {
        (unicode, Some(host.to_owned()))
    } else {
        (host.to_owned(), None)
    }
}

/// The page for a visit of a link to `target`: no script, no external asset, not
/// indexed.
pub fn page(target: &str) -> String {
    let (readable, puny) = readable_host(target);
    let host = match puny {
        Some(puny) => format!(
            "<strong>{}</strong> <code>({})</code>",
            escape(&readable),
            escape(&puny)
        ),
        None => format!("<strong>{}</strong>", escape(&readable)),
    };
    let target = escape(target);
    format!(
        "{}<h1>You are about to leave</h1><p>This link goes to {host}.</p>\
         <p>Its full address is <code>{target}</code></p>\
         <p><a class=\"go\" href=\"{target}\" rel=\"noreferrer noopener\">Continue to {}</a></p>{VISITOR_TAIL}",
        visitor_head!("You are leaving"),
        escape(&readable)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plain_host_is_shown_as_it_is() {
        assert_eq!(
            readable_host("https://shop.example/a"),
            ("shop.example".into(), None)
        );
        let page = page("https://shop.example/a?x=1&y=2");
        assert!(page.contains("<strong>shop.example</strong>"), "{page}");
        assert!(page.contains(r#"href="https://shop.example/a?x=1&amp;y=2""#));
        assert!(!page.contains("<script"));
    }

    #[test]
    fn an_international_host_is_shown_in_unicode_with_its_punycode_beside_it() {
        // A lookalike of apple.example with a Cyrillic "а".
        let (readable, puny) = readable_host("https://xn--pple-43d.example/");
        assert_eq!(readable, "\u{430}pple.example");
        assert_eq!(puny.as_deref(), Some("xn--pple-43d.example"));
        let page = page("https://xn--bcher-kva.example/");
        assert!(
            page.contains("<strong>bücher.example</strong> <code>(xn--bcher-kva.example)</code>"),
            "{page}"
        );
    }

    #[test]
    fn nothing_in_the_target_leaves_its_attribute() {
        let page = page("https://e.example/\"><script>alert(1)</script>");
        assert!(!page.contains("<script>"), "{page}");
    }
}

//! What the pages a visitor may get share: one small style, inline (a page of a short
//! domain loads nothing from anywhere), readable on a phone; the document around each
//! page's own words; and text escaped for an element or an attribute.
//!
//! The fixed pages (not found, expired, blocked, …) are assembled at compile time
//! ([`visitor_page!`]), so answering with one formats nothing.

/// The style of every visitor page: a column of readable width, the system's font, a
/// link colour with enough contrast (WCAG AA on white), visible focus.
macro_rules! visitor_style {
    () => {
        "body{font:17px/1.55 system-ui,-apple-system,\"Segoe UI\",Roboto,sans-serif;\
         color:#1b1f24;background:#fff;max-width:32rem;margin:12vh auto;padding:0 1.25rem}\
         h1{font-size:1.5rem;line-height:1.25}a{color:#0b5cad}\
         code{overflow-wrap:anywhere;font-size:.9em}\
         input,button{font:inherit;padding:.5rem .6rem;margin:.3rem 0;width:100%;\
         box-sizing:border-box;border:1px solid #8c959f;border-radius:6px}\
         button{background:#0b5cad;color:#fff;border-color:#0b5cad}\
         :focus-visible{outline:3px solid #f4a100;outline-offset:2px}\
         .note{color:#a40e26}.go{display:inline-block;margin-top:.5rem;font-weight:600}\
         .brand{color:#0b5cad;font-weight:700;margin:0 0 1.5rem}"
    };
}
pub(crate) use visitor_style;

/// The start of a visitor page, up to `<body>`, with its title (a literal).
macro_rules! visitor_head {
    ($title:expr) => {
        concat!(
            "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">",
            "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">",
            "<meta name=\"robots\" content=\"noindex\"><title>",
            $title,
            "</title><style>",
            $crate::html::visitor_style!(),
            "</style></head><body><main>"
        )
    };
}
pub(crate) use visitor_head;

/// A whole fixed visitor page: its title as its heading, then its words (HTML).
macro_rules! visitor_page {
    ($title:expr, $body:expr) => {
        concat!(
            $crate::html::visitor_head!($title),
            "<h1>",
            $title,
            "</h1>",
            $body,
            "</main></body></html>\n"
        )
    };
}
pub(crate) use visitor_page;

/// The end of a visitor page begun with [`visitor_head!`].
pub(crate) const VISITOR_TAIL: &str = "</main></body></html>\n";

/// The style's accent: links, buttons and a brand's name, replaced by a brand's colour.
const ACCENT: &str = "#0b5cad";

/// `page` as `brand`'s: its name above the page's own words, its colour for the accent.
/// The colour is replaced in the style alone (the page's words, a target's address say,
/// may hold the same text), and only when it is `#rrggbb`.
pub(crate) fn branded(page: &str, brand: &crate::brand::Brand) -> String {
    let mut out = String::with_capacity(page.len() + brand.name.len() + 32);
    let (head, rest) = page.split_once("</style>").unwrap_or(("", page));
    match (
        head.split_once(ACCENT),
        crate::brand::hex_colour(&brand.colour),
    ) {
        // The accent stands in the style once per rule that uses it: each is replaced.
        (Some(_), Some(_)) => {
            let mut parts = head.split(ACCENT);
            out.push_str(parts.next().unwrap_or_default());
            for part in parts {
                out.push_str(&brand.colour);
                out.push_str(part);
            }
        }
        _ => out.push_str(head),
    }
    if !head.is_empty() {
        out.push_str("</style>");
    }
    match rest.split_once("<main>") {
        Some((before, after)) => {
            out.push_str(before);
            out.push_str("<main><p class=\"brand\">");
            out.push_str(&escape(&brand.name));
            out.push_str("</p>");
            out.push_str(after);
        }
        None => out.push_str(rest),
    }
    out
}

/// Text safe inside an HTML attribute or element.
pub(crate) fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::brand::Brand;

    #[test]
    fn a_brand_recolours_the_style_and_names_itself_above_the_page() {
        let page = visitor_page!("Not found", "<p>See https://e.example/#0b5cad</p>");
        assert!(visitor_style!().contains(ACCENT));
        let brand = Brand {
            name: "Acme <Shop>".into(),
            colour: "#8a1c1c".into(),
        };
        let shown = branded(page, &brand);
        assert!(!shown[..shown.find("</style>").expect("a style")].contains(ACCENT));
        assert!(
            shown.contains("<main><p class=\"brand\">Acme &lt;Shop&gt;</p><h1>Not found</h1>"),
            "{shown}"
        );
        // The page's own words keep the text the accent has.
        assert!(shown.contains("https://e.example/#0b5cad"), "{shown}");
        // A colour that is not one changes nothing in the style.
        let odd = Brand {
            name: "X".into(),
            colour: "red;}body{display:none".into(),
        };
        assert!(!branded(page, &odd).contains("display:none"));
    }
}

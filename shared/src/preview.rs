//! Social previews (issue 17): link-preview crawlers get a small HTML page with Open
//! Graph and Twitter tags and a refresh to the target, instead of a bare redirect, so a
//! link shared in a chat shows the title, description and image its owner chose.

pub use crate::agent::{is_previewer, PREVIEWERS};
use crate::html::escape;
use serde::{Deserialize, Serialize};

/// The longest title, and description, a preview may have (in bytes); longer is
/// refused, not cut.
pub const MAX_TITLE: usize = 200;
pub const MAX_DESCRIPTION: usize = 500;

/// What a link shows when it is shared.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct Preview {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// An `https` image (validated by the caller as a target is).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_url: Option<String>,
}

/// Why a preview was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PreviewError {
    #[error("preview.{field} is longer than {max} bytes")]
    TooLong { field: &'static str, max: usize },
    #[error("preview.{0} holds a control character")]
    Control(&'static str),
    #[error("a preview needs a title, a description or an image")]
    Empty,
}

impl Preview {
    /// Checks the texts; the image's URL is the caller's to validate.
    pub fn validate(&self) -> Result<(), PreviewError> {
        if self.title.is_none() && self.description.is_none() && self.image_url.is_none() {
            return Err(PreviewError::Empty);
        }
        for (field, text, max) in [
            ("title", &self.title, MAX_TITLE),
            ("description", &self.description, MAX_DESCRIPTION),
        ] {
            let Some(text) = text else { continue };
            if text.len() > max {
                return Err(PreviewError::TooLong { field, max });
            }
            if text.chars().any(char::is_control) {
                return Err(PreviewError::Control(field));
            }
        }
        Ok(())
    }

    /// The page a previewer gets for a link to `target` known as `short_url`: the
    /// tags, a refresh to the target (unless `refresh` is false: behind an interstitial,
    /// no page carries a visitor on by itself), and a plain link to it; no script, no
    /// external asset but the owner's image.
    pub fn page(&self, short_url: &str, target: &str, refresh: bool) -> String {
        let mut tags = String::new();
        let mut meta = |property: &str, content: &str| {
            tags.push_str("<meta property=\"");
            tags.push_str(property);
            tags.push_str("\" content=\"");
            tags.push_str(&escape(content));
            tags.push_str("\">\n");
        };
        meta("og:url", short_url);
        meta("og:type", "website");
        if let Some(t) = &self.title {
            meta("og:title", t);
            meta("twitter:title", t);
        }
        if let Some(d) = &self.description {
            meta("og:description", d);
            meta("twitter:description", d);
        }
        match &self.image_url {
            Some(i) => {
                meta("og:image", i);
                meta("twitter:image", i);
                meta("twitter:card", "summary_large_image");
            }
            None => meta("twitter:card", "summary"),
        }
        let target = escape(target);
        let title = escape(self.title.as_deref().unwrap_or(short_url));
        let refresh = if refresh {
            format!("<meta http-equiv=\"refresh\" content=\"0; url={target}\">\n")
        } else {
            String::new()
        };
        // A person who lands here (a crawler's refresh not followed) gets the visitor
        // pages' style and one link on.
        format!(
            "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n\
             <meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\n\
             <title>{title}</title>\n{tags}{refresh}<style>{}</style></head>\n\
             <body><main><h1>{title}</h1><p><a class=\"go\" href=\"{target}\">Continue to the page</a></p>\
             <p><code>{target}</code></p></main></body></html>\n",
            crate::html::visitor_style!()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_page_carries_the_tags_and_the_refresh_with_everything_escaped() {
        let preview = Preview {
            title: Some("Spring \"sale\" <now>".into()),
            description: Some("Tom & Jerry's".into()),
            image_url: Some("https://img.example/a.png?x=1&y=2".into()),
        };
        let page = preview.page(
            "https://s.example/spring",
            "https://shop.example/?a=1&b=\"2\"",
            true,
        );
        assert!(
            page.contains(
                r#"<meta property="og:title" content="Spring &quot;sale&quot; &lt;now&gt;">"#
            ),
            "{page}"
        );
        assert!(
            page.contains(r#"<meta property="og:description" content="Tom &amp; Jerry&#39;s">"#)
        );
        assert!(page.contains(
            r#"<meta property="og:image" content="https://img.example/a.png?x=1&amp;y=2">"#
        ));
        assert!(page.contains(r#"<meta property="twitter:card" content="summary_large_image">"#));
        assert!(page.contains(r#"<meta http-equiv="refresh" content="0; url=https://shop.example/?a=1&amp;b=&quot;2&quot;">"#));
        assert!(!page.contains("<script"));
    }

    #[test]
    fn previews_are_refused_when_empty_too_long_or_holding_control_characters() {
        assert_eq!(Preview::default().validate(), Err(PreviewError::Empty));
        let long = Preview {
            title: Some("x".repeat(MAX_TITLE + 1)),
            ..Preview::default()
        };
        assert_eq!(
            long.validate(),
            Err(PreviewError::TooLong {
                field: "title",
                max: MAX_TITLE
            })
        );
        let control = Preview {
            description: Some("a\u{0}b".into()),
            ..Preview::default()
        };
        assert_eq!(
            control.validate(),
            Err(PreviewError::Control("description"))
        );
        assert!(serde_json::from_str::<Preview>(r#"{"titel": "x"}"#).is_err());
    }

    proptest! {
        /// Whatever an owner writes, it cannot open a tag or leave an attribute.
        #[test]
        fn no_text_escapes_its_attribute(title in ".{0,50}", target in ".{0,50}") {
            let page = Preview { title: Some(title), ..Preview::default() }.page("https://s.example/x", &target, true);
            let tags = page.matches('<').count();
            let expected = Preview { title: Some("t".into()), ..Preview::default() }
                .page("https://s.example/x", "t", true)
                .matches('<')
                .count();
            prop_assert_eq!(tags, expected);
            prop_assert_eq!(page.matches('"').count() % 2, 0);
        }
    }
}

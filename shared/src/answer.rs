//! What a visit is answered with: the request methods the redirect path tells apart,
//! what happened ([`Outcome`]), and the response itself ([`Decision`]), ready for an
//! adapter to write out. The types alone, below both the decision that makes them
//! (`crate::decision`) and the clicks that count them (`crate::clicks`); re-exported by
//! `crate::decision`, their public home.

use std::borrow::Cow;

/// The request methods the redirect path tells apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    Get,
    Head,
    /// Only a password link's form posts (to its own short URL).
    Post,
    Other,
}

impl Method {
    pub fn parse(method: &str) -> Method {
        match method {
            "GET" => Method::Get,
            "HEAD" => Method::Head,
            "POST" => Method::Post,
            _ => Method::Other,
        }
    }
}

/// Where every browser asks every site for its icon, visitors' pages on a short domain
/// included.
pub const FAVICON_PATH: &str = "/favicon.ico";

/// How long a browser keeps the answer to [`FAVICON_PATH`]: a week, so that a visitor's
/// page asks once, not on every visit.
pub const FAVICON_CACHE_CONTROL: &str = "public, max-age=604800";

/// Whether a request is a browser's ask for the site's icon: answered `204` with
/// [`FAVICON_CACHE_CONTROL`] before anything is looked up, and never counted as a visit,
/// an answer or a miss (a 404 there was an error in every visitor's console, and a miss
/// in every count). Other methods go on, to be refused as for any path.
pub fn is_favicon(method: Method, path: &str) -> bool {
    path == FAVICON_PATH && matches!(method, Method::Get | Method::Head)
}

/// What happened, for logs, metrics and click reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Redirect,
    /// Unknown code, or a path that cannot be a code.
    NotFound,
    Disabled,
    Expired,
    Deleted,
    /// Banned code, banned target host, or a record marked banned.
    Banned,
    /// The answer depends on something that cannot be reached now.
    Unavailable,
    MethodNotAllowed,
    /// A private link visited without what opens it (a valid, unexpired token).
    Private,
    /// A code with no link, sent on to the shortener the domain moved from (its
    /// `legacy_url`).
    Legacy,
}

impl Outcome {
    /// Every outcome, in the order of its discriminant.
    pub const ALL: [Outcome; 10] = [
        Outcome::Redirect,
        Outcome::NotFound,
        Outcome::Disabled,
        Outcome::Expired,
        Outcome::Deleted,
        Outcome::Banned,
        Outcome::Unavailable,
        Outcome::MethodNotAllowed,
        Outcome::Private,
        Outcome::Legacy,
    ];

    /// Its name in metrics and logs.
    pub fn name(self) -> &'static str {
        match self {
            Outcome::Redirect => "redirect",
            Outcome::NotFound => "not_found",
            Outcome::Disabled => "disabled",
            Outcome::Expired => "expired",
            Outcome::Deleted => "deleted",
            Outcome::Banned => "banned",
            Outcome::Unavailable => "unavailable",
            Outcome::MethodNotAllowed => "method_not_allowed",
            Outcome::Private => "private",
            Outcome::Legacy => "legacy",
        }
    }
}

/// The body of a response, before the method is applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Body {
    Empty,
    Text(&'static str),
    Html(&'static str),
    /// A page made for this visit: a password link's form, a social preview or an
    /// interstitial.
    Page(String),
}

impl Body {
    /// The body's text, if it has one.
    pub fn text(&self) -> Option<&str> {
        match self {
            Body::Empty => None,
            Body::Text(t) | Body::Html(t) => Some(t),
            Body::Page(p) => Some(p),
        }
    }
}

/// A response, ready for an adapter to write out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    pub outcome: Outcome,
    pub status: u16,
    pub headers: Headers,
    /// Already empty for `HEAD`; the `Content-Type` header still says what a `GET`
    /// would carry.
    pub body: Body,
    /// The split variant the visit was sent to (its index), for the click event.
    pub variant: Option<u8>,
    /// The link asks that its visits not be recorded (`record_clicks: false`).
    pub unrecorded: bool,
    /// The link asks that scanners' visits count as people's (`scanner_check: false`):
    /// the click is not classified by its network or prefetch headers.
    pub scanners_unchecked: bool,
    /// The link has a visit limit not yet reached: the click names its visitor, who
    /// counts once a day against it (`crate::clicks::person`).
    pub limited: bool,
}

impl Decision {
    /// The value of a header, by lowercase name.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v)
    }
}

/// A decision's headers, name and value, held inline: no decision has more than
/// [`Headers::ROOM`] (a test checks each kind), and a `Vec` of them was an allocation
/// on every visit. A value the same for every visit is borrowed, so writing it out
/// copies and allocates nothing.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Headers {
    /// Built in place by the decision, for the redirect every visit of a plain link gets.
    pub(crate) set: [Option<Header>; Headers::ROOM],
}

type Header = (&'static str, Cow<'static, str>);

impl Headers {
    pub const ROOM: usize = 4;

    pub(crate) fn push(&mut self, name: &'static str, value: Cow<'static, str>) {
        if let Some(free) = self.set.iter_mut().find(|h| h.is_none()) {
            *free = Some((name, value));
        }
    }

    /// Name and value, in the order they were set.
    pub fn iter(&self) -> impl Iterator<Item = (&'static str, &str)> {
        self.set.iter().flatten().map(|(n, v)| (*n, v.as_ref()))
    }

    /// Name and value, in the order they were set, taken out: a writer that owns the
    /// decision moves each value into its response without copying the whole set (an
    /// owning iterator over it was two copies and a drop of its every slot per redirect).
    pub fn take_all(&mut self) -> impl Iterator<Item = Header> + '_ {
        self.set.iter_mut().filter_map(Option::take)
    }

    pub fn len(&self) -> usize {
        self.set.iter().flatten().count()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_get_or_head_of_the_icon_path_is_the_browsers_ask_for_an_icon() {
        assert!(is_favicon(Method::Get, "/favicon.ico"));
        assert!(is_favicon(Method::Head, "/favicon.ico"));
        assert!(!is_favicon(Method::Post, "/favicon.ico"));
        assert!(!is_favicon(Method::Get, "/favicon.ico/x"));
        assert!(!is_favicon(Method::Get, "/Favicon.ico"));
        assert!(!is_favicon(Method::Get, "/favicon"));
    }
}

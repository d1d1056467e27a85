//! The pages a visit may be answered with instead of a redirect: which one, with what
//! data (the decision's choice, a [`Page`]), drawn by the page's own module (the
//! password form's, the preview's, the interstitial's). The decision names a page
//! without knowing how it is drawn, and no page module knows of the decision.

use crate::password::{Form, FORM_POLICY};
use crate::preview::Preview;
use crate::route::RouteKey;

/// A page to draw for one visit.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Page<'a> {
    /// A password link's form (`crate::password::form`), as first shown or with a note.
    Password { route: &'a RouteKey, form: Form },
    /// The page a link-preview crawler gets (`Preview::page`): the link's tags and, unless
    /// `refresh` is false, a refresh to `target`.
    Preview {
        preview: &'a Preview,
        route: &'a RouteKey,
        target: &'a str,
        refresh: bool,
    },
    /// The page that names where a link goes instead of going there
    /// (`crate::interstitial::page`).
    Interstitial { target: &'a str },
}

impl Page<'_> {
    /// The page's HTML.
    pub(crate) fn draw(&self) -> String {
        match *self {
            Page::Password { route, form } => crate::password::form(route, form),
            Page::Preview {
                preview,
                route,
                target,
                refresh,
            } => {
                let short_url = format!("https://{}/{}", route.domain(), route.code());
                preview.page(&short_url, target, refresh)
            }
            Page::Interstitial { target } => crate::interstitial::page(target),
        }
    }

    /// The `Content-Security-Policy` the page is served with, if it needs one of its own.
    pub(crate) fn policy(&self) -> Option<&'static str> {
        match self {
            Page::Password { .. } => Some(FORM_POLICY),
            Page::Preview { .. } | Page::Interstitial { .. } => None,
        }
    }
}

//! The contract between Hop's edge worker and its origin.
//!
//! Everything a redirect decides lives here as pure functions, compiled natively for
//! the origin and to WebAssembly for the edge, so the two can never disagree:
//!
//! - [`alphabet`] and [`codes`]: generated codes as fixed-length numbers, custom aliases;
//! - [`permutation`]: the keyed bijection from `link_id` to code;
//! - [`domain`]: domain normalization, per-domain settings (and a brand domain's look,
//!   [`brand`]); [`route`]: route keys;
//! - [`record`] and [`denylist`]: what the edge stores in KV;
//! - [`target`]: target URL validation and the visitor's query merge;
//! - [`visit_url`]: the parts of a visited URL, read off the runtime's serialization;
//! - [`agent`]: what a user agent says (device, bot, link-preview crawler);
//! - [`decision`]: the response to a visit, of the types in [`answer`]; the pages it may
//!   answer with instead of a redirect are drawn by modules below it ([`password`],
//!   [`preview`], [`interstitial`]);
//! - [`clicks`]: the click event a visit reports, reduced to coarse dimensions;
//! - [`tally`]: alike clicks counted where they happen, sent a window at a time.
//!
//! No I/O happens here, and no file imports one that imports it back, however
//! indirectly (`tests/tests/architecture.rs` checks).

pub mod access;
pub mod activation;
pub mod agent;
pub mod alphabet;
pub mod answer;
pub mod brand;
pub mod clicks;
pub mod codes;
pub mod decision;
pub mod denylist;
pub mod domain;
pub mod fallback;
mod html;
pub mod interstitial;
mod page;
pub mod password;
pub mod permutation;
pub mod preview;
pub mod record;
pub mod route;
pub mod scanners;
pub mod split;
pub mod sync;
pub mod tally;
pub mod target;
pub mod targeting;
pub mod visit_url;
pub mod words;

pub use alphabet::Alphabet;
pub use answer::{is_favicon, FAVICON_CACHE_CONTROL, FAVICON_PATH};
pub use brand::{Brand, BrandError};
pub use codes::{CodeKind, CodeSpace};
pub use decision::{
    decide, decide_prepared, decide_root, reject_early, Body, Client, Decision, Headers, Method,
    Outcome, PreparedRecord, Visit,
};
pub use denylist::{Denylist, DenylistSnapshot};
pub use domain::{
    config_key, normalize_domain, normalize_short_domain, visitor_host, DomainConfig,
    DomainSettings, DomainStatus, RouteKey, VisitorHost,
};
pub use permutation::{CodeCodec, KeyRing};
pub use record::{EdgeRecord, EdgeStatus, RedirectStatus};
pub use target::{validate_target, TargetUrl};
pub use visit_url::VisitUrl;

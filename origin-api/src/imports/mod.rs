//! Another shortener's links as it gives them out: each source's export or API page is
//! read into [`SourceLink`](source::SourceLink)s ([`bitly`], …). Judging and storing them is the links
//! service's ([`crate::links::import`]).

pub mod bitly;
pub mod dub;
pub mod kutt;
pub mod read;
pub mod shlink;
pub mod source;
pub mod yourls;

pub use read::{read, unused_columns};

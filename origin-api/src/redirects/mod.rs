//! The redirect path's service: what it holds (`service`), a visit's decision
//! ([`visit`]) and its response (`answer`).

mod answer;
mod service;
pub mod visit;

pub use service::{RedirectSettings, Redirects};

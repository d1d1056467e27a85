//! The redirect path's service: what it holds ([`service`]) and a visit's decision
//! ([`visit`]).

mod service;
pub mod visit;

pub use service::{RedirectSettings, Redirects};

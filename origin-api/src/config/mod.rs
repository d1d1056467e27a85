//! Command line, environment and configuration file: every setting is a flag with an
//! environment variable of the same meaning (docs/architecture.md, "Configuration names"),
//! so scripts and containers configure alike, and a key of the same name in `--config FILE`
//! ([`file`]).

mod commands;
pub mod file;
mod load;
mod parsers;
mod secrets;
mod settings;
#[cfg(test)]
mod tests;

pub use commands::*;
pub use load::*;
pub use parsers::*;
pub use secrets::*;
pub use settings::*;

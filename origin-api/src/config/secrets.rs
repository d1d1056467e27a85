//! The secrets: read from the environment or from files only, never from a flag, and
//! never printed.

use secrecy::SecretString;
use shared::KeyRing;

pub use shared::sync::MIN_TOKEN_BYTES;

/// What this process must keep secret. Never a flag, where any user of the machine can
/// read it in `ps`; each comes from `HOP_<NAME>`, or from the file `HOP_<NAME>_FILE`
/// names (a mounted secret). `Debug` shows none of them.
#[derive(Debug, Clone, Default)]
pub struct Secrets {
    /// `HOP_PERMUTATION_KEYS`: `VERSION:32-HEX[,…]`; the highest version makes new
    /// codes. Required to create links.
    pub permutation_keys: Option<KeyRing>,
    /// `HOP_EDGE_TOKEN`: what the edge worker sends when it asks about a link (its
    /// `ORIGIN_TOKEN`); without it, `/v1/edge/*` answers 503. Several, comma-separated,
    /// are all accepted (while the worker's is rotated).
    pub edge_token: Option<SecretString>,
    /// `HOP_EDGE_SYNC_TOKEN`: the worker's `SYNC_TOKEN`; required with `--edge-sync-url`.
    pub edge_sync_token: Option<SecretString>,
    /// `HOP_CF_API_TOKEN`: a Cloudflare API token allowed to write the KV namespace.
    pub cf_api_token: Option<SecretString>,
    /// `HOP_METRICS_TOKEN`: lets a scraper read `/metrics` on the public listener (one,
    /// or several comma-separated while it is rotated).
    pub metrics_token: Option<SecretString>,
}

/// Why a secret could not be read.
#[derive(Debug, thiserror::Error)]
pub enum SecretError {
    #[error("set {name} or {name}_FILE, not both")]
    Both { name: &'static str },
    #[error("cannot read {name}_FILE ({path}): {source}")]
    File {
        name: &'static str,
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{name} is {len} bytes; use at least {MIN_TOKEN_BYTES} (e.g. openssl rand -hex 16)")]
    TooShort { name: &'static str, len: usize },
    #[error("{name}: {detail}")]
    Invalid { name: &'static str, detail: String },
}

impl Secrets {
    /// Reads every secret through `env` (the process's environment, in production).
    pub fn read(env: impl Fn(&str) -> Option<String>) -> Result<Secrets, SecretError> {
        let token = |name| -> Result<Option<SecretString>, SecretError> {
            read_secret(&env, name)?
                .map(|value| token_of(name, value))
                .transpose()
        };
        let permutation_keys = read_secret(&env, "HOP_PERMUTATION_KEYS")?
            .map(|raw| {
                KeyRing::parse(&raw).map_err(|e| SecretError::Invalid {
                    name: "HOP_PERMUTATION_KEYS",
                    detail: e.to_string(),
                })
            })
            .transpose()?;
        // Tokens this origin checks may list several while one is rotated.
        let accepted = |name| -> Result<Option<SecretString>, SecretError> {
            read_secret(&env, name)?
                .map(|value| accepted_tokens_of(name, value))
                .transpose()
        };
        Ok(Secrets {
            permutation_keys,
            edge_token: accepted("HOP_EDGE_TOKEN")?,
            edge_sync_token: token("HOP_EDGE_SYNC_TOKEN")?,
            cf_api_token: token("HOP_CF_API_TOKEN")?,
            metrics_token: accepted("HOP_METRICS_TOKEN")?,
        })
    }

    /// From the process's environment.
    pub fn from_env() -> Result<Secrets, SecretError> {
        Secrets::read(|name| std::env::var(name).ok())
    }
}

/// A token of at least [`MIN_TOKEN_BYTES`].
pub fn token_of(name: &'static str, value: String) -> Result<SecretString, SecretError> {
    if value.len() < MIN_TOKEN_BYTES {
        return Err(SecretError::TooShort {
            name,
            len: value.len(),
        });
    }
    Ok(SecretString::from(value))
}

/// Tokens a caller may present, comma-separated while one is rotated, each at least
/// [`MIN_TOKEN_BYTES`].
pub fn accepted_tokens_of(name: &'static str, value: String) -> Result<SecretString, SecretError> {
    if !shared::sync::tokens_long_enough(&value) {
        let len = shared::sync::accepted_tokens(&value)
            .map(str::len)
            .min()
            .unwrap_or(0);
        return Err(SecretError::TooShort { name, len });
    }
    Ok(SecretString::from(value))
}

/// `name`'s value, or the contents of the file `name_FILE` names (without the trailing
/// newline an editor adds); empty counts as unset.
pub fn read_secret(
    env: &impl Fn(&str) -> Option<String>,
    name: &'static str,
) -> Result<Option<String>, SecretError> {
    let direct = env(name).filter(|v| !v.is_empty());
    let file = env(&format!("{name}_FILE")).filter(|v| !v.is_empty());
    let value = match (direct, file) {
        (Some(_), Some(_)) => return Err(SecretError::Both { name }),
        (Some(v), None) => v,
        (None, Some(path)) => std::fs::read_to_string(&path)
            .map_err(|source| SecretError::File { name, path, source })?
            .trim_end_matches(['\n', '\r'])
            .to_owned(),
        (None, None) => return Ok(None),
    };
    Ok(Some(value).filter(|v| !v.is_empty()))
}

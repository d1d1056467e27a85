//! `--config FILE` (or `HOP_CONFIG`): every setting, and the secrets, from one TOML file.
//!
//! A key is a setting's environment variable without `HOP_`, in lower case
//! (`database_url` for `HOP_DATABASE_URL` and `--database-url`), so the three ways to set
//! something name it alike. Precedence: a flag, then the environment, then the file, then
//! the built-in default. The file's values become the command line's defaults, so clap
//! validates them exactly as it validates a flag. Secrets may be in the file (keep it
//! mode 0600) or named by it (`edge_token_file = "/run/secrets/edge"`); a secret set in
//! the environment, either way, wins over both.

use clap::Command;
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The secrets the file may hold (each also as `<name>_file`); see [`super::Secrets`].
pub const SECRET_KEYS: [&str; 5] = [
    "permutation_keys",
    "edge_token",
    "edge_sync_token",
    "cf_api_token",
    "metrics_token",
];

/// A configuration file, read and checked against the settings this binary has.
#[derive(Clone, Default)]
pub struct ConfigFile {
    pub path: PathBuf,
    /// Settings by argument id, each as the flag would take it (a list as its items).
    settings: BTreeMap<String, Vec<String>>,
    /// Secrets by key (`edge_token`, `edge_token_file`).
    secrets: BTreeMap<String, String>,
}

/// The keys the file sets, never their values: a setting may be the database URL with
/// its password, and the secrets are secrets.
impl std::fmt::Debug for ConfigFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConfigFile")
            .field("path", &self.path)
            .field("settings", &self.settings.keys().collect::<Vec<_>>())
            .field("secrets", &self.secrets.keys().collect::<Vec<_>>())
            .finish()
    }
}

/// Why a configuration file was refused. Nothing of it is used then.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    #[error("cannot read the configuration file {path}: {source}")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{path} is not valid TOML: {detail}")]
    Syntax { path: String, detail: String },
    #[error("{path}: unknown setting '{key}'{hint}")]
    Unknown {
        path: String,
        key: String,
        hint: String,
    },
    #[error("{path}: '{key}' must be a string, a number, a boolean, or a list of those")]
    Type { path: String, key: String },
}

/// The file `--config FILE` / `--config=FILE` names among the raw arguments, else the
/// one `HOP_CONFIG` names. Read before the arguments are parsed, since the file supplies
/// their defaults.
pub fn path_from(args: &[OsString], env: impl Fn(&str) -> Option<String>) -> Option<PathBuf> {
    let mut args = args.iter().skip(1);
    while let Some(arg) = args.next() {
        let Some(arg) = arg.to_str() else { continue };
        if arg == "--" {
            break;
        }
        if arg == "--config" {
            return args.next().map(PathBuf::from);
        }
        if let Some(path) = arg.strip_prefix("--config=") {
            return Some(PathBuf::from(path));
        }
    }
    env("HOP_CONFIG")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
}

/// The key each setting of `cmd` takes in a file, with its argument's id: every global
/// flag but the file's own, `--database-url` as `database_url` (which is also its
/// variable, `HOP_DATABASE_URL`, without the prefix).
pub fn setting_keys(cmd: &Command) -> BTreeMap<String, String> {
    cmd.get_arguments()
        .filter(|arg| arg.is_global_set())
        .filter_map(|arg| {
            let key = arg.get_long()?.replace('-', "_");
            (key != "config").then(|| (key, arg.get_id().to_string()))
        })
        .collect()
}

impl ConfigFile {
    /// Reads `path`, refusing unknown keys (with the nearest known one) and values of a
    /// type no flag takes.
    pub fn load(path: &Path, cmd: &Command) -> Result<ConfigFile, FileError> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| FileError::Read {
            path: shown.clone(),
            source,
        })?;
        ConfigFile::parse(&shown, &text, cmd)
    }

    fn parse(shown: &str, text: &str, cmd: &Command) -> Result<ConfigFile, FileError> {
        let table: toml::Table = toml::from_str(text).map_err(|e| FileError::Syntax {
            path: shown.to_owned(),
            detail: e.message().to_owned(),
        })?;
        let keys = setting_keys(cmd);
        let secret_keys: Vec<String> = SECRET_KEYS
            .iter()
            .flat_map(|k| [(*k).to_owned(), format!("{k}_file")])
            .collect();
        let mut file = ConfigFile {
            path: PathBuf::from(shown),
            ..ConfigFile::default()
        };
        for (key, value) in table {
            let type_error = || FileError::Type {
                path: shown.to_owned(),
                key: key.clone(),
            };
            let values = match value {
                toml::Value::Array(items) => items
                    .into_iter()
                    .map(|v| scalar(v).ok_or_else(type_error))
                    .collect::<Result<Vec<_>, _>>()?,
                other => vec![scalar(other).ok_or_else(type_error)?],
            };
            if let Some(id) = keys.get(&key) {
                file.settings.insert(id.clone(), values);
            } else if secret_keys.contains(&key) {
                let [value] = <[String; 1]>::try_from(values).map_err(|_| type_error())?;
                file.secrets.insert(key, value);
            } else {
                let known = keys
                    .keys()
                    .map(String::as_str)
                    .chain(secret_keys.iter().map(String::as_str));
                return Err(FileError::Unknown {
                    path: shown.to_owned(),
                    hint: nearest(&key, known)
                        .map(|k| format!(" (did you mean '{k}'?)"))
                        .unwrap_or_default(),
                    key,
                });
            }
        }
        Ok(file)
    }

    /// `cmd` with the file's values as its defaults.
    pub fn apply(&self, mut cmd: Command) -> Command {
        for (id, values) in &self.settings {
            let values: Vec<clap::builder::OsStr> =
                values.iter().map(|v| v.clone().into()).collect();
            cmd = cmd.mut_arg(id.as_str(), |arg| arg.default_values(values));
        }
        cmd
    }

    /// Whether the file sets the argument `id`.
    pub fn sets(&self, id: &str) -> bool {
        self.settings.contains_key(id)
    }

    /// A secret as [`super::Secrets::read`] asks for it: `HOP_EDGE_TOKEN` is the file's
    /// `edge_token`, `HOP_EDGE_TOKEN_FILE` its `edge_token_file`.
    pub fn secret(&self, variable: &str) -> Option<String> {
        let key = variable.strip_prefix("HOP_")?.to_ascii_lowercase();
        self.secrets.get(&key).cloned()
    }
}

/// A TOML scalar as a flag's value.
fn scalar(value: toml::Value) -> Option<String> {
    match value {
        toml::Value::String(s) => Some(s),
        toml::Value::Integer(n) => Some(n.to_string()),
        toml::Value::Float(f) => Some(f.to_string()),
        toml::Value::Boolean(b) => Some(b.to_string()),
        _ => None,
    }
}

/// The known key closest to `key` by edit distance, if any is close enough to be a typo.
fn nearest<'k>(key: &str, known: impl Iterator<Item = &'k str>) -> Option<&'k str> {
    known
        .map(|k| (distance(key, k), k))
        .filter(|(d, k)| *d <= 2.max(k.len() / 4))
        .min()
        .map(|(_, k)| k)
}

/// Levenshtein distance, by bytes (keys are ASCII).
fn distance(a: &str, b: &str) -> usize {
    let b = b.as_bytes();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.bytes().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (above + 1)
                .min(row[j] + 1)
                .min(diagonal + usize::from(ca != *cb));
            diagonal = above;
        }
    }
    row[b.len()]
}

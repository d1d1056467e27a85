//! Loading the configuration: the command line, then the environment, then
//! `--config FILE`, each setting told where it came from.

use super::commands::Cli;
use super::file;
use super::parsers::DatabaseUrl;
use super::secrets::{SecretError, Secrets};

/// Where a setting's value came from, for `config check`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    Flag,
    Environment,
    File,
    Default,
}

impl Source {
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Flag => "flag",
            Source::Environment => "environment",
            Source::File => "file",
            Source::Default => "default",
        }
    }
}

/// The command line as parsed with its configuration file, and where each value came
/// from.
pub struct Loaded {
    pub cli: Cli,
    pub file: Option<file::ConfigFile>,
    /// Per setting key (`database_url`), its value as given (lists joined by commas;
    /// absent when unset) and where it came from.
    pub sources: std::collections::BTreeMap<String, (Option<String>, Source)>,
    /// Per secret key (`edge_token`), where it came from, if set.
    pub secret_sources: std::collections::BTreeMap<&'static str, Source>,
}

/// Where each setting came from, without the values (`sources` holds the database URL
/// as given); the settings themselves redact their secrets.
impl std::fmt::Debug for Loaded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let sources: std::collections::BTreeMap<&str, &Source> = self
            .sources
            .iter()
            .map(|(k, (_, s))| (k.as_str(), s))
            .collect();
        f.debug_struct("Loaded")
            .field("cli", &self.cli)
            .field("file", &self.file)
            .field("sources", &sources)
            .field("secret_sources", &self.secret_sources)
            .finish()
    }
}

/// Why the configuration could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error(transparent)]
    File(#[from] file::FileError),
    /// Print with `exit()`: clap's own message and usage.
    #[error(transparent)]
    Arguments(#[from] clap::Error),
    #[error(transparent)]
    Secret(#[from] SecretError),
    #[error("{0}")]
    Settings(String),
}

/// Parses `args` (the first is the program) with the configuration file they or `env`
/// name, and reads the secrets from `env`, then the file.
pub fn load(
    args: Vec<std::ffi::OsString>,
    env: impl Fn(&str) -> Option<String>,
) -> Result<Loaded, LoadError> {
    use clap::CommandFactory;
    load_from(Cli::command(), args, env)
}

/// As [`load`], parsing with `cmd` (the tests' has no environment variables).
pub(super) fn load_from(
    mut cmd: clap::Command,
    args: Vec<std::ffi::OsString>,
    env: impl Fn(&str) -> Option<String>,
) -> Result<Loaded, LoadError> {
    use clap::{CommandFactory, FromArgMatches};
    let config = match file::path_from(&args, &env) {
        Some(path) => Some(file::ConfigFile::load(&path, &cmd)?),
        None => None,
    };
    if let Some(f) = &config {
        cmd = f.apply(cmd);
    }
    let matches = cmd.try_get_matches_from(args)?;
    let mut cli = Cli::from_arg_matches(&matches)?;
    let mut sources = std::collections::BTreeMap::new();
    for (key, id) in file::setting_keys(&Cli::command()) {
        let source = match matches.value_source(&id) {
            Some(clap::parser::ValueSource::CommandLine) => Source::Flag,
            Some(clap::parser::ValueSource::EnvVariable) => Source::Environment,
            _ if config.as_ref().is_some_and(|f| f.sets(&id)) => Source::File,
            _ => Source::Default,
        };
        let value = matches.get_raw(&id).map(|values| {
            values
                .map(|v| v.to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join(",")
        });
        sources.insert(key, (value, source));
    }
    // A secret set in the environment (directly or by `_FILE`) wins over the file's,
    // whichever form the file uses.
    let in_env = |base: &str| {
        env(base).is_some_and(|v| !v.is_empty())
            || env(&format!("{base}_FILE")).is_some_and(|v| !v.is_empty())
    };
    let lookup = |name: &str| {
        let base = name.strip_suffix("_FILE").unwrap_or(name);
        if in_env(base) {
            env(name)
        } else {
            config.as_ref().and_then(|f| f.secret(name))
        }
    };
    cli.settings.secrets = Secrets::read(lookup)?;
    if let Some(path) = cli.settings.database_url_file.clone() {
        let shown = path.display();
        if sources
            .get("database_url")
            .is_some_and(|(_, source)| *source != Source::Default)
        {
            return Err(LoadError::Settings(format!(
                "set database_url or database_url_file ({shown}), not both"
            )));
        }
        let url = std::fs::read_to_string(&path).map_err(|e| {
            LoadError::Settings(format!("cannot read database_url_file {shown}: {e}"))
        })?;
        let url = url.trim_end_matches(['\n', '\r']);
        if url.is_empty() {
            return Err(LoadError::Settings(format!(
                "database_url_file {shown} is empty"
            )));
        }
        cli.settings.database_url = DatabaseUrl::new(url);
        let from = sources
            .get("database_url_file")
            .map_or(Source::Default, |(_, source)| *source);
        sources.insert("database_url".into(), (Some(url.to_owned()), from));
    }
    if let (Some(version), Some(ring)) = (
        cli.settings.code_key_version,
        &cli.settings.secrets.permutation_keys,
    ) {
        if !ring.has_version(version) {
            return Err(LoadError::Settings(format!(
                "--code-key-version {version}: HOP_PERMUTATION_KEYS has no key of that version"
            )));
        }
    }
    let mut secret_sources = std::collections::BTreeMap::new();
    for key in file::SECRET_KEYS {
        let base = format!("HOP_{}", key.to_ascii_uppercase());
        let source = if in_env(&base) {
            Some(Source::Environment)
        } else if config.as_ref().is_some_and(|f| {
            f.secret(&base).is_some() || f.secret(&format!("{base}_FILE")).is_some()
        }) {
            Some(Source::File)
        } else {
            None
        };
        if let Some(source) = source {
            secret_sources.insert(key, source);
        }
    }
    Ok(Loaded {
        cli,
        file: config,
        sources,
        secret_sources,
    })
}

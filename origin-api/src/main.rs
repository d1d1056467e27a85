use origin_api::config::{
    Command, ConfigCommand, DomainsCommand, KeysCommand, LoadError, Loaded, OutboxCommand,
};
use origin_api::model::time::now_ms;
use origin_api::model::time::rfc3339;
use origin_api::model::DomainAccess;
use origin_api::store::{self, OutboxStore};
use origin_api::{api_keys, app, cli, domains, prepare, serve_on, AppState, Listeners};
use std::process::ExitCode;
use tracing_subscriber::EnvFilter;

/// mimalloc rather than the system's allocator: a cached redirect makes about ten
/// allocations, and glibc's malloc and free were 8% of its instructions
/// (`scripts/bench-redirect-instructions`; the reference servers use the same allocator,
/// so the comparison stays one of logic).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() -> ExitCode {
    // Logs go to standard error; standard output carries only what commands print.
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            EnvFilter::try_from_env("HOP_LOG").unwrap_or_else(|_| EnvFilter::new("info")),
        )
        .init();
    let loaded = match origin_api::config::load(std::env::args_os().collect(), |name| {
        std::env::var(name).ok()
    }) {
        Ok(loaded) => loaded,
        // clap's own message, usage, and exit status (0 for --help and --version).
        Err(LoadError::Arguments(e)) => e.exit(),
        Err(e) => {
            eprintln!("hop-origin: {e}");
            return ExitCode::FAILURE;
        }
    };
    match run(loaded).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!("{e}");
            eprintln!("hop-origin: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run(loaded: Loaded) -> Result<(), Box<dyn std::error::Error>> {
    if let Some(Command::Config(ConfigCommand::Check)) = &loaded.cli.command {
        let (report, passed) = cli::config_check::run(&loaded).await;
        print!("{report}");
        return if passed {
            Ok(())
        } else {
            Err("the configuration check failed".into())
        };
    }
    let cli = loaded.cli;
    let settings = cli.settings;
    // The API clients never touch the database.
    let command = match cli.command.unwrap_or(Command::Serve) {
        Command::Import(args) => return cli::run_import(args, settings.listen).await,
        Command::Export(args) => return cli::run_export(args, settings.listen).await,
        other => other,
    };
    let db = prepare(&settings).await?;
    match command {
        Command::Migrate => {
            tracing::info!(database = db.kind(), "migrations applied");
        }
        Command::Keys(KeysCommand::Create {
            owner,
            name,
            admin,
            domains,
        }) => {
            let grant = api_keys::Grant {
                admin,
                domains: domains::scope_of_new_key(&db, &domains).await?,
            };
            let (key, token) = api_keys::issue(&owner, &name, &grant, now_ms())?;
            store::api_keys::insert(&db, &key).await?;
            println!("key id: {}", key.key_id);
            println!(
                "owner: {}{}",
                key.owner_id,
                if admin { " (admin)" } else { "" }
            );
            if !grant.domains.is_empty() {
                println!("domains: {}", grant.domains.join(", "));
            }
            println!("secret (shown once):");
            println!("{token}");
        }
        Command::Webhooks(command) => {
            let webhooks = origin_api::webhooks::Webhooks {
                db: db.clone(),
                settings: app::webhook_settings(&settings),
            };
            cli::webhooks::run(&webhooks, command).await?;
        }
        Command::Owners(command) => {
            let state = origin_api::AppState::new(db.clone(), settings.clone());
            cli::owners::run(&state.links, command).await?;
        }
        Command::Feeds(command) => {
            let state = origin_api::AppState::new(db.clone(), settings.clone());
            cli::abuse::feeds(&state.abuse, command).await?;
        }
        Command::Reports(command) => {
            let state = origin_api::AppState::new(db.clone(), settings.clone());
            cli::abuse::reports(&state.reports, command).await?;
        }
        Command::Users(command) => {
            cli::users::run(&origin_api::accounts::Accounts::new(db.clone()), command).await?;
        }
        Command::Keys(KeysCommand::Revoke { key_id }) => {
            if !store::api_keys::revoke(&db, &key_id, now_ms()).await? {
                return Err(format!("no live key with id {key_id}").into());
            }
            println!("revoked {key_id}");
        }
        Command::Domains(DomainsCommand::Add {
            domain,
            shared,
            owner,
            settings: more,
        }) => {
            let request = domains::cli_request(&domain, shared, &owner, more.as_deref())?;
            let d = app::domains_only(db.clone(), &settings)
                .register(&request)
                .await?;
            println!("registered {}", d.domain);
        }
        Command::Domains(DomainsCommand::Set {
            domain,
            settings: changes,
        }) => {
            let change = domains::cli_change(&changes)?;
            let name = shared::normalize_short_domain(&domain)?;
            let registry = app::domains_only(db.clone(), &settings);
            let current = store::domains::get(&db, &name)
                .await?
                .ok_or_else(|| format!("{name} is not registered"))?;
            let d = domains::update_domain(&registry, &name, current.version, change).await?;
            println!("changed {} (v{})", d.domain, d.version);
        }
        Command::Domains(DomainsCommand::Remove { domain }) => {
            let name = shared::normalize_short_domain(&domain)?;
            let registry = app::domains_only(db.clone(), &settings);
            match domains::delete_domain(&registry, &name, None).await {
                Err(origin_api::error::AppError::NotFound) => {
                    return Err(format!("{name} is not registered").into())
                }
                other => other?,
            }
            println!("removed {name}");
        }
        Command::Domains(DomainsCommand::LegacyCodes { domain, file }) => {
            let name = shared::normalize_short_domain(&domain)?;
            let text = match file.to_str() {
                Some("-") => std::io::read_to_string(std::io::stdin())?,
                _ => std::fs::read_to_string(&file)
                    .map_err(|e| format!("{}: {e}", file.display()))?,
            };
            let codes = domains::legacy_list_lines(&text);
            if codes.is_empty() {
                return Err(format!("{}: no codes in it", file.display()).into());
            }
            let registry = app::domains_only(db.clone(), &settings);
            let (mut added, mut listed) = (0, 0);
            for chunk in codes.chunks(domains::MAX_LEGACY_CODES_PER_REQUEST) {
                let done = registry
                    .add_legacy_codes(&name, chunk, store::legacy_codes::Source::List)
                    .await?;
                added += done.added;
                listed = done.listed;
            }
            println!("{name}: {added} codes added, {listed} listed");
        }
        Command::Domains(DomainsCommand::List) => {
            for d in store::domains::list(&db).await? {
                let access = match &d.access {
                    DomainAccess::Shared => "shared".to_owned(),
                    DomainAccess::Owners(o) => format!("owners {}", o.join(",")),
                };
                println!(
                    "{}\t{}\t{}\t{} x{}\tv{}",
                    d.domain,
                    d.settings.status.as_str(),
                    access,
                    d.settings.codes.alphabet(),
                    d.settings.codes.length(),
                    d.version
                );
            }
        }
        Command::Outbox(OutboxCommand::Failed) => {
            let mut after = 0;
            loop {
                let rows = db.failed_rows(after, 1_000).await?;
                let Some(last) = rows.last() else { break };
                after = last.seq;
                for r in &rows {
                    println!(
                        "{}\t{}\t{} v{}\t{} attempts\tfailed {}\t{}",
                        r.seq,
                        r.lane,
                        r.route_key,
                        r.version,
                        r.attempts,
                        rfc3339(r.failed_at),
                        r.last_error
                    );
                }
            }
        }
        Command::Outbox(OutboxCommand::Retry { seq, all: _ }) => {
            let n = db.retry_failed(seq).await?;
            if n == 0 {
                return Err(match seq {
                    Some(seq) => format!("no row {seq} is set aside as failed").into(),
                    None => "no row is set aside as failed".into(),
                });
            }
            println!("{n} row(s) back in line; the publisher pushes them again");
        }
        Command::Serve => {
            if settings.secrets.permutation_keys.is_none() {
                tracing::warn!(
                    "HOP_PERMUTATION_KEYS is not set: links cannot be created until it is"
                );
            }
            let listener = tokio::net::TcpListener::bind(settings.listen)
                .await
                .map_err(|e| format!("cannot listen on {}: {e}", settings.listen))?;
            tracing::info!(
                address = %listener.local_addr()?,
                database = db.kind(),
                default_domain = %settings.default_domain,
                "hop origin listening"
            );
            let metrics =
                bind_optional(settings.metrics_listen.0, "metrics", "--metrics-listen").await?;
            let dashboard = bind_optional(
                settings.dashboard_listen.0,
                "the dashboard",
                "--dashboard-listen",
            )
            .await?;
            let listeners = Listeners {
                api: listener,
                metrics,
                dashboard,
            };
            serve_on(listeners, AppState::new(db, settings), shutdown_signal()).await?;
        }
        Command::Import(_) | Command::Export(_) | Command::Config(_) => {}
    }
    Ok(())
}

/// A listener on `addr` for `what`, when it is set; the error names the flag to change.
async fn bind_optional(
    addr: Option<std::net::SocketAddr>,
    what: &str,
    flag: &str,
) -> Result<Option<tokio::net::TcpListener>, String> {
    let Some(addr) = addr else { return Ok(None) };
    let l = tokio::net::TcpListener::bind(addr).await.map_err(|e| {
        format!("cannot serve {what} on {addr}: {e} (set {flag} to another address, or off)")
    })?;
    let local = l.local_addr().map_err(|e| e.to_string())?;
    tracing::info!(address = %local, "{what} listening");
    Ok(Some(l))
}

/// Completes on Ctrl-C or SIGTERM.
async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! { _ = ctrl_c => {}, _ = term => {} }
    tracing::info!("shutting down");
}

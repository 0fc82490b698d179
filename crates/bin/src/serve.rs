//! `serve`: wires the adapters into the services and runs the HTTP server until SIGINT or
//! SIGTERM, then lets in-flight requests finish and closes the database cleanly.

use std::sync::Arc;
use std::time::Duration;

use animal_store_api::{ApiConfig, AppState};
use animal_store_domain::{Clock, KeyService, PetService, Plan};
use animal_store_infra::{CachedApiKeyStore, MemoryApiKeyStore, MemoryPetRepository, SystemClock};
use anyhow::Context;
use poem::Server;
use poem::listener::{Acceptor, Listener, TcpListener};

use crate::Failure;
use crate::cli::{Cli, ServeArgs};
use crate::stores::Stores;

fn api_config(args: &ServeArgs) -> ApiConfig {
    ApiConfig {
        production_url: args.production_url.clone(),
        staging_url: args.staging_url.clone(),
    }
}

/// The OpenAPI document, as the server would serve it.
pub fn openapi_document(cli: &Cli) -> String {
    let args = match &cli.command {
        Some(crate::cli::Command::Serve(args)) => args,
        _ => &cli.serve,
    };
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let state = AppState {
        pets: PetService::new(Arc::new(MemoryPetRepository::new())),
        keys: KeyService::new(
            Arc::new(MemoryApiKeyStore::new()),
            clock.clone(),
            cli.environment,
        ),
        clock,
        config: Arc::new(api_config(args)),
    };
    animal_store_api::openapi_document(&state)
}

/// Runs the server.
pub async fn run(cli: &Cli, args: &ServeArgs) -> Result<(), Failure> {
    let stores = Stores::open(&cli.database_url)
        .await
        .map_err(Failure::Startup)?;
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let keys = KeyService::new(
        Arc::new(CachedApiKeyStore::new(stores.keys())),
        clock.clone(),
        cli.environment,
    );
    if let Err(err) = greet(&stores, &keys).await {
        stores.close().await;
        return Err(Failure::Startup(err));
    }
    let state = AppState {
        pets: PetService::new(stores.pets()),
        keys,
        clock,
        config: Arc::new(api_config(args)),
    };

    let acceptor = match TcpListener::bind(args.bind.as_str()).into_acceptor().await {
        Ok(acceptor) => acceptor,
        Err(err) => {
            stores.close().await;
            return Err(Failure::Startup(
                anyhow::Error::new(err).context(format!("cannot listen on {}", args.bind)),
            ));
        }
    };
    for addr in acceptor
        .local_addr()
        .iter()
        .filter_map(|a| a.as_socket_addr())
    {
        tracing::info!("listening on http://{addr}");
    }
    let served = Server::new_with_acceptor(acceptor)
        .run_with_graceful_shutdown(
            animal_store_api::app(state),
            shutdown_signal(),
            Some(Duration::from_secs(args.shutdown_grace)),
        )
        .await
        .context("the server failed");
    tracing::info!("stopped accepting requests; closing the database");
    stores.close().await;
    tracing::info!("shut down");
    served.map_err(Failure::Runtime)
}

/// Tells a newcomer how to get a key; on `memory://`, where keys cannot be created from
/// another process, issues one for this run.
async fn greet(stores: &Stores, keys: &KeyService) -> anyhow::Result<()> {
    if stores.is_memory() {
        let issued = keys
            .issue(None, Plan::Free)
            .await
            .context("cannot issue the demo key")?;
        tracing::warn!(key_id = %issued.key.id, "memory:// keeps nothing; a free-plan key was issued for this run only");
        eprintln!(
            "demo API key (free plan, this run only): {}",
            issued.secret.expose()
        );
    } else if keys
        .list()
        .await
        .context("cannot read the API keys")?
        .is_empty()
    {
        tracing::info!("no API keys yet: issue one with `animal-store keys create --plan free`");
    }
    Ok(())
}

/// Resolves on SIGINT (Ctrl-C) or SIGTERM.
async fn shutdown_signal() {
    let interrupt = async {
        if let Err(err) = tokio::signal::ctrl_c().await {
            tracing::error!(error = %err, "cannot listen for SIGINT");
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(err) => {
                tracing::error!(error = %err, "cannot listen for SIGTERM");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = interrupt => tracing::info!("SIGINT received: finishing in-flight requests"),
        () = terminate => tracing::info!("SIGTERM received: finishing in-flight requests"),
    }
}

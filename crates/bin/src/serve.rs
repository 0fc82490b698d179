//! `serve`: wires the adapters into the services and runs the HTTP server until SIGINT or
//! SIGTERM, then lets in-flight requests finish and closes the database cleanly.

use std::sync::Arc;
use std::time::Duration;

use animal_store_api::client_address::{ClientAddressing, ForwardedHeader};
use animal_store_api::server::{Limits, Server};
use animal_store_api::{ApiConfig, AppState};
use animal_store_domain::{Clock, KeyService, OrderService, Plan, Quota, RateLimitPolicy};
use animal_store_infra::SystemClock;
use anyhow::Context;

use crate::cli::{
    Cli, ConnectionArgs, DocumentArgs, ForwardedHeaderName, LimiterFailureMode, MigrationPolicy,
    RateLimiterKind, ServeArgs,
};
use crate::exporter::PrometheusExporter;
use crate::failure::Failure;
use crate::fixtures::{DEMO_KEY, Fixtures};
use crate::stores::{Schema, Stores};
use crate::wiring::Wiring;
use crate::{descriptors, ready_file, sweep};

fn api_config(document: &DocumentArgs) -> ApiConfig {
    ApiConfig {
        production_url: document.production_url.clone(),
        staging_url: document.staging_url.clone(),
        experimental: !document.disable_experimental,
        ..ApiConfig::default()
    }
}

/// The limits the server holds its clients to, the connection cap derived from the
/// descriptor limit unless configured.
fn limits(connections: &ConnectionArgs) -> Limits {
    let max_connections =
        descriptors::connection_cap(connections.max_connections, descriptors::raise_limit());
    tracing::info!(max_connections, "connection cap");
    Limits {
        header_timeout: connections.header_timeout,
        body_timeout: connections.body_timeout,
        idle_timeout: connections.idle_timeout,
        max_connections,
    }
}

fn limit_policy(args: &ServeArgs) -> anyhow::Result<RateLimitPolicy> {
    Ok(RateLimitPolicy {
        suspend_after: args.suspend_after,
        suspension: Duration::from_secs(args.suspension_secs),
        per_address: Quota::per_minute_only(args.per_address_per_minute)
            .context("--per-address-per-minute must be at least 1")?,
    })
}

/// The system clock, or the file `--clock-file` names: with `memory://` only, whose data
/// ends with the process (builds for this crate's own tests take any database).
fn clock(cli: &Cli, args: &ServeArgs) -> anyhow::Result<Arc<dyn Clock>> {
    let Some(path) = &args.clock_file else {
        return Ok(Arc::new(SystemClock));
    };
    if !cfg!(feature = "testing") && !cli.database_url.is_memory() {
        anyhow::bail!(
            "--clock-file is for memory:// only: a database that keeps its data would keep the times a test clock wrote"
        );
    }
    let clock = animal_store_infra::FileClock::open(path)?;
    Ok(Arc::new(clock))
}

/// The Redis rate limiter of `--rate-limiter redis`, connected.
async fn redis_limiter(
    args: &ServeArgs,
    clock: Arc<dyn Clock>,
) -> anyhow::Result<Arc<dyn animal_store_domain::RateLimiter>> {
    use animal_store_infra::{LimiterFailure, RedisLimiterOptions, RedisRateLimiter};
    let url = args.redis_url.as_deref().context("--rate-limiter redis needs --redis-url")?;
    let options = RedisLimiterOptions {
        key_prefix: "as".to_owned(),
        timeout: args.limiter_timeout,
        failure: match args.limiter_failure {
            LimiterFailureMode::Local => LimiterFailure::Local,
            LimiterFailureMode::Open => LimiterFailure::Open,
            LimiterFailureMode::Closed => LimiterFailure::Closed,
        },
        local_capacity: args.limiter_capacity,
    };
    let limiter = RedisRateLimiter::connect(url, limit_policy(args)?, options, clock)
        .await
        .map_err(|err| anyhow::Error::new(err).context(redact(url)))?;
    Ok(Arc::new(limiter))
}

fn redact(url: &str) -> String {
    format!("Redis at {}", animal_store_infra::redact::redact(url))
}

/// The services of `serve` over `stores`.
async fn state(
    args: &ServeArgs,
    cli: &Cli,
    stores: &Stores,
    clock: Arc<dyn Clock>,
) -> anyhow::Result<AppState> {
    let wiring = stores.health_checks().into_iter().fold(
        Wiring::new(stores.ports())
            .webhooks_allow_private(args.webhooks_allow_private)
            .failing_key_checks(stores.key_checks_fail_every()),
        Wiring::health_check,
    );
    let wiring = if args.metrics {
        wiring.metrics(PrometheusExporter::install(stores.pool_metrics())?)
    } else {
        wiring
    };
    let wiring = match args.rate_limiter {
        RateLimiterKind::Redis => {
            wiring.rate_limiter_adapter(redis_limiter(args, clock.clone()).await?)
        }
        kind @ RateLimiterKind::Moka => wiring.rate_limiter(kind, args.limiter_capacity),
    };
    Ok(wiring
        .clock(clock)
        .event_retention(args.event_retention)
        .policy(limit_policy(args)?)
        .environment(cli.environment)
        .config(ApiConfig {
            clients: ClientAddressing {
                trusted_proxies: args.trusted_proxies.clone(),
                header: match args.forwarded_header {
                    ForwardedHeaderName::XForwardedFor => ForwardedHeader::XForwardedFor,
                    ForwardedHeaderName::Forwarded => ForwardedHeader::Forwarded,
                },
                ipv6_prefix: args.ipv6_prefix,
            },
            request_timeout: args.connections.request_timeout,
            date_from_clock: args.clock_file.is_some(),
            ..api_config(&args.document)
        })
        .state())
}

/// The OpenAPI document, as the server would serve it: built from the types and the
/// server addresses alone, without stores.
pub fn openapi_document(document: &DocumentArgs) -> String {
    animal_store_api::openapi_document(&api_config(document))
}

/// How long closing the database may take at shutdown.
const CLOSE_TIMEOUT: Duration = Duration::from_secs(10);

/// Runs the server.
pub async fn run(cli: &Cli, args: &ServeArgs) -> Result<(), Failure> {
    // Listening for the signals from the start: a SIGTERM during start-up then stops the
    // server cleanly instead of killing it.
    let signals = Signals::listen().map_err(Failure::Startup)?;
    // Before anything else: a harness waiting for the ready file never reads a stale one.
    if let Some(path) = &args.ready_file {
        ready_file::remove(path).map_err(Failure::Startup)?;
        ready_file::check_directory(path).map_err(Failure::Startup)?;
    }
    let clock = clock(cli, args).map_err(Failure::Startup)?;
    if args.clock_file.is_some() {
        tracing::warn!("reading the time from --clock-file: for tests only");
    }
    if args.webhooks_allow_private {
        tracing::warn!(
            "--webhooks-allow-private: webhook endpoints may be http and at any address, \
             loopback and private ones included; for tests and local development only"
        );
    }
    let fixtures = fixtures(cli, args, clock.now()).map_err(Failure::Startup)?;
    let schema = match args.migrate {
        MigrationPolicy::Auto => Schema::Migrate,
        MigrationPolicy::Never => Schema::Require,
    };
    let stores = Stores::open_at(cli, schema, clock.clone()).await.map_err(Failure::Startup)?;
    let started = async {
        let state = state(args, cli, &stores, clock).await?;
        let mut keys = greet(&stores, &state.keys).await?;
        if let Some(fixtures) = fixtures {
            let orders = OrderService::new(stores.fixture_orders(), state.clock.clone());
            let pets = stores.fixture_pets();
            keys.extend(fixtures.load(&state.keys, pets.as_ref(), &orders).await?);
        }
        let readiness = state.readiness.clone();
        let deliverer = deliverer(args, &stores, state.clock.clone())?;
        let every = if stores.is_memory() { sweep::MEMORY_INTERVAL } else { sweep::INTERVAL };
        let (idempotency, events) = (state.idempotency.clone(), state.events.clone());
        // The first sweep ends before the worker claims: a restart delivers nothing that
        // went past its retention while the service was down.
        sweep::once(&idempotency, &events, &deliverer).await;
        let sweeper = tokio::spawn(sweep::repeat(idempotency, events, deliverer.clone(), every));
        let worker = crate::deliveries::Worker::start(deliverer)?;
        // Built before the ready file is written: ready means ready to answer.
        let app = stores.answer_faults().around(animal_store_api::app(state));
        let server = Server::bind(args.bind.as_str(), limits(&args.connections))
            .await
            .with_context(|| format!("cannot listen on {}", args.bind))?;
        let address = server.local_addr().context("the listener has no address")?;
        if let Some(path) = &args.ready_file {
            ready_file::write(path, address, &keys)
                .with_context(|| format!("cannot write the ready file {}", path.display()))?;
        }
        anyhow::Ok((app, readiness, server, address, (sweeper, worker)))
    };
    let (app, readiness, server, address, (sweeper, worker)) = match started.await {
        Ok(started) => started,
        Err(err) => {
            stores.close().await;
            if let Some(path) = &args.ready_file {
                let _ = ready_file::remove(path);
            }
            return Err(Failure::Startup(err));
        }
    };
    tracing::info!(
        version = env!("CARGO_PKG_VERSION"),
        schema = animal_store_infra::Database::schema_level(),
        "listening on http://{address}"
    );
    let drain = Duration::from_secs(args.drain_secs);
    let stopping = async move {
        signals.recv().await;
        // Tell the load balancer first, then keep serving while it moves traffic away.
        readiness.drain();
        if !drain.is_zero() {
            tracing::info!(seconds = drain.as_secs(), "/readyz answers 503; draining");
            tokio::time::sleep(drain).await;
        }
    };
    server.run(app, stopping, Duration::from_secs(args.shutdown_grace)).await;
    sweeper.abort();
    worker.stop();
    tracing::info!("stopped accepting requests; closing the database");
    // Bounded: a request still stuck on the database must not keep the process alive.
    if tokio::time::timeout(CLOSE_TIMEOUT, stores.close()).await.is_err() {
        tracing::warn!("the database did not close within 10 s; exiting without waiting for it");
    }
    if let Some(Err(err)) = args.ready_file.as_deref().map(ready_file::remove) {
        tracing::warn!(error = %err, "cannot remove the ready file");
    }
    tracing::info!("shut down");
    Ok(())
}

/// The deliverer of the webhook deliveries of `stores`, posting over HTTP(S).
fn deliverer(
    args: &ServeArgs,
    stores: &Stores,
    clock: Arc<dyn Clock>,
) -> anyhow::Result<animal_store_domain::Deliverer> {
    let sender = animal_store_infra::HttpSender::with_timeout(
        args.webhooks_allow_private,
        args.webhook_timeout,
    )?;
    let schedule = animal_store_domain::Schedule { unit: args.webhook_retry_unit };
    let render: animal_store_domain::RenderEvent = Arc::new(animal_store_api::render_event);
    Ok(animal_store_domain::Deliverer::new(
        stores.deliveries(),
        Arc::new(sender),
        render,
        clock,
        schedule,
    ))
}

/// The checks `serve` makes of its settings before it opens anything, for `config`.
pub fn check(cli: &Cli, args: &ServeArgs) -> anyhow::Result<()> {
    crate::stores::check_url(&cli.database_url)?;
    limit_policy(args)?;
    if args.rate_limiter == RateLimiterKind::Redis {
        let url = args.redis_url.as_deref().context("--rate-limiter redis needs --redis-url")?;
        animal_store_infra::redis_limiter::check_url(url)
            .map_err(|err| anyhow::Error::new(err).context(redact(url)))?;
    }
    let clock = clock(cli, args)?;
    fixtures(cli, args, clock.now())?;
    if let Some(path) = &args.ready_file {
        ready_file::check_directory(path)?;
    }
    Ok(())
}

/// The fixtures `--fixtures` names, checked, or `None` without one; only on `memory://`.
fn fixtures(
    cli: &Cli,
    args: &ServeArgs,
    now: std::time::SystemTime,
) -> anyhow::Result<Option<Fixtures>> {
    let Some(path) = &args.fixtures else {
        return Ok(None);
    };
    if !cli.database_url.is_memory() {
        anyhow::bail!(
            "--fixtures is for memory:// only: a database that keeps its data has no need of them, and would keep them"
        );
    }
    Fixtures::read(path, now).map(Some)
}

/// Tells a newcomer how to get a key; on `memory://`, where keys cannot be created from
/// another process, issues one for this run and returns it, named `demo`.
async fn greet(stores: &Stores, keys: &KeyService) -> anyhow::Result<Vec<(String, String)>> {
    if stores.is_memory() {
        let issued = keys.issue(None, Plan::Free).await.context("cannot issue the demo key")?;
        tracing::warn!(key_id = %issued.key.id, "memory:// keeps nothing; a free-plan key was issued for this run only");
        eprintln!("demo API key (free plan, this run only): {}", issued.secret.expose());
        return Ok(vec![(DEMO_KEY.to_owned(), issued.secret.expose().to_owned())]);
    }
    if keys.list().await.context("cannot read the API keys")?.is_empty() {
        tracing::info!("no API keys yet: issue one with `animal-store keys create --plan free`");
    }
    Ok(Vec::new())
}

/// SIGINT (Ctrl-C) and SIGTERM, listened for from the moment they are created.
struct Signals {
    interrupt: tokio::signal::unix::Signal,
    terminate: tokio::signal::unix::Signal,
}

impl Signals {
    fn listen() -> anyhow::Result<Self> {
        use tokio::signal::unix::{SignalKind, signal};
        Ok(Self {
            interrupt: signal(SignalKind::interrupt()).context("cannot listen for SIGINT")?,
            terminate: signal(SignalKind::terminate()).context("cannot listen for SIGTERM")?,
        })
    }

    /// Resolves on the first of them; a second one, while the server drains or finishes
    /// its requests, ends the process at once with status 1.
    async fn recv(mut self) {
        self.first().await;
        tokio::spawn(async move {
            self.first().await;
            tracing::warn!("second signal: exiting at once, without finishing requests");
            crate::logs::finish();
            std::process::exit(1);
        });
    }

    async fn first(&mut self) {
        tokio::select! {
            _ = self.interrupt.recv() => tracing::info!("SIGINT received: finishing in-flight requests"),
            _ = self.terminate.recv() => tracing::info!("SIGTERM received: finishing in-flight requests"),
        }
    }
}

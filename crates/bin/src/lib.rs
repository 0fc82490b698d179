//! `animal-store`: the Animal Store server and its administration commands, as a library
//! that the binary runs (`src/main.rs`) and tests can build on.
//!
//! `serve` (the default) runs the HTTP API; `keys create|list|revoke` manage API keys;
//! `migrate` brings the database schema up to date; `openapi` prints the API description.
//! Every command that touches the database applies pending migrations first, so they all
//! work on a fresh database.
//!
//! A problem at start-up (a bad setting, an unreachable database, a port in use) is reported
//! as one line on stderr with exit code 2.

mod answer_faults;
mod cli;
mod config;
mod deliveries;
mod descriptors;
mod exporter;
mod failure;
mod fixtures;
mod keys;
pub mod logs;
mod memory_options;
mod ready_file;
mod schema;
mod serve;
mod stores;
mod sweep;
#[cfg(feature = "testing")]
pub mod testkit;
mod webhooks;
pub mod wiring;

use std::io::Write as _;
use std::process::ExitCode;

use cli::{Cli, Command};
use failure::{Failure, fail};

/// Runs the command the command line names, and says how the process ends.
pub fn main() -> ExitCode {
    let (cli, matches) = cli::parse();
    if let Some(Command::Config(args)) = &cli.command {
        return config::run(&cli, args, &matches);
    }
    logs::init(cli.log_format);
    // A panic (a bug) is logged like any other error, inside the span of the request that hit
    // it; the server goes on serving.
    std::panic::set_hook(Box::new(|panic| tracing::error!(%panic, "panic")));
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(err) => return fail(&Failure::Startup(err.into())),
    };
    let outcome = runtime.block_on(run(cli));
    // The work is done and the database closed: a task of a library that does not end
    // must not keep the process alive.
    runtime.shutdown_timeout(RUNTIME_SHUTDOWN);
    // The lines still queued for stderr.
    logs::finish();
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => fail(&failure),
    }
}

/// How long the runtime's last tasks get once a command is done.
const RUNTIME_SHUTDOWN: std::time::Duration = std::time::Duration::from_secs(2);

async fn run(cli: Cli) -> Result<(), Failure> {
    match cli.command.clone().unwrap_or(Command::Serve(cli.serve.clone())) {
        Command::Serve(args) => serve::run(&cli, &args).await,
        Command::Keys { command } => keys::run(&cli, command).await,
        Command::Webhooks { command } => webhooks::run(&cli, command).await,
        Command::Backup { path } => backup(&cli, &path).await,
        Command::Migrate(args) => migrate(&cli, &args).await,
        // Printed before the runtime and the logs start, in `main`.
        Command::Config(_) => Ok(()),
        Command::Openapi(args) => {
            let mut out = std::io::stdout().lock();
            let document = serve::openapi_document(&args);
            match writeln!(out, "{document}") {
                // A closed pipe (`openapi | head`) is the reader's choice, not a failure.
                Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(Failure::Runtime(
                    anyhow::Error::new(e).context("cannot write the document"),
                )),
                _ => Ok(()),
            }
        }
    }
}

/// `migrate [--dry-run]`: lists the migrations the database lacks, one per line on stdout,
/// then applies them unless it is a dry run.
async fn migrate(cli: &Cli, args: &cli::MigrateArgs) -> Result<(), Failure> {
    use stores::{Schema, Stores};
    let stores = Stores::open(cli, Schema::AsIs).await.map_err(Failure::Startup)?;
    let result = async {
        let Some(status) = stores.schema_status().await.map_err(Failure::Startup)? else {
            eprintln!("memory:// keeps no schema: nothing to migrate");
            return Ok(());
        };
        // A database with migrations this version does not know was refused when opened, or
        // admitted by its window with none of this version's missing: nothing to apply.
        for name in &status.pending {
            println!("{name}");
        }
        match (status.pending.len(), args.dry_run) {
            (0, _) => eprintln!("the database is up to date: nothing to apply"),
            (count, true) => eprintln!("would apply {count} migration(s); applied none"),
            (count, false) => {
                if let stores::Stores::Sql(db) = &stores {
                    db.migrate().await.map_err(|err| Failure::Startup(anyhow::Error::new(err)))?;
                }
                eprintln!("applied {count} migration(s): the database is up to date");
            }
        }
        Ok(())
    }
    .await;
    stores.close().await;
    result
}

/// `backup PATH`: checks the target, then copies the database into it.
async fn backup(cli: &Cli, path: &std::path::Path) -> Result<(), Failure> {
    let refuse = |message: String| Err(Failure::Startup(anyhow::anyhow!(message)));
    if cli.database_url.is_memory() {
        return refuse("memory:// keeps nothing to back up".to_owned());
    }
    let directory = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => std::path::Path::new("."),
    };
    if !directory.is_dir() {
        return refuse(format!(
            "cannot back up to {}: the directory {} does not exist",
            path.display(),
            directory.display()
        ));
    }
    if path.exists() {
        return refuse(format!("cannot back up to {}: it exists already", path.display()));
    }
    let stores = stores::Stores::open(cli, stores::Schema::AsIs).await.map_err(Failure::Startup)?;
    let result = match &stores {
        stores::Stores::Sql(db) => db.backup(path).await.map_err(|err| match err {
            animal_store_infra::BackupError::Copy(_) => Failure::Runtime(err.into()),
            _ => Failure::Startup(err.into()),
        }),
        stores::Stores::Memory { .. } => Ok(()),
    };
    stores.close().await;
    if result.is_ok() {
        eprintln!("backed up to {}", path.display());
    }
    result
}

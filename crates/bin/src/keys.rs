//! `keys create|list|revoke`: key management on the database `serve` uses.

use std::fmt::Write as _;
use std::io::Write as _;
use std::sync::Arc;
use std::time::SystemTime;

use animal_store_domain::{ApiKey, KeyId, KeyName, KeyService, Plan, RevokeKeyError};
use animal_store_infra::SystemClock;
use anyhow::{Context, anyhow};

use crate::Failure;
use crate::cli::{Cli, KeysCommand};
use crate::stores::Stores;

/// Runs a key command.
pub async fn run(cli: &Cli, command: KeysCommand) -> Result<(), Failure> {
    if cli.database_url.is_memory() {
        return Err(Failure::Startup(anyhow!(
            "keys cannot be managed on memory://, which keeps nothing: `serve` prints a key for its own run"
        )));
    }
    // Check the arguments before touching the database.
    let create = match &command {
        KeysCommand::Create { plan, name, per_minute, per_day } => Some((
            Plan::new(plan.as_str(), *per_minute, *per_day)
                .map_err(|e| Failure::Startup(e.into()))?,
            name.as_deref()
                .map(KeyName::new)
                .transpose()
                .map_err(|e| Failure::Startup(e.into()))?,
        )),
        _ => None,
    };
    let revoke = match &command {
        KeysCommand::Revoke { id } => Some(KeyId::new(id).map_err(|e| Failure::Startup(e.into()))?),
        _ => None,
    };
    let stores = Stores::open(cli).await.map_err(Failure::Startup)?;
    let keys = KeyService::new(stores.keys(), Arc::new(SystemClock), cli.environment);
    let result = match (create, revoke) {
        (Some((plan, name)), _) => {
            keys.issue(name, plan).await.context("cannot store the key").map(|issued| {
                println!("{}", issued.secret.expose());
            })
        }
        (_, Some(id)) => match keys.revoke(&id).await {
            Ok(key) => {
                eprintln!("revoked {}", key.id);
                Ok(())
            }
            Err(RevokeKeyError::NotFound(id)) => Err(anyhow!("no key has id {id}")),
            Err(err) => Err(anyhow::Error::new(err).context("cannot revoke the key")),
        },
        _ => keys.list().await.context("cannot read the keys").map(|all| {
            let mut out = std::io::stdout().lock();
            for key in &all {
                // A closed pipe (`keys list | head -1`) just ends the listing.
                if writeln!(out, "{}", describe(key)).is_err() {
                    break;
                }
            }
        }),
    };
    stores.close().await;
    result.map_err(Failure::Runtime)
}

/// One line of `keys list`: id, plan, quotas, state, environment, times, name.
fn describe(key: &ApiKey) -> String {
    let quota = key.plan.quota();
    let state = if key.revoked_at.is_some() { "revoked" } else { "active" };
    let mut line = format!(
        "{}\t{}\t{}/min\t{}/day\t{state}\t{}\tcreated={}\tlast_used={}",
        key.id,
        key.plan,
        quota.per_minute,
        quota.per_day,
        key.environment,
        rfc3339(key.created_at),
        key.last_used_at.map_or_else(|| "never".to_owned(), rfc3339),
    );
    if let Some(revoked) = key.revoked_at {
        let _ = write!(line, "\trevoked={}", rfc3339(revoked));
    }
    if let Some(name) = &key.name {
        let _ = write!(line, "\tname={}", name.as_str());
    }
    line
}

fn rfc3339(at: SystemTime) -> String {
    chrono::DateTime::<chrono::Utc>::from(at).to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

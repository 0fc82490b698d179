//! `keys create|list|revoke|rotate`: key management on the database `serve` uses.

use std::fmt::Write as _;
use std::io::Write as _;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use animal_store_domain::{
    ApiKey, KeyId, KeyName, KeyService, Plan, RevokeKeyError, RotateKeyError, Scope,
};
use animal_store_infra::SystemClock;
use anyhow::{Context, anyhow};

use crate::cli::{Cli, KeysCommand};
use crate::failure::Failure;
use crate::stores::{Schema, Stores};

/// Runs a key command.
pub async fn run(cli: &Cli, command: KeysCommand) -> Result<(), Failure> {
    if cli.database_url.is_memory() {
        return Err(Failure::Startup(anyhow!(
            "keys cannot be managed on memory://, which keeps nothing: `serve` prints a key for its own run"
        )));
    }
    // Check the arguments before touching the database.
    let action = Action::read(command).map_err(Failure::Startup)?;
    let stores = Stores::open(cli, Schema::MigrateNew).await.map_err(Failure::Startup)?;
    let keys = KeyService::new(stores.keys(), Arc::new(SystemClock), cli.environment);
    let result = action.run(&keys).await;
    stores.close().await;
    result.map_err(Failure::Runtime)
}

/// A key command, its arguments checked.
enum Action {
    Create { plan: Plan, scope: Scope, name: Option<KeyName>, expires_in: Option<Duration> },
    List,
    Revoke(KeyId),
    Rotate { id: KeyId, grace: Duration, expires_in: Option<Duration> },
}

impl Action {
    fn read(command: KeysCommand) -> anyhow::Result<Self> {
        Ok(match command {
            KeysCommand::Create { plan, name, scope, per_minute, per_day, expires_in } => {
                Self::Create {
                    plan: Plan::new(plan.as_str(), per_minute, per_day)?,
                    scope: scope.into(),
                    name: name.as_deref().map(KeyName::new).transpose()?,
                    expires_in,
                }
            }
            KeysCommand::List => Self::List,
            KeysCommand::Revoke { id } => Self::Revoke(KeyId::new(&id)?),
            KeysCommand::Rotate { id, grace, expires_in } => {
                Self::Rotate { id: KeyId::new(&id)?, grace, expires_in }
            }
        })
    }

    async fn run(self, keys: &KeyService) -> anyhow::Result<()> {
        match self {
            Self::Create { plan, scope, name, expires_in } => {
                let issued = keys
                    .issue_as(name, plan, scope, expires_in)
                    .await
                    .context("cannot store the key")?;
                println!("{}", issued.secret.expose());
            }
            Self::List => {
                let all = keys.list().await.context("cannot read the keys")?;
                let mut out = std::io::stdout().lock();
                for key in &all {
                    // A closed pipe (`keys list | head -1`) just ends the listing.
                    if writeln!(out, "{}", describe(key, SystemTime::now())).is_err() {
                        break;
                    }
                }
            }
            Self::Revoke(id) => match keys.revoke(&id).await {
                Ok(key) => eprintln!("revoked {}", key.id),
                Err(RevokeKeyError::NotFound(id)) => anyhow::bail!("no key has id {id}"),
                Err(err) => return Err(anyhow::Error::new(err).context("cannot revoke the key")),
            },
            Self::Rotate { id, grace, expires_in } => {
                let rotated = match keys.rotate(&id, grace, expires_in).await {
                    Ok(rotated) => rotated,
                    Err(RotateKeyError::Repository(err)) => {
                        return Err(anyhow::Error::new(err).context("cannot rotate the key"));
                    }
                    Err(refused) => anyhow::bail!("{refused}"),
                };
                println!("{}", rotated.new.secret.expose());
                let until = rotated.old.expires_at.map_or_else(|| "now".to_owned(), rfc3339);
                eprintln!("rotated {} to {}; {} works until {until}", id, rotated.new.key.id, id);
            }
        }
        Ok(())
    }
}

/// One line of `keys list`: id, plan, quotas, state at `now`, environment, times, scope,
/// then revocation, expiry, rotation and name when there are.
fn describe(key: &ApiKey, now: SystemTime) -> String {
    let quota = key.plan.quota();
    let state = if key.revoked_at.is_some() {
        "revoked"
    } else if !key.is_live(now) {
        "expired"
    } else {
        "active"
    };
    let mut line = format!(
        "{}\t{}\t{}/min\t{}/day\t{state}\t{}\tcreated={}\tlast_used={}\tscope={}",
        key.id,
        key.plan,
        quota.per_minute,
        quota.per_day,
        key.environment,
        rfc3339(key.created_at),
        key.last_used_at.map_or_else(|| "never".to_owned(), rfc3339),
        key.scope,
    );
    if let Some(revoked) = key.revoked_at {
        let _ = write!(line, "\trevoked={}", rfc3339(revoked));
    }
    if let Some(expires) = key.expires_at {
        let _ = write!(line, "\texpires={}", rfc3339(expires));
    }
    if let Some(successor) = &key.rotated_to {
        let _ = write!(line, "\trotated_to={successor}");
    }
    if key.owner != key.id {
        let _ = write!(line, "\tline={}", key.owner);
    }
    if let Some(name) = &key.name {
        let _ = write!(line, "\tname={}", name.as_str());
    }
    line
}

fn rfc3339(at: SystemTime) -> String {
    chrono::DateTime::<chrono::Utc>::from(at).to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

//! `webhooks list|disable`: the operators' commands on the webhook endpoints of the database
//! `serve` uses (`docs/operations.md#webhooks`).

use std::io::Write as _;
use std::sync::Arc;

use animal_store_domain::{
    DisabledReason, Endpoint, EndpointId, EndpointStatus, KeyId, Outcome, WebhookError,
    WebhookService,
};
use animal_store_infra::{DnsAddressCheck, SystemClock};
use anyhow::{Context, anyhow};

use crate::cli::{Cli, WebhooksCommand};
use crate::failure::Failure;
use crate::stores::{Schema, Stores};

/// Runs a webhook command.
pub async fn run(cli: &Cli, command: WebhooksCommand) -> Result<(), Failure> {
    if cli.database_url.is_memory() {
        return Err(Failure::Startup(anyhow!(
            "webhooks cannot be managed on memory://, which no other process can reach"
        )));
    }
    // Check the arguments before touching the database.
    let owner = match &command {
        WebhooksCommand::List { owner: Some(owner) } => {
            Some(KeyId::new(owner).map_err(|e| Failure::Startup(e.into()))?)
        }
        _ => None,
    };
    let stores = Stores::open(cli, Schema::MigrateNew).await.map_err(Failure::Startup)?;
    let webhooks = WebhookService::new(
        stores.webhooks(),
        stores.deliveries(),
        Arc::new(DnsAddressCheck),
        Arc::new(SystemClock),
        false,
    );
    let result = match command {
        WebhooksCommand::List { .. } => list(&webhooks, owner.as_ref()).await,
        WebhooksCommand::Disable { id } => disable(&webhooks, EndpointId::new(id)).await,
    };
    stores.close().await;
    result.map_err(Failure::Runtime)
}

async fn list(webhooks: &WebhookService, owner: Option<&KeyId>) -> anyhow::Result<()> {
    let endpoints = webhooks.survey(owner).await.context("cannot read the webhook endpoints")?;
    let mut out = std::io::stdout().lock();
    for (endpoint, last) in &endpoints {
        // A closed pipe (`webhooks list | head -1`) just ends the listing.
        if writeln!(out, "{}", describe(endpoint, *last)).is_err() {
            break;
        }
    }
    Ok(())
}

async fn disable(webhooks: &WebhookService, id: EndpointId) -> anyhow::Result<()> {
    match webhooks.disable(id).await {
        Ok(endpoint) => {
            eprintln!("disabled webhook endpoint {} of {}", endpoint.id, endpoint.owner);
            Ok(())
        }
        Err(WebhookError::NotFound(id)) => anyhow::bail!("no webhook endpoint has id {id}"),
        Err(err) => Err(anyhow::Error::new(err).context("cannot disable the webhook endpoint")),
    }
}

/// One line of `webhooks list`: id, owner, the URL's host (never its path or query, which
/// may carry a token of the owner's), state, the last attempt's outcome.
fn describe(endpoint: &Endpoint, last: Option<Outcome>) -> String {
    let host = endpoint.url.host();
    let state = match (endpoint.status, endpoint.disabled_reason) {
        (EndpointStatus::Enabled, _) => "enabled".to_owned(),
        (EndpointStatus::Disabled, reason) => {
            format!("disabled:{}", reason.map_or("unknown", DisabledReason::as_str))
        }
    };
    let last = match last {
        None => "never".to_owned(),
        Some(Outcome::Status(status)) => format!("{}:{status}", Outcome::Status(status).kind()),
        Some(outcome) => outcome.kind().to_owned(),
    };
    format!("{}\t{}\thost={host}\t{state}\tlast={last}", endpoint.id, endpoint.owner)
}

//! The arguments of `animal-store webhooks`: the operators' view of every owner's webhook
//! endpoints, and their way to stop one.

use clap::Subcommand;

/// The webhook commands.
#[derive(Debug, Clone, Subcommand)]
pub enum WebhooksCommand {
    /// List the webhook endpoints, one per line, id first: owner, the URL's host, state (and
    /// why disabled), the outcome of the last attempt. Never shows a secret.
    List {
        /// Only the endpoints of this key's rotation chain (its key id, as `keys list` shows it).
        #[arg(long)]
        owner: Option<String>,
    },
    /// Disable the endpoint with this id for good, whoever owns it: nothing more is
    /// delivered to it, what waits is dropped, and its owner cannot enable it again.
    Disable {
        /// The endpoint's id.
        id: i64,
    },
}

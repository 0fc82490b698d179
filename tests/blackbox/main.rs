//! Black-box tests: they start the real `animal-store` binary on a free port with a fresh
//! database, issue keys through its command line, and talk to it over HTTP on 127.0.0.1,
//! as an operator and a client would.

mod harness;

mod ambiguity;
mod backup;
mod bounded;
mod browser;
mod by_ids;
mod caching;
mod changes;
mod cli;
mod conditional;
mod connections;
mod descriptors;
mod docs_page;
mod durability;
mod early_answers;
mod events;
mod eviction;
mod fail_fast;
mod forwarding;
mod harness_contract;
mod harness_faults;
mod http;
mod idempotency;
mod key_lifecycle;
mod lockout;
mod metrics;
mod migrations;
mod named_faults;
mod names;
mod one_clock;
mod orders;
mod outages;
mod permissions;
mod probes;
mod rate_limit_inquiry;
mod rate_limits;
mod relay;
mod scopes;
mod secrets;
mod shared_limits;
mod stability;
mod webhook_defences;
mod webhook_endpoints;
mod webhook_receivers;
mod webhooks;

//! The API through poem's test client, over the in-memory adapters: each module covers one
//! feature of `docs/api.md`, asserting what a client sees (status, headers, body) and what
//! the store holds afterwards.

mod helpers;

mod auth;
mod deprecation;
mod document;
mod errors;
mod pets;
mod probes;
mod rate_limits;

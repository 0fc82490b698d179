//! The HTTP API of Animal Store: poem-openapi operations, the error mapping, and the
//! middleware that gives every response the contract's shape.
//!
//! # Layout
//!
//! - [`app`] assembles the service: the operations under `/v1`, the document at
//!   `/v1/openapi.json`, the docs page at `/v1/docs`, and the layers of [`middleware`], in
//!   their order.
//! - `operations`: the operations, one module per tag (`operations/pets.rs`: `animals`).
//! - `dto`: what goes over the wire: bodies, parameters and the cursor, each documented by
//!   its schema and parsed so that every mistake gets the contract's code and names its
//!   field.
//! - [`error`]: the codes, the Error body, and the one mapping from failures to responses.
//! - [`middleware`]: one file per layer of the service's own; `middleware/mod.rs` states
//!   what each does, and `app` their order and why.
//! - `auth`, `rate_limit`, `client_address`: who is calling, how much they may, and from
//!   where.
//! - [`deprecation`], `routes`, `openapi`: sunsets, the route table built from the table of
//!   operations (`operations/table.rs`), and the document itself.
//!
//! This crate depends on the domain only; adapters are chosen by the binary and reach it
//! as ports inside [`AppState`].

// The layers of `app` nest one type in another: the layout of their future is deeper than
// the compiler's default limit of 128.
#![recursion_limit = "256"]

mod auth;
pub mod client_address;
pub mod deprecation;
mod dto;
pub mod encoding;
pub mod error;
mod etag;
mod idempotency;
pub mod middleware;
mod openapi;
mod operations;
mod operators;
mod pages;
pub mod probes;
mod published;
mod rate_limit;
mod routes;
pub mod server;
pub mod stability;
mod state;
pub mod telemetry;

use std::sync::Arc;

use poem::endpoint::make_sync;
use poem::http::Method;
use poem::middleware::CatchPanic;
use poem::{EndpointExt, IntoResponse as _, Response, Route, get};

pub use idempotency::IDEMPOTENT_REPLAYED;
pub use openapi::API_VERSION;
pub use state::{ApiConfig, AppState, DEFAULT_PRODUCTION_URL, DEFAULT_STAGING_URL, Services};

use pages::Pages;
use routes::RouteTable;

/// The OpenAPI document of the service, as served at `/v1/openapi.json`.
pub fn openapi_document(config: &ApiConfig) -> String {
    let service = openapi::service(config);
    let document = openapi::document(&service, config.experimental);
    serde_json::to_string_pretty(&openapi::published(document)).unwrap_or_default()
}

/// Parses a `NewPet` body exactly as `createPet` does, at `now`: the pet, or the message of
/// the 400 the API would answer. For tools that load pets from elsewhere (fixtures).
///
/// # Errors
///
/// The message naming every field at fault.
pub fn parse_new_pet(
    json: serde_json::Value,
    now: std::time::SystemTime,
) -> Result<animal_store_domain::NewPet, String> {
    use poem_openapi::types::ParseFromJSON;
    let context = dto::field::ParseContext { now };
    dto::pets::NewPetBody::parse_from_json(Some(json))
        .map_err(poem_openapi::types::ParseError::into_message)?
        .into_inner()
        .and_then(|fields| fields.into_new_pet(&context))
        .map_err(|err| err.body().message)
}

/// The body of a webhook delivery of `event`: the event exactly as `listEvents` and
/// `getEvent` write it.
pub fn render_event(event: &animal_store_domain::Event) -> String {
    serde_json::to_string(&dto::events::EventBody::from(event.clone())).unwrap_or_default()
}

/// The origin (`https://host:port`) of a URL, if it has one.
fn origin(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    let host = rest.split(['/', '?', '#']).next().filter(|host| !host.is_empty())?;
    Some(format!("{scheme}://{host}"))
}

/// The whole HTTP service.
pub fn app(state: AppState) -> poem::endpoint::BoxEndpoint<'static, Response> {
    let service = openapi::service(&state.config);
    let document = openapi::document(&service, state.config.experimental);
    let routes = RouteTable::of_operations(state.config.experimental)
        .with_route(published::PATHS[0], &[Method::GET])
        .with_route(published::PATHS[1], &[Method::GET])
        .with_route(probes::PATHS[0], &[Method::GET])
        .with_route(probes::PATHS[1], &[Method::GET])
        .with_route(telemetry::PATH, &[Method::GET]);
    let origins: Vec<String> = [&state.config.production_url, &state.config.staging_url]
        .into_iter()
        .filter_map(|url| origin(url))
        .collect();
    let pages = Arc::new(Pages::new(service, document, origins));
    let docs = Arc::clone(&pages);

    // The layers, innermost first: the order is written here only. Each is poem's `around`
    // (or poem's own middleware), boxed, so that no layer's type holds those inside it. Each
    // layer calls the ones inside through `respond`, which turns an error raised there
    // (routing, extraction) into the Error body, so that no response escapes without the
    // headers of the layers outside. Innermost of all, poem-openapi routes the operations,
    // under `/v1`.
    Route::new()
        .at(probes::PATHS[0], get(operators::livez))
        .at(probes::PATHS[1], get(operators::readyz))
        .at(telemetry::PATH, get(operators::serve_metrics))
        .at("/v1/openapi.json", get(make_sync(move |req| pages.document().respond(&req))))
        .at("/v1/docs", get(make_sync(move |req| docs.docs().respond(&req))))
        .nest(openapi::PREFIX, openapi::service(&state.config))
        .boxed()
        // Holds a keyed write's `Idempotency-Key` while its operation runs: nearest to it.
        .around(middleware::idempotency_keys)
        .boxed()
        // Chooses the answer's coding and tags a read's representation; outside the hold, so
        // that a replay is encoded for the retry that asked; inside the guard, which gives a
        // 304's slot back to the day's quota.
        .around(middleware::representations)
        .boxed()
        // 404 and 405 from the route table, with `Allow`, before poem's router; then at most
        // 16 KiB of the body, read before anything parses it.
        .around(middleware::check_request)
        .boxed()
        // A panic inside becomes a 500 Error body that the layers outside still mark.
        .with(CatchPanic::new().with_handler(|_| error::ApiError::internal().into_response()))
        .boxed()
        // The key and the rate limits, outside the body limit: an over-limit request is
        // refused before its body is read; then the request's time, inside, so that its 503
        // keeps the rate-limit headers.
        .around(middleware::guard)
        .boxed()
        // Outermost: the route is looked up once, for every layer inside to read; every
        // response, the guard's 401s and 429s included, gets its headers here, and every
        // request its log line and its count.
        .around(middleware::envelope)
        .data(Arc::new(routes))
        .data(Arc::new(telemetry::RequestMetrics::default()))
        .data(state)
        .boxed()
}

#[cfg(test)]
mod tests {
    /// The layers as `app` stacks them, innermost first: `.around(...)`, poem's own
    /// (`.with(...)`) and `.data(...)` (once).
    fn layers_of_app() -> Vec<String> {
        let source = include_str!("lib.rs");
        let start = source.find("pub fn app(").expect("app");
        let body = &source[start..start + source[start..].find("\n}\n").expect("its end")];
        let mut layers: Vec<String> = Vec::new();
        for line in body.lines().map(str::trim) {
            let layer = if let Some(rest) = line.strip_prefix(".around(") {
                let name = rest.split("middleware::").nth(1).expect("a middleware layer");
                name.split(|c: char| !c.is_alphanumeric() && c != '_').next().map(str::to_owned)
            } else if let Some(rest) = line.strip_prefix(".with(") {
                rest.split(|c: char| !c.is_alphanumeric()).next().map(str::to_owned)
            } else if line.starts_with(".data(") {
                Some("data".to_owned())
            } else {
                None
            };
            if let Some(layer) = layer.filter(|l| layers.last() != Some(l)) {
                layers.push(layer);
            }
        }
        layers
    }

    #[test]
    fn the_architecture_lists_the_layers_of_app_in_their_order() {
        let doc = include_str!("../../../docs/architecture.md");
        let table = doc.split("| Layer | What it does |").nth(1).expect("the table of layers");
        let listed: Vec<&str> = table
            .lines()
            .skip(2)
            .take_while(|line| line.starts_with("| `"))
            .filter_map(|line| line.split('`').nth(1))
            .collect();
        assert_eq!(listed, layers_of_app(), "docs/architecture.md, The HTTP layer");
    }
}

//! The HTTP API of Animal Store: poem-openapi operations, the error mapping, and the
//! layers that give every response the contract's shape.
//!
//! # Layout
//!
//! Five folders, each importing only from those below it:
//!
//! - `edge`: the connections (`server.rs` over hyper, with `socket.rs`, `body.rs`,
//!   `framing.rs` and `accept.rs`) and the layers of the service's own, one file each;
//!   `edge/mod.rs` states what each layer does, and [`app`] their order and why.
//! - `document`: the OpenAPI document built from the operations, its examples, and the
//!   document and docs page as served.
//! - `operations`: the operations, one module per tag (`operations/pets.rs`: `animals`), the
//!   table of what each carries (`table.rs`) and the route table built from it, the operators'
//!   endpoints, and [`AppState`], which they all share.
//! - `wire`: what goes over the wire: bodies, parameters and the cursor, each parsed so that
//!   every mistake gets the contract's code and names its field; and the headers (the key,
//!   the client's address, codings, entity tags, sunsets, stability, replays).
//! - [`error`]: the codes, the Error body, and the one mapping from failures to responses.
//!
//! [`app`] in this file assembles them: the operations under `/v1`, the document at
//! `/v1/openapi.json`, the docs page at `/v1/docs`, and the layers, in their order.
//!
//! This crate depends on the domain only; adapters are chosen by the binary and reach it
//! as ports inside [`AppState`].

// The layers of `app` nest one type in another: the layout of their future is deeper than
// the compiler's default limit of 128.
#![recursion_limit = "256"]

mod document;
mod edge;
pub mod error;
mod operations;
mod wire;

use std::sync::Arc;

use poem::endpoint::make_sync;
use poem::middleware::CatchPanic;
use poem::{EndpointExt, IntoResponse as _, Response, Route, get};

pub use document::API_VERSION;
pub use edge::server;
pub use operations::state::{
    ApiConfig, AppState, DEFAULT_PRODUCTION_URL, DEFAULT_STAGING_URL, Services,
};
pub use operations::{probes, telemetry};
pub use wire::client_address;
pub use wire::idempotency::IDEMPOTENT_REPLAYED;
pub use wire::pets::parse_new_pet;

use document::pages::Pages;
use document::published;
use operations::Caching;
use operations::routes::RouteTable;

/// The OpenAPI document of the service, as served at `/v1/openapi.json`.
pub fn openapi_document(config: &ApiConfig) -> String {
    let service = document::service(config);
    let document = document::document(&service, config.experimental);
    serde_json::to_string_pretty(&document::published(document)).unwrap_or_default()
}

/// The body of a webhook delivery of `event`: the event exactly as `listEvents` and
/// `getEvent` write it.
pub fn render_event(event: &animal_store_domain::Event) -> String {
    serde_json::to_string(&wire::events::EventBody::from(event.clone())).unwrap_or_default()
}

/// The answers keyed writes store for their retries, encoded as the operations send them
/// (`docs/api.md#idempotent-retries`).
#[derive(Debug, Clone, Copy, Default)]
pub struct Answers;

impl animal_store_domain::AnswerEncoder for Answers {
    fn pet_created(&self, pet: &animal_store_domain::Pet) -> animal_store_domain::StoredAnswer {
        operations::pets::created_answer(pet)
    }

    fn order_placed(
        &self,
        placed: &Result<animal_store_domain::Order, animal_store_domain::PlaceOrderError>,
    ) -> Option<animal_store_domain::StoredAnswer> {
        operations::orders::placed_answer(placed)
    }
}

/// The origin (`https://host:port`) of a URL, if it has one.
fn origin(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    let host = rest.split(['/', '?', '#']).next().filter(|host| !host.is_empty())?;
    Some(format!("{scheme}://{host}"))
}

/// The whole HTTP service.
pub fn app(state: AppState) -> poem::endpoint::BoxEndpoint<'static, Response> {
    let service = document::service(&state.config);
    let document = document::document(&service, state.config.experimental);
    let routes = RouteTable::of_operations(state.config.experimental)
        .with_route(published::PATHS[0], Caching::Published)
        .with_route(published::PATHS[1], Caching::Published)
        .with_route(probes::PATHS[0], Caching::NoStore)
        .with_route(probes::PATHS[1], Caching::NoStore)
        .with_route(telemetry::PATH, Caching::NoStore);
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
        .at(probes::PATHS[0], get(operations::operators::livez))
        .at(probes::PATHS[1], get(operations::operators::readyz))
        .at(telemetry::PATH, get(operations::operators::serve_metrics))
        .at("/v1/openapi.json", get(make_sync(move |req| pages.document().respond(&req))))
        .at("/v1/docs", get(make_sync(move |req| docs.docs().respond(&req))))
        .nest(document::PREFIX, document::service(&state.config))
        .boxed()
        // Holds a keyed write's `Idempotency-Key` while its operation runs: nearest to it.
        .around(edge::idempotency_keys)
        .boxed()
        // Chooses the answer's coding and tags a read's representation; outside the hold, so
        // that a replay is encoded for the retry that asked; inside the guard, which gives a
        // 304's slot back to the day's quota.
        .around(edge::representations)
        .boxed()
        // 404 and 405 from the route table, with `Allow`, before poem's router; then at most
        // 16 KiB of the body, read before anything parses it.
        .around(edge::check_request)
        .boxed()
        // A panic inside becomes a 500 Error body that the layers outside still mark.
        .with(CatchPanic::new().with_handler(|_| error::ApiError::internal().into_response()))
        .boxed()
        // The key and the rate limits, outside the body limit: an over-limit request is
        // refused before its body is read; then the request's time, inside, so that its 503
        // keeps the rate-limit headers.
        .around(edge::guard)
        .boxed()
        // Outermost: the route is looked up once, for every layer inside to read; every
        // response, the guard's 401s and 429s included, gets its headers here, and every
        // request its log line and its count.
        .around(edge::envelope)
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
                let name = rest.split("edge::").nth(1).expect("a middleware layer");
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

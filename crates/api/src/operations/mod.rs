//! The operations, one module per tag of the document, and what each asks of the layers
//! (`table.rs`).

mod account;
mod events;
mod orders;
mod pet_errors;
mod pets;
mod table;
mod webhooks;

pub use account::AccountApi;
pub use events::EventsApi;
pub use orders::OrdersApi;
pub use pets::PetsApi;
pub use table::{Caching, OPERATIONS, Operation};

use poem::{Endpoint, EndpointExt as _, Response};
pub use webhooks::WebhooksApi;

/// Every operation of the API.
pub type Operations = (PetsApi, OrdersApi, EventsApi, WebhooksApi, AccountApi);

/// What each operation's endpoint becomes (poem-openapi's `transform`): an error raised
/// before its handler runs (a parameter, a body, a content type, the key) answered in the
/// contract's Error shape, while poem-openapi still knows what it was. Outside the
/// operation, poem-openapi's service turns every error into a plain response.
fn in_contract_shape(operation: impl Endpoint<Output = Response>) -> impl Endpoint {
    operation.catch_all_error(|err| async move { crate::error::ApiError::response_to(err) })
}

//! The operations, one module per tag of the document.

mod pets;

pub use pets::PetsApi;

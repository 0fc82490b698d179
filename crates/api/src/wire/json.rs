//! JSON answers serialized straight to bytes.
//!
//! poem-openapi's `Json<T>` answers by building a `serde_json::Value` of the body (a map per
//! object) and then serializing that. [`JsonBody`] serializes the body with serde directly,
//! one pass and one buffer, while the document shows `T`'s schema as `Json<T>` would. A body
//! type it carries derives `serde::Serialize` beside its schema, with the same names; a test
//! checks that both give the same bytes.

use poem::{IntoResponse, Request, RequestBody, Response};
use poem_openapi::ApiResponse;
use poem_openapi::payload::{Json, ParsePayload, Payload};
use poem_openapi::registry::{MetaMediaType, MetaResponse, MetaResponses, MetaSchemaRef, Registry};
use poem_openapi::types::{ParseFromJSON, Type};
use serde::Serialize;

/// The content type of every JSON answer.
const CONTENT_TYPE: &str = "application/json; charset=utf-8";

/// A JSON answer of `T`, documented by `T`'s schema. For answers only: requests are
/// parsed by the bodies' own parsers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsonBody<T>(pub T);

impl<T: Type> Payload for JsonBody<T> {
    const CONTENT_TYPE: &'static str = CONTENT_TYPE;

    fn schema_ref() -> MetaSchemaRef {
        T::schema_ref()
    }

    fn register(registry: &mut Registry) {
        T::register(registry);
    }
}

impl<T: Serialize + Send> IntoResponse for JsonBody<T> {
    fn into_response(self) -> Response {
        match serde_json::to_vec(&self.0) {
            Ok(bytes) => Response::builder().content_type(CONTENT_TYPE).body(bytes),
            Err(err) => {
                tracing::error!(error = %err, "a response body could not be serialized");
                crate::error::ApiError::internal().into_response()
            }
        }
    }
}

impl<T: Type + Serialize + Send> ApiResponse for JsonBody<T> {
    fn meta() -> MetaResponses {
        MetaResponses {
            responses: vec![MetaResponse {
                description: "",
                status: Some(200),
                status_range: None,
                content: vec![MetaMediaType {
                    content_type: CONTENT_TYPE,
                    schema: Self::schema_ref(),
                }],
                headers: vec![],
            }],
        }
    }

    fn register(registry: &mut Registry) {
        T::register(registry);
    }
}

/// A media type a request body must be sent as, exactly.
pub trait MediaType: Send + Sync + 'static {
    /// Its name, without parameters.
    const NAME: &'static str;
}

/// `application/merge-patch+json` (RFC 7396).
#[derive(Debug)]
pub struct MergePatchType;

impl MediaType for MergePatchType {
    const NAME: &'static str = "application/merge-patch+json";
}

/// `application/json` itself: poem-openapi's `Json` takes every `+json` type, and a JSON
/// Patch (`application/json-patch+json`) is not a merge patch.
#[derive(Debug)]
pub struct PlainJsonType;

impl MediaType for PlainJsonType {
    const NAME: &'static str = "application/json";
}

/// A request body sent as the media type `M` and no other (its parameters, such as
/// `; charset=utf-8`, aside), parsed as JSON is.
#[derive(Debug)]
pub struct Exactly<M, T>(pub T, std::marker::PhantomData<M>);

impl<M, T> Exactly<M, T> {
    /// The body.
    pub fn into_inner(self) -> T {
        self.0
    }
}

/// A JSON merge patch (RFC 7396).
pub type MergePatch<T> = Exactly<MergePatchType, T>;

/// A JSON body sent as `application/json`.
pub type PlainJson<T> = Exactly<PlainJsonType, T>;

impl<M: MediaType, T: Type> Payload for Exactly<M, T> {
    const CONTENT_TYPE: &'static str = M::NAME;

    fn check_content_type(content_type: &str) -> bool {
        // The media type, without its parameters (`; charset=utf-8`).
        let essence = content_type.split(';').next().unwrap_or_default();
        essence.trim().eq_ignore_ascii_case(M::NAME)
    }

    fn schema_ref() -> MetaSchemaRef {
        T::schema_ref()
    }

    fn register(registry: &mut Registry) {
        T::register(registry);
    }
}

impl<M: MediaType, T: ParseFromJSON> ParsePayload for Exactly<M, T> {
    const IS_REQUIRED: bool = true;

    async fn from_request(request: &Request, body: &mut RequestBody) -> poem::Result<Self> {
        let Json(value) = Json::<T>::from_request(request, body).await?;
        Ok(Self(value, std::marker::PhantomData))
    }
}

#[cfg(test)]
mod tests {
    use animal_store_domain::{
        CategoryId, KeyId, Order, OrderId, OrderStatus, Pet, PetId, PetName, PetStatus,
    };

    use super::*;
    use crate::wire::orders::OrderBody;
    use crate::wire::pets::PetBody;

    /// What poem-openapi's `Json` would have sent for `value`.
    fn as_poem_openapi_sends(value: &impl poem_openapi::types::ToJSON) -> Vec<u8> {
        serde_json::to_vec(&value.to_json()).expect("JSON")
    }

    #[tokio::test]
    async fn a_body_is_the_bytes_poem_openapi_would_send() {
        let pets: Vec<PetBody> = [PetStatus::Available, PetStatus::Pending, PetStatus::Sold]
            .into_iter()
            .enumerate()
            .map(|(i, status)| {
                PetBody::from(Pet {
                    id: PetId::new(i64::try_from(i).expect("small") + 1),
                    name: PetName::new("Rex \"the\" Ünïcode 🐕").expect("a name"),
                    category_id: CategoryId::new(7).expect("a category"),
                    status,
                })
            })
            .collect();
        assert_sends_as_poem_openapi(pets).await;
        let at = chrono::DateTime::from_timestamp(1_900_000_000, 0).expect("an instant");
        let orders: Vec<OrderBody> = OrderStatus::ALL
            .into_iter()
            .map(|status| {
                OrderBody::from(Order {
                    id: OrderId::new(3),
                    pet_id: PetId::new(2),
                    owner: KeyId::new("owner0000001").expect("a key id"),
                    status,
                    created_at: at,
                    updated_at: at + chrono::Duration::seconds(61),
                })
            })
            .collect();
        assert_sends_as_poem_openapi(orders).await;
    }

    async fn assert_sends_as_poem_openapi<T>(value: T)
    where
        T: poem_openapi::types::ToJSON + Serialize + Send,
    {
        let expected = as_poem_openapi_sends(&value);
        let response = JsonBody(value).into_response();
        assert_eq!(response.content_type(), Some(CONTENT_TYPE));
        let sent = response.into_body().into_vec().await.expect("a body");
        assert_eq!(String::from_utf8(sent).ok(), String::from_utf8(expected).ok());
    }
}

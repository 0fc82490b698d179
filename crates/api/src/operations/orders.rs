//! The `store` operations: orders, each the caller's own (`docs/api.md#orders`), and the
//! inventory of the catalogue. `placeOrder`, `listOrders`, `getOrder` and `getInventory` are
//! experimental, `updateOrder` beta.

use animal_store_domain::{
    Answer, GetOrderError, Order, OrderId, PlaceOrderError, StoredAnswer, UpdateOrderError, excerpt,
};
use poem::http::StatusCode;
use poem::web::Data;
use poem_openapi::param::{Header, Path, Query};
use poem_openapi::payload::Json;
use poem_openapi::types::ToJSON as _;
use poem_openapi::{ApiResponse, OpenApi, Tags};

use crate::error::{ApiError, ErrorCode, ErrorSet, OperationError};
use crate::operations::state::AppState;
use crate::wire::auth::BearerKey;
use crate::wire::changes::InventoryBody;
use crate::wire::duplicates::{RepeatedJsonKey, refuse_repeated_parameters};
use crate::wire::field::ParseContext;
use crate::wire::idempotency::{KeyedWrite, decode, encode, send};
use crate::wire::json::JsonBody;
use crate::wire::listing::{listing, next_link};
use crate::wire::orders::{NewOrderBody, OrderBody, OrderStatusDto, OrderUpdateBody};
use crate::wire::params::{CursorSchema, IdempotencyKeySchema, PageSizeSchema, RawParam};

#[derive(Tags)]
enum Tag {
    /// Orders: animals reserved by the API key that placed them.
    #[oai(rename = "store")]
    Store,
}

#[derive(ApiResponse)]
enum PlaceOrderOk {
    /// Order placed; the animal is now `pending`.
    #[oai(status = 201)]
    Created(
        JsonBody<OrderBody>,
        /// The address of the new order: `/v1/store/orders/{id}`.
        #[oai(header = "Location")]
        String,
    ),
}

#[derive(ApiResponse)]
enum ListOrdersOk {
    /// A page of the caller's orders, ordered by id ascending.
    #[oai(status = 200)]
    Ok(
        JsonBody<Vec<OrderBody>>,
        /// `<...>; rel="next"` (RFC 8288): the next page, with the same `limit` and `status`.
        /// Absent on the last page.
        #[oai(header = "Link")]
        Option<String>,
    ),
}

#[derive(ApiResponse)]
enum OrderOk {
    /// The order.
    #[oai(status = 200)]
    Ok(JsonBody<OrderBody>),
}

#[derive(ApiResponse)]
enum InventoryOk {
    /// The count of each status.
    #[oai(status = 200)]
    Ok(JsonBody<InventoryBody>),
}

const UNAUTHORIZED: (ErrorCode, &str) = (ErrorCode::Unauthorized, "Missing or invalid API key.");
const INTERNAL: (ErrorCode, &str) = (ErrorCode::InternalError, "The server failed.");
const UNAVAILABLE: (ErrorCode, &str) =
    (ErrorCode::ServiceUnavailable, "The store is temporarily unavailable.");
const NOT_FOUND: (ErrorCode, &str) =
    (ErrorCode::NotFound, "The caller has no order with this id (another key's order included).");
const BAD_ORDER_ID: (ErrorCode, &str) = (ErrorCode::InvalidRequest, "`orderId` is not an integer.");

struct PlaceOrderErrors;
impl ErrorSet for PlaceOrderErrors {
    const RESPONSES: &'static [(ErrorCode, &'static str)] = &[
        (
            ErrorCode::ValidationFailed,
            "`petId` missing or not an integer (`validation_failed`), or the body is not a \
             JSON object, or a malformed `Idempotency-Key` (`invalid_request`).",
        ),
        UNAUTHORIZED,
        (
            ErrorCode::Conflict,
            "The animal is not `available`: reserved by an order, or sold (`conflict`); or a \
             request with the same `Idempotency-Key` is still being processed \
             (`idempotency_in_progress`).",
        ),
        (ErrorCode::PayloadTooLarge, "The body is larger than 16 KiB."),
        (ErrorCode::UnsupportedMediaType, "The body is not `application/json`."),
        INTERNAL,
        UNAVAILABLE,
    ];
    const OTHER_STATUSES: &'static [(ErrorCode, u16, &'static str)] = &[(
        ErrorCode::ValidationFailed,
        422,
        "No animal has this `petId` (`validation_failed`); or the `Idempotency-Key` was used \
             with another request (`idempotency_key_reused`).",
    )];
}

struct ListOrdersErrors;
impl ErrorSet for ListOrdersErrors {
    const RESPONSES: &'static [(ErrorCode, &'static str)] = &[
        (
            ErrorCode::ValidationFailed,
            "`limit` outside 1..=100 or an unknown `status` (`validation_failed`); a `limit` that \
             is not an integer or a malformed `cursor` (`invalid_request`).",
        ),
        UNAUTHORIZED,
        INTERNAL,
        UNAVAILABLE,
    ];
}

struct GetOrderErrors;
impl ErrorSet for GetOrderErrors {
    const RESPONSES: &'static [(ErrorCode, &'static str)] =
        &[BAD_ORDER_ID, UNAUTHORIZED, NOT_FOUND, INTERNAL, UNAVAILABLE];
}

struct UpdateOrderErrors;
impl ErrorSet for UpdateOrderErrors {
    const RESPONSES: &'static [(ErrorCode, &'static str)] = &[
        (
            ErrorCode::ValidationFailed,
            "`status` missing or not an order status, or the body names `petId` \
             (`validation_failed`); `orderId` is not an integer, or the body is not a JSON \
             object (`invalid_request`).",
        ),
        UNAUTHORIZED,
        NOT_FOUND,
        (ErrorCode::Conflict, "The rules do not allow this move; the message names both statuses."),
        (ErrorCode::PayloadTooLarge, "The body is larger than 16 KiB."),
        (ErrorCode::UnsupportedMediaType, "The body is not `application/json`."),
        INTERNAL,
        UNAVAILABLE,
    ];
}

struct InventoryErrors;
impl ErrorSet for InventoryErrors {
    const RESPONSES: &'static [(ErrorCode, &'static str)] = &[UNAUTHORIZED, INTERNAL, UNAVAILABLE];
}

/// The `store` operations. Like [`PetsApi`](super::PetsApi), they hold no state.
pub struct OrdersApi;

#[OpenApi(tag = "Tag::Store")]
impl OrdersApi {
    /// [experimental] Place an order
    ///
    /// Reserves an `available` animal for the caller: the animal becomes `pending`, and the
    /// order `placed`. Of two orders for one animal, one is placed and the other refused with
    /// 409, whichever instance of the service they reach.
    #[oai(path = "/store/orders", method = "post", operation_id = "placeOrder")]
    async fn place_order(
        &self,
        key: BearerKey,
        state: Data<&AppState>,
        body: Json<NewOrderBody>,
        /// Makes the request safe to retry: a key of your choosing, 1 to 255 visible ASCII
        /// characters, or the same as a quoted string. A retry with the same key and the same
        /// body within 24 hours gets the first response again (the order, or its refusal),
        /// marked `Idempotent-Replayed: true`, and places nothing.
        #[oai(name = "Idempotency-Key")]
        _idempotency_key: Header<Option<RawParam<IdempotencyKeySchema>>>,
        request: &poem::Request,
    ) -> Result<PlaceOrderOk, OperationError<PlaceOrderErrors>> {
        RepeatedJsonKey::refuse(request)?;
        let context = ParseContext { now: state.clock.now() };
        let pet = body.0.into_inner()?.into_pet_id(&context)?;
        let order = match request.extensions().get::<KeyedWrite>() {
            // The outcome, a refusal of the rules included, is stored for retries with the key.
            Some(KeyedWrite(hold)) => {
                match state.idempotency.place_order(hold, pet).await? {
                    Answer::Done((_, Some(answer))) => {
                        return Err(OperationError::stored(send(&decode(&answer), false)));
                    }
                    // A store failure: nothing stored, the key free for a retry.
                    Answer::Done((placed, None)) => placed?,
                    Answer::Replay(answer) => {
                        return Err(OperationError::stored(send(&decode(&answer), true)));
                    }
                }
            }
            None => state.orders.place(&key.0.owner, pet).await?,
        };
        let location = location(&order);
        Ok(PlaceOrderOk::Created(JsonBody(order.into()), location))
    }

    /// [experimental] List orders
    ///
    /// Returns a page of the caller's orders ordered by id ascending, optionally only those
    /// with a status; paginated exactly as `listPets` (a `Link` header with `rel="next"`).
    #[oai(path = "/store/orders", method = "get", operation_id = "listOrders")]
    #[expect(
        clippy::too_many_arguments,
        reason = "poem-openapi takes each parameter of an operation as an argument"
    )]
    async fn list_orders(
        &self,
        key: BearerKey,
        state: Data<&AppState>,
        /// Maximum number of orders returned: 1 to 100, 20 when omitted.
        limit: Query<Option<RawParam<PageSizeSchema>>>,
        /// Returns only orders with this status.
        status: Query<Option<RawParam<OrderStatusDto>>>,
        /// Where the page starts: copy it from the `Link` header of the previous page. Opaque.
        cursor: Query<Option<RawParam<CursorSchema>>>,
        /// The `ETag` of an answer you have: if the answer is still the same, it is `304 Not
        /// Modified`, without a body, and spends nothing of the key's daily quota.
        #[oai(name = "If-None-Match")]
        _if_none_match: Header<Option<String>>,
        request: &poem::Request,
    ) -> Result<ListOrdersOk, OperationError<ListOrdersErrors>> {
        refuse_repeated_parameters(request.uri().query(), &["limit", "status", "cursor"])?;
        let listing = listing(
            limit.0.as_ref().map(RawParam::as_str),
            status.0.as_ref().map(RawParam::as_str),
            cursor.0.as_ref().map(RawParam::as_str),
            OrderId::new,
        )?;
        let page = state.orders.list(&key.0.owner, listing).await?;
        let next =
            page.next_after.map(|after| next_link("/v1/store/orders", &listing, "", after.get()));
        Ok(ListOrdersOk::Ok(JsonBody(page.items.into_iter().map(OrderBody::from).collect()), next))
    }

    /// [experimental] Get an order
    ///
    /// Returns one of the caller's orders. Another key's order is 404, as if it did not exist.
    #[oai(path = "/store/orders/:orderId", method = "get", operation_id = "getOrder")]
    async fn get_order(
        &self,
        key: BearerKey,
        state: Data<&AppState>,
        /// The id of the order.
        #[oai(name = "orderId")]
        order_id: Path<RawParam<i64>>,
        /// The `ETag` of an answer you have: if the answer is still the same, it is `304 Not
        /// Modified`, without a body, and spends nothing of the key's daily quota.
        #[oai(name = "If-None-Match")]
        _if_none_match: Header<Option<String>>,
    ) -> Result<OrderOk, OperationError<GetOrderErrors>> {
        let id = parse_order_id(order_id.0.as_str())?;
        let order = state.orders.get(&key.0.owner, id).await?;
        Ok(OrderOk::Ok(JsonBody(order.into())))
    }

    /// [beta] Update an order
    ///
    /// Moves one of the caller's orders to another status: `placed` → `approved` →
    /// `delivered`, or `placed`/`approved` → `cancelled`. The animal follows: delivered
    /// makes it `sold`, cancelled `available` again. Any other move is 409.
    #[oai(path = "/store/orders/:orderId", method = "patch", operation_id = "updateOrder")]
    async fn update_order(
        &self,
        key: BearerKey,
        state: Data<&AppState>,
        /// The id of the order.
        #[oai(name = "orderId")]
        order_id: Path<RawParam<i64>>,
        body: Json<OrderUpdateBody>,
        request: &poem::Request,
    ) -> Result<OrderOk, OperationError<UpdateOrderErrors>> {
        let id = parse_order_id(order_id.0.as_str())?;
        RepeatedJsonKey::refuse(request)?;
        let context = ParseContext { now: state.clock.now() };
        let status = body.0.into_inner()?.into_status(&context)?;
        let order = state.orders.update(&key.0.owner, id, status).await?;
        Ok(OrderOk::Ok(JsonBody(order.into())))
    }

    /// [experimental] Count the animals by status
    ///
    /// How many animals are `available`, `pending` and `sold`: exact after every change,
    /// and as quick with a million animals as with ten, since the counts are kept as the
    /// animals change rather than counted for each request.
    #[oai(path = "/store/inventory", method = "get", operation_id = "getInventory")]
    async fn get_inventory(
        &self,
        _key: BearerKey,
        state: Data<&AppState>,
    ) -> Result<InventoryOk, OperationError<InventoryErrors>> {
        let inventory = state.pets.inventory().await?;
        Ok(InventoryOk::Ok(JsonBody(inventory.into())))
    }
}

/// The address of an order.
fn location(order: &Order) -> String {
    format!("/v1/store/orders/{}", order.id)
}

/// The answer of a keyed `placeOrder` for its outcome, stored for the retries with its key:
/// the order, or the refusal of the rules; nothing for a store failure, which a retry runs
/// again.
pub(crate) fn placed_answer(placed: &Result<Order, PlaceOrderError>) -> Option<StoredAnswer> {
    match placed {
        Ok(order) => {
            let body = serde_json::to_vec(&OrderBody::from(order.clone())).unwrap_or_default();
            Some(encode(StatusCode::CREATED, Some(&location(order)), &body))
        }
        Err(PlaceOrderError::Repository(_)) => None,
        Err(refused) => {
            let error = refusal(refused)?;
            let body = error.body();
            let status = u16::try_from(body.status).ok().and_then(|s| StatusCode::from_u16(s).ok());
            let body = serde_json::to_vec(&body.to_json()).unwrap_or_default();
            Some(encode(status.unwrap_or(StatusCode::INTERNAL_SERVER_ERROR), None, &body))
        }
    }
}

/// The error of a refusal of the rules.
fn refusal(refused: &PlaceOrderError) -> Option<ApiError> {
    match refused {
        PlaceOrderError::NoSuchPet(id) => Some(
            ApiError::validation_failed(format!("petId: no animal has id {id}"))
                .with_status(StatusCode::UNPROCESSABLE_ENTITY),
        ),
        PlaceOrderError::PetNotAvailable { .. } => {
            Some(ApiError::new(ErrorCode::Conflict, refused.to_string().replace("pet ", "animal ")))
        }
        PlaceOrderError::Repository(_) => None,
    }
}

fn parse_order_id(raw: &str) -> Result<OrderId, ApiError> {
    raw.parse::<i64>().map(OrderId::new).map_err(|_| {
        ApiError::invalid_request(format!(
            "orderId must be an int64 integer, got {:?}",
            excerpt(raw)
        ))
    })
}

impl From<PlaceOrderError> for ApiError {
    fn from(err: PlaceOrderError) -> Self {
        match err {
            PlaceOrderError::Repository(err) => err.into(),
            refused => refusal(&refused).unwrap_or_else(Self::internal),
        }
    }
}

impl From<GetOrderError> for ApiError {
    fn from(err: GetOrderError) -> Self {
        match err {
            GetOrderError::NotFound(id) => {
                Self::new(ErrorCode::NotFound, format!("no order has id {id}"))
            }
            GetOrderError::Repository(err) => err.into(),
        }
    }
}

impl From<UpdateOrderError> for ApiError {
    fn from(err: UpdateOrderError) -> Self {
        match err {
            UpdateOrderError::NotFound(id) => {
                Self::new(ErrorCode::NotFound, format!("no order has id {id}"))
            }
            UpdateOrderError::Transition(refused) => {
                Self::new(ErrorCode::Conflict, refused.to_string())
            }
            UpdateOrderError::Repository(err) => err.into(),
        }
    }
}

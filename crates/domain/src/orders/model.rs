//! Orders: an API key reserving an available pet, and the moves an order may make
//! (`docs/api.md#orders`).
//!
//! An order is placed for an `available` pet, which becomes `pending`. It then moves
//! `placed → approved → delivered`, or to `cancelled` from `placed` or `approved`; delivering
//! sells the pet, cancelling makes it `available` again. [`OrderStatus::move_to`] is the one
//! definition of those rules: every adapter asks it, inside the transaction that changes the
//! order and its pet together.

use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, Utc};
use thiserror::Error;

use crate::ids::OrderId;
use crate::keys::model::KeyId;
use crate::pets::model::{PetId, PetStatus};
use crate::repository_error::RepositoryError;

/// Where an order stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OrderStatus {
    /// Placed: the pet is reserved (`pending`).
    Placed,
    /// Approved by the store: the pet stays reserved.
    Approved,
    /// Delivered: the pet is `sold`. Final.
    Delivered,
    /// Cancelled: the pet is `available` again. Final.
    Cancelled,
}

/// A move the rules do not allow: from a final status, backwards, or to the same status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
#[error("an order cannot move from {from} to {to}")]
pub struct OrderTransitionError {
    /// The order's status.
    pub from: OrderStatus,
    /// The status asked for.
    pub to: OrderStatus,
}

/// A string that names no order status.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("status must be one of placed, approved, delivered, cancelled, got {0:?}")]
pub struct OrderStatusError(pub String);

impl OrderStatus {
    /// Every status, in the order an order goes through them.
    pub const ALL: [Self; 4] = [Self::Placed, Self::Approved, Self::Delivered, Self::Cancelled];

    /// The status as the API and the store write it.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Placed => "placed",
            Self::Approved => "approved",
            Self::Delivered => "delivered",
            Self::Cancelled => "cancelled",
        }
    }

    /// The statuses of an open order, which holds its pet: `placed` and `approved`.
    pub const OPEN: [Self; 2] = [Self::Placed, Self::Approved];

    /// Whether an order with this status is open: it holds its pet, whose status then
    /// follows the order alone and which cannot be removed.
    pub const fn is_open(self) -> bool {
        matches!(self, Self::Placed | Self::Approved)
    }

    /// The pet's status while its order has this status.
    pub const fn pet_status(self) -> PetStatus {
        match self {
            Self::Placed | Self::Approved => PetStatus::Pending,
            Self::Delivered => PetStatus::Sold,
            Self::Cancelled => PetStatus::Available,
        }
    }

    /// Moves an order from this status to `to`, and says what its pet becomes:
    /// `placed → approved`, `approved → delivered` (the pet is sold), `placed → cancelled`
    /// and `approved → cancelled` (the pet is available again).
    ///
    /// # Errors
    ///
    /// [`OrderTransitionError`] for every other move, staying put included.
    pub const fn move_to(self, to: Self) -> Result<PetStatus, OrderTransitionError> {
        match (self, to) {
            (Self::Placed, Self::Approved)
            | (Self::Approved, Self::Delivered)
            | (Self::Placed | Self::Approved, Self::Cancelled) => Ok(to.pet_status()),
            _ => Err(OrderTransitionError { from: self, to }),
        }
    }
}

impl fmt::Display for OrderStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for OrderStatus {
    type Err = OrderStatusError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|status| status.as_str() == s)
            .ok_or_else(|| OrderStatusError(crate::excerpt(s)))
    }
}

/// An order, as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Order {
    /// Its id.
    pub id: OrderId,
    /// The pet it reserves.
    pub pet_id: PetId,
    /// Whose it is: the [owner](crate::ApiKey::owner) of the key that placed it, so that
    /// the keys a rotation issues keep seeing it.
    pub owner: KeyId,
    /// Where it stands.
    pub status: OrderStatus,
    /// When it was placed, to the second.
    pub created_at: DateTime<Utc>,
    /// When its status last changed (its placing included), to the second.
    pub updated_at: DateTime<Utc>,
}

/// An order to place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewOrder {
    /// The pet to reserve.
    pub pet_id: PetId,
    /// Whose it is.
    pub owner: KeyId,
    /// When it is placed.
    pub at: DateTime<Utc>,
}

impl NewOrder {
    /// The order as stored with `id`: `placed`, created and updated at its instant.
    pub fn placed(self, id: OrderId) -> Order {
        let Self { pet_id, owner, at } = self;
        Order { id, pet_id, owner, status: OrderStatus::Placed, created_at: at, updated_at: at }
    }
}

/// Why an order was not placed. Nothing changed.
#[derive(Debug, Error)]
pub enum PlaceOrderError {
    /// No pet has the id.
    #[error("no pet has id {0}")]
    NoSuchPet(PetId),
    /// The pet is not `available`: reserved by another order, or sold.
    #[error("pet {pet} is {status}, not available")]
    PetNotAvailable {
        /// The pet.
        pet: PetId,
        /// Its status.
        status: PetStatus,
    },
    /// The store failed.
    #[error(transparent)]
    Repository(#[from] RepositoryError),
}

/// Why an order's status did not change. Nothing changed.
#[derive(Debug, Error)]
pub enum UpdateOrderError {
    /// The owner has no order with the id.
    #[error("no order has id {0}")]
    NotFound(OrderId),
    /// The move is not allowed.
    #[error(transparent)]
    Transition(#[from] OrderTransitionError),
    /// The store failed.
    #[error(transparent)]
    Repository(#[from] RepositoryError),
}

/// Why an order could not be fetched.
#[derive(Debug, Error)]
pub enum GetOrderError {
    /// The owner has no order with the id: another key's order is not found either.
    #[error("no order has id {0}")]
    NotFound(OrderId),
    /// The store failed.
    #[error(transparent)]
    Repository(#[from] RepositoryError),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orders_move_forward_or_to_cancelled_and_the_pet_follows() {
        use OrderStatus::{Approved, Cancelled, Delivered, Placed};
        let allowed = [
            (Placed, Approved, PetStatus::Pending),
            (Approved, Delivered, PetStatus::Sold),
            (Placed, Cancelled, PetStatus::Available),
            (Approved, Cancelled, PetStatus::Available),
        ];
        for from in OrderStatus::ALL {
            for to in OrderStatus::ALL {
                let expected = allowed
                    .iter()
                    .find(|(f, t, _)| (*f, *t) == (from, to))
                    .map(|(_, _, pet)| *pet)
                    .ok_or(OrderTransitionError { from, to });
                assert_eq!(from.move_to(to), expected, "{from} -> {to}");
            }
        }
    }

    #[test]
    fn statuses_read_back_as_written() {
        for status in OrderStatus::ALL {
            assert_eq!(status.as_str().parse::<OrderStatus>(), Ok(status));
        }
        assert!("Placed".parse::<OrderStatus>().is_err());
        assert!("".parse::<OrderStatus>().is_err());
    }

    #[test]
    fn a_refused_move_names_both_statuses() {
        let err = OrderStatus::Delivered.move_to(OrderStatus::Cancelled).unwrap_err();
        assert_eq!(err.to_string(), "an order cannot move from delivered to cancelled");
    }
}

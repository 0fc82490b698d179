//! The id of an order, which the pets' changes name (an order holds its pet) as the orders
//! name pets: here, so that neither feature imports the other's model for it.

use std::fmt;

/// The identifier the store assigns to an order when it is placed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct OrderId(i64);

impl OrderId {
    /// Wraps an id as stored or as sent by a client; ids never assigned find nothing.
    pub const fn new(id: i64) -> Self {
        Self(id)
    }

    /// The id as an integer.
    pub const fn get(self) -> i64 {
        self.0
    }
}

impl fmt::Display for OrderId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

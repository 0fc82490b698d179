//! What tests need and production must not ship: clocks that tests set, and fresh test
//! databases. Compiled only with the `testing` feature, as are the conformance suites.

mod clocks;
pub mod databases;

pub use clocks::ManualClock;

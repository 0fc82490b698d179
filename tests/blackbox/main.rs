//! Black-box tests.

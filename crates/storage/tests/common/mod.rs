//! The integration tests' helpers: the crate's own `test_support`, shared with its unit tests.
#![allow(dead_code, unused_imports)]

pub use helenus_storage::test_support::*;

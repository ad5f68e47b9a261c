//! CQL value types: the type tree (`CqlType`), values, their serialized form, comparators
//! and Cassandra's Murmur3 token function.
//!
//! This crate owns what a CQL value *is*; it does not know about frames (`protocol`),
//! statements (`cql`) or tables (`schema`).

mod cql_type;

pub use cql_type::{CqlType, NativeType};

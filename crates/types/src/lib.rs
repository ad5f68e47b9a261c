//! CQL value types: the type tree (`CqlType`), values (`CqlValue`) and their serialized form,
//! comparators over serialized values, literal/JSON formatting and parsing, timeuuid and date
//! helpers, Cassandra's Murmur3 token function, and the injected `Clock`.
//!
//! This crate owns what a CQL value *is*; it does not know about frames (`protocol`),
//! statements (`cql`) or tables (`schema`).

pub mod clock;
mod compare;
mod cql_type;
mod decode;
mod error;
mod format;
pub mod numeric;
mod parse;
pub mod time;
mod token;
mod value;
mod vint;

pub use clock::{Clock, ManualClock, SharedClock, SystemClock, WriteTimestamps};
pub use compare::{compare_serialized, compare_signed};
pub use cql_type::{CqlType, NativeType, UserType, EMPTY_TYPE_CLASS, MAX_TYPE_NESTING};
pub use decode::{collection_len, deserialize, for_each_entry, validate};
pub use error::TypeError;
pub use format::{maybe_quote_identifier, to_cql_literal, to_json, to_plain_string};
pub use parse::from_string;
pub use time::{
    max_timeuuid, min_timeuuid, new_timeuuid, now_micros, now_ms, timeuuid_at_ticks,
    timeuuid_at_unix_ms, timeuuid_to_unix_ms, TimeUuids,
};
pub use token::{composite_partition_key, murmur3_token, split_composite_key};
pub use value::{serialize, serialize_to_bytes, CqlValue};

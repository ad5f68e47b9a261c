//! A bound value as the wire carries it. A leaf.

use bytes::Bytes;

/// A bound value ([value] notation): null, unset (v4+), or serialized bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    Null,
    Unset,
    Bytes(Bytes),
}
